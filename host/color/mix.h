/* mix.h: the controller's paint mixing model (Kubelka-Munk with a Saunderson surface), recipe solver and closed-loop mix correction. */
#ifndef BL_COLOR_MIX_H
#define BL_COLOR_MIX_H

#include <cJSON.h>
#include <stdint.h>

#include "base/err.h"
#include "base/json.h"
#include "color/color.h"
#include "config/machine.h"
#include "config/palette.h"

#define MIX_MAX_PAINTS PALETTE_MAX_PAINTS
#define MIX_MAX_BANDS PALETTE_MAX_BANDS
#define MIX_RECIPE_MAX 8 /* paints in one recipe: the machine file allows up to 8 */

/*
 * Saunderson's surface correction links the reflectance R of the paint body
 * (what Kubelka-Munk computes) to the reflectance Rm an instrument or camera
 * measures: Rm = (1 - k1)(1 - k2) R / (1 - k2 R). k1 is the external
 * reflection of light entering the surface (Fresnel, refractive index 1.5 at
 * normal incidence: 0.04); the specular part itself is left out, as with a
 * 45/0 instrument or a camera that sees no glare (with it included, the
 * measured black at 3% would lie below k1 and have no solution). k2 is the
 * internal reflection of diffuse light at the surface; 0.6 is the usual value
 * for paint films (published values run 0.4 to 0.6). The derivation inverts
 * the same formula with the same constants, so masstones and tints are
 * reproduced whatever the constants; they shape only the mixtures between.
 */
#define MIX_SAUNDERSON_K1 0.04
#define MIX_SAUNDERSON_K2 0.60

/*
 * The model of one palette: each paint's absorption K and scattering S per
 * band (two-constant Kubelka-Munk, S of the white = 1), and the weights that
 * turn a band reflectance into XYZ under D50 (2-degree observer). Paints with
 * only measured colours get K and S fitted on the same bands (mix_fit.c).
 */
struct mix_model {
	int n_paints;
	int n_bands;
	int white;                               /* index of the palette's white, -1 if none */
	char name[MIX_MAX_PAINTS][CFG_NAME_MAX];
	double wl_nm[MIX_MAX_BANDS];
	double k[MIX_MAX_PAINTS][MIX_MAX_BANDS];
	double s[MIX_MAX_PAINTS][MIX_MAX_BANDS];
	/*
	 * XYZ (white = 1) = sum over bands of w * Rm: exact for the CIE code's
	 * linear resampling onto its 5 nm grid, because resampling and the
	 * tristimulus sums are both linear in the reflectance.
	 */
	double wx[MIX_MAX_BANDS], wy[MIX_MAX_BANDS], wz[MIX_MAX_BANDS];
	int fitted[MIX_MAX_PAINTS];              /* K, S fitted from measured colours */
	double fit_de00[MIX_MAX_PAINTS];         /* worst CIEDE2000 of that fit to its colours */
};

/*
 * What a run has learnt about its paints: a batch is never exactly its data.
 * Each paint's K and S are scaled by exp(log_k) and exp(log_s); both 0 means
 * the palette's data. The observations (what was in a cell and what the
 * camera measured) are kept, and the gains are refitted to all of them at
 * every new one, so the run persists this struct and nothing else.
 */
#define MIX_LEARN_MAX_OBS 48

struct mix_obs {
	int n;                                   /* paints in the cell */
	int idx[MIX_RECIPE_MAX];
	int units[MIX_RECIPE_MAX];
	color_lab measured;
};

/*
 * How far learning may take a paint from its model, in natural logs: its
 * strength (the mean of the log gains of K and S) and its balance (half
 * their difference). Beyond that it is not a batch of that paint. A gain
 * of K or S lies within the sum of the two.
 */
#define MIX_LEARN_STRENGTH_MAX 1.5
#define MIX_LEARN_BALANCE_MAX 1.0

struct mix_learn {
	int n_paints;
	double log_k[MIX_MAX_PAINTS];
	double log_s[MIX_MAX_PAINTS];
	int n_obs;                               /* the newest MIX_LEARN_MAX_OBS are kept */
	struct mix_obs obs[MIX_LEARN_MAX_OBS];
};

/* What the machine allows a recipe to be, and when a mix counts as reached. */
struct mix_limits {
	double unit_ml;      /* paint one dispense carries (ml) */
	int min_units;       /* least total worth mixing, or what the task needs */
	int max_units;       /* a cell's capacity */
	int max_paints;      /* paints in one cell, 1..MIX_RECIPE_MAX */
	double tol_de00;     /* a measured mix this close to its target is done */
	double aim_de00;     /* predictions this close count as exact: the smallest such volume wins */
	int max_attempts;    /* measurements per target before giving up */
	uint64_t exclude;    /* paints the solver must not use (bit i = paint i) */
};

/* A recipe in whole dispense units. */
struct mix_recipe {
	int units[MIX_MAX_PAINTS]; /* per paint index */
	int total;                 /* units */
	int n_used;                /* paints with units > 0 */
	color_lab predicted;       /* Lab D50 the model predicts */
	double de00;               /* predicted against the target */
};

struct mix_solution {
	struct mix_recipe recipe;  /* the best recipe in whole units within the limits */
	int in_gamut;              /* some mix of <= max_paints paints comes within tol_de00 */
	color_lab nearest;         /* the nearest reachable colour (amounts not rounded) */
	double nearest_de00;
	double proportions[MIX_MAX_PAINTS]; /* of that continuous optimum, summing to 1 */
	int subsets;               /* paint subsets optimised */
	long evals;                /* model evaluations spent */
};

/* ---- the model (mix_model.c, mix_fit.c) ---- */

/* Builds the model of a palette: spectral paints as given, measured ones fitted. */
int mix_model_from_palette(const struct palette *p, struct mix_model *m, bl_err *err);

/* Index of a paint by name, or -1. */
int mix_model_find(const struct mix_model *m, const char *name);

/*
 * Predicts the Lab (D50) of a mix: amounts per paint index (any unit: only
 * proportions matter for an opaque layer), with learnt gains when l is not NULL.
 * All-zero amounts give L = 0.
 */
void mix_predict(const struct mix_model *m, const struct mix_learn *l, const double *amounts,
		 color_lab *out);

/* The same for n paints given by index, with the reflectance per band (NULL to skip). */
void mix_predict_sparse(const struct mix_model *m, const struct mix_learn *l, int n,
			const int *idx, const double *amounts, color_lab *out, double *refl);

/*
 * The core evaluation, with derivatives: Lab of paints idx[0..n) at scaled
 * concentrations ck (multiplying K) and cs (multiplying S); jk[c][j] and
 * js[c][j] receive d Lab[c] / d ck[j] and d cs[j] when not NULL.
 */
void mix_eval(const struct mix_model *m, int n, const int *idx, const double *ck,
	      const double *cs, double lab[3], double jk[3][MIX_RECIPE_MAX],
	      double js[3][MIX_RECIPE_MAX], double *refl);

/* Reflectance of the layer from K/S: Kubelka-Munk infinite thickness, then Saunderson. */
double mix_km_reflectance(double k_over_s);
/* The inverse: K/S of the paint body that shows the measured reflectance rm. */
double mix_km_ratio(double rm);

/*
 * The local metric of CIEDE2000 at a colour: dE00(c, c + d)^2 ~ d' M d for
 * small d. Returned as the upper-triangular factor U with M = U' U, so the
 * solver's least squares on U d minimises CIEDE2000 to second order.
 */
void mix_de00_metric(const color_lab *c, double u[3][3]);

/* ---- deriving palette data (mix_derive.c) ---- */

struct mix_derive_opts {
	double wl_min_nm, wl_max_nm, step_nm; /* band grid (400, 700, 10 by default) */
	double reliable_min_nm, reliable_max_nm; /* outside: the instrument's light was weak */
	char name[64];                         /* palette name */
	char notice[PALETTE_NOTICE_MAX];       /* kept with the derived data */
	char well_prefix[CFG_NAME_MAX];        /* wells are PREFIX1..PREFIXn in paint order */
};

void mix_derive_defaults(struct mix_derive_opts *o);

/* Per-paint report of a derivation: how well K and S reproduce the measurements. */
struct mix_derive_report {
	int n_paints;
	char name[MIX_MAX_PAINTS][CFG_NAME_MAX];
	double masstone_de00[MIX_MAX_PAINTS];   /* model vs measured spectrum, both through the CIE code */
	double tint_de00[MIX_MAX_PAINTS];
	double repeat_de00[MIX_MAX_PAINTS];     /* worst spread of the three measurements, for scale */
	double masstone_lab[MIX_MAX_PAINTS][3]; /* of the averaged measured spectra */
	double tint_lab[MIX_MAX_PAINTS][3];
	double tint_fraction[MIX_MAX_PAINTS];   /* paint / (paint + white) by weight */
};

/*
 * Derives two-constant Kubelka-Munk K and S per band from the Kimera-format
 * spectra (masstone.json, mix1.json: lists of measurements in percent). The
 * palette gets the paints in file order, the options' notice and wells; the
 * report (may be NULL) gets the fit. Every message names the file and entry.
 */
int mix_derive_kimera(const char *masstone_path, const char *tints_path,
		      const struct mix_derive_opts *o, struct palette *out,
		      struct mix_derive_report *report, bl_err *err);

/* The palette as JSON, numbers rounded to 6 significant digits (a stable file). */
cJSON *mix_palette_to_json(const struct palette *p);

/* ---- the solver (mix_solve.c) ---- */

void mix_limits_from_machine(const struct machine *mc, struct mix_limits *lim);
/* Lowers lim's max_units to max_units when that is less (the room a cell has left), min_units with it. */
void mix_limits_cap(struct mix_limits *lim, int max_units);

/*
 * The recipe that minimises CIEDE2000 to target: at most max_paints paints,
 * whole units, total within min_units..max_units. Among recipes predicted
 * within aim_de00 the smallest volume wins (less waste, room to correct);
 * otherwise the most accurate. Deterministic. Also says whether the target
 * lies in the gamut, and the nearest reachable colour.
 */
int mix_solve(const struct mix_model *m, const struct mix_learn *l, const color_lab *target,
	      const struct mix_limits *lim, struct mix_solution *out, bl_err *err);

/*
 * What to add to a cell holding have[] units so that the prediction plus the
 * cell's unexplained offset bias (measured minus predicted; NULL for none)
 * comes closest to target. The recipe holds the additions; its predicted and
 * de00 describe the cell afterwards, its total the units in the cell then.
 */
int mix_solve_add(const struct mix_model *m, const struct mix_learn *l, const color_lab *target,
		  const struct mix_limits *lim, const int *have, const color_lab *bias,
		  struct mix_recipe *out, bl_err *err);

/* ---- correction and the mixing loop (mix_loop.c) ---- */

void mix_learn_init(struct mix_learn *l, int n_paints);

/*
 * Adds an observation (units per paint in a cell, the measured Lab of the
 * stirred mix) and refits every paint's gains to all observations kept: a
 * maximum a posteriori fit, measurement error 1 CIEDE2000, gains a priori
 * within about 25%.
 */
int mix_learn_observe(const struct mix_model *m, struct mix_learn *l, const int *units,
		      const color_lab *measured, bl_err *err);

enum mix_action_kind {
	MIX_ACT_FRESH,   /* dispense units into a clean cell (the old one, if any, is discarded) */
	MIX_ACT_ADD,     /* dispense units into the current cell */
	MIX_ACT_DONE,    /* the measured mix is within tolerance */
	MIX_ACT_GIVE_UP, /* cannot reach the target: reason says why */
};

extern const char *const mix_action_names[]; /* "fresh", "add", "done", "give_up" */

struct mix_action {
	int kind;                    /* enum mix_action_kind */
	int units[MIX_MAX_PAINTS];   /* to dispense now */
	int cell_units[MIX_MAX_PAINTS]; /* what the cell will hold afterwards */
	int total_after;             /* units in the cell afterwards */
	color_lab predicted;         /* of the cell afterwards */
	double predicted_de00;
	double measured_de00;        /* of the measurement this answers (-1 for the first action) */
	int add_reaches;             /* adding to the current cell is predicted to reach tolerance */
	double add_de00;             /* best prediction by adding (-1 when not considered) */
	double waste_add_ml;         /* expected paint wasted by continuing (-1: not an option) */
	double waste_fresh_ml;       /* ... by discarding the cell and starting over */
	char reason[256];
};

/* One target being mixed: the state the run persists between steps. */
struct mix_job {
	color_lab target;
	struct mix_limits lim;
	int have[MIX_MAX_PAINTS];    /* units in the current cell */
	int attempts;                /* measurements taken */
	int cells;                   /* cells started */
	int dispensed_units;         /* over all cells */
	int discarded_units;         /* in cells given up */
	int first_units;             /* the first recipe's volume */
	color_lab bias;              /* measured minus predicted, current cell */
	int has_bias;
	int finished;                /* DONE or GIVE_UP was returned */
	/*
	 * No clean cell is left: a FRESH mix goes into this cell, on what it
	 * holds, and fits the room left (what it held then stays out of
	 * lim.max_units). Not saved with the job: mix_run asks the world
	 * (ops->clean_cell_left) before each step.
	 */
	int same_cell;
};

/*
 * Starts mixing target: the first action is FRESH with the solver's recipe,
 * or GIVE_UP when the target is out of the gamut (the reason names the
 * nearest reachable colour).
 */
int mix_begin(const struct mix_model *m, const struct mix_learn *l, struct mix_job *job,
	      const color_lab *target, const struct mix_limits *lim, struct mix_action *act,
	      bl_err *err);

/*
 * The one step of the closed mixing loop, called by `mix trial` and the run
 * engine alike: given the measured Lab of the stirred cell, learn from it,
 * and decide: DONE, ADD to the cell, start a FRESH cell (when adding cannot
 * reach the target within the cell's capacity, or wastes more; with
 * job->same_cell, in the room the cell has left), or GIVE_UP (attempt limit,
 * or out of reach either way). The caller carries the action
 * out and then calls mix_apply.
 */
int mix_step(const struct mix_model *m, struct mix_learn *l, struct mix_job *job,
	     const color_lab *measured, struct mix_action *act, bl_err *err);

/* Records that act was carried out (the units are in the cell). */
void mix_apply(struct mix_job *job, const struct mix_action *act);

/* The two halves of a FRESH action, for a caller that records each: the old cell discarded... */
void mix_apply_discard(struct mix_job *job);
/* ... and units dispensed into the current cell (also the whole of an ADD). */
void mix_apply_dispense(struct mix_job *job, const int *units);

/*
 * For a job whose cell was discarded but not yet filled (a run stopped in
 * between): a FRESH action with the recipe for the target as learnt so far.
 */
int mix_refill(const struct mix_model *m, const struct mix_learn *l, struct mix_job *job,
	       struct mix_action *act, bl_err *err);

/* ---- the closed loop over a cell and a camera (mix_run.c) ---- */

/*
 * What the loop needs from the world: a mixing cell it can empty and dispense
 * into, and a calibrated measurement of the stirred mix. The simulator, the
 * arm and the camera provide these; the run engine wraps them in its gate and
 * journal. Each returns 0 or a negative code (BL_EPAUSED, BL_EBRAKE... pass
 * through mix_run unchanged, with the job state saved up to the last action
 * carried out).
 */
struct mix_ops {
	void *ctx;
	/* Discards what the current cell holds (if anything) and readies a clean one. */
	int (*fresh_cell)(void *ctx, bl_err *err);
	/* Dispenses units per paint index into the current cell and stirs it. */
	int (*dispense)(void *ctx, const int *units, bl_err *err);
	/* Measures the stirred cell: Lab D50 through the calibrated camera profile. */
	int (*measure)(void *ctx, color_lab *out, bl_err *err);
	/* After each decision, before it is carried out: for a journal (may be NULL). */
	int (*on_action)(void *ctx, const struct mix_job *job, const struct mix_action *act,
			 bl_err *err);
	/* After an action was carried out and applied: persist job and learn here (may be NULL). */
	int (*on_applied)(void *ctx, const struct mix_job *job, bl_err *err);
	/* Whether a clean cell is left for a FRESH one (may be NULL: always). */
	int (*clean_cell_left)(void *ctx);
	/*
	 * What the stirred cell really is, as an instrument reads it (the
	 * simulator's truth): for reports only, never for a decision, so a
	 * trial can say how far the camera's verdicts are from it (may be NULL).
	 */
	int (*truth)(void *ctx, color_lab *out, bl_err *err);
};

/*
 * The closed mixing loop, the only one in brushloop: begin (when job has no
 * cell yet) or resume (job holds a dispensed cell: it is measured first, a
 * dispense is never repeated), then measure, mix_step and carry out until
 * DONE or GIVE_UP. last receives the final action (its reason says why it
 * ended).
 */
int mix_run(const struct mix_model *m, struct mix_learn *l, struct mix_job *job,
	    const color_lab *target, const struct mix_limits *lim, const struct mix_ops *ops,
	    struct mix_action *last, bl_err *err);

/* Figures of a trial: many targets mixed in the closed loop, against the first recipe alone. */
#define MIX_TRIAL_REASONS 64
#define MIX_TRIAL_DETAIL 200

/* One target of a trial, as its report lists it. */
struct mix_trial_target {
	color_lab target;
	int reached;                 /* the camera measured it within tolerance */
	int attempts;                /* measurements by the closed loop */
	int cells;
	int used_units;              /* dispensed by the closed loop */
	int first_units;             /* the first recipe's volume */
	double final_de00;           /* the last measurement against the target (camera) */
	double final_truth_de00;     /* the truth of that cell against the target (-1: no truth) */
	double uncorrected_de00;     /* the baseline's measurement (-1: no baseline) */
	double uncorrected_truth_de00;
};

/* Median, 95th percentile (nearest rank) and maximum of a set of CIEDE2000 values. */
struct mix_trial_spread {
	int n;
	double median, p95, max;
};

/* The spread of n values (sorted in place), and as JSON {"n", "median", "p95", "max"} under key in o. */
void mix_trial_spread_of(double *v, int n, struct mix_trial_spread *out);
cJSON *mix_trial_spread_json(cJSON *o, const char *key, const struct mix_trial_spread *s);

struct mix_trial_stats {
	int targets;
	int reached;                 /* within tolerance, by the closed loop */
	int unreached;
	double attempts_median;      /* measurements to reach the tolerance, over reached targets */
	double attempts_p95;
	int attempts_max;
	int cells;                   /* cells started by the closed loop */
	double used_ml;              /* paint dispensed by the closed loop */
	double ideal_ml;             /* the first recipes' volume: what a right first guess would use */
	double discarded_ml;         /* in cells given up */
	int uncorrected_unreached;   /* first recipe only, learning nothing: beyond tolerance */
	double uncorrected_de00_median, uncorrected_de00_p95, uncorrected_de00_max;
	double uncorrected_ml;       /* paint the baselines used */
	double final_de00_median, final_de00_p95, final_de00_max;
	int n_reasons;               /* why targets ended unreached (the first MIX_TRIAL_REASONS) */
	char reasons[MIX_TRIAL_REASONS][300];
	color_lab unreached_target[MIX_TRIAL_REASONS];
	/* With ops->truth: the same against the truth, and the camera against the truth. */
	int has_truth;
	struct mix_trial_spread truth_final;      /* closed loop's last cell against the target */
	int truth_beyond;            /* targets the camera passed whose truth is beyond tolerance */
	struct mix_trial_spread truth_uncorrected;
	int truth_uncorrected_unreached;
	struct mix_trial_spread camera_vs_truth;  /* every measurement against its truth */
	int n_detail;                /* the first MIX_TRIAL_DETAIL targets */
	struct mix_trial_target detail[MIX_TRIAL_DETAIL];
};

/*
 * Mixes n_targets colours drawn inside the model's gamut (random recipes of
 * 1..max_paints paints, seeded): for each, the uncorrected baseline (the
 * nominal model's first recipe, one measurement) when baseline is set, then
 * the closed loop with one learning state for the whole trial. Every verdict
 * rests on ops->measure; ops->truth, when given, is only reported.
 */
int mix_trial(const struct mix_model *m, const struct mix_limits *lim, const struct mix_ops *ops,
	      int n_targets, uint64_t seed, int baseline, struct mix_trial_stats *st, bl_err *err);

cJSON *mix_trial_json(const struct mix_trial_stats *st);

/* ---- JSON for the run's state and the CLI (mix_json.c) ---- */

/* {"paint": units, ...} of the nonzero entries. */
cJSON *mix_units_json(const struct mix_model *m, const int *units);
cJSON *mix_action_json(const struct mix_model *m, const struct mix_action *act);
cJSON *mix_learn_json(const struct mix_model *m, const struct mix_learn *l);
int mix_learn_from_json(const struct mix_model *m, const cJSON *node, const char *file,
			struct mix_learn *l, bl_err *err);
cJSON *mix_job_json(const struct mix_model *m, const struct mix_job *job);
int mix_job_from_json(const struct mix_model *m, const cJSON *node, const char *file,
		      struct mix_job *job, bl_err *err);

/*
 * Parses "NAME:UNITS,NAME:UNITS" into units per paint; refuses unknown
 * paints, repeats, negative or fractional units and empty items.
 */
/* Reads {"paint": units, ...} under key strictly: known paints, whole non-negative units. */
int mix_units_from_json(const struct mix_model *m, json_obj *parent, const char *key, int *units,
			bl_err *err);

int mix_parse_units(const struct mix_model *m, const char *text, int *units, bl_err *err);

#endif

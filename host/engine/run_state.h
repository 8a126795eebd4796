/* run_state.h: state.json, the single source of where a run is: its struct, saved atomically, read back strictly. */
#ifndef BL_ENGINE_RUN_STATE_H
#define BL_ENGINE_RUN_STATE_H

#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "base/err.h"
#include "color/mix.h"
#include "config/machine.h"
#include "engine/brakes.h"
#include "plan/plan.h"
#include "review/review.h"
#include "safety/gate.h"

#define RUN_MAX_HISTORY 64
#define RUN_MAX_DEFERRED 64
#define RUN_ACTION_ID_BASE 100000000L /* ids of actions the engine makes (mix corrections) */
#define RUN_MAX_WET 256

enum run_sub_status { RUN_SUB_PENDING, RUN_SUB_RUNNING, RUN_SUB_DONE, RUN_SUB_FAILED,
		      RUN_SUB_DEFERRED, RUN_SUB_SKIPPED };
extern const char *const run_sub_status_names[];

/* Per subtask of the plan under way. */
struct run_sub {
	int status;           /* enum run_sub_status */
	int attempts;         /* verifications that failed */
	double verdict_de00;  /* the last verification's figure (-1: none) */
	long action_next;     /* the next of its actions to run (a paint batch resumes there) */
	char note[160];       /* why deferred, skipped or failed */
};

/* Per colour of the plans (corrections keep the colours). */
struct run_colour {
	char cell[CFG_NAME_MAX];  /* the mixing cell it is in now ("" before its first mix) */
	double cell_ml;           /* paint left in it, estimated: dispensed less dips */
	int verified;             /* its mix was measured within tolerance (or accepted) */
	int accepted;             /* the operator accepted the nearest reachable colour */
	int accepted_within;      /* accepted by unattended.accept_within_de00, not by a person */
	/*
	 * The units its cell held when it was verified or accepted: a top-up
	 * dispenses whole multiples of this ratio, so the cell keeps the colour.
	 */
	int recipe[MIX_MAX_PAINTS];
	int escalated;            /* the mix gave up; waiting for the operator */
	/*
	 * The operator's substitute (resume --substitute): the colour is mixed,
	 * predicted and corrected as this Lab in place of the plan's, which
	 * plan.json keeps.
	 */
	int substituted;
	color_lab substitute;
	color_lab measured;       /* the last measurement of its cell */
	double measured_de00;
	int mixes, attempts, cells;
	double dispensed_ml;
	double wasted_ml;         /* paint left in the cells it discarded for a clean one, ml */
	/*
	 * How its strokes look on this canvas against the planner's model: the
	 * mean of observed minus predicted over cells its batches covered fully
	 * (a thin film shows the ground through, a light paint hides poorly).
	 * Later batches and retries are judged against the model plus this.
	 */
	color_lab canvas_offset;
	long canvas_cells;
	/*
	 * How much of a cell its strokes repaint against the planner's share k
	 * (a light paint over a darker one hides poorly in a thin stroke): the
	 * mean of observed over planned change, learnt like the look.
	 */
	double hide;
	double hide_weight;
	/*
	 * Its coat: how far its batches took the cells they covered from what was
	 * there towards the mix, 0..1 (the mean over cells whose colour before was
	 * more than 4 from the mix in Lab); coat_weight counts those cells.
	 */
	double coat;
	double coat_weight;
};

/* A dispense set under way (mix): persisted before the first action so none is ever repeated. */
struct run_pending {
	int active;
	int fresh;                       /* a fresh cell was started for it */
	char cell[CFG_NAME_MAX];
	int n;
	int paint[MIX_RECIPE_MAX];       /* paint index */
	int units[MIX_RECIPE_MAX];
	long action_id[MIX_RECIPE_MAX];
	int done[MIX_RECIPE_MAX];
	int applied_units[MIX_MAX_PAINTS]; /* the whole set per paint index */
};

struct run_hist {
	int round, subtask;
	double mean_de00, p95_de00;      /* against the target */
	double expected_de00;            /* against the plan's prediction */
	double t_s;                      /* run clock */
};

struct run_deferred {
	int round, subtask;
	char request[32];
	char why[GATE_MSG_MAX];
};

/*
 * A paint batch painted again after its verification failed twice (the
 * second a fresh observation): the strokes over the cells still off, each
 * after the dip that loaded it. The retry's actions get ids of their own
 * (id0, id0 + 1, ...) so the journal tells them from the first pass's.
 */
struct run_retry {
	int active;
	size_t sub;              /* subtask index in the plan under way */
	int attempt;             /* 1: the first retry */
	long id0;
	int n;
	int *idx;                /* the subtask's actions to run, by index, in order */
};

/* Where a batch laid paint and when it finished (run clock): wet until machine painting.dry_s later. */
struct run_wet {
	int colour;
	double region_mm[4];     /* canvas mm: x0, y0, x1, y1 (a stroke's box grown by half its brush and 1 mm) */
	double t_s;
};

/* A disagreement of the second judge (docs/review.md) waiting for a person: where, and why. */
struct run_review_pending {
	int active;
	int round;
	long subtask;            /* index in that round's plan */
	int point;               /* enum review_point */
	char why[300];
};

/* Everything state.json holds: the single source of where the run is. */
struct run_state {
	char state[24];          /* running, finished, paused, braked, safety_stop, failed */
	char reason[512];        /* why it stopped (paused, braked, ...) */
	char brake[24];          /* the brake that fired ("" when none) */
	int round;               /* 0: the plan; r: correction round r */
	int rounds_planned;      /* correction plans made so far */
	size_t next;             /* subtask index in the current plan */
	size_t n_sub;
	struct run_sub *sub;
	int batch_unknown;       /* the batch under way was interrupted: re-observe before going on */
	struct run_retry retry;  /* the paint batch under way is being retried */
	double topup_ml;         /* a top-up of the batch's colour is under way: its volume (0: none) */
	int corrections_over;    /* corrections stopped improving the canvas: no more of them */
	int n_wet;
	struct run_wet wet[RUN_MAX_WET]; /* strokes whose paint may still be wet */
	int n_colours;
	struct run_colour colours[PLAN_MAX_COLOURS];
	uint64_t cells_used;     /* bit per machine mixing cell */
	/*
	 * Paint left in each of the machine's wells, ml: full at the start,
	 * counted down by every dispense, full again when the operator says so
	 * (resume --refilled). A pump draws air from an empty well, and nothing
	 * else would tell.
	 */
	double wells_ml[CFG_MAX_WELLS];
	int well_low;            /* 1 + the well that paused the run for a refill; 0: none */
	int mix_active;          /* a mix subtask's job is under way */
	struct mix_job job;
	struct run_pending pending;
	struct mix_learn learn;
	struct run_cost cost;
	struct run_brakes brakes;
	struct run_review_pending review_pending;
	int n_hist;
	struct run_hist hist[RUN_MAX_HISTORY];
	int n_deferred;
	struct run_deferred deferred[RUN_MAX_DEFERRED];
	long next_action_id;
	long strokes_done, strokes_total;
	long actions_done;
	double wall_s;           /* wall time spent over every process of the run */
	int64_t clock_ns;        /* the run clock when last saved */
	int open_loop;
	int accept_nearest;      /* a mix that cannot reach its tolerance is accepted as reached (run option) */
	uint64_t seed;
	int calibrated;          /* a camera profile was in use */
	int canvas_from_file;    /* the canvas was located from calibration.canvas */
	double final_mean_de00, final_p95_de00; /* -1 until the final observation */
	/* What a person sees of the final canvas: CIEDE2000 pixel by pixel at 1 px/mm and S-CIELAB
	 * seen from 1 m (-1 until then; state.json's keys only once there are figures). */
	double final_pixel_de00, final_scielab_1m;
	/* The same against the target mapped into the paints' reach, and the share that needed it (-1: none was). */
	double final_mapped_de00, final_mapped_scielab_1m, gamut_share;
	int final_verified;
};

struct run;
struct json_format;

void run_state_init(struct run_state *st);
void run_state_free(struct run_state *st);
int run_state_resize(struct run_state *st, size_t n_sub, bl_err *err);
/* The state as JSON (state.json; status reads the same). */
cJSON *run_state_json(const struct run *r);
/* Writes state.json atomically (and STATUS.md when due). */
int run_state_save(struct run *r, bl_err *err);
/* state.json's kind, version and the steps that migrate older ones (docs/run.md). */
extern const struct json_format run_state_format;
/* Reads state.json strictly against the run's machine and mixing model: a bad key is BL_EINVAL naming it. */
int run_state_load(struct run *r, bl_err *err);
/* The same from root (a state.json parsed, or the journal's; migrated in place), named p in messages. */
int run_state_load_json(struct run *r, cJSON *root, const char *p, bl_err *err);
/* The run clock, s: virtual in the simulator; on hardware it goes on from the last saved state. */
double run_clock_s(const struct run *r);
/* Ends a paint batch's retry (frees its action list). */
void run_retry_clear(struct run_retry *t);
/* Every well full (its capacity_ml), as at the start of a run. */
void run_wells_full(struct run *r);

#endif

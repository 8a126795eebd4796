/* plan.h: the painting planner: target image to colours, recipes, strokes, ordered subtasks with expected results, and corrections. */
#ifndef BL_PLAN_PLAN_H
#define BL_PLAN_PLAN_H

#include <stddef.h>

#include "arm/action.h"
#include "base/err.h"
#include "color/color.h"
#include "config/machine.h"

#define PLAN_MAX_COLOURS 32
#define PLAN_MAX_RECIPE 8
#define PLAN_MAX_STROKES 100000
#define PLAN_MIN_TARGET_PX 8 /* a smaller picture is refused */

/*
 * A raster of Lab (D50) pixels, 3 floats a pixel, row-major, row 0 at the top.
 * The planner's only image type: whatever decodes a file (JPEG, PNG, 16-bit,
 * grey, alpha, ICC) hands the planner one of these.
 */
struct plan_raster {
	int w, h;
	float *px; /* w * h * 3: L, a, b */
};

int plan_raster_alloc(struct plan_raster *r, int w, int h, bl_err *err);
void plan_raster_free(struct plan_raster *r);

/* One paint of a recipe: so many dispense units from the well the paint sits in. */
struct plan_recipe_item {
	char paint[CFG_NAME_MAX];
	char well[CFG_NAME_MAX];
	int units;
};

struct plan_recipe {
	int n;
	struct plan_recipe_item item[PLAN_MAX_RECIPE];
};

/* What the mixing model says a mix will be. */
struct plan_mix {
	color_lab lab;             /* predicted colour of the mix */
	struct plan_recipe recipe; /* whole dispense units, about the volume asked for */
};

/*
 * Colour choice, behind one function so the planner never knows the mixing
 * model: the reachable colour nearest to want and its recipe for about
 * volume_ml of paint.
 */
struct plan_solver {
	int (*solve)(void *ctx, const color_lab *want, double volume_ml, struct plan_mix *out,
		     bl_err *err);
	void *ctx;
};

/* Planner settings; plan_options_default() fills them. */
struct plan_options {
	int colours;            /* K mixed colours (at most the machine's mixing cells); 0: as many as the target needs */
	int max_strokes;        /* stroke budget */
	color_lab canvas_lab;   /* the blank canvas */
	double opacity;         /* internal model: coverage of one stroke in its core, 0..1 */
	double press_mm;        /* how far below the canvas surface the brush goes */
	double stroke_speed_mm_s;
	double travel_speed_mm_s;
	double cell_mm;         /* expected-result grid */
	int batch_strokes;      /* most strokes in one paint batch */
	int wash_ms;
	unsigned long seed;     /* colour clustering start; the plan is a function of all inputs */
	int baseline;           /* grid strokes in the nearest colour instead of planning (for comparison) */
	/*
	 * Corrections only: each colour as it shows on this canvas (learnt from
	 * its batches), indexed like the plan's colours; strokes are placed and
	 * predicted with these. NULL: the colours' own lab.
	 */
	const color_lab *looks;
	/*
	 * A stroke must bring nearer both the pixels and each cell_mm cell's
	 * mean against the target's, as a checkpoint judges the canvas, and is
	 * worth the lesser gain. Corrections set it: they are for the cells a
	 * checkpoint found off, and must not buy a cell's mean with detail.
	 */
	int by_cell;
	/*
	 * Corrections only: how much of what is under it each colour's stroke
	 * hides, as a share of opacity (learnt from its batches: a light paint
	 * over a light ground hides little), indexed like the plan's colours.
	 * NULL: every colour hides opacity.
	 */
	const double *hiding;
};

void plan_options_default(struct plan_options *o, const struct machine *m);

/*
 * The plan's grid of cell_mm cells over the picture's rectangle image_mm:
 * ceil(w / cell_mm) by ceil(h / cell_mm), the last column and row clipped to
 * the picture (docs/planner.md). Planner, corrections and admission count
 * with it; a last column narrower than the planning grid's pixel has none of
 * its pixels and is judged by no checkpoint.
 */
void plan_grid_cells(const double image_mm[4], double cell_mm, int *cols, int *rows);

/*
 * The subtask kinds (HACKING.md "Adding a subtask kind"). Switches on a kind
 * have no default: and list PLAN_SUBTASK_COUNT, so the compiler names every
 * place a new kind has to join.
 */
enum plan_subtask_type { PLAN_MIX, PLAN_PAINT, PLAN_CHECKPOINT, PLAN_SUBTASK_COUNT };
extern const char *const plan_subtask_names[]; /* "mix", "paint", "checkpoint" */
/* Whether a kind works on one of the plan's colours (a checkpoint on none: colour -1). */
int plan_kind_coloured(enum plan_subtask_type t);
/* The machine's tolerance a kind's threshold may not be looser than (mix or paint). */
double plan_kind_tolerance(const struct machine *m, enum plan_subtask_type t);

struct plan_colour {
	char name[CFG_NAME_MAX]; /* "c1", ... */
	color_lab want;          /* the colour the target asked for */
	color_lab lab;           /* the reachable colour the plan paints with */
	char cell[CFG_NAME_MAX]; /* mixing cell it is mixed in */
	double paint_ml;         /* paint the strokes are estimated to use */
	int strokes;
	double stroke_mm;        /* total stroke length */
};

/* A cell of the expected-result grid and what it should look like. */
struct plan_cell {
	int col, row;
	double coverage; /* fraction of the cell the batch paints */
	double repaint;  /* paint batches: mean share of the cell's colour the batch replaces with its own, 0..1 (the model's k: after = before + k (paint - before)) */
	color_lab lab;   /* predicted Lab (mean over the cell) right after the subtask */
};

struct plan_subtask {
	int id;
	enum plan_subtask_type type;
	int colour;               /* mix, paint: index into colours (-1 for checkpoints) */
	int batch;                /* paint: batch number within its colour */
	double tolerance_de00;    /* the verification threshold, fixed before it runs */
	/* mix */
	double volume_ml;
	struct plan_mix mix;
	/* paint */
	char brush[CFG_NAME_MAX];
	int n_strokes;
	double region_mm[4];      /* x0, y0, x1, y1 in canvas mm: the box the strokes stay in */
	/* paint (cells the batch covers) and checkpoint (every cell, row by row) */
	size_t n_cells;
	struct plan_cell *cells;
	double predicted_mean_de00; /* checkpoint: predicted canvas against the target */
	size_t n_actions;
	struct arm_action *actions;
};

/* An area no available colour can bring within tolerance (corrections). */
struct plan_unfixable {
	int col, row;
	color_lab target, best;
	double de00;
};

struct plan {
	/* the target and where it sits on the canvas */
	char target_file[CFG_PATH_MAX];
	char target_hash[17];     /* FNV-1a 64 of the file's bytes, hex */
	int target_w, target_h;   /* px */
	double image_mm[4];       /* x, y, w, h in canvas mm */
	/* the machine it was planned for */
	char machine_name[64];
	double canvas_origin_mm[2], canvas_size_mm[2], canvas_surface_z_mm;
	struct xform xf;          /* canvas to machine, as the machine had it (its arm registration) */
	color_lab canvas_lab;
	double opacity;
	double cell_mm;
	int grid_cols, grid_rows;
	double mean_de00, p95_de00; /* predicted result against the target */
	double arm_time_s;
	int n_strokes;
	int correction;           /* 1 when this is a corrective plan */
	int n_colours;
	struct plan_colour colours[PLAN_MAX_COLOURS];
	size_t n_subtasks;
	struct plan_subtask *subtasks;
	size_t n_unfixable;
	struct plan_unfixable *unfixable;
};

void plan_free(struct plan *p);

/* The machine-side inputs of planning, gathered once. */
struct plan_inputs {
	const struct machine *machine;
	const struct plan_solver *solver;
	const struct plan_raster *target; /* Lab at the image's own resolution */
	const char *target_file;          /* recorded in the plan ("" when planned from memory) */
	const char *target_hash;
	int target_w, target_h;           /* px of the file (may differ from the raster given) */
};

/*
 * Colours the paints cannot reach (plan_gamut.c): a picture darker than the
 * darkest mix is mapped into the paints' reach by black point compensation,
 * as a perceptual rendering intent does; its contrasts are kept.
 */
struct plan_gamut {
	int mapped;             /* 1: the picture's black lies below the paints' and is mapped */
	double picture_black_L; /* the picture's darkest half percent */
	double paint_black_L;   /* the mix nearest to black */
	double share;           /* the share of the picture more than 1 L* below the paints' black */
};

/* What target t (Lab) needs from the paints solver sv reaches. */
int plan_gamut_fit(const struct plan_solver *sv, const struct plan_raster *t, struct plan_gamut *g,
		   bl_err *err);
/* n Lab pixels mapped in place (nothing when g->mapped is 0). */
void plan_gamut_apply(const struct plan_gamut *g, float *lab, size_t n);

/* Plans a painting; the same inputs give the same plan. */
int plan_make(const struct plan_inputs *in, const struct plan_options *opt, struct plan *out,
	      bl_err *err);

/*
 * The predicted canvas of a plan, rendered at px_mm over the image rectangle by
 * the planner's own model (not the simulator's physics), and its CIEDE2000
 * against the target. Either output may be NULL.
 */
int plan_predict(const struct plan *p, const struct machine *m, const struct plan_raster *target,
		 double px_mm, struct plan_raster *canvas, double *mean_de00, double *p95_de00,
		 bl_err *err);

/*
 * How much of each pixel's colour paint subtask s of plan p replaces with its
 * own in the planner's model (its strokes in order: 1 - prod(1 - a)), over the
 * whole canvas at 1 px/mm: alpha holds w x h values (canvas mm, row 0 at canvas
 * y 0, pixel (x, y) covering [x, x + 1) x [y, y + 1) mm).
 */
int plan_batch_alpha(const struct plan *p, const struct machine *m, const struct plan_subtask *s,
		     float *alpha, int w, int h, bl_err *err);

/*
 * Corrective strokes for an observed canvas (Lab over the image rectangle, any
 * resolution): cells off by more than half the paint tolerance are open to
 * the plan's colours (placed and predicted as opt->looks, when given), and
 * those beyond the tolerance that no colour can fix are listed in
 * out->unfixable.
 */
int plan_correct(const struct plan *p, const struct plan_inputs *in,
		 const struct plan_raster *observed, const struct plan_options *opt,
		 struct plan *out, bl_err *err);

/* The plan as JSON (schema in docs/plan.md) and back; load is strict. */
cJSON *plan_to_json(const struct plan *p);
int plan_from_json(const cJSON *root, const char *file, struct plan *out, bl_err *err);
int plan_save(const char *path, const struct plan *p, bl_err *err);
int plan_load(const char *path, struct plan *out, bl_err *err);

/*
 * The planner's own check of every action against the machine file: strokes
 * inside the canvas, z above floors, speeds and single moves within the soft
 * limits, no keep-out crossed, tolerances no looser than the machine's.
 */
int plan_check(const struct plan *p, const struct machine *m, bl_err *err);

/*
 * The plan's motion time: every action's path from the home pose on, each
 * segment a trapezoid at accel_mm_s2, with dwells, s. The planner estimates
 * with its working acceleration (painting.curve_accel_mm_s2); the host's
 * estimate with the arm's own (limits.soft.accel_mm_s2, as the backends move).
 */
int plan_motion_time_s(const struct plan *p, const struct machine *m, double accel_mm_s2, double *out_s,
		       bl_err *err);

/* Totals for a summary. */
double plan_paint_ml(const struct plan *p);

/* FNV-1a 64 of bytes as 16 hex digits. */
void plan_hash_hex(const void *data, size_t n, char out[17]);

#endif

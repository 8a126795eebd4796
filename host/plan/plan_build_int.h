/* plan_build_int.h: what plan_build.c shares with the files that make its subtasks' actions (plan_actions.c) and expected results (plan_expect.c). */
#ifndef BL_PLAN_PLAN_BUILD_INT_H
#define BL_PLAN_PLAN_BUILD_INT_H

#include <math.h>
#include <stdint.h>

#include "plan/plan_int.h"

/* Machine coordinates are written to 0.01 mm: finer than any arm repeats, and short to read. */
static inline double pm_r2(double v)
{
	return round(v * 100.0) / 100.0;
}

/* ---- plan_actions.c ---- */

struct builder {
	struct plan *p;
	const struct machine *m;
	const struct plan_options *opt;
	const struct plan_solver *solver;
	arm_point at; /* tool position after the actions so far */
	long next_id;
	size_t cap_sub;
	struct plan_subtask *cur;
	size_t cap_act;
	struct arm_path path;
};

/* A new subtask at the end of the plan, the one later actions go to; NULL out of memory. */
struct plan_subtask *pm_new_subtask(struct builder *b, enum plan_subtask_type type, int colour,
				    bl_err *err);
/* Each appends one action, and the moves it needs to get there, to the current subtask. */
int pm_act_simple(struct builder *b, enum arm_kind kind, bl_err *err);
int pm_act_dip(struct builder *b, const char *brush, const char *cell, bl_err *err);
int pm_act_stroke(struct builder *b, const struct pm_stroke *st, bl_err *err);
/* A mix subtask: the solver's recipe for volume_ml of colour dispensed into its cell, stirred; then wash, wipe, park. */
int pm_add_mix(struct builder *b, int colour, double volume_ml, bl_err *err);

/* ---- plan_expect.c ---- */

struct expect_grid {
	int cols, rows;
	int *cell_of;    /* grid pixel -> expectation cell */
	int *cell_px;    /* pixels in each cell */
	int *covered;    /* pixels the current batch painted, per cell */
	uint32_t *mark;  /* grid pixel -> last batch that painted it */
	/* pm_batch_repaint's scratch, a cell each: its index in the batch (-1: not in it), sums, pixels. */
	int *slot;
	double *rep_sum;
	long *rep_n;
};

int pm_expect_init(struct expect_grid *e, const struct pm_grid *g, double cell_mm,
		   bl_err *err);
void pm_expect_free(struct expect_grid *e);
/* The cells the batch marked batch_mark painted, each with canvas there. */
int pm_batch_expect(struct plan_subtask *s, const struct expect_grid *e,
		    const struct pm_grid *g, const float *canvas, uint32_t batch_mark,
		    bl_err *err);
/* Each of s's cells' share repainted, from before to after towards paint. */
void pm_batch_repaint(struct plan_subtask *s, const struct expect_grid *e,
		      const struct pm_grid *g, const float *before, const float *after,
		      const float *paint, uint32_t batch_mark);
/* Every cell of the grid with the canvas predicted there. */
int pm_checkpoint_expect(struct plan_subtask *s, const struct expect_grid *e,
			 const struct pm_grid *g, const float *canvas, bl_err *err);

#endif

/* planner_admit.c: what the engine checks of any planner's answer before it keeps it: header, sizes, references, the tolerance bar, every action through the gate's check. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/planner.h"

/* Sizes an answer may have: far above what the built-in planner makes for PLAN_MAX_STROKES. */
#define ADMIT_MAX_SUBTASKS 100000
#define ADMIT_MAX_ACTIONS 2000000
#define ADMIT_MAX_ACTION_ID 99999999L /* the engine numbers its own actions from 10^8 */
#define ADMIT_MAX_UNITS 100000

/* The action kinds each subtask type may hold: homing and jogging are the operator's, never a plan's. */
#define K(k) (1u << (k))
static const unsigned kinds_of_type[] = {
	[PLAN_MIX] = K(ARM_MOVE) | K(ARM_DISPENSE) | K(ARM_STIR) | K(ARM_WASH) | K(ARM_WIPE) | K(ARM_PARK),
	[PLAN_PAINT] = K(ARM_MOVE) | K(ARM_STROKE) | K(ARM_DIP) | K(ARM_WASH) | K(ARM_WIPE) | K(ARM_PARK),
	[PLAN_CHECKPOINT] = K(ARM_MOVE) | K(ARM_WASH) | K(ARM_WIPE) | K(ARM_PARK),
};
#undef K
_Static_assert(sizeof(kinds_of_type) / sizeof(kinds_of_type[0]) == PLAN_SUBTASK_COUNT,
	       "a subtask type without its action kinds");
_Static_assert(ARM_KIND_COUNT <= 32, "kinds_of_type holds a bit a kind");

/* The bar a subtask type's threshold is held to (gate_check_tolerance's kinds). */
static const char *const bar_of_type[] = {
	[PLAN_MIX] = "mix",
	[PLAN_PAINT] = "paint",
	[PLAN_CHECKPOINT] = "paint",
};
_Static_assert(sizeof(bar_of_type) / sizeof(bar_of_type[0]) == PLAN_SUBTASK_COUNT,
	       "a subtask type without its tolerance bar");

struct admit {
	const struct planner_request *q;
	const struct machine *m;
	const struct plan *p;
	struct planner_denial *why;
	int cols, rows;      /* the grid the request's image rectangle makes */
	long *ids;           /* every action id, for the uniqueness check */
	size_t n_ids;
};

__attribute__((format(printf, 6, 7))) static int deny(struct admit *x, enum planner_reason r,
						       long sub, long act, const char *field,
						       const char *fmt, ...)
{
	struct planner_denial *w = x->why;
	va_list ap;

	w->reason = r;
	w->subtask = sub;
	w->action = act;
	snprintf(w->field, sizeof(w->field), "%s", field);
	va_start(ap, fmt);
	vsnprintf(w->message, sizeof(w->message), fmt, ap);
	va_end(ap);
	memcpy(w->detail, w->message, sizeof(w->detail));
	return BL_EDENIED;
}

static int finite_in(double v, double lo, double hi)
{
	return isfinite(v) && v >= lo && v <= hi;
}

static int lab_ok(const color_lab *c)
{
	return finite_in(c->L, 0.0, 100.0) && finite_in(c->a, -128.0, 128.0) &&
	       finite_in(c->b, -128.0, 128.0);
}

static int admit_colours(struct admit *x)
{
	const struct plan *p = x->p, *base = x->q->painting;
	int most = x->m->n_cells < PLAN_MAX_COLOURS ? x->m->n_cells : PLAN_MAX_COLOURS;

	if (p->n_colours < 1 || p->n_colours > most)
		return deny(x, PLANNER_R_TOO_MANY, -1, -1, "colours", "colours: %d is not 1 to the mixing cells' count",
			    p->n_colours);
	if (x->q->phase == PLANNER_CORRECT && p->n_colours != base->n_colours)
		return deny(x, PLANNER_R_HEADER, -1, -1, "colours",
			    "colours: a correction keeps the painting's %d colours", base->n_colours);
	for (int c = 0; c < p->n_colours; c++) {
		const struct plan_colour *k = &p->colours[c];

		if (!machine_find_cell(x->m, k->cell))
			return deny(x, PLANNER_R_HEADER, -1, -1, "colours", "colours[%d]: cell '%s' is not the machine's",
				    c, k->cell);
		if (!lab_ok(&k->lab) || !lab_ok(&k->want))
			return deny(x, PLANNER_R_HEADER, -1, -1, "colours", "colours[%d]: lab is not a colour", c);
		if (x->q->phase == PLANNER_CORRECT &&
		    (strcmp(k->name, base->colours[c].name) || strcmp(k->cell, base->colours[c].cell) ||
		     memcmp(&k->lab, &base->colours[c].lab, sizeof(k->lab))))
			return deny(x, PLANNER_R_HEADER, -1, -1, "colours",
				    "colours[%d]: a correction keeps the painting's colours", c);
	}
	return 0;
}

/* The plan as a whole: the phase's kind of answer, made for this target, this machine and this grid. */
static int admit_header(struct admit *x)
{
	const struct plan *p = x->p, *base = x->q->painting;
	const struct machine *m = x->m;
	const double *im = p->image_mm;

	/* A painting run again as a "correction" would repaint the whole picture on the correction's budget. */
	if (!p->correction != (x->q->phase != PLANNER_CORRECT))
		return deny(x, PLANNER_R_PHASE, -1, -1, "correction", "correction: %s",
			    x->q->phase == PLANNER_CORRECT ? "a correction round's answer is a correction (true)"
							   : "the painting's answer is no correction (false)");
	if (strcmp(p->target_hash, x->q->in->target_hash ? x->q->in->target_hash : ""))
		return deny(x, PLANNER_R_HEADER, -1, -1, "target_hash", "target_hash: not the target asked about");
	if (strcmp(p->machine_name, m->name))
		return deny(x, PLANNER_R_HEADER, -1, -1, "machine", "machine: not the machine asked about");
	if (!finite_in(im[2], 1.0, m->canvas.size_mm[0]) || !finite_in(im[3], 1.0, m->canvas.size_mm[1]) ||
	    !finite_in(im[0], 0.0, m->canvas.size_mm[0] - im[2]) ||
	    !finite_in(im[1], 0.0, m->canvas.size_mm[1] - im[3]))
		return deny(x, PLANNER_R_HEADER, -1, -1, "image_mm", "image_mm: the picture does not lie on the canvas");
	if (x->q->phase == PLANNER_CORRECT &&
	    (memcmp(im, base->image_mm, sizeof(p->image_mm)) || p->cell_mm != base->cell_mm))
		return deny(x, PLANNER_R_HEADER, -1, -1, "image_mm",
			    "image_mm, cell_mm: a correction keeps the painting's picture and grid");
	if (x->q->phase == PLANNER_PLAN && p->cell_mm != x->q->opt->cell_mm)
		return deny(x, PLANNER_R_HEADER, -1, -1, "cell_mm", "cell_mm: not the grid asked for");
	if (!finite_in(p->cell_mm, 1.0, 1000.0))
		return deny(x, PLANNER_R_HEADER, -1, -1, "cell_mm", "cell_mm: not a cell size");
	plan_grid_cells(im, p->cell_mm, &x->cols, &x->rows);
	if (p->grid_cols != x->cols || p->grid_rows != x->rows)
		return deny(x, PLANNER_R_HEADER, -1, -1, "grid", "grid: %d x %d cells, the picture makes %d x %d",
			    p->grid_cols, p->grid_rows, x->cols, x->rows);
	if (!lab_ok(&p->canvas_lab) || !finite_in(p->opacity, 0.0, 1.0) ||
	    !finite_in(p->mean_de00, 0.0, 1000.0) || !finite_in(p->p95_de00, 0.0, 1000.0) ||
	    !finite_in(p->arm_time_s, 0.0, 1e9))
		return deny(x, PLANNER_R_HEADER, -1, -1, "predicted",
			    "canvas_lab, opacity, mean_de00, p95_de00, arm_time_s: not figures");
	if (p->n_strokes < 0 || p->n_strokes > PLAN_MAX_STROKES)
		return deny(x, PLANNER_R_TOO_MANY, -1, -1, "strokes", "strokes: %d", p->n_strokes);
	if (p->n_subtasks < 1 || p->n_subtasks > ADMIT_MAX_SUBTASKS)
		return deny(x, PLANNER_R_TOO_MANY, -1, -1, "subtasks", "subtasks: %zu is not 1 to %d",
			    p->n_subtasks, ADMIT_MAX_SUBTASKS);
	if (p->n_unfixable > (size_t)x->cols * x->rows)
		return deny(x, PLANNER_R_TOO_MANY, -1, -1, "unfixable", "unfixable: more than the grid's cells");
	for (size_t i = 0; i < p->n_unfixable; i++)
		if (p->unfixable[i].col < 0 || p->unfixable[i].col >= x->cols || p->unfixable[i].row < 0 ||
		    p->unfixable[i].row >= x->rows)
			return deny(x, PLANNER_R_BAD_CELL, -1, -1, "unfixable", "unfixable[%zu]: outside the grid", i);
	return admit_colours(x);
}

static int admit_cells(struct admit *x, long i, const struct plan_subtask *s)
{
	if (s->n_cells > (size_t)x->cols * x->rows || (s->n_cells && !s->cells))
		return deny(x, PLANNER_R_TOO_MANY, i, -1, "cells", "subtask %ld: more cells than the grid has", i);
	for (size_t k = 0; k < s->n_cells; k++) {
		const struct plan_cell *c = &s->cells[k];

		if (c->col < 0 || c->col >= x->cols || c->row < 0 || c->row >= x->rows)
			return deny(x, PLANNER_R_BAD_CELL, i, -1, "cells",
				    "subtask %ld: cells[%zu] (%d, %d) is outside the grid", i, k, c->col, c->row);
		if (!finite_in(c->coverage, 0.0, 1.0) || !finite_in(c->repaint, 0.0, 1.0) || !lab_ok(&c->lab))
			return deny(x, PLANNER_R_BAD_CELL, i, -1, "cells",
				    "subtask %ld: cells[%zu]: coverage, repaint or lab out of range", i, k);
	}
	if (s->type == PLAN_CHECKPOINT && !finite_in(s->predicted_mean_de00, 0.0, 1000.0))
		return deny(x, PLANNER_R_BAD_SUBTASK, i, -1, "predicted_mean_de00",
			    "subtask %ld: predicted_mean_de00 is not a figure", i);
	return 0;
}

/* A mix: a volume the colour's cell holds, a recipe of the machine's wells. */
static int admit_mix(struct admit *x, long i, const struct plan_subtask *s)
{
	const struct machine_station *cell = machine_find_cell(x->m, x->p->colours[s->colour].cell);
	double ml = 0.0;

	if (!finite_in(s->volume_ml, 1e-6, cell->capacity_ml))
		return deny(x, PLANNER_R_BAD_SUBTASK, i, -1, "volume_ml",
			    "subtask %ld: volume_ml is not a volume its cell holds", i);
	if (s->mix.recipe.n < 1 || s->mix.recipe.n > PLAN_MAX_RECIPE || !lab_ok(&s->mix.lab))
		return deny(x, PLANNER_R_BAD_SUBTASK, i, -1, "mix", "subtask %ld: mix: no recipe, or not a colour", i);
	for (int k = 0; k < s->mix.recipe.n; k++) {
		const struct plan_recipe_item *it = &s->mix.recipe.item[k];

		if (!machine_find_well(x->m, it->well) || it->units < 0 || it->units > ADMIT_MAX_UNITS)
			return deny(x, PLANNER_R_BAD_SUBTASK, i, -1, "mix.recipe",
				    "subtask %ld: recipe[%d]: well '%s' or %d units not the machine's", i, k,
				    it->well, it->units);
		ml += it->units * x->m->mixing.dispense_unit_ml;
	}
	if (ml > cell->capacity_ml)
		return deny(x, PLANNER_R_BAD_SUBTASK, i, -1, "mix.recipe",
			    "subtask %ld: the recipe holds more than its cell", i);
	return 0;
}

static int admit_paint(struct admit *x, long i, const struct plan_subtask *s)
{
	const double *r = s->region_mm, *sz = x->m->canvas.size_mm;
	size_t strokes = 0;

	if (!machine_find_brush(x->m, s->brush))
		return deny(x, PLANNER_R_BAD_SUBTASK, i, -1, "brush", "subtask %ld: brush '%s' is not the machine's",
			    i, s->brush);
	if (!finite_in(r[0], 0.0, sz[0]) || !finite_in(r[2], r[0], sz[0]) || !finite_in(r[1], 0.0, sz[1]) ||
	    !finite_in(r[3], r[1], sz[1]))
		return deny(x, PLANNER_R_BAD_SUBTASK, i, -1, "region_mm",
			    "subtask %ld: region_mm is not a box on the canvas", i);
	for (size_t k = 0; k < s->n_actions; k++)
		strokes += s->actions[k].kind == ARM_STROKE;
	if (s->n_strokes < 0 || (size_t)s->n_strokes != strokes || s->batch < 0)
		return deny(x, PLANNER_R_BAD_SUBTASK, i, -1, "n_strokes",
			    "subtask %ld: n_strokes is not the count of its strokes", i);
	/* A batch without a stroke would make any number of mixes look used. */
	if (strokes == 0)
		return deny(x, PLANNER_R_BAD_SUBTASK, i, -1, "n_strokes", "subtask %ld: a paint batch without a stroke", i);
	return 0;
}

/*
 * Every mix is for the paint batches of its colour that follow it: one mix
 * more before any batch has used the last, or a mix no batch uses, dispenses
 * paint and arm time for nothing (and is how a correction round would mix
 * the whole palette again).
 */
static int admit_mix_use(struct admit *x)
{
	long unused[PLAN_MAX_COLOURS];

	for (int k = 0; k < PLAN_MAX_COLOURS; k++)
		unused[k] = -1;
	for (size_t i = 0; i < x->p->n_subtasks; i++) {
		const struct plan_subtask *s = &x->p->subtasks[i];

		if (s->type == PLAN_PAINT)
			unused[s->colour] = -1;
		if (s->type != PLAN_MIX)
			continue;
		if (unused[s->colour] >= 0)
			return deny(x, PLANNER_R_BAD_SUBTASK, unused[s->colour], -1, "type",
				    "subtask %ld: a mix of %s that no paint batch uses before its next mix (subtask %zu)",
				    unused[s->colour], x->p->colours[s->colour].name, i);
		unused[s->colour] = (long)i;
	}
	for (int k = 0; k < x->p->n_colours; k++)
		if (unused[k] >= 0)
			return deny(x, PLANNER_R_BAD_SUBTASK, unused[k], -1, "type",
				    "subtask %ld: a mix of %s that no paint batch uses", unused[k], x->p->colours[k].name);
	return 0;
}

/* The paint the mixes' recipes draw from each well, against what it has left. */
static int admit_paint_left(struct admit *x)
{
	const struct machine *m = x->m;
	double drawn[CFG_MAX_WELLS] = { 0 };

	for (size_t i = 0; i < x->p->n_subtasks; i++) {
		const struct plan_subtask *s = &x->p->subtasks[i];

		for (int k = 0; s->type == PLAN_MIX && k < s->mix.recipe.n; k++) {
			const struct plan_recipe_item *it = &s->mix.recipe.item[k];
			int w = 0;

			while (w < m->n_wells && strcmp(m->wells[w].name, it->well))
				w++;
			if (w == m->n_wells)
				continue; /* admit_mix refused it already */
			drawn[w] += it->units * m->mixing.dispense_unit_ml;
			if (drawn[w] > x->q->left->wells_ml[w] + 1e-9) {
				deny(x, PLANNER_R_OVER_BUDGET, (long)i, -1, "mix.recipe",
				     "subtask %zu: the mixes draw more of well %s than it has left (wells[].left_ml)", i,
				     it->well);
				snprintf(x->why->detail, sizeof(x->why->detail),
					 "subtask %zu: the mixes up to here draw %.2f ml of well %s, which has %.2f ml left", i,
					 drawn[w], it->well, x->q->left->wells_ml[w]);
				return BL_EDENIED;
			}
		}
	}
	return 0;
}

/* The phase's stroke budget, and what the run has left of arm time and paint. */
static int admit_budget(struct admit *x, bl_err *err)
{
	const struct plan *p = x->p;
	const struct planner_budget *left = x->q->left;
	long strokes = 0;
	double arm_s;
	int rc;

	for (size_t i = 0; i < p->n_subtasks; i++)
		strokes += p->subtasks[i].type == PLAN_PAINT ? p->subtasks[i].n_strokes : 0;
	if (p->n_strokes != strokes)
		return deny(x, PLANNER_R_HEADER, -1, -1, "strokes", "strokes: %d, and the paint subtasks hold %ld",
			    p->n_strokes, strokes);
	if (strokes > x->q->opt->max_strokes)
		return deny(x, PLANNER_R_OVER_BUDGET, -1, -1, "strokes",
			    "strokes: %ld, more than this phase's budget of %d (options.max_strokes)", strokes,
			    x->q->opt->max_strokes);
	if ((rc = admit_mix_use(x)))
		return rc;
	if (!left)
		return 0;
	if (left->wells_ml && (rc = admit_paint_left(x)))
		return rc;
	/* The planner's arm_time_s is its claim: the time is the host's own estimate, at the arm's acceleration. */
	if ((rc = plan_motion_time_s(p, x->m, x->m->limits.soft.accel_mm_s2, &arm_s, err)))
		return rc;
	if (arm_s > left->arm_time_s) {
		deny(x, PLANNER_R_OVER_BUDGET, -1, -1, "arm_time_s",
		     "arm_time_s: the plan's motion takes longer than the run has left");
		snprintf(x->why->detail, sizeof(x->why->detail),
			 "arm_time_s: the plan's motion takes %.0f s and the run has %.0f s of arm time left", arm_s,
			 fmax(left->arm_time_s, 0.0));
		return BL_EDENIED;
	}
	return 0;
}

/* The threshold the subtask is verified against: never looser than the bar. */
static int admit_tolerance(struct admit *x, long i, const struct plan_subtask *s)
{
	struct planner_denial *w = x->why;

	if (gate_check_tolerance(x->m, bar_of_type[s->type], s->tolerance_de00, &w->gate) == GATE_ALLOW)
		return 0;
	w->has_gate = 1;
	deny(x, PLANNER_R_TOLERANCE, i, -1, "tolerance_de00", "subtask %ld: %s", i,
	     w->gate.findings[0].message);
	snprintf(w->detail, sizeof(w->detail), "subtask %ld: %s", i, w->gate.findings[0].detail);
	return BL_EDENIED;
}

/*
 * Findings an admitted action may carry: those a person answers at run time
 * by design (operator kinds). Soft limits of motion are refused here: a plan
 * stays within what an unattended run may do.
 */
static int finding_admissible(enum gate_reason r)
{
	return r == GATE_R_OPERATOR_KIND || r == GATE_R_HOMING || r == GATE_R_FIRST_MOTION ||
	       r == GATE_R_AFTER_FAULT;
}

/* Every action through the gate's pure check, the tool carried from one to the next. */
static int admit_actions(struct admit *x, long i, const struct plan_subtask *s, arm_point *at,
			 struct arm_path *path, bl_err *err)
{
	struct planner_denial *w = x->why;
	struct gate_context ctx = { 0 };
	int rc;

	for (size_t k = 0; k < s->n_actions; k++) {
		const struct arm_action *a = &s->actions[k];
		const struct gate_finding *f = NULL;

		if (a->id < 0 || a->id > ADMIT_MAX_ACTION_ID)
			return deny(x, PLANNER_R_BAD_SUBTASK, i, (long)k, "id",
				    "subtask %ld action %zu: id %ld is not 0 to %ld", i, k, a->id, ADMIT_MAX_ACTION_ID);
		if (x->n_ids == ADMIT_MAX_ACTIONS)
			return deny(x, PLANNER_R_TOO_MANY, i, (long)k, "actions", "more than %d actions",
				    ADMIT_MAX_ACTIONS);
		x->ids[x->n_ids++] = a->id;
		if ((rc = gate_check(x->m, at, a, &ctx, path, &w->gate, err)))
			return rc;
		for (int n = 0; n < w->gate.n_findings && !f; n++)
			if (!finding_admissible(w->gate.findings[n].reason))
				f = &w->gate.findings[n];
		if (f || w->gate.n_dropped) {
			w->has_gate = 1;
			w->gate.index = (long)k;
			deny(x, PLANNER_R_ACTION, i, (long)k, f ? f->field : "", "subtask %ld action %zu: %s", i, k,
			     f ? f->message : "refused");
			snprintf(w->detail, sizeof(w->detail), "subtask %ld action %zu: %s", i, k,
				 f ? f->detail : "refused");
			return BL_EDENIED;
		}
		if (w->gate.has_path)
			*at = w->gate.to;
	}
	return 0;
}

static int admit_subtask(struct admit *x, long i, arm_point *at, struct arm_path *path, bl_err *err)
{
	const struct plan_subtask *s = &x->p->subtasks[i];
	int rc;

	if ((unsigned)s->type >= PLAN_SUBTASK_COUNT)
		return deny(x, PLANNER_R_BAD_SUBTASK, i, -1, "type", "subtask %ld: not a subtask type", i);
	/* Subtasks are named by id in the journal (s3, c1.s3): one id a place, counted from 1. */
	if (s->id != i + 1)
		return deny(x, PLANNER_R_BAD_SUBTASK, i, -1, "id", "subtask %ld: id %d is not its place + 1", i,
			    s->id);
	if (!plan_kind_coloured(s->type) ? s->colour != -1 : (s->colour < 0 || s->colour >= x->p->n_colours))
		return deny(x, PLANNER_R_BAD_SUBTASK, i, -1, "colour", "subtask %ld: colour %d is not the plan's", i,
			    s->colour);
	if (s->n_actions && !s->actions)
		return deny(x, PLANNER_R_BAD_SUBTASK, i, -1, "actions", "subtask %ld: actions missing", i);
	for (size_t k = 0; k < s->n_actions; k++)
		if ((unsigned)s->actions[k].kind >= ARM_KIND_COUNT ||
		    !(kinds_of_type[s->type] & (1u << s->actions[k].kind)))
			return deny(x, PLANNER_R_ACTION_KIND, i, (long)k, "type",
				    "subtask %ld action %zu: a %s subtask holds no action of this kind", i, k,
				    plan_subtask_names[s->type]);
	if ((rc = admit_tolerance(x, i, s)) || (rc = admit_cells(x, i, s)))
		return rc;
	if (s->type == PLAN_MIX && (rc = admit_mix(x, i, s)))
		return rc;
	if (s->type == PLAN_PAINT && (rc = admit_paint(x, i, s)))
		return rc;
	return admit_actions(x, i, s, at, path, err);
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

int planner_admit(const struct planner_request *q, const struct plan *p, struct planner_denial *why,
		  bl_err *err)
{
	struct admit x = { .q = q, .m = q->in->machine, .p = p, .why = why };
	const struct machine *m = x.m;
	arm_point at = { m->home_mm[0], m->home_mm[1], m->home_mm[2] };
	struct arm_path path = { 0 };
	size_t n_actions = 0;
	bl_err perr = { 0 };
	int rc;

	memset(why, 0, sizeof(*why));
	why->subtask = why->action = -1;
	if (q->phase == PLANNER_CORRECT && !q->painting)
		return bl_fail(err, BL_EINVAL, "planner_admit: a correction without the painting's plan");
	if ((rc = admit_header(&x)))
		return rc;
	for (size_t i = 0; i < p->n_subtasks; i++)
		n_actions += p->subtasks[i].n_actions;
	if (n_actions > ADMIT_MAX_ACTIONS)
		return deny(&x, PLANNER_R_TOO_MANY, -1, -1, "actions", "more than %d actions", ADMIT_MAX_ACTIONS);
	if (!(x.ids = malloc(sizeof(*x.ids) * (n_actions + 1))))
		return bl_fail(err, BL_ENOMEM, "out of memory admitting a plan");
	for (size_t i = 0; i < p->n_subtasks && rc == 0; i++)
		rc = admit_subtask(&x, (long)i, &at, &path, err);
	if (rc)
		goto out;
	if ((rc = admit_budget(&x, err)))
		goto out;
	qsort(x.ids, x.n_ids, sizeof(*x.ids), cmp_long);
	for (size_t i = 1; i < x.n_ids; i++)
		if (x.ids[i] == x.ids[i - 1]) {
			rc = deny(&x, PLANNER_R_BAD_SUBTASK, -1, -1, "id", "action id %ld is used twice", x.ids[i]);
			goto out;
		}
	/* The planner's own rules last: anything they refuse that the above let by is still refused. */
	if (plan_check(p, m, &perr)) {
		rc = deny(&x, PLANNER_R_ACTION, -1, -1, "", "the plan breaks a rule of the machine's");
		snprintf(why->detail, sizeof(why->detail), "%s", perr.msg);
	}
out:
	arm_path_free(&path);
	free(x.ids);
	return rc;
}

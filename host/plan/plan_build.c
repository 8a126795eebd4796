/* plan_build.c: from placed strokes to the ordered subtasks of a plan: mixes, paint batches with their actions and expected results, checkpoints. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan_int.h"

const char *const plan_subtask_names[] = { "mix", "paint", "checkpoint", NULL };
_Static_assert(sizeof(plan_subtask_names) / sizeof(plan_subtask_names[0]) == PLAN_SUBTASK_COUNT + 1,
	       "a name for every subtask kind");

int plan_kind_coloured(enum plan_subtask_type t)
{
	switch (t) {
	case PLAN_MIX:
	case PLAN_PAINT:
		return 1;
	case PLAN_CHECKPOINT:
	case PLAN_SUBTASK_COUNT:
		break;
	}
	return 0;
}

double plan_kind_tolerance(const struct machine *m, enum plan_subtask_type t)
{
	switch (t) {
	case PLAN_MIX:
		return m->tolerances.mix_de00;
	case PLAN_PAINT:
	case PLAN_CHECKPOINT:
	case PLAN_SUBTASK_COUNT:
		break;
	}
	return m->tolerances.paint_de00;
}

/* Machine coordinates are written to 0.01 mm: finer than any arm repeats, and short to read. */
static double r2(double v)
{
	return round(v * 100.0) / 100.0;
}

/* ---- ordering ---------------------------------------------------------- */

static int cmp_group(const void *a, const void *b)
{
	const struct pm_stroke *x = a, *y = b;

	if (x->pass != y->pass)
		return x->pass - y->pass;
	if (x->colour != y->colour)
		return x->colour - y->colour;
	/* batch holds the placement order until batches are assigned: keep it as the tie-break */
	return x->batch - y->batch;
}

static void reverse_stroke(struct pm_stroke *s)
{
	for (int i = 0, j = s->n - 1; i < j; i++, j--) {
		double tx = s->xy[2 * i], ty = s->xy[2 * i + 1];

		s->xy[2 * i] = s->xy[2 * j];
		s->xy[2 * i + 1] = s->xy[2 * j + 1];
		s->xy[2 * j] = tx;
		s->xy[2 * j + 1] = ty;
	}
}

/* Nearest neighbour from (x, y), either end of a stroke may start it: short travel inside a colour. */
static void order_group(struct pm_stroke *s, size_t n, double x, double y)
{
	for (size_t i = 0; i < n; i++) {
		size_t best = i;
		int rev = 0;
		double bd = INFINITY;

		for (size_t j = i; j < n; j++) {
			const double *p = s[j].xy;
			double d0 = hypot(p[0] - x, p[1] - y);
			double d1 = hypot(p[2 * (s[j].n - 1)] - x, p[2 * (s[j].n - 1) + 1] - y);

			if (d0 < bd) {
				bd = d0;
				best = j;
				rev = 0;
			}
			if (d1 < bd) {
				bd = d1;
				best = j;
				rev = 1;
			}
		}
		if (best != i) {
			struct pm_stroke t = s[i];

			s[i] = s[best];
			s[best] = t;
		}
		if (rev)
			reverse_stroke(&s[i]);
		x = s[i].xy[2 * (s[i].n - 1)];
		y = s[i].xy[2 * (s[i].n - 1) + 1];
	}
}

/* ---- actions ----------------------------------------------------------- */

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

static struct plan_subtask *new_subtask(struct builder *b, enum plan_subtask_type type, int colour,
					bl_err *err)
{
	struct plan *p = b->p;
	struct plan_subtask *s;

	if (p->n_subtasks == b->cap_sub) {
		size_t cap = b->cap_sub ? b->cap_sub * 2 : 64;
		struct plan_subtask *ns = realloc(p->subtasks, cap * sizeof(*ns));

		if (!ns) {
			bl_fail(err, BL_ENOMEM, "out of memory for subtasks");
			return NULL;
		}
		p->subtasks = ns;
		b->cap_sub = cap;
	}
	s = &p->subtasks[p->n_subtasks++];
	memset(s, 0, sizeof(*s));
	s->id = (int)p->n_subtasks;
	s->type = type;
	s->colour = colour;
	s->batch = -1;
	s->tolerance_de00 = plan_kind_tolerance(b->m, type);
	b->cur = s;
	b->cap_act = 0;
	return s;
}

static int seg_hits_box(double ax, double ay, double bx, double by, const struct machine_box *k,
			double margin)
{
	/* Liang-Barsky clip of the segment against the box grown by margin, in x and y. */
	double t0 = 0.0, t1 = 1.0, dx = bx - ax, dy = by - ay;
	double p[4] = { -dx, dx, -dy, dy };
	double q[4] = { ax - (k->min_mm[0] - margin), (k->max_mm[0] + margin) - ax,
			ay - (k->min_mm[1] - margin), (k->max_mm[1] + margin) - ay };

	for (int i = 0; i < 4; i++) {
		if (p[i] == 0.0) {
			if (q[i] < 0.0)
				return 0;
			continue;
		}
		double t = q[i] / p[i];

		if (p[i] < 0.0) {
			if (t > t1)
				return 0;
			if (t > t0)
				t0 = t;
		} else {
			if (t < t0)
				return 0;
			if (t < t1)
				t1 = t;
		}
	}
	return 1;
}

static int clear_path(const struct machine *m, double ax, double ay, double bx, double by,
		      double z)
{
	for (int i = 0; i < m->n_keep_out; i++) {
		const struct machine_box *k = &m->keep_out[i];

		if (z < k->min_mm[2] || z > k->max_mm[2])
			continue;
		if (seg_hits_box(ax, ay, bx, by, k, 4.0))
			return 0;
	}
	return 1;
}

static int push_action(struct builder *b, struct arm_action *a, bl_err *err);
static double safe_speed(const struct machine *m, const struct arm_path *p, double v);

static int push_move(struct builder *b, double x, double y, double z, bl_err *err)
{
	struct arm_action a;

	memset(&a, 0, sizeof(a));
	a.kind = ARM_MOVE;
	a.zones = 1u << ARM_ZONE_TRAVEL;
	a.speed_mm_s = b->opt->travel_speed_mm_s;
	a.target.x = r2(x);
	a.target.y = r2(y);
	a.target.z = r2(z);
	return push_action(b, &a, err);
}

/*
 * Every action starts by travelling across at the tool's height; where that
 * crossing is longer than one move may be, or passes a keep-out box, waypoints
 * go first, so the whole plan stays within the unattended limits.
 */
static int route_to(struct builder *b, double x, double y, bl_err *err)
{
	const struct machine *m = b->m;
	/* Less the 0.01 mm waypoints are rounded to, so that no step passes move_mm. */
	double z = b->at.z, max_mm = m->painting.move_mm - 0.01;
	int rc;

	if (!clear_path(m, b->at.x, b->at.y, x, y, z)) {
		double best = INFINITY, wx = 0, wy = 0;

		for (int i = 0; i < m->n_keep_out; i++)
			for (int c = 0; c < 4; c++) {
				const struct machine_box *k = &m->keep_out[i];
				double cx = c & 1 ? k->max_mm[0] + 10.0 : k->min_mm[0] - 10.0;
				double cy = c & 2 ? k->max_mm[1] + 10.0 : k->min_mm[1] - 10.0;
				double d = hypot(cx - b->at.x, cy - b->at.y) + hypot(x - cx, y - cy);

				if (cx < m->work_min_mm[0] || cx > m->work_max_mm[0] ||
				    cy < m->work_min_mm[1] || cy > m->work_max_mm[1])
					continue;
				if (d < best && clear_path(m, b->at.x, b->at.y, cx, cy, z) &&
				    clear_path(m, cx, cy, x, y, z)) {
					best = d;
					wx = cx;
					wy = cy;
				}
			}
		if (isfinite(best) && (rc = route_to(b, wx, wy, err)))
			return rc;
		if (isfinite(best) && (rc = push_move(b, wx, wy, z, err)))
			return rc;
	}
	while (hypot(x - b->at.x, y - b->at.y) > max_mm) {
		double d = hypot(x - b->at.x, y - b->at.y), f = max_mm / d;

		if ((rc = push_move(b, b->at.x + f * (x - b->at.x), b->at.y + f * (y - b->at.y), z,
				    err)))
			return rc;
	}
	return 0;
}

static int push_action(struct builder *b, struct arm_action *a, bl_err *err)
{
	struct plan_subtask *s = b->cur;
	int rc;

	if (a->kind != ARM_MOVE) {
		/* Where the action first goes, so that the crossing to it can be checked. */
		double x = b->at.x, y = b->at.y;
		const struct machine_station *st = NULL;

		switch (a->kind) {
		case ARM_STROKE:
			x = a->points[0].x;
			y = a->points[0].y;
			break;
		case ARM_DIP:
			st = a->cell[0] ? machine_find_cell(b->m, a->cell) : machine_find_well(b->m, a->well);
			break;
		case ARM_DISPENSE:
			st = machine_find_well(b->m, a->well);
			break;
		case ARM_STIR:
			st = machine_find_cell(b->m, a->cell);
			break;
		case ARM_WASH:
			st = &b->m->water;
			break;
		case ARM_WIPE:
			st = &b->m->wipe;
			break;
		case ARM_PARK:
			x = b->m->park_mm[0];
			y = b->m->park_mm[1];
			break;
		case ARM_HOME:
		case ARM_MOVE:
		case ARM_JOG:
		case ARM_KIND_COUNT:
			break;
		}
		if (st) {
			x = st->center_mm[0];
			y = st->center_mm[1];
		}
		if ((rc = route_to(b, x, y, err)))
			goto out_release;
	}
	if (s->n_actions == b->cap_act) {
		size_t cap = b->cap_act ? b->cap_act * 2 : 16;
		struct arm_action *na = realloc(s->actions, cap * sizeof(*na));

		if (!na) {
			rc = bl_fail(err, BL_ENOMEM, "out of memory for actions");
			goto out_release;
		}
		s->actions = na;
		b->cap_act = cap;
	}
	a->id = b->next_id++;
	rc = arm_motion(b->m, &b->at, a, &b->path, err);
	if (rc)
		goto out_release;
	{
		/* Curves (a stroke's bends, a stir's circle) set the speed: slower where they are tight. */
		double v = safe_speed(b->m, &b->path, a->speed_mm_s);

		if (v < a->speed_mm_s) {
			a->speed_mm_s = v > 1.0 ? v : 1.0;
			if ((rc = arm_motion(b->m, &b->at, a, &b->path, err)))
				goto out_release;
		}
	}
	for (size_t i = 0; i < b->path.n; i++) {
		const struct arm_segment *g = &b->path.seg[i];

		b->at = g->to;
	}
	s->actions[s->n_actions++] = *a;
	return 0;

out_release:
	arm_action_release(a);
	return rc;
}

/*
 * The fastest speed at which every gentle turn of a path stays within the
 * unattended acceleration: a turn under 45 degrees is taken at speed, with a
 * centripetal acceleration v^2 / R (R through the three points), as the gate
 * models every backend; a sharper one is a stop.
 */
static double safe_speed(const struct machine *m, const struct arm_path *p, double v)
{
	double amax = m->painting.curve_accel_mm_s2;

	for (size_t i = 1; i < p->n; i++) {
		const struct arm_segment *s0 = &p->seg[i - 1], *s1 = &p->seg[i];
		double ux = s0->to.x - s0->from.x, uy = s0->to.y - s0->from.y, uz = s0->to.z - s0->from.z;
		double vx = s1->to.x - s1->from.x, vy = s1->to.y - s1->from.y, vz = s1->to.z - s1->from.z;
		double wx = s1->to.x - s0->from.x, wy = s1->to.y - s0->from.y, wz = s1->to.z - s0->from.z;
		double l0 = sqrt(ux * ux + uy * uy + uz * uz), l1 = sqrt(vx * vx + vy * vy + vz * vz);
		double l2 = sqrt(wx * wx + wy * wy + wz * wz), cx = uy * vz - uz * vy,
		       cy = uz * vx - ux * vz, cz = ux * vy - uy * vx, cross, r;

		if (l0 <= 0.0 || l1 <= 0.0 || (s0->flags | s1->flags) & ARM_SEG_DWELL)
			continue;
		if ((ux * vx + uy * vy + uz * vz) / (l0 * l1) <= cos(45.0 * M_PI / 180.0))
			continue;
		cross = sqrt(cx * cx + cy * cy + cz * cz);
		if (cross < 1e-9 * l0 * l1)
			continue;
		r = l0 * l1 * l2 / (2.0 * cross);
		if (v * v / r > amax)
			v = sqrt(amax * r);
	}
	return floor(v);
}

static int act_simple(struct builder *b, enum arm_kind kind, bl_err *err)
{
	struct arm_action a;

	memset(&a, 0, sizeof(a));
	a.kind = kind;
	a.zones = arm_default_zones(kind);
	a.speed_mm_s = b->opt->travel_speed_mm_s;
	if (kind == ARM_WASH)
		a.duration_ms = b->opt->wash_ms;
	return push_action(b, &a, err);
}

static int act_dip(struct builder *b, const char *brush, const char *cell, bl_err *err)
{
	const struct machine_station *c = machine_find_cell(b->m, cell);
	struct arm_action a;

	memset(&a, 0, sizeof(a));
	a.kind = ARM_DIP;
	a.zones = (1u << ARM_ZONE_TRAVEL) | (1u << ARM_ZONE_CELL);
	a.speed_mm_s = b->opt->travel_speed_mm_s;
	snprintf(a.brush, sizeof(a.brush), "%s", brush);
	snprintf(a.cell, sizeof(a.cell), "%s", cell);
	/* Half the cell's depth: enough to load the brush without flooding it. */
	a.depth_mm = r2(0.5 * c->depth_mm);
	return push_action(b, &a, err);
}

static int act_stroke(struct builder *b, const struct pm_stroke *st, bl_err *err)
{
	const struct machine *m = b->m;
	double floor_press = m->painting.press_max_mm;
	double z = r2(m->canvas.surface_z_mm - fmin(b->opt->press_mm, floor_press));
	struct arm_action a;

	memset(&a, 0, sizeof(a));
	a.kind = ARM_STROKE;
	a.zones = (1u << ARM_ZONE_TRAVEL) | (1u << ARM_ZONE_CANVAS);
	a.speed_mm_s = b->opt->stroke_speed_mm_s;
	snprintf(a.brush, sizeof(a.brush), "%s", m->brushes[st->brush].name);
	a.points = malloc((size_t)st->n * sizeof(*a.points));
	if (!a.points)
		return bl_fail(err, BL_ENOMEM, "out of memory for a stroke");
	a.n_points = (size_t)st->n;
	for (int i = 0; i < st->n; i++) {
		struct machine_pt mp = xform_to_machine(&m->xf, (struct canvas_pt){ st->xy[2 * i],
										    st->xy[2 * i + 1] });

		a.points[i].x = r2(mp.x);
		a.points[i].y = r2(mp.y);
		a.points[i].z = z;
	}
	return push_action(b, &a, err);
}

static int add_mix(struct builder *b, int colour, double volume_ml, bl_err *err)
{
	const struct machine *m = b->m;
	struct plan_colour *c = &b->p->colours[colour];
	const struct machine_station *cell = machine_find_cell(m, c->cell);
	struct plan_subtask *s = new_subtask(b, PLAN_MIX, colour, err);
	struct arm_action a;
	int rc;

	if (!s)
		return BL_ENOMEM;
	s->volume_ml = volume_ml;
	if ((rc = b->solver->solve(b->solver->ctx, &c->want, volume_ml, &s->mix, err)))
		return rc;
	for (int i = 0; i < s->mix.recipe.n; i++) {
		const struct plan_recipe_item *it = &s->mix.recipe.item[i];

		if (it->units <= 0)
			continue;
		memset(&a, 0, sizeof(a));
		a.kind = ARM_DISPENSE;
		a.zones = arm_default_zones(ARM_DISPENSE);
		a.speed_mm_s = b->opt->travel_speed_mm_s;
		snprintf(a.well, sizeof(a.well), "%s", it->well);
		snprintf(a.cell, sizeof(a.cell), "%s", c->cell);
		a.units = it->units;
		if ((rc = push_action(b, &a, err)))
			return rc;
	}
	memset(&a, 0, sizeof(a));
	a.kind = ARM_STIR;
	a.zones = arm_default_zones(ARM_STIR);
	a.speed_mm_s = b->opt->travel_speed_mm_s;
	snprintf(a.cell, sizeof(a.cell), "%s", c->cell);
	a.depth_mm = r2(0.8 * cell->depth_mm);
	a.duration_ms = m->mixing.stir_ms;
	if ((rc = push_action(b, &a, err)))
		return rc;
	if ((rc = act_simple(b, ARM_WASH, err)) || (rc = act_simple(b, ARM_WIPE, err)))
		return rc;
	/* Out of the camera's view, so the mix can be measured. */
	return act_simple(b, ARM_PARK, err);
}

/* ---- the prediction and its expected results ------------------------ */

struct expect_grid {
	int cols, rows;
	int *cell_of;    /* grid pixel -> expectation cell */
	int *cell_px;    /* pixels in each cell */
	int *covered;    /* pixels the current batch painted, per cell */
	uint32_t *mark;  /* grid pixel -> last batch that painted it */
};

static int expect_init(struct expect_grid *e, const struct pm_grid *g, double cell_mm,
		       bl_err *err)
{
	size_t n = (size_t)g->w * g->h;

	pm_grid_cells(g, cell_mm, &e->cols, &e->rows);
	e->cell_of = malloc(n * sizeof(int));
	e->mark = calloc(n, sizeof(uint32_t));
	e->cell_px = calloc((size_t)e->cols * e->rows, sizeof(int));
	e->covered = calloc((size_t)e->cols * e->rows, sizeof(int));
	if (!e->cell_of || !e->mark || !e->cell_px || !e->covered)
		return bl_fail(err, BL_ENOMEM, "out of memory for expected results");
	for (int y = 0; y < g->h; y++)
		for (int x = 0; x < g->w; x++) {
			int c = pm_cell_of(g, cell_mm, e->cols, e->rows, x, y);

			e->cell_of[(size_t)y * g->w + x] = c;
			e->cell_px[c]++;
		}
	return 0;
}

static void expect_free(struct expect_grid *e)
{
	free(e->cell_of);
	free(e->mark);
	free(e->cell_px);
	free(e->covered);
}

static void cell_mean(const struct expect_grid *e, const struct pm_grid *g, const float *canvas,
		      int c, color_lab *out)
{
	double s[3] = { 0, 0, 0 };
	int n = 0, cx = c % e->cols, cy = c / e->cols;

	for (int y = 0; y < g->h; y++) {
		size_t row = (size_t)y * g->w;

		if (e->cell_of[row] / e->cols != cy)
			continue;
		for (int x = 0; x < g->w; x++)
			if (e->cell_of[row + x] == c) {
				for (int q = 0; q < 3; q++)
					s[q] += canvas[3 * (row + x) + q];
				n++;
			}
	}
	(void)cx;
	out->L = n ? r2(s[0] / n) : 0;
	out->a = n ? r2(s[1] / n) : 0;
	out->b = n ? r2(s[2] / n) : 0;
}

static int cmp_cover(const void *a, const void *b)
{
	const struct plan_cell *x = a, *y = b;

	if (x->coverage != y->coverage)
		return (x->coverage < y->coverage) - (x->coverage > y->coverage);
	return (x->row * 100000 + x->col) - (y->row * 100000 + y->col);
}

static int cmp_pos(const void *a, const void *b)
{
	const struct plan_cell *x = a, *y = b;

	return (x->row * 100000 + x->col) - (y->row * 100000 + y->col);
}

/* The cells a batch paints, with the canvas predicted there right after it. */
static int batch_expect(struct plan_subtask *s, const struct expect_grid *e,
			const struct pm_grid *g, const float *canvas, uint32_t batch_mark,
			bl_err *err)
{
	size_t nc = (size_t)e->cols * e->rows, n = 0;
	struct plan_cell *cells;

	memset(e->covered, 0, nc * sizeof(int));
	for (size_t i = 0; i < (size_t)g->w * g->h; i++)
		if (e->mark[i] == batch_mark)
			e->covered[e->cell_of[i]]++;
	for (size_t c = 0; c < nc; c++)
		n += e->covered[c] > 0;
	cells = calloc(n ? n : 1, sizeof(*cells));
	if (!cells)
		return bl_fail(err, BL_ENOMEM, "out of memory for expected results");
	n = 0;
	for (size_t c = 0; c < nc; c++)
		if (e->covered[c] > 0) {
			cells[n].col = (int)(c % e->cols);
			cells[n].row = (int)(c / e->cols);
			cells[n].coverage = round(100.0 * e->covered[c] / e->cell_px[c]) / 100.0;
			n++;
		}
	/* Cells mostly painted by the batch say most about it; fine strokes may half-cover only a few. */
	qsort(cells, n, sizeof(*cells), cmp_cover);
	{
		size_t keep = 0;

		while (keep < n && cells[keep].coverage >= 0.5)
			keep++;
		if (keep < 4)
			keep = n < 4 ? n : 4;
		n = keep;
	}
	qsort(cells, n, sizeof(*cells), cmp_pos);
	for (size_t i = 0; i < n; i++)
		cell_mean(e, g, canvas, cells[i].row * e->cols + cells[i].col, &cells[i].lab);
	s->cells = cells;
	s->n_cells = n;
	return 0;
}

/*
 * How much of each listed cell's colour the batch replaced in the model:
 * per pixel, the share of the way from its colour before to the paint
 * (what Lab blending moved it), averaged over the cell's pixels.
 */
static void batch_repaint(struct plan_subtask *s, const struct expect_grid *e,
			  const struct pm_grid *g, const float *before, const float *after,
			  const float *paint, uint32_t batch_mark)
{
	for (size_t c = 0; c < s->n_cells; c++) {
		int cell = s->cells[c].row * e->cols + s->cells[c].col;
		double sum = 0.0;
		long n = 0;

		for (size_t i = 0; i < (size_t)g->w * g->h; i++) {
			const float *b = before + 3 * i, *a = after + 3 * i;
			double dp[3], da[3], n2;

			if (e->cell_of[i] != cell)
				continue;
			for (int k = 0; k < 3; k++) {
				dp[k] = paint[k] - b[k];
				da[k] = a[k] - b[k];
			}
			n2 = dp[0] * dp[0] + dp[1] * dp[1] + dp[2] * dp[2];
			/* A pixel already the paint's colour: repainted in full where the batch painted it. */
			sum += n2 < 1e-6 ? (e->mark[i] == batch_mark ? 1.0 : 0.0)
					 : pm_clamp((da[0] * dp[0] + da[1] * dp[1] + da[2] * dp[2]) / n2, 0.0, 1.0);
			n++;
		}
		s->cells[c].repaint = n ? round(100.0 * sum / n) / 100.0 : s->cells[c].coverage;
	}
}

static int checkpoint_expect(struct plan_subtask *s, const struct expect_grid *e,
			     const struct pm_grid *g, const float *canvas, bl_err *err)
{
	size_t nc = (size_t)e->cols * e->rows;
	double (*sum)[3] = calloc(nc, sizeof(*sum));

	s->cells = calloc(nc, sizeof(*s->cells));
	if (!sum || !s->cells) {
		free(sum);
		return bl_fail(err, BL_ENOMEM, "out of memory for a checkpoint");
	}
	for (size_t i = 0; i < (size_t)g->w * g->h; i++)
		for (int q = 0; q < 3; q++)
			sum[e->cell_of[i]][q] += canvas[3 * i + q];
	s->n_cells = 0;
	for (size_t c = 0; c < nc; c++) {
		struct plan_cell *k = &s->cells[s->n_cells];
		int n = e->cell_px[c];

		/* A sliver of a last column or row with no pixel of the grid expects nothing. */
		if (!n)
			continue;
		k->col = (int)(c % e->cols);
		k->row = (int)(c / e->cols);
		k->coverage = 1.0;
		k->lab.L = r2(sum[c][0] / n);
		k->lab.a = r2(sum[c][1] / n);
		k->lab.b = r2(sum[c][2] / n);
		s->n_cells++;
	}
	free(sum);
	return 0;
}

/* ---- assembling ------------------------------------------------------ */

static double batch_paint_ml(const struct machine *m, const struct pm_stroke *s, size_t n)
{
	const struct machine_brush *br = &m->brushes[s[0].brush];
	double left = 0.0, ml = 0.0;

	for (size_t i = 0; i < n; i++) {
		if (i == 0 || s[i].len_mm > left) {
			ml += br->load_ml;
			left = br->reload_mm;
		}
		left -= s[i].len_mm;
	}
	return ml;
}

/* What pm_build carries from batch to batch: the predicted canvas and each colour's paint. */
struct build {
	struct builder b;
	struct expect_grid e;
	struct pm_footprint fp;
	const struct pm_grid *g;
	float *canvas, *before;   /* the predicted canvas, and as it was before the batch */
	double need[PLAN_MAX_COLOURS];    /* ml each colour's strokes still take */
	double content[PLAN_MAX_COLOURS]; /* ml in each colour's cell, as planned */
	int mixed[PLAN_MAX_COLOURS], batches[PLAN_MAX_COLOURS];
	float col[PLAN_MAX_COLOURS][3];   /* each colour as the prediction lays it */
	uint32_t batch_mark;
};

/* The end of the group of strokes from i on: the same pass and colour. */
static size_t group_end(const struct pm_strokes *st, size_t i)
{
	size_t j = i;

	while (j < st->n && st->s[j].pass == st->s[i].pass && st->s[j].colour == st->s[i].colour)
		j++;
	return j;
}

/* Order: pass by pass (coarse to fine), light colours before dark, short travel inside a colour. */
static void order_strokes(const struct plan *p, const struct machine *m, struct pm_strokes *st)
{
	for (size_t i = 0; i < st->n; i++)
		st->s[i].batch = (int)i;
	if (st->n)
		qsort(st->s, st->n, sizeof(*st->s), cmp_group);
	for (size_t i = 0, j; i < st->n; i = j) {
		const struct machine_station *cell = machine_find_cell(m, p->colours[st->s[i].colour].cell);
		struct canvas_pt sc = xform_to_canvas(&m->xf, (struct machine_pt){ cell->center_mm[0],
										    cell->center_mm[1] });

		j = group_end(st, i);
		order_group(st->s + i, j - i, sc.x, sc.y);
	}
}

/* Paint each colour needs, in dips (a mix is sized to it, within a cell's capacity), and its strokes. */
static void count_needs(struct build *x, const struct pm_strokes *st)
{
	struct plan *p = x->b.p;

	for (size_t i = 0, j; i < st->n; i = j) {
		j = group_end(st, i);
		x->need[st->s[i].colour] += batch_paint_ml(x->b.m, st->s + i, j - i);
		for (size_t k = i; k < j; k++) {
			p->colours[st->s[k].colour].strokes++;
			p->colours[st->s[k].colour].stroke_mm += st->s[k].len_mm;
		}
	}
}

/* The colour's cell holds ml for the next batch: a mix when it does not, sized to what is left. */
static int ensure_mixed(struct build *x, int k, double ml, bl_err *err)
{
	const struct machine *m = x->b.m;
	double vol;
	int rc;

	if (x->mixed[k] && x->content[k] >= ml - 1e-9)
		return 0;
	vol = fmin(m->mixing.cell_max_ml - (x->mixed[k] ? x->content[k] : 0.0),
		   fmax(m->mixing.cell_min_ml, x->need[k] * 1.1));
	vol = round(vol / m->mixing.dispense_unit_ml) * m->mixing.dispense_unit_ml;
	if ((rc = add_mix(&x->b, k, vol, err)))
		return rc;
	x->content[k] += vol;
	x->mixed[k] = 1;
	return 0;
}

/* Stroke st of the batch under way: its dip when the brush needs one, its actions, its prediction. */
static int batch_stroke(struct build *x, const struct machine_brush *br, int k, float op,
			struct pm_stroke *st, int first, double *left, double box[4], bl_err *err)
{
	int rc;

	if (first || st->len_mm > *left) {
		if ((rc = act_dip(&x->b, br->name, x->b.p->colours[k].cell, err)))
			return rc;
		*left = br->reload_mm;
	}
	*left -= st->len_mm;
	if ((rc = act_stroke(&x->b, st, err)))
		return rc;
	for (int v = 0; v < st->n; v++) {
		box[0] = fmin(box[0], st->xy[2 * v] - 0.5 * br->width_mm);
		box[2] = fmax(box[2], st->xy[2 * v] + 0.5 * br->width_mm);
		box[1] = fmin(box[1], st->xy[2 * v + 1] - 0.5 * br->width_mm);
		box[3] = fmax(box[3], st->xy[2 * v + 1] + 0.5 * br->width_mm);
	}
	/* The prediction, in the order the strokes will be painted. */
	if ((rc = pm_fp_stroke(&x->fp, x->g, st->xy, st->n, br->width_mm, op, err)))
		return rc;
	pm_fp_apply(&x->fp, x->canvas, x->col[k]);
	for (int v = 0; v < x->fp.n; v++)
		if (x->fp.a[v] >= 0.5f * op)
			x->e.mark[x->fp.idx[v]] = x->batch_mark;
	st->batch = (int)x->b.p->n_subtasks - 1;
	return 0;
}

/* Strokes i..j-1 as one paint batch of their colour, mixed first when the cell is short; last: the group's last. */
static int build_batch(struct build *x, struct pm_strokes *st, size_t i, size_t j, int last, bl_err *err)
{
	struct plan *p = x->b.p;
	const struct machine *m = x->b.m;
	int k = st->s[i].colour;
	const struct machine_brush *br = &m->brushes[st->s[i].brush];
	const float op = (float)pm_opacity(x->b.opt, k);
	double ml = batch_paint_ml(m, st->s + i, j - i), left = 0.0;
	double box[4] = { INFINITY, INFINITY, -INFINITY, -INFINITY };
	size_t np = (size_t)x->g->w * x->g->h;
	struct plan_subtask *s;
	int rc;

	if ((rc = ensure_mixed(x, k, ml, err)))
		return rc;
	x->content[k] -= ml;
	x->need[k] -= ml;
	p->colours[k].paint_ml += ml;
	if (!(s = new_subtask(&x->b, PLAN_PAINT, k, err)))
		return BL_ENOMEM;
	s->batch = x->batches[k]++;
	memcpy(x->before, x->canvas, np * 3 * sizeof(float));
	snprintf(s->brush, sizeof(s->brush), "%s", br->name);
	s->n_strokes = (int)(j - i);
	x->batch_mark++;
	for (size_t q = i; q < j; q++)
		if ((rc = batch_stroke(x, br, k, op, &st->s[q], q == i, &left, box, err)))
			return rc;
	s->region_mm[0] = r2(fmax(0.0, box[0]));
	s->region_mm[1] = r2(fmax(0.0, box[1]));
	s->region_mm[2] = r2(fmin(m->canvas.size_mm[0], box[2]));
	s->region_mm[3] = r2(fmin(m->canvas.size_mm[1], box[3]));
	if ((rc = batch_expect(s, &x->e, x->g, x->canvas, x->batch_mark, err)))
		return rc;
	batch_repaint(s, &x->e, x->g, x->before, x->canvas, x->col[k], x->batch_mark);
	if (last && ((rc = act_simple(&x->b, ARM_WASH, err)) || (rc = act_simple(&x->b, ARM_WIPE, err))))
		return rc;
	if ((rc = act_simple(&x->b, ARM_PARK, err)))
		return rc;
	p->n_strokes += s->n_strokes;
	return 0;
}

/* A group of one pass and colour, in batches: up to batch_strokes strokes, at most half a cell of paint. */
static int build_group(struct build *x, struct pm_strokes *st, size_t i, size_t gend, bl_err *err)
{
	const struct machine *m = x->b.m;
	int rc;

	while (i < gend) {
		size_t j = i;

		while (j < gend && (int)(j - i) < x->b.opt->batch_strokes &&
		       batch_paint_ml(m, st->s + i, j - i + 1) <= 0.5 * m->mixing.cell_max_ml)
			j++;
		if (j == i)
			j = i + 1;
		if ((rc = build_batch(x, st, i, j, j == gend, err)))
			return rc;
		i = j;
	}
	return 0;
}

/* After the last colour of a pass, the whole canvas is observed. */
static int build_checkpoint(struct build *x, const struct pm_target *t, bl_err *err)
{
	struct plan_subtask *s = new_subtask(&x->b, PLAN_CHECKPOINT, -1, err);
	int rc;

	if (!s)
		return BL_ENOMEM;
	if ((rc = checkpoint_expect(s, &x->e, x->g, x->canvas, err)) ||
	    (rc = pm_score(x->g, t->lab, x->canvas, &s->predicted_mean_de00, NULL, err)))
		return rc;
	s->predicted_mean_de00 = r2(s->predicted_mean_de00);
	return act_simple(&x->b, ARM_PARK, err);
}

/* The plan's figures once every subtask is in: paint, stroke length, the predicted result, arm time. */
static int build_figures(struct build *x, const struct pm_target *t, bl_err *err)
{
	struct plan *p = x->b.p;
	int rc;

	for (int c = 0; c < p->n_colours; c++) {
		p->colours[c].paint_ml = r2(p->colours[c].paint_ml);
		p->colours[c].stroke_mm = r2(p->colours[c].stroke_mm);
	}
	if ((rc = pm_score(x->g, t->lab, x->canvas, &p->mean_de00, &p->p95_de00, err)))
		return rc;
	p->mean_de00 = r2(p->mean_de00);
	p->p95_de00 = r2(p->p95_de00);
	if ((rc = plan_motion_time_s(p, x->b.m, x->b.m->painting.curve_accel_mm_s2, &p->arm_time_s, err)))
		return rc;
	p->arm_time_s = round(p->arm_time_s);
	return 0;
}

int pm_build(struct plan *p, const struct pm_grid *g, const struct pm_target *t,
	     const float *start_canvas, const struct machine *m, const struct plan_solver *solver,
	     const struct plan_options *opt, struct pm_strokes *strokes, bl_err *err)
{
	size_t np = (size_t)g->w * g->h;
	struct build x;
	int rc;

	memset(&x, 0, sizeof(x));
	x.b.p = p;
	x.b.m = m;
	x.b.opt = opt;
	x.b.solver = solver;
	x.b.next_id = 1;
	x.b.at = (arm_point){ m->home_mm[0], m->home_mm[1], m->home_mm[2] };
	x.g = g;
	x.canvas = malloc(np * 3 * sizeof(float));
	x.before = malloc(np * 3 * sizeof(float));
	if (!x.canvas || !x.before) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory building the plan");
		goto out_free;
	}
	memcpy(x.canvas, start_canvas, np * 3 * sizeof(float));
	if ((rc = expect_init(&x.e, g, opt->cell_mm, err)) || (rc = pm_fp_init(&x.fp, g, err)))
		goto out_free;
	p->grid_cols = x.e.cols;
	p->grid_rows = x.e.rows;
	for (int c = 0; c < p->n_colours; c++) {
		const color_lab *l = opt->looks ? &opt->looks[c] : &p->colours[c].lab;

		x.col[c][0] = (float)l->L;
		x.col[c][1] = (float)l->a;
		x.col[c][2] = (float)l->b;
	}
	order_strokes(p, m, strokes);
	count_needs(&x, strokes);
	for (size_t i = 0, gend; i < strokes->n; i = gend) {
		gend = group_end(strokes, i);
		if ((rc = build_group(&x, strokes, i, gend, err)))
			goto out_free;
		if ((gend == strokes->n || strokes->s[gend].pass != strokes->s[i].pass) &&
		    (rc = build_checkpoint(&x, t, err)))
			goto out_free;
	}
	rc = build_figures(&x, t, err);

out_free:
	arm_path_free(&x.b.path);
	expect_free(&x.e);
	pm_fp_free(&x.fp);
	free(x.canvas);
	free(x.before);
	return rc;
}

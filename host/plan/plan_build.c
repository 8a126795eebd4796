/* plan_build.c: from placed strokes to the ordered subtasks of a plan: mixes, paint batches with their actions and expected results, checkpoints. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan_build_int.h"
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
	if ((rc = pm_add_mix(&x->b, k, vol, err)))
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
		if ((rc = pm_act_dip(&x->b, br->name, x->b.p->colours[k].cell, err)))
			return rc;
		*left = br->reload_mm;
	}
	*left -= st->len_mm;
	if ((rc = pm_act_stroke(&x->b, st, err)))
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
	if (!(s = pm_new_subtask(&x->b, PLAN_PAINT, k, err)))
		return BL_ENOMEM;
	s->batch = x->batches[k]++;
	memcpy(x->before, x->canvas, np * 3 * sizeof(float));
	snprintf(s->brush, sizeof(s->brush), "%s", br->name);
	s->n_strokes = (int)(j - i);
	x->batch_mark++;
	for (size_t q = i; q < j; q++)
		if ((rc = batch_stroke(x, br, k, op, &st->s[q], q == i, &left, box, err)))
			return rc;
	s->region_mm[0] = pm_r2(fmax(0.0, box[0]));
	s->region_mm[1] = pm_r2(fmax(0.0, box[1]));
	s->region_mm[2] = pm_r2(fmin(m->canvas.size_mm[0], box[2]));
	s->region_mm[3] = pm_r2(fmin(m->canvas.size_mm[1], box[3]));
	if ((rc = pm_batch_expect(s, &x->e, x->g, x->canvas, x->batch_mark, err)))
		return rc;
	pm_batch_repaint(s, &x->e, x->g, x->before, x->canvas, x->col[k], x->batch_mark);
	if (last && ((rc = pm_act_simple(&x->b, ARM_WASH, err)) || (rc = pm_act_simple(&x->b, ARM_WIPE, err))))
		return rc;
	if ((rc = pm_act_simple(&x->b, ARM_PARK, err)))
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
	struct plan_subtask *s = pm_new_subtask(&x->b, PLAN_CHECKPOINT, -1, err);
	int rc;

	if (!s)
		return BL_ENOMEM;
	if ((rc = pm_checkpoint_expect(s, &x->e, x->g, x->canvas, err)) ||
	    (rc = pm_score(x->g, t->lab, x->canvas, &s->predicted_mean_de00, NULL, err)))
		return rc;
	s->predicted_mean_de00 = pm_r2(s->predicted_mean_de00);
	return pm_act_simple(&x->b, ARM_PARK, err);
}

/* The plan's figures once every subtask is in: paint, stroke length, the predicted result, arm time. */
static int build_figures(struct build *x, const struct pm_target *t, bl_err *err)
{
	struct plan *p = x->b.p;
	int rc;

	for (int c = 0; c < p->n_colours; c++) {
		p->colours[c].paint_ml = pm_r2(p->colours[c].paint_ml);
		p->colours[c].stroke_mm = pm_r2(p->colours[c].stroke_mm);
	}
	if ((rc = pm_score(x->g, t->lab, x->canvas, &p->mean_de00, &p->p95_de00, err)))
		return rc;
	p->mean_de00 = pm_r2(p->mean_de00);
	p->p95_de00 = pm_r2(p->p95_de00);
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
	if ((rc = pm_expect_init(&x.e, g, opt->cell_mm, err)) || (rc = pm_fp_init(&x.fp, g, err)))
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
	pm_expect_free(&x.e);
	pm_fp_free(&x.fp);
	free(x.canvas);
	free(x.before);
	return rc;
}

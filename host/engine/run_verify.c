/* run_verify.c: a subtask's cells observed against what they should be now, and what the canvas teaches of each colour. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/prof.h"
#include "base/json.h"
#include "engine/run_int.h"

/* The canvas mm box of grid cell (col, row) of the plan's expected-result grid, clipped to the picture. */
static void cell_box(const struct plan *p, int col, int row, double box[4])
{
	box[0] = p->image_mm[0] + col * p->cell_mm;
	box[1] = p->image_mm[1] + row * p->cell_mm;
	box[2] = fmin(box[0] + p->cell_mm, p->image_mm[0] + p->image_mm[2]);
	box[3] = fmin(box[1] + p->cell_mm, p->image_mm[1] + p->image_mm[3]);
}

static double dot3(const double *a, const double *b)
{
	return a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
}

/*
 * A batch is judged on the change it makes to what the camera saw before it,
 * not on the planner's idea of the canvas it starts from (earlier batches
 * were off by up to their tolerance, and a thin stroke over them inherits
 * that). The plan says how much of each cell the batch repaints (`repaint`,
 * k: in its model, after = before + k (paint - before)); the cell should be
 * the observed colour before, moved k of the way to the paint as it shows on
 * this canvas (the plan's colour plus what its earlier strokes taught).
 * Without an observation before, the planner's prediction is the expectation.
 */
/* The paint as mixed: an accepted mix is what its cell measured (run_int.h says why). */
color_lab run_colour_paint(const struct run *r, int k)
{
	const struct run_colour *col = &r->st.colours[k];

	return col->accepted ? col->measured : run_plan((struct run *)r)->colours[k].lab;
}

struct cell_model {
	color_lab expected;
	double k;         /* share of the cell repainted (mean over its pixels) */
	color_lab before; /* observed before the batch */
	int have_before;
	double delta[3];  /* the change the plan's strokes make to the cell seen before (no hiding learnt) */
	int have_delta;
};

/*
 * Per pixel when the batch's footprint is known (plan_batch_alpha): the cell
 * before is seldom uniform (an edge of an earlier colour runs through it), and
 * a stroke over its bare half changes its mean far more than over its painted
 * half. The expectation is the mean over the cell's pixels of each pixel seen
 * before, moved its alpha of the way to the paint; the plan's per-cell share
 * `repaint` when the footprint is not known.
 */
static void model_cell(const struct run *r, const struct plan_subtask *s, const struct plan_cell *pc,
		       const float *before, struct cell_model *cm)
{
	const struct plan *p = run_plan((struct run *)r);
	const struct run_colour *col = &r->st.colours[s->colour];
	color_lab paint = run_colour_paint(r, s->colour);
	double hide = col->hide_weight > 0.0 ? col->hide : 1.0, box[4];

	memset(cm, 0, sizeof(*cm));
	cm->expected = pc->lab;
	cm->k = fmin(1.0, pc->repaint * hide);
	if (col->canvas_cells > 0) {
		paint.L += col->canvas_offset.L;
		paint.a += col->canvas_offset.a;
		paint.b += col->canvas_offset.b;
	}
	cell_box(&r->plan, pc->col, pc->row, box);
	if (before && r->alpha && r->alpha_w == r->last_w && r->alpha_h == r->last_h) {
		int x0 = (int)floor(box[0]), y0 = (int)floor(box[1]);
		int x1 = (int)ceil(box[2]), y1 = (int)ceil(box[3]);
		double b[3] = { 0, 0, 0 }, d[3] = { 0, 0, 0 }, a = 0.0;
		long n = 0;

		x0 = x0 < 0 ? 0 : x0;
		y0 = y0 < 0 ? 0 : y0;
		x1 = x1 > r->last_w ? r->last_w : x1;
		y1 = y1 > r->last_h ? r->last_h : y1;
		for (int y = y0; y < y1; y++)
			for (int x = x0; x < x1; x++) {
				size_t i = (size_t)y * r->last_w + x;
				const float *q = before + 3 * i;
				float al = r->alpha[i];

				b[0] += q[0], b[1] += q[1], b[2] += q[2];
				d[0] += al * (paint.L - q[0]);
				d[1] += al * (paint.a - q[1]);
				d[2] += al * (paint.b - q[2]);
				a += al;
				n++;
			}
		if (n) {
			cm->have_before = cm->have_delta = 1;
			cm->before = (color_lab){ b[0] / n, b[1] / n, b[2] / n };
			cm->k = a / n;
			for (int k = 0; k < 3; k++)
				cm->delta[k] = d[k] / n;
			/* Hiding scales each pixel's share; past a share of one a stroke cannot go. */
			cm->expected.L = cm->before.L + fmin(hide, 1.0 / fmax(cm->k, 1e-3)) * cm->delta[0];
			cm->expected.a = cm->before.a + fmin(hide, 1.0 / fmax(cm->k, 1e-3)) * cm->delta[1];
			cm->expected.b = cm->before.b + fmin(hide, 1.0 / fmax(cm->k, 1e-3)) * cm->delta[2];
			cm->k = fmin(1.0, cm->k * hide);
			return;
		}
	}
	if (before) {
		struct run_canvas c = { r->last_w, r->last_h, (float *)before, "" };

		cm->have_before = run_canvas_mean(&c, box[0], box[1], box[2], box[3], &cm->before) == 0;
	}
	if (cm->have_before) {
		cm->expected.L = cm->before.L + cm->k * (paint.L - cm->before.L);
		cm->expected.a = cm->before.a + cm->k * (paint.a - cm->before.a);
		cm->expected.b = cm->before.b + cm->k * (paint.b - cm->before.b);
		return;
	}
	/* A correction plan's cells are already predicted with the colours' looks (plan_options.looks). */
	if (col->canvas_cells > 0 && !p->correction) {
		cm->expected.L += cm->k * col->canvas_offset.L;
		cm->expected.a += cm->k * col->canvas_offset.a;
		cm->expected.b += cm->k * col->canvas_offset.b;
	}
}

/* Learns from an observation of s how its colour looks on the canvas (cells it repainted nearly whole). */
void run_learn_canvas(struct run *r, const struct plan_subtask *s, const struct run_canvas *c,
		      const float *before)
{
	struct run_colour *col = &r->st.colours[s->colour];
	const color_lab paint = run_colour_paint(r, s->colour), *pl = &paint;
	double sum[3] = { 0, 0, 0 }, landed = 0.0, coat = 0.0;
	long n = 0, n_landed = 0, n_coat = 0;

	for (size_t i = 0; i < s->n_cells; i++) {
		const struct plan_cell *pc = &s->cells[i];
		struct cell_model cm;
		double box[4], dp[3], ds[3], n2;
		color_lab seen, b;

		model_cell(r, s, pc, before, &cm);
		if (cm.k < 0.9)
			continue;
		cell_box(&r->plan, pc->col, pc->row, box);
		if (run_canvas_mean(c, box[0], box[1], box[2], box[3], &seen))
			continue;
		b = cm.have_before ? cm.before : seen;
		/* The paint as it shows: seen = before + k (paint - before). */
		sum[0] += b.L + (seen.L - b.L) / cm.k - pl->L;
		sum[1] += b.a + (seen.a - b.a) / cm.k - pl->a;
		sum[2] += b.b + (seen.b - b.b) / cm.k - pl->b;
		n++;
		/* How far the cell went from before towards the paint: near 1 when paint landed. */
		dp[0] = pl->L - b.L, dp[1] = pl->a - b.a, dp[2] = pl->b - b.b;
		ds[0] = seen.L - b.L, ds[1] = seen.a - b.a, ds[2] = seen.b - b.b;
		n2 = dot3(dp, dp);
		if (cm.have_before && n2 > 100.0) {
			landed += dot3(ds, dp) / n2;
			n_landed++;
		}
		/* The coat also from paint near what it covers (pale on pale), unlike the look. */
		if (cm.have_before && n2 > 16.0) {
			coat += dot3(ds, dp) / n2;
			n_coat++;
		}
	}
	if (!n)
		return;
	/* A batch that hardly moved its cells (a dry brush) says nothing about the paint's coat. */
	if (n_coat && coat / n_coat >= 0.15) {
		col->coat = (col->coat * col->coat_weight + coat) / (col->coat_weight + n_coat);
		col->coat_weight += n_coat;
	}
	/*
	 * Only a paint that landed teaches its look (a thin film, a light paint
	 * hiding poorly, a dark mix whose transparent part shows): strokes that
	 * failed (a dry brush, a missed canvas) leave the cells where they were,
	 * and that is never learnt as the paint's look. Without an observation
	 * before, only a look within the paint tolerance of the mix is believed.
	 */
	if (n_landed ? landed / n_landed < 0.5 : 0) {
		cJSON *d = cJSON_CreateObject();
		bl_err e;

		cJSON_AddNumberToObject(d, "moved_towards_paint", landed / n_landed);
		cJSON_AddStringToObject(d, "why", "the paint did not land: not learnt as its look");
		run_event(r, "canvas_look_refused", d, &e);
		return;
	}
	if (!n_landed) {
		color_lab shown = { pl->L + sum[0] / n, pl->a + sum[1] / n, pl->b + sum[2] / n };

		if (color_de00(&shown, pl) > s->tolerance_de00)
			return;
	}
	/* A running mean over every such cell seen so far. */
	col->canvas_offset.L = (col->canvas_offset.L * col->canvas_cells + sum[0]) / (col->canvas_cells + n);
	col->canvas_offset.a = (col->canvas_offset.a * col->canvas_cells + sum[1]) / (col->canvas_cells + n);
	col->canvas_offset.b = (col->canvas_offset.b * col->canvas_cells + sum[2]) / (col->canvas_cells + n);
	col->canvas_cells += n;
}

/*
 * Learns how much the colour's strokes repaint against the plan's share, from
 * the cells the batch repainted in part over a ground clearly unlike the paint
 * (a light paint over a darker one hides poorly): observed change over the
 * change the plan's share predicts, weighted by that share. Only once the
 * paint landed (a look learnt, the landing checked there).
 */
void run_learn_hiding(struct run *r, const struct plan_subtask *s, const struct run_canvas *c,
		      const float *before)
{
	struct run_colour *col = &r->st.colours[s->colour];
	double num = 0.0, wsum = 0.0, h;

	if (!before || col->canvas_cells == 0)
		return;
	for (size_t i = 0; i < s->n_cells; i++) {
		const struct plan_cell *pc = &s->cells[i];
		struct cell_model cm;
		double box[4], ds[3], n2, w;
		color_lab seen;

		model_cell(r, s, pc, before, &cm);
		if (!cm.have_delta)
			continue;
		n2 = dot3(cm.delta, cm.delta);
		if (n2 < 25.0)
			continue; /* the plan expects too small a change here to tell */
		cell_box(&r->plan, pc->col, pc->row, box);
		if (run_canvas_mean(c, box[0], box[1], box[2], box[3], &seen))
			continue;
		ds[0] = seen.L - cm.before.L, ds[1] = seen.a - cm.before.a, ds[2] = seen.b - cm.before.b;
		/* The observed change as a share of the planned one, weighted by the planned change's size. */
		w = sqrt(n2);
		num += w * dot3(ds, cm.delta) / n2;
		wsum += w;
	}
	if (wsum < 10.0)
		return;
	h = num / wsum;
	if (h < 0.25)
		return; /* hardly anything landed: a failure, not a property of the paint */
	h = fmin(1.2, h);
	col->hide = (col->hide * col->hide_weight + h * wsum) / (col->hide_weight + wsum);
	col->hide_weight += wsum;
}

/* CIEDE2000 of each of s's cells, observed against expected (-1 where the observation has none). */
double run_cells_verdict(const struct run *r, const struct plan_subtask *s, const struct run_canvas *c,
			 const float *before, double *per_cell)
{
	double sum = 0.0;
	int n = 0;

	for (size_t i = 0; i < s->n_cells; i++) {
		const struct plan_cell *pc = &s->cells[i];
		struct cell_model cm;
		double box[4];
		color_lab seen;

		if (s->type == PLAN_PAINT)
			model_cell(r, s, pc, before, &cm);
		else
			cm.expected = pc->lab;
		cell_box(&r->plan, pc->col, pc->row, box);
		if (per_cell)
			per_cell[i] = -1.0;
		if (run_canvas_mean(c, box[0], box[1], box[2], box[3], &seen) == 0) {
			double de = color_de00(&seen, &cm.expected);

			if (per_cell)
				per_cell[i] = de;
			sum += de;
			n++;
		}
	}
	return n ? sum / n : 0.0;
}

int run_observe_record(struct run *r, const struct plan_subtask *s, const char *what,
		       struct run_canvas *c, double *verdict, bl_err *err)
{
	double mean, p95;
	enum prof_phase prev = prof_enter(PROF_MEASURE);
	int rc;

	if ((rc = run_observe_canvas(r, what, c, err)) == 0)
		rc = run_canvas_vs_target(r, c, 0, &mean, &p95, err);
	if (rc == 0)
		*verdict = run_cells_verdict(r, s, c, s->type == PLAN_PAINT ? r->before_lab : NULL, NULL);
	prof_leave(prev);
	if (rc)
		return rc;
	if (r->st.n_hist == RUN_MAX_HISTORY) {
		memmove(r->st.hist, r->st.hist + 1, sizeof(r->st.hist[0]) * (RUN_MAX_HISTORY - 1));
		r->st.n_hist--;
	}
	r->st.hist[r->st.n_hist++] = (struct run_hist){ r->st.round, s->id, mean, p95, *verdict,
							clk_now_s(r->rig.clock) };
	return 0;
}


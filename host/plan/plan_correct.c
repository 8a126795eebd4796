/* plan_correct.c: corrective strokes from an observed canvas: paint the cells still beyond tolerance, name those no colour can fix. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan_int.h"

/* Cells off by more than this share of the paint tolerance are corrected. */
#define PLAN_CORRECT_OPEN 0.5

static void cell_means(const struct pm_grid *g, const float *img, double cell_mm, int cols,
		       int rows, double (*out)[4])
{
	memset(out, 0, sizeof(*out) * (size_t)cols * rows);
	for (int y = 0; y < g->h; y++)
		for (int x = 0; x < g->w; x++) {
			const float *p = img + 3 * ((size_t)y * g->w + x);
			double *o = out[pm_cell_of(g, cell_mm, cols, rows, x, y)];

			o[0] += p[0];
			o[1] += p[1];
			o[2] += p[2];
			o[3] += 1.0;
		}
	for (int c = 0; c < cols * rows; c++)
		if (out[c][3] > 0)
			for (int q = 0; q < 3; q++)
				out[c][q] /= out[c][3];
}

/* The corrective plan keeps everything the original fixed: target, machine, model, colours and cells. */
static void keep_what_was_fixed(const struct plan *p, struct plan *out)
{
	memcpy(out->target_file, p->target_file, sizeof(out->target_file));
	memcpy(out->target_hash, p->target_hash, sizeof(out->target_hash));
	out->target_w = p->target_w;
	out->target_h = p->target_h;
	memcpy(out->image_mm, p->image_mm, sizeof(out->image_mm));
	memcpy(out->machine_name, p->machine_name, sizeof(out->machine_name));
	memcpy(out->canvas_origin_mm, p->canvas_origin_mm, sizeof(out->canvas_origin_mm));
	out->xf = p->xf;
	memcpy(out->canvas_size_mm, p->canvas_size_mm, sizeof(out->canvas_size_mm));
	out->canvas_surface_z_mm = p->canvas_surface_z_mm;
	out->canvas_lab = p->canvas_lab;
	out->opacity = p->opacity;
	out->cell_mm = p->cell_mm;
	out->correction = 1;
	out->n_colours = p->n_colours;
	memcpy(out->colours, p->colours, sizeof(out->colours));
	for (int c = 0; c < out->n_colours; c++) {
		out->colours[c].paint_ml = out->colours[c].stroke_mm = 0.0;
		out->colours[c].strokes = 0;
	}
}

/*
 * A cell off by more than half the tolerance is open to correction: the
 * final figure is the mean over every cell, and most of it lies in cells
 * between half the tolerance and the tolerance (a flat painted in streaks,
 * the ground showing through); whether a stroke there is worth it is the
 * stroke placer's gain, as in planning. A cell beyond the tolerance whose
 * nearest colour (as it shows on this canvas, when known) is beyond it too
 * is one no colour can fix. An open cell's weight tm[c][3] becomes -1; out
 * gets the unfixable ones.
 */
static void open_cells(const struct plan *p, const struct plan_options *opt, double tol, int cols, int rows,
		       double (*tm)[4], double (*om)[4], struct plan *out)
{
	for (int c = 0; c < cols * rows; c++) {
		color_lab want = { tm[c][0], tm[c][1], tm[c][2] }, seen = { om[c][0], om[c][1], om[c][2] };
		double best = INFINITY, off;
		int bk = 0;

		if (tm[c][3] <= 0 || (off = color_de00(&want, &seen)) <= PLAN_CORRECT_OPEN * tol)
			continue;
		tm[c][3] = -1.0;
		if (off <= tol)
			continue;
		for (int k = 0; k < p->n_colours; k++) {
			double d = color_de00(&want, opt->looks ? &opt->looks[k] : &p->colours[k].lab);

			if (d < best) {
				best = d;
				bk = k;
			}
		}
		if (best > tol) {
			struct plan_unfixable *u = &out->unfixable[out->n_unfixable++];

			u->col = c % cols;
			u->row = c / cols;
			u->target.L = round(want.L * 100) / 100;
			u->target.a = round(want.a * 100) / 100;
			u->target.b = round(want.b * 100) / 100;
			u->best = p->colours[bk].lab;
			u->de00 = round(best * 100) / 100;
		}
		/* Even an unfixable cell is brought as close as the colours allow. */
	}
}

int plan_correct(const struct plan *p, const struct plan_inputs *in,
		 const struct plan_raster *observed, const struct plan_options *opt,
		 struct plan *out, bl_err *err)
{
	const struct machine *m = in->machine;
	double tol = m->tolerances.paint_de00;
	struct pm_grid g;
	struct pm_target t = { 0 };
	struct pm_strokes st = { 0 };
	double (*tm)[4] = NULL, (*om)[4] = NULL;
	float *obs = NULL, *lab = NULL;
	unsigned char *mask = NULL;
	int cols, rows, rc = 0, n_open = 0;
	size_t n;
	struct plan_options o = *opt;

	/* The cells were opened by their means, and their means are what the next checkpoint judges. */
	o.by_cell = 1;
	o.cell_mm = p->cell_mm;
	memset(out, 0, sizeof(*out));
	if (!observed || !observed->px || observed->w < 1 || observed->h < 1)
		return bl_fail(err, BL_EINVAL, "the observed canvas is empty");
	if (!in->target || !in->target->px)
		return bl_fail(err, BL_EINVAL, "the target image is empty");
	if (p->n_colours < 1)
		return bl_fail(err, BL_EINVAL, "the plan has no colours to correct with");

	keep_what_was_fixed(p, out);

	pm_grid_for(&g, p->image_mm);
	n = (size_t)g.w * g.h;
	pm_grid_cells(&g, p->cell_mm, &cols, &rows);
	lab = malloc(n * 3 * sizeof(float));
	obs = malloc(n * 3 * sizeof(float));
	mask = calloc(n, 1);
	tm = malloc(sizeof(*tm) * (size_t)cols * rows);
	om = malloc(sizeof(*om) * (size_t)cols * rows);
	out->unfixable = calloc((size_t)cols * rows, sizeof(*out->unfixable));
	if (!lab || !obs || !mask || !tm || !om || !out->unfixable) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory correcting");
		goto out_free;
	}
	if ((rc = pm_resample(in->target, &g, lab, err)) || (rc = pm_target_init(&t, &g, lab, err)) ||
	    (rc = pm_resample(observed, &g, obs, err)))
		goto out_free;
	cell_means(&g, t.lab, p->cell_mm, cols, rows, tm);
	cell_means(&g, obs, p->cell_mm, cols, rows, om);

	open_cells(p, opt, tol, cols, rows, tm, om, out);
	for (int y = 0; y < g.h; y++)
		for (int x = 0; x < g.w; x++) {
			mask[(size_t)y * g.w + x] = tm[pm_cell_of(&g, p->cell_mm, cols, rows, x, y)][3] < 0.0;
		}
	for (int c = 0; c < cols * rows; c++)
		n_open += tm[c][3] < 0.0;
	if (n_open > 0 &&
	    (rc = pm_place_strokes(&g, &t, obs, mask, m, out->colours, out->n_colours, &o, &st, err)))
		goto out_free;
	rc = pm_build(out, &g, &t, obs, m, in->solver, opt, &st, err);

out_free:
	if (rc)
		plan_free(out);
	pm_strokes_free(&st);
	pm_target_free(&t);
	free(lab);
	free(obs);
	free(mask);
	free(tm);
	free(om);
	return rc;
}

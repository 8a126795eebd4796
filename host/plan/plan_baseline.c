/* plan_baseline.c: the grid baseline the planner must beat: rows of straight strokes on a regular grid, each in the colour nearest the target under it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "plan/plan_int.h"

/*
 * The comparison the planner must beat: rows of straight strokes on a regular
 * grid, each in the colour nearest to the target's mean under it (or none when
 * the blank canvas is nearer). Every brush is tried and the best kept, so the
 * baseline is as good as a grid can be with the budget.
 */
static int baseline_for(const struct pm_grid *g, const struct pm_target *t, const struct machine *m,
			int brush, const float (*col)[3], int nc, const float *canvas_lab,
			const struct plan_options *opt, struct pm_strokes *out, double *score,
			bl_err *err)
{
	const struct machine_brush *br = &m->brushes[brush];
	double w = br->width_mm, img_w = g->w / g->px_mm, img_h = g->h / g->px_mm;
	int n = opt->max_strokes, rows_full, rows, cols, rc = 0;
	double span = img_w - w, pitch = 0.9 * w;
	size_t np = (size_t)g->w * g->h;
	float *canvas = malloc(np * 3 * sizeof(float));
	struct pm_footprint fp;
	double tot = 0.0;

	*score = INFINITY;
	if (!canvas)
		return bl_fail(err, BL_ENOMEM, "out of memory for the baseline");
	if ((rc = pm_fp_init(&fp, g, err))) {
		free(canvas);
		return rc;
	}
	for (size_t i = 0; i < np; i++)
		memcpy(canvas + 3 * i, canvas_lab, 3 * sizeof(float));
	rows_full = (int)floor((img_h - w) / pitch) + 1;
	rows = n < rows_full ? n : rows_full;
	cols = n / rows;
	if (cols < (int)ceil(span / br->reload_mm)) {
		cols = (int)ceil(span / br->reload_mm);
		rows = n / cols;
	}
	if (rows < 1 || cols < 1)
		goto out_free;
	for (int r = 0; r < rows; r++) {
		double y = g->y0_mm + 0.5 * w + (rows > 1 ? r * (img_h - w) / (rows - 1) : 0.5 * (img_h - w));

		for (int c = 0; c < cols; c++) {
			double a = g->x0_mm + c * img_w / cols, b = g->x0_mm + (c + 1) * img_w / cols;
			double xa = a + 0.5 * w, xb = b - 0.5 * w, xy[4], mean[3] = { 0, 0, 0 }, wsum = 0;
			float mf[3], bd;
			int best = -1;

			if (xb - xa < 0.2 * w) {
				double mid = 0.5 * (a + b);

				xa = mid - 0.1 * w;
				xb = mid + 0.1 * w;
			}
			xa = pm_clamp(xa, g->x0_mm + 0.5 * w, g->x0_mm + img_w - 0.5 * w);
			xb = pm_clamp(xb, g->x0_mm + 0.5 * w, g->x0_mm + img_w - 0.5 * w);
			xy[0] = xa;
			xy[1] = y;
			xy[2] = xb;
			xy[3] = y;
			if ((rc = pm_fp_stroke(&fp, g, xy, 2, w, opt->opacity, err)))
				goto out_free;
			for (int j = 0; j < fp.n; j++) {
				const float *p = t->lab + 3 * (size_t)fp.idx[j];

				for (int q = 0; q < 3; q++)
					mean[q] += fp.a[j] * p[q];
				wsum += fp.a[j];
			}
			if (wsum <= 0)
				continue;
			for (int q = 0; q < 3; q++)
				mf[q] = (float)(mean[q] / wsum);
			bd = pm_dist_ref(mf, canvas_lab);
			for (int k = 0; k < nc; k++) {
				float d = pm_dist_ref(mf, col[k]);

				if (d < bd) {
					bd = d;
					best = k;
				}
			}
			if (best < 0)
				continue;
			pm_fp_apply(&fp, canvas, col[best]);
			{
				struct pm_stroke st = { best, brush, 0, 2, malloc(4 * sizeof(double)),
							xb - xa, -1 };

				if (!st.xy) {
					rc = bl_fail(err, BL_ENOMEM, "out of memory for a stroke");
					goto out_free;
				}
				memcpy(st.xy, xy, sizeof(xy));
				if ((rc = pm_strokes_push(out, &st, err))) {
					free(st.xy);
					goto out_free;
				}
			}
		}
	}
	for (size_t i = 0; i < np; i++)
		tot += pm_dist(t, i, canvas + 3 * i);
	*score = tot;

out_free:
	pm_fp_free(&fp);
	free(canvas);
	return rc;
}

int pm_baseline_strokes(const struct pm_grid *g, const struct pm_target *t,
			const struct machine *m, const struct plan_colour *colours, int n_colours,
			const struct plan_options *opt, struct pm_strokes *out, bl_err *err)
{
	float col[PLAN_MAX_COLOURS][3], canvas[3] = { (float)opt->canvas_lab.L,
						      (float)opt->canvas_lab.a,
						      (float)opt->canvas_lab.b };
	double best = INFINITY;
	double img_w = g->w / g->px_mm, img_h = g->h / g->px_mm;
	int rc;

	for (int c = 0; c < n_colours; c++) {
		col[c][0] = (float)colours[c].lab.L;
		col[c][1] = (float)colours[c].lab.a;
		col[c][2] = (float)colours[c].lab.b;
	}
	for (int b = 0; b < m->n_brushes; b++) {
		struct pm_strokes trial = { 0 };
		double score;

		if (m->brushes[b].width_mm >= fmin(img_w, img_h) || opt->max_strokes <= 0)
			continue;
		rc = baseline_for(g, t, m, b, (const float(*)[3])col, n_colours, canvas, opt, &trial,
				  &score, err);
		if (rc) {
			pm_strokes_free(&trial);
			return rc;
		}
		if (score < best) {
			best = score;
			pm_strokes_free(out);
			*out = trial;
		} else {
			pm_strokes_free(&trial);
		}
	}
	return 0;
}

/* plan_colours.c: choosing a painting's colours: k-means of the target in CIELAB, light to dark. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "plan/plan_int.h"

/* Automatic colour count: add colours until the target's mean Lab distance to its nearest colour is this small. */
#define PM_AUTO_COLOUR_ERR 2.5

static float d2(const float *a, const float *b)
{
	float x = a[0] - b[0], y = a[1] - b[1], z = a[2] - b[2];

	return x * x + y * y + z * z;
}

static int cmp_light(const void *a, const void *b)
{
	const struct plan_colour *x = a, *y = b;

	return (x->lab.L < y->lab.L) - (x->lab.L > y->lab.L);
}

/*
 * k-means in Lab with the blank canvas as a fixed extra centre: where the
 * target is close to the canvas, no paint is needed at all. Seeding is
 * k-means++ from a fixed seed, so the choice repeats exactly. Returns the
 * centres found (fewer than k when the target has fewer colours) and the mean
 * distance of the samples to their nearest centre.
 */
static int kmeans(const struct pm_target *t, size_t step, size_t ns, int k, const float *canvas,
		  unsigned long seed, float (*cent)[3], float (*sum)[4], float *dmin, double *mean_d)
{
	int nc;
	rng r;

	rng_init(&r, seed);
	for (size_t s = 0; s < ns; s++)
		dmin[s] = d2(t->lab + 3 * (s * step), canvas);
	for (nc = 0; nc < k; nc++) {
		double tot = 0.0, pick;
		size_t s;

		for (s = 0; s < ns; s++)
			tot += dmin[s];
		if (tot <= 1e-6)
			break;
		pick = rng_uniform(&r) * tot;
		for (s = 0; s < ns - 1 && (pick -= dmin[s]) > 0.0; s++)
			;
		memcpy(cent[nc], t->lab + 3 * (s * step), sizeof(cent[nc]));
		for (size_t q = 0; q < ns; q++) {
			float d = d2(t->lab + 3 * (q * step), cent[nc]);

			if (d < dmin[q])
				dmin[q] = d;
		}
	}
	memcpy(cent[nc], canvas, 3 * sizeof(float));
	*mean_d = 0.0;
	for (int it = 0; it < 14 && nc > 0; it++) {
		double tot = 0.0;

		memset(sum, 0, sizeof(*sum) * ((size_t)nc + 1));
		for (size_t s = 0; s < ns; s++) {
			const float *p = t->lab + 3 * (s * step);
			int best = nc;
			float bd = d2(p, cent[nc]);

			for (int c = 0; c < nc; c++) {
				float d = d2(p, cent[c]);

				if (d < bd) {
					bd = d;
					best = c;
				}
			}
			tot += sqrtf(bd);
			sum[best][0] += p[0];
			sum[best][1] += p[1];
			sum[best][2] += p[2];
			sum[best][3] += 1.0f;
		}
		*mean_d = tot / (double)ns;
		for (int c = 0; c < nc; c++)
			if (sum[c][3] > 0)
				for (int q = 0; q < 3; q++)
					cent[c][q] = sum[c][q] / sum[c][3];
	}
	return nc;
}

int pm_choose_colours(const struct pm_grid *g, const struct pm_target *t,
		      const struct plan_solver *solver, const struct plan_options *opt, int k,
		      int kmax, struct plan_colour *out, int *n_out, bl_err *err)
{
	size_t n = (size_t)g->w * g->h, step = n / 40000 + 1, ns = (n + step - 1) / step;
	float (*cent)[3] = calloc((size_t)kmax + 1, sizeof(*cent));
	float (*sum)[4] = calloc((size_t)kmax + 1, sizeof(*sum));
	float *dmin = malloc(ns * sizeof(float));
	float canvas[3] = { (float)opt->canvas_lab.L, (float)opt->canvas_lab.a,
			    (float)opt->canvas_lab.b };
	struct plan_mix mix;
	double qerr;
	int nc = 0, rc = 0;

	*n_out = 0;
	if (!cent || !sum || !dmin) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory choosing colours");
		goto out_free;
	}
	if (k > 0) {
		nc = kmeans(t, step, ns, k, canvas, opt->seed, cent, sum, dmin, &qerr);
	} else {
		/*
		 * Automatic: the fewest colours that keep the target within a few
		 * units of its nearest colour, from three (or as many as the machine
		 * has cells, when fewer).
		 */
		for (int kk = kmax < 3 ? kmax : 3; kk <= kmax; kk++) {
			nc = kmeans(t, step, ns, kk, canvas, opt->seed, cent, sum, dmin, &qerr);
			if (qerr <= PM_AUTO_COLOUR_ERR || nc < kk)
				break;
		}
	}
	if (nc == 0)
		goto out_free; /* the target is the blank canvas: nothing to paint */
	/* The solver moves each centre into the gamut; reassigning to the reachable colours and solving again settles the choice. */
	for (int rnd = 0; rnd < 3; rnd++) {
		float reach[PLAN_MAX_COLOURS + 1][3];

		for (int c = 0; c < nc; c++) {
			/* Two decimals, as plan.json keeps it: the same colour is asked for again at every mix. */
			color_lab want = { round(cent[c][0] * 100.0) / 100.0, round(cent[c][1] * 100.0) / 100.0,
					   round(cent[c][2] * 100.0) / 100.0 };

			rc = solver->solve(solver->ctx, &want, 0.0, &mix, err);
			if (rc)
				goto out_free;
			reach[c][0] = (float)mix.lab.L;
			reach[c][1] = (float)mix.lab.a;
			reach[c][2] = (float)mix.lab.b;
			out[c].want = want;
			out[c].lab = mix.lab;
		}
		memcpy(reach[nc], canvas, sizeof(canvas));
		if (rnd == 2)
			break;
		memset(sum, 0, sizeof(*sum) * ((size_t)nc + 1));
		for (size_t s = 0; s < ns; s++) {
			size_t i = s * step;
			const float *p = t->lab + 3 * i;
			int best = nc;
			float bd = pm_dist(t, i, reach[nc]);

			for (int c = 0; c < nc; c++) {
				float d = pm_dist(t, i, reach[c]);

				if (d < bd) {
					bd = d;
					best = c;
				}
			}
			sum[best][0] += p[0];
			sum[best][1] += p[1];
			sum[best][2] += p[2];
			sum[best][3] += 1.0f;
		}
		for (int c = 0; c < nc; c++)
			if (sum[c][3] > 0)
				for (int q = 0; q < 3; q++)
					cent[c][q] = sum[c][q] / sum[c][3];
	}

	/* Two centres the gamut squeezed onto one colour are one mix. */
	{
		int m = 0;

		for (int c = 0; c < nc; c++) {
			int dup = 0;

			for (int q = 0; q < m && !dup; q++)
				dup = color_de00(&out[q].lab, &out[c].lab) < 1.0;
			if (!dup)
				out[m++] = out[c];
		}
		nc = m;
	}
	qsort(out, (size_t)nc, sizeof(*out), cmp_light);
	for (int c = 0; c < nc; c++) {
		snprintf(out[c].name, sizeof(out[c].name), "c%d", c + 1);
		out[c].cell[0] = 0;
		out[c].paint_ml = out[c].stroke_mm = 0.0;
		out[c].strokes = 0;
	}
	*n_out = nc;

out_free:
	free(cent);
	free(sum);
	free(dmin);
	return rc;
}


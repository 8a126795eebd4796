/* plan_gamut.c: a target darker than any mix is mapped into the paints' reach as a perceptual rendering intent does (black point compensation), keeping its contrasts. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

/* Y (white 1) of lightness L. */
static double y_of_l(double L)
{
	color_lab l = { L, 0, 0 };
	color_xyz x;

	color_lab_to_xyz(&l, &x);
	return x.Y / 100.0;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

int plan_gamut_fit(const struct plan_solver *sv, const struct plan_raster *t, struct plan_gamut *g,
		   bl_err *err)
{
	const color_lab black = { 0, 0, 0 };
	size_t n = (size_t)t->w * t->h, below = 0;
	struct plan_mix m;
	float *L;
	int rc;

	memset(g, 0, sizeof(*g));
	if (!n)
		return bl_fail(err, BL_EINVAL, "an empty target has no colours to map");
	/* The darkest the paints reach: the mix nearest to black. */
	if ((rc = sv->solve(sv->ctx, &black, 1.0, &m, err)))
		return rc;
	g->paint_black_L = m.lab.L;
	if (!(L = malloc(sizeof(float) * n)))
		return bl_fail(err, BL_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		L[i] = t->px[3 * i];
		/* Beyond reach by more than a just noticeable difference. */
		below += L[i] < g->paint_black_L - 1.0;
	}
	/* The picture's black: its darkest half percent, so a few stray pixels do not set it. */
	qsort(L, n, sizeof(float), cmp_float);
	g->picture_black_L = L[(size_t)floor(0.005 * (double)(n - 1))];
	free(L);
	g->share = (double)below / (double)n;
	g->mapped = g->picture_black_L < g->paint_black_L;
	return 0;
}

/*
 * Black point compensation (as LittleCMS's perceptual intent with BPC, ICC
 * "Black-Point Compensation", ISO 18619): XYZ scaled linearly so that the
 * picture's black lands on the paints' and white stays white. Linear in
 * light, it lifts the darks most and leaves the light tones nearly as they
 * were, and an order of lightness (a contrast) is kept everywhere above the
 * picture's black.
 */
void plan_gamut_apply(const struct plan_gamut *g, float *lab, size_t n)
{
	const color_lab wl = { 100, 0, 0 };
	color_xyz w;
	double ysb, ydb, k;

	if (!g->mapped)
		return;
	color_lab_to_xyz(&wl, &w);
	ysb = y_of_l(g->picture_black_L);
	ydb = y_of_l(g->paint_black_L);
	k = (1.0 - ydb) / (1.0 - ysb);
	for (size_t i = 0; i < n; i++) {
		float *p = lab + 3 * i;
		color_lab l = { p[0], p[1], p[2] };
		color_xyz x;
		double *c = &x.X, *wc = &w.X;

		color_lab_to_xyz(&l, &x);
		/* Each of X, Y, Z: the picture's (neutral) black onto the paints', white kept. */
		for (int j = 0; j < 3; j++)
			c[j] = fmax(wc[j] * ydb + (c[j] - wc[j] * ysb) * k, wc[j] * ydb);
		color_xyz_to_lab(&x, &l);
		p[0] = (float)l.L;
		p[1] = (float)l.a;
		p[2] = (float)l.b;
	}
}

/* calib_camera_check.c: what a chart frame says of the camera before a profile is fitted to it: its exposure (the chart's whitest patch against its reference) and its focus (how wide the patches' edges are). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calib/calib.h"
#include "calib/calib_markers.h"

static void apply(const double H[9], double u, double v, double *x, double *y)
{
	double w = H[6] * u + H[7] * v + H[8];

	*x = (H[0] * u + H[1] * v + H[2]) / w;
	*y = (H[3] * u + H[4] * v + H[5]) / w;
}

/* Linear luminance at (x, y) px, bilinear; -1 outside the frame. */
static double lum_at(const struct calib_lumplane *l, double x, double y)
{
	int x0 = (int)floor(x), y0 = (int)floor(y);
	double fx = x - x0, fy = y - y0;
	const float *p;

	if (x0 < 0 || y0 < 0 || x0 + 1 >= l->w || y0 + 1 >= l->h)
		return -1;
	p = l->px + (size_t)y0 * l->w + x0;
	return (1 - fy) * ((1 - fx) * p[0] + fx * p[1]) + fy * ((1 - fx) * p[l->w] + fx * p[l->w + 1]);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * The width of one patch edge, as the sigma (px) of a Gaussian blur that
 * would give its steepest slope: sigma = step / (slope sqrt(2 pi)), along a
 * profile across the edge from the patch's inside (at 30 % of the pitch from
 * the edge) to the middle of the gap. -1 when the step is too small to tell.
 */
static double edge_sigma(const struct calib_lumplane *l, const double H[9], double u0, double v0,
			 double du, double dv, double len)
{
	enum { N = 64 };
	double prof[N + 1], x0, y0, x1, y1, px_len, slope = 0;

	apply(H, u0, v0, &x0, &y0);
	apply(H, u0 + len * du, v0 + len * dv, &x1, &y1);
	px_len = hypot(x1 - x0, y1 - y0);
	for (int i = 0; i <= N; i++) {
		double x, y, t = len * i / N;

		apply(H, u0 + t * du, v0 + t * dv, &x, &y);
		if ((prof[i] = lum_at(l, x, y)) < 0)
			return -1;
	}
	for (int i = 0; i + 2 <= N; i++)
		slope = fmax(slope, fabs(prof[i + 2] - prof[i]) / (2 * px_len / N));
	if (fabs(prof[0] - prof[N]) < 0.04 || !(slope > 0))
		return -1;
	return fabs(prof[0] - prof[N]) / (slope * sqrt(2 * M_PI));
}

/*
 * Exposure: the chart's whitest patch (the highest reference L*) as the
 * camera recorded it, its luminance against its reference's in stops.
 * Focus: the median edge width of every patch's four edges.
 */
int calib_camera_check(const struct img *frame, const char *name, const struct calib_chart *c,
		       struct calib_camera_result *r, bl_err *err)
{
	const struct calib_chart_view *v = &r->view;
	const double pu = v->grid_u[1], pv = v->grid_v[1], gap = 0.5 * (1 - c->patch_fraction);
	struct calib_lumplane l;
	double *w = malloc(sizeof(double) * 4 * (size_t)c->n), Y, Yref;
	int white = 0, n = 0, rc;

	if (!w)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	for (int i = 1; i < r->n; i++)
		if (r->p[i].ref_lab[0] > r->p[white].ref_lab[0])
			white = i;
	Y = 0.2126 * r->p[white].rgb_linear[0] + 0.7152 * r->p[white].rgb_linear[1] +
	    0.0722 * r->p[white].rgb_linear[2];
	Yref = r->p[white].ref_lab[0] > 8 ? pow((r->p[white].ref_lab[0] + 16) / 116, 3)
					  : r->p[white].ref_lab[0] / 903.3;
	r->white_patch = white;
	r->exposure_stops = Y > 0 ? log2(Y / Yref) : -99;
	if ((rc = calib_lumplane_from(frame, &l, err))) {
		free(w);
		return rc;
	}
	for (int i = 0; i < c->n; i++) {
		double uc = v->grid_u[0] + (i % c->cols + 0.5) * pu, vc = v->grid_v[0] + (i / c->cols + 0.5) * pv;
		/* From 30 % of the pitch inside the patch's edge to the gap's middle, each way. */
		double eu = (0.5 - gap) * pu, ev = (0.5 - gap) * pv, lu = 0.3 * pu + gap * pu, lv = 0.3 * pv + gap * pv;
		double s;

		if ((s = edge_sigma(&l, v->H, uc + eu - 0.3 * pu, vc, 1, 0, lu)) > 0)
			w[n++] = s;
		if ((s = edge_sigma(&l, v->H, uc - eu + 0.3 * pu, vc, -1, 0, lu)) > 0)
			w[n++] = s;
		if ((s = edge_sigma(&l, v->H, uc, vc + ev - 0.3 * pv, 0, 1, lv)) > 0)
			w[n++] = s;
		if ((s = edge_sigma(&l, v->H, uc, vc - ev + 0.3 * pv, 0, -1, lv)) > 0)
			w[n++] = s;
	}
	calib_lumplane_free(&l);
	qsort(w, (size_t)n, sizeof(double), cmp_double);
	r->blur_px = n ? w[n / 2] : -1;
	r->edges = n;
	free(w);
	if (r->exposure_stops < -CALIB_UNDER_STOPS)
		return bl_fail(err, BL_EINVAL, "%s: the chart is underexposed by %.1f stops: its whitest "
			       "patch '%s' reads %.0f %% luminance where its reference is %.0f %% (at most "
			       "%g stops under): open the aperture, lengthen the exposure or add light, "
			       "with the same settings the runs will use", name, -r->exposure_stops,
			       r->p[white].name, 100 * Y, 100 * Yref, CALIB_UNDER_STOPS);
	if (r->blur_px > CALIB_BLUR_MAX_PX)
		return bl_fail(err, BL_EINVAL, "%s: the chart is out of focus: its patches' edges are "
			       "blurred over %.1f px (the sigma of a Gaussian blur, median of %d edges; at "
			       "most %g): focus the camera on the canvas, or hold it still", name,
			       r->blur_px, n, CALIB_BLUR_MAX_PX);
	return 0;
}

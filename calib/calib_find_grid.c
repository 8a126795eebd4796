/* calib_find_grid.c: reading a found outline as a chart: the patch grid from the gaps, which way up by the colours, and the patches' regions of interest. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calib/calib.h"
#include "calib/calib_find_int.h"
#include "cv/cv.h"

#define RASTER_K 24          /* rectified raster px per grid cell */
#define MIN_GAP_DARK 0.70    /* the gaps must be this dark along their length (fraction of px) */
#define MIN_GAP_CONTRAST 0.30

/* Bilinear sample of a float plane with stride ch at (x, y) px (pixel centres at integers), clamped at the borders. */
static float sample(const float *p, int w, int h, int ch, int c, double x, double y)
{
	int x0, y0, x1, y1;
	double fx, fy;

	if (x < 0)
		x = 0;
	if (y < 0)
		y = 0;
	if (x > w - 1)
		x = w - 1;
	if (y > h - 1)
		y = h - 1;
	x0 = (int)x;
	y0 = (int)y;
	x1 = x0 + 1 < w ? x0 + 1 : x0;
	y1 = y0 + 1 < h ? y0 + 1 : y0;
	fx = x - x0;
	fy = y - y0;
	return (float)((1 - fy) * ((1 - fx) * p[((size_t)y0 * w + x0) * ch + c] +
				  fx * p[((size_t)y0 * w + x1) * ch + c]) +
		       fy * ((1 - fx) * p[((size_t)y1 * w + x0) * ch + c] +
			     fx * p[((size_t)y1 * w + x1) * ch + c]));
}

/* ---- the grid ---- */

static double interp(const double *p, int n, double x)
{
	int i;
	double f;

	if (x <= 0)
		return p[0];
	if (x >= n - 1)
		return p[n - 1];
	i = (int)x;
	f = x - i;
	return (1 - f) * p[i] + f * p[i + 1];
}

/*
 * Fits gaps k = 1..cells-1 at a + k b and cell centres at a + (k + 0.5) b
 * to a darkness profile of n samples; returns the contrast, fills the gaps'
 * mean darkness.
 */
static double fit_axis(const double *prof, int n, int cells, double *a_out, double *b_out,
		       double *gap_dark)
{
	double best = -1e9, nominal = (double)n / cells;

	*a_out = 0;
	*b_out = nominal;
	*gap_dark = 0;
	for (double b = 0.7 * nominal; b <= 1.02 * nominal; b += 0.05) {
		double amin = -0.1 * b, amax = n - cells * b + 0.1 * b;

		for (double a = amin; a <= amax; a += 0.1) {
			double g = 0, c = 0, s;

			for (int k = 1; k < cells; k++)
				g += interp(prof, n, a + k * b - 0.5);
			for (int k = 0; k < cells; k++)
				c += interp(prof, n, a + (k + 0.5) * b - 0.5);
			g /= cells - 1;
			c /= cells;
			s = g - c;
			if (s > best) {
				best = s;
				*a_out = a;
				*b_out = b;
				*gap_dark = g;
			}
		}
	}
	return best;
}

static void unit_to_px(const double H[9], double u, double v, double *x, double *y)
{
	double w = H[6] * u + H[7] * v + H[8];

	*x = (H[0] * u + H[1] * v + H[2]) / w;
	*y = (H[3] * u + H[4] * v + H[5]) / w;
}

/* Rectifies the outline given by corners (clockwise from the chart's top left) and reads its grid. */
int calib_find_read_grid(const struct lum_img *l, const double corners[8], int cols, int rows,
			 struct grid *g, bl_err *err)
{
	static const double unit[8] = { 0, 0, 1, 0, 1, 1, 0, 1 };
	int rw = cols * RASTER_K, rh = rows * RASTER_K, rc;
	float *r = malloc((size_t)rw * rh * sizeof(float)), *sorted;
	double *pu = calloc((size_t)rw, sizeof(double)), *pv = calloc((size_t)rh, sizeof(double));
	double lo, hi, thr, cu, cv, du, dv;
	bl_err e2 = { 0 };

	sorted = malloc((size_t)rw * rh * sizeof(float));
	if (!r || !pu || !pv || !sorted) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_free;
	}
	rc = cv_homography(unit, corners, 4, g->H, &e2);
	if (rc) {
		rc = 1;
		goto out_free;
	}
	for (int y = 0; y < rh; y++)
		for (int x = 0; x < rw; x++) {
			double px, py;

			unit_to_px(g->H, (x + 0.5) / rw, (y + 0.5) / rh, &px, &py);
			r[(size_t)y * rw + x] = sample(l->y, l->w, l->h, 1, 0, px, py);
		}
	memcpy(sorted, r, (size_t)rw * rh * sizeof(float));
	qsort(sorted, (size_t)rw * rh, sizeof(float), calib_find_cmp_float);
	lo = sorted[(size_t)rw * rh / 10];
	hi = sorted[(size_t)rw * rh * 9 / 10];
	thr = lo + 0.3 * (hi - lo);
	for (int y = 0; y < rh; y++)
		for (int x = 0; x < rw; x++)
			if (r[(size_t)y * rw + x] < thr) {
				pu[x] += 1.0 / rh;
				pv[y] += 1.0 / rw;
			}
	cu = fit_axis(pu, rw, cols, &g->au, &g->bu, &du);
	cv = fit_axis(pv, rh, rows, &g->av, &g->bv, &dv);
	g->au /= rw;
	g->bu /= rw;
	g->av /= rh;
	g->bv /= rh;
	g->contrast = fmin(cu, cv);
	g->gap_dark = fmin(du, dv);
	rc = 0;
out_free:
	free(r);
	free(sorted);
	free(pu);
	free(pv);
	return rc;
}

int calib_find_grid_ok(const struct grid *g)
{
	return g->gap_dark >= MIN_GAP_DARK && g->contrast >= MIN_GAP_CONTRAST;
}

/* ---- which way up: the colours an affine camera model explains best ---- */

static void patch_uv(const struct grid *g, int col, int row, double *u, double *v)
{
	*u = g->au + (col + 0.5) * g->bu;
	*v = g->av + (row + 0.5) * g->bv;
}

static void patch_rgb(const struct lum_img *l, const struct grid *g, int col, int row,
		      double pf, double rgb[3])
{
	double u, v;
	int n = 0;

	patch_uv(g, col, row, &u, &v);
	rgb[0] = rgb[1] = rgb[2] = 0;
	for (int i = -2; i <= 2; i++)
		for (int j = -2; j <= 2; j++) {
			double x, y;

			unit_to_px(g->H, u + 0.1 * pf * i * g->bu, v + 0.1 * pf * j * g->bv, &x, &y);
			for (int c = 0; c < 3; c++)
				rgb[c] += sample(l->rgb, l->w, l->h, 3, c, x, y);
			n++;
		}
	for (int c = 0; c < 3; c++)
		rgb[c] /= n;
}

/* Mean CIE76 difference of the chart's references from an affine fit to the patches' linear RGB. */
double calib_find_colour_misfit(const struct lum_img *l, const struct grid *g,
				const struct calib_chart *c)
{
	double ata[16] = { 0 }, atb[3][4] = { { 0 } }, m[3][4], sum = 0;
	double (*rgb)[3] = malloc(sizeof(*rgb) * (size_t)c->n), (*xyz)[3];

	xyz = malloc(sizeof(*xyz) * (size_t)c->n);
	if (!rgb || !xyz) {
		free(rgb);
		free(xyz);
		return 1e9;
	}
	for (int i = 0; i < c->n; i++) {
		color_lab lab = { c->lab[i][0], c->lab[i][1], c->lab[i][2] };
		color_xyz x;
		double t[4], w;

		patch_rgb(l, g, i % c->cols, i / c->cols, c->patch_fraction, rgb[i]);
		color_lab_to_xyz(&lab, &x);
		xyz[i][0] = x.X / 100;
		xyz[i][1] = x.Y / 100;
		xyz[i][2] = x.Z / 100;
		t[0] = rgb[i][0];
		t[1] = rgb[i][1];
		t[2] = rgb[i][2];
		t[3] = 1;
		w = 1.0 / ((xyz[i][1] + 0.02) * (xyz[i][1] + 0.02));
		for (int a = 0; a < 4; a++) {
			for (int b = 0; b < 4; b++)
				ata[a * 4 + b] += w * t[a] * t[b];
			for (int k = 0; k < 3; k++)
				atb[k][a] += w * t[a] * xyz[i][k];
		}
	}
	for (int a = 0; a < 4; a++)
		ata[a * 4 + a] += 1e-9;
	/* Gauss-Jordan on the 4x4 normal equations, three right-hand sides. */
	{
		double aug[4][7];

		for (int a = 0; a < 4; a++) {
			for (int b = 0; b < 4; b++)
				aug[a][b] = ata[a * 4 + b];
			for (int k = 0; k < 3; k++)
				aug[a][4 + k] = atb[k][a];
		}
		for (int p = 0; p < 4; p++) {
			int piv = p;

			for (int q = p + 1; q < 4; q++)
				if (fabs(aug[q][p]) > fabs(aug[piv][p]))
					piv = q;
			if (fabs(aug[piv][p]) < 1e-15) {
				free(rgb);
				free(xyz);
				return 1e9;
			}
			for (int b = 0; b < 7; b++) {
				double t = aug[p][b];

				aug[p][b] = aug[piv][b];
				aug[piv][b] = t;
			}
			for (int q = 0; q < 4; q++) {
				double f;

				if (q == p)
					continue;
				f = aug[q][p] / aug[p][p];
				for (int b = 0; b < 7; b++)
					aug[q][b] -= f * aug[p][b];
			}
		}
		for (int k = 0; k < 3; k++)
			for (int a = 0; a < 4; a++)
				m[k][a] = aug[a][4 + k] / aug[a][a];
	}
	for (int i = 0; i < c->n; i++) {
		double p[3], lab[3];

		for (int k = 0; k < 3; k++)
			p[k] = m[k][0] * rgb[i][0] + m[k][1] * rgb[i][1] + m[k][2] * rgb[i][2] +
			       m[k][3];
		calib_xyz_to_lab(p, lab);
		sum += sqrt((lab[0] - c->lab[i][0]) * (lab[0] - c->lab[i][0]) +
			    (lab[1] - c->lab[i][1]) * (lab[1] - c->lab[i][1]) +
			    (lab[2] - c->lab[i][2]) * (lab[2] - c->lab[i][2]));
	}
	free(rgb);
	free(xyz);
	return sum / c->n;
}

/* ---- regions of interest ---- */

/* Whether image point (x, y) maps into [u0, u1] x [v0, v1] of the unit square. */
static int inside_uv(const double Hi[9], double x, double y, double u0, double u1, double v0,
		     double v1)
{
	double w = Hi[6] * x + Hi[7] * y + Hi[8], u, v;

	u = (Hi[0] * x + Hi[1] * y + Hi[2]) / w;
	v = (Hi[3] * x + Hi[4] * y + Hi[5]) / w;
	return u >= u0 && u <= u1 && v >= v0 && v <= v1;
}

/*
 * The largest pixel box centred on the region's centre whose corners all
 * map inside the region [u0, u1] x [v0, v1] (box sides in the ratio of the
 * region's extent in the image). 0 when not even one pixel fits.
 */
static int roi_in_region(const double H[9], const double Hi[9], double u0, double u1, double v0,
			 double v1, int w, int h, struct meas_roi *roi)
{
	double cx, cy, xs[4], ys[4], ex, ey, lo = 0, hi = 1;

	unit_to_px(H, 0.5 * (u0 + u1), 0.5 * (v0 + v1), &cx, &cy);
	unit_to_px(H, u0, v0, &xs[0], &ys[0]);
	unit_to_px(H, u1, v0, &xs[1], &ys[1]);
	unit_to_px(H, u1, v1, &xs[2], &ys[2]);
	unit_to_px(H, u0, v1, &xs[3], &ys[3]);
	ex = ey = 0;
	for (int i = 0; i < 4; i++) {
		ex = fmax(ex, fabs(xs[i] - cx));
		ey = fmax(ey, fabs(ys[i] - cy));
	}
	for (int it = 0; it < 30; it++) {
		double s = 0.5 * (lo + hi), hx = s * ex, hy = s * ey;
		int ok = 1;

		for (int i = 0; i < 4 && ok; i++)
			ok = inside_uv(Hi, cx + (i & 1 ? hx : -hx), cy + (i & 2 ? hy : -hy), u0, u1,
				       v0, v1);
		if (ok)
			lo = s;
		else
			hi = s;
	}
	{
		double hx = lo * ex, hy = lo * ey;
		int x0 = (int)ceil(cx - hx), x1 = (int)floor(cx + hx), y0 = (int)ceil(cy - hy),
		    y1 = (int)floor(cy + hy);

		if (x0 < 0 || y0 < 0 || x1 >= w || y1 >= h || x1 < x0 || y1 < y0)
			return 0;
		*roi = (struct meas_roi){ x0, y0, x1 - x0 + 1, y1 - y0 + 1 };
	}
	return 1;
}

static float roi_median(const struct lum_img *l, const struct meas_roi *r)
{
	int n = r->w * r->h, k = 0;
	float *v = malloc((size_t)n * sizeof(float)), m;

	if (!v)
		return -1;
	for (int y = r->y; y < r->y + r->h; y++)
		for (int x = r->x; x < r->x + r->w; x++)
			v[k++] = l->y[(size_t)y * l->w + x];
	qsort(v, (size_t)n, sizeof(float), calib_find_cmp_float);
	m = v[n / 2];
	free(v);
	return m;
}

int calib_find_fill_view(const struct lum_img *l, const struct grid *g, const struct calib_chart *c,
			 const char *name, struct calib_chart_view *v, bl_err *err)
{
	double Hi[9], pf = c->patch_fraction;
	bl_err e2 = { 0 };

	memcpy(v->H, g->H, sizeof(v->H));
	v->grid_u[0] = g->au;
	v->grid_u[1] = g->bu;
	v->grid_v[0] = g->av;
	v->grid_v[1] = g->bv;
	if (cv_invert3(g->H, Hi, &e2))
		return bl_fail(err, BL_EINVAL, "%s: the chart's outline is degenerate", name);
	for (int i = 0; i < c->n; i++) {
		double u, vv, hu = 0.3 * pf * g->bu, hv = 0.3 * pf * g->bv;

		patch_uv(g, i % c->cols, i / c->cols, &u, &vv);
		v->centre_uv[i][0] = u;
		v->centre_uv[i][1] = vv;
		if (!roi_in_region(g->H, Hi, u - hu, u + hu, vv - hv, vv + hv, l->w, l->h,
				   &v->roi[i]))
			return bl_fail(err, BL_EINVAL, "%s: patch '%s' of the chart lies outside the "
				       "frame or is too small to measure", name, c->patch[i]);
		if (v->roi[i].w * v->roi[i].h < 16)
			return bl_fail(err, BL_EINVAL, "%s: patch '%s' covers only %d px: bring the "
				       "camera closer or use a larger chart", name, c->patch[i],
				       v->roi[i].w * v->roi[i].h);
	}
	v->n_frame = 0;
	if (!c->dark_frame)
		return 0;
	/* Samples of the surround along every interior gap, a quarter pitch apart. */
	for (int axis = 0; axis < 2; axis++) {
		int cells = axis == 0 ? c->cols : c->rows, other = axis == 0 ? c->rows : c->cols;
		double a = axis == 0 ? g->au : g->av, b = axis == 0 ? g->bu : g->bv;
		double oa = axis == 0 ? g->av : g->au, ob = axis == 0 ? g->bv : g->bu;
		double half_gap = 0.25 * (1.0 - pf) * b;

		for (int k = 1; k < cells; k++)
			for (int j = 0; j < 4 * other; j++) {
				double along = oa + (j + 0.5) * 0.25 * ob, across = a + k * b;
				double hl = 0.1 * ob;
				struct meas_roi roi;
				int n = v->n_frame;
				float med;

				if (n >= CALIB_MAX_FRAME_SAMPLES)
					break;
				if (axis == 0 ? !roi_in_region(g->H, Hi, across - half_gap,
							       across + half_gap, along - hl,
							       along + hl, l->w, l->h, &roi)
					      : !roi_in_region(g->H, Hi, along - hl, along + hl,
							       across - half_gap, across + half_gap,
							       l->w, l->h, &roi))
					continue;
				med = roi_median(l, &roi);
				if (med < 0)
					return bl_fail(err, BL_ENOMEM, "out of memory");
				v->frame_roi[n] = roi;
				v->frame_uv[n][0] = axis == 0 ? across : along;
				v->frame_uv[n][1] = axis == 0 ? along : across;
				v->frame_luma[n] = med;
				v->n_frame++;
			}
	}
	return 0;
}

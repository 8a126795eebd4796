/* calib_find.c: finding a colour chart in a camera frame: its dark outline, the patch grid read from the gaps, and which way up it lies. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib/calib.h"
#include "cv/cv.h"

#define MAX_CANDIDATES 8
#define RASTER_K 24          /* rectified raster px per grid cell */
#define MIN_GAP_DARK 0.70    /* the gaps must be this dark along their length (fraction of px) */
#define MIN_GAP_CONTRAST 0.30
#define MAX_MISFIT 25.0     /* CIE76 after an affine camera fit: beyond it, not this chart */

struct lum_img {
	int w, h;
	float *y;            /* linear luminance, 0..1 */
	float *rgb;          /* linear RGB */
};

static float lin_lut[256];

static void lut_init(void)
{
	static int done;

	if (done)
		return;
	for (int i = 0; i < 256; i++)
		lin_lut[i] = (float)meas_srgb_to_linear(i / 255.0);
	done = 1;
}

static int lum_from_img(const struct img *im, struct lum_img *l, bl_err *err)
{
	size_t n = (size_t)im->w * im->h;

	lut_init();
	l->w = im->w;
	l->h = im->h;
	l->y = malloc(n * sizeof(float));
	l->rgb = malloc(3 * n * sizeof(float));
	if (!l->y || !l->rgb) {
		free(l->y);
		free(l->rgb);
		return bl_fail(err, BL_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		float r = lin_lut[im->px[3 * i]], g = lin_lut[im->px[3 * i + 1]],
		      b = lin_lut[im->px[3 * i + 2]];

		l->rgb[3 * i] = r;
		l->rgb[3 * i + 1] = g;
		l->rgb[3 * i + 2] = b;
		l->y[i] = 0.2126f * r + 0.7152f * g + 0.0722f * b;
	}
	return 0;
}

static void lum_free(struct lum_img *l)
{
	free(l->y);
	free(l->rgb);
}

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

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

/* ---- dark regions ---- */

struct comp {
	int label;
	long area;
	int x0, y0, x1, y1;
};

static int cmp_comp(const void *a, const void *b)
{
	const struct comp *x = a, *y = b;

	return (y->area > x->area) - (y->area < x->area);
}

/*
 * Labels 4-connected regions darker than thr. Fills up to max of the
 * largest (at least min_area px) into out, returns how many.
 */
static int dark_regions(const struct lum_img *l, float thr, long min_area, int *labels,
			struct comp *out, int max, bl_err *err)
{
	size_t n = (size_t)l->w * l->h;
	int *queue = malloc(n * sizeof(int)), nl = 0, nkeep = 0;
	struct comp *all = NULL;
	size_t cap = 0;

	if (!queue)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		labels[i] = l->y[i] < thr ? 0 : -1;
	for (size_t s = 0; s < n; s++) {
		size_t head = 0, tail = 0;
		struct comp c;

		if (labels[s] != 0)
			continue;
		nl++;
		c = (struct comp){ nl, 0, l->w, l->h, -1, -1 };
		labels[s] = nl;
		queue[tail++] = (int)s;
		while (head < tail) {
			int p = queue[head++], x = p % l->w, y = p / l->w;
			const int nb[4][2] = { { x - 1, y }, { x + 1, y }, { x, y - 1 }, { x, y + 1 } };

			c.area++;
			if (x < c.x0)
				c.x0 = x;
			if (x > c.x1)
				c.x1 = x;
			if (y < c.y0)
				c.y0 = y;
			if (y > c.y1)
				c.y1 = y;
			for (int k = 0; k < 4; k++) {
				int qx = nb[k][0], qy = nb[k][1];
				size_t q;

				if (qx < 0 || qy < 0 || qx >= l->w || qy >= l->h)
					continue;
				q = (size_t)qy * l->w + qx;
				if (labels[q] == 0) {
					labels[q] = nl;
					queue[tail++] = (int)q;
				}
			}
		}
		if (c.area < min_area)
			continue;
		if ((size_t)nkeep == cap) {
			struct comp *na;

			cap = cap ? 2 * cap : 64;
			na = realloc(all, cap * sizeof(*na));
			if (!na) {
				free(all);
				free(queue);
				return bl_fail(err, BL_ENOMEM, "out of memory");
			}
			all = na;
		}
		all[nkeep++] = c;
	}
	free(queue);
	if (nkeep)
		qsort(all, (size_t)nkeep, sizeof(*all), cmp_comp);
	if (nkeep > max)
		nkeep = max;
	if (nkeep)
		memcpy(out, all, (size_t)nkeep * sizeof(*out));
	free(all);
	return nkeep;
}

/* ---- the outline ---- */

static double cross(const double *o, const double *a, const double *b)
{
	return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
}

static int cmp_pt(const void *a, const void *b)
{
	const double *p = a, *q = b;

	if (p[0] != q[0])
		return p[0] < q[0] ? -1 : 1;
	return (p[1] > q[1]) - (p[1] < q[1]);
}

/* Convex hull (Andrew's monotone chain) of n points, in place; returns the hull's size (counter-clockwise in maths axes). */
static int hull(double (*p)[2], int n, double (*h)[2])
{
	int k = 0;

	qsort(p, (size_t)n, sizeof(*p), cmp_pt);
	for (int i = 0; i < n; i++) {
		while (k >= 2 && cross(h[k - 2], h[k - 1], p[i]) <= 0)
			k--;
		memcpy(h[k++], p[i], sizeof(*h));
	}
	for (int i = n - 2, t = k + 1; i >= 0; i--) {
		while (k >= t && cross(h[k - 2], h[k - 1], p[i]) <= 0)
			k--;
		memcpy(h[k++], p[i], sizeof(*h));
	}
	return k > 1 ? k - 1 : k;
}

static double poly_area(const double (*p)[2], int n)
{
	double s = 0.0;

	for (int i = 0; i < n; i++) {
		int j = (i + 1) % n;

		s += p[i][0] * p[j][1] - p[j][0] * p[i][1];
	}
	return 0.5 * fabs(s);
}

/* Distance of p from the line through a and b, signed. */
static double line_side(const double *a, const double *b, const double *p)
{
	double dx = b[0] - a[0], dy = b[1] - a[1], n = hypot(dx, dy);

	return n > 0 ? ((p[0] - a[0]) * dy - (p[1] - a[1]) * dx) / n : 0.0;
}

/* Total least squares line through points: centre c and unit direction d. */
static int fit_line(const double (*p)[2], int n, double c[2], double d[2])
{
	double sxx = 0, syy = 0, sxy = 0, ang;

	if (n < 2)
		return 0;
	c[0] = c[1] = 0;
	for (int i = 0; i < n; i++) {
		c[0] += p[i][0];
		c[1] += p[i][1];
	}
	c[0] /= n;
	c[1] /= n;
	for (int i = 0; i < n; i++) {
		double x = p[i][0] - c[0], y = p[i][1] - c[1];

		sxx += x * x;
		syy += y * y;
		sxy += x * y;
	}
	ang = 0.5 * atan2(2 * sxy, sxx - syy);
	d[0] = cos(ang);
	d[1] = sin(ang);
	return 1;
}

static int intersect(const double c1[2], const double d1[2], const double c2[2], const double d2[2],
		     double out[2])
{
	double det = d1[0] * d2[1] - d1[1] * d2[0], t;

	if (fabs(det) < 1e-9)
		return 0;
	t = ((c2[0] - c1[0]) * d2[1] - (c2[1] - c1[1]) * d2[0]) / det;
	out[0] = c1[0] + t * d1[0];
	out[1] = c1[1] + t * d1[1];
	return 1;
}

/* Whether pixel (x, y) of region c lies on its edge: a neighbour outside it, or the image's border. */
static int region_edge(const int *labels, int w, int h, const struct comp *c, int x, int y)
{
	if (labels[(size_t)y * w + x] != c->label)
		return 0;
	return x == 0 || y == 0 || x == w - 1 || y == h - 1 || labels[(size_t)y * w + x - 1] != c->label ||
	       labels[(size_t)y * w + x + 1] != c->label || labels[(size_t)(y - 1) * w + x] != c->label ||
	       labels[(size_t)(y + 1) * w + x] != c->label;
}

/* The corners of the region's edge pixels (the edge lies between pixel centres), malloc'd into *pts. */
static int region_points(const int *labels, int w, int h, const struct comp *c, double (**pts)[2], int *n)
{
	int cap = 0;

	for (int y = c->y0; y <= c->y1; y++)
		for (int x = c->x0; x <= c->x1; x++)
			cap += region_edge(labels, w, h, c, x, y) ? 4 : 0;
	*n = 0;
	if (!(*pts = malloc((size_t)cap * sizeof(**pts))))
		return -1;
	for (int y = c->y0; y <= c->y1; y++)
		for (int x = c->x0; x <= c->x1; x++)
			if (region_edge(labels, w, h, c, x, y))
				for (int k = 0; k < 4; k++) {
					(*pts)[*n][0] = x + (k & 1 ? 0.5 : -0.5);
					(*pts)[*n][1] = y + (k & 2 ? 0.5 : -0.5);
					(*n)++;
				}
	return cap;
}

/*
 * The hull's corners: its two farthest points are opposite corners, the
 * points farthest from their diagonal on either side the other two; ord gets
 * the four in hull order, *diag their distance. 0 when there is no side.
 */
static int hull_corners(double (*hp)[2], int nh, int ord[4], double *diag)
{
	int ia = 0, ic = 0, ib = -1, id = -1;
	double sb = 0, sd = 0;

	*diag = -1;
	for (int i = 0; i < nh; i++)
		for (int j = i + 1; j < nh; j++) {
			double d = hypot(hp[i][0] - hp[j][0], hp[i][1] - hp[j][1]);

			if (d > *diag) {
				*diag = d;
				ia = i;
				ic = j;
			}
		}
	for (int i = 0; i < nh; i++) {
		double s = line_side(hp[ia], hp[ic], hp[i]);

		if (s > sb) {
			sb = s;
			ib = i;
		}
		if (s < sd) {
			sd = s;
			id = i;
		}
	}
	if (ib < 0 || id < 0)
		return 0;
	/* Hull order is a, (b or d), c, ...: take the four in hull order. */
	ord[0] = ia;
	ord[1] = ib;
	ord[2] = ic;
	ord[3] = id;
	for (int i = 0; i < 4; i++)
		for (int j = i + 1; j < 4; j++)
			if (ord[j] < ord[i]) {
				int t = ord[i];

				ord[i] = ord[j];
				ord[j] = t;
			}
	return 1;
}

/*
 * Each side refitted as a line through the hull points along it, away from
 * the corners; a corner moves to where its sides meet when that is near it.
 * pts is scratch for as many points as the hull has.
 */
static void refit_sides(double (*hp)[2], int nh, const int ord[4], double diag, double (*pts)[2],
			double qa[4][2])
{
	double lc[4][2], ld[4][2];

	for (int s = 0; s < 4; s++) {
		int i0 = ord[s], i1 = ord[(s + 1) % 4], cnt = 0;
		double len = hypot(hp[i1][0] - hp[i0][0], hp[i1][1] - hp[i0][1]);

		for (int i = i0;; i = (i + 1) % nh) {
			double a = hypot(hp[i][0] - hp[i0][0], hp[i][1] - hp[i0][1]);
			double b = hypot(hp[i][0] - hp[i1][0], hp[i][1] - hp[i1][1]);

			if (a > 0.1 * len && b > 0.1 * len) {
				pts[cnt][0] = hp[i][0];
				pts[cnt][1] = hp[i][1];
				cnt++;
			}
			if (i == i1)
				break;
		}
		if (!(cnt >= 2 && fit_line((const double (*)[2])pts, cnt, lc[s], ld[s]))) {
			lc[s][0] = hp[i0][0];
			lc[s][1] = hp[i0][1];
			ld[s][0] = hp[i1][0] - hp[i0][0];
			ld[s][1] = hp[i1][1] - hp[i0][1];
		}
	}
	for (int s = 0; s < 4; s++) {
		int p = (s + 3) % 4;
		double out[2];

		if (intersect(lc[p], ld[p], lc[s], ld[s], out) &&
		    hypot(out[0] - qa[s][0], out[1] - qa[s][1]) < 0.05 * diag)
			memcpy(qa[s], out, sizeof(out));
	}
}

/* The corners clockwise on screen (y down: a positive shoelace sum), from the one nearest the top left. */
static void quad_clockwise(double qa[4][2], double q[8])
{
	double s = 0;
	int start = 0;

	for (int i = 0; i < 4; i++)
		s += qa[i][0] * qa[(i + 1) % 4][1] - qa[(i + 1) % 4][0] * qa[i][1];
	if (s < 0)
		for (int i = 0; i < 2; i++) {
			double t[2];

			memcpy(t, qa[i], sizeof(t));
			memcpy(qa[i], qa[3 - i], sizeof(t));
			memcpy(qa[3 - i], t, sizeof(t));
		}
	for (int i = 1; i < 4; i++)
		if (qa[i][0] + qa[i][1] < qa[start][0] + qa[start][1])
			start = i;
	for (int i = 0; i < 4; i++) {
		q[2 * i] = qa[(start + i) % 4][0];
		q[2 * i + 1] = qa[(start + i) % 4][1];
	}
}

/*
 * The quadrilateral outline of a region (hull_corners, refit_sides), its
 * corners clockwise on screen from the one nearest the top left; *fill the
 * share of it the hull covers. 0 when the region is not a quadrilateral.
 */
static int region_quad(const int *labels, int w, int h, const struct comp *c, double q[8],
		       double *fill)
{
	double (*pts)[2] = NULL, (*hp)[2] = NULL, qa[4][2], diag, area;
	int cap, n, nh, ord[4], ok = 0;

	if ((cap = region_points(labels, w, h, c, &pts, &n)) < 0 ||
	    !(hp = malloc((size_t)(cap + 2) * sizeof(*hp))))
		goto out_free;
	nh = hull(pts, n, hp);
	if (nh < 4 || !hull_corners(hp, nh, ord, &diag))
		goto out_free;
	for (int s = 0; s < 4; s++) {
		qa[s][0] = hp[ord[s]][0];
		qa[s][1] = hp[ord[s]][1];
	}
	refit_sides(hp, nh, ord, diag, pts, qa);
	area = poly_area((const double (*)[2])qa, 4);
	*fill = area > 0 ? poly_area((const double (*)[2])hp, nh) / area : 0;
	quad_clockwise(qa, q);
	ok = area > 0;
out_free:
	free(pts);
	free(hp);
	return ok;
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

struct grid {
	double H[9];           /* unit square -> px */
	double au, bu, av, bv; /* in unit-square coordinates */
	double contrast, gap_dark;
};

static void unit_to_px(const double H[9], double u, double v, double *x, double *y)
{
	double w = H[6] * u + H[7] * v + H[8];

	*x = (H[0] * u + H[1] * v + H[2]) / w;
	*y = (H[3] * u + H[4] * v + H[5]) / w;
}

/* Rectifies the outline given by corners (clockwise from the chart's top left) and reads its grid. */
static int read_grid(const struct lum_img *l, const double corners[8], int cols, int rows,
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
	qsort(sorted, (size_t)rw * rh, sizeof(float), cmp_float);
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

static int grid_ok(const struct grid *g)
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
static double colour_misfit(const struct lum_img *l, const struct grid *g,
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
	qsort(v, (size_t)n, sizeof(float), cmp_float);
	m = v[n / 2];
	free(v);
	return m;
}

static int fill_view(const struct lum_img *l, const struct grid *g, const struct calib_chart *c,
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

/* ---- the search ---- */

static void rotate_corners(const double q[8], int r, double out[8])
{
	for (int i = 0; i < 4; i++) {
		out[2 * i] = q[2 * ((i + r) % 4)];
		out[2 * i + 1] = q[2 * ((i + r) % 4) + 1];
	}
}

/* The chart at the corners the operator gave: its grid and colours checked, then read. */
static int chart_at_corners(const struct lum_img *l, const char *name, const struct calib_chart *c,
			    const double *corners_px, struct calib_chart_view *v, bl_err *err)
{
	struct grid g;
	double mis;
	int rc = read_grid(l, corners_px, c->cols, c->rows, &g, err);

	if (rc < 0)
		return rc;
	if (rc > 0 || !grid_ok(&g))
		return bl_fail(err, BL_EINVAL, "%s: the corners given do not frame a %d x %d grid "
			       "of patches with dark gaps between them (gaps %.0f%% dark): "
			       "check their order (clockwise from the chart's top left)",
			       name, c->cols, c->rows, rc > 0 ? 0.0 : 100 * g.gap_dark);
	if ((mis = colour_misfit(l, &g, c)) > MAX_MISFIT)
		return bl_fail(err, BL_EINVAL, "%s: the corners given frame a %d x %d grid whose "
			       "colours are not those of chart %s (mean difference %.0f after "
			       "an affine fit): check their order (clockwise from the chart's "
			       "top left as it lies upright)", name, c->cols, c->rows, c->name, mis);
	memcpy(v->corners_px, corners_px, sizeof(v->corners_px));
	v->given = 1;
	return fill_view(l, &g, c, name, v, err);
}

/* The best chart found: its grid, corners and colour misfit (1e9 none), and what was passed over. */
struct chart_best {
	double misfit, second, corners[8];
	struct grid grid;
	int rejected_shape;
};

/* Region k's four turns, each read as a grid and matched against the chart's colours. */
static int chart_try_region(const struct lum_img *l, const int *labels, const struct comp *k,
			    const struct calib_chart *c, struct chart_best *b, bl_err *err)
{
	double q[8], fill;

	if (!region_quad(labels, l->w, l->h, k, q, &fill) || fill < 0.85) {
		b->rejected_shape++;
		return 0;
	}
	for (int r = 0; r < 4; r++) {
		struct grid g;
		double cq[8], mis;
		int rc;

		rotate_corners(q, r, cq);
		rc = read_grid(l, cq, c->cols, c->rows, &g, err);
		if (rc < 0)
			return rc;
		if (rc > 0 || !grid_ok(&g))
			continue;
		mis = colour_misfit(l, &g, c);
		if (mis < b->misfit) {
			b->second = b->misfit;
			b->misfit = mis;
			b->grid = g;
			memcpy(b->corners, cq, sizeof(cq));
		} else if (mis < b->second) {
			b->second = mis;
		}
	}
	return 0;
}

/* No chart found among nc dark regions: why, as far as the frame tells (overexposure named). */
static int chart_not_found(const struct img *frame, const char *name, const struct calib_chart *c, int nc,
			   int rejected_shape, bl_err *err)
{
	size_t n = (size_t)frame->w * frame->h, nclip = 0;
	char clip[160] = "";

	for (size_t i = 0; i < n; i++)
		nclip += frame->px[3 * i] >= 254 || frame->px[3 * i + 1] >= 254 || frame->px[3 * i + 2] >= 254;
	if (nclip > n / 20)
		snprintf(clip, sizeof(clip), "; %.0f%% of the frame is clipped to white: "
			 "overexposed, lower the exposure", 100.0 * (double)nclip / (double)n);
	if (nc == 0)
		return bl_fail(err, BL_EINVAL, "%s: no colour chart found: nothing dark enough to "
			       "be its frame (lay the chart on a light surface, check the "
			       "exposure, or give its corners with --corners)%s", name, clip);
	return bl_fail(err, BL_EINVAL, "%s: no colour chart found: %d dark region%s "
		       "examined, %d not four-sided, none showing a %d x %d grid of "
		       "patches (is the chart partly covered or out of the frame? "
		       "--corners gives its corners)%s", name, nc, nc == 1 ? "" : "s",
		       rejected_shape, c->cols, c->rows, clip);
}

int calib_chart_find(const struct img *frame, const char *name, const struct calib_chart *c,
		     const double *corners_px, struct calib_chart_view *v, bl_err *err)
{
	struct lum_img l;
	struct comp comps[MAX_CANDIDATES];
	struct chart_best b = { .misfit = 1e9, .second = 1e9 };
	int *labels = NULL, nc = 0, rc;
	float *sorted = NULL, thr;
	size_t n = (size_t)frame->w * frame->h;

	memset(v, 0, sizeof(*v));
	if ((rc = lum_from_img(frame, &l, err)))
		return rc;
	if (corners_px) {
		rc = chart_at_corners(&l, name, c, corners_px, v, err);
		goto out_free;
	}
	labels = malloc(n * sizeof(int));
	sorted = malloc(n * sizeof(float));
	if (!labels || !sorted) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_free;
	}
	memcpy(sorted, l.y, n * sizeof(float));
	qsort(sorted, n, sizeof(float), cmp_float);
	/* Dark relative to the light surfaces: the chart's frame reflects a few percent. */
	thr = 0.10f * sorted[n * 95 / 100];
	nc = dark_regions(&l, thr, (long)fmax(400.0, 0.002 * (double)n), labels, comps, MAX_CANDIDATES, err);
	if (nc < 0) {
		rc = nc;
		goto out_free;
	}
	for (int k = 0; k < nc && b.misfit >= 1e9; k++)
		if ((rc = chart_try_region(&l, labels, &comps[k], c, &b, err)))
			goto out_free;
	v->candidates = nc;
	if (b.misfit >= 1e9) {
		rc = chart_not_found(frame, name, c, nc, b.rejected_shape, err);
		goto out_free;
	}
	if (b.misfit > MAX_MISFIT) {
		rc = bl_fail(err, BL_EINVAL, "%s: a %d x %d grid was found but its colours are not "
			     "those of chart %s (mean difference %.0f even after an affine fit): "
			     "another chart, or patches covered?", name, c->cols, c->rows, c->name,
			     b.misfit);
		goto out_free;
	}
	memcpy(v->corners_px, b.corners, sizeof(v->corners_px));
	rc = fill_view(&l, &b.grid, c, name, v, err);
out_free:
	free(labels);
	free(sorted);
	lum_free(&l);
	return rc;
}

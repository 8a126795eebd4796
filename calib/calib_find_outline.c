/* calib_find_outline.c: the chart's dark outline in a frame: dark regions, and each one's quadrilateral from its hull and refitted sides. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calib/calib.h"
#include "calib/calib_find_int.h"

/* ---- dark regions ---- */

static int cmp_comp(const void *a, const void *b)
{
	const struct comp *x = a, *y = b;

	return (y->area > x->area) - (y->area < x->area);
}

/*
 * Labels 4-connected regions darker than thr. Fills up to max of the
 * largest (at least min_area px) into out, returns how many.
 */
int calib_find_dark_regions(const struct lum_img *l, float thr, long min_area, int *labels,
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
		if (!(cnt >= 2 && calib_line_fit((const double (*)[2])pts, cnt, lc[s], ld[s]))) {
			lc[s][0] = hp[i0][0];
			lc[s][1] = hp[i0][1];
			ld[s][0] = hp[i1][0] - hp[i0][0];
			ld[s][1] = hp[i1][1] - hp[i0][1];
		}
	}
	for (int s = 0; s < 4; s++) {
		int p = (s + 3) % 4;
		double out[2];

		if (calib_lines_meet(lc[p], ld[p], lc[s], ld[s], out) &&
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
int calib_find_region_quad(const int *labels, int w, int h, const struct comp *c, double q[8],
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

/* calib_canvas.c: the canvas session: the homography from the corner markers' centres and corners by least squares, its reprojection error in mm, the canvas file. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "calib/calib.h"
#include "calib/calib_markers.h"
#include "cv/cv.h"

#define MAX_MARKERS 16

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* A marker's outer corners clockwise on screen from the top left. */
static void marker_corners_cw(const struct cv_marker *m, double out[8])
{
	double ang[4];
	int idx[4] = { 0, 1, 2, 3 };

	for (int i = 0; i < 4; i++)
		ang[i] = atan2(m->corners[2 * i + 1] - m->centre[1], m->corners[2 * i] - m->centre[0]);
	for (int i = 1; i < 4; i++)
		for (int j = i; j > 0 && ang[idx[j]] < ang[idx[j - 1]]; j--) {
			int t = idx[j];

			idx[j] = idx[j - 1];
			idx[j - 1] = t;
		}
	for (int i = 0; i < 4; i++) {
		out[2 * i] = m->corners[2 * idx[i]];
		out[2 * i + 1] = m->corners[2 * idx[i] + 1];
	}
}

static int find_markers(const struct img *frame, struct cv_marker *mk, int *n, bl_err *err)
{
	struct cv_view rgb = { frame->px, frame->w, frame->h, frame->w * 3, 3 };
	struct cv_view grey = { NULL, frame->w, frame->h, frame->w, 1 };
	int rc;

	grey.px = malloc((size_t)frame->w * frame->h);
	if (!grey.px)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	rc = cv_grey(&rgb, &grey, err);
	if (rc == 0)
		rc = cv_find_markers(&grey, 8.0, mk, MAX_MARKERS, n, err);
	free(grey.px);
	if (*n > MAX_MARKERS)
		*n = MAX_MARKERS;
	return rc;
}

static void apply(const double H[9], double x, double y, double *u, double *v)
{
	double w = H[6] * x + H[7] * y + H[8];

	*u = (H[0] * x + H[1] * y + H[2]) / w;
	*v = (H[3] * x + H[4] * y + H[5]) / w;
}

/* Inverts an n x n matrix in place by Gauss-Jordan with partial pivoting; 0 when singular. */
static int invert(double *a, int n)
{
	double inv[64];

	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			inv[i * n + j] = i == j;
	for (int p = 0; p < n; p++) {
		int piv = p;

		for (int q = p + 1; q < n; q++)
			if (fabs(a[q * n + p]) > fabs(a[piv * n + p]))
				piv = q;
		if (fabs(a[piv * n + p]) < 1e-300)
			return 0;
		for (int k = 0; k < n; k++) {
			double t = a[p * n + k];

			a[p * n + k] = a[piv * n + k];
			a[piv * n + k] = t;
			t = inv[p * n + k];
			inv[p * n + k] = inv[piv * n + k];
			inv[piv * n + k] = t;
		}
		for (int q = 0; q < n; q++) {
			double f;

			if (q == p)
				continue;
			f = a[q * n + p] / a[p * n + p];
			for (int k = 0; k < n; k++) {
				a[q * n + k] -= f * a[p * n + k];
				inv[q * n + k] -= f * inv[p * n + k];
			}
		}
	}
	for (int i = 0; i < n; i++) {
		double d = a[i * n + i];

		for (int k = 0; k < n; k++)
			a[i * n + k] = inv[i * n + k] / d;
	}
	return 1;
}

/* d(x', y') / d(h0..h7) of the homography at canvas point (x, y). */
static void jac(const double H[9], double x, double y, double g[2][8])
{
	double w = H[6] * x + H[7] * y + H[8], u, v;

	apply(H, x, y, &u, &v);
	memset(g, 0, sizeof(double) * 16);
	g[0][0] = x / w;
	g[0][1] = y / w;
	g[0][2] = 1 / w;
	g[1][3] = x / w;
	g[1][4] = y / w;
	g[1][5] = 1 / w;
	g[0][6] = -u * x / w;
	g[0][7] = -u * y / w;
	g[1][6] = -v * x / w;
	g[1][7] = -v * y / w;
}

/*
 * The fitted map's own error over the canvas: the corners' scatter about it
 * (their detection noise, px) propagated through the least squares to the
 * canvas's corners, edge midpoints and centre; the largest, as an RMS
 * position error in mm. With many corners the map is far better than any
 * one of them. -1 when the fit is degenerate.
 */
static double map_error(const double H[9], const double Hi[9], const double *src,
			const double *dst, int np, double W, double Hh)
{
	double jtj[64] = { 0 }, s2 = 0, worst = 0;

	if (np * 2 <= 8)
		return -1;
	for (int i = 0; i < np; i++) {
		double g[2][8], u, v;

		jac(H, src[2 * i], src[2 * i + 1], g);
		apply(H, src[2 * i], src[2 * i + 1], &u, &v);
		s2 += (u - dst[2 * i]) * (u - dst[2 * i]) + (v - dst[2 * i + 1]) * (v - dst[2 * i + 1]);
		for (int a = 0; a < 8; a++)
			for (int b = 0; b < 8; b++)
				jtj[a * 8 + b] += g[0][a] * g[0][b] + g[1][a] * g[1][b];
	}
	s2 /= 2 * np - 8;
	/* The parameters differ in scale by many orders: equilibrate before inverting. */
	{
		double d[8];

		for (int a = 0; a < 8; a++) {
			if (!(jtj[a * 8 + a] > 0))
				return -1;
			d[a] = 1.0 / sqrt(jtj[a * 8 + a]);
		}
		for (int a = 0; a < 8; a++)
			for (int b = 0; b < 8; b++)
				jtj[a * 8 + b] *= d[a] * d[b];
		if (!invert(jtj, 8))
			return -1;
		for (int a = 0; a < 8; a++)
			for (int b = 0; b < 8; b++)
				jtj[a * 8 + b] *= d[a] * d[b];
	}
	for (int k = 0; k < 9; k++) {
		double x = 0.5 * W * (k % 3), y = 0.5 * Hh * (k / 3), g[2][8], var = 0, u, v, x1, y1,
		       x2, y2, mmpx;

		jac(H, x, y, g);
		for (int c = 0; c < 2; c++)
			for (int a = 0; a < 8; a++)
				for (int b = 0; b < 8; b++)
					var += g[c][a] * jtj[a * 8 + b] * g[c][b];
		apply(H, x, y, &u, &v);
		apply(Hi, u - 0.5, v, &x1, &y1);
		apply(Hi, u + 0.5, v, &x2, &y2);
		mmpx = hypot(x2 - x1, y2 - y1);
		worst = fmax(worst, sqrt(s2 * var) * mmpx);
	}
	return worst;
}

/* Marker corners read on the frame: canvas mm (src) and frame px (dst). */
struct canvas_pts {
	double src[2 * 48], dst[2 * 48];
	int np;
};

/* Vision's four-marker fit g (the origin's core says which is which), or why the markers do not make one. */
static int markers_located(const struct img *frame, const char *name, const struct vis_markers *mks,
			   const struct cv_marker *mk, int n, struct vis_geometry *g, bl_err *err)
{
	int origins = 0;

	if (!vis_locate(frame, name, NULL, mks, g, err))
		return 0;
	for (int i = 0; i < n; i++)
		origins += mk[i].origin;
	if (n < 4 || origins != 1)
		return bl_fail(err, BL_EINVAL, "%s: %d corner marker%s found (%d with the "
			       "origin's core): the canvas needs all 4 in view, uncovered, "
			       "lit and in focus (or give its corners with --corners)", name,
			       n, n == 1 ? "" : "s", origins);
	return bl_fail(err, BL_EINVAL, "%s: %d corner markers found, but they do not fit "
		       "a %gx%g mm canvas with %g mm markers %g mm outside its corners: "
		       "check zones.canvas.size_mm and zones.canvas.markers", name, n, mks->canvas_mm[0],
		       mks->canvas_mm[1], mks->size_mm, mks->offset_mm);
}

/*
 * Marker id's corners, refined to a fraction of a pixel, each named by where
 * the four-marker fit (H canvas to frame, H4i its inverse) puts it on the
 * canvas: the nearest corner of the square it belongs to.
 */
static int marker_points(const struct calib_lumplane *lum, const char *name, const struct vis_markers *mks,
			 int id, const double H[9], const double H4i[9], const struct cv_marker *mk, int n,
			 struct canvas_pts *pt, bl_err *err)
{
	struct calib_marker_fit fit;
	double c[2], pc[2], oc[8], best = 1e18, S = mks->size_mm;
	int bi = -1;

	vis_marker_centre(mks, id, c);
	apply(H, c[0], c[1], &pc[0], &pc[1]);
	for (int k = 0; k < n; k++) {
		double d = hypot(mk[k].centre[0] - pc[0], mk[k].centre[1] - pc[1]);

		if (d < best) {
			best = d;
			bi = k;
		}
	}
	if (bi < 0 || best > 0.5 * mk[bi].side_px)
		return bl_fail(err, BL_EINVAL, "%s: corner marker %d is not where the others put it", name, id);
	marker_corners_cw(&mk[bi], oc);
	if (!calib_marker_refine(lum, oc, S, id == 0, &fit))
		return bl_fail(err, BL_EINVAL, "%s: corner marker %d at (%.0f, %.0f) px cannot "
			       "be read to a fraction of a pixel (partly covered, blurred or "
			       "glared?)", name, id, mk[bi].centre[0], mk[bi].centre[1]);
	for (int k = 0; k < fit.n && pt->np < 48; k++) {
		double x, y, h = fit.half_mm[k], nx, ny;

		apply(H4i, fit.px[k][0], fit.px[k][1], &x, &y);
		nx = c[0] + (x > c[0] ? h : -h);
		ny = c[1] + (y > c[1] ? h : -h);
		if (hypot(x - nx, y - ny) > S / 12)
			continue;
		pt->src[2 * pt->np] = nx;
		pt->src[2 * pt->np + 1] = ny;
		pt->dst[2 * pt->np] = fit.px[k][0];
		pt->dst[2 * pt->np + 1] = fit.px[k][1];
		pt->np++;
	}
	return 0;
}

/* A corner read far off the rest (a speck on a marker edge) is dropped, once, and H fitted again. */
static int drop_outliers(const char *name, struct canvas_pts *pt, double H[9], bl_err *err)
{
	double res[48], sorted[48], lim;
	int k = 0, np = pt->np;

	for (int i = 0; i < np; i++) {
		double u, v;

		apply(H, pt->src[2 * i], pt->src[2 * i + 1], &u, &v);
		res[i] = sorted[i] = hypot(u - pt->dst[2 * i], v - pt->dst[2 * i + 1]);
	}
	qsort(sorted, (size_t)np, sizeof(double), cmp_double);
	lim = fmax(4.0 * sorted[np / 2], 0.5);
	for (int i = 0; i < np; i++)
		if (res[i] <= lim) {
			memmove(&pt->src[2 * k], &pt->src[2 * i], 2 * sizeof(double));
			memmove(&pt->dst[2 * k], &pt->dst[2 * i], 2 * sizeof(double));
			k++;
		}
	if (k < np && k >= 8) {
		pt->np = k;
		if (cv_homography(pt->src, pt->dst, k, H, err))
			return bl_err_prefix(err, "%s: corner markers", name);
	}
	return 0;
}

/* The canvas from its corner markers: every corner of their squares read, the homography fitted. */
static int canvas_from_markers(const struct img *frame, const char *name, const struct vis_markers *mks,
			       struct calib_canvas_result *r, struct canvas_pts *pt, bl_err *err)
{
	struct vis_geometry g;
	struct cv_marker mk[MAX_MARKERS];
	struct calib_lumplane lum;
	double H4i[9];
	int n = 0, rc;

	if ((rc = find_markers(frame, mk, &n, err)))
		return rc;
	r->markers_found = n;
	if ((rc = markers_located(frame, name, mks, mk, n, &g, err)))
		return rc;
	if (cv_invert3(g.H, H4i, err))
		return bl_err_prefix(err, "%s: corner markers", name);
	if ((rc = calib_lumplane_from(frame, &lum, err)))
		return rc;
	for (int id = 0; id < 4 && rc == 0; id++)
		rc = marker_points(&lum, name, mks, id, g.H, H4i, mk, n, pt, err);
	calib_lumplane_free(&lum);
	if (rc)
		return rc;
	if (pt->np < 8)
		return bl_fail(err, BL_EINVAL, "%s: only %d marker corners could be read", name, pt->np);
	if (cv_homography(pt->src, pt->dst, pt->np, r->H, err))
		return bl_err_prefix(err, "%s: corner markers", name);
	if ((rc = drop_outliers(name, pt, r->H, err)))
		return rc;
	r->source = VIS_FROM_MARKERS;
	r->n_points = pt->np;
	return 0;
}

/* How well the marker points fit: rms and worst in canvas mm, and the map's worst error over the canvas. */
static int marker_fit_figures(const char *name, const struct canvas_pts *pt, const double Hi[9],
			      double W, double Hh, struct calib_canvas_result *r, bl_err *err)
{
	double ss = 0;

	for (int i = 0; i < pt->np; i++) {
		double x, y, e;

		apply(Hi, pt->dst[2 * i], pt->dst[2 * i + 1], &x, &y);
		e = hypot(x - pt->src[2 * i], y - pt->src[2 * i + 1]);
		ss += e * e;
		r->max_mm = fmax(r->max_mm, e);
	}
	r->rms_mm = sqrt(ss / pt->np);
	r->map_error_mm = map_error(r->H, Hi, pt->src, pt->dst, pt->np, W, Hh);
	if (r->map_error_mm < 0)
		return bl_fail(err, BL_EINVAL, "%s: the marker points do not determine the canvas's perspective",
			       name);
	r->canvas.error_mm = r->map_error_mm;
	return 0;
}

/* The canvas's corners on the frame, its scale at the centre, and that the corners land near the frame. */
static int canvas_on_frame(const struct img *frame, const char *name, const double cmm[8], const double Hi[9],
			   double W, double Hh, struct calib_canvas_result *r, bl_err *err)
{
	double cx, cy, x0, y0, x1, y1;

	cv_apply_homography(r->H, cmm, r->canvas.corners_px, 4);
	apply(r->H, 0.5 * W, 0.5 * Hh, &cx, &cy);
	apply(Hi, cx - 0.5, cy, &x0, &y0);
	apply(Hi, cx + 0.5, cy, &x1, &y1);
	r->mm_per_px = hypot(x1 - x0, y1 - y0);
	for (int i = 0; i < 4; i++) {
		double x = r->canvas.corners_px[2 * i], y = r->canvas.corners_px[2 * i + 1];

		if (!isfinite(x) || !isfinite(y) || x < -frame->w || y < -frame->h || x > 2.0 * frame->w ||
		    y > 2.0 * frame->h)
			return bl_fail(err, BL_EINVAL, "%s: the canvas corners land far outside the "
				       "frame: the markers or corners do not describe this canvas", name);
	}
	return 0;
}

static const char *const corner_markers[4] = { "0, the origin's (with the dark core)",
						 "1, along x from the origin", "2, across from the origin",
						 "3, along y from the origin" };

/*
 * The canvas corners the operator gave, as the frame shows them clockwise
 * from the origin's corner (the convention of every session's --corners:
 * clockwise from the object's first corner), into the file's order (0, 0),
 * (W, 0), (W, H), (0, H): a camera above the table sees the canvas's x, y
 * turned, never mirrored, so those run counter-clockwise on screen.
 * Corners that run the other way describe a mirror image of the canvas.
 */
static int given_corners(const char *name, const double *given, double file_px[8], bl_err *err)
{
	static const int from[4] = { 0, 3, 2, 1 };

	for (int i = 0; i < 4; i++) {
		const double *a = given + 2 * i, *b = given + 2 * ((i + 1) % 4), *c = given + 2 * ((i + 2) % 4);

		if ((b[0] - a[0]) * (c[1] - b[1]) - (b[1] - a[1]) * (c[0] - b[0]) <= 0) {
			if (vis_quad_area2(given) < 0)
				return bl_fail(err, BL_EINVAL, "%s: the corners given run counter-clockwise "
					       "as the frame shows them, which describes a mirror image "
					       "of the canvas: --corners takes them clockwise, from the "
					       "origin's corner (by the marker with the dark core)", name);
			return bl_fail(err, BL_EINVAL, "%s: the corners given do not make a convex "
				       "quadrilateral: give them clockwise as the frame shows them, from "
				       "the origin's corner", name);
		}
	}
	for (int i = 0; i < 4; i++) {
		file_px[2 * i] = given[2 * from[i]];
		file_px[2 * i + 1] = given[2 * from[i] + 1];
	}
	return 0;
}

/*
 * Corners given against the markers the frame shows (when it shows all four):
 * every corner within VIS_CANVAS_CORNER_TOL_MM of where the markers put it,
 * the first at the origin's. r->corners_off_mm is the largest distance, -1
 * when the markers are not all in view (nothing to check against).
 */
static int corners_against_markers(const struct img *frame, const char *name, const struct vis_markers *mks,
				   const double file_px[8], struct calib_canvas_result *r, bl_err *err)
{
	static const int screen[4] = { 0, 3, 2, 1 }; /* the order given <-> the file's */
	struct vis_canvas c;
	double off;
	int rc;

	vis_canvas_init(&c);
	c.image_w = frame->w;
	c.image_h = frame->h;
	memcpy(c.size_mm, mks->canvas_mm, sizeof(c.size_mm));
	memcpy(c.corners_px, file_px, sizeof(c.corners_px));
	rc = vis_canvas_cross_check(frame, name, "the corners given", &c, mks, VIS_CANVAS_CORNER_TOL_MM,
				    &r->corners_off_mm, err);
	if (rc != BL_EINVAL || r->corners_off_mm < 0)
		return rc;
	/* The same turn for every corner is a wrong start: say which corner they start at. */
	for (int s = 1; s < 4; s++) {
		bl_err e2 = { 0 };

		for (int k = 0; k < 4; k++) {
			/* Given corner i is the canvas's i + s clockwise from the origin. */
			int given = (screen[k] + 4 - s) % 4;

			c.corners_px[2 * k] = file_px[2 * screen[given]];
			c.corners_px[2 * k + 1] = file_px[2 * screen[given] + 1];
		}
		if (vis_canvas_cross_check(frame, name, "", &c, mks, VIS_CANVAS_CORNER_TOL_MM, &off, &e2) == 0)
			return bl_fail(err, BL_EINVAL, "%s: the corners given start at the canvas corner by "
				       "marker %s, not the origin's: --corners takes them clockwise as the "
				       "frame shows them, from the corner by the marker with the dark core "
				       "(at (%.0f, %.0f) px)", name, corner_markers[screen[s]],
				       c.corners_px[0], c.corners_px[1]);
	}
	{
		char what[BL_ERR_MSG_MAX];

		snprintf(what, sizeof(what), "%s", err->msg);
		return bl_fail(err, BL_EINVAL, "%s: the corners do not describe this canvas (--corners: "
			       "clockwise as the frame shows them, from the origin's corner)", what);
	}
}

int calib_canvas_run(const struct img *frame, const char *name, const struct vis_markers *mks,
		     const double *corners_px, struct calib_canvas_result *r, bl_err *err)
{
	const double W = mks->canvas_mm[0], Hh = mks->canvas_mm[1];
	const double cmm[8] = { 0, 0, W, 0, W, Hh, 0, Hh };
	struct canvas_pts pt = { .np = 0 };
	double Hi[9];
	int rc;

	memset(r, 0, sizeof(*r));
	r->markers = *mks;
	vis_canvas_init(&r->canvas);
	r->canvas.image_w = frame->w;
	r->canvas.image_h = frame->h;
	r->canvas.size_mm[0] = W;
	r->canvas.size_mm[1] = Hh;
	if (corners_px) {
		double file_px[8];

		if ((rc = given_corners(name, corners_px, file_px, err)) ||
		    (rc = corners_against_markers(frame, name, mks, file_px, r, err)))
			return rc;
		if (cv_homography(cmm, file_px, 4, r->H, err))
			return bl_err_prefix(err, "%s: the corners given", name);
		r->source = VIS_FROM_FILE;
		r->n_points = 4;
		r->rms_mm = r->max_mm = r->map_error_mm = -1;
	} else if ((rc = canvas_from_markers(frame, name, mks, r, &pt, err))) {
		return rc;
	}
	if (cv_invert3(r->H, Hi, err))
		return bl_err_prefix(err, "%s: canvas homography", name);
	if (!corners_px && (rc = marker_fit_figures(name, &pt, Hi, W, Hh, r, err)))
		return rc;
	return canvas_on_frame(frame, name, cmm, Hi, W, Hh, r, err);
}

cJSON *calib_canvas_json(const struct calib_canvas_result *r)
{
	cJSON *j = cJSON_CreateObject();

	if (!j)
		return NULL;
	cJSON_AddStringToObject(j, "source", r->source == VIS_FROM_MARKERS ? "markers" : "corners");
	cJSON_AddNumberToObject(j, "markers_found", r->markers_found);
	cJSON_AddNumberToObject(j, "points", r->n_points);
	if (r->rms_mm >= 0) {
		cJSON_AddNumberToObject(j, "error_mm", r->map_error_mm);
		cJSON_AddNumberToObject(j, "points_rms_mm", r->rms_mm);
		cJSON_AddNumberToObject(j, "points_max_mm", r->max_mm);
	} else {
		cJSON_AddNullToObject(j, "error_mm");
		cJSON_AddNullToObject(j, "points_rms_mm");
		cJSON_AddNullToObject(j, "points_max_mm");
	}
	if (r->source != VIS_FROM_MARKERS) {
		if (r->corners_off_mm >= 0)
			cJSON_AddNumberToObject(j, "corners_off_markers_mm", r->corners_off_mm);
		else
			cJSON_AddNullToObject(j, "corners_off_markers_mm");
	}
	cJSON_AddNumberToObject(j, "mm_per_px", r->mm_per_px);
	json_add_vec(j, "size_mm", r->canvas.size_mm, 2);
	json_add_vec(j, "corners_px", r->canvas.corners_px, 8);
	json_add_vec(j, "homography", r->H, 9);
	return j;
}

/* The truth's image points of one marker ("center" and "corners"); 0 when absent. */
static int truth_marker(const cJSON *mk, double pts[10])
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(mk, "center");
	const cJSON *cs = cJSON_GetObjectItemCaseSensitive(mk, "corners"), *it;
	int k = 1;

	if (!cJSON_IsArray(c) || cJSON_GetArraySize(c) != 2 || !cJSON_IsArray(cs) ||
	    cJSON_GetArraySize(cs) != 4)
		return 0;
	pts[0] = cJSON_GetArrayItem(c, 0)->valuedouble;
	pts[1] = cJSON_GetArrayItem(c, 1)->valuedouble;
	cJSON_ArrayForEach(it, cs) {
		if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 2)
			return 0;
		pts[2 * k] = cJSON_GetArrayItem(it, 0)->valuedouble;
		pts[2 * k + 1] = cJSON_GetArrayItem(it, 1)->valuedouble;
		k++;
	}
	return 1;
}

int calib_canvas_truth(const struct calib_canvas_result *r, const cJSON *root,
		       const char *truth_path, double *mean_mm, double *max_mm, bl_err *err)
{
	const cJSON *arr, *mk;
	const double W = r->canvas.size_mm[0], Hh = r->canvas.size_mm[1], o = r->markers.offset_mm;
	const double hs = 0.5 * r->markers.size_mm;
	double Hi[9], sum = 0;
	int n = 0, rc;

	*mean_mm = *max_mm = -1;
	arr = cJSON_GetObjectItemCaseSensitive(root, "markers");
	if (!cJSON_IsArray(arr))
		return bl_fail(err, BL_EINVAL, "%s: no \"markers\" list", truth_path);
	rc = cv_invert3(r->H, Hi, err);
	if (rc)
		return rc;
	*max_mm = 0;
	cJSON_ArrayForEach(mk, arr) {
		double pts[10], c[2], best = 1e18;
		const double mm[4][2] = { { -o, -o }, { W + o, -o }, { W + o, Hh + o }, { -o, Hh + o } };
		int bi = 0;

		if (!truth_marker(mk, pts))
			continue;
		/* Which of the canvas's markers this is: the one nearest where the fit sees it. */
		apply(Hi, pts[0], pts[1], &c[0], &c[1]);
		for (int i = 0; i < 4; i++) {
			double d = hypot(c[0] - mm[i][0], c[1] - mm[i][1]);

			if (d < best) {
				best = d;
				bi = i;
			}
		}
		for (int k = 0; k < 5; k++) {
			double x, y, e, bd = 1e18;

			apply(Hi, pts[2 * k], pts[2 * k + 1], &x, &y);
			if (k == 0) {
				e = hypot(x - mm[bi][0], y - mm[bi][1]);
			} else {
				/* A corner: the nearest of the marker's four nominal corners. */
				for (int q = 0; q < 4; q++) {
					double cx = mm[bi][0] + (q == 1 || q == 2 ? hs : -hs);
					double cy = mm[bi][1] + (q >= 2 ? hs : -hs);

					bd = fmin(bd, hypot(x - cx, y - cy));
				}
				e = bd;
			}
			sum += e;
			*max_mm = fmax(*max_mm, e);
			n++;
		}
	}
	if (!n)
		return bl_fail(err, BL_EINVAL, "%s: no marker with a centre and four corners", truth_path);
	*mean_mm = sum / n;
	return 0;
}

/* calib_canvas.c: the canvas session: the homography from the corner markers' centres and corners by least squares, its reprojection error in mm, the canvas file. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "calib/calib.h"
#include "cv/cv.h"

#define MAX_MARKERS 16

/* Twice the signed area of four points in order. */
static double area2(const double *p)
{
	double s = 0;

	for (int i = 0; i < 4; i++) {
		int j = (i + 1) % 4;

		s += p[2 * i] * p[2 * j + 1] - p[2 * j] * p[2 * i + 1];
	}
	return s;
}

/* Orders four marker indices by angle about their middle: top left, top right, bottom right, bottom left on screen. */
static void order4(const struct cv_marker *m, int idx[4])
{
	double cx = 0, cy = 0, ang[4];

	for (int i = 0; i < 4; i++) {
		cx += m[idx[i]].centre[0] / 4;
		cy += m[idx[i]].centre[1] / 4;
	}
	for (int i = 0; i < 4; i++)
		ang[i] = atan2(m[idx[i]].centre[1] - cy, m[idx[i]].centre[0] - cx);
	for (int i = 1; i < 4; i++)
		for (int j = i; j > 0 && ang[j] < ang[j - 1]; j--) {
			double t = ang[j];
			int k = idx[j];

			ang[j] = ang[j - 1];
			ang[j - 1] = t;
			idx[j] = idx[j - 1];
			idx[j - 1] = k;
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

/*
 * The four markers that frame the canvas: of those found, the four spanning
 * the largest convex quadrilateral (a paint card or anything else marked
 * lies inside the canvas). idx gets them in canvas corner order.
 */
static int outer_four(const struct cv_marker *mk, int n, int idx[4])
{
	double best = 0;

	for (int a = 0; a < n; a++)
		for (int b = a + 1; b < n; b++)
			for (int c = b + 1; c < n; c++)
				for (int d = c + 1; d < n; d++) {
					int t[4] = { a, b, c, d };
					double p[8], s;

					order4(mk, t);
					for (int i = 0; i < 4; i++) {
						p[2 * i] = mk[t[i]].centre[0];
						p[2 * i + 1] = mk[t[i]].centre[1];
					}
					s = area2(p);
					if (s > best) {
						best = s;
						memcpy(idx, t, sizeof(t));
					}
				}
	return best > 0;
}

static void apply(const double H[9], double x, double y, double *u, double *v)
{
	double w = H[6] * x + H[7] * y + H[8];

	*u = (H[0] * x + H[1] * y + H[2]) / w;
	*v = (H[3] * x + H[4] * y + H[5]) / w;
}

int calib_canvas_run(const struct img *frame, const char *name, const double size_mm[2],
		     double marker_offset_mm, const double *corners_px,
		     struct calib_canvas_result *r, bl_err *err)
{
	const double W = size_mm[0], Hh = size_mm[1];
	const double o = marker_offset_mm > 0 ? marker_offset_mm : VIS_MARKER_OFFSET_MM;
	const double cmm[8] = { 0, 0, W, 0, W, Hh, 0, Hh };
	double src[40], dst[40], Hi[9];
	int np = 0, rc;

	memset(r, 0, sizeof(*r));
	vis_canvas_init(&r->canvas);
	r->canvas.image_w = frame->w;
	r->canvas.image_h = frame->h;
	r->canvas.size_mm[0] = W;
	r->canvas.size_mm[1] = Hh;
	r->canvas.marker_offset_mm = o;
	if (corners_px) {
		rc = cv_homography(cmm, corners_px, 4, r->H, err);
		if (rc)
			return bl_err_prefix(err, "%s: the corners given", name);
		r->source = VIS_FROM_FILE;
		r->n_points = 4;
		r->rms_mm = r->max_mm = -1;
	} else {
		struct cv_marker mk[MAX_MARKERS];
		double H4[9], mc[8];
		int n = 0, idx[4];

		rc = find_markers(frame, mk, &n, err);
		if (rc)
			return rc;
		r->markers_found = n;
		if (n < 4)
			return bl_fail(err, BL_EINVAL, "%s: %d corner marker%s found, the canvas needs "
				       "all 4 in view (uncovered, lit, in focus), or give its corners "
				       "with --corners", name, n, n == 1 ? "" : "s");
		if (!outer_four(mk, n, idx))
			return bl_fail(err, BL_EINVAL, "%s: the corner markers do not form a "
				       "quadrilateral", name);
		{
			const double mm[8] = { -o, -o, W + o, -o, W + o, Hh + o, -o, Hh + o };

			for (int i = 0; i < 4; i++) {
				mc[2 * i] = mk[idx[i]].centre[0];
				mc[2 * i + 1] = mk[idx[i]].centre[1];
			}
			rc = cv_homography(mm, mc, 4, H4, err);
			if (rc)
				return bl_err_prefix(err, "%s: corner markers", name);
			/* The centres, and each marker's outer corners matched to where they should be. */
			for (int i = 0; i < 4; i++) {
				const struct cv_marker *m = &mk[idx[i]];
				double hs = 0.5 * VIS_MARKER_SIDE_MM, want;

				src[2 * np] = mm[2 * i];
				src[2 * np + 1] = mm[2 * i + 1];
				dst[2 * np] = m->centre[0];
				dst[2 * np + 1] = m->centre[1];
				np++;
				{
					double p0[2], p1[2];

					apply(H4, mm[2 * i] - hs, mm[2 * i + 1], &p0[0], &p0[1]);
					apply(H4, mm[2 * i] + hs, mm[2 * i + 1], &p1[0], &p1[1]);
					want = hypot(p1[0] - p0[0], p1[1] - p0[1]);
				}
				if (m->side_px < 0.6 * want || m->side_px > 1.6 * want)
					return bl_fail(err, BL_EINVAL, "%s: the corner markers do not fit "
						       "a %gx%g mm canvas with markers %g mm outside its "
						       "corners (a marker is %.1f px across where %.1f "
						       "were expected): check zones.canvas.size_mm",
						       name, W, Hh, o, m->side_px, want);
				for (int k = 0; k < 4; k++) {
					double cx = mm[2 * i] + (k == 1 || k == 2 ? hs : -hs);
					double cy = mm[2 * i + 1] + (k >= 2 ? hs : -hs), px, py;
					double bd = 1e18;
					int bj = -1;

					apply(H4, cx, cy, &px, &py);
					for (int j = 0; j < 4; j++) {
						double d = hypot(m->corners[2 * j] - px,
								 m->corners[2 * j + 1] - py);

						if (d < bd) {
							bd = d;
							bj = j;
						}
					}
					if (bj < 0 || bd > 0.35 * m->side_px)
						continue;
					src[2 * np] = cx;
					src[2 * np + 1] = cy;
					dst[2 * np] = m->corners[2 * bj];
					dst[2 * np + 1] = m->corners[2 * bj + 1];
					np++;
				}
			}
		}
		rc = cv_homography(src, dst, np, r->H, err);
		if (rc)
			return bl_err_prefix(err, "%s: corner markers", name);
		r->source = VIS_FROM_MARKERS;
		r->n_points = np;
	}
	rc = cv_invert3(r->H, Hi, err);
	if (rc)
		return bl_err_prefix(err, "%s: canvas homography", name);
	if (!corners_px) {
		double ss = 0;

		for (int i = 0; i < np; i++) {
			double x, y, e;

			apply(Hi, dst[2 * i], dst[2 * i + 1], &x, &y);
			e = hypot(x - src[2 * i], y - src[2 * i + 1]);
			ss += e * e;
			r->max_mm = fmax(r->max_mm, e);
		}
		r->rms_mm = sqrt(ss / np);
		r->canvas.error_mm = r->rms_mm;
	}
	cv_apply_homography(r->H, cmm, r->canvas.corners_px, 4);
	{
		double cx, cy, x0, y0, x1, y1;

		apply(r->H, 0.5 * W, 0.5 * Hh, &cx, &cy);
		apply(Hi, cx - 0.5, cy, &x0, &y0);
		apply(Hi, cx + 0.5, cy, &x1, &y1);
		r->mm_per_px = hypot(x1 - x0, y1 - y0);
	}
	for (int i = 0; i < 4; i++) {
		double x = r->canvas.corners_px[2 * i], y = r->canvas.corners_px[2 * i + 1];

		if (!isfinite(x) || !isfinite(y) || x < -frame->w || y < -frame->h ||
		    x > 2.0 * frame->w || y > 2.0 * frame->h)
			return bl_fail(err, BL_EINVAL, "%s: the canvas corners land far outside the "
				       "frame: the markers or corners do not describe this canvas", name);
	}
	if (area2(r->canvas.corners_px) <= 0)
		return bl_fail(err, BL_EINVAL, "%s: the canvas corners run anticlockwise: canvas "
			       "(0, 0) must be at the top left of the frame", name);
	return 0;
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
		cJSON_AddNumberToObject(j, "rms_mm", r->rms_mm);
		cJSON_AddNumberToObject(j, "max_mm", r->max_mm);
	} else {
		cJSON_AddNullToObject(j, "rms_mm");
		cJSON_AddNullToObject(j, "max_mm");
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

int calib_canvas_truth(const struct calib_canvas_result *r, const char *truth_path,
		       double *mean_mm, double *max_mm, bl_err *err)
{
	cJSON *root;
	const cJSON *arr, *mk;
	const double W = r->canvas.size_mm[0], Hh = r->canvas.size_mm[1], o = r->canvas.marker_offset_mm;
	const double hs = 0.5 * VIS_MARKER_SIDE_MM;
	double Hi[9], sum = 0;
	int n = 0, rc;

	*mean_mm = *max_mm = -1;
	rc = json_parse_file(truth_path, &root, err);
	if (rc)
		return rc;
	arr = cJSON_GetObjectItemCaseSensitive(root, "markers");
	if (!cJSON_IsArray(arr)) {
		cJSON_Delete(root);
		return bl_fail(err, BL_EINVAL, "%s: no \"markers\" list", truth_path);
	}
	rc = cv_invert3(r->H, Hi, err);
	if (rc) {
		cJSON_Delete(root);
		return rc;
	}
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
	cJSON_Delete(root);
	if (!n)
		return bl_fail(err, BL_EINVAL, "%s: no marker with a centre and four corners", truth_path);
	*mean_mm = sum / n;
	return 0;
}

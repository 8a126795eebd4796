/* canvas.c: the canvas geometry file, corner-marker location and rectification of the canvas to a raster in mm. */
#include "vision/canvas.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/log.h"

/* Frames and canvases beyond these are typos, not equipment. */
#define MAX_IMAGE_PX 65536
#define MAX_CANVAS_MM 10000.0

static const json_migrate_fn canvas_steps[] = { prov_migrate_add };
const struct json_format vis_canvas_format = { "canvas", 2, 1, canvas_steps };

void vis_canvas_init(struct vis_canvas *c)
{
	memset(c, 0, sizeof(*c));
	c->error_mm = -1.0;
	c->prov.verdict = PROV_UNKNOWN;
}

double vis_quad_area2(const double *p)
{
	double s = 0.0;

	for (int i = 0; i < 4; i++) {
		int j = (i + 1) % 4;

		s += p[2 * i] * p[2 * j + 1] - p[2 * j] * p[2 * i + 1];
	}
	return s;
}

static int quad_convex(const double *p)
{
	int sign = 0;

	for (int i = 0; i < 4; i++) {
		const double *a = p + 2 * i, *b = p + 2 * ((i + 1) % 4), *c = p + 2 * ((i + 2) % 4);
		double cr = (b[0] - a[0]) * (c[1] - b[1]) - (b[1] - a[1]) * (c[0] - b[0]);
		int s = cr > 0 ? 1 : cr < 0 ? -1 : 0;

		if (s == 0 || (sign && s != sign))
			return 0;
		sign = s;
	}
	return 1;
}

static int load_camera(json_obj *root, struct vis_canvas *c, bl_err *err)
{
	json_obj o;
	const cJSON *arr;
	size_t n;
	double f[2], ctr[2];
	int rc;

	rc = json_child(root, "camera", JSON_OPTIONAL, &o, err);
	if (rc)
		return rc < 0 ? rc : 0;
	BL_TRY(json_vec(&o, "focal_px", JSON_REQUIRED, 2, 1.0, 1e6, f, err));
	BL_TRY(json_vec(&o, "centre_px", JSON_REQUIRED, 2, -1e5, 1e5, ctr, err));
	rc = json_array(&o, "distortion", JSON_OPTIONAL, 8, &arr, &n, err);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		if (n != 4 && n != 5 && n != 8)
			return json_fail(&o, "distortion", err, BL_EINVAL,
					 "%zu coefficients; give 4 (k1 k2 p1 p2), 5 (+k3) or 8", n);
		BL_TRY(json_vec(&o, "distortion", JSON_REQUIRED, (int)n, -1e3, 1e3, c->camera.dist,
			     err));
		c->camera.ndist = (int)n;
	}
	c->camera.fx = f[0];
	c->camera.fy = f[1];
	c->camera.cx = ctr[0];
	c->camera.cy = ctr[1];
	c->has_camera = 1;
	return json_end(&o, err);
}

int vis_canvas_load(const char *path, struct vis_canvas *c, bl_err *err)
{
	cJSON *root = NULL;
	json_obj o;
	const cJSON *arr, *it;
	double size_px[2];
	size_t n, i = 0;
	int rc;

	vis_canvas_init(c);
	rc = json_parse_file(path, &root, err);
	if (rc)
		return rc;
	if ((rc = json_format_open(root, path, &vis_canvas_format, NULL, &o, err)) < 0)
		goto out_free;
	if ((rc = prov_read(&o, &c->prov, err)) < 0)
		goto out_free;
	if ((rc = json_vec(&o, "image_px", JSON_REQUIRED, 2, 16, MAX_IMAGE_PX, size_px, err)) < 0)
		goto out_free;
	if (size_px[0] != floor(size_px[0]) || size_px[1] != floor(size_px[1])) {
		rc = json_fail(&o, "image_px", err, BL_EINVAL, "must be whole pixels");
		goto out_free;
	}
	c->image_w = (int)size_px[0];
	c->image_h = (int)size_px[1];
	if ((rc = json_vec(&o, "size_mm", JSON_REQUIRED, 2, 1.0, MAX_CANVAS_MM, c->size_mm, err)) < 0)
		goto out_free;
	if ((rc = json_array(&o, "corners_px", JSON_REQUIRED, 4, &arr, &n, err)) < 0)
		goto out_free;
	if (n != 4) {
		rc = json_fail(&o, "corners_px", err, BL_EINVAL,
			       "%zu corners; give 4: canvas (0,0), (W,0), (W,H), (0,H)", n);
		goto out_free;
	}
	cJSON_ArrayForEach(it, arr) {
		const cJSON *x = cJSON_GetArrayItem(it, 0), *y = cJSON_GetArrayItem(it, 1);

		if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 2 || !cJSON_IsNumber(x) ||
		    !cJSON_IsNumber(y) || !isfinite(x->valuedouble) || !isfinite(y->valuedouble)) {
			rc = json_fail(&o, "corners_px", err, BL_EINVAL,
				       "corner %zu must be [x, y] in px", i);
			goto out_free;
		}
		/* Corners may lie a little outside the frame (a canvas cut by the view), not far. */
		if (fabs(x->valuedouble) > 4.0 * c->image_w || fabs(y->valuedouble) > 4.0 * c->image_h) {
			rc = json_fail(&o, "corners_px", err, BL_EINVAL,
				       "corner %zu (%g, %g) lies far outside the %dx%d image", i,
				       x->valuedouble, y->valuedouble, c->image_w, c->image_h);
			goto out_free;
		}
		c->corners_px[2 * i] = x->valuedouble;
		c->corners_px[2 * i + 1] = y->valuedouble;
		i++;
	}
	if (!quad_convex(c->corners_px) || fabs(vis_quad_area2(c->corners_px)) < 2.0 * 16 * 16) {
		rc = json_fail(&o, "corners_px", err, BL_EINVAL,
			       "the four corners do not form a convex quadrilateral (order: canvas "
			       "(0,0), (W,0), (W,H), (0,H))");
		goto out_free;
	}
	/* A camera above the table sees the canvas's x, y turned, never mirrored: counter-clockwise on screen. */
	if (vis_quad_area2(c->corners_px) > 0) {
		rc = json_fail(&o, "corners_px", err, BL_EINVAL,
			       "the corners (canvas (0,0), (W,0), (W,H), (0,H)) run clockwise on screen: "
			       "a mirror image of the canvas, which no camera above it sees; calibrate "
			       "it again (brushloop calib canvas)");
		goto out_free;
	}
	if ((rc = load_camera(&o, c, err)) < 0)
		goto out_free;
	if ((rc = json_num(&o, "error_mm", JSON_OPTIONAL, 0.0, 1000.0, &c->error_mm, err)) < 0)
		goto out_free;
	rc = json_end(&o, err);
out_free:
	cJSON_Delete(root);
	return rc < 0 ? rc : 0;
}

int vis_canvas_save(const char *path, const struct vis_canvas *c, cJSON *settings, cJSON *figures,
		    bl_err *err)
{
	cJSON *root = cJSON_CreateObject(), *corners;
	const double img[2] = { c->image_w, c->image_h };
	int rc;

	if (!root)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	cJSON_AddStringToObject(root, "kind", "canvas");
	cJSON_AddNumberToObject(root, "version", vis_canvas_format.version);
	cJSON_AddItemToObject(root, "session", prov_json(&c->prov, settings, figures));
	json_add_vec(root, "image_px", img, 2);
	json_add_vec(root, "size_mm", c->size_mm, 2);
	corners = cJSON_AddArrayToObject(root, "corners_px");
	for (int i = 0; corners && i < 4; i++)
		cJSON_AddItemToArray(corners, cJSON_CreateDoubleArray(c->corners_px + 2 * i, 2));
	if (c->has_camera) {
		cJSON *cam = cJSON_AddObjectToObject(root, "camera");
		const double f[2] = { c->camera.fx, c->camera.fy };
		const double ctr[2] = { c->camera.cx, c->camera.cy };

		if (cam) {
			json_add_vec(cam, "focal_px", f, 2);
			json_add_vec(cam, "centre_px", ctr, 2);
			if (c->camera.ndist)
				json_add_vec(cam, "distortion", c->camera.dist, c->camera.ndist);
		}
	}
	if (c->error_mm >= 0.0)
		cJSON_AddNumberToObject(root, "error_mm", c->error_mm);
	rc = json_write_file(path, root, err);
	cJSON_Delete(root);
	return rc;
}

/* Local scale of H (px per mm) at canvas point p: the mean of the two axis stretches. */
static double local_scale(const double H[9], double x, double y)
{
	double p[6] = { x, y, x + 1.0, y, x, y + 1.0 }, q[6];

	cv_apply_homography(H, p, q, 3);
	return 0.5 * (hypot(q[2] - q[0], q[3] - q[1]) + hypot(q[4] - q[0], q[5] - q[1]));
}

/*
 * Orders four marker centres as canvas (0,0), (W,0), (W,H), (0,H): the origin
 * marker first, then the others by angle about their middle. A camera above
 * the table sees machine x, y turned but never mirrored, so with image y
 * running down the corners follow in decreasing angle whatever the camera's
 * rotation. 1 when the markers cannot be ordered (not exactly one origin).
 */
static int order_corners(const struct cv_marker *m, double out[8], double side[4])
{
	double cx = 0.0, cy = 0.0, ang[4], a0;
	int idx[4] = { 0, 1, 2, 3 }, origin = -1;

	for (int i = 0; i < 4; i++) {
		cx += m[i].centre[0] / 4.0;
		cy += m[i].centre[1] / 4.0;
		if (m[i].origin) {
			if (origin >= 0)
				return 1;
			origin = i;
		}
	}
	if (origin < 0)
		return 1;
	a0 = atan2(m[origin].centre[1] - cy, m[origin].centre[0] - cx);
	/* Angle turned clockwise on screen from the origin marker, in [0, 2 pi). */
	for (int i = 0; i < 4; i++) {
		ang[i] = a0 - atan2(m[i].centre[1] - cy, m[i].centre[0] - cx);
		while (ang[i] < 0.0)
			ang[i] += 2.0 * M_PI;
		while (ang[i] >= 2.0 * M_PI)
			ang[i] -= 2.0 * M_PI;
	}
	ang[origin] = -1.0;
	for (int i = 1; i < 4; i++)
		for (int j = i; j > 0 && ang[idx[j]] < ang[idx[j - 1]]; j--) {
			int t = idx[j];

			idx[j] = idx[j - 1];
			idx[j - 1] = t;
		}
	for (int i = 0; i < 4; i++) {
		out[2 * i] = m[idx[i]].centre[0];
		out[2 * i + 1] = m[idx[i]].centre[1];
		side[i] = m[idx[i]].side_px;
	}
	return 0;
}

static int geometry_from_markers(const struct img *frame, const char *name,
				 const struct vis_markers *mk, const struct vis_canvas *file,
				 struct vis_geometry *g, bl_err *err)
{
	struct cv_view rgb = { frame->px, frame->w, frame->h, frame->w * 3, 3 };
	struct cv_view grey = { NULL, frame->w, frame->h, frame->w, 1 };
	struct cv_marker found[8];
	double raw[8], ideal[8], side[4], canvas_pts[8];
	const double *sz = mk->canvas_mm;
	int n = 0, rc;

	grey.px = malloc((size_t)frame->w * frame->h);
	if (!grey.px)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	rc = cv_grey(&rgb, &grey, err);
	/* Below 12 px across, the ink border (S/6) is two pixels: paint texture looks alike. */
	if (rc == 0)
		rc = cv_find_markers(&grey, 12.0, found, 8, &n, err);
	free(grey.px);
	if (rc)
		return rc;
	g->markers_found = n;
	if (n != 4) {
		if (n)
			log_info("%s: %d corner marker%s found, need 4", name, n, n == 1 ? "" : "s");
		return 1;
	}
	if (order_corners(found, raw, side)) {
		log_warn("%s: four corner markers found but not one origin marker (the one with a "
			 "dark centre) among them; ignoring them", name);
		return 1;
	}
	if (file && file->has_camera) {
		rc = cv_undistort_points(&file->camera, raw, ideal, 4, err);
		if (rc)
			return rc;
	} else {
		memcpy(ideal, raw, sizeof(ideal));
	}
	for (int i = 0; i < 4; i++)
		vis_marker_centre(mk, i, canvas_pts + 2 * i);
	rc = cv_homography(canvas_pts, ideal, 4, g->H, err);
	if (rc)
		return bl_err_prefix(err, "%s: corner markers", name);
	/*
	 * A marker's size must agree with the homography's scale where it sits:
	 * four blobs that merely look like markers, or a wrong canvas size, fail here.
	 */
	for (int i = 0; i < 4; i++) {
		double want = local_scale(g->H, canvas_pts[2 * i], canvas_pts[2 * i + 1]) *
			      mk->size_mm;

		if (side[i] < 0.6 * want || side[i] > 1.6 * want) {
			log_warn("%s: the corner markers do not fit a %gx%g mm canvas (marker %d is "
				 "%.1f px across, expected %.1f); ignoring them",
				 name, sz[0], sz[1], i, side[i], want);
			return 1;
		}
	}
	g->size_mm[0] = sz[0];
	g->size_mm[1] = sz[1];
	g->has_camera = file ? file->has_camera : 0;
	if (g->has_camera)
		g->camera = file->camera;
	g->source = VIS_FROM_MARKERS;
	{
		const double cpts[8] = { 0, 0, sz[0], 0, sz[0], sz[1], 0, sz[1] };
		double ip[8];

		cv_apply_homography(g->H, cpts, ip, 4);
		if (g->has_camera)
			rc = cv_distort_points(&g->camera, ip, g->corners_px, 4, err);
		else
			memcpy(g->corners_px, ip, sizeof(ip));
	}
	return rc;
}

int vis_canvas_cross_check(const struct img *frame, const char *name, const char *file_name,
			   const struct vis_canvas *file, const struct vis_markers *markers, double tol_mm,
			   double *off_mm, bl_err *err)
{
	static const char *const corner[4] = { "(0, 0)", "(W, 0)", "(W, H)", "(0, H)" };
	struct vis_geometry g;
	double Hi[9], worst = -1;
	int wk = 0, rc;

	*off_mm = -1;
	memset(&g, 0, sizeof(g));
	if ((rc = geometry_from_markers(frame, name, markers, file, &g, err)) != 0)
		return rc < 0 ? rc : 0;
	if ((rc = cv_invert3(g.H, Hi, err)))
		return rc;
	for (int k = 0; k < 4; k++) {
		double ideal[2], x, y, w, d;

		if (file->has_camera && (rc = cv_undistort_points(&file->camera, file->corners_px + 2 * k, ideal, 1, err)))
			return rc;
		if (!file->has_camera)
			memcpy(ideal, file->corners_px + 2 * k, sizeof(ideal));
		w = Hi[6] * ideal[0] + Hi[7] * ideal[1] + Hi[8];
		x = (Hi[0] * ideal[0] + Hi[1] * ideal[1] + Hi[2]) / w;
		y = (Hi[3] * ideal[0] + Hi[4] * ideal[1] + Hi[5]) / w;
		d = hypot(x - (k == 1 || k == 2 ? g.size_mm[0] : 0), y - (k >= 2 ? g.size_mm[1] : 0));
		if (d > worst) {
			worst = d;
			wk = k;
		}
	}
	*off_mm = worst;
	if (worst > tol_mm)
		return bl_fail(err, BL_EINVAL, "%s: %s put%s canvas corner %s at (%.0f, %.0f) px, but "
			       "the 4 corner markers in view put it at (%.0f, %.0f) px, %.1f mm away (at "
			       "most %g)", name, file_name, strchr(file_name, ' ') ? "" : "s", corner[wk],
			       file->corners_px[2 * wk], file->corners_px[2 * wk + 1], g.corners_px[2 * wk],
			       g.corners_px[2 * wk + 1], worst, tol_mm);
	return 0;
}

int vis_locate(const struct img *frame, const char *name, const struct vis_canvas *file,
	       const struct vis_markers *markers, struct vis_geometry *g, bl_err *err)
{
	double canvas_pts[8], ideal[8];
	int rc;

	memset(g, 0, sizeof(*g));
	if (markers) {
		rc = geometry_from_markers(frame, name, markers, file, g, err);
		if (rc <= 0)
			return rc;
	}
	if (!file)
		return bl_fail(err, BL_EINVAL,
			       "%s: no canvas found: %d corner marker%s in the frame (4 needed) and no "
			       "canvas file (calibration.canvas)",
			       name, g->markers_found, g->markers_found == 1 ? "" : "s");
	if (file->image_w != frame->w || file->image_h != frame->h)
		return bl_fail(err, BL_EINVAL,
			       "%s: frame is %dx%d but the canvas file describes %dx%d frames", name,
			       frame->w, frame->h, file->image_w, file->image_h);
	if (file->has_camera) {
		rc = cv_undistort_points(&file->camera, file->corners_px, ideal, 4, err);
		if (rc)
			return rc;
	} else {
		memcpy(ideal, file->corners_px, sizeof(ideal));
	}
	{
		const double pts[8] = { 0, 0, file->size_mm[0], 0, file->size_mm[0],
					file->size_mm[1], 0, file->size_mm[1] };

		memcpy(canvas_pts, pts, sizeof(pts));
	}
	rc = cv_homography(canvas_pts, ideal, 4, g->H, err);
	if (rc)
		return bl_err_prefix(err, "canvas file");
	g->size_mm[0] = file->size_mm[0];
	g->size_mm[1] = file->size_mm[1];
	g->has_camera = file->has_camera;
	g->camera = file->camera;
	g->source = VIS_FROM_FILE;
	memcpy(g->corners_px, file->corners_px, sizeof(g->corners_px));
	return 0;
}

int vis_rectify(const struct img *frame, const struct vis_geometry *g, double px_per_mm,
		struct img *out, bl_err *err)
{
	struct cv_view src = { frame->px, frame->w, frame->h, frame->w * 3, 3 };
	struct cv_view small = { 0 }, dst;
	unsigned char *small_px = NULL;
	double scale = 1e30, off;
	long ow, oh;
	int f, rc;

	memset(out, 0, sizeof(*out));
	if (!(px_per_mm > 0.0) || px_per_mm > 100.0)
		return bl_fail(err, BL_EINVAL, "raster resolution %g px/mm is outside 0..100",
			       px_per_mm);
	ow = lround(g->size_mm[0] * px_per_mm);
	oh = lround(g->size_mm[1] * px_per_mm);
	if (ow < 1 || oh < 1 || ow * oh > 100L * 1000 * 1000)
		return bl_fail(err, BL_EINVAL, "canvas raster of %ldx%ld px is unreasonable", ow, oh);
	/*
	 * Shrink the frame by a whole factor first, so each raster pixel is an
	 * average over the frame pixels it covers, not four of them sampled.
	 */
	for (int i = 0; i < 4; i++) {
		double x = (i == 1 || i == 2) ? g->size_mm[0] : 0.0;
		double y = i >= 2 ? g->size_mm[1] : 0.0;
		double s = local_scale(g->H, x, y);

		if (s < scale)
			scale = s;
	}
	f = (int)floor(scale / px_per_mm);
	if (f < 1)
		f = 1;
	if (f > 1 && (frame->w / f < 2 || frame->h / f < 2))
		f = 1;
	if (f > 1) {
		struct cv_view crop = src;

		crop.w = (frame->w / f) * f;
		crop.h = (frame->h / f) * f;
		small.w = crop.w / f;
		small.h = crop.h / f;
		small.channels = 3;
		small.stride = small.w * 3;
		small_px = malloc((size_t)small.w * small.h * 3);
		if (!small_px)
			return bl_fail(err, BL_ENOMEM, "out of memory");
		small.px = small_px;
		rc = cv_resize(&crop, &small, err);
		if (rc)
			goto out_free;
	} else {
		small = src;
	}
	/* A pixel centre u of the frame is at (u - (f - 1) / 2) / f in the shrunk one. */
	off = (f - 1) / 2.0;
	rc = img_alloc(out, (int)ow, (int)oh, err);
	if (rc)
		goto out_free;
	dst = (struct cv_view){ out->px, out->w, out->h, out->w * 3, 3 };
	if (!g->has_camera || g->camera.ndist == 0) {
		/* raster px -> canvas mm -> frame px -> shrunk px, one matrix. */
		const double S[9] = { 1.0 / px_per_mm, 0, 0.5 / px_per_mm,
				      0, 1.0 / px_per_mm, 0.5 / px_per_mm,
				      0, 0, 1 };
		const double T[9] = { 1.0 / f, 0, -off / f, 0, 1.0 / f, -off / f, 0, 0, 1 };
		double HS[9], M[9];

		for (int r = 0; r < 3; r++)
			for (int c = 0; c < 3; c++) {
				HS[3 * r + c] = 0.0;
				for (int k = 0; k < 3; k++)
					HS[3 * r + c] += g->H[3 * r + k] * S[3 * k + c];
			}
		for (int r = 0; r < 3; r++)
			for (int c = 0; c < 3; c++) {
				M[3 * r + c] = 0.0;
				for (int k = 0; k < 3; k++)
					M[3 * r + c] += T[3 * r + k] * HS[3 * k + c];
			}
		rc = cv_warp(&small, M, &dst, err);
	} else {
		size_t n = (size_t)ow * (size_t)oh;
		double *pts = malloc(n * 2 * sizeof(double));
		float *mx = malloc(n * sizeof(float)), *my = malloc(n * sizeof(float));

		if (!pts || !mx || !my) {
			rc = bl_fail(err, BL_ENOMEM, "out of memory");
		} else {
			for (long j = 0; j < oh; j++)
				for (long i = 0; i < ow; i++) {
					size_t k = (size_t)j * ow + i;

					pts[2 * k] = (i + 0.5) / px_per_mm;
					pts[2 * k + 1] = (j + 0.5) / px_per_mm;
				}
			cv_apply_homography(g->H, pts, pts, (int)n);
			rc = cv_distort_points(&g->camera, pts, pts, (int)n, err);
			for (size_t k = 0; rc == 0 && k < n; k++) {
				mx[k] = (float)((pts[2 * k] - off) / f);
				my[k] = (float)((pts[2 * k + 1] - off) / f);
			}
			if (rc == 0)
				rc = cv_remap(&small, mx, my, &dst, err);
		}
		free(pts);
		free(mx);
		free(my);
	}
	if (rc)
		img_free(out);
out_free:
	free(small_px);
	return rc;
}

void vis_markers_from_machine(const struct machine *m, struct vis_markers *mk)
{
	mk->canvas_mm[0] = m->canvas.size_mm[0];
	mk->canvas_mm[1] = m->canvas.size_mm[1];
	mk->size_mm = m->canvas.marker_size_mm;
	mk->offset_mm = m->canvas.marker_offset_mm;
}

void vis_marker_centre(const struct vis_markers *mk, int id, double c[2])
{
	static const int sx[4] = { 0, 1, 1, 0 }, sy[4] = { 0, 0, 1, 1 };
	const double o = mk->offset_mm;

	c[0] = sx[id] ? mk->canvas_mm[0] + o : -o;
	c[1] = sy[id] ? mk->canvas_mm[1] + o : -o;
}

double vis_marker_reach_mm(const struct vis_markers *mk)
{
	return 2.0 / 3.0 * mk->size_mm;
}

int vis_marker_pattern(int id, double dx_mm, double dy_mm, double size_mm)
{
	double r = fmax(fabs(dx_mm), fabs(dy_mm)) / size_mm; /* in sides from the centre */

	if (r >= 2.0 / 3.0)
		return -1;
	if (r >= 0.5)
		return 0;  /* quiet zone */
	if (r >= 1.0 / 3.0)
		return 1;  /* the ink border */
	if (r >= 1.0 / 6.0)
		return 0;
	return id == 0; /* the origin's core */
}

int vis_marker_at(const struct vis_markers *mk, double x_mm, double y_mm)
{
	for (int id = 0; id < 4; id++) {
		double c[2];
		int k;

		vis_marker_centre(mk, id, c);
		k = vis_marker_pattern(id, x_mm - c[0], y_mm - c[1], mk->size_mm);
		if (k >= 0)
			return k;
	}
	return -1;
}

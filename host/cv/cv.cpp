/* cv.cpp: the OpenCV shim: every call wrapped so that no C++ exception crosses into C; errors come back as codes. */
#include "cv/cv.h"

#include <algorithm>
#include <cmath>
#include <new>
#include <vector>

#include <opencv2/calib3d.hpp>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

/*
 * GUARD wraps a function body: OpenCV reports bad arguments and internal
 * failures by throwing, and an exception unwinding through C frames is
 * undefined behaviour, so each one is caught here and turned into a code.
 */
#define GUARD_BEGIN try {
#define GUARD_END(where)                                                                 \
	}                                                                               \
	catch (const cv::Exception &e)                                                  \
	{                                                                               \
		return bl_fail(err, BL_EINVAL, "%s: OpenCV: %s", where, e.what());      \
	}                                                                               \
	catch (const std::bad_alloc &)                                                  \
	{                                                                               \
		return bl_fail(err, BL_ENOMEM, "%s: out of memory", where);              \
	}                                                                               \
	catch (...)                                                                     \
	{                                                                               \
		return bl_fail(err, BL_EIO, "%s: unexpected C++ exception", where);     \
	}

static int view_type(const struct cv_view *v)
{
	return v->channels == 1 ? CV_8UC1 : CV_8UC3;
}

static int check_view(const struct cv_view *v, const char *what, bl_err *err)
{
	if (!v || !v->px || v->w <= 0 || v->h <= 0 || (v->channels != 1 && v->channels != 3) ||
	    v->stride < v->w * v->channels)
		return bl_fail(err, BL_EINVAL, "%s: bad image view", what);
	return 0;
}

static cv::Mat as_mat(const struct cv_view *v)
{
	return cv::Mat(v->h, v->w, view_type(v), v->px, (size_t)v->stride);
}

static cv::Mat camera_matrix(const struct cv_camera *c)
{
	return (cv::Mat_<double>(3, 3) << c->fx, 0, c->cx, 0, c->fy, c->cy, 0, 0, 1);
}

static cv::Mat dist_coeffs(const struct cv_camera *c)
{
	cv::Mat d(1, c->ndist, CV_64F);

	for (int i = 0; i < c->ndist; i++)
		d.at<double>(0, i) = c->dist[i];
	return d;
}

static int check_camera(const struct cv_camera *c, bl_err *err)
{
	if (!(c->fx > 0) || !(c->fy > 0) || !std::isfinite(c->cx) || !std::isfinite(c->cy))
		return bl_fail(err, BL_EINVAL, "camera intrinsics: focal lengths must be positive");
	if (c->ndist != 0 && c->ndist != 4 && c->ndist != 5 && c->ndist != 8)
		return bl_fail(err, BL_EINVAL, "camera distortion: %d coefficients (want 4, 5 or 8)",
			       c->ndist);
	return 0;
}

extern "C" int cv_homography(const double *src, const double *dst, int n, double H[9],
			     bl_err *err)
{
	GUARD_BEGIN
	std::vector<cv::Point2d> s, d;

	if (n < 4)
		return bl_fail(err, BL_EINVAL, "homography: %d point pairs, need at least 4", n);
	for (int i = 0; i < n; i++) {
		if (!std::isfinite(src[2 * i]) || !std::isfinite(src[2 * i + 1]) ||
		    !std::isfinite(dst[2 * i]) || !std::isfinite(dst[2 * i + 1]))
			return bl_fail(err, BL_EINVAL, "homography: point %d is not finite", i);
		s.emplace_back(src[2 * i], src[2 * i + 1]);
		d.emplace_back(dst[2 * i], dst[2 * i + 1]);
	}
	/* Three of four points on one line leave the homography undetermined. */
	for (int i = 0; i < n && n == 4; i++) {
		const cv::Point2d &a = s[(i + 1) % 4], &b = s[(i + 2) % 4], &c = s[(i + 3) % 4];
		const cv::Point2d &p = d[(i + 1) % 4], &q = d[(i + 2) % 4], &r = d[(i + 3) % 4];
		double cs = (b - a).cross(c - a), cd = (q - p).cross(r - p);
		double ss = cv::norm(b - a) * cv::norm(c - a), sd = cv::norm(q - p) * cv::norm(r - p);

		if (std::fabs(cs) <= 1e-9 * ss || std::fabs(cd) <= 1e-9 * sd)
			return bl_fail(err, BL_EINVAL, "homography: three of the four points lie on one line");
	}
	cv::Mat h = cv::findHomography(s, d, 0);
	if (h.empty() || std::fabs(h.at<double>(2, 2)) < 1e-15)
		return bl_fail(err, BL_EINVAL, "homography: the points are degenerate");
	for (int i = 0; i < 9; i++)
		H[i] = h.at<double>(i / 3, i % 3) / h.at<double>(2, 2);
	for (int i = 0; i < 9; i++)
		if (!std::isfinite(H[i]))
			return bl_fail(err, BL_EINVAL, "homography: the points are degenerate");
	return 0;
	GUARD_END("homography")
}

extern "C" void cv_apply_homography(const double H[9], const double *in, double *out, int n)
{
	for (int i = 0; i < n; i++) {
		double x = in[2 * i], y = in[2 * i + 1];
		double w = H[6] * x + H[7] * y + H[8];

		out[2 * i] = (H[0] * x + H[1] * y + H[2]) / w;
		out[2 * i + 1] = (H[3] * x + H[4] * y + H[5]) / w;
	}
}

extern "C" int cv_invert3(const double m[9], double out[9], bl_err *err)
{
	double c0 = m[4] * m[8] - m[5] * m[7];
	double c1 = m[5] * m[6] - m[3] * m[8];
	double c2 = m[3] * m[7] - m[4] * m[6];
	double det = m[0] * c0 + m[1] * c1 + m[2] * c2;
	double scale = 0.0;

	for (int i = 0; i < 9; i++)
		scale = std::max(scale, std::fabs(m[i]));
	if (!std::isfinite(det) || std::fabs(det) <= 1e-14 * scale * scale * scale)
		return bl_fail(err, BL_EINVAL, "matrix is singular");
	out[0] = c0 / det;
	out[1] = (m[2] * m[7] - m[1] * m[8]) / det;
	out[2] = (m[1] * m[5] - m[2] * m[4]) / det;
	out[3] = c1 / det;
	out[4] = (m[0] * m[8] - m[2] * m[6]) / det;
	out[5] = (m[2] * m[3] - m[0] * m[5]) / det;
	out[6] = c2 / det;
	out[7] = (m[1] * m[6] - m[0] * m[7]) / det;
	out[8] = (m[0] * m[4] - m[1] * m[3]) / det;
	return 0;
}

extern "C" int cv_undistort_points(const struct cv_camera *cam, const double *in, double *out,
				   int n, bl_err *err)
{
	GUARD_BEGIN
	int rc = check_camera(cam, err);

	if (rc)
		return rc;
	if (cam->ndist == 0) {
		std::copy(in, in + 2 * n, out);
		return 0;
	}
	std::vector<cv::Point2d> s(n), d;
	for (int i = 0; i < n; i++)
		s[i] = cv::Point2d(in[2 * i], in[2 * i + 1]);
	cv::Mat K = camera_matrix(cam);
	/* Iterate to convergence: the default 5 iterations leave ~0.1 px at the frame's edge. */
	cv::undistortPoints(s, d, K, dist_coeffs(cam), cv::noArray(), K,
			    cv::TermCriteria(cv::TermCriteria::COUNT | cv::TermCriteria::EPS, 100,
					     1e-10));
	for (int i = 0; i < n; i++) {
		out[2 * i] = d[i].x;
		out[2 * i + 1] = d[i].y;
	}
	return 0;
	GUARD_END("undistort points")
}

extern "C" int cv_distort_points(const struct cv_camera *cam, const double *in, double *out,
				 int n, bl_err *err)
{
	GUARD_BEGIN
	int rc = check_camera(cam, err);

	if (rc)
		return rc;
	if (cam->ndist == 0) {
		std::copy(in, in + 2 * n, out);
		return 0;
	}
	std::vector<cv::Point3d> obj(n);
	std::vector<cv::Point2d> img;
	for (int i = 0; i < n; i++)
		obj[i] = cv::Point3d((in[2 * i] - cam->cx) / cam->fx,
				     (in[2 * i + 1] - cam->cy) / cam->fy, 1.0);
	cv::Mat zero = cv::Mat::zeros(3, 1, CV_64F);
	cv::projectPoints(obj, zero, zero, camera_matrix(cam), dist_coeffs(cam), img);
	for (int i = 0; i < n; i++) {
		out[2 * i] = img[i].x;
		out[2 * i + 1] = img[i].y;
	}
	return 0;
	GUARD_END("distort points")
}

extern "C" int cv_warp(const struct cv_view *src, const double M[9], struct cv_view *dst,
		       bl_err *err)
{
	GUARD_BEGIN
	int rc = check_view(src, "warp", err);

	if (rc || (rc = check_view(dst, "warp", err)))
		return rc;
	if (src->channels != dst->channels)
		return bl_fail(err, BL_EINVAL, "warp: channel counts differ");
	cv::Mat m(3, 3, CV_64F);
	for (int i = 0; i < 9; i++)
		m.at<double>(i / 3, i % 3) = M[i];
	cv::Mat out = as_mat(dst);
	cv::warpPerspective(as_mat(src), out, m, out.size(), cv::INTER_LINEAR | cv::WARP_INVERSE_MAP,
			    cv::BORDER_CONSTANT, cv::Scalar::all(0));
	if (out.data != dst->px)
		return bl_fail(err, BL_EIO, "warp: OpenCV reallocated the output");
	return 0;
	GUARD_END("warp")
}

extern "C" int cv_remap(const struct cv_view *src, const float *mapx, const float *mapy,
			struct cv_view *dst, bl_err *err)
{
	GUARD_BEGIN
	int rc = check_view(src, "remap", err);

	if (rc || (rc = check_view(dst, "remap", err)))
		return rc;
	if (src->channels != dst->channels)
		return bl_fail(err, BL_EINVAL, "remap: channel counts differ");
	cv::Mat mx(dst->h, dst->w, CV_32F, const_cast<float *>(mapx));
	cv::Mat my(dst->h, dst->w, CV_32F, const_cast<float *>(mapy));
	cv::Mat out = as_mat(dst);
	cv::remap(as_mat(src), out, mx, my, cv::INTER_LINEAR, cv::BORDER_CONSTANT,
		  cv::Scalar::all(0));
	if (out.data != dst->px)
		return bl_fail(err, BL_EIO, "remap: OpenCV reallocated the output");
	return 0;
	GUARD_END("remap")
}

extern "C" int cv_resize(const struct cv_view *src, struct cv_view *dst, bl_err *err)
{
	GUARD_BEGIN
	int rc = check_view(src, "resize", err);

	if (rc || (rc = check_view(dst, "resize", err)))
		return rc;
	if (src->channels != dst->channels)
		return bl_fail(err, BL_EINVAL, "resize: channel counts differ");
	cv::Mat out = as_mat(dst);
	int shrink = dst->w <= src->w && dst->h <= src->h;
	cv::resize(as_mat(src), out, out.size(), 0, 0, shrink ? cv::INTER_AREA : cv::INTER_LINEAR);
	if (out.data != dst->px)
		return bl_fail(err, BL_EIO, "resize: OpenCV reallocated the output");
	return 0;
	GUARD_END("resize")
}

extern "C" int cv_resize_rgb16(const uint16_t *src, int sw, int sh, uint16_t *dst, int dw,
			       int dh, bl_err *err)
{
	GUARD_BEGIN
	if (!src || !dst || sw <= 0 || sh <= 0 || dw <= 0 || dh <= 0)
		return bl_fail(err, BL_EINVAL, "resize: bad 16-bit image");
	cv::Mat in(sh, sw, CV_16UC3, (void *)src), out(dh, dw, CV_16UC3, dst);
	int shrink = dw <= sw && dh <= sh;

	cv::resize(in, out, out.size(), 0, 0, shrink ? cv::INTER_AREA : cv::INTER_LINEAR);
	if (out.data != (unsigned char *)dst)
		return bl_fail(err, BL_EIO, "resize: OpenCV reallocated the output");
	return 0;
	GUARD_END("resize")
}

extern "C" int cv_grey(const struct cv_view *rgb, struct cv_view *grey, bl_err *err)
{
	GUARD_BEGIN
	int rc = check_view(rgb, "grey", err);

	if (rc || (rc = check_view(grey, "grey", err)))
		return rc;
	if (rgb->channels != 3 || grey->channels != 1 || rgb->w != grey->w || rgb->h != grey->h)
		return bl_fail(err, BL_EINVAL, "grey: want RGB in and one channel of the same size out");
	cv::Mat out = as_mat(grey);
	cv::cvtColor(as_mat(rgb), out, cv::COLOR_RGB2GRAY);
	if (out.data != grey->px)
		return bl_fail(err, BL_EIO, "grey: OpenCV reallocated the output");
	return 0;
	GUARD_END("grey")
}

/* The crossing of lines p0-p2 and p1-p3. */
static bool diagonal_crossing(const cv::Point2f q[4], cv::Point2d *out)
{
	cv::Point2d a(q[0]), b(q[2]), c(q[1]), d(q[3]);
	cv::Point2d r = b - a, s = d - c;
	double den = r.cross(s);

	if (std::fabs(den) < 1e-9)
		return false;
	double t = (c - a).cross(s) / den;
	*out = a + t * r;
	return true;
}

extern "C" int cv_find_markers(const struct cv_view *grey, double min_side_px,
			       struct cv_marker *out, int max, int *n, bl_err *err)
{
	GUARD_BEGIN
	int rc = check_view(grey, "find markers", err);

	*n = 0;
	if (rc)
		return rc;
	if (grey->channels != 1)
		return bl_fail(err, BL_EINVAL, "find markers: want a grey image");
	cv::Mat g = as_mat(grey), work;
	/* Contours on a half-size image cost a quarter; corners are refined at full size. */
	double scale = grey->w > 1400 ? 2.0 : 1.0;
	if (scale > 1.0)
		cv::resize(g, work, cv::Size(grey->w / 2, grey->h / 2), 0, 0, cv::INTER_AREA);
	else
		work = g;
	int block = std::max(31, std::min(work.cols, work.rows) / 10) | 1;
	cv::Mat bin;
	/* A local threshold: the light falls off across the table. */
	cv::adaptiveThreshold(work, bin, 255, cv::ADAPTIVE_THRESH_MEAN_C, cv::THRESH_BINARY_INV,
			      block, 15);
	std::vector<std::vector<cv::Point>> contours;
	std::vector<cv::Vec4i> hier;
	cv::findContours(bin, contours, hier, cv::RETR_TREE, cv::CHAIN_APPROX_SIMPLE);

	double min_side = std::max(6.0, min_side_px / scale);
	std::vector<struct cv_marker> found;
	for (size_t i = 0; i < contours.size(); i++) {
		/* Only ink outlines: a contour at odd depth is the edge of a hole. */
		int depth = 0;
		for (int p = hier[i][3]; p >= 0; p = hier[p][3])
			depth++;
		if (depth % 2 || hier[i][2] < 0)
			continue;
		double a0 = cv::contourArea(contours[i]);
		if (a0 < min_side * min_side)
			continue;
		/*
		 * One paper hole of (2/3)^2 = 0.44 the area; inside it nothing, or
		 * (the origin) one ink core of (1/3)^2 = 0.11. Specks below 2 % of
		 * the marker are noise; anything else bigger is not a marker.
		 */
		int j = -1, k = -1, extra = 0;
		double a1 = 0.0, a2 = 0.0;
		for (int c = hier[i][2]; c >= 0; c = hier[c][0]) {
			double a = cv::contourArea(contours[c]);
			if (a > a1) {
				extra += a1 > 0.02 * a0;
				a1 = a;
				j = c;
			} else {
				extra += a > 0.02 * a0;
			}
		}
		if (j < 0 || extra || a1 < 0.25 * a0 || a1 > 0.65 * a0)
			continue;
		for (int c = hier[j][2]; c >= 0; c = hier[c][0]) {
			double a = cv::contourArea(contours[c]);
			if (a > a2) {
				extra += a2 > 0.02 * a0;
				a2 = a;
				k = c;
			} else {
				extra += a > 0.02 * a0;
			}
		}
		bool origin = k >= 0 && a2 > 0.02 * a0;
		if (extra || (origin && (a2 < 0.05 * a0 || a2 > 0.2 * a0)))
			continue;
		/*
		 * Squares, not round things with a rim (a water pot, a wipe pad): the
		 * four-point approximation of a four-cornered outline covers all of
		 * it, of a circle only 64 %.
		 */
		std::vector<cv::Point> hole;
		cv::approxPolyDP(contours[j], hole, 0.08 * cv::arcLength(contours[j], true), true);
		if (hole.size() != 4 || std::fabs(cv::contourArea(hole) - a1) > 0.12 * a1)
			continue;
		cv::Moments mo = cv::moments(contours[i]), mj = cv::moments(contours[j]);
		if (mo.m00 <= 0 || mj.m00 <= 0)
			continue;
		cv::Point2d co(mo.m10 / mo.m00, mo.m01 / mo.m00), cj(mj.m10 / mj.m00, mj.m01 / mj.m00);
		if (cv::norm(co - cj) > 0.15 * std::sqrt(a0))
			continue;
		if (origin) {
			cv::Moments mk = cv::moments(contours[k]);
			if (mk.m00 <= 0 ||
			    cv::norm(co - cv::Point2d(mk.m10 / mk.m00, mk.m01 / mk.m00)) >
				    0.15 * std::sqrt(a0))
				continue;
		}
		std::vector<cv::Point> quad;
		cv::approxPolyDP(contours[i], quad, 0.06 * cv::arcLength(contours[i], true), true);
		if (quad.size() != 4 || !cv::isContourConvex(quad) ||
		    std::fabs(cv::contourArea(quad) - a0) > 0.12 * a0)
			continue;

		cv::Point2f q[4];
		for (int v = 0; v < 4; v++)
			q[v] = cv::Point2f((float)((quad[v].x + 0.5) * scale - 0.5),
					   (float)((quad[v].y + 0.5) * scale - 0.5));
		double side = 0.0;
		for (int v = 0; v < 4; v++)
			side += cv::norm(q[(v + 1) % 4] - q[v]) / 4.0;
		/*
		 * Contour points lie on the dark pixels, half a pixel inside the
		 * edge; the corner search finds the edges' true crossing.
		 */
		std::vector<cv::Point2f> pts(q, q + 4);
		/* Within half the ink border (S/6) and the quiet zone beyond it: other edges stay out. */
		int win = std::max(2, std::min(8, (int)(side / 12.0)));
		cv::cornerSubPix(g, pts, cv::Size(win, win), cv::Size(-1, -1),
				 cv::TermCriteria(cv::TermCriteria::COUNT | cv::TermCriteria::EPS, 40,
						  0.01));
		/* A corner that wandered off (a blurred or occluded marker) keeps the contour's. */
		for (int v = 0; v < 4; v++)
			if (cv::norm(pts[v] - q[v]) <= 0.25 * side + 2.0 * scale)
				q[v] = pts[v];
		cv::Point2d centre;
		if (!diagonal_crossing(q, &centre))
			continue;
		struct cv_marker m;
		m.centre[0] = centre.x;
		m.centre[1] = centre.y;
		for (int v = 0; v < 4; v++) {
			m.corners[2 * v] = q[v].x;
			m.corners[2 * v + 1] = q[v].y;
		}
		m.side_px = side;
		m.origin = origin;
		found.push_back(m);
	}
	/* Nothing inside a marker passes as another, but a blurred one may show twice: keep the larger. */
	std::sort(found.begin(), found.end(),
		  [](const struct cv_marker &x, const struct cv_marker &y) { return x.side_px > y.side_px; });
	std::vector<struct cv_marker> kept;
	for (const auto &m : found) {
		bool dup = false;
		for (const auto &k : kept)
			if (std::hypot(m.centre[0] - k.centre[0], m.centre[1] - k.centre[1]) <
			    0.5 * k.side_px)
				dup = true;
		if (!dup)
			kept.push_back(m);
	}
	*n = (int)kept.size();
	for (int i = 0; i < max && i < (int)kept.size(); i++)
		out[i] = kept[i];
	return 0;
	GUARD_END("find markers")
}

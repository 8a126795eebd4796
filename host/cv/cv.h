/* cv.h: plain C functions over OpenCV (homography, warps, resampling, lens distortion, corner-marker detection); the only door to C++ in the host. */
#ifndef BL_CV_CV_H
#define BL_CV_CV_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Inside the extern "C" block: err.h is a C header without guards of its own. */
#include "base/err.h"

/* A view of packed 8-bit pixels owned by the caller. */
struct cv_view {
	unsigned char *px;
	int w, h;      /* px */
	int stride;    /* bytes per row */
	int channels;  /* 1 (grey) or 3 (RGB) */
};

/* Pinhole camera with OpenCV's distortion model (k1, k2, p1, p2[, k3[, k4, k5, k6]]). */
struct cv_camera {
	double fx, fy, cx, cy; /* px; pixel centres at integer coordinates */
	double dist[8];
	int ndist;             /* 0 (no distortion), 4, 5 or 8 */
};

/*
 * Homography H (row-major 3x3, H[8] = 1) with dst ~ H * src, from n >= 4
 * point pairs (x, y interleaved). Four points give the exact solution, more a
 * least-squares fit. Degenerate input (three points on a line) is BL_EINVAL.
 */
int cv_homography(const double *src, const double *dst, int n, double H[9], bl_err *err);

/* Applies H to n points (x, y interleaved), in place allowed. */
void cv_apply_homography(const double H[9], const double *in, double *out, int n);

/* Inverts a 3x3 matrix; BL_EINVAL when singular. */
int cv_invert3(const double m[9], double out[9], bl_err *err);

/* Raw (distorted) image points to ideal pinhole points in px of the same camera. */
int cv_undistort_points(const struct cv_camera *cam, const double *in, double *out, int n,
			bl_err *err);

/* Ideal pinhole points in px to raw (distorted) image points. */
int cv_distort_points(const struct cv_camera *cam, const double *in, double *out, int n,
		      bl_err *err);

/*
 * dst(x, y) = src(M * (x, y, 1)), bilinear, for every pixel of dst (pixel
 * centres at integer coordinates). Points that fall outside src become 0.
 */
int cv_warp(const struct cv_view *src, const double M[9], struct cv_view *dst, bl_err *err);

/* dst(x, y) = src(mapx(x, y), mapy(x, y)), bilinear; maps are dst->w * dst->h floats. */
int cv_remap(const struct cv_view *src, const float *mapx, const float *mapy,
	     struct cv_view *dst, bl_err *err);

/* Resizes src into dst's size: area averaging when shrinking, bilinear when enlarging. */
int cv_resize(const struct cv_view *src, struct cv_view *dst, bl_err *err);

/* The same for packed RGB of 16 bits a sample (sw x sh into dw x dh px). */
int cv_resize_rgb16(const uint16_t *src, int sw, int sh, uint16_t *dst, int dw, int dh,
		    bl_err *err);

/* RGB to grey (ITU-R 601 luma weights) into a w x h single-channel view. */
int cv_grey(const struct cv_view *rgb, struct cv_view *grey, bl_err *err);

/*
 * A corner marker (vision/canvas.h): an ink square, a paper square of 2/3 its
 * side inside, and on the origin marker an ink core of 1/3 the side. centre
 * is the crossing of the outer square's diagonals, its corners refined to
 * sub-pixel precision.
 */
struct cv_marker {
	double centre[2];     /* px */
	double corners[8];    /* outer square, x, y interleaved, in contour order */
	double side_px;       /* mean side length */
	int origin;           /* it has the ink core: the canvas origin's marker */
};

/*
 * Finds corner markers in a grey image. Markers smaller than min_side_px are
 * ignored. Fills up to max markers, largest first, and sets *n to the number
 * found (which may exceed max).
 */
int cv_find_markers(const struct cv_view *grey, double min_side_px, struct cv_marker *out,
		    int max, int *n, bl_err *err);

#ifdef __cplusplus
}
#endif

#endif

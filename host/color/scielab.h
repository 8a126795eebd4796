/* scielab.h: what a person sees of a difference between two pictures: S-CIELAB (Zhang and Wandell 1996) and plain per-pixel CIEDE2000. */
#ifndef BL_COLOR_SCIELAB_H
#define BL_COLOR_SCIELAB_H

#include "base/err.h"

/*
 * S-CIELAB: both pictures go from CIELAB (D50) to XYZ, to the opponent
 * channels of Poirson and Wandell (luminance, red-green, blue-yellow), each
 * channel is blurred by the eye's spatial sensitivity to it at the viewing
 * distance (a sum of two or three Gaussians), back to XYZ and CIELAB, and the
 * two are compared pixel by pixel with CIEDE2000. A uniform field gives its
 * plain CIEDE2000; detail finer than the eye resolves at that distance counts
 * as its mean colour.
 *
 * The kernels are those of X. Zhang's reference MATLAB code (separableFilters.m
 * with its gauss.m, the "distribution" parameters that ISETCam's
 * scGaussianParameters.m lists and Johnson and Fairchild 2003 reprint): in
 * degrees, luminance 0.05 (weight 1.00327), 0.225 (0.114416), 7.0 (-0.117686);
 * red-green 0.0685 (0.616725), 0.826 (0.383275); blue-yellow 0.0920
 * (0.567885), 0.6451 (0.432115); one degree of support; below 224 samples a
 * degree each kernel is made at a multiple of the rate, convolved with the
 * linear interpolator and sampled back, as that code does (with the centred
 * interpolator of its 2024 fix).
 */

#define SCIELAB_MAX_TERMS 3
#define SCIELAB_MAX_TAPS 2049

struct scielab_kernel {
	int n_terms;                  /* separable terms whose sum is the channel's filter */
	int taps;                     /* odd; the centre is taps / 2 */
	double x[SCIELAB_MAX_TERMS][SCIELAB_MAX_TAPS]; /* along rows, signed */
	double y[SCIELAB_MAX_TERMS][SCIELAB_MAX_TAPS]; /* along columns, |x| */
};

struct scielab_filters {
	double samples_per_degree;
	struct scielab_kernel ch[3];  /* luminance, red-green, blue-yellow */
};


/* Samples a degree of visual angle of a picture at px_per_mm seen from distance_mm. */
double scielab_samples_per_degree(double px_per_mm, double distance_mm);

/* The three channels' kernels at that rate (0.5 to 2000 samples a degree). */
int scielab_filters_make(double samples_per_degree, struct scielab_filters *out, bl_err *err);

/* CIE 1931 XYZ to the opponent channels (luminance, red-green, blue-yellow), the reference's cmatrix('xyz2opp'), and back. */
void scielab_xyz_to_opp(const double xyz[3], double opp[3]);
void scielab_opp_to_xyz(const double opp[3], double xyz[3]);

/*
 * Three opponent planes (opp: w * h floats each, one plane after another)
 * blurred in place as the eye blurs each: the sum of the channel's separable
 * terms, rows with the signed kernel, then columns with its magnitude, edges
 * reflected as the reference's pad4conv does.
 */
int scielab_filter_opponent(const struct scielab_filters *f, float *opp, int w, int h, bl_err *err);

/*
 * A Lab raster (w * h * 3 floats, D50) as the eye sees it: to XYZ, opponent
 * channels filtered (scielab_filter_opponent), back to Lab. out may not be lab.
 */
int scielab_blur(const struct scielab_filters *f, const float *lab, int w, int h, float *out,
		 bl_err *err);

/* Mean (and 95th percentile) CIEDE2000 of two Lab rasters, pixel by pixel. */
int scielab_de00_pixels(const float *a, const float *b, int w, int h, double *mean, double *p95,
			bl_err *err);

/* Mean S-CIELAB CIEDE2000 of two Lab rasters at px_per_mm seen from distance_mm. */
int scielab_mean(const float *a, const float *b, int w, int h, double px_per_mm,
		 double distance_mm, double *mean, bl_err *err);

#endif

/* measure.h: colour measurement: robust swatch colours, Lab rasters through the camera profile, CIEDE2000 maps of the canvas against a target. */
#ifndef BL_VISION_MEASURE_H
#define BL_VISION_MEASURE_H

#include <stddef.h>

#include "base/err.h"
#include "color/color.h"
#include "vision/image.h"

/*
 * A colour profile for measurement: camera RGB (the frame's 8-bit code
 * values scaled to 0..1, as any ICC input profile takes them) to Lab D50.
 * Without an ICC file it is sRGB, and marked uncalibrated.
 */
struct meas_profile;

/* Opens an ICC profile file (path NULL or "" for sRGB). A bad or non-RGB profile is BL_EINVAL naming the file. */
int meas_profile_open(const char *path, struct meas_profile **out, bl_err *err);

/* Opens a profile held in memory (an image's embedded profile); name is used in messages. */
int meas_profile_open_mem(const void *icc, size_t len, const char *name,
			  struct meas_profile **out, bl_err *err);

void meas_profile_close(struct meas_profile *p);

/* 1 for an ICC profile, 0 for the sRGB assumption. */
int meas_profile_calibrated(const struct meas_profile *p);

/* The profile's file or "sRGB". */
const char *meas_profile_name(const struct meas_profile *p);

/* The lightest a profile reads: the chart's white, the ICC PCS's L* 100. */
#define MEAS_WHITE_L 100.0

/* One colour: camera RGB code values in 0..1 to Lab D50 (float transform), L* at most MEAS_WHITE_L. */
void meas_profile_lab(const struct meas_profile *p, const double rgb[3], color_lab *out);

/*
 * A whole image to Lab (3 floats a pixel: L, a, b) through a 16-bit
 * transform: a few ns a pixel instead of the float transform's 220.
 */
int meas_lab_raster(const struct meas_profile *p, const struct img *im, float *lab,
		    bl_err *err);

/* The sRGB transfer function and its inverse (0..1). */
double meas_srgb_to_linear(double v);
double meas_linear_to_srgb(double v);

/* A region of an image in px, origin at the top left. */
struct meas_roi {
	int x, y, w, h;
};

/* Parses "X,Y,W,H" (whole numbers, W and H positive). */
int meas_roi_parse(const char *text, struct meas_roi *roi, bl_err *err);

struct meas_swatch {
	color_lab lab;          /* of the trimmed mean, through the profile */
	double stddev[3];       /* spread of the kept pixels in L, a, b */
	double rgb_linear[3];   /* trimmed mean in linear camera RGB, 0..1 */
	double rgb_linear_sd[3];
	long pixels;            /* pixels the mean is made of */
	long total;             /* pixels in the region */
	long clipped;           /* rejected: a channel at 254 or 255 (specular highlight, overexposure) */
	long at_top;            /* with a channel at 254 or 255, rejected or (saturated) kept */
	int saturated;          /* most of the region has a channel at 254 or 255: kept, but the
				   colour may lie beyond what the camera can record */
	long edges;             /* rejected: on an edge (strong local gradient) */
	long outliers;          /* rejected: far from the region's median colour, or trimmed */
};

/*
 * The robust colour of a region: clipped pixels, edge pixels and outliers
 * are rejected, the rest trimmed about the median; the mean is formed in
 * linear light and converted to Lab through p. name is the image's name for
 * messages (an ROI outside the image, too few usable pixels).
 */
int meas_swatch(const struct img *im, const char *name, const struct meas_roi *roi,
		const struct meas_profile *p, struct meas_swatch *out, bl_err *err);


#define MEAS_MAX_WORST 16

struct meas_cell {
	int col, row;           /* cell indices; the cell covers col * cell_mm .. mm */
	double de00;
	color_lab obs, target;
};

/* A CIEDE2000 map of an observed canvas against its target, one value a cell. */
struct meas_map {
	int cols, rows;
	double cell_mm;
	float *de;              /* cols * rows, row by row */
	double mean, p95, max;  /* over all cells */
	int n_worst;
	struct meas_cell worst[MEAS_MAX_WORST]; /* largest first */
};

/*
 * Compares two Lab rasters of w x h px at px_per_mm: each cell of cell_mm
 * (partial cells at the right and bottom edges included) takes the mean Lab
 * of its pixels on both sides, and its CIEDE2000. Keeps the n_worst worst.
 */
int meas_de_map(const float *obs, const float *target, int w, int h, double px_per_mm,
		double cell_mm, int n_worst, struct meas_map *out, bl_err *err);

void meas_map_free(struct meas_map *m);

/*
 * The map as a picture, cell_px pixels a cell: dark blue at 0, blue at 2,
 * green at 5, yellow at 10, red at 20 and above.
 */
int meas_map_image(const struct meas_map *m, int cell_px, struct img *out, bl_err *err);

/*
 * A target image on the canvas raster: resized to w x h px (area average;
 * at 16 bits, through the double transform, when the image has px16) and
 * converted to Lab through its embedded profile (or the one its PNG gAMA
 * and cHRM make), or sRGB, with a warning when that profile is unusable.
 */
int meas_target_lab(const struct img *target, const char *name, int w, int h, float *lab,
		    bl_err *err);

#endif

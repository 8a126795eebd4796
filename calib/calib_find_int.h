/* calib_find_int.h: what the files of the chart finder share (calib_find.c, calib_find_outline.c, calib_find_grid.c; calib/ only). */
#ifndef BL_CALIB_CALIB_FIND_INT_H
#define BL_CALIB_CALIB_FIND_INT_H

#include "base/err.h"
#include "calib/calib.h"

struct lum_img {
	int w, h;
	float *y;            /* linear luminance, 0..1 */
	float *rgb;          /* linear RGB */
};

/* qsort's comparison of floats, ascending. */
int calib_find_cmp_float(const void *a, const void *b);

/* ---- calib_find_outline.c ---- */

struct comp {
	int label;
	long area;
	int x0, y0, x1, y1;
};

/* The largest regions darker than thr (at least min_area px), up to max, into out; labels: each px's region. */
int calib_find_dark_regions(const struct lum_img *l, float thr, long min_area, int *labels,
			    struct comp *out, int max, bl_err *err);
/* The quadrilateral outline of region c, corners clockwise from the top left; 0 when it is none. */
int calib_find_region_quad(const int *labels, int w, int h, const struct comp *c, double q[8],
			   double *fill);

/* ---- calib_find_grid.c ---- */

struct grid {
	double H[9];           /* unit square -> px */
	double au, bu, av, bv; /* in unit-square coordinates */
	double contrast, gap_dark;
};

/* The grid of the outline at corners: 0, 1 when it cannot be read, or a negative error. */
int calib_find_read_grid(const struct lum_img *l, const double corners[8], int cols, int rows,
			 struct grid *g, bl_err *err);
/* Whether the gaps read are dark and contrasted enough for a chart. */
int calib_find_grid_ok(const struct grid *g);
/* How badly an affine camera model explains the patches' colours, CIE76 (1e9 out of memory). */
double calib_find_colour_misfit(const struct lum_img *l, const struct grid *g,
				const struct calib_chart *c);
/* The chart's view: each patch's region of interest in the frame. */
int calib_find_fill_view(const struct lum_img *l, const struct grid *g, const struct calib_chart *c,
			 const char *name, struct calib_chart_view *v, bl_err *err);

#endif

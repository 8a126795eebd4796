/* light.h: the table's stations in a frame, the light falling across the table (a light field from the bare board), and station colours measured through both. */
#ifndef BL_VISION_LIGHT_H
#define BL_VISION_LIGHT_H

#include "base/err.h"
#include "config/machine.h"
#include "vision/canvas.h"
#include "vision/image.h"
#include "vision/measure.h"

/*
 * Machine (x, y) mm on the table plane (the canvas surface's height) to raw
 * frame px through the canvas geometry, and back. n points, x, y interleaved.
 */
int vis_table_to_px(const struct vis_geometry *g, const struct machine *m, const double *xy_mm,
		    double *px, int n, bl_err *err);
int vis_px_to_table(const struct vis_geometry *g, const struct machine *m, const double *px,
		    double *xy_mm, int n, bl_err *err);

/*
 * The region of a frame showing a station's middle (a mixing cell or well
 * of m): a square about its centre reaching 0.45 of its radius each way, so
 * the rim and the wall stay out of it. At least 4 px wide.
 */
int vis_station_roi(const struct vis_geometry *g, const struct machine *m,
		    const struct machine_station *st, struct meas_roi *roi, bl_err *err);

/*
 * The light across the table. A camera profile is exact only for light as
 * bright as where its chart lay; a point lamp falls off across a table and
 * the lens vignettes, so a station far from there reads darker or lighter
 * than it is (on the example machine the mixing cells about 1 L darker, the
 * wells 2 to 5). The field is measured on two uniform surfaces, the bare
 * board around everything on the table and the bare canvas: their linear
 * luminance sampled on a grid of table points, fitted by one smooth quartic
 * surface over the table (the canvas's brightness against the board's fitted
 * with it), outliers dropped. Relative to a reference (the chart's patches
 * when the profile was made), it says how much more light falls on any point;
 * the board's samples in a later frame say how much the lamp itself changed.
 */
#define VIS_LIGHT_DEGREE 4
#define VIS_LIGHT_TERMS ((VIS_LIGHT_DEGREE + 1) * (VIS_LIGHT_DEGREE + 2) / 2)
#define VIS_LIGHT_MAX_SAMPLES 4096

struct vis_light {
	double c[VIS_LIGHT_TERMS];   /* luminance = sum c * terms(x, y), table mm normalised */
	double x0, y0, scale;        /* normalisation of table mm */
	double ref;                  /* the field at the reference (mean over its points) */
	int n_samples, n_used;       /* board and canvas samples taken, kept by the robust fit */
	double rms;                  /* relative rms of the kept samples about the fit */
	double min, max;             /* relative light over the kept samples */
	double canvas_ratio;         /* the bare canvas's brightness against the board's */
	double xy_mm[VIS_LIGHT_MAX_SAMPLES][2]; /* the samples, for measuring the lamp later */
	double luma[VIS_LIGHT_MAX_SAMPLES];     /* their luminance in the fitted frame (0: dropped) */
	unsigned char on_canvas[VIS_LIGHT_MAX_SAMPLES]; /* on the canvas, not the board */
};

/*
 * Fits the light field to a frame of the bare table: nothing on the board
 * but what the machine file places there (markers, stations, keep-out zones
 * and the canvas's edges are left out with a margin), the canvas unpainted
 * (paint on it is dropped as outliers), the arm out of view. Fails
 * with BL_EINVAL naming the frame when too little board is seen or the field
 * makes no sense (non-positive, more than four-fold across the table). The
 * reference is the mean over the board samples until vis_light_reference.
 */
int vis_light_fit(const struct img *bare, const char *name, const struct vis_geometry *g,
		  const struct machine *m, struct vis_light *l, bl_err *err);

/* Sets the reference: the mean field over n table points (mm, x, y interleaved). */
int vis_light_reference(struct vis_light *l, const double *xy_mm, int n, bl_err *err);

/* Light at table point (x, y) mm relative to the reference. */
double vis_light_at(const struct vis_light *l, double x_mm, double y_mm);

/*
 * How bright the lamp is in frame relative to the fitted frame: the median
 * ratio of the board samples' luminance (the geometry must be the frame's).
 */
int vis_light_lamp(const struct vis_light *l, const struct img *frame, const char *name,
		   const struct vis_geometry *g, const struct machine *m, double *ratio,
		   bl_err *err);

/* A station's colour, light-corrected. */
struct vis_station_meas {
	struct meas_swatch sw;       /* sw.lab corrected for light; sw.rgb_linear as recorded */
	struct meas_roi roi;
	double light;                /* the light divided out: field x lamp (1 without a field) */
	double lamp;                 /* the lamp against the fitted frame (1 without a field) */
	color_lab uncorrected;       /* the same region through the profile without correction */
};

/*
 * Measures a station in frame: its region (vis_station_roi), vision's robust
 * swatch mean, the light at the station divided out of the linear mean when
 * l is given (as the calibration divided it out of the chart's patches), and
 * Lab through the profile p. One call for every caller that measures a
 * mixing cell or well: the run engine and `mix trial`.
 */
int vis_measure_station(const struct img *frame, const char *name, const struct vis_geometry *g,
			const struct machine *m, const struct machine_station *st,
			const struct meas_profile *p, const struct vis_light *l,
			struct vis_station_meas *out, bl_err *err);

#endif

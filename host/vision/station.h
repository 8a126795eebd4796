/* station.h: the table's stations (mixing cells and paint wells) in a camera frame, and a station's colour measured there. */
#ifndef BL_VISION_STATION_H
#define BL_VISION_STATION_H

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
 * A station's colour in frame: its region (vis_station_roi), vision's robust
 * swatch mean, Lab through the camera profile p. The frame is measured as
 * given: when the machine has a light map (calibration.light_map) the caller
 * has divided it out of the whole frame first (vis_light_apply), as it does
 * for every frame it measures, so the profile holds at the station as it
 * held where the chart lay. One call for every caller that measures a mixing
 * cell or well: the run engine and `mix trial`.
 */
int vis_measure_station(const struct img *frame, const char *name, const struct vis_geometry *g,
			const struct machine *m, const struct machine_station *st,
			const struct meas_profile *p, struct meas_swatch *out, bl_err *err);

#endif

/* observe.h: the one observation pipeline: a camera frame, the machine and its calibration in, the calibrated Lab of the canvas (or a station) out. */
#ifndef BL_VISION_OBSERVE_H
#define BL_VISION_OBSERVE_H

#include "base/err.h"
#include "config/machine.h"
#include "vision/canvas.h"
#include "vision/image.h"
#include "vision/light.h"
#include "vision/measure.h"

/*
 * What a frame is measured through. Every caller that turns a frame into
 * colour (the run engine, `plan --correct`, `measure`, `mix trial`, the
 * benchmarks) fills one of these and calls the functions below, so they
 * all see the same colours for the same frame: the light map and the
 * lamp's drift divided out first, then the canvas located and rectified,
 * then Lab through the camera profile.
 */
struct vis_observer {
	const struct machine *m;
	const struct meas_profile *profile;  /* the camera profile (required) */
	const struct vis_light *light;       /* the light over the view, NULL: none */
	const struct vis_lamp *lamp;         /* the lamp followed from a reference frame, NULL: not */
	double lamp_now[3];                  /* the lamp's change in the last frame (vis_observe_light) */
	const struct vis_canvas *canvas;     /* where the canvas lies in the view, NULL: its markers */
	int use_markers;                     /* look for the corner markers (even with canvas set) */
	struct vis_markers markers;
	double px_per_mm;                    /* of the rectified canvas */
	/* What vis_observer_load opened (vis_observer_close frees it). */
	struct meas_profile *own_profile;
	struct vis_light own_light;
	struct vis_canvas own_canvas;
	int has_own_light;
};

/*
 * An observer with nothing loaded: profile p, no light map, no lamp, the
 * canvas from m's corner markers, VIS_DEFAULT_PX_PER_MM. m may be NULL for
 * a frame of no machine (a benchmark's): then set markers, and measure no
 * station.
 */
void vis_observer_init(struct vis_observer *o, const struct machine *m,
		       const struct meas_profile *p);

/*
 * An observer for machine m as a run measures through it: its camera
 * profile (sRGB when it names none), its light map and canvas file when it
 * names them, the corner markers beside the canvas file.
 */
int vis_observer_load(struct vis_observer *o, const struct machine *m, bl_err *err);
void vis_observer_close(struct vis_observer *o);

/*
 * Divides the light out of frame in place: the lamp's change since its
 * reference measured on the bare board (into o->lamp_now; BL_EIO when the
 * board cannot be read: the arm or something over it, take another frame),
 * then the map's light and the lamp's change in one pass. Nothing to do
 * without a map and a lamp.
 */
int vis_observe_light(struct vis_observer *o, struct img *frame, const char *name, bl_err *err);

/* Where the canvas lies in a frame: o->canvas, or the corner markers (vis_locate). */
int vis_observe_locate(const struct vis_observer *o, const struct img *frame, const char *name,
		       struct vis_geometry *g, bl_err *err);

/* The canvas seen: rectified at o->px_per_mm (rows along canvas y), and its Lab D50. */
struct vis_observation {
	int w, h;                            /* px */
	float *lab;                          /* w * h * 3 */
	struct img rect;                     /* the rectified frame, sRGB code values */
};
void vis_observation_free(struct vis_observation *ob);

/*
 * A frame with the light divided out (vis_observe_light) to the canvas's
 * Lab: rectified through g, or taken as it is when g is NULL (an image that
 * is already the rectified canvas).
 */
int vis_observe_raster(const struct vis_observer *o, const struct img *frame,
		       const struct vis_geometry *g, struct vis_observation *out, bl_err *err);

/*
 * The whole pipeline on a frame as the camera gave it: light (in place),
 * locate (into g, which may be NULL), raster.
 */
int vis_observe_canvas(struct vis_observer *o, struct img *frame, const char *name,
		       struct vis_geometry *g, struct vis_observation *out, bl_err *err);

/*
 * A station's colour (a mixing cell or well of o->m) in a frame with the
 * light divided out, located by g (vis_measure_station).
 */
int vis_observe_station(const struct vis_observer *o, const struct img *frame, const char *name,
			const struct vis_geometry *g, const struct machine_station *st,
			struct meas_swatch *out, bl_err *err);

#endif

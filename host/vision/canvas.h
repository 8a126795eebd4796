/* canvas.h: where the canvas lies in a camera frame (corner markers or the calibration's canvas file) and its rectification to a raster in mm. */
#ifndef BL_VISION_CANVAS_H
#define BL_VISION_CANVAS_H

#include "base/err.h"
#include "base/prov.h"
#include "config/machine.h"
#include "cv/cv.h"
#include "vision/image.h"

/*
 * The corner markers (docs/vision.md "Corner markers"): the one definition,
 * which the simulator draws and the detector looks for. One printed square
 * lies beside each canvas corner, on the table just outside the canvas so
 * paint never covers it: marker k is centred offset_mm outside canvas corner
 * k along both axes, at canvas (-o, -o), (W + o, -o), (W + o, H + o),
 * (-o, H + o) mm. Each is concentric squares of side S: ink out to S, paper
 * inside 2S/3 and, on marker 0 (the canvas origin) only, ink again inside
 * S/3, so which corner is which shows however the camera is turned; around
 * it a paper quiet zone S/6 wide keeps its outline apart from whatever it
 * lies on. S and o are the machine file's zones.canvas.markers.
 */
struct vis_markers {
	double canvas_mm[2];         /* the canvas W, H */
	double size_mm;              /* S, the ink square's side */
	double offset_mm;            /* o: centre outside its corner, along x and y */
};

/* The markers of machine m (zones.canvas.size_mm and zones.canvas.markers). */
void vis_markers_from_machine(const struct machine *m, struct vis_markers *mk);

/* Centre of marker id (0 at canvas (0, 0), then (W, 0), (W, H), (0, H)) in canvas mm. */
void vis_marker_centre(const struct vis_markers *mk, int id, double c[2]);

/* How far a marker's printed sheet reaches from its centre, quiet zone included: 2S/3 mm. */
double vis_marker_reach_mm(const struct vis_markers *mk);

/*
 * What marker id shows at (dx, dy) mm from its centre: -1 beyond its quiet
 * zone, 0 paper, 1 ink.
 */
int vis_marker_pattern(int id, double dx_mm, double dy_mm, double size_mm);

/* What the markers show at canvas point (x, y) mm: -1 outside them all, 0 paper, 1 ink. */
int vis_marker_at(const struct vis_markers *mk, double x_mm, double y_mm);

/* Default resolution of the rectified canvas raster. */
#define VIS_DEFAULT_PX_PER_MM 1.0

/*
 * The canvas geometry file (kind "canvas", version 1), written by calibration.
 * Corners are in the raw frame's pixels (pixel centres at integer
 * coordinates, origin at the top left pixel), in the order of the canvas
 * points (0, 0), (W, 0), (W, H), (0, H) mm.
 */
struct vis_canvas {
	int image_w, image_h;        /* px of the frames the corners refer to */
	double size_mm[2];           /* canvas width W and height H */
	double corners_px[8];        /* x, y interleaved */
	int has_camera;              /* intrinsics and distortion present */
	struct cv_camera camera;
	double error_mm;             /* calibration's reprojection error, -1 when not recorded */
	struct prov prov;            /* its "session": when, from what, its verdict */
};

/* The canvas format: version 2 added "session" (version 1 files read as made by an unknown session). */
extern const struct json_format vis_canvas_format;

/* Twice the signed area of a quad (x, y interleaved); positive when its corners run clockwise on screen (image y down). */
double vis_quad_area2(const double *p);

/* Loads a canvas file strictly (unknown keys, bad corners and degenerate shapes are errors naming the file). */
int vis_canvas_load(const char *path, struct vis_canvas *c, bl_err *err);

/*
 * Writes a canvas file atomically, its "session" from c->prov with the
 * writer's settings and figures (taken over; NULL: none).
 */
int vis_canvas_save(const char *path, const struct vis_canvas *c, cJSON *settings, cJSON *figures,
		    bl_err *err);

/* Sets defaults: no camera, no error recorded. */
void vis_canvas_init(struct vis_canvas *c);

enum vis_source { VIS_FROM_MARKERS, VIS_FROM_FILE };

/* The canvas found in one frame. */
struct vis_geometry {
	double H[9];                 /* canvas mm -> ideal (undistorted) image px */
	double size_mm[2];
	int has_camera;              /* when set, ideal px are distorted through camera to raw px */
	struct cv_camera camera;
	int source;                  /* enum vis_source */
	int markers_found;           /* markers seen in the frame, whichever source was used */
	double corners_px[8];        /* the canvas corners in raw px, order as in the file */
};

/*
 * Locates the canvas in frame: from the four corner markers when the frame
 * shows them (markers may be NULL: do not look), else from the canvas file
 * (file may be NULL). The canvas size is the markers' (the machine file's)
 * when they are found, else the file's. The markers are ordered from the
 * origin marker as a camera above the table sees them, in any rotation.
 * name is the frame's name for messages.
 */
int vis_locate(const struct img *frame, const char *name, const struct vis_canvas *file,
	       const struct vis_markers *markers, struct vis_geometry *g, bl_err *err);

/*
 * The canvas file against the corner markers frame shows: when all four are
 * in view (and ordered), every canvas corner the file gives within tol_mm
 * (VIS_CANVAS_CORNER_TOL_MM: `calib canvas --corners` and a run's first look) of
 * where the markers put it, else BL_EINVAL naming the frame, file_name (what
 * gave the corners), the corner, both places and the distance; the caller
 * says why that matters. *off_mm is the largest distance, -1 when the
 * markers cannot be seen (0 returned: nothing to check against).
 */
#define VIS_CANVAS_CORNER_TOL_MM 5.0

int vis_canvas_cross_check(const struct img *frame, const char *name, const char *file_name,
			   const struct vis_canvas *file, const struct vis_markers *markers, double tol_mm,
			   double *off_mm, bl_err *err);

/*
 * Rectifies the canvas to a raster of size_mm * px_per_mm pixels: raster
 * pixel (i, j) shows canvas point ((i + 0.5) / px_per_mm, (j + 0.5) / px_per_mm)
 * mm, so canvas x runs right and y down, as in a target image. Each raster
 * pixel averages the frame's pixels it covers (area shrink before the warp).
 */
int vis_rectify(const struct img *frame, const struct vis_geometry *g, double px_per_mm,
		struct img *out, bl_err *err);

#endif

/* canvas.h: where the canvas lies in a camera frame (corner markers or the calibration's canvas file) and its rectification to a raster in mm. */
#ifndef BL_VISION_CANVAS_H
#define BL_VISION_CANVAS_H

#include "base/err.h"
#include "cv/cv.h"
#include "vision/image.h"

/*
 * The corner markers (docs/vision.md): square finder patterns 7 modules of
 * 2 mm across (dark ring, light ring, dark 3x3 core), centred
 * VIS_MARKER_OFFSET_MM outside each canvas corner along both axes, i.e. at
 * canvas (-o, -o), (W + o, -o), (W + o, H + o), (-o, H + o) mm.
 */
#define VIS_MARKER_MODULE_MM 2.0
#define VIS_MARKER_SIDE_MM (7.0 * VIS_MARKER_MODULE_MM)
#define VIS_MARKER_OFFSET_MM 10.0

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
	double marker_offset_mm;     /* where the markers sit (default VIS_MARKER_OFFSET_MM) */
	double error_mm;             /* calibration's reprojection error, -1 when not recorded */
};

/* Loads a canvas file strictly (unknown keys, bad corners and degenerate shapes are errors naming the file). */
int vis_canvas_load(const char *path, struct vis_canvas *c, bl_err *err);

/* Writes a canvas file atomically. */
int vis_canvas_save(const char *path, const struct vis_canvas *c, bl_err *err);

/* Sets defaults: no camera, markers at VIS_MARKER_OFFSET_MM, no error recorded. */
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
 * shows them, else from the canvas file (file may be NULL). size_mm is the
 * canvas size to use with markers when there is no file (the machine file's
 * zones.canvas.size_mm). name is the frame's name for messages.
 */
int vis_locate(const struct img *frame, const char *name, const struct vis_canvas *file,
	       const double size_mm[2], struct vis_geometry *g, bl_err *err);

/*
 * Rectifies the canvas to a raster of size_mm * px_per_mm pixels: raster
 * pixel (i, j) shows canvas point ((i + 0.5) / px_per_mm, (j + 0.5) / px_per_mm)
 * mm, so canvas x runs right and y down, as in a target image. Each raster
 * pixel averages the frame's pixels it covers (area shrink before the warp).
 */
int vis_rectify(const struct img *frame, const struct vis_geometry *g, double px_per_mm,
		struct img *out, bl_err *err);

/*
 * What the corner markers show at canvas point (x, y) mm: -1 outside every
 * marker and its one-module light quiet zone, 0 light, 1 dark.
 */
int vis_marker_at(double x_mm, double y_mm, const double size_mm[2], double offset_mm);

/*
 * Draws the four corner markers for a canvas into a frame through H (canvas
 * mm -> image px), dark on whatever is there: for the simulator, tests and
 * benchmarks, which must show the camera what the markers look like.
 */
void vis_draw_markers(struct img *frame, const double H[9], const double size_mm[2],
		      double offset_mm);

#endif

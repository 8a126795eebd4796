/* calib_markers.h: sub-pixel refinement of vision's finder markers for the canvas and card sessions. */
#ifndef BL_CALIB_MARKERS_H
#define BL_CALIB_MARKERS_H

#include "base/err.h"
#include "vision/image.h"
#include "vision/measure.h"

/* A frame's linear luminance, for edge location. */
struct calib_lumplane {
	int w, h;
	float *px;
	double contrast;   /* least dark-to-light step an edge must show (linear luminance) */
};

int calib_lumplane_from(const struct img *im, struct calib_lumplane *l, bl_err *err);
void calib_lumplane_free(struct calib_lumplane *l);

/*
 * A marker's corners, refined: the four corners of each of its squares
 * (vision's design, host/vision/canvas.h: the ink square of side S, the paper
 * square inside it of 2S/3, and on an origin marker the ink core of S/3).
 */
struct calib_marker_fit {
	int n;
	double half_mm[12];   /* the half-side of the square each corner belongs to */
	double local[12][2];  /* mm from the marker's centre, on the marker's own axes as found */
	double px[12][2];     /* where they are in the frame */
	double H[9];          /* marker mm -> px */
	double centre[2];     /* px */
};

/*
 * Refines one marker of side size_mm (origin: it has the core) from its four
 * outer corners (clockwise on screen from the top left): each side of each
 * square is found along profiles where the luminance crosses halfway
 * between the bands on either side, fitted as a line, and the lines
 * intersected; twice, the second time along the refined geometry. 0 when
 * the marker cannot be read.
 */
int calib_marker_refine(const struct calib_lumplane *l, const double corners_px[8], double size_mm,
			int origin, struct calib_marker_fit *out);

#endif

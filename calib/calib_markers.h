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

/* A marker's corners, refined: up to 12 (the four corners of each of its three squares). */
struct calib_marker_fit {
	int n;
	double local[12][2];  /* in modules from the marker's centre, on the marker's own axes */
	double px[12][2];     /* where they are in the frame */
	double H[9];          /* marker modules -> px */
	double centre[2];     /* px */
};

/*
 * Refines one marker from its four outer corners (clockwise on screen from
 * the top left): each side of its three concentric squares is found along
 * profiles where the luminance crosses halfway between the bands on either
 * side, fitted as a line, and the lines intersected; twice, the second time
 * along the refined geometry. 0 when the marker cannot be read.
 */
int calib_marker_refine(const struct calib_lumplane *l, const double corners_px[8],
			struct calib_marker_fit *out);

#endif

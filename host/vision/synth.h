/* synth.h: a synthetic camera view of a canvas with its corner markers, for benchmarks, tests and as the reference picture of the markers. */
#ifndef BL_VISION_SYNTH_H
#define BL_VISION_SYNTH_H

#include "base/err.h"
#include "cv/cv.h"
#include "vision/image.h"

struct vis_synth {
	int w, h;                  /* frame size, px */
	double corners_px[8];      /* where canvas (0,0), (W,0), (W,H), (0,H) appear, ideal px */
	double size_mm[2];         /* canvas W, H */
	int markers;               /* draw the four corner markers (vision/canvas.h) */
	double marker_size_mm;     /* their side S, mm */
	double marker_offset_mm;   /* their centres outside each corner, mm */
	const struct cv_camera *camera; /* lens distortion of the rendering, NULL for none */
	unsigned char table[3];    /* colour around the paper */
	unsigned char paper[3];    /* the paper around the canvas, which carries the markers */
	double paper_margin_mm;    /* paper beyond each canvas edge */
	/* The canvas's colour at a point (mm); NULL paints it like the paper. */
	void (*paint)(void *ctx, double x_mm, double y_mm, unsigned char rgb[3]);
	void *ctx;
	double noise;              /* sensor noise, standard deviation in 8-bit codes */
	unsigned seed;
};

/* Renders the view (2x2 samples a pixel). */
int vis_synth_frame(const struct vis_synth *s, struct img *out, bl_err *err);

#endif

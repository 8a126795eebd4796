/* plan_image.h: the planner's pictures through vision: target files, observed canvases, the preview. */
#ifndef BL_PLAN_PLAN_IMAGE_H
#define BL_PLAN_PLAN_IMAGE_H

#include "plan/plan.h"

/* A target file decoded onto the planner's grid. */
struct plan_target {
	struct plan_raster lab; /* Lab on the planner's grid over the picture's rectangle */
	int w, h;               /* px of the picture as shown (EXIF orientation applied) */
	int orientation;        /* the JPEG's EXIF orientation (1..8; 0 none), already applied */
	char hash[17];          /* FNV-1a 64 of the file's bytes */
};

/* The planner's grid for a w x h px picture on machine m: its size in px and the picture's rectangle in canvas mm. */
void plan_grid_size(const struct machine *m, int w, int h, int *gw, int *gh, double image_mm[4]);

/*
 * Loads a JPEG or PNG target (8 or 16 bit, grey or colour, alpha over the
 * white canvas, an embedded ICC profile or PNG gAMA/cHRM honoured, turned as
 * its EXIF orientation says) within the machine's pixel
 * limit. Empty, corrupt, truncated, tiny (under PLAN_MIN_TARGET_PX) and huge
 * files are BL_EINVAL with a message naming the file.
 */
int plan_target_load(const char *path, const struct machine *m, struct plan_target *out,
		     bl_err *err);
void plan_target_free(struct plan_target *t);

/*
 * An observed canvas as Lab over the plan's picture rectangle: a camera frame
 * (the canvas located from its markers or the machine's canvas calibration,
 * then rectified), or with rectified set an image of the whole canvas alone.
 * Colour goes through the machine's camera profile (sRGB when it has none).
 */
int plan_observed_load(const char *path, const struct machine *m, const struct plan *p,
		       int rectified, struct plan_raster *out, bl_err *err);

/* Writes the target and the plan's predicted painting side by side (PNG or JPEG by extension). */
int plan_preview_save(const char *path, const struct plan *p, const struct machine *m,
		      const struct plan_raster *target, bl_err *err);

#endif

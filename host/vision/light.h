/* light.h: the light across a camera's view (a flat field), and dividing it out of frames so a camera profile made where the chart lay holds everywhere. */
#ifndef BL_VISION_LIGHT_H
#define BL_VISION_LIGHT_H

#include <cJSON.h>

#include "base/err.h"
#include "vision/image.h"

/*
 * A light map: over a grid of cells across a width x height frame, the light
 * falling there (with the lens's fall-off) relative to the light the camera
 * profile holds for (the chart's, where it lay): gain 1 there, 0.95 where a
 * white reads 5 % darker, 0 where the map does not know (outside the card).
 * Made by `brushloop calib camera --light-map` from a flat frame.
 */
struct vis_light {
	int width, height;   /* px of the frames it applies to */
	int cols, rows;
	float *gain;         /* cols * rows, row-major from the top left */
	char file[512];
};

/* Reads a light map file ({"kind": "light-map", "version": 1, ...}) strictly. */
int vis_light_load(const char *path, struct vis_light *l, bl_err *err);
/* Writes one (the JSON of vis_light_json). */
int vis_light_save(const char *path, const struct vis_light *l, bl_err *err);
cJSON *vis_light_json(const struct vis_light *l);
void vis_light_free(struct vis_light *l);

/* The gain at pixel (x, y), bilinear between cell centres over the cells the map knows (0: none). */
double vis_light_at(const struct vis_light *l, double x, double y);

/*
 * Divides the light out of im in place: each pixel's code values decoded as
 * sRGB (as the calibration session decodes the chart's), divided by the gain
 * there and encoded again; pixels the map does not cover are left as they
 * are. A frame of another size than the map's is an error naming both.
 */
int vis_light_apply(const struct vis_light *l, struct img *im, bl_err *err);

#endif

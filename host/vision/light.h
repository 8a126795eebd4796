/* light.h: the light across a camera's view (a flat field) and its change through a night (the lamp), divided out of frames so a camera profile made where the chart lay holds everywhere and all night. */
#ifndef BL_VISION_LIGHT_H
#define BL_VISION_LIGHT_H

#include <cJSON.h>

#include "base/err.h"
#include "base/prov.h"
#include "config/machine.h"
#include "vision/canvas.h"
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
	float *inv_gain;     /* 1 / the gain at every pixel (0 where unknown), made by vis_light_load; NULL: worked out per frame */
	struct prov prov;    /* its "session": when, from what, its verdict */
};

/* The light map format: version 2 added "session". */
extern const struct json_format vis_light_format;

/*
 * Reads a light map file ({"kind": "light-map", "version": 1, ...}) strictly,
 * with its per-pixel divisors (inv_gain) when its frames are at most
 * VIS_LIGHT_DIVISORS_MAX_PX: a map divides every frame of a run, so the
 * interpolation and the division are done once, not once a frame.
 */
#define VIS_LIGHT_DIVISORS_MAX_PX (3840L * 2160L)
int vis_light_load(const char *path, struct vis_light *l, bl_err *err);
/* Writes one, its "session" from l->prov with the writer's settings and figures (taken over; NULL: none). */
int vis_light_save(const char *path, const struct vis_light *l, cJSON *settings, cJSON *figures,
		   bl_err *err);
void vis_light_free(struct vis_light *l);

/* The gain at pixel (x, y), bilinear between cell centres over the cells the map knows (0: none). */
double vis_light_at(const struct vis_light *l, double x, double y);

/*
 * The lamp through a night. The map holds the light's shape across the view
 * when the camera was calibrated; a lamp dims and shifts colour slowly over
 * hours (the simulator's by 1 % an hour, warmer), which no profile made at
 * the start knows. The bare board around the canvas is never painted: its
 * linear R, G and B at fixed points of a frame, against the same points in a
 * reference frame taken when the profile still held (a run's first), say how
 * much the light has changed, channel by channel.
 */
#define VIS_LAMP_MAX_POINTS 400

struct vis_lamp {
	int width, height;                  /* px of the frames it applies to */
	int n;                              /* board points */
	float px[VIS_LAMP_MAX_POINTS][2];   /* their centres in the frame */
	float ref[VIS_LAMP_MAX_POINTS][3];  /* linear R, G, B there in the reference frame */
};

/*
 * Takes frame, as the camera gave it (the ratios are per point, so the map
 * cancels; every later frame must be taken the same way), as the reference:
 * points on a 20 mm grid of the table plane where m places nothing (not the
 * canvas, its markers, stations or keep-out zones, with a margin), seen in
 * the frame through geometry g, neither clipped nor black there. Fails when
 * fewer than 12 are seen: the lamp cannot be followed in this view.
 */
int vis_lamp_reference(struct vis_lamp *lp, const struct img *frame, const char *name,
		       const struct vis_geometry *g, const struct machine *m, bl_err *err);

/*
 * The light in frame against the reference, per channel: the median over the
 * board points of their ratios (so paint on the board, the arm or a shadow
 * over a few of them moves nothing). Fails when fewer than half the points
 * can be read, or the frame is of another size.
 */
int vis_lamp_ratio(const struct vis_lamp *lp, const struct img *frame, const char *name,
		   double ratio[3], bl_err *err);

/* The reference as JSON ({"kind": "lamp", "version": 1, ...}), and read back strictly. */
cJSON *vis_lamp_json(const struct vis_lamp *lp);
int vis_lamp_from_json(const cJSON *root, const char *name, struct vis_lamp *lp, bl_err *err);

/*
 * Divides the light out of im in place: each pixel's code values decoded as
 * sRGB (as the calibration session decodes the chart's), divided by the
 * map's gain there (l may be NULL: no map) and by the lamp's ratio for its
 * channel (lamp may be NULL: the light the map was made in), and encoded
 * again; pixels the map does not cover are left as they are. A frame of
 * another size than the map's is an error naming both.
 */
int vis_light_apply(const struct vis_light *l, const double lamp[3], struct img *im, bl_err *err);

#endif

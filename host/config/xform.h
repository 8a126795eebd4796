/* xform.h: the one canvas-to-machine transform, with distinct point types for canvas and machine coordinates, and the arm registration file (calibration.arm) it is loaded from. */
#ifndef BL_CONFIG_XFORM_H
#define BL_CONFIG_XFORM_H

#include <cJSON.h>

#include "base/err.h"
#include "base/json.h"
#include "base/prov.h"

/* A point on the canvas: mm from its origin corner (the marker with the dark core), along its edges. */
struct canvas_pt {
	double x, y;
};

/* A point on the table in the machine's axes, mm. */
struct machine_pt {
	double x, y;
};

/*
 * Canvas to machine by machine = A canvas + t (a[r] = { A[r][0], A[r][1], t[r] }),
 * and its inverse. Affine, so a straight segment maps to a straight segment
 * with the same parameter along it: a zone test may be made on either side.
 */
struct xform {
	double a[2][3];   /* canvas to machine */
	double inv[2][3]; /* machine to canvas */
	double scale;     /* machine mm per canvas mm: sqrt |det A| (1 for a placement) */
	int registered;   /* 1: from an arm registration; 0: the canvas placed square at its origin */
};

/*
 * The canvas with its origin corner at machine origin_mm and its x edge
 * turned rotation_deg counterclockwise from the machine's x axis (0: square
 * to the axes, what the machine file alone says).
 */
void xform_place(struct xform *x, const double origin_mm[2], double rotation_deg);

/*
 * A transform from its map rows (an arm registration's canvas_to_machine):
 * BL_EINVAL when the map is not a registration in mm (an axis scaled by less
 * than 0.5 or more than 2, or nearly singular).
 */
int xform_from_map(struct xform *x, const double a[2][3], bl_err *err);

struct machine_pt xform_to_machine(const struct xform *x, struct canvas_pt p);
struct canvas_pt xform_to_canvas(const struct xform *x, struct machine_pt p);

/* Whether two transforms are the same map (to 1e-9 mm over a metre). */
int xform_same(const struct xform *a, const struct xform *b);

/* A map as JSON rows [[a, b, t], [c, d, u]] under key, and back (strict; 1 when the key is absent). */
void xform_json_add(cJSON *o, const char *key, const struct xform *x);
int xform_json_read(json_obj *o, const char *key, int flags, struct xform *x, bl_err *err);

/* ---- the arm registration file ---- */

enum xform_model { XFORM_SIMILARITY, XFORM_AFFINE };
extern const char *const xform_model_names[]; /* "similarity", "affine", NULL */

#define XFORM_REG_MAX_POINTS 64
#define XFORM_MAX_ABS_MM 100000.0 /* no coordinate in a registration is beyond this */

/*
 * An arm registration as its file holds it (kind "arm-calibration", version
 * 1, docs/calibration.md): canvas (x, y) mm to machine (x, y) by the map, the
 * canvas surface's height z = z0 + zx x + zy y, and the touched points.
 */
struct xform_reg {
	int model;                     /* enum xform_model */
	double a[2][3];                /* canvas_to_machine */
	double z[3];                   /* surface_z: z0, zx, zy */
	double scale, rotation_deg;
	int mirrored;
	double rms_mm, max_mm, z_rms_mm;
	char created[32];              /* UTC, ISO 8601 */
	int n;
	double canvas_mm[XFORM_REG_MAX_POINTS][2];
	double arm_mm[XFORM_REG_MAX_POINTS][3];
	double residual_mm[XFORM_REG_MAX_POINTS];
	struct prov prov;              /* its "session": from which points, its verdict */
};

/* The arm registration's format: version 2 added "session". */
extern const struct json_format xform_reg_format;

/* Reads an arm registration strictly: every message names the file and key. */
int xform_reg_load(const char *path, struct xform_reg *r, bl_err *err);

#endif

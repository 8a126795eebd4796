/* xform.c: the canvas-to-machine transform (a placement or an arm registration), its inverse, and the strict reader of the arm registration file. */
#include "config/xform.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"

const char *const xform_model_names[] = { "similarity", "affine", NULL };

/* Fills the inverse and the scale; 0, or -1 when the map is (nearly) singular. */
static int invert(struct xform *x)
{
	const double(*a)[3] = x->a;
	double det = a[0][0] * a[1][1] - a[0][1] * a[1][0];

	if (!isfinite(det) || fabs(det) < 0.25)
		return -1;
	x->inv[0][0] = a[1][1] / det;
	x->inv[0][1] = -a[0][1] / det;
	x->inv[1][0] = -a[1][0] / det;
	x->inv[1][1] = a[0][0] / det;
	x->inv[0][2] = -(x->inv[0][0] * a[0][2] + x->inv[0][1] * a[1][2]);
	x->inv[1][2] = -(x->inv[1][0] * a[0][2] + x->inv[1][1] * a[1][2]);
	x->scale = sqrt(fabs(det));
	return 0;
}

void xform_place(struct xform *x, const double origin_mm[2], double rotation_deg)
{
	double t = rotation_deg * M_PI / 180.0, c = cos(t), s = sin(t);

	memset(x, 0, sizeof(*x));
	x->a[0][0] = c;
	x->a[0][1] = -s;
	x->a[0][2] = origin_mm[0];
	x->a[1][0] = s;
	x->a[1][1] = c;
	x->a[1][2] = origin_mm[1];
	(void)invert(x); /* a rotation is never singular */
}

int xform_from_map(struct xform *x, const double a[2][3], bl_err *err)
{
	double sx = hypot(a[0][0], a[1][0]), sy = hypot(a[0][1], a[1][1]);

	memset(x, 0, sizeof(*x));
	memcpy(x->a, a, sizeof(x->a));
	if (!(sx > 0.5 && sx < 2.0 && sy > 0.5 && sy < 2.0) || invert(x))
		return bl_fail(err, BL_EINVAL, "scales the canvas by %.3f x %.3f: not a registration "
			       "in mm", sx, sy);
	x->registered = 1;
	return 0;
}

struct machine_pt xform_to_machine(const struct xform *x, struct canvas_pt p)
{
	return (struct machine_pt){ x->a[0][0] * p.x + x->a[0][1] * p.y + x->a[0][2],
				    x->a[1][0] * p.x + x->a[1][1] * p.y + x->a[1][2] };
}

struct canvas_pt xform_to_canvas(const struct xform *x, struct machine_pt p)
{
	return (struct canvas_pt){ x->inv[0][0] * p.x + x->inv[0][1] * p.y + x->inv[0][2],
				   x->inv[1][0] * p.x + x->inv[1][1] * p.y + x->inv[1][2] };
}

int xform_same(const struct xform *a, const struct xform *b)
{
	for (int r = 0; r < 2; r++)
		for (int k = 0; k < 3; k++)
			if (fabs(a->a[r][k] - b->a[r][k]) > (k == 2 ? 1e-9 : 1e-12))
				return 0;
	return 1;
}

/* ---- the arm registration file ---- */

static int read_row3(json_obj *o, const char *key, const cJSON *arr, int row, double out[3],
		     bl_err *err)
{
	const cJSON *r = cJSON_GetArrayItem(arr, row), *it;
	int k = 0;

	if (!cJSON_IsArray(r) || cJSON_GetArraySize(r) != 3)
		return json_fail(o, key, err, BL_EINVAL, "must be two rows [a, b, t] of three numbers");
	cJSON_ArrayForEach(it, r) {
		if (!cJSON_IsNumber(it) || !isfinite(it->valuedouble) ||
		    fabs(it->valuedouble) > XFORM_MAX_ABS_MM)
			return json_fail(o, key, err, BL_EINVAL, "row %d: must be finite numbers within +-%g",
					 row, XFORM_MAX_ABS_MM);
		out[k++] = it->valuedouble;
	}
	return 0;
}

/* The rows [[a, b, t], [c, d, u]] of a map under key; 1 when an optional key is absent. */
static int read_rows(json_obj *o, const char *key, int flags, double a[2][3], bl_err *err)
{
	const cJSON *arr;
	size_t count;
	int rc = json_array(o, key, flags, 2, &arr, &count, err);

	if (rc)
		return rc;
	if (count != 2)
		return json_fail(o, key, err, BL_EINVAL, "must be two rows [a, b, t] of three numbers");
	BL_TRY(read_row3(o, key, arr, 0, a[0], err));
	return read_row3(o, key, arr, 1, a[1], err);
}

int xform_json_read(json_obj *o, const char *key, int flags, struct xform *x, bl_err *err)
{
	double a[2][3];
	int rc = read_rows(o, key, flags, a, err);

	if (rc)
		return rc;
	if (xform_from_map(x, a, err)) {
		char why[sizeof(err->msg)];

		snprintf(why, sizeof(why), "%s", err->msg);
		return json_fail(o, key, err, BL_EINVAL, "%s", why);
	}
	return 0;
}

void xform_json_add(cJSON *o, const char *key, const struct xform *x)
{
	cJSON *m = cJSON_AddArrayToObject(o, key);

	if (m) {
		cJSON_AddItemToArray(m, cJSON_CreateDoubleArray(x->a[0], 3));
		cJSON_AddItemToArray(m, cJSON_CreateDoubleArray(x->a[1], 3));
	}
}

/* The map's own consistency: a registration in mm, mirrored as it says, a similarity when it says so. */
static int check_map(json_obj *o, const struct xform_reg *c, bl_err *err)
{
	double det = c->a[0][0] * c->a[1][1] - c->a[0][1] * c->a[1][0], sx = hypot(c->a[0][0], c->a[1][0]);

	if ((det < 0) != (c->mirrored != 0))
		return json_fail(o, "mirrored", err, BL_EINVAL, "%s, but the map %s",
				 c->mirrored ? "true" : "false", det < 0 ? "mirrors" : "does not mirror");
	if (c->model == XFORM_SIMILARITY &&
	    (fabs(c->a[0][0] - (det < 0 ? -1 : 1) * c->a[1][1]) > 1e-6 * (1 + sx) ||
	     fabs(c->a[0][1] + (det < 0 ? -1 : 1) * c->a[1][0]) > 1e-6 * (1 + sx)))
		return json_fail(o, "canvas_to_machine", err, BL_EINVAL,
				 "is not a similarity (rotation and uniform scale)");
	return 0;
}

static int read_points(json_obj *o, const cJSON *arr, struct xform_reg *c, bl_err *err)
{
	const cJSON *it;
	json_obj po;
	size_t i = 0;

	cJSON_ArrayForEach(it, arr) {
		BL_TRY(json_item_obj(o, "points", it, i, &po, err));
		BL_TRY(json_vec(&po, "canvas_mm", JSON_REQUIRED, 2, -XFORM_MAX_ABS_MM, XFORM_MAX_ABS_MM,
				c->canvas_mm[i], err));
		BL_TRY(json_vec(&po, "arm_mm", JSON_REQUIRED, 3, -XFORM_MAX_ABS_MM, XFORM_MAX_ABS_MM,
				c->arm_mm[i], err));
		BL_TRY(json_num(&po, "residual_mm", JSON_REQUIRED, 0, 1000, &c->residual_mm[i], err));
		BL_TRY(json_end(&po, err));
		i++;
	}
	c->n = (int)i;
	return 0;
}

static const json_migrate_fn reg_steps[] = { prov_migrate_add };
const struct json_format xform_reg_format = { "arm-calibration", 2, 1, reg_steps };

static int read_reg(json_obj *o, struct xform_reg *c, bl_err *err)
{
	const cJSON *arr;
	size_t count;

	BL_TRY(prov_read(o, &c->prov, err));
	BL_TRY(json_str(o, "created", JSON_REQUIRED, c->created, sizeof(c->created), err));
	BL_TRY(json_enum(o, "model", JSON_REQUIRED, xform_model_names, &c->model, err));
	{
		struct xform x;

		/* The same reader a plan's copy of the map goes through. */
		BL_TRY(xform_json_read(o, "canvas_to_machine", JSON_REQUIRED, &x, err));
		memcpy(c->a, x.a, sizeof(c->a));
	}
	BL_TRY(json_vec(o, "surface_z", JSON_REQUIRED, 3, -XFORM_MAX_ABS_MM, XFORM_MAX_ABS_MM, c->z, err));
	BL_TRY(json_num(o, "scale", JSON_REQUIRED, 0.5, 2.0, &c->scale, err));
	BL_TRY(json_num(o, "rotation_deg", JSON_REQUIRED, -180, 180, &c->rotation_deg, err));
	BL_TRY(json_bool(o, "mirrored", JSON_REQUIRED, &c->mirrored, err));
	BL_TRY(json_num(o, "rms_mm", JSON_REQUIRED, 0, 1000, &c->rms_mm, err));
	BL_TRY(json_num(o, "max_mm", JSON_REQUIRED, 0, 1000, &c->max_mm, err));
	BL_TRY(json_num(o, "z_rms_mm", JSON_REQUIRED, 0, 1000, &c->z_rms_mm, err));
	BL_TRY(json_array(o, "points", JSON_REQUIRED, XFORM_REG_MAX_POINTS, &arr, &count, err));
	BL_TRY(check_map(o, c, err));
	if (count < 4)
		return json_fail(o, "points", err, BL_EINVAL, "%zu points; a registration has at least 4",
				 count);
	BL_TRY(read_points(o, arr, c, err));
	return json_end(o, err);
}

int xform_reg_load(const char *path, struct xform_reg *c, bl_err *err)
{
	cJSON *root;
	json_obj o;
	int rc;

	memset(c, 0, sizeof(*c));
	rc = json_parse_file(path, &root, err);
	if (rc)
		return rc;
	rc = json_format_open(root, path, &xform_reg_format, NULL, &o, err);
	if (rc == 0)
		rc = read_reg(&o, c, err);
	cJSON_Delete(root);
	return rc < 0 ? rc : 0;
}

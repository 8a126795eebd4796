/* action.c: parsing and printing typed actions, strictly, so a malformed request never reaches the gate as something else. */
#include "arm/action.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"

const char *const arm_kind_names[] = {
#define ARM_KIND(ID, name) [ARM_##ID] = name,
#include "config/action_kinds.def"
#undef ARM_KIND
	NULL
};
const char *const arm_zone_names[] = { "travel", "canvas", "well", "cell", "water", "wipe", NULL };

_Static_assert(sizeof(arm_kind_names) / sizeof(arm_kind_names[0]) == ARM_KIND_COUNT + 1,
	       "a name for every arm kind");

#define ZB(z) (1u << (z))

/* What each kind is, in enum arm_kind's order. */
static const struct arm_kind_info {
	unsigned zones; /* entered when the action declares none (0: it must declare them) */
	int once;       /* may not be sent again after an error that may have come after it began */
} kinds[] = {
	/* home */ { ZB(ARM_ZONE_TRAVEL), 0 },
	/* move */ { 0, 0 },
	/* jog */ { 0, 0 },
	/* stroke: a second one is a second coat of paint */
	{ ZB(ARM_ZONE_TRAVEL) | ZB(ARM_ZONE_CANVAS), 1 },
	/* dip */ { ZB(ARM_ZONE_TRAVEL) | ZB(ARM_ZONE_WELL), 0 },
	/* dispense: a second one is paint the mix did not ask for */
	{ ZB(ARM_ZONE_TRAVEL) | ZB(ARM_ZONE_WELL) | ZB(ARM_ZONE_CELL), 1 },
	/* stir */ { ZB(ARM_ZONE_TRAVEL) | ZB(ARM_ZONE_CELL), 0 },
	/* wipe */ { ZB(ARM_ZONE_TRAVEL) | ZB(ARM_ZONE_WIPE), 0 },
	/* wash */ { ZB(ARM_ZONE_TRAVEL) | ZB(ARM_ZONE_WATER), 0 },
	/* park */ { ZB(ARM_ZONE_TRAVEL), 0 },
};

_Static_assert(sizeof(kinds) / sizeof(kinds[0]) == ARM_KIND_COUNT, "a row for every arm kind");

unsigned arm_default_zones(enum arm_kind kind)
{
	return (unsigned)kind < ARM_KIND_COUNT ? kinds[kind].zones : 0;
}

int arm_kind_repeatable(enum arm_kind kind)
{
	/* A kind nobody knows is never sent again. */
	return (unsigned)kind < ARM_KIND_COUNT && !kinds[kind].once;
}

static int read_point(json_obj *o, const char *key, int flags, arm_point *p, bl_err *err)
{
	double v[3];
	int rc = json_vec(o, key, flags, 3, -ARM_MAX_COORD_MM, ARM_MAX_COORD_MM, v, err);

	if (rc == 0) {
		p->x = v[0];
		p->y = v[1];
		p->z = v[2];
	}
	return rc;
}

static int read_zones(json_obj *o, struct arm_action *a, bl_err *err)
{
	const cJSON *arr, *it;
	size_t n, i = 0;
	int rc = json_array(o, "zones", JSON_OPTIONAL, ARM_ZONE_COUNT, &arr, &n, err);

	if (rc < 0)
		return rc;
	if (rc == 1) {
		a->zones = arm_default_zones(a->kind);
		if (!a->zones)
			return json_fail(o, "zones", err, BL_EINVAL,
					 "missing: a %s must declare the zones it enters",
					 arm_kind_names[a->kind]);
		return 1; /* defaulted: a dip into a mixing cell adjusts them */
	}
	a->zones = 0;
	cJSON_ArrayForEach(it, arr) {
		char key[32];
		int z = -1;

		snprintf(key, sizeof(key), "zones[%zu]", i++);
		if (cJSON_IsString(it))
			for (int k = 0; arm_zone_names[k]; k++)
				if (strcmp(it->valuestring, arm_zone_names[k]) == 0)
					z = k;
		if (z < 0)
			return json_fail(o, key, err, BL_EINVAL,
					 "must be one of: travel, canvas, well, cell, water, wipe");
		a->zones |= ZB(z);
	}
	return 0;
}

static int read_bounds(json_obj *o, struct arm_action *a, bl_err *err)
{
	json_obj b;
	int rc = json_child(o, "bounds_mm", JSON_OPTIONAL, &b, err);

	if (rc)
		return rc;
	BL_TRY(read_point(&b, "min", JSON_REQUIRED, &a->bounds_min, err));
	BL_TRY(read_point(&b, "max", JSON_REQUIRED, &a->bounds_max, err));
	if (a->bounds_min.x > a->bounds_max.x || a->bounds_min.y > a->bounds_max.y ||
	    a->bounds_min.z > a->bounds_max.z)
		return json_fail(&b, "max", err, BL_EINVAL, "lies below min on some axis");
	a->has_bounds = 1;
	return json_end(&b, err);
}

/* Refuses point i (coordinate k, or -1 for the point as a whole): its key path is written only now. */
static int point_fail(json_obj *o, size_t i, int k, const char *why, bl_err *err)
{
	char key[48];

	if (k < 0)
		snprintf(key, sizeof(key), "points_mm[%zu]", i);
	else
		snprintf(key, sizeof(key), "points_mm[%zu][%d]", i, k);
	return json_fail(o, key, err, BL_EINVAL, "%s", why);
}

/*
 * A stroke's polyline. It may hold ARM_MAX_POINTS points, each read on the
 * gate's path: nothing is formatted or allocated per point unless the point
 * is refused.
 */
static int read_points(json_obj *o, struct arm_action *a, bl_err *err)
{
	const cJSON *arr, *it;
	size_t n, i = 0;

	/* Counted before anything is allocated: a million points is refused, not stored. */
	BL_TRY(json_array(o, "points_mm", JSON_REQUIRED, ARM_MAX_POINTS, &arr, &n, err));
	if (n < 2)
		return json_fail(o, "points_mm", err, BL_EINVAL, "a stroke needs at least 2 points");
	a->points = calloc(n, sizeof(*a->points));
	if (!a->points)
		return json_fail(o, "points_mm", err, BL_ENOMEM, "out of memory");
	a->n_points = n;
	cJSON_ArrayForEach(it, arr) {
		double v[3];
		int k = 0;
		const cJSON *c;

		if (!cJSON_IsArray(it) || cJSON_GetArraySize(it) != 3)
			return point_fail(o, i, -1, "must be [x, y, z] in mm", err);
		cJSON_ArrayForEach(c, it) {
			if (!cJSON_IsNumber(c) || !isfinite(c->valuedouble))
				return point_fail(o, i, k, "must be a finite number", err);
			if (fabs(c->valuedouble) > ARM_MAX_COORD_MM) {
				char why[64];

				snprintf(why, sizeof(why), "%g mm is absurd", c->valuedouble);
				return point_fail(o, i, k, why, err);
			}
			v[k++] = c->valuedouble;
		}
		a->points[i].x = v[0];
		a->points[i].y = v[1];
		a->points[i].z = v[2];
		i++;
	}
	return 0;
}

static int parse_fields(json_obj *o, struct arm_action *a, bl_err *err)
{
	long long id = -1;
	int kind, rc, zones_defaulted;

	BL_TRY(json_enum(o, "type", JSON_REQUIRED, arm_kind_names, &kind, err));
	a->kind = (enum arm_kind)kind;
	rc = json_int(o, "id", JSON_OPTIONAL, 0, ARM_MAX_ID, &id, err);
	if (rc < 0)
		return rc;
	a->id = (long)id;
	BL_TRY(json_num(o, "speed_mm_s", JSON_REQUIRED, 0.0, ARM_MAX_SPEED_MM_S, &a->speed_mm_s, err));
	if (a->speed_mm_s < ARM_MIN_SPEED_MM_S)
		return json_fail(o, "speed_mm_s", err, BL_EINVAL, "must be at least %g mm/s, not %g",
				 ARM_MIN_SPEED_MM_S, a->speed_mm_s);
	zones_defaulted = read_zones(o, a, err);
	if (zones_defaulted < 0)
		return zones_defaulted;
	BL_TRY(read_bounds(o, a, err));

	switch (a->kind) {
	case ARM_MOVE:
		BL_TRY(read_point(o, "to_mm", JSON_REQUIRED, &a->target, err));
		BL_TRY(json_bool(o, "override_limits", JSON_OPTIONAL, &a->override_limits, err));
		break;
	case ARM_JOG:
		BL_TRY(read_point(o, "delta_mm", JSON_REQUIRED, &a->target, err));
		BL_TRY(json_bool(o, "override_limits", JSON_OPTIONAL, &a->override_limits, err));
		break;
	case ARM_STROKE:
		BL_TRY(json_str(o, "brush", JSON_REQUIRED, a->brush, sizeof(a->brush), err));
		BL_TRY(read_points(o, a, err));
		break;
	case ARM_DIP:
		/* A brush loads from a paint well, or from a mixing cell holding a mixed colour. */
		BL_TRY(json_str(o, "brush", JSON_REQUIRED, a->brush, sizeof(a->brush), err));
		BL_TRY(json_str(o, "well", JSON_OPTIONAL, a->well, sizeof(a->well), err));
		BL_TRY(json_str(o, "cell", JSON_OPTIONAL, a->cell, sizeof(a->cell), err));
		if (!a->well[0] == !a->cell[0])
			return json_fail(o, "well", err, BL_EINVAL,
					 "a dip names exactly one of \"well\" and \"cell\"");
		if (a->cell[0] && zones_defaulted)
			a->zones = ZB(ARM_ZONE_TRAVEL) | ZB(ARM_ZONE_CELL);
		BL_TRY(json_num(o, "depth_mm", JSON_REQUIRED, 0.0, 1000.0, &a->depth_mm, err));
		break;
	case ARM_DISPENSE:
		BL_TRY(json_str(o, "well", JSON_REQUIRED, a->well, sizeof(a->well), err));
		BL_TRY(json_str(o, "cell", JSON_REQUIRED, a->cell, sizeof(a->cell), err));
		BL_TRY(json_i32(o, "units", JSON_REQUIRED, 1, ARM_MAX_UNITS, &a->units, err));
		break;
	case ARM_STIR:
		BL_TRY(json_str(o, "cell", JSON_REQUIRED, a->cell, sizeof(a->cell), err));
		BL_TRY(json_num(o, "depth_mm", JSON_REQUIRED, 0.0, 1000.0, &a->depth_mm, err));
		BL_TRY(json_i32(o, "ms", JSON_REQUIRED, 1, ARM_MAX_MS, &a->duration_ms, err));
		break;
	case ARM_WASH:
		BL_TRY(json_i32(o, "ms", JSON_REQUIRED, 1, ARM_MAX_MS, &a->duration_ms, err));
		break;
	case ARM_HOME:
	case ARM_WIPE:
	case ARM_PARK:
	case ARM_KIND_COUNT:
		break;
	}
	return json_end(o, err);
}

int arm_action_parse(const cJSON *item, const char *file, size_t index, struct arm_action *out,
		     bl_err *err)
{
	char path[48];
	json_obj o;
	int rc;

	memset(out, 0, sizeof(*out));
	out->id = -1;
	snprintf(path, sizeof(path), "actions[%zu]", index);
	rc = json_obj_open(item, file, path, &o, err);
	if (rc == 0)
		rc = parse_fields(&o, out, err);
	if (rc)
		arm_action_release(out);
	return rc;
}

void arm_action_release(struct arm_action *a)
{
	free(a->points);
	a->points = NULL;
	a->n_points = 0;
}

static void add_point(cJSON *o, const char *key, const arm_point *p)
{
	const double v[3] = { p->x, p->y, p->z };

	json_add_vec(o, key, v, 3);
}

cJSON *arm_action_to_json(const struct arm_action *a)
{
	cJSON *o = cJSON_CreateObject(), *zones;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "type", arm_kind_names[a->kind]);
	if (a->id >= 0)
		cJSON_AddNumberToObject(o, "id", (double)a->id);
	cJSON_AddNumberToObject(o, "speed_mm_s", a->speed_mm_s);
	zones = cJSON_AddArrayToObject(o, "zones");
	for (int z = 0; z < ARM_ZONE_COUNT; z++)
		if (a->zones & ZB(z))
			cJSON_AddItemToArray(zones, cJSON_CreateString(arm_zone_names[z]));
	if (a->has_bounds) {
		cJSON *b = cJSON_AddObjectToObject(o, "bounds_mm");

		add_point(b, "min", &a->bounds_min);
		add_point(b, "max", &a->bounds_max);
	}
	switch (a->kind) {
	case ARM_MOVE:
	case ARM_JOG:
		add_point(o, a->kind == ARM_MOVE ? "to_mm" : "delta_mm", &a->target);
		if (a->override_limits)
			cJSON_AddBoolToObject(o, "override_limits", 1);
		break;
	case ARM_STROKE: {
		cJSON *pts;

		cJSON_AddStringToObject(o, "brush", a->brush);
		pts = cJSON_AddArrayToObject(o, "points_mm");
		for (size_t i = 0; i < a->n_points; i++) {
			const double v[3] = { a->points[i].x, a->points[i].y, a->points[i].z };

			cJSON_AddItemToArray(pts, cJSON_CreateDoubleArray(v, 3));
		}
		break;
	}
	case ARM_DIP:
		cJSON_AddStringToObject(o, "brush", a->brush);
		if (a->cell[0])
			cJSON_AddStringToObject(o, "cell", a->cell);
		else
			cJSON_AddStringToObject(o, "well", a->well);
		cJSON_AddNumberToObject(o, "depth_mm", a->depth_mm);
		break;
	case ARM_DISPENSE:
		cJSON_AddStringToObject(o, "well", a->well);
		cJSON_AddStringToObject(o, "cell", a->cell);
		cJSON_AddNumberToObject(o, "units", a->units);
		break;
	case ARM_STIR:
		cJSON_AddStringToObject(o, "cell", a->cell);
		cJSON_AddNumberToObject(o, "depth_mm", a->depth_mm);
		cJSON_AddNumberToObject(o, "ms", a->duration_ms);
		break;
	case ARM_WASH:
		cJSON_AddNumberToObject(o, "ms", a->duration_ms);
		break;
	case ARM_HOME:
	case ARM_WIPE:
	case ARM_PARK:
	case ARM_KIND_COUNT:
		break;
	}
	return o;
}

int arm_actions_load(const char *path, struct arm_action_list *out, bl_err *err)
{
	const cJSON *arr, *it;
	cJSON *doc;
	json_obj root;
	size_t n, i = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = json_parse_file(path, &doc, err);
	if (rc)
		return rc;
	rc = json_obj_open(doc, path, "", &root, err);
	if (rc)
		goto out_doc;
	rc = json_kind(&root, "actions", 1, err);
	if (rc)
		goto out_doc;
	rc = json_array(&root, "actions", JSON_REQUIRED, 1000000, &arr, &n, err);
	if (rc)
		goto out_doc;
	rc = json_end(&root, err);
	if (rc)
		goto out_doc;
	out->items = calloc(n ? n : 1, sizeof(*out->items));
	if (!out->items) {
		rc = bl_fail(err, BL_ENOMEM, "%s: out of memory", path);
		goto out_doc;
	}
	cJSON_ArrayForEach(it, arr) {
		rc = arm_action_parse(it, path, i, &out->items[i], err);
		if (rc)
			goto out_list;
		out->n = ++i;
	}
	cJSON_Delete(doc);
	return 0;

out_list:
	arm_actions_free(out);
out_doc:
	cJSON_Delete(doc);
	return rc;
}

void arm_actions_free(struct arm_action_list *l)
{
	for (size_t i = 0; i < l->n; i++)
		arm_action_release(&l->items[i]);
	free(l->items);
	l->items = NULL;
	l->n = 0;
}

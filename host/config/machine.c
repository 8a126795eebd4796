/* machine.c: loading and strict validation of the machine file (schema v1). */
#include "config/machine.h"

#include <float.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arm/action.h"
#include "base/json.h"
#include "base/strbuf.h"
#include "config/machine_conn.h"
#include "config/machine_int.h"

const char *const machine_arm_backend_names[MACHINE_ARM_COUNT + 1] = {
#define BL_SIM_BACKEND(ID, name) [MACHINE_ARM_##ID] = name,
#define BL_ARM_BACKEND(ID, name, load_connection, open) [MACHINE_ARM_##ID] = name,
#include "config/backends.def"
#undef BL_SIM_BACKEND
#undef BL_ARM_BACKEND
	NULL
};
const char *const machine_cam_backend_names[MACHINE_CAM_COUNT + 1] = {
#define BL_SIM_BACKEND(ID, name) [MACHINE_CAM_##ID] = name,
#define BL_CAM_BACKEND(ID, name, open) [MACHINE_CAM_##ID] = name,
#include "config/backends.def"
#undef BL_SIM_BACKEND
#undef BL_CAM_BACKEND
	NULL
};
const char *const machine_kin_type_names[] = { "cartesian", "scara", NULL };
const char *const machine_sim_light_names[] = { "led", "d50", "d65", "tungsten", NULL };
static const char *const parity_names[] = { "none", "even", "odd", NULL };


int machine_conn_link(json_obj *o, struct machine_connection *c, enum machine_link link,
		      const char *backend, bl_err *err)
{
	c->baud = 115200;
	c->parity = MACHINE_PARITY_NONE;
	c->timeout_ms = 200;
	BL_TRY(json_str(o, "port", JSON_OPTIONAL, c->port, sizeof(c->port), err));
	BL_TRY(json_str(o, "host", JSON_OPTIONAL, c->host, sizeof(c->host), err));
	if (!c->port[0] && !c->host[0])
		return json_fail(o, NULL, err, BL_EINVAL, "needs \"port\" or \"host\"");
	if (c->port[0] && c->host[0])
		return json_fail(o, "host", err, BL_EINVAL, "give \"port\" or \"host\", not both");
	if (c->host[0] && link == MACHINE_LINK_SERIAL)
		return json_fail(o, "host", err, BL_EINVAL,
				 "the %s backend speaks over a serial port only", backend);
	if (c->host[0] && !strchr(c->host, ':'))
		return json_fail(o, "host", err, BL_EINVAL, "write it as host:port");
	BL_TRY(json_i32(o, "baud", JSON_OPTIONAL, 1200, 4000000, &c->baud, err));
	BL_TRY(json_enum(o, "parity", JSON_OPTIONAL, parity_names, &c->parity, err));
	return json_i32(o, "timeout_ms", JSON_OPTIONAL, 10, 60000, &c->timeout_ms, err);
}

/* The connection parser of each hardware arm backend (config/backends.def); the simulator has none. */
static int (*const load_connections[MACHINE_ARM_COUNT])(json_obj *o, struct machine_connection *c,
							 bl_err *err) = {
#define BL_ARM_BACKEND(ID, name, load_connection, open) [MACHINE_ARM_##ID] = load_connection,
#include "config/backends.def"
#undef BL_ARM_BACKEND
};

static int load_connection(json_obj *root, struct machine *m, bl_err *err)
{
	int (*load)(json_obj *, struct machine_connection *, bl_err *) =
		load_connections[m->arm_backend];
	json_obj o;
	int rc;

	rc = json_child(root, "connection", JSON_OPTIONAL, &o, err);
	if (rc < 0)
		return rc;
	if (!load) {
		if (rc == 0)
			return json_fail(root, "connection", err, BL_EINVAL,
					 "the %s backend has no connection; remove this key",
					 machine_arm_backend_names[m->arm_backend]);
		return 0;
	}
	if (rc == 1)
		return json_fail(root, "connection", err, BL_EINVAL,
				 "missing: the %s backend needs a port or a host",
				 machine_arm_backend_names[m->arm_backend]);
	return load(&o, &m->connection, err);
}

static int load_range(json_obj *o, const char *key, double lo, double hi, double out[2],
		      bl_err *err)
{
	BL_TRY(json_vec(o, key, JSON_REQUIRED, 2, lo, hi, out, err));
	if (out[0] >= out[1])
		return json_fail(o, key, err, BL_EINVAL, "minimum %g must be below maximum %g",
				 out[0], out[1]);
	return 0;
}

static int load_kinematics(json_obj *root, struct machine *m, bl_err *err)
{
	struct machine_kinematics *k = &m->kin;
	static const char *const elbows[] = { "left", "right", NULL };
	json_obj o;

	BL_TRY(json_child(root, "kinematics", JSON_REQUIRED, &o, err));
	BL_TRY(json_enum(&o, "type", JSON_REQUIRED, machine_kin_type_names, &k->type, err));
	if (k->type == MACHINE_KIN_SCARA) {
		BL_TRY(json_vec(&o, "base_mm", JSON_REQUIRED, 2, -MACHINE_COORD_MAX_MM, MACHINE_COORD_MAX_MM,
			     k->base_mm, err));
		BL_TRY(json_num(&o, "l1_mm", JSON_REQUIRED, 1.0, 5000.0, &k->l1_mm, err));
		BL_TRY(json_num(&o, "l2_mm", JSON_REQUIRED, 1.0, 5000.0, &k->l2_mm, err));
		BL_TRY(load_range(&o, "j1_deg", -360.0, 360.0, k->j1_deg, err));
		BL_TRY(load_range(&o, "j2_deg", -360.0, 360.0, k->j2_deg, err));
		BL_TRY(load_range(&o, "j4_deg", -720.0, 720.0, k->j4_deg, err));
		BL_TRY(json_enum(&o, "elbow", JSON_REQUIRED, elbows, &k->elbow_right, err));
	}
	return json_end(&o, err);
}

static int in_box2(const double p[2], const double lo[3], const double hi[3])
{
	return p[0] >= lo[0] && p[0] <= hi[0] && p[1] >= lo[1] && p[1] <= hi[1];
}

static int check_point_in_work(json_obj *o, const char *key, const struct machine *m,
			       const double p[3], bl_err *err)
{
	for (int i = 0; i < 3; i++)
		if (p[i] < m->work_min_mm[i] || p[i] > m->work_max_mm[i])
			return json_fail(o, key, err, BL_EINVAL,
					 "(%g, %g, %g) lies outside work_area", p[0], p[1], p[2]);
	return 0;
}

static int load_station(json_obj *o, struct machine_station *s, const struct machine *m,
			int named, int has_depth, int has_capacity, bl_err *err)
{
	double p[3];

	if (named)
		BL_TRY(json_str(o, "name", JSON_REQUIRED, s->name, sizeof(s->name), err));
	BL_TRY(json_vec(o, "center_mm", JSON_REQUIRED, 2, -MACHINE_COORD_MAX_MM, MACHINE_COORD_MAX_MM, s->center_mm,
		     err));
	BL_TRY(json_num(o, "radius_mm", JSON_REQUIRED, 1.0, 500.0, &s->radius_mm, err));
	BL_TRY(json_num(o, "surface_z_mm", JSON_REQUIRED, -MACHINE_COORD_MAX_MM, MACHINE_COORD_MAX_MM,
		     &s->surface_z_mm, err));
	if (has_depth)
		BL_TRY(json_num(o, "depth_mm", JSON_REQUIRED, 0.0, 200.0, &s->depth_mm, err));
	if (has_capacity)
		BL_TRY(json_num(o, "capacity_ml", JSON_REQUIRED, 0.01, 10000.0, &s->capacity_ml, err));
	p[0] = s->center_mm[0];
	p[1] = s->center_mm[1];
	p[2] = s->surface_z_mm;
	BL_TRY(check_point_in_work(o, "center_mm", m, p, err));
	return json_end(o, err);
}

static int load_station_list(json_obj *zones, const char *key, struct machine_station *list,
			     int max, int *count, const struct machine *m, bl_err *err)
{
	const cJSON *arr, *it;
	size_t n, i = 0;

	BL_TRY(json_array(zones, key, JSON_REQUIRED, (size_t)max, &arr, &n, err));
	if (n == 0)
		return json_fail(zones, key, err, BL_EINVAL, "needs at least one entry");
	cJSON_ArrayForEach(it, arr) {
		json_obj o;

		BL_TRY(json_item_obj(zones, key, it, i, &o, err));
		BL_TRY(load_station(&o, &list[i], m, 1, 1, 1, err));
		i++;
	}
	*count = (int)n;
	return 0;
}

static int in_box3(const double p[3], const double lo[3], const double hi[3])
{
	return in_box2(p, lo, hi) && p[2] >= lo[2] && p[2] <= hi[2];
}

/* A keep-out box the arm could never leave or never reach home past makes a machine that cannot move. */
static int check_keep_out(json_obj *o, const struct machine *m, const struct machine_box *b,
			  bl_err *err)
{
	if (in_box3(m->work_min_mm, b->min_mm, b->max_mm) &&
	    in_box3(m->work_max_mm, b->min_mm, b->max_mm))
		return json_fail(o, "max_mm", err, BL_EINVAL,
				 "the box covers the whole work_area: the arm could go nowhere");
	if (in_box3(m->home_mm, b->min_mm, b->max_mm))
		return json_fail(o, "max_mm", err, BL_EINVAL, "the box holds arm.home_mm (%g, %g, %g)",
				 m->home_mm[0], m->home_mm[1], m->home_mm[2]);
	if (in_box3(m->park_mm, b->min_mm, b->max_mm))
		return json_fail(o, "max_mm", err, BL_EINVAL,
				 "the box holds zones.park.pose_mm (%g, %g, %g)", m->park_mm[0],
				 m->park_mm[1], m->park_mm[2]);
	return 0;
}

/*
 * The corner markers beside the canvas (their pattern: vision/canvas.h). The
 * printed sheet reaches 2/3 of the side from the centre, quiet zone included,
 * and must stay off the canvas.
 */
static int load_markers(json_obj *canvas, struct machine_canvas *c, bl_err *err)
{
	json_obj o;
	int rc;

	c->marker_size_mm = 30.0;
	c->marker_offset_mm = 25.0;
	rc = json_child(canvas, "markers", JSON_OPTIONAL, &o, err);
	if (rc)
		return rc < 0 ? rc : 0;
	BL_TRY(json_num(&o, "size_mm", JSON_REQUIRED, 5.0, 200.0, &c->marker_size_mm, err));
	BL_TRY(json_num(&o, "offset_mm", JSON_REQUIRED, 0.0, 500.0, &c->marker_offset_mm, err));
	if (c->marker_offset_mm < 2.0 / 3.0 * c->marker_size_mm)
		return json_fail(&o, "offset_mm", err, BL_EINVAL,
				 "%g is less than 2/3 of size_mm (%g): the markers' sheets would "
				 "lie on the canvas", c->marker_offset_mm,
				 2.0 / 3.0 * c->marker_size_mm);
	return json_end(&o, err);
}

static int load_zones(json_obj *root, struct machine *m, bl_err *err)
{
	json_obj z, o;
	const cJSON *arr, *it;
	size_t n, i = 0;
	int rc;

	BL_TRY(json_child(root, "zones", JSON_REQUIRED, &z, err));

	BL_TRY(json_child(&z, "canvas", JSON_REQUIRED, &o, err));
	BL_TRY(json_vec(&o, "origin_mm", JSON_REQUIRED, 2, -MACHINE_COORD_MAX_MM, MACHINE_COORD_MAX_MM,
		     m->canvas.origin_mm, err));
	BL_TRY(json_vec(&o, "size_mm", JSON_REQUIRED, 2, 10.0, 5000.0, m->canvas.size_mm, err));
	BL_TRY(json_num(&o, "surface_z_mm", JSON_REQUIRED, -MACHINE_COORD_MAX_MM, MACHINE_COORD_MAX_MM,
		     &m->canvas.surface_z_mm, err));
	{
		double far[2] = { m->canvas.origin_mm[0] + m->canvas.size_mm[0],
				  m->canvas.origin_mm[1] + m->canvas.size_mm[1] };

		if (!in_box2(m->canvas.origin_mm, m->work_min_mm, m->work_max_mm) ||
		    !in_box2(far, m->work_min_mm, m->work_max_mm))
			return json_fail(&z, "canvas", err, BL_EINVAL,
					 "the canvas does not lie inside work_area");
	}
	xform_place(&m->xf, m->canvas.origin_mm, 0.0);
	BL_TRY(load_markers(&o, &m->canvas, err));
	rc = json_vec(&o, "lab", JSON_OPTIONAL, 3, -128.0, 128.0, m->canvas.lab, err);
	if (rc < 0)
		return rc;
	m->canvas.has_lab = rc == 0;
	if (m->canvas.has_lab && !(m->canvas.lab[0] >= 0.0 && m->canvas.lab[0] <= 100.0))
		return json_fail(&o, "lab", err, BL_EINVAL, "L* %g is not within 0..100",
				 m->canvas.lab[0]);
	BL_TRY(json_end(&o, err));

	BL_TRY(load_station_list(&z, "wells", m->wells, CFG_MAX_WELLS, &m->n_wells, m, err));
	BL_TRY(load_station_list(&z, "mixing_cells", m->cells, CFG_MAX_CELLS, &m->n_cells, m, err));

	BL_TRY(json_child(&z, "water", JSON_REQUIRED, &o, err));
	snprintf(m->water.name, sizeof(m->water.name), "water");
	BL_TRY(load_station(&o, &m->water, m, 0, 1, 1, err));
	BL_TRY(json_child(&z, "wipe", JSON_REQUIRED, &o, err));
	snprintf(m->wipe.name, sizeof(m->wipe.name), "wipe");
	BL_TRY(load_station(&o, &m->wipe, m, 0, 1, 0, err));

	BL_TRY(json_child(&z, "park", JSON_REQUIRED, &o, err));
	BL_TRY(json_vec(&o, "pose_mm", JSON_REQUIRED, 3, -MACHINE_COORD_MAX_MM, MACHINE_COORD_MAX_MM, m->park_mm,
		     err));
	BL_TRY(check_point_in_work(&o, "pose_mm", m, m->park_mm, err));
	BL_TRY(json_end(&o, err));

	rc = json_array(&z, "keep_out", JSON_OPTIONAL, CFG_MAX_KEEP_OUT, &arr, &n, err);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		cJSON_ArrayForEach(it, arr) {
			struct machine_box *b = &m->keep_out[i];

			BL_TRY(json_item_obj(&z, "keep_out", it, i, &o, err));
			BL_TRY(json_str(&o, "name", JSON_REQUIRED, b->name, sizeof(b->name), err));
			BL_TRY(json_vec(&o, "min_mm", JSON_REQUIRED, 3, -MACHINE_COORD_MAX_MM, MACHINE_COORD_MAX_MM,
				     b->min_mm, err));
			BL_TRY(json_vec(&o, "max_mm", JSON_REQUIRED, 3, -MACHINE_COORD_MAX_MM, MACHINE_COORD_MAX_MM,
				     b->max_mm, err));
			for (int k = 0; k < 3; k++)
				if (b->min_mm[k] >= b->max_mm[k])
					return json_fail(&o, "max_mm", err, BL_EINVAL,
							 "must exceed min_mm on every axis");
			BL_TRY(check_keep_out(&o, m, b, err));
			BL_TRY(json_end(&o, err));
			i++;
		}
		m->n_keep_out = (int)n;
	}
	return json_end(&z, err);
}

/* Names of wells, cells and brushes must be unique: actions refer to them by name. */
static int check_unique_names(json_obj *root, const struct machine *m, bl_err *err)
{
	const char *names[CFG_MAX_WELLS + CFG_MAX_CELLS];
	int n = 0;

	for (int i = 0; i < m->n_wells; i++)
		names[n++] = m->wells[i].name;
	for (int i = 0; i < m->n_cells; i++)
		names[n++] = m->cells[i].name;
	for (int i = 0; i < n; i++) {
		if (!names[i][0])
			return json_fail(root, "zones", err, BL_EINVAL, "a station has an empty name");
		for (int j = 0; j < i; j++)
			if (strcmp(names[i], names[j]) == 0)
				return json_fail(root, "zones", err, BL_EINVAL,
						 "the name '%s' is used twice", names[i]);
	}
	for (int i = 0; i < m->n_brushes; i++)
		for (int j = 0; j < i; j++)
			if (strcmp(m->brushes[i].name, m->brushes[j].name) == 0)
				return json_fail(root, "brushes", err, BL_EINVAL,
						 "the brush name '%s' is used twice",
						 m->brushes[i].name);
	return 0;
}

static int load_brushes(json_obj *root, struct machine *m, bl_err *err)
{
	const cJSON *arr, *it;
	size_t n, i = 0;

	BL_TRY(json_array(root, "brushes", JSON_REQUIRED, CFG_MAX_BRUSHES, &arr, &n, err));
	if (n == 0)
		return json_fail(root, "brushes", err, BL_EINVAL, "needs at least one brush");
	cJSON_ArrayForEach(it, arr) {
		struct machine_brush *b = &m->brushes[i];
		json_obj o;

		BL_TRY(json_item_obj(root, "brushes", it, i, &o, err));
		BL_TRY(json_str(&o, "name", JSON_REQUIRED, b->name, sizeof(b->name), err));
		if (!b->name[0])
			return json_fail(&o, "name", err, BL_EINVAL, "must not be empty");
		BL_TRY(json_num(&o, "width_mm", JSON_REQUIRED, 0.2, 50.0, &b->width_mm, err));
		BL_TRY(json_num(&o, "load_ml", JSON_REQUIRED, 0.001, 10.0, &b->load_ml, err));
		BL_TRY(json_num(&o, "reload_mm", JSON_REQUIRED, 1.0, 5000.0, &b->reload_mm, err));
		BL_TRY(json_end(&o, err));
		i++;
	}
	m->n_brushes = (int)n;
	return 0;
}

static int load_motion_limits(json_obj *lim, const char *key, struct machine_motion_limits *l,
			      bl_err *err)
{
	json_obj o;

	BL_TRY(json_child(lim, key, JSON_REQUIRED, &o, err));
	BL_TRY(json_num(&o, "speed_mm_s", JSON_REQUIRED, 0.1, 10000.0, &l->speed_mm_s, err));
	BL_TRY(json_num(&o, "accel_mm_s2", JSON_REQUIRED, 1.0, 1e6, &l->accel_mm_s2, err));
	BL_TRY(json_num(&o, "move_mm", JSON_REQUIRED, 1.0, 20000.0, &l->move_mm, err));
	return json_end(&o, err);
}

static int soft_within_hard(json_obj *lim, const char *name, double soft, double hard,
			    bl_err *err)
{
	char key[64];

	if (soft <= hard)
		return 0;
	snprintf(key, sizeof(key), "soft.%s", name);
	return json_fail(lim, key, err, BL_EINVAL, "%g exceeds limits.hard.%s %g", soft, name,
			 hard);
}

static int load_limits(json_obj *root, struct machine *m, bl_err *err)
{
	struct machine_limits *l = &m->limits;
	struct machine_z_floors *z = &l->z_floor;
	json_obj o, f;

	BL_TRY(json_child(root, "limits", JSON_REQUIRED, &o, err));
	BL_TRY(load_motion_limits(&o, "soft", &l->soft, err));
	BL_TRY(load_motion_limits(&o, "hard", &l->hard, err));
	BL_TRY(soft_within_hard(&o, "speed_mm_s", l->soft.speed_mm_s, l->hard.speed_mm_s, err));
	BL_TRY(soft_within_hard(&o, "accel_mm_s2", l->soft.accel_mm_s2, l->hard.accel_mm_s2, err));
	BL_TRY(soft_within_hard(&o, "move_mm", l->soft.move_mm, l->hard.move_mm, err));

	BL_TRY(json_child(&o, "z_floor_mm", JSON_REQUIRED, &f, err));
	BL_TRY(json_num(&f, "canvas", JSON_REQUIRED, -MACHINE_COORD_MAX_MM, MACHINE_COORD_MAX_MM, &z->canvas_mm, err));
	BL_TRY(json_num(&f, "well", JSON_REQUIRED, -MACHINE_COORD_MAX_MM, MACHINE_COORD_MAX_MM, &z->well_mm, err));
	BL_TRY(json_num(&f, "cell", JSON_REQUIRED, -MACHINE_COORD_MAX_MM, MACHINE_COORD_MAX_MM, &z->cell_mm, err));
	BL_TRY(json_num(&f, "water", JSON_REQUIRED, -MACHINE_COORD_MAX_MM, MACHINE_COORD_MAX_MM, &z->water_mm, err));
	BL_TRY(json_num(&f, "wipe", JSON_REQUIRED, -MACHINE_COORD_MAX_MM, MACHINE_COORD_MAX_MM, &z->wipe_mm, err));
	BL_TRY(json_num(&f, "travel", JSON_REQUIRED, -MACHINE_COORD_MAX_MM, MACHINE_COORD_MAX_MM, &z->travel_mm, err));
	BL_TRY(json_end(&f, err));

	l->max_stroke_points = 4096;
	BL_TRY(json_i32(&o, "max_stroke_points", JSON_OPTIONAL, 2, 1000000, &l->max_stroke_points,
		     err));
	BL_TRY(json_end(&o, err));

	/* A floor above the surface it guards would make the zone unusable. */
	if (z->canvas_mm > m->canvas.surface_z_mm)
		return json_fail(&f, "canvas", err, BL_EINVAL,
				 "%g is above zones.canvas.surface_z_mm %g", z->canvas_mm,
				 m->canvas.surface_z_mm);
	if (m->travel_z_mm < z->travel_mm)
		return json_fail(root, "travel_z_mm", err, BL_EINVAL,
				 "%g is below limits.z_floor_mm.travel %g", m->travel_z_mm,
				 z->travel_mm);
	return 0;
}

static int load_safety(json_obj *root, struct machine *m, bl_err *err)
{
	struct machine_safety *s = &m->safety;
	const cJSON *arr, *it;
	json_obj o;
	size_t n, i = 0;
	int rc;

	s->confirm_first_motion = 1;
	s->confirm_homing = 1;
	s->operator_timeout_s = 120;
	s->max_grant_s = 3600.0;
	rc = json_child(root, "safety", JSON_OPTIONAL, &o, err);
	if (rc < 0)
		return rc;
	if (rc == 1)
		return 0;
	BL_TRY(json_bool(&o, "confirm_first_motion", JSON_OPTIONAL, &s->confirm_first_motion, err));
	BL_TRY(json_bool(&o, "confirm_homing", JSON_OPTIONAL, &s->confirm_homing, err));
	BL_TRY(json_i32(&o, "operator_timeout_s", JSON_OPTIONAL, 1, 86400, &s->operator_timeout_s,
		     err));
	BL_TRY(json_num(&o, "max_grant_s", JSON_OPTIONAL, 1.0, 86400.0, &s->max_grant_s, err));
	rc = json_array(&o, "operator_kinds", JSON_OPTIONAL, CFG_MAX_OPERATOR_KINDS, &arr, &n, err);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		cJSON_ArrayForEach(it, arr) {
			char key[48];
			int k = 0;

			snprintf(key, sizeof(key), "operator_kinds[%zu]", i);
			if (!cJSON_IsString(it))
				return json_fail(&o, key, err, BL_EINVAL, "must be an action kind name");
			BL_TRY(json_str_value(&o, key, it, s->operator_kinds[i], CFG_NAME_MAX, err));
			/* The arm's vocabulary: a kind the gate would not know makes the machine useless. */
			while (arm_kind_names[k] && strcmp(arm_kind_names[k], s->operator_kinds[i]))
				k++;
			if (!arm_kind_names[k])
				return json_fail(&o, key, err, BL_EINVAL,
						 "'%s' is not an action kind (home, move, jog, stroke, "
						 "dip, dispense, stir, wipe, wash, park)",
						 s->operator_kinds[i]);
			i++;
		}
		s->n_operator_kinds = (int)n;
	}
	return json_end(&o, err);
}

static int load_tolerances(json_obj *root, struct machine *m, bl_err *err)
{
	json_obj o;

	BL_TRY(json_child(root, "tolerances", JSON_REQUIRED, &o, err));
	BL_TRY(json_num(&o, "mix_de00", JSON_REQUIRED, 0.1, 50.0, &m->tolerances.mix_de00, err));
	BL_TRY(json_num(&o, "paint_de00", JSON_REQUIRED, 0.1, 100.0, &m->tolerances.paint_de00, err));
	return json_end(&o, err);
}

/* Optional; after tolerances, whose mix_de00 is its floor. */
static int load_unattended(json_obj *root, struct machine *m, bl_err *err)
{
	struct machine_unattended *u = &m->unattended;
	json_obj o;
	int rc;

	u->accept_within_de00 = MACHINE_ACCEPT_WITHIN_DE00;
	rc = json_child(root, "unattended", JSON_OPTIONAL, &o, err);
	if (rc < 0)
		return rc;
	if (rc == 1)
		return 0;
	BL_TRY(json_num(&o, "accept_within_de00", JSON_OPTIONAL, 0.0, 50.0, &u->accept_within_de00,
			err));
	if (u->accept_within_de00 > 0.0 && u->accept_within_de00 < m->tolerances.mix_de00)
		return json_fail(&o, "accept_within_de00", err, BL_EINVAL,
				 "%g is below tolerances.mix_de00 %g (0 accepts nothing)",
				 u->accept_within_de00, m->tolerances.mix_de00);
	return json_end(&o, err);
}

static int load_mixing(json_obj *root, struct machine *m, bl_err *err)
{
	struct machine_mixing *x = &m->mixing;
	json_obj o;

	BL_TRY(json_child(root, "mixing", JSON_REQUIRED, &o, err));
	BL_TRY(json_num(&o, "dispense_unit_ml", JSON_REQUIRED, 0.001, 100.0, &x->dispense_unit_ml,
		     err));
	BL_TRY(json_num(&o, "cell_min_ml", JSON_REQUIRED, 0.001, 10000.0, &x->cell_min_ml, err));
	BL_TRY(json_num(&o, "cell_max_ml", JSON_REQUIRED, 0.001, 10000.0, &x->cell_max_ml, err));
	BL_TRY(json_i32(&o, "max_paints", JSON_REQUIRED, 1, 8, &x->max_paints, err));
	BL_TRY(json_i32(&o, "stir_ms", JSON_REQUIRED, 0, 600000, &x->stir_ms, err));
	if (x->cell_min_ml > x->cell_max_ml)
		return json_fail(&o, "cell_min_ml", err, BL_EINVAL,
				 "%g exceeds mixing.cell_max_ml %g", x->cell_min_ml, x->cell_max_ml);
	if (x->dispense_unit_ml > x->cell_max_ml)
		return json_fail(&o, "dispense_unit_ml", err, BL_EINVAL,
				 "%g exceeds mixing.cell_max_ml %g", x->dispense_unit_ml,
				 x->cell_max_ml);
	for (int i = 0; i < m->n_cells; i++)
		if (x->cell_max_ml > m->cells[i].capacity_ml)
			return json_fail(&o, "cell_max_ml", err, BL_EINVAL,
					 "%g exceeds the capacity %g ml of mixing cell '%s'",
					 x->cell_max_ml, m->cells[i].capacity_ml, m->cells[i].name);
	return json_end(&o, err);
}

/* One working value of painting: its default (a share of the limit), and the limit it may not exceed. */
struct working_key {
	const char *key, *limit_key, *unit;
	double dflt, max_value;
	double *out;
};

/* Reads one working value; *written is counted up when the file sets it. */
static int load_working(json_obj *o, const struct working_key *w, int *written, bl_err *err)
{
	int rc;

	*w->out = w->dflt;
	if ((rc = json_num(o, w->key, JSON_OPTIONAL, 0.01, 1e6, w->out, err)) < 0)
		return rc;
	*written += rc == 0;
	/* The margin absorbs the rounding of a limit computed as a difference (the canvas floor's depth). */
	if (rc == 1 || *w->out <= w->max_value + 1e-9)
		return 0;
	return json_fail(o, w->key, err, BL_EINVAL, "%g %s is above %s %g %s", *w->out, w->unit, w->limit_key,
			 w->max_value, w->unit);
}

static int load_painting(json_obj *root, struct machine *m, bl_err *err)
{
	struct machine_painting *p = &m->painting;
	const struct machine_motion_limits *soft = &m->limits.soft;
	const double depth_mm = m->canvas.surface_z_mm - m->limits.z_floor.canvas_mm;
	/* Unset, a value is the share of its limit the planner has always planned to. */
	const struct working_key keys[] = {
		{ "stroke_speed_mm_s", "limits.soft.speed_mm_s", "mm/s", fmin(100.0, 0.5 * soft->speed_mm_s),
		  soft->speed_mm_s, &p->stroke_speed_mm_s },
		{ "travel_speed_mm_s", "limits.soft.speed_mm_s", "mm/s", fmin(200.0, 0.8 * soft->speed_mm_s),
		  soft->speed_mm_s, &p->travel_speed_mm_s },
		{ "curve_accel_mm_s2", "limits.soft.accel_mm_s2", "mm/s^2", 0.9 * soft->accel_mm_s2, soft->accel_mm_s2,
		  &p->curve_accel_mm_s2 },
		{ "move_mm", "limits.soft.move_mm", "mm", 0.9 * soft->move_mm, soft->move_mm, &p->move_mm },
		{ "press_max_mm", "the canvas floor's depth below zones.canvas.surface_z_mm", "mm", depth_mm, depth_mm,
		  &p->press_max_mm },
	};
	cJSON *none = NULL;
	json_obj o;
	int rc = json_child(root, "painting", JSON_OPTIONAL, &o, err);

	/* Absent, the section is its defaults (painting over wet paint is not delayed). */
	if (rc == 1) {
		if (!(none = cJSON_CreateObject()))
			return bl_fail(err, BL_ENOMEM, "out of memory");
		rc = json_obj_open(none, root->file, "painting", &o, err);
	}
	if (rc < 0)
		goto out_free;
	p->envelope_written = 0;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if ((rc = load_working(&o, &keys[i], &p->envelope_written, err)))
			goto out_free;
	p->envelope_written = p->envelope_written == (int)(sizeof(keys) / sizeof(keys[0]));
	if ((rc = json_num(&o, "dry_s", JSON_OPTIONAL, 0.0, 7.0 * 24 * 3600, &p->dry_s, err)) >= 0)
		rc = json_end(&o, err);
out_free:
	cJSON_Delete(none);
	return rc;
}

static int load_camera(json_obj *root, struct machine *m, bl_err *err)
{
	struct machine_camera *c = &m->camera;
	json_obj o, ctl;
	long long v;
	int rc;

	c->average_frames = 4;
	c->discard_frames = 3;
	c->timeout_ms = 2000;
	c->max_pixels = 40L * 1000 * 1000;
	BL_TRY(json_child(root, "camera", JSON_REQUIRED, &o, err));
	BL_TRY(json_enum(&o, "backend", JSON_REQUIRED, machine_cam_backend_names, &c->backend, err));
	rc = json_str(&o, "device", JSON_OPTIONAL, c->device, sizeof(c->device), err);
	if (rc < 0)
		return rc;
	if (c->backend == MACHINE_CAM_SIM && rc == 0)
		return json_fail(&o, "device", err, BL_EINVAL,
				 "the sim camera has no device; remove this key");
	if (c->backend != MACHINE_CAM_SIM && rc == 1)
		return json_fail(&o, "device", err, BL_EINVAL, "missing: the %s camera needs one",
				 machine_cam_backend_names[c->backend]);
	if (c->backend == MACHINE_CAM_REPLAY && c->device[0] != '/') {
		char tmp[CFG_PATH_MAX];

		snprintf(tmp, sizeof(tmp), "%s", c->device);
		if (snprintf(c->device, sizeof(c->device), "%s/%s", m->dir, tmp) >=
		    (int)sizeof(c->device))
			return json_fail(&o, "device", err, BL_EINVAL, "path too long");
	}
	BL_TRY(json_i32(&o, "width", JSON_REQUIRED, 16, 16384, &c->width, err));
	BL_TRY(json_i32(&o, "height", JSON_REQUIRED, 16, 16384, &c->height, err));
	BL_TRY(json_i32(&o, "average_frames", JSON_OPTIONAL, 1, MACHINE_MAX_AVERAGE_FRAMES,
			&c->average_frames, err));
	BL_TRY(json_i32(&o, "discard_frames", JSON_OPTIONAL, 0, 100, &c->discard_frames, err));
	BL_TRY(json_i32(&o, "timeout_ms", JSON_OPTIONAL, 10, 60000, &c->timeout_ms, err));
	rc = json_int(&o, "max_pixels", JSON_OPTIONAL, 1024, 400000000LL, &v, err);
	if (rc < 0)
		return rc;
	if (rc == 0)
		c->max_pixels = (long)v;
	if ((long long)c->width * c->height > c->max_pixels)
		return json_fail(&o, "width", err, BL_EINVAL,
				 "%dx%d exceeds camera.max_pixels %ld", c->width, c->height,
				 c->max_pixels);
	BL_TRY(json_bool(&o, "allow_auto", JSON_OPTIONAL, &c->allow_auto, err));
	rc = json_child(&o, "controls", JSON_OPTIONAL, &ctl, err);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		if (c->backend == MACHINE_CAM_SIM)
			return json_fail(&o, "controls", err, BL_EINVAL,
					 "the sim camera has fixed controls; remove this key");
		if (ctl.nkeys > CFG_MAX_CONTROLS)
			return json_fail(&o, "controls", err, BL_EINVAL, "more than %d controls",
					 CFG_MAX_CONTROLS);
		for (const cJSON *it = ctl.node->child; it; it = it->next) {
			struct machine_control *mc = &c->controls[c->n_controls];

			if (strlen(it->string) >= sizeof(mc->name) || !it->string[0])
				return json_fail(&ctl, it->string, err, BL_EINVAL,
						 "bad control name");
			snprintf(mc->name, sizeof(mc->name), "%s", it->string);
			BL_TRY(json_num(&ctl, it->string, JSON_REQUIRED, -1e9, 1e9, &mc->value, err));
			c->n_controls++;
		}
		BL_TRY(json_end(&ctl, err));
	}
	return json_end(&o, err);
}

static int resolve_path(json_obj *o, const char *key, const struct machine *m, char *out,
			bl_err *err)
{
	char tmp[CFG_PATH_MAX];
	int rc = json_str(o, key, JSON_OPTIONAL, tmp, sizeof(tmp), err);

	if (rc)
		return rc;
	if (!tmp[0])
		return json_fail(o, key, err, BL_EINVAL, "must not be empty (leave the key out)");
	if (tmp[0] == '/')
		snprintf(out, CFG_PATH_MAX, "%s", tmp);
	else if (snprintf(out, CFG_PATH_MAX, "%s/%s", m->dir, tmp) >= CFG_PATH_MAX)
		return json_fail(o, key, err, BL_EINVAL, "path too long");
	return 0;
}

static int load_calibration(json_obj *root, struct machine *m, bl_err *err)
{
	struct machine_calibration *c = &m->calibration;
	json_obj o;
	int rc;

	c->max_arm_residual_mm = 1.0;
	c->max_canvas_error_mm = 0.5;
	c->max_camera_de00 = 1.5;
	c->follow_lamp = 1;
	rc = json_child(root, "calibration", JSON_OPTIONAL, &o, err);
	if (rc)
		return rc < 0 ? rc : 0;
	BL_TRY(resolve_path(&o, "camera_profile", m, c->camera_profile, err));
	BL_TRY(resolve_path(&o, "light_map", m, c->light_map, err));
	BL_TRY(resolve_path(&o, "canvas", m, c->canvas, err));
	BL_TRY(resolve_path(&o, "arm", m, c->arm, err));
	BL_TRY(json_num(&o, "max_arm_residual_mm", JSON_OPTIONAL, 0.01, 100.0, &c->max_arm_residual_mm,
		     err));
	BL_TRY(json_num(&o, "max_canvas_error_mm", JSON_OPTIONAL, 0.01, 100.0,
		     &c->max_canvas_error_mm, err));
	BL_TRY(json_num(&o, "max_camera_de00", JSON_OPTIONAL, 0.1, 50.0, &c->max_camera_de00, err));
	BL_TRY(json_bool(&o, "follow_lamp", JSON_OPTIONAL, &c->follow_lamp, err));
	return json_end(&o, err);
}

static int load_costs(json_obj *root, struct machine *m, bl_err *err)
{
	struct machine_costs *c = &m->costs;
	json_obj o;

	BL_TRY(json_child(root, "costs", JSON_REQUIRED, &o, err));
	snprintf(c->currency, sizeof(c->currency), "EUR");
	BL_TRY(json_str(&o, "currency", JSON_OPTIONAL, c->currency, sizeof(c->currency), err));
	BL_TRY(json_num(&o, "arm_per_hour", JSON_REQUIRED, 0.0, 1e6, &c->arm_per_hour, err));
	BL_TRY(json_num(&o, "per_verification", JSON_REQUIRED, 0.0, 1e6, &c->per_verification, err));
	BL_TRY(json_num(&o, "per_planner_call", JSON_REQUIRED, 0.0, 1e6, &c->per_planner_call, err));
	BL_TRY(json_num(&o, "paint_per_ml", JSON_REQUIRED, 0.0, 1e6, &c->paint_per_ml, err));
	return json_end(&o, err);
}

const char *const machine_planner_failure_names[] = { "builtin", "pause", NULL };
_Static_assert(sizeof(machine_planner_failure_names) / sizeof(machine_planner_failure_names[0]) ==
		       MACHINE_PLANNER_FAILURE_COUNT + 1,
	       "a planner failure policy without a name");

/* After costs: a call's price defaults to the built-in's. */
static int load_planner(json_obj *root, struct machine *m, bl_err *err)
{
	struct machine_planner *p = &m->planner;
	const cJSON *eg;
	json_obj o;
	double kb = 16384;
	int rc;

	p->on_failure = MACHINE_PLANNER_PAUSE;
	p->answer_deadline_s = 120.0;
	p->max_answer_kb = 16384;
	m->costs.per_external_call = m->costs.per_planner_call;
	if ((rc = json_child(root, "planner", JSON_OPTIONAL, &o, err)))
		return rc < 0 ? rc : 0;
	BL_TRY(json_str(&o, "command", JSON_OPTIONAL, p->command, sizeof(p->command), err));
	BL_TRY(json_enum(&o, "on_failure", JSON_OPTIONAL, machine_planner_failure_names, &p->on_failure, err));
	BL_TRY(json_num(&o, "answer_deadline_s", JSON_OPTIONAL, 0.1, 86400.0, &p->answer_deadline_s, err));
	BL_TRY(json_num(&o, "max_answer_kb", JSON_OPTIONAL, 1, 1048576, &kb, err));
	p->max_answer_kb = (long)kb;
	BL_TRY(json_num(&o, "price_per_call", JSON_OPTIONAL, 0.0, 1e6, &m->costs.per_external_call, err));
	BL_TRY(json_num(&o, "cost_max", JSON_OPTIONAL, 0.0, 1e9, &p->cost_max, err));
	BL_TRY(json_i32(&o, "max_calls", JSON_OPTIONAL, 0, 100000, &p->max_calls, err));
	BL_TRY(json_num(&o, "cpu_s", JSON_OPTIONAL, 1.0, 86400.0, &p->cpu_s, err));
	kb = 0;
	BL_TRY(json_num(&o, "memory_mb", JSON_OPTIONAL, 64, 1048576, &kb, err));
	p->memory_mb = (long)kb;
	BL_TRY(json_i32(&o, "tmpfs_mb", JSON_OPTIONAL, 1, 65536, &p->tmpfs_mb, err));
	/* Read here as text; the sandbox module's strict reader checks it before a run starts. */
	if ((eg = json_take(&o, "egress"))) {
		char *s = cJSON_PrintUnformatted(eg);

		if (!s || strlen(s) >= sizeof(p->egress_json)) {
			cJSON_free(s);
			return json_fail(&o, "egress", err, BL_EINVAL, "is longer than %zu bytes",
					 sizeof(p->egress_json) - 1);
		}
		snprintf(p->egress_json, sizeof(p->egress_json), "%s", s);
		cJSON_free(s);
	}
	return json_end(&o, err);
}

static int load_brakes(json_obj *root, struct machine *m, bl_err *err)
{
	struct machine_brakes *b = &m->brakes;
	json_obj o;

	BL_TRY(json_child(root, "brakes", JSON_REQUIRED, &o, err));
	BL_TRY(json_i32(&o, "attempts_per_subtask", JSON_REQUIRED, 1, 100, &b->attempts_per_subtask, err));
	BL_TRY(json_i32(&o, "stuck_repeats", JSON_REQUIRED, 2, 100, &b->stuck_repeats, err));
	BL_TRY(json_i32(&o, "no_progress_checkpoints", JSON_REQUIRED, 1, 100, &b->no_progress_checkpoints, err));
	BL_TRY(json_i32(&o, "correction_rounds", JSON_REQUIRED, 0, 100, &b->correction_rounds, err));
	BL_TRY(json_num(&o, "wall_time_s", JSON_REQUIRED, 1.0, 30.0 * 86400, &b->wall_time_s, err));
	BL_TRY(json_num(&o, "arm_time_s", JSON_REQUIRED, 1.0, 30.0 * 86400, &b->arm_time_s, err));
	BL_TRY(json_num(&o, "cost_max", JSON_REQUIRED, 0.0, 1e9, &b->cost_max, err));
	BL_TRY(json_i32(&o, "comm_errors", JSON_REQUIRED, 1, 1000, &b->comm_errors, err));
	BL_TRY(json_num(&o, "heartbeat_stale_s", JSON_REQUIRED, 1.0, 86400.0, &b->heartbeat_stale_s,
		     err));
	return json_end(&o, err);
}

static int load_root(json_obj *root, struct machine *m, bl_err *err)
{
	json_obj o;

	BL_TRY(json_kind(root, "machine", 1, err));
	BL_TRY(json_str(root, "name", JSON_REQUIRED, m->name, sizeof(m->name), err));

	BL_TRY(json_child(root, "work_area", JSON_REQUIRED, &o, err));
	BL_TRY(json_vec(&o, "min_mm", JSON_REQUIRED, 3, -MACHINE_COORD_MAX_MM, MACHINE_COORD_MAX_MM, m->work_min_mm,
		     err));
	BL_TRY(json_vec(&o, "max_mm", JSON_REQUIRED, 3, -MACHINE_COORD_MAX_MM, MACHINE_COORD_MAX_MM, m->work_max_mm,
		     err));
	for (int i = 0; i < 3; i++)
		if (m->work_min_mm[i] >= m->work_max_mm[i])
			return json_fail(&o, "max_mm", err, BL_EINVAL,
					 "must exceed min_mm on every axis");
	BL_TRY(json_end(&o, err));

	BL_TRY(json_child(root, "arm", JSON_REQUIRED, &o, err));
	BL_TRY(json_enum(&o, "backend", JSON_REQUIRED, machine_arm_backend_names, &m->arm_backend,
		      err));
	BL_TRY(load_connection(&o, m, err));
	BL_TRY(load_kinematics(&o, m, err));
	BL_TRY(json_vec(&o, "home_mm", JSON_REQUIRED, 3, -MACHINE_COORD_MAX_MM, MACHINE_COORD_MAX_MM, m->home_mm, err));
	BL_TRY(check_point_in_work(&o, "home_mm", m, m->home_mm, err));
	BL_TRY(json_end(&o, err));

	BL_TRY(json_num(root, "travel_z_mm", JSON_REQUIRED, -MACHINE_COORD_MAX_MM, MACHINE_COORD_MAX_MM,
		     &m->travel_z_mm, err));
	if (m->travel_z_mm < m->work_min_mm[2] || m->travel_z_mm > m->work_max_mm[2])
		return json_fail(root, "travel_z_mm", err, BL_EINVAL,
				 "%g lies outside work_area z", m->travel_z_mm);

	BL_TRY(load_zones(root, m, err));
	BL_TRY(load_brushes(root, m, err));
	BL_TRY(check_unique_names(root, m, err));
	BL_TRY(load_limits(root, m, err));
	BL_TRY(load_safety(root, m, err));
	BL_TRY(load_tolerances(root, m, err));
	BL_TRY(load_unattended(root, m, err));
	BL_TRY(load_mixing(root, m, err));
	BL_TRY(load_painting(root, m, err));
	BL_TRY(load_camera(root, m, err));
	BL_TRY(load_calibration(root, m, err));
	BL_TRY(load_costs(root, m, err));
	BL_TRY(load_planner(root, m, err));
	BL_TRY(load_brakes(root, m, err));
	BL_TRY(machine_load_sim(root, m, err));
	return json_end(root, err);
}

/*
 * The registration calibration.arm names becomes the machine's transform,
 * held to the machine's own bounds: the residual it allows, and every canvas
 * corner inside the work area.
 */
static int load_registration(struct machine *m, bl_err *err)
{
	const struct machine_calibration *c = &m->calibration;
	struct xform_reg *r;
	int rc;

	if (!c->arm[0])
		return 0;
	r = malloc(sizeof(*r));
	if (!r)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	rc = xform_reg_load(c->arm, r, err);
	if (rc) {
		rc = bl_err_prefix(err, "%s: calibration.arm", m->file);
		goto out_free;
	}
	/* A registration worse than the machine allows is refused, not warned about: it moves the arm. */
	if (r->max_mm > c->max_arm_residual_mm) {
		rc = bl_fail(err, BL_EINVAL, "%s: calibration.arm %s: its residual %.3f mm exceeds "
			     "calibration.max_arm_residual_mm %.3f: register the arm again", m->file,
			     c->arm, r->max_mm, c->max_arm_residual_mm);
		goto out_free;
	}
	if ((rc = xform_from_map(&m->xf, r->a, err))) {
		rc = bl_err_prefix(err, "%s: calibration.arm %s: canvas_to_machine", m->file, c->arm);
		goto out_free;
	}
	for (int k = 0; k < 4; k++) {
		struct canvas_pt cp = { (k & 1) ? m->canvas.size_mm[0] : 0.0,
					(k & 2) ? m->canvas.size_mm[1] : 0.0 };
		struct machine_pt mp = xform_to_machine(&m->xf, cp);
		double p[2] = { mp.x, mp.y };

		if (!in_box2(p, m->work_min_mm, m->work_max_mm)) {
			rc = bl_fail(err, BL_EINVAL, "%s: calibration.arm %s puts canvas corner (%g, %g) "
				     "at machine (%.1f, %.1f) mm, outside work_area", m->file, c->arm,
				     cp.x, cp.y, mp.x, mp.y);
			goto out_free;
		}
	}
out_free:
	free(r);
	return rc;
}

static int load_file(const char *path, struct machine *m, int registered, bl_err *err)
{
	char tmp[CFG_PATH_MAX];
	cJSON *doc;
	json_obj root;
	int rc;

	memset(m, 0, sizeof(*m));
	if (strlen(path) >= sizeof(m->file))
		return bl_fail(err, BL_EINVAL, "%s: path too long", path);
	snprintf(m->file, sizeof(m->file), "%s", path);
	snprintf(tmp, sizeof(tmp), "%s", path);
	snprintf(m->dir, sizeof(m->dir), "%s", dirname(tmp));
	rc = json_parse_file(path, &doc, err);
	if (rc)
		return rc;
	rc = json_obj_open(doc, m->file, "", &root, err);
	if (rc == 0)
		rc = load_root(&root, m, err);
	cJSON_Delete(doc);
	if (rc == 0 && registered)
		rc = load_registration(m, err);
	return rc;
}

int machine_load(const char *path, struct machine *m, bl_err *err)
{
	return load_file(path, m, 1, err);
}

int machine_load_nominal(const char *path, struct machine *m, bl_err *err)
{
	return load_file(path, m, 0, err);
}

static const struct machine_station *find_station(const struct machine_station *list, int n,
						  const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(list[i].name, name) == 0)
			return &list[i];
	return NULL;
}

const struct machine_station *machine_find_well(const struct machine *m, const char *name)
{
	return find_station(m->wells, m->n_wells, name);
}

const struct machine_station *machine_find_cell(const struct machine *m, const char *name)
{
	return find_station(m->cells, m->n_cells, name);
}

const struct machine_brush *machine_find_brush(const struct machine *m, const char *name)
{
	for (int i = 0; i < m->n_brushes; i++)
		if (strcmp(m->brushes[i].name, name) == 0)
			return &m->brushes[i];
	return NULL;
}

char *machine_summary(const struct machine *m)
{
	strbuf sb;

	sb_init(&sb);
	sb_printf(&sb, "machine '%s' (%s)\n", m->name, m->file);
	sb_printf(&sb, "  arm: %s backend, %s kinematics\n",
		  machine_arm_backend_names[m->arm_backend], machine_kin_type_names[m->kin.type]);
	if (m->arm_backend != MACHINE_ARM_SIM)
		sb_printf(&sb, "  connection: %s, %d baud, parity %s, address %d\n",
			  m->connection.port[0] ? m->connection.port : m->connection.host,
			  m->connection.baud, parity_names[m->connection.parity],
			  m->connection.address);
	sb_printf(&sb, "  work area: x %g..%g, y %g..%g, z %g..%g mm\n",
		  m->work_min_mm[0], m->work_max_mm[0], m->work_min_mm[1], m->work_max_mm[1],
		  m->work_min_mm[2], m->work_max_mm[2]);
	sb_printf(&sb, "  canvas: %g x %g mm at (%g, %g), surface z %g mm", m->canvas.size_mm[0],
		  m->canvas.size_mm[1], m->canvas.origin_mm[0], m->canvas.origin_mm[1],
		  m->canvas.surface_z_mm);
	if (m->canvas.has_lab)
		sb_printf(&sb, ", reads lab %g %g %g", m->canvas.lab[0], m->canvas.lab[1],
			  m->canvas.lab[2]);
	sb_printf(&sb, "\n");
	if (m->xf.registered) {
		struct machine_pt o = xform_to_machine(&m->xf, (struct canvas_pt){ 0, 0 });

		sb_printf(&sb, "  canvas placed by calibration.arm: origin corner at (%.2f, %.2f) mm, "
			  "x edge turned %.3f deg, scale %.5f\n", o.x, o.y,
			  atan2(m->xf.a[1][0], m->xf.a[0][0]) * 180.0 / M_PI, m->xf.scale);
	}
	sb_printf(&sb, "  stations: %d wells, %d mixing cells, water, wipe, park at (%g, %g, %g) mm\n",
		  m->n_wells, m->n_cells, m->park_mm[0], m->park_mm[1], m->park_mm[2]);
	if (m->n_keep_out)
		sb_printf(&sb, "  keep-out boxes: %d\n", m->n_keep_out);
	sb_printf(&sb, "  brushes:");
	for (int i = 0; i < m->n_brushes; i++)
		sb_printf(&sb, " %s (%g mm)", m->brushes[i].name, m->brushes[i].width_mm);
	sb_printf(&sb, "\n");
	sb_printf(&sb, "  limits: soft %g mm/s, %g mm/s2, %g mm; hard %g mm/s, %g mm/s2, %g mm\n",
		  m->limits.soft.speed_mm_s, m->limits.soft.accel_mm_s2, m->limits.soft.move_mm,
		  m->limits.hard.speed_mm_s, m->limits.hard.accel_mm_s2, m->limits.hard.move_mm);
	sb_printf(&sb, "  tolerances: mix %g, paint %g CIEDE2000\n",
		  m->tolerances.mix_de00, m->tolerances.paint_de00);
	sb_printf(&sb, "  unattended: a colour the paints cannot reach is accepted within %g CIEDE2000%s\n",
		  m->unattended.accept_within_de00,
		  m->unattended.accept_within_de00 > 0.0 ? "" : " (never)");
	sb_printf(&sb, "  mixing: %g ml a unit, %g..%g ml a cell, up to %d paints\n",
		  m->mixing.dispense_unit_ml, m->mixing.cell_min_ml, m->mixing.cell_max_ml,
		  m->mixing.max_paints);
	sb_printf(&sb, "  camera: %s %dx%d%s%s\n",
		  machine_cam_backend_names[m->camera.backend], m->camera.width, m->camera.height,
		  m->camera.device[0] ? " on " : "", m->camera.device);
	if (m->arm_backend == MACHINE_ARM_SIM || m->camera.backend == MACHINE_CAM_SIM) {
		const struct machine_sim_faults *f = &m->sim.faults;

		sb_printf(&sb, "  sim: %s light, %g mm cells, batch variation %g, drying %g s; faults:",
			  machine_sim_light_names[m->sim.light_spectrum], m->sim.cell_mm,
			  m->sim.batch_variation, m->sim.drying_s);
		if (f->drop_frames > 0)
			sb_printf(&sb, " drop_frames %g", f->drop_frames);
		if (f->corrupt_frames > 0)
			sb_printf(&sb, " corrupt_frames %g", f->corrupt_frames);
		if (f->command_failures > 0)
			sb_printf(&sb, " command_failures %g", f->command_failures);
		if (f->stall_at_s > 0)
			sb_printf(&sb, " stall_at_s %g", f->stall_at_s);
		if (f->dry_well[0])
			sb_printf(&sb, " dry_well %s (%g ml)", f->dry_well, f->dry_well_ml);
		if (f->power_loss_after > 0)
			sb_printf(&sb, " power_loss_after %ld", f->power_loss_after);
		if (!(f->drop_frames > 0 || f->corrupt_frames > 0 || f->command_failures > 0 ||
		      f->stall_at_s > 0 || f->dry_well[0] || f->power_loss_after > 0))
			sb_printf(&sb, " none");
		sb_printf(&sb, "\n");
	}
	sb_printf(&sb, "  brakes: %d attempts a subtask, %g s wall, %g s arm, cost %g %s\n",
		  m->brakes.attempts_per_subtask, m->brakes.wall_time_s, m->brakes.arm_time_s,
		  m->brakes.cost_max, m->costs.currency);
	return sb_take(&sb);
}

/* machine_geometry.c: the machine file's kinematics, zones (canvas, stations, park, keep-out boxes) and brushes, each held to the work area. */
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "config/machine.h"
#include "config/machine_int.h"

static int load_range(json_obj *o, const char *key, double lo, double hi, double out[2],
		      bl_err *err)
{
	BL_TRY(json_vec(o, key, JSON_REQUIRED, 2, lo, hi, out, err));
	if (out[0] >= out[1])
		return json_fail(o, key, err, BL_EINVAL, "minimum %g must be below maximum %g",
				 out[0], out[1]);
	return 0;
}

int machine_load_kinematics(json_obj *root, struct machine *m, bl_err *err)
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

int machine_in_box2(const double p[2], const double lo[3], const double hi[3])
{
	return p[0] >= lo[0] && p[0] <= hi[0] && p[1] >= lo[1] && p[1] <= hi[1];
}

int machine_check_point_in_work(json_obj *o, const char *key, const struct machine *m,
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
	BL_TRY(machine_check_point_in_work(o, "center_mm", m, p, err));
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
	return machine_in_box2(p, lo, hi) && p[2] >= lo[2] && p[2] <= hi[2];
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

int machine_load_zones(json_obj *root, struct machine *m, bl_err *err)
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

		if (!machine_in_box2(m->canvas.origin_mm, m->work_min_mm, m->work_max_mm) ||
		    !machine_in_box2(far, m->work_min_mm, m->work_max_mm))
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
	BL_TRY(machine_check_point_in_work(&o, "pose_mm", m, m->park_mm, err));
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
int machine_check_unique_names(json_obj *root, const struct machine *m, bl_err *err)
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

int machine_load_brushes(json_obj *root, struct machine *m, bl_err *err)
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

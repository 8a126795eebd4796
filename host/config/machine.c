/* machine.c: loading of the machine file (schema v1): the top level and arm sections in their order, the registration, the enums' names, lookups and the summary. */
#include "config/machine.h"

#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	BL_TRY(machine_load_kinematics(&o, m, err));
	BL_TRY(json_vec(&o, "home_mm", JSON_REQUIRED, 3, -MACHINE_COORD_MAX_MM, MACHINE_COORD_MAX_MM, m->home_mm, err));
	BL_TRY(machine_check_point_in_work(&o, "home_mm", m, m->home_mm, err));
	BL_TRY(json_end(&o, err));

	BL_TRY(json_num(root, "travel_z_mm", JSON_REQUIRED, -MACHINE_COORD_MAX_MM, MACHINE_COORD_MAX_MM,
		     &m->travel_z_mm, err));
	if (m->travel_z_mm < m->work_min_mm[2] || m->travel_z_mm > m->work_max_mm[2])
		return json_fail(root, "travel_z_mm", err, BL_EINVAL,
				 "%g lies outside work_area z", m->travel_z_mm);

	BL_TRY(machine_load_zones(root, m, err));
	BL_TRY(machine_load_brushes(root, m, err));
	BL_TRY(machine_check_unique_names(root, m, err));
	BL_TRY(machine_load_limits(root, m, err));
	BL_TRY(machine_load_safety(root, m, err));
	BL_TRY(machine_load_tolerances(root, m, err));
	BL_TRY(machine_load_unattended(root, m, err));
	BL_TRY(machine_load_mixing(root, m, err));
	BL_TRY(machine_load_painting(root, m, err));
	BL_TRY(machine_load_camera(root, m, err));
	BL_TRY(machine_load_calibration(root, m, err));
	BL_TRY(machine_load_costs(root, m, err));
	BL_TRY(machine_load_planner(root, m, err));
	BL_TRY(machine_load_brakes(root, m, err));
	BL_TRY(machine_load_review(root, m, err));
	BL_TRY(machine_load_reviewer(root, m, err));
	BL_TRY(machine_load_sim(root, m, err));
	return json_end(root, err);
}

/* Whether the canvas (0..W, 0..H mm) comes within r mm of canvas point (x, y). */
static int canvas_near(const struct machine *m, double x, double y, double r)
{
	double dx = fmax(0.0, fmax(-x, x - m->canvas.size_mm[0]));
	double dy = fmax(0.0, fmax(-y, y - m->canvas.size_mm[1]));

	return hypot(dx, dy) < r;
}

int machine_canvas_fits(const struct machine *m, const struct xform *xf, bl_err *err)
{
	const struct machine_station *st[CFG_MAX_WELLS + CFG_MAX_CELLS + 2];
	const double W = m->canvas.size_mm[0], H = m->canvas.size_mm[1];
	int n = 0;

	for (int k = 0; k < 4; k++) {
		struct canvas_pt cp = { (k == 1 || k == 2) ? W : 0.0, k >= 2 ? H : 0.0 };
		struct machine_pt mp = xform_to_machine(xf, cp);
		double p[2] = { mp.x, mp.y };

		if (!machine_in_box2(p, m->work_min_mm, m->work_max_mm))
			return bl_fail(err, BL_EINVAL, "puts canvas corner (%g, %g) at machine (%.1f, %.1f) "
				       "mm, outside work_area", cp.x, cp.y, mp.x, mp.y);
	}
	for (int i = 0; i < m->n_wells; i++)
		st[n++] = &m->wells[i];
	for (int i = 0; i < m->n_cells; i++)
		st[n++] = &m->cells[i];
	st[n++] = &m->water;
	st[n++] = &m->wipe;
	for (int i = 0; i < n; i++) {
		struct canvas_pt c = xform_to_canvas(xf, (struct machine_pt){ st[i]->center_mm[0], st[i]->center_mm[1] });

		if (canvas_near(m, c.x, c.y, st[i]->radius_mm / xf->scale))
			return bl_fail(err, BL_EINVAL, "puts the canvas over '%s' (machine (%.1f, %.1f) mm, "
				       "radius %g mm): a stroke there would touch it", st[i]->name,
				       st[i]->center_mm[0], st[i]->center_mm[1], st[i]->radius_mm);
	}
	/* A keep-out box over the canvas: its corners on it, or the canvas's edges (every 2 mm) in it. */
	for (int i = 0; i < m->n_keep_out; i++) {
		const struct machine_box *b = &m->keep_out[i];
		int hit = 0;

		for (int k = 0; k < 4 && !hit; k++) {
			struct canvas_pt c = xform_to_canvas(xf, (struct machine_pt){ k & 1 ? b->max_mm[0] : b->min_mm[0],
										     k & 2 ? b->max_mm[1] : b->min_mm[1] });

			hit = canvas_near(m, c.x, c.y, 1e-9);
		}
		for (double t = 0; t <= 2 * (W + H) && !hit; t += 2.0) {
			struct canvas_pt cp = t < W ? (struct canvas_pt){ t, 0 } :
					      t < W + H ? (struct canvas_pt){ W, t - W } :
					      t < 2 * W + H ? (struct canvas_pt){ 2 * W + H - t, H } :
							      (struct canvas_pt){ 0, 2 * (W + H) - t };
			struct machine_pt mp = xform_to_machine(xf, cp);
			double p[2] = { mp.x, mp.y };

			hit = machine_in_box2(p, b->min_mm, b->max_mm);
		}
		if (hit)
			return bl_fail(err, BL_EINVAL, "puts the canvas into keep_out '%s'", b->name);
	}
	return 0;
}

/*
 * The registration calibration.arm names becomes the machine's transform,
 * held to the machine's own bounds: the residual it allows, the canvas inside
 * the work area and clear of its stations and keep-out boxes.
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
	if ((rc = machine_canvas_fits(m, &m->xf, err)))
		bl_err_prefix(err, "%s: calibration.arm %s", m->file, c->arm);
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

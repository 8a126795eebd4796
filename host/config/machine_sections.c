/* machine_sections.c: the machine file's limits, safety, tolerances, unattended, mixing, painting, camera, calibration, costs, planner and brakes sections. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "config/machine.h"
#include "config/machine_int.h"

/* The kinds of action an arm executes (arm/action.h makes enum arm_kind of the same rows). */
static const char *const action_kinds[] = {
#define ARM_KIND(ID, name) name,
#include "config/action_kinds.def"
#undef ARM_KIND
	NULL
};

/* The same rows as one list for a message: "home, move, ..., park". */
static const char action_kinds_list[] = ""
#define ARM_KIND(ID, name) ", " name
#include "config/action_kinds.def"
#undef ARM_KIND
	;

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

int machine_load_limits(json_obj *root, struct machine *m, bl_err *err)
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

int machine_load_safety(json_obj *root, struct machine *m, bl_err *err)
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
			while (action_kinds[k] && strcmp(action_kinds[k], s->operator_kinds[i]))
				k++;
			if (!action_kinds[k])
				return json_fail(&o, key, err, BL_EINVAL,
						 "'%s' is not an action kind (%s)",
						 s->operator_kinds[i], action_kinds_list + 2);
			i++;
		}
		s->n_operator_kinds = (int)n;
	}
	return json_end(&o, err);
}

int machine_load_tolerances(json_obj *root, struct machine *m, bl_err *err)
{
	json_obj o;

	BL_TRY(json_child(root, "tolerances", JSON_REQUIRED, &o, err));
	BL_TRY(json_num(&o, "mix_de00", JSON_REQUIRED, 0.1, 50.0, &m->tolerances.mix_de00, err));
	BL_TRY(json_num(&o, "paint_de00", JSON_REQUIRED, 0.1, 100.0, &m->tolerances.paint_de00, err));
	return json_end(&o, err);
}

/* Optional; after tolerances, whose mix_de00 is its floor. */
int machine_load_unattended(json_obj *root, struct machine *m, bl_err *err)
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

int machine_load_mixing(json_obj *root, struct machine *m, bl_err *err)
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

int machine_load_painting(json_obj *root, struct machine *m, bl_err *err)
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
	/* A night: 7 h of arm time leaves an 8 h night its mixing, looking and drying. */
	p->arm_hours = 7.0;
	/* Off: mapped, the figures against the picture as it is were worse (docs/run.md). */
	p->map_gamut = 0;
	if ((rc = json_num(&o, "dry_s", JSON_OPTIONAL, 0.0, 7.0 * 24 * 3600, &p->dry_s, err)) >= 0 &&
	    (rc = json_num(&o, "arm_hours", JSON_OPTIONAL, 0.01, 240.0, &p->arm_hours, err)) >= 0 &&
	    (rc = json_bool(&o, "map_gamut", JSON_OPTIONAL, &p->map_gamut, err)) >= 0)
		rc = json_end(&o, err);
out_free:
	cJSON_Delete(none);
	return rc;
}

int machine_load_camera(json_obj *root, struct machine *m, bl_err *err)
{
	struct machine_camera *c = &m->camera;
	json_obj o, ctl;
	long long v;
	int rc;

	c->average_frames = 4;
	c->discard_frames = 3;
	c->repeat_observations = 3;
	c->repeat_max_fraction = 0.25;
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
	BL_TRY(json_i32(&o, "repeat_observations", JSON_OPTIONAL, 0, 20, &c->repeat_observations, err));
	if (c->repeat_observations == 1)
		return json_fail(&o, "repeat_observations", err, BL_EINVAL,
				 "one observation has no spread: 0 (no check) or 2..20");
	BL_TRY(json_num(&o, "repeat_max_fraction", JSON_OPTIONAL, 0.01, 1.0, &c->repeat_max_fraction, err));
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

int machine_load_calibration(json_obj *root, struct machine *m, bl_err *err)
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
	BL_TRY(json_num(&o, "max_age_h", JSON_OPTIONAL, 0.0, 87600.0, &c->max_age_h, err));
	BL_TRY(json_bool(&o, "follow_lamp", JSON_OPTIONAL, &c->follow_lamp, err));
	return json_end(&o, err);
}

int machine_load_costs(json_obj *root, struct machine *m, bl_err *err)
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
/* planner.files: absolute paths of files (whether each is a file is checked when a run starts the planner). */
static int load_planner_files(json_obj *o, struct machine_planner *p, bl_err *err)
{
	const cJSON *arr, *it;
	size_t n = 0;
	int rc = json_array(o, "files", JSON_OPTIONAL, CFG_PLANNER_FILES_MAX, &arr, &n, err);

	if (rc)
		return rc < 0 ? rc : 0;
	cJSON_ArrayForEach(it, arr) {
		char key[32], *f = p->files[p->n_files];

		snprintf(key, sizeof(key), "files[%d]", p->n_files);
		if (!cJSON_IsString(it))
			return json_fail(o, key, err, BL_EINVAL, "must be a file's absolute path");
		BL_TRY(json_str_value(o, key, it, f, CFG_PATH_MAX, err));
		if (f[0] != '/' || strstr(f, "/../") || !strcmp(f + strlen(f) - (strlen(f) >= 3 ? 3 : 0), "/.."))
			return json_fail(o, key, err, BL_EINVAL, "'%s' is not an absolute path without '..'", f);
		p->n_files++;
	}
	return 0;
}

int machine_load_planner(json_obj *root, struct machine *m, bl_err *err)
{
	struct machine_planner *p = &m->planner;
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
	BL_TRY(machine_load_sandbox_keys(&o, &p->cpu_s, &p->memory_mb, &p->tmpfs_mb, p->egress_json,
					 sizeof(p->egress_json), err));
	BL_TRY(load_planner_files(&o, p, err));
	return json_end(&o, err);
}

int machine_load_brakes(json_obj *root, struct machine *m, bl_err *err)
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

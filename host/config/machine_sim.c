/* machine_sim.c: the machine file's sim section: the simulated world's physics, camera, paints and faults, and --fault KEY=VALUE. */
#include <float.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "config/machine.h"
#include "config/machine_int.h"

/* Simulator defaults that depend on the machine: a camera straight above the work area seeing all of it. */
static void sim_defaults(struct machine *m)
{
	struct machine_sim *s = &m->sim;
	double w = m->work_max_mm[0] - m->work_min_mm[0], h = m->work_max_mm[1] - m->work_min_mm[1];
	double cx = m->work_min_mm[0] + 0.5 * w, cy = m->work_min_mm[1] + 0.5 * h;
	double aspect = m->camera.width > 0 ? (double)m->camera.height / m->camera.width : 0.5625;
	double tan_h = tan(30.0 * M_PI / 180.0), zw = 0.575 * w / tan_h, zh = 0.575 * h / (tan_h * aspect);
	const double *co = m->canvas.origin_mm, *cs = m->canvas.size_mm;
	double patch = fmin(0.9 * cs[0] / 7.4, 0.9 * cs[1] / 5.0);

	s->cell_mm = 1.0;
	s->cam_position_mm[0] = cx;
	s->cam_position_mm[1] = cy;
	s->cam_position_mm[2] = fmax(zw, zh);
	s->cam_look_at_mm[0] = cx;
	s->cam_look_at_mm[1] = cy;
	s->cam_look_at_mm[2] = 0.0;
	s->cam_hfov_deg = 60.0;
	s->light_spectrum = MACHINE_SIM_LIGHT_LED;
	s->light_position_mm[0] = cx;
	s->light_position_mm[1] = cy;
	s->light_position_mm[2] = 1.5 * fmax(w, h);
	s->sensor_peaks_nm[0] = 600.0;
	s->sensor_peaks_nm[1] = 535.0;
	s->sensor_peaks_nm[2] = 455.0;
	s->sensor_widths_nm[0] = 38.0;
	s->sensor_widths_nm[1] = 42.0;
	s->sensor_widths_nm[2] = 28.0;
	s->full_well_e = 9000.0;
	s->read_noise_e = 6.0;
	s->vignetting = 0.3;
	s->jpeg_quality = 90;
	s->batch_variation = 0.03;
	s->arm_noise_mm = 0.1;
	s->dispense_sd = 0.03;
	s->drying_s = 1200.0;
	s->has_chart = 1;
	s->chart_center_mm[0] = co[0] + 0.5 * cs[0];
	s->chart_center_mm[1] = co[1] + 0.5 * cs[1];
	s->chart_patch_mm = floor(patch);
	s->chart_gap_mm = floor(patch / 5.0);
	s->faults.dry_well_ml = 0.05;
	s->faults.smear_radius = 0.15;
	s->faults.smear_x = 0.5;
	s->faults.smear_y = 0.5;
}

/* The verifier's faults: one row each, read from sim.faults and --fault alike. */
static const struct verifier_fault {
	const char *key;
	double lo, hi;
	size_t off; /* in struct machine_sim_faults */
} verifier_faults[] = {
	{ "freeze_at_s", 0.0, 1e7, offsetof(struct machine_sim_faults, freeze_at_s) },
	{ "camera_moved_at_s", 0.0, 1e7, offsetof(struct machine_sim_faults, camera_moved_at_s) },
	{ "camera_shift_mm", -200.0, 200.0, offsetof(struct machine_sim_faults, camera_shift_mm) },
	{ "camera_turn_deg", -45.0, 45.0, offsetof(struct machine_sim_faults, camera_turn_deg) },
	{ "lamp_at_s", 0.0, 1e7, offsetof(struct machine_sim_faults, lamp_at_s) },
	{ "lamp_level", 0.0, 1.0, offsetof(struct machine_sim_faults, lamp_level) },
	{ "smear_at_s", 0.0, 1e7, offsetof(struct machine_sim_faults, smear_at_s) },
	{ "smear_radius", 0.01, 1.0, offsetof(struct machine_sim_faults, smear_radius) },
	{ "smear_x", 0.0, 1.0, offsetof(struct machine_sim_faults, smear_x) },
	{ "smear_y", 0.0, 1.0, offsetof(struct machine_sim_faults, smear_y) },
	{ "exposure_drift_per_h", -1.0, 1.0, offsetof(struct machine_sim_faults, exposure_drift_per_h) },
	/* The camera's own faults, for the run's camera check (camera.repeat_observations). */
	{ "flicker", 0.0, 0.5, offsetof(struct machine_sim_faults, flicker) },
	{ "auto_exposure", 0.0, 0.5, offsetof(struct machine_sim_faults, auto_exposure) },
	{ "sensor_noise", 1.0, 50.0, offsetof(struct machine_sim_faults, sensor_noise) },
};

static double *verifier_fault(struct machine_sim_faults *f, size_t i)
{
	return (double *)((char *)f + verifier_faults[i].off);
}

static int load_sim_faults(json_obj *sim, struct machine *m, bl_err *err)
{
	struct machine_sim_faults *f = &m->sim.faults;
	long long n = 0;
	json_obj o;
	int rc;

	rc = json_child(sim, "faults", JSON_OPTIONAL, &o, err);
	if (rc)
		return rc < 0 ? rc : 0;
	BL_TRY(json_num(&o, "drop_frames", JSON_OPTIONAL, 0.0, 1.0, &f->drop_frames, err));
	BL_TRY(json_num(&o, "corrupt_frames", JSON_OPTIONAL, 0.0, 1.0, &f->corrupt_frames, err));
	BL_TRY(json_num(&o, "command_failures", JSON_OPTIONAL, 0.0, 1.0, &f->command_failures, err));
	BL_TRY(json_num(&o, "stall_at_s", JSON_OPTIONAL, 0.0, 1e7, &f->stall_at_s, err));
	BL_TRY(json_str(&o, "dry_well", JSON_OPTIONAL, f->dry_well, sizeof(f->dry_well), err));
	if (f->dry_well[0] && !machine_find_well(m, f->dry_well))
		return json_fail(&o, "dry_well", err, BL_EINVAL, "'%s' is not a well of this machine",
				 f->dry_well);
	BL_TRY(json_num(&o, "dry_well_ml", JSON_OPTIONAL, 0.0, 10000.0, &f->dry_well_ml, err));
	rc = json_int(&o, "power_loss_after", JSON_OPTIONAL, 0, 1000000000LL, &n, err);
	if (rc < 0)
		return rc;
	f->power_loss_after = (long)n;
	for (size_t i = 0; i < sizeof(verifier_faults) / sizeof(verifier_faults[0]); i++)
		BL_TRY(json_num(&o, verifier_faults[i].key, JSON_OPTIONAL, verifier_faults[i].lo,
				verifier_faults[i].hi, verifier_fault(f, i), err));
	return json_end(&o, err);
}

static int load_sim_paints(json_obj *sim, struct machine *m, bl_err *err)
{
	struct machine_sim *s = &m->sim;
	json_obj o;
	int rc = json_child(sim, "paints", JSON_OPTIONAL, &o, err);

	if (rc)
		return rc < 0 ? rc : 0;
	if (o.nkeys > CFG_MAX_WELLS)
		return json_fail(sim, "paints", err, BL_EINVAL, "more than %d wells", CFG_MAX_WELLS);
	for (const cJSON *it = o.node->child; it; it = it->next) {
		int i = s->n_paints;

		if (!machine_find_well(m, it->string))
			return json_fail(&o, it->string, err, BL_EINVAL,
					 "'%s' is not a well of this machine", it->string);
		snprintf(s->paint_well[i], CFG_NAME_MAX, "%s", it->string);
		BL_TRY(json_str(&o, it->string, JSON_REQUIRED, s->paint_name[i], CFG_NAME_MAX, err));
		if (!s->paint_name[i][0])
			return json_fail(&o, it->string, err, BL_EINVAL, "must name a paint");
		s->n_paints++;
	}
	return json_end(&o, err);
}

int machine_load_sim(json_obj *root, struct machine *m, bl_err *err)
{
	struct machine_sim *s = &m->sim;
	json_obj o, c;
	int rc;

	sim_defaults(m);
	rc = json_child(root, "sim", JSON_OPTIONAL, &o, err);
	if (rc)
		return rc < 0 ? rc : 0;
	if (m->arm_backend != MACHINE_ARM_SIM && m->camera.backend != MACHINE_CAM_SIM)
		return json_fail(root, "sim", err, BL_EINVAL,
				 "neither the arm nor the camera is simulated; remove this key");
	BL_TRY(json_num(&o, "cell_mm", JSON_OPTIONAL, 0.25, 10.0, &s->cell_mm, err));
	if (m->canvas.size_mm[0] / s->cell_mm * (m->canvas.size_mm[1] / s->cell_mm) > 4e6)
		return json_fail(&o, "cell_mm", err, BL_EINVAL,
				 "%g mm makes more than 4 million canvas cells", s->cell_mm);

	rc = json_child(&o, "camera", JSON_OPTIONAL, &c, err);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		BL_TRY(json_vec(&c, "position_mm", JSON_REQUIRED, 3, -MACHINE_COORD_MAX_MM, MACHINE_COORD_MAX_MM,
			     s->cam_position_mm, err));
		BL_TRY(json_vec(&c, "look_at_mm", JSON_REQUIRED, 3, -MACHINE_COORD_MAX_MM, MACHINE_COORD_MAX_MM,
			     s->cam_look_at_mm, err));
		BL_TRY(json_num(&c, "hfov_deg", JSON_REQUIRED, 5.0, 150.0, &s->cam_hfov_deg, err));
		if (s->cam_position_mm[2] <= s->cam_look_at_mm[2] + 1.0)
			return json_fail(&c, "position_mm", err, BL_EINVAL,
					 "the camera must look down: it is not above look_at_mm");
		BL_TRY(json_end(&c, err));
	}

	rc = json_child(&o, "light", JSON_OPTIONAL, &c, err);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		json_obj d;

		BL_TRY(json_enum(&c, "spectrum", JSON_OPTIONAL, machine_sim_light_names,
			      &s->light_spectrum, err));
		BL_TRY(json_vec(&c, "position_mm", JSON_OPTIONAL, 3, -MACHINE_COORD_MAX_MM, MACHINE_COORD_MAX_MM,
			     s->light_position_mm, err));
		if (s->light_position_mm[2] <= m->work_max_mm[2])
			return json_fail(&c, "position_mm", err, BL_EINVAL,
					 "the light must hang above the work area (z > %g mm)",
					 m->work_max_mm[2]);
		rc = json_child(&c, "drift_per_h", JSON_OPTIONAL, &d, err);
		if (rc < 0)
			return rc;
		if (rc == 0) {
			BL_TRY(json_num(&d, "intensity", JSON_OPTIONAL, -0.5, 0.5,
				     &s->drift_intensity_per_h, err));
			BL_TRY(json_num(&d, "tilt", JSON_OPTIONAL, -0.5, 0.5, &s->drift_tilt_per_h, err));
			BL_TRY(json_end(&d, err));
		}
		BL_TRY(json_end(&c, err));
	}

	rc = json_child(&o, "sensor", JSON_OPTIONAL, &c, err);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		BL_TRY(json_vec(&c, "peaks_nm", JSON_OPTIONAL, 3, 380.0, 780.0, s->sensor_peaks_nm, err));
		BL_TRY(json_vec(&c, "widths_nm", JSON_OPTIONAL, 3, 5.0, 200.0, s->sensor_widths_nm, err));
		BL_TRY(json_vec(&c, "wb_error", JSON_OPTIONAL, 2, -0.5, 0.5, s->wb_error, err));
		BL_TRY(json_num(&c, "full_well_e", JSON_OPTIONAL, 100.0, 1e7, &s->full_well_e, err));
		BL_TRY(json_num(&c, "read_noise_e", JSON_OPTIONAL, 0.0, 1000.0, &s->read_noise_e, err));
		BL_TRY(json_num(&c, "vignetting", JSON_OPTIONAL, 0.0, 1.0, &s->vignetting, err));
		BL_TRY(json_i32(&c, "jpeg_quality", JSON_OPTIONAL, 1, 100, &s->jpeg_quality, err));
		BL_TRY(json_end(&c, err));
	}

	BL_TRY(load_sim_paints(&o, m, err));
	BL_TRY(json_num(&o, "batch_variation", JSON_OPTIONAL, 0.0, 0.5, &s->batch_variation, err));
	BL_TRY(json_num(&o, "arm_noise_mm", JSON_OPTIONAL, 0.0, 10.0, &s->arm_noise_mm, err));
	BL_TRY(json_num(&o, "dispense_sd", JSON_OPTIONAL, 0.0, 0.5, &s->dispense_sd, err));
	BL_TRY(json_num(&o, "drying_s", JSON_OPTIONAL, 0.0, 1e6, &s->drying_s, err));
	BL_TRY(json_vec(&o, "canvas_offset_mm", JSON_OPTIONAL, 2, -50.0, 50.0, s->canvas_offset_mm, err));
	BL_TRY(json_num(&o, "canvas_rotation_deg", JSON_OPTIONAL, -10.0, 10.0, &s->canvas_rotation_deg,
			err));

	rc = json_child(&o, "chart", JSON_OPTIONAL, &c, err);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		BL_TRY(json_vec(&c, "center_mm", JSON_REQUIRED, 2, -MACHINE_COORD_MAX_MM, MACHINE_COORD_MAX_MM,
			     s->chart_center_mm, err));
		BL_TRY(json_num(&c, "patch_mm", JSON_REQUIRED, 5.0, 200.0, &s->chart_patch_mm, err));
		BL_TRY(json_num(&c, "gap_mm", JSON_REQUIRED, 0.0, 50.0, &s->chart_gap_mm, err));
		BL_TRY(json_end(&c, err));
	}
	BL_TRY(load_sim_faults(&o, m, err));
	return json_end(&o, err);
}

int machine_sim_fault_set(struct machine *m, const char *kv, bl_err *err)
{
	struct machine_sim_faults *f = &m->sim.faults;
	char key[48];
	const char *eq = strchr(kv, '='), *val;
	char *end;
	double v;
	static const struct {
		const char *key;
		double lo, hi;
	} nums[] = {
		{ "drop_frames", 0.0, 1.0 },     { "corrupt_frames", 0.0, 1.0 },
		{ "command_failures", 0.0, 1.0 }, { "stall_at_s", 0.0, 1e7 },
		{ "dry_well_ml", 0.0, 10000.0 },  { "power_loss_after", 0.0, 1e9 },
	};

	if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof(key))
		return bl_fail(err, BL_EINVAL, "--fault '%s': write it as KEY=VALUE", kv);
	memcpy(key, kv, (size_t)(eq - kv));
	key[eq - kv] = '\0';
	val = eq + 1;
	if (strcmp(key, "dry_well") == 0) {
		if (val[0] && !machine_find_well(m, val))
			return bl_fail(err, BL_EINVAL, "--fault dry_well: '%s' is not a well of %s",
				       val, m->file);
		snprintf(f->dry_well, sizeof(f->dry_well), "%s", val);
		return 0;
	}
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		if (strcmp(key, nums[i].key) != 0)
			continue;
		v = strtod(val, &end);
		if (end == val || *end || !isfinite(v) || v < nums[i].lo || v > nums[i].hi)
			return bl_fail(err, BL_EINVAL, "--fault %s: '%s' is not a number in %g..%g",
				       key, val, nums[i].lo, nums[i].hi);
		if (i == 0)
			f->drop_frames = v;
		else if (i == 1)
			f->corrupt_frames = v;
		else if (i == 2)
			f->command_failures = v;
		else if (i == 3)
			f->stall_at_s = v;
		else if (i == 4)
			f->dry_well_ml = v;
		else if (v != floor(v))
			return bl_fail(err, BL_EINVAL, "--fault power_loss_after: '%s' is not a whole "
				       "number of actions", val);
		else
			f->power_loss_after = (long)v;
		return 0;
	}
	for (size_t i = 0; i < sizeof(verifier_faults) / sizeof(verifier_faults[0]); i++) {
		if (strcmp(key, verifier_faults[i].key) != 0)
			continue;
		v = strtod(val, &end);
		if (end == val || *end || !isfinite(v) || v < verifier_faults[i].lo || v > verifier_faults[i].hi)
			return bl_fail(err, BL_EINVAL, "--fault %s: '%s' is not a number in %g..%g",
				       key, val, verifier_faults[i].lo, verifier_faults[i].hi);
		*verifier_fault(f, i) = v;
		return 0;
	}
	return bl_fail(err, BL_EINVAL, "--fault: unknown fault '%s' (known: drop_frames, "
		       "corrupt_frames, command_failures, stall_at_s, dry_well, dry_well_ml, "
		       "power_loss_after, freeze_at_s, camera_moved_at_s, camera_shift_mm, camera_turn_deg, "
		       "lamp_at_s, lamp_level, smear_at_s, smear_radius, smear_x, smear_y, "
		       "exposure_drift_per_h, flicker, auto_exposure, sensor_noise)", key);
}


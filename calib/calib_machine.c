/* calib_machine.c: a machine's calibration in one call: camera profile, canvas geometry and arm registration from the files its machine file names. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "calib/calib.h"

static void add(char *buf, size_t n, const char *what)
{
	size_t len = strlen(buf);

	snprintf(buf + len, n - len, "%s%s", len ? ", " : "", what);
}

/*
 * Records file path (under machine key) in s: its digest, its record (prov,
 * when it has one), and the warnings its record calls for.
 */
static int record_file(struct calib_set *s, const struct machine *m, const char *key, const char *path,
		       const struct prov *pv, bl_err *err)
{
	struct calib_file *f = &s->files[s->n_files++];
	char w[600];
	int rc;

	f->key = key;
	snprintf(f->path, sizeof(f->path), "%s", path);
	if ((rc = bl_digest_file(path, 1u << 30, f->sha256, err)))
		return rc;
	f->age_h = -1;
	if (!pv)
		return 0;
	f->has_prov = 1;
	f->prov = *pv;
	f->age_h = prov_age_h(pv, 0);
	if (pv->verdict == PROV_FORCED) {
		snprintf(w, sizeof(w), "calibration.%s %s was written by --force though it failed (%s)", key,
			 path, pv->why);
		add(s->warnings, sizeof(s->warnings), w);
		s->forced++;
	}
	if (m->calibration.max_age_h > 0 && f->age_h > m->calibration.max_age_h) {
		snprintf(w, sizeof(w), "calibration.%s %s is %.3g h old, beyond calibration.max_age_h %g", key,
			 path, f->age_h, m->calibration.max_age_h);
		add(s->warnings, sizeof(s->warnings), w);
		s->too_old++;
	}
	return 0;
}

/* The camera profile's record (PROFILE.json beside it): where it came from and its verdict, when it has one. */
static int profile_record(struct calib_set *s, const struct machine *m, bl_err *err)
{
	char rec[CFG_PATH_MAX + 8];
	struct prov pv;
	int rc;

	snprintf(rec, sizeof(rec), "%s.json", m->calibration.camera_profile);
	if (access(rec, F_OK) != 0)
		return record_file(s, m, "camera_profile", m->calibration.camera_profile, NULL, err);
	if ((rc = calib_camera_record_prov(rec, &pv, err)))
		return bl_err_prefix(err, "%s: calibration.camera_profile's record", m->file);
	return record_file(s, m, "camera_profile", m->calibration.camera_profile, &pv, err);
}

void calib_profile_warn(const char *profile)
{
	char rec[CFG_PATH_MAX + 8];
	struct prov pv;
	bl_err e2 = { 0 };

	snprintf(rec, sizeof(rec), "%s.json", profile);
	if (access(rec, F_OK) != 0)
		return;
	if (calib_camera_record_prov(rec, &pv, &e2))
		log_warn("%s: its record cannot be read: %s", profile, e2.msg);
	else if (pv.verdict == PROV_FORCED)
		log_warn("camera profile %s was written by --force though it failed (%s)", profile, pv.why);
}

void calib_set_warn(const struct calib_set *s)
{
	if (s->warnings[0])
		log_warn("calibration: %s", s->warnings);
}

int calib_load_machine(const struct machine *m, struct calib_set *s, bl_err *err)
{
	const struct machine_calibration *c = &m->calibration;
	int rc;

	memset(s, 0, sizeof(*s));
	if (c->camera_profile[0]) {
		rc = meas_profile_open(c->camera_profile, &s->profile, err);
		if (rc)
			return bl_err_prefix(err, "%s: calibration.camera_profile", m->file);
		s->has_profile = 1;
		if ((rc = profile_record(s, m, err))) {
			calib_set_free(s);
			return rc;
		}
	} else {
		rc = meas_profile_open(NULL, &s->profile, err);
		if (rc)
			return rc;
		add(s->missing, sizeof(s->missing), "camera_profile");
	}
	if (c->canvas[0]) {
		rc = vis_canvas_load(c->canvas, &s->canvas, err);
		if (rc) {
			calib_set_free(s);
			return bl_err_prefix(err, "%s: calibration.canvas", m->file);
		}
		s->has_canvas = 1;
		if ((rc = record_file(s, m, "canvas", c->canvas, &s->canvas.prov, err))) {
			calib_set_free(s);
			return rc;
		}
		if (s->canvas.error_mm > c->max_canvas_error_mm) {
			char w[200];

			snprintf(w, sizeof(w), "canvas error %.2f mm exceeds %.2f", s->canvas.error_mm,
				 c->max_canvas_error_mm);
			add(s->warnings, sizeof(s->warnings), w);
		}
	} else {
		add(s->missing, sizeof(s->missing), "canvas");
	}
	if (c->arm[0]) {
		rc = calib_arm_load(c->arm, &s->arm, err);
		if (rc) {
			calib_set_free(s);
			return bl_err_prefix(err, "%s: calibration.arm", m->file);
		}
		s->has_arm = 1;
		if ((rc = record_file(s, m, "arm", c->arm, &s->arm.prov, err))) {
			calib_set_free(s);
			return rc;
		}
		/* A registration worse than the machine allows is refused, not warned about: it moves the arm. */
		if (s->arm.max_mm > c->max_arm_residual_mm) {
			calib_set_free(s);
			return bl_fail(err, BL_EINVAL, "%s: its residual %.3f mm exceeds the machine's "
				       "calibration.max_arm_residual_mm %.3f: register the arm again",
				       c->arm, s->arm.max_mm, c->max_arm_residual_mm);
		}
	} else {
		add(s->missing, sizeof(s->missing), "arm");
	}
	if (c->light_map[0]) {
		rc = vis_light_load(c->light_map, &s->light, err);
		if (rc) {
			calib_set_free(s);
			return bl_err_prefix(err, "%s: calibration.light_map", m->file);
		}
		s->has_light = 1;
		if ((rc = record_file(s, m, "light_map", c->light_map, &s->light.prov, err))) {
			calib_set_free(s);
			return rc;
		}
	}
	return 0;
}

void calib_set_free(struct calib_set *s)
{
	meas_profile_close(s->profile);
	s->profile = NULL;
	if (s->has_light)
		vis_light_free(&s->light);
	s->has_light = 0;
}

/* calib_machine.c: a machine's calibration in one call: camera profile, canvas geometry and arm registration from the files its machine file names. */
#include <stdio.h>
#include <string.h>

#include "calib/calib.h"

static void add(char *buf, size_t n, const char *what)
{
	size_t len = strlen(buf);

	snprintf(buf + len, n - len, "%s%s", len ? ", " : "", what);
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

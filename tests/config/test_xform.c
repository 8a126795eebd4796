/* test_xform.c: the canvas-to-machine transform: a turned placement and its inverse, a registration file becoming the machine's transform, a bad one refused naming the key. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "config/machine.h"
#include "config/xform.h"
#include "test.h"

static const char *src_path(const char *rel)
{
	static char p[4096];

	snprintf(p, sizeof(p), "%s/%s", getenv("BRUSHLOOP_SRC"), rel);
	return p;
}

TEST(a_turned_placement_round_trips_and_keeps_lengths)
{
	const double o[2] = { 264, 97 };
	const struct canvas_pt pts[] = { { 0, 0 }, { 400, 0 }, { 0, 300 }, { 123.4, 56.7 }, { -20, 333 } };
	struct xform x;

	xform_place(&x, o, 3.0);
	CHECK(!x.registered);
	CHECK_NEAR(x.scale, 1.0, 1e-12);
	for (size_t i = 0; i < sizeof(pts) / sizeof(pts[0]); i++) {
		struct machine_pt m = xform_to_machine(&x, pts[i]);
		struct canvas_pt back = xform_to_canvas(&x, m);

		CHECK_NEAR(back.x, pts[i].x, 1e-9);
		CHECK_NEAR(back.y, pts[i].y, 1e-9);
		/* a turn keeps the distance from the origin corner */
		CHECK_NEAR(hypot(m.x - o[0], m.y - o[1]), hypot(pts[i].x, pts[i].y), 1e-9);
	}
	{
		/* The canvas's x edge runs 3 degrees counterclockwise of the machine's x axis. */
		struct machine_pt e = xform_to_machine(&x, (struct canvas_pt){ 100, 0 });

		CHECK_NEAR(atan2(e.y - o[1], e.x - o[0]) * 180.0 / M_PI, 3.0, 1e-9);
	}
}

TEST(a_quarter_turn_maps_the_axes)
{
	const double o[2] = { 10, 20 };
	struct xform x;
	struct machine_pt m;

	xform_place(&x, o, 90.0);
	m = xform_to_machine(&x, (struct canvas_pt){ 1, 0 });
	CHECK_NEAR(m.x, 10, 1e-12);
	CHECK_NEAR(m.y, 21, 1e-12);
	m = xform_to_machine(&x, (struct canvas_pt){ 0, 1 });
	CHECK_NEAR(m.x, 9, 1e-12);
	CHECK_NEAR(m.y, 20, 1e-12);
}

TEST(a_map_that_is_not_a_registration_in_mm_is_refused)
{
	const double inch[2][3] = { { 25.4, 0, 260 }, { 0, 25.4, 100 } };
	const double flat[2][3] = { { 1, 1, 260 }, { 1, 1, 100 } };
	const double scaled[2][3] = { { 1.01, 0.02, 260 }, { -0.02, 0.99, 100 } };
	struct xform x;
	bl_err err = { 0 };

	CHECK(xform_from_map(&x, inch, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "not a registration in mm");
	CHECK(xform_from_map(&x, flat, &err) == BL_EINVAL);
	CHECK(xform_from_map(&x, scaled, &err) == 0);
	CHECK(x.registered);
	{
		struct canvas_pt c = xform_to_canvas(&x, xform_to_machine(&x, (struct canvas_pt){ 77, 33 }));

		CHECK_NEAR(c.x, 77, 1e-9);
		CHECK_NEAR(c.y, 33, 1e-9);
	}
}

/* An arm registration turning the canvas rot_deg about machine (ox, oy), as calib arm writes it. */
static const char *arm_file(const char *name, double rot_deg, double ox, double oy, double scale)
{
	static char buf[4096];
	double t = rot_deg * M_PI / 180.0, c = scale * cos(t), s = scale * sin(t);
	const double pts[5][2] = { { 20, 20 }, { 380, 20 }, { 380, 280 }, { 20, 280 }, { 200, 150 } };
	int k;

	k = snprintf(buf, sizeof(buf),
		     "{\"kind\": \"arm-calibration\", \"version\": 1, \"created\": \"2026-12-02T07:00:00Z\", "
		     "\"model\": \"similarity\", \"canvas_to_machine\": [[%.12g, %.12g, %g], [%.12g, %.12g, %g]], "
		     "\"surface_z\": [0, 0, 0], \"scale\": %g, \"rotation_deg\": %g, \"mirrored\": false, "
		     "\"rms_mm\": 0.05, \"max_mm\": 0.08, \"z_rms_mm\": 0.01, \"points\": [",
		     c, -s, ox, s, c, oy, scale, rot_deg);
	for (int i = 0; i < 5; i++)
		k += snprintf(buf + k, sizeof(buf) - (size_t)k,
			      "%s{\"canvas_mm\": [%g, %g], \"arm_mm\": [%.4f, %.4f, 0], \"residual_mm\": 0.05}",
			      i ? ", " : "", pts[i][0], pts[i][1], c * pts[i][0] - s * pts[i][1] + ox,
			      s * pts[i][0] + c * pts[i][1] + oy);
	snprintf(buf + k, sizeof(buf) - (size_t)k, "]}");
	return test_write_file(name, buf);
}

/* The example simulator machine naming arm as its calibration.arm. */
static const char *machine_naming(const char *name, const char *arm)
{
	char *text = NULL, *json;
	const char *path;
	cJSON *m, *cal;

	CHECK(fs_read_file(src_path("examples/machine-sim.json"), 1 << 20, &text, NULL, NULL) == 0);
	m = cJSON_Parse(text);
	free(text);
	cal = cJSON_GetObjectItem(m, "calibration");
	cJSON_DeleteItemFromObject(cal, "camera_profile");
	cJSON_DeleteItemFromObject(cal, "light_map");
	cJSON_AddStringToObject(cal, "arm", arm);
	json = cJSON_Print(m);
	path = test_write_file(name, json);
	cJSON_free(json);
	cJSON_Delete(m);
	return path;
}

TEST(the_machine_takes_its_transform_from_calibration_arm)
{
	struct machine *m = malloc(sizeof(*m));
	bl_err err = { 0 };
	const char *arm = arm_file("arm.json", 3.0, 264, 97, 1.0);
	const char *path = machine_naming("m.json", arm);
	struct machine_pt p;

	CHECK_MSG(machine_load(path, m, &err) == 0, "%s", err.msg);
	CHECK(m->xf.registered);
	p = xform_to_machine(&m->xf, (struct canvas_pt){ 100, 0 });
	CHECK_NEAR(p.x, 264 + 100 * cos(3.0 * M_PI / 180), 1e-6);
	CHECK_NEAR(p.y, 97 + 100 * sin(3.0 * M_PI / 180), 1e-6);
	/* Without the registration: the canvas square at zones.canvas.origin_mm. */
	CHECK_MSG(machine_load_nominal(path, m, &err) == 0, "%s", err.msg);
	CHECK(!m->xf.registered);
	p = xform_to_machine(&m->xf, (struct canvas_pt){ 100, 0 });
	CHECK_NEAR(p.x, m->canvas.origin_mm[0] + 100, 1e-12);
	CHECK_NEAR(p.y, m->canvas.origin_mm[1], 1e-12);
	free(m);
}

TEST(a_bad_registration_is_refused_naming_the_key)
{
	struct machine *m = malloc(sizeof(*m));
	bl_err err = { 0 };
	const char *path;

	/* In inches: a map no arm registration in mm can be. */
	path = machine_naming("inch.json", arm_file("inch-arm.json", 0.0, 260, 100, 25.4));
	CHECK(machine_load(path, m, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "calibration.arm");
	CHECK_STR_CONTAINS(err.msg, "canvas_to_machine");
	/* Turned so far the canvas leaves the work area. */
	path = machine_naming("far.json", arm_file("far-arm.json", 60.0, 260, 100, 1.0));
	CHECK(machine_load(path, m, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "calibration.arm");
	CHECK_STR_CONTAINS(err.msg, "outside work_area");
	/* Named but missing. */
	path = machine_naming("gone.json", "/nonexistent/arm.json");
	CHECK(machine_load(path, m, &err) != 0);
	CHECK_STR_CONTAINS(err.msg, "calibration.arm");
	free(m);
}

TEST_MAIN(T(a_turned_placement_round_trips_and_keeps_lengths), T(a_quarter_turn_maps_the_axes),
	  T(a_map_that_is_not_a_registration_in_mm_is_refused),
	  T(the_machine_takes_its_transform_from_calibration_arm),
	  T(a_bad_registration_is_refused_naming_the_key))

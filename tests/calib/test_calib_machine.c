/* test_calib_machine.c: the machine's calibration in one call, as the run engine loads it: all parts present, missing, broken, or beyond the machine's thresholds. */
#include <math.h>

#include "calib_test.h"

/* Calibrates camera, canvas and arm into the test's folder, as a bench session would. */
static void calibrate_all(void)
{
	const char *chart = tmp_path("chart.jpg"), *canvas = tmp_path("canvas.jpg");
	const char *cam[] = { "calib", "camera", "--frame", chart, "-o", tmp_path("cam.icc"), NULL };
	const char *cnv[] = { "calib", "canvas", "--frame", canvas, "-o", tmp_path("canvas.json"), NULL };
	const char *arm[] = { "calib", "arm", "--points", NULL, "-o", tmp_path("arm.json"), NULL };

	sim_frame(SIM_SCENE_CHART, 1, 0, NULL, chart, NULL);
	sim_frame(SIM_SCENE_CANVAS, 1, 0, NULL, canvas, NULL);
	arm[3] = test_write_file("pairs.json",
				 "{\"kind\": \"arm-points\", \"version\": 1, \"points\": ["
				 "{\"canvas_mm\": [20, 20], \"arm_mm\": [280.1, 120, 0]},"
				 "{\"canvas_mm\": [380, 20], \"arm_mm\": [640, 120.1, 0.1]},"
				 "{\"canvas_mm\": [380, 280], \"arm_mm\": [640.1, 380, 0]},"
				 "{\"canvas_mm\": [20, 280], \"arm_mm\": [280, 379.9, 0]},"
				 "{\"canvas_mm\": [200, 150], \"arm_mm\": [460, 250, 0]}]}");
	CHECK(run_cli(cam, NULL, NULL) == 0);
	CHECK(run_cli(cnv, NULL, NULL) == 0);
	CHECK(run_cli(arm, NULL, NULL) == 0);
}

TEST(everything_calibrated_loads_in_one_call)
{
	const char *m = machine_with("all.json", "{ \"camera_profile\": \"cam.icc\", \"canvas\": "
				     "\"canvas.json\", \"arm\": \"arm.json\", \"max_arm_residual_mm\": 1.0, "
				     "\"max_canvas_error_mm\": 0.5, \"max_camera_de00\": 1.5 }");
	struct machine *mc = malloc(sizeof(*mc));
	struct calib_set s;
	bl_err err = { 0 };
	arm_point p;

	calibrate_all();
	CHECK(machine_load(m, mc, &err) == 0);
	CHECK_MSG(calib_load_machine(mc, &s, &err) == 0, "%s", err.msg);
	CHECK(s.has_profile && s.has_canvas && s.has_arm);
	CHECK(meas_profile_calibrated(s.profile));
	CHECK(s.missing[0] == 0 && s.warnings[0] == 0);
	CHECK(s.canvas.error_mm >= 0 && s.canvas.error_mm < 0.5);
	/* Canvas (0, 0) is the canvas's origin corner, machine (260, 100). */
	calib_arm_to_machine(&s.arm, 0, 0, 0, &p);
	CHECK_NEAR(p.x, 260, 0.2);
	CHECK_NEAR(p.y, 100, 0.2);
	calib_set_free(&s);
	free(mc);
}

TEST(absent_parts_are_listed_and_broken_ones_refused)
{
	struct machine *mc = malloc(sizeof(*mc));
	struct calib_set s;
	bl_err err = { 0 };
	const char *m;

	m = machine_with("none.json", "{ \"max_arm_residual_mm\": 1.0, \"max_canvas_error_mm\": 0.5, "
			 "\"max_camera_de00\": 1.5 }");
	CHECK(machine_load(m, mc, &err) == 0);
	CHECK(calib_load_machine(mc, &s, &err) == 0);
	CHECK(!s.has_profile && !s.has_canvas && !s.has_arm);
	CHECK(!meas_profile_calibrated(s.profile));
	CHECK_STR_CONTAINS(s.missing, "camera_profile, canvas, arm");
	calib_set_free(&s);

	m = machine_with("gone.json", "{ \"camera_profile\": \"gone.icc\", \"max_arm_residual_mm\": "
			 "1.0, \"max_canvas_error_mm\": 0.5, \"max_camera_de00\": 1.5 }");
	CHECK(machine_load(m, mc, &err) == 0);
	CHECK(calib_load_machine(mc, &s, &err) != 0);
	CHECK_STR_CONTAINS(err.msg, "calibration.camera_profile");
	CHECK_STR_CONTAINS(err.msg, "gone.icc");

	test_write_file("junk.json", "{\"kind\": \"arm-calibration\", \"version\": 1}");
	m = machine_with("junk.json.machine", "{ \"arm\": \"junk.json\", \"max_arm_residual_mm\": 1.0, "
			 "\"max_canvas_error_mm\": 0.5, \"max_camera_de00\": 1.5 }");
	/* The machine itself refuses it, naming the key: no transform is made of a bad file. */
	CHECK(machine_load(m, mc, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "calibration.arm");
	/* And `config check`'s validator, for a machine read without its registration. */
	CHECK(machine_load_nominal(m, mc, &err) == 0);
	CHECK(calib_load_machine(mc, &s, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "calibration.arm");
	free(mc);
}

TEST(a_registration_the_machine_no_longer_accepts_is_refused)
{
	const char *m = machine_with("tight.json", "{ \"arm\": \"arm.json\", \"canvas\": \"canvas.json\", "
				     "\"max_arm_residual_mm\": 0.01, \"max_canvas_error_mm\": 0.01, "
				     "\"max_camera_de00\": 1.5 }");
	struct machine *mc = malloc(sizeof(*mc));
	struct calib_set s;
	bl_err err = { 0 };

	calibrate_all();
	CHECK(machine_load(m, mc, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "max_arm_residual_mm");
	CHECK(machine_load_nominal(m, mc, &err) == 0);
	CHECK(calib_load_machine(mc, &s, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "max_arm_residual_mm");
	free(mc);
}

TEST_MAIN(T(everything_calibrated_loads_in_one_call), T(absent_parts_are_listed_and_broken_ones_refused),
	  T(a_registration_the_machine_no_longer_accepts_is_refused))

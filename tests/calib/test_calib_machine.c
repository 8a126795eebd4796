/* test_calib_machine.c: the machine's calibration in one call, as the run engine loads it: all parts present, missing, broken, or beyond the machine's thresholds. */
#include <math.h>
#include <unistd.h>

#include "base/digest.h"
#include "vision/canvas.h"
#include "vision/light.h"

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

/* The "session" of a calibration file (JSON) as a dotted path's string, or "" (static buffer). */
static const char *session_str(const char *path, const char *key)
{
	static char out[512];
	char *text = NULL;
	cJSON *root, *v;
	bl_err err = { 0 };

	out[0] = 0;
	if (fs_read_file(path, 1 << 24, &text, NULL, &err))
		return out;
	root = cJSON_Parse(text);
	v = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "session"), key);
	if (cJSON_IsString(v))
		snprintf(out, sizeof(out), "%s", v->valuestring);
	cJSON_Delete(root);
	free(text);
	return out;
}

/*
 * Every file a session writes records when, from what (the frame's or the
 * points file's SHA-256), its settings, figures and verdict; the file it
 * replaces is kept as NAME.prev.
 */
TEST(every_calibration_file_records_its_session_and_keeps_the_one_it_replaces)
{
	char dg[BL_DIGEST_HEX], *first = NULL, *prev = NULL, frame[4096], out[4096];
	const char *cnv[] = { "calib", "canvas", "--frame", frame, "-o", out, NULL };
	bl_err err = { 0 };

	calibrate_all();
	CHECK(bl_digest_file(tmp_path("canvas.jpg"), 1 << 26, dg, &err) == 0);
	CHECK_STR_CONTAINS(session_str(tmp_path("canvas.json"), "source_sha256"), dg);
	CHECK_STR_CONTAINS(session_str(tmp_path("canvas.json"), "verdict"), "pass");
	CHECK_STR_CONTAINS(session_str(tmp_path("canvas.json"), "why"), "canvas error");
	CHECK(strlen(session_str(tmp_path("canvas.json"), "created")) == 20);
	CHECK(bl_digest_file(tmp_path("chart.jpg"), 1 << 26, dg, &err) == 0);
	CHECK_STR_CONTAINS(session_str(tmp_path("cam.icc.json"), "source_sha256"), dg);
	CHECK_STR_CONTAINS(session_str(tmp_path("cam.icc.json"), "why"), "held-out mean");
	CHECK(bl_digest_file(tmp_path("pairs.json"), 1 << 26, dg, &err) == 0);
	CHECK_STR_CONTAINS(session_str(tmp_path("arm.json"), "source_sha256"), dg);
	/* Again: the first canvas file is kept as canvas.json.prev. */
	snprintf(frame, sizeof(frame), "%s", tmp_path("canvas.jpg"));
	snprintf(out, sizeof(out), "%s", tmp_path("canvas.json"));
	CHECK(fs_read_file(tmp_path("canvas.json"), 1 << 20, &first, NULL, &err) == 0);
	CHECK(run_cli(cnv, NULL, NULL) == 0);
	CHECK(fs_read_file(tmp_path("canvas.json.prev"), 1 << 20, &prev, NULL, &err) == 0);
	CHECK(first && prev && strcmp(first, prev) == 0);
	free(first);
	free(prev);
}

/*
 * A profile forced past its threshold says so in its record, and every
 * command that uses it warns: config check, measure (through the machine
 * and with --profile), and a run, which also refuses, unattended, a
 * calibration older than calibration.max_age_h.
 */
TEST(a_forced_profile_is_warned_about_and_an_old_calibration_refuses_an_unattended_run)
{
	const char *chart = tmp_path("chart.jpg");
	const char *strict = machine_with("strict.json", "{ \"camera_profile\": \"forced.icc\", "
					  "\"max_arm_residual_mm\": 1.0, \"max_canvas_error_mm\": 0.5, "
					  "\"max_camera_de00\": 0.3, \"max_age_h\": 0.0002 }");
	char m[4096];
	const char *force[] = { "calib", "camera", "--machine", m, "--frame", chart, "--force", NULL };
	const char *check[] = { "config", "check", m, NULL };
	const char *meas[] = { "measure", chart, "--machine", m, "--roi", "600,300,20,20", NULL };
	const char *measp[] = { "measure", chart, "--profile", tmp_path("forced.icc"), "--roi", "600,300,20,20", NULL };
	const char *run[] = { "run", src_path("examples/targets/flat-shapes.png"), "--machine", m, "--out",
			      tmp_path("run"), "--max-strokes", "4", NULL };
	char *e;

	snprintf(m, sizeof(m), "%s", strict);
	sim_frame(SIM_SCENE_CHART, 1, 0, NULL, chart, NULL);
	CHECK(run_cli(force, NULL, NULL) == 1);
	CHECK_STR_CONTAINS(session_str(tmp_path("forced.icc.json"), "verdict"), "forced");
	CHECK_STR_CONTAINS(session_str(tmp_path("forced.icc.json"), "why"), "exceeds calibration.max_camera_de00 0.30");
	CHECK(run_cli(check, NULL, &e) == 0);
	fprintf(stderr, "config check: %s", e);
	CHECK_STR_CONTAINS(e, "written by --force though it failed");
	free(e);
	CHECK(run_cli(meas, NULL, &e) == 0);
	CHECK_STR_CONTAINS(e, "written by --force though it failed");
	free(e);
	CHECK(run_cli(measp, NULL, &e) == 0);
	CHECK_STR_CONTAINS(e, "written by --force though it failed");
	free(e);
	sleep(1); /* older than 0.0002 h */
	CHECK(run_cli(run, NULL, &e) == 2);
	fprintf(stderr, "run: %s", e);
	CHECK_STR_CONTAINS(e, "an unattended run refuses old calibration");
	CHECK_STR_CONTAINS(e, "beyond calibration.max_age_h");
	CHECK_STR_CONTAINS(e, "written by --force");
	free(e);
}

/* Files written before sessions were recorded (c35509f's, version 1) read as made by an unknown session; newer versions are refused. */
TEST(calibration_files_of_version_1_are_migrated)
{
	struct vis_canvas c;
	struct vis_light l;
	struct calib_arm a;
	struct prov pv;
	bl_err err = { 0 };
	char *text = NULL;

	CHECK_MSG(vis_canvas_load(src_path("tests/calib/data/canvas-v1-c35509f.json"), &c, &err) == 0, "%s", err.msg);
	CHECK(c.prov.verdict == PROV_UNKNOWN);
	CHECK_MSG(vis_light_load(src_path("tests/calib/data/light-map-v1-c35509f.json"), &l, &err) == 0, "%s", err.msg);
	CHECK(l.prov.verdict == PROV_UNKNOWN);
	vis_light_free(&l);
	CHECK_MSG(calib_arm_load(src_path("tests/calib/data/arm-v1-c35509f.json"), &a, &err) == 0, "%s", err.msg);
	CHECK(a.prov.verdict == PROV_UNKNOWN && a.n == 5);
	CHECK_MSG(calib_camera_record_prov(src_path("tests/calib/data/camera-session-v1-c35509f.json"), &pv, &err) == 0,
		  "%s", err.msg);
	CHECK(pv.verdict == PROV_UNKNOWN);
	CHECK_STR_CONTAINS(pv.why, "before brushloop recorded");
	/* Version 3 is newer than any this brushloop reads. */
	CHECK(fs_read_file(src_path("tests/calib/data/canvas-v1-c35509f.json"), 1 << 20, &text, NULL, &err) == 0);
	if (text) {
		char *v = strstr(text, "\"version\":\t1");

		CHECK(v != NULL);
		if (v)
			v[strlen("\"version\":\t")] = '3';
		CHECK(vis_canvas_load(test_write_file("canvas-v3.json", text), &c, &err) == BL_EINVAL);
		CHECK_STR_CONTAINS(err.msg, "newer");
		free(text);
	}
}

/* measure --profile P divides the machine's light map out as measuring through the machine does: the same figures. */
TEST(measure_with_a_profile_applies_the_machines_light_map)
{
	char frame[4096], truth[4096], mach[4096], prof[4096], *a_out = NULL, *b_out = NULL;
	const char *a[] = { "measure", frame, "--truth", truth, "--machine", mach, "--json", NULL };
	const char *b[] = { "measure", frame, "--truth", truth, "--machine", mach, "--profile", prof, "--json", NULL };

	snprintf(frame, sizeof(frame), "%s", tmp_path("swatches.jpg"));
	snprintf(truth, sizeof(truth), "%s", tmp_path("swatches.json"));
	snprintf(mach, sizeof(mach), "%s", src_path("examples/machine-sim.json"));
	snprintf(prof, sizeof(prof), "%s", src_path("examples/calibration/sim-camera.icc"));
	sim_frame(SIM_SCENE_SWATCHES, 1, 0, NULL, frame, truth);
	CHECK(run_cli(a, &a_out, NULL) == 0);
	CHECK(run_cli(b, &b_out, NULL) == 0);
	fprintf(stderr, "through the machine: mean %.2f; --profile: mean %.2f\n", json_at(a_out, "mean_de00"),
		json_at(b_out, "mean_de00"));
	CHECK(json_at(a_out, "mean_de00") < 1.5);
	CHECK_NEAR(json_at(b_out, "mean_de00"), json_at(a_out, "mean_de00"), 1e-9);
	free(a_out);
	free(b_out);
}

TEST_MAIN(T(everything_calibrated_loads_in_one_call), T(absent_parts_are_listed_and_broken_ones_refused),
	  T(a_registration_the_machine_no_longer_accepts_is_refused),
	  T(every_calibration_file_records_its_session_and_keeps_the_one_it_replaces),
	  T(a_forced_profile_is_warned_about_and_an_old_calibration_refuses_an_unattended_run),
	  T(calibration_files_of_version_1_are_migrated), T(measure_with_a_profile_applies_the_machines_light_map))

/* test_run_calib.c: the example simulator machine's committed camera profile and light map still match a fresh `brushloop calib camera`, a bad calibration path is refused, and an arm registration places a run's strokes on a canvas the simulator turned. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "base/digest.h"
#include "base/fs.h"
#include "color/color.h"
#include "config/machine.h"
#include "test.h"
#include "vision/image.h"
#include "vision/light.h"
#include "vision/measure.h"

static const char *src(const char *rel)
{
	static char p[2][4096];
	static int k;
	char *out = p[k++ % 2];

	snprintf(out, 4096, "%s/%s", getenv("BRUSHLOOP_SRC"), rel);
	return out;
}

TEST(committed_profile_matches_a_fresh_calibration)
{
	char fresh[4200], flat[4200], light[4200];
	struct meas_profile *a = NULL, *b = NULL;
	struct vis_light la = { 0 }, lb = { 0 };
	struct machine m;
	bl_err err = { 0 };
	double sum = 0.0, worst = 0.0, gworst = 0.0;
	int n = 0, known_a = 0, known_b = 0;

	/* The machine file names the committed profile and light map. */
	CHECK(machine_load(src("examples/machine-sim.json"), &m, &err) == 0);
	CHECK_STR_CONTAINS(m.calibration.camera_profile, "examples/calibration/sim-camera.icc");
	CHECK_STR_CONTAINS(m.calibration.light_map, "examples/calibration/sim-light.json");
	snprintf(fresh, sizeof(fresh), "%s/fresh.icc", test_tmpdir());
	snprintf(flat, sizeof(flat), "%s/flat.jpg", test_tmpdir());
	snprintf(light, sizeof(light), "%s/light.json", test_tmpdir());
	{
		/* What examples/calibration/make-sim-camera.sh runs, into the test's directory. */
		const char *render[] = { "sim", "render", "--machine", src("examples/machine-sim.json"),
					 "--seed", "1", "--scene", "flat", "-o", flat, NULL };
		const char *cal[] = { "calib", "camera", "--machine", src("examples/machine-sim.json"),
				      "--seed", "1", "--flat", flat, "--light-map", light, "-o", fresh,
				      NULL };

		CHECK(test_brushloop(render, NULL, NULL) == 0);
		CHECK(test_brushloop(cal, NULL, NULL) == 0);
	}
	CHECK_MSG(meas_profile_open(m.calibration.camera_profile, &a, &err) == 0, "%s", err.msg);
	CHECK_MSG(meas_profile_open(fresh, &b, &err) == 0, "%s", err.msg);
	CHECK_MSG(vis_light_load(m.calibration.light_map, &la, &err) == 0, "%s", err.msg);
	CHECK_MSG(vis_light_load(light, &lb, &err) == 0, "%s", err.msg);
	if (!a || !b || !la.gain || !lb.gain)
		goto out;
	CHECK(meas_profile_calibrated(a) && meas_profile_calibrated(b));
	/* Both profiles over a grid of camera code values: the same colours within a tolerance. */
	for (int r = 0; r <= 8; r++)
		for (int g = 0; g <= 8; g++)
			for (int bl = 0; bl <= 8; bl++) {
				const double rgb[3] = { r / 8.0, g / 8.0, bl / 8.0 };
				color_lab ca, cb;
				double de;

				meas_profile_lab(a, rgb, &ca);
				meas_profile_lab(b, rgb, &cb);
				de = color_de00(&ca, &cb);
				sum += de;
				worst = de > worst ? de : worst;
				n++;
			}
	/* Stated tolerance: mean 0.1, worst 0.5 CIEDE2000; regenerate with examples/calibration/make-sim-camera.sh. */
	CHECK_MSG(sum / n <= 0.1 && worst <= 0.5,
		  "committed profile against a fresh one: mean %.3f, worst %.3f CIEDE2000 "
		  "(regenerate: examples/calibration/make-sim-camera.sh)", sum / n, worst);
	/* The light maps: the same grid, the same cells known, gains within 0.01. */
	CHECK(la.cols == lb.cols && la.rows == lb.rows && la.width == lb.width);
	for (int i = 0; la.cols == lb.cols && la.rows == lb.rows && i < la.cols * la.rows; i++) {
		known_a += la.gain[i] > 0.0f;
		known_b += lb.gain[i] > 0.0f;
		if (la.gain[i] > 0.0f && lb.gain[i] > 0.0f)
			gworst = fmax(gworst, fabs(la.gain[i] - lb.gain[i]));
	}
	CHECK_MSG(abs(known_a - known_b) <= 2 && known_a > la.cols * la.rows / 2,
		  "cells known: %d committed, %d fresh", known_a, known_b);
	CHECK_MSG(gworst <= 0.01, "light maps differ by up to %.4f (regenerate: "
		  "examples/calibration/make-sim-camera.sh)", gworst);
out:
	vis_light_free(&la);
	vis_light_free(&lb);
	meas_profile_close(a);
	meas_profile_close(b);
}

TEST(a_bad_profile_path_is_refused_naming_it)
{
	char path[4200], *err = NULL;
	FILE *f;
	const char *args[] = { "run", src("examples/targets/flat-shapes.png"), "--machine", path,
			       "--out", NULL, NULL };
	char out[4200];
	char *text = NULL;

	/* The example machine with its profile path pointing nowhere. */
	snprintf(path, sizeof(path), "%s/m.json", test_tmpdir());
	snprintf(out, sizeof(out), "%s/run", test_tmpdir());
	args[5] = out;
	{
		FILE *in = fopen(src("examples/machine-sim.json"), "r");
		size_t len;
		char *p;

		CHECK(in != NULL);
		if (!in)
			return;
		text = calloc(1, 1 << 20);
		len = fread(text, 1, (1 << 20) - 1, in);
		fclose(in);
		text[len] = '\0';
		p = strstr(text, "calibration/sim-camera.icc");
		CHECK(p != NULL);
		if (!p) {
			free(text);
			return;
		}
		f = fopen(path, "w");
		fprintf(f, "%.*s/nonexistent/camera.icc%s", (int)(p - text), text,
			p + strlen("calibration/sim-camera.icc"));
		fclose(f);
		free(text);
	}
	CHECK(test_brushloop(args, NULL, &err) == 2);
	CHECK_STR_CONTAINS(err, "camera.icc");
	free(err);
}

/* The example machine with its calibration files by full paths (*cal: its calibration object). */
static cJSON *example_machine(cJSON **cal)
{
	char *text = NULL;
	cJSON *m;

	CHECK(fs_read_file(src("examples/machine-sim.json"), 1 << 20, &text, NULL, NULL) == 0);
	m = cJSON_Parse(text);
	free(text);
	*cal = cJSON_GetObjectItem(m, "calibration");
	cJSON_ReplaceItemInObject(*cal, "camera_profile",
				  cJSON_CreateString(src("examples/calibration/sim-camera.icc")));
	cJSON_ReplaceItemInObject(*cal, "light_map",
				  cJSON_CreateString(src("examples/calibration/sim-light.json")));
	return m;
}

/* The example machine with calibration.canvas naming canvas. */
static void machine_with_canvas(const char *path, const char *canvas)
{
	char *json;
	cJSON *cal, *m = example_machine(&cal);

	cJSON_AddStringToObject(cal, "canvas", canvas);
	json = cJSON_Print(m);
	test_write_file(path, json);
	cJSON_free(json);
	cJSON_Delete(m);
}

/*
 * A calibration.canvas that does not load is a bad file: exit 2 before the
 * run directory exists, not a failed observation counted by the
 * communications brake (exit 4) after the arm has moved.
 */
TEST(a_garbage_canvas_file_is_refused_at_the_start)
{
	char machine[4200], canvas[4200], out[4200], target[4200], *err = NULL;
	const char *args[] = { "run", target, "--machine", machine, "--out", out, "--max-strokes",
			       "4", NULL };

	snprintf(machine, sizeof(machine), "%s/m.json", test_tmpdir());
	snprintf(canvas, sizeof(canvas), "%s/canvas.json", test_tmpdir());
	snprintf(out, sizeof(out), "%s/run", test_tmpdir());
	snprintf(target, sizeof(target), "%s", src("examples/targets/flat-shapes.png"));
	test_write_file("canvas.json", "{\"kind\": \"canvas\", \"version\": 1, \"garbage\": [1, 2, 3]}");
	machine_with_canvas("m.json", canvas);
	CHECK(test_brushloop(args, NULL, &err) == 2);
	CHECK_STR_CONTAINS(err, "calibration.canvas");
	CHECK_STR_CONTAINS(err, "canvas.json");
	CHECK_MSG(access(out, F_OK) != 0, "the run directory was made for a run refused at the start");
	free(err);
}

/* The simulated canvas's true placement: turned and moved from where the machine file says. */
#define TURN_DEG 3.0
#define MOVE_X_MM 4.0
#define MOVE_Y_MM -3.0

/* The example machine, calibration by full paths, its simulated canvas turned; arm names calibration.arm (or NULL). */
static const char *machine_turned(const char *name, const char *arm)
{
	char *json;
	const char *path;
	cJSON *cal, *sim, *m = example_machine(&cal);

	if (arm)
		cJSON_AddStringToObject(cal, "arm", arm);
	sim = cJSON_GetObjectItem(m, "sim");
	cJSON_AddNumberToObject(sim, "canvas_rotation_deg", TURN_DEG);
	cJSON_AddItemToObject(sim, "canvas_offset_mm",
			      cJSON_CreateDoubleArray((const double[]){ MOVE_X_MM, MOVE_Y_MM }, 2));
	json = cJSON_Print(m);
	path = test_write_file(name, json);
	cJSON_free(json);
	cJSON_Delete(m);
	return path;
}

/* The points an operator touches on a canvas laid deg turned and (dx, dy) mm off the machine file's origin (260, 100). */
static const char *points_on(const char *name, double deg, double dx_mm, double dy_mm)
{
	static char buf[2048];
	const double pts[5][2] = { { 20, 20 }, { 380, 20 }, { 380, 280 }, { 20, 280 }, { 200, 150 } };
	double t = deg * M_PI / 180.0;
	int k = snprintf(buf, sizeof(buf), "{\"kind\": \"arm-points\", \"version\": 1, \"points\": [");

	for (int i = 0; i < 5; i++)
		k += snprintf(buf + k, sizeof(buf) - (size_t)k,
			      "%s{\"canvas_mm\": [%g, %g], \"arm_mm\": [%.3f, %.3f, 0]}", i ? ", " : "",
			      pts[i][0], pts[i][1], 260 + dx_mm + cos(t) * pts[i][0] - sin(t) * pts[i][1],
			      100 + dy_mm + sin(t) * pts[i][0] + cos(t) * pts[i][1]);
	snprintf(buf + k, sizeof(buf) - (size_t)k, "]}");
	return test_write_file(name, buf);
}

/*
 * Where an operator touching the turned canvas finds its points: canvas
 * (x, y) on the canvas as the simulator lays it (origin (260, 100) moved and
 * turned), what `calib arm --points` takes.
 */
static const char *touched_points(const char *name, double extra_x_mm)
{
	return points_on(name, TURN_DEG, MOVE_X_MM + extra_x_mm, MOVE_Y_MM);
}

/* The run's last observation against the target (status --json's canvas.mean_de00); -1 when none. */
static double run_mean(const char *dir, int *verified)
{
	const char *args[] = { "status", dir, "--json", NULL };
	char *out = NULL;
	cJSON *st, *c;
	double v = -1.0;

	*verified = 0;
	if (test_brushloop(args, &out, NULL) != 0 || !out) {
		free(out);
		return v;
	}
	st = cJSON_Parse(out);
	free(out);
	c = cJSON_GetObjectItem(st, "canvas");
	if (cJSON_IsNumber(cJSON_GetObjectItem(c, "mean_de00")))
		v = cJSON_GetObjectItem(c, "mean_de00")->valuedouble;
	*verified = cJSON_IsTrue(cJSON_GetObjectItem(c, "verified"));
	cJSON_Delete(st);
	return v;
}

/*
 * The simulator lays its canvas 3 degrees turned and (4, -3) mm off where the
 * machine file says. Registered by `calib arm` from the touched points, the
 * run paints where the canvas is and its batches verify; the same run with
 * the registration withheld paints off its prediction.
 */
TEST(the_arm_registration_places_strokes_on_a_turned_canvas)
{
	char arm[4200], with[4200], without[4200], turned[4200], points[4200], registered[4200];
	char *plan = NULL;
	const char *cal[] = { "calib", "arm", "--machine", turned, "--points", points, "-o", arm, NULL };
	double m_with, m_without;
	int rc_with, v_with, v_without;

	/* test_write_file's path is its own buffer: each is copied before the next file. */
	snprintf(turned, sizeof(turned), "%s", machine_turned("turned.json", NULL));
	snprintf(points, sizeof(points), "%s", touched_points("points.json", 0.0));
	snprintf(arm, sizeof(arm), "%s/arm.json", test_tmpdir());
	snprintf(with, sizeof(with), "%s/with", test_tmpdir());
	snprintf(without, sizeof(without), "%s/without", test_tmpdir());
	CHECK(test_brushloop(cal, NULL, NULL) == 0);
	snprintf(registered, sizeof(registered), "%s", machine_turned("registered.json", arm));
	{
		const char *a[] = { "run", src("examples/targets/flat-shapes.png"), "--machine", registered,
				    "--out", with, "--max-strokes", "12", "--accept-nearest", "--quiet", NULL };
		const char *b[] = { "run", src("examples/targets/flat-shapes.png"), "--machine", turned,
				    "--out", without, "--max-strokes", "12", "--accept-nearest", "--quiet", NULL };

		rc_with = test_brushloop(a, NULL, NULL);
		(void)test_brushloop(b, NULL, NULL); /* off its predictions, it may brake (exit 4) */
	}
	m_with = run_mean(with, &v_with);
	m_without = run_mean(without, &v_without);
	fprintf(stderr, "mean CIEDE2000 on the turned canvas: %.2f with the arm registration%s, "
		"%.2f with it withheld%s\n", m_with, v_with ? " (verified)" : "", m_without,
		v_without ? " (verified)" : "");
	CHECK(rc_with == 0 && v_with);
	CHECK(m_with > 0 && m_without > 0);
	CHECK_MSG(m_without - m_with >= 5.0, "with the registration %.2f, without %.2f: not clearly better",
		  m_with, m_without);
	/* The plan carries the map it was made with. */
	snprintf(arm, sizeof(arm), "%s/plan.json", with);
	CHECK(fs_read_file(arm, 1 << 26, &plan, NULL, NULL) == 0);
	CHECK_STR_CONTAINS(plan, "canvas_to_machine");
	free(plan);
}

/*
 * A run stopped part way, its arm registered again 2 mm off: its plan's
 * strokes were placed by the old map, so the resume is refused naming it.
 */
TEST(a_resume_under_another_registration_is_refused)
{
	char arm[4200], dir[4200], turned[4200], points[4200], registered[4200], target[4200];
	char *err = NULL;
	const char *cal[] = { "calib", "arm", "--machine", turned, "--points", points, "-o", arm, NULL };
	const char *args[] = { "run", target, "--machine", registered,
			       "--out", dir, "--max-strokes", "4", "--accept-nearest", "--quiet",
			       "--fault", "power_loss_after=10", NULL };
	const char *rargs[] = { "resume", dir, "--quiet", NULL };
	int rc;

	snprintf(turned, sizeof(turned), "%s", machine_turned("turned.json", NULL));
	snprintf(points, sizeof(points), "%s", touched_points("points.json", 0.0));
	snprintf(arm, sizeof(arm), "%s/arm.json", test_tmpdir());
	snprintf(dir, sizeof(dir), "%s/run", test_tmpdir());
	snprintf(target, sizeof(target), "%s", src("examples/targets/flat-shapes.png"));
	CHECK(test_brushloop(cal, NULL, NULL) == 0);
	snprintf(registered, sizeof(registered), "%s", machine_turned("registered.json", arm));
	rc = test_brushloop(args, NULL, &err);
	CHECK_MSG(rc == 86, "the run: exit %d (not the simulated power loss): %s", rc, err ? err : "");
	free(err);
	err = NULL;
	snprintf(points, sizeof(points), "%s", touched_points("points2.json", 2.0));
	CHECK(test_brushloop(cal, NULL, NULL) == 0);
	CHECK(test_brushloop(rargs, NULL, &err) == 2);
	CHECK_STR_CONTAINS(err, "calibration.arm");
	CHECK_STR_CONTAINS(err, "placement");
	free(err);
}

/* A calibration.arm that does not load refuses the run before anything moves, naming the key. */
TEST(a_bad_arm_registration_is_refused_at_the_start)
{
	char out[4200], arm[4200], machine[4200], target[4200], *err = NULL;
	const char *args[] = { "run", target, "--machine", machine, "--out", out, "--max-strokes", "4",
			       NULL };

	snprintf(out, sizeof(out), "%s/run", test_tmpdir());
	snprintf(arm, sizeof(arm), "%s", test_write_file("arm.json", "{\"kind\": \"arm-calibration\", "
								   "\"version\": 1, \"created\": \"x\"}"));
	snprintf(machine, sizeof(machine), "%s", machine_turned("m.json", arm));
	snprintf(target, sizeof(target), "%s", src("examples/targets/flat-shapes.png")); /* src's buffers turn over */
	CHECK(test_brushloop(args, NULL, &err) == 2);
	CHECK_STR_CONTAINS(err, "calibration.arm");
	CHECK_STR_CONTAINS(err, "arm.json");
	CHECK_MSG(access(out, F_OK) != 0, "the run directory was made for a run refused at the start");
	free(err);
}

/*
 * A canvas file made before the canvas moved (calibrated on the machine as
 * its file places the canvas; the simulator then lays it 3 degrees turned):
 * the run's first look sees the corner markers elsewhere and refuses before
 * anything moves, naming the corner and how far off it is.
 */
TEST(a_canvas_file_the_markers_contradict_is_refused_at_the_first_look)
{
	char canvas[4200], machine[4200], out[4200], target[4200], *err = NULL, *journal = NULL;
	const char *cal[] = { "calib", "canvas", "--machine", src("examples/machine-sim.json"), "-o", canvas,
			      NULL };
	const char *args[] = { "run", target, "--machine", machine, "--out", out, "--max-strokes", "4",
			       "--quiet", NULL };
	cJSON *cl, *m;
	char *json;

	snprintf(canvas, sizeof(canvas), "%s/canvas.json", test_tmpdir());
	snprintf(out, sizeof(out), "%s/run", test_tmpdir());
	snprintf(target, sizeof(target), "%s", src("examples/targets/flat-shapes.png"));
	CHECK(test_brushloop(cal, NULL, NULL) == 0);
	snprintf(machine, sizeof(machine), "%s", machine_turned("turned.json", NULL));
	CHECK(fs_read_file(machine, 1 << 20, &json, NULL, NULL) == 0);
	m = cJSON_Parse(json);
	free(json);
	cl = cJSON_GetObjectItem(m, "calibration");
	cJSON_AddStringToObject(cl, "canvas", canvas);
	json = cJSON_Print(m);
	test_write_file("turned.json", json);
	cJSON_free(json);
	cJSON_Delete(m);
	CHECK(test_brushloop(args, NULL, &err) == 2);
	fprintf(stderr, "%s", err ? err : "");
	CHECK_STR_CONTAINS(err, "calibration.canvas does not fit the canvas in view");
	CHECK_STR_CONTAINS(err, "mm away");
	free(err);
	/* Homed and parked out of the camera's view to look; nothing else moved. */
	snprintf(target, sizeof(target), "%s/journal.jsonl", out);
	CHECK(fs_read_file(target, 1 << 26, &journal, NULL, NULL) == 0);
	for (const char *p = journal; p && (p = strstr(p, "\"event\":\"executed\"")); p++)
		CHECK(strncmp(strstr(p, "\"kind\":"), "\"kind\":\"home\"", 13) == 0 ||
		      strncmp(strstr(p, "\"kind\":"), "\"kind\":\"park\"", 13) == 0);
	CHECK(journal && strstr(journal, "calibration.canvas does not fit"));
	free(journal);
}

/* A target with a dark band along the canvas's y = 0 edge: the planner lays strokes on the brush's margin there. */
static const char *edge_target(void)
{
	struct img im = { 0 };
	bl_err err = { 0 };
	char path[4200];
	static char out[4200];

	snprintf(path, sizeof(path), "%s/edge.png", test_tmpdir());
	CHECK(img_alloc(&im, 400, 300, &err) == 0);
	for (int y = 0; y < 300; y++)
		for (int x = 0; x < 400; x++) {
			unsigned char *p = im.px + 3 * ((size_t)y * 400 + x);

			p[0] = y < 15 ? 40 : 235;
			p[1] = y < 15 ? 60 : 235;
			p[2] = y < 15 ? 150 : 230;
		}
	CHECK(img_save(path, &im, &err) == 0);
	img_free(&im);
	snprintf(out, sizeof(out), "%s", path);
	return out;
}

/* The SHA-256 run.json lists for calibration.KEY; "" when absent. */
static const char *run_json_digest(const char *dir, const char *key)
{
	static char out[80];
	char p[4200], *text = NULL;
	cJSON *root;
	const cJSON *d;

	out[0] = 0;
	snprintf(p, sizeof(p), "%s/run.json", dir);
	if (fs_read_file(p, 1 << 24, &text, NULL, NULL))
		return out;
	root = cJSON_Parse(text);
	d = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "calibration"), key), "sha256");
	if (cJSON_IsString(d))
		snprintf(out, sizeof(out), "%s", d->valuestring);
	cJSON_Delete(root);
	free(text);
	return out;
}

/*
 * The canvas turned 3 degrees and (4, -3) mm off, registered from exact
 * points and calibrated by its markers: a run of 12 strokes along the
 * canvas's edge (on the brush's margin, where rounding to 0.01 mm on the
 * turned map used to put a point 0.000001 mm past it and the gate refused
 * the plan, exit 2) is admitted and finishes; its first look finds the
 * canvas file where the markers are; run.json lists the digest of every
 * calibration file it used.
 */
TEST(a_run_on_a_turned_registered_canvas_finishes)
{
	char arm[4200], turned[4200], points[4200], canvas[4200], out[4200], target[4200], *json, *journal = NULL;
	const char *cal[] = { "calib", "arm", "--machine", turned, "--points", points, "-o", arm, NULL };
	const char *cnv[] = { "calib", "canvas", "--machine", turned, "-o", canvas, NULL };
	const char *run[] = { "run", target, "--machine", turned, "--out", out, "--max-strokes", "12",
			      "--accept-nearest", "--quiet", NULL };
	char dg[BL_DIGEST_HEX];
	cJSON *m, *cl;
	int rc;

	snprintf(turned, sizeof(turned), "%s", machine_turned("turned.json", NULL));
	snprintf(points, sizeof(points), "%s", touched_points("points.json", 0.0));
	snprintf(arm, sizeof(arm), "%s/arm.json", test_tmpdir());
	snprintf(canvas, sizeof(canvas), "%s/canvas.json", test_tmpdir());
	snprintf(out, sizeof(out), "%s/run", test_tmpdir());
	snprintf(target, sizeof(target), "%s", edge_target());
	CHECK(test_brushloop(cal, NULL, NULL) == 0);
	CHECK(test_brushloop(cnv, NULL, NULL) == 0);
	snprintf(turned, sizeof(turned), "%s", machine_turned("registered.json", arm));
	CHECK(fs_read_file(turned, 1 << 20, &json, NULL, NULL) == 0);
	m = cJSON_Parse(json);
	free(json);
	cl = cJSON_GetObjectItem(m, "calibration");
	cJSON_AddStringToObject(cl, "canvas", canvas);
	json = cJSON_Print(m);
	snprintf(turned, sizeof(turned), "%s", test_write_file("registered.json", json));
	cJSON_free(json);
	cJSON_Delete(m);
	rc = test_brushloop(run, NULL, NULL);
	CHECK_MSG(rc == 0, "the run on the turned canvas: exit %d", rc);
	snprintf(points, sizeof(points), "%s/journal.jsonl", out);
	CHECK(fs_read_file(points, 1 << 26, &journal, NULL, NULL) == 0);
	CHECK(journal && strstr(journal, "\"event\":\"canvas_checked\"") && strstr(journal, "\"off_markers_mm\":"));
	/* The camera check ran before painting, and passed. */
	CHECK(journal && strstr(journal, "\"event\":\"camera_check\""));
	free(journal);
	CHECK(bl_digest_file(arm, 1 << 20, dg, NULL) == 0);
	CHECK(strcmp(run_json_digest(out, "arm"), dg) == 0);
	CHECK(bl_digest_file(canvas, 1 << 20, dg, NULL) == 0);
	CHECK(strcmp(run_json_digest(out, "canvas"), dg) == 0);
	CHECK(strlen(run_json_digest(out, "camera_profile")) == 64);
	CHECK(strlen(run_json_digest(out, "light_map")) == 64);
}

/*
 * Strokes the planner lays on the brush's margin (the edge target's band)
 * stay inside it after the round trip through any registration: for turns
 * of -5..10 degrees and offsets of a few mm, `gate check --planner` of the
 * plan denies nothing (c35509f's planner denied 6 of 33 actions at 3 degrees).
 */
TEST(strokes_on_the_margin_stay_inside_after_any_registration)
{
	static const double reg[4][3] = { { 3, 4, -3 }, { -5, 2, 5 }, { 10, -6, 8 }, { 0.7, 0.3, 0.2 } };
	char arm[4200], machine[4200], points[4200], plan[4200], target[4200];

	snprintf(target, sizeof(target), "%s", edge_target());
	for (int i = 0; i < 4; i++) {
		const char *cal[] = { "calib", "arm", "--machine", src("examples/machine-sim.json"), "--points", points,
				      "-o", arm, NULL };
		const char *pl[] = { "plan", target, "--machine", machine, "-o", plan, "--max-strokes", "40", NULL };
		const char *gc[] = { "gate", "check", plan, "--machine", machine, "--planner", NULL };
		char *out = NULL;

		snprintf(points, sizeof(points), "%s", points_on("pts.json", reg[i][0], reg[i][1], reg[i][2]));
		snprintf(arm, sizeof(arm), "%s/arm%d.json", test_tmpdir(), i);
		snprintf(plan, sizeof(plan), "%s/plan%d.json", test_tmpdir(), i);
		CHECK(test_brushloop(cal, NULL, NULL) == 0);
		snprintf(machine, sizeof(machine), "%s", machine_turned("reg.json", arm));
		CHECK(test_brushloop(pl, NULL, NULL) == 0);
		CHECK_MSG(test_brushloop(gc, &out, NULL) == 0 && out && strstr(out, " 0 denied"),
			  "turned %g degrees, (%g, %g) mm: %s", reg[i][0], reg[i][1], reg[i][2],
			  out ? out : "");
		free(out);
	}
}

/*
 * Before painting, a run observes the blank canvas and a mixing cell
 * camera.repeat_observations times: on the example machine the spread is
 * under camera.repeat_max_fraction of the mix tolerance and the run goes on
 * (its journal says the figure); each camera fault of the simulator that
 * makes the measurement not repeat (flickering light, exposure not locked, a
 * noisy sensor) refuses the unattended run before anything is painted,
 * naming the figure.
 */
TEST(a_camera_that_does_not_repeat_its_measurement_refuses_an_unattended_run)
{
	static const char *const faults[] = { "flicker=0.1", "auto_exposure=0.1", "sensor_noise=6" };
	char out[4200], target[4200], *err = NULL, *journal = NULL;

	snprintf(target, sizeof(target), "%s", src("examples/targets/flat-shapes.png"));
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++) {
		const char *args[] = { "run", target, "--out", out, "--max-strokes", "4", "--quiet", "--fault",
				       faults[i], NULL };
		char jp[4300];

		snprintf(out, sizeof(out), "%s/run%zu", test_tmpdir(), i);
		CHECK_MSG(test_brushloop(args, NULL, &err) == 2, "%s", faults[i]);
		fprintf(stderr, "%s: %s", faults[i], err ? err : "");
		CHECK_STR_CONTAINS(err, "the camera does not repeat its own measurement");
		free(err);
		err = NULL;
		/* Nothing painted: no stroke or dispense was executed. */
		snprintf(jp, sizeof(jp), "%s/journal.jsonl", out);
		CHECK(fs_read_file(jp, 1 << 26, &journal, NULL, NULL) == 0);
		CHECK(journal && strstr(journal, "\"event\":\"camera_check\"") &&
		      !strstr(journal, "\"kind\":\"stroke\"") && !strstr(journal, "\"kind\":\"dispense\""));
		free(journal);
		journal = NULL;
	}
}

TEST_MAIN(T(committed_profile_matches_a_fresh_calibration), T(a_bad_profile_path_is_refused_naming_it),
	  T(a_garbage_canvas_file_is_refused_at_the_start),
	  T(the_arm_registration_places_strokes_on_a_turned_canvas),
	  T(a_resume_under_another_registration_is_refused), T(a_bad_arm_registration_is_refused_at_the_start),
	  T(a_canvas_file_the_markers_contradict_is_refused_at_the_first_look),
	  T(a_run_on_a_turned_registered_canvas_finishes),
	  T(strokes_on_the_margin_stay_inside_after_any_registration),
	  T(a_camera_that_does_not_repeat_its_measurement_refuses_an_unattended_run))

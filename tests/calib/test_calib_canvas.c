/* test_calib_canvas.c: the canvas session on simulated frames: the homography's error against the simulator's truth, the canvas file vision reads, given corners, a hidden marker. */
#include <math.h>
#include <unistd.h>

#include "calib_test.h"
#include "vision/canvas.h"

TEST(canvas_error_is_under_half_a_millimetre_against_the_truth)
{
	for (uint64_t seed = 1; seed <= 3; seed++) {
		const char *frame = tmp_path("canvas.jpg"), *truth = tmp_path("canvas.json");
		const char *out = tmp_path("canvas-cal.json");
		const char *a[] = { "calib", "canvas", "--frame", frame, "--truth", truth, "-o", out,
				    "--json", NULL };
		struct vis_canvas vc;
		bl_err err = { 0 };
		char *text;

		sim_frame(SIM_SCENE_CANVAS, seed, 0, NULL, frame, truth);
		CHECK(run_cli(a, &text, NULL) == 0);
		fprintf(stderr, "seed %llu: error %.3f mm (truth mean %.3f, max %.3f mm; %g corners, "
			"point rms %.3f mm)\n", (unsigned long long)seed, json_at(text, "error_mm"),
			json_at(text, "truth.mean_mm"), json_at(text, "truth.max_mm"),
			json_at(text, "points"), json_at(text, "points_rms_mm"));
		CHECK(json_at(text, "truth.max_mm") < 0.5);
		CHECK(json_at(text, "error_mm") < 0.5);
		/* The propagated error is an honest figure: within a factor of 3 of the truth's. */
		CHECK(json_at(text, "error_mm") < 3 * json_at(text, "truth.mean_mm") + 0.05);
		CHECK(json_at(text, "error_mm") > json_at(text, "truth.mean_mm") / 3);
		CHECK(json_at(text, "points") >= 30); /* of 36: 12 on the origin marker, 8 on each other */
		/* The file vision reads, with the figure measure checks against the machine. */
		CHECK_MSG(vis_canvas_load(out, &vc, &err) == 0, "%s", err.msg);
		CHECK_NEAR(vc.error_mm, json_at(text, "error_mm"), 1e-6);
		CHECK(vc.size_mm[0] == 400 && vc.size_mm[1] == 300);
		free(text);
	}
}

TEST(the_canvas_file_locates_the_canvas_when_markers_are_hidden)
{
	const char *frame = tmp_path("canvas.jpg"), *out = tmp_path("cal.json");
	const char *a[] = { "calib", "canvas", "--frame", frame, "-o", out, NULL };
	struct vis_canvas vc;
	struct vis_geometry g;
	struct img im = { 0 };
	bl_err err = { 0 };

	sim_frame(SIM_SCENE_CANVAS, 5, 0, NULL, frame, NULL);
	CHECK(run_cli(a, NULL, NULL) == 0);
	CHECK(vis_canvas_load(out, &vc, &err) == 0);
	CHECK(img_load(frame, 40000000, &im, &err) == 0);
	/* Hide a marker: vision falls back to the calibrated file. */
	for (int y = 0; y < im.h / 4; y++)
		memset(im.px + 3 * (size_t)y * im.w, 120, (size_t)im.w * 3 / 2);
	CHECK(vis_locate(&im, "hidden", &vc, NULL, &g, &err) == 0);
	CHECK(g.source == VIS_FROM_FILE);
	for (int k = 0; k < 8; k++)
		CHECK_NEAR(g.corners_px[k], vc.corners_px[k], 1e-6);
	img_free(&im);
}

TEST(given_corners_fit_exactly_and_say_the_error_is_unmeasured)
{
	const char *frame = tmp_path("canvas.jpg"), *out = tmp_path("given.json");
	/* Clockwise as the frame shows them, from the origin's corner (bottom left on this bench). */
	const char *a[] = { "calib", "canvas", "--frame", frame, "--corners",
			    "505,518;520,137;1045,138;1104,518", "-o", out, "--json", NULL };
	char *text;
	struct vis_canvas vc;
	bl_err err = { 0 };

	sim_frame(SIM_SCENE_CANVAS, 1, 0, NULL, frame, NULL);
	CHECK(run_cli(a, &text, NULL) == 0);
	CHECK(strstr(text, "\"error_mm\":\tnull") != NULL);
	/* Checked against the four markers in view. */
	CHECK(json_at(text, "corners_off_markers_mm") < 5);
	CHECK(vis_canvas_load(out, &vc, &err) == 0);
	/* In the file's order, canvas (0, 0), (W, 0), (W, H), (0, H). */
	CHECK_NEAR(vc.corners_px[0], 505, 1e-6);
	CHECK_NEAR(vc.corners_px[2], 1104, 1e-6);
	CHECK_NEAR(vc.corners_px[5], 138, 1e-6);
	CHECK_NEAR(vc.corners_px[6], 520, 1e-6);
	CHECK(vc.error_mm < 0);
	free(text);
}

TEST(corners_given_as_a_mirror_are_refused)
{
	const char *frame = tmp_path("canvas.jpg"), *out = tmp_path("never.json");
	/* Clockwise as the image shows them from its top left: the y marker's corner first. */
	const char *a[] = { "calib", "canvas", "--frame", frame, "--corners",
			    "520,137;1045,138;1104,518;505,518", "-o", out, NULL };
	/* Counter-clockwise from the origin: a mirror image whatever the markers show. */
	const char *b[] = { "calib", "canvas", "--frame", frame, "--corners",
			    "505,518;1104,518;1045,138;520,137", "-o", out, NULL };
	/* The right order, one corner 15 mm off. */
	const char *c[] = { "calib", "canvas", "--frame", frame, "--corners",
			    "505,518;520,137;1045,138;1104,540", "-o", out, NULL };
	char *e;

	sim_frame(SIM_SCENE_CANVAS, 1, 0, NULL, frame, NULL);
	CHECK(run_cli(a, NULL, &e) == 2);
	fprintf(stderr, "%s", e);
	CHECK_STR_CONTAINS(e, "start at the canvas corner by marker 3");
	free(e);
	CHECK(run_cli(b, NULL, &e) == 2);
	fprintf(stderr, "%s", e);
	CHECK_STR_CONTAINS(e, "mirror image");
	free(e);
	CHECK(run_cli(c, NULL, &e) == 2);
	fprintf(stderr, "%s", e);
	CHECK_STR_CONTAINS(e, "corner (W, 0) at (1104, 540) px");
	CHECK_STR_CONTAINS(e, "do not describe this canvas");
	free(e);
	CHECK(!file_exists(out));
}

TEST(a_mirrored_canvas_file_is_refused_by_config_check)
{
	const char *cnv = test_write_file("mirrored.json", "{\"kind\": \"canvas\", \"version\": 1, "
					   "\"image_px\": [1280, 720], \"size_mm\": [400, 300], "
					   "\"corners_px\": [[520, 137], [1045, 138], [1104, 518], [505, 518]]}");
	char cal[4300];
	const char *m;
	char *e;

	snprintf(cal, sizeof(cal), "{ \"canvas\": \"%s\", \"max_arm_residual_mm\": 1.0, "
		 "\"max_canvas_error_mm\": 0.5, \"max_camera_de00\": 1.5 }", cnv);
	m = machine_with("mirrored-machine.json", cal);
	{
		const char *a[] = { "config", "check", m, NULL };

		CHECK(run_cli(a, NULL, &e) == 2);
		fprintf(stderr, "%s", e);
		CHECK_STR_CONTAINS(e, "mirror image");
		free(e);
	}
}

TEST(a_hidden_marker_is_named)
{
	const char *frame = tmp_path("canvas.jpg"), *png = tmp_path("hidden.png");
	const char *out = tmp_path("never.json");
	const char *a[] = { "calib", "canvas", "--frame", png, "-o", out, NULL };
	struct img im = { 0 };
	bl_err err = { 0 };
	char *e;

	sim_frame(SIM_SCENE_CANVAS, 1, 0, NULL, frame, NULL);
	CHECK(img_load(frame, 40000000, &im, &err) == 0);
	/* The arm over the bottom left marker. */
	for (int y = im.h / 2; y < im.h; y++)
		memset(im.px + 3 * ((size_t)y * im.w), 30, (size_t)im.w * 3 / 2);
	CHECK(img_save(png, &im, &err) == 0);
	CHECK(run_cli(a, NULL, &e) == 2);
	CHECK_STR_CONTAINS(e, "corner markers found");
	CHECK_STR_CONTAINS(e, "needs all 4");
	CHECK(!file_exists(out));
	free(e);
	img_free(&im);
}

TEST(a_wrong_canvas_size_is_refused)
{
	const char *frame = tmp_path("canvas.jpg");
	const char *a[] = { "calib", "canvas", "--frame", frame, "--size", "150x100", "-o",
			    tmp_path("x.json"), NULL };
	char *e;

	sim_frame(SIM_SCENE_CANVAS, 1, 0, NULL, frame, NULL);
	CHECK(run_cli(a, NULL, &e) == 2);
	CHECK_STR_CONTAINS(e, "zones.canvas.size_mm");
	free(e);
}

TEST_MAIN(T(canvas_error_is_under_half_a_millimetre_against_the_truth),
	  T(the_canvas_file_locates_the_canvas_when_markers_are_hidden),
	  T(given_corners_fit_exactly_and_say_the_error_is_unmeasured), T(a_hidden_marker_is_named),
	  T(corners_given_as_a_mirror_are_refused), T(a_mirrored_canvas_file_is_refused_by_config_check),
	  T(a_wrong_canvas_size_is_refused))

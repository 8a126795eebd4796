/* test_sim_frames.c: vision on simulator frames: every truth patch of the swatches, chart and canvas scenes measured, the canvas rectified from the simulator's markers, the uncalibrated error against the truth reported. */
#include "color/color.h"
#include "cv/cv.h"
#include "vision/measure.h"
#include "vtest.h"

/* The example machine's canvas: origin (260, 100) mm, 400 x 300 mm. */
static const double ORIGIN[2] = { 260, 100 }, SIZE[2] = { 400, 300 };

/* Renders scene S with the example machine (or machine) into NAME.jpg and NAME.json. */
static int render(const char *scene, const char *name, const char *machine, const char **frame,
		  const char **truth)
{
	static char f[4096], t[4096];
	char fn[256], tn[256];
	const char *args[] = { "sim", "render", "--scene", scene, "-o", f, "--truth", t,
			       machine ? "--machine" : NULL, machine, NULL };
	char *out = NULL, *err = NULL;
	int rc;

	snprintf(fn, sizeof(fn), "%s.jpg", name);
	snprintf(tn, sizeof(tn), "%s.json", name);
	snprintf(f, sizeof(f), "%s", vt_path(fn));
	snprintf(t, sizeof(t), "%s", vt_path(tn));
	rc = test_brushloop(args, &out, &err);
	CHECK_MSG(rc == 0, "render %s: %s", scene, err ? err : "");
	free(out);
	free(err);
	*frame = f;
	*truth = t;
	return rc;
}

static cJSON *load_json(const char *path)
{
	size_t len;
	unsigned char *text = vt_read_bytes(path, &len);
	cJSON *j = cJSON_ParseWithLength((const char *)text, len);

	free(text);
	return j;
}

/* Measures every truth patch; checks each was found (most of its pixels kept) and returns the report. */
static cJSON *measure_truth(const char *frame, const char *truth, int want_patches)
{
	const char *args[] = { "measure", frame, "--truth", truth, "--profile", "", "--json", NULL };
	char *out = NULL, *err = NULL;
	cJSON *j;
	int rc = test_brushloop(args, &out, &err);

	CHECK_MSG(rc == 0, "measure: %s", err ? err : "");
	CHECK_STR_CONTAINS(err, "uncalibrated");
	j = rc == 0 ? vt_json(out) : NULL;
	free(out);
	free(err);
	if (!j)
		return NULL;
	CHECK_MSG(vt_num(j, "count") == want_patches, "%g patches, want %d", vt_num(j, "count"),
		  want_patches);
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(j, "calibrated")));
	for (const cJSON *p = cJSON_GetObjectItem(j, "patches")->child; p; p = p->next) {
		double area = vt_arr(p, "roi", 2) * vt_arr(p, "roi", 3);

		/* Found: a uniform region, not an edge or a mix of surfaces that the robust mean throws away. */
		CHECK_MSG(vt_num(p, "pixels") >= 0.6 * area, "%s: %g of %g pixels kept",
			  cJSON_GetObjectItem(p, "name")->valuestring, vt_num(p, "pixels"), area);
		CHECK_MSG(vt_num(p, "de00") < 15.0, "%s: %.2f from the truth",
			  cJSON_GetObjectItem(p, "name")->valuestring, vt_num(p, "de00"));
		CHECK(vt_arr(p, "stddev", 0) < 2.0);
	}
	return j;
}

TEST(every_swatch_of_the_swatches_scene_is_measured)
{
	const char *frame, *truth;
	cJSON *j;

	if (render("swatches", "swatches", NULL, &frame, &truth))
		return;
	/* 13 wells with paint and 12 mixing cells with the fresh world's test mixes. */
	j = measure_truth(frame, truth, 25);
	if (j) {
		printf("swatches, uncalibrated against the truth: mean %.2f, max %.2f CIEDE2000\n",
		       vt_num(j, "mean_de00"), vt_num(j, "max_de00"));
		/* The sim's camera is not sRGB: an uncalibrated camera is visibly off, but not lost. */
		CHECK(vt_num(j, "mean_de00") > 1.0 && vt_num(j, "mean_de00") < 8.0);
		cJSON_Delete(j);
	}
}

TEST(every_patch_of_the_chart_is_measured)
{
	const char *frame, *truth;
	cJSON *j;

	if (render("chart", "chart", NULL, &frame, &truth))
		return;
	j = measure_truth(frame, truth, 24);
	if (j) {
		const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "patches"), 0);
		const cJSON *white = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "patches"), 18);

		printf("chart, uncalibrated against the truth: mean %.2f, max %.2f CIEDE2000\n",
		       vt_num(j, "mean_de00"), vt_num(j, "max_de00"));
		CHECK(strcmp(cJSON_GetObjectItem(first, "name")->valuestring, "dark skin") == 0);
		CHECK(strcmp(cJSON_GetObjectItem(white, "name")->valuestring, "white 9.5") == 0);
		/* The white patch is the lightest, dark skin dark: the patches are where the truth says. */
		CHECK(vt_arr(white, "lab", 0) > 85.0 && vt_arr(first, "lab", 0) < 50.0);
		CHECK(vt_num(j, "mean_de00") > 1.0 && vt_num(j, "mean_de00") < 8.0);
		cJSON_Delete(j);
	}
}

TEST(every_region_of_a_bare_canvas_is_measured)
{
	const char *frame, *truth;
	cJSON *j;

	if (render("canvas", "canvas", NULL, &frame, &truth))
		return;
	j = measure_truth(frame, truth, 48);
	if (j) {
		printf("bare canvas, uncalibrated against the truth: mean %.2f, max %.2f CIEDE2000\n",
		       vt_num(j, "mean_de00"), vt_num(j, "max_de00"));
		cJSON_Delete(j);
	}
}

/* Where the canvas corners are, from the truth's marker centres (machine mm -> px). */
static int truth_corners(const cJSON *truth, double corners[8])
{
	double mm[8], px[8], H[9];
	const double cpts[8] = { 0, 0, SIZE[0], 0, SIZE[0], SIZE[1], 0, SIZE[1] };
	int k = 0;

	for (const cJSON *m = cJSON_GetObjectItem(truth, "markers")->child; m && k < 4; m = m->next, k++) {
		mm[2 * k] = vt_arr(m, "center_mm", 0) - ORIGIN[0];
		mm[2 * k + 1] = vt_arr(m, "center_mm", 1) - ORIGIN[1];
		px[2 * k] = vt_arr(m, "center", 0);
		px[2 * k + 1] = vt_arr(m, "center", 1);
	}
	if (k != 4 || cv_homography(mm, px, 4, H, NULL))
		return -1;
	cv_apply_homography(H, cpts, corners, 4);
	return 0;
}

/*
 * The chart scene through `measure --canvas`: located by the markers, the
 * corners where the truth puts them, and in the raster (canvas mm) every
 * patch where the machine file's sim.chart puts it, with the colour the frame
 * shows at the truth's region.
 */
static void check_rectified(const char *name, const char *machine, double max_corner_px)
{
	const char *frame, *truth, *raster = vt_path("raster.png"), *target;
	const char *args[] = { "measure", NULL, "--canvas", "--target", NULL, "--raster", raster,
			       "--profile", "", "--json", machine ? "--machine" : NULL, machine, NULL };
	struct img im = { 0 }, r = { 0 }, white = { 0 };
	struct meas_profile *prof = NULL;
	char *out = NULL, *err = NULL;
	cJSON *t, *j, *mt;
	double want[8], worst = 0.0, worst_de = 0.0;
	bl_err e = { 0 };
	int rc;

	if (render("chart", name, machine, &frame, &truth))
		return;
	CHECK(img_alloc(&white, 400, 300, &e) == 0);
	memset(white.px, 240, (size_t)400 * 300 * 3);
	target = vt_save("white.png", &white);
	img_free(&white);
	args[1] = frame;
	args[4] = target;
	rc = test_brushloop(args, &out, &err);
	CHECK_MSG(rc == 0, "%s: %s", name, err ? err : "");
	j = rc == 0 ? vt_json(out) : NULL;
	free(out);
	free(err);
	t = load_json(truth);
	if (!j || !t || truth_corners(t, want)) {
		CHECK(0);
		cJSON_Delete(j);
		cJSON_Delete(t);
		return;
	}
	CHECK(strcmp(cJSON_GetObjectItem(j, "source")->valuestring, "markers") == 0);
	CHECK(vt_num(j, "markers_found") == 4);
	for (int i = 0; i < 4; i++)
		worst = fmax(worst, hypot(vt_arr(j, "corners_px", 2 * i) - want[2 * i],
					  vt_arr(j, "corners_px", 2 * i + 1) - want[2 * i + 1]));
	printf("%s: canvas corners within %.2f px of the truth's\n", name, worst);
	CHECK_MSG(worst < max_corner_px, "%s: corners off by %.2f px", name, worst);

	/* Patch (row, col) of the example's chart in canvas mm: centre (200, 150), 40 mm patches, 8 mm gaps, row 0 at +y. */
	mt = measure_truth(frame, truth, 24);
	CHECK(img_load(raster, 10000000, &r, &e) == 0 && r.w == 400 && r.h == 300);
	CHECK(img_load(frame, 10000000, &im, &e) == 0);
	CHECK(meas_profile_open(NULL, &prof, &e) == 0);
	for (int k = 0; mt && r.px && prof && k < 24; k++) {
		const cJSON *p = cJSON_GetArrayItem(cJSON_GetObjectItem(mt, "patches"), k);
		int row = k / 6, col = k % 6;
		struct meas_roi roi = { 60 + 48 * col + 10, 202 - 48 * row + 10, 20, 20 };
		struct meas_swatch s;
		color_lab a;

		CHECK(meas_swatch(&r, "raster", &roi, prof, &s, &e) == 0);
		a = (color_lab){ vt_arr(p, "lab", 0), vt_arr(p, "lab", 1), vt_arr(p, "lab", 2) };
		worst_de = fmax(worst_de, color_de00(&s.lab, &a));
	}
	printf("%s: chart patches in the raster within %.2f CIEDE2000 of the frame's\n", name,
	       worst_de);
	CHECK_MSG(worst_de < 2.0, "%s: a raster patch is %.2f from the frame's", name, worst_de);
	meas_profile_close(prof);
	img_free(&im);
	img_free(&r);
	cJSON_Delete(mt);
	cJSON_Delete(j);
	cJSON_Delete(t);
}

TEST(the_markers_rectify_a_sim_frame)
{
	check_rectified("front", NULL, 1.0);
}

/* The camera on the far side, looking back: the frame is upside down, the origin marker tells. */
TEST(the_markers_rectify_a_frame_from_the_other_side)
{
	size_t len;
	unsigned char *text = vt_read_bytes(BL_SOURCE_ROOT "/examples/machine-sim.json", &len);
	char *s = malloc(len + 1), *at;
	const char *from = "\"position_mm\": [350, -120, 780]", *to = "\"position_mm\": [350,  550, 780]";

	memcpy(s, text, len);
	s[len] = '\0';
	free(text);
	at = strstr(s, from);
	CHECK(at != NULL && strlen(from) == strlen(to));
	if (!at) {
		free(s);
		return;
	}
	memcpy(at, to, strlen(to));
	/* The light map is the front camera's view: a camera moved needs its own (measure applies a machine's map). */
	at = strstr(s, "\"light_map\": \"calibration/sim-light.json\", ");
	CHECK(at != NULL);
	if (at)
		memmove(at, at + strlen("\"light_map\": \"calibration/sim-light.json\", "),
			strlen(at + strlen("\"light_map\": \"calibration/sim-light.json\", ")) + 1);
	check_rectified("back", test_write_file("machine-back.json", s), 1.0);
	free(s);
}

TEST(a_truth_for_other_frames_is_refused)
{
	const char *frame, *truth;
	char *out = NULL, *err = NULL;
	struct img small = { 0 };
	bl_err e = { 0 };
	const char *small_path;
	int rc;

	if (render("chart", "other", NULL, &frame, &truth))
		return;
	CHECK(img_alloc(&small, 640, 360, &e) == 0);
	memset(small.px, 128, (size_t)640 * 360 * 3);
	small_path = vt_save("small.png", &small);
	img_free(&small);
	rc = test_brushloop((const char *const[]){ "measure", small_path, "--truth", truth, NULL },
			    &out, &err);
	CHECK(rc == 2);
	CHECK_STR_CONTAINS(err, "the truth is for 1280x720 frames, the image is 640x360");
	free(out);
	free(err);
	/* A marker entry with a typo is an unknown key, as everywhere. */
	{
		size_t len;
		unsigned char *text = vt_read_bytes(truth, &len);
		char *s = malloc(len + 1), *at;

		memcpy(s, text, len);
		s[len] = '\0';
		free(text);
		at = strstr(s, "\"visible\"");
		CHECK(at != NULL);
		if (at)
			memcpy(at, "\"visibel\"", 9);
		/* The typo hides the required key and is itself unknown: either way, named. */
		rc = test_brushloop((const char *const[]){ "measure", frame, "--truth",
							   test_write_file("typo.json", s), NULL },
				    &out, &err);
		CHECK(rc == 2);
		CHECK_STR_CONTAINS(err, "typo.json: markers[0].visib");
		free(out);
		free(err);
		free(s);
	}
}

TEST_MAIN(T(every_swatch_of_the_swatches_scene_is_measured), T(every_patch_of_the_chart_is_measured),
	  T(every_region_of_a_bare_canvas_is_measured), T(the_markers_rectify_a_sim_frame),
	  T(the_markers_rectify_a_frame_from_the_other_side), T(a_truth_for_other_frames_is_refused))

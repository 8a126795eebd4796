/* test_calib_camera.c: the camera session on simulated frames: quality against the simulator's truth on held-out patches, the ICC profile in transicc and in measure, drift over a night, model choice, and every kind of bad frame. */
#include <math.h>
#include <unistd.h>

#include "calib_test.h"
#include "color/color.h"
#include "vision/synth.h"

/* A simulated chart frame and its truth, rendered once per seed (four paths in turn). */
static const char *chart_frame(uint64_t seed, double hours, const char **truth)
{
	static char fs[4][4096], ts[4][4096];
	static int k;
	char name[64], *f, *t;

	k = (k + 1) % 4;
	f = fs[k];
	t = ts[k];
	snprintf(name, sizeof(name), "chart-%llu-%g.jpg", (unsigned long long)seed, hours);
	snprintf(f, sizeof(fs[k]), "%s", tmp_path(name));
	snprintf(name, sizeof(name), "chart-%llu-%g.json", (unsigned long long)seed, hours);
	snprintf(t, sizeof(ts[k]), "%s", tmp_path(name));
	if (!file_exists(f))
		sim_frame(SIM_SCENE_CHART, seed, hours, NULL, f, t);
	if (truth)
		*truth = t;
	return f;
}

TEST(builtin_chart_equals_its_data_file)
{
	struct calib_chart *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	bl_err err = { 0 };

	CHECK(calib_chart_builtin("colorchecker24", a, &err) == 0);
	CHECK_MSG(calib_chart_load(src_path("calib/data/colorchecker24.json"), b, &err) == 0, "%s",
		  err.msg);
	CHECK(a->n == 24 && b->n == 24 && a->cols == b->cols && a->rows == b->rows);
	CHECK(strcmp(a->source, b->source) == 0);
	CHECK_STR_CONTAINS(a->source, "November 2014");
	for (int i = 0; i < 24; i++) {
		CHECK(strcmp(a->patch[i], b->patch[i]) == 0);
		for (int k = 0; k < 3; k++)
			CHECK_NEAR(a->lab[i][k], b->lab[i][k], 1e-9);
	}
	CHECK(calib_chart_open("colorchecker99", a, &err) == BL_EINVAL);
	free(a);
	free(b);
}

TEST(chart_files_are_read_strictly)
{
	static const struct {
		const char *text, *want;
	} bad[] = {
		{ "{\"kind\":\"chart\",\"version\":1,\"name\":\"x\",\"source\":\"s\",\"cols\":2,\"rows\":2,"
		  "\"dark_frame\":true,\"patches\":[{\"name\":\"a\",\"lab\":[50,0,0]}]}",
		  "1 patches for a 2 x 2 grid" },
		{ "{\"kind\":\"chart\",\"version\":1,\"name\":\"x\",\"source\":\"s\",\"cols\":2,\"rows\":2,"
		  "\"dark_frame\":true,\"colour\":1,\"patches\":[{\"name\":\"a\",\"lab\":[50,0,0]},"
		  "{\"name\":\"b\",\"lab\":[50,0,0]},{\"name\":\"c\",\"lab\":[50,0,0]},"
		  "{\"name\":\"d\",\"lab\":[50,0,0]}]}",
		  "colour" },
		{ "{\"kind\":\"chart\",\"version\":1,\"name\":\"x\",\"source\":\"s\",\"cols\":2,\"rows\":2,"
		  "\"dark_frame\":true,\"patches\":[{\"name\":\"a\",\"lab\":[50,0,0]},"
		  "{\"name\":\"a\",\"lab\":[60,0,0]},{\"name\":\"c\",\"lab\":[50,0,0]},"
		  "{\"name\":\"d\",\"lab\":[50,0,0]}]}",
		  "named twice" },
		{ "{\"kind\":\"chart\",\"version\":1,\"name\":\"x\",\"source\":\"s\",\"cols\":2,\"rows\":2,"
		  "\"dark_frame\":true,\"patches\":[{\"name\":\"a\",\"lab\":[150,0,0]},"
		  "{\"name\":\"b\",\"lab\":[60,0,0]},{\"name\":\"c\",\"lab\":[50,0,0]},"
		  "{\"name\":\"d\",\"lab\":[50,0,0]}]}",
		  "outside 0..100" },
		{ "{\"kind\":\"palette\",\"version\":1}", "expected 'chart'" },
		{ "{\"kind\":\"chart\",\"version\":1,\"name\":\"x\",\"cols\":2,\"rows\":1,"
		  "\"dark_frame\":true,\"patches\":[]}",
		  "source" },
	};
	struct calib_chart *c = malloc(sizeof(*c));

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char name[32];
		const char *path;
		bl_err err = { 0 };

		snprintf(name, sizeof(name), "bad-chart-%zu.json", i);
		path = test_write_file(name, bad[i].text);
		CHECK(calib_chart_load(path, c, &err) == BL_EINVAL);
		CHECK_STR_CONTAINS(err.msg, bad[i].want);
		CHECK_STR_CONTAINS(err.msg, name);
	}
	free(c);
}

/*
 * The standard, against the simulator's truth on patches each fit
 * never saw (leave-one-out): mean at most 1.5; maximum at most 4 over the
 * patches the camera records (cyan's red channel is clipped at 0 by the
 * simulated camera's sRGB output, so its held-out colour is an
 * extrapolation: 3.4 to 4.2 over seeds, bounded here at 4.5); the
 * uncalibrated sRGB assumption several times worse.
 */
TEST(profile_meets_the_standard_on_simulated_frames)
{
	for (uint64_t seed = 1; seed <= 3; seed++) {
		const char *truth, *frame = chart_frame(seed, 0, &truth);
		const char *icc = tmp_path("std.icc");
		const char *args[] = { "calib", "camera", "--frame", frame, "--truth", truth, "-o", icc,
				       "--json", NULL };
		char *out;
		double held, held_max, in_max, srgb, fit;

		CHECK(run_cli(args, &out, NULL) == 0);
		held = json_at(out, "truth.held_out.mean_de00");
		held_max = json_at(out, "truth.held_out.max_de00");
		in_max = json_at(out, "truth.held_out_in_range.max_de00");
		srgb = json_at(out, "truth.srgb.mean_de00");
		fit = json_at(out, "truth.fit.mean_de00");
		fprintf(stderr, "seed %llu: held out %.2f/%.2f (unclipped max %.2f), fit %.2f, sRGB %.2f\n",
			(unsigned long long)seed, held, held_max, in_max, fit, srgb);
		CHECK(held <= 1.5);
		CHECK(in_max <= 4.0);
		CHECK(held_max <= 4.5);
		CHECK(fit <= held);
		CHECK(srgb >= 3.0 * held);
		CHECK(json_at(out, "pass") == 1);
		/* The JSON the issue names. */
		CHECK(json_at(out, "fit.mean_de00") >= 0 && json_at(out, "fit.max_de00") >= 0);
		CHECK(json_at(out, "held_out.mean_de00") >= 0 && json_at(out, "held_out.max_de00") >= 0);
		CHECK(file_exists(icc));
		free(out);
		unlink(icc);
		unlink(tmp_path("std.icc.json"));
	}
}

/* Converts the patches' code values with transicc and compares with brushloop's Lab. */
static double transicc_gap(const char *icc, const char *json_text)
{
	cJSON *root = cJSON_Parse(json_text), *p;
	const char *in = tmp_path("transicc.in"), *outp = tmp_path("transicc.out");
	FILE *f = fopen(in, "w");
	char cmd[8192];
	double worst = -1;
	int n = 0;

	if (!root || !f)
		return -1;
	cJSON_ArrayForEach(p, cJSON_GetObjectItem(root, "patches")) {
		cJSON *code = cJSON_GetObjectItem(p, "code");

		fprintf(f, "%.6f %.6f %.6f\n", 255 * cJSON_GetArrayItem(code, 0)->valuedouble,
			255 * cJSON_GetArrayItem(code, 1)->valuedouble,
			255 * cJSON_GetArrayItem(code, 2)->valuedouble);
	}
	fclose(f);
	snprintf(cmd, sizeof(cmd), "transicc -n -t1 -c0 -i '%s' -o '*Lab' < '%s' > '%s' 2>/dev/null",
		 icc, in, outp);
	if (system(cmd) != 0)
		goto out_free;
	f = fopen(outp, "r");
	if (!f)
		goto out_free;
	worst = 0;
	cJSON_ArrayForEach(p, cJSON_GetObjectItem(root, "patches")) {
		cJSON *lab = cJSON_GetObjectItem(p, "fit_lab");
		double l[3];

		if (fscanf(f, "%lf %lf %lf", &l[0], &l[1], &l[2]) != 3) {
			worst = -1;
			break;
		}
		for (int k = 0; k < 3; k++)
			worst = fmax(worst, fabs(l[k] - cJSON_GetArrayItem(lab, k)->valuedouble));
		n++;
	}
	fclose(f);
	if (n != 24)
		worst = -1;
out_free:
	cJSON_Delete(root);
	return worst;
}

TEST(profile_converts_in_transicc_as_in_brushloop)
{
	static const char *const models[] = { "matrix", "root-polynomial" };
	const char *frame = chart_frame(1, 0, NULL);

	for (int i = 0; i < 2; i++) {
		const char *icc = tmp_path(i ? "lut.icc" : "matrix.icc");
		const char *args[] = { "calib", "camera", "--frame", frame, "--model", models[i], "-o",
				       icc, "--json", "--force", NULL };
		char *out;
		double gap;

		CHECK(run_cli(args, &out, NULL) <= 1);
		gap = transicc_gap(icc, out);
		fprintf(stderr, "%s profile: transicc differs from brushloop by at most %.6f in L, a, b\n",
			models[i], gap);
		CHECK(gap >= 0 && gap < 0.01);
		free(out);
	}
}

TEST(profile_is_used_by_measure_through_the_machine_file)
{
	const char *truth, *frame = chart_frame(2, 0, &truth);
	const char *m = machine_with("measure-machine.json",
				     "{ \"camera_profile\": \"measure.icc\", \"max_arm_residual_mm\": 1.0, "
				     "\"max_canvas_error_mm\": 0.5, \"max_camera_de00\": 1.5 }");
	const char *cal[] = { "calib", "camera", "--machine", m, "--frame", frame, NULL };
	const char *meas[] = { "measure", frame, "--truth", truth, "--machine", m, "--json", NULL };
	const char *raw[] = { "measure", frame, "--truth", truth, "--profile", "", "--json", NULL };
	char *out, *out2;

	/* No -o: the session writes where the machine file points. */
	CHECK(run_cli(cal, NULL, NULL) == 0);
	CHECK(file_exists(tmp_path("measure.icc")));
	CHECK(file_exists(tmp_path("measure.icc.json")));
	CHECK(run_cli(meas, &out, NULL) == 0);
	CHECK(run_cli(raw, &out2, NULL) == 0);
	CHECK(json_at(out, "calibrated") == 1);
	CHECK(json_at(out2, "calibrated") == 0);
	/* measure's own patch regions, through the profile: close to the session's fit. */
	CHECK(json_at(out, "mean_de00") < 1.2);
	CHECK(json_at(out2, "mean_de00") > 3.0);
	free(out);
	free(out2);
}

TEST(drift_is_reported_later_in_the_night)
{
	const char *t0, *t1, *f0 = chart_frame(4, 0, &t0), *f1 = chart_frame(4, 10, &t1);
	const char *icc = tmp_path("drift.icc");
	const char *a0[] = { "calib", "camera", "--frame", f0, "--truth", t0, "-o", icc, NULL };
	const char *a1[] = { "calib", "camera", "--frame", f1, "--truth", t1, "-o", icc, "--json",
			     "--force", NULL };
	char *out, *text;

	CHECK(run_cli(a0, NULL, NULL) == 0);
	CHECK(run_cli(a1, &out, NULL) <= 1);
	text = out;
	CHECK_NEAR(json_at(text, "drift.hours"), 10.0, 0.01);
	/* The light fades 1 % an hour on the example machine. */
	CHECK_NEAR(json_at(text, "drift.intensity_change"), -0.10, 0.02);
	CHECK(json_at(text, "drift.previous_profile_now.mean_de00") > 2.0 * json_at(text, "held_out.mean_de00"));
	CHECK(json_at(text, "drift.change.mean_de00") > 1.0);
	CHECK(json_at(text, "drift.recalibrate") == 1);
	fprintf(stderr, "after 10 h: previous profile %.2f, new %.2f held out; chart moved %.2f\n",
		json_at(text, "drift.previous_profile_now.mean_de00"),
		json_at(text, "held_out.mean_de00"), json_at(text, "drift.change.mean_de00"));
	free(out);
}

/* A perfect sRGB camera: the matrix-shaper is exact, so no richer model may be kept. */
static void srgb_chart(void *ctx, double x, double y, unsigned char rgb[3])
{
	const struct calib_chart *c = ctx;
	const double x0 = 40, y0 = 30, pitch = 48, gap = 8;
	double u = x - x0, v = y - y0;
	int col, row;

	rgb[0] = rgb[1] = rgb[2] = 235;
	if (u < 0 || v < 0 || u > 6 * pitch + gap || v > 4 * pitch + gap)
		return;
	rgb[0] = rgb[1] = rgb[2] = 40;
	col = (int)((u - gap / 2) / pitch);
	row = (int)((v - gap / 2) / pitch);
	if (col < 0 || col > 5 || row < 0 || row > 3)
		return;
	if (u - gap - col * pitch >= 0 && u - gap - col * pitch < pitch - gap &&
	    v - gap - row * pitch >= 0 && v - gap - row * pitch < pitch - gap) {
		color_lab lab = { c->lab[row * 6 + col][0], c->lab[row * 6 + col][1],
				  c->lab[row * 6 + col][2] };
		color_rgb s;
		int in;
		bl_err err = { 0 };

		color_lab_to_srgb(&lab, &s, &in, &err);
		color_rgb_to_u8(&s, rgb);
	}
}

TEST(a_richer_model_is_kept_only_when_it_wins_held_out)
{
	struct calib_chart *c = malloc(sizeof(*c));
	struct vis_synth s = { 0 };
	struct img im = { 0 };
	bl_err err = { 0 };
	const char *png = tmp_path("srgb-chart.png");
	const char *args[] = { "calib", "camera", "--frame", png, "-o", tmp_path("srgb.icc"),
			       "--no-light-correction", "--json", NULL };
	char *out;

	calib_chart_builtin("colorchecker24", c, &err);
	s.w = 1000;
	s.h = 700;
	s.size_mm[0] = 380;
	s.size_mm[1] = 280;
	const double corners[8] = { 120, 90, 880, 80, 900, 620, 100, 630 };
	memcpy(s.corners_px, corners, sizeof(corners));
	s.table[0] = s.table[1] = s.table[2] = 110;
	s.paper[0] = s.paper[1] = s.paper[2] = 235;
	s.paper_margin_mm = 10;
	s.paint = srgb_chart;
	s.ctx = c;
	s.noise = 1.0;
	s.seed = 3;
	CHECK(vis_synth_frame(&s, &im, &err) == 0);
	CHECK(img_save(png, &im, &err) == 0);
	CHECK(run_cli(args, &out, NULL) == 0);
	/* sRGB itself is within the chart's few patches outside its gamut. */
	fprintf(stderr, "sRGB camera: kept %s, held out %.2f, sRGB %.2f\n",
		strstr(out, "\"model\":\t\"matrix\"") ? "matrix" : "another",
		json_at(out, "held_out.mean_de00"), json_at(out, "srgb.mean_de00"));
	CHECK_STR_CONTAINS(out, "\"model\":\t\"matrix\"");
	CHECK(json_at(out, "held_out.mean_de00") < 1.0);
	free(out);
	img_free(&im);
	free(c);
}

TEST(corners_given_find_the_same_chart)
{
	const char *frame = chart_frame(1, 0, NULL);
	const char *a[] = { "calib", "camera", "--frame", frame, "-o", tmp_path("c1.icc"), "--json",
			    NULL };
	char *out, corners[512], *o2, *e2;
	cJSON *root, *c;

	CHECK(run_cli(a, &out, NULL) == 0);
	root = cJSON_Parse(out);
	c = cJSON_GetObjectItem(root, "chart_corners_px");
	snprintf(corners, sizeof(corners), "%g,%g;%g,%g;%g,%g;%g,%g",
		 cJSON_GetArrayItem(c, 0)->valuedouble, cJSON_GetArrayItem(c, 1)->valuedouble,
		 cJSON_GetArrayItem(c, 2)->valuedouble, cJSON_GetArrayItem(c, 3)->valuedouble,
		 cJSON_GetArrayItem(c, 4)->valuedouble, cJSON_GetArrayItem(c, 5)->valuedouble,
		 cJSON_GetArrayItem(c, 6)->valuedouble, cJSON_GetArrayItem(c, 7)->valuedouble);
	{
		const char *b[] = { "calib", "camera", "--frame", frame, "--corners", corners, "-o",
				    tmp_path("c2.icc"), "--json", NULL };

		CHECK(run_cli(b, &o2, NULL) == 0);
		CHECK(json_at(o2, "corners_given") == 1);
		CHECK_NEAR(json_at(o2, "held_out.mean_de00"), json_at(out, "held_out.mean_de00"), 0.05);
		free(o2);
	}
	/* The same corners in the wrong order frame no grid of the chart's shape. */
	snprintf(corners, sizeof(corners), "%g,%g;%g,%g;%g,%g;%g,%g",
		 cJSON_GetArrayItem(c, 2)->valuedouble, cJSON_GetArrayItem(c, 3)->valuedouble,
		 cJSON_GetArrayItem(c, 4)->valuedouble, cJSON_GetArrayItem(c, 5)->valuedouble,
		 cJSON_GetArrayItem(c, 6)->valuedouble, cJSON_GetArrayItem(c, 7)->valuedouble,
		 cJSON_GetArrayItem(c, 0)->valuedouble, cJSON_GetArrayItem(c, 1)->valuedouble);
	{
		const char *b[] = { "calib", "camera", "--frame", frame, "--corners", corners, "-o",
				    tmp_path("c3.icc"), NULL };

		CHECK(run_cli(b, NULL, &e2) == 2);
		CHECK(!file_exists(tmp_path("c3.icc")));
		CHECK_STR_CONTAINS(e2, "check their order");
		free(e2);
	}
	cJSON_Delete(root);
	free(out);
}

/* Rewrites a frame with edit applied to its pixels; returns the PNG's path. */
static const char *edited(const char *frame, const char *name,
			  void (*edit)(struct img *im, void *ctx), void *ctx)
{
	struct img im = { 0 };
	bl_err err = { 0 };
	const char *out = tmp_path(name);

	if (img_load(frame, 40000000, &im, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
	edit(&im, ctx);
	if (img_save(out, &im, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
	img_free(&im);
	return out;
}

static void rotate180(struct img *im, void *ctx)
{
	size_t n = (size_t)im->w * im->h;

	(void)ctx;
	for (size_t i = 0; i < n / 2; i++)
		for (int k = 0; k < 3; k++) {
			unsigned char t = im->px[3 * i + k];

			im->px[3 * i + k] = im->px[3 * (n - 1 - i) + k];
			im->px[3 * (n - 1 - i) + k] = t;
		}
}

TEST(a_chart_upside_down_is_read_the_right_way_round)
{
	const char *frame = edited(chart_frame(1, 0, NULL), "rotated.png", rotate180, NULL);
	const char *a[] = { "calib", "camera", "--frame", frame, "-o", tmp_path("rot.icc"), "--json",
			    NULL };
	char *out;

	CHECK(run_cli(a, &out, NULL) == 0);
	CHECK(json_at(out, "held_out.mean_de00") < 1.5);
	free(out);
}

/* A grey box over part of the frame (x0, y0, x1, y1 in fractions of the chart's outline box). */
struct box {
	int x0, y0, x1, y1;
	unsigned char v;
};

static void cover(struct img *im, void *ctx)
{
	const struct box *b = ctx;

	for (int y = b->y0; y < b->y1; y++)
		for (int x = b->x0; x < b->x1; x++)
			memset(im->px + 3 * ((size_t)y * im->w + x), b->v, 3);
}

/* Code values times 2.2, or times the factor ctx names. */
static void brighten(struct img *im, void *ctx)
{
	double f = ctx ? atof(ctx) : 2.2;

	for (size_t i = 0; i < (size_t)im->w * im->h * 3; i++)
		im->px[i] = (unsigned char)fmin(255.0, im->px[i] * f);
}

/* A bad frame: exit 2, the message names what was not found, nothing written. */
static void bad_frame(const char *frame, const char *want, const char *want2)
{
	const char *icc = tmp_path("bad.icc");
	const char *a[] = { "calib", "camera", "--frame", frame, "-o", icc, NULL };
	char *err;

	unlink(icc);
	CHECK(run_cli(a, NULL, &err) == 2);
	CHECK(err && (strstr(err, want) || (want2 && strstr(err, want2))));
	if (err)
		fprintf(stderr, "  %s", err);
	CHECK(!file_exists(icc));
	free(err);
}

TEST(a_frame_without_a_chart_says_so)
{
	const char *frame = tmp_path("canvas.jpg");

	sim_frame(SIM_SCENE_CANVAS, 1, 0, NULL, frame, NULL);
	bad_frame(frame, "no colour chart found", NULL);
}

TEST(a_partly_covered_chart_is_refused)
{
	const char *truth, *frame = chart_frame(1, 0, &truth);
	struct calib_truth_patch *t;
	int n;
	bl_err err = { 0 };
	struct box b;

	CHECK(calib_truth_load(truth, &t, &n, NULL, &err) == 0);
	/* A grey card over half of patch 'red' (index 14): the frame is intact, the patch is not. */
	b = (struct box){ t[14].roi.x - 4, t[14].roi.y - 4, t[14].roi.x + t[14].roi.w / 2,
			  t[14].roi.y + t[14].roi.h + 4, 128 };
	bad_frame(edited(frame, "half-red.png", cover, &b), "patch 'red'", NULL);
	/* A dark arm across the chart's right half: outline and grid are gone. */
	b = (struct box){ t[3].roi.x, 0, t[5].roi.x + t[5].roi.w + 60, 720, 25 };
	bad_frame(edited(frame, "arm-over.png", cover, &b), "no colour chart found", "patch");
	free(t);
}

TEST(an_overexposed_chart_is_refused_as_clipped)
{
	char *err;
	const char *a[] = { "calib", "camera", "--frame", NULL, "-o", tmp_path("bad.icc"), NULL };

	bad_frame(edited(chart_frame(1, 0, NULL), "bright.png", brighten, NULL), "clipped", NULL);
	/*
	 * 1.4 times the code values: the chart is found, and every clipped patch
	 * is counted and named with its pixels at the top (saturated ones too,
	 * which the camera kept: "0 of its 840 px" before).
	 */
	a[3] = edited(chart_frame(1, 0, NULL), "brighter.png", brighten, (void *)"1.4");
	CHECK(run_cli(a, NULL, &err) == 2);
	CHECK_STR_CONTAINS(err, "patches are clipped");
	CHECK_STR_CONTAINS(err, "'white 9.5' (");
	CHECK(strstr(err, "(0 of") == NULL);
	free(err);
}

/* Two stops under: every pixel's linear light quartered. */
static void darken(struct img *im, void *ctx)
{
	(void)ctx;
	for (size_t i = 0; i < (size_t)im->w * im->h * 3; i++)
		im->px[i] = (unsigned char)lround(255 * meas_linear_to_srgb(meas_srgb_to_linear(im->px[i] / 255.0) / 4));
}

/* Out of focus: a box blur 5 px wide, twice along each axis (about a 2 px Gaussian). */
static void blur(struct img *im, void *ctx)
{
	unsigned char *t = malloc((size_t)im->w * im->h * 3);

	(void)ctx;
	for (int pass = 0; pass < 4; pass++) {
		int dx = pass % 2 == 0, lim = dx ? im->w : im->h;

		memcpy(t, im->px, (size_t)im->w * im->h * 3);
		for (int y = 0; y < im->h; y++)
			for (int x = 0; x < im->w; x++)
				for (int c = 0; c < 3; c++) {
					int sum = 0, at = dx ? x : y;

					for (int k = -2; k <= 2; k++) {
						int q = at + k < 0 ? 0 : at + k >= lim ? lim - 1 : at + k;

						sum += t[3 * (dx ? (size_t)y * im->w + q : (size_t)q * im->w + x) + c];
					}
					im->px[3 * ((size_t)y * im->w + x) + c] = (unsigned char)((sum + 2) / 5);
				}
	}
	free(t);
}

TEST(an_underexposed_or_blurred_chart_is_refused_naming_the_figure)
{
	const char *frame = chart_frame(1, 0, NULL);
	const char *a[] = { "calib", "camera", "--frame", frame, "-o", tmp_path("ok.icc"), "--json", NULL };
	char *out;

	bad_frame(edited(frame, "dark.png", darken, NULL), "underexposed by 2.", NULL);
	bad_frame(edited(frame, "blurred.png", blur, NULL), "out of focus", NULL);
	/* The sharp, well exposed frame: the figures are in the report. */
	CHECK(run_cli(a, &out, NULL) == 0);
	fprintf(stderr, "sharp frame: %.2f stops, edges %.2f px\n", json_at(out, "camera.exposure_stops"),
		json_at(out, "camera.blur_px"));
	CHECK(fabs(json_at(out, "camera.exposure_stops")) < 0.5);
	CHECK(json_at(out, "camera.blur_px") < 1.0);
	free(out);
}

TEST(a_profile_beyond_the_threshold_is_not_written)
{
	const char *frame = chart_frame(3, 0, NULL);
	const char *m = machine_with("strict.json", "{ \"max_arm_residual_mm\": 1.0, "
				     "\"max_canvas_error_mm\": 0.5, \"max_camera_de00\": 0.3 }");
	const char *icc = tmp_path("strict.icc");
	const char *a[] = { "calib", "camera", "--machine", m, "--frame", frame, "-o", icc, NULL };
	const char *b[] = { "calib", "camera", "--machine", m, "--frame", frame, "-o", icc, "--force",
			    NULL };
	char *out;

	CHECK(run_cli(a, &out, NULL) == 1);
	CHECK_STR_CONTAINS(out, "FAIL");
	CHECK(!file_exists(icc));
	free(out);
	CHECK(run_cli(b, NULL, NULL) == 1);
	CHECK(file_exists(icc));
}

TEST(usage_errors_exit_2)
{
	const char *a[] = { "calib", "camera", "--model", "cubic", NULL };
	const char *b[] = { "calib", "camera", "--corners", "1,2;3,4", NULL };
	const char *c[] = { "calib", "camera", "--chart", "nope.json", "--frame", "x.jpg", "-o",
			    tmp_path("u.icc"), NULL };
	const char *d[] = { "calib", "wobble", NULL };
	char *err;

	CHECK(run_cli(a, NULL, NULL) == 2);
	CHECK(run_cli(b, NULL, &err) == 2);
	CHECK_STR_CONTAINS(err, "4 corners");
	free(err);
	CHECK(run_cli(c, NULL, &err) == 2);
	CHECK_STR_CONTAINS(err, "nope.json");
	free(err);
	CHECK(run_cli(d, NULL, NULL) == 2);
}

TEST_MAIN(T(builtin_chart_equals_its_data_file), T(chart_files_are_read_strictly),
	  T(profile_meets_the_standard_on_simulated_frames),
	  T(profile_converts_in_transicc_as_in_brushloop),
	  T(profile_is_used_by_measure_through_the_machine_file),
	  T(drift_is_reported_later_in_the_night), T(a_richer_model_is_kept_only_when_it_wins_held_out),
	  T(corners_given_find_the_same_chart), T(a_chart_upside_down_is_read_the_right_way_round),
	  T(a_frame_without_a_chart_says_so), T(a_partly_covered_chart_is_refused),
	  T(an_overexposed_chart_is_refused_as_clipped),
	  T(an_underexposed_or_blurred_chart_is_refused_naming_the_figure),
	  T(a_profile_beyond_the_threshold_is_not_written), T(usage_errors_exit_2))

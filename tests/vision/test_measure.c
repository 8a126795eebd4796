/* test_measure.c: colour measurement: patches in JPEGs from another program, robustness, profiles, CIEDE2000 maps, the canvas command, bad options. */
#include <lcms2.h>

#include "color/color.h"
#include "vision/canvas.h"
#include "vision/measure.h"
#include "vision/synth.h"
#include "vtest.h"

static const int patch_rgb[12][3] = {
	{ 200, 30, 40 }, { 30, 160, 60 },   { 40, 60, 190 },   { 240, 220, 40 },
	{ 250, 250, 245 }, { 15, 12, 10 },  { 128, 128, 128 }, { 0, 170, 200 },
	{ 230, 120, 180 }, { 90, 50, 30 },  { 255, 0, 0 },     { 0, 0, 255 },
};

/* 12 patches of 120x120 px in a 4x3 grid, written as PPM and compressed by cjpeg with args. */
static const char *patch_jpeg(const char *name, const char *const *extra)
{
	struct img im;
	const char *ppm = vt_path("patches.ppm"), *jpg = vt_path(name);
	const char *argv[16];
	int n = 0;

	if (img_alloc(&im, 480, 360, NULL))
		exit(1);
	for (int i = 0; i < 12; i++)
		vt_fill(&im, (i % 4) * 120, (i / 4) * 120, 120, 120, patch_rgb[i][0], patch_rgb[i][1],
			patch_rgb[i][2]);
	vt_write_ppm(ppm, &im);
	img_free(&im);
	argv[n++] = "cjpeg";
	while (*extra)
		argv[n++] = *extra++;
	argv[n++] = "-outfile";
	argv[n++] = jpg;
	argv[n++] = ppm;
	argv[n] = NULL;
	if (vt_run(argv, NULL) != 0) {
		fprintf(stderr, "cjpeg failed (scripts/install-deps installs libjpeg-turbo-progs)\n");
		exit(1);
	}
	return jpg;
}

/* Measures patch i of file through the CLI; returns its CIEDE2000 from the patch's true Lab. */
static double measure_patch(const char *file, int i)
{
	char roi[64];
	const char *args[] = { "measure", file, "--roi", roi, "--profile", "", "--json", NULL };
	char *out = NULL, *err = NULL;
	double truth[3], de = 1e9;
	cJSON *j;

	snprintf(roi, sizeof(roi), "%d,%d,100,100", (i % 4) * 120 + 10, (i / 4) * 120 + 10);
	CHECK(test_brushloop(args, &out, &err) == 0);
	j = vt_json(out);
	vt_srgb_to_lab(patch_rgb[i][0], patch_rgb[i][1], patch_rgb[i][2], truth);
	if (j) {
		color_lab m = { vt_arr(j, "lab", 0), vt_arr(j, "lab", 1), vt_arr(j, "lab", 2) };
		color_lab t = { truth[0], truth[1], truth[2] };

		de = color_de00(&m, &t);
		CHECK(vt_num(j, "pixels") >= 9000);
		CHECK(cJSON_IsArray(cJSON_GetObjectItem(j, "stddev")));
		CHECK(cJSON_IsFalse(cJSON_GetObjectItem(j, "calibrated")));
		cJSON_Delete(j);
	}
	CHECK_STR_CONTAINS(err, "uncalibrated");
	free(out);
	free(err);
	return de;
}

TEST(patches_from_cjpeg_within_half_de00)
{
	const char *const rgb_jpeg[] = { "-rgb", "-quality", "90", NULL };
	const char *file = patch_jpeg("patches.jpg", rgb_jpeg);

	for (int i = 0; i < 12; i++) {
		double de = measure_patch(file, i);

		CHECK_MSG(de < 0.5, "patch %d (%d,%d,%d): CIEDE2000 %.3f from its true Lab", i,
			  patch_rgb[i][0], patch_rgb[i][1], patch_rgb[i][2], de);
	}
}

TEST(patches_from_a_webcam_style_jpeg)
{
	/* YCbCr 4:2:0 at quality 90: the codec's own rounding moves light neutrals by a code. */
	const char *const ycc[] = { "-quality", "90", "-sample", "2x2", NULL };
	const char *file = patch_jpeg("webcam.jpg", ycc);

	for (int i = 0; i < 12; i++) {
		double de = measure_patch(file, i);

		CHECK_MSG(de < 1.0, "patch %d: CIEDE2000 %.3f", i, de);
	}
}

TEST(truth_file_reports_error_against_truth)
{
	const char *const rgb_jpeg[] = { "-rgb", "-quality", "90", NULL };
	const char *file = patch_jpeg("patches.jpg", rgb_jpeg);
	char text[8192];
	size_t k = 0;
	const char *truth;
	const char *args[] = { "measure", file, "--truth", NULL, "--profile", "", "--json", NULL };
	char *out = NULL, *err = NULL;
	cJSON *j;

	k += (size_t)snprintf(text + k, sizeof(text) - k, "{\"patches\": [");
	for (int i = 0; i < 12; i++) {
		double lab[3];

		vt_srgb_to_lab(patch_rgb[i][0], patch_rgb[i][1], patch_rgb[i][2], lab);
		k += (size_t)snprintf(text + k, sizeof(text) - k,
				      "%s{\"name\": \"p%d\", \"roi\": [%d, %d, 100, 100], \"lab\": [%.6f, %.6f, %.6f]}",
				      i ? ", " : "", i, (i % 4) * 120 + 10, (i / 4) * 120 + 10, lab[0],
				      lab[1], lab[2]);
	}
	snprintf(text + k, sizeof(text) - k, "]}");
	truth = test_write_file("truth.json", text);
	args[3] = truth;
	CHECK(test_brushloop(args, &out, &err) == 0);
	j = vt_json(out);
	if (j) {
		const cJSON *p = cJSON_GetObjectItem(j, "patches");

		CHECK(vt_num(j, "count") == 12);
		CHECK(cJSON_GetArraySize(p) == 12);
		CHECK(vt_num(j, "mean_de00") < 0.5);
		CHECK(vt_num(j, "max_de00") < 0.5);
		CHECK(vt_num(cJSON_GetArrayItem(p, 3), "de00") >= 0);
		CHECK(cJSON_IsString(cJSON_GetObjectItem(cJSON_GetArrayItem(p, 3), "name")));
		cJSON_Delete(j);
	}
	free(out);
	free(err);
	/* A key the truth format does not have is an error naming it. */
	truth = test_write_file("truth-bad.json",
				"{\"patches\": [{\"name\": \"a\", \"roi\": [1,1,5,5], \"lab\": [50,0,0], "
				"\"colour\": 1}]}");
	args[3] = truth;
	CHECK(test_brushloop(args, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "truth-bad.json");
	CHECK_STR_CONTAINS(err, "patches[0].colour");
	free(out);
	free(err);
	/* A patch outside the frame names the patch. */
	truth = test_write_file("truth-out.json",
				"{\"patches\": [{\"name\": \"far\", \"roi\": [470,350,50,50], \"lab\": [50,0,0]}]}");
	args[3] = truth;
	CHECK(test_brushloop(args, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "patch 'far'");
	CHECK_STR_CONTAINS(err, "outside");
	free(out);
	free(err);
}

/* A deterministic noise source for test pictures. */
static double gauss(unsigned *st)
{
	double u1, u2;

	*st = *st * 1103515245u + 12345u;
	u1 = ((*st >> 8) + 0.5) / 16777216.0;
	*st = *st * 1103515245u + 12345u;
	u2 = ((*st >> 8) + 0.5) / 16777216.0;
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

static unsigned char clamp8(double v)
{
	return (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : lround(v));
}

TEST(highlights_edges_and_outliers_are_rejected)
{
	const int col[3] = { 150, 90, 60 };
	struct img clean, dirty;
	struct meas_profile *p;
	struct meas_swatch a, b;
	struct meas_roi roi = { 20, 20, 100, 100 }, inner = { 30, 30, 80, 80 };
	unsigned st = 17;
	bl_err err = { 0 };
	double naive[3] = { 0 }, de;

	CHECK(meas_profile_open(NULL, &p, &err) == 0);
	img_alloc(&clean, 160, 160, NULL);
	for (size_t i = 0; i < 160 * 160; i++)
		for (int k = 0; k < 3; k++)
			clean.px[3 * i + k] = clamp8(col[k] + 3.0 * gauss(&st));
	img_alloc(&dirty, 160, 160, NULL);
	memcpy(dirty.px, clean.px, 160 * 160 * 3);
	/* A neighbouring swatch covering the region's right tenth. */
	vt_fill(&dirty, 110, 0, 50, 160, 40, 120, 200);
	st = 99;
	for (int y = 20; y < 120; y++)
		for (int x = 20; x < 110; x++) {
			unsigned char *px = dirty.px + ((size_t)y * 160 + x) * 3;
			unsigned r;

			st = st * 1103515245u + 12345u;
			r = (st >> 16) % 100;
			if (r < 5) /* specular glints */
				memset(px, 255, 3);
			else if (r < 7) { /* dust and bristle marks */
				px[0] = 20;
				px[1] = 20;
				px[2] = 25;
			}
		}
	CHECK(meas_swatch(&clean, "clean", &inner, p, &a, &err) == 0);
	CHECK_MSG(meas_swatch(&dirty, "dirty", &roi, p, &b, &err) == 0, "%s", err.msg);
	de = color_de00(&a.lab, &b.lab);
	CHECK_MSG(de < 0.5, "robust mean is %.3f from the clean one", de);
	CHECK(b.clipped >= 400);
	CHECK(b.edges > 0);
	CHECK(b.outliers > 0);
	CHECK(b.pixels > 5000 && b.pixels < b.total);
	/* The plain mean of the same region is far off: the test can tell the difference. */
	for (int y = 20; y < 120; y++)
		for (int x = 20; x < 120; x++)
			for (int k = 0; k < 3; k++)
				naive[k] += meas_srgb_to_linear(dirty.px[((size_t)y * 160 + x) * 3 + k] /
								255.0) / 10000.0;
	{
		double enc[3];
		color_lab nl;

		for (int k = 0; k < 3; k++)
			enc[k] = meas_linear_to_srgb(naive[k]);
		meas_profile_lab(p, enc, &nl);
		CHECK_MSG(color_de00(&a.lab, &nl) > 3.0, "naive mean only %.2f off",
			  color_de00(&a.lab, &nl));
	}
	img_free(&clean);
	img_free(&dirty);
	meas_profile_close(p);
}

TEST(spread_follows_the_noise)
{
	struct img im;
	struct meas_profile *p;
	struct meas_swatch flat, noisy;
	struct meas_roi roi = { 0, 0, 100, 100 };
	unsigned st = 5;
	bl_err err = { 0 };

	CHECK(meas_profile_open(NULL, &p, &err) == 0);
	img_alloc(&im, 100, 100, NULL);
	vt_fill(&im, 0, 0, 100, 100, 118, 118, 118);
	CHECK(meas_swatch(&im, "flat", &roi, p, &flat, &err) == 0);
	CHECK(flat.stddev[0] == 0.0 && flat.pixels == 10000);
	/* One code of jitter on a tenth of the pixels is noise, not edges. */
	for (size_t i = 0; i < 100 * 100; i += 10)
		im.px[3 * i + (i / 10) % 3] = (unsigned char)(118 + ((i / 30) % 2 ? 1 : -1));
	CHECK(meas_swatch(&im, "jitter", &roi, p, &noisy, &err) == 0);
	CHECK_MSG(noisy.edges == 0 && noisy.pixels >= 8900, "%ld edges, %ld pixels kept", noisy.edges,
		  noisy.pixels);
	CHECK(color_de00(&flat.lab, &noisy.lab) < 0.05);
	for (size_t i = 0; i < 100 * 100; i++) {
		double n = 4.0 * gauss(&st);

		for (int k = 0; k < 3; k++)
			im.px[3 * i + k] = clamp8(118 + n); /* grey noise: L moves, a and b do not */
	}
	CHECK(meas_swatch(&im, "noisy", &roi, p, &noisy, &err) == 0);
	/* Near L 50 one code is about 0.4 L; 4 codes of noise, trimmed by a tenth. */
	CHECK_MSG(noisy.stddev[0] > 0.8 && noisy.stddev[0] < 2.5, "L stddev %.3f", noisy.stddev[0]);
	CHECK(noisy.stddev[1] < 0.1 && noisy.stddev[2] < 0.1);
	CHECK(color_de00(&flat.lab, &noisy.lab) < 0.3);
	img_free(&im);
	meas_profile_close(p);
}

TEST(region_outside_the_image_is_refused)
{
	const char *const rgb_jpeg[] = { "-rgb", "-quality", "90", NULL };
	const char *file = patch_jpeg("patches.jpg", rgb_jpeg);
	const char *args[] = { "measure", file, "--roi", "400,300,100,100", NULL };
	const char *neg[] = { "measure", file, "--roi", "-5,0,10,10", NULL };
	char *out = NULL, *err = NULL;

	CHECK(test_brushloop(args, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, file);
	CHECK_STR_CONTAINS(err, "lies outside the 480x360 image");
	free(out);
	free(err);
	CHECK(test_brushloop(neg, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "outside");
	free(out);
	free(err);
}

TEST(nan_and_malformed_options_are_refused)
{
	static const char *const cases[][8] = {
		{ "measure", "x.jpg", "--roi", "1,2,nan,4", NULL },
		{ "measure", "x.jpg", "--roi", "1,2,3", NULL },
		{ "measure", "x.jpg", "--roi", "1,2,0,4", NULL },
		{ "measure", "x.jpg", "--canvas", "--target", "t.png", "--cell", "nan", NULL },
		{ "measure", "x.jpg", "--canvas", "--target", "t.png", "--px-per-mm", "inf", NULL },
		{ "measure", "x.jpg", "--canvas", "--target", "t.png", "--cell", "-5", NULL },
		{ "measure", "x.jpg", "--canvas", "--target", "t.png", "--worst", "1e3", NULL },
		{ "measure", "x.jpg", "--roi", "1,2,3,4", "--canvas", NULL },
		{ "measure", "x.jpg", "--canvas", NULL },
	};
	static const char *const want[] = { "--roi", "--roi", "positive", "--cell", "--px-per-mm",
					    "--cell", "--worst", "exactly one", "--target" };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out = NULL, *err = NULL;
		int st = test_brushloop((const char *const *)cases[i], &out, &err);

		CHECK_MSG(st == 2, "case %zu: exit %d", i, st);
		CHECK_MSG(err && strstr(err, want[i]), "case %zu: '%s' lacks '%s'", i, err ? err : "",
			  want[i]);
		free(out);
		free(err);
	}
}

/* Writes an ICC profile built by lcms2 to name; returns the path. */
static const char *save_profile(const char *name, cmsHPROFILE h)
{
	const char *p = vt_path(name);

	if (!cmsSaveProfileToFile(h, p))
		exit(1);
	cmsCloseProfile(h);
	return p;
}

/* A camera-like RGB profile: wide primaries, gamma 1.8. */
static cmsHPROFILE camera_profile(void)
{
	cmsCIExyY white = { 0.3457, 0.3585, 1.0 };
	cmsCIExyYTRIPLE prim = { { 0.70, 0.29, 1.0 }, { 0.17, 0.78, 1.0 }, { 0.13, 0.04, 1.0 } };
	cmsToneCurve *g = cmsBuildGamma(NULL, 1.8);
	cmsToneCurve *curves[3] = { g, g, g };
	cmsHPROFILE h = cmsCreateRGBProfile(&white, &prim, curves);

	cmsFreeToneCurve(g);
	return h;
}

TEST(camera_profile_is_used)
{
	struct img im;
	const char *file, *prof = save_profile("camera.icc", camera_profile());
	const char *args[] = { "measure", NULL, "--roi", "10,10,40,40", "--profile", prof, "--json", NULL };
	char *out = NULL, *err = NULL;
	cJSON *j;

	img_alloc(&im, 60, 60, NULL);
	vt_fill(&im, 0, 0, 60, 60, 180, 90, 40);
	file = vt_save("cam.png", &im);
	img_free(&im);
	args[1] = file;
	CHECK(test_brushloop(args, &out, &err) == 0);
	CHECK(!err || !strstr(err, "uncalibrated"));
	j = vt_json(out);
	if (j) {
		/* The expected Lab, straight from lcms2 through the same profile. */
		cmsHPROFILE in = cmsOpenProfileFromFile(prof, "r"), lab = cmsCreateLab4Profile(NULL);
		cmsHTRANSFORM xf = cmsCreateTransform(in, TYPE_RGB_DBL, lab, TYPE_Lab_DBL,
						      INTENT_RELATIVE_COLORIMETRIC, 0);
		double rgb[3] = { 180 / 255.0, 90 / 255.0, 40 / 255.0 };
		cmsCIELab e;

		cmsDoTransform(xf, rgb, &e, 1);
		CHECK_NEAR(vt_arr(j, "lab", 0), e.L, 0.01);
		CHECK_NEAR(vt_arr(j, "lab", 1), e.a, 0.01);
		CHECK_NEAR(vt_arr(j, "lab", 2), e.b, 0.01);
		CHECK(cJSON_IsTrue(cJSON_GetObjectItem(j, "calibrated")));
		{
			/* ... and not what sRGB would say. */
			color_lab s, m = { e.L, e.a, e.b };

			color_parse("srgb:180,90,40", &s, NULL);
			CHECK(color_de00(&s, &m) > 3.0);
		}
		cmsDeleteTransform(xf);
		cmsCloseProfile(in);
		cmsCloseProfile(lab);
		cJSON_Delete(j);
	}
	free(out);
	free(err);
}

TEST(bad_profiles_are_refused)
{
	struct img im;
	const char *file, *text = test_write_file("notes.icc", "not a profile at all, but long enough "
					      "to pass the size check of one hundred and twenty-eight "
					      "bytes, which this sentence is meant to exceed quite surely.");
	const char *grey;
	const char *args[] = { "measure", NULL, "--roi", "1,1,20,20", "--profile", NULL, NULL };
	char *out = NULL, *err = NULL;

	{
		cmsToneCurve *g = cmsBuildGamma(NULL, 2.2);

		grey = save_profile("grey.icc", cmsCreateGrayProfile(cmsD50_xyY(), g));
		cmsFreeToneCurve(g);
	}
	img_alloc(&im, 30, 30, NULL);
	vt_fill(&im, 0, 0, 30, 30, 100, 100, 100);
	file = vt_save("grey.png", &im);
	img_free(&im);
	args[1] = file;
	args[5] = vt_path("missing.icc");
	CHECK(test_brushloop(args, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "missing.icc");
	free(out);
	free(err);
	args[5] = text;
	CHECK(test_brushloop(args, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "notes.icc: not a valid ICC profile");
	free(out);
	free(err);
	args[5] = grey;
	CHECK(test_brushloop(args, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "grey.icc: the ICC profile is not for RGB data");
	free(out);
	free(err);
}

TEST(lab_raster_matches_the_float_transform)
{
	struct img im;
	struct meas_profile *p;
	float *lab = malloc(200 * 200 * 3 * sizeof(float));
	unsigned st = 3;
	double worst = 0, sum = 0;
	bl_err err = { 0 };

	CHECK(meas_profile_open(NULL, &p, &err) == 0);
	img_alloc(&im, 200, 200, NULL);
	for (size_t i = 0; i < 200 * 200 * 3; i++) {
		st = st * 1103515245u + 12345u;
		im.px[i] = (unsigned char)(st >> 16);
	}
	CHECK(meas_lab_raster(p, &im, lab, &err) == 0);
	for (size_t i = 0; i < 200 * 200; i++) {
		double rgb[3] = { im.px[3 * i] / 255.0, im.px[3 * i + 1] / 255.0, im.px[3 * i + 2] / 255.0 };
		color_lab e;
		double d;

		meas_profile_lab(p, rgb, &e);
		d = color_de00_fast(e.L, e.a, e.b, lab[3 * i], lab[3 * i + 1], lab[3 * i + 2]);
		worst = fmax(worst, d);
		sum += d;
	}
	CHECK_MSG(worst < 0.3, "worst %.3f", worst);
	CHECK_MSG(sum / 40000 < 0.02, "mean %.4f", sum / 40000);
	free(lab);
	img_free(&im);
	meas_profile_close(p);
}

TEST(de_map_statistics)
{
	enum { W = 403, H = 300 };
	float *obs = malloc(W * H * 3 * sizeof(float)), *tgt = malloc(W * H * 3 * sizeof(float));
	struct meas_map m;
	bl_err err = { 0 };
	double sum = 0, want;

	for (int i = 0; i < W * H; i++) {
		tgt[3 * i] = obs[3 * i] = 50;
		tgt[3 * i + 1] = obs[3 * i + 1] = 10;
		tgt[3 * i + 2] = obs[3 * i + 2] = -5;
	}
	/* One cell (5 mm at 1 px/mm) off by 4 L, one by 8 L, and the partial cell at the right edge by 2 L. */
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++) {
			float *o = obs + 3 * (y * W + x);

			if (x >= 100 && x < 105 && y >= 50 && y < 55)
				o[0] += 4;
			if (x >= 200 && x < 205 && y >= 150 && y < 155)
				o[0] += 8;
			if (x >= 400 && y < 5)
				o[0] += 2;
		}
	CHECK(meas_de_map(obs, tgt, W, H, 1.0, 5.0, 3, &m, &err) == 0);
	CHECK(m.cols == 81 && m.rows == 60);
	CHECK(m.n_worst == 3);
	CHECK_NEAR(m.worst[0].de00, color_de00_fast(58, 10, -5, 50, 10, -5), 1e-5);
	CHECK(m.worst[0].col == 40 && m.worst[0].row == 30);
	CHECK(m.worst[1].col == 20 && m.worst[1].row == 10);
	CHECK(m.worst[2].col == 80 && m.worst[2].row == 0);
	CHECK_NEAR(m.worst[0].obs.L, 58, 1e-4);
	CHECK_NEAR(m.worst[0].target.L, 50, 1e-4);
	CHECK_NEAR(m.max, m.worst[0].de00, 1e-9);
	for (int i = 0; i < m.cols * m.rows; i++)
		sum += m.de[i];
	CHECK_NEAR(m.mean, sum / (81 * 60), 1e-9);
	CHECK(m.p95 == 0.0); /* 3 of 4860 cells differ: the 95th percentile is still 0 */
	meas_map_free(&m);
	/* Cells of 2.5 mm at 2 px/mm are 5 px; half-pixel cells are refused. */
	CHECK(meas_de_map(obs, tgt, W, H, 2.0, 2.5, 0, &m, &err) == 0);
	CHECK(m.cols == 81);
	meas_map_free(&m);
	CHECK(meas_de_map(obs, tgt, W, H, 1.0, 2.5, 0, &m, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "whole number");
	CHECK(meas_de_map(obs, tgt, W, H, 1.0, NAN, 0, &m, &err) == BL_EINVAL);
	/* Every cell off: p95 is the 95th of the sorted values. */
	for (int i = 0; i < W * H; i++)
		obs[3 * i] = 50.0f + (float)((i % W) / 5) * 0.1f; /* column c of cells: L + 0.1 c */
	CHECK(meas_de_map(obs, tgt, W, H, 1.0, 5.0, 0, &m, &err) == 0);
	want = 0;
	{
		/* 81 columns, equal counts: nearest rank 0.95 * 4860 = 4617, the 77th column (0-based 76). */
		float L = 50.0f + 76 * 0.1f;

		want = color_de00_fast(L, 10, -5, 50, 10, -5);
	}
	CHECK_NEAR(m.p95, want, 1e-4);
	meas_map_free(&m);
	free(obs);
	free(tgt);
}

/* The canvas painted as the target, except a 40 x 40 mm square at (200, 100) mm. */
static int paint_wrong;

static void target_paint(void *ctx, double x, double y, unsigned char rgb[3])
{
	(void)ctx;
	if (paint_wrong && x >= 200 && x < 240 && y >= 100 && y < 140) {
		rgb[0] = 40;
		rgb[1] = 140;
		rgb[2] = 60;
		return;
	}
	rgb[0] = (unsigned char)(60 + 150 * (x < 200));
	rgb[1] = (unsigned char)(80 + 100 * (y < 150));
	rgb[2] = 150;
}

TEST(canvas_against_target_end_to_end)
{
	struct vis_synth s = { 0 };
	struct img frame, target, pic;
	/* As a camera above the table sees the canvas: origin bottom left. */
	const double corners[8] = { 250, 600, 1030, 615, 1000, 150, 280, 165 };
	const char *frame_path, *target_path, *map = vt_path("errmap.png");
	const char *args[] = { "measure", NULL, "--canvas", "--target", NULL, "--machine",
			       BL_SOURCE_ROOT "/examples/machine-sim.json", "--profile", "", "-o", map,
			       "--json", NULL };
	char *out = NULL, *err = NULL;
	bl_err e = { 0 };
	cJSON *j;

	s.w = 1280;
	s.h = 720;
	memcpy(s.corners_px, corners, sizeof(corners));
	s.size_mm[0] = 400;
	s.size_mm[1] = 300;
	s.markers = 1;
	s.marker_size_mm = 30; /* the example machine's zones.canvas.markers */
	s.marker_offset_mm = 25;
	memset(s.table, 60, 3);
	memset(s.paper, 228, 3);
	s.paper_margin_mm = 25;
	s.paint = target_paint;
	s.noise = 2;
	paint_wrong = 1;
	CHECK(vis_synth_frame(&s, &frame, &e) == 0);
	frame_path = vt_save("frame.jpg", &frame);
	img_free(&frame);
	/* The target at 2 px/mm, so it must be resampled onto the canvas grid. */
	paint_wrong = 0;
	img_alloc(&target, 800, 600, NULL);
	for (int y = 0; y < 600; y++)
		for (int x = 0; x < 800; x++)
			target_paint(NULL, (x + 0.5) / 2, (y + 0.5) / 2, target.px + ((size_t)y * 800 + x) * 3);
	target_path = vt_save("target.png", &target);
	img_free(&target);
	args[1] = frame_path;
	args[4] = target_path;
	CHECK(test_brushloop(args, &out, &err) == 0);
	j = vt_json(out);
	if (j) {
		const cJSON *w = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "worst"), 0);

		CHECK(cJSON_IsString(cJSON_GetObjectItem(j, "source")) &&
		      strcmp(cJSON_GetObjectItem(j, "source")->valuestring, "markers") == 0);
		CHECK(vt_arr(j, "cells", 0) == 80 && vt_arr(j, "cells", 1) == 60);
		CHECK(vt_num(j, "cell_mm") == 5);
		/* 64 of 4800 cells are wrong: the mean moves, the 95th percentile does not. */
		CHECK_MSG(vt_num(j, "p95_de00") < 3.0, "p95 %.2f", vt_num(j, "p95_de00"));
		CHECK(vt_num(j, "mean_de00") > 0.3);
		CHECK(vt_num(j, "max_de00") > 15); /* srgb:40,140,60 against srgb:60,180,150 is 19.07 */
		CHECK(vt_num(w, "x_mm") >= 200 && vt_num(w, "x_mm") < 240);
		CHECK(vt_num(w, "y_mm") >= 100 && vt_num(w, "y_mm") < 140);
		CHECK(vt_num(w, "de00") > 15);
		cJSON_Delete(j);
	}
	CHECK_STR_CONTAINS(err, "uncalibrated");
	free(out);
	free(err);
	CHECK(img_load(map, 1000000, &pic, &e) == 0);
	if (pic.px) {
		const unsigned char *bad = pic.px + ((size_t)120 * 400 + 220) * 3;
		const unsigned char *good = pic.px + ((size_t)40 * 400 + 60) * 3;

		CHECK(pic.w == 400 && pic.h == 300);
		CHECK(bad[0] > 180 && bad[2] < 80);   /* red: 20 and above */
		CHECK(good[2] > good[0]);             /* blue end: small */
		img_free(&pic);
	}
}

TEST(target_embedded_profile_is_used)
{
	struct img t = { 0 };
	float lab[3], lab_srgb[3];
	cmsHPROFILE h = camera_profile();
	cmsUInt32Number n = 0;
	bl_err err = { 0 };

	img_alloc(&t, 1, 1, NULL);
	t.px[0] = 180;
	t.px[1] = 90;
	t.px[2] = 40;
	CHECK(meas_target_lab(&t, "plain", 1, 1, lab_srgb, &err) == 0);
	cmsSaveProfileToMem(h, NULL, &n);
	t.icc = malloc(n);
	t.icc_len = n;
	cmsSaveProfileToMem(h, t.icc, &n);
	CHECK(meas_target_lab(&t, "tagged", 1, 1, lab, &err) == 0);
	{
		cmsHPROFILE lp = cmsCreateLab4Profile(NULL);
		cmsHTRANSFORM xf = cmsCreateTransform(h, TYPE_RGB_DBL, lp, TYPE_Lab_DBL,
						      INTENT_RELATIVE_COLORIMETRIC, 0);
		double rgb[3] = { 180 / 255.0, 90 / 255.0, 40 / 255.0 };
		cmsCIELab e;
		color_lab s;

		cmsDoTransform(xf, rgb, &e, 1);
		CHECK(color_de00_fast(lab[0], lab[1], lab[2], e.L, e.a, e.b) < 0.3);
		color_parse("srgb:180,90,40", &s, NULL);
		CHECK(color_de00_fast(lab_srgb[0], lab_srgb[1], lab_srgb[2], s.L, s.a, s.b) < 0.3);
		CHECK(color_de00_fast(lab[0], lab[1], lab[2], lab_srgb[0], lab_srgb[1], lab_srgb[2]) > 3);
		cmsDeleteTransform(xf);
		cmsCloseProfile(lp);
	}
	/* A broken embedded profile: a warning, and the target is taken as sRGB. */
	memset(t.icc + 40, 0x5a, 60);
	t.icc_len = 100;
	CHECK(meas_target_lab(&t, "broken", 1, 1, lab, &err) == 0);
	CHECK(color_de00_fast(lab[0], lab[1], lab[2], lab_srgb[0], lab_srgb[1], lab_srgb[2]) < 0.01);
	cmsCloseProfile(h);
	img_free(&t);
}

TEST_MAIN(T(patches_from_cjpeg_within_half_de00), T(patches_from_a_webcam_style_jpeg),
	  T(truth_file_reports_error_against_truth), T(highlights_edges_and_outliers_are_rejected),
	  T(spread_follows_the_noise), T(region_outside_the_image_is_refused),
	  T(nan_and_malformed_options_are_refused), T(camera_profile_is_used),
	  T(bad_profiles_are_refused), 
	  T(lab_raster_matches_the_float_transform), T(de_map_statistics),
	  T(canvas_against_target_end_to_end), T(target_embedded_profile_is_used))

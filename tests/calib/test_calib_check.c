/* test_calib_check.c: calib camera --check: an existing profile measured on a fresh chart frame, left as it is, its patch errors drawn, the exit its verdict. */
#include <math.h>
#include <unistd.h>

#include "calib_test.h"
#include "color/color.h"

/* A profile made from the seed-1 chart, once for the binary; its bytes and its record's bytes. */
static const char *profile(char **icc, size_t *icc_len, char **rec, size_t *rec_len)
{
	static char p[4096];
	char frame[4096], record[4200];
	bl_err err = { 0 };

	if (!p[0]) {
		const char *a[] = { "calib", "camera", "--frame", frame, "-o", p, "--force", NULL };

		snprintf(p, sizeof(p), "%s", tmp_path("made.icc"));
		snprintf(frame, sizeof(frame), "%s", tmp_path("chart1.jpg"));
		sim_frame(SIM_SCENE_CHART, 1, 0, NULL, frame, NULL);
		if (run_cli(a, NULL, NULL) > 1)
			exit(1);
	}
	snprintf(record, sizeof(record), "%s.json", p);
	if (fs_read_file(p, 1 << 24, icc, icc_len, &err) || fs_read_file(record, 1 << 24, rec, rec_len, &err))
		exit(1);
	return p;
}

/* The chart of seed, with its linear light times gain (1: as rendered), as a PNG. */
static const char *fresh_chart(uint64_t seed, double gain, const char *name)
{
	static char png[2][4096];
	static int k;
	char jpg[4096];
	struct img im = { 0 };
	bl_err err = { 0 };

	k = !k;
	snprintf(jpg, sizeof(jpg), "%s", tmp_path("fresh.jpg"));
	snprintf(png[k], sizeof(png[k]), "%s", tmp_path(name));
	sim_frame(SIM_SCENE_CHART, seed, 0, NULL, jpg, NULL);
	if (img_load(jpg, 1L << 24, &im, &err))
		exit(1);
	for (size_t i = 0; i < (size_t)im.w * im.h * 3; i++)
		im.px[i] = (unsigned char)lround(
			255 * meas_linear_to_srgb(fmin(1.0, gain * meas_srgb_to_linear(im.px[i] / 255.0))));
	if (img_save(png[k], &im, &err))
		exit(1);
	img_free(&im);
	return png[k];
}

/* The picture's pixel at (x, y). */
static void pixel(const struct img *im, int x, int y, unsigned char rgb[3])
{
	memcpy(rgb, &im->px[3 * ((size_t)y * im->w + x)], 3);
}

/* Checks the picture against the check's JSON: each patch's left half its reference, framed by its verdict. */
static void picture_says(const char *png, const char *json, double threshold, int *green, int *red)
{
	cJSON *root = cJSON_Parse(json), *it;
	struct img im = { 0 };
	bl_err err = { 0 };

	*green = *red = 0;
	CHECK_MSG(img_load(png, 1L << 24, &im, &err) == 0, "%s", err.msg);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(root, "patches")) {
		const cJSON *roi = cJSON_GetObjectItem(it, "roi"), *ref = cJSON_GetObjectItem(it, "ref_lab");
		int x = cJSON_GetArrayItem(roi, 0)->valueint, y = cJSON_GetArrayItem(roi, 1)->valueint;
		int w = cJSON_GetArrayItem(roi, 2)->valueint, h = cJSON_GetArrayItem(roi, 3)->valueint;
		double de = cJSON_GetObjectItem(it, "de00")->valuedouble;
		color_lab l = { cJSON_GetArrayItem(ref, 0)->valuedouble, cJSON_GetArrayItem(ref, 1)->valuedouble,
				cJSON_GetArrayItem(ref, 2)->valuedouble };
		color_rgb want;
		unsigned char in[3], edge[3];
		int g;

		color_lab_to_srgb(&l, &want, &g, &err);
		pixel(&im, x + w / 4, y + h / 2, in);
		pixel(&im, x - 1, y + h / 2, edge);
		CHECK(fabs(in[0] - fmin(fmax(want.r, 0), 255)) <= 1 && fabs(in[2] - fmin(fmax(want.b, 0), 255)) <= 1);
		if (de <= threshold) {
			CHECK(edge[0] == 0 && edge[1] == 200 && edge[2] == 0);
			(*green)++;
		} else if (de > 2 * threshold) {
			CHECK(edge[0] == 230 && edge[1] == 0 && edge[2] == 0);
			(*red)++;
		}
	}
	img_free(&im);
	cJSON_Delete(root);
}

TEST(check_measures_a_fresh_chart_without_replacing_the_profile)
{
	char *icc, *rec, *icc2, *rec2, *out = NULL, *err = NULL, chart[4096], png[4096], ti3[4096];
	size_t icc_len, rec_len, icc2_len, rec2_len;
	const char *p = profile(&icc, &icc_len, &rec, &rec_len);
	int green, red;

	snprintf(chart, sizeof(chart), "%s", fresh_chart(2, 1.0, "seed2.png"));
	snprintf(png, sizeof(png), "%s", tmp_path("check.png"));
	snprintf(ti3, sizeof(ti3), "%s", tmp_path("check.ti3"));
	{
		const char *a[] = { "calib", "camera", "--check", p, "--frame", chart, "-o", png, "--ti3", ti3,
				    "--json", NULL };

		CHECK_MSG(run_cli(a, &out, &err) == 0, "%s", err ? err : "");
	}
	CHECK(json_at(out, "profile_now.mean_de00") > 0 && json_at(out, "profile_now.mean_de00") <= 1.5);
	CHECK(json_at(out, "profile_now.patches") == 24);
	picture_says(png, out, 1.5, &green, &red);
	CHECK(green > 20);
	/* ArgyllCMS's profcheck on what the check measured, against the same profile: the same figure. */
	{
		const char *a[] = { "profcheck", "-k", ti3, p, NULL };
		char *pc = NULL, *pe = NULL;
		double avg = -1;

		CHECK_MSG(test_spawn(a, NULL, &pc, &pe) == 0, "profcheck: %s", pe ? pe : "");
		if (pc && strstr(pc, "avg. = "))
			avg = atof(strstr(pc, "avg. = ") + 7);
		fprintf(stderr, "check on seed 2: mean %.4f, profcheck %.4f\n", json_at(out, "profile_now.mean_de00"),
			avg);
		CHECK_NEAR(avg, json_at(out, "profile_now.mean_de00"), 0.01);
		free(pc);
		free(pe);
	}
	/* Neither the profile nor its record was touched, and no .prev was made of them. */
	profile(&icc2, &icc2_len, &rec2, &rec2_len);
	CHECK(icc_len == icc2_len && memcmp(icc, icc2, icc_len) == 0);
	CHECK(rec_len == rec2_len && memcmp(rec, rec2, rec_len) == 0);
	free(out);
	free(err);
	free(icc);
	free(rec);
	free(icc2);
	free(rec2);
	/* Without -o the picture goes beside the profile, named for it. */
	{
		char def[4200];
		const char *a[] = { "calib", "camera", "--check", p, "--frame", chart, NULL };

		snprintf(def, sizeof(def), "%s.check.png", p);
		CHECK(run_cli(a, &out, NULL) == 0);
		CHECK_STR_CONTAINS(out, "PASS: mean ");
		CHECK_STR_CONTAINS(out, "is not replaced");
		CHECK(file_exists(def));
		free(out);
	}
}

TEST(check_fails_exit_1_on_a_chart_the_profile_no_longer_reads)
{
	char *icc, *rec, *out = NULL, *err = NULL, png[4096];
	size_t icc_len, rec_len;
	const char *p = profile(&icc, &icc_len, &rec, &rec_len);
	const char *dim = fresh_chart(2, 0.6, "dim.png");
	int green, red;

	snprintf(png, sizeof(png), "%s", tmp_path("dim-check.png"));
	{
		const char *a[] = { "calib", "camera", "--check", p, "--frame", dim, "-o", png, "--json", NULL };

		CHECK_MSG(run_cli(a, &out, &err) == 1, "%s", err ? err : "");
	}
	fprintf(stderr, "check on seed 2 with 0.6 of the light: mean %.2f\n", json_at(out, "profile_now.mean_de00"));
	CHECK(json_at(out, "profile_now.mean_de00") > 1.5);
	CHECK(strstr(out, "\"pass\":\tfalse") != NULL);
	picture_says(png, out, 1.5, &green, &red);
	CHECK(red > 12);
	free(out);
	free(err);
	free(icc);
	free(rec);
}

TEST(check_refuses_what_would_make_a_profile_exit_2)
{
	char *err = NULL, chart[4096];
	const char *not_icc = test_write_file("not.icc", "not a profile\n");
	/* The options are refused before any profile is read. */
	const char *prof = not_icc;
	struct {
		const char *args[12];
		const char *want;
	} bad[] = {
		{ { "calib", "camera", "--check", tmp_path("missing.icc"), "--frame", chart, "-o",
		    tmp_path("m.png"), NULL }, "missing.icc" },
		{ { "calib", "camera", "--check", not_icc, "--frame", chart, "-o", tmp_path("n.png"), NULL },
		  "not.icc" },
		{ { "calib", "camera", "--check", prof, "--frame", chart, "--model", "matrix", NULL },
		  "--check writes no profile: --model" },
		{ { "calib", "camera", "--check", prof, "--frame", chart, "--force", NULL },
		  "--check writes no profile: --force" },
		{ { "calib", "camera", "--check", prof, "--frame", chart, "-o", tmp_path("x.icc"), NULL },
		  "-o with --check names the patch-error picture" },
	};

	snprintf(chart, sizeof(chart), "%s", tmp_path("seed2.jpg"));
	sim_frame(SIM_SCENE_CHART, 2, 0, NULL, chart, NULL);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_MSG(run_cli(bad[i].args, NULL, &err) == 2, "case %zu", i);
		CHECK_STR_CONTAINS(err, bad[i].want);
		free(err);
		err = NULL;
	}
	CHECK(!file_exists(tmp_path("m.png")) && !file_exists(tmp_path("n.png")) && !file_exists(tmp_path("x.icc")));
}

TEST_MAIN(T(check_measures_a_fresh_chart_without_replacing_the_profile),
	  T(check_fails_exit_1_on_a_chart_the_profile_no_longer_reads),
	  T(check_refuses_what_would_make_a_profile_exit_2))

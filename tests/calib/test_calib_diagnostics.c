/* test_calib_diagnostics.c: the calibration sessions name the cause: two swapped chart references by both names, a chart frame given as --flat, an output path that cannot be written before any work. */
#include <unistd.h>

#include "calib_test.h"

/* The built-in chart's data file with the references of patches a and b exchanged, written as name. */
static const char *chart_swapped(const char *name, const char *a, const char *b)
{
	struct calib_chart *c = malloc(sizeof(*c));
	cJSON *root = cJSON_CreateObject(), *arr;
	bl_err err = { 0 };
	int ia = -1, ib = -1;
	char *text;
	const char *path;

	CHECK(c && calib_chart_builtin("colorchecker24", c, &err) == 0);
	for (int i = 0; i < c->n; i++) {
		ia = strcmp(c->patch[i], a) == 0 ? i : ia;
		ib = strcmp(c->patch[i], b) == 0 ? i : ib;
	}
	CHECK(ia >= 0 && ib >= 0);
	cJSON_AddStringToObject(root, "kind", "chart");
	cJSON_AddNumberToObject(root, "version", 1);
	cJSON_AddStringToObject(root, "name", name);
	cJSON_AddStringToObject(root, "source", "the built-in chart, two references exchanged");
	cJSON_AddNumberToObject(root, "cols", c->cols);
	cJSON_AddNumberToObject(root, "rows", c->rows);
	cJSON_AddNumberToObject(root, "patch_fraction", c->patch_fraction);
	cJSON_AddBoolToObject(root, "dark_frame", c->dark_frame);
	arr = cJSON_AddArrayToObject(root, "patches");
	for (int i = 0; i < c->n; i++) {
		cJSON *p = cJSON_CreateObject();
		int from = i == ia ? ib : i == ib ? ia : i;

		cJSON_AddStringToObject(p, "name", c->patch[i]);
		json_add_vec(p, "lab", c->lab[from], 3);
		cJSON_AddItemToArray(arr, p);
	}
	text = cJSON_Print(root);
	path = test_write_file(name, text);
	free(text);
	cJSON_Delete(root);
	free(c);
	return path;
}

/* Two patches' references exchanged: both are named, not the first patch the fit fails on. */
TEST(swapped_chart_references_are_named_both)
{
	static const char *const pairs[][2] = { { "green", "red" }, { "blue sky", "orange" } };

	for (size_t k = 0; k < sizeof(pairs) / sizeof(pairs[0]); k++) {
		char name[64], want[128], *e;
		const char *icc = tmp_path("swapped.icc");
		const char *a[] = { "calib", "camera", "--frame", chart_seed1(), "--chart", NULL, "-o", icc, NULL };

		snprintf(name, sizeof(name), "swapped-%zu.json", k);
		a[5] = chart_swapped(name, pairs[k][0], pairs[k][1]);
		CHECK(run_cli(a, NULL, &e) == 2);
		fprintf(stderr, "  %s", e ? e : "");
		/* Named in the chart's order, as the pairs are listed. */
		snprintf(want, sizeof(want), "patches '%s' and '%s' read as each other's references", pairs[k][0],
			 pairs[k][1]);
		CHECK_STR_CONTAINS(e, want);
		CHECK_STR_CONTAINS(e, "swapped");
		CHECK(!file_exists(icc));
		free(e);
	}
}

/* The chart's frame given as the flat frame too: refused naming it, not blamed on the light. */
TEST(a_chart_frame_given_as_flat_is_refused_naming_it)
{
	const char *icc = tmp_path("flat.icc");
	const char *a[] = { "calib", "camera", "--frame", chart_seed1(), "--flat", chart_seed1(), "-o", icc, NULL };
	const char *flat = tmp_path("flat.jpg");
	const char *b[] = { "calib", "camera", "--frame", chart_seed1(), "--flat", flat, "-o", icc, NULL };
	char want[4200], *e;

	CHECK(run_cli(a, NULL, &e) == 2);
	fprintf(stderr, "  %s", e ? e : "");
	snprintf(want, sizeof(want), "--flat %s is no flat frame", chart_seed1());
	CHECK_STR_CONTAINS(e, want);
	CHECK_STR_CONTAINS(e, "is it the chart's frame?");
	CHECK(strstr(e, "light it evenly") == NULL);
	CHECK(!file_exists(icc));
	free(e);
	/* A true flat frame of the same bench is taken. */
	sim_frame(SIM_SCENE_FLAT, 1, 0, NULL, flat, NULL);
	CHECK(run_cli(b, NULL, NULL) == 0);
	CHECK(file_exists(icc));
}

/* Refused at once, exit 2, naming the path: and its folder was not made, nor anything written. */
static void refused_at_once(const char *const *args, const char *want)
{
	char *e;
	double t0 = clk_now_s(clk_monotonic());

	CHECK_MSG(run_cli(args, NULL, &e) == 2, "brushloop %s %s", args[0], args[1]);
	fprintf(stderr, "  %s %s: %.2f s: %s", args[0], args[1], clk_now_s(clk_monotonic()) - t0, e ? e : "");
	CHECK_STR_CONTAINS(e, want);
	free(e);
	CHECK(!file_exists(tmp_path("nope")));
}

/*
 * -o into a folder that does not exist is told before the session's work:
 * given a frame that is not there either, the error is the output's (the
 * frame is read after the check). Before, the camera measured the whole
 * chart and then failed on a temporary file's name, exit 1.
 */
TEST(an_output_that_cannot_be_written_is_refused_before_any_work)
{
	char o[4096], want[4200], notdir[4096], icc[4096];
	const char *card = tmp_path("card.json"), *missing = tmp_path("missing.jpg");
	const char *camera[] = { "calib", "camera", "--frame", chart_seed1(), "-o", o, NULL };
	const char *ti3[] = { "calib", "camera", "--frame", chart_seed1(), "-o", icc, "--ti3", notdir, NULL };
	const char *canvas[] = { "calib", "canvas", "--frame", missing, "-o", o, NULL };
	const char *arm[] = { "calib", "arm", "--points", tmp_path("missing.json"), "-o", o, NULL };
	const char *paints[] = { "calib", "paints", "--palette", src_path("palettes/kimera-13.json"), "--card", card,
				 "--frame", missing, "-o", o, NULL };
	const char *dir[] = { "calib", "canvas", "--frame", missing, "-o", test_tmpdir(), NULL };

	snprintf(o, sizeof(o), "%s", tmp_path("nope/out.json"));
	snprintf(icc, sizeof(icc), "%s", tmp_path("x.icc"));
	snprintf(want, sizeof(want), "-o %s: its folder %s does not exist", o, tmp_path("nope"));
	refused_at_once(camera, want);
	refused_at_once(canvas, want);
	refused_at_once(arm, want);
	refused_at_once(paints, want);
	/* A file where a folder should be. */
	test_write_file("plain", "x");
	snprintf(notdir, sizeof(notdir), "%s", tmp_path("plain/m.ti3"));
	snprintf(want, sizeof(want), "--ti3 %s: %s is not a folder", notdir, tmp_path("plain"));
	refused_at_once(ti3, want);
	CHECK(!file_exists(icc));
	snprintf(want, sizeof(want), "-o %s: is a folder", test_tmpdir());
	refused_at_once(dir, want);
	/* --check: the profile is read first, then where its picture goes is checked, before the chart. */
	{
		char missing_icc[4096], png[4096];
		const char *check[] = { "calib", "camera", "--check", missing_icc, "--frame", missing, "-o", png, NULL };
		const char *check2[] = { "calib", "camera", "--check", src_path("examples/calibration/sim-camera.icc"),
					 "--frame", missing, "-o", png, NULL };

		snprintf(missing_icc, sizeof(missing_icc), "%s", tmp_path("missing.icc"));
		snprintf(png, sizeof(png), "%s", tmp_path("nope/check.png"));
		snprintf(want, sizeof(want), "%s: cannot open", missing_icc);
		refused_at_once(check, want);
		snprintf(want, sizeof(want), "-o %s: its folder %s does not exist", png, tmp_path("nope"));
		refused_at_once(check2, want);
	}
}

TEST_MAIN(T(swapped_chart_references_are_named_both), T(a_chart_frame_given_as_flat_is_refused_naming_it),
	  T(an_output_that_cannot_be_written_is_refused_before_any_work))

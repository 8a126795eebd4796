/* test_calib_cgats.c: chart references from ArgyllCMS's CGATS (.cie, .ti2) taken as the chart's truth, and malformed ones refused naming what is wrong. */
#include <math.h>
#include <unistd.h>

#include "calib_test.h"
#include "color/color.h"

#define ARGYLL_REF "/usr/share/color/argyll/ref/"

/* The built-in ColorChecker as a .cie the way ArgyllCMS ships one (IT8.7/2, SAMPLE_ID A01..D06, Lab). */
static const char *builtin_as_cie(void)
{
	struct calib_chart *c = malloc(sizeof(*c));
	char text[4096];
	size_t n = 0;
	bl_err err = { 0 };

	if (!c || calib_chart_builtin("colorchecker24", c, &err))
		exit(1);
	n += (size_t)snprintf(text + n, sizeof(text) - n,
			      "IT8.7/2\nORIGINATOR \"brushloop tests\"\nDESCRIPTOR \"ColorChecker 2014\"\n"
			      "# the built-in chart's values\n\nNUMBER_OF_FIELDS 4\nBEGIN_DATA_FORMAT\n"
			      "SAMPLE_ID LAB_L LAB_A LAB_B\nEND_DATA_FORMAT\n\nNUMBER_OF_SETS 24\nBEGIN_DATA\n");
	for (int i = 0; i < c->n; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%c%02d %.2f\t%.2f  %.2f\n", 'A' + i / 6,
				      i % 6 + 1, c->lab[i][0], c->lab[i][1], c->lab[i][2]);
	snprintf(text + n, sizeof(text) - n, "END_DATA\n");
	free(c);
	return test_write_file("cc2014.cie", text);
}

/* calib camera on the seed-1 chart with chart; its JSON (NULL unless the exit is 0 or 1). */
static char *camera_with(const char *frame, const char *chart)
{
	const char *a[] = { "calib", "camera", "--frame", frame, "--chart", chart, "-o", tmp_path("cgats.icc"),
			    "--json", "--force", NULL };
	char *out = NULL, *err = NULL;
	int rc = run_cli(a, &out, &err);

	if (rc > 1)
		fprintf(stderr, "calib camera --chart %s: exit %d: %s\n", chart, rc, err ? err : "");
	free(err);
	if (rc > 1) {
		free(out);
		return NULL;
	}
	return out;
}

TEST(a_cie_or_ti2_chart_reference_is_the_charts_truth)
{
	char frame[4096], cie[4096];
	struct calib_chart *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b));
	bl_err err = { 0 };
	char *builtin, *from_cie, *argyll;

	snprintf(frame, sizeof(frame), "%s", tmp_path("chart.jpg"));
	sim_frame(SIM_SCENE_CHART, 1, 0, NULL, frame, NULL);
	snprintf(cie, sizeof(cie), "%s", builtin_as_cie());
	/* The same values through CGATS: the same chart, patch for patch, and the same profile's figures. */
	CHECK(calib_chart_builtin("colorchecker24", a, &err) == 0);
	CHECK_MSG(calib_chart_open(cie, b, &err) == 0, "%s", err.msg);
	CHECK(b->n == 24 && b->cols == 6 && b->rows == 4 && b->dark_frame);
	CHECK_STR_CONTAINS(b->name, "ColorChecker 2014");
	CHECK(strcmp(b->patch[0], "A01") == 0 && strcmp(b->patch[23], "D06") == 0);
	for (int i = 0; i < 24; i++)
		for (int k = 0; k < 3; k++)
			CHECK_NEAR(b->lab[i][k], a->lab[i][k], 1e-9);
	builtin = camera_with(frame, "colorchecker24");
	from_cie = camera_with(frame, cie);
	CHECK(builtin && from_cie);
	CHECK_NEAR(json_at(from_cie, "held_out.mean_de00"), json_at(builtin, "held_out.mean_de00"), 1e-9);
	CHECK_NEAR(json_at(from_cie, "fit.mean_de00"), json_at(builtin, "fit.mean_de00"), 1e-9);
	CHECK_STR_CONTAINS(from_cie, "\"A01\"");
	/* ArgyllCMS's own ColorChecker.cie (the older Gretag Macbeth values) is the reference as it says. */
	CHECK_MSG(calib_chart_open(ARGYLL_REF "ColorChecker.cie", b, &err) == 0, "%s", err.msg);
	CHECK(b->n == 24 && b->cols == 6 && b->rows == 4);
	CHECK_NEAR(b->lab[0][0], 37.99, 1e-9);
	CHECK_NEAR(b->lab[23][2], -0.97, 1e-9);
	argyll = camera_with(frame, ARGYLL_REF "ColorChecker.cie");
	CHECK(argyll != NULL);
	fprintf(stderr, "held-out mean: built-in %.4f, the same as .cie %.4f, Argyll's ColorChecker.cie %.4f\n",
		json_at(builtin, "held_out.mean_de00"), json_at(from_cie, "held_out.mean_de00"),
		json_at(argyll, "held_out.mean_de00"));
	CHECK(json_at(argyll, "held_out.mean_de00") > 0 && json_at(argyll, "held_out.mean_de00") < 3);
	/* Its .ti2 places the patches by SAMPLE_LOC A1..D6 and gives XYZ (0..100): Lab D50 from it. */
	CHECK_MSG(calib_chart_open(ARGYLL_REF "ColorChecker.ti2", b, &err) == 0, "%s", err.msg);
	CHECK(b->n == 24 && b->cols == 6 && b->rows == 4 && strcmp(b->patch[5], "A6") == 0);
	{
		const color_xyz x = { 11.773, 10.213, 4.9219 }; /* its A1, dark skin */
		color_lab l;

		color_xyz_to_lab(&x, &l);
		CHECK_NEAR(b->lab[0][0], l.L, 1e-9);
		CHECK_NEAR(b->lab[0][1], l.a, 1e-9);
		CHECK(fabs(b->lab[0][0] - 37.99) < 1.0);
	}
	free(builtin);
	free(from_cie);
	free(argyll);
	free(a);
	free(b);
}

#define HEAD "CTI3\nDESCRIPTOR \"bad\"\nNUMBER_OF_FIELDS 4\nBEGIN_DATA_FORMAT\nSAMPLE_ID LAB_L LAB_A LAB_B\nEND_DATA_FORMAT\n"

TEST(a_malformed_cgats_chart_is_refused_naming_what_is_wrong)
{
	static const struct {
		const char *text, *want;
	} bad[] = {
		{ HEAD "NUMBER_OF_SETS 4\nBEGIN_DATA\nA01 50 0 0\nA02 60 0 0\nB01 70 0 0\n",
		  "no END_DATA after BEGIN_DATA: the file is cut short" },
		{ HEAD "NUMBER_OF_SETS 4\nBEGIN_DATA\nA01 50 0 0\nA02 60 0\nB01 70 0 0\nB02 80 0 0\nEND_DATA\n",
		  "line 10: 3 values for the 4 fields" },
		{ HEAD "NUMBER_OF_SETS 5\nBEGIN_DATA\nA01 50 0 0\nA02 60 0 0\nB01 70 0 0\nB02 80 0 0\nEND_DATA\n",
		  "NUMBER_OF_SETS says 5, BEGIN_DATA..END_DATA holds 4" },
		{ HEAD "NUMBER_OF_SETS 4\nBEGIN_DATA\nA01 50 0 0\nA02 60 x1 0\nB01 70 0 0\nB02 80 0 0\nEND_DATA\n",
		  "line 10: LAB_A 'x1' is not a number" },
		{ HEAD "NUMBER_OF_SETS 4\nBEGIN_DATA\nA01 50 0 0\nA02 160 0 0\nB01 70 0 0\nB02 80 0 0\nEND_DATA\n",
		  "line 10: L 160 is outside 0..100" },
		{ HEAD "NUMBER_OF_SETS 4\nBEGIN_DATA\nA01 50 0 0\nA01 60 0 0\nB01 70 0 0\nB02 80 0 0\nEND_DATA\n",
		  "'A01' is there twice" },
		{ HEAD "NUMBER_OF_SETS 4\nBEGIN_DATA\nA01 50 0 0\nA02 60 0 0\nB01 70 0 0\nC01 80 0 0\nEND_DATA\n",
		  "4 patches do not fill the 2 x 3 grid" },
		{ HEAD "NUMBER_OF_SETS 4\nBEGIN_DATA\n1 50 0 0\n2 60 0 0\n3 70 0 0\n4 80 0 0\nEND_DATA\n",
		  "SAMPLE_ID '1' is not a grid location like A01" },
		{ "CTI3\nBEGIN_DATA_FORMAT\nSAMPLE_ID RGB_R RGB_G RGB_B\nEND_DATA_FORMAT\nNUMBER_OF_SETS 4\n"
		  "BEGIN_DATA\nA01 50 0 0\nA02 60 0 0\nB01 70 0 0\nB02 80 0 0\nEND_DATA\n",
		  "no LAB_L, LAB_A, LAB_B or XYZ_X, XYZ_Y, XYZ_Z fields" },
		{ "CTI3\nDESCRIPTOR \"bad\nNUMBER_OF_SETS 4\n", "line 2: a string is not closed" },
		{ "CTI3\nNUMBER_OF_SETS 4\nBEGIN_DATA\nA01 50 0 0\nEND_DATA\n",
		  "line 3: BEGIN_DATA before any BEGIN_DATA_FORMAT" },
		{ "NUMBER_OF_FIELDS 4\nBEGIN_DATA_FORMAT\n", "line 1: 'NUMBER_OF_FIELDS' is not a CGATS file identifier" },
		{ "CTI3\nDESCRIPTOR\n\"x\"\n", "line 2: keyword DESCRIPTOR has no value on its line" },
		{ "CTI3\nNUMBER_OF_SETS many\n", "NUMBER_OF_SETS 'many' is not a count" },
		{ "CTI3\nDESCRIPTOR \"only a header\"\n", "no BEGIN_DATA" },
	};
	struct calib_chart *c = malloc(sizeof(*c));
	char frame[4096], out_icc[4096], *err_text = NULL;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char name[32];
		const char *path;
		bl_err err = { 0 };

		snprintf(name, sizeof(name), "bad-%zu.cie", i);
		path = test_write_file(name, bad[i].text);
		CHECK_MSG(calib_chart_open(path, c, &err) == BL_EINVAL, "case %zu", i);
		CHECK_STR_CONTAINS(err.msg, bad[i].want);
		CHECK_STR_CONTAINS(err.msg, name);
	}
	/* Through the command: exit 2 naming it, and no profile written. */
	snprintf(frame, sizeof(frame), "%s", tmp_path("chart.jpg"));
	snprintf(out_icc, sizeof(out_icc), "%s", tmp_path("never.icc"));
	sim_frame(SIM_SCENE_CHART, 1, 0, NULL, frame, NULL);
	{
		const char *a[] = { "calib", "camera", "--frame", frame, "--chart", tmp_path("bad-3.cie"), "-o",
				    out_icc, "--force", NULL };

		CHECK(run_cli(a, NULL, &err_text) == 2);
	}
	CHECK_STR_CONTAINS(err_text, "bad-3.cie line 10: LAB_A 'x1' is not a number");
	CHECK(!file_exists(out_icc));
	free(err_text);
	free(c);
}

/*
 * Captured from the simulator with a CGATS chart: its truth names patches
 * by colour ("dark skin"), the chart by place (A01); each is matched by
 * where it lies. Before, exit 2: "the simulator's truth: none of the
 * chart's patches is named there".
 */
TEST(a_cgats_chart_captured_from_the_simulator_is_held_against_its_truth)
{
	const char *a[] = { "calib", "camera", "--chart", ARGYLL_REF "ColorChecker.cie", "-o", tmp_path("cap.icc"),
			    "--json", "--force", NULL };
	struct calib_chart *c = malloc(sizeof(*c));
	char *out = NULL, *err = NULL;
	cJSON *j, *p0;
	bl_err e = { 0 };
	int rc = run_cli(a, &out, &err);

	CHECK_MSG(rc == 0 || rc == 1, "exit %d: %s", rc, err ? err : "");
	CHECK(json_at(out, "truth.held_out.patches") == 24);
	fprintf(stderr, "captured, Argyll's ColorChecker.cie: held out %.3f, against the truth %.3f\n",
		json_at(out, "held_out.mean_de00"), json_at(out, "truth.held_out.mean_de00"));
	CHECK(json_at(out, "truth.held_out.mean_de00") < 2.0);
	/* A01 is the built-in's first patch, dark skin: the truth is the simulator's dark skin. */
	j = out ? cJSON_Parse(out) : NULL;
	p0 = j ? cJSON_GetArrayItem(cJSON_GetObjectItem(j, "patches"), 0) : NULL;
	CHECK(p0 && strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(p0, "name")), "A01") == 0);
	CHECK(calib_chart_builtin("colorchecker24", c, &e) == 0 && strcmp(c->patch[0], "dark skin") == 0);
	CHECK(p0 && cJSON_GetArraySize(cJSON_GetObjectItem(p0, "truth_lab")) == 3);
	if (p0 && cJSON_GetArraySize(cJSON_GetObjectItem(p0, "truth_lab")) == 3)
		CHECK(calib_de00(c->lab[0], (double[3]){
			cJSON_GetArrayItem(cJSON_GetObjectItem(p0, "truth_lab"), 0)->valuedouble,
			cJSON_GetArrayItem(cJSON_GetObjectItem(p0, "truth_lab"), 1)->valuedouble,
			cJSON_GetArrayItem(cJSON_GetObjectItem(p0, "truth_lab"), 2)->valuedouble }) < 1.0);
	cJSON_Delete(j);
	free(out);
	free(err);
	free(c);
}

/*
 * A .ti1 placed on a grid with XYZ is a chart like a .ti2; ArgyllCMS's own
 * (targen's lists to print, SAMPLE_ID 1, 2, ...) are refused saying what a
 * .ti1 is and what to give instead.
 */
TEST(a_ti1_is_read_when_it_places_its_patches_and_refused_saying_why_when_not)
{
	struct calib_chart *b = malloc(sizeof(*b)), *c = malloc(sizeof(*c));
	char text[4096];
	size_t n = 0;
	bl_err err = { 0 };
	const char *path;

	CHECK(calib_chart_builtin("colorchecker24", b, &err) == 0);
	n += (size_t)snprintf(text + n, sizeof(text) - n, "CTI1\n\nDESCRIPTOR \"ColorChecker as a ti1\"\n"
			      "KEYWORD \"SAMPLE_LOC\"\nNUMBER_OF_FIELDS 8\nBEGIN_DATA_FORMAT\nSAMPLE_ID SAMPLE_LOC "
			      "RGB_R RGB_G RGB_B XYZ_X XYZ_Y XYZ_Z\nEND_DATA_FORMAT\n\nNUMBER_OF_SETS 24\nBEGIN_DATA\n");
	for (int i = 0; i < b->n; i++) {
		color_lab l = { b->lab[i][0], b->lab[i][1], b->lab[i][2] };
		color_xyz x;

		color_lab_to_xyz(&l, &x);
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%d \"%c%d\" 0 0 0 %.5f %.5f %.5f\n", i + 1,
				      'A' + i / 6, i % 6 + 1, x.X, x.Y, x.Z);
	}
	snprintf(text + n, sizeof(text) - n, "END_DATA\n");
	path = test_write_file("cc.ti1", text);
	CHECK_MSG(calib_chart_open(path, c, &err) == 0, "%s", err.msg);
	CHECK(c->n == 24 && c->cols == 6 && c->rows == 4);
	for (int i = 0; i < 24; i++)
		CHECK(calib_de00(c->lab[i], b->lab[i]) < 0.01);
	/* ArgyllCMS's ccxx.ti1 and FograStrip2.ti1: numbered, not placed. */
	CHECK(calib_chart_open(ARGYLL_REF "ccxx.ti1", c, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "ccxx.ti1 line 18: SAMPLE_ID '1' is not a grid location");
	CHECK_STR_CONTAINS(err.msg, "a .ti1 is targen's list of patches to print");
	CHECK(calib_chart_open(ARGYLL_REF "FograStrip2.ti1", c, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "printtarg's .ti2");
	free(b);
	free(c);
}

TEST_MAIN(T(a_cie_or_ti2_chart_reference_is_the_charts_truth),
	  T(a_malformed_cgats_chart_is_refused_naming_what_is_wrong),
	  T(a_cgats_chart_captured_from_the_simulator_is_held_against_its_truth),
	  T(a_ti1_is_read_when_it_places_its_patches_and_refused_saying_why_when_not))

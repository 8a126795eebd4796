/* test_mix_trial.c: `brushloop mix trial`, the closed mixing loop on the simulator through the calibrated camera: deterministic, better than the first recipe alone, honest about the truth, strict about its input. */
#include "base/fs.h"
#include "base/json.h"
#include "test.h"

/* Few targets keep it fast; this seed's first recipes leave some beyond tolerance as the camera sees them. */
#define SEED "13"
#define TARGETS "5"

static const char *src(const char *rel)
{
	static char p[8][4096];
	static int k;
	const char *s = getenv("BRUSHLOOP_SRC");

	k = (k + 1) % 8;
	snprintf(p[k], sizeof(p[k]), "%s/%s", s ? s : BL_SOURCE_ROOT, rel);
	return p[k];
}

static const char *tmp(const char *name)
{
	static char p[8][4096];
	static int k;

	k = (k + 1) % 8;
	snprintf(p[k], sizeof(p[k]), "%s/%s", test_tmpdir(), name);
	return p[k];
}

static double num(const cJSON *o, const char *path)
{
	char key[64];
	const char *dot;

	while ((dot = strchr(path, '.'))) {
		snprintf(key, sizeof(key), "%.*s", (int)(dot - path), path);
		o = cJSON_GetObjectItemCaseSensitive(o, key);
		path = dot + 1;
	}
	o = cJSON_GetObjectItemCaseSensitive(o, path);
	return cJSON_IsNumber(o) ? o->valuedouble : NAN;
}

/* Runs the trial; its JSON, or NULL (a failed check). */
static cJSON *trial(const char *const *extra, char **text)
{
	const char *args[16] = { "mix", "trial", "--targets", TARGETS, "--seed", SEED, "--json" };
	char *out = NULL, *err = NULL;
	cJSON *j;
	int n = 7, rc;

	for (int i = 0; extra && extra[i]; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	rc = test_brushloop(args, &out, &err);
	CHECK_MSG(rc == 0, "exit %d: %s", rc, err ? err : "");
	j = out ? cJSON_Parse(out) : NULL;
	CHECK_MSG(j != NULL, "not JSON: %s", out ? out : "(null)");
	if (text)
		*text = out;
	else
		free(out);
	free(err);
	return j;
}

/*
 * The same seed gives the same trial to the byte, and the report has the
 * issue's figures: attempts (median, p95, max), unreached with a reason each,
 * the same for the uncorrected first recipe, paint against the ideal, and the
 * truth beside the camera's verdicts.
 */
TEST(the_trial_is_deterministic_and_reports_its_figures)
{
	char *a = NULL, *b = NULL;
	cJSON *j = trial(NULL, &a), *k = trial(NULL, &b), *t;
	int n = 0;

	CHECK(a && b && strcmp(a, b) == 0);
	CHECK(num(j, "targets") == 5);
	CHECK(num(j, "attempts.median") >= 1 && num(j, "attempts.p95") >= num(j, "attempts.median"));
	CHECK(num(j, "attempts.max") >= num(j, "attempts.p95") && num(j, "attempts.max") <= 4);
	CHECK(num(j, "reached") + num(j, "unreached") == 5);
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(j, "unreached_reasons")) == num(j, "unreached"));
	CHECK(num(j, "uncorrected.attempts.median") == 1 && num(j, "uncorrected.attempts.max") == 1);
	CHECK(num(j, "uncorrected.unreached") >= 0);
	CHECK(num(j, "paint_ml.used") >= num(j, "paint_ml.ideal") && num(j, "paint_ml.ideal") > 0);
	CHECK(num(j, "uncorrected.paint_ml.used") > 0);
	CHECK(num(j, "truth.camera_vs_truth_de00.n") >= 10);
	CHECK(num(j, "truth.camera_vs_cell_as_seen_de00.n") >= 1);
	CHECK(num(j, "truth.final_de00.median") >= 0 && num(j, "uncorrected.truth.de00.n") == 5);
	/* The example machine names its profile and light map: the trial measures through both. */
	t = cJSON_GetObjectItem(j, "camera");
	CHECK_STR_CONTAINS(cJSON_GetStringValue(cJSON_GetObjectItem(t, "profile")), "machine file");
	CHECK_STR_CONTAINS(cJSON_GetStringValue(cJSON_GetObjectItem(t, "profile_source")),
			   "sim-camera.icc");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(t, "light_corrected")));
	CHECK_STR_CONTAINS(cJSON_GetStringValue(cJSON_GetObjectItem(t, "light")), "machine file");
	CHECK_STR_CONTAINS(cJSON_GetStringValue(cJSON_GetObjectItem(t, "light_source")),
			   "sim-light.json");
	/* The camera's verdict decides: every target reached was measured within tolerance. */
	cJSON_ArrayForEach(t, cJSON_GetObjectItem(j, "per_target")) {
		if (cJSON_IsTrue(cJSON_GetObjectItem(t, "reached")))
			CHECK(num(t, "de00") <= 2.0);
		CHECK(num(t, "truth_de00") >= 0);
		n++;
	}
	CHECK(n == 5);
	cJSON_Delete(j);
	cJSON_Delete(k);
	free(a);
	free(b);
}

/*
 * On these targets the closed loop beats the first recipe alone, as the
 * camera measures both: every target the first recipe left beyond tolerance
 * is reached, and fewer end beyond it.
 */
TEST(correction_beats_the_uncorrected_first_recipe)
{
	cJSON *j = trial(NULL, NULL), *t;
	int beyond = 0, rescued = 0;

	CHECK_MSG(num(j, "uncorrected.unreached") >= 1,
		  "the seed no longer gives a first recipe to correct: choose another");
	CHECK(num(j, "unreached") < num(j, "uncorrected.unreached"));
	CHECK(num(j, "final_de00.max") < num(j, "uncorrected.de00.max"));
	cJSON_ArrayForEach(t, cJSON_GetObjectItem(j, "per_target")) {
		if (num(t, "uncorrected_de00") > 2.0) {
			beyond++;
			rescued += cJSON_IsTrue(cJSON_GetObjectItem(t, "reached")) && num(t, "de00") <= 2.0;
			CHECK(num(t, "attempts") >= 1);
		}
	}
	CHECK(beyond == num(j, "uncorrected.unreached") && rescued == beyond);
	cJSON_Delete(j);
}

/* Writes the example machine with string keys changed, or removed where the value is NULL (dotted paths; pairs until a NULL key). */
static const char *machine_with(const char *name, const char *const *kv)
{
	char *text, *p = NULL, k[64];
	const char *path = tmp(name);
	size_t len;
	bl_err err = { 0 };
	cJSON *root;

	if (fs_read_file(src("examples/machine-sim.json"), 1 << 20, &text, &len, &err))
		return NULL;
	root = cJSON_Parse(text);
	free(text);
	for (; kv[0]; kv += 2) {
		const char *at = kv[0], *dot;
		cJSON *o = root;

		while ((dot = strchr(at, '.'))) {
			snprintf(k, sizeof(k), "%.*s", (int)(dot - at), at);
			o = cJSON_GetObjectItem(o, k);
			at = dot + 1;
		}
		cJSON_DeleteItemFromObject(o, at);
		if (kv[1])
			cJSON_AddStringToObject(o, at, kv[1]);
	}
	p = cJSON_Print(root);
	fs_write_atomic(path, p, strlen(p), &err);
	cJSON_free(p);
	cJSON_Delete(root);
	return path;
}

/* A string of the trial's "camera" object ("" when absent). */
static const char *cam_str(const cJSON *j, const char *key)
{
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "camera"), key));

	return v ? v : "";
}

/*
 * A machine whose calibration names neither a profile nor a light map: the
 * trial makes both from the simulator's chart and flat frames, as `calib
 * camera --flat F --light-map MAP` makes them, and says so; with
 * --no-light-correction it divides no light out, and says that.
 */
TEST(the_light_correction_used_is_named)
{
	const char *none_kv[] = { "calibration.camera_profile", NULL, "calibration.light_map", NULL,
				  NULL };
	const char *machine = machine_with("uncalibrated.json", none_kv);
	const char *made[] = { "--machine", machine, "--targets", "2", NULL };
	const char *off[] = { "--targets", "2", "--no-light-correction", NULL };
	cJSON *j, *cells;
	char *out = NULL;

	CHECK(machine != NULL);
	j = trial(made, NULL);
	CHECK_STR_CONTAINS(cam_str(j, "profile"), "chart frame");
	CHECK_STR_CONTAINS(cam_str(j, "light"), "flat frame");
	CHECK_STR_CONTAINS(cam_str(j, "light_source"), "calib camera --flat");
	CHECK(num(j, "camera.held_out_mean_de00") <= 1.5);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "camera"), "light_corrected")));
	/* The cells lie about as bright as where the chart lay: the map's gain there, not 0 (unknown). */
	cells = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "camera"), "light_at_cells");
	CHECK(cJSON_GetArraySize(cells) == 2);
	CHECK(cJSON_GetArrayItem(cells, 0) && cJSON_GetArrayItem(cells, 0)->valuedouble > 0.8 &&
	      cJSON_GetArrayItem(cells, 1)->valuedouble < 1.2);
	CHECK(num(j, "targets") == 2);
	cJSON_Delete(j);
	j = trial(off, NULL);
	CHECK_STR_CONTAINS(cam_str(j, "light"), "none");
	CHECK_STR_CONTAINS(cam_str(j, "light_source"), "not corrected");
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "camera"), "light_corrected")));
	CHECK(!cJSON_GetObjectItem(cJSON_GetObjectItem(j, "camera"), "light_at_cells"));
	cJSON_Delete(j);
	{
		const char *plain[] = { "mix", "trial", "--machine", machine, "--targets", "1", NULL };

		CHECK(test_brushloop(plain, &out, NULL) == 0);
		CHECK_STR_CONTAINS(out, "made now from a chart frame");
		CHECK_STR_CONTAINS(out, "light map made now from the simulator's flat scene");
		CHECK_STR_CONTAINS(out, "attempts median");
		CHECK_STR_CONTAINS(out, "uncorrected:");
		free(out);
	}
}

/* Bad options and inputs: exit 2, a message naming what was wrong, nothing on stdout. */
TEST(bad_input_is_refused_with_exit_2)
{
	const char *replay_kv[] = { "camera.backend", "replay", "camera.device", "frames", NULL };
	const char *swap_kv[] = { "sim.paints.w2", "warm yellow", NULL };
	const char *small = tmp("small-light.json"), *absent = tmp("absent-light.json");
	const char *small_kv[] = { "calibration.camera_profile",
				   src("examples/calibration/sim-camera.icc"), "calibration.light_map",
				   small, NULL };
	const char *absent_kv[] = { "calibration.camera_profile",
				    src("examples/calibration/sim-camera.icc"), "calibration.light_map",
				    absent, NULL };
	const char *replay = machine_with("replay.json", replay_kv);
	const char *swapped = machine_with("swapped.json", swap_kv);
	const char *small_light = machine_with("small-light-machine.json", small_kv);
	const char *absent_light = machine_with("absent-light-machine.json", absent_kv);
	/* A light map made for frames of another size than the camera's. */
	const char *map = "{\"kind\": \"light-map\", \"version\": 1, \"width\": 10, \"height\": 10, "
			  "\"cols\": 2, \"rows\": 2, \"gain\": [1, 1, 1, 1]}";
	bl_err ferr = { 0 };
	struct {
		const char *args[8];
		const char *msg;
	} cases[] = {
		{ { "--targets", "0" }, "--targets" },
		{ { "--targets", "many" }, "--targets" },
		{ { "--targets", "10001" }, "--targets" },
		{ { "--seed", "-1" }, "--seed" },
		{ { "--seed", "x1" }, "--seed" },
		{ { "--frobnicate" }, "option" },
		{ { "lab:50,0,0" }, "lab:50,0,0" },
		{ { "--machine", replay }, "simulator" },
		{ { "--machine", swapped, "--targets", "1" }, "w2" },
		{ { "--palette", tmp("none.json") }, "none.json" },
		{ { "--machine", absent_light, "--targets", "1" }, "absent-light.json" },
		{ { "--machine", small_light, "--targets", "1" }, "10x10" },
	};

	CHECK(fs_write_atomic(small, map, strlen(map), &ferr) == 0);

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const char *args[12] = { "mix", "trial" };
		char *out = NULL, *err = NULL;
		int n = 2, rc;

		for (int i = 0; cases[c].args[i]; i++)
			args[n++] = cases[c].args[i];
		args[n] = NULL;
		rc = test_brushloop(args, &out, &err);
		CHECK_MSG(rc == 2, "case %zu: exit %d (%s)", c, rc, err ? err : "");
		CHECK_MSG(err && strstr(err, cases[c].msg), "case %zu: stderr '%s' lacks '%s'", c,
			  err ? err : "", cases[c].msg);
		CHECK_MSG(!out || !*out, "case %zu printed: %s", c, out);
		free(out);
		free(err);
	}
}

TEST_MAIN(T(the_trial_is_deterministic_and_reports_its_figures),
	  T(correction_beats_the_uncorrected_first_recipe),
	  T(the_light_correction_used_is_named), T(bad_input_is_refused_with_exit_2))

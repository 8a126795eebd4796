/* test_mix_cli.c: `brushloop mix` and `brushloop palette` from the command line: output keys, corrections, and every kind of bad input refused with exit 2. */
#include "base/json.h"
#include <unistd.h>

#include "mix_fixture.h"

static cJSON *run_json(const char *const *args, int *rc)
{
	char *out = NULL, *err = NULL;
	cJSON *doc;

	*rc = test_brushloop(args, &out, &err);
	doc = out ? cJSON_Parse(out) : NULL;
	if (!doc)
		fprintf(stderr, "not JSON (exit %d): %s\nstderr: %s\n", *rc, out ? out : "",
			err ? err : "");
	free(out);
	free(err);
	return doc;
}

/* A reachable olive: the recipe, its prediction, within tolerance, in the keys the issue names. */
TEST(mix_prints_a_recipe)
{
	const char *args[] = { "mix", "lab:55,-8,30", "--json", NULL };
	cJSON *doc, *recipe, *it;
	int rc, total = 0, n = 0;

	doc = run_json(args, &rc);
	CHECK(rc == 0);
	CHECK(doc != NULL);
	if (!doc)
		return;
	recipe = cJSON_GetObjectItem(doc, "recipe");
	CHECK(cJSON_IsObject(recipe));
	cJSON_ArrayForEach(it, recipe) {
		CHECK(cJSON_IsNumber(it) && it->valuedouble >= 1);
		total += it->valueint;
		n++;
	}
	CHECK(n >= 1 && n <= 3);
	CHECK(total == cJSON_GetObjectItem(doc, "total_units")->valueint);
	CHECK(total >= 5 && total <= 30);
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "predicted_lab")) == 3);
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(doc, "in_gamut")));
	CHECK(cJSON_GetObjectItem(doc, "de00")->valuedouble <= 2.0);
	cJSON_Delete(doc);
}

/* Out of gamut: said so, with the nearest reachable colour, in text and JSON. */
TEST(mix_reports_out_of_gamut)
{
	const char *args[] = { "mix", "lab:50,90,90", "--json", NULL };
	const char *text_args[] = { "mix", "lab:50,90,90", NULL };
	char *out = NULL;
	cJSON *doc;
	int rc;

	doc = run_json(args, &rc);
	CHECK(rc == 0);
	if (doc) {
		CHECK(cJSON_IsFalse(cJSON_GetObjectItem(doc, "in_gamut")));
		CHECK(cJSON_GetObjectItem(doc, "nearest_de00")->valuedouble > 2.0);
		CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "nearest_lab")) == 3);
		cJSON_Delete(doc);
	}
	rc = test_brushloop(text_args, &out, NULL);
	CHECK(rc == 0);
	CHECK_STR_CONTAINS(out, "OUT OF GAMUT");
	CHECK_STR_CONTAINS(out, "nearest reachable colour");
	free(out);
}

/* --max-paints 1: one paint only. */
TEST(mix_max_paints_is_obeyed)
{
	const char *args[] = { "mix", "lab:55,-8,30", "--max-paints", "1", "--json", NULL };
	cJSON *doc;
	int rc;

	doc = run_json(args, &rc);
	CHECK(rc == 0);
	if (doc) {
		CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "recipe")) == 1);
		cJSON_Delete(doc);
	}
}

/* The model's Lab of a recipe, shifted, as "lab:L,a,b" (what a camera might have said). */
static const char *lab_of(const char *const *names, const int *units, int n, double dl, double da,
			  double db, char *buf, size_t len)
{
	static struct mix_model m;
	double amt[MIX_MAX_PAINTS] = { 0 };
	color_lab c;

	if (!m.n_paints)
		fx_model(&m);
	for (int j = 0; j < n; j++)
		amt[mix_model_find(&m, names[j])] = units[j];
	mix_predict(&m, NULL, amt, &c);
	snprintf(buf, len, "lab:%.3f,%.3f,%.3f", c.L + dl, c.a + da, c.b + db);
	return buf;
}

/* A cell that came out too blue: add yellow and white, never blue, never subtract. */
TEST(mix_corrects_a_measured_cell)
{
	static const char *const names[] = { "white", "cold yellow", "blue green shade" };
	static const int want[] = { 10, 6, 1 }, have[] = { 8, 6, 2 };
	char target[64], measured[64];
	const char *args[] = { "mix", target, "--have", "white:8,cold yellow:6,blue green shade:2",
			       "--measured", measured, "--json", NULL };
	cJSON *doc, *add, *waste;
	int rc;

	lab_of(names, want, 3, 0, 0, 0, target, sizeof(target));
	lab_of(names, have, 3, 0.5, -0.5, 0.5, measured, sizeof(measured));
	doc = run_json(args, &rc);
	CHECK(rc == 0);
	if (!doc)
		return;
	CHECK_STR_CONTAINS(cJSON_GetObjectItem(doc, "action")->valuestring, "add");
	add = cJSON_GetObjectItem(doc, "dispense");
	CHECK(cJSON_IsObject(add));
	CHECK(!cJSON_GetObjectItem(add, "blue green shade"));
	CHECK(cJSON_GetObjectItem(doc, "measured_de00")->valuedouble > 2.0);
	CHECK(cJSON_GetObjectItem(doc, "predicted_de00")->valuedouble <= 2.0);
	waste = cJSON_GetObjectItem(doc, "waste_ml");
	CHECK(cJSON_IsNumber(cJSON_GetObjectItem(waste, "add")));
	CHECK(cJSON_IsNumber(cJSON_GetObjectItem(waste, "fresh")));
	CHECK(cJSON_GetObjectItem(doc, "cell_units")->valueint <= 30);
	cJSON_Delete(doc);
}

/* A dark grey cell for a pale yellow: start over, and say what each way wastes. */
TEST(mix_recommends_a_fresh_cell)
{
	static const char *const names[] = { "white", "cold yellow", "black" };
	static const int want[] = { 10, 2, 0 }, have[] = { 20, 0, 5 };
	char target[64], measured[64];
	const char *args[] = { "mix", target, "--have", "black:5,white:20", "--measured", measured,
			       NULL };
	char *out = NULL;
	int rc;

	lab_of(names, want, 3, 0, 0, 0, target, sizeof(target));
	lab_of(names, have, 3, 0.3, 0.2, -0.4, measured, sizeof(measured));
	rc = test_brushloop(args, &out, NULL);
	CHECK(rc == 0);
	CHECK_STR_CONTAINS(out, "FRESH CELL");
	CHECK_STR_CONTAINS(out, "cannot be reached by adding");
	CHECK_STR_CONTAINS(out, "fresh cell: ");
	free(out);
}

/* `brushloop config check` accepts the example machine with the example palette. */
TEST(example_palette_fits_the_example_machine)
{
	const char *args[] = { "config", "check", fx_src("examples/machine-sim.json"),
			       fx_src("examples/palette.json"), NULL };
	char *out = NULL, *err = NULL;
	int rc = test_brushloop(args, &out, &err);

	CHECK_MSG(rc == 0, "exit %d: %s", rc, err ? err : "");
	CHECK_STR_CONTAINS(out, "13 paints");
	free(out);
	free(err);
}

struct bad {
	const char *args[12];
	const char *msg; /* expected in stderr */
};

/* Every kind of bad input: exit 2 and a message naming what was wrong. */
TEST(mix_refuses_bad_input)
{
	static const struct bad cases[] = {
		{ { "mix", "lab:nan,0,0", NULL }, "nan" },
		{ { "mix", "lab:50,inf,0", NULL }, "inf" },
		{ { "mix", "lab:50,0", NULL }, "lab:50,0" },
		{ { "mix", "chartreuse", NULL }, "chartreuse" },
		{ { "mix", NULL }, "one target colour" },
		{ { "mix", "lab:50,0,0", "lab:60,0,0", NULL }, "one target colour" },
		{ { "mix", "lab:50,0,0", "--max-paints", "0", NULL }, "--max-paints" },
		{ { "mix", "lab:50,0,0", "--max-paints", "9", NULL }, "--max-paints" },
		{ { "mix", "lab:50,0,0", "--max-paints", "two", NULL }, "--max-paints" },
		{ { "mix", "lab:50,0,0", "--volume", "-1", NULL }, "--volume" },
		{ { "mix", "lab:50,0,0", "--volume", "50", NULL }, "exceeds the cell" },
		/* Far past an int of units: compared before it is converted. */
		{ { "mix", "lab:50,0,0", "--volume", "1e9", NULL }, "exceeds the cell" },
		{ { "mix", "lab:50,0,0", "--volume", "1e300", NULL }, "exceeds the cell" },
		{ { "mix", "lab:50,0,0", "--frobnicate", NULL }, "--frobnicate" },
		{ { "mix", "lab:50,0,0", "--have", "white:3", NULL }, "go together" },
		{ { "mix", "lab:50,0,0", "--measured", "lab:40,0,0", NULL }, "go together" },
		{ { "mix", "lab:50,0,0", "--have", "unobtainium:3", "--measured", "lab:40,0,0", NULL },
		  "unobtainium" },
		{ { "mix", "lab:50,0,0", "--have", "white:-3", "--measured", "lab:40,0,0", NULL },
		  "negative" },
		{ { "mix", "lab:50,0,0", "--have", "white:1.5", "--measured", "lab:40,0,0", NULL },
		  "whole number" },
		{ { "mix", "lab:50,0,0", "--have", "white", "--measured", "lab:40,0,0", NULL },
		  "NAME:UNITS" },
		{ { "mix", "lab:50,0,0", "--have", "white:", "--measured", "lab:40,0,0", NULL },
		  "NAME:UNITS" },
		{ { "mix", "lab:50,0,0", "--have", ":3", "--measured", "lab:40,0,0", NULL },
		  "NAME:UNITS" },
		{ { "mix", "lab:50,0,0", "--have", "white:3,", "--measured", "lab:40,0,0", NULL },
		  "comma" },
		{ { "mix", "lab:50,0,0", "--have", "white:3,,black:1", "--measured", "lab:40,0,0",
		    NULL },
		  "NAME:UNITS" },
		{ { "mix", "lab:50,0,0", "--have", "white:3,white:2", "--measured", "lab:40,0,0",
		    NULL },
		  "twice" },
		{ { "mix", "lab:50,0,0", "--have", "", "--measured", "lab:40,0,0", NULL }, "empty" },
		{ { "mix", "lab:50,0,0", "--have", "white:0", "--measured", "lab:40,0,0", NULL },
		  "empty" },
		{ { "mix", "lab:50,0,0", "--have", "white:99", "--measured", "lab:40,0,0", NULL },
		  "exceed" },
		{ { "mix", "lab:50,0,0", "--have", "white:3", "--measured", "lab:nan,0,0", NULL },
		  "nan" },
		{ { "mix", "lab:50,0,0", "--have", "white:3", "--measured", "lab:40,0", NULL },
		  "--measured" },
		{ { "mix", "lab:50,0,0", "--palette", "/nonexistent/palette.json", NULL },
		  "/nonexistent/palette.json" },
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char *out = NULL, *err = NULL;
		int rc = test_brushloop(cases[k].args, &out, &err);

		int want = 2;

		CHECK_MSG(rc == want, "case %zu (%s): exit %d, want %d; stderr: %s", k,
			  cases[k].msg, rc, want, err ? err : "");
		CHECK_MSG(err && strcasestr(err, cases[k].msg), "case %zu: stderr '%s' lacks '%s'",
			  k, err ? err : "", cases[k].msg);
		CHECK_MSG(!out || !*out, "case %zu printed to stdout: %s", k, out);
		free(out);
		free(err);
	}
}

/* palette derive: bad data files are refused with the file and entry named. */
TEST(palette_derive_refuses_bad_data)
{
	static const struct {
		const char *text;
		const char *msg;
	} cases[] = {
		{ "[{\"type\": \"wavelengths\", \"values\": [400, 500, 600]}, {\"name\": \"white\", "
		  "\"type\": \"masstone\", \"reflectance\": [90, 91]}]",
		  "2 values for 3 wavelengths" },
		{ "[{\"type\": \"wavelengths\", \"values\": [400, 500, 600]}, {\"name\": \"white\", "
		  "\"type\": \"masstone\", \"reflectance\": [90, 91, \"x\"]}]",
		  "reflectance[2]" },
		{ "[{\"type\": \"wavelengths\", \"values\": [400, 500, 600]}, {\"name\": \"white\", "
		  "\"type\": \"masstone\", \"reflectance\": [90, 91, 92], \"colour\": 1}]",
		  "unknown key" },
		{ "[{\"type\": \"masstone\", \"values\": [400, 500, 600]}]", "wavelengths" },
		{ "{\"type\": \"wavelengths\"}", "list of measurements" },
		{ "[{\"type\": \"wavelengths\", \"values\": [400, 500, 600]}, {\"name\": \"red\", "
		  "\"type\": \"masstone\", \"reflectance\": [9, 8, 70]}]",
		  "no masstone of 'white'" },
	};
	const char *tints = fx_src("calib/data/kimera-spectral/mix1.json");

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char out[4096], *err = NULL;
		const char *path = test_write_file("bad-masstone.json", cases[k].text);
		const char *args[] = { "palette", "derive", "--masstone", path, "--tints",
				       tints, "-o", out, NULL };
		int rc;

		snprintf(out, sizeof(out), "%s/never.json", test_tmpdir());
		rc = test_brushloop(args, NULL, &err);
		CHECK_MSG(rc == 2, "case %zu: exit %d: %s", k, rc, err ? err : "");
		CHECK_MSG(err && strstr(err, cases[k].msg), "case %zu: stderr '%s' lacks '%s'", k,
			  err ? err : "", cases[k].msg);
		CHECK_MSG(access(out, F_OK) != 0, "case %zu wrote %s", k, out);
		free(err);
	}
}

TEST_MAIN(T(mix_prints_a_recipe), T(mix_reports_out_of_gamut), T(mix_max_paints_is_obeyed),
	  T(mix_corrects_a_measured_cell), T(mix_recommends_a_fresh_cell),
	  T(example_palette_fits_the_example_machine), T(mix_refuses_bad_input),
	  T(palette_derive_refuses_bad_data))

/* test_json_format.c: a file format's versions: older ones migrated step by step to the current shape, newer, missing or non-integer ones refused naming the file and both versions. */
#include <string.h>

#include "base/json.h"
#include "test.h"

/* A format at version 3: version 2 added "b" (0 before), version 3 "c" (b + 1 before). */
static int t_v1_to_v2(cJSON *root, const char *file, void *ctx, bl_err *err)
{
	(void)file;
	++*(int *)ctx;
	return json_migrate_add(root, "b", cJSON_CreateNumber(0), err);
}

static int t_v2_to_v3(cJSON *root, const char *file, void *ctx, bl_err *err)
{
	const cJSON *b = cJSON_GetObjectItemCaseSensitive(root, "b");

	(void)file;
	++*(int *)ctx;
	return json_migrate_add(root, "c", cJSON_CreateNumber(cJSON_GetNumberValue(b) + 1), err);
}

static const json_migrate_fn t_steps[] = { t_v1_to_v2, t_v2_to_v3 };
static const struct json_format t_format = { "t", 3, 1, t_steps };

/* Opens text as a t file and reads its current shape; the steps applied counted in *steps. */
static int read_t(const char *text, double *b, double *c, int *steps, bl_err *err)
{
	cJSON *doc = NULL;
	json_obj o;
	double a;
	int rc = json_parse_text(text, "t.json", &doc, err);

	*steps = 0;
	if (rc == 0)
		rc = json_format_open(doc, "t.json", &t_format, steps, &o, err);
	if (rc == 0)
		rc = json_num(&o, "a", JSON_REQUIRED, 0, 100, &a, err);
	if (rc == 0)
		rc = json_num(&o, "b", JSON_REQUIRED, 0, 100, b, err);
	if (rc == 0)
		rc = json_num(&o, "c", JSON_REQUIRED, 0, 100, c, err);
	if (rc == 0)
		rc = json_end(&o, err);
	cJSON_Delete(doc);
	return rc;
}

TEST(an_older_version_is_migrated_step_by_step)
{
	bl_err err = { 0 };
	double b = -1, c = -1;
	int steps;

	CHECK_MSG(read_t("{\"kind\": \"t\", \"version\": 1, \"a\": 5}", &b, &c, &steps, &err) == 0,
		  "%s", err.msg);
	CHECK(steps == 2 && b == 0 && c == 1);
	CHECK_MSG(read_t("{\"kind\": \"t\", \"version\": 2, \"a\": 5, \"b\": 7}", &b, &c, &steps, &err) == 0,
		  "%s", err.msg);
	CHECK(steps == 1 && b == 7 && c == 8);
	CHECK_MSG(read_t("{\"kind\": \"t\", \"version\": 3, \"a\": 5, \"b\": 7, \"c\": 2}", &b, &c, &steps,
			 &err) == 0, "%s", err.msg);
	CHECK(steps == 0 && b == 7 && c == 2);
	/* A current file must have what its version has: no step fills it in. */
	CHECK(read_t("{\"kind\": \"t\", \"version\": 3, \"a\": 5}", &b, &c, &steps, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "t.json: b: missing");
}

TEST(a_newer_or_older_version_is_refused_naming_file_and_versions)
{
	bl_err err = { 0 };
	double b, c;
	int steps;

	CHECK(read_t("{\"kind\": \"t\", \"version\": 4, \"a\": 5}", &b, &c, &steps, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "t.json: version: schema version 4 is not supported: it is newer "
			   "than version 3, the newest this brushloop reads");
	CHECK(steps == 0);
	CHECK(read_t("{\"kind\": \"t\", \"version\": 0, \"a\": 5}", &b, &c, &steps, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "t.json: version: schema version 0 is not supported (this "
			   "brushloop reads 1 to 3)");
	CHECK(read_t("{\"kind\": \"u\", \"version\": 3, \"a\": 5}", &b, &c, &steps, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "t.json: kind: is 'u', expected 't'");
}

TEST(a_missing_or_non_integer_version_is_refused)
{
	static const struct {
		const char *text, *says;
	} bad[] = {
		{ "{\"kind\": \"t\", \"a\": 5}", "t.json: version: missing required key" },
		{ "{\"kind\": \"t\", \"version\": \"1\", \"a\": 5}", "t.json: version: must be an integer, not a string" },
		{ "{\"kind\": \"t\", \"version\": 1.5, \"a\": 5}", "t.json: version: must be an integer, not 1.5" },
		{ "{\"kind\": \"t\", \"version\": null, \"a\": 5}", "t.json: version: must be an integer" },
	};
	bl_err err = { 0 };
	double b, c;
	int steps;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK(read_t(bad[i].text, &b, &c, &steps, &err) == BL_EINVAL);
		CHECK_STR_CONTAINS(err.msg, bad[i].says);
		CHECK(steps == 0);
	}
}

TEST(a_format_of_one_version_refuses_others)
{
	cJSON *doc = NULL;
	json_obj o;
	bl_err err = { 0 };

	CHECK(json_parse_text("{\"kind\": \"p\", \"version\": 2}", "p.json", &doc, &err) == 0);
	CHECK(json_obj_open(doc, "p.json", "", &o, &err) == 0);
	CHECK(json_kind(&o, "p", 1, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "p.json: version: schema version 2 is not supported: it is newer "
			   "than version 1");
	cJSON_Delete(doc);
}

TEST_MAIN(T(an_older_version_is_migrated_step_by_step),
	  T(a_newer_or_older_version_is_refused_naming_file_and_versions),
	  T(a_missing_or_non_integer_version_is_refused), T(a_format_of_one_version_refuses_others))

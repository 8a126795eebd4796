/* test_state_versions.c: state.json's versions on resume: a version 1 state (an older brushloop's, kept as it wrote it) migrated and resumed, a newer, missing or non-integer version refused with exit 2 naming the file and both versions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "base/fs.h"
#include "base/json.h"
#include "engine/brakes.h"
#include "engine/run_int.h"
#include "engine/run_state.h"
#include "test.h"

/* A small run stopped by a simulated power loss, so that it has a state.json to resume. */
static int stopped_run(const char *dir)
{
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", "24", "--quiet",
			       "--accept-nearest", "--fault", "power_loss_after=60", NULL };

	return test_brushloop(args, NULL, NULL);
}

static cJSON *read_json(const char *path)
{
	char *text = NULL;
	cJSON *o = NULL;

	if (fs_read_file(path, 1 << 28, &text, NULL, NULL) == 0)
		o = cJSON_Parse(text);
	free(text);
	return o;
}

static int write_json(const char *path, const cJSON *o)
{
	char *text = cJSON_Print(o);
	int rc = text ? fs_write_atomic(path, text, strlen(text), NULL) : -1;

	free(text);
	return rc;
}

/* The run's state in `brushloop status --json`: "finished" once it ran to the end. */
static int finished(const char *dir)
{
	const char *args[] = { "status", dir, "--json", NULL };
	char *out = NULL;
	cJSON *o = NULL;
	int ok;

	if (test_brushloop(args, &out, NULL) == 0 && out)
		o = cJSON_Parse(out);
	ok = o && !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(o, "state")) ?: "", "finished");
	cJSON_Delete(o);
	free(out);
	return ok;
}

/*
 * tests/engine/data/state-v1-f4ab195.json is a state.json as brushloop
 * f4ab195 wrote it (a run of flat-shapes.png, --max-strokes 24
 * --accept-nearest, stopped by power_loss_after=60): version 1, its cost
 * without the planner's time or external calls. Migrated, it has the
 * current version and shape, and its cost reads as none spent on planners.
 */
TEST(a_version_1_state_of_an_older_brushloop_migrates_to_the_current_shape)
{
	char path[4200];
	cJSON *st;
	json_obj o;
	struct run_cost cost;
	bl_err err = { 0 };

	snprintf(path, sizeof(path), "%s/tests/engine/data/state-v1-f4ab195.json", getenv("BRUSHLOOP_SRC"));
	st = read_json(path);
	CHECK(st && cJSON_GetNumberValue(cJSON_GetObjectItem(st, "version")) == 1);
	/* As it is, the current reader refuses it. */
	CHECK(run_cost_from_json(cJSON_GetObjectItem(st, "cost"), &cost, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "planner_s: missing");
	/* Its wells are there, so the step needs no run to fill them in. */
	CHECK_MSG(json_format_open(st, path, &run_state_format, NULL, &o, &err) == 0, "%s", err.msg);
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(st, "version")) == run_state_format.version);
	CHECK(run_state_format.version == 3);
	memset(&cost, 0xff, sizeof(cost));
	CHECK_MSG(run_cost_from_json(cJSON_GetObjectItem(st, "cost"), &cost, &err) == 0, "%s", err.msg);
	CHECK(cost.planner_s == 0.0 && cost.planner_ext_calls == 0 && cost.planner_calls >= 1);
	CHECK(cost.reviewer_calls == 0 && cost.reviewer_s == 0.0);
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(st, "review_pending"), "active")));
	cJSON_Delete(st);
}

/*
 * tests/engine/data/state-v2-c35509f.json is a state.json as brushloop
 * c35509f wrote it (the same run, stopped the same way): version 2, no
 * reviewer in its cost, no review_pending. Refused as it is; migrated, it has
 * the current version and reads as no reviewer asked and nothing pending.
 */
TEST(a_version_2_state_of_an_older_brushloop_migrates_to_the_current_shape)
{
	char path[4200];
	cJSON *st, *pd;
	json_obj o;
	struct run_cost cost;
	bl_err err = { 0 };

	snprintf(path, sizeof(path), "%s/tests/engine/data/state-v2-c35509f.json", getenv("BRUSHLOOP_SRC"));
	st = read_json(path);
	CHECK(st && cJSON_GetNumberValue(cJSON_GetObjectItem(st, "version")) == 2);
	CHECK(!cJSON_GetObjectItem(st, "review_pending"));
	CHECK(run_cost_from_json(cJSON_GetObjectItem(st, "cost"), &cost, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "reviewer_calls: missing");
	CHECK_MSG(json_format_open(st, path, &run_state_format, NULL, &o, &err) == 0, "%s", err.msg);
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(st, "version")) == 3);
	memset(&cost, 0xff, sizeof(cost));
	CHECK_MSG(run_cost_from_json(cJSON_GetObjectItem(st, "cost"), &cost, &err) == 0, "%s", err.msg);
	CHECK(cost.reviewer_calls == 0 && cost.reviewer_s == 0.0 && cost.planner_calls >= 1);
	pd = cJSON_GetObjectItem(st, "review_pending");
	CHECK(cJSON_IsFalse(cJSON_GetObjectItem(pd, "active")) &&
	      !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(pd, "point")) ?: "", "checkpoint"));
	cJSON_Delete(st);
}

/*
 * A state as a version 1 writer left it, before recipes were kept, waste and
 * wells counted and the planner's time priced: version 1 and none of those
 * keys (nor version 3's reviewer and journal keys). Migrated on resume, the
 * run goes on to the end; the state it saves is version 3 with them all.
 */
TEST(a_version_1_state_is_migrated_on_resume)
{
	static const char *const colour_keys[] = { "accepted_within", "recipe", "wasted_ml", "coat",
						   "coat_weight" };
	const char *dir = test_tmp_path("v1");
	const char *rargs[] = { "resume", dir, "--quiet", NULL };
	char path[4200];
	cJSON *st, *c;
	int colours = 0;

	CHECK(stopped_run(dir) == 86);
	snprintf(path, sizeof(path), "%s/state.json", dir);
	st = read_json(path);
	CHECK(st && cJSON_GetNumberValue(cJSON_GetObjectItem(st, "version")) == 3);
	cJSON_ReplaceItemInObject(st, "version", cJSON_CreateNumber(1));
	cJSON_DeleteItemFromObject(st, "review_pending");
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(st, "cost"), "reviewer_calls");
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(st, "cost"), "reviewer_s");
	cJSON_ArrayForEach(c, cJSON_GetObjectItem(st, "colours")) {
		for (size_t k = 0; k < sizeof(colour_keys) / sizeof(colour_keys[0]); k++)
			cJSON_DeleteItemFromObject(c, colour_keys[k]);
		colours++;
	}
	CHECK(colours > 0);
	cJSON_DeleteItemFromObject(st, "wells");
	cJSON_DeleteItemFromObject(st, "well_low");
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(st, "cost"), "planner_s");
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(st, "cost"), "planner_external_calls");
	CHECK(write_json(path, st) == 0);
	cJSON_Delete(st);
	CHECK(test_brushloop(rargs, NULL, NULL) == 0);
	CHECK(finished(dir));
	st = read_json(path);
	CHECK(st && cJSON_GetNumberValue(cJSON_GetObjectItem(st, "version")) == 3);
	CHECK(st && cJSON_IsObject(cJSON_GetObjectItem(st, "review_pending")) &&
	      cJSON_GetObjectItem(cJSON_GetObjectItem(st, "cost"), "reviewer_calls"));
	CHECK(st && cJSON_IsArray(cJSON_GetObjectItem(st, "wells")) &&
	      cJSON_GetObjectItem(cJSON_GetObjectItem(st, "cost"), "planner_s"));
	cJSON_Delete(st);
}

/*
 * A state.json of a version this brushloop does not know (newer: written by
 * a newer brushloop), or whose version is missing or no integer, is refused
 * on resume with exit 2, naming the file, what it found and what it reads,
 * and nothing moves.
 */
TEST(a_state_of_a_newer_or_unreadable_version_is_refused_on_resume)
{
	static const struct {
		const char *version; /* NULL: none */
		const char *says;
	} bad[] = {
		{ "4", "state.json: version: schema version 4 is not supported: it is newer than "
		       "version 3, the newest this brushloop reads" },
		{ NULL, "state.json: version: missing required key" },
		{ "\"3\"", "state.json: version: must be an integer, not a string" },
		{ "1.5", "state.json: version: must be an integer, not 1.5" },
		{ "0", "state.json: version: schema version 0 is not supported (this brushloop reads 1 to 3)" },
	};
	const char *dir = test_tmp_path("newer");
	const char *rargs[] = { "resume", dir, "--quiet", NULL };
	char path[4200], *err = NULL;
	cJSON *st;

	CHECK(stopped_run(dir) == 86);
	snprintf(path, sizeof(path), "%s/state.json", dir);
	st = read_json(path);
	CHECK(st != NULL);
	for (size_t i = 0; st && i < sizeof(bad) / sizeof(bad[0]); i++) {
		cJSON_DeleteItemFromObject(st, "version");
		if (bad[i].version)
			cJSON_AddItemToObject(st, "version", cJSON_Parse(bad[i].version));
		CHECK(write_json(path, st) == 0);
		CHECK_MSG(test_brushloop(rargs, NULL, &err) == 2, "version %s not refused",
			  bad[i].version ?: "(none)");
		CHECK_STR_CONTAINS(err, bad[i].says);
		free(err);
		err = NULL;
	}
	cJSON_Delete(st);
}

/*
 * tests/engine/data/state-v2-c35509f-six-cells.json and run-v1-c35509f.json are what
 * brushloop c35509f wrote (flat-shapes.png, --max-strokes 24, a machine with
 * mixes at 0.8 and six cells, paused): a state naming no journal line and a
 * run with no id. Migrated, the state names the run "" and line 0 (it
 * reflects none: a resume takes it only while the journal holds no state of
 * its own), the run has the id "" that a resume then gives it.
 */
TEST(a_state_and_run_of_c35509f_migrate_to_the_chained_shape)
{
	char path[4200];
	cJSON *st;
	json_obj o;
	bl_err err = { 0 };

	snprintf(path, sizeof(path), "%s/tests/engine/data/state-v2-c35509f-six-cells.json", getenv("BRUSHLOOP_SRC"));
	st = read_json(path);
	CHECK(st && cJSON_GetNumberValue(cJSON_GetObjectItem(st, "version")) == 2);
	CHECK(st && !cJSON_GetObjectItem(st, "journal_line"));
	CHECK_MSG(json_format_open(st, path, &run_state_format, NULL, &o, &err) == 0, "%s", err.msg);
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(st, "version")) == 3);
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(st, "journal_line")) == 0);
	CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(st, "run")) ?: "?", ""));
	cJSON_Delete(st);
	snprintf(path, sizeof(path), "%s/tests/engine/data/run-v1-c35509f.json", getenv("BRUSHLOOP_SRC"));
	st = read_json(path);
	CHECK(st && cJSON_GetNumberValue(cJSON_GetObjectItem(st, "version")) == 1);
	CHECK_MSG(json_format_open(st, path, &run_json_format, NULL, &o, &err) == 0, "%s", err.msg);
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(st, "version")) == 2);
	CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(st, "id")) ?: "?", ""));
	cJSON_Delete(st);
}

TEST_MAIN(T(a_state_and_run_of_c35509f_migrate_to_the_chained_shape),
	  T(a_version_1_state_of_an_older_brushloop_migrates_to_the_current_shape),
	  T(a_version_2_state_of_an_older_brushloop_migrates_to_the_current_shape),
	  T(a_version_1_state_is_migrated_on_resume),
	  T(a_state_of_a_newer_or_unreadable_version_is_refused_on_resume))

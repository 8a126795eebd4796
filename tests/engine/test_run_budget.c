/* test_run_budget.c: the night's arm-time budget sizes the plan, and a run keeps inside it or stops cleanly at it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "base/fs.h"
#include "test.h"

static cJSON *estimate(const char *hours, const char *strokes)
{
	const char *args[] = { "estimate", test_src_path(TEST_TARGET), "--arm-hours", hours, "--json",
			       strokes ? "--max-strokes" : NULL, strokes, NULL };
	char *out = NULL;
	cJSON *e;

	if (test_brushloop(args, &out, NULL) != 0) {
		free(out);
		return NULL;
	}
	e = cJSON_Parse(out);
	free(out);
	return e;
}

static double num(const cJSON *o, const char *k)
{
	return cJSON_GetNumberValue(cJSON_GetObjectItem(o, k));
}

/*
 * What a budget buys before the night starts: more hours, more strokes;
 * each plan expected inside its budget; a cap (--max-strokes) that fits is
 * kept as it is.
 */
TEST(estimate_says_what_the_budget_buys)
{
	cJSON *small = estimate("0.4", NULL), *large = estimate("1.2", NULL), *capped = estimate("1.2", "60");
	const char *args[] = { "estimate", test_src_path(TEST_TARGET), "--arm-hours", "0", NULL };
	char *err = NULL;

	CHECK(small && large && capped);
	if (small && large && capped) {
		double es = num(cJSON_GetObjectItem(small, "expected"), "arm_s");
		double el = num(cJSON_GetObjectItem(large, "expected"), "arm_s");

		printf("0.4 h: %.0f strokes, %.0f s expected; 1.2 h: %.0f strokes, %.0f s\n",
		       num(small, "strokes"), es, num(large, "strokes"), el);
		CHECK_NEAR(num(small, "arm_budget_s"), 1440, 1e-6);
		CHECK(es <= 1440 && el <= 4320);
		CHECK(num(large, "strokes") > 1.5 * num(small, "strokes"));
		/* Sized close to the budget, not far short of it. */
		CHECK(el > 0.75 * 4320);
		CHECK(num(capped, "strokes") == 60);
	}
	cJSON_Delete(small);
	cJSON_Delete(large);
	cJSON_Delete(capped);
	CHECK(test_brushloop(args, NULL, &err) == 2);
	CHECK_STR_CONTAINS(err, "--arm-hours: 0 is not 0.01 to 240 hours");
	free(err);
}

/*
 * A budget too small for the plan asked for (--max-strokes 200 takes about
 * 1.3 h on flat-shapes) gets a smaller plan that finishes inside it, not a
 * run stopped in the middle: the budget's strokes in run.json, every one
 * painted, the arm time inside the budget, STATUS.md saying it finished
 * inside it (a correction round the budget has no room for is cut short).
 */
TEST(a_budget_too_small_for_a_plan_gets_a_smaller_plan_that_finishes)
{
	const char *dir = test_tmp_path("budget");
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", "200",
			       "--arm-hours", "0.3", "--accept-nearest", "--quiet", NULL };
	char path[4200], *status = NULL;
	cJSON *st, *run = NULL;
	int rc = test_brushloop(args, NULL, NULL);

	CHECK(rc == 0);
	st = test_status(dir, NULL);
	CHECK(st != NULL);
	if (st) {
		double arm = num(cJSON_GetObjectItem(st, "cost"), "arm_s");

		printf("state %s (%s), arm %.0f s of 1080, strokes %.0f of %.0f\n",
		       cJSON_GetStringValue(cJSON_GetObjectItem(st, "state")),
		       cJSON_GetStringValue(cJSON_GetObjectItem(st, "reason")), arm, num(st, "strokes_done"),
		       num(st, "strokes_total"));
		CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(st, "state")), "finished"));
		CHECK(arm <= 1080);
		CHECK(num(st, "strokes_done") >= 10 && num(st, "strokes_done") < 200);
		CHECK(!strstr(cJSON_GetStringValue(cJSON_GetObjectItem(st, "reason")), "stopped at"));
	}
	snprintf(path, sizeof(path), "%s/run.json", dir);
	{
		char *text = NULL;

		CHECK(fs_read_file(path, 1 << 24, &text, NULL, NULL) == 0);
		run = text ? cJSON_Parse(text) : NULL;
		free(text);
	}
	CHECK(run && num(run, "max_strokes") == 200 && num(run, "budget_strokes") < 200 &&
	      num(run, "arm_hours") == 0.3);
	/* Every stroke of the plan painted: only a correction round may be cut short by the budget. */
	CHECK(st && run && num(st, "strokes_done") >= num(run, "budget_strokes"));
	snprintf(path, sizeof(path), "%s/STATUS.md", dir);
	CHECK(fs_read_file(path, 1 << 20, &status, NULL, NULL) == 0);
	CHECK_STR_CONTAINS(status, "of 0.30 h: finished inside it");
	free(status);
	cJSON_Delete(run);
	cJSON_Delete(st);
}

TEST_MAIN(T(estimate_says_what_the_budget_buys),
	  T(a_budget_too_small_for_a_plan_gets_a_smaller_plan_that_finishes))

/* test_bench.c: every benchmark of `brushloop bench` runs to a figure, once on its smallest inputs (--quick: no figure is timed here, speed never goes in a test). */
#include <math.h>
#include <string.h>

#include "base/json.h"
#include "bench/bench.h"
#include "test.h"

/*
 * `bench --quick`: each benchmark once on its smallest inputs, the same code path as its
 * figure. Every benchmark of the table reports exactly once, one run, a positive figure.
 */
TEST(every_benchmark_runs_once)
{
	const char *args[] = { "bench", "--quick", "--json", NULL };
	char *out = NULL, *err = NULL;
	int rc = test_brushloop(args, &out, &err);
	cJSON *doc = out ? cJSON_Parse(out) : NULL, *it;
	int n = 0, cases = 0;

	CHECK_MSG(rc == 0, "bench exited %d: %s", rc, err ? err : "");
	CHECK(cJSON_IsArray(doc));
	for (const struct bench_case *b = bench_cases; b->name; b++) {
		int seen = 0;

		cases++;
		cJSON_ArrayForEach(it, doc) {
			const cJSON *name = cJSON_GetObjectItem(it, "name");
			const cJSON *value = cJSON_GetObjectItem(it, "value");

			if (!cJSON_IsString(name) || strcmp(name->valuestring, b->name))
				continue;
			seen++;
			CHECK_MSG(cJSON_IsNumber(value) && isfinite(value->valuedouble) &&
				  value->valuedouble > 0, "%s: no positive figure", b->name);
			CHECK_MSG(cJSON_GetNumberValue(cJSON_GetObjectItem(it, "runs")) == 1.0,
				  "%s: not one run", b->name);
			CHECK_MSG(cJSON_IsTrue(cJSON_GetObjectItem(it, "quick")), "%s: not quick", b->name);
			CHECK_STR_CONTAINS(cJSON_GetStringValue(cJSON_GetObjectItem(it, "unit")), b->unit);
		}
		CHECK_MSG(seen == 1, "%s reported %d times", b->name, seen);
	}
	cJSON_ArrayForEach(it, doc)
		n++;
	/* Nothing besides the table's benchmarks; one per part at least: color, config, safety, mix, vision, calib, arm, sim, plan. */
	CHECK_MSG(n == cases, "%d figures for %d benchmarks", n, cases);
	CHECK_MSG(cases >= 9, "%d benchmarks in the table", cases);
	cJSON_Delete(doc);
	free(out);
	free(err);
}

TEST(quick_takes_no_runs_above_one)
{
	const char *args[] = { "bench", "color", "--quick", "--runs", "3", NULL };
	char *err = NULL;

	CHECK(test_brushloop(args, NULL, &err) == 2);
	CHECK_STR_CONTAINS(err, "--quick");
	free(err);
}

TEST(an_unknown_benchmark_is_refused)
{
	const char *args[] = { "bench", "no.such_figure", NULL };
	char *err = NULL;

	CHECK(test_brushloop(args, NULL, &err) == 2);
	CHECK_STR_CONTAINS(err, "no.such_figure");
	free(err);
}

TEST_MAIN(T(every_benchmark_runs_once), T(quick_takes_no_runs_above_one),
	  T(an_unknown_benchmark_is_refused))

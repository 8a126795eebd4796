/* test_bench.c: every benchmark of `brushloop bench` runs to its figure (no figure is timed here: speed never goes in a test). */
#include <math.h>
#include <string.h>

#include "base/json.h"
#include "test.h"

TEST(every_benchmark_runs_once)
{
	const char *args[] = { "bench", "--runs", "1", "--json", NULL };
	char *out = NULL, *err = NULL;
	int rc = test_brushloop(args, &out, &err);
	cJSON *doc = out ? cJSON_Parse(out) : NULL, *it;
	int n = 0, plan = 0;

	CHECK_MSG(rc == 0, "bench exited %d: %s", rc, err ? err : "");
	CHECK(cJSON_IsArray(doc));
	cJSON_ArrayForEach(it, doc) {
		const cJSON *name = cJSON_GetObjectItem(it, "name");
		const cJSON *value = cJSON_GetObjectItem(it, "value");

		CHECK(cJSON_IsString(name));
		CHECK_MSG(cJSON_IsNumber(value) && isfinite(value->valuedouble) && value->valuedouble > 0,
			  "%s: no positive figure", cJSON_IsString(name) ? name->valuestring : "?");
		plan += cJSON_IsString(name) && strcmp(name->valuestring, "plan.strokes_2000_s") == 0;
		n++;
	}
	/* One figure per part at least: color, config, safety, mix, vision, calib, arm, sim, plan. */
	CHECK_MSG(n >= 9, "%d figures", n);
	CHECK(plan == 1);
	cJSON_Delete(doc);
	free(out);
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

TEST_MAIN(T(every_benchmark_runs_once), T(an_unknown_benchmark_is_refused))

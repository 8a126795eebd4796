/* test_run_planner.c: a run asks its planner through the interface: each answer admitted and journaled, each call counted with its wall time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "test.h"

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

TEST(every_planner_answer_is_admitted_journaled_and_timed)
{
	char dir[4200], target[4200], path[4300], *out = NULL, *errs = NULL, *journal, *state;
	cJSON *st, *cost;
	int rc, answers;

	snprintf(dir, sizeof(dir), "%s/run", test_tmpdir());
	snprintf(target, sizeof(target), "%s/examples/targets/flat-shapes.png", getenv("BRUSHLOOP_SRC"));
	rc = test_brushloop((const char *const[]){ "run", target, "--out", dir, "--max-strokes", "12",
						   "--accept-nearest", "--quiet", NULL },
			    &out, &errs);
	CHECK_MSG(rc == 0, "exit %d: %s", rc, errs ? errs : "");
	snprintf(path, sizeof(path), "%s/journal.jsonl", dir);
	journal = test_read_file(path);
	snprintf(path, sizeof(path), "%s/state.json", dir);
	state = test_read_file(path);
	CHECK(journal && state);
	if (!journal || !state)
		goto out;
	/* The painting's answer, then one a correction round, each from the built-in planner. */
	CHECK_STR_CONTAINS(journal, "\"event\":\"planner_answer\",\"data\":{\"planner\":\"builtin\",\"phase\":\"plan\",\"round\":0");
	CHECK(strstr(journal, "\"event\":\"planner_denied\"") == NULL);
	answers = count(journal, "\"event\":\"planner_answer\"");
	st = cJSON_Parse(state);
	cost = cJSON_GetObjectItem(st, "cost");
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(cost, "planner_calls")) == answers);
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(cost, "planner_s")) > 0.0);
	cJSON_Delete(st);
out:
	free(journal);
	free(state);
	free(out);
	free(errs);
}

TEST_MAIN(T(every_planner_answer_is_admitted_journaled_and_timed))

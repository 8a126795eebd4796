/* test_run_review.c: the second judge in whole runs: with the example external reviewer nothing is disagreed with and its calls are priced; a lamp that dims pauses the run (or brakes it, set before), journaled with both judges' figures, and a person's answer lets it go on; a silent reviewer pauses it too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "test.h"

/* Few strokes: the second judge, not the painting, is under test. */
#define STROKES "8"

static cJSON *state_of(const char *dir)
{
	char p[4200], *text = NULL;
	cJSON *o = NULL;

	snprintf(p, sizeof(p), "%s/state.json", dir);
	if (fs_read_file(p, 1 << 26, &text, NULL, NULL) == 0)
		o = cJSON_Parse(text);
	free(text);
	return o;
}

static char *file_of(const char *dir, const char *name)
{
	char p[4200], *text = NULL;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if (fs_read_file(p, 1 << 26, &text, NULL, NULL))
		return NULL;
	return text;
}

/* How many journal lines hold s. */
static int count(const char *journal, const char *s)
{
	int n = 0;

	for (const char *p = journal; p && (p = strstr(p, s)); p += strlen(s))
		n++;
	return n;
}

static int run(const char *dir, const char *const *extra, char **err)
{
	const char *args[24] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", STROKES,
				 "--quiet", "--accept-nearest" };
	int n = 8;

	for (; extra && *extra && n < 22; extra++)
		args[n++] = *extra;
	args[n] = NULL;
	return test_brushloop(args, NULL, err);
}

TEST(a_run_with_the_example_reviewer_finishes_without_a_disagreement)
{
	const char *dir = test_tmp_path("with-reviewer");
	char cmd[4300];
	const char *extra[] = { "--reviewer", cmd, NULL };
	char *journal, *err = NULL;
	cJSON *st, *cost;
	int reviews;

	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/examples/reviewers/sanity_reviewer.py", getenv("BRUSHLOOP_SRC"));
	CHECK_MSG(run(dir, extra, &err) == 0, "exit not 0: %s", err ? err : "");
	journal = file_of(dir, "journal.jsonl");
	st = state_of(dir);
	reviews = count(journal, "\"event\":\"review\"");
	CHECK_MSG(reviews >= 3, "%d reviews", reviews);
	CHECK(count(journal, "\"event\":\"review_disagreed\"") == 0);
	/* Every review asked the external reviewer, which agreed each time; each call is in the cost. */
	CHECK(count(journal, "\"external\":{\"answered\":true,\"agree\":true") == reviews);
	CHECK(count(journal, "\"point\":\"checkpoint\"") > 0 && count(journal, "\"point\":\"mix\"") > 0);
	cost = cJSON_GetObjectItem(st, "cost");
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(cost, "reviewer_calls")) == reviews);
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(cost, "reviewer_s")) > 0.0);
	CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(cost, "priced"), "reviewer")) > 0.0);
	cJSON_Delete(st);
	free(journal);
	free(err);
	err = NULL;
	/* --overrule-review where nothing waits for the reviewer is refused, before anything moves. */
	CHECK(test_brushloop((const char *[]){ "resume", dir, "--overrule-review", NULL }, NULL, &err) == 2);
	CHECK_STR_CONTAINS(err, "--overrule-review: ");
	CHECK_STR_CONTAINS(err, "does not wait for the reviewer");
	free(err);
}

/*
 * The lamp dims to half its light 200 s into the run (the first mixes): the
 * next verdict is not taken, the run pauses with both judges' figures in the
 * journal and the disagreement in STATUS.md; resumed with the lamp still dim,
 * it looks again and pauses again; resumed with the person's answer, it
 * finishes under the dim lamp (the references taken again).
 */
TEST(a_dimmed_lamp_pauses_the_run_until_a_person_answers)
{
	const char *dir = test_tmp_path("dimmed");
	const char *extra[] = { "--fault", "lamp_at_s=200", "--fault", "lamp_level=0.5", NULL };
	/* A resume's faults are its own process's: the lamp stays dim unless it is left out (a new lamp). */
	const char *again[] = { "resume", dir, "--quiet", "--fault", "lamp_at_s=200", "--fault", "lamp_level=0.5", NULL };
	const char *answer[] = { "resume", dir, "--quiet", "--fault", "lamp_at_s=200", "--fault", "lamp_level=0.5",
				 "--overrule-review", "--answered-by", "tester", NULL };
	char *journal, *status, *err = NULL;
	cJSON *st, *pd;

	CHECK_MSG(run(dir, extra, &err) == 3, "exit not 3 (paused): %s", err ? err : "");
	CHECK_STR_CONTAINS(err, "the second judge disagrees");
	journal = file_of(dir, "journal.jsonl");
	status = file_of(dir, "STATUS.md");
	CHECK(count(journal, "\"event\":\"review_disagreed\"") == 1);
	/* Both judges' figures: the run's verdict and the rule that fired. */
	CHECK_STR_CONTAINS(journal, "\"run\":{\"verdict\":");
	CHECK_STR_CONTAINS(journal, "\"rule\":\"lamp\",\"judged\":true,\"agree\":false");
	CHECK_STR_CONTAINS(status, "the second judge disagrees with the");
	CHECK_STR_CONTAINS(status, "--overrule-review");
	st = state_of(dir);
	pd = cJSON_GetObjectItem(st, "review_pending");
	CHECK(cJSON_IsTrue(cJSON_GetObjectItem(pd, "active")));
	CHECK_STR_CONTAINS(cJSON_GetStringValue(cJSON_GetObjectItem(pd, "why")), "lamp: ");
	cJSON_Delete(st);
	free(journal);
	free(status);
	free(err);
	err = NULL;
	/* Nothing fixed: it looks again and disagrees again. */
	CHECK(test_brushloop(again, NULL, NULL) == 3);
	journal = file_of(dir, "journal.jsonl");
	CHECK(count(journal, "\"event\":\"review_disagreed\"") == 2);
	free(journal);
	/* A person looked: the run's verdict stands, the references are taken again, and it goes on. */
	CHECK_MSG(test_brushloop(answer, NULL, &err) == 0, "resume --overrule-review: %s", err ? err : "");
	journal = file_of(dir, "journal.jsonl");
	CHECK(count(journal, "\"event\":\"review_overruled\"") == 1);
	CHECK_STR_CONTAINS(journal, "\"overruled_by\":\"tester\"");
	CHECK(count(journal, "\"event\":\"review_disagreed\"") == 2);
	CHECK_STR_CONTAINS(journal, "\"event\":\"finished\"");
	st = state_of(dir);
	CHECK(!cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(st, "review_pending"), "active")));
	cJSON_Delete(st);
	free(journal);
	free(err);
}

TEST(set_to_brake_a_disagreement_brakes_and_nothing_else_is_overruled)
{
	const char *dir = test_tmp_path("braked");
	const char *extra[] = { "--fault", "lamp_at_s=200", "--fault", "lamp_level=0.5", "--on-disagreement", "brake",
				NULL };
	const char *bad[] = { "--on-disagreement", "stop", NULL };
	char *err = NULL;
	cJSON *st;

	CHECK(run(dir, extra, &err) == 4);
	st = state_of(dir);
	CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(st, "state")) ?: "", "braked"));
	CHECK(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(st, "brake")) ?: "", "review"));
	cJSON_Delete(st);
	free(err);
	err = NULL;
	CHECK(run(test_tmp_path("bad-option"), bad, &err) == 2);
	CHECK_STR_CONTAINS(err, "--on-disagreement: 'stop' is neither pause nor brake");
	free(err);
}

TEST(a_reviewer_that_never_answers_pauses_the_run)
{
	const char *dir = test_tmp_path("silent");
	char cmd[4300];
	char *journal, *err = NULL;

	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 %s/tests/review/hostile_reviewer.py silent",
		 getenv("BRUSHLOOP_SRC"));
	/* A short deadline: the machine's reviewer section. */
	{
		char p[4200], *text = NULL;
		cJSON *m;

		snprintf(p, sizeof(p), "%s/examples/machine-sim.json", getenv("BRUSHLOOP_SRC"));
		CHECK(fs_read_file(p, 1 << 20, &text, NULL, NULL) == 0);
		m = cJSON_Parse(text);
		free(text);
		cJSON_AddItemToObject(m, "reviewer", cJSON_Parse("{\"answer_deadline_s\": 2}"));
		{
			cJSON *cal = cJSON_GetObjectItem(m, "calibration"), *it;

			cJSON_ArrayForEach(it, cal)
				if (cJSON_IsString(it)) {
					char abs[4300];

					snprintf(abs, sizeof(abs), "%s/examples/%s", getenv("BRUSHLOOP_SRC"), it->valuestring);
					cJSON_SetValuestring(it, abs);
				}
		}
		text = cJSON_Print(m);
		snprintf(p, sizeof(p), "%s", test_write_file("m-silent.json", text));
		free(text);
		cJSON_Delete(m);
		{
			const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", STROKES,
					       "--quiet", "--accept-nearest", "--machine", p, "--reviewer", cmd, NULL };

			CHECK(test_brushloop(args, NULL, &err) == 3);
		}
	}
	CHECK_STR_CONTAINS(err, "external reviewer: late");
	journal = file_of(dir, "journal.jsonl");
	CHECK(count(journal, "\"event\":\"review_disagreed\"") == 1);
	CHECK_STR_CONTAINS(journal, "\"failure\":\"late\"");
	free(journal);
	free(err);
}

TEST_MAIN(T(a_run_with_the_example_reviewer_finishes_without_a_disagreement),
	  T(a_dimmed_lamp_pauses_the_run_until_a_person_answers),
	  T(set_to_brake_a_disagreement_brakes_and_nothing_else_is_overruled),
	  T(a_reviewer_that_never_answers_pauses_the_run))

/* test_plan_is_what_runs.c: every action a run sends to the gate is its plan's, or in a step the engine journaled before it, and `gate check` vets those steps from the journal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "test.h"

#define MAX_KNOWN 20000

struct action_map {
	char (*sub)[32];
	long *id;
	const cJSON **a;
	int n;
};

static int map_find(const struct action_map *m, const char *sub, long id)
{
	for (int i = m->n - 1; i >= 0; i--)
		if (m->id[i] == id && strcmp(m->sub[i], sub) == 0)
			return i;
	return -1;
}

static void map_add(struct action_map *m, const char *sub, const cJSON *a)
{
	if (m->n >= MAX_KNOWN)
		return;
	snprintf(m->sub[m->n], sizeof(m->sub[0]), "%s", sub);
	m->id[m->n] = (long)cJSON_GetNumberValue(cJSON_GetObjectItem(a, "id"));
	m->a[m->n++] = a;
}

/* A plan's subtasks, named as the journal names them: s1..., or c1.s1... for correction round 1. */
static void map_plan(struct action_map *m, const cJSON *plan, const char *prefix)
{
	const cJSON *s, *a;

	cJSON_ArrayForEach(s, cJSON_GetObjectItem(plan, "subtasks")) {
		char name[32];

		snprintf(name, sizeof(name), "%ss%d", prefix,
			 (int)cJSON_GetNumberValue(cJSON_GetObjectItem(s, "id")));
		cJSON_ArrayForEach(a, cJSON_GetObjectItem(s, "actions"))
			map_add(m, name, a);
	}
}

static cJSON *read_json(const char *dir, const char *name)
{
	char p[4300], *text;
	cJSON *o;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	text = test_read_file(p);
	o = text ? cJSON_Parse(text) : NULL;
	free(text);
	return o;
}

struct seen {
	int from_plan, from_steps, unknown, differ, steps[3], step_actions;
};

/*
 * Walks the journal in order: each step's actions become known when it is
 * journaled, and each gate decision on an action must find that action,
 * field for field, in the plans or an earlier step.
 */
static void check_journal(const char *dir, struct action_map *m, struct seen *sn)
{
	static const char *const step_names[] = { "dispense", "stir", "retry" };
	char p[4300], *text, *line, *nl;
	int first_step = m->n;

	snprintf(p, sizeof(p), "%s/journal.jsonl", dir);
	text = test_read_file(p);
	CHECK(text != NULL);
	for (line = text; line && *line; line = nl ? nl + 1 : NULL) {
		cJSON *e, *d, *a;
		const char *ev, *sub;
		int i;

		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		e = cJSON_Parse(line);
		ev = cJSON_GetStringValue(cJSON_GetObjectItem(e, "event"));
		sub = cJSON_GetStringValue(cJSON_GetObjectItem(e, "subtask"));
		d = cJSON_GetObjectItem(e, "data");
		if (!ev || !sub) {
			cJSON_Delete(e);
			continue;
		}
		if (!strcmp(ev, "dispense_planned") || !strcmp(ev, "actions_planned")) {
			const char *step = cJSON_GetStringValue(cJSON_GetObjectItem(d, "step"));

			for (size_t k = 0; step && k < 3; k++)
				sn->steps[k] += strcmp(step, step_names[k]) == 0;
			cJSON_ArrayForEach(a, cJSON_GetObjectItem(d, "actions")) {
				map_add(m, sub, cJSON_Duplicate(a, 1));
				sn->step_actions++;
			}
		} else if (!strcmp(ev, "decision") && (a = cJSON_GetObjectItem(d, "action")) &&
			   cJSON_GetObjectItem(a, "id")) {
			i = map_find(m, sub, (long)cJSON_GetNumberValue(cJSON_GetObjectItem(a, "id")));
			if (i < 0) {
				if (sn->unknown++ < 3)
					fprintf(stderr, "%s: not in the plan nor a step before it: %s\n", sub, line);
			} else if (!cJSON_Compare(a, m->a[i], 1)) {
				if (sn->differ++ < 3)
					fprintf(stderr, "%s: differs from what was planned: %s\n", sub, line);
			} else {
				sn->from_plan += i < first_step;
				sn->from_steps += i >= first_step;
			}
		}
		cJSON_Delete(e);
	}
	for (int i = first_step; i < m->n; i++)
		cJSON_Delete((cJSON *)m->a[i]);
	free(text);
}

/*
 * A run with top-ups and fresh cells (one well nearly dry): every action the
 * gate decided on is the plan's, or a correction plan's, or in a step the
 * journal holds before the decision, exactly as it ran.
 */
TEST(every_action_that_runs_was_planned_or_journaled_before)
{
	char dir[4200], target[4200], name[32];
	const char *args[] = { "run", target, "--out", dir, "--max-strokes", "24", "--accept-nearest",
			       "--quiet", NULL };
	struct action_map m = { calloc(MAX_KNOWN, 32), calloc(MAX_KNOWN, sizeof(long)),
				calloc(MAX_KNOWN, sizeof(cJSON *)), 0 };
	struct seen sn = { 0 };
	cJSON *plans[8] = { 0 };
	char *err = NULL;
	int rc;

	snprintf(target, sizeof(target), "%s/examples/targets/flat-shapes.png", getenv("BRUSHLOOP_SRC"));
	snprintf(dir, sizeof(dir), "%s/run", test_tmpdir());
	rc = test_brushloop(args, NULL, &err);
	CHECK_MSG(rc == 0 || rc == 3, "run: exit %d: %s", rc, err ? err : "");
	plans[0] = read_json(dir, "plan.json");
	CHECK(plans[0] != NULL);
	map_plan(&m, plans[0], "");
	for (int k = 1; k < 8; k++) {
		char f[32];

		snprintf(f, sizeof(f), "corrections-%d.json", k);
		snprintf(name, sizeof(name), "c%d.", k);
		if ((plans[k] = read_json(dir, f)))
			map_plan(&m, plans[k], name);
	}
	check_journal(dir, &m, &sn);
	fprintf(stderr, "decisions: %d from the plans, %d from steps; steps: %d dispense, %d stir, %d retry\n",
		sn.from_plan, sn.from_steps, sn.steps[0], sn.steps[1], sn.steps[2]);
	CHECK_MSG(sn.unknown == 0 && sn.differ == 0, "%d actions ran unplanned, %d not as planned",
		  sn.unknown, sn.differ);
	CHECK(sn.from_plan > 0 && sn.from_steps > 0 && sn.steps[0] > 0 && sn.steps[1] > 0);

	/* gate check reads the steps back from the journal: all allowed on the run's own machine. */
	{
		char journal[4300], machine[4300], *out = NULL;
		const char *check[] = { "gate", "check", journal, "--machine", machine, "--json", NULL };
		cJSON *o;

		snprintf(journal, sizeof(journal), "%s/journal.jsonl", dir);
		snprintf(machine, sizeof(machine), "%s/machine.json", dir);
		CHECK(test_brushloop(check, &out, NULL) == 0);
		o = cJSON_Parse(out);
		CHECK_MSG(cJSON_GetNumberValue(cJSON_GetObjectItem(o, "allowed")) == sn.step_actions,
			  "gate check allowed %g of the journal's %d step actions",
			  cJSON_GetNumberValue(cJSON_GetObjectItem(o, "allowed")), sn.step_actions);
		cJSON_Delete(o);
		free(out);
	}
	for (int k = 0; k < 8; k++)
		cJSON_Delete(plans[k]);
	free(m.sub);
	free(m.id);
	free(m.a);
	free(err);
}

/*
 * gate check of a journal: a step's action past the limits is denied, a line
 * that is not JSON is a denial naming it, and a last line cut short by a
 * power cut is left out, as the journal's own reader leaves it.
 */
TEST(gate_check_vets_the_steps_a_journal_holds)
{
	static const char head[] =
		"{\"seq\":1,\"subtask\":\"s1\",\"event\":\"dispense_planned\",\"data\":{\"cell\":\"m1\",\"step\":\"dispense\","
		"\"actions\":[{\"type\":\"dispense\",\"id\":1,\"speed_mm_s\":100,\"zones\":[\"travel\",\"well\",\"cell\"],"
		"\"well\":\"w1\",\"cell\":\"m1\",\"units\":3}]}}\n"
		"{\"seq\":2,\"subtask\":\"s1\",\"event\":\"decision\",\"data\":{\"actions\":[{\"type\":\"warp\"}]}}\n";
	static const char below[] =
		"{\"seq\":3,\"subtask\":\"s2\",\"event\":\"actions_planned\",\"data\":{\"step\":\"retry\",\"actions\":["
		"{\"type\":\"stroke\",\"id\":9,\"speed_mm_s\":100,\"zones\":[\"travel\",\"canvas\"],\"brush\":\"flat-12\","
		"\"points_mm\":[[300,250,-10],[320,250,-10]]}]}}\n";
	char text[4096], *out = NULL;
	const char *path;
	const char *args[] = { "gate", "check", NULL, "--json", NULL };
	cJSON *o;

	/* One step, and a decision event's "actions" that is not a step: one action checked, allowed. */
	snprintf(text, sizeof(text), "%s{\"seq\":3,\"event\":\"actions_planned\",\"data\":{\"actions\":[", head);
	args[2] = path = test_write_file("one.jsonl", text);
	CHECK(test_brushloop(args, &out, NULL) == 0);
	o = cJSON_Parse(out);
	CHECK_MSG(cJSON_GetNumberValue(cJSON_GetObjectItem(o, "allowed")) == 1 &&
			  cJSON_GetArraySize(cJSON_GetObjectItem(o, "decisions")) == 1,
		  "%s", out ? out : "");
	cJSON_Delete(o);
	free(out);

	/* A retry stroke below the canvas floor: denied, exit 2. */
	snprintf(text, sizeof(text), "%s%s", head, below);
	args[2] = test_write_file("below.jsonl", text);
	CHECK(test_brushloop(args, &out, NULL) == 2);
	CHECK_STR_CONTAINS(out, "below_floor");
	free(out);

	/* A line in the middle that is not JSON: a denial that names its line. */
	snprintf(text, sizeof(text), "%s{\"seq\": 3, oops\n%s", head, below);
	args[2] = test_write_file("torn.jsonl", text);
	CHECK(test_brushloop(args, &out, NULL) == 2);
	CHECK_STR_CONTAINS(out, "not_json");
	CHECK_STR_CONTAINS(out, "line 3");
	free(out);

	/* A journal with no step: nothing to vet is said, not passed. */
	args[2] = test_write_file("none.jsonl", "{\"seq\":1,\"event\":\"run_start\",\"data\":{}}\n");
	CHECK(test_brushloop(args, &out, NULL) == 2);
	CHECK_STR_CONTAINS(out, "no step");
	free(out);
}

TEST_MAIN(T(every_action_that_runs_was_planned_or_journaled_before), T(gate_check_vets_the_steps_a_journal_holds))

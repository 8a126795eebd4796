/* test_real_pictures.c: whole simulated runs of photographs nobody here made (examples/targets/real) at the default settings: they finish unattended, and what broke them stays fixed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "engine/run_checks.h"
#include "test.h"

/* Small runs: each picture's plan at 40 strokes, its mixes, top-ups and corrections. */
#define STROKES "40"

/*
 * Three kinds of picture: coins (a grey photograph whose rectangle is a hair
 * over a whole number of cells), chelsea (a cat, warm and textured) and hubble
 * (dark space, one near-black colour painted over white in many batches, so
 * its cell is topped up and mixed afresh).
 */
static const char *const pictures[] = { "coins", "chelsea", "hubble" };

static const char *picture_path(const char *name)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "examples/targets/real/%s.png", name);
	return test_src_path(rel);
}

/* brushloop run PICTURE with nothing but the stroke count: the default settings, nobody to ask. */
static int run_default(const char *name, const char *dir, char **err)
{
	const char *args[] = { "run", picture_path(name), "--out", dir, "--max-strokes", STROKES,
			       "--quiet", NULL };

	return test_brushloop(args, NULL, err);
}

/* The top-ups of a run, read from its journal. */
struct fresh_topups {
	int topping_up;        /* inside a top-up: after topping_up, before its mix ends */
	int fresh;             /* the top-up went to a clean cell */
	double need_ml;        /* what the top-up was for: the batch's dips, left to paint */
	double unit_ml;
	int seen, short_of;    /* top-ups mixed afresh, and those that held less than their need */
	double worst_ml, worst_need_ml;
};

static void read_fresh_topups(const cJSON *line, void *ctx)
{
	struct fresh_topups *t = ctx;
	const char *ev = cJSON_GetStringValue(cJSON_GetObjectItem(line, "event"));
	const cJSON *d = cJSON_GetObjectItem(line, "data");

	if (!ev || !d)
		return;
	if (!strcmp(ev, "topping_up")) {
		t->topping_up = 1;
		t->fresh = 0;
		t->need_ml = cJSON_GetNumberValue(cJSON_GetObjectItem(d, "needed_ml"));
	} else if (t->topping_up && !strcmp(ev, "mix_cell")) {
		t->fresh = cJSON_GetObjectItem(d, "discarded") != NULL;
	} else if (t->topping_up && t->fresh && !strcmp(ev, "mix_decision")) {
		double ml = cJSON_GetNumberValue(cJSON_GetObjectItem(d, "cell_units")) * t->unit_ml;

		/* The first decision of a clean cell: what it is mixed at. */
		t->topping_up = 0;
		t->seen++;
		if (ml + 1e-9 < t->need_ml) {
			t->short_of++;
			t->worst_ml = ml;
			t->worst_need_ml = t->need_ml;
		}
	} else if (!strcmp(ev, "subtask_end")) {
		t->topping_up = 0;
	}
}

/*
 * A colour topped up in a clean cell (its verified ratio does not fit the
 * room left in the old one, whose paint is thrown away) is mixed there for
 * what its batch still needs, not for the top-up's increment alone: hubble's
 * near-black went to a clean cell with 0.5 ml for a batch of 1.5 ml of dips,
 * the brush ran dry and the batch was braked 23.7 from its prediction.
 */
static void check_clean_cell_topups(const char *dir)
{
	struct fresh_topups t = { 0 };
	char path[4200], *text;
	cJSON *m;

	snprintf(path, sizeof(path), "%s/machine.json", dir);
	text = test_read_file(path);
	m = text ? cJSON_Parse(text) : NULL;
	free(text);
	t.unit_ml = cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "mixing"),
							     "dispense_unit_ml"));
	cJSON_Delete(m);
	CHECK_MSG(t.unit_ml > 0.0, "the run's machine.json has no dispense unit");
	CHECK(test_journal_each(dir, read_fresh_topups, &t) == 0);
	CHECK_MSG(t.seen > 0, "no top-up went to a clean cell: the case no longer shows it");
	CHECK_MSG(t.short_of == 0, "%d of %d clean-cell top-ups held less than their batch needed "
		  "(%.2f ml for %.2f ml)", t.short_of, t.seen, t.worst_ml, t.worst_need_ml);
}

static void finish_one(int i, void *ctx)
{
	const char *dir = test_tmp_path(pictures[i]);
	char *err = NULL;
	const char *state;
	cJSON *st;
	int rc;

	(void)ctx;
	rc = run_default(pictures[i], dir, &err);
	CHECK_MSG(rc == 0, "%s at default settings exited %d: %s", pictures[i], rc, err ? err : "");
	free(err);
	st = test_status(dir, NULL);
	CHECK_MSG(st != NULL, "%s: no status", pictures[i]);
	state = cJSON_GetStringValue(cJSON_GetObjectItem(st, "state"));
	CHECK_MSG(state && !strcmp(state, "finished"), "%s: state %s", pictures[i],
		  state ? state : "?");
	CHECK_MSG(st && cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(st, "canvas"), "verified")),
		  "%s: the final canvas is not verified", pictures[i]);
	cJSON_Delete(st);
	run_check_cells_within_capacity(dir);
	if (!strcmp(pictures[i], "hubble"))
		check_clean_cell_topups(dir);
}

/*
 * Issue 17's promise: a real picture, the default settings, nobody watching,
 * exit 0 in the morning; and on hubble, its clean-cell top-ups hold what their
 * batches need.
 */
TEST(three_real_pictures_finish_unattended_at_default_settings)
{
	test_parallel((int)(sizeof(pictures) / sizeof(pictures[0])), 2, finish_one, NULL);
}

TEST_MAIN(T(three_real_pictures_finish_unattended_at_default_settings))

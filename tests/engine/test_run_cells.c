/* test_run_cells.c: no mixing cell is ever filled past mixing.cell_max_ml: a colour with no clean cell left waits, and a run stuck on an overfilled cell is repaired with resume --emptied. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "base/fs.h"
#include "engine/run_checks.h"
#include "test.h"

/*
 * The machine, made so that the case cannot be missed whatever
 * strokes the planner makes: a mix tolerance at its floor (0.1, a third of
 * what the simulator's camera repeats, so no mix verifies), nothing accepted
 * unattended, and two cells. The plan's colours are chosen before its strokes
 * and each takes a cell of its own: with as many colours as cells, no clean
 * cell is left once every colour is mixed.
 */
static void tight_two_cells(cJSON *m)
{
	cJSON *cells = cJSON_GetObjectItem(cJSON_GetObjectItem(m, "zones"), "mixing_cells");

	cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "tolerances"), "mix_de00"), 0.1);
	/* A tolerance tighter than the camera repeats (0.31 on the simulator): no camera check. */
	cJSON_AddNumberToObject(cJSON_GetObjectItem(m, "camera"), "repeat_observations", 0);
	cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "unattended"), "accept_within_de00"), 0);
	while (cJSON_GetArraySize(cells) > 2)
		cJSON_DeleteItemFromArray(cells, cJSON_GetArraySize(cells) - 1);
}

/* How many colours the run's plan.json has (-1: none read). */
static int plan_colours(const char *dir)
{
	char *text = run_file_text(dir, "plan.json");
	cJSON *p = text ? cJSON_Parse(text) : NULL;
	int n = p ? cJSON_GetArraySize(cJSON_GetObjectItem(p, "colours")) : -1;

	cJSON_Delete(p);
	free(text);
	return n;
}

/*
 * Colour c2 cannot be mixed within 0.1 and waits; answered with a substitute
 * (the palette's nearest to c2, so the answer itself is in reach), its new
 * mix finds no clean cell left. On c35509f it went on in c2's cell, a whole
 * recipe over what it held (6 ml against cell_max_ml 3), and the next resume
 * was refused: "state.json: colours[1].cell_ml: 6 is out of range [0, 3]".
 * Now the colour waits for a person (mix_waits_for_a_cell), no cell passes
 * its limit at any journal line, and the run can be answered again.
 */
TEST(a_colour_with_no_clean_cell_left_waits_instead_of_stacking_recipes)
{
	const char *dir = test_tmp_path("no-clean-cell");
	char machine[4200], *md, *journal, *err = NULL;
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", "24",
			       "--quiet", "--machine", machine, NULL };
	const char *subst[] = { "resume", dir, "--quiet", "--substitute", "c2=lab:24.72,7.41,-32.68", NULL };
	const char *accept[] = { "resume", dir, "--quiet", "--accept-mix", "c2", NULL };
	int rc;

	CHECK(run_machine_edited("m-tight2.json", tight_two_cells, machine, sizeof(machine)) == 0);
	rc = test_brushloop(args, NULL, NULL);
	CHECK_MSG(rc == 3, "the run exited %d, not 3 (c2 waiting)", rc);
	/* The case's premise: every cell is a colour's, none spare for a fresh mix. */
	CHECK_MSG(plan_colours(dir) == 2, "the plan has %d colours, not one for each of the 2 cells",
		  plan_colours(dir));
	md = run_file_text(dir, "STATUS.md");
	CHECK_STR_CONTAINS(md, "- colour c2 ");
	free(md);
	rc = test_brushloop(subst, NULL, &err);
	CHECK_MSG(rc == 3, "resumed with a substitute, the run exited %d, not 3: %s", rc, err ? err : "");
	free(err);
	err = NULL;
	journal = run_file_text(dir, "journal.jsonl");
	CHECK_STR_CONTAINS(journal, "\"event\":\"mix_waits_for_a_cell\"");
	CHECK_MSG(journal && !strstr(journal, "going on in the colour's cell"), "a recipe went into a used cell");
	free(journal);
	run_check_cells_within_capacity(dir);
	rc = test_brushloop(accept, NULL, &err);
	CHECK_MSG(rc == 0 || rc == 3, "the next resume exited %d: %s", rc, err ? err : "");
	free(err);
}

static char *with_cell_ml(const char *state, double ml, char *cell, size_t n)
{
	cJSON *st = cJSON_Parse(state), *c;
	char *out = NULL;

	cJSON_ArrayForEach(c, cJSON_GetObjectItem(st, "colours")) {
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(c, "cell"));

		if (name && *name) {
			snprintf(cell, n, "%s", name);
			cJSON_SetNumberValue(cJSON_GetObjectItem(c, "cell_ml"), ml);
			out = cJSON_Print(st);
			break;
		}
	}
	cJSON_Delete(st);
	return out;
}

/*
 * A run stuck on a state that says a cell holds 8.9 ml (cell_max_ml 3):
 * resume refuses, naming the cell and the repair; `resume --emptied CELL`
 * (a person emptied and cleaned it) goes on, journaled (cell_emptied). On
 * c35509f the run could neither go on nor be repaired.
 */
TEST(a_run_stuck_on_an_overfilled_cell_is_repaired_with_emptied)
{
	const char *dir = test_tmp_path("overfilled");
	const char *args[] = { "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", "24",
			       "--quiet", "--fault", "power_loss_after=40", NULL };
	char path[4200], cell[64] = "", *state, *bad, *err = NULL, *journal;
	const char *plain[] = { "resume", dir, "--quiet", NULL };
	const char *repair[] = { "resume", dir, "--quiet", "--emptied", cell, "--fault", "power_loss_after=60", NULL };
	int rc;

	CHECK(test_brushloop(args, NULL, NULL) == 86);
	state = run_file_text(dir, "state.json");
	bad = state ? with_cell_ml(state, 8.9, cell, sizeof(cell)) : NULL;
	CHECK(bad != NULL);
	snprintf(path, sizeof(path), "%s/state.json", dir);
	CHECK(bad && fs_write_atomic(path, bad, strlen(bad), NULL) == 0);
	free(bad);
	free(state);
	rc = test_brushloop(plain, NULL, &err);
	CHECK_MSG(rc == 2, "the overfilled state was not refused (%d)", rc);
	CHECK_STR_CONTAINS(err, "cell_ml: 8.9 is more than mixing.cell_max_ml 3");
	CHECK_STR_CONTAINS(err, "--emptied");
	free(err);
	err = NULL;
	rc = test_brushloop(repair, NULL, &err);
	CHECK_MSG(rc == 86, "resume --emptied %s exited %d: %s", cell, rc, err ? err : "");
	free(err);
	journal = run_file_text(dir, "journal.jsonl");
	CHECK_STR_CONTAINS(journal, "\"event\":\"cell_emptied\"");
	free(journal);
}

TEST_MAIN(T(a_colour_with_no_clean_cell_left_waits_instead_of_stacking_recipes),
	  T(a_run_stuck_on_an_overfilled_cell_is_repaired_with_emptied))

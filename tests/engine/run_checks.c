/* run_checks.c: checks on a finished run directory that several engine test files make. */
#include "engine/run_checks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "config/machine.h"
#include "test.h"

#define CELLS_MAX 64

/* A run's cells as its journal fills and empties them. */
struct cell_replay {
	const struct machine *m;
	char name[CELLS_MAX][CFG_NAME_MAX];
	double ml[CELLS_MAX];
	int n;
	double most_ml;     /* the most any cell held */
	char most_cell[CFG_NAME_MAX];
	long most_seq;      /* the journal line where it did */
};

static double *cell_ml(struct cell_replay *c, const char *name)
{
	for (int i = 0; i < c->n; i++)
		if (!strcmp(c->name[i], name))
			return &c->ml[i];
	if (c->n == CELLS_MAX)
		return NULL;
	snprintf(c->name[c->n], sizeof(c->name[0]), "%s", name);
	c->ml[c->n] = 0.0;
	return &c->ml[c->n++];
}

static void replay_line(const cJSON *line, void *ctx)
{
	struct cell_replay *c = ctx;
	const char *ev = cJSON_GetStringValue(cJSON_GetObjectItem(line, "event"));
	const cJSON *d = cJSON_GetObjectItem(line, "data");
	const cJSON *a = cJSON_GetObjectItem(d, "action");
	const char *cell = cJSON_GetStringValue(cJSON_GetObjectItem(a, "cell"));
	const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(a, "type"));
	const char *verdict = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(d, "decision"),
								       "decision"));
	double *ml;

	if (ev && !strcmp(ev, "mix_cell") && cJSON_GetStringValue(cJSON_GetObjectItem(d, "discarded"))) {
		if ((ml = cell_ml(c, cJSON_GetStringValue(cJSON_GetObjectItem(d, "discarded")))))
			*ml = 0.0;
		return;
	}
	if (!ev || strcmp(ev, "decision") || !cell || !kind || !verdict || strcmp(verdict, "allow") ||
	    !(ml = cell_ml(c, cell)))
		return;
	if (!strcmp(kind, "dispense")) {
		*ml += cJSON_GetNumberValue(cJSON_GetObjectItem(a, "units")) * c->m->mixing.dispense_unit_ml;
		if (*ml > c->most_ml) {
			c->most_ml = *ml;
			snprintf(c->most_cell, sizeof(c->most_cell), "%s", cell);
			c->most_seq = (long)cJSON_GetNumberValue(cJSON_GetObjectItem(line, "seq"));
		}
	} else if (!strcmp(kind, "dip")) {
		const struct machine_brush *b =
			machine_find_brush(c->m, cJSON_GetStringValue(cJSON_GetObjectItem(a, "brush")));

		*ml = b && *ml > b->load_ml ? *ml - b->load_ml : 0.0;
	}
}

void run_check_cells_within_capacity(const char *dir)
{
	struct cell_replay c = { 0 };
	char path[4200];
	struct machine m;
	bl_err err = { 0 };
	const cJSON *it;
	cJSON *st;

	snprintf(path, sizeof(path), "%s/machine.json", dir);
	CHECK_MSG(machine_load(path, &m, &err) == 0, "%s", err.msg);
	c.m = &m;
	CHECK(test_journal_each(dir, replay_line, &c) == 0);
	CHECK_MSG(c.n > 0, "%s: the journal dispensed into no cell", dir);
	CHECK_MSG(c.most_ml <= m.mixing.cell_max_ml + 1e-9,
		  "%s: the cell %s held %.2f ml at journal line %ld, more than mixing.cell_max_ml %.2f", dir,
		  c.most_cell, c.most_ml, c.most_seq, m.mixing.cell_max_ml);
	snprintf(path, sizeof(path), "%s/state.json", dir);
	st = NULL;
	{
		char *text = test_read_file(path);

		st = text ? cJSON_Parse(text) : NULL;
		free(text);
	}
	CHECK_MSG(st != NULL, "%s cannot be read", path);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(st, "colours")) {
		const cJSON *ml = cJSON_GetObjectItem(it, "cell_ml");

		CHECK_MSG(cJSON_IsNumber(ml) && ml->valuedouble <= m.mixing.cell_max_ml + 1e-9,
			  "state.json: a cell holds %.2f ml, more than mixing.cell_max_ml %.2f",
			  cJSON_IsNumber(ml) ? ml->valuedouble : -1.0, m.mixing.cell_max_ml);
	}
	cJSON_Delete(st);
}

/* run_cells.c: what the machine's wells and mixing cells hold: the one place that decides how much may go into a cell, wells counted before a mix draws on them, and what a person refilled or emptied. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/run_int.h"

int run_cell_index(const struct machine *m, const char *name)
{
	const struct machine_station *c = machine_find_cell(m, name);

	return c ? (int)(c - m->cells) : -1;
}

int run_well_index(const struct machine *m, const char *name)
{
	const struct machine_station *w = machine_find_well(m, name);

	return w ? (int)(w - m->wells) : -1;
}

/* ---- what a cell holds, and what it may take ---- */

double run_cell_held_ml(const struct run *r, const char *cell)
{
	for (int c = 0; c < r->st.n_colours; c++)
		if (cell[0] && !strcmp(r->st.colours[c].cell, cell))
			return fmax(r->st.colours[c].cell_ml, 0.0);
	return 0.0; /* a clean cell, or one no colour is in */
}

int run_cell_admit(const struct run *r, const char *cell, double ml, bl_err *err)
{
	double held = run_cell_held_ml(r, cell), max = r->m.mixing.cell_max_ml;

	if (held + ml <= max + 1e-6)
		return 0;
	return bl_fail(err, BL_EPAUSED, "cell %s holds %.2f ml, and %.2f ml more would pass "
		       "mixing.cell_max_ml %.2f: nothing is dispensed into it", cell, held, ml, max);
}

double run_well_reserve_ml(const struct machine *m, int w)
{
	return fmax(0.5, 0.05 * m->wells[w].capacity_ml);
}

int run_wells_check(struct run *r, const int *units, bl_err *err)
{
	for (int i = 0; i < r->mixer.model.n_paints; i++) {
		int w = units[i] > 0 ? run_well_index(&r->m, r->pal.paints[i].well) : -1;
		double need, left, reserve;
		cJSON *d;
		int rc;

		if (w < 0)
			continue;
		need = units[i] * r->m.mixing.dispense_unit_ml;
		left = r->st.wells_ml[w];
		reserve = run_well_reserve_ml(&r->m, w);
		if (left - need >= reserve)
			continue;
		if (need + reserve > r->m.wells[w].capacity_ml)
			return bl_fail(err, BL_EINVAL, "well %s (%s) holds at most %.1f ml, and a mix needs "
				       "%.1f ml of it and %.1f ml it cannot draw: no refill helps (its "
				       "capacity_ml in %s is too small for the mixing cells)",
				       r->m.wells[w].name, r->pal.paints[i].name,
				       r->m.wells[w].capacity_ml, need, reserve,
				       r->m.file);
		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "well", r->m.wells[w].name);
		cJSON_AddStringToObject(d, "paint", r->pal.paints[i].name);
		cJSON_AddNumberToObject(d, "left_ml", left);
		cJSON_AddNumberToObject(d, "need_ml", need);
		cJSON_AddNumberToObject(d, "reserve_ml", reserve);
		if ((rc = run_event(r, "well_low", d, err)))
			return rc;
		r->st.well_low = w + 1;
		snprintf(r->st.state, sizeof(r->st.state), "paused");
		snprintf(r->st.reason, sizeof(r->st.reason),
			 "well %s (%s) holds about %.1f ml and the next mix needs %.1f ml of it (with "
			 "%.1f ml it cannot draw): refill it, then `brushloop resume %s --refilled %s`",
			 r->m.wells[w].name, r->pal.paints[i].name, fmax(left, 0.0), need,
			 reserve, r->dir_shown, r->m.wells[w].name);
		r->status_now = 1;
		return bl_fail(err, BL_EPAUSED, "%s", r->st.reason);
	}
	return 0;
}

int run_wells_refilled(struct run *r, const char *list, bl_err *err)
{
	char buf[512], *save = NULL;

	if (!list)
		return 0;
	if (snprintf(buf, sizeof(buf), "%s", list) >= (int)sizeof(buf))
		return bl_fail(err, BL_EINVAL, "--refilled: the list is too long");
	/* Every name checked before any is acted on: a bad list changes nothing. */
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int w = run_well_index(&r->m, t);

		if (!strcmp(t, "all"))
			continue;
		if (w < 0)
			return bl_fail(err, BL_EINVAL, "--refilled: the machine has no well '%s'", t);
		if (!run_well_paint(r, w)[0])
			return bl_fail(err, BL_EINVAL, "--refilled: well %s holds no paint of the "
				       "palette", t);
	}
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int all = !strcmp(t, "all");

		for (int w = 0; w < r->m.n_wells; w++) {
			cJSON *d;
			double before = r->st.wells_ml[w];
			int rc;

			if ((!all && strcmp(t, r->m.wells[w].name)) || !run_well_paint(r, w)[0])
				continue;
			/* A simulated well is the world's: the person's refill happens there too. */
			if ((rc = rig_well_refilled(&r->rig, r->m.wells[w].name, err)))
				return rc;
			r->st.wells_ml[w] = r->m.wells[w].capacity_ml;
			if (r->st.well_low == w + 1)
				r->st.well_low = 0;
			d = cJSON_CreateObject();
			cJSON_AddStringToObject(d, "well", r->m.wells[w].name);
			cJSON_AddStringToObject(d, "paint", run_well_paint(r, w));
			cJSON_AddNumberToObject(d, "counted_ml", before);
			cJSON_AddNumberToObject(d, "now_ml", r->st.wells_ml[w]);
			if ((rc = run_event(r, "refilled", d, err)))
				return rc;
		}
	}
	return run_state_save(r, err);
}

int run_cells_emptied(struct run *r, const char *list, bl_err *err)
{
	char buf[512], *save = NULL;
	int n = 0, rc;

	if (!list)
		return 0;
	if (snprintf(buf, sizeof(buf), "%s", list) >= (int)sizeof(buf))
		return bl_fail(err, BL_EINVAL, "--emptied: the list is too long");
	/* Every name checked before any is acted on: a bad list changes nothing. */
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (strcmp(t, "all") && run_cell_index(&r->m, t) < 0)
			return bl_fail(err, BL_EINVAL, "--emptied: the machine has no mixing cell '%s'", t);
	for (int i = 0; i < r->m.n_cells; i++) {
		const char *name = r->m.cells[i].name;
		int named = 0;
		cJSON *d;

		snprintf(buf, sizeof(buf), "%s", list);
		for (char *t = strtok_r(buf, ",", &save); t && !named; t = strtok_r(NULL, ",", &save))
			named = !strcmp(t, "all") || !strcmp(t, name);
		if (!named)
			continue;
		d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "cell", name);
		cJSON_AddNumberToObject(d, "held_ml", run_cell_held_ml(r, name));
		/* Cleaned by a person: clean again, and the colour that was in it has no paint. */
		for (int c = 0; c < r->st.n_colours; c++)
			if (!strcmp(r->st.colours[c].cell, name)) {
				cJSON_AddStringToObject(d, "colour", r->plan.colours[c].name);
				r->st.colours[c].wasted_ml += fmax(r->st.colours[c].cell_ml, 0.0);
				r->st.colours[c].cell[0] = '\0';
				r->st.colours[c].cell_ml = 0.0;
			}
		r->st.cells_used &= ~(1ull << i);
		if ((rc = run_event(r, "cell_emptied", d, err)))
			return rc;
		n++;
	}
	return n ? run_state_save(r, err) : 0;
}


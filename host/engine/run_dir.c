/* run_dir.c: the run directory's files: state.json (atomic, read back strictly), STATUS.md for a person, the heartbeat. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/json.h"
#include "base/strbuf.h"
#include "engine/run_int.h"
#include "engine/run_kind.h"

const char *const run_sub_status_names[] = { "pending", "running", "done", "failed",
					     "deferred", "skipped", NULL };
/* Where a run stands (state.json "state"): the engine writes no other. */
static const char *const run_state_names[] = { "running", "paused", "braked", "finished",
					       "failed", "safety_stop", NULL };
/* Slack for sums of dispensed millilitres printed and read back. */
#define ML_EPS 1e-6

int run_path(const struct run *r, const char *name, char *out, size_t n, bl_err *err)
{
	return fs_join(out, n, r->dir, name, err);
}

int run_dir_own(const char *dir, int *fd, bl_err *err)
{
	return fs_lock_owner(dir, RUN_LOCK, fd, err);
}

void run_state_init(struct run_state *st)
{
	memset(st, 0, sizeof(*st));
	snprintf(st->state, sizeof(st->state), "running");
	run_brakes_init(&st->brakes);
	st->next_action_id = RUN_ACTION_ID_BASE;
	st->final_mean_de00 = st->final_p95_de00 = -1.0;
}

void run_wells_full(struct run *r)
{
	for (int i = 0; i < r->m.n_wells && i < CFG_MAX_WELLS; i++)
		r->st.wells_ml[i] = r->m.wells[i].capacity_ml;
	r->st.well_low = 0;
}

const char *run_well_paint(const struct run *r, int well)
{
	for (int k = 0; k < r->pal.n_paints; k++)
		if (!strcmp(r->pal.paints[k].well, r->m.wells[well].name))
			return r->pal.paints[k].name;
	return "";
}

void run_state_free(struct run_state *st)
{
	run_retry_clear(&st->retry);
	free(st->sub);
	st->sub = NULL;
	st->n_sub = 0;
}

int run_state_resize(struct run_state *st, size_t n_sub, bl_err *err)
{
	struct run_sub *s = calloc(n_sub ? n_sub : 1, sizeof(*s));

	if (!s)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	for (size_t i = 0; i < n_sub; i++)
		s[i].verdict_de00 = -1.0;
	free(st->sub);
	st->sub = s;
	st->n_sub = n_sub;
	return 0;
}

static cJSON *lab_json(const color_lab *c)
{
	const double v[3] = { c->L, c->a, c->b };

	return cJSON_CreateDoubleArray(v, 3);
}

cJSON *run_state_json(const struct run *r)
{
	const struct run_state *st = &r->st;
	cJSON *o = cJSON_CreateObject(), *a;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "kind", "run_state");
	cJSON_AddNumberToObject(o, "version", 1);
	cJSON_AddStringToObject(o, "state", st->state);
	cJSON_AddStringToObject(o, "reason", st->reason);
	cJSON_AddStringToObject(o, "brake", st->brake);
	cJSON_AddNumberToObject(o, "round", st->round);
	cJSON_AddNumberToObject(o, "rounds_planned", st->rounds_planned);
	cJSON_AddNumberToObject(o, "next", (double)st->next);
	cJSON_AddBoolToObject(o, "batch_unknown", st->batch_unknown);
	cJSON_AddItemToObject(o, "retry", run_retry_json(&st->retry));
	cJSON_AddNumberToObject(o, "topup_ml", st->topup_ml);
	cJSON_AddBoolToObject(o, "corrections_over", st->corrections_over);
	cJSON_AddItemToObject(o, "wet", run_wet_json(st));
	a = cJSON_AddArrayToObject(o, "subtasks");
	for (size_t i = 0; i < st->n_sub; i++) {
		cJSON *s = cJSON_CreateObject();
		char name[32];

		run_subtask_name(r, i, name, sizeof(name));
		cJSON_AddStringToObject(s, "name", name);
		cJSON_AddStringToObject(s, "status", run_sub_status_names[st->sub[i].status]);
		cJSON_AddNumberToObject(s, "attempts", st->sub[i].attempts);
		cJSON_AddNumberToObject(s, "verdict_de00", st->sub[i].verdict_de00);
		cJSON_AddNumberToObject(s, "action_next", (double)st->sub[i].action_next);
		cJSON_AddStringToObject(s, "note", st->sub[i].note);
		cJSON_AddItemToArray(a, s);
	}
	a = cJSON_AddArrayToObject(o, "colours");
	for (int c = 0; c < st->n_colours; c++) {
		const struct run_colour *rc = &st->colours[c];
		cJSON *s = cJSON_CreateObject();

		cJSON_AddStringToObject(s, "name", r->plan.colours[c].name);
		cJSON_AddStringToObject(s, "cell", rc->cell);
		cJSON_AddNumberToObject(s, "cell_ml", rc->cell_ml);
		cJSON_AddBoolToObject(s, "verified", rc->verified);
		cJSON_AddBoolToObject(s, "accepted", rc->accepted);
		cJSON_AddBoolToObject(s, "accepted_within", rc->accepted_within);
		cJSON_AddItemToObject(s, "recipe", mix_units_json(&r->mixer.model, rc->recipe));
		cJSON_AddBoolToObject(s, "escalated", rc->escalated);
		if (rc->substituted)
			cJSON_AddItemToObject(s, "substitute", lab_json(&rc->substitute));
		cJSON_AddItemToObject(s, "measured_lab", lab_json(&rc->measured));
		cJSON_AddNumberToObject(s, "measured_de00", rc->measured_de00);
		cJSON_AddNumberToObject(s, "mixes", rc->mixes);
		cJSON_AddNumberToObject(s, "attempts", rc->attempts);
		cJSON_AddNumberToObject(s, "cells", rc->cells);
		cJSON_AddNumberToObject(s, "dispensed_ml", rc->dispensed_ml);
		cJSON_AddNumberToObject(s, "wasted_ml", rc->wasted_ml);
		cJSON_AddItemToObject(s, "canvas_offset", lab_json(&rc->canvas_offset));
		cJSON_AddNumberToObject(s, "canvas_cells", (double)rc->canvas_cells);
		cJSON_AddNumberToObject(s, "hide", rc->hide);
		cJSON_AddNumberToObject(s, "hide_weight", rc->hide_weight);
		cJSON_AddNumberToObject(s, "coat", rc->coat);
		cJSON_AddNumberToObject(s, "coat_weight", rc->coat_weight);
		cJSON_AddItemToArray(a, s);
	}
	cJSON_AddNumberToObject(o, "cells_used", (double)st->cells_used);
	a = cJSON_AddArrayToObject(o, "wells");
	for (int i = 0; i < r->m.n_wells; i++) {
		cJSON *w = cJSON_CreateObject();

		cJSON_AddStringToObject(w, "well", r->m.wells[i].name);
		cJSON_AddStringToObject(w, "paint", run_well_paint(r, i));
		cJSON_AddNumberToObject(w, "left_ml", st->wells_ml[i]);
		cJSON_AddNumberToObject(w, "capacity_ml", r->m.wells[i].capacity_ml);
		cJSON_AddItemToArray(a, w);
	}
	cJSON_AddNumberToObject(o, "well_low", st->well_low);
	cJSON_AddBoolToObject(o, "mix_active", st->mix_active);
	cJSON_AddItemToObject(o, "mix_job", mix_job_json(&r->mixer.model, &st->job));
	{
		const struct run_pending *p = &st->pending;
		cJSON *s = cJSON_AddObjectToObject(o, "pending_dispense"), *items;

		cJSON_AddBoolToObject(s, "active", p->active);
		cJSON_AddBoolToObject(s, "fresh", p->fresh);
		cJSON_AddStringToObject(s, "cell", p->cell);
		items = cJSON_AddArrayToObject(s, "items");
		for (int i = 0; i < p->n; i++) {
			cJSON *it = cJSON_CreateObject();

			cJSON_AddStringToObject(it, "paint", r->mixer.model.name[p->paint[i]]);
			cJSON_AddNumberToObject(it, "units", p->units[i]);
			cJSON_AddNumberToObject(it, "action_id", (double)p->action_id[i]);
			cJSON_AddBoolToObject(it, "done", p->done[i]);
			cJSON_AddItemToArray(items, it);
		}
	}
	cJSON_AddItemToObject(o, "learn", mix_learn_json(&r->mixer.model, &st->learn));
	cJSON_AddItemToObject(o, "cost", run_cost_json(&st->cost, &r->m.costs));
	cJSON_AddItemToObject(o, "brakes", run_brakes_json(&st->brakes));
	a = cJSON_AddArrayToObject(o, "canvas_history");
	for (int i = 0; i < st->n_hist; i++) {
		cJSON *s = cJSON_CreateObject();

		cJSON_AddNumberToObject(s, "round", st->hist[i].round);
		cJSON_AddNumberToObject(s, "subtask", st->hist[i].subtask);
		cJSON_AddNumberToObject(s, "mean_de00", st->hist[i].mean_de00);
		cJSON_AddNumberToObject(s, "p95_de00", st->hist[i].p95_de00);
		cJSON_AddNumberToObject(s, "expected_de00", st->hist[i].expected_de00);
		cJSON_AddNumberToObject(s, "t_s", st->hist[i].t_s);
		cJSON_AddItemToArray(a, s);
	}
	a = cJSON_AddArrayToObject(o, "deferred");
	for (int i = 0; i < st->n_deferred; i++) {
		cJSON *s = cJSON_CreateObject();

		cJSON_AddNumberToObject(s, "round", st->deferred[i].round);
		cJSON_AddNumberToObject(s, "subtask", st->deferred[i].subtask);
		cJSON_AddStringToObject(s, "request", st->deferred[i].request);
		cJSON_AddStringToObject(s, "why", st->deferred[i].why);
		cJSON_AddItemToArray(a, s);
	}
	cJSON_AddNumberToObject(o, "next_action_id", (double)st->next_action_id);
	cJSON_AddNumberToObject(o, "strokes_done", (double)st->strokes_done);
	cJSON_AddNumberToObject(o, "strokes_total", (double)st->strokes_total);
	cJSON_AddNumberToObject(o, "actions_done", (double)st->actions_done);
	cJSON_AddNumberToObject(o, "wall_s", st->wall_s);
	cJSON_AddNumberToObject(o, "clock_ns", (double)st->clock_ns);
	cJSON_AddBoolToObject(o, "open_loop", st->open_loop);
	cJSON_AddBoolToObject(o, "accept_nearest", st->accept_nearest);
	cJSON_AddBoolToObject(o, "calibrated", st->calibrated);
	cJSON_AddBoolToObject(o, "canvas_from_file", st->canvas_from_file);
	cJSON_AddNumberToObject(o, "final_mean_de00", st->final_mean_de00);
	cJSON_AddNumberToObject(o, "final_p95_de00", st->final_p95_de00);
	cJSON_AddBoolToObject(o, "final_verified", st->final_verified);
	return o;
}

int run_state_save(struct run *r, bl_err *err)
{
	char p[RUN_PATH_MAX];
	cJSON *o;
	int rc;

	r->st.clock_ns = r->rig.clock ? (int64_t)(run_clock_s(r) * 1e9) : clk_now_ns(clk_monotonic());
	o = run_state_json(r);
	if (!o)
		return bl_fail(err, BL_ENOMEM, "out of memory saving the state");
	rc = run_path(r, "state.json", p, sizeof(p), err);
	if (rc == 0)
		rc = json_write_file(p, o, err);
	cJSON_Delete(o);
	if (rc == 0 && (r->status_now || clk_real_ns() - r->last_status_ns > 2000000000LL)) {
		rc = run_status_write(r, err);
		r->last_status_ns = clk_real_ns();
		r->status_now = 0;
	}
	return rc;
}

/* Returns as json_vec: 1 when an optional key is absent (c untouched). */
static int lab_read_opt(json_obj *o, const char *key, int flags, color_lab *c, bl_err *err)
{
	double v[3];
	int rc = json_vec(o, key, flags, 3, -300, 300, v, err);

	if (rc == 0) {
		c->L = v[0];
		c->a = v[1];
		c->b = v[2];
	}
	return rc;
}

static int lab_read(json_obj *o, const char *key, color_lab *c, bl_err *err)
{
	return lab_read_opt(o, key, JSON_REQUIRED, c, err);
}

#define TRY(x)                   \
	do {                     \
		rc = (x);        \
		if (rc < 0)      \
			goto out; \
	} while (0)

int run_state_load(struct run *r, bl_err *err)
{
	struct run_state *st = &r->st;
	char p[RUN_PATH_MAX], kind[32];
	cJSON *root = NULL;
	json_obj o, c;
	const cJSON *arr, *it;
	size_t n, i;
	double v;
	int rc, ver;

	run_state_free(st);
	run_state_init(st);
	if ((rc = run_path(r, "state.json", p, sizeof(p), err)) || (rc = json_parse_file(p, &root, err)))
		return rc;
	TRY(json_obj_open(root, p, "", &o, err));
	TRY(json_str(&o, "kind", JSON_REQUIRED, kind, sizeof(kind), err));
	TRY(json_i32(&o, "version", JSON_REQUIRED, 1, 1, &ver, err));
	if (strcmp(kind, "run_state")) {
		rc = json_fail(&o, "kind", err, BL_EINVAL, "'%s' is not a run state", kind);
		goto out;
	}
	TRY(json_str(&o, "state", JSON_REQUIRED, st->state, sizeof(st->state), err));
	{
		int k;

		for (k = 0; run_state_names[k] && strcmp(run_state_names[k], st->state); k++)
			;
		if (!run_state_names[k]) {
			rc = json_fail(&o, "state", err, BL_EINVAL, "'%s' is not a run state (running, "
				       "paused, braked, finished, failed, safety_stop)", st->state);
			goto out;
		}
	}
	TRY(json_str(&o, "reason", JSON_REQUIRED, st->reason, sizeof(st->reason), err));
	TRY(json_str(&o, "brake", JSON_REQUIRED, st->brake, sizeof(st->brake), err));
	TRY(json_i32(&o, "round", JSON_REQUIRED, 0, 1000, &st->round, err));
	TRY(json_i32(&o, "rounds_planned", JSON_REQUIRED, 0, 1000, &st->rounds_planned, err));
	TRY(json_num(&o, "next", JSON_REQUIRED, 0, 1e7, &v, err));
	st->next = (size_t)v;
	TRY(json_bool(&o, "batch_unknown", JSON_REQUIRED, &st->batch_unknown, err));
	TRY(json_num(&o, "topup_ml", JSON_REQUIRED, 0.0, 1e6, &st->topup_ml, err));
	TRY(json_bool(&o, "corrections_over", JSON_REQUIRED, &st->corrections_over, err));
	{
		const cJSON *j = json_take(&o, "retry");

		if (!j) {
			rc = json_fail(&o, "retry", err, BL_EINVAL, "missing");
			goto out;
		}
		TRY(run_retry_from_json(j, &st->retry, err));
		j = json_take(&o, "wet");
		if (!j) {
			rc = json_fail(&o, "wet", err, BL_EINVAL, "missing");
			goto out;
		}
		TRY(run_wet_from_json(j, st, err));
	}
	TRY(json_array(&o, "subtasks", JSON_REQUIRED, PLAN_MAX_STROKES, &arr, &n, err));
	TRY(run_state_resize(st, n, err));
	i = 0;
	cJSON_ArrayForEach(it, arr) {
		char name[32];
		struct run_sub *s = &st->sub[i];

		TRY(json_item_obj(&o, "subtasks", it, i, &c, err));
		TRY(json_str(&c, "name", JSON_REQUIRED, name, sizeof(name), err));
		TRY(json_enum(&c, "status", JSON_REQUIRED, run_sub_status_names, &s->status, err));
		TRY(json_i32(&c, "attempts", JSON_REQUIRED, 0, 1000000, &s->attempts, err));
		TRY(json_num(&c, "verdict_de00", JSON_REQUIRED, -1, 1000, &s->verdict_de00, err));
		TRY(json_num(&c, "action_next", JSON_REQUIRED, 0, 1e7, &v, err));
		s->action_next = (long)v;
		TRY(json_str(&c, "note", JSON_REQUIRED, s->note, sizeof(s->note), err));
		TRY(json_end(&c, err));
		i++;
	}
	TRY(json_array(&o, "colours", JSON_REQUIRED, PLAN_MAX_COLOURS, &arr, &n, err));
	st->n_colours = (int)n;
	i = 0;
	cJSON_ArrayForEach(it, arr) {
		struct run_colour *rc2 = &st->colours[i];
		char name[CFG_NAME_MAX];

		TRY(json_item_obj(&o, "colours", it, i, &c, err));
		TRY(json_str(&c, "name", JSON_REQUIRED, name, sizeof(name), err));
		TRY(json_str(&c, "cell", JSON_REQUIRED, rc2->cell, sizeof(rc2->cell), err));
		if (rc2->cell[0] && !machine_find_cell(&r->m, rc2->cell)) {
			rc = json_fail(&c, "cell", err, BL_EINVAL, "'%s' is no mixing cell of the machine",
				       rc2->cell);
			goto out;
		}
		TRY(json_num(&c, "cell_ml", JSON_REQUIRED, 0.0, r->m.mixing.cell_max_ml + ML_EPS,
			     &rc2->cell_ml, err));
		TRY(json_bool(&c, "verified", JSON_REQUIRED, &rc2->verified, err));
		TRY(json_bool(&c, "accepted", JSON_REQUIRED, &rc2->accepted, err));
		TRY(json_bool(&c, "accepted_within", JSON_OPTIONAL, &rc2->accepted_within, err));
		/* A state from before recipes were kept has none: its top-ups mix afresh. */
		if (cJSON_GetObjectItemCaseSensitive(c.node, "recipe"))
			TRY(mix_units_from_json(&r->mixer.model, &c, "recipe", rc2->recipe, err));
		TRY(json_bool(&c, "escalated", JSON_REQUIRED, &rc2->escalated, err));
		/* Present only when the operator substituted the colour. */
		TRY(lab_read_opt(&c, "substitute", JSON_OPTIONAL, &rc2->substitute, err));
		rc2->substituted = rc == 0;
		TRY(lab_read(&c, "measured_lab", &rc2->measured, err));
		TRY(json_num(&c, "measured_de00", JSON_REQUIRED, -1, 1000, &rc2->measured_de00, err));
		TRY(json_i32(&c, "mixes", JSON_REQUIRED, 0, 1000000, &rc2->mixes, err));
		TRY(json_i32(&c, "attempts", JSON_REQUIRED, 0, 1000000, &rc2->attempts, err));
		TRY(json_i32(&c, "cells", JSON_REQUIRED, 0, 1000000, &rc2->cells, err));
		TRY(json_num(&c, "dispensed_ml", JSON_REQUIRED, 0, 1e9, &rc2->dispensed_ml, err));
		TRY(json_num(&c, "wasted_ml", JSON_OPTIONAL, 0, 1e9, &rc2->wasted_ml, err));
		TRY(lab_read(&c, "canvas_offset", &rc2->canvas_offset, err));
		TRY(json_num(&c, "canvas_cells", JSON_REQUIRED, 0, 1e12, &v, err));
		rc2->canvas_cells = (long)v;
		TRY(json_num(&c, "hide", JSON_REQUIRED, 0.0, 2.0, &rc2->hide, err));
		TRY(json_num(&c, "hide_weight", JSON_REQUIRED, 0.0, 1e12, &rc2->hide_weight, err));
		/* A state from before coats were learnt has none: the colour's look places its corrections. */
		TRY(json_num(&c, "coat", JSON_OPTIONAL, 0.0, 2.0, &rc2->coat, err));
		TRY(json_num(&c, "coat_weight", JSON_OPTIONAL, 0.0, 1e12, &rc2->coat_weight, err));
		TRY(json_end(&c, err));
		i++;
	}
	/* A bit per mixing cell: at most CFG_MAX_CELLS (32) of them. */
	TRY(json_num(&o, "cells_used", JSON_REQUIRED, 0, ldexp(1.0, r->m.n_cells) - 1.0, &v, err));
	st->cells_used = (uint64_t)v;
	/* A state from before wells were counted has none: they count from full. */
	run_wells_full(r);
	arr = NULL;
	n = 0;
	TRY(json_array(&o, "wells", JSON_OPTIONAL, CFG_MAX_WELLS, &arr, &n, err));
	if (arr && n != (size_t)r->m.n_wells) {
		rc = json_fail(&o, "wells", err, BL_EINVAL, "%zu wells, the machine has %d", n,
			       r->m.n_wells);
		goto out;
	}
	i = 0;
	cJSON_ArrayForEach(it, arr) {
		char name[CFG_NAME_MAX], paint[CFG_NAME_MAX];
		double cap;

		TRY(json_item_obj(&o, "wells", it, i, &c, err));
		TRY(json_str(&c, "well", JSON_REQUIRED, name, sizeof(name), err));
		TRY(json_str(&c, "paint", JSON_REQUIRED, paint, sizeof(paint), err));
		TRY(json_num(&c, "capacity_ml", JSON_REQUIRED, 0, 1e6, &cap, err));
		if (strcmp(name, r->m.wells[i].name)) {
			rc = json_fail(&c, "well", err, BL_EINVAL, "'%s', the machine's well %zu is '%s'",
				       name, i + 1, r->m.wells[i].name);
			goto out;
		}
		/* What a well holds is between empty and the machine's capacity_ml. */
		TRY(json_num(&c, "left_ml", JSON_REQUIRED, 0.0, r->m.wells[i].capacity_ml + ML_EPS,
			     &st->wells_ml[i], err));
		TRY(json_end(&c, err));
		i++;
	}
	TRY(json_i32(&o, "well_low", JSON_OPTIONAL, 0, r->m.n_wells, &st->well_low, err));
	TRY(json_bool(&o, "mix_active", JSON_REQUIRED, &st->mix_active, err));
	{
		const cJSON *j = json_take(&o, "mix_job");

		if (!j) {
			rc = json_fail(&o, "mix_job", err, BL_EINVAL, "missing");
			goto out;
		}
		TRY(mix_job_from_json(&r->mixer.model, j, p, &st->job, err));
		j = json_take(&o, "learn");
		if (!j) {
			rc = json_fail(&o, "learn", err, BL_EINVAL, "missing");
			goto out;
		}
		TRY(mix_learn_from_json(&r->mixer.model, j, p, &st->learn, err));
		j = json_take(&o, "cost");
		if (!j) {
			rc = json_fail(&o, "cost", err, BL_EINVAL, "missing");
			goto out;
		}
		TRY(run_cost_from_json(j, &st->cost, err));
		j = json_take(&o, "brakes");
		if (!j) {
			rc = json_fail(&o, "brakes", err, BL_EINVAL, "missing");
			goto out;
		}
		TRY(run_brakes_from_json(j, &st->brakes, err));
	}
	{
		struct run_pending *pd = &st->pending;
		json_obj q;

		TRY(json_child(&o, "pending_dispense", JSON_REQUIRED, &c, err));
		TRY(json_bool(&c, "active", JSON_REQUIRED, &pd->active, err));
		TRY(json_bool(&c, "fresh", JSON_REQUIRED, &pd->fresh, err));
		TRY(json_str(&c, "cell", JSON_REQUIRED, pd->cell, sizeof(pd->cell), err));
		TRY(json_array(&c, "items", JSON_REQUIRED, MIX_RECIPE_MAX, &arr, &n, err));
		pd->n = (int)n;
		i = 0;
		cJSON_ArrayForEach(it, arr) {
			char paint[CFG_NAME_MAX];

			TRY(json_item_obj(&c, "items", it, i, &q, err));
			TRY(json_str(&q, "paint", JSON_REQUIRED, paint, sizeof(paint), err));
			pd->paint[i] = mix_model_find(&r->mixer.model, paint);
			if (pd->paint[i] < 0) {
				rc = json_fail(&q, "paint", err, BL_EINVAL, "unknown paint '%s'", paint);
				goto out;
			}
			TRY(json_i32(&q, "units", JSON_REQUIRED, 1, ARM_MAX_UNITS, &pd->units[i], err));
			TRY(json_num(&q, "action_id", JSON_REQUIRED, 0, 1e15, &v, err));
			pd->action_id[i] = (long)v;
			TRY(json_bool(&q, "done", JSON_REQUIRED, &pd->done[i], err));
			TRY(json_end(&q, err));
			pd->applied_units[pd->paint[i]] += pd->units[i];
			i++;
		}
		TRY(json_end(&c, err));
	}
	TRY(json_array(&o, "canvas_history", JSON_REQUIRED, RUN_MAX_HISTORY, &arr, &n, err));
	st->n_hist = (int)n;
	i = 0;
	cJSON_ArrayForEach(it, arr) {
		struct run_hist *h = &st->hist[i];

		TRY(json_item_obj(&o, "canvas_history", it, i, &c, err));
		TRY(json_i32(&c, "round", JSON_REQUIRED, 0, 1000, &h->round, err));
		TRY(json_i32(&c, "subtask", JSON_REQUIRED, 0, 10000000, &h->subtask, err));
		TRY(json_num(&c, "mean_de00", JSON_REQUIRED, 0, 1000, &h->mean_de00, err));
		TRY(json_num(&c, "p95_de00", JSON_REQUIRED, 0, 1000, &h->p95_de00, err));
		TRY(json_num(&c, "expected_de00", JSON_REQUIRED, -1, 1000, &h->expected_de00, err));
		TRY(json_num(&c, "t_s", JSON_REQUIRED, 0, 1e12, &h->t_s, err));
		TRY(json_end(&c, err));
		i++;
	}
	TRY(json_array(&o, "deferred", JSON_REQUIRED, RUN_MAX_DEFERRED, &arr, &n, err));
	st->n_deferred = (int)n;
	i = 0;
	cJSON_ArrayForEach(it, arr) {
		struct run_deferred *d = &st->deferred[i];

		TRY(json_item_obj(&o, "deferred", it, i, &c, err));
		TRY(json_i32(&c, "round", JSON_REQUIRED, 0, 1000, &d->round, err));
		TRY(json_i32(&c, "subtask", JSON_REQUIRED, 0, 10000000, &d->subtask, err));
		TRY(json_str(&c, "request", JSON_REQUIRED, d->request, sizeof(d->request), err));
		TRY(json_str(&c, "why", JSON_REQUIRED, d->why, sizeof(d->why), err));
		TRY(json_end(&c, err));
		i++;
	}
	/* The engine's own ids start at RUN_ACTION_ID_BASE (the plan's are below). */
	TRY(json_num(&o, "next_action_id", JSON_REQUIRED, RUN_ACTION_ID_BASE, 1e15, &v, err));
	st->next_action_id = (long)v;
	TRY(json_num(&o, "strokes_total", JSON_REQUIRED, 0, 1e12, &v, err));
	st->strokes_total = (long)v;
	TRY(json_num(&o, "strokes_done", JSON_REQUIRED, 0, (double)st->strokes_total, &v, err));
	st->strokes_done = (long)v;
	TRY(json_num(&o, "actions_done", JSON_REQUIRED, 0, 1e12, &v, err));
	st->actions_done = (long)v;
	TRY(json_num(&o, "wall_s", JSON_REQUIRED, 0, 1e12, &st->wall_s, err));
	TRY(json_num(&o, "clock_ns", JSON_REQUIRED, -1e18, 1e18, &v, err));
	st->clock_ns = (int64_t)v;
	TRY(json_bool(&o, "open_loop", JSON_REQUIRED, &st->open_loop, err));
	TRY(json_bool(&o, "accept_nearest", JSON_REQUIRED, &st->accept_nearest, err));
	TRY(json_bool(&o, "calibrated", JSON_REQUIRED, &st->calibrated, err));
	TRY(json_bool(&o, "canvas_from_file", JSON_REQUIRED, &st->canvas_from_file, err));
	TRY(json_num(&o, "final_mean_de00", JSON_REQUIRED, -1, 1000, &st->final_mean_de00, err));
	TRY(json_num(&o, "final_p95_de00", JSON_REQUIRED, -1, 1000, &st->final_p95_de00, err));
	TRY(json_bool(&o, "final_verified", JSON_REQUIRED, &st->final_verified, err));
	TRY(json_end(&o, err));
	rc = 0;
out:
	cJSON_Delete(root);
	return rc < 0 ? rc : 0;
}

/* ---- STATUS.md ---- */

static const char *sub_what(const struct plan *p, size_t i, char *buf, size_t n)
{
	const struct plan_subtask *s = &p->subtasks[i];

	run_kind_of(s->type)->what(p, s, buf, n);
	return buf;
}

/* The colours the machine file's rule accepted, so a person sees in the morning what was decided. */
static void status_accepted_within(strbuf *sb, const struct run *r)
{
	const struct run_state *st = &r->st;
	int n = 0;

	for (int c = 0; c < st->n_colours; c++) {
		const struct run_colour *rc2 = &st->colours[c];
		const color_lab *t = &r->plan.colours[c].lab;

		if (!rc2->accepted_within)
			continue;
		if (!n++)
			sb_printf(sb, "\n## Accepted without a person (unattended.accept_within_de00 %g)\n\n"
				      "| colour | target lab | reached lab | CIEDE2000 |\n|---|---|---|---|\n",
				  r->m.unattended.accept_within_de00);
		sb_printf(sb, "| %s | %.1f %.1f %.1f | %.1f %.1f %.1f | %.2f |\n",
			  r->plan.colours[c].name, t->L, t->a, t->b, rc2->measured.L, rc2->measured.a,
			  rc2->measured.b, rc2->measured_de00);
	}
}

int run_status_write(struct run *r, bl_err *err)
{
	const struct run_state *st = &r->st;
	const struct plan *p = run_plan(r);
	strbuf sb;
	char path[RUN_PATH_MAX], buf[256], name[32];
	size_t done = 0, skipped = 0;
	int rc;

	sb_init(&sb);
	sb_printf(&sb, "# brushloop run: %s\n\n", r->dir);
	sb_printf(&sb, "- **state**: %s%s%s\n", st->state, st->reason[0] ? ": " : "", st->reason);
	if (st->brake[0])
		sb_printf(&sb, "- **brake**: %s\n", st->brake);
	sb_printf(&sb, "- **target**: %s (%s)\n", r->plan.target_file, r->plan.target_hash);
	sb_printf(&sb, "- **machine**: %s (arm %s, camera %s)%s\n", r->m.name,
		      machine_arm_backend_names[r->m.arm_backend],
		      machine_cam_backend_names[r->m.camera.backend],
		      st->open_loop ? ", open loop: no verification, no correction" : "");
	if (st->calibrated)
		sb_printf(&sb, "- **calibration**: camera profile %s; %s%s; canvas from %s\n",
			      r->m.calibration.camera_profile,
			      r->m.calibration.light_map[0] ? "light map " : "no light map (the profile "
			      "holds where the chart lay)", r->m.calibration.light_map,
			      st->canvas_from_file ? "calibration.canvas" : "the corner markers");
	else
		sb_printf(&sb, "- **calibration**: NONE. This run is uncalibrated: colours are "
			      "measured as if the camera were sRGB (no calibration.camera_profile in "
			      "the machine file), so every verdict is only as good as that guess.%s\n",
			      st->canvas_from_file ? "" : " The canvas is located by its corner markers.");
	if (r->lamp)
		sb_printf(&sb, "- **lamp**: the light in the last frame is %.3f, %.3f, %.3f (R, G, B) of the "
			      "run's first, from %d points of bare board; divided out of every frame\n",
			      r->lamp_now[0], r->lamp_now[1], r->lamp_now[2], r->lamp->n);
	else if (r->lamp_off)
		sb_printf(&sb, "- **lamp**: not followed (%s): the profile holds only while the light "
			      "is as it was when it was made\n", r->m.calibration.follow_lamp ?
			      "too little bare board in view; journal: lamp_reference" :
			      "calibration.follow_lamp is false");
	for (size_t i = 0; i < st->n_sub; i++) {
		done += st->sub[i].status == RUN_SUB_DONE;
		skipped += st->sub[i].status == RUN_SUB_SKIPPED;
	}
	sb_printf(&sb, "- **progress**: %s, subtask %zu of %zu done", st->round ? "correction round" : "the plan",
		      done, st->n_sub);
	if (skipped)
		sb_printf(&sb, " (%zu skipped)", skipped);
	sb_printf(&sb, "; strokes %ld of %ld; arm actions %ld\n", st->strokes_done, st->strokes_total,
		      st->actions_done);
	if (st->round)
		sb_printf(&sb, "  (correction round %d of at most %d)\n", st->round,
			      r->m.brakes.correction_rounds);
	if (st->n_hist) {
		const struct run_hist *h = &st->hist[st->n_hist - 1];

		sb_printf(&sb, "- **canvas** (last observation, against the target): mean "
			      "CIEDE2000 %.2f, 95th percentile %.2f\n", h->mean_de00, h->p95_de00);
	}
	if (st->final_mean_de00 >= 0)
		sb_printf(&sb, "- **final canvas**: mean CIEDE2000 %.2f, 95th percentile %.2f "
			      "(%s); image: final-canvas.png beside target%s\n",
			      st->final_mean_de00, st->final_p95_de00,
			      st->final_verified ? "verified against its prediction" : "not verified",
			      strrchr(r->target_copy, '.') ? strrchr(r->target_copy, '.') : "");
	sb_printf(&sb, "- **cost**: arm %.0f s, %ld verifications, %ld planner calls (%.1f s), paint "
		      "%.2f ml: %.2f %s (budget %.2f)\n",
		      st->cost.arm_s, st->cost.verifications, st->cost.planner_calls, st->cost.planner_s,
		      st->cost.paint_ml, run_cost_total(&st->cost, &r->m.costs), r->m.costs.currency,
		      r->m.brakes.cost_max);
	{
		double wasted = 0.0;

		for (int c = 0; c < st->n_colours; c++)
			wasted += st->colours[c].wasted_ml;
		sb_printf(&sb, "- **paint wasted**: %.2f ml left in mixing cells discarded for a clean "
			      "one\n", wasted);
	}
	sb_printf(&sb, "- **wall time**: %.0f s over every process of the run\n\n", st->wall_s);

	sb_printf(&sb, "## Waiting for the operator\n\n");
	if (!st->n_deferred && !st->well_low) {
		int any = 0;

		for (int c = 0; c < st->n_colours; c++)
			any |= st->colours[c].escalated && !st->colours[c].accepted;
		if (!any)
			sb_printf(&sb, "Nothing.\n");
	}
	if (st->well_low > 0 && st->well_low <= r->m.n_wells) {
		int w = st->well_low - 1;

		sb_printf(&sb, "- well %s (%s) is nearly empty: about %.1f ml of %.1f ml left. Refill it, "
			      "then `brushloop resume %s --refilled %s`.\n", r->m.wells[w].name,
			      run_well_paint(r, w), fmax(st->wells_ml[w], 0.0), r->m.wells[w].capacity_ml,
			      r->dir, r->m.wells[w].name);
	}
	for (int i = 0; i < st->n_deferred; i++)
		sb_printf(&sb, "- request %s (subtask %d of round %d): %s. Answer with `brushloop "
			      "approve %s %s` (or `--deny`), then `brushloop resume %s`.\n",
			      st->deferred[i].request, st->deferred[i].subtask, st->deferred[i].round,
			      st->deferred[i].why, r->dir, st->deferred[i].request, r->dir);
	for (int c = 0; c < st->n_colours; c++)
		if (st->colours[c].escalated && !st->colours[c].accepted) {
			const char *n = r->plan.colours[c].name;
			const color_lab *w = &r->plan.colours[c].lab;

			sb_printf(&sb, "- colour %s (lab %.1f %.1f %.1f) could not be mixed within %.1f "
				      "CIEDE2000 (best measured %.2f, lab %.1f %.1f %.1f): accept the "
				      "nearest with `brushloop resume %s --accept-mix %s`, or name another "
				      "colour to mix in its place with `brushloop resume %s --substitute "
				      "%s=lab:L,a,b` (or `%s=c1`, as colour c1); its strokes wait.\n",
				      n, w->L, w->a, w->b, r->m.tolerances.mix_de00,
				      st->colours[c].measured_de00, st->colours[c].measured.L,
				      st->colours[c].measured.a, st->colours[c].measured.b, r->dir, n,
				      r->dir, n, n);
		}

	status_accepted_within(&sb, r);
	sb_printf(&sb, "\n## Subtasks (%s)\n\n| subtask | what | status | attempts | "
		      "verdict CIEDE2000 | note |\n|---|---|---|---|---|---|\n",
		      st->round ? "correction plan" : "plan.json");
	for (size_t i = 0; i < st->n_sub && i < p->n_subtasks; i++) {
		const char *mark = i == st->next && !strcmp(st->state, "running") ? " (in progress)"
				   : i == st->next ? " (next)" : "";

		run_subtask_name(r, i, name, sizeof(name));
		sb_printf(&sb, "| %s | %s | %s%s | %d | ", name, sub_what(p, i, buf, sizeof(buf)),
			      run_sub_status_names[st->sub[i].status], mark, st->sub[i].attempts);
		if (st->sub[i].verdict_de00 >= 0)
			sb_printf(&sb, "%.2f", st->sub[i].verdict_de00);
		sb_printf(&sb, " | %s |\n", st->sub[i].note);
	}
	sb_printf(&sb, "\n## Colours\n\n| colour | cell | verified | measured CIEDE2000 | mixes "
		      "| attempts | cells | paint ml |\n|---|---|---|---|---|---|---|---|\n");
	for (int c = 0; c < st->n_colours; c++) {
		const struct run_colour *rc2 = &st->colours[c];

		sb_printf(&sb, "| %s | %s | %s | ", r->plan.colours[c].name,
			      rc2->cell[0] ? rc2->cell : "-",
			      rc2->accepted ? "accepted" : rc2->verified ? "yes" : "no");
		if (rc2->measured_de00 >= 0 && rc2->mixes)
			sb_printf(&sb, "%.2f", rc2->measured_de00);
		sb_printf(&sb, " | %d | %d | %d | %.2f |\n", rc2->mixes, rc2->attempts, rc2->cells,
			      rc2->dispensed_ml);
	}
	sb_printf(&sb, "\nEvery step is in journal.jsonl; the frames the verdicts rest on are in "
		      "frames/. `brushloop status %s` says the same as JSON.\n", r->dir);
	if (!sb.s) {
		sb_free(&sb);
		return bl_fail(err, BL_ENOMEM, "out of memory writing STATUS.md");
	}
	rc = run_path(r, "STATUS.md", path, sizeof(path), err);
	/*
	 * Renamed into place without fsyncs: it is made again from state.json
	 * (which is durable) at the next save, and a power loss that leaves it
	 * old or empty loses nothing; two fsyncs every two seconds did.
	 */
	if (rc == 0)
		rc = fs_write_replace(path, sb.s, sb.len, err);
	sb_free(&sb);
	return rc;
}

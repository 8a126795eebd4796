/* run_state.c: state.json: the run's state as JSON, saved atomically and read back strictly, key by key. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/prof.h"
#include "base/json.h"
#include "engine/run_int.h"

const char *const run_sub_status_names[] = { "pending", "running", "done", "failed",
					     "deferred", "skipped", NULL };
/* Where a run stands (state.json "state"): the engine writes no other. */
static const char *const run_state_names[] = { "running", "paused", "braked", "finished",
					       "failed", "safety_stop", NULL };
/* Slack for sums of dispensed millilitres printed and read back. */
#define ML_EPS 1e-6

void run_state_init(struct run_state *st)
{
	memset(st, 0, sizeof(*st));
	snprintf(st->state, sizeof(st->state), "running");
	run_brakes_init(&st->brakes);
	st->next_action_id = RUN_ACTION_ID_BASE;
	st->final_mean_de00 = st->final_p95_de00 = -1.0;
	st->final_pixel_de00 = st->final_scielab_1m = -1.0;
	st->final_mapped_de00 = st->final_mapped_scielab_1m = st->gamut_share = -1.0;
}

void run_wells_full(struct run *r)
{
	for (int i = 0; i < r->m.n_wells && i < CFG_MAX_WELLS; i++)
		r->st.wells_ml[i] = r->m.wells[i].capacity_ml;
	r->st.well_low = 0;
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

/* The run clock, s: virtual in the simulator; on hardware it goes on from the last saved state. */
double run_clock_s(const struct run *r)
{
	return clk_now_s(r->rig.clock) + r->clock_off_s;
}

static cJSON *wet_json(const struct run_state *st)
{
	cJSON *a = cJSON_CreateArray();

	for (int i = 0; a && i < st->n_wet; i++) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddNumberToObject(o, "colour", st->wet[i].colour);
		json_add_vec(o, "region_mm", st->wet[i].region_mm, 4);
		cJSON_AddNumberToObject(o, "t_s", st->wet[i].t_s);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

static int wet_from_json(const cJSON *node, struct run_state *st, bl_err *err)
{
	const cJSON *it;
	size_t i = 0;

	st->n_wet = 0;
	if (!cJSON_IsArray(node) || cJSON_GetArraySize(node) > RUN_MAX_WET)
		return bl_fail(err, BL_EINVAL, "state.json: wet: an array of at most %d strokes is needed",
			       RUN_MAX_WET);
	cJSON_ArrayForEach(it, node) {
		json_obj o;

		if (json_obj_open(it, "state.json", "wet[]", &o, err) ||
		    json_i32(&o, "colour", JSON_REQUIRED, 0, PLAN_MAX_COLOURS - 1, &st->wet[i].colour, err) ||
		    json_vec(&o, "region_mm", JSON_REQUIRED, 4, -1e6, 1e6, st->wet[i].region_mm, err) ||
		    json_num(&o, "t_s", JSON_REQUIRED, -1e12, 1e12, &st->wet[i].t_s, err) ||
		    json_end(&o, err))
			return err->code;
		i++;
	}
	st->n_wet = (int)i;
	return 0;
}

void run_retry_clear(struct run_retry *t)
{
	free(t->idx);
	memset(t, 0, sizeof(*t));
}

static cJSON *retry_json(const struct run_retry *t)
{
	cJSON *o = cJSON_CreateObject(), *a;

	if (!o)
		return NULL;
	cJSON_AddBoolToObject(o, "active", t->active);
	cJSON_AddNumberToObject(o, "subtask", (double)t->sub);
	cJSON_AddNumberToObject(o, "attempt", t->attempt);
	cJSON_AddNumberToObject(o, "id0", (double)t->id0);
	a = cJSON_AddArrayToObject(o, "actions");
	for (int i = 0; i < t->n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(t->idx[i]));
	return o;
}

static int retry_from_json(const cJSON *node, struct run_retry *t, bl_err *err)
{
	const cJSON *arr, *it;
	json_obj o;
	double v;
	size_t n, i = 0;

	run_retry_clear(t);
	if (json_obj_open(node, "state.json", "retry", &o, err) ||
	    json_bool(&o, "active", JSON_REQUIRED, &t->active, err) ||
	    json_num(&o, "subtask", JSON_REQUIRED, 0, 1e7, &v, err))
		return err->code;
	t->sub = (size_t)v;
	if (json_i32(&o, "attempt", JSON_REQUIRED, 0, 1000000, &t->attempt, err) ||
	    json_num(&o, "id0", JSON_REQUIRED, 0, ARM_MAX_ID, &v, err))
		return err->code;
	t->id0 = (long)v;
	if (json_array(&o, "actions", JSON_REQUIRED, 1000000, &arr, &n, err))
		return err->code;
	t->idx = calloc(n ? n : 1, sizeof(*t->idx));
	if (!t->idx)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	cJSON_ArrayForEach(it, arr) {
		if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > 1e7 ||
		    it->valuedouble != floor(it->valuedouble))
			return json_fail(&o, "actions", err, BL_EINVAL,
					 "item %zu is not an action index", i);
		t->idx[i++] = (int)it->valuedouble;
	}
	t->n = (int)n;
	return json_end(&o, err);
}

static cJSON *lab_json(const color_lab *c)
{
	const double v[3] = { c->L, c->a, c->b };

	return cJSON_CreateDoubleArray(v, 3);
}

static cJSON *colour_json(const struct run *r, int c)
{
	const struct run_colour *rc = &r->st.colours[c];
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
	return s;
}

cJSON *run_state_json(const struct run *r)
{
	const struct run_state *st = &r->st;
	cJSON *o = cJSON_CreateObject(), *a;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "kind", run_state_format.kind);
	cJSON_AddNumberToObject(o, "version", run_state_format.version);
	cJSON_AddStringToObject(o, "state", st->state);
	cJSON_AddStringToObject(o, "reason", st->reason);
	cJSON_AddStringToObject(o, "brake", st->brake);
	cJSON_AddNumberToObject(o, "round", st->round);
	cJSON_AddNumberToObject(o, "rounds_planned", st->rounds_planned);
	cJSON_AddNumberToObject(o, "next", (double)st->next);
	cJSON_AddBoolToObject(o, "batch_unknown", st->batch_unknown);
	cJSON_AddItemToObject(o, "retry", retry_json(&st->retry));
	cJSON_AddNumberToObject(o, "topup_ml", st->topup_ml);
	cJSON_AddBoolToObject(o, "corrections_over", st->corrections_over);
	cJSON_AddItemToObject(o, "wet", wet_json(st));
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
	for (int c = 0; c < st->n_colours; c++)
		cJSON_AddItemToArray(a, colour_json(r, c));
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
	{
		/* A disagreement of the second judge a person has not settled (docs/review.md). */
		const struct run_review_pending *pd = &st->review_pending;
		cJSON *s = cJSON_AddObjectToObject(o, "review_pending");

		cJSON_AddBoolToObject(s, "active", pd->active);
		cJSON_AddNumberToObject(s, "round", pd->round);
		cJSON_AddNumberToObject(s, "subtask", (double)pd->subtask);
		cJSON_AddStringToObject(s, "point", review_point_names[pd->point]);
		cJSON_AddStringToObject(s, "why", pd->why);
	}
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
	if (st->final_pixel_de00 >= 0) {
		cJSON_AddNumberToObject(o, "final_pixel_de00", st->final_pixel_de00);
		cJSON_AddNumberToObject(o, "final_scielab_1m", st->final_scielab_1m);
	}
	if (st->gamut_share >= 0) {
		cJSON_AddNumberToObject(o, "gamut_share", st->gamut_share);
		cJSON_AddNumberToObject(o, "final_mapped_de00", st->final_mapped_de00);
		cJSON_AddNumberToObject(o, "final_mapped_scielab_1m", st->final_mapped_scielab_1m);
	}
	return o;
}

/*
 * The state goes to the journal first, as what changed since the last save
 * (a state_saved line of edits: json_diff), then to state.json naming that
 * line and its digest. The journal alone can build every state saved; a
 * state.json put back, lost or from elsewhere is told by the line it names.
 */
static int state_save(struct run *r, bl_err *err);

int run_state_save(struct run *r, bl_err *err)
{
	enum prof_phase prev = prof_enter(PROF_STATE);
	int rc = state_save(r, err);

	prof_leave(prev);
	return rc;
}

static int state_save(struct run *r, bl_err *err)
{
	char p[RUN_PATH_MAX];
	cJSON *o, *edits, *d;
	long line = 0;
	int rc;

	/* Only while the directory is the one this process owns: moved or replaced, nothing is written. */
	if (r->lock_fd >= 0 && (rc = fs_lock_held(r->dir, r->lock_fd, err))) {
		r->j.lost = 1;
		return rc;
	}
	r->st.clock_ns = r->rig.clock ? (int64_t)(run_clock_s(r) * 1e9) : clk_now_ns(clk_monotonic());
	o = run_state_json(r);
	edits = o ? json_diff(r->saved_state, o) : NULL;
	d = cJSON_CreateObject();
	if (!o || !edits || !d) {
		cJSON_Delete(o);
		cJSON_Delete(edits);
		cJSON_Delete(d);
		return bl_fail(err, BL_ENOMEM, "out of memory saving the state");
	}
	if (cJSON_GetArraySize(edits) == 0) {
		/* Nothing changed since the last save: state.json already says it. */
		cJSON_Delete(o);
		cJSON_Delete(edits);
		cJSON_Delete(d);
		rc = 0;
		goto status;
	}
	cJSON_AddItemToObject(d, "edits", edits);
	if ((rc = journal_event(&r->j, NULL, "state_saved", d, &line, err))) {
		cJSON_Delete(o);
		return rc;
	}
	cJSON_AddStringToObject(o, "run", r->id);
	cJSON_AddNumberToObject(o, "journal_line", (double)line);
	cJSON_AddStringToObject(o, "journal_digest", r->j.last);
	rc = run_path(r, "state.json", p, sizeof(p), err);
	if (rc == 0)
		rc = json_write_file(p, o, err);
	cJSON_DeleteItemFromObjectCaseSensitive(o, "run");
	cJSON_DeleteItemFromObjectCaseSensitive(o, "journal_line");
	cJSON_DeleteItemFromObjectCaseSensitive(o, "journal_digest");
	cJSON_Delete(r->saved_state);
	r->saved_state = o; /* the journal holds it: the next save says what changed from it */
status:
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

#define TRY(x)                  \
	do {                    \
		int rc_ = (x);  \
		if (rc_ < 0)    \
			return rc_; \
	} while (0)

/* A nested object's node the state must have (its own reader checks it). */
static int take(json_obj *o, const char *key, const cJSON **out, bl_err *err)
{
	*out = json_take(o, key);
	return *out ? 0 : json_fail(o, key, err, BL_EINVAL, "missing");
}

/* What the file is, where the run stands, and the batch under way. */
static int load_head(json_obj *o, struct run_state *st, bl_err *err)
{
	const cJSON *j;
	double v;
	int k;

	TRY(json_str(o, "state", JSON_REQUIRED, st->state, sizeof(st->state), err));
	for (k = 0; run_state_names[k] && strcmp(run_state_names[k], st->state); k++)
		;
	if (!run_state_names[k])
		return json_fail(o, "state", err, BL_EINVAL, "'%s' is not a run state (running, "
				 "paused, braked, finished, failed, safety_stop)", st->state);
	TRY(json_str(o, "reason", JSON_REQUIRED, st->reason, sizeof(st->reason), err));
	TRY(json_str(o, "brake", JSON_REQUIRED, st->brake, sizeof(st->brake), err));
	TRY(json_i32(o, "round", JSON_REQUIRED, 0, 1000, &st->round, err));
	TRY(json_i32(o, "rounds_planned", JSON_REQUIRED, 0, 1000, &st->rounds_planned, err));
	TRY(json_num(o, "next", JSON_REQUIRED, 0, 1e7, &v, err));
	st->next = (size_t)v;
	TRY(json_bool(o, "batch_unknown", JSON_REQUIRED, &st->batch_unknown, err));
	TRY(json_num(o, "topup_ml", JSON_REQUIRED, 0.0, 1e6, &st->topup_ml, err));
	TRY(json_bool(o, "corrections_over", JSON_REQUIRED, &st->corrections_over, err));
	TRY(take(o, "retry", &j, err));
	TRY(retry_from_json(j, &st->retry, err));
	TRY(take(o, "wet", &j, err));
	return wet_from_json(j, st, err);
}

static int load_subtasks(json_obj *o, struct run_state *st, bl_err *err)
{
	const cJSON *arr, *it;
	size_t n, i = 0;
	json_obj c;
	double v;

	TRY(json_array(o, "subtasks", JSON_REQUIRED, PLAN_MAX_STROKES, &arr, &n, err));
	TRY(run_state_resize(st, n, err));
	cJSON_ArrayForEach(it, arr) {
		char name[32];
		struct run_sub *s = &st->sub[i];

		TRY(json_item_obj(o, "subtasks", it, i, &c, err));
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
	return 0;
}

/* Whether resume --emptied names cell (or says all). */
static int cell_emptied(const struct run *r, const char *cell)
{
	char buf[512], *save = NULL;

	if (!r->opt.emptied || !cell[0])
		return 0;
	snprintf(buf, sizeof(buf), "%s", r->opt.emptied);
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (!strcmp(t, "all") || !strcmp(t, cell))
			return 1;
	return 0;
}

/* One colour's entry; its cell must be one of the machine's, its recipe the mixing model's paints. */
static int load_colour(struct run *r, json_obj *c, struct run_colour *col, bl_err *err)
{
	char name[CFG_NAME_MAX];
	double v;
	int rc;

	TRY(json_str(c, "name", JSON_REQUIRED, name, sizeof(name), err));
	TRY(json_str(c, "cell", JSON_REQUIRED, col->cell, sizeof(col->cell), err));
	if (col->cell[0] && !machine_find_cell(&r->m, col->cell))
		return json_fail(c, "cell", err, BL_EINVAL, "'%s' is no mixing cell of the machine", col->cell);
	/* More than a cell may hold: the run cannot go on with it, but a person can empty it (--emptied). */
	TRY(json_num(c, "cell_ml", JSON_REQUIRED, 0.0, 1e6, &col->cell_ml, err));
	if (col->cell_ml > r->m.mixing.cell_max_ml + ML_EPS && !cell_emptied(r, col->cell))
		return json_fail(c, "cell_ml", err, BL_EINVAL, "%g is more than mixing.cell_max_ml %g: the "
				 "cell %s holds more than it may. Empty and clean it, then `brushloop "
				 "resume %s --emptied %s` (journaled)", col->cell_ml,
				 r->m.mixing.cell_max_ml, col->cell[0] ? col->cell : "(none)", r->dir_shown,
				 col->cell[0] ? col->cell : "CELL");
	TRY(json_bool(c, "verified", JSON_REQUIRED, &col->verified, err));
	TRY(json_bool(c, "accepted", JSON_REQUIRED, &col->accepted, err));
	TRY(json_bool(c, "accepted_within", JSON_REQUIRED, &col->accepted_within, err));
	TRY(mix_units_from_json(&r->mixer.model, c, "recipe", col->recipe, err));
	TRY(json_bool(c, "escalated", JSON_REQUIRED, &col->escalated, err));
	/* Present only when the operator substituted the colour. */
	rc = lab_read_opt(c, "substitute", JSON_OPTIONAL, &col->substitute, err);
	if (rc < 0)
		return rc;
	col->substituted = rc == 0;
	TRY(lab_read(c, "measured_lab", &col->measured, err));
	TRY(json_num(c, "measured_de00", JSON_REQUIRED, -1, 1000, &col->measured_de00, err));
	TRY(json_i32(c, "mixes", JSON_REQUIRED, 0, 1000000, &col->mixes, err));
	TRY(json_i32(c, "attempts", JSON_REQUIRED, 0, 1000000, &col->attempts, err));
	TRY(json_i32(c, "cells", JSON_REQUIRED, 0, 1000000, &col->cells, err));
	TRY(json_num(c, "dispensed_ml", JSON_REQUIRED, 0, 1e9, &col->dispensed_ml, err));
	TRY(json_num(c, "wasted_ml", JSON_REQUIRED, 0, 1e9, &col->wasted_ml, err));
	TRY(lab_read(c, "canvas_offset", &col->canvas_offset, err));
	TRY(json_num(c, "canvas_cells", JSON_REQUIRED, 0, 1e12, &v, err));
	col->canvas_cells = (long)v;
	TRY(json_num(c, "hide", JSON_REQUIRED, 0.0, 2.0, &col->hide, err));
	TRY(json_num(c, "hide_weight", JSON_REQUIRED, 0.0, 1e12, &col->hide_weight, err));
	TRY(json_num(c, "coat", JSON_REQUIRED, 0.0, 2.0, &col->coat, err));
	TRY(json_num(c, "coat_weight", JSON_REQUIRED, 0.0, 1e12, &col->coat_weight, err));
	return json_end(c, err);
}

static int load_colours(struct run *r, json_obj *o, bl_err *err)
{
	const cJSON *arr, *it;
	size_t n, i = 0;
	json_obj c;

	TRY(json_array(o, "colours", JSON_REQUIRED, PLAN_MAX_COLOURS, &arr, &n, err));
	r->st.n_colours = (int)n;
	cJSON_ArrayForEach(it, arr) {
		TRY(json_item_obj(o, "colours", it, i, &c, err));
		TRY(load_colour(r, &c, &r->st.colours[i], err));
		i++;
	}
	return 0;
}

/* The cells used and the wells, which must be the machine's, in its order. */
static int load_wells(struct run *r, json_obj *o, bl_err *err)
{
	struct run_state *st = &r->st;
	const cJSON *arr = NULL, *it;
	size_t n = 0, i = 0;
	json_obj c;
	double v;

	/* A bit per mixing cell: at most CFG_MAX_CELLS (32) of them. */
	TRY(json_num(o, "cells_used", JSON_REQUIRED, 0, ldexp(1.0, r->m.n_cells) - 1.0, &v, err));
	st->cells_used = (uint64_t)v;
	TRY(json_array(o, "wells", JSON_REQUIRED, CFG_MAX_WELLS, &arr, &n, err));
	if (n != (size_t)r->m.n_wells)
		return json_fail(o, "wells", err, BL_EINVAL, "%zu wells, the machine has %d", n, r->m.n_wells);
	cJSON_ArrayForEach(it, arr) {
		char name[CFG_NAME_MAX], paint[CFG_NAME_MAX];
		double cap;

		TRY(json_item_obj(o, "wells", it, i, &c, err));
		TRY(json_str(&c, "well", JSON_REQUIRED, name, sizeof(name), err));
		TRY(json_str(&c, "paint", JSON_REQUIRED, paint, sizeof(paint), err));
		TRY(json_num(&c, "capacity_ml", JSON_REQUIRED, 0, 1e6, &cap, err));
		if (strcmp(name, r->m.wells[i].name))
			return json_fail(&c, "well", err, BL_EINVAL, "'%s', the machine's well %zu is '%s'", name,
					 i + 1, r->m.wells[i].name);
		/* What a well holds is between empty and the machine's capacity_ml. */
		TRY(json_num(&c, "left_ml", JSON_REQUIRED, 0.0, r->m.wells[i].capacity_ml + ML_EPS,
			     &st->wells_ml[i], err));
		TRY(json_end(&c, err));
		i++;
	}
	return json_i32(o, "well_low", JSON_REQUIRED, 0, r->m.n_wells, &st->well_low, err);
}

/* The mix under way, what mixing learnt, the cost and the brakes: each read by its own reader. */
static int load_mixing(struct run *r, json_obj *o, const char *path, bl_err *err)
{
	struct run_state *st = &r->st;
	const cJSON *j;

	TRY(json_bool(o, "mix_active", JSON_REQUIRED, &st->mix_active, err));
	TRY(take(o, "mix_job", &j, err));
	TRY(mix_job_from_json(&r->mixer.model, j, path, &st->job, err));
	TRY(take(o, "learn", &j, err));
	TRY(mix_learn_from_json(&r->mixer.model, j, path, &st->learn, err));
	TRY(take(o, "cost", &j, err));
	TRY(run_cost_from_json(j, &st->cost, err));
	TRY(take(o, "brakes", &j, err));
	TRY(run_brakes_from_json(j, &st->brakes, err));
	{
		struct run_review_pending *pd = &st->review_pending;
		json_obj c;
		double v;

		TRY(json_child(o, "review_pending", JSON_REQUIRED, &c, err));
		TRY(json_bool(&c, "active", JSON_REQUIRED, &pd->active, err));
		TRY(json_i32(&c, "round", JSON_REQUIRED, 0, 1000, &pd->round, err));
		TRY(json_num(&c, "subtask", JSON_REQUIRED, 0, 1e9, &v, err));
		pd->subtask = (long)v;
		TRY(json_enum(&c, "point", JSON_REQUIRED, review_point_names, &pd->point, err));
		TRY(json_str(&c, "why", JSON_REQUIRED, pd->why, sizeof(pd->why), err));
		return json_end(&c, err);
	}
}

/* The dispense set under way: what was sent of it must be known before any is sent again. */
static int load_pending(struct run *r, json_obj *o, bl_err *err)
{
	struct run_pending *pd = &r->st.pending;
	const cJSON *arr, *it;
	size_t n, i = 0;
	json_obj c, q;
	double v;

	TRY(json_child(o, "pending_dispense", JSON_REQUIRED, &c, err));
	TRY(json_bool(&c, "active", JSON_REQUIRED, &pd->active, err));
	TRY(json_bool(&c, "fresh", JSON_REQUIRED, &pd->fresh, err));
	TRY(json_str(&c, "cell", JSON_REQUIRED, pd->cell, sizeof(pd->cell), err));
	TRY(json_array(&c, "items", JSON_REQUIRED, MIX_RECIPE_MAX, &arr, &n, err));
	pd->n = (int)n;
	cJSON_ArrayForEach(it, arr) {
		char paint[CFG_NAME_MAX];

		TRY(json_item_obj(&c, "items", it, i, &q, err));
		TRY(json_str(&q, "paint", JSON_REQUIRED, paint, sizeof(paint), err));
		pd->paint[i] = mix_model_find(&r->mixer.model, paint);
		if (pd->paint[i] < 0)
			return json_fail(&q, "paint", err, BL_EINVAL, "unknown paint '%s'", paint);
		TRY(json_i32(&q, "units", JSON_REQUIRED, 1, ARM_MAX_UNITS, &pd->units[i], err));
		TRY(json_num(&q, "action_id", JSON_REQUIRED, 0, ARM_MAX_ID, &v, err));
		pd->action_id[i] = (long)v;
		TRY(json_bool(&q, "done", JSON_REQUIRED, &pd->done[i], err));
		TRY(json_end(&q, err));
		pd->applied_units[pd->paint[i]] += pd->units[i];
		i++;
	}
	return json_end(&c, err);
}

/* The canvas's history and the subtasks waiting for an operator. */
static int load_lists(json_obj *o, struct run_state *st, bl_err *err)
{
	const cJSON *arr, *it;
	size_t n, i = 0;
	json_obj c;

	TRY(json_array(o, "canvas_history", JSON_REQUIRED, RUN_MAX_HISTORY, &arr, &n, err));
	st->n_hist = (int)n;
	cJSON_ArrayForEach(it, arr) {
		struct run_hist *h = &st->hist[i];

		TRY(json_item_obj(o, "canvas_history", it, i, &c, err));
		TRY(json_i32(&c, "round", JSON_REQUIRED, 0, 1000, &h->round, err));
		TRY(json_i32(&c, "subtask", JSON_REQUIRED, 0, 10000000, &h->subtask, err));
		TRY(json_num(&c, "mean_de00", JSON_REQUIRED, 0, 1000, &h->mean_de00, err));
		TRY(json_num(&c, "p95_de00", JSON_REQUIRED, 0, 1000, &h->p95_de00, err));
		TRY(json_num(&c, "expected_de00", JSON_REQUIRED, -1, 1000, &h->expected_de00, err));
		TRY(json_num(&c, "t_s", JSON_REQUIRED, 0, 1e12, &h->t_s, err));
		TRY(json_end(&c, err));
		i++;
	}
	TRY(json_array(o, "deferred", JSON_REQUIRED, RUN_MAX_DEFERRED, &arr, &n, err));
	st->n_deferred = (int)n;
	i = 0;
	cJSON_ArrayForEach(it, arr) {
		struct run_deferred *d = &st->deferred[i];

		TRY(json_item_obj(o, "deferred", it, i, &c, err));
		TRY(json_i32(&c, "round", JSON_REQUIRED, 0, 1000, &d->round, err));
		TRY(json_i32(&c, "subtask", JSON_REQUIRED, 0, 10000000, &d->subtask, err));
		TRY(json_str(&c, "request", JSON_REQUIRED, d->request, sizeof(d->request), err));
		TRY(json_str(&c, "why", JSON_REQUIRED, d->why, sizeof(d->why), err));
		TRY(json_end(&c, err));
		i++;
	}
	return 0;
}

/* The counters, the run's options and the final figures. */
static int load_tail(json_obj *o, struct run_state *st, bl_err *err)
{
	double v;

	/* The engine's own ids start at RUN_ACTION_ID_BASE (the plan's are below). */
	TRY(json_num(o, "next_action_id", JSON_REQUIRED, RUN_ACTION_ID_BASE, ARM_MAX_ID + 1.0, &v, err));
	st->next_action_id = (long)v;
	TRY(json_num(o, "strokes_total", JSON_REQUIRED, 0, 1e12, &v, err));
	st->strokes_total = (long)v;
	TRY(json_num(o, "strokes_done", JSON_REQUIRED, 0, (double)st->strokes_total, &v, err));
	st->strokes_done = (long)v;
	TRY(json_num(o, "actions_done", JSON_REQUIRED, 0, 1e12, &v, err));
	st->actions_done = (long)v;
	TRY(json_num(o, "wall_s", JSON_REQUIRED, 0, 1e12, &st->wall_s, err));
	TRY(json_num(o, "clock_ns", JSON_REQUIRED, -1e18, 1e18, &v, err));
	st->clock_ns = (int64_t)v;
	TRY(json_bool(o, "open_loop", JSON_REQUIRED, &st->open_loop, err));
	TRY(json_bool(o, "accept_nearest", JSON_REQUIRED, &st->accept_nearest, err));
	TRY(json_bool(o, "calibrated", JSON_REQUIRED, &st->calibrated, err));
	TRY(json_bool(o, "canvas_from_file", JSON_REQUIRED, &st->canvas_from_file, err));
	TRY(json_num(o, "final_mean_de00", JSON_REQUIRED, -1, 1000, &st->final_mean_de00, err));
	TRY(json_num(o, "final_p95_de00", JSON_REQUIRED, -1, 1000, &st->final_p95_de00, err));
	st->final_pixel_de00 = st->final_scielab_1m = -1.0;
	st->final_mapped_de00 = st->final_mapped_scielab_1m = st->gamut_share = -1.0;
	TRY(json_num(o, "final_pixel_de00", JSON_OPTIONAL, 0, 1000, &st->final_pixel_de00, err));
	TRY(json_num(o, "final_scielab_1m", JSON_OPTIONAL, 0, 1000, &st->final_scielab_1m, err));
	TRY(json_num(o, "gamut_share", JSON_OPTIONAL, 0, 1, &st->gamut_share, err));
	TRY(json_num(o, "final_mapped_de00", JSON_OPTIONAL, 0, 1000, &st->final_mapped_de00, err));
	TRY(json_num(o, "final_mapped_scielab_1m", JSON_OPTIONAL, 0, 1000, &st->final_mapped_scielab_1m, err));
	return json_bool(o, "final_verified", JSON_REQUIRED, &st->final_verified, err);
}

/*
 * Version 1 had no version of its own for what was added to it: a state
 * written before recipes were kept, coats learnt, wells counted or waste and
 * the planner's time priced lacks them. Version 2 has them all; a version 1
 * state gets what those brushloops assumed: no recipe kept (top-ups mix
 * afresh), no coat learnt (the colour's look places its corrections), every
 * well full and none low, nothing wasted, no planner time.
 */
static int state_v1_to_v2(cJSON *root, const char *file, void *ctx, bl_err *err)
{
	const struct run *r = ctx;
	cJSON *c, *w, *cost = cJSON_GetObjectItemCaseSensitive(root, "cost");
	int rc = 0;

	(void)file;
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(root, "colours")) {
		if (!cJSON_IsObject(c))
			continue; /* the reader names it */
		if ((rc = json_migrate_add(c, "accepted_within", cJSON_CreateFalse(), err)) ||
		    (rc = json_migrate_add(c, "recipe", cJSON_CreateObject(), err)) ||
		    (rc = json_migrate_add(c, "wasted_ml", cJSON_CreateNumber(0), err)) ||
		    (rc = json_migrate_add(c, "coat", cJSON_CreateNumber(0), err)) ||
		    (rc = json_migrate_add(c, "coat_weight", cJSON_CreateNumber(0), err)))
			return rc;
	}
	if (!cJSON_GetObjectItemCaseSensitive(root, "wells")) {
		cJSON *a = cJSON_CreateArray();

		for (int i = 0; a && i < r->m.n_wells; i++) {
			if (!(w = cJSON_CreateObject()) || !cJSON_AddItemToArray(a, w)) {
				cJSON_Delete(w);
				cJSON_Delete(a);
				a = NULL;
				break;
			}
			cJSON_AddStringToObject(w, "well", r->m.wells[i].name);
			cJSON_AddStringToObject(w, "paint", run_well_paint(r, i));
			cJSON_AddNumberToObject(w, "left_ml", r->m.wells[i].capacity_ml);
			cJSON_AddNumberToObject(w, "capacity_ml", r->m.wells[i].capacity_ml);
		}
		if ((rc = json_migrate_add(root, "wells", a, err)))
			return rc;
	}
	if ((rc = json_migrate_add(root, "well_low", cJSON_CreateNumber(0), err)))
		return rc;
	return cJSON_IsObject(cost) ? run_cost_v1_to_v2(cost, err) : 0;
}

/*
 * Version 3 names the run and the journal line the state reflects, counts
 * an external reviewer's calls and time in the cost and keeps a
 * disagreement of the second judge a person has not settled. A version 2
 * state is of a brushloop from before the journal was chained and before
 * the second judge: of no run (""), reflecting line 0 (none), no reviewer
 * asked, nothing pending.
 */
static int state_v2_to_v3(cJSON *root, const char *file, void *ctx, bl_err *err)
{
	cJSON *cost = cJSON_GetObjectItemCaseSensitive(root, "cost"), *pd = cJSON_CreateObject();
	int rc;

	(void)file;
	(void)ctx;
	cJSON_AddBoolToObject(pd, "active", 0);
	cJSON_AddNumberToObject(pd, "round", 0);
	cJSON_AddNumberToObject(pd, "subtask", 0);
	cJSON_AddStringToObject(pd, "point", review_point_names[REVIEW_AT_CHECKPOINT]);
	cJSON_AddStringToObject(pd, "why", "");
	if ((rc = json_migrate_add(root, "review_pending", pd, err)) ||
	    (rc = json_migrate_add(root, "run", cJSON_CreateString(""), err)) ||
	    (rc = json_migrate_add(root, "journal_line", cJSON_CreateNumber(0), err)) ||
	    (rc = json_migrate_add(root, "journal_digest", cJSON_CreateString(""), err)))
		return rc;
	return cJSON_IsObject(cost) ? run_cost_v2_to_v3(cost, err) : 0;
}

static const json_migrate_fn state_steps[] = { state_v1_to_v2, state_v2_to_v3 };
const struct json_format run_state_format = { "run_state", 3, 1, state_steps };

/* The run and journal line the state names (run_trust.c compares them with the journal). */
static int load_journal_keys(json_obj *o, bl_err *err)
{
	char run[RUN_ID_LEN + 16], dg[BL_DIGEST_HEX];
	double v;

	TRY(json_str(o, "run", JSON_REQUIRED, run, sizeof(run), err));
	TRY(json_num(o, "journal_line", JSON_REQUIRED, 0, 1e12, &v, err));
	return json_str(o, "journal_digest", JSON_REQUIRED, dg, sizeof(dg), err);
}

int run_state_load(struct run *r, bl_err *err)
{
	char p[RUN_PATH_MAX];
	cJSON *root = NULL;
	int rc;

	if ((rc = run_path(r, "state.json", p, sizeof(p), err)) || (rc = json_parse_file(p, &root, err)))
		return rc;
	rc = run_state_load_json(r, root, p, err);
	cJSON_Delete(root);
	return rc;
}

int run_state_load_json(struct run *r, cJSON *root, const char *p, bl_err *err)
{
	struct run_state *st = &r->st;
	json_obj o;
	int rc;

	run_state_free(st);
	run_state_init(st);
	/* In the file's order, so the first bad key is the one named. */
	if ((rc = json_format_open(root, p, &run_state_format, r, &o, err)) < 0 ||
	    (rc = load_head(&o, st, err)) < 0 ||
	    (rc = load_subtasks(&o, st, err)) < 0 || (rc = load_colours(r, &o, err)) < 0 ||
	    (rc = load_wells(r, &o, err)) < 0 || (rc = load_mixing(r, &o, p, err)) < 0 ||
	    (rc = load_pending(r, &o, err)) < 0 || (rc = load_lists(&o, st, err)) < 0 ||
	    (rc = load_tail(&o, st, err)) < 0 || (rc = load_journal_keys(&o, err)) < 0 ||
	    (rc = json_end(&o, err)) < 0)
		return rc;
	return 0;
}

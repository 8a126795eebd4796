/* report_read.c: what the report rests on: a run directory's files read and checked, its journal sorted into the report's lists. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fs.h"
#include "base/journal.h"
#include "base/json.h"
#include "base/log.h"
#include "engine/run.h"
#include "plan/plan_image.h"
#include "report/report_int.h"
#include "safety/operator.h"
#include "vision/image.h"

double report_num(const cJSON *o, const char *key, double dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

const char *report_str(const cJSON *o, const char *key)
{
	const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));

	return s ? s : "";
}

/* DIR/name into out; a file the report needs that is not there is bad input naming it. */
static int need(const struct report *r, const char *name, char *out, size_t n, bl_err *err)
{
	BL_TRY(fs_join(out, n, r->dir, name, err));
	if (access(out, R_OK) != 0)
		return bl_fail(err, BL_EINVAL, "%s: no %s: not a run directory, or the file was lost",
			       r->dir, name);
	return 0;
}

/* The last span of subtask name (a subtask started again after a crash has two). */
static cJSON *span_of(const struct report *r, const char *name)
{
	for (int i = cJSON_GetArraySize(r->spans) - 1; i >= 0; i--) {
		cJSON *s = cJSON_GetArrayItem(r->spans, i);

		if (!strcmp(report_str(s, "subtask"), name))
			return s;
	}
	return NULL;
}

/* The report's entry of a colour of the plan (NULL: the plan has none of that name). */
static cJSON *colour_of(const struct report *r, const char *colour)
{
	cJSON *c;

	cJSON_ArrayForEach(c, r->mixes)
		if (!strcmp(report_str(c, "colour"), colour))
			return c;
	return NULL;
}

static cJSON *mixes_of(const struct report *r, const char *colour)
{
	return cJSON_GetObjectItem(colour_of(r, colour), "attempts");
}

/* Who accepted a colour short of its tolerance, by the event that says so. */
static const struct {
	const char *event, *by;
} accepted_by[] = {
	{ "mix_accepted", "accepted by the operator" },
	{ "mix_accepted_nearest", "accepted as the nearest the loop reached (--accept-nearest)" },
	{ "mix_accepted_within", "accepted by the machine's rule unattended.accept_within_de00" },
};

static void note_accepted(struct report *r, const char *event, const cJSON *ev, const cJSON *d)
{
	for (size_t i = 0; i < sizeof(accepted_by) / sizeof(accepted_by[0]); i++) {
		const char *colour;
		cJSON *c;

		if (strcmp(accepted_by[i].event, event))
			continue;
		/* mix_accepted's data is the colour; the rule names it; --accept-nearest's is its subtask's. */
		colour = cJSON_IsString(d) ? d->valuestring
			 : *report_str(d, "colour") ? report_str(d, "colour")
						    : report_str(span_of(r, report_str(ev, "subtask")), "colour");
		if ((c = colour_of(r, colour))) {
			char by[160];

			snprintf(by, sizeof(by), "%s", accepted_by[i].by);
			if (report_num(d, "accept_within_de00", -1) >= 0)
				snprintf(by + strlen(by), sizeof(by) - strlen(by), " %g (measured %.2f)",
					 report_num(d, "accept_within_de00", -1), report_num(d, "de00", -1));
			cJSON_DeleteItemFromObject(c, "accepted_by");
			cJSON_AddStringToObject(c, "accepted_by", by);
		}
	}
}

/* A frame a verdict names must be there: the page shows it and draws from it. */
static int frame_there(const struct report *r, const char *frame, long seq, bl_err *err)
{
	char p[REPORT_PATH_MAX];

	if (!*frame || strchr(frame, '/') || frame[0] == '.')
		return bl_fail(err, BL_EINVAL, "%s/journal.jsonl: seq %ld names the frame '%s', not a "
			       "file of frames/", r->dir, seq, frame);
	snprintf(p, sizeof(p), "%s/frames/%s", r->dir, frame);
	if (access(p, R_OK) != 0)
		return bl_fail(err, BL_EINVAL, "%s/frames/%s: missing (the journal's seq %ld rests on it)",
			       r->dir, frame, seq);
	return 0;
}

/* What one line of the operator's business says, from the keys its event has. */
struct note_kind {
	const char *event;
	const char *kind;        /* the column the page sorts it under */
	const char *keys[6];     /* data keys worth saying, in order */
};

static const struct note_kind note_kinds[] = {
	{ "deferred", "deferral", { "request" } },
	{ "mix_escalated", "deferral", { "reason", "measured_de00" } },
	{ "well_low", "deferral", { "well", "paint", "left_ml", "need_ml", "reserve_ml" } },
	{ "mix_accepted_nearest", "accepted colour", { "reason", "measured_de00" } },
	{ "mix_accepted", "accepted colour", { 0 } },
	{ "mix_accepted_within", "accepted colour", { "colour", "de00", "accept_within_de00" } },
	{ "mix_substituted", "accepted colour", { "colour", "as", "predicted_de00" } },
	{ "brake", "brake", { "brake", "reason" } },
	{ "review_disagreed", "second judge", { "point", "why", "frame" } },
	{ "review_overruled", "second judge", { "point", "why", "overruled_by", "frame" } },
	{ "corrections_stopped", "brake", { "round", "why", "best_before_de00", "best_after_de00" } },
	{ "request", "operator question", { "request" } },
	{ "answer", "operator answer", { "request", "answer", "by", "outcome" } },
	{ "grant", "operator answer", { "scope", "by", "until", "reason" } },
	{ "refilled", "operator answer", { "well", "paint", "counted_ml", "now_ml" } },
	{ "resume", "run", { "was", "reason" } },
	{ "process_end", "run", { "state", "reason" } },
	{ "fault", "safety", { "message", "reason" } },
	{ "stop", "safety", { "message", "reason" } },
	{ "hold", "safety", { "message", "reason" } },
	{ "camera_error", "camera or arm", { 0 } },
	{ "arm_error", "camera or arm", { 0 } },
};

static void say_value(strbuf *sb, const cJSON *v)
{
	if (cJSON_IsString(v))
		sb_printf(sb, "%s", v->valuestring);
	else if (cJSON_IsNumber(v))
		sb_printf(sb, "%.4g", v->valuedouble);
	else if (cJSON_IsBool(v))
		sb_printf(sb, "%s", cJSON_IsTrue(v) ? "yes" : "no");
}

static int add_note(struct report *r, const struct note_kind *k, const cJSON *ev, double t_s)
{
	const cJSON *d = cJSON_GetObjectItem(ev, "data");
	cJSON *n = cJSON_CreateObject();
	strbuf sb;

	sb_init(&sb);
	if (cJSON_IsString(d))
		say_value(&sb, d);
	for (int i = 0; i < 6 && k->keys[i] && cJSON_IsObject(d); i++) {
		const cJSON *v = cJSON_GetObjectItem(d, k->keys[i]);

		if (!v || cJSON_IsNull(v))
			continue;
		sb_printf(&sb, "%s%s ", sb.len ? "; " : "", k->keys[i]);
		say_value(&sb, v);
	}
	/* A gate question says why it asks in its decision's findings. */
	if (!strcmp(k->event, "request")) {
		const cJSON *f, *dec = cJSON_GetObjectItem(d, "decision");

		cJSON_ArrayForEach(f, cJSON_GetObjectItem(dec, "findings"))
			sb_printf(&sb, "; %s", report_str(f, "message"));
	}
	if (!n || !sb.s) {
		cJSON_Delete(n);
		sb_free(&sb);
		return BL_ENOMEM;
	}
	cJSON_AddNumberToObject(n, "seq", report_num(ev, "seq", 0));
	cJSON_AddNumberToObject(n, "t_s", t_s);
	cJSON_AddStringToObject(n, "subtask", report_str(ev, "subtask"));
	cJSON_AddStringToObject(n, "event", k->event);
	cJSON_AddStringToObject(n, "kind", k->kind);
	cJSON_AddStringToObject(n, "text", sb.s);
	sb_free(&sb);
	cJSON_AddItemToArray(r->notes, n);
	return 0;
}

struct reading {
	struct report *r;
	bl_err *err;
	int rc;
};

static int on_subtask_start(struct report *r, const cJSON *ev, const cJSON *d, double t)
{
	cJSON *s = cJSON_CreateObject();

	cJSON_AddStringToObject(s, "subtask", report_str(ev, "subtask"));
	cJSON_AddStringToObject(s, "type", report_str(d, "type"));
	cJSON_AddStringToObject(s, "colour", report_str(d, "colour"));
	cJSON_AddNumberToObject(s, "round", report_num(d, "round", 0));
	cJSON_AddNumberToObject(s, "t0", t);
	cJSON_AddNumberToObject(s, "t1", t);
	cJSON_AddStringToObject(s, "status", "running");
	cJSON_AddItemToArray(r->spans, s);
	return 0;
}

static int on_subtask_end(struct report *r, const cJSON *ev, const cJSON *d, double t)
{
	cJSON *s = span_of(r, report_str(ev, "subtask"));

	if (!s)
		return 0; /* its start is in a torn line */
	cJSON_ReplaceItemInObject(s, "t1", cJSON_CreateNumber(t));
	cJSON_ReplaceItemInObject(s, "status", cJSON_CreateString(report_str(d, "status")));
	cJSON_AddNumberToObject(s, "verdict", report_num(d, "verdict_de00", -1));
	return 0;
}

static int on_mix_measured(struct report *r, const cJSON *ev, const cJSON *d, double t)
{
	const cJSON *s = span_of(r, report_str(ev, "subtask"));
	cJSON *list = mixes_of(r, report_str(s, "colour")), *a;

	if (!list)
		return 0; /* a colour the plan does not have: nothing to draw it under */
	a = cJSON_Duplicate(d, 1);
	if (!cJSON_IsObject(a)) {
		cJSON_Delete(a);
		return 0;
	}
	cJSON_AddStringToObject(a, "subtask", report_str(ev, "subtask"));
	cJSON_AddNumberToObject(a, "seq", report_num(ev, "seq", 0));
	cJSON_AddNumberToObject(a, "t_s", t);
	cJSON_AddItemToArray(list, a);
	return 0;
}

/* An observation of the whole canvas: the blank one, a checkpoint, the final one. */
static void add_obs(struct report *r, const char *what, const cJSON *ev, const cJSON *d, double t)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "what", what);
	cJSON_AddStringToObject(o, "subtask", report_str(ev, "subtask"));
	cJSON_AddNumberToObject(o, "seq", report_num(ev, "seq", 0));
	cJSON_AddNumberToObject(o, "t_s", t);
	cJSON_AddStringToObject(o, "frame", report_str(d, "frame"));
	cJSON_AddNumberToObject(o, "mean", report_num(d, !strcmp(what, "final") ? "mean_de00"
								 : "canvas_mean_de00", -1));
	cJSON_AddNumberToObject(o, "p95", report_num(d, !strcmp(what, "final") ? "p95_de00"
								 : "canvas_p95_de00", -1));
	cJSON_AddNumberToObject(o, "predicted", report_num(d, "predicted_mean_de00", -1));
	cJSON_AddStringToObject(o, "verdict", !strcmp(what, "final")
					      ? (cJSON_IsTrue(cJSON_GetObjectItem(d, "verified"))
							 ? "verified" : "not verified")
					      : report_str(d, "verdict"));
	cJSON_AddItemToArray(r->obs, o);
	cJSON_AddItemReferenceToArray(r->looks, o);
}

static int on_blank(struct report *r, const cJSON *ev, const cJSON *d, double t)
{
	add_obs(r, "blank", ev, d, t);
	return 0;
}

static int on_checkpoint(struct report *r, const cJSON *ev, const cJSON *d, double t)
{
	add_obs(r, "checkpoint", ev, d, t);
	return 0;
}

static int on_finished(struct report *r, const cJSON *ev, const cJSON *d, double t)
{
	add_obs(r, "final", ev, d, t);
	return 0;
}

/* A paint batch's verification looked at the whole canvas too: a point of the chart, and the latest canvas while the run runs. */
static int on_verified(struct report *r, const cJSON *ev, const cJSON *d, double t)
{
	cJSON *o;

	if (report_num(d, "canvas_mean_de00", -1) < 0 || !*report_str(d, "frame"))
		return 0;
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "what", "paint batch");
	cJSON_AddStringToObject(o, "subtask", report_str(ev, "subtask"));
	cJSON_AddNumberToObject(o, "seq", report_num(ev, "seq", 0));
	cJSON_AddNumberToObject(o, "t_s", t);
	cJSON_AddStringToObject(o, "frame", report_str(d, "frame"));
	cJSON_AddNumberToObject(o, "mean", report_num(d, "canvas_mean_de00", -1));
	cJSON_AddNumberToObject(o, "p95", -1);
	cJSON_AddItemToArray(r->looks, o);
	return 0;
}

/* The engine's events the report reads besides the operator's business, by name. */
static const struct {
	const char *event;
	int (*fn)(struct report *r, const cJSON *ev, const cJSON *d, double t_s);
	int frame; /* its data names a frame the page shows (2: when it names one) */
} readers[] = {
	{ "subtask_start", on_subtask_start, 0 },
	{ "subtask_end", on_subtask_end, 0 },
	{ "mix_measured", on_mix_measured, 1 },
	{ "blank_canvas", on_blank, 1 },
	{ "checkpoint", on_checkpoint, 1 },
	{ "finished", on_finished, 1 },
	{ "verified", on_verified, 2 },
};

static int on_event(const cJSON *ev, void *ctx)
{
	struct reading *x = ctx;
	struct report *r = x->r;
	const char *name = report_str(ev, "event");
	const cJSON *d = cJSON_GetObjectItem(ev, "data");
	double t = report_num(ev, "mono_ns", 0) * 1e-9;

	r->events++;
	r->reviews += !strcmp(name, "review") || !strcmp(name, "review_disagreed") || !strcmp(name, "review_overruled");
	r->review_disagreed += !strcmp(name, "review_disagreed");
	r->review_overruled += !strcmp(name, "review_overruled");
	if (t > r->t_end_s)
		r->t_end_s = t;
	for (size_t i = 0; i < sizeof(readers) / sizeof(readers[0]); i++) {
		if (strcmp(readers[i].event, name))
			continue;
		if ((readers[i].frame == 1 || (readers[i].frame == 2 && *report_str(d, "frame"))) &&
		    (x->rc = frame_there(r, report_str(d, "frame"), (long)report_num(ev, "seq", 0),
					 x->err)))
			return 1;
		x->rc = readers[i].fn(r, ev, d, t);
		return x->rc != 0;
	}
	note_accepted(r, name, ev, d);
	if (!strcmp(name, "refilled")) {
		const char *w = report_str(d, "well");
		double add = report_num(d, "now_ml", 0) - report_num(d, "counted_ml", 0);
		cJSON *had = cJSON_GetObjectItem(r->refills, w);

		if (had)
			cJSON_SetNumberValue(had, had->valuedouble + add);
		else
			cJSON_AddNumberToObject(r->refills, w, add);
	}
	for (size_t i = 0; i < sizeof(note_kinds) / sizeof(note_kinds[0]); i++)
		if (!strcmp(note_kinds[i].event, name)) {
			x->rc = add_note(r, &note_kinds[i], ev, t);
			if (x->rc)
				bl_fail(x->err, x->rc, "out of memory reading the journal");
			return x->rc != 0;
		}
	return 0;
}

/*
 * The run's expected cost and paint as `brushloop estimate` gives them for
 * its own target, machine, palette and options: planned once (a second or so
 * at 300 strokes) and kept in report/estimate.json, as the inputs never change.
 */
static int load_estimate(struct report *r, bl_err *err)
{
	char cache[REPORT_PATH_MAX], tp[REPORT_PATH_MAX], mp[REPORT_PATH_MAX], pp[REPORT_PATH_MAX];
	struct run_options o;
	int64_t t0;

	snprintf(cache, sizeof(cache), "%s/" REPORT_DIR "/estimate.json", r->dir);
	if (access(cache, F_OK) == 0 && json_parse_file(cache, &r->estimate, NULL) == 0)
		return 0;
	BL_TRY(need(r, r->target, tp, sizeof(tp), err));
	BL_TRY(need(r, "machine.json", mp, sizeof(mp), err));
	BL_TRY(need(r, "palette.json", pp, sizeof(pp), err));
	run_options_init(&o);
	o.target = tp;
	o.machine_path = mp;
	o.palette_path = pp;
	o.open_loop = cJSON_IsTrue(cJSON_GetObjectItem(r->run, "open_loop"));
	/* The strokes the run's budget bought, when it was sized: the plan it painted. */
	o.max_strokes = (int)report_num(r->run, "budget_strokes", report_num(r->run, "max_strokes", 0));
	o.arm_hours = report_num(r->run, "arm_hours", 0);
	o.colours = (int)report_num(r->run, "colours", 0);
	t0 = clk_real_ns();
	BL_TRY(run_estimate(&o, &r->estimate, err));
	r->estimate_s = (double)(clk_real_ns() - t0) * 1e-9;
	snprintf(tp, sizeof(tp), "%s/" REPORT_DIR, r->dir);
	BL_TRY(fs_mkdirs(tp, err));
	return json_write_file(cache, r->estimate, err);
}

/*
 * The gate's questions and their answers, from approvals/: an answer reaches
 * the journal only when the run acts on it, and a resumed run may ask again
 * under a new id, so the files are where every answer stands.
 */
static int load_requests(struct report *r, bl_err *err)
{
	struct gate_request *l = NULL;
	size_t n = 0, bad = 0;
	bl_err be = { 0 };
	int rc = gate_requests_list(r->dir, &l, &n, &bad, &be, err);

	if (rc)
		return rc;
	if (bad) {
		gate_requests_free(l, n);
		return bl_fail(err, BL_EINVAL, "%s", be.msg);
	}
	for (size_t i = 0; i < n; i++) {
		cJSON *o = cJSON_CreateObject();
		strbuf why;

		sb_init(&why);
		for (int k = 0; k < l[i].n_why; k++)
			sb_printf(&why, "%s%s", k ? "; " : "", l[i].why[k].detail);
		cJSON_AddStringToObject(o, "id", l[i].id);
		cJSON_AddStringToObject(o, "status", gate_req_status_names[l[i].status]);
		cJSON_AddStringToObject(o, "kind", arm_kind_names[l[i].kind]);
		cJSON_AddStringToObject(o, "why", why.s ? why.s : "");
		cJSON_AddStringToObject(o, "answer", !l[i].answered ? "" : l[i].approved ? "yes" : "no");
		cJSON_AddStringToObject(o, "by", l[i].answer_by);
		cJSON_AddNumberToObject(o, "wall_ms", (double)(l[i].answered ? l[i].answer_wall_ms
									 : l[i].created_wall_ms));
		if (l[i].preview[0]) {
			char p[96];

			snprintf(p, sizeof(p), "approvals/%s", l[i].preview);
			cJSON_AddStringToObject(o, "preview", p);
		}
		sb_free(&why);
		cJSON_AddItemToArray(r->requests, o);
	}
	gate_requests_free(l, n);
	return 0;
}

/* Each colour of the plan gets its list of attempts, in the plan's order. */
static int colours_from_plan(struct report *r)
{
	for (int i = 0; i < r->plan.n_colours; i++) {
		const struct plan_colour *c = &r->plan.colours[i];
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "colour", c->name);
		json_add_vec(o, "lab", (double[]){ c->lab.L, c->lab.a, c->lab.b }, 3);
		cJSON_AddItemToObject(o, "attempts", cJSON_CreateArray());
		cJSON_AddItemToArray(r->mixes, o);
	}
	return 0;
}

/*
 * The picture's rectangle on the canvas (whole mm: the canvas pictures are
 * 1 px/mm) and the map's cells: the plan's, else where the planner would put
 * the target on this machine and its default cells.
 */
static int picture_rect(struct report *r, bl_err *err)
{
	double mm[4];

	if (r->have_plan) {
		memcpy(mm, r->plan.image_mm, sizeof(mm));
		r->cell_mm = r->plan.cell_mm;
	} else {
		char p[REPORT_PATH_MAX];
		struct plan_options po;
		struct img t = { 0 };
		int rc, gw, gh;

		BL_TRY(need(r, r->target, p, sizeof(p), err));
		if ((rc = img_load(p, r->m.camera.max_pixels, &t, err)))
			return rc == BL_ENOMEM ? rc : bl_fail(err, BL_EINVAL, "%s", err->msg);
		plan_grid_size(&r->m, t.w, t.h, &gw, &gh, mm);
		img_free(&t);
		plan_options_default(&po, &r->m);
		r->cell_mm = po.cell_mm;
	}
	r->box[0] = (int)floor(mm[0]);
	r->box[1] = (int)floor(mm[1]);
	r->box[2] = (int)lround(mm[2]);
	r->box[3] = (int)lround(mm[3]);
	/* Rounding may reach a millimetre past the canvas raster (size_mm at 1 px/mm). */
	for (int k = 0; k < 2; k++)
		if (r->box[k] + r->box[k + 2] > (int)floor(r->m.canvas.size_mm[k]))
			r->box[k + 2] = (int)floor(r->m.canvas.size_mm[k]) - r->box[k];
	return 0;
}

int report_load(struct report *r, const char *dir, bl_err *err)
{
	char p[REPORT_PATH_MAX];
	struct reading x = { r, err, 0 };
	const cJSON *tg;
	int rc;

	memset(r, 0, sizeof(*r));
	if (snprintf(r->dir, sizeof(r->dir), "%s", dir) >= (int)sizeof(r->dir))
		return bl_fail(err, BL_EINVAL, "%s: path too long", dir);
	r->obs = cJSON_CreateArray();
	r->mixes = cJSON_CreateArray();
	r->spans = cJSON_CreateArray();
	r->notes = cJSON_CreateArray();
	r->refills = cJSON_CreateObject();
	r->requests = cJSON_CreateArray();
	r->looks = cJSON_CreateArray();
	if (!r->obs || !r->mixes || !r->spans || !r->notes || !r->refills || !r->requests || !r->looks)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	if ((rc = need(r, "state.json", p, sizeof(p), err)) || (rc = run_status(dir, &r->status, err)) ||
	    (rc = need(r, "run.json", p, sizeof(p), err)) || (rc = json_parse_file(p, &r->run, err)) ||
	    (rc = need(r, "machine.json", p, sizeof(p), err)) || (rc = machine_load(p, &r->m, err)))
		return rc;
	tg = cJSON_GetObjectItem(r->run, "target");
	if (!*report_str(tg, "copy") || strchr(report_str(tg, "copy"), '/'))
		return bl_fail(err, BL_EINVAL, "%s/run.json: target.copy is missing or not a file name",
			       dir);
	snprintf(r->target, sizeof(r->target), "%s", report_str(tg, "copy"));
	/* A run stopped before its plan (at its homing, its first look, its planner) has none: it is reported all the same. */
	if ((rc = fs_join(p, sizeof(p), dir, "plan.json", err)))
		return rc;
	if (access(p, F_OK) == 0 && (rc = plan_load(p, &r->plan, err)))
		return rc;
	r->have_plan = access(p, F_OK) == 0;
	if ((rc = picture_rect(r, err)) || (rc = need(r, "journal.jsonl", p, sizeof(p), err)) ||
	    (rc = colours_from_plan(r)))
		return rc;
	if ((rc = journal_read(p, on_event, &x, &r->bad_lines, err)))
		return rc;
	if (x.rc)
		return x.rc;
	if ((rc = load_requests(r, err)))
		return rc;
	return load_estimate(r, err);
}

void report_free(struct report *r)
{
	cJSON_Delete(r->status);
	cJSON_Delete(r->run);
	cJSON_Delete(r->estimate);
	cJSON_Delete(r->looks); /* before obs: it holds references to obs's items */
	cJSON_Delete(r->obs);
	cJSON_Delete(r->mixes);
	cJSON_Delete(r->spans);
	cJSON_Delete(r->notes);
	cJSON_Delete(r->refills);
	cJSON_Delete(r->requests);
	plan_free(&r->plan);
	memset(r, 0, sizeof(*r));
}

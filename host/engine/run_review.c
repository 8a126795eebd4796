/* run_review.c: the second judge at the run's checkpoints and mix verdicts: the built-in reviewer's rules, an external reviewer in the sandbox, and what a disagreement does (pause or brake, journaled with both judges' figures). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/json.h"
#include "base/log.h"
#include "engine/run_int.h"

/* Whether anything reviews this run: the built-in rules or an external reviewer (never open loop: nothing is verified). */
static int reviewing(const struct run *r)
{
	return !r->st.open_loop && (r->m.review.enabled || r->rx);
}

static void sbx_log(void *ctx, const char *event, cJSON *data)
{
	struct run *r = ctx;
	bl_err e = { 0 };

	if (run_event(r, event, data, &e))
		log_warn("journal: %s", e.msg);
}

int run_review_open(struct run *r, bl_err *err)
{
	const struct machine_reviewer *mr = &r->m.reviewer;
	const char *cmd = r->reviewer_cmd[0] ? r->reviewer_cmd : mr->command;
	struct review_ext_config cfg = { 0 };
	int rc;

	review_init(&r->rv, &r->m);
	if ((rc = review_load(&r->rv, r->dir, err)))
		return rc;
	if (!cmd[0])
		return 0;
	if (mr->egress_json[0]) {
		char where[CFG_PATH_MAX + 32];
		cJSON *eg = cJSON_Parse(mr->egress_json);

		if (!eg)
			return bl_fail(err, BL_ENOMEM, "out of memory reading reviewer.egress");
		snprintf(where, sizeof(where), "%s: reviewer.egress", r->m.file);
		rc = egress_policy_from_json(eg, where, &r->rx_egress, err);
		cJSON_Delete(eg);
		if (rc)
			return rc;
	}
	/* A reviewer that cannot be sandboxed is never run: the run does not start. */
	if ((rc = sbx_probe(err)))
		return bl_fail(err, BL_EINVAL, "the external reviewer cannot be sandboxed here: %s", err->msg);
	cfg.command = cmd;
	cfg.answer_deadline_ms = (int)(mr->answer_deadline_s * 1000.0);
	cfg.max_answer_bytes = (size_t)mr->max_answer_kb * 1024;
	cfg.cpu_s = mr->cpu_s;
	cfg.as_mb = mr->memory_mb;
	cfg.tmpfs_mb = mr->tmpfs_mb;
	cfg.egress = mr->egress_json[0] ? &r->rx_egress : NULL;
	cfg.log = sbx_log;
	cfg.log_ctx = r;
	return review_ext_open(&cfg, &r->rx, err);
}

void run_review_close(struct run *r)
{
	review_free(&r->rv);
	review_ext_close(r->rx);
	r->rx = NULL;
	img_free(&r->review_raw);
	free(r->rv_cover);
	free(r->rv_paint);
	free(r->rv_painted_s);
	r->rv_cover = r->rv_paint = r->rv_painted_s = NULL;
}

int run_review_raw(struct run *r, const struct img *avg, bl_err *err)
{
	if (!reviewing(r))
		return 0;
	if (!r->review_raw.px || r->review_raw.w != avg->w || r->review_raw.h != avg->h) {
		img_free(&r->review_raw);
		BL_TRY(img_alloc(&r->review_raw, avg->w, avg->h, err));
	}
	memcpy(r->review_raw.px, avg->px, (size_t)avg->w * avg->h * 3);
	return 0;
}

int run_review_observed(struct run *r, const struct img *seen, const struct vis_geometry *g, const char *frame,
			bl_err *err)
{
	if (!reviewing(r) || !r->review_raw.px)
		return 0;
	r->rv.clock_s = run_clock_s(r);
	return review_observed(&r->rv, &r->review_raw, seen, g, r->profile, frame, err);
}

/* Room for what the strokes since the canvas agreed on cover, empty; sure is whether this process saw them all. */
static int strokes_reset(struct run *r, int w, int h, int sure, bl_err *err)
{
	size_t n = (size_t)w * h;

	if (!r->rv_cover || r->rv_w != w || r->rv_h != h) {
		free(r->rv_cover);
		free(r->rv_paint);
		free(r->rv_painted_s);
		r->rv_cover = calloc(n, sizeof(float));
		r->rv_paint = calloc(3 * n, sizeof(float));
		r->rv_painted_s = malloc(n * sizeof(float));
		if (!r->rv_cover || !r->rv_paint || !r->rv_painted_s)
			return bl_fail(err, BL_ENOMEM, "out of memory");
		for (size_t i = 0; i < n; i++)
			r->rv_painted_s[i] = -1.0f;
		r->rv_w = w;
		r->rv_h = h;
		r->rv_baseline_s = -1.0;
	}
	memset(r->rv_cover, 0, n * sizeof(float));
	memset(r->rv_paint, 0, 3 * n * sizeof(float));
	r->rv_strokes = 0;
	r->rv_paint_ml = 0.0;
	r->rv_sure = sure;
	return 0;
}

int run_review_baseline(struct run *r, const struct run_canvas *c, long sub, bl_err *err)
{
	int rc;

	if (!reviewing(r))
		return 0;
	if ((rc = review_baseline(&r->rv, c->lab, c->w, c->h, r->st.round, sub, err)) ||
	    (rc = strokes_reset(r, c->w, c->h, 1, err)))
		return rc;
	r->rv_baseline_s = run_clock_s(r);
	return review_save(&r->rv, r->dir, err);
}

void run_review_painted(struct run *r, const struct plan_subtask *s)
{
	const struct machine_brush *b = machine_find_brush(&r->m, s->brush);
	color_lab paint = run_colour_paint(r, s->colour);
	const struct run_colour *col = &r->st.colours[s->colour];

	bl_err e;

	if (!reviewing(r) || !r->alpha)
		return;
	/* A process that starts painting after a canvas agreed on in another saw none of the strokes before. */
	if (!r->rv_cover && strokes_reset(r, r->alpha_w, r->alpha_h, 0, &e))
		return;
	if (r->alpha_w != r->rv_w || r->alpha_h != r->rv_h)
		return;
	if (col->canvas_cells > 0) {
		paint.L += col->canvas_offset.L;
		paint.a += col->canvas_offset.a;
		paint.b += col->canvas_offset.b;
	}
	/* Each pixel takes the paint of the last batch that covered it at least half. */
	for (size_t i = 0; i < (size_t)r->rv_w * r->rv_h; i++) {
		float a = r->alpha[i];

		if (a > 0.02f)
			r->rv_painted_s[i] = (float)run_clock_s(r);
		if (a > r->rv_cover[i])
			r->rv_cover[i] = a;
		if (a >= 0.5f) {
			r->rv_paint[3 * i] = (float)paint.L;
			r->rv_paint[3 * i + 1] = (float)paint.a;
			r->rv_paint[3 * i + 2] = (float)paint.b;
		}
	}
	for (size_t i = 0; i < s->n_actions; i++) {
		r->rv_strokes += s->actions[i].kind == ARM_STROKE;
		r->rv_paint_ml += s->actions[i].kind == ARM_DIP && b ? b->load_ml : 0.0;
	}
}

/*
 * A process that did not see every stroke since the canvas agreed on (it was
 * resumed since): the footprints of the plan's batches that ran since then
 * stand for where paint went, and where it should have landed is not judged.
 * 0 with *cover NULL when not even that is known (another round began since).
 */
static int cover_of_plan(struct run *r, const float **cover, bl_err *err)
{
	const struct plan *p = run_plan(r);
	size_t n = (size_t)r->rv_w * r->rv_h, from;
	float *a;
	int rc = 0;

	*cover = r->rv_cover;
	if (r->rv_sure)
		return 0;
	*cover = NULL;
	if (r->rv.canvas_round != r->st.round)
		return 0;
	if (!(a = malloc(n * sizeof(float))))
		return bl_fail(err, BL_ENOMEM, "out of memory");
	from = r->rv.canvas_sub < 0 ? 0 : (size_t)r->rv.canvas_sub + 1;
	for (size_t i = from; i < r->st.next && rc == 0; i++) {
		if (p->subtasks[i].type != PLAN_PAINT || r->st.sub[i].status == RUN_SUB_PENDING)
			continue;
		if ((rc = plan_batch_alpha(p, &r->m, &p->subtasks[i], a, r->rv_w, r->rv_h, err)))
			break;
		for (size_t k = 0; k < n; k++)
			r->rv_cover[k] = fmaxf(r->rv_cover[k], a[k]);
	}
	free(a);
	*cover = rc ? NULL : r->rv_cover;
	return rc;
}

/*
 * Where paint laid before the canvas agreed on may have been wet then: it
 * darkens as it dries (painting.dry_s). The strokes this process saw, by when
 * they were laid; and every stroke the run still counts as wet (state.json's
 * wet list, which a resumed process has too). NULL when nothing dries.
 */
static float *settling(struct run *r, bl_err *err)
{
	double dry = r->m.painting.dry_s;
	size_t n = (size_t)r->rv_w * r->rv_h;
	float *s;

	if (dry <= 0.0)
		return NULL;
	if (!(s = calloc(n, sizeof(float)))) {
		bl_fail(err, BL_ENOMEM, "out of memory");
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		s[i] = r->rv_painted_s[i] >= 0.0f &&
		       (r->rv_baseline_s < 0.0 || r->rv_painted_s[i] > r->rv_baseline_s - dry);
	for (int k = 0; k < r->st.n_wet; k++) {
		const double *b = r->st.wet[k].region_mm;

		for (int y = (int)fmax(0.0, floor(b[1])); y < (int)fmin(r->rv_h, ceil(b[3])); y++)
			for (int x = (int)fmax(0.0, floor(b[0])); x < (int)fmin(r->rv_w, ceil(b[2])); x++)
				s[(size_t)y * r->rv_w + x] = 1.0f;
	}
	return s;
}

/* The external reviewer's files at /in: the frame the verdict rests on and the target. */
static int ext_files(struct run *r, const char *frame, char *in, size_t n, bl_err *err)
{
	const char *ext = strrchr(r->target_copy, '.');
	char p[RUN_PATH_MAX + 64], *buf;
	size_t len;
	int rc;

	if ((rc = run_path(r, "review/in", in, n, err)) || (rc = fs_mkdirs(in, err)))
		return rc;
	snprintf(p, sizeof(p), "%s/frame.jpg", in);
	if ((rc = fs_read_file(frame, 1u << 28, &buf, &len, err)))
		return rc;
	rc = fs_write_atomic(p, buf, len, err);
	free(buf);
	if (rc)
		return rc;
	snprintf(p, sizeof(p), "%s/target%s", in, ext && !strchr(ext, '/') ? ext : "");
	if ((rc = fs_read_file(r->target_copy, 1u << 30, &buf, &len, err)))
		return rc;
	rc = fs_write_atomic(p, buf, len, err);
	free(buf);
	return rc;
}

/*
 * Asks the external reviewer about a verdict (the request's point-specific
 * part in req, consumed): counted in the run's cost, its answer journaled
 * with the call. 0 with *a filled; a reviewer that fails withholds agreement.
 */
static int ask_external(struct run *r, cJSON *req, const char *frame, struct review_ext_answer *a, bl_err *err)
{
	char in[RUN_PATH_MAX], tgt[80];
	const char *ext = strrchr(r->target_copy, '.');
	cJSON *f;
	int rc;

	memset(a, 0, sizeof(*a));
	if ((rc = ext_files(r, frame, in, sizeof(in), err))) {
		cJSON_Delete(req);
		return rc;
	}
	f = cJSON_AddObjectToObject(req, "files");
	cJSON_AddStringToObject(f, "frame", "/in/frame.jpg");
	snprintf(tgt, sizeof(tgt), "/in/target%s", ext && !strchr(ext, '/') ? ext : "");
	cJSON_AddStringToObject(f, "target", tgt);
	rc = review_ext_ask(r->rx, req, in, a, err);
	cJSON_Delete(req);
	if (rc)
		return rc;
	/* Wall time, as a planner's: a reviewer's time is real even when the arm is simulated. */
	r->st.cost.reviewer_calls++;
	r->st.cost.reviewer_s += a->wall_s;
	return 0;
}

/* The review journaled; on disagreement the run pauses or brakes as set before it (review.on_disagreement). */
struct verdict {
	enum review_point point;
	const char *sub;        /* the subtask's name */
	const char *frame;      /* the frame the verdict rests on (run directory path) */
	const char *result;     /* the run's own verdict: "pass", "fail", ... */
	double figure, tolerance;
};

/* Why the judges did not agree, in words: the first rule that disagrees, else the external reviewer. */
static void disagreement_why(const struct review_result *res, const struct review_ext_answer *a, char *why, size_t n)
{
	review_result_why(res, why, n);
	if (!why[0] && a)
		snprintf(why, n, "external reviewer: %s%s%s", a->failure, a->failure[0] ? ": " : "", a->reason);
}

static int disagreed(struct run *r, const struct verdict *v, const struct review_result *res,
		     const struct review_ext_answer *a, bl_err *err)
{
	struct run_review_pending *pd = &r->st.review_pending;
	int brake = r->opt.on_disagreement ? r->opt.on_disagreement == 2
					   : r->m.review.on_disagreement == MACHINE_REVIEW_BRAKE;
	char why[300];

	disagreement_why(res, a, why, sizeof(why));
	pd->active = 1;
	pd->round = r->st.round;
	pd->subtask = (long)r->st.next;
	pd->point = v->point;
	snprintf(pd->why, sizeof(pd->why), "%s", why);
	r->status_now = 1;
	if (brake) {
		snprintf(r->st.brakes.reason, sizeof(r->st.brakes.reason), "the second judge disagrees with %s %s's "
			 "verdict: %.180s", review_point_names[v->point], v->sub, why);
		return run_brake(r, RUN_BRAKE_REVIEW, err);
	}
	snprintf(r->st.state, sizeof(r->st.state), "paused");
	snprintf(r->st.reason, sizeof(r->st.reason), "the second judge disagrees with %s %s's verdict (%s %.2f, "
		 "tolerance %.2f): %.200s; look at %s, then `brushloop resume %s` to look again, or add "
		 "--overrule-review to go on with the run's verdict", review_point_names[v->point], v->sub, v->result,
		 v->figure, v->tolerance, why, v->frame, r->dir);
	return bl_fail(err, BL_EPAUSED, "%s", r->st.reason);
}

static int settle(struct run *r, const struct verdict *v, const struct review_result *res,
		  struct review_ext_answer *a, const struct run_canvas *c, bl_err *err)
{
	int agree = res->agree && (!a || a->agree), overruled = !agree && r->review_overruled, rc;
	cJSON *d = cJSON_CreateObject(), *j;

	cJSON_AddStringToObject(d, "point", review_point_names[v->point]);
	cJSON_AddStringToObject(d, "frame", strrchr(v->frame, '/') ? strrchr(v->frame, '/') + 1 : v->frame);
	j = cJSON_AddObjectToObject(d, "run");
	cJSON_AddStringToObject(j, "verdict", v->result);
	cJSON_AddNumberToObject(j, "figure", round(v->figure * 1000) / 1000);
	cJSON_AddNumberToObject(j, "tolerance", v->tolerance);
	cJSON_AddItemToObject(d, "reviewer", review_result_json(res));
	if (a)
		cJSON_AddItemToObject(d, "external", review_ext_answer_json(a));
	cJSON_AddBoolToObject(d, "agree", agree);
	if (!agree) {
		char why[300];

		disagreement_why(res, a, why, sizeof(why));
		cJSON_AddStringToObject(d, "why", why);
	}
	if (overruled)
		cJSON_AddStringToObject(d, "overruled_by", r->opt.answered_by ? r->opt.answered_by : "a person");
	rc = run_event(r, agree ? "review" : overruled ? "review_overruled" : "review_disagreed", d, err);
	if (rc == 0 && !agree && !overruled)
		rc = disagreed(r, v, res, a, err);
	if (a)
		review_ext_answer_free(a);
	if (rc || (!agree && !overruled))
		return rc;
	if (overruled) {
		/* A person has looked: what is there now is what the references and the changes start from. */
		r->review_overruled = 0;
		r->rv.start = r->rv.now;
		snprintf(r->rv.start_frame, sizeof(r->rv.start_frame), "%s", r->rv.frame);
	}
	review_agreed(&r->rv);
	r->st.review_pending.active = 0;
	if (v->point == REVIEW_AT_CHECKPOINT && c)
		return run_review_baseline(r, c, (long)r->st.next, err);
	return review_save(&r->rv, r->dir, err);
}

int run_review_checkpoint(struct run *r, const struct plan_subtask *s, const struct run_canvas *c, double verdict,
			  bl_err *err)
{
	struct review_canvas ev = { 0 };
	struct review_result res;
	struct review_ext_answer a, *ap = NULL;
	char name[32];
	struct verdict v;
	int rc;

	if (!reviewing(r))
		return 0;
	run_subtask_name(r, r->st.next, name, sizeof(name));
	v = (struct verdict){ REVIEW_AT_CHECKPOINT, name, c->frame, verdict <= s->tolerance_de00 ? "pass" : "fail",
			      verdict, s->tolerance_de00 };
	if (!r->rv_cover && (rc = strokes_reset(r, c->w, c->h, 0, err)))
		return rc;
	ev.w = c->w;
	ev.h = c->h;
	ev.now = c->lab;
	ev.paint = r->rv_sure ? r->rv_paint : NULL;
	ev.strokes = r->rv_strokes;
	ev.paint_ml = r->rv_paint_ml;
	if ((rc = cover_of_plan(r, &ev.cover, err)))
		return rc;
	if (r->m.review.enabled) {
		float *settle = settling(r, err);

		if (!settle && r->m.painting.dry_s > 0.0)
			return err->code;
		ev.settle = settle;
		rc = review_judge(&r->rv, REVIEW_AT_CHECKPOINT, &ev, NULL, &res, err);
		free(settle);
		if (rc)
			return rc;
	} else {
		memset(&res, 0, sizeof(res));
		res.point = REVIEW_AT_CHECKPOINT;
		res.agree = 1;
	}
	if (r->rx) {
		const struct run_hist *h = &r->st.hist[r->st.n_hist - 1];
		cJSON *q = cJSON_CreateObject(), *m, *e;

		cJSON_AddStringToObject(q, "point", "checkpoint");
		cJSON_AddStringToObject(q, "subtask", name);
		cJSON_AddNumberToObject(q, "round", r->st.round);
		m = cJSON_AddObjectToObject(q, "measurement");
		cJSON_AddNumberToObject(m, "canvas_mean_de00", h->mean_de00);
		cJSON_AddNumberToObject(m, "canvas_p95_de00", h->p95_de00);
		cJSON_AddNumberToObject(m, "observed_vs_predicted_de00", verdict);
		e = cJSON_AddObjectToObject(q, "expected");
		cJSON_AddNumberToObject(e, "predicted_mean_de00", s->predicted_mean_de00);
		cJSON_AddNumberToObject(e, "tolerance_de00", s->tolerance_de00);
		cJSON_AddStringToObject(q, "verdict", v.result);
		cJSON_AddItemToObject(q, "rules", review_result_json(&res));
		if ((rc = ask_external(r, q, c->frame, &a, err)))
			return rc;
		ap = &a;
	}
	return settle(r, &v, &res, ap, c, err);
}

int run_review_mix(struct run *r, const struct plan_subtask *s, bl_err *err)
{
	const struct run_colour *col = &r->st.colours[s->colour];
	struct review_mix x = { &r->mixer.model, &r->st.learn, r->st.job.have, col->measured, s->mix.lab };
	struct review_result res;
	struct review_ext_answer a, *ap = NULL;
	char name[32], frame[RUN_PATH_MAX + REVIEW_NAME_MAX];
	struct verdict v;
	int rc;

	if (!reviewing(r) || r->st.job.attempts == 0)
		return 0; /* nothing was measured: no verdict of the camera's to review */
	run_subtask_name(r, r->st.next, name, sizeof(name));
	/* The cell's last measurement is the last observation. */
	snprintf(frame, sizeof(frame), "%s/frames/%s", r->dir, r->rv.frame);
	v = (struct verdict){ REVIEW_AT_MIX, name, frame, col->measured_de00 <= s->tolerance_de00 ? "pass" : "fail",
			      col->measured_de00, s->tolerance_de00 };
	if (r->m.review.enabled) {
		if ((rc = review_judge(&r->rv, REVIEW_AT_MIX, NULL, &x, &res, err)))
			return rc;
	} else {
		memset(&res, 0, sizeof(res));
		res.point = REVIEW_AT_MIX;
		res.agree = 1;
	}
	if (r->rx) {
		cJSON *q = cJSON_CreateObject(), *m, *e;

		cJSON_AddStringToObject(q, "point", "mix");
		cJSON_AddStringToObject(q, "subtask", name);
		cJSON_AddNumberToObject(q, "round", r->st.round);
		cJSON_AddStringToObject(q, "colour", run_plan(r)->colours[s->colour].name);
		cJSON_AddStringToObject(q, "cell", col->cell);
		m = cJSON_AddObjectToObject(q, "measurement");
		json_add_vec(m, "measured_lab", (double[]){ col->measured.L, col->measured.a, col->measured.b }, 3);
		cJSON_AddNumberToObject(m, "de00", col->measured_de00);
		e = cJSON_AddObjectToObject(q, "expected");
		json_add_vec(e, "target_lab", (double[]){ s->mix.lab.L, s->mix.lab.a, s->mix.lab.b }, 3);
		cJSON_AddNumberToObject(e, "tolerance_de00", s->tolerance_de00);
		cJSON_AddStringToObject(q, "verdict", v.result);
		cJSON_AddItemToObject(q, "rules", review_result_json(&res));
		if ((rc = ask_external(r, q, frame, &a, err)))
			return rc;
		ap = &a;
	}
	rc = settle(r, &v, &res, ap, NULL, err);
	if (rc == BL_EPAUSED || rc == BL_EBRAKE) {
		/* The verdict is not taken: a resumed mix measures its cell again and decides afresh. */
		r->st.job.finished = 0;
		r->st.mix_active = 1;
	}
	return rc;
}

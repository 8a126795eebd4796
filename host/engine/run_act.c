/* run_act.c: actions through the gate with bounded retries, the poll point of every loop, journal look-ups for resuming, progress. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/log.h"
#include "engine/run_int.h"

int run_event(struct run *r, const char *event, cJSON *data, bl_err *err)
{
	return journal_event(&r->j, NULL, event, data, NULL, err);
}

void run_subtask_name(const struct run *r, size_t i, char *out, size_t n)
{
	const struct plan *p = r->st.round == 0 ? &r->plan : &r->corr;
	int id = i < p->n_subtasks ? p->subtasks[i].id : (int)i + 1;

	if (r->st.round == 0)
		snprintf(out, n, "s%d", id);
	else
		snprintf(out, n, "c%d.s%d", r->st.round, id);
}

int run_brake(struct run *r, enum run_brake b, bl_err *err)
{
	cJSON *d = cJSON_CreateObject();
	bl_err e2;

	snprintf(r->st.state, sizeof(r->st.state), "braked");
	snprintf(r->st.brake, sizeof(r->st.brake), "%s", run_brake_names[b]);
	snprintf(r->st.reason, sizeof(r->st.reason), "%s", r->st.brakes.reason);
	cJSON_AddStringToObject(d, "brake", run_brake_names[b]);
	cJSON_AddStringToObject(d, "reason", r->st.brakes.reason);
	/* The brake stops the run whatever happens; a journal that cannot say so is said with it. */
	if (run_event(r, "brake", d, &e2))
		return bl_fail(err, BL_EBRAKE, "brake (%s): %s (and it could not be journaled: %s)",
			       run_brake_names[b], r->st.brakes.reason, e2.msg);
	return bl_fail(err, BL_EBRAKE, "brake (%s): %s", run_brake_names[b], r->st.brakes.reason);
}

static double wall_now_s(const struct run *r)
{
	return r->wall_s0 + (double)(clk_real_ns() - r->wall0_ns) * 1e-9;
}

int run_heartbeat(struct run *r, bl_err *err)
{
	/*
	 * Touched at most every quarter of the stale limit, a second at most:
	 * the loop polls thousands of times a run, and a touch is three system
	 * calls on the run directory.
	 */
	int64_t now = clk_real_ns(), every = (int64_t)fmin(1e9, r->m.brakes.heartbeat_stale_s * 0.25e9);
	char p[RUN_PATH_MAX];
	int rc;

	if (r->heartbeat_ns && now - r->heartbeat_ns < every)
		return 0;
	if ((rc = run_path(r, "heartbeat", p, sizeof(p), err)) || (rc = fs_touch(p, err)))
		return rc;
	r->heartbeat_ns = now;
	return 0;
}

void run_paused_by_signal(struct run *r)
{
	snprintf(r->st.state, sizeof(r->st.state), "paused");
	snprintf(r->st.reason, sizeof(r->st.reason),
		 "paused by a signal: the arm was held and the state saved; "
		 "`brushloop resume %s` goes on", r->dir);
}

int run_poll(struct run *r, bl_err *err)
{
	enum run_brake b;
	int rc;

	if ((rc = run_heartbeat(r, err)))
		return rc;
	rc = gate_stop_poll(r->gate, r->rig.arm, err);
	if (rc == BL_EPAUSED) {
		run_paused_by_signal(r);
		return rc;
	}
	if (rc == BL_ESAFETY) {
		snprintf(r->st.state, sizeof(r->st.state), "safety_stop");
		snprintf(r->st.reason, sizeof(r->st.reason), "%s", err->msg);
		return rc;
	}
	if (rc)
		return rc;
	r->st.wall_s = wall_now_s(r);
	b = run_brakes_budgets(&r->st.brakes, &r->m, &r->st.cost, r->st.wall_s);
	if (b != RUN_BRAKE_NONE)
		return run_brake(r, b, err);
	run_progress(r, 0);
	return 0;
}

/*
 * An arm command or homing (a: NULL) that failed with rc. A command the arm
 * was never sent (BL_ENOTSENT) is journaled, counted by the circuit breaker
 * and taken again (0 says try again). After a timeout or I/O error, which
 * may have come after the arm began, the repeat rule (arm_kind_repeatable)
 * decides: a kind that harms nothing done twice is taken again; a stroke or
 * a dispense is journaled as may have run, and 1 says carry on as if it had
 * (the batch's or the mix's measurement shows what is there). Anything
 * else, or the breaker opening, is returned.
 */
static int comm_failed(struct run *r, const struct arm_action *a, int rc, bl_err *err)
{
	int once = a && !arm_kind_repeatable(a->kind);
	enum run_brake b;
	cJSON *d;

	if (rc != BL_ENOTSENT && rc != BL_EIO && rc != BL_ETIMEDOUT)
		return rc;
	once = once && rc != BL_ENOTSENT;
	b = run_brakes_comm(&r->st.brakes, &r->m.brakes, 0, err->msg);
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "error", err->msg);
	if (a)
		cJSON_AddNumberToObject(d, "action_id", (double)a->id);
	cJSON_AddStringToObject(d, "then", once ? "not repeated: it may have run" : "taken again");
	if ((rc = run_event(r, "arm_error", d, err)))
		return rc;
	if (b != RUN_BRAKE_NONE)
		return run_brake(r, b, err);
	return once;
}

int run_act(struct run *r, const struct arm_action *a, struct gate_decision *d, bl_err *err)
{
	for (;;) {
		struct arm_status s0, s1;
		struct gate_image frame, *fp = NULL;
		int rc, have0;

		if ((rc = run_poll(r, err)))
			return rc;
		have0 = arm_status(r->rig.arm, &s0, NULL) == 0;
		if (r->last_rgb) {
			frame.rgb = r->last_rgb;
			frame.width = r->last_w;
			frame.height = r->last_h;
			frame.stride = (size_t)r->last_w * 3;
			fp = &frame;
		}
		rc = gate_execute(r->gate, r->rig.arm, a, fp, d, err);
		if (rc == BL_EDEFERRED && r->st.n_deferred < RUN_MAX_DEFERRED) {
			/* Whatever asked for it (a stroke, a dispense, a park): STATUS.md lists what waits. */
			struct run_deferred *df = &r->st.deferred[r->st.n_deferred++];
			const struct gate_finding *f = gate_decision_primary(d);
			const struct plan *p = run_plan(r);

			df->round = r->st.round;
			df->subtask = r->st.next < p->n_subtasks ? p->subtasks[r->st.next].id : 0;
			snprintf(df->request, sizeof(df->request), "%s", d->request_id);
			snprintf(df->why, sizeof(df->why), "%s", f ? f->detail : "needs an operator");
		}
		if (have0 && arm_status(r->rig.arm, &s1, NULL) == 0 && s1.arm_time_s >= s0.arm_time_s)
			r->st.cost.arm_s += s1.arm_time_s - s0.arm_time_s;
		if (rc == 0) {
			run_brakes_comm(&r->st.brakes, &r->m.brakes, 1, "");
			r->st.actions_done++;
			if (a->kind == ARM_DISPENSE)
				r->st.cost.paint_ml += a->units * r->m.mixing.dispense_unit_ml;
			return 0;
		}
		if ((rc = comm_failed(r, a, rc, err)) < 0)
			return rc;
		if (rc == 1) {
			r->st.actions_done++;
			return 0;
		}
	}
}

int run_home(struct run *r, bl_err *err)
{
	for (;;) {
		struct gate_decision d;
		int rc;

		if ((rc = run_poll(r, err)))
			return rc;
		rc = gate_home(r->gate, r->rig.arm, &d, err);
		if (rc == 0) {
			run_brakes_comm(&r->st.brakes, &r->m.brakes, 1, "");
			return 0;
		}
		if ((rc = comm_failed(r, NULL, rc, err)))
			return rc;
	}
}

struct allowed_scan {
	const char *sub;
	long id;
	int state; /* 0 never allowed, 1 allowed and outcome unknown, 2 done */
	int watching;
};

static int allowed_fn(const cJSON *ev, void *ctx)
{
	struct allowed_scan *s = ctx;
	const cJSON *src = cJSON_GetObjectItemCaseSensitive(ev, "src");
	const cJSON *evn = cJSON_GetObjectItemCaseSensitive(ev, "event");
	const cJSON *sub = cJSON_GetObjectItemCaseSensitive(ev, "subtask");
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(ev, "data");

	if (!cJSON_IsString(src) || strcmp(src->valuestring, "gate") || !cJSON_IsString(evn))
		return 0;
	if (strcmp(evn->valuestring, "decision") == 0) {
		const cJSON *act = cJSON_GetObjectItemCaseSensitive(data, "action");
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(act, "id");
		const cJSON *dec = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(data, "decision"), "decision");

		s->watching = 0;
		if (cJSON_IsString(sub) && strcmp(sub->valuestring, s->sub) == 0 && cJSON_IsNumber(id) &&
		    (long)id->valuedouble == s->id && cJSON_IsString(dec) &&
		    strcmp(dec->valuestring, "allow") == 0) {
			s->watching = 1;
			if (s->state < 2)
				s->state = 1;
		}
	} else if (strcmp(evn->valuestring, "executed") == 0 && s->watching) {
		const cJSON *res = cJSON_GetObjectItemCaseSensitive(data, "result");

		s->watching = 0;
		if (cJSON_IsString(res) && strcmp(res->valuestring, "done") == 0)
			s->state = 2;
		else if (s->state == 1)
			s->state = 0; /* failed before it moved */
	}
	return 0;
}

int run_journal_allowed(struct run *r, const char *sub, long action_id)
{
	struct allowed_scan s = { sub, action_id, 0, 0 };
	bl_err e;

	if (journal_read(r->j.path, allowed_fn, &s, NULL, &e))
		return 1; /* unreadable: assume it may have run */
	return s.state;
}

static const char *phase_name(const struct run *r)
{
	const struct plan *p = run_plan((struct run *)r);

	if (strcmp(r->st.state, "running"))
		return r->st.state;
	if (r->drying)
		return "drying";
	if (p->n_subtasks == 0)
		return "preparing"; /* homing, looking at the blank canvas, planning */
	if (r->st.next < p->n_subtasks)
		return plan_subtask_names[p->subtasks[r->st.next].type];
	return "final";
}

/*
 * The progress line: phase, subtask, strokes, ETA, the canvas's error. On a
 * terminal one live line rewritten at most five times a second; otherwise a
 * plain line at most every 5 s, and whenever forced (a checkpoint, the end).
 * The ETA is this process's wall time scaled by the strokes left, once a
 * twentieth of them are done.
 */
void run_progress(struct run *r, int force)
{
	int64_t now = clk_real_ns();
	const struct plan *p = run_plan(r);
	double el = (double)(now - r->wall0_ns) * 1e-9, eta = -1, de = -1;
	long done = r->st.strokes_done - r->strokes_at_start, left = r->st.strokes_total - r->st.strokes_done;
	char line[320], sub[32] = "-", eta_s[32], de_s[32];
	int fd = r->opt.progress_fd >= 0 ? r->opt.progress_fd : 2;
	int len;

	if (r->opt.quiet)
		return;
	if (!force && now - r->last_progress_ns < (r->opt.progress_live ? 200000000LL : 5000000000LL))
		return;
	r->last_progress_ns = now;
	if (r->st.next < p->n_subtasks)
		run_subtask_name(r, r->st.next, sub, sizeof(sub));
	if (done > 0 && left > 0 && done * 20 >= r->st.strokes_total && el > 0.5)
		eta = el * (double)left / (double)done;
	if (r->st.n_hist > 0)
		de = r->st.hist[r->st.n_hist - 1].mean_de00;
	if (eta < 0)
		snprintf(eta_s, sizeof(eta_s), left > 0 ? "-" : "0 s");
	else if (eta < 120)
		snprintf(eta_s, sizeof(eta_s), "%.0f s", eta);
	else
		snprintf(eta_s, sizeof(eta_s), "%.0f min", eta / 60.0);
	if (de < 0)
		snprintf(de_s, sizeof(de_s), "-");
	else
		snprintf(de_s, sizeof(de_s), "%.2f", de);
	if (p->n_subtasks == 0)
		len = snprintf(line, sizeof(line), "%s%-10s", r->opt.progress_live ? "\r" : "",
			       phase_name(r));
	else
		len = snprintf(line, sizeof(line),
			       "%s%-10s %-8s %s%zu/%zu  strokes %ld/%ld  ETA %s  canvas CIEDE2000 %s",
			       r->opt.progress_live ? "\r" : "", phase_name(r), sub,
			       r->st.round ? "correction " : "subtask ",
			       r->st.next < p->n_subtasks ? r->st.next + 1 : p->n_subtasks,
			       p->n_subtasks, r->st.strokes_done, r->st.strokes_total, eta_s, de_s);
	if (len <= 0 || len >= (int)sizeof(line) - 4)
		return;
	if (r->opt.progress_live) {
		len += snprintf(line + len, sizeof(line) - (size_t)len, "\033[K");
	} else {
		line[len++] = '\n';
		line[len] = '\0';
	}
	if (write(fd, line, (size_t)len) < 0) {
		/* progress is a courtesy: a closed terminal must not stop the run */
	}
}

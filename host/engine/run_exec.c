/* run_exec.c: the executor: every action, homing and tolerance through the gate, bounded retries, the poll point of every loop, what the journal says was allowed. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/json.h"
#include "base/prof.h"
#include "base/log.h"
#include "engine/run_exec.h"
#include "engine/run_int.h"

static double wall_now_s(const struct run *r)
{
	return r->wall_s0 + (double)(clk_real_ns() - r->wall0_ns) * 1e-9;
}

static int heartbeat(struct run *r, bl_err *err)
{
	/*
	 * Touched at most every quarter of the stale limit, a second at most:
	 * the loop polls thousands of times a run, and a touch is three system
	 * calls on the run directory.
	 */
	int64_t now = clk_real_ns(), every = (int64_t)fmin(1e9, r->m.brakes.heartbeat_stale_s * 0.25e9);
	char p[RUN_PATH_MAX];
	int rc;

	enum prof_phase prev;

	if (r->heartbeat_ns && now - r->heartbeat_ns < every)
		return 0;
	prev = prof_enter(PROF_STATUS);
	if ((rc = run_path(r, "heartbeat", p, sizeof(p), err)) == 0 && (rc = fs_touch(p, err)) == 0)
		r->heartbeat_ns = now;
	prof_leave(prev);
	return rc;
}

void run_paused_by_signal(struct run *r)
{
	snprintf(r->st.state, sizeof(r->st.state), "paused");
	snprintf(r->st.reason, sizeof(r->st.reason),
		 "paused by a signal: the arm was held and the state saved; "
		 "`brushloop resume %s` goes on", r->dir_shown);
}

int run_poll(struct run *r, bl_err *err)
{
	enum run_brake b;
	int rc;

	if ((rc = heartbeat(r, err)))
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

int run_actions_planned(struct run *r, const char *event, const char *step,
			const struct arm_action *a, size_t n, cJSON *d, bl_err *err)
{
	cJSON *arr;

	if (!d)
		d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "step", step);
	arr = cJSON_AddArrayToObject(d, "actions");
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(arr, arm_action_to_json(&a[i]));
	return run_event(r, event, d, err);
}

/* Whatever asked for it (a stroke, a dispense, a park, the homing): STATUS.md lists what waits. */
static void note_deferred(struct run *r, const struct gate_decision *d, const char *what)
{
	struct run_deferred *df;
	const struct gate_finding *f = gate_decision_primary(d);
	const struct plan *p = run_plan(r);

	if (r->st.n_deferred >= RUN_MAX_DEFERRED)
		return;
	df = &r->st.deferred[r->st.n_deferred++];
	df->round = r->st.round;
	df->subtask = r->st.next < p->n_subtasks ? p->subtasks[r->st.next].id : 0;
	snprintf(df->request, sizeof(df->request), "%s", d->request_id);
	snprintf(df->why, sizeof(df->why), "%s%s", what, f ? f->detail : "needs an operator");
}

int run_act(struct run *r, const struct arm_action *a, struct gate_decision *d, bl_err *err)
{
	/* The journal, requests and state.json hold ids up to ARM_MAX_ID: none is handed out past it. */
	if (a->id > ARM_MAX_ID)
		return bl_fail(err, BL_EINVAL, "action id %ld is past the largest an action may have "
			       "(%ld): the run's ids are used up", a->id, ARM_MAX_ID);
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
		if (rc == BL_EDEFERRED)
			note_deferred(r, d, "");
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
		if (rc == BL_EDEFERRED)
			note_deferred(r, &d, "homing the arm: ");
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
		long v;

		s->watching = 0;
		if (cJSON_IsString(sub) && strcmp(sub->valuestring, s->sub) == 0 && json_whole(id, 0, ARM_MAX_ID, &v) &&
		    v == s->id && cJSON_IsString(dec) &&
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


int run_tolerance(struct run *r, const char *bar, double tol_de00, struct gate_decision *d, bl_err *err)
{
	return gate_tolerance(r->gate, bar, tol_de00, d, err);
}

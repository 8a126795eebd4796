/* gate.c: the only path to an arm backend's execute: decide, journal, consult grants and the operator, then run exactly the checked path. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arm/arm_backend.h"
#include "base/fs.h"
#include "base/json.h"
#include "base/log.h"
#include "safety/gate_int.h"

/* How long a controlled hold may take to bring the arm to rest before the gate stops it outright. */
#define HOLD_SETTLE_MS 10000
/* How often a wait for an operator looks for an answer file. */
#define ANSWER_POLL_MS 50
#define PREVIEW_WIDTH_PX 480

struct deferred {
	struct gate_deferred pub;
	struct gate_decision d;
	char *action_json;
};

/* ---- the journal ---- */

int gate_journal(struct gate *g, const char *event, cJSON *body, bl_err *err)
{
	int rc;

	if (!body)
		body = cJSON_CreateObject();
	rc = journal_event_from(g->cfg.journal, "gate", event, body, NULL, err);
	if (rc)
		bl_err_prefix(err, "the gate journals every decision and acts on none it cannot journal");
	return rc;
}

cJSON *gate_body_str(const char *k1, const char *v1)
{
	cJSON *b = cJSON_CreateObject();

	if (k1)
		cJSON_AddStringToObject(b, k1, v1);
	return b;
}

/* A decision with the action it was about (when there is one), so a journal can be replayed. */
static int journal_decision(struct gate *g, const struct gate_decision *d,
			    const struct arm_action *a, bl_err *err)
{
	cJSON *b = cJSON_CreateObject();

	if (a)
		cJSON_AddItemToObject(b, "action", arm_action_to_json(a));
	cJSON_AddItemToObject(b, "decision", gate_decision_to_json(d, GATE_VIEW_OPERATOR));
	return gate_journal(g, "decision", b, err);
}

/* ---- open and close ---- */

int gate_open(const struct gate_config *cfg, struct gate **out, bl_err *err)
{
	char dir[PATH_MAX];
	struct gate *g;
	cJSON *b;
	int rc;

	*out = NULL;
	if (!cfg->m || !cfg->run_dir || !cfg->journal)
		return bl_fail(err, BL_EINVAL, "the gate needs a machine, a run directory and a journal");
	g = calloc(1, sizeof(*g));
	if (!g)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	g->cfg = *cfg;
	g->m = cfg->m;
	g->clock = cfg->clock ? cfg->clock : clk_monotonic();
	if (snprintf(g->run_dir, sizeof(g->run_dir), "%s", cfg->run_dir) >= (int)sizeof(g->run_dir)) {
		rc = bl_fail(err, BL_EINVAL, "run directory path too long");
		goto out_free;
	}
	if ((rc = fs_join(g->fault_path, sizeof(g->fault_path), g->run_dir, "fault.json", err)) ||
	    (rc = gate_approvals_dir(g->run_dir, dir, sizeof(dir), err)) ||
	    (rc = fs_mkdirs(dir, err)))
		goto out_free;
	/* A fault latched by an earlier process still stands: the next motion needs a person. */
	if (access(g->fault_path, F_OK) == 0) {
		g->after_fault = 1;
		g->fault_told = 1;
	}
	if ((rc = gate_grants_restore(g, err)))
		goto out_free;
	b = gate_body_str("mode", cfg->mode == GATE_UNATTENDED ? "unattended"
				  : cfg->mode == GATE_REMOTE   ? "remote"
							       : "terminal");
	cJSON_AddNumberToObject(b, "run_ns", (double)gate_run_ns(g));
	if ((rc = gate_journal(g, "gate_open", b, err)))
		goto out_free;
	*out = g;
	return 0;
out_free:
	free(g->seen);
	free(g->reqs);
	free(g);
	return rc;
}

void gate_close(struct gate *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->n_def; i++)
		free(g->def[i].action_json);
	free(g->def);
	free(g->reqs);
	gate_grants_free(&g->grants);
	free(g->seen);
	free(g->told);
	free(g);
}

long gate_motions(const struct gate *g)
{
	return g->motions;
}

int gate_fault_latched(const struct gate *g)
{
	return g->after_fault;
}

/* ---- faults ---- */

static int latch_fault(struct gate *g, const struct arm_status *st, const char *msg, bl_err *err)
{
	cJSON *b, *f;
	int rc;

	g->after_fault = 1;
	if (g->fault_told)
		return 0;
	g->fault_told = 1;
	b = cJSON_CreateObject();
	cJSON_AddBoolToObject(b, "estop", st && st->estop);
	cJSON_AddBoolToObject(b, "fault", st ? st->fault : 1);
	cJSON_AddStringToObject(b, "message", msg);
	if (st) {
		const double p[3] = { st->pos_mm.x, st->pos_mm.y, st->pos_mm.z };

		json_add_vec(b, "pos_mm", p, 3);
	}
	f = cJSON_Duplicate(b, 1);
	cJSON_AddStringToObject(f, "kind", "fault");
	cJSON_AddNumberToObject(f, "version", 1);
	cJSON_AddNumberToObject(f, "wall_ms", (double)clk_wall_ms());
	rc = json_write_file(g->fault_path, f, err);
	cJSON_Delete(f);
	if (rc) {
		cJSON_Delete(b);
		return rc;
	}
	return gate_journal(g, "fault", b, err);
}

static int clear_fault(struct gate *g, bl_err *err)
{
	if (!g->after_fault)
		return 0;
	g->after_fault = 0;
	g->fault_told = 0;
	if (unlink(g->fault_path) < 0 && errno != ENOENT)
		return bl_fail(err, BL_EIO, "%s: cannot remove: %s", g->fault_path, strerror(errno));
	return gate_journal(g, "fault_cleared", NULL, err);
}

static void fault_decision(struct gate_decision *d, const struct arm_action *a, const char *msg)
{
	gate_decide_file(GATE_R_FAULT, msg, d);
	if (a) {
		d->kind = (int)a->kind;
		d->action_id = a->id;
	}
}

/* ---- stopping ---- */

static int do_stop(struct gate *g, struct arm *arm, bl_err *err)
{
	if (!g->stopped) {
		bl_err e = { 0 };
		int rc = arm_stop(arm, &e);
		cJSON *b = cJSON_CreateObject();

		g->stopped = 1;
		cJSON_AddNumberToObject(b, "signals", gate_signals_count());
		cJSON_AddBoolToObject(b, "stopped", rc == 0);
		if (rc)
			cJSON_AddStringToObject(b, "error", e.msg);
		gate_journal(g, "stop", b, NULL);
		/* Stopped mid-motion, queued motion dropped: a person looks before the next one. */
		latch_fault(g, NULL, "stopped at once after a second signal", NULL);
	}
	return bl_fail(err, BL_ESAFETY, "stopped at once after a second signal");
}

static void sleep_or_signal(int ms)
{
	struct pollfd p = { gate_signals_fd(), POLLIN, 0 };

	if (p.fd >= 0)
		poll(&p, 1, ms);
	else
		poll(NULL, 0, ms);
}

int gate_stop_poll(struct gate *g, struct arm *arm, bl_err *err)
{
	struct arm_status st;
	int rc;

	if (gate_signals_count() >= 2)
		return do_stop(g, arm, err);
	if (gate_signals_count() == 1) {
		if (!g->held) {
			bl_err e = { 0 };
			int64_t until = clk_real_ns() + (int64_t)HOLD_SETTLE_MS * 1000000;
			int at_rest = 0;
			cJSON *b;

			g->held = 1;
			rc = arm_hold(arm, &e);
			b = cJSON_CreateObject();
			cJSON_AddBoolToObject(b, "held", rc == 0);
			if (rc)
				cJSON_AddStringToObject(b, "error", e.msg);
			gate_journal(g, "hold", b, NULL);
			/* A controlled hold decelerates; a second signal meanwhile cuts it short. */
			while (rc == 0 && clk_real_ns() < until) {
				if (gate_signals_count() >= 2)
					return do_stop(g, arm, err);
				if (arm_status(arm, &st, &e))
					break; /* cannot tell it is at rest: stop it */
				if (!st.moving) {
					at_rest = 1;
					break;
				}
				sleep_or_signal(10);
			}
			if (!at_rest)
				return do_stop(g, arm, err);
			gate_journal(g, "held", NULL, NULL);
		}
		if (gate_signals_count() >= 2)
			return do_stop(g, arm, err);
		return bl_fail(err, BL_EPAUSED, "held after a signal: save the state and pause");
	}
	g->held = g->stopped = 0; /* after a reset, the next signal holds again */
	rc = arm_status(arm, &st, err);
	if (rc)
		return rc;
	if (st.fault || st.estop) {
		char msg[256];

		snprintf(msg, sizeof(msg), "%s%s", st.estop ? "e-stop: " : "fault: ",
			 st.fault_msg[0] ? st.fault_msg : "(no message)");
		rc = latch_fault(g, &st, msg, err);
		if (rc)
			return rc;
		return bl_fail(err, BL_ESAFETY, "safety stop: %s", msg);
	}
	return 0;
}

static int all_grantable(const struct gate_decision *d)
{
	for (int i = 0; i < d->n_findings; i++)
		if (gate_reason_verdict(d->findings[i].reason) == GATE_OPERATOR &&
		    !gate_reason_grantable(d->findings[i].reason))
			return 0;
	return 1;
}

/* ---- requests ---- */

static void drop_deferred(struct gate *g, const char *id);
static void note_ignored(struct gate *g, const struct gate_request *r);

/* Whether request r asked about every operator reason of d (same action, perhaps another start). */
static int covers(const struct gate_request *r, const struct gate_decision *d)
{
	for (int i = 0; i < d->n_findings; i++) {
		const struct gate_finding *f = &d->findings[i];
		int ok = 0;

		if (gate_reason_verdict(f->reason) != GATE_OPERATOR)
			continue;
		for (int k = 0; k < r->n_why && !ok; k++)
			ok = r->why[k].reason == f->reason && strcmp(r->why[k].field, f->field) == 0;
		if (!ok)
			return 0;
	}
	return d->n_dropped == 0;
}

static int set_status(struct gate *g, struct gate_request *r, enum gate_req_status st,
		      const struct gate_decision *d, bl_err *err)
{
	r->status = st;
	return gate_request_write(g->run_dir, r, d, err);
}

/*
 * Looks for a pending request about the same action that covers d. Returns
 * 1 with *r filled (caller frees) when found, 0 when none. A pending request
 * for the same action that no longer covers it is superseded.
 */
static int find_request(struct gate *g, const char *action_json, const struct gate_decision *d,
			struct gate_request *r, bl_err *err)
{
	struct gate_request *l;
	size_t n, bad;
	bl_err berr = { 0 };
	int found = 0, rc;

	rc = gate_requests_list(g->run_dir, &l, &n, &bad, &berr, err);
	if (rc)
		return rc;
	if (bad)
		gate_tell_once(g, "request_invalid", berr.msg);
	for (size_t i = 0; i < n; i++) {
		/* Only a request this run's journal holds: one planted in approvals/ is no request. */
		if (l[i].status != GATE_REQ_PENDING || strcmp(l[i].action_json, action_json) != 0 ||
		    !gate_request_journaled(g, &l[i]))
			continue;
		if (!found && covers(&l[i], d)) {
			*r = l[i];
			l[i].action_json = NULL;
			found = 1;
			note_ignored(g, r);
		} else if (!l[i].answered) {
			rc = set_status(g, &l[i], GATE_REQ_SUPERSEDED, NULL, err);
			if (rc)
				break;
			drop_deferred(g, l[i].id);
		}
	}
	gate_requests_free(l, n);
	if (rc && found)
		gate_request_free(r);
	return rc ? rc : found;
}

static int file_request(struct gate *g, const struct arm_action *a, const struct arm_path *path,
			const struct gate_image *frame, struct gate_decision *d,
			struct gate_request *r, bl_err *err)
{
	char dir[PATH_MAX], png[PATH_MAX], dg[BL_DIGEST_HEX];
	cJSON *b;
	int rc;

	if ((rc = gate_request_from_decision(d, a, r, err)))
		return rc;
	if ((rc = gate_request_new_id(g->run_dir, r->id, sizeof(r->id), err)) ||
	    (rc = gate_approvals_dir(g->run_dir, dir, sizeof(dir), err)))
		goto out_free;
	snprintf(d->request_id, sizeof(d->request_id), "%s", r->id);
	snprintf(r->preview, sizeof(r->preview), "%s.png", r->id);
	if (fs_join(png, sizeof(png), dir, r->preview, err) == 0) {
		bl_err pe = { 0 };

		/* A picture helps the operator; failing to draw one never blocks the question. */
		if (gate_preview_png(g->m, path, d, frame, PREVIEW_WIDTH_PX, png, &pe)) {
			log_warn("no preview for request %s: %s", r->id, pe.msg);
			r->preview[0] = '\0';
		}
	}
	if ((rc = gate_request_write(g->run_dir, r, d, err)) ||
	    (rc = gate_request_digest(r, dg, err)) || (rc = gate_request_noted(g, r->id, dg, err)))
		goto out_free;
	b = cJSON_CreateObject();
	cJSON_AddStringToObject(b, "request", r->id);
	cJSON_AddStringToObject(b, "digest", dg); /* an answer counts only for a request journaled so */
	cJSON_AddItemToObject(b, "decision", gate_decision_to_json(d, GATE_VIEW_OPERATOR));
	rc = gate_journal(g, "request", b, err);
	if (rc == 0)
		return 0;
out_free:
	gate_request_free(r);
	return rc;
}

static int journal_answer(struct gate *g, const struct gate_request *r, const char *how,
			  bl_err *err)
{
	cJSON *b = cJSON_CreateObject();

	cJSON_AddStringToObject(b, "request", r->id);
	cJSON_AddStringToObject(b, "answer", r->answered ? (r->approved ? "yes" : "no") : "none");
	cJSON_AddStringToObject(b, "by", r->answered ? r->answer_by : how);
	cJSON_AddStringToObject(b, "outcome", how);
	return gate_journal(g, "answer", b, err);
}

/* An answer file that answers nothing of r is journaled once, naming why; it never counts. */
static void note_ignored(struct gate *g, const struct gate_request *r)
{
	char msg[GATE_MSG_MAX + 96];

	if (!r->answer_ignored[0])
		return;
	snprintf(msg, sizeof(msg), "request %s: approvals/%s.answer.json is ignored: %s", r->id, r->id,
		 r->answer_ignored);
	gate_tell_once(g, "answer_ignored", msg);
}

/* ---- the terminal prompt ---- */

static void show_request(struct gate *g, const struct gate_request *r, int timeout_s)
{
	int fd = g->cfg.tty_out_fd;
	char dir[PATH_MAX];

	dprintf(fd, "\nbrushloop: approval needed [%s] for a %s", r->id,
		r->kind >= 0 ? arm_kind_names[r->kind] : "?");
	if (r->index >= 0)
		dprintf(fd, ", action %ld", r->index);
	if (r->action_id >= 0)
		dprintf(fd, ", id %ld", r->action_id);
	dprintf(fd, "\n  from (%.1f, %.1f, %.1f) mm to (%.1f, %.1f, %.1f) mm, %zu segments, %.1f mm\n",
		r->from.x, r->from.y, r->from.z, r->to.x, r->to.y, r->to.z, r->n_segments,
		r->length_mm);
	dprintf(fd, "  speed %g mm/s, zones:", r->speed_mm_s);
	for (int k = 0; k < ARM_ZONE_COUNT; k++)
		if (r->zones & (1u << k))
			dprintf(fd, " %s", arm_zone_names[k]);
	dprintf(fd, "\n");
	for (int i = 0; i < r->n_why; i++)
		dprintf(fd, "  why: %s: %s\n", gate_reason_names[r->why[i].reason], r->why[i].detail);
	if (r->preview[0] && gate_approvals_dir(g->run_dir, dir, sizeof(dir), NULL) == 0)
		dprintf(fd, "  preview: %s/%s\n", dir, r->preview);
	dprintf(fd, "Allow? [y/N] (%d s; no answer is no; or: brushloop approve %s %s): ", timeout_s,
		g->run_dir, r->id);
}

enum wait_result { W_ANSWERED, W_TIMEOUT, W_SIGNAL };

/*
 * Waits for an answer from the terminal (if any) or from an answer file, in
 * real time: a person answers in wall time whatever clock the run keeps.
 */
static int wait_answer(struct gate *g, struct gate_request *r, enum wait_result *res, bl_err *err)
{
	int timeout_ms = g->cfg.timeout_ms > 0 ? g->cfg.timeout_ms
					       : g->m->safety.operator_timeout_s * 1000;
	int64_t deadline = clk_real_ns() + (int64_t)timeout_ms * 1000000;
	int tty = g->cfg.mode == GATE_TERMINAL && g->cfg.tty_in_fd >= 0;
	char line[64];
	size_t used = 0;
	int rc;

	if (g->cfg.mode == GATE_TERMINAL)
		show_request(g, r, (timeout_ms + 999) / 1000);
	for (;;) {
		struct gate_request now;
		struct pollfd p[2];
		int np = 0, left_ms;
		int64_t left;

		rc = gate_request_load(g->run_dir, r->id, &now, err);
		if (rc)
			return rc;
		note_ignored(g, &now);
		if (now.answered) {
			gate_request_free(r);
			*r = now;
			*res = W_ANSWERED;
			return 0;
		}
		gate_request_free(&now);
		if (gate_signals_count() > 0) {
			*res = W_SIGNAL;
			return 0;
		}
		left = deadline - clk_real_ns();
		if (left <= 0) {
			*res = W_TIMEOUT;
			return 0;
		}
		left_ms = (int)(left / 1000000) + 1;
		if (gate_signals_fd() >= 0)
			p[np++] = (struct pollfd){ gate_signals_fd(), POLLIN, 0 };
		if (tty)
			p[np++] = (struct pollfd){ g->cfg.tty_in_fd, POLLIN, 0 };
		poll(p, (nfds_t)np, left_ms < ANSWER_POLL_MS ? left_ms : ANSWER_POLL_MS);
		if (!tty || !(p[np - 1].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		{
			char c;
			ssize_t k = read(g->cfg.tty_in_fd, &c, 1);
			int yes;

			if (k < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (k > 0 && c != '\n') {
				if (used + 1 < sizeof(line))
					line[used++] = c;
				continue;
			}
			char id[GATE_ID_MAX];

			/* A line, or the end of input (nobody there: no). */
			line[used] = '\0';
			snprintf(id, sizeof(id), "%s", r->id);
			yes = k > 0 && (strcmp(line, "y") == 0 || strcmp(line, "yes") == 0 ||
					strcmp(line, "Y") == 0 || strcmp(line, "YES") == 0);
			dprintf(g->cfg.tty_out_fd, "%s\n", yes ? "approved" : "refused");
			if (gate_request_answer(g->run_dir, id, yes, "terminal", err) &&
			    err->code != BL_EINVAL)
				return err->code;
			/* Whoever answered first (terminal or another process) is the answer. */
			gate_request_free(r);
			rc = gate_request_load(g->run_dir, id, r, err);
			if (rc)
				return rc;
			*res = W_ANSWERED;
			return 0;
		}
	}
}

/* ---- deferred requests ---- */

static struct deferred *find_deferred(struct gate *g, const char *id)
{
	for (size_t i = 0; i < g->n_def; i++)
		if (strcmp(g->def[i].pub.request_id, id) == 0)
			return &g->def[i];
	return NULL;
}

static void drop_deferred(struct gate *g, const char *id)
{
	struct deferred *d = find_deferred(g, id);

	if (!d)
		return;
	free(d->action_json);
	*d = g->def[--g->n_def];
}

static int add_deferred(struct gate *g, const struct gate_request *r, const struct gate_decision *d,
			bl_err *err)
{
	struct deferred *nd, *x = find_deferred(g, r->id);

	if (x) {
		x->pub.state = GATE_WAITING;
		x->d = *d;
		return 0;
	}
	nd = realloc(g->def, (g->n_def + 1) * sizeof(*nd));
	if (!nd)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	g->def = nd;
	x = &g->def[g->n_def];
	memset(x, 0, sizeof(*x));
	x->action_json = strdup(r->action_json);
	if (!x->action_json)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	snprintf(x->pub.request_id, sizeof(x->pub.request_id), "%s", r->id);
	x->pub.action_id = r->action_id;
	x->pub.kind = r->kind;
	x->pub.state = GATE_WAITING;
	if (r->n_why)
		snprintf(x->pub.why, sizeof(x->pub.why), "%s: %s",
			 gate_reason_names[r->why[0].reason], r->why[0].detail);
	x->d = *d;
	g->n_def++;
	return 0;
}

size_t gate_deferred_count(const struct gate *g)
{
	return g->n_def;
}

const struct gate_deferred *gate_deferred_get(const struct gate *g, size_t i)
{
	return i < g->n_def ? &g->def[i].pub : NULL;
}

int gate_recheck(struct gate *g, int *refused, bl_err *err)
{
	int ready = 0, no = 0;

	for (size_t i = 0; i < g->n_def; i++) {
		struct deferred *x = &g->def[i];
		struct gate_request r;
		char gid[GATE_ID_MAX];
		bl_err e = { 0 };

		if (gate_request_load(g->run_dir, x->pub.request_id, &r, &e)) {
			gate_tell_once(g, "request_invalid", e.msg);
			continue;
		}
		note_ignored(g, &r);
		if (!gate_request_journaled(g, &r)) {
			char msg[GATE_MSG_MAX];

			/* Replaced by another request under the same id: it answers nothing of this run's. */
			snprintf(msg, sizeof(msg), "request %s in approvals/ is not the one this run's journal "
				 "holds: ignored", r.id);
			gate_tell_once(g, "request_not_journaled", msg);
			x->pub.state = GATE_WAITING;
		} else if (r.answered)
			x->pub.state = r.approved ? GATE_READY : GATE_REFUSED;
		else if (r.status != GATE_REQ_PENDING)
			x->pub.state = GATE_REFUSED;
		else if (all_grantable(&x->d) && gate_grants_find(g, &x->d, gid, sizeof(gid)))
			x->pub.state = GATE_READY;
		else
			x->pub.state = GATE_WAITING;
		if (x->pub.state == GATE_REFUSED && r.status == GATE_REQ_PENDING) {
			int rc = set_status(g, &r, GATE_REQ_REFUSED, &x->d, err);

			if (rc == 0)
				rc = journal_answer(g, &r, "refused", err);
			if (rc) {
				gate_request_free(&r);
				return rc;
			}
		}
		ready += x->pub.state == GATE_READY;
		no += x->pub.state == GATE_REFUSED;
		gate_request_free(&r);
	}
	if (refused)
		*refused = no;
	return ready;
}

/* ---- deciding who may say yes ---- */

/* 0: go ahead; otherwise the code gate_execute returns. */
static int seek_authority(struct gate *g, struct arm *arm, const struct arm_action *a,
			  const struct arm_path *path, const struct gate_image *frame,
			  struct gate_decision *d, bl_err *err)
{
	struct gate_request r;
	char *action_json;
	enum wait_result res;
	int rc;

	if (all_grantable(d) && gate_grants_find(g, d, d->grant_id, sizeof(d->grant_id))) {
		cJSON *b = cJSON_CreateObject();

		cJSON_AddStringToObject(b, "grant", d->grant_id);
		cJSON_AddNumberToObject(b, "run_ns", (double)gate_run_ns(g));
		cJSON_AddItemToObject(b, "decision", gate_decision_to_json(d, GATE_VIEW_OPERATOR));
		return gate_journal(g, "grant_use", b, err);
	}
	{
		cJSON *aj = arm_action_to_json(a);

		action_json = aj ? cJSON_PrintUnformatted(aj) : NULL;
		cJSON_Delete(aj);
		if (!action_json)
			return bl_fail(err, BL_ENOMEM, "out of memory");
	}
	rc = find_request(g, action_json, d, &r, err);
	cJSON_free(action_json);
	if (rc < 0)
		return rc;
	if (rc == 0) {
		rc = file_request(g, a, path, frame, d, &r, err);
		if (rc)
			return rc;
	}
	snprintf(d->request_id, sizeof(d->request_id), "%s", r.id);

	if (!r.answered) {
		if (g->cfg.mode == GATE_UNATTENDED) {
			cJSON *b = cJSON_CreateObject();

			rc = add_deferred(g, &r, d, err);
			cJSON_AddStringToObject(b, "request", r.id);
			if (rc == 0)
				rc = gate_journal(g, "deferred", b, err);
			else
				cJSON_Delete(b);
			gate_request_free(&r);
			return rc ? rc
				  : bl_fail(err, BL_EDEFERRED,
					    "request %s waits for an operator: brushloop approve %s %s",
					    d->request_id, g->run_dir, d->request_id);
		}
		rc = wait_answer(g, &r, &res, err);
		if (rc)
			goto out_req;
		if (res == W_SIGNAL) {
			/* The request stays pending; the hold is what matters now. */
			journal_answer(g, &r, "interrupted", NULL);
			rc = gate_stop_poll(g, arm, err);
			if (rc == 0)
				rc = bl_fail(err, BL_EPAUSED, "interrupted while waiting for an operator");
			goto out_req;
		}
		if (res == W_TIMEOUT) {
			rc = set_status(g, &r, GATE_REQ_TIMED_OUT, d, err);
			if (rc == 0)
				rc = journal_answer(g, &r, "timed_out", err);
			if (rc == 0)
				rc = bl_fail(err, BL_EDENIED,
					     "request %s: no answer in time, which is no", r.id);
			goto out_req;
		}
	}
	/* Answered (now, or while the run was paused). */
	rc = set_status(g, &r, r.approved ? GATE_REQ_USED : GATE_REQ_REFUSED, d, err);
	if (rc == 0)
		rc = journal_answer(g, &r, r.approved ? "approved" : "refused", err);
	drop_deferred(g, r.id);
	if (rc == 0 && !r.approved)
		rc = bl_fail(err, BL_EDENIED, "request %s: the operator said no", r.id);
out_req:
	gate_request_free(&r);
	return rc;
}

/* ---- executing ---- */

int gate_execute(struct gate *g, struct arm *arm, const struct arm_action *a,
		 const struct gate_image *frame, struct gate_decision *d, bl_err *err)
{
	struct arm_path path = { 0 };
	struct arm_status st;
	struct gate_context ctx;
	bl_err xerr = { 0 };
	int rc, xrc, was_after_fault;

	rc = gate_stop_poll(g, arm, err);
	if (rc) {
		fault_decision(d, a, err->msg);
		return rc;
	}
	/* The gate trusts the arm's own idea of where the tool is, not the caller's. */
	rc = arm_status(arm, &st, err);
	if (rc) {
		fault_decision(d, a, err->msg);
		return rc;
	}
	gate_grants_refresh(g); /* a grant's lifetime starts when the run first sees it */
	ctx.first_motion = g->motions == 0;
	ctx.after_fault = g->after_fault;
	was_after_fault = g->after_fault;
	rc = gate_check(g->m, &st.pos_mm, a, &ctx, &path, d, err);
	if (rc)
		goto out_path;
	rc = journal_decision(g, d, a, err);
	if (rc)
		goto out_path;
	if (d->verdict == GATE_DENY) {
		const struct gate_finding *f = gate_decision_primary(d);

		rc = bl_fail(err, BL_EDENIED, "denied: %s: %s", gate_reason_names[f->reason],
			     f->message);
		goto out_path;
	}
	if (d->verdict == GATE_OPERATOR) {
		rc = seek_authority(g, arm, a, &path, frame, d, err);
		if (rc)
			goto out_path;
	}

	arm->signalled = gate_signals_count; /* a streaming backend holds at the first signal */
	xrc = arm->ops->execute(arm, a, &path, &xerr);
	d->executed = xrc == 0;
	if (xrc == 0)
		g->motions++;
	{
		cJSON *b = cJSON_CreateObject();

		if (d->index >= 0)
			cJSON_AddNumberToObject(b, "index", (double)d->index);
		if (a->id >= 0)
			cJSON_AddNumberToObject(b, "id", (double)a->id);
		cJSON_AddStringToObject(b, "kind", arm_kind_names[a->kind]);
		cJSON_AddNumberToObject(b, "segments", (double)path.n);
		cJSON_AddStringToObject(b, "result", xrc == 0 ? "done" : bl_strerror(xrc));
		if (xrc)
			cJSON_AddStringToObject(b, "error", xerr.msg);
		if (d->request_id[0])
			cJSON_AddStringToObject(b, "request", d->request_id);
		if (d->grant_id[0])
			cJSON_AddStringToObject(b, "grant", d->grant_id);
		cJSON_AddNumberToObject(b, "run_ns", (double)gate_run_ns(g)); /* the run's clock goes on from here */
		rc = gate_journal(g, "executed", b, err);
		if (rc)
			goto out_path;
	}
	if (xrc == 0 && was_after_fault) {
		rc = clear_fault(g, err);
		if (rc)
			goto out_path;
	}
	/* A fault the backend reports (or that the status now shows) ends the run: exit 5. */
	if (xrc == BL_ESAFETY) {
		struct arm_status s2;
		bl_err se = { 0 };
		int have = arm_status(arm, &s2, &se) == 0;

		rc = latch_fault(g, have ? &s2 : NULL, xerr.msg, err);
		if (rc == 0)
			rc = bl_fail(err, BL_ESAFETY, "safety stop: %s", xerr.msg);
		goto out_path;
	}
	rc = gate_stop_poll(g, arm, err);
	if (rc == 0 && xrc) {
		*err = xerr;
		rc = xrc;
	}
out_path:
	arm_path_free(&path);
	return rc;
}

int gate_home(struct gate *g, struct arm *arm, struct gate_decision *d, bl_err *err)
{
	struct gate_context ctx;
	struct arm_action a;
	bl_err xerr = { 0 };
	int rc, xrc, was_after_fault = g->after_fault;

	rc = gate_stop_poll(g, arm, err);
	if (rc) {
		fault_decision(d, NULL, err->msg);
		d->kind = ARM_HOME;
		return rc;
	}
	ctx.first_motion = g->motions == 0;
	ctx.after_fault = g->after_fault;
	gate_check_homing(g->m, &ctx, d);
	memset(&a, 0, sizeof(a));
	a.kind = ARM_HOME;
	a.id = -1;
	a.speed_mm_s = d->speed_mm_s;
	a.zones = arm_default_zones(ARM_HOME);
	if ((rc = journal_decision(g, d, &a, err)))
		return rc;
	if (d->verdict == GATE_OPERATOR && (rc = seek_authority(g, arm, &a, NULL, NULL, d, err)))
		return rc;
	arm->signalled = gate_signals_count;
	xrc = arm->ops->home(arm, &xerr);
	d->executed = xrc == 0;
	if (xrc == 0)
		g->motions++;
	{
		cJSON *b = cJSON_CreateObject();

		cJSON_AddStringToObject(b, "kind", "home");
		cJSON_AddStringToObject(b, "result", xrc == 0 ? "done" : bl_strerror(xrc));
		if (xrc)
			cJSON_AddStringToObject(b, "error", xerr.msg);
		if (d->request_id[0])
			cJSON_AddStringToObject(b, "request", d->request_id);
		if ((rc = gate_journal(g, "executed", b, err)))
			return rc;
	}
	if (xrc == 0 && was_after_fault && (rc = clear_fault(g, err)))
		return rc;
	if (xrc == BL_ESAFETY) {
		rc = latch_fault(g, NULL, xerr.msg, err);
		return rc ? rc : bl_fail(err, BL_ESAFETY, "safety stop: %s", xerr.msg);
	}
	rc = gate_stop_poll(g, arm, err);
	if (rc == 0 && xrc) {
		*err = xerr;
		rc = xrc;
	}
	return rc;
}

int gate_reject_malformed(struct gate *g, const char *file, long index, const cJSON *item,
			  const bl_err *parse_err, struct gate_decision *d, bl_err *err)
{
	gate_decide_malformed(file, index, item, parse_err, d);
	return journal_decision(g, d, NULL, err);
}

int gate_tolerance(struct gate *g, const char *kind, double value_de00, struct gate_decision *d,
		   bl_err *err)
{
	int rc;

	gate_check_tolerance(g->m, kind, value_de00, d);
	rc = journal_decision(g, d, NULL, err);
	if (rc)
		return rc;
	if (d->verdict != GATE_ALLOW) {
		const struct gate_finding *f = gate_decision_primary(d);

		return bl_fail(err, BL_EDENIED, "%s", f ? f->message : "tolerance refused");
	}
	return 0;
}

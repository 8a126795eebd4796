/* run_loop.c: the run's loop core: one subtask after another through its kind's handler, deferred work retried, budgets and brakes between, and how a loop's end settles the run. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/json.h"
#include "base/log.h"
#include "base/prof.h"
#include "base/strbuf.h"
#include "engine/run_exec.h"
#include "engine/run_int.h"
#include "engine/run_kind.h"
#include "safety/operator.h"
/* ---- subtasks ---- */

static int begin_subtask(struct run *r, const struct run_kind *kind, const struct plan_subtask *s,
			 bl_err *err)
{
	char name[32];
	cJSON *d = cJSON_CreateObject(), *e;

	run_subtask_name(r, r->st.next, name, sizeof(name));
	journal_set_subtask(&r->j, name);
	/* A subtask a crash interrupted keeps the attempts it used (state.json has them). */
	if (r->st.sub[r->st.next].status != RUN_SUB_RUNNING)
		run_brakes_subtask_start(&r->st.brakes);
	r->st.sub[r->st.next].status = RUN_SUB_RUNNING;
	/* The end condition, written before anything runs. */
	cJSON_AddStringToObject(d, "type", plan_subtask_names[s->type]);
	cJSON_AddNumberToObject(d, "round", r->st.round);
	e = cJSON_AddObjectToObject(d, "expected");
	cJSON_AddNumberToObject(e, "tolerance_de00", s->tolerance_de00);
	kind->expected(run_plan(r), s, d, e);
	cJSON_AddBoolToObject(d, "open_loop", r->st.open_loop);
	r->status_now = 1;
	return run_event(r, "subtask_start", d, err);
}

static int run_subtask(struct run *r, bl_err *err)
{
	const struct plan_subtask *s = &run_plan(r)->subtasks[r->st.next];
	const struct run_kind *kind = run_kind_of(s->type);
	int rc;

	if (!kind)
		return bl_fail(err, BL_EINVAL, "subtask %zu: not a subtask kind (%d)", r->st.next + 1,
			       (int)s->type);
	if ((rc = begin_subtask(r, kind, s, err)) || (rc = run_state_save(r, err)) ||
	    (rc = kind->run(r, s, err)))
		return rc;
	{
		const struct run_sub *sub = &r->st.sub[r->st.next];
		cJSON *d = cJSON_CreateObject();

		cJSON_AddStringToObject(d, "status", run_sub_status_names[sub->status]);
		if (sub->verdict_de00 >= 0)
			cJSON_AddNumberToObject(d, "verdict_de00", sub->verdict_de00);
		/* On disk before it is said: a journal that calls it ended never sees it start again. */
		r->st.next++;
		r->status_now = 1;
		if ((rc = run_state_save(r, err))) {
			cJSON_Delete(d);
			return rc;
		}
		return run_event(r, "subtask_end", d, err);
	}
}

/* ---- corrections and the end ---- */

/* Against the target as mapped into the paints' reach too, when it was: what the run aimed at. */
static int mapped_figures(struct run *r, const struct run_canvas *c, bl_err *err)
{
	double p95, pixel;
	int rc;

	r->st.gamut_share = r->st.final_mapped_de00 = r->st.final_mapped_scielab_1m = -1.0;
	if (!r->gamut.mapped)
		return 0;
	if ((rc = run_canvas_vs_target(r, c, 0, &r->st.final_mapped_de00, &p95, err)) ||
	    (rc = run_canvas_seen(r, c, 0, &pixel, &r->st.final_mapped_scielab_1m, err)))
		return rc;
	r->st.gamut_share = r->gamut.share;
	return 0;
}

static int finish(struct run *r, bl_err *err)
{
	struct run_canvas c = { 0 };
	char p[RUN_PATH_MAX], name[64];
	const char *ext = strrchr(r->target_copy, '.');
	double mean, p95;
	cJSON *d;
	int rc;

	journal_set_subtask(&r->j, "");
	if ((rc = run_observe_canvas(r, "final", &c, err)) ||
	    (rc = run_canvas_vs_target(r, &c, 1, &mean, &p95, err)) ||
	    (rc = run_canvas_seen(r, &c, 1, &r->st.final_pixel_de00, &r->st.final_scielab_1m, err)) ||
	    (rc = mapped_figures(r, &c, err)) ||
	    (rc = run_path(r, "final-canvas.png", p, sizeof(p), err)) ||
	    (rc = run_canvas_save_png(&c, p, err)))
		goto out;
	snprintf(name, sizeof(name), "final-target%s", ext ? ext : "");
	if ((rc = run_path(r, name, p, sizeof(p), err)) || (rc = fs_copy_atomic(r->target_copy, p, 1u << 30, err)))
		goto out;
	r->st.final_mean_de00 = mean;
	r->st.final_p95_de00 = p95;
	/* The last checkpoint's verdict: its observed cells against what the plan predicted. */
	r->st.final_verified = !r->st.open_loop && r->st.n_hist > 0 &&
			       r->st.hist[r->st.n_hist - 1].expected_de00 <= r->m.tolerances.paint_de00;
	snprintf(r->st.state, sizeof(r->st.state), "finished");
	if (r->budget_stopped)
		snprintf(r->st.reason, sizeof(r->st.reason),
			 "stopped at the arm-time budget of %.2f h (%.2f h spent) with the canvas it has: "
			 "%ld of %ld strokes painted", run_budget_s(r) / 3600.0, r->st.cost.arm_s / 3600.0,
			 r->st.strokes_done, r->st.strokes_total);
	else
		snprintf(r->st.reason, sizeof(r->st.reason), "%s",
			 r->st.open_loop ? "open loop: the plan was executed without verification"
			 : r->st.final_verified ? "the final canvas is verified against its prediction"
						: "done, but the final canvas is beyond its prediction's tolerance");
	d = cJSON_CreateObject();
	cJSON_AddNumberToObject(d, "mean_de00", mean);
	cJSON_AddNumberToObject(d, "p95_de00", p95);
	cJSON_AddNumberToObject(d, "pixel_de00", r->st.final_pixel_de00);
	cJSON_AddNumberToObject(d, "scielab_1m", r->st.final_scielab_1m);
	if (r->gamut.mapped) {
		cJSON *g = cJSON_AddObjectToObject(d, "mapped");

		cJSON_AddNumberToObject(g, "share", r->gamut.share);
		cJSON_AddNumberToObject(g, "picture_black_L", r->gamut.picture_black_L);
		cJSON_AddNumberToObject(g, "paint_black_L", r->gamut.paint_black_L);
		cJSON_AddNumberToObject(g, "mean_de00", r->st.final_mapped_de00);
		cJSON_AddNumberToObject(g, "scielab_1m", r->st.final_mapped_scielab_1m);
	}
	cJSON_AddBoolToObject(d, "verified", r->st.final_verified);
	cJSON_AddBoolToObject(d, "budget_spent", r->budget_stopped);
	cJSON_AddStringToObject(d, "frame", strrchr(c.frame, '/') + 1);
	cJSON_AddItemToObject(d, "cost", run_cost_json(&r->st.cost, &r->m.costs));
	rc = run_event(r, "finished", d, err);
out:
	run_canvas_free(&c);
	return rc;
}

/*
 * Drops the requests a person has answered (or that are no longer pending)
 * from the run's list of what waits: STATUS.md lists only what still does.
 * A request file that does not load stays listed; the gate names its problem.
 */
void run_prune_deferred(struct run *r)
{
	int kept = 0;

	for (int i = 0; i < r->st.n_deferred; i++) {
		struct gate_request q;
		int open = 1;

		if (gate_request_load(r->dir, r->st.deferred[i].request, &q, NULL) == 0) {
			open = !q.answered && q.status == GATE_REQ_PENDING;
			gate_request_free(&q);
		}
		if (open)
			r->st.deferred[kept++] = r->st.deferred[i];
	}
	r->st.n_deferred = kept;
}

/* Deferred subtasks of this round whose request is answered: run them now. */
static int retry_deferred(struct run *r, int *waiting, bl_err *err)
{
	int refused = 0, rc;

	*waiting = 0;
	if ((rc = gate_recheck(r->gate, &refused, err)) < 0)
		return rc;
	run_prune_deferred(r);
	for (size_t i = 0; i < r->st.n_sub; i++) {
		const struct plan_subtask *s = &run_plan(r)->subtasks[i];
		struct run_colour *col = plan_kind_coloured(s->type) ? &r->st.colours[s->colour] : NULL;

		if (r->st.sub[i].status != RUN_SUB_DEFERRED)
			continue;
		if (col && col->escalated && !col->accepted) {
			(*waiting)++;
			continue;
		}
		if (col && col->accepted && s->type == PLAN_MIX) {
			char name[32];
			cJSON *d = cJSON_CreateObject();

			r->st.sub[i].status = RUN_SUB_DONE;
			snprintf(r->st.sub[i].note, sizeof(r->st.sub[i].note),
				 "the operator accepted the nearest mix");
			run_subtask_name(r, i, name, sizeof(name));
			journal_set_subtask(&r->j, name);
			cJSON_AddStringToObject(d, "status", "done");
			cJSON_AddStringToObject(d, "note", r->st.sub[i].note);
			if ((rc = run_state_save(r, err))) {
				cJSON_Delete(d);
				return rc;
			}
			if ((rc = run_event(r, "subtask_end", d, err)))
				return rc;
			continue;
		}
		{
			size_t keep = r->st.next;

			/*
			 * run_subtask works on st.next and saves it: until next is
			 * put back and saved, a crash resumes from here, and the
			 * main loop passes over what is already done.
			 */
			r->st.next = i;
			rc = run_subtask(r, err);
			r->st.next = keep;
			if (rc || (rc = run_state_save(r, err)))
				return rc;
			if (r->st.sub[i].status == RUN_SUB_DEFERRED)
				(*waiting)++;
		}
	}
	return 0;
}

/*
 * The night's arm-time budget is spent, or the next subtask would pass it
 * (its strokes at the arm time a stroke has taken so far, mixing and looking
 * included). In a correction round the rest of the round is skipped and the
 * run finishes as after any round; in the plan itself nothing more is
 * painted and the run ends with the canvas it has (journaled once): *spent.
 */
static int budget_spent(struct run *r, int *spent, bl_err *err)
{
	const struct plan_subtask *s = &run_plan(r)->subtasks[r->st.next];
	double budget = run_budget_s(r), next_s = 0.0;
	cJSON *d;

	if (r->st.strokes_done > 0 && run_kind_of(s->type)->paints)
		next_s = r->st.cost.arm_s / (double)r->st.strokes_done * s->n_strokes;
	*spent = r->budget_stopped || r->st.cost.arm_s + next_s > budget;
	if (*spent && !r->budget_stopped && r->st.round > 0) {
		*spent = 0;
		d = cJSON_CreateObject();
		cJSON_AddNumberToObject(d, "round", r->st.round);
		cJSON_AddStringToObject(d, "why", "the arm-time budget has no room for the rest of the round");
		cJSON_AddNumberToObject(d, "arm_s", r->st.cost.arm_s);
		cJSON_AddNumberToObject(d, "budget_s", budget);
		for (size_t i = r->st.next; i < r->st.n_sub; i++)
			if (r->st.sub[i].status == RUN_SUB_PENDING) {
				r->st.sub[i].status = RUN_SUB_SKIPPED;
				snprintf(r->st.sub[i].note, sizeof(r->st.sub[i].note),
					 "the arm-time budget has no room for it");
			}
		r->st.corrections_over = 1;
		return run_event(r, "corrections_stopped", d, err);
	}
	if (!*spent || r->budget_stopped)
		return 0;
	r->budget_stopped = 1;
	d = cJSON_CreateObject();
	cJSON_AddNumberToObject(d, "arm_s", r->st.cost.arm_s);
	cJSON_AddNumberToObject(d, "budget_s", budget);
	cJSON_AddNumberToObject(d, "strokes_done", (double)r->st.strokes_done);
	cJSON_AddNumberToObject(d, "strokes_total", (double)r->st.strokes_total);
	return run_event(r, "budget_spent", d, err);
}

/*
 * Whether another correction round fits in what is left of the budget: a
 * round is a quarter of the plan's strokes, so about a quarter of the arm
 * time the plan took (what is spent less the rounds before, each a quarter).
 */
static int round_fits(const struct run *r)
{
	double round_s = 0.25 * r->st.cost.arm_s / (1.0 + 0.25 * r->st.round);

	return r->st.cost.arm_s + round_s <= run_budget_s(r);
}

static int loop(struct run *r, bl_err *err)
{
	int rc, waiting, spent;

	for (;;) {
		const struct plan *p = run_plan(r);

		while (r->st.next < p->n_subtasks) {
			int status = r->st.sub[r->st.next].status;

			/* Only one not yet run, or the one a crash interrupted: never a done one again. */
			if (status != RUN_SUB_PENDING && status != RUN_SUB_RUNNING) {
				r->st.next++;
				continue;
			}
			if ((rc = run_poll(r, err)) || (rc = budget_spent(r, &spent, err)))
				return rc;
			if (spent)
				return finish(r, err);
			if (r->st.sub[r->st.next].status == RUN_SUB_SKIPPED)
				continue; /* the budget ended the round */
			if ((rc = run_subtask(r, err)))
				return rc;
		}
		if ((rc = retry_deferred(r, &waiting, err)))
			return rc;
		if (waiting) {
			snprintf(r->st.state, sizeof(r->st.state), "paused");
			snprintf(r->st.reason, sizeof(r->st.reason),
				 "%d subtask%s wait%s for the operator (see STATUS.md); everything else is done",
				 waiting, waiting == 1 ? "" : "s", waiting == 1 ? "s" : "");
			r->status_now = 1;
			return bl_fail(err, BL_EPAUSED, "%s", r->st.reason);
		}
		if (r->st.open_loop || r->st.round >= r->m.brakes.correction_rounds ||
		    r->st.corrections_over)
			break;
		if (!round_fits(r)) {
			cJSON *d = cJSON_CreateObject();

			cJSON_AddNumberToObject(d, "round", r->st.round);
			cJSON_AddStringToObject(d, "why", "the arm-time budget has no room for another round");
			cJSON_AddNumberToObject(d, "arm_s", r->st.cost.arm_s);
			cJSON_AddNumberToObject(d, "budget_s", run_budget_s(r));
			if ((rc = run_event(r, "corrections_stopped", d, err)))
				return rc;
			break;
		}
		if (r->st.round > 0 && r->st.brakes.round_best_de00 >= 0.0 &&
		    r->st.brakes.best_canvas_de00 > r->st.brakes.round_best_de00 - 0.05) {
			/* A correction round that did not improve the canvas: another would not either. */
			cJSON *d = cJSON_CreateObject();

			cJSON_AddNumberToObject(d, "round", r->st.round);
			cJSON_AddNumberToObject(d, "best_before_de00", r->st.brakes.round_best_de00);
			cJSON_AddNumberToObject(d, "best_after_de00", r->st.brakes.best_canvas_de00);
			if ((rc = run_event(r, "corrections_stopped", d, err)))
				return rc;
			break;
		}
		rc = run_correction_plan(r, err);
		if (rc < 0)
			return rc;
		if (rc == 1)
			break;
		r->status_now = 1;
		if ((rc = run_state_save(r, err)))
			return rc;
	}
	return finish(r, err);
}

/* Runs the loop and leaves the directory saying where the run stands, whatever happened. */
/* Leaves the directory saying where the run stands after rc, whatever happened. */
int run_settle(struct run *r, int rc, bl_err *err)
{
	bl_err e2;

	/* Another process may drive the run now: this one writes nothing more, and moves nothing. */
	if (r->j.lost)
		return rc ? rc : bl_fail(err, BL_ESAFETY, "%s: the journal is no longer this process's",
					 r->dir_shown);

	if (rc == BL_ESTORAGE && !strcmp(r->st.state, "running")) {
		/* Nothing is retried: the arm is left where its last action ended, the state as last saved. */
		bl_err_prefix(err, "storage error, the run is paused (nothing was retried; free space "
			      "or raise the file-size limit, then `brushloop resume %s`)", r->dir_shown);
		snprintf(r->st.state, sizeof(r->st.state), "paused");
		snprintf(r->st.reason, sizeof(r->st.reason), "%s", err->msg);
		rc = err->code = BL_EPAUSED;
	}
	if (rc == BL_EPAUSED && !strcmp(r->st.state, "running") && gate_signals_count() > 0)
		run_paused_by_signal(r);
	if (rc && !strcmp(r->st.state, "running")) {
		const char *state = rc == BL_EPAUSED || rc == BL_EDEFERRED ? "paused"
				    : rc == BL_ESAFETY			   ? "safety_stop"
				    : rc == BL_EBRAKE			   ? "braked"
									   : "failed";

		snprintf(r->st.state, sizeof(r->st.state), "%s", state);
		snprintf(r->st.reason, sizeof(r->st.reason), "%s", err->msg);
	}
	if (rc == BL_EDEFERRED)
		rc = err->code = BL_EPAUSED; /* the message stands */
	r->st.wall_s = r->wall_s0 + (double)(clk_real_ns() - r->wall0_ns) * 1e-9;
	r->status_now = 1;
	if (run_state_save(r, &e2) && rc == 0) {
		*err = e2;
		rc = e2.code;
	}
	{
		cJSON *dj = cJSON_CreateObject();

		cJSON_AddStringToObject(dj, "state", r->st.state);
		cJSON_AddStringToObject(dj, "reason", r->st.reason);
		run_event(r, "process_end", dj, &e2);
	}
	/* The morning report: a picture of the run for a person; failing to draw it never fails the run. */
	{
		enum prof_phase prev = prof_enter(PROF_REPORT);

		if (r->opt.report && r->opt.report(r->dir, &e2))
			log_warn("no report.html: %s", e2.msg);
		prof_leave(prev);
	}
	run_progress(r, 1);
	if (!r->opt.quiet && r->opt.progress_live) {
		if (write(r->opt.progress_fd >= 0 ? r->opt.progress_fd : 2, "\n", 1) < 0) {
			/* a closed terminal is no reason to fail */
		}
	}
	return rc;
}

/*
 * The loop core, entered by a start (homed: the arm has just been homed and
 * the blank canvas observed) and by a resume. Every way out is settled here.
 */
int run_drive(struct run *r, int homed, bl_err *err)
{
	int rc;

	r->strokes_at_start = r->st.strokes_done;
	rc = homed ? 0 : run_home(r, err);
	if (rc == 0)
		rc = run_mix_finish_pending(r, err);
	if (rc == 0)
		rc = loop(r, err);
	return run_settle(r, rc, err);
}

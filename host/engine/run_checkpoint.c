/* run_checkpoint.c: the checkpoint subtask: the whole canvas observed against the plan's prediction, and the brakes it feeds. */
#include <stdio.h>
#include <string.h>

#include "engine/run_int.h"
#include "engine/run_kind.h"

static int checkpoint_run(struct run *r, const struct plan_subtask *s, bl_err *err)
{
	struct run_sub *sub = &r->st.sub[r->st.next];
	struct run_canvas c = { 0 };
	char name[32];
	double verdict;
	enum run_brake b;
	int rc;

	run_subtask_name(r, r->st.next, name, sizeof(name));
	for (size_t i = 0; i < s->n_actions; i++)
		if ((rc = run_plan_action(r, s, &s->actions[i], err)))
			return rc;
	if ((rc = run_observe_record(r, s, name, &c, &verdict, err)))
		return rc;
	sub->verdict_de00 = verdict;
	{
		const struct run_hist *h = &r->st.hist[r->st.n_hist - 1];
		cJSON *dj = cJSON_CreateObject();

		cJSON_AddNumberToObject(dj, "canvas_mean_de00", h->mean_de00);
		cJSON_AddNumberToObject(dj, "canvas_p95_de00", h->p95_de00);
		cJSON_AddNumberToObject(dj, "predicted_mean_de00", s->predicted_mean_de00);
		cJSON_AddNumberToObject(dj, "observed_vs_predicted_de00", verdict);
		cJSON_AddNumberToObject(dj, "tolerance_de00", s->tolerance_de00);
		cJSON_AddStringToObject(dj, "verdict", r->st.open_loop ? "not verified (open loop)"
						       : verdict <= s->tolerance_de00 ? "pass" : "fail");
		cJSON_AddStringToObject(dj, "frame", strrchr(c.frame, '/') + 1);
		if ((rc = run_event(r, "checkpoint", dj, err)))
			goto out;
		/* The second judge, before the verdict counts: a disagreement leaves the checkpoint to be made again. */
		if (!r->st.open_loop && (rc = run_review_checkpoint(r, s, &c, verdict, err)))
			goto out;
		sub->status = RUN_SUB_DONE;
		run_progress(r, 1); /* the canvas's error is new: say it */
		if (!r->st.open_loop) {
			b = run_brakes_checkpoint(&r->st.brakes, &r->m.brakes, h->mean_de00,
						  s->predicted_mean_de00, 0.05);
			if (b == RUN_BRAKE_WANDERING && r->st.round > 0) {
				/*
				 * Corrections that do not improve the canvas are over: the rest of
				 * the round is skipped and the run finishes with what it has. The
				 * plan wandering (round 0) is a brake: something is wrong.
				 */
				cJSON *d = cJSON_CreateObject();

				cJSON_AddNumberToObject(d, "round", r->st.round);
				cJSON_AddStringToObject(d, "why", r->st.brakes.reason);
				if ((rc = run_event(r, "corrections_stopped", d, err)))
					goto out;
				for (size_t i = r->st.next + 1; i < r->st.n_sub; i++)
					if (r->st.sub[i].status == RUN_SUB_PENDING) {
						r->st.sub[i].status = RUN_SUB_SKIPPED;
						snprintf(r->st.sub[i].note, sizeof(r->st.sub[i].note),
							 "corrections stopped improving the canvas");
					}
				r->st.corrections_over = 1;
			} else if (b != RUN_BRAKE_NONE) {
				rc = run_brake(r, b, err);
				goto out;
			}
		}
	}
out:
	run_canvas_free(&c);
	return rc;
}

static void checkpoint_expected(const struct plan *p, const struct plan_subtask *s, cJSON *d, cJSON *e)
{
	cJSON_AddNumberToObject(e, "predicted_mean_de00", s->predicted_mean_de00);
	run_cells_expected(s, e);
}

static void checkpoint_what(const struct plan *p, const struct plan_subtask *s, char *buf, size_t n)
{
	snprintf(buf, n, "checkpoint: observe the whole canvas");
}

const struct run_kind run_kind_checkpoint = {
	.run = checkpoint_run,
	.expected = checkpoint_expected,
	.what = checkpoint_what,
	.paints = 0,
};

/* run_planner.c: the run asks its planner for a plan or a correction, counts the call and its wall time, and keeps only an admitted answer. */
#include <string.h>

#include "engine/run_int.h"

int run_planner_ask(struct run *r, const struct planner_request *q, struct plan *out, bl_err *err)
{
	struct planner_denial why;
	int64_t t0 = clk_real_ns();
	cJSON *d;
	int rc, rc2;

	memset(out, 0, sizeof(*out));
	rc = r->planner.ops->propose(r->planner.ctx, q, out, err);
	/* Wall time, not the run clock: a planner's time is real even when the arm is simulated. */
	r->st.cost.planner_calls++;
	r->st.cost.planner_s += (double)(clk_real_ns() - t0) * 1e-9;
	if (rc) {
		plan_free(out);
		return rc;
	}
	rc = planner_admit(q, out, &why, err);
	if (rc && rc != BL_EDENIED) {
		plan_free(out);
		return rc;
	}
	d = rc ? planner_denial_json(&why, GATE_VIEW_OPERATOR) : cJSON_CreateObject();
	cJSON_AddStringToObject(d, "planner", r->planner.ops->name);
	cJSON_AddStringToObject(d, "phase", planner_phase_names[q->phase]);
	cJSON_AddNumberToObject(d, "round", q->round);
	cJSON_AddNumberToObject(d, "subtasks", (double)out->n_subtasks);
	rc2 = run_event(r, rc ? "planner_denied" : "planner_answer", d, err);
	if (rc == 0 && rc2 == 0)
		return 0;
	plan_free(out);
	if (rc2)
		return rc2;
	return bl_fail(err, BL_EINVAL, "the %s planner's %s (round %d) was not admitted: %s: %s",
		       r->planner.ops->name, planner_phase_names[q->phase], q->round,
		       planner_reason_names[why.reason], why.detail);
}

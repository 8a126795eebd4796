/* planner.c: the built-in planner behind the planner interface, and the admission decision as JSON. */
#include "planner/planner.h"

#include <string.h>

const char *const planner_phase_names[] = { "plan", "correct", NULL };

const char *const planner_reason_names[] = {
	[PLANNER_R_OK] = "ok",
	[PLANNER_R_FAILED] = "planner_failed",
	[PLANNER_R_GONE] = "gone",
	[PLANNER_R_LATE] = "late",
	[PLANNER_R_TOO_LARGE] = "too_large",
	[PLANNER_R_MALFORMED] = "malformed",
	[PLANNER_R_BUDGET] = "budget",
	[PLANNER_R_HEADER] = "header",
	[PLANNER_R_TOO_MANY] = "too_many",
	[PLANNER_R_BAD_SUBTASK] = "bad_subtask",
	[PLANNER_R_BAD_CELL] = "bad_cell",
	[PLANNER_R_TOLERANCE] = "tolerance",
	[PLANNER_R_ACTION_KIND] = "action_kind",
	[PLANNER_R_ACTION] = "action",
	[PLANNER_R_PHASE] = "phase",
	[PLANNER_R_OVER_BUDGET] = "over_budget",
	[PLANNER_R_COUNT] = NULL,
};
_Static_assert(sizeof(planner_reason_names) / sizeof(planner_reason_names[0]) == PLANNER_R_COUNT + 1,
	       "a planner reason without a name");
_Static_assert(sizeof(planner_phase_names) / sizeof(planner_phase_names[0]) == PLANNER_PHASE_COUNT + 1,
	       "a planner phase without a name");

static int builtin_plan(const struct planner_request *q, struct plan *out, bl_err *err)
{
	return plan_make(q->in, q->opt, out, err);
}

static int builtin_correct(const struct planner_request *q, struct plan *out, bl_err *err)
{
	if (!q->painting || !q->observed)
		return bl_fail(err, BL_EINVAL, "a correction needs the painting's plan and an observed canvas");
	return plan_correct(q->painting, q->in, q->observed, q->opt, out, err);
}

/* One handler a phase; the table's size is the phase count, so a new phase without one does not compile. */
static int (*const builtin_phase[PLANNER_PHASE_COUNT])(const struct planner_request *, struct plan *,
						       bl_err *) = {
	[PLANNER_PLAN] = builtin_plan,
	[PLANNER_CORRECT] = builtin_correct,
};

static int builtin_propose(void *ctx, const struct planner_request *q, struct plan *out, cJSON **claims,
			   struct planner_denial *why, bl_err *err)
{
	(void)ctx;
	(void)why;
	if (claims)
		*claims = NULL;
	memset(out, 0, sizeof(*out));
	if ((unsigned)q->phase >= PLANNER_PHASE_COUNT)
		return bl_fail(err, BL_EINVAL, "planner: unknown phase %d", (int)q->phase);
	return builtin_phase[q->phase](q, out, err);
}

static const struct planner_ops builtin_ops = {
	.name = "builtin",
	.propose = builtin_propose,
	.told = NULL,
	.close = NULL,
};

void planner_builtin(struct planner *out)
{
	out->ops = &builtin_ops;
	out->ctx = NULL;
}

void planner_close(struct planner *p)
{
	if (p->ops && p->ops->close)
		p->ops->close(p->ctx);
	p->ops = NULL;
	p->ctx = NULL;
}

cJSON *planner_denial_json(const struct planner_denial *why, enum gate_view view)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "reason", planner_reason_names[why->reason]);
	cJSON_AddNumberToObject(o, "subtask", (double)why->subtask);
	cJSON_AddNumberToObject(o, "action", (double)why->action);
	cJSON_AddStringToObject(o, "field", why->field);
	cJSON_AddStringToObject(o, "message", why->message);
	/* The planner's view has no figures: the detail is the operator's. */
	if (view == GATE_VIEW_OPERATOR)
		cJSON_AddStringToObject(o, "detail", why->detail);
	if (why->has_gate)
		cJSON_AddItemToObject(o, "gate", gate_decision_to_json(&why->gate, view));
	return o;
}

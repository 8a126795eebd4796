/* planner_replay.c: a phase's admission decision made again from what the run kept of it (request.json, answer.json), for audits and tests. */
#include "planner/planner_replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/json.h"
#include "planner/planner_proto.h"

/* What the run had left, as the request told the planner (budgets.arm_time_s_left, wells[].left_ml). */
struct replay_left {
	struct planner_budget b;
	double wells_ml[CFG_MAX_WELLS];
};

static int left_of(const cJSON *req, const struct machine *m, struct replay_left *l, struct planner_request *q,
		   bl_err *err)
{
	const cJSON *b = cJSON_GetObjectItemCaseSensitive(req, "budgets");
	const cJSON *arm = cJSON_GetObjectItemCaseSensitive(b, "arm_time_s_left");
	const cJSON *wells = cJSON_GetObjectItemCaseSensitive(req, "wells"), *w;
	int n = 0;

	if (!arm)
		return 0; /* a request from before the run's budget was held: none */
	if (!cJSON_IsNumber(arm) || cJSON_GetArraySize(wells) != m->n_wells)
		return bl_fail(err, BL_EINVAL, "request.json: budgets.arm_time_s_left or wells not the machine's");
	l->b.arm_time_s = arm->valuedouble;
	cJSON_ArrayForEach(w, wells) {
		const cJSON *ml = cJSON_GetObjectItemCaseSensitive(w, "left_ml");

		if (!cJSON_IsNumber(ml))
			return bl_fail(err, BL_EINVAL, "request.json: wells[%d].left_ml is not a number", n);
		l->wells_ml[n++] = ml->valuedouble;
	}
	l->b.wells_ml = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(b, "refill_ok")) ? NULL : l->wells_ml;
	q->left = &l->b;
	return 0;
}

/* The request's fields admission reads, back into a request. */
static int request_of(const cJSON *req, const struct machine *m, struct plan_inputs *in,
		      struct plan_options *po, struct plan *painting, struct replay_left *left,
		      struct planner_request *q, bl_err *err)
{
	const cJSON *strokes;
	const char *phase = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(req, "phase"));
	const cJSON *opt = cJSON_GetObjectItemCaseSensitive(req, "options");
	const cJSON *cell = cJSON_GetObjectItemCaseSensitive(opt, "cell_mm");
	const cJSON *round = cJSON_GetObjectItemCaseSensitive(req, "round");
	long v;
	int rc;

	memset(q, 0, sizeof(*q));
	memset(in, 0, sizeof(*in));
	plan_options_default(po, m);
	in->machine = m;
	in->target_hash = cJSON_GetStringValue(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(req, "target"), "hash"));
	if (!phase || !in->target_hash || !cJSON_IsNumber(cell) || !json_whole(round, 0, 1000, &v))
		return bl_fail(err, BL_EINVAL, "request.json: not a planner request");
	po->cell_mm = cell->valuedouble;
	strokes = cJSON_GetObjectItemCaseSensitive(opt, "max_strokes");
	if (!cJSON_IsNumber(strokes))
		return bl_fail(err, BL_EINVAL, "request.json: options.max_strokes is not a number");
	po->max_strokes = (int)strokes->valuedouble;
	if ((rc = left_of(req, m, left, q, err)))
		return rc;
	q->phase = strcmp(phase, "correct") == 0 ? PLANNER_CORRECT : PLANNER_PLAN;
	q->round = (int)v;
	q->in = in;
	q->opt = po;
	if (q->phase == PLANNER_CORRECT) {
		if ((rc = plan_from_json(cJSON_GetObjectItemCaseSensitive(req, "painting"), "request.json: painting",
					 painting, err)))
			return rc;
		q->painting = painting;
	}
	return 0;
}

int planner_replay(const char *record_dir, const struct machine *m, cJSON **out, bl_err *err)
{
	char p[CFG_PATH_MAX + 32], *text = NULL;
	struct planner_denial why;
	struct plan_options po;
	struct plan_inputs in;
	struct planner_request q;
	struct replay_left left;
	struct plan painting = { 0 }, answer = { 0 };
	const cJSON *id;
	cJSON *req = NULL, *claims = NULL;
	size_t n;
	long idv;
	int rc;

	*out = NULL;
	snprintf(p, sizeof(p), "%s/request.json", record_dir);
	if ((rc = json_parse_file(p, &req, err)) || (rc = request_of(req, m, &in, &po, &painting, &left, &q, err)))
		goto out;
	id = cJSON_GetObjectItemCaseSensitive(req, "id");
	snprintf(p, sizeof(p), "%s/answer.json", record_dir);
	if ((rc = fs_read_file(p, (size_t)1 << 31, &text, &n, err)))
		goto out;
	/* The same two steps as the run: the answer read strictly, then admitted. */
	rc = planner_answer_parse(text, n, &q, json_whole(id, 0, 1e15, &idv) ? idv : -1, &answer, &claims,
				  &why, err);
	if (rc == 0)
		rc = planner_admit(&q, &answer, &why, err);
	if (rc == 0 || rc == BL_EDENIED) {
		*out = rc ? planner_denial_json(&why, GATE_VIEW_OPERATOR) : cJSON_CreateObject();
		cJSON_AddBoolToObject(*out, "admitted", rc == 0);
		rc = 0;
	}
out:
	free(text);
	cJSON_Delete(req);
	cJSON_Delete(claims);
	plan_free(&painting);
	plan_free(&answer);
	return rc;
}

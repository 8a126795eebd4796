/* run_correct.c: the plans a run asks its planner for: what they are made from, and a correction round from the last observation. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "engine/run_int.h"
#include "engine/run_kind.h"

void run_plan_inputs(struct run *r, struct plan_inputs *in)
{
	memset(in, 0, sizeof(*in));
	in->machine = &r->m;
	in->solver = &r->mixer.solver;
	in->target = &r->target.lab;
	in->target_file = r->plan.target_file[0] ? r->plan.target_file : r->target_copy;
	in->target_hash = r->target.hash;
	in->target_w = r->target.w;
	in->target_h = r->target.h;
}

void run_plan_options(const struct run *r, struct plan_options *po)
{
	plan_options_default(po, &r->m);
	if (r->opt.max_strokes > 0)
		po->max_strokes = r->opt.max_strokes;
	if (r->opt.colours > 0)
		po->colours = r->opt.colours;
}

long run_plan_strokes(const struct plan *p)
{
	long n = 0;

	for (size_t i = 0; i < p->n_subtasks; i++)
		n += run_kind_of(p->subtasks[i].type)->paints ? p->subtasks[i].n_strokes : 0;
	return n;
}

int run_correction_load(struct run *r, int round, bl_err *err)
{
	char name[64], p[RUN_PATH_MAX];

	plan_free(&r->corr);
	snprintf(name, sizeof(name), "corrections-%d.json", round);
	if (round == 0)
		return 0;
	return run_path(r, name, p, sizeof(p), err) ? err->code : plan_load(p, &r->corr, err);
}

/* Plans corrective strokes from the last observation; 1 when there is nothing left to correct. */
int run_correction_plan(struct run *r, bl_err *err)
{
	color_lab looks[PLAN_MAX_COLOURS];
	double hiding[PLAN_MAX_COLOURS], mean;
	struct run_canvas c = { 0 };
	struct plan_raster obs = { 0 };
	struct plan_inputs in;
	struct plan_options po;
	struct plan corr = { 0 };
	char name[64], p[RUN_PATH_MAX];
	cJSON *d;
	int rc;

	journal_set_subtask(&r->j, "");
	if ((rc = run_observe_canvas(r, "before-correction", &c, err)) ||
	    (rc = run_canvas_to_raster(r, &c, &obs, err)))
		goto out;
	{
		double p95;

		if ((rc = run_canvas_vs_target(r, &c, 0, &mean, &p95, err)))
			goto out;
		run_brakes_round(&r->st.brakes, mean);
	}
	run_plan_inputs(r, &in);
	run_plan_options(r, &po);
	/* A correction round is a fraction of the painting's budget. */
	po.max_strokes = (int)fmax(10, 0.25 * (double)run_plan_strokes(&r->plan));
	/*
	 * Corrections are placed with each colour as its batches showed it on this
	 * canvas, not as mixed: a light paint over the ground, a thin film, lands
	 * elsewhere, and strokes planned with the mix's colour gain nothing there.
	 * Once its coat is learnt (how far a stroke takes a cell from what was
	 * there towards the mix), a colour is placed as the mix laid at that
	 * coat: a pale paint over a pale ground then gets the strokes it needs,
	 * where a look learnt over the gesso would not hold over another colour.
	 */
	for (int k = 0; k < r->plan.n_colours; k++) {
		const struct run_colour *col = &r->st.colours[k];

		looks[k] = run_colour_paint(r, k);
		hiding[k] = 1.0;
		if (col->coat_weight > 0.0) {
			/* A coat learnt: the mix hides that much of what is under it. */
			hiding[k] = fmin(1.0, fmax(0.1, col->coat / po.opacity));
		} else if (col->canvas_cells > 0) {
			looks[k].L += col->canvas_offset.L;
			looks[k].a += col->canvas_offset.a;
			looks[k].b += col->canvas_offset.b;
		}
	}
	po.looks = looks;
	po.hiding = hiding;
	{
		struct planner_request q = { .phase = PLANNER_CORRECT, .round = r->st.round + 1, .in = &in,
					     .opt = &po, .painting = &r->plan, .observed = &obs };

		if ((rc = run_planner_ask(r, &q, &c, &corr, err)))
			goto out;
	}
	d = cJSON_CreateObject();
	cJSON_AddNumberToObject(d, "round", r->st.round + 1);
	cJSON_AddNumberToObject(d, "strokes", corr.n_strokes);
	cJSON_AddNumberToObject(d, "unfixable_cells", (double)corr.n_unfixable);
	cJSON_AddNumberToObject(d, "predicted_mean_de00", corr.mean_de00);
	cJSON_AddNumberToObject(d, "canvas_mean_de00", mean);
	if ((rc = run_event(r, "correction_planned", d, err)))
		goto out;
	if (corr.n_strokes == 0) {
		rc = 1;
		goto out;
	}
	snprintf(name, sizeof(name), "corrections-%d.json", r->st.round + 1);
	if ((rc = run_path(r, name, p, sizeof(p), err)) || (rc = plan_save(p, &corr, err)) ||
	    (rc = run_file_written(r, name, err)))
		goto out;
	plan_free(&r->corr);
	r->corr = corr;
	memset(&corr, 0, sizeof(corr));
	/* Its mixes aim at the substitutes exactly, as when a later process loads it. */
	run_apply_substitutes(r);
	r->st.round++;
	r->st.rounds_planned = r->st.round;
	run_retry_clear(&r->st.retry);
	r->st.next = 0;
	r->st.strokes_total += r->corr.n_strokes;
	rc = run_state_resize(&r->st, r->corr.n_subtasks, err);
out:
	plan_free(&corr);
	plan_raster_free(&obs);
	run_canvas_free(&c);
	return rc;
}

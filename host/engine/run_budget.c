/* run_budget.c: the night's arm-time budget: a plan sized so that its expected arm time fits it, and what it buys. */
#include <math.h>
#include <stdlib.h>

#include "engine/run_int.h"

/* The most strokes a budget may buy without --max-strokes: a plan of more takes minutes to make. */
#define BUDGET_MAX_STROKES 8000
/* Below this a plan covers next to nothing: a budget that buys fewer still gets these. */
#define BUDGET_MIN_STROKES 10

double run_budget_s(const struct run *r)
{
	double h = r->opt.arm_hours > 0.0 ? r->opt.arm_hours : r->m.painting.arm_hours;

	/* Never past the arm-time brake: the budget is what the run plans to, the brake what stops it. */
	return fmin(h * 3600.0, r->m.brakes.arm_time_s);
}

double run_expected_arm_s(int open_loop, double plan_arm_s)
{
	/*
	 * Factors measured on whole runs of the five example targets at 300
	 * strokes on the example machine (docs/run.md, "Estimates"): the
	 * machine's arm time with mixing, retries and the correction rounds is
	 * 1.45 times the plan's; open loop 1.3 (the plan's own arm time is short
	 * of the machine's).
	 */
	return plan_arm_s * (open_loop ? 1.3 : 1.45);
}

/* A plan of n strokes into r->plan (freed first), and its expected arm time. */
static int trial(struct run *r, const struct plan_inputs *in, struct plan_options *po, int n,
		 double *plan_arm_s, double *expected_s, bl_err *err)
{
	int rc;

	plan_free(&r->plan);
	po->max_strokes = n;
	/* The plan's motion at the arm's own acceleration: the planner's figure is its working one's. */
	if ((rc = plan_make(in, po, &r->plan, err)) ||
	    (rc = plan_motion_time_s(&r->plan, &r->m, r->m.limits.soft.accel_mm_s2, plan_arm_s, err)))
		return rc;
	*expected_s = run_expected_arm_s(r->opt.open_loop, *plan_arm_s);
	return 0;
}

/*
 * Arm time grows more slowly than strokes (the finer passes' strokes are
 * shorter, and mixes take their time whatever the count: on chelsea 300, 1000
 * and 2000 strokes are expected to take 1.7, 2.9 and 4.0 h), about as a power
 * of the count: the next count is aimed with the power the last two trials
 * show (0.45 before there are two), a little short of the budget.
 */
static int aim(int n, double e, int n_prev, double e_prev, double budget_s)
{
	double k = 0.45;

	if (n_prev > 0 && n_prev != n && e_prev > 0 && e > 0 && e != e_prev)
		k = fmin(1.5, fmax(0.15, log(e / e_prev) / log((double)n / n_prev)));
	return (int)floor(n * pow(0.97 * budget_s / e, 1.0 / k));
}

int run_budget_plan(struct run *r, const struct plan_inputs *in, struct plan_options *po,
		    double *plan_arm_s, bl_err *err)
{
	double budget = run_budget_s(r), e = 0, e_prev = 0, fit_e = -1, arm = 0, fit_arm = 0;
	int cap = r->opt.max_strokes > 0 ? r->opt.max_strokes : BUDGET_MAX_STROKES;
	int n = r->opt.max_strokes > 0 ? cap : (cap < 600 ? cap : 600), n_prev = 0, fit = 0, over = 0;
	int rc;

	for (int t = 0; t < 6; t++) {
		int next;

		if ((rc = trial(r, in, po, n, &arm, &e, err)))
			return rc;
		if (e <= budget) {
			fit = n;
			fit_e = e;
			fit_arm = arm;
		} else {
			over = n;
		}
		/*
		 * Good enough: the cap fits, the picture needs no more strokes (the
		 * planner stopped short of n: no stroke left would remove enough
		 * error), or the count lies within 5 % below one that does not fit.
		 */
		if (fit == cap || (fit == n && r->plan.n_strokes < n) ||
		    (fit && over && over - fit <= fmax(5, 0.05 * fit)))
			break;
		next = aim(n, e, n_prev, e_prev, budget);
		next = next < BUDGET_MIN_STROKES ? BUDGET_MIN_STROKES : next > cap ? cap : next;
		if (fit && next <= fit)
			next = fit + (over ? (over - fit) / 2 : fit / 4 + 1);
		if (over && next >= over)
			next = fit ? fit + (over - fit) / 2 : (int)(over * 0.8);
		if (next == n || (next < BUDGET_MIN_STROKES && !fit) || (n == BUDGET_MIN_STROKES && !fit))
			break;
		n_prev = n;
		e_prev = e;
		n = next < BUDGET_MIN_STROKES ? BUDGET_MIN_STROKES : next;
	}
	/* The plan kept is the largest that fits (or the smallest tried when none does). */
	if (fit && fit != n && (rc = trial(r, in, po, fit, &arm, &e, err)))
		return rc;
	*plan_arm_s = fit ? fit_arm : arm;
	(void)fit_e;
	return 0;
}

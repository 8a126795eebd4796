/* mix_run.c: the closed mixing loop over a cell and a camera (mix_run), and trials of it over many targets (mix_trial). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/rng.h"
#include "color/mix_impl.h"

/*
 * Carries out a dispensing action, recording each half in the job as it is
 * done: a stop between discarding the old cell and filling the new one
 * leaves a job with an empty cell, which mix_run refills on resuming.
 */
static int carry_out(const struct mix_ops *ops, struct mix_job *job, const struct mix_action *act,
		     bl_err *err)
{
	int rc;

	if (act->kind == MIX_ACT_FRESH) {
		rc = ops->fresh_cell(ops->ctx, err);
		if (rc)
			return rc;
		/* No clean cell: what the cell holds stays in it, out of the room for everything after. */
		if (job->same_cell) {
			int held = 0;

			for (int i = 0; i < MIX_MAX_PAINTS; i++)
				held += job->have[i];
			mix_limits_cap(&job->lim, job->lim.max_units - held);
		}
		mix_apply_discard(job);
		if (ops->on_applied) {
			rc = ops->on_applied(ops->ctx, job, err);
			if (rc)
				return rc;
		}
	}
	rc = ops->dispense(ops->ctx, act->units, err);
	if (rc)
		return rc;
	mix_apply_dispense(job, act->units);
	return ops->on_applied ? ops->on_applied(ops->ctx, job, err) : 0;
}

static int cell_empty(const struct mix_job *job)
{
	for (int i = 0; i < MIX_MAX_PAINTS; i++)
		if (job->have[i])
			return 0;
	return 1;
}

int mix_run(const struct mix_model *m, struct mix_learn *l, struct mix_job *job,
	    const color_lab *target, const struct mix_limits *lim, const struct mix_ops *ops,
	    struct mix_action *last, bl_err *err)
{
	struct mix_action act;
	int rc;

	if (job->finished)
		return bl_fail(err, BL_EINVAL, "this mix has already finished");
	if (job->cells == 0) {
		rc = mix_begin(m, l, job, target, lim, &act, err);
		if (rc == 0 && ops->on_action)
			rc = ops->on_action(ops->ctx, job, &act, err);
		if (rc == 0 && act.kind == MIX_ACT_FRESH)
			rc = carry_out(ops, job, &act, err);
		if (rc)
			return rc;
		*last = act;
	}
	/* A job stopped between emptying a cell and filling it: fill it. */
	if (!job->finished && cell_empty(job)) {
		rc = mix_refill(m, l, job, &act, err);
		if (rc == 0 && ops->on_action)
			rc = ops->on_action(ops->ctx, job, &act, err);
		if (rc == 0)
			rc = carry_out(ops, job, &act, err);
		if (rc)
			return rc;
		*last = act;
	}
	/* A resumed job holds a dispensed cell: it is measured, never dispensed again. */
	while (!job->finished) {
		color_lab meas;

		rc = ops->measure(ops->ctx, &meas, err);
		job->same_cell = ops->clean_cell_left && !ops->clean_cell_left(ops->ctx);
		if (rc == 0)
			rc = mix_step(m, l, job, &meas, &act, err);
		if (rc == 0 && ops->on_action)
			rc = ops->on_action(ops->ctx, job, &act, err);
		if (rc == 0 && (act.kind == MIX_ACT_FRESH || act.kind == MIX_ACT_ADD))
			rc = carry_out(ops, job, &act, err);
		if (rc)
			return rc;
		*last = act;
	}
	return 0;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

/* Nearest-rank percentile of n sorted values. */
static double pct(const double *v, int n, double p)
{
	int k;

	if (n == 0)
		return 0.0;
	k = (int)ceil(p * n) - 1;
	return v[k < 0 ? 0 : k >= n ? n - 1 : k];
}

/* A colour the paints mix: a random recipe of 1..max_paints distinct paints, 1..9 units each. */
static void draw_target(const struct mix_model *m, const struct mix_limits *lim, rng *r,
			color_lab *out)
{
	for (;;) {
		double amt[MIX_MAX_PAINTS] = { 0 };
		int k = 1 + (int)rng_below(r, (uint64_t)(lim->max_paints < 3 ? lim->max_paints : 3));
		int total = 0;

		for (int j = 0; j < k; j++) {
			int i = (int)rng_below(r, (uint64_t)m->n_paints), u = 1 + (int)rng_below(r, 9);

			if (lim->exclude >> i & 1 || amt[i] > 0.0)
				continue;
			amt[i] = u;
			total += u;
		}
		if (total < lim->min_units || total > lim->max_units)
			continue;
		mix_predict(m, NULL, amt, out);
		return;
	}
}

/*
 * The trial's view of the world: the caller's ops, with every measurement
 * paired with the truth of the same cell when the world can tell it. The
 * loop sees only the measurement.
 */
struct trial_world {
	const struct mix_ops *inner;
	color_lab last_meas, last_truth;
	int has_last;
	double *cam_truth;           /* CIEDE2000 of each measurement against its truth */
	int n_cam_truth, cap_cam_truth;
};

static int tw_fresh(void *ctx, bl_err *err)
{
	struct trial_world *w = ctx;

	return w->inner->fresh_cell(w->inner->ctx, err);
}

static int tw_dispense(void *ctx, const int *units, bl_err *err)
{
	struct trial_world *w = ctx;

	return w->inner->dispense(w->inner->ctx, units, err);
}

static int tw_measure(void *ctx, color_lab *out, bl_err *err)
{
	struct trial_world *w = ctx;
	int rc = w->inner->measure(w->inner->ctx, out, err);

	w->has_last = 0;
	if (rc || !w->inner->truth)
		return rc;
	rc = w->inner->truth(w->inner->ctx, &w->last_truth, err);
	if (rc)
		return rc;
	w->last_meas = *out;
	w->has_last = 1;
	if (w->n_cam_truth == w->cap_cam_truth) {
		int cap = w->cap_cam_truth ? 2 * w->cap_cam_truth : 256;
		double *p = realloc(w->cam_truth, sizeof(double) * (size_t)cap);

		if (!p)
			return bl_fail(err, BL_ENOMEM, "out of memory");
		w->cam_truth = p;
		w->cap_cam_truth = cap;
	}
	w->cam_truth[w->n_cam_truth++] = color_de00(out, &w->last_truth);
	return 0;
}

static int tw_on_action(void *ctx, const struct mix_job *job, const struct mix_action *act,
			bl_err *err)
{
	struct trial_world *w = ctx;

	return w->inner->on_action ? w->inner->on_action(w->inner->ctx, job, act, err) : 0;
}

static int tw_on_applied(void *ctx, const struct mix_job *job, bl_err *err)
{
	struct trial_world *w = ctx;

	return w->inner->on_applied ? w->inner->on_applied(w->inner->ctx, job, err) : 0;
}

void mix_trial_spread_of(double *v, int n, struct mix_trial_spread *out)
{
	if (n > 0)
		qsort(v, (size_t)n, sizeof(double), cmp_double);
	out->n = n;
	out->median = pct(v, n, 0.5);
	out->p95 = pct(v, n, 0.95);
	out->max = n ? v[n - 1] : 0.0;
}

/* What a trial measured, target by target, for its percentiles. */
struct trial_samples {
	double *att;  /* attempts of each reached target */
	double *unc;  /* uncorrected CIEDE2000 of the baseline, by the camera */
	double *fin;  /* final CIEDE2000 of each target, by the camera */
	double *tfin; /* final, by the simulator's truth */
	double *tunc; /* uncorrected, by the truth */
	int nu, ntf, ntu;
};

/* The trial's figures from its samples (sorted here) and its unit counts. */
static void trial_summary(struct mix_trial_stats *st, const struct mix_limits *lim, struct trial_samples *sm,
			  int n_targets, int base_units, int used, int discarded, int ideal)
{
	double *att = sm->att, *unc = sm->unc, *fin = sm->fin;
	int nu = sm->nu;

	qsort(att, (size_t)st->reached, sizeof(double), cmp_double);
	qsort(unc, (size_t)nu, sizeof(double), cmp_double);
	qsort(fin, (size_t)n_targets, sizeof(double), cmp_double);
	st->attempts_median = pct(att, st->reached, 0.5);
	st->attempts_p95 = pct(att, st->reached, 0.95);
	st->attempts_max = st->reached ? (int)att[st->reached - 1] : 0;
	st->uncorrected_de00_median = pct(unc, nu, 0.5);
	st->uncorrected_de00_p95 = pct(unc, nu, 0.95);
	st->uncorrected_de00_max = nu ? unc[nu - 1] : 0.0;
	st->uncorrected_ml = base_units * lim->unit_ml;
	st->final_de00_median = pct(fin, n_targets, 0.5);
	st->final_de00_p95 = pct(fin, n_targets, 0.95);
	st->final_de00_max = fin[n_targets - 1];
	st->used_ml = used * lim->unit_ml;
	st->discarded_ml = discarded * lim->unit_ml;
	st->ideal_ml = ideal * lim->unit_ml;
	mix_trial_spread_of(sm->tfin, sm->ntf, &st->truth_final);
	mix_trial_spread_of(sm->tunc, sm->ntu, &st->truth_uncorrected);
}

/* A trial's baseline for target: the solver's recipe dispensed once and measured, uncorrected. */
static int trial_baseline(const struct mix_model *m, const struct mix_limits *lim, const struct mix_ops *tops,
			  const struct trial_world *w, const color_lab *target, struct trial_samples *sm,
			  struct mix_trial_stats *st, struct mix_trial_target *d, int *base_units, bl_err *err)
{
	struct mix_solution sol;
	color_lab meas;
	int rc;

	rc = mix_solve(m, NULL, target, lim, &sol, err);
	if (rc == 0)
		rc = tops->fresh_cell(tops->ctx, err);
	if (rc == 0)
		rc = tops->dispense(tops->ctx, sol.recipe.units, err);
	if (rc == 0)
		rc = tops->measure(tops->ctx, &meas, err);
	if (rc)
		return rc;
	*base_units += sol.recipe.total;
	sm->unc[sm->nu] = d->uncorrected_de00 = color_de00(&meas, target);
	st->uncorrected_unreached += sm->unc[sm->nu] > lim->tol_de00;
	sm->nu++;
	if (w->has_last) {
		sm->tunc[sm->ntu] = d->uncorrected_truth_de00 = color_de00(&w->last_truth, target);
		st->truth_uncorrected_unreached += sm->tunc[sm->ntu] > lim->tol_de00;
		sm->ntu++;
	}
	return 0;
}

int mix_trial(const struct mix_model *m, const struct mix_limits *lim, const struct mix_ops *ops,
	      int n_targets, uint64_t seed, int baseline, struct mix_trial_stats *st, bl_err *err)
{
	size_t nt = (size_t)(n_targets > 0 ? n_targets : 1);
	struct mix_learn *l = malloc(sizeof(*l));
	struct trial_samples sm = { malloc(sizeof(double) * nt), malloc(sizeof(double) * nt),
				    malloc(sizeof(double) * nt), malloc(sizeof(double) * nt),
				    malloc(sizeof(double) * nt), 0, 0, 0 };
	double *att = sm.att, *unc = sm.unc, *fin = sm.fin, *tfin = sm.tfin, *tunc = sm.tunc;
	int rc = 0, discarded = 0, used = 0, ideal = 0, base_units = 0;
	struct trial_world w = { 0 };
	struct mix_ops tops = { 0 };
	rng r;

	memset(st, 0, sizeof(*st));
	if (!l || !att || !unc || !fin || !tfin || !tunc) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_free;
	}
	if (n_targets < 1) {
		rc = bl_fail(err, BL_EINVAL, "a trial needs at least one target, not %d", n_targets);
		goto out_free;
	}
	w.inner = ops;
	tops.ctx = &w;
	tops.fresh_cell = tw_fresh;
	tops.dispense = tw_dispense;
	tops.measure = tw_measure;
	tops.on_action = tw_on_action;
	tops.on_applied = tw_on_applied;
	st->has_truth = ops->truth != NULL;
	mix_learn_init(l, m->n_paints);
	rng_init(&r, seed);
	for (int t = 0; t < n_targets; t++) {
		struct mix_trial_target d = { 0 };
		struct mix_job job;
		struct mix_action last;
		color_lab target;

		draw_target(m, lim, &r, &target);
		d.target = target;
		d.uncorrected_de00 = d.uncorrected_truth_de00 = d.final_truth_de00 = -1.0;
		if (baseline && (rc = trial_baseline(m, lim, &tops, &w, &target, &sm, st, &d, &base_units, err)))
			goto out_free;
		memset(&job, 0, sizeof(job));
		w.has_last = 0;
		rc = mix_run(m, l, &job, &target, lim, &tops, &last, err);
		if (rc)
			goto out_free;
		ideal += job.first_units;
		st->cells += job.cells;
		used += job.dispensed_units;
		discarded += job.discarded_units;
		fin[t] = last.measured_de00 >= 0.0 ? last.measured_de00 : INFINITY;
		d.attempts = job.attempts;
		d.cells = job.cells;
		d.used_units = job.dispensed_units;
		d.first_units = job.first_units;
		d.final_de00 = last.measured_de00;
		if (w.has_last) {
			/* The truth of the cell the last verdict was about. */
			tfin[sm.ntf] = d.final_truth_de00 = color_de00(&w.last_truth, &target);
			if (last.kind == MIX_ACT_DONE && tfin[sm.ntf] > lim->tol_de00)
				st->truth_beyond++;
			sm.ntf++;
		}
		if (last.kind == MIX_ACT_DONE) {
			d.reached = 1;
			att[st->reached++] = job.attempts;
		} else {
			st->unreached++;
			if (st->n_reasons < MIX_TRIAL_REASONS) {
				st->unreached_target[st->n_reasons] = target;
				snprintf(st->reasons[st->n_reasons++], sizeof(st->reasons[0]),
					 "target %d lab:%.2f,%.2f,%.2f: %s", t, target.L, target.a,
					 target.b, last.reason);
			}
		}
		if (st->n_detail < MIX_TRIAL_DETAIL)
			st->detail[st->n_detail++] = d;
	}
	st->targets = n_targets;
	trial_summary(st, lim, &sm, n_targets, base_units, used, discarded, ideal);
	mix_trial_spread_of(w.cam_truth, w.n_cam_truth, &st->camera_vs_truth);
	rc = 0;
out_free:
	free(l);
	free(att);
	free(unc);
	free(fin);
	free(tfin);
	free(tunc);
	free(w.cam_truth);
	return rc;
}

cJSON *mix_trial_spread_json(cJSON *o, const char *key, const struct mix_trial_spread *s)
{
	cJSON *a = cJSON_AddObjectToObject(o, key);

	if (a) {
		cJSON_AddNumberToObject(a, "n", s->n);
		cJSON_AddNumberToObject(a, "median", s->median);
		cJSON_AddNumberToObject(a, "p95", s->p95);
		cJSON_AddNumberToObject(a, "max", s->max);
	}
	return a;
}

static void add_lab(cJSON *o, const char *key, const color_lab *c)
{
	const double v[3] = { c->L, c->a, c->b };

	json_add_vec(o, key, v, 3);
}

cJSON *mix_trial_json(const struct mix_trial_stats *st)
{
	cJSON *o = cJSON_CreateObject(), *a, *u, *reasons, *list;

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "targets", st->targets);
	a = cJSON_AddObjectToObject(o, "attempts");
	if (a) {
		cJSON_AddNumberToObject(a, "median", st->attempts_median);
		cJSON_AddNumberToObject(a, "p95", st->attempts_p95);
		cJSON_AddNumberToObject(a, "max", st->attempts_max);
	}
	cJSON_AddNumberToObject(o, "reached", st->reached);
	cJSON_AddNumberToObject(o, "unreached", st->unreached);
	a = cJSON_AddObjectToObject(o, "final_de00");
	if (a) {
		cJSON_AddNumberToObject(a, "median", st->final_de00_median);
		cJSON_AddNumberToObject(a, "p95", st->final_de00_p95);
		cJSON_AddNumberToObject(a, "max", isfinite(st->final_de00_max) ? st->final_de00_max : -1);
	}
	u = cJSON_AddObjectToObject(o, "uncorrected");
	if (u) {
		a = cJSON_AddObjectToObject(u, "attempts");
		if (a) {
			cJSON_AddNumberToObject(a, "median", 1);
			cJSON_AddNumberToObject(a, "p95", 1);
			cJSON_AddNumberToObject(a, "max", 1);
		}
		cJSON_AddNumberToObject(u, "unreached", st->uncorrected_unreached);
		a = cJSON_AddObjectToObject(u, "de00");
		if (a) {
			cJSON_AddNumberToObject(a, "median", st->uncorrected_de00_median);
			cJSON_AddNumberToObject(a, "p95", st->uncorrected_de00_p95);
			cJSON_AddNumberToObject(a, "max", st->uncorrected_de00_max);
		}
		a = cJSON_AddObjectToObject(u, "paint_ml");
		if (a) {
			cJSON_AddNumberToObject(a, "used", st->uncorrected_ml);
			cJSON_AddNumberToObject(a, "ideal", st->ideal_ml);
		}
		if (st->has_truth) {
			a = cJSON_AddObjectToObject(u, "truth");
			if (a) {
				cJSON_AddNumberToObject(a, "unreached", st->truth_uncorrected_unreached);
				mix_trial_spread_json(a, "de00", &st->truth_uncorrected);
			}
		}
	}
	a = cJSON_AddObjectToObject(o, "paint_ml");
	if (a) {
		cJSON_AddNumberToObject(a, "used", st->used_ml);
		cJSON_AddNumberToObject(a, "ideal", st->ideal_ml);
		cJSON_AddNumberToObject(a, "discarded", st->discarded_ml);
	}
	cJSON_AddNumberToObject(o, "cells", st->cells);
	if (st->has_truth) {
		a = cJSON_AddObjectToObject(o, "truth");
		if (a) {
			mix_trial_spread_json(a, "final_de00", &st->truth_final);
			cJSON_AddNumberToObject(a, "passed_but_beyond", st->truth_beyond);
			mix_trial_spread_json(a, "camera_vs_truth_de00", &st->camera_vs_truth);
		}
	}
	reasons = cJSON_AddArrayToObject(o, "unreached_reasons");
	for (int i = 0; reasons && i < st->n_reasons; i++)
		cJSON_AddItemToArray(reasons, cJSON_CreateString(st->reasons[i]));
	list = cJSON_AddArrayToObject(o, "per_target");
	for (int i = 0; list && i < st->n_detail; i++) {
		const struct mix_trial_target *d = &st->detail[i];
		cJSON *t = cJSON_CreateObject();

		if (!t)
			break;
		add_lab(t, "target_lab", &d->target);
		cJSON_AddBoolToObject(t, "reached", d->reached);
		cJSON_AddNumberToObject(t, "attempts", d->attempts);
		cJSON_AddNumberToObject(t, "cells", d->cells);
		cJSON_AddNumberToObject(t, "units", d->used_units);
		cJSON_AddNumberToObject(t, "first_units", d->first_units);
		cJSON_AddNumberToObject(t, "de00", d->final_de00);
		if (d->final_truth_de00 >= 0.0)
			cJSON_AddNumberToObject(t, "truth_de00", d->final_truth_de00);
		if (d->uncorrected_de00 >= 0.0)
			cJSON_AddNumberToObject(t, "uncorrected_de00", d->uncorrected_de00);
		if (d->uncorrected_truth_de00 >= 0.0)
			cJSON_AddNumberToObject(t, "uncorrected_truth_de00", d->uncorrected_truth_de00);
		cJSON_AddItemToArray(list, t);
	}
	return o;
}

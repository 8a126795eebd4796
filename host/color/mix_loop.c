/* mix_loop.c: closed-loop mixing: learn per-paint corrections from measured mixes, and the one step that decides what to do next. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "color/mix_impl.h"

const char *const mix_action_names[] = { "fresh", "add", "done", "give_up", NULL };

/*
 * The learning rule. Each paint has two unknowns: its strength g (K and S
 * both scaled by e^g: a batch with more or less pigment, or a density the
 * data did not know) and its balance h (K scaled by e^h, S by e^-h: a
 * different grind, a yellower white). log K gain = g + h, log S gain = g - h.
 * The white's strength stays 0: S of the white is the unit of the whole
 * model, and scaling every paint alike changes no colour, so without this
 * anchor the blame for a strong blue would be shared with the white and
 * spoil every other mix with white.
 *
 * Every observation says what a cell held and what it measured. The gains
 * are the maximum a posteriori fit to all observations kept: residuals in
 * the CIEDE2000 metric at each measurement over the measurement error
 * SIGMA_MEAS, a prior of width PRIOR_G on strengths and PRIOR_H on balances
 * (batches differ in strength more than in hue). Gauss-Newton with analytic
 * derivatives, damped; a few dozen unknowns at most.
 *
 * One measurement of a three-paint mix pins three numbers, fewer than the
 * unknowns involved, so the prior decides the rest; what no gain explains is
 * the cell's offset (measured minus predicted with the new gains), which the
 * next correction of that cell aims through.
 */
#define SIGMA_MEAS 1.0 /* CIEDE2000 of a measured mix: camera noise and model error */
#define PRIOR_G 0.25   /* log strength: a batch within about 25% of its data */
#define PRIOR_H 0.10   /* log balance of K against S */
#define LEARN_ITERS 8

void mix_learn_init(struct mix_learn *l, int n_paints)
{
	memset(l, 0, sizeof(*l));
	l->n_paints = n_paints;
}

static void obs_predict(const struct mix_model *m, const struct mix_learn *l,
			const struct mix_obs *o, double lab[3], double jk[3][MIX_RECIPE_MAX],
			double js[3][MIX_RECIPE_MAX], double *ck, double *cs)
{
	for (int j = 0; j < o->n; j++) {
		ck[j] = o->units[j] * exp(l->log_k[o->idx[j]]);
		cs[j] = o->units[j] * exp(l->log_s[o->idx[j]]);
	}
	mix_eval(m, o->n, o->idx, ck, cs, lab, jk, js, NULL);
}

/* The MAP cost of the gains in l: data misfit plus prior. */
static double learn_cost(const struct mix_model *m, const struct mix_learn *l,
			 double u[][3][3])
{
	double cost = 0.0;

	for (int k = 0; k < l->n_obs; k++) {
		const struct mix_obs *o = &l->obs[k];
		double lab[3], d[3], r[3], ck[MIX_RECIPE_MAX], cs[MIX_RECIPE_MAX];

		obs_predict(m, l, o, lab, NULL, NULL, ck, cs);
		d[0] = (lab[0] - o->measured.L) / SIGMA_MEAS;
		d[1] = (lab[1] - o->measured.a) / SIGMA_MEAS;
		d[2] = (lab[2] - o->measured.b) / SIGMA_MEAS;
		mix_metric_apply(u[k], d, r);
		cost += r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
	}
	for (int i = 0; i < m->n_paints; i++) {
		double g = 0.5 * (l->log_k[i] + l->log_s[i]), h = 0.5 * (l->log_k[i] - l->log_s[i]);

		cost += g * g / (PRIOR_G * PRIOR_G) + h * h / (PRIOR_H * PRIOR_H);
	}
	return cost;
}

/* The unknowns of a refit: each used paint's strength (white's is the reference) and balance. */
struct refit {
	int vp[2 * MIX_MAX_PAINTS], vt[2 * MIX_MAX_PAINTS], nv; /* unknown v: paint vp[v], strength (vt 0) or balance (1) */
	int col_g[MIX_MAX_PAINTS], col_h[MIX_MAX_PAINTS];       /* each paint's unknowns, -1 none */
	int used[MIX_MAX_PAINTS];
};

/* Only paints that were ever in a cell have data; the rest keep their prior (0). */
static void refit_unknowns(const struct mix_model *m, const struct mix_learn *l, struct refit *f)
{
	memset(f, 0, sizeof(*f));
	for (int k = 0; k < l->n_obs; k++)
		for (int j = 0; j < l->obs[k].n; j++)
			f->used[l->obs[k].idx[j]] = 1;
	for (int i = 0; i < m->n_paints; i++) {
		f->col_g[i] = f->col_h[i] = -1;
		if (!f->used[i])
			continue;
		if (i != m->white) {
			f->col_g[i] = f->nv;
			f->vp[f->nv] = i;
			f->vt[f->nv++] = 0;
		}
		f->col_h[i] = f->nv;
		f->vp[f->nv] = i;
		f->vt[f->nv++] = 1;
	}
}

/* Observation o's rows of the normal equations a x = g, its residual in metric u. */
static void refit_obs(const struct mix_model *m, const struct mix_learn *l, const struct mix_obs *o,
		      double u[3][3], const struct refit *f, double *a, double *g)
{
	double lab[3], d[3], r[3], ck[MIX_RECIPE_MAX], cs[MIX_RECIPE_MAX];
	double jk[3][MIX_RECIPE_MAX], js[3][MIX_RECIPE_MAX], jr[3][2 * MIX_RECIPE_MAX];
	int col[2 * MIX_RECIPE_MAX], nc = 0, nv = f->nv;

	obs_predict(m, l, o, lab, jk, js, ck, cs);
	d[0] = (lab[0] - o->measured.L) / SIGMA_MEAS;
	d[1] = (lab[1] - o->measured.a) / SIGMA_MEAS;
	d[2] = (lab[2] - o->measured.b) / SIGMA_MEAS;
	mix_metric_apply(u, d, r);
	for (int j = 0; j < o->n; j++) {
		double dk[3], ds[3], dg[3], dh[3], tg[3], th[3];
		int i = o->idx[j];

		for (int c = 0; c < 3; c++) {
			/* d/d log gain = concentration times d/d concentration. */
			dk[c] = ck[j] * jk[c][j] / SIGMA_MEAS;
			ds[c] = cs[j] * js[c][j] / SIGMA_MEAS;
			dg[c] = dk[c] + ds[c];
			dh[c] = dk[c] - ds[c];
		}
		mix_metric_apply(u, dg, tg);
		mix_metric_apply(u, dh, th);
		if (f->col_g[i] >= 0) {
			for (int c = 0; c < 3; c++)
				jr[c][nc] = tg[c];
			col[nc++] = f->col_g[i];
		}
		for (int c = 0; c < 3; c++)
			jr[c][nc] = th[c];
		col[nc++] = f->col_h[i];
	}
	for (int x = 0; x < nc; x++) {
		for (int c = 0; c < 3; c++)
			g[col[x]] -= jr[c][x] * r[c];
		for (int y = 0; y < nc; y++)
			for (int c = 0; c < 3; c++)
				a[col[x] * nv + col[y]] += jr[c][x] * jr[c][y];
	}
}

/* The prior's rows: strengths within PRIOR_G, balances within PRIOR_H of the data. */
static void refit_prior(const struct mix_learn *l, const struct refit *f, double *a, double *g)
{
	for (int v = 0; v < f->nv; v++) {
		int i = f->vp[v];
		double w = f->vt[v] ? 1.0 / (PRIOR_H * PRIOR_H) : 1.0 / (PRIOR_G * PRIOR_G);
		double cur = f->vt[v] ? 0.5 * (l->log_k[i] - l->log_s[i]) : 0.5 * (l->log_k[i] + l->log_s[i]);

		a[v * f->nv + v] += w;
		g[v] -= w * cur;
	}
}

/* The step x applied to the gains, each kept within its bounds. */
static void refit_apply(const struct mix_model *m, struct mix_learn *l, const struct refit *f, const double *x)
{
	for (int i = 0; i < m->n_paints; i++) {
		double gi = 0.5 * (l->log_k[i] + l->log_s[i]), hi = 0.5 * (l->log_k[i] - l->log_s[i]);

		if (!f->used[i])
			continue;
		if (f->col_g[i] >= 0)
			gi = fmax(-MIX_LEARN_STRENGTH_MAX, fmin(MIX_LEARN_STRENGTH_MAX, gi + x[f->col_g[i]]));
		hi = fmax(-MIX_LEARN_BALANCE_MAX, fmin(MIX_LEARN_BALANCE_MAX, hi + x[f->col_h[i]]));
		l->log_k[i] = gi + hi;
		l->log_s[i] = gi - hi;
	}
}

/*
 * One damped step on a x = g: the damping raised until the cost falls.
 * Returns 1 for a step that lowered the cost by more than rounding, 2 for
 * one by less, 0 when the damping ran out first.
 */
static int refit_step(const struct mix_model *m, struct mix_learn *l, double u[][3][3], const struct refit *f,
		      const double *a, const double *g, double *mu, double *cost)
{
	int nv = f->nv;

	while (*mu < 1e8) {
		double aa[4 * MIX_MAX_PAINTS * MIX_MAX_PAINTS], gg[2 * MIX_MAX_PAINTS];
		double save_k[MIX_MAX_PAINTS], save_s[MIX_MAX_PAINTS], cn;

		memcpy(aa, a, sizeof(double) * (size_t)(nv * nv));
		memcpy(gg, g, sizeof(double) * (size_t)nv);
		for (int x = 0; x < nv; x++)
			aa[x * nv + x] *= 1.0 + *mu;
		if (mix_spd_solve(aa, gg, nv) != 0) {
			*mu *= 10.0;
			continue;
		}
		memcpy(save_k, l->log_k, sizeof(save_k));
		memcpy(save_s, l->log_s, sizeof(save_s));
		refit_apply(m, l, f, gg);
		cn = learn_cost(m, l, u);
		if (cn < *cost) {
			int accepted = *cost - cn > 1e-9 * (1.0 + *cost) ? 1 : 2;

			*cost = cn;
			*mu = fmax(*mu * 0.3, 1e-9);
			return accepted;
		}
		memcpy(l->log_k, save_k, sizeof(save_k));
		memcpy(l->log_s, save_s, sizeof(save_s));
		*mu *= 10.0;
	}
	return 0;
}

static int learn_refit(const struct mix_model *m, struct mix_learn *l, bl_err *err)
{
	static _Thread_local double u[MIX_LEARN_MAX_OBS][3][3];
	struct refit f;
	double mu = 1e-3, cost;

	refit_unknowns(m, l, &f);
	for (int k = 0; k < l->n_obs; k++)
		mix_de00_metric(&l->obs[k].measured, u[k]);
	cost = learn_cost(m, l, u);
	for (int it = 0; it < LEARN_ITERS && f.nv > 0; it++) {
		double a[4 * MIX_MAX_PAINTS * MIX_MAX_PAINTS] = { 0 }, g[2 * MIX_MAX_PAINTS] = { 0 };

		for (int k = 0; k < l->n_obs; k++)
			refit_obs(m, l, &l->obs[k], u[k], &f, a, g);
		refit_prior(l, &f, a, g);
		if (refit_step(m, l, u, &f, a, g, &mu, &cost) != 1)
			break;
	}
	if (!isfinite(cost))
		return bl_fail(err, BL_EIO, "the learnt paint corrections diverged");
	return 0;
}

int mix_learn_observe(const struct mix_model *m, struct mix_learn *l, const int *units,
		      const color_lab *measured, bl_err *err)
{
	struct mix_obs o = { 0 };

	if (!isfinite(measured->L) || !isfinite(measured->a) || !isfinite(measured->b))
		return bl_fail(err, BL_EINVAL, "measured colour is not finite");
	if (l->n_paints != m->n_paints)
		return bl_fail(err, BL_EINVAL,
			       "learnt corrections are for %d paints, the palette has %d",
			       l->n_paints, m->n_paints);
	for (int i = 0; i < m->n_paints; i++) {
		if (units[i] < 0)
			return bl_fail(err, BL_EINVAL, "'%s': %d units is negative", m->name[i],
				       units[i]);
		if (units[i] == 0)
			continue;
		if (o.n == MIX_RECIPE_MAX)
			return bl_fail(err, BL_EINVAL, "a cell holds at most %d paints",
				       MIX_RECIPE_MAX);
		o.idx[o.n] = i;
		o.units[o.n++] = units[i];
	}
	if (o.n == 0)
		return bl_fail(err, BL_EINVAL, "the cell is empty: nothing was measured");
	o.measured = *measured;
	/* The oldest observation makes room: the newest say most about this batch. */
	if (l->n_obs == MIX_LEARN_MAX_OBS) {
		memmove(&l->obs[0], &l->obs[1], sizeof(l->obs[0]) * (MIX_LEARN_MAX_OBS - 1));
		l->n_obs--;
	}
	l->obs[l->n_obs++] = o;
	return learn_refit(m, l, err);
}

static int units_total(const struct mix_model *m, const int *u)
{
	int t = 0;

	for (int i = 0; i < m->n_paints; i++)
		t += u[i];
	return t;
}

static void fill_fresh(const struct mix_model *m, const struct mix_job *job,
		       const struct mix_solution *sol, struct mix_action *act)
{
	act->kind = MIX_ACT_FRESH;
	memcpy(act->units, sol->recipe.units, sizeof(act->units));
	memcpy(act->cell_units, sol->recipe.units, sizeof(act->cell_units));
	act->total_after = sol->recipe.total;
	act->predicted = sol->recipe.predicted;
	act->predicted_de00 = sol->recipe.de00;
	act->waste_fresh_ml = (units_total(m, job->have) + sol->recipe.total - job->lim.min_units) *
			      job->lim.unit_ml;
}

static int check_limits(const struct mix_limits *lim, bl_err *err)
{
	if (!(lim->unit_ml > 0.0) || lim->min_units < 1 || lim->max_units < lim->min_units ||
	    lim->max_paints < 1 || lim->max_paints > MIX_RECIPE_MAX || !(lim->tol_de00 > 0.0) ||
	    !(lim->aim_de00 >= 0.0) || lim->max_attempts < 1)
		return bl_fail(err, BL_EINVAL,
			       "mixing limits out of range: unit %g ml, %d..%d units, %d paints, "
			       "tolerance %g, aim %g, %d attempts",
			       lim->unit_ml, lim->min_units, lim->max_units, lim->max_paints,
			       lim->tol_de00, lim->aim_de00, lim->max_attempts);
	return 0;
}

int mix_begin(const struct mix_model *m, const struct mix_learn *l, struct mix_job *job,
	      const color_lab *target, const struct mix_limits *lim, struct mix_action *act,
	      bl_err *err)
{
	struct mix_solution sol;
	int rc;

	memset(job, 0, sizeof(*job));
	memset(act, 0, sizeof(*act));
	act->measured_de00 = -1.0;
	act->add_de00 = -1.0;
	act->waste_add_ml = -1.0;
	act->waste_fresh_ml = -1.0;
	rc = check_limits(lim, err);
	if (rc)
		return rc;
	job->target = *target;
	job->lim = *lim;
	rc = mix_solve(m, l, target, lim, &sol, err);
	if (rc)
		return rc;
	if (!sol.in_gamut) {
		act->kind = MIX_ACT_GIVE_UP;
		act->predicted = sol.nearest;
		act->predicted_de00 = sol.nearest_de00;
		snprintf(act->reason, sizeof(act->reason),
			 "out of gamut: with at most %d paints the nearest reachable colour is "
			 "lab:%.2f,%.2f,%.2f, %.2f CIEDE2000 from the target",
			 lim->max_paints, sol.nearest.L, sol.nearest.a, sol.nearest.b,
			 sol.nearest_de00);
		job->finished = 1;
		return 0;
	}
	fill_fresh(m, job, &sol, act);
	if (sol.recipe.de00 > lim->tol_de00)
		snprintf(act->reason, sizeof(act->reason),
			 "in gamut, but whole units of %g ml within %d units reach only %.2f CIEDE2000",
			 lim->unit_ml, lim->max_units, sol.recipe.de00);
	else
		snprintf(act->reason, sizeof(act->reason), "first mix: predicted %.2f CIEDE2000",
			 sol.recipe.de00);
	return 0;
}

/* An addition to the cell as the action. */
static void fill_add(const struct mix_model *m, const struct mix_job *job, const struct mix_recipe *add,
		     struct mix_action *act)
{
	act->kind = MIX_ACT_ADD;
	memcpy(act->units, add->units, sizeof(act->units));
	for (int i = 0; i < m->n_paints; i++)
		act->cell_units[i] = job->have[i] + add->units[i];
	act->total_after = add->total;
	act->predicted = add->predicted;
	act->predicted_de00 = add->de00;
}

/* A measurement of the cell the loop can take: finite, in range, of a job under way that holds paint. */
static int step_check(const struct mix_model *m, const struct mix_job *job, const color_lab *measured,
		      bl_err *err)
{
	if (!isfinite(measured->L) || !isfinite(measured->a) || !isfinite(measured->b))
		return bl_fail(err, BL_EINVAL, "measured colour is not finite");
	if (measured->L < 0.0 || measured->L > 100.0)
		return bl_fail(err, BL_EINVAL, "measured L=%g is outside 0..100", measured->L);
	if (job->finished)
		return bl_fail(err, BL_EINVAL, "this mix has already finished");
	int rc = check_limits(&job->lim, err);

	if (rc)
		return rc;
	if (units_total(m, job->have) == 0)
		return bl_fail(err, BL_EINVAL, "the cell is empty: dispense before measuring");
	return 0;
}

/* What the measurement teaches: the model's learning, the cell's offset from its prediction. */
static int step_observe(const struct mix_model *m, struct mix_learn *l, struct mix_job *job,
			const color_lab *measured, struct mix_action *act, bl_err *err)
{
	double amt[MIX_MAX_PAINTS];
	color_lab pred;
	int rc;

	if ((rc = mix_learn_observe(m, l, job->have, measured, err)))
		return rc;
	job->attempts++;
	for (int i = 0; i < m->n_paints; i++)
		amt[i] = job->have[i];
	mix_predict(m, l, amt, &pred);
	job->bias = (color_lab){ measured->L - pred.L, measured->a - pred.a, measured->b - pred.b };
	job->has_bias = 1;
	act->measured_de00 = color_de00(measured, &job->target);
	memcpy(act->cell_units, job->have, sizeof(act->cell_units));
	act->total_after = units_total(m, job->have);
	act->predicted = *measured;
	act->predicted_de00 = act->measured_de00;
	return 0;
}

/* Both ways on, the offset going with both: add to this cell, or discard it and mix afresh; their waste. */
static int step_ways(const struct mix_model *m, const struct mix_learn *l, struct mix_job *job,
		     struct mix_action *act, struct mix_recipe *add, int *add_units, struct mix_solution *fresh,
		     bl_err *err)
{
	int have_total = units_total(m, job->have), rc;
	/* With no clean cell left a fresh mix goes on what this cell holds: into its room. */
	struct mix_limits flim = job->lim;

	if (job->same_cell)
		mix_limits_cap(&flim, flim.max_units - have_total);
	rc = mix_solve_add(m, l, &job->target, &job->lim, job->have, &job->bias, add, err);
	if (rc == 0 && flim.max_units >= 1) {
		rc = mix_solve_bias(m, l, &job->target, &job->bias, &flim, fresh, err);
	} else if (rc == 0) {
		memset(fresh, 0, sizeof(*fresh));
		fresh->in_gamut = 1; /* no room for a fresh mix: not a verdict on the gamut */
		fresh->recipe.de00 = HUGE_VAL;
	}
	if (rc)
		return rc;
	*add_units = 0;
	for (int i = 0; i < m->n_paints; i++)
		*add_units += add->units[i];
	if (*add_units > 0) {
		act->waste_add_ml = fmax(0.0, (add->total - job->lim.min_units) * job->lim.unit_ml);
		act->add_de00 = add->de00;
	}
	act->waste_fresh_ml = (have_total + fresh->recipe.total - job->lim.min_units) * job->lim.unit_ml;
	act->add_reaches = *add_units > 0 && add->de00 <= job->lim.tol_de00;
	return 0;
}

/* Nothing does better than the cell: out of gamut, or no addition or fresh mix predicted closer. */
static void step_give_up(struct mix_job *job, const struct mix_solution *fresh, double de,
			 struct mix_action *act)
{
	act->kind = MIX_ACT_GIVE_UP;
	if (!fresh->in_gamut) {
		act->predicted = fresh->nearest;
		act->predicted_de00 = fresh->nearest_de00;
		snprintf(act->reason, sizeof(act->reason),
			 "out of gamut with these paints as measured: the nearest reachable colour "
			 "is lab:%.2f,%.2f,%.2f, %.2f CIEDE2000 from the target; the cell is %.2f off",
			 fresh->nearest.L, fresh->nearest.a, fresh->nearest.b, fresh->nearest_de00, de);
	} else {
		snprintf(act->reason, sizeof(act->reason),
			 "measured %.2f CIEDE2000 off and no addition%s is predicted "
			 "closer (whole units of %g ml, at most %d)%s", de,
			 job->same_cell ? "" : " or fresh mix", job->lim.unit_ml, job->lim.max_units,
			 job->same_cell ? "; no clean cell is left for a fresh mix" : "");
	}
	job->finished = 1;
}

int mix_step(const struct mix_model *m, struct mix_learn *l, struct mix_job *job,
	     const color_lab *measured, struct mix_action *act, bl_err *err)
{
	struct mix_solution fresh;
	struct mix_recipe add;
	double de;
	int add_units, rc;

	memset(act, 0, sizeof(*act));
	act->add_de00 = -1.0;
	act->waste_add_ml = -1.0;
	act->waste_fresh_ml = -1.0;
	act->measured_de00 = -1.0;
	if ((rc = step_check(m, job, measured, err)) || (rc = step_observe(m, l, job, measured, act, err)))
		return rc;
	de = act->measured_de00;
	if (de <= job->lim.tol_de00) {
		act->kind = MIX_ACT_DONE;
		snprintf(act->reason, sizeof(act->reason),
			 "measured %.2f CIEDE2000 from the target, within %.2f", de, job->lim.tol_de00);
		job->finished = 1;
		return 0;
	}
	if (job->attempts >= job->lim.max_attempts) {
		act->kind = MIX_ACT_GIVE_UP;
		snprintf(act->reason, sizeof(act->reason),
			 "attempt limit: %d measurements, the last %.2f CIEDE2000 from the target "
			 "(tolerance %.2f)",
			 job->attempts, de, job->lim.tol_de00);
		job->finished = 1;
		return 0;
	}
	if ((rc = step_ways(m, l, job, act, &add, &add_units, &fresh, err)))
		return rc;
	/*
	 * Adding wins whenever it is predicted to reach the tolerance: the cell's
	 * measured offset makes its prediction the better founded one, and a
	 * fresh cell would start with a guess again. The waste of both ways is
	 * reported so the caller can see what the choice costs.
	 */
	if (act->add_reaches) {
		fill_add(m, job, &add, act);
		snprintf(act->reason, sizeof(act->reason),
			 "measured %.2f CIEDE2000 off; adding is predicted to reach %.2f", de, add.de00);
		return 0;
	}
	if (fresh.recipe.total > 0 && fresh.recipe.de00 <= job->lim.tol_de00) {
		fill_fresh(m, job, &fresh, act);
		snprintf(act->reason, sizeof(act->reason),
			 "measured %.2f CIEDE2000 off; the target cannot be reached by adding "
			 "within the cell's %d units (best %.2f): start a fresh cell, "
			 "predicted %.2f",
			 de, job->lim.max_units, add_units ? add.de00 : de, fresh.recipe.de00);
		return 0;
	}
	/*
	 * Neither way is predicted within tolerance (the batch, as measured, may
	 * not reach the target): take the closer if it improves on the cell by
	 * more than noise, and give up only when nothing does.
	 */
	if (add_units && add.de00 <= fresh.recipe.de00 && add.de00 < de - 0.1) {
		fill_add(m, job, &add, act);
		snprintf(act->reason, sizeof(act->reason),
			 "measured %.2f CIEDE2000 off; nothing is predicted within %.2f, adding "
			 "comes closest (%.2f)",
			 de, job->lim.tol_de00, add.de00);
		return 0;
	}
	if (fresh.recipe.total > 0 && fresh.recipe.de00 < de - 0.1) {
		fill_fresh(m, job, &fresh, act);
		snprintf(act->reason, sizeof(act->reason),
			 "measured %.2f CIEDE2000 off; nothing is predicted within %.2f, a fresh "
			 "cell comes closest (%.2f)",
			 de, job->lim.tol_de00, fresh.recipe.de00);
		return 0;
	}
	step_give_up(job, &fresh, de, act);
	return 0;
}

void mix_apply_discard(struct mix_job *job)
{
	for (int i = 0; i < MIX_MAX_PAINTS; i++) {
		job->discarded_units += job->have[i];
		job->have[i] = 0;
	}
	job->cells++;
}

void mix_apply_dispense(struct mix_job *job, const int *units)
{
	int n = 0;

	for (int i = 0; i < MIX_MAX_PAINTS; i++) {
		job->have[i] += units[i];
		n += units[i];
	}
	if (job->cells == 1 && job->dispensed_units == 0)
		job->first_units = n;
	job->dispensed_units += n;
}

void mix_apply(struct mix_job *job, const struct mix_action *act)
{
	if (act->kind == MIX_ACT_FRESH)
		mix_apply_discard(job);
	if (act->kind == MIX_ACT_FRESH || act->kind == MIX_ACT_ADD)
		mix_apply_dispense(job, act->units);
}

int mix_refill(const struct mix_model *m, const struct mix_learn *l, struct mix_job *job,
	       struct mix_action *act, bl_err *err)
{
	struct mix_solution sol;
	int rc;

	memset(act, 0, sizeof(*act));
	act->measured_de00 = -1.0;
	act->add_de00 = -1.0;
	act->waste_add_ml = -1.0;
	act->waste_fresh_ml = -1.0;
	rc = mix_solve_bias(m, l, &job->target, job->has_bias ? &job->bias : NULL, &job->lim,
			    &sol, err);
	if (rc)
		return rc;
	fill_fresh(m, job, &sol, act);
	snprintf(act->reason, sizeof(act->reason),
		 "the cell was emptied but never filled (resumed): mix afresh, predicted %.2f",
		 sol.recipe.de00);
	return 0;
}

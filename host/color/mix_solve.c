/* mix_solve.c: the recipe solver: least CIEDE2000 over paint subsets (continuous), then whole dispense units by rounding and local search. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "color/mix_impl.h"

/*
 * The search, in two phases.
 *
 * Continuous: for every subset of at most max_paints paints (all singles,
 * pairs and triples; larger subsets grow greedily from the best smaller
 * ones), Levenberg-Marquardt finds the proportions whose predicted Lab comes
 * nearest the target under the CIEDE2000 metric at the target (exact to
 * second order, so near the optimum this is CIEDE2000 itself). An opaque
 * layer's colour depends only on proportions, so a subset of n paints has
 * n - 1 free log-ratios; derivatives are analytic (mix_eval).
 *
 * Integer: the best few subsets are scaled to every total from min_units to
 * max_units, rounded each way per paint, and the best roundings improved by
 * moving one unit at a time; here the true CIEDE2000 (lcms2) decides.
 *
 * Everything runs in a fixed order with no randomness, so the same inputs
 * give the same recipe.
 */

#define TOP_SUBSETS 6     /* subsets carried into the integer phase */
#define GROW_SUBSETS 8    /* best subsets of size k grown to size k + 1 (k >= 3) */
#define LM_ITERS 25
#define MAX_SUBSETS 8192 /* enough for every triple of 36 paints */

struct solver {
	const struct mix_model *m;
	const struct mix_limits *lim;
	double gk[MIX_MAX_PAINTS], gs[MIX_MAX_PAINTS]; /* learnt gains */
	color_lab target;
	double bias[3];       /* the cell's offset: measured minus predicted */
	double aim[3];        /* what the model must predict: target minus bias */
	double u[3][3];       /* CIEDE2000 metric at the target */
	double best_cost;     /* least cost of any subset so far */
	long evals;
};

struct subset {
	int n;
	int idx[MIX_RECIPE_MAX];
	double c[MIX_RECIPE_MAX]; /* proportions (c[0] = 1 while solving) or additions */
	double cost;              /* squared metric distance */
	double lab[3];
};

static void solver_init(struct solver *s, const struct mix_model *m, const struct mix_learn *l,
			const color_lab *target, const color_lab *bias,
			const struct mix_limits *lim)
{
	memset(s, 0, sizeof(*s));
	s->m = m;
	s->lim = lim;
	s->target = *target;
	for (int i = 0; i < m->n_paints; i++) {
		s->gk[i] = l ? exp(l->log_k[i]) : 1.0;
		s->gs[i] = l ? exp(l->log_s[i]) : 1.0;
	}
	if (bias) {
		s->bias[0] = bias->L;
		s->bias[1] = bias->a;
		s->bias[2] = bias->b;
	}
	s->aim[0] = target->L - s->bias[0];
	s->aim[1] = target->a - s->bias[1];
	s->aim[2] = target->b - s->bias[2];
	mix_de00_metric(target, s->u);
	s->best_cost = INFINITY;
}

/* Lab of concentrations c (per idx) and, when jac is not NULL, d Lab / d c. */
static void eval_c(struct solver *s, int n, const int *idx, const double *c, double lab[3],
		   double jac[3][MIX_RECIPE_MAX])
{
	double ck[MIX_RECIPE_MAX], cs[MIX_RECIPE_MAX];
	double jk[3][MIX_RECIPE_MAX], js[3][MIX_RECIPE_MAX];

	for (int j = 0; j < n; j++) {
		ck[j] = c[j] * s->gk[idx[j]];
		cs[j] = c[j] * s->gs[idx[j]];
	}
	s->evals++;
	if (!jac) {
		mix_eval(s->m, n, idx, ck, cs, lab, NULL, NULL, NULL);
		return;
	}
	mix_eval(s->m, n, idx, ck, cs, lab, jk, js, NULL);
	for (int k = 0; k < 3; k++)
		for (int j = 0; j < n; j++)
			jac[k][j] = s->gk[idx[j]] * jk[k][j] + s->gs[idx[j]] * js[k][j];
}

static double metric_cost(const struct solver *s, const double lab[3], double r[3])
{
	double d[3] = { lab[0] - s->aim[0], lab[1] - s->aim[1], lab[2] - s->aim[2] }, rr[3];

	if (!r)
		r = rr;
	mix_metric_apply((double (*)[3])s->u, d, r);
	return r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
}

/* True CIEDE2000 of a prediction (plus the cell's bias) against the target. */
static double true_de(const struct solver *s, const double lab[3])
{
	color_lab p = { lab[0] + s->bias[0], lab[1] + s->bias[1], lab[2] + s->bias[2] };

	return color_de00(&p, &s->target);
}

/*
 * Levenberg-Marquardt on nv variables of a subset. mode 0: proportions,
 * c[0] = 1 and c[j] = exp(v[j-1]), v bounded by +-vmax. mode 1: additions to
 * base[], c[j] = base[j] + v[j], 0 <= v[j] and sum v <= room.
 */
struct lm {
	struct solver *s;
	struct subset *ss;
	int mode, n, nv;
	const double *base;
	double vmax, room;
};

/* The concentrations of variables v. */
static void lm_conc(const struct lm *x, const double *v, double *c)
{
	for (int j = 0; j < x->n; j++)
		c[j] = x->mode == 0 ? (j == 0 ? 1.0 : exp(v[j - 1])) : x->base[j] + v[j];
}

/* The residual Jacobian U * dLab/dv at concentrations c (jac: dLab/dc). */
static void lm_jacobian(const struct lm *x, const double *c, double jac[3][MIX_RECIPE_MAX],
			double jr[3][MIX_RECIPE_MAX])
{
	for (int j = 0; j < x->nv; j++) {
		int cj = x->mode == 0 ? j + 1 : j;
		double dc = x->mode == 0 ? c[cj] : 1.0;
		double dl[3] = { jac[0][cj] * dc, jac[1][cj] * dc, jac[2][cj] * dc }, t[3];

		mix_metric_apply(x->s->u, dl, t);
		for (int k = 0; k < 3; k++)
			jr[k][j] = t[k];
	}
}

/* The variables free to move: a bound that the descent direction pushes against holds its variable. */
static int lm_free(const struct lm *x, const double *v, double jr[3][MIX_RECIPE_MAX], const double *r,
		   int *free_idx)
{
	int nf = 0;

	for (int j = 0; j < x->nv; j++) {
		double gj = 0.0;
		int fixed = 0;

		for (int k = 0; k < 3; k++)
			gj += jr[k][j] * r[k];
		if (x->mode == 1 && v[j] <= 0.0 && gj > 0.0)
			fixed = 1;
		if (x->mode == 0 && ((v[j] >= x->vmax && gj < 0.0) || (v[j] <= -x->vmax && gj > 0.0)))
			fixed = 1;
		if (!fixed)
			free_idx[nf++] = j;
	}
	return nf;
}

/* The damped normal equations a d = g over the nf free variables. */
static void lm_normal(int nf, const int *free_idx, double jr[3][MIX_RECIPE_MAX], const double *r, double mu,
		      double *a, double *g)
{
	for (int p = 0; p < nf; p++) {
		int jp = free_idx[p];

		g[p] = 0.0;
		for (int k = 0; k < 3; k++)
			g[p] -= jr[k][jp] * r[k];
		for (int q = 0; q < nf; q++) {
			int jq = free_idx[q];
			double t = 0.0;

			for (int k = 0; k < 3; k++)
				t += jr[k][jp] * jr[k][jq];
			a[p * nf + q] = t;
		}
		a[p * nf + p] = a[p * nf + p] * (1.0 + mu) + 1e-12;
	}
}

/* vn: v moved by the step d of the free variables, within the bounds (and the room, mode 1). */
static void lm_move(const struct lm *x, const double *v, const double *d, int nf, const int *free_idx,
		    double *vn)
{
	double sum = 0.0;

	memcpy(vn, v, sizeof(double) * (size_t)x->nv);
	for (int p = 0; p < nf; p++) {
		int jp = free_idx[p];
		double dp = d[p];

		/* Log-ratios move at most 2 (a factor 7) a step: the model bends. */
		if (x->mode == 0 && fabs(dp) > 2.0)
			dp = dp > 0 ? 2.0 : -2.0;
		vn[jp] += dp;
		if (x->mode == 0) {
			if (vn[jp] > x->vmax)
				vn[jp] = x->vmax;
			if (vn[jp] < -x->vmax)
				vn[jp] = -x->vmax;
		} else if (vn[jp] < 0.0) {
			vn[jp] = 0.0;
		}
	}
	if (x->mode == 1) {
		for (int j = 0; j < x->nv; j++)
			sum += vn[j];
		if (sum > x->room)
			for (int j = 0; j < x->nv; j++)
				vn[j] *= x->room / sum;
	}
}

/*
 * One accepted step from v (its cost, residual r and Jacobian jr), the
 * damping raised until the cost falls: 1 and *step the largest move (0 when
 * the fall is no longer worth a step), or 0 when the damping ran out.
 */
static int lm_step(const struct lm *x, double *v, double jr[3][MIX_RECIPE_MAX], const double *r,
		   const int *free_idx, int nf, double cost, double *mu, double *step)
{
	double a[MIX_RECIPE_MAX * MIX_RECIPE_MAX], g[MIX_RECIPE_MAX];

	*step = 0.0;
	while (*mu < 1e10) {
		double vn[MIX_RECIPE_MAX], cn[MIX_RECIPE_MAX], labn[3], costn;

		lm_normal(nf, free_idx, jr, r, *mu, a, g);
		if (mix_spd_solve(a, g, nf) != 0) {
			*mu *= 10.0;
			continue;
		}
		lm_move(x, v, g, nf, free_idx, vn);
		lm_conc(x, vn, cn);
		eval_c(x->s, x->n, x->ss->idx, cn, labn, NULL);
		costn = metric_cost(x->s, labn, NULL);
		if (costn < cost) {
			for (int j = 0; j < x->nv; j++)
				*step = fmax(*step, fabs(vn[j] - v[j]));
			if (costn > cost * (1.0 - 1e-4))
				*step = 0.0; /* no longer worth a step */
			memcpy(v, vn, sizeof(double) * (size_t)x->nv);
			*mu = fmax(*mu * 0.2, 1e-7);
			return 1;
		}
		*mu *= 8.0;
	}
	return 0;
}

static void lm_solve(struct solver *s, struct subset *ss, int mode, const double *base,
		     double vmax, double room)
{
	struct lm x = { s, ss, mode, ss->n, mode == 0 ? ss->n - 1 : ss->n, base, vmax, room };
	double v[MIX_RECIPE_MAX], c[MIX_RECIPE_MAX], lab[3], jac[3][MIX_RECIPE_MAX], r[3];
	double mu = 1e-3, cost;

	for (int j = 0; j < x.nv; j++)
		v[j] = mode == 0 ? log(ss->c[j + 1] / ss->c[0]) : ss->c[j] - base[j];
	for (int it = 0; it < LM_ITERS && x.nv > 0; it++) {
		double jr[3][MIX_RECIPE_MAX], step;
		int free_idx[MIX_RECIPE_MAX], nf;

		lm_conc(&x, v, c);
		eval_c(s, x.n, ss->idx, c, lab, jac);
		cost = metric_cost(s, lab, r);
		/* Converged (0.003 CIEDE2000 is far below what a unit can change), or hopeless:
		 * a subset still 5 CIEDE2000 behind the best after three steps will not win. */
		if (cost < 1e-5)
			break;
		if (it >= 3 && sqrt(cost) > sqrt(s->best_cost) + 5.0)
			break;
		lm_jacobian(&x, c, jac, jr);
		if (!(nf = lm_free(&x, v, jr, r, free_idx)))
			break;
		if (!lm_step(&x, v, jr, r, free_idx, nf, cost, &mu, &step) || step < 1e-4)
			break;
	}
	/* One paint alone (no variable): its only proportion is 1. */
	lm_conc(&x, v, ss->c);
	eval_c(s, x.n, ss->idx, ss->c, ss->lab, NULL);
	ss->cost = metric_cost(s, ss->lab, NULL);
	if (ss->cost < s->best_cost)
		s->best_cost = ss->cost;
}

/* ---- integer phase ---- */

struct best {
	int have;
	int n;
	int idx[MIX_RECIPE_MAX];
	int units[MIX_RECIPE_MAX];
	int total;      /* units counted by the volume preference */
	double de;
	double lab[3];
};

/* Is (de, total) better than b? Within aim_de00 the smaller volume wins, else the lower error. */
static int better(const struct solver *s, double de, int total, const struct best *b)
{
	double aim = s->lim->aim_de00, k1 = de > aim ? de : aim, k2;

	if (!b->have)
		return 1;
	k2 = b->de > aim ? b->de : aim;
	if (k1 < k2 - 1e-9)
		return 1;
	if (k1 > k2 + 1e-9)
		return 0;
	if (total != b->total)
		return total < b->total;
	return de < b->de - 1e-12;
}

/*
 * Scores whole units u (added to base) for the paints of ss; counted is the
 * volume the preference sees (the recipe's total, or only what is added).
 */
static int try_units(struct solver *s, const struct subset *ss, const double *base,
		     const int *u, int counted, struct best *b)
{
	double c[MIX_RECIPE_MAX], lab[3], de;
	int any = 0;

	for (int j = 0; j < ss->n; j++) {
		c[j] = (base ? base[j] : 0.0) + u[j];
		any |= c[j] > 0.0;
	}
	if (!any)
		return 0;
	eval_c(s, ss->n, ss->idx, c, lab, NULL);
	de = true_de(s, lab);
	if (!better(s, de, counted, b))
		return 0;
	b->have = 1;
	b->n = ss->n;
	memcpy(b->idx, ss->idx, sizeof(int) * (size_t)ss->n);
	memcpy(b->units, u, sizeof(int) * (size_t)ss->n);
	b->total = counted;
	b->de = de;
	memcpy(b->lab, lab, sizeof(lab));
	return 1;
}

/*
 * Moves of one unit from the best rounding: add or remove one of a paint, or
 * move one from a paint to another, while a move improves. Units stay within
 * [0, ...] and the total within [lo, hi] (lo, hi count u only).
 */
static void local_search(struct solver *s, const struct subset *ss, const double *base, int lo,
			 int hi, int counted_offset, struct best *b)
{
	for (int round = 0; round < 64; round++) {
		int cur[MIX_RECIPE_MAX], sum = 0, moved = 0;

		memcpy(cur, b->units, sizeof(int) * (size_t)ss->n);
		for (int j = 0; j < ss->n; j++)
			sum += cur[j];
		for (int j = 0; j < ss->n; j++) {
			for (int d = -1; d <= 1; d += 2) {
				int u[MIX_RECIPE_MAX];

				memcpy(u, cur, sizeof(u));
				u[j] += d;
				if (u[j] < 0 || sum + d < lo || sum + d > hi)
					continue;
				moved |= try_units(s, ss, base, u, sum + d + counted_offset, b);
			}
			for (int k = 0; k < ss->n; k++) {
				int u[MIX_RECIPE_MAX];

				if (k == j || cur[j] == 0)
					continue;
				memcpy(u, cur, sizeof(u));
				u[j]--;
				u[k]++;
				moved |= try_units(s, ss, base, u, sum + counted_offset, b);
			}
		}
		if (!moved)
			break;
	}
}

/* The best whole-unit recipe of one subset at proportions ss->c, every total in range. */
static void round_fresh(struct solver *s, const struct subset *ss, struct best *out)
{
	struct best b = { 0 };
	double psum = 0.0;

	for (int j = 0; j < ss->n; j++)
		psum += ss->c[j];
	for (int t = s->lim->min_units; t <= s->lim->max_units; t++) {
		for (int mask = 0; mask < (1 << ss->n); mask++) {
			int u[MIX_RECIPE_MAX], sum = 0;

			for (int j = 0; j < ss->n; j++) {
				u[j] = (int)floor(ss->c[j] / psum * t) + ((mask >> j) & 1);
				sum += u[j];
			}
			if (sum < s->lim->min_units || sum > s->lim->max_units)
				continue;
			try_units(s, ss, NULL, u, sum, &b);
		}
	}
	if (b.have)
		local_search(s, ss, NULL, s->lim->min_units, s->lim->max_units, 0, &b);
	if (b.have && (!out->have || better(s, b.de, b.total, out)))
		*out = b;
}

/* ---- subsets ---- */

static int cmp_cost(const void *x, const void *y)
{
	const struct subset *a = x, *b = y;

	if (a->cost != b->cost)
		return a->cost < b->cost ? -1 : 1;
	for (int j = 0; j < a->n && j < b->n; j++)
		if (a->idx[j] != b->idx[j])
			return a->idx[j] - b->idx[j];
	return a->n - b->n;
}

static int allowed(const struct solver *s, int i)
{
	return !(s->lim->exclude >> i & 1);
}

/* Solves the proportions of one subset, starting from start (NULL: equal parts). */
static void solve_subset(struct solver *s, struct subset *ss, const double *start, double vmax)
{
	for (int j = 0; j < ss->n; j++)
		ss->c[j] = start ? start[j] / start[0] : 1.0;
	lm_solve(s, ss, 0, NULL, vmax, 0.0);
}

static int same_set(const struct subset *a, const int *idx, int n)
{
	if (a->n != n)
		return 0;
	for (int j = 0; j < n; j++)
		if (a->idx[j] != idx[j])
			return 0;
	return 1;
}

/* The subsets of paints tried for one target, size by size. */
struct search {
	struct solver s;
	struct subset *subs;
	int ns, np, maxp;
	int pair_at[MIX_MAX_PAINTS][MIX_MAX_PAINTS]; /* where pair (i, j), i < j, was solved; -1 not */
	double vmax;
	int level_start, level_end; /* the subsets of the size last solved */
};

/* Every allowed paint alone; 0, or -1 when the palette has none allowed. */
static int search_singles(struct search *x)
{
	for (int i = 0; i < x->np; i++) {
		if (!allowed(&x->s, i))
			continue;
		x->subs[x->ns] = (struct subset){ .n = 1, .idx = { i } };
		solve_subset(&x->s, &x->subs[x->ns], NULL, x->vmax);
		x->ns++;
	}
	return x->ns ? 0 : -1;
}

/* Every pair, each started from the best of 7 ratios. */
static void search_pairs(struct search *x)
{
	for (int i = 0; i < x->np; i++)
		for (int j = i + 1; j < x->np; j++) {
			struct subset *ss = &x->subs[x->ns];
			double st[2] = { 1.0, 1.0 }, bc = INFINITY;

			if (!allowed(&x->s, i) || !allowed(&x->s, j) || x->ns == MAX_SUBSETS)
				continue;
			*ss = (struct subset){ .n = 2, .idx = { i, j } };
			for (int k = -3; k <= 3; k++) {
				double lab[3], c[2] = { 1.0, pow(3.0, k) }, cost;

				eval_c(&x->s, 2, ss->idx, c, lab, NULL);
				cost = metric_cost(&x->s, lab, NULL);
				if (cost < bc) {
					bc = cost;
					st[1] = c[1];
				}
			}
			solve_subset(&x->s, ss, st, x->vmax);
			x->pair_at[i][j] = x->ns++;
		}
}

/* Triple (i, j, k) started from its best pair with the third paint at a tenth. */
static void search_triple(struct search *x, int i, int j, int k)
{
	const int tri[3] = { i, j, k };
	const struct subset *bp = NULL;
	struct subset *ss = &x->subs[x->ns];
	double st[3];

	for (int d = 0; d < 3; d++) {
		int a = tri[d == 0 ? 1 : 0], b = tri[d == 2 ? 1 : 2];
		const struct subset *p = &x->subs[x->pair_at[a][b]];

		if (!bp || p->cost < bp->cost)
			bp = p;
	}
	*ss = (struct subset){ .n = 3, .idx = { i, j, k } };
	for (int d = 0; d < 3; d++) {
		double psum = bp->c[0] + bp->c[1];

		st[d] = tri[d] == bp->idx[0] ? bp->c[0] / psum : tri[d] == bp->idx[1] ? bp->c[1] / psum : 0.1;
	}
	solve_subset(&x->s, ss, st, x->vmax);
	x->ns++;
}

static void search_triples(struct search *x)
{
	x->level_start = x->ns;
	for (int i = 0; i < x->np; i++)
		for (int j = i + 1; j < x->np; j++)
			for (int k = j + 1; k < x->np; k++)
				if (allowed(&x->s, i) && allowed(&x->s, j) && allowed(&x->s, k) &&
				    x->ns < MAX_SUBSETS && x->pair_at[i][j] >= 0 && x->pair_at[i][k] >= 0 &&
				    x->pair_at[j][k] >= 0)
					search_triple(x, i, j, k);
	x->level_end = x->ns;
}

/* Subset t grown by paint add, unless another parent grew the same set: sorted indices. */
static void search_grow(struct search *x, const struct subset *t, int add)
{
	int idx[MIX_RECIPE_MAX], n = 0, dup = 0, in = 0;
	double st[MIX_RECIPE_MAX], psum = 0.0;

	for (int j = 0; j < t->n; j++)
		in |= t->idx[j] == add;
	if (in || !allowed(&x->s, add))
		return;
	for (int j = 0; j < t->n; j++)
		psum += t->c[j];
	for (int j = 0, placed = 0; j <= t->n; j++) {
		if (!placed && (j == t->n || add < t->idx[j])) {
			idx[n] = add;
			st[n++] = 0.1;
			placed = 1;
		}
		if (j < t->n) {
			idx[n] = t->idx[j];
			st[n++] = t->c[j] / psum;
		}
	}
	for (int q = x->level_start; q < x->ns && !dup; q++)
		dup = same_set(&x->subs[q], idx, n);
	if (dup)
		return;
	x->subs[x->ns] = (struct subset){ .n = n };
	memcpy(x->subs[x->ns].idx, idx, sizeof(idx));
	solve_subset(&x->s, &x->subs[x->ns], st, x->vmax);
	x->ns++;
}

/* Four paints and more: the best subsets of the size below, each grown by one paint. */
static void search_larger(struct search *x)
{
	for (int size = 4; size <= x->maxp && size <= x->np; size++) {
		struct subset top[GROW_SUBSETS];
		int span = x->level_end - x->level_start, nt = span < GROW_SUBSETS ? span : GROW_SUBSETS;

		qsort(&x->subs[x->level_start], (size_t)span, sizeof(x->subs[0]), cmp_cost);
		memcpy(top, &x->subs[x->level_start], sizeof(top[0]) * (size_t)nt);
		x->level_start = x->ns;
		for (int t = 0; t < nt; t++)
			for (int add = 0; add < x->np && x->ns < MAX_SUBSETS; add++)
				search_grow(x, &top[t], add);
		x->level_end = x->ns;
	}
}

/*
 * The metric is CIEDE2000 near the target only. Far from it (out of gamut)
 * the best ntop subsets are solved again with the metric taken halfway to
 * their prediction, twice, so the nearest colour is nearest in CIEDE2000 and
 * not in a stretched Lab.
 */
static void search_far(struct search *x, int ntop)
{
	struct solver *s = &x->s;
	double u0[3][3];

	memcpy(u0, s->u, sizeof(u0));
	for (int t = 0; t < ntop; t++) {
		struct subset *ss = &x->subs[t];

		for (int pass = 0; pass < 2; pass++) {
			color_lab mid = { 0.5 * (s->target.L + ss->lab[0] + s->bias[0]),
					  0.5 * (s->target.a + ss->lab[1] + s->bias[1]),
					  0.5 * (s->target.b + ss->lab[2] + s->bias[2]) };

			mix_de00_metric(&mid, s->u);
			s->best_cost = INFINITY;
			lm_solve(s, ss, 0, NULL, x->vmax, 0.0);
		}
		ss->cost = true_de(s, ss->lab);
	}
	memcpy(s->u, u0, sizeof(u0));
}

/* The answer: the nearest reachable colour (continuous) and the best recipe in whole units. */
static void search_answer(struct search *x, const struct best *best, struct mix_solution *out)
{
	const struct subset *b0 = &x->subs[0];
	const double *bias = x->s.bias;
	struct mix_recipe *r = &out->recipe;
	double psum = 0.0;

	out->nearest = (color_lab){ b0->lab[0] + bias[0], b0->lab[1] + bias[1], b0->lab[2] + bias[2] };
	out->nearest_de00 = b0->cost;
	for (int j = 0; j < b0->n; j++)
		psum += b0->c[j];
	for (int j = 0; j < b0->n; j++)
		out->proportions[b0->idx[j]] = b0->c[j] / psum;
	for (int j = 0; j < best->n; j++) {
		r->units[best->idx[j]] = best->units[j];
		r->total += best->units[j];
		r->n_used += best->units[j] > 0;
	}
	r->predicted = (color_lab){ best->lab[0] + bias[0], best->lab[1] + bias[1], best->lab[2] + bias[2] };
	r->de00 = best->de;
	/* Whole units can land nearer than the continuous optimum of a metric that is exact only near the target. */
	if (best->have && best->de < out->nearest_de00) {
		out->nearest = r->predicted;
		out->nearest_de00 = best->de;
		memset(out->proportions, 0, sizeof(out->proportions));
		for (int i = 0; i < x->np; i++)
			out->proportions[i] = (double)r->units[i] / r->total;
	}
}

/*
 * The subsets the search below can make: every single, pair and triple, and
 * GROW_SUBSETS grown by each paint for every size above. Room for these
 * only, not for MAX_SUBSETS: 13 paints mixed three at most need 377 (51 kB)
 * where MAX_SUBSETS takes 1.1 MB, and a run solves a hundred times and more
 * (under AddressSanitizer each block that large is an mmap of its own).
 */
static size_t subsets_room(int np, int maxp)
{
	size_t n = (size_t)np;

	if (np < 1)
		return 1;
	if (maxp >= 2)
		n += (size_t)np * (np - 1) / 2;
	if (maxp >= 3)
		n += (size_t)np * (np - 1) * (np - 2) / 6;
	for (int size = 4; size <= maxp && size <= np; size++)
		n += (size_t)GROW_SUBSETS * np;
	return n < MAX_SUBSETS ? n : MAX_SUBSETS;
}

int mix_solve_bias(const struct mix_model *m, const struct mix_learn *l, const color_lab *target,
		   const color_lab *bias, const struct mix_limits *lim, struct mix_solution *out,
		   bl_err *err)
{
	struct search x;
	struct best best = { 0 };
	int ntop;

	memset(out, 0, sizeof(*out));
	if (!isfinite(target->L) || !isfinite(target->a) || !isfinite(target->b))
		return bl_fail(err, BL_EINVAL, "target colour is not finite");
	if (lim->min_units < 1 || lim->max_units < lim->min_units || lim->max_paints < 1 ||
	    lim->max_paints > MIX_RECIPE_MAX)
		return bl_fail(err, BL_EINVAL,
			       "mixing limits: %d..%d units, %d paints (need 1 <= min <= max, 1..%d paints)",
			       lim->min_units, lim->max_units, lim->max_paints, MIX_RECIPE_MAX);
	memset(&x, 0, sizeof(x));
	x.np = m->n_paints;
	x.maxp = lim->max_paints;
	/* Proportions finer than one unit in the largest cell cannot be dispensed. */
	x.vmax = log(lim->max_units > 2 ? lim->max_units : 2);
	memset(x.pair_at, -1, sizeof(x.pair_at));
	if (!(x.subs = malloc(sizeof(*x.subs) * subsets_room(x.np, x.maxp))))
		return bl_fail(err, BL_ENOMEM, "out of memory");
	solver_init(&x.s, m, l, target, bias, lim);
	if (search_singles(&x)) {
		free(x.subs);
		return bl_fail(err, BL_EINVAL, "every paint of the palette is excluded");
	}
	if (x.maxp >= 2)
		search_pairs(&x);
	x.level_start = x.ns;
	if (x.maxp >= 3)
		search_triples(&x);
	x.level_end = x.ns;
	search_larger(&x);

	qsort(x.subs, (size_t)x.ns, sizeof(x.subs[0]), cmp_cost);
	out->subsets = x.ns;
	ntop = x.ns < TOP_SUBSETS ? x.ns : TOP_SUBSETS;
	for (int t = 0; t < ntop; t++)
		x.subs[t].cost = true_de(&x.s, x.subs[t].lab);
	if (x.subs[0].cost > lim->tol_de00)
		search_far(&x, ntop);
	qsort(x.subs, (size_t)ntop, sizeof(x.subs[0]), cmp_cost);
	for (int t = 0; t < ntop; t++)
		round_fresh(&x.s, &x.subs[t], &best);
	search_answer(&x, &best, out);
	out->in_gamut = out->nearest_de00 <= lim->tol_de00;
	out->evals = x.s.evals;
	free(x.subs);
	return 0;
}

int mix_solve(const struct mix_model *m, const struct mix_learn *l, const color_lab *target,
	      const struct mix_limits *lim, struct mix_solution *out, bl_err *err)
{
	return mix_solve_bias(m, l, target, NULL, lim, out, err);
}

void mix_limits_from_machine(const struct machine *mc, struct mix_limits *lim)
{
	double u = mc->mixing.dispense_unit_ml;

	memset(lim, 0, sizeof(*lim));
	lim->unit_ml = u;
	lim->min_units = (int)ceil(mc->mixing.cell_min_ml / u - 1e-9);
	lim->max_units = (int)floor(mc->mixing.cell_max_ml / u + 1e-9);
	if (lim->min_units < 1)
		lim->min_units = 1;
	lim->max_paints = mc->mixing.max_paints;
	lim->tol_de00 = mc->tolerances.mix_de00;
	/* Aim well inside the tolerance: the model is never exact, the first mix should not need luck. */
	lim->aim_de00 = mc->tolerances.mix_de00 / 4.0;
	lim->max_attempts = mc->brakes.attempts_per_subtask;
}

void mix_limits_cap(struct mix_limits *lim, int max_units)
{
	if (max_units < lim->max_units)
		lim->max_units = max_units;
	if (lim->min_units > lim->max_units)
		lim->min_units = lim->max_units;
}

/*
 * The best whole-unit addition over the cheapest candidate subsets (sorted,
 * their continuous optimum in c; the cell's ne paints first, have units of
 * each): every rounding of the optimum, then a local search from the best,
 * lo to room units in all.
 */
static void add_rounded(struct solver *s, struct subset *cands, int nc, const int *have, int ne, int lo,
			int room, struct best *best)
{
	for (int t = 0; t < nc && t < TOP_SUBSETS; t++) {
		struct subset *ss = &cands[t];
		double base[MIX_RECIPE_MAX], add[MIX_RECIPE_MAX];
		struct best b = { 0 };

		for (int j = 0; j < ss->n; j++) {
			base[j] = j < ne ? have[ss->idx[j]] : 0.0;
			add[j] = ss->c[j] - base[j];
		}
		for (int mask = 0; mask < (1 << ss->n); mask++) {
			int u[MIX_RECIPE_MAX], sum = 0;

			for (int j = 0; j < ss->n; j++) {
				u[j] = (int)floor(add[j]) + ((mask >> j) & 1);
				sum += u[j];
			}
			if (sum < lo || sum > room)
				continue;
			try_units(s, ss, base, u, sum, &b);
		}
		if (!b.have) {
			/* The continuous optimum adds almost nothing: start from one unit of the first paint. */
			int u[MIX_RECIPE_MAX] = { 0 };

			u[0] = lo;
			if (lo <= room)
				try_units(s, ss, base, u, lo, &b);
		}
		if (b.have)
			local_search(s, ss, base, lo, room, 0, &b);
		if (b.have && (!best->have || better(s, b.de, b.total, best)))
			*best = b;
	}
}

int mix_solve_add(const struct mix_model *m, const struct mix_learn *l, const color_lab *target,
		  const struct mix_limits *lim, const int *have, const color_lab *bias,
		  struct mix_recipe *out, bl_err *err)
{
	struct solver s;
	struct best best = { 0 };
	struct subset cands[512];
	int in_cell[MIX_RECIPE_MAX], ne = 0, total = 0, nc = 0, free_slots, room;
	int others[MIX_MAX_PAINTS], no = 0;

	memset(out, 0, sizeof(*out));
	if (!isfinite(target->L) || !isfinite(target->a) || !isfinite(target->b))
		return bl_fail(err, BL_EINVAL, "target colour is not finite");
	for (int i = 0; i < m->n_paints; i++) {
		if (have[i] < 0)
			return bl_fail(err, BL_EINVAL, "'%s': %d units in the cell is negative",
				       m->name[i], have[i]);
		if (have[i] == 0)
			continue;
		if (ne == MIX_RECIPE_MAX)
			return bl_fail(err, BL_EINVAL, "the cell holds more than %d paints",
				       MIX_RECIPE_MAX);
		in_cell[ne++] = i;
		total += have[i];
	}
	if (ne == 0)
		return bl_fail(err, BL_EINVAL, "the cell is empty: nothing to correct");
	solver_init(&s, m, l, target, bias, lim);
	room = lim->max_units - total;
	free_slots = lim->max_paints - ne;
	for (int i = 0; i < m->n_paints; i++)
		if (!have[i] && allowed(&s, i))
			others[no++] = i;
	/* The cell's paints, with none, one or two paints more as the recipe limit allows. */
	for (int a = -1; a < no; a++) {
		for (int b = a; b < no; b++) {
			struct subset *ss;
			double base[MIX_RECIPE_MAX];
			int n = ne;

			if ((a >= 0 && free_slots < 1) || (b > a && free_slots < 2) ||
			    (a < 0 && b >= 0) || nc == (int)(sizeof(cands) / sizeof(cands[0])))
				continue;
			ss = &cands[nc];
			memset(ss, 0, sizeof(*ss));
			memcpy(ss->idx, in_cell, sizeof(int) * (size_t)ne);
			if (a >= 0)
				ss->idx[n++] = others[a];
			if (b > a)
				ss->idx[n++] = others[b];
			ss->n = n;
			for (int j = 0; j < n; j++) {
				base[j] = j < ne ? have[ss->idx[j]] : 0.0;
				ss->c[j] = base[j] + (room > 0 ? 0.5 : 0.0);
			}
			if (room > 0)
				lm_solve(&s, ss, 1, base, 0.0, room);
			else
				lm_solve(&s, ss, 1, base, 0.0, 0.0);
			nc++;
		}
	}
	qsort(cands, (size_t)nc, sizeof(cands[0]), cmp_cost);
	if (room > 0)
		add_rounded(&s, cands, nc, have, ne, lim->min_units - total > 1 ? lim->min_units - total : 1,
			    room, &best);
	for (int i = 0; i < m->n_paints; i++)
		out->units[i] = 0;
	if (best.have) {
		for (int j = 0; j < best.n; j++) {
			out->units[best.idx[j]] = best.units[j];
			out->n_used += best.units[j] > 0;
		}
		out->predicted = (color_lab){ best.lab[0] + s.bias[0], best.lab[1] + s.bias[1],
					      best.lab[2] + s.bias[2] };
		out->de00 = best.de;
	} else {
		/* Nothing can be added: the cell is full. */
		double c[MIX_RECIPE_MAX], lab[3];

		for (int j = 0; j < ne; j++)
			c[j] = have[in_cell[j]];
		eval_c(&s, ne, in_cell, c, lab, NULL);
		out->predicted = (color_lab){ lab[0] + s.bias[0], lab[1] + s.bias[1], lab[2] + s.bias[2] };
		out->de00 = true_de(&s, lab);
	}
	out->total = total;
	for (int i = 0; i < m->n_paints; i++)
		out->total += out->units[i];
	return 0;
}

/* mix_fit.c: K and S of paints known only by measured colours (masstone and tints), fitted on the model's bands. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "color/mix_impl.h"

/*
 * A measured colour is three numbers, so a paint's K and S cannot be read
 * band by band as from a spectrum. They are fitted instead as smooth curves:
 * log K and log S piecewise linear between FIT_KNOTS knots spread over the
 * model's bands (broad pseudo-bands that overlap), so that the model
 * reproduces the masstone and every tint with the white. The measurements pin
 * about six numbers per paint (masstone and one tint); priors choose among
 * the spectra that fit them: little curvature in log K and log S, and the
 * shape of log S following that of log K (scattering rises where a pigment
 * absorbs: anomalous dispersion raises its refractive index there, and the
 * spectral derivation of the Kimera set shows the same). The weights were
 * chosen by the test that builds this model from the Kimera set's Lab values
 * alone and compares its predictions of mixes with the spectral model's
 * (tests/color/test_mix_model.c): median 1.5, 95th percentile 6.2 CIEDE2000,
 * against median 2.5, 95th percentile 13.3 with S kept flat (S_FOLLOWS_K 0).
 */
#define FIT_KNOTS 6
#define FIT_MAX_MEAS (1 + PALETTE_MAX_TINTS)
#define FIT_MAX_PARAMS (2 * FIT_KNOTS)
#define FIT_MAX_RESID (3 * FIT_MAX_MEAS + 4 * FIT_KNOTS)
#define W_CURVE 0.1      /* CIEDE2000-equivalent cost of a unit second difference in log K or log S */
#define W_S_SHAPE 0.25   /* ... of log S one away from the shape log K gives it */
#define S_FOLLOWS_K 1.0  /* slope of that shape */
#define W_LEVEL_S 0.02   /* ... of mean log S one away from the white's (matters only without tints) */
#define FIT_ITERS 60

struct fit_ctx {
	struct mix_model *m;
	int paint, white, is_white;
	int n_meas;
	double frac[FIT_MAX_MEAS];      /* paint fraction by weight; 1 for the masstone */
	double target[FIT_MAX_MEAS][3];
	double u[FIT_MAX_MEAS][3][3];   /* CIEDE2000 metric at each measurement */
	double basis[MIX_MAX_BANDS][FIT_KNOTS];
	int np, nr;
};

static void set_curves(struct fit_ctx *c, const double *x)
{
	for (int b = 0; b < c->m->n_bands; b++) {
		double lk = 0.0, ls = 0.0;

		for (int j = 0; j < FIT_KNOTS; j++) {
			lk += c->basis[b][j] * x[j];
			if (!c->is_white)
				ls += c->basis[b][j] * x[FIT_KNOTS + j];
		}
		c->m->k[c->paint][b] = exp(lk);
		c->m->s[c->paint][b] = exp(ls);
	}
}

static void predict_meas(struct fit_ctx *c, int i, double lab[3])
{
	int idx[2] = { c->paint, c->white };
	double amt[2] = { c->frac[i], 1.0 - c->frac[i] };

	mix_eval(c->m, c->frac[i] >= 1.0 ? 1 : 2, idx, amt, amt, lab, NULL, NULL, NULL);
}

static void residuals(struct fit_ctx *c, const double *x, double *r)
{
	int n = 0;

	set_curves(c, x);
	for (int i = 0; i < c->n_meas; i++) {
		double lab[3], d[3];

		predict_meas(c, i, lab);
		for (int k = 0; k < 3; k++)
			d[k] = lab[k] - c->target[i][k];
		mix_metric_apply(c->u[i], d, &r[n]);
		n += 3;
	}
	for (int t = 0; t < (c->is_white ? 1 : 2); t++) {
		const double *v = x + t * FIT_KNOTS;
		double mean = 0.0;

		for (int j = 1; j + 1 < FIT_KNOTS; j++)
			r[n++] = W_CURVE * (v[j - 1] - 2.0 * v[j] + v[j + 1]);
		if (t == 1) {
			double mk = 0.0;

			for (int j = 0; j < FIT_KNOTS; j++) {
				mean += v[j] / FIT_KNOTS;
				mk += x[j] / FIT_KNOTS;
			}
			for (int j = 0; j < FIT_KNOTS; j++)
				r[n++] = W_S_SHAPE * (v[j] - mean - S_FOLLOWS_K * (x[j] - mk));
			r[n++] = W_LEVEL_S * mean * FIT_KNOTS;
		}
	}
	c->nr = n;
}

static double sumsq(const double *r, int n)
{
	double s = 0.0;

	for (int i = 0; i < n; i++)
		s += r[i] * r[i];
	return s;
}

/* Levenberg-Marquardt with forward-difference derivatives: a dozen parameters, once per load. */
static void fit_lm(struct fit_ctx *c, double *x)
{
	double r[FIT_MAX_RESID], r2[FIT_MAX_RESID], jac[FIT_MAX_RESID][FIT_MAX_PARAMS];
	double mu = 1e-3, cost;
	int np = c->np;

	residuals(c, x, r);
	cost = sumsq(r, c->nr);
	for (int it = 0; it < FIT_ITERS; it++) {
		double a[FIT_MAX_PARAMS * FIT_MAX_PARAMS], g[FIT_MAX_PARAMS], xn[FIT_MAX_PARAMS];
		int improved = 0;

		for (int p = 0; p < np; p++) {
			double save = x[p];

			x[p] += 1e-6;
			residuals(c, x, r2);
			x[p] = save;
			for (int i = 0; i < c->nr; i++)
				jac[i][p] = (r2[i] - r[i]) / 1e-6;
		}
		while (mu < 1e8) {
			for (int p = 0; p < np; p++) {
				g[p] = 0.0;
				for (int i = 0; i < c->nr; i++)
					g[p] -= jac[i][p] * r[i];
				for (int q = 0; q < np; q++) {
					double s = 0.0;

					for (int i = 0; i < c->nr; i++)
						s += jac[i][p] * jac[i][q];
					a[p * np + q] = s;
				}
				a[p * np + p] *= 1.0 + mu;
				a[p * np + p] += 1e-12;
			}
			if (mix_spd_solve(a, g, np) == 0) {
				double cn;

				for (int p = 0; p < np; p++)
					xn[p] = x[p] + g[p];
				residuals(c, xn, r2);
				cn = sumsq(r2, c->nr);
				if (cn < cost) {
					memcpy(x, xn, sizeof(double) * (size_t)np);
					memcpy(r, r2, sizeof(double) * (size_t)c->nr);
					improved = cost - cn > 1e-10 * (1.0 + cost);
					cost = cn;
					mu = mu * 0.3 > 1e-9 ? mu * 0.3 : 1e-9;
					break;
				}
			}
			mu *= 10.0;
		}
		if (!improved)
			break;
	}
	set_curves(c, x);
}

static int fit_paint(const struct palette *p, struct mix_model *m, int i, int white,
		     bl_err *err)
{
	const struct palette_paint *pp = &p->paints[i];
	struct fit_ctx c;
	double x[FIT_MAX_PARAMS], q0, worst = 0.0;
	double lo = m->wl_nm[0], hi = m->wl_nm[m->n_bands - 1];

	memset(&c, 0, sizeof(c));
	c.m = m;
	c.paint = i;
	c.white = white;
	c.is_white = i == white;
	c.np = c.is_white ? FIT_KNOTS : 2 * FIT_KNOTS;
	if (!c.is_white && white < 0)
		return bl_fail(err, BL_EINVAL,
			       "%s: paints[%d] ('%s') has only measured colours and the palette names "
			       "no white to tint with",
			       p->file, i, pp->name);
	if (c.is_white && pp->n_tints)
		return bl_fail(err, BL_EINVAL, "%s: paints[%d] ('%s') is the white: it has no tints",
			       p->file, i, pp->name);
	for (int b = 0; b < m->n_bands; b++) {
		/* Hat functions: knot j at lo + j (hi - lo) / (FIT_KNOTS - 1). */
		double t = (m->wl_nm[b] - lo) / (hi - lo) * (FIT_KNOTS - 1);
		int j = (int)floor(t);

		if (j >= FIT_KNOTS - 1)
			j = FIT_KNOTS - 2;
		c.basis[b][j] = 1.0 - (t - j);
		c.basis[b][j + 1] = t - j;
	}
	c.frac[0] = 1.0;
	memcpy(c.target[0], pp->masstone_lab, sizeof(c.target[0]));
	for (int t = 0; t < pp->n_tints; t++) {
		c.frac[1 + t] = pp->tints[t].paint_fraction;
		memcpy(c.target[1 + t], pp->tints[t].lab, sizeof(c.target[0]));
	}
	c.n_meas = 1 + pp->n_tints;
	for (int k = 0; k < c.n_meas; k++) {
		color_lab t = { c.target[k][0], c.target[k][1], c.target[k][2] };

		mix_de00_metric(&t, c.u[k]);
	}
	/* Start from a grey of the masstone's lightness, S a third of the white's. */
	{
		double y = (pp->masstone_lab[0] + 16.0) / 116.0;

		y = pp->masstone_lab[0] > 8.0 ? y * y * y : pp->masstone_lab[0] / 903.3;
		q0 = mix_km_ratio(y < 1e-4 ? 1e-4 : y > 0.95 ? 0.95 : y);
	}
	for (int j = 0; j < FIT_KNOTS; j++) {
		x[j] = log(q0) + (c.is_white ? 0.0 : log(1.0 / 3.0));
		if (!c.is_white)
			x[FIT_KNOTS + j] = log(1.0 / 3.0);
	}
	fit_lm(&c, x);
	for (int k = 0; k < c.n_meas; k++) {
		double lab[3];
		color_lab a, b;

		predict_meas(&c, k, lab);
		a = (color_lab){ lab[0], lab[1], lab[2] };
		b = (color_lab){ c.target[k][0], c.target[k][1], c.target[k][2] };
		if (color_de00(&a, &b) > worst)
			worst = color_de00(&a, &b);
	}
	m->fitted[i] = 1;
	m->fit_de00[i] = worst;
	return 0;
}

int mix_fit_measured(const struct palette *p, struct mix_model *m, bl_err *err)
{
	int white = m->white, rc;

	/* The white first: every tint of the others is mixed with it. */
	if (white >= 0 && !p->paints[white].has_spectral) {
		rc = fit_paint(p, m, white, white, err);
		if (rc)
			return rc;
	}
	for (int i = 0; i < p->n_paints; i++) {
		if (p->paints[i].has_spectral || i == white)
			continue;
		rc = fit_paint(p, m, i, white, err);
		if (rc)
			return rc;
	}
	return 0;
}

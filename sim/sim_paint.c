/* sim_paint.c: derives Kubelka-Munk K and S of the measured Kimera paints and evaluates mixtures and layers over 31 bands. */
#include "sim/sim_paint.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "color/cie.h"
#include "color/color.h"
#include "sim/kimera.h"

/* Internal reflectances are kept inside (0, 1): K/S is infinite or zero at the ends. */
#define R_MIN 1e-4
#define R_MAX (1.0 - 1e-6)

/* Floor of the reflectance spread per band: three repeats underestimate it. */
#define SD_FLOOR 0.003

/*
 * Smoothness prior on ln S between neighbouring bands (10 nm apart): an
 * expected step of 0.15 (15 %). Where the tint says little (the paint is as
 * light as the tint, or the tint as light as white), S follows its
 * neighbours instead of the measurement noise.
 */
#define LNS_STEP_SD 0.15

double sim_saunderson(double ri)
{
	const double a = (1.0 - SIM_SAUNDERSON_K1) * (1.0 - SIM_SAUNDERSON_K2);

	return a * ri / (1.0 - SIM_SAUNDERSON_K2 * ri);
}

double sim_saunderson_inv(double rm)
{
	const double a = (1.0 - SIM_SAUNDERSON_K1) * (1.0 - SIM_SAUNDERSON_K2);
	double ri = rm / (a + SIM_SAUNDERSON_K2 * rm);

	return ri < R_MIN ? R_MIN : ri > R_MAX ? R_MAX : ri;
}

double sim_km_ks(double r)
{
	if (r < R_MIN)
		r = R_MIN;
	if (r > R_MAX)
		r = R_MAX;
	return (1.0 - r) * (1.0 - r) / (2.0 * r);
}

double sim_km_rinf(double ks)
{
	if (ks <= 0.0)
		return 1.0;
	return 1.0 + ks - sqrt(ks * ks + 2.0 * ks);
}

double sim_km_layer(double kx, double sx, double rg)
{
	double a, b, bsx, coth, e;

	if (sx < 1e-9)
		return rg * exp(-2.0 * kx); /* no scattering: light crosses the film twice */
	a = 1.0 + kx / sx;
	b = sqrt(a * a - 1.0);
	bsx = b * sx;
	if (bsx < 1e-4) {
		coth = 1.0 / bsx + bsx / 3.0;
	} else if (bsx > 20.0) {
		coth = 1.0;
	} else {
		e = exp(-2.0 * bsx);
		coth = (1.0 + e) / (1.0 - e);
	}
	return (1.0 - rg * (a - b * coth)) / (a - rg + b * coth);
}

void sim_mix_ks(const struct sim_paintset *ps, const double *amount, double k[SIM_NB],
		double s[SIM_NB])
{
	for (int j = 0; j < SIM_NB; j++)
		k[j] = s[j] = 0.0;
	for (int i = 0; i < ps->n; i++) {
		double c = amount[i];

		if (c == 0.0)
			continue;
		for (int j = 0; j < SIM_NB; j++) {
			k[j] += c * ps->p[i].k[j];
			s[j] += c * ps->p[i].s[j];
		}
	}
}

void sim_to_cie_grid(const double v[SIM_NB], double out[CIE_N])
{
	double wl[SIM_NB];

	for (int j = 0; j < SIM_NB; j++)
		wl[j] = sim_band_nm(j);
	cie_resample(wl, v, SIM_NB, out);
}

void sim_measured_lab(const double r[SIM_NB], double lab[3])
{
	double g[CIE_N];

	sim_to_cie_grid(r, g);
	cie_reflectance_to_lab_d50(g, lab);
}

/* Linear interpolation of a measured list at wavelength nm (ends held). */
static double interp(const double *wl, const double *v, int n, double nm)
{
	int j = 0;

	if (nm <= wl[0])
		return v[0];
	if (nm >= wl[n - 1])
		return v[n - 1];
	while (wl[j + 1] <= nm)
		j++;
	return v[j] + (nm - wl[j]) / (wl[j + 1] - wl[j]) * (v[j + 1] - v[j]);
}

static void meas_on_grid(const struct sim_kimera_meas *m, double mean[SIM_NB], double sd[SIM_NB])
{
	for (int j = 0; j < SIM_NB; j++) {
		mean[j] = interp(sim_kimera_wl_nm, m->mean, sim_kimera_n_wl, sim_band_nm(j));
		if (sd) {
			double v = interp(sim_kimera_wl_nm, m->sd, sim_kimera_n_wl, sim_band_nm(j));

			sd[j] = v > SD_FLOOR ? v : SD_FLOOR;
		}
	}
}

void sim_kimera_on_grid(int paint, int tint, double out[SIM_NB])
{
	const struct sim_kimera_paint *p = &sim_kimera_paints[paint];

	meas_on_grid(tint ? &p->tint : &p->masstone, out, NULL);
}

/* d ln(K/S) / d R_measured at a measured reflectance: how a reflectance error moves ln(K/S). */
static double dlnq_drm(double rm)
{
	const double a = (1.0 - SIM_SAUNDERSON_K1) * (1.0 - SIM_SAUNDERSON_K2);
	double ri = sim_saunderson_inv(rm);
	double dri = a / ((a + SIM_SAUNDERSON_K2 * rm) * (a + SIM_SAUNDERSON_K2 * rm));

	return (-2.0 / (1.0 - ri) - 1.0 / ri) * dri;
}

/*
 * Minimises sum w_j (y_j - obs_j)^2 + alpha sum (y_{j+1} - y_j)^2 (+ a faint
 * pull of every y towards prior so an all-unweighted system stays solvable):
 * a tridiagonal system, solved by the Thomas algorithm.
 */
static void smooth_fit(const double *obs, const double *w, double alpha, double prior, double *y)
{
	double lo[SIM_NB], di[SIM_NB], up[SIM_NB], rhs[SIM_NB];
	const double eps = 1e-6;

	for (int j = 0; j < SIM_NB; j++) {
		di[j] = w[j] + eps;
		rhs[j] = w[j] * obs[j] + eps * prior;
		lo[j] = up[j] = 0.0;
		if (j > 0) {
			di[j] += alpha;
			lo[j] = -alpha;
		}
		if (j < SIM_NB - 1) {
			di[j] += alpha;
			up[j] = -alpha;
		}
	}
	for (int j = 1; j < SIM_NB; j++) {
		double f = lo[j] / di[j - 1];

		di[j] -= f * up[j - 1];
		rhs[j] -= f * rhs[j - 1];
	}
	y[SIM_NB - 1] = rhs[SIM_NB - 1] / di[SIM_NB - 1];
	for (int j = SIM_NB - 2; j >= 0; j--)
		y[j] = (rhs[j] - up[j] * y[j + 1]) / di[j];
}

static void opaque_measured(const double k[SIM_NB], const double s[SIM_NB], double out[SIM_NB])
{
	for (int j = 0; j < SIM_NB; j++)
		out[j] = sim_saunderson(sim_km_rinf(k[j] / s[j]));
}

static void fit_report(const struct sim_paintset *ps, int i, struct sim_derive_fit *f)
{
	const struct sim_kimera_paint *kp = &sim_kimera_paints[i];
	double meas[SIM_NB], pred[SIM_NB], k[SIM_NB], s[SIM_NB], conc[SIM_MAX_PAINTS] = { 0 };
	double lm[3], lp[3], sum = 0.0;
	color_lab a, b;

	meas_on_grid(&kp->masstone, meas, NULL);
	opaque_measured(ps->p[i].k, ps->p[i].s, pred);
	sim_measured_lab(meas, lm);
	sim_measured_lab(pred, lp);
	a = (color_lab){ lm[0], lm[1], lm[2] };
	b = (color_lab){ lp[0], lp[1], lp[2] };
	f->masstone_de00 = color_de00(&a, &b);
	f->tint_de00 = f->tint_rms = 0.0;
	if (i == 0)
		return;
	conc[i] = kp->tint_paint_w / (kp->tint_paint_w + kp->tint_white_w);
	conc[0] = 1.0 - conc[i];
	sim_mix_ks(ps, conc, k, s);
	meas_on_grid(&kp->tint, meas, NULL);
	opaque_measured(k, s, pred);
	for (int j = 0; j < SIM_NB; j++)
		sum += (pred[j] - meas[j]) * (pred[j] - meas[j]);
	f->tint_rms = sqrt(sum / SIM_NB);
	sim_measured_lab(meas, lm);
	sim_measured_lab(pred, lp);
	a = (color_lab){ lm[0], lm[1], lm[2] };
	b = (color_lab){ lp[0], lp[1], lp[2] };
	f->tint_de00 = color_de00(&a, &b);
}

int sim_paints_derive(struct sim_paintset *ps, struct sim_derive_fit *fit, bl_err *err)
{
	double rw[SIM_NB], kw[SIM_NB];

	if (sim_kimera_n_paints < 2 || sim_kimera_n_paints > SIM_MAX_PAINTS ||
	    strcmp(sim_kimera_paints[0].name, "white") != 0)
		return bl_fail(err, BL_EINVAL, "sim: the paint table must list white first and "
				"hold 2..%d paints", SIM_MAX_PAINTS);
	memset(ps, 0, sizeof(*ps));
	ps->n = sim_kimera_n_paints;

	/* White: S = 1 by definition, K from its masstone. */
	meas_on_grid(&sim_kimera_paints[0].masstone, rw, NULL);
	snprintf(ps->p[0].name, sizeof(ps->p[0].name), "%s", sim_kimera_paints[0].name);
	for (int j = 0; j < SIM_NB; j++) {
		kw[j] = sim_km_ks(sim_saunderson_inv(rw[j]));
		ps->p[0].k[j] = kw[j];
		ps->p[0].s[j] = 1.0;
	}

	for (int i = 1; i < ps->n; i++) {
		const struct sim_kimera_paint *kp = &sim_kimera_paints[i];
		double rp[SIM_NB], sdp[SIM_NB], rt[SIM_NB], sdt[SIM_NB];
		double obs[SIM_NB], w[SIM_NB], lns[SIM_NB];
		double cp = kp->tint_paint_w / (kp->tint_paint_w + kp->tint_white_w), cw = 1.0 - cp;

		snprintf(ps->p[i].name, sizeof(ps->p[i].name), "%s", kp->name);
		meas_on_grid(&kp->masstone, rp, sdp);
		meas_on_grid(&kp->tint, rt, sdt);
		for (int j = 0; j < SIM_NB; j++) {
			double qp = sim_km_ks(sim_saunderson_inv(rp[j]));
			double qm = sim_km_ks(sim_saunderson_inv(rt[j]));
			double num = cw * (qm - kw[j]), den = cp * (qp - qm);

			/*
			 * (K/S)_tint = (cp Kp + cw Kw) / (cp Sp + cw), Kp = qp Sp:
			 * Sp = cw (qm - Kw) / (cp (qp - qm)). Its variance from
			 * the spread of the two measurements sets the weight.
			 */
			if (num > 0.0 && den > 0.0) {
				double gm = qm / (qm - kw[j]) + qm / (qp - qm);
				double gp = qp / (qp - qm);
				double vm = gm * dlnq_drm(rt[j]) * sdt[j];
				double vp = gp * dlnq_drm(rp[j]) * sdp[j];

				obs[j] = log(num / den);
				w[j] = 1.0 / (vm * vm + vp * vp);
			} else {
				obs[j] = 0.0;
				w[j] = 0.0;
			}
		}
		smooth_fit(obs, w, 1.0 / (LNS_STEP_SD * LNS_STEP_SD), 0.0, lns);
		for (int j = 0; j < SIM_NB; j++) {
			double qp = sim_km_ks(sim_saunderson_inv(rp[j]));

			ps->p[i].s[j] = exp(lns[j]);
			ps->p[i].k[j] = qp * ps->p[i].s[j]; /* the masstone is met exactly */
		}
	}
	if (fit)
		for (int i = 0; i < ps->n; i++)
			fit_report(ps, i, &fit[i]);
	return 0;
}

void sim_paints_perturb(struct sim_paintset *ps, rng *r, double sd)
{
	if (sd <= 0.0)
		return;
	for (int i = 0; i < ps->n; i++) {
		/* A level and a tilt across the spectrum, for K and S independently. */
		double k0 = rng_normal(r), k1 = rng_normal(r), s0 = rng_normal(r), s1 = rng_normal(r);

		for (int j = 0; j < SIM_NB; j++) {
			double x = (sim_band_nm(j) - 550.0) / 150.0;

			ps->p[i].k[j] *= exp(sd * (k0 + 0.5 * k1 * x));
			ps->p[i].s[j] *= exp(sd * (s0 + 0.5 * s1 * x));
		}
	}
}

int sim_paint_find(const struct sim_paintset *ps, const char *name)
{
	for (int i = 0; i < ps->n; i++)
		if (strcmp(ps->p[i].name, name) == 0)
			return i;
	return -1;
}

/* mix_model.c: the controller's Kubelka-Munk mixing model: Lab of a recipe with derivatives, built from a palette. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "color/cie.h"
#include "color/mix_impl.h"

/* (1 - k1)(1 - k2): the Saunderson gain of the body reflectance. */
#define SAUND_A ((1.0 - MIX_SAUNDERSON_K1) * (1.0 - MIX_SAUNDERSON_K2))

/* Smallest K/S the model works with: keeps the square root's slope finite at a perfect white. */
#define Q_MIN 1e-7

/*
 * R = 1 + q - sqrt(q^2 + 2q), written as its reciprocal form: the direct one
 * cancels catastrophically for the large K/S of a black.
 */
static inline double km_rinf(double q)
{
	return 1.0 / (1.0 + q + sqrt(q * (q + 2.0)));
}

static inline double saunderson(double r)
{
	return SAUND_A * r / (1.0 - MIX_SAUNDERSON_K2 * r);
}

double mix_km_reflectance(double k_over_s)
{
	return saunderson(km_rinf(k_over_s < Q_MIN ? Q_MIN : k_over_s));
}

double mix_km_ratio(double rm)
{
	/* Saunderson inverted: R = Rm / (a + k2 Rm); then K/S = (1 - R)^2 / 2R. */
	double r = rm / (SAUND_A + MIX_SAUNDERSON_K2 * rm);

	if (r > 1.0 - 1e-6)
		r = 1.0 - 1e-6;
	if (r < 1e-6)
		r = 1e-6;
	return (1.0 - r) * (1.0 - r) / (2.0 * r);
}

/* CIE lightness function (the same as cie.c's) and its derivative. */
static inline double lab_f(double t, double *df)
{
	const double d3 = (6.0 / 29.0) * (6.0 / 29.0) * (6.0 / 29.0);
	const double lin = 1.0 / (3.0 * (6.0 / 29.0) * (6.0 / 29.0));

	if (t > d3) {
		double c = cbrt(t);

		if (df)
			*df = c / (3.0 * t);
		return c;
	}
	if (df)
		*df = lin;
	return t * lin + 4.0 / 29.0;
}

void mix_model_weights(struct mix_model *m)
{
	double white[3], e[MIX_MAX_BANDS], grid[CIE_N], xyz[3];

	cie_white_xyz(cie_d50, white);
	for (int b = 0; b < m->n_bands; b++) {
		memset(e, 0, sizeof(e));
		e[b] = 1.0;
		cie_resample(m->wl_nm, e, m->n_bands, grid);
		cie_reflectance_to_xyz(grid, cie_d50, xyz);
		m->wx[b] = xyz[0] / white[0];
		m->wy[b] = xyz[1] / white[1];
		m->wz[b] = xyz[2] / white[2];
	}
}

/*
 * With q = K/S, Rinf = 1 / (1 + q + sqrt(q^2 + 2q)) and Saunderson's
 * a R / (1 - k2 R) = a / (1/R - k2), the measured reflectance is
 * Rm = a S / ((1 - k2) S + K + W) with W = sqrt(K^2 + 2 K S): one division
 * and one square root a band, and no cancellation for a black.
 */
void mix_eval(const struct mix_model *m, int n, const int *idx, const double *ck,
	      const double *cs, double lab[3], double jk[3][MIX_RECIPE_MAX],
	      double js[3][MIX_RECIPE_MAX], double *refl)
{
	double xyz[3] = { 0.0, 0.0, 0.0 };
	double dk[3][MIX_RECIPE_MAX], ds[3][MIX_RECIPE_MAX];
	const double *kp[MIX_RECIPE_MAX], *sp[MIX_RECIPE_MAX];
	const double c2 = 1.0 - MIX_SAUNDERSON_K2;
	int jac = jk != NULL || js != NULL;

	for (int j = 0; j < n; j++) {
		kp[j] = m->k[idx[j]];
		sp[j] = m->s[idx[j]];
		for (int c = 0; c < 3; c++)
			dk[c][j] = ds[c][j] = 0.0;
	}
	for (int b = 0; b < m->n_bands; b++) {
		double kk = 0.0, ss = 0.0, w, e, rm;

		for (int j = 0; j < n; j++) {
			kk += ck[j] * kp[j][b];
			ss += cs[j] * sp[j][b];
		}
		if (ss < 1e-300)
			ss = 1e-300; /* nothing in the cell: reads as black */
		if (kk < Q_MIN * ss)
			kk = Q_MIN * ss;
		w = sqrt(kk * (kk + 2.0 * ss));
		e = c2 * ss + kk + w;
		rm = SAUND_A * ss / e;
		if (refl)
			refl[b] = rm;
		xyz[0] += m->wx[b] * rm;
		xyz[1] += m->wy[b] * rm;
		xyz[2] += m->wz[b] * rm;
		if (jac) {
			double ie = 1.0 / e, iw = 1.0 / w;
			double drk = -rm * ie * (1.0 + (kk + ss) * iw);       /* d Rm / d K_mix */
			double drs = SAUND_A * ie - rm * ie * (c2 + kk * iw); /* d Rm / d S_mix */
			const double wv[3] = { m->wx[b], m->wy[b], m->wz[b] };

			for (int j = 0; j < n; j++) {
				double gk = drk * kp[j][b], gs = drs * sp[j][b];

				for (int c = 0; c < 3; c++) {
					dk[c][j] += wv[c] * gk;
					ds[c][j] += wv[c] * gs;
				}
			}
		}
	}
	{
		double d[3], f[3];

		for (int c = 0; c < 3; c++)
			f[c] = lab_f(xyz[c], &d[c]);
		lab[0] = 116.0 * f[1] - 16.0;
		lab[1] = 500.0 * (f[0] - f[1]);
		lab[2] = 200.0 * (f[1] - f[2]);
		if (!jac)
			return;
		for (int j = 0; j < n; j++) {
			double (*src[2])[MIX_RECIPE_MAX] = { dk, ds };
			double (*dst[2])[MIX_RECIPE_MAX] = { jk, js };

			for (int t = 0; t < 2; t++) {
				double gx, gy, gz;

				if (!dst[t])
					continue;
				gx = d[0] * src[t][0][j];
				gy = d[1] * src[t][1][j];
				gz = d[2] * src[t][2][j];
				dst[t][0][j] = 116.0 * gy;
				dst[t][1][j] = 500.0 * (gx - gy);
				dst[t][2][j] = 200.0 * (gy - gz);
			}
		}
	}
}

void mix_predict_sparse(const struct mix_model *m, const struct mix_learn *l, int n,
			const int *idx, const double *amounts, color_lab *out, double *refl)
{
	double ck[MIX_RECIPE_MAX], cs[MIX_RECIPE_MAX], lab[3];

	for (int j = 0; j < n; j++) {
		ck[j] = amounts[j] * (l ? exp(l->log_k[idx[j]]) : 1.0);
		cs[j] = amounts[j] * (l ? exp(l->log_s[idx[j]]) : 1.0);
	}
	mix_eval(m, n, idx, ck, cs, lab, NULL, NULL, refl);
	out->L = lab[0];
	out->a = lab[1];
	out->b = lab[2];
}

void mix_predict(const struct mix_model *m, const struct mix_learn *l, const double *amounts,
		 color_lab *out)
{
	double xyz[3] = { 0.0, 0.0, 0.0 }, f[3];

	/* Any number of paints (a whole palette, say), so the mixed K and S are summed here. */
	for (int b = 0; b < m->n_bands; b++) {
		double kk = 0.0, ss = 0.0, q, rm;

		for (int i = 0; i < m->n_paints; i++) {
			if (amounts[i] <= 0.0)
				continue;
			kk += amounts[i] * (l ? exp(l->log_k[i]) : 1.0) * m->k[i][b];
			ss += amounts[i] * (l ? exp(l->log_s[i]) : 1.0) * m->s[i][b];
		}
		if (ss < 1e-300)
			ss = 1e-300;
		q = kk / ss;
		rm = saunderson(km_rinf(q < Q_MIN ? Q_MIN : q));
		xyz[0] += m->wx[b] * rm;
		xyz[1] += m->wy[b] * rm;
		xyz[2] += m->wz[b] * rm;
	}
	for (int c = 0; c < 3; c++)
		f[c] = lab_f(xyz[c], NULL);
	out->L = 116.0 * f[1] - 16.0;
	out->a = 500.0 * (f[0] - f[1]);
	out->b = 200.0 * (f[1] - f[2]);
}

int mix_model_find(const struct mix_model *m, const char *name)
{
	for (int i = 0; i < m->n_paints; i++)
		if (strcmp(m->name[i], name) == 0)
			return i;
	return -1;
}

int mix_spd_solve(double *a, double *b, int n)
{
	/* Cholesky a = L L' in the lower triangle, then two triangular solves. */
	for (int j = 0; j < n; j++) {
		double d = a[j * n + j];

		for (int k = 0; k < j; k++)
			d -= a[j * n + k] * a[j * n + k];
		if (!(d > 0.0))
			return -1;
		d = sqrt(d);
		a[j * n + j] = d;
		for (int i = j + 1; i < n; i++) {
			double v = a[i * n + j];

			for (int k = 0; k < j; k++)
				v -= a[i * n + k] * a[j * n + k];
			a[i * n + j] = v / d;
		}
	}
	for (int i = 0; i < n; i++) {
		double v = b[i];

		for (int k = 0; k < i; k++)
			v -= a[i * n + k] * b[k];
		b[i] = v / a[i * n + i];
	}
	for (int i = n - 1; i >= 0; i--) {
		double v = b[i];

		for (int k = i + 1; k < n; k++)
			v -= a[k * n + i] * b[k];
		b[i] = v / a[i * n + i];
	}
	return 0;
}

void mix_de00_metric(const color_lab *c, double u[3][3])
{
	/*
	 * Central differences of the squared difference: for a quadratic form
	 * Q(d) = d' M d, M_ii = (Q(h e_i) + Q(-h e_i)) / 2h^2 and
	 * M_ij = (Q(h(e_i + e_j)) - Q(h(e_i - e_j))) / 4h^2. h = 0.5 is small
	 * against a tolerance of 2 yet far above rounding.
	 */
	const double h = 0.5;
	double mm[9], base[3] = { c->L, c->a, c->b };

	for (int i = 0; i < 3; i++) {
		for (int j = i; j < 3; j++) {
			double q[2];

			for (int s = 0; s < 2; s++) {
				double p[3] = { base[0], base[1], base[2] };
				color_lab x;
				double d;

				if (i == j) {
					p[i] += s ? -h : h;
				} else {
					p[i] += h;
					p[j] += s ? -h : h;
				}
				x = (color_lab){ p[0], p[1], p[2] };
				d = color_de00(c, &x);
				q[s] = d * d;
			}
			if (i == j)
				mm[i * 3 + i] = (q[0] + q[1]) / (2.0 * h * h);
			else
				mm[i * 3 + j] = mm[j * 3 + i] = (q[0] - q[1]) / (4.0 * h * h);
		}
	}
	/* M = U'U with U upper triangular; a floor on the diagonal keeps it definite. */
	for (int i = 0; i < 3; i++)
		mm[i * 3 + i] += 1e-4;
	memset(u, 0, sizeof(double) * 9);
	for (int j = 0; j < 3; j++) {
		double d = mm[j * 3 + j];

		for (int k = 0; k < j; k++)
			d -= u[k][j] * u[k][j];
		d = d > 1e-6 ? sqrt(d) : 1e-3;
		u[j][j] = d;
		for (int i = j + 1; i < 3; i++) {
			double v = mm[j * 3 + i];

			for (int k = 0; k < j; k++)
				v -= u[k][j] * u[k][i];
			u[j][i] = v / d;
		}
	}
}

int mix_model_from_palette(const struct palette *p, struct mix_model *m, bl_err *err)
{
	memset(m, 0, sizeof(*m));
	m->n_paints = p->n_paints;
	m->white = p->white[0] ? palette_find(p, p->white) : -1;
	if (p->n_bands) {
		m->n_bands = p->n_bands;
		memcpy(m->wl_nm, p->wavelengths_nm, sizeof(double) * (size_t)p->n_bands);
	} else {
		m->n_bands = MIX_DEFAULT_BANDS;
		for (int b = 0; b < m->n_bands; b++)
			m->wl_nm[b] = MIX_DEFAULT_WL0_NM + b * MIX_DEFAULT_STEP_NM;
	}
	mix_model_weights(m);
	for (int i = 0; i < p->n_paints; i++) {
		const struct palette_paint *pp = &p->paints[i];

		snprintf(m->name[i], sizeof(m->name[i]), "%s", pp->name);
		if (!pp->has_spectral)
			continue;
		for (int b = 0; b < m->n_bands; b++) {
			/* A paint needs some scattering or some absorption to have a colour at all. */
			if (pp->s[b] <= 0.0 && pp->k[b] <= 0.0)
				return bl_fail(err, BL_EINVAL,
					       "%s: paints[%d] ('%s'): k and s are both 0 at %g nm",
					       p->file, i, pp->name, p->wavelengths_nm[b]);
			m->k[i][b] = pp->k[b];
			m->s[i][b] = pp->s[b];
		}
	}
	return mix_fit_measured(p, m, err);
}

/* sim_chart.c: a ColorChecker 24 for the camera: smooth reflectance spectra fitted to the chart's published CIELAB values. */
#include <math.h>
#include <string.h>

#include "sim/sim_chart.h"

/*
 * A reflectance as a sigmoid of a quadratic in wavelength: always inside
 * (0, 1), smooth like the broad-band pigments of a real chart, and with
 * three parameters for the three coordinates to meet.
 */
static void spectrum(const double c[3], double r[SIM_NB])
{
	for (int j = 0; j < SIM_NB; j++) {
		double x = (sim_band_nm(j) - 550.0) / 150.0, z = c[0] * x * x + c[1] * x + c[2];

		r[j] = 0.5 + z / (2.0 * sqrt(1.0 + z * z));
	}
}

static void residual(const double c[3], const double target[3], double res[3])
{
	double r[SIM_NB], lab[3];

	spectrum(c, r);
	sim_measured_lab(r, lab);
	for (int i = 0; i < 3; i++)
		res[i] = lab[i] - target[i];
}

static double norm3(const double v[3])
{
	return sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
}

/* Solves the 3x3 system a x = b by Cramer's rule; 0 when singular. */
static int solve3(const double a[3][3], const double b[3], double x[3])
{
	double d = a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) -
		   a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0]) +
		   a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]);

	if (fabs(d) < 1e-300)
		return 0;
	for (int k = 0; k < 3; k++) {
		double m[3][3];

		memcpy(m, a, sizeof(m));
		for (int i = 0; i < 3; i++)
			m[i][k] = b[i];
		x[k] = (m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
			m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
			m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0])) / d;
	}
	return 1;
}

/* Levenberg-Marquardt from a grey of the target's lightness. */
static void fit(const double target[3], double r[SIM_NB])
{
	double c[3] = { 0.0, 0.0, 0.0 }, res[3], mu = 1e-3;
	double y = target[0] > 8.0 ? pow((target[0] + 16.0) / 116.0, 3.0) : target[0] / 903.3;
	double g = 2.0 * y - 1.0;

	c[2] = g / sqrt(1.0 - g * g + 1e-12);
	residual(c, target, res);
	for (int it = 0; it < 400 && norm3(res) > 1e-5; it++) {
		double jac[3][3], jtj[3][3], jtr[3], step[3], trial[3], rt[3];

		for (int k = 0; k < 3; k++) {
			double cp[3] = { c[0], c[1], c[2] }, rp[3], h = 1e-6 * (1.0 + fabs(c[k]));

			cp[k] += h;
			residual(cp, target, rp);
			for (int i = 0; i < 3; i++)
				jac[i][k] = (rp[i] - res[i]) / h;
		}
		for (int a = 0; a < 3; a++) {
			jtr[a] = 0.0;
			for (int b = 0; b < 3; b++) {
				jtj[a][b] = 0.0;
				for (int i = 0; i < 3; i++)
					jtj[a][b] += jac[i][a] * jac[i][b];
			}
			for (int i = 0; i < 3; i++)
				jtr[a] -= jac[i][a] * res[i];
		}
		for (int a = 0; a < 3; a++)
			jtj[a][a] *= 1.0 + mu;
		if (!solve3(jtj, jtr, step)) {
			mu *= 10.0;
			continue;
		}
		for (int k = 0; k < 3; k++)
			trial[k] = c[k] + step[k];
		residual(trial, target, rt);
		if (norm3(rt) < norm3(res)) {
			memcpy(c, trial, sizeof(c));
			memcpy(res, rt, sizeof(res));
			mu = fmax(mu * 0.3, 1e-9);
		} else {
			mu *= 10.0;
		}
	}
	spectrum(c, r);
}

const double (*sim_chart_spectra(void))[SIM_NB]
{
	static double spectra[SIM_CHART_N][SIM_NB];
	static int done;

	if (!done) {
		for (int i = 0; i < SIM_CHART_N; i++)
			fit(color_cc24_lab[i], spectra[i]);
		done = 1;
	}
	return (const double (*)[SIM_NB])spectra;
}

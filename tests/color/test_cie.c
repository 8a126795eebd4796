/* test_cie.c: checks the CIE tables against known white points and anchor values, and the Lab and resampling maths. */
#include "color/cie.h"

#include <math.h>
#include <stdio.h>

/*
 * Standalone on purpose: it links only cie.c, so a table typo shows up here
 * before anything built on the tables can hide it. Every check runs, so one
 * run lists every failure.
 */
static int failures;
static int checks;

static void near(const char *what, double got, double want, double tol)
{
	checks++;
	if (!(fabs(got - want) <= tol)) {
		failures++;
		fprintf(stderr, "FAIL %s: got %.9f, want %.9f +- %g (off by %.3g)\n",
			what, got, want, tol, got - want);
	}
}

static int index_of_nm(int nm)
{
	return (nm - (int)CIE_WL0_NM) / (int)CIE_STEP_NM;
}

/*
 * The white points are the sensitive check: a digit wrong anywhere in an
 * observer or illuminant table moves them. Reference values are the ones the
 * 5 nm CIE 15 tables give over 380..780 nm.
 */
static void test_white_points(void)
{
	double w[3];

	cie_white_xyz(cie_d50, w);
	printf("D50 white: X=%.4f Y=%.4f Z=%.4f\n", w[0], w[1], w[2]);
	near("D50 white X", w[0], 96.42, 0.03);
	near("D50 white Y", w[1], 100.0, 1e-9);
	near("D50 white Z", w[2], 82.51, 0.05);

	cie_white_xyz(cie_d65, w);
	printf("D65 white: X=%.4f Y=%.4f Z=%.4f\n", w[0], w[1], w[2]);
	near("D65 white X", w[0], 95.04, 0.03);
	near("D65 white Y", w[1], 100.0, 1e-9);
	near("D65 white Z", w[2], 108.88, 0.05);
}

/* The equal-energy sums are independent of the illuminant tables. */
static void test_observer_sums(void)
{
	double sy = 0.0;

	for (int i = 0; i < CIE_N; i++)
		sy += cie_ybar[i] * CIE_STEP_NM;
	printf("sum ybar * 5 nm = %.4f\n", sy);
	near("sum ybar * 5 nm", sy, 106.857, 0.001);
}

/* Well-known single values; they catch a shifted row, which sums may miss. */
static void test_anchor_values(void)
{
	int peak = 0;

	for (int i = 1; i < CIE_N; i++)
		if (cie_ybar[i] > cie_ybar[peak])
			peak = i;
	near("ybar peak wavelength (nm)", CIE_WL0_NM + peak * CIE_STEP_NM, 555.0, 0.0);
	near("ybar at 555 nm", cie_ybar[index_of_nm(555)], 1.0, 0.0);
	near("xbar at 600 nm", cie_xbar[index_of_nm(600)], 1.0622, 1e-12);
	near("D50 at 560 nm", cie_d50[index_of_nm(560)], 100.0, 0.0);
	near("D65 at 560 nm", cie_d65[index_of_nm(560)], 100.0, 0.0);
}

static void fill(double *v, double x)
{
	for (int i = 0; i < CIE_N; i++)
		v[i] = x;
}

static void test_lab(void)
{
	double refl[CIE_N], lab[3], xyz[3];

	/* Perfect white against a white from the same tables: exact. */
	fill(refl, 1.0);
	cie_reflectance_to_lab_d50(refl, lab);
	printf("perfect white Lab: %.12f %.12f %.12f\n", lab[0], lab[1], lab[2]);
	near("perfect white L", lab[0], 100.0, 1e-9);
	near("perfect white a", lab[1], 0.0, 1e-9);
	near("perfect white b", lab[2], 0.0, 1e-9);

	/* 18% grey: Y = 18, so L = 116 * cbrt(0.18) - 16 = 49.4961. */
	fill(refl, 0.18);
	cie_reflectance_to_xyz(refl, cie_d50, xyz);
	near("18% grey Y", xyz[1], 18.0, 1e-9);
	cie_reflectance_to_lab_d50(refl, lab);
	printf("18%% grey Lab: %.6f %.9f %.9f\n", lab[0], lab[1], lab[2]);
	near("18% grey L", lab[0], 116.0 * cbrt(0.18) - 16.0, 1e-9);
	near("18% grey L ~ 49.50", lab[0], 49.50, 0.005);
	near("18% grey a", lab[1], 0.0, 1e-6);
	near("18% grey b", lab[2], 0.0, 1e-6);

	/*
	 * Below (6/29)^3 the linear segment applies: Y/Yn = 0.001 gives
	 * L = 116 * (0.001 / (3 (6/29)^2) + 4/29) - 16 = 903.3 * 0.001.
	 */
	fill(refl, 0.001);
	cie_reflectance_to_lab_d50(refl, lab);
	near("0.1% grey L (linear segment)", lab[0], 0.001 * 24389.0 / 27.0, 1e-9);

	/* Black is L = 0, not NaN: the linear segment reaches zero. */
	fill(refl, 0.0);
	cie_reflectance_to_lab_d50(refl, lab);
	near("black L", lab[0], 0.0, 1e-12);
}

static void test_resample(void)
{
	/* Uneven steps on purpose, and a range inside the grid. */
	const double wl[] = { 400.0, 401.3, 437.0, 512.5, 600.0, 650.0, 700.0 };
	const int n = (int)(sizeof(wl) / sizeof(wl[0]));
	double v[sizeof(wl) / sizeof(wl[0])], out[CIE_N];
	double worst = 0.0;

	for (int k = 0; k < n; k++)
		v[k] = 0.25 + 0.002 * (wl[k] - 400.0);
	cie_resample(wl, v, n, out);
	for (int i = 0; i < CIE_N; i++) {
		double g = CIE_WL0_NM + i * CIE_STEP_NM;
		double want;

		if (g < 400.0)
			want = v[0];
		else if (g > 700.0)
			want = v[n - 1];
		else
			want = 0.25 + 0.002 * (g - 400.0);
		if (fabs(out[i] - want) > worst)
			worst = fabs(out[i] - want);
	}
	printf("resample ramp: worst error %.3g\n", worst);
	near("resample linear ramp, worst error", worst, 0.0, 1e-12);
	near("resample holds the low end (380 nm)", out[0], v[0], 0.0);
	near("resample holds the high end (780 nm)", out[CIE_N - 1], v[n - 1], 0.0);
	near("resample at a given point (600 nm)", out[index_of_nm(600)], v[4], 1e-15);

	/* One sample: constant everywhere. */
	cie_resample(wl, v, 1, out);
	near("resample single sample at 380 nm", out[0], v[0], 0.0);
	near("resample single sample at 780 nm", out[CIE_N - 1], v[0], 0.0);

	/* The grid itself as input comes back unchanged. */
	{
		double gw[CIE_N], gout[CIE_N];

		for (int i = 0; i < CIE_N; i++)
			gw[i] = CIE_WL0_NM + i * CIE_STEP_NM;
		cie_resample(gw, cie_d65, CIE_N, gout);
		worst = 0.0;
		for (int i = 0; i < CIE_N; i++)
			if (fabs(gout[i] - cie_d65[i]) > worst)
				worst = fabs(gout[i] - cie_d65[i]);
		near("resample onto its own grid", worst, 0.0, 0.0);
	}
}

int main(void)
{
	test_white_points();
	test_observer_sums();
	test_anchor_values();
	test_lab();
	test_resample();
	if (failures) {
		fprintf(stderr, "test_cie: %d of %d checks failed\n", failures, checks);
		return 1;
	}
	printf("test_cie: all %d checks passed\n", checks);
	return 0;
}

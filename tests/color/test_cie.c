/* test_cie.c: checks the CIE tables against known white points and anchor values, and the Lab and resampling maths. */
#include "color/cie.h"
#include "test.h"

/* Every check runs, so one run lists every failure. */
static void near(const char *what, double got, double want, double tol)
{
	test_checks++;
	if (!(fabs(got - want) <= tol)) {
		test_failures++;
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
TEST(test_white_points)
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
TEST(test_observer_sums)
{
	double sy = 0.0;

	for (int i = 0; i < CIE_N; i++)
		sy += cie_ybar[i] * CIE_STEP_NM;
	printf("sum ybar * 5 nm = %.4f\n", sy);
	near("sum ybar * 5 nm", sy, 106.857, 0.001);
}

/*
 * The 1931 functions were scaled to equal areas, so the equal-energy white
 * sits at x = y = 1/3. Cut to 380..780 nm at 5 nm the three sums still agree
 * to about 0.001, so a wrong digit worth more than about 0.0005 in any one
 * sample of x-bar or z-bar shows here even where the illuminant white points,
 * which weight the tails lightly, would not notice it.
 */
TEST(test_observer_equal_areas)
{
	double sx = 0.0, sy = 0.0, sz = 0.0;

	for (int i = 0; i < CIE_N; i++) {
		sx += cie_xbar[i] * CIE_STEP_NM;
		sy += cie_ybar[i] * CIE_STEP_NM;
		sz += cie_zbar[i] * CIE_STEP_NM;
	}
	printf("equal-energy sums: x %.4f y %.4f z %.4f\n", sx, sy, sz);
	near("sum xbar - sum ybar (equal areas)", sx - sy, 0.0, 0.003);
	near("sum zbar - sum ybar (equal areas)", sz - sy, 0.0, 0.003);
}

/*
 * CIE 15:2004 Table T.2: the daylight components S0, S1, S2 at 10 nm,
 * 380..780 nm. CIE 15 computes D50 and D65 from them (note 5 to Table T.1),
 * so the recipe is a second, independent spelling of both illuminant tables.
 */
static const double s0[41] = {
	/* 380 */ 63.4, 65.8, 94.8, 104.8, 105.9,
	/* 430 */ 96.8, 113.9, 125.6, 125.5, 121.3,
	/* 480 */ 121.3, 113.5, 113.1, 110.8, 106.5,
	/* 530 */ 108.8, 105.3, 104.4, 100.0, 96.0,
	/* 580 */ 95.1, 89.1, 90.5, 90.3, 88.4,
	/* 630 */ 84.0, 85.1, 81.9, 82.6, 84.9,
	/* 680 */ 81.3, 71.9, 74.3, 76.4, 63.3,
	/* 730 */ 71.7, 77.0, 65.2, 47.7, 68.6,
	/* 780 */ 65.0,
};

static const double s1[41] = {
	/* 380 */ 38.5, 35.0, 43.4, 46.3, 43.9,
	/* 430 */ 37.1, 36.7, 35.9, 32.6, 27.9,
	/* 480 */ 24.3, 20.1, 16.2, 13.2, 8.6,
	/* 530 */ 6.1, 4.2, 1.9, 0.0, -1.6,
	/* 580 */ -3.5, -3.5, -5.8, -7.2, -8.6,
	/* 630 */ -9.5, -10.9, -10.7, -12.0, -14.0,
	/* 680 */ -13.6, -12.0, -13.3, -12.9, -10.6,
	/* 730 */ -11.6, -12.2, -10.2, -7.8, -11.2,
	/* 780 */ -10.4,
};

static const double s2[41] = {
	/* 380 */ 3.0, 1.2, -1.1, -0.5, -0.7,
	/* 430 */ -1.2, -2.6, -2.9, -2.8, -2.6,
	/* 480 */ -2.6, -1.8, -1.5, -1.3, -1.2,
	/* 530 */ -1.0, -0.5, -0.3, 0.0, 0.2,
	/* 580 */ 0.5, 2.1, 3.2, 4.1, 4.7,
	/* 630 */ 5.1, 6.7, 7.3, 8.6, 9.8,
	/* 680 */ 10.2, 8.3, 9.6, 8.5, 7.0,
	/* 730 */ 7.6, 8.0, 6.7, 5.2, 7.4,
	/* 780 */ 6.8,
};

/*
 * The CIE 15 recipe: the nominal temperature times 1.4388/1.4380 (the change
 * of c2), the daylight locus xD(T) and yD, M1 and M2 rounded to three
 * decimals, S every 10 nm, linear interpolation for the 5 nm points between.
 */
static void daylight(double t_nominal, double out[CIE_N])
{
	double t = t_nominal * 1.4388 / 1.4380;
	double xd, yd, m, m1, m2;

	if (t <= 7000.0)
		xd = -4.6070e9 / (t * t * t) + 2.9678e6 / (t * t) + 0.09911e3 / t + 0.244063;
	else
		xd = -2.0064e9 / (t * t * t) + 1.9018e6 / (t * t) + 0.24748e3 / t + 0.237040;
	yd = -3.000 * xd * xd + 2.870 * xd - 0.275;
	m = 0.0241 + 0.2562 * xd - 0.7341 * yd;
	m1 = round(1000.0 * (-1.3515 - 1.7703 * xd + 5.9114 * yd) / m) / 1000.0;
	m2 = round(1000.0 * (0.0300 - 31.4424 * xd + 30.0717 * yd) / m) / 1000.0;
	for (int k = 0; k < 41; k++)
		out[2 * k] = s0[k] + m1 * s1[k] + m2 * s2[k];
	for (int k = 0; k < 40; k++)
		out[2 * k + 1] = 0.5 * (out[2 * k] + out[2 * k + 2]);
}

TEST(test_illuminants_against_recipe)
{
	double d[CIE_N];
	char what[64];

	/* D50 is tabulated to two decimals: rounding alone reaches 0.005. */
	daylight(5000.0, d);
	for (int i = 0; i < CIE_N; i++) {
		snprintf(what, sizeof(what), "D50 at %d nm vs CIE 15 recipe",
			 (int)(CIE_WL0_NM + i * CIE_STEP_NM));
		near(what, cie_d50[i], d[i], 0.0051);
	}
	/* D65 has six figures; it agrees with the recipe to within 0.001. */
	daylight(6500.0, d);
	for (int i = 0; i < CIE_N; i++) {
		snprintf(what, sizeof(what), "D65 at %d nm vs CIE 15 recipe",
			 (int)(CIE_WL0_NM + i * CIE_STEP_NM));
		near(what, cie_d65[i], d[i], 0.001);
	}
}

/* Well-known single values; they catch a shifted row, which sums may miss. */
TEST(test_anchor_values)
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

TEST(test_lab)
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

TEST(test_resample)
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

TEST_MAIN(T(test_white_points), T(test_observer_sums), T(test_observer_equal_areas),
	  T(test_illuminants_against_recipe), T(test_anchor_values), T(test_lab),
	  T(test_resample))

/* test_color.c: CIEDE2000 against the Sharma-Wu-Dalal (2005) data, conversions of known colours, malformed colour strings. */
#include "color/color.h"
#include "test.h"

/*
 * The 34 pairs of G. Sharma, W. Wu, E. N. Dalal, "The CIEDE2000 color-difference
 * formula: implementation notes, supplementary test data, and mathematical
 * observations", Color Research & Application 30(1), 2005, Table 1.
 */
static const struct {
	double l1, a1, b1, l2, a2, b2, de;
} sharma[34] = {
	{ 50.0000, 2.6772, -79.7751, 50.0000, 0.0000, -82.7485, 2.0425 },
	{ 50.0000, 3.1571, -77.2803, 50.0000, 0.0000, -82.7485, 2.8615 },
	{ 50.0000, 2.8361, -74.0200, 50.0000, 0.0000, -82.7485, 3.4412 },
	{ 50.0000, -1.3802, -84.2814, 50.0000, 0.0000, -82.7485, 1.0000 },
	{ 50.0000, -1.1848, -84.8006, 50.0000, 0.0000, -82.7485, 1.0000 },
	{ 50.0000, -0.9009, -85.5211, 50.0000, 0.0000, -82.7485, 1.0000 },
	{ 50.0000, 0.0000, 0.0000, 50.0000, -1.0000, 2.0000, 2.3669 },
	{ 50.0000, -1.0000, 2.0000, 50.0000, 0.0000, 0.0000, 2.3669 },
	{ 50.0000, 2.4900, -0.0010, 50.0000, -2.4900, 0.0009, 7.1792 },
	{ 50.0000, 2.4900, -0.0010, 50.0000, -2.4900, 0.0010, 7.1792 },
	{ 50.0000, 2.4900, -0.0010, 50.0000, -2.4900, 0.0011, 7.2195 },
	{ 50.0000, 2.4900, -0.0010, 50.0000, -2.4900, 0.0012, 7.2195 },
	{ 50.0000, -0.0010, 2.4900, 50.0000, 0.0009, -2.4900, 4.8045 },
	{ 50.0000, -0.0010, 2.4900, 50.0000, 0.0010, -2.4900, 4.8045 },
	{ 50.0000, -0.0010, 2.4900, 50.0000, 0.0011, -2.4900, 4.7461 },
	{ 50.0000, 2.5000, 0.0000, 50.0000, 0.0000, -2.5000, 4.3065 },
	{ 50.0000, 2.5000, 0.0000, 73.0000, 25.0000, -18.0000, 27.1492 },
	{ 50.0000, 2.5000, 0.0000, 61.0000, -5.0000, 29.0000, 22.8977 },
	{ 50.0000, 2.5000, 0.0000, 56.0000, -27.0000, -3.0000, 31.9030 },
	{ 50.0000, 2.5000, 0.0000, 58.0000, 24.0000, 15.0000, 19.4535 },
	{ 50.0000, 2.5000, 0.0000, 50.0000, 3.1736, 0.5854, 1.0000 },
	{ 50.0000, 2.5000, 0.0000, 50.0000, 3.2972, 0.0000, 1.0000 },
	{ 50.0000, 2.5000, 0.0000, 50.0000, 1.8634, 0.5757, 1.0000 },
	{ 50.0000, 2.5000, 0.0000, 50.0000, 3.2592, 0.3350, 1.0000 },
	{ 60.2574, -34.0099, 36.2677, 60.4626, -34.1751, 39.4387, 1.2644 },
	{ 63.0109, -31.0961, -5.8663, 62.8187, -29.7946, -4.0864, 1.2630 },
	{ 61.2901, 3.7196, -5.3901, 61.4292, 2.2480, -4.9620, 1.8731 },
	{ 35.0831, -44.1164, 3.7933, 35.0232, -40.0716, 1.5901, 1.8645 },
	{ 22.7233, 20.0904, -46.6940, 23.0331, 14.9730, -42.5619, 2.0373 },
	{ 36.4612, 47.8580, 18.3852, 36.2715, 50.5065, 21.2231, 1.4146 },
	{ 90.8027, -2.0831, 1.4410, 91.1528, -1.6435, 0.0447, 1.4441 },
	{ 90.9257, -0.5406, -0.9208, 88.6381, -0.8985, -0.7239, 1.5381 },
	{ 6.7747, -0.2908, -2.4247, 5.8714, -0.0985, -2.2286, 0.6377 },
	{ 2.0776, 0.0795, -1.1350, 0.9033, -0.0636, -0.5514, 0.9082 },
};

TEST(sharma_pairs_both_orders)
{
	for (int i = 0; i < 34; i++) {
		color_lab x = { sharma[i].l1, sharma[i].a1, sharma[i].b1 };
		color_lab y = { sharma[i].l2, sharma[i].a2, sharma[i].b2 };

		/* Rounded to 4 decimals, exactly as the paper prints them. */
		CHECK_MSG(fabs(round(color_de00(&x, &y) * 1e4) / 1e4 - sharma[i].de) < 1e-9,
			  "pair %d: %.6f vs %.4f", i + 1, color_de00(&x, &y), sharma[i].de);
		CHECK_MSG(fabs(round(color_de00(&y, &x) * 1e4) / 1e4 - sharma[i].de) < 1e-9,
			  "pair %d reversed: %.6f vs %.4f", i + 1, color_de00(&y, &x), sharma[i].de);
	}
}

TEST(sharma_pairs_from_cli)
{
	for (int i = 0; i < 34; i++) {
		char a[96], b[96], want[32];
		const char *fwd[] = { "color", "diff", a, b, NULL };
		const char *rev[] = { "color", "diff", b, a, NULL };
		char *out = NULL;
		int st;

		snprintf(a, sizeof(a), "lab:%.4f,%.4f,%.4f", sharma[i].l1, sharma[i].a1, sharma[i].b1);
		snprintf(b, sizeof(b), "lab:%.4f,%.4f,%.4f", sharma[i].l2, sharma[i].a2, sharma[i].b2);
		snprintf(want, sizeof(want), "%.4f\n", sharma[i].de);
		st = test_brushloop(fwd, &out, NULL);
		CHECK_MSG(st == 0 && out && strcmp(out, want) == 0, "pair %d: got '%s' want '%s'",
			  i + 1, out ? out : "", want);
		free(out);
		st = test_brushloop(rev, &out, NULL);
		CHECK_MSG(st == 0 && out && strcmp(out, want) == 0, "pair %d reversed: got '%s'",
			  i + 1, out ? out : "");
		free(out);
	}
}

TEST(fast_ciede2000_matches_sharma_and_lcms)
{
	unsigned st = 11;
	double worst = 0;

	for (int i = 0; i < 34; i++) {
		const double d1 = color_de00_fast(sharma[i].l1, sharma[i].a1, sharma[i].b1,
						  sharma[i].l2, sharma[i].a2, sharma[i].b2);
		const double d2 = color_de00_fast(sharma[i].l2, sharma[i].a2, sharma[i].b2,
						  sharma[i].l1, sharma[i].a1, sharma[i].b1);

		CHECK_MSG(fabs(round(d1 * 1e4) / 1e4 - sharma[i].de) < 1e-9, "pair %d: %.6f", i + 1, d1);
		CHECK_MSG(fabs(round(d2 * 1e4) / 1e4 - sharma[i].de) < 1e-9, "pair %d reversed: %.6f",
			  i + 1, d2);
	}
	/* Random pairs over the whole Lab range, against lcms2's implementation. */
	for (int i = 0; i < 100000; i++) {
		double v[6];

		for (int k = 0; k < 6; k++) {
			st = st * 1103515245u + 12345u;
			v[k] = (k % 3 == 0) ? (st >> 8) % 10001 / 100.0
					    : (int)((st >> 8) % 25601) / 100.0 - 128;
		}
		{
			color_lab x = { v[0], v[1], v[2] }, y = { v[3], v[4], v[5] };

			worst = fmax(worst, fabs(color_de00_fast(v[0], v[1], v[2], v[3], v[4], v[5]) -
						 color_de00(&x, &y)));
		}
	}
	CHECK_MSG(worst < 1e-9, "largest difference from lcms2: %g", worst);
}

TEST(weighting_factors_change_the_difference)
{
	color_lab x = { 50, 0, 0 }, y = { 60, 0, 0 };
	double d1 = color_de2000(&x, &y, 1, 1, 1), d2 = color_de2000(&x, &y, 2, 1, 1);

	/* A pure lightness difference scales by 1/kL. */
	CHECK_NEAR(d2, d1 / 2.0, 1e-9);
}

TEST(srgb_known_colours)
{
	color_lab lab;
	bl_err err;

	CHECK(color_parse("#ffffff", &lab, &err) == 0);
	CHECK_NEAR(lab.L, 100.0, 0.01);
	CHECK_NEAR(lab.a, 0.0, 0.01);
	CHECK_NEAR(lab.b, 0.0, 0.01);
	/* sRGB red under D50 (Bradford), as tabulated by B. Lindbloom: 54.29, 80.81, 69.89. */
	CHECK(color_parse("srgb:255,0,0", &lab, &err) == 0);
	CHECK_NEAR(lab.L, 54.29, 0.05);
	CHECK_NEAR(lab.a, 80.81, 0.1);
	CHECK_NEAR(lab.b, 69.89, 0.1);
	CHECK(color_parse("#000000", &lab, &err) == 0);
	CHECK_NEAR(lab.L, 0.0, 0.01);
	/* Mid grey 119 is L* 50 to within a quarter unit. */
	CHECK(color_parse("srgb:119,119,119", &lab, &err) == 0);
	CHECK_NEAR(lab.L, 50.0, 0.25);
	CHECK_NEAR(lab.a, 0.0, 0.01);
}

TEST(lab_srgb_round_trip)
{
	for (int r = 0; r <= 255; r += 51)
		for (int g = 0; g <= 255; g += 51)
			for (int b = 0; b <= 255; b += 51) {
				color_rgb in = { r, g, b }, back;
				color_lab lab;
				int ok;

				CHECK(color_srgb_to_lab(&in, &lab, NULL) == 0);
				CHECK(color_lab_to_srgb(&lab, &back, &ok, NULL) == 0);
				CHECK(ok);
				CHECK_MSG(fabs(back.r - r) < 0.01 && fabs(back.g - g) < 0.01 &&
						  fabs(back.b - b) < 0.01,
					  "%d,%d,%d came back %.3f,%.3f,%.3f", r, g, b, back.r, back.g,
					  back.b);
			}
}

TEST(out_of_gamut_is_reported)
{
	color_lab lab = { 50, 80, -90 };
	color_rgb rgb;
	int ok = 1;

	CHECK(color_lab_to_srgb(&lab, &rgb, &ok, NULL) == 0);
	CHECK(!ok);
}

TEST(xyz_of_white_and_round_trip)
{
	color_lab white = { 100, 0, 0 }, back;
	color_xyz xyz;

	color_lab_to_xyz(&white, &xyz);
	CHECK_NEAR(xyz.X, 96.42, 0.01);
	CHECK_NEAR(xyz.Y, 100.0, 1e-9);
	CHECK_NEAR(xyz.Z, 82.49, 0.01);
	{
		color_lab c = { 42.5, 18.25, -33.75 };

		color_lab_to_xyz(&c, &xyz);
		color_xyz_to_lab(&xyz, &back);
		CHECK_NEAR(back.L, c.L, 1e-9);
		CHECK_NEAR(back.a, c.a, 1e-9);
		CHECK_NEAR(back.b, c.b, 1e-9);
	}
}

TEST(malformed_colours_are_refused)
{
	static const struct {
		const char *text, *msg;
	} bad[] = {
		{ "", "empty colour" },
		{ "lab:50,0", "expected 3" },
		{ "lab:50,0,0,0", "unexpected text" },
		{ "lab:nan,0,0", "not finite" },
		{ "lab:50,inf,0", "not finite" },
		{ "lab:50,1e999,0", "not finite" },
		{ "lab:150,0,0", "outside 0..100" },
		{ "lab:-1,0,0", "outside 0..100" },
		{ "lab:50,300,0", "-200..200" },
		{ "lab:x,0,0", "not a number" },
		{ "lab:50;0;0", "comma-separated" },
		{ "srgb:256,0,0", "outside 0..255" },
		{ "srgb:-1,0,0", "outside 0..255" },
		{ "#12345", "six hex digits" },
		{ "#1234567", "six hex digits" },
		{ "#12345g", "not a hex digit" },
		{ "rgb(1,2,3)", "unknown form" },
		{ "hsl:1,2,3", "unknown form" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		color_lab lab;
		bl_err err = { 0 };

		CHECK_MSG(color_parse(bad[i].text, &lab, &err) == BL_EINVAL, "'%s' accepted",
			  bad[i].text);
		CHECK_STR_CONTAINS(err.msg, bad[i].msg);
	}
}

TEST(cli_refuses_bad_colours_with_exit_2)
{
	const char *args[] = { "color", "diff", "lab:nan,0,0", "lab:50,0,0", NULL };
	const char *args2[] = { "color", "diff", "lab:50,0,0", NULL };
	const char *args3[] = { "color", "convert", "#ff0000", "--to", "hsv", NULL };
	char *err = NULL;

	CHECK(test_brushloop(args, NULL, &err) == 2);
	CHECK_STR_CONTAINS(err, "lab:nan,0,0");
	free(err);
	CHECK(test_brushloop(args2, NULL, &err) == 2);
	CHECK_STR_CONTAINS(err, "two colours");
	free(err);
	CHECK(test_brushloop(args3, NULL, &err) == 2);
	CHECK_STR_CONTAINS(err, "hsv");
	free(err);
}

TEST(cli_json_output)
{
	const char *args[] = { "color", "diff", "lab:50,2.6772,-79.7751", "lab:50,0,-82.7485",
			       "--json", NULL };
	const char *conv[] = { "color", "convert", "lab:100,0,0", "--to", "xyz", "--json", NULL };
	char *out = NULL;
	cJSON *doc;

	CHECK(test_brushloop(args, &out, NULL) == 0);
	doc = cJSON_Parse(out ? out : "");
	CHECK(doc && cJSON_IsNumber(cJSON_GetObjectItem(doc, "de00")));
	if (doc)
		CHECK_NEAR(cJSON_GetObjectItem(doc, "de00")->valuedouble, 2.0425, 5e-5);
	cJSON_Delete(doc);
	free(out);
	CHECK(test_brushloop(conv, &out, NULL) == 0);
	doc = cJSON_Parse(out ? out : "");
	CHECK(doc && cJSON_GetArraySize(cJSON_GetObjectItem(doc, "xyz")) == 3);
	cJSON_Delete(doc);
	free(out);
}

TEST_MAIN(T(sharma_pairs_both_orders), T(sharma_pairs_from_cli),
	  T(fast_ciede2000_matches_sharma_and_lcms),
	  T(weighting_factors_change_the_difference), T(srgb_known_colours),
	  T(lab_srgb_round_trip), T(out_of_gamut_is_reported), T(xyz_of_white_and_round_trip),
	  T(malformed_colours_are_refused), T(cli_refuses_bad_colours_with_exit_2),
	  T(cli_json_output))

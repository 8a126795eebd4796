/* test_scielab.c: S-CIELAB against the reference code's kernels and the properties Zhang and Wandell designed it to have. */
#include <math.h>
#include <stdlib.h>

#include "color/color.h"
#include "color/scielab.h"
#include "test.h"

static float *field(int w, int h, double L, double a, double b)
{
	float *p = malloc(sizeof(float) * 3 * (size_t)w * h);

	for (int i = 0; i < w * h; i++) {
		p[3 * i] = (float)L;
		p[3 * i + 1] = (float)a;
		p[3 * i + 2] = (float)b;
	}
	return p;
}

/*
 * The reference's spreads are full widths at half height plus one sample
 * (gauss.m: alpha = 2 sqrt(ln 2) / (halfWidth - 1)): at 448 samples a degree
 * (no upsampling) the luminance channel's narrowest Gaussian, 0.05 degree,
 * falls to half its peak 10.7 samples from the centre; the red-green one,
 * 0.0685 degree, at 14.84. The filters of each channel sum to one (a uniform
 * field keeps its colour), and the luminance channel's wide Gaussian is
 * negative (the surround that makes edges stand out).
 */
TEST(the_kernels_are_the_reference_codes)
{
	struct scielab_filters *f = malloc(sizeof(*f));
	bl_err err = { 0 };
	const struct {
		int ch;
		double half_at;
	} narrow[2] = { { 0, (0.05 * 448 - 1) / 2 }, { 1, (0.0685 * 448 - 1) / 2 } };

	CHECK(scielab_filters_make(448, f, &err) == 0);
	CHECK(f->ch[0].taps == 447 && f->ch[0].n_terms == 3 && f->ch[1].n_terms == 2);
	for (int k = 0; k < 2; k++) {
		const struct scielab_kernel *c = &f->ch[narrow[k].ch];
		int mid = c->taps / 2, lo = (int)floor(narrow[k].half_at);
		double peak = c->x[0][mid], frac = narrow[k].half_at - lo;
		/* the half-height point by linear interpolation between the samples around it */
		double at = c->x[0][mid + lo] * (1 - frac) + c->x[0][mid + lo + 1] * frac;

		CHECK_NEAR(at / peak, 0.5, 0.01);
	}
	for (int ch = 0; ch < 3; ch++) {
		double gain = 0;

		for (int j = 0; j < f->ch[ch].n_terms; j++) {
			double sx = 0, sy = 0;

			for (int i = 0; i < f->ch[ch].taps; i++) {
				sx += f->ch[ch].x[j][i];
				sy += f->ch[ch].y[j][i];
			}
			gain += sx * sy;
			if (ch == 0 && j == 2)
				CHECK(sx < 0);
		}
		CHECK_NEAR(gain, 1.0, 1e-9);
	}
	/* 1 px/mm seen from 1 m: 17.45 samples a degree, kernels made at 13 times that. */
	CHECK_NEAR(scielab_samples_per_degree(1.0, 1000.0), 17.4533, 0.001);
	CHECK(scielab_filters_make(scielab_samples_per_degree(1.0, 1000.0), f, &err) == 0);
	printf("1 px/mm at 1 m: %d taps\n", f->ch[0].taps);
	CHECK(f->ch[0].taps == 17);
	CHECK(scielab_filters_make(0.1, f, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "samples a degree");
	free(f);
}

/*
 * Zhang and Wandell designed S-CIELAB to give CIELAB's answer on uniform
 * fields (ISETCam's test_scielabPatches.m checks the same): 49 pairs of
 * fields around a grey and a saturated colour score their plain CIEDE2000.
 */
TEST(a_uniform_field_scores_its_ciede2000)
{
	const double base[2][3] = { { 60, 0, 0 }, { 45, 40, -30 } };
	bl_err err = { 0 };
	double worst = 0;

	for (int b = 0; b < 2; b++)
		for (int i = -3; i <= 3; i++)
			for (int j = -3; j <= 3; j++) {
				color_lab x = { base[b][0], base[b][1], base[b][2] };
				color_lab y = { x.L + 2 * i, x.a + 3 * j, x.b - 2 * i + j };
				float *fx = field(24, 20, x.L, x.a, x.b), *fy = field(24, 20, y.L, y.a, y.b);
				double m = -1, want = color_de00(&x, &y);

				CHECK(scielab_mean(fx, fy, 24, 20, 1.0, 1000.0, &m, &err) == 0);
				if (fabs(m - want) > worst)
					worst = fabs(m - want);
				free(fx);
				free(fy);
			}
	printf("uniform fields: S-CIELAB off CIEDE2000 by at most %.5f\n", worst);
	CHECK(worst < 0.002);
}

/* A checkerboard of cells px wide, black and white, against the grey of its mean light. */
static void checker(int w, int h, int cell, float *out)
{
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++) {
			float *p = out + 3 * ((size_t)y * w + x);

			p[0] = ((x / cell + y / cell) % 2) ? 100.0f : 0.0f;
			p[1] = p[2] = 0.0f;
		}
}

/*
 * Detail finer than the eye resolves counts as its mean colour, detail it
 * resolves counts as it is (the halftone example of Zhang and Wandell 1996):
 * a 1 mm black and white checkerboard against the grey of its mean light
 * (Y = 0.5, L* 76.07) is 40 apart pixel by pixel; seen from 10 cm (a
 * millimetre is half a degree, the reference's one-degree kernel is one
 * sample) it is all there, from 1 m less than a quarter of it, from 4 m next
 * to nothing; a 40 mm one is still there from 1 m.
 */
TEST(detail_finer_than_the_eye_sees_is_its_mean)
{
	int w = 160, h = 160;
	float *c1 = malloc(sizeof(float) * 3 * w * h), *c40 = malloc(sizeof(float) * 3 * w * h);
	float *grey = field(w, h, 116.0 * cbrt(0.5) - 16.0, 0, 0);
	bl_err err = { 0 };
	double px, s1m, s4m, s10cm, s40;

	checker(w, h, 1, c1);
	checker(w, h, 40, c40);
	CHECK(scielab_de00_pixels(c1, grey, w, h, &px, NULL, &err) == 0);
	CHECK(scielab_mean(c1, grey, w, h, 1.0, 1000.0, &s1m, &err) == 0);
	CHECK(scielab_mean(c1, grey, w, h, 1.0, 4000.0, &s4m, &err) == 0);
	CHECK(scielab_mean(c1, grey, w, h, 1.0, 100.0, &s10cm, &err) == 0);
	CHECK(scielab_mean(c40, grey, w, h, 1.0, 1000.0, &s40, &err) == 0);
	printf("1 mm checkerboard: per pixel %.2f, S-CIELAB 10 cm %.2f, 1 m %.2f, 4 m %.2f; 40 mm at 1 m "
	       "%.2f\n", px, s10cm, s1m, s4m, s40);
	CHECK(px > 40);
	CHECK_NEAR(s10cm, px, 0.01);
	CHECK(s1m < px / 4);
	CHECK(s4m < 1.0);
	CHECK(s40 > 0.8 * px);
	free(c1);
	free(c40);
	free(grey);
}

TEST_MAIN(T(the_kernels_are_the_reference_codes), T(a_uniform_field_scores_its_ciede2000),
	  T(detail_finer_than_the_eye_sees_is_its_mean))

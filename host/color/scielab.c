/* scielab.c: S-CIELAB (Zhang and Wandell 1996): the opponent channels blurred as the eye blurs them at a viewing distance, then CIEDE2000 pixel by pixel. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "color/color.h"
#include "color/scielab.h"

/* The reference code's "distribution" parameters: [spread in degrees, weight] per Gaussian. */
static const struct {
	int n;
	double spread_deg[SCIELAB_MAX_TERMS], weight[SCIELAB_MAX_TERMS];
} params[3] = {
	{ 3, { 0.05, 0.225, 7.0 }, { 1.00327, 0.114416, -0.117686 } },
	{ 2, { 0.0685, 0.826 }, { 0.616725, 0.383275 } },
	{ 2, { 0.0920, 0.6451 }, { 0.567885, 0.432115 } },
};

/* XYZ (2 degree) to the opponent channels, the reference's cmatrix('xyz2opp'). */
static const double xyz2opp[3][3] = {
	{ 0.2787336, 0.7218031, -0.1065520 },
	{ -0.4487736, 0.2898056, 0.0771569 },
	{ 0.0859513, -0.5899859, 0.5011089 },
};

/* The reference code upsamples below this rate so its narrowest Gaussian has samples to spare. */
#define MIN_SAMPLES_PER_DEGREE 224.0

double scielab_samples_per_degree(double px_per_mm, double distance_mm)
{
	return px_per_mm * 2.0 * distance_mm * tan(0.5 * M_PI / 180.0);
}

/*
 * gauss.m of the reference (R. Anthony, 1993): `half_width` is the full width
 * at half height plus one sample, in samples; the vector sums to one.
 */
static void gauss(double half_width, int width, double *g)
{
	double alpha = 2.0 * sqrt(log(2.0)) / (half_width - 1.0), sum = 0.0;
	int mid = (int)lround(width / 2.0);

	for (int i = 0; i < width; i++) {
		double x = (i + 1) - mid;

		g[i] = exp(-alpha * alpha * x * x);
		sum += g[i];
	}
	for (int i = 0; i < width; i++)
		g[i] /= sum;
}

/*
 * One channel: each Gaussian at `up` times the rate, scaled by the square
 * root of its weight (the sign on the row kernel), convolved with the linear
 * interpolator of `up` samples (centred) and sampled every `up` from the
 * centre; then the whole channel scaled to a gain of exactly one, so a uniform field keeps its colour (the reference's
 * weights sum to one, but its sampled kernels do not: 1.007, 0.988 and 0.992
 * at 17.45 samples a degree, 1.002, 0.997 and 0.998 at 23).
 */
static int channel_make(int c, double spd, int up, struct scielab_kernel *k, bl_err *err)
{
	double rate = spd * up;
	int width = (int)ceil(rate / 2.0) * 2 - 1, mid = width / 2, half = mid / up;
	double *g = malloc(sizeof(double) * (size_t)width * 2), *t = g + width, gain = 0.0;

	if (!g)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	k->n_terms = params[c].n;
	k->taps = 2 * half + 1;
	for (int j = 0; j < params[c].n; j++) {
		double w = params[c].weight[j], s = sqrt(fabs(w)) * (w < 0 ? -1.0 : 1.0), sx = 0.0,
		       sy = 0.0;

		gauss(params[c].spread_deg[j] * rate, width, g);
		for (int i = 0; i < width; i++) {
			double v = 0.0;

			for (int d = -(up - 1); d <= up - 1; d++)
				if (i + d >= 0 && i + d < width)
					v += g[i + d] * (up - abs(d)) / up;
			t[i] = v;
		}
		for (int i = 0; i < k->taps; i++) {
			k->x[j][i] = s * t[mid + (i - half) * up];
			k->y[j][i] = fabs(k->x[j][i]);
			sx += k->x[j][i];
			sy += k->y[j][i];
		}
		gain += sx * sy;
	}
	free(g);
	if (!(gain > 0.0))
		return bl_fail(err, BL_EINVAL, "S-CIELAB: channel %d has no gain at %.2f samples a degree",
			       c, spd);
	for (int j = 0; j < k->n_terms; j++)
		for (int i = 0; i < k->taps; i++)
			k->x[j][i] /= gain;
	return 0;
}

int scielab_filters_make(double samples_per_degree, struct scielab_filters *out, bl_err *err)
{
	int up = 1, rc;

	if (!(samples_per_degree >= 0.5 && samples_per_degree <= 2000.0))
		return bl_fail(err, BL_EINVAL, "S-CIELAB: %.3g samples a degree is outside 0.5..2000",
			       samples_per_degree);
	if (samples_per_degree < MIN_SAMPLES_PER_DEGREE)
		up = (int)ceil(MIN_SAMPLES_PER_DEGREE / samples_per_degree);
	out->samples_per_degree = samples_per_degree;
	for (int c = 0; c < 3; c++)
		if ((rc = channel_make(c, samples_per_degree, up, &out->ch[c], err)))
			return rc;
	return 0;
}

/* Edge reflection of pad4conv: ... c b a | a b c ... */
static int reflect(int i, int n)
{
	while (i < 0 || i >= n)
		i = i < 0 ? -i - 1 : 2 * n - i - 1;
	return i;
}

/* plane (w * h) filtered by the sum of the kernel's separable terms, into out. */
static void filter_plane(const struct scielab_kernel *k, const float *plane, int w, int h,
			 float *tmp, float *out)
{
	int half = k->taps / 2;

	memset(out, 0, sizeof(float) * (size_t)w * h);
	for (int j = 0; j < k->n_terms; j++) {
		for (int y = 0; y < h; y++)
			for (int x = 0; x < w; x++) {
				double v = 0.0;

				for (int i = 0; i < k->taps; i++)
					v += k->x[j][i] * plane[(size_t)y * w + reflect(x + i - half, w)];
				tmp[(size_t)y * w + x] = (float)v;
			}
		for (int y = 0; y < h; y++)
			for (int x = 0; x < w; x++) {
				double v = 0.0;

				for (int i = 0; i < k->taps; i++)
					v += k->y[j][i] * tmp[(size_t)reflect(y + i - half, h) * w + x];
				out[(size_t)y * w + x] += (float)v;
			}
	}
}

/* The inverse of xyz2opp, by cofactors. */
static void opp2xyz_make(double inv[3][3])
{
	const double(*m)[3] = xyz2opp;
	double det = m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
		     m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
		     m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);

	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++) {
			int a = (j + 1) % 3, b = (j + 2) % 3, c = (i + 1) % 3, d = (i + 2) % 3;

			inv[i][j] = (m[a][c] * m[b][d] - m[a][d] * m[b][c]) / det;
		}
}

void scielab_xyz_to_opp(const double xyz[3], double opp[3])
{
	for (int c = 0; c < 3; c++)
		opp[c] = xyz2opp[c][0] * xyz[0] + xyz2opp[c][1] * xyz[1] + xyz2opp[c][2] * xyz[2];
}

void scielab_opp_to_xyz(const double opp[3], double xyz[3])
{
	double inv[3][3];

	opp2xyz_make(inv);
	for (int i = 0; i < 3; i++)
		xyz[i] = inv[i][0] * opp[0] + inv[i][1] * opp[1] + inv[i][2] * opp[2];
}

int scielab_filter_opponent(const struct scielab_filters *f, float *opp, int w, int h, bl_err *err)
{
	size_t n = (size_t)w * h;
	float *buf = malloc(sizeof(float) * n * 2), *tmp = buf, *res = buf + n;

	if (!buf)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	for (int c = 0; c < 3; c++) {
		filter_plane(&f->ch[c], opp + c * n, w, h, tmp, res);
		memcpy(opp + c * n, res, sizeof(float) * n);
	}
	free(buf);
	return 0;
}

int scielab_blur(const struct scielab_filters *f, const float *lab, int w, int h, float *out,
		 bl_err *err)
{
	size_t n = (size_t)w * h;
	float *opp = malloc(sizeof(float) * n * 3);
	double inv[3][3];
	int rc;

	if (!opp)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	/* Lab -> XYZ (D50, white Y = 100) -> the three opponent planes. */
	for (size_t p = 0; p < n; p++) {
		color_lab l = { lab[3 * p], lab[3 * p + 1], lab[3 * p + 2] };
		color_xyz x;
		double o[3];

		color_lab_to_xyz(&l, &x);
		scielab_xyz_to_opp((const double[3]){ x.X, x.Y, x.Z }, o);
		for (int c = 0; c < 3; c++)
			opp[c * n + p] = (float)o[c];
	}
	if ((rc = scielab_filter_opponent(f, opp, w, h, err)))
		goto out_free;
	/* Back to XYZ and Lab. Negative XYZ (a ringing lobe at a hard edge) is Lab's odd branch, as in the reference. */
	opp2xyz_make(inv);
	for (size_t p = 0; p < n; p++) {
		double v[3];
		color_xyz x;
		color_lab l;

		for (int i = 0; i < 3; i++)
			v[i] = inv[i][0] * opp[p] + inv[i][1] * opp[n + p] + inv[i][2] * opp[2 * n + p];
		x = (color_xyz){ v[0], v[1], v[2] };
		color_xyz_to_lab(&x, &l);
		out[3 * p] = (float)l.L;
		out[3 * p + 1] = (float)l.a;
		out[3 * p + 2] = (float)l.b;
	}
out_free:
	free(opp);
	return rc;
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

int scielab_de00_pixels(const float *a, const float *b, int w, int h, double *mean, double *p95,
			bl_err *err)
{
	size_t n = (size_t)w * h;
	float *de;
	double s = 0.0;

	if (!n)
		return bl_fail(err, BL_EINVAL, "an empty picture has no colour difference");
	de = p95 ? malloc(sizeof(float) * n) : NULL;
	if (p95 && !de)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	for (size_t p = 0; p < n; p++) {
		double d = color_de00_fast(a[3 * p], a[3 * p + 1], a[3 * p + 2], b[3 * p], b[3 * p + 1],
					   b[3 * p + 2]);

		s += d;
		if (de)
			de[p] = (float)d;
	}
	*mean = s / (double)n;
	if (p95) {
		qsort(de, n, sizeof(float), cmp_float);
		*p95 = de[(size_t)floor(0.95 * (double)(n - 1))];
		free(de);
	}
	return 0;
}

int scielab_mean(const float *a, const float *b, int w, int h, double px_per_mm,
		 double distance_mm, double *mean, bl_err *err)
{
	struct scielab_filters *f = malloc(sizeof(*f));
	float *fa = malloc(sizeof(float) * 6 * (size_t)w * h), *fb = fa ? fa + 3 * (size_t)w * h : NULL;
	int rc;

	if (!f || !fa) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_free;
	}
	if ((rc = scielab_filters_make(scielab_samples_per_degree(px_per_mm, distance_mm), f, err)) ||
	    (rc = scielab_blur(f, a, w, h, fa, err)) || (rc = scielab_blur(f, b, w, h, fb, err)))
		goto out_free;
	rc = scielab_de00_pixels(fa, fb, w, h, mean, NULL, err);
out_free:
	free(fa);
	free(f);
	return rc;
}

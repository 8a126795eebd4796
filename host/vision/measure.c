/* measure.c: robust swatch colour, Lab rasters through lcms2, CIEDE2000 maps, and the error-map picture. */
#include "vision/measure.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lcms2.h>

#include "base/fs.h"
#include "base/log.h"
#include "cv/cv.h"

/* ICC profiles are small; a "profile" of more than this is a wrong file. */
#define MAX_ICC_BYTES (16u << 20)

struct meas_profile {
	cmsHTRANSFORM xf_dbl; /* RGB double 0..1 -> Lab double: region means */
	cmsHTRANSFORM xf_16;  /* RGB 8-bit -> Lab 16-bit: whole rasters */
	int calibrated;
	char name[512];
};

/* ---- transfer functions ---- */

double meas_srgb_to_linear(double v)
{
	return v <= 0.04045 ? v / 12.92 : pow((v + 0.055) / 1.055, 2.4);
}

double meas_linear_to_srgb(double v)
{
	if (v <= 0.0)
		return 0.0;
	if (v >= 1.0)
		return 1.0;
	return v <= 0.0031308 ? v * 12.92 : 1.055 * pow(v, 1.0 / 2.4) - 0.055;
}

static pthread_once_t lut_once = PTHREAD_ONCE_INIT;
static float lin_lut[256];

static void lut_init(void)
{
	for (int i = 0; i < 256; i++)
		lin_lut[i] = (float)meas_srgb_to_linear(i / 255.0);
}

/* ---- profiles ---- */

static int profile_build(cmsHPROFILE in, const char *name, int calibrated,
			 struct meas_profile **out, bl_err *err)
{
	cmsHPROFILE lab = cmsCreateLab4Profile(cmsD50_xyY());
	struct meas_profile *p;
	cmsProfileClassSignature cls;
	int rc = 0;

	*out = NULL;
	if (cmsGetColorSpace(in) != cmsSigRgbData) {
		rc = bl_fail(err, BL_EINVAL, "%s: the ICC profile is not for RGB data", name);
		goto out_close;
	}
	cls = cmsGetDeviceClass(in);
	if (cls == cmsSigLinkClass || cls == cmsSigAbstractClass || cls == cmsSigNamedColorClass) {
		rc = bl_fail(err, BL_EINVAL, "%s: a device-link, abstract or named-colour profile "
			     "cannot describe a camera", name);
		goto out_close;
	}
	p = calloc(1, sizeof(*p));
	if (!p || !lab) {
		free(p);
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_close;
	}
	p->calibrated = calibrated;
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->xf_dbl = cmsCreateTransform(in, TYPE_RGB_DBL, lab, TYPE_Lab_DBL,
				       INTENT_RELATIVE_COLORIMETRIC, cmsFLAGS_NOCACHE);
	/* A finer precalculated grid: the default one is off by up to 0.4 CIEDE2000. */
	p->xf_16 = cmsCreateTransform(in, TYPE_RGB_8, lab, TYPE_Lab_16,
				      INTENT_RELATIVE_COLORIMETRIC, cmsFLAGS_HIGHRESPRECALC);
	if (!p->xf_dbl || !p->xf_16) {
		meas_profile_close(p);
		rc = bl_fail(err, BL_EINVAL, "%s: LittleCMS cannot build a transform from this "
			     "profile to Lab", name);
		goto out_close;
	}
	*out = p;
out_close:
	if (lab)
		cmsCloseProfile(lab);
	cmsCloseProfile(in);
	return rc;
}

int meas_profile_open_mem(const void *icc, size_t len, const char *name,
			  struct meas_profile **out, bl_err *err)
{
	cmsHPROFILE in;

	*out = NULL;
	if (!icc) {
		in = cmsCreate_sRGBProfile();
		if (!in)
			return bl_fail(err, BL_EIO, "LittleCMS cannot build the sRGB profile");
		return profile_build(in, "sRGB", 0, out, err);
	}
	in = cmsOpenProfileFromMem(icc, (cmsUInt32Number)len);
	if (!in)
		return bl_fail(err, BL_EINVAL, "%s: not a valid ICC profile", name);
	return profile_build(in, name, 1, out, err);
}

int meas_profile_open(const char *path, struct meas_profile **out, bl_err *err)
{
	char *buf;
	size_t len;
	int rc;

	*out = NULL;
	if (!path || !path[0])
		return meas_profile_open_mem(NULL, 0, "sRGB", out, err);
	rc = fs_read_file(path, MAX_ICC_BYTES, &buf, &len, err);
	if (rc)
		return rc;
	if (len < 128) {
		free(buf);
		return bl_fail(err, BL_EINVAL, "%s: %zu bytes is too short for an ICC profile", path,
			       len);
	}
	rc = meas_profile_open_mem(buf, len, path, out, err);
	free(buf);
	return rc;
}

void meas_profile_close(struct meas_profile *p)
{
	if (!p)
		return;
	if (p->xf_dbl)
		cmsDeleteTransform(p->xf_dbl);
	if (p->xf_16)
		cmsDeleteTransform(p->xf_16);
	free(p);
}

int meas_profile_calibrated(const struct meas_profile *p)
{
	return p->calibrated;
}

const char *meas_profile_name(const struct meas_profile *p)
{
	return p->name;
}

void meas_profile_lab(const struct meas_profile *p, const double rgb[3], color_lab *out)
{
	cmsCIELab lab;

	cmsDoTransform(p->xf_dbl, rgb, &lab, 1);
	/*
	 * Nothing reflects more than the chart's white (the PCS's L* 100): a
	 * matrix profile extrapolates beyond it (L* 108 at code 1 on the example
	 * camera), where a CLUT profile and every 16-bit or 8-bit Lab transform,
	 * meas_lab_raster's included, stop at 100. Clipped the same here.
	 */
	out->L = lab.L > MEAS_WHITE_L ? MEAS_WHITE_L : lab.L;
	out->a = lab.a;
	out->b = lab.b;
}

int meas_lab_raster(const struct meas_profile *p, const struct img *im, float *lab, bl_err *err)
{
	enum { CHUNK = 4096 };
	cmsUInt16Number buf[CHUNK * 3];
	size_t n = (size_t)im->w * im->h;

	(void)err;
	for (size_t i = 0; i < n; i += CHUNK) {
		size_t m = n - i < CHUNK ? n - i : CHUNK;

		cmsDoTransform(p->xf_16, im->px + i * 3, buf, (cmsUInt32Number)m);
		/* ICC v4 16-bit Lab: L 0..65535 is 0..100, a and b 0..65535 are -128..127.996. */
		for (size_t k = 0; k < m; k++) {
			lab[(i + k) * 3] = buf[k * 3] * (100.0f / 65535.0f);
			lab[(i + k) * 3 + 1] = buf[k * 3 + 1] * (1.0f / 257.0f) - 128.0f;
			lab[(i + k) * 3 + 2] = buf[k * 3 + 2] * (1.0f / 257.0f) - 128.0f;
		}
	}
	return 0;
}

/* ---- regions ---- */

int meas_roi_parse(const char *text, struct meas_roi *roi, bl_err *err)
{
	long v[4];
	const char *s = text;

	for (int i = 0; i < 4; i++) {
		char *end;

		errno = 0;
		v[i] = strtol(s, &end, 10);
		if (end == s || errno == ERANGE || v[i] < -100000000L || v[i] > 100000000L)
			return bl_fail(err, BL_EINVAL, "--roi '%s': write X,Y,W,H in whole pixels", text);
		s = end;
		if (i < 3) {
			if (*s != ',')
				return bl_fail(err, BL_EINVAL, "--roi '%s': write X,Y,W,H in whole pixels",
					       text);
			s++;
		}
	}
	if (*s)
		return bl_fail(err, BL_EINVAL, "--roi '%s': unexpected '%s' after X,Y,W,H", text, s);
	if (v[2] <= 0 || v[3] <= 0)
		return bl_fail(err, BL_EINVAL, "--roi '%s': width and height must be positive", text);
	roi->x = (int)v[0];
	roi->y = (int)v[1];
	roi->w = (int)v[2];
	roi->h = (int)v[3];
	return 0;
}

/* The k-th smallest of v[0..n) (v is reordered). */
static float select_kth(float *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;

	while (lo < hi) {
		float pivot = v[lo + (hi - lo) / 2];
		size_t i = lo, j = hi;

		while (i <= j) {
			while (v[i] < pivot)
				i++;
			while (v[j] > pivot)
				j--;
			if (i <= j) {
				float t = v[i];

				v[i] = v[j];
				v[j] = t;
				i++;
				if (j == 0)
					break;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			return v[k];
	}
	return v[k];
}

/*
 * Median of a channel over the kept pixels, and its spread as 1.4826 MAD
 * (the standard deviation for normal noise), both from a histogram of the
 * 8-bit codes: exact, and linear in the pixel count.
 */
static void channel_stats(const long hist[256], long n, double *median, double *sigma)
{
	long half = (n + 1) / 2, acc = 0;
	int m = 0;
	struct {
		double d;
		long c;
	} dev[256], t;
	int nd = 0;

	for (m = 0; m < 256; m++) {
		acc += hist[m];
		if (acc >= half)
			break;
	}
	if (m > 255)
		m = 255;
	*median = lin_lut[m];
	for (int i = 0; i < 256; i++)
		if (hist[i]) {
			dev[nd].d = fabs(lin_lut[i] - *median);
			dev[nd].c = hist[i];
			nd++;
		}
	for (int i = 1; i < nd; i++)
		for (int j = i; j > 0 && dev[j].d < dev[j - 1].d; j--) {
			t = dev[j];
			dev[j] = dev[j - 1];
			dev[j - 1] = t;
		}
	acc = 0;
	*sigma = 0.0;
	for (int i = 0; i < nd; i++) {
		acc += dev[i].c;
		if (acc >= half) {
			*sigma = 1.4826 * dev[i].d;
			break;
		}
	}
	/* Never below the code step at the median: a flat patch has MAD 0 and one code of noise. */
	{
		double step = 0.5 * (lin_lut[m < 255 ? m + 1 : 255] - lin_lut[m > 0 ? m - 1 : 0]);

		if (*sigma < step)
			*sigma = step;
	}
}

/* One swatch being measured: the region's pixels, their gradients or distances (g), a scratch (d), and which are kept. */
struct swatch {
	const struct img *im;
	const struct meas_roi *roi;
	long n;
	float *g, *d;
	unsigned char *keep;
	struct meas_swatch *out;
};

/* Pixel (x, y) of the region, RGB. */
static const unsigned char *sw_px(const struct swatch *w, int x, int y)
{
	return w->im->px + ((size_t)(w->roi->y + y) * w->im->w + w->roi->x + x) * 3;
}

/*
 * 1. Clipped pixels: a channel at the top of its range has lost its
 * value (a specular highlight, overexposure).
 * 2. Edges: the local gradient, summed over channels in linear light,
 * with neighbours taken from the image even beyond the region.
 */
static void sw_clipped_and_gradients(struct swatch *w)
{
	const struct img *im = w->im;
	const struct meas_roi *roi = w->roi;

	for (int y = 0; y < roi->h; y++)
		for (int x = 0; x < roi->w; x++) {
			int ix = roi->x + x, iy = roi->y + y;
			int xl = ix > 0 ? ix - 1 : ix, xr = ix < im->w - 1 ? ix + 1 : ix;
			int yu = iy > 0 ? iy - 1 : iy, yd = iy < im->h - 1 ? iy + 1 : iy;
			const unsigned char *c = im->px + ((size_t)iy * im->w + ix) * 3;
			const unsigned char *l = im->px + ((size_t)iy * im->w + xl) * 3;
			const unsigned char *r = im->px + ((size_t)iy * im->w + xr) * 3;
			const unsigned char *u = im->px + ((size_t)yu * im->w + ix) * 3;
			const unsigned char *dn = im->px + ((size_t)yd * im->w + ix) * 3;
			long k = (long)y * roi->w + x;
			float gs = 0.0f;

			for (int ch = 0; ch < 3; ch++)
				gs += fabsf(lin_lut[r[ch]] - lin_lut[l[ch]]) +
				      fabsf(lin_lut[dn[ch]] - lin_lut[u[ch]]);
			w->g[k] = gs;
			w->keep[k] = !(c[0] >= 254 || c[1] >= 254 || c[2] >= 254);
			if (!w->keep[k])
				w->out->clipped++;
		}
	w->out->at_top = w->out->clipped;
	/*
	 * A few clipped pixels are highlights and go; a region mostly at the top
	 * of a channel is a colour at the edge of the camera's range (a pure
	 * sRGB primary, an overexposed patch): it is kept and flagged.
	 */
	if (w->out->clipped * 2 > w->n) {
		memset(w->keep, 1, (size_t)w->n);
		w->out->clipped = 0;
		w->out->saturated = 1;
	}
}

/* The pixels whose gradient is beyond what the region's noise explains go as edges. */
static void sw_edges(struct swatch *w)
{
	const long n = w->n;
	float gmed;
	double level = 0.0, floor_, thr;
	int code;

	memcpy(w->d, w->g, (size_t)n * sizeof(float));
	gmed = select_kth(w->d, (size_t)n, (size_t)n / 2);
	for (long k = 0; k < n; k++)
		w->d[k] = fabsf(w->g[k] - gmed);
	/* Six robust sigmas above the median: noise passes, a step between two colours does not. */
	thr = gmed + 6.0 * 1.4826 * select_kth(w->d, (size_t)n, (size_t)n / 2);
	/*
	 * A quantised, nearly flat region has a gradient MAD of 0: never call
	 * less than two codes in each of the six differences an edge.
	 */
	for (int y = 0; y < w->roi->h; y++)
		for (int x = 0; x < w->roi->w; x++) {
			const unsigned char *c = sw_px(w, x, y);

			level += c[0] + c[1] + c[2];
		}
	code = (int)(level / (3.0 * n));
	code = code > 253 ? 253 : code;
	floor_ = 6.0 * 2.0 * (lin_lut[code + 1] - lin_lut[code]);
	if (thr < floor_)
		thr = floor_;
	for (long k = 0; k < n; k++)
		if (w->keep[k] && w->g[k] > thr) {
			w->keep[k] = 0;
			w->out->edges++;
		}
}

/*
 * 3. Outliers: further than 4 robust sigmas from the median colour in any
 * channel go; each kept pixel's distance is left in g. Returns the distance
 * beyond which 4. the trim takes the 10% furthest (symmetric noise keeps its
 * mean), or -1 when fewer than 16 were usable (*usable says how many).
 */
static double sw_outliers(struct swatch *w, long *usable)
{
	long hist[3][256] = { { 0 } }, kept = 0, m = 0;
	double med[3], sig[3];

	for (int y = 0; y < w->roi->h; y++)
		for (int x = 0; x < w->roi->w; x++) {
			const unsigned char *c = sw_px(w, x, y);

			if (!w->keep[(long)y * w->roi->w + x])
				continue;
			for (int ch = 0; ch < 3; ch++)
				hist[ch][c[ch]]++;
			kept++;
		}
	*usable = kept;
	if (kept < 16)
		return -1.0;
	for (int ch = 0; ch < 3; ch++)
		channel_stats(hist[ch], kept, &med[ch], &sig[ch]);
	for (int y = 0; y < w->roi->h; y++)
		for (int x = 0; x < w->roi->w; x++) {
			const unsigned char *c = sw_px(w, x, y);
			long k = (long)y * w->roi->w + x;
			float dist = 0.0f;

			if (!w->keep[k])
				continue;
			for (int ch = 0; ch < 3; ch++) {
				float e = (float)(fabs(lin_lut[c[ch]] - med[ch]) / sig[ch]);

				dist = e > dist ? e : dist;
			}
			w->g[k] = dist;
			if (dist > 4.0f) {
				w->keep[k] = 0;
				w->out->outliers++;
			} else {
				w->d[m++] = dist;
			}
		}
	return m ? select_kth(w->d, (size_t)m, (size_t)((m - 1) * 9 / 10)) : 0.0;
}

/* The trim, then the mean and covariance in linear light of what is kept; the count kept. */
static long sw_mean(struct swatch *w, double trim, double cov[9])
{
	struct meas_swatch *out = w->out;
	double sum[3] = { 0 };
	long kept = 0;

	for (int y = 0; y < w->roi->h; y++)
		for (int x = 0; x < w->roi->w; x++) {
			const unsigned char *c = sw_px(w, x, y);
			long k = (long)y * w->roi->w + x;

			if (!w->keep[k])
				continue;
			if (w->g[k] > trim) {
				w->keep[k] = 0;
				out->outliers++;
				continue;
			}
			for (int ch = 0; ch < 3; ch++)
				sum[ch] += lin_lut[c[ch]];
			kept++;
		}
	if (kept < 16)
		return kept;
	for (int ch = 0; ch < 3; ch++)
		out->rgb_linear[ch] = sum[ch] / kept;
	for (int y = 0; y < w->roi->h; y++)
		for (int x = 0; x < w->roi->w; x++) {
			const unsigned char *c = sw_px(w, x, y);
			double e[3];

			if (!w->keep[(long)y * w->roi->w + x])
				continue;
			for (int ch = 0; ch < 3; ch++)
				e[ch] = lin_lut[c[ch]] - out->rgb_linear[ch];
			for (int r = 0; r < 3; r++)
				for (int s = 0; s < 3; s++)
					cov[3 * r + s] += e[r] * e[s];
		}
	for (int i = 0; i < 9; i++)
		cov[i] /= kept > 1 ? kept - 1 : 1;
	for (int ch = 0; ch < 3; ch++)
		out->rgb_linear_sd[ch] = sqrt(cov[4 * ch]);
	out->pixels = kept;
	return kept;
}

/* The mean in linear light, re-encoded: the profile applies its own curves to code values. */
static void sw_lab(struct meas_swatch *out, const struct meas_profile *p, const double cov[9])
{
	double enc[3], J[9];
	color_lab lo, hi;

	for (int ch = 0; ch < 3; ch++)
		enc[ch] = meas_linear_to_srgb(out->rgb_linear[ch]);
	meas_profile_lab(p, enc, &out->lab);
	/*
	 * The spread in Lab by propagating the RGB covariance through the
	 * transform's Jacobian at the mean: three pairs of conversions, not
	 * one per pixel.
	 */
	for (int ch = 0; ch < 3; ch++) {
		double h = 1e-3, a[3], b[3], dl, dh;

		for (int k = 0; k < 3; k++)
			a[k] = b[k] = out->rgb_linear[k];
		dl = a[ch] - h < 0.0 ? a[ch] : h;
		dh = b[ch] + h > 1.0 ? 1.0 - b[ch] : h;
		a[ch] -= dl;
		b[ch] += dh;
		for (int k = 0; k < 3; k++) {
			a[k] = meas_linear_to_srgb(a[k]);
			b[k] = meas_linear_to_srgb(b[k]);
		}
		meas_profile_lab(p, a, &lo);
		meas_profile_lab(p, b, &hi);
		J[0 + ch] = (hi.L - lo.L) / (dl + dh);
		J[3 + ch] = (hi.a - lo.a) / (dl + dh);
		J[6 + ch] = (hi.b - lo.b) / (dl + dh);
	}
	for (int r = 0; r < 3; r++) {
		double v = 0.0;

		for (int s = 0; s < 3; s++)
			for (int t = 0; t < 3; t++)
				v += J[3 * r + s] * cov[3 * s + t] * J[3 * r + t];
		out->stddev[r] = sqrt(v > 0.0 ? v : 0.0);
	}
}

int meas_swatch(const struct img *im, const char *name, const struct meas_roi *roi,
		const struct meas_profile *p, struct meas_swatch *out, bl_err *err)
{
	struct swatch w = { im, roi, (long)roi->w * roi->h, NULL, NULL, NULL, out };
	double cov[9] = { 0 }, trim;
	long kept;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (roi->x < 0 || roi->y < 0 || roi->w <= 0 || roi->h <= 0 || roi->x > im->w - roi->w ||
	    roi->y > im->h - roi->h)
		return bl_fail(err, BL_EINVAL, "%s: region %d,%d,%d,%d (x,y,w,h) lies outside the "
			       "%dx%d image", name, roi->x, roi->y, roi->w, roi->h, im->w, im->h);
	pthread_once(&lut_once, lut_init);
	out->total = w.n;
	w.g = malloc((size_t)w.n * sizeof(float));
	w.d = malloc((size_t)w.n * sizeof(float));
	w.keep = malloc((size_t)w.n);
	if (!w.g || !w.d || !w.keep) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory for a %dx%d region", roi->w, roi->h);
		goto out_free;
	}
	sw_clipped_and_gradients(&w);
	sw_edges(&w);
	if ((trim = sw_outliers(&w, &kept)) < 0.0) {
		rc = bl_fail(err, BL_EINVAL, "%s: region %d,%d,%d,%d has only %ld usable pixels "
			     "(%ld clipped, %ld on edges); choose a larger or flatter region", name,
			     roi->x, roi->y, roi->w, roi->h, kept, out->clipped, out->edges);
		goto out_free;
	}
	if ((kept = sw_mean(&w, trim, cov)) < 16) {
		rc = bl_fail(err, BL_EINVAL, "%s: region %d,%d,%d,%d has only %ld pixels left after "
			     "rejecting outliers; choose a flatter region", name, roi->x, roi->y,
			     roi->w, roi->h, kept);
		goto out_free;
	}
	sw_lab(out, p, cov);
out_free:
	free(w.g);
	free(w.d);
	free(w.keep);
	return rc;
}


/* ---- maps ---- */

void meas_map_free(struct meas_map *m)
{
	if (!m)
		return;
	free(m->de);
	m->de = NULL;
}

static void worst_insert(struct meas_map *m, int cap, const struct meas_cell *c)
{
	int i;

	if (m->n_worst == cap && c->de00 <= m->worst[cap - 1].de00)
		return;
	i = m->n_worst < cap ? m->n_worst++ : cap - 1;
	while (i > 0 && m->worst[i - 1].de00 < c->de00) {
		m->worst[i] = m->worst[i - 1];
		i--;
	}
	m->worst[i] = *c;
}

int meas_de_map(const float *obs, const float *target, int w, int h, double px_per_mm,
		double cell_mm, int n_worst, struct meas_map *out, bl_err *err)
{
	double cpx_d = cell_mm * px_per_mm, sum = 0.0;
	int cpx, ncell;
	float *tmp;

	memset(out, 0, sizeof(*out));
	if (!(cell_mm > 0.0) || !isfinite(cell_mm) || cell_mm > 10000.0)
		return bl_fail(err, BL_EINVAL, "cell size %g mm must be positive", cell_mm);
	if (n_worst < 0 || n_worst > MEAS_MAX_WORST)
		return bl_fail(err, BL_EINVAL, "at most %d worst cells", MEAS_MAX_WORST);
	cpx = (int)lround(cpx_d);
	if (cpx < 1 || fabs(cpx - cpx_d) > 1e-6)
		return bl_fail(err, BL_EINVAL, "cell size %g mm is not a whole number of raster "
			       "pixels at %g px/mm", cell_mm, px_per_mm);
	out->cols = (w + cpx - 1) / cpx;
	out->rows = (h + cpx - 1) / cpx;
	out->cell_mm = cell_mm;
	ncell = out->cols * out->rows;
	out->de = malloc((size_t)ncell * sizeof(float));
	tmp = malloc((size_t)ncell * sizeof(float));
	if (!out->de || !tmp) {
		free(tmp);
		meas_map_free(out);
		return bl_fail(err, BL_ENOMEM, "out of memory");
	}
	for (int r = 0; r < out->rows; r++)
		for (int c = 0; c < out->cols; c++) {
			struct meas_cell cell = { .col = c, .row = r };
			double so[3] = { 0 }, st[3] = { 0 };
			int n = 0;

			for (int y = r * cpx; y < (r + 1) * cpx && y < h; y++)
				for (int x = c * cpx; x < (c + 1) * cpx && x < w; x++) {
					size_t k = ((size_t)y * w + x) * 3;

					for (int ch = 0; ch < 3; ch++) {
						so[ch] += obs[k + ch];
						st[ch] += target[k + ch];
					}
					n++;
				}
			cell.obs.L = so[0] / n;
			cell.obs.a = so[1] / n;
			cell.obs.b = so[2] / n;
			cell.target.L = st[0] / n;
			cell.target.a = st[1] / n;
			cell.target.b = st[2] / n;
			cell.de00 = color_de00_fast(cell.obs.L, cell.obs.a, cell.obs.b, cell.target.L,
					      cell.target.a, cell.target.b);
			out->de[r * out->cols + c] = (float)cell.de00;
			sum += cell.de00;
			if (cell.de00 > out->max)
				out->max = cell.de00;
			if (n_worst)
				worst_insert(out, n_worst, &cell);
		}
	out->mean = sum / ncell;
	/* Nearest-rank 95th percentile. */
	memcpy(tmp, out->de, (size_t)ncell * sizeof(float));
	out->p95 = select_kth(tmp, (size_t)ncell, (size_t)ceil(0.95 * ncell) - 1);
	free(tmp);
	return 0;
}

static void ramp(double de, unsigned char rgb[3])
{
	static const struct {
		double de;
		double c[3];
	} stops[] = {
		{ 0.0, { 15, 15, 60 } },   { 2.0, { 40, 110, 220 } }, { 5.0, { 60, 190, 90 } },
		{ 10.0, { 245, 215, 40 } }, { 20.0, { 215, 30, 30 } },
	};
	const int n = sizeof(stops) / sizeof(stops[0]);
	int i = 0;

	if (!(de > 0.0))
		de = 0.0;
	if (de >= stops[n - 1].de) {
		for (int k = 0; k < 3; k++)
			rgb[k] = (unsigned char)stops[n - 1].c[k];
		return;
	}
	while (de > stops[i + 1].de)
		i++;
	{
		double t = (de - stops[i].de) / (stops[i + 1].de - stops[i].de);

		for (int k = 0; k < 3; k++)
			rgb[k] = (unsigned char)lround(stops[i].c[k] +
						       t * (stops[i + 1].c[k] - stops[i].c[k]));
	}
}

int meas_map_image(const struct meas_map *m, int cell_px, struct img *out, bl_err *err)
{
	int rc;

	if (cell_px < 1 || cell_px > 256 || (long)m->cols * cell_px * m->rows * cell_px > 100000000L)
		return bl_fail(err, BL_EINVAL, "error map picture too large");
	rc = img_alloc(out, m->cols * cell_px, m->rows * cell_px, err);
	if (rc)
		return rc;
	for (int y = 0; y < out->h; y++)
		for (int x = 0; x < out->w; x++)
			ramp(m->de[(y / cell_px) * m->cols + x / cell_px],
			     out->px + ((size_t)y * out->w + x) * 3);
	return 0;
}

/*
 * A 16-bit target's samples, resized to w x h at 16 bits, to Lab through the
 * double transform: 8 bits cost up to half a code, 0.2 CIEDE2000 on smooth
 * gradients, before the planner has seen the picture.
 */
static int target_lab16(const struct img *target, const struct meas_profile *p, int w, int h,
			float *lab, bl_err *err)
{
	enum { CHUNK = 1024 };
	uint16_t *sized = malloc((size_t)w * h * 3 * sizeof(*sized));
	double rgb[CHUNK * 3], out[CHUNK * 3];
	size_t n = (size_t)w * h;
	int rc;

	if (!sized)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	rc = cv_resize_rgb16(target->px16, target->w, target->h, sized, w, h, err);
	for (size_t i = 0; rc == 0 && i < n; i += CHUNK) {
		size_t m = n - i < CHUNK ? n - i : CHUNK;

		for (size_t k = 0; k < 3 * m; k++)
			rgb[k] = sized[i * 3 + k] / 65535.0;
		cmsDoTransform(p->xf_dbl, rgb, out, (cmsUInt32Number)m);
		for (size_t k = 0; k < m; k++) {
			/* As the 16-bit Lab of 8-bit targets: L* at most the PCS's white. */
			lab[(i + k) * 3] = (float)fmin(out[k * 3], MEAS_WHITE_L);
			lab[(i + k) * 3 + 1] = (float)out[k * 3 + 1];
			lab[(i + k) * 3 + 2] = (float)out[k * 3 + 2];
		}
	}
	free(sized);
	return rc;
}

int meas_target_lab(const struct img *target, const char *name, int w, int h, float *lab,
		    bl_err *err)
{
	struct meas_profile *p = NULL;
	struct img sized = { 0 };
	const struct img *src = target;
	double ta = (double)target->w / target->h, ca = (double)w / h;
	int rc;

	if (fabs(ta / ca - 1.0) > 0.02)
		log_warn("%s: target is %dx%d (aspect %.3f) but the canvas raster is %dx%d (aspect "
			 "%.3f): it is stretched to fit", name, target->w, target->h, ta, w, h, ca);
	if (target->icc) {
		char pname[600];

		snprintf(pname, sizeof(pname), "%s (embedded profile, %s)", name,
			 target->icc_from ? target->icc_from : "ICC");
		bl_err perr = { 0 };

		if (meas_profile_open_mem(target->icc, target->icc_len, pname, &p, &perr)) {
			log_warn("%s; taking the target as sRGB", perr.msg);
			p = NULL;
		}
	}
	if (!p) {
		rc = meas_profile_open(NULL, &p, err);
		if (rc)
			return rc;
	}
	if (target->px16) {
		rc = target_lab16(target, p, w, h, lab, err);
		goto out_free;
	}
	if (target->w != w || target->h != h) {
		struct cv_view s = { target->px, target->w, target->h, target->w * 3, 3 };
		struct cv_view dv;

		rc = img_alloc(&sized, w, h, err);
		if (rc)
			goto out_free;
		dv = (struct cv_view){ sized.px, w, h, w * 3, 3 };
		rc = cv_resize(&s, &dv, err);
		if (rc)
			goto out_free;
		src = &sized;
	}
	rc = meas_lab_raster(p, src, lab, err);
out_free:
	meas_profile_close(p);
	img_free(&sized);
	return rc;
}

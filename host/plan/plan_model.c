/* plan_model.c: the planner's fast canvas model: work grid, CIE94 error, stroke footprints, blur and edge tangents. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/kernel.h"
#include "plan/plan_int.h"

/* The planner works on at most this many grid pixels: enough for a 2 mm brush on a 400 x 300 mm canvas. */
#define PM_MAX_GRID_PX 160000.0
#define PM_MAX_PX_MM 2.0

int plan_raster_alloc(struct plan_raster *r, int w, int h, bl_err *err)
{
	r->w = r->h = 0;
	r->px = NULL;
	if (w <= 0 || h <= 0)
		return bl_fail(err, BL_EINVAL, "raster of %d x %d px is empty", w, h);
	r->px = malloc((size_t)w * (size_t)h * 3 * sizeof(float));
	if (!r->px)
		return bl_fail(err, BL_ENOMEM, "out of memory for a %d x %d raster", w, h);
	r->w = w;
	r->h = h;
	return 0;
}

void plan_raster_free(struct plan_raster *r)
{
	free(r->px);
	r->px = NULL;
	r->w = r->h = 0;
}

float pm_dist_ref(const float *ref, const float *x)
{
	float c = sqrtf(ref[1] * ref[1] + ref[2] * ref[2]);
	float sc = 1.0f + 0.045f * c, sh = 1.0f + 0.015f * c;

	return pm_dist_w(ref, c, 1.0f / (sc * sc), 1.0f / (sh * sh), x);
}

int pm_target_init(struct pm_target *t, const struct pm_grid *g, const float *lab, bl_err *err)
{
	size_t n = (size_t)g->w * (size_t)g->h;

	memset(t, 0, sizeof(*t));
	t->lab = malloc(n * 3 * sizeof(float));
	t->c = malloc(n * sizeof(float));
	t->wc = malloc(n * sizeof(float));
	t->wh = malloc(n * sizeof(float));
	if (!t->lab || !t->c || !t->wc || !t->wh) {
		pm_target_free(t);
		return bl_fail(err, BL_ENOMEM, "out of memory for the target");
	}
	memcpy(t->lab, lab, n * 3 * sizeof(float));
	for (size_t i = 0; i < n; i++) {
		const float *p = lab + 3 * i;
		float c = sqrtf(p[1] * p[1] + p[2] * p[2]);
		float sc = 1.0f + 0.045f * c, sh = 1.0f + 0.015f * c;

		t->c[i] = c;
		t->wc[i] = 1.0f / (sc * sc);
		t->wh[i] = 1.0f / (sh * sh);
	}
	return 0;
}

void pm_target_free(struct pm_target *t)
{
	free(t->lab);
	free(t->c);
	free(t->wc);
	free(t->wh);
	memset(t, 0, sizeof(*t));
}

int pm_strokes_push(struct pm_strokes *l, const struct pm_stroke *s, bl_err *err)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 256;
		struct pm_stroke *ns = realloc(l->s, cap * sizeof(*ns));

		if (!ns)
			return bl_fail(err, BL_ENOMEM, "out of memory for strokes");
		l->s = ns;
		l->cap = cap;
	}
	l->s[l->n++] = *s;
	return 0;
}

void pm_strokes_free(struct pm_strokes *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->s[i].xy);
	free(l->s);
	memset(l, 0, sizeof(*l));
}

int pm_fp_init(struct pm_footprint *f, const struct pm_grid *g, bl_err *err)
{
	size_t n = (size_t)g->w * (size_t)g->h;

	memset(f, 0, sizeof(*f));
	f->amax = calloc(n, sizeof(float));
	f->stamp = calloc(n, sizeof(uint32_t));
	f->cap = 4096;
	f->idx = malloc((size_t)f->cap * sizeof(int));
	f->a = malloc((size_t)f->cap * sizeof(float));
	if (!f->amax || !f->stamp || !f->idx || !f->a) {
		pm_fp_free(f);
		return bl_fail(err, BL_ENOMEM, "out of memory for stroke footprints");
	}
	return 0;
}

void pm_fp_free(struct pm_footprint *f)
{
	free(f->amax);
	free(f->stamp);
	free(f->idx);
	free(f->a);
	memset(f, 0, sizeof(*f));
}

static int fp_grow(struct pm_footprint *f, bl_err *err)
{
	int cap = f->cap * 2;
	int *ni = realloc(f->idx, (size_t)cap * sizeof(int));
	float *na;

	if (!ni)
		return bl_fail(err, BL_ENOMEM, "out of memory for a stroke footprint");
	f->idx = ni;
	na = realloc(f->a, (size_t)cap * sizeof(float));
	if (!na)
		return bl_fail(err, BL_ENOMEM, "out of memory for a stroke footprint");
	f->a = na;
	f->cap = cap;
	return 0;
}

/*
 * A brush leaves a band of width_mm along its path with round ends; the paint
 * covers opacity of what lies below in the band's core and thins over the
 * outer fifth of each side, which is how a loaded brush's edge looks.
 */
int pm_fp_stroke(struct pm_footprint *f, const struct pm_grid *g, const double *xy, int n,
		 double width_mm, double opacity, bl_err *err)
{
	double r = 0.5 * width_mm * g->px_mm;
	double soft = r * 0.25 > 1.0 ? r * 0.25 : 1.0;
	int rc;

	if (++f->cur == 0) {
		memset(f->stamp, 0, (size_t)g->w * (size_t)g->h * sizeof(uint32_t));
		f->cur = 1;
	}
	f->n = 0;
	f->bx0 = g->w;
	f->by0 = g->h;
	f->bx1 = f->by1 = -1;
	for (int s = 0; s < (n > 1 ? n - 1 : 1); s++) {
		/* Segment ends in pixel-index space, where pixel i's centre is at i. */
		double ax = (xy[2 * s] - g->x0_mm) * g->px_mm - 0.5;
		double ay = (xy[2 * s + 1] - g->y0_mm) * g->px_mm - 0.5;
		int e = n > 1 ? s + 1 : s;
		double bx = (xy[2 * e] - g->x0_mm) * g->px_mm - 0.5;
		double by = (xy[2 * e + 1] - g->y0_mm) * g->px_mm - 0.5;
		double dx = bx - ax, dy = by - ay, l2 = dx * dx + dy * dy;
		int x0 = (int)floor(fmin(ax, bx) - r - 1), x1 = (int)ceil(fmax(ax, bx) + r + 1);
		int y0 = (int)floor(fmin(ay, by) - r - 1), y1 = (int)ceil(fmax(ay, by) + r + 1);

		if (x0 < 0)
			x0 = 0;
		if (y0 < 0)
			y0 = 0;
		if (x1 > g->w - 1)
			x1 = g->w - 1;
		if (y1 > g->h - 1)
			y1 = g->h - 1;
		for (int y = y0; y <= y1; y++)
			for (int x = x0; x <= x1; x++) {
				double px = x - ax, py = y - ay, t = 0.0, ex, ey, d;
				float a;
				int i;

				if (l2 > 0.0) {
					t = (px * dx + py * dy) / l2;
					t = t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t;
				}
				ex = px - t * dx;
				ey = py - t * dy;
				d = sqrt(ex * ex + ey * ey);
				if (d >= r + 0.5)
					continue;
				a = (float)(opacity * pm_clamp((r + 0.5 - d) / soft, 0.0, 1.0));
				if (a <= 0.0f)
					continue;
				i = y * g->w + x;
				if (f->stamp[i] != f->cur) {
					if (f->n == f->cap && (rc = fp_grow(f, err)))
						return rc;
					f->stamp[i] = f->cur;
					f->amax[i] = a;
					f->idx[f->n++] = i;
					if (x < f->bx0)
						f->bx0 = x;
					if (x > f->bx1)
						f->bx1 = x;
					if (y < f->by0)
						f->by0 = y;
					if (y > f->by1)
						f->by1 = y;
				} else if (a > f->amax[i]) {
					f->amax[i] = a;
				}
			}
	}
	for (int k = 0; k < f->n; k++)
		f->a[k] = f->amax[f->idx[k]];
	return 0;
}

void pm_fp_apply(const struct pm_footprint *f, float *canvas, const float *colour)
{
	for (int k = 0; k < f->n; k++) {
		float *c = canvas + 3 * (size_t)f->idx[k], a = f->a[k];

		c[0] += a * (colour[0] - c[0]);
		c[1] += a * (colour[1] - c[1]);
		c[2] += a * (colour[2] - c[2]);
	}
}

/*
 * One row of nch-channel pixels blurred by the 2 rad + 1 taps k, the border
 * pixel repeated: the row is copied into pad (w + 2 rad pixels) with its ends
 * repeated, so every output float j sums pad[j + (i + rad) nch] over the taps
 * i in order with no index to clamp.
 */
BL_KERNEL static void blur_row(const float *in, float *out, float *pad, int w, int nch, const float *k, int rad)
{
	size_t n = (size_t)w * nch;

	for (int p = 0; p < w + 2 * rad; p++) {
		int x = p - rad < 0 ? 0 : p - rad >= w ? w - 1 : p - rad;

		memcpy(pad + (size_t)p * nch, in + (size_t)x * nch, (size_t)nch * sizeof(float));
	}
	for (size_t j = 0; j < n; j++)
		out[j] = 0.0f;
	for (int i = 0; i < 2 * rad + 1; i++) {
		const float *src = pad + (size_t)i * nch;
		float kv = k[i];

		for (size_t j = 0; j < n; j++)
			out[j] += kv * src[j];
	}
}

/* The columns of the row-blurred tmp into out, each output's taps summed in kernel order. */
BL_KERNEL static void blur_cols(const float *tmp, float *out, int w, int h, int nch, const float *k, int rad)
{
	size_t n = (size_t)w * nch;

	for (int y = 0; y < h; y++) {
		float *o = out + (size_t)y * n;

		for (size_t j = 0; j < n; j++)
			o[j] = 0.0f;
		for (int i = -rad; i <= rad; i++) {
			int yy = y + i < 0 ? 0 : y + i >= h ? h - 1 : y + i;
			const float *t = tmp + (size_t)yy * n;
			float kv = k[i + rad];

			for (size_t j = 0; j < n; j++)
				o[j] += kv * t[j];
		}
	}
}

int pm_blur(const float *in, float *out, int w, int h, int nch, double sigma, bl_err *err)
{
	int rad = (int)ceil(sigma * 2.5), kn;
	float *k, *tmp, *pad;
	double sum = 0.0;

	if (sigma < 0.3) {
		memcpy(out, in, (size_t)w * h * nch * sizeof(float));
		return 0;
	}
	kn = 2 * rad + 1;
	k = malloc((size_t)kn * sizeof(float));
	tmp = malloc((size_t)w * h * nch * sizeof(float));
	pad = malloc(((size_t)w + 2 * (size_t)rad) * nch * sizeof(float));
	if (!k || !tmp || !pad) {
		free(k);
		free(tmp);
		free(pad);
		return bl_fail(err, BL_ENOMEM, "out of memory blurring");
	}
	for (int i = -rad; i <= rad; i++)
		sum += (k[i + rad] = (float)exp(-0.5 * i * i / (sigma * sigma)));
	for (int i = 0; i < kn; i++)
		k[i] = (float)(k[i] / sum);
	/*
	 * Rows, then columns; edges repeat the border pixel. Each output sums
	 * its taps in kernel order, as a loop over taps outside a loop over a
	 * row's floats: the same sums, in an order the compiler vectorises.
	 */
	for (int y = 0; y < h; y++)
		blur_row(in + (size_t)y * w * nch, tmp + (size_t)y * w * nch, pad, w, nch, k, rad);
	blur_cols(tmp, out, w, h, nch, k, rad);
	free(k);
	free(tmp);
	free(pad);
	return 0;
}

int pm_tangents(const float *lab, int w, int h, double sigma, float *out, bl_err *err)
{
	size_t n = (size_t)w * h;
	float *j = malloc(n * 3 * sizeof(float)), *js = malloc(n * 3 * sizeof(float));
	int rc;

	if (!j || !js) {
		free(j);
		free(js);
		return bl_fail(err, BL_ENOMEM, "out of memory for edge tangents");
	}
	/* Di Zenzo's colour structure tensor: gradients of L, a and b summed. */
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++) {
			int xl = x > 0 ? x - 1 : x, xr = x < w - 1 ? x + 1 : x;
			int yu = y > 0 ? y - 1 : y, yd = y < h - 1 ? y + 1 : y;
			float jxx = 0, jxy = 0, jyy = 0;

			for (int c = 0; c < 3; c++) {
				float gx = lab[((size_t)y * w + xr) * 3 + c] - lab[((size_t)y * w + xl) * 3 + c];
				float gy = lab[((size_t)yd * w + x) * 3 + c] - lab[((size_t)yu * w + x) * 3 + c];

				jxx += gx * gx;
				jxy += gx * gy;
				jyy += gy * gy;
			}
			j[((size_t)y * w + x) * 3] = jxx;
			j[((size_t)y * w + x) * 3 + 1] = jxy;
			j[((size_t)y * w + x) * 3 + 2] = jyy;
		}
	rc = pm_blur(j, js, w, h, 3, sigma, err);
	if (rc == 0)
		for (size_t i = 0; i < n; i++) {
			float a = js[3 * i], b = js[3 * i + 1], c = js[3 * i + 2];
			/* Angle of the gradient (major eigenvector); the edge runs across it. */
			double th = 0.5 * atan2(2.0 * b, a - c);
			double l1 = 0.5 * (a + c + sqrt((a - c) * (a - c) + 4.0 * b * b));
			double l2 = 0.5 * (a + c) - (l1 - 0.5 * (a + c));

			out[3 * i] = (float)-sin(th);
			out[3 * i + 1] = (float)cos(th);
			out[3 * i + 2] = (float)sqrt(fmax(0.0, l1 - l2));
		}
	free(j);
	free(js);
	return rc;
}

int pm_resample(const struct plan_raster *src, const struct pm_grid *g, float *out, bl_err *err)
{
	double sx = (double)src->w / g->w, sy = (double)src->h / g->h;

	(void)err;
	/* Area average: each grid pixel is the mean of the source pixels its box overlaps, weighted by overlap. */
	for (int y = 0; y < g->h; y++) {
		double fy0 = y * sy, fy1 = (y + 1) * sy;

		for (int x = 0; x < g->w; x++) {
			double fx0 = x * sx, fx1 = (x + 1) * sx, acc[3] = { 0, 0, 0 }, wsum = 0.0;

			for (int yy = (int)fy0; yy < src->h && yy < fy1; yy++) {
				double wy = fmin(fy1, yy + 1.0) - fmax(fy0, (double)yy);

				if (wy <= 0.0)
					continue;
				for (int xx = (int)fx0; xx < src->w && xx < fx1; xx++) {
					double wx = fmin(fx1, xx + 1.0) - fmax(fx0, (double)xx), wgt = wx * wy;
					const float *p = src->px + ((size_t)yy * src->w + xx) * 3;

					if (wx <= 0.0)
						continue;
					acc[0] += wgt * p[0];
					acc[1] += wgt * p[1];
					acc[2] += wgt * p[2];
					wsum += wgt;
				}
			}
			for (int c = 0; c < 3; c++)
				out[((size_t)y * g->w + x) * 3 + c] = (float)(wsum > 0 ? acc[c] / wsum : 0);
		}
	}
	return 0;
}

void pm_grid_for(struct pm_grid *g, const double image_mm[4])
{
	double px_mm = sqrt(PM_MAX_GRID_PX / (image_mm[2] * image_mm[3]));

	if (px_mm > PM_MAX_PX_MM)
		px_mm = PM_MAX_PX_MM;
	g->w = (int)floor(image_mm[2] * px_mm);
	g->h = (int)floor(image_mm[3] * px_mm);
	if (g->w < 1)
		g->w = 1;
	if (g->h < 1)
		g->h = 1;
	/* Whole pixels: the grid covers the rectangle's top-left part to within a pixel. */
	g->px_mm = px_mm;
	g->x0_mm = image_mm[0];
	g->y0_mm = image_mm[1];
	g->w_mm = image_mm[2];
	g->h_mm = image_mm[3];
}

void plan_grid_cells(const double image_mm[4], double cell_mm, int *cols, int *rows)
{
	*cols = (int)ceil(image_mm[2] / cell_mm - 1e-9);
	*rows = (int)ceil(image_mm[3] / cell_mm - 1e-9);
}

void pm_grid_cells(const struct pm_grid *g, double cell_mm, int *cols, int *rows)
{
	plan_grid_cells((const double[4]){ g->x0_mm, g->y0_mm, g->w_mm, g->h_mm }, cell_mm, cols, rows);
}

void pm_fit(const struct machine *m, int w, int h, double out[4])
{
	double cw = m->canvas.size_mm[0], ch = m->canvas.size_mm[1];
	double s = fmin(cw / w, ch / h);

	out[2] = w * s;
	out[3] = h * s;
	out[0] = 0.5 * (cw - out[2]);
	out[1] = 0.5 * (ch - out[3]);
}

int pm_score(const struct pm_grid *g, const float *target, const float *canvas, double *mean,
	     double *p95, bl_err *err)
{
	size_t n = (size_t)g->w * g->h;
	/* A histogram in steps of 0.05 up to 200 gives the 95th percentile without sorting. */
	enum { NB = 4000 };
	unsigned *hist = calloc(NB + 1, sizeof(unsigned));
	double sum = 0.0;
	size_t acc = 0;

	if (!hist)
		return bl_fail(err, BL_ENOMEM, "out of memory scoring");
	for (size_t i = 0; i < n; i++) {
		color_lab a = { target[3 * i], target[3 * i + 1], target[3 * i + 2] };
		color_lab b = { canvas[3 * i], canvas[3 * i + 1], canvas[3 * i + 2] };
		double d = color_de00(&a, &b);
		int bin = (int)(d / 0.05);

		sum += d;
		hist[bin > NB ? NB : bin]++;
	}
	if (mean)
		*mean = sum / (double)n;
	if (p95) {
		size_t want = (size_t)ceil(0.95 * (double)n);

		*p95 = NB * 0.05;
		for (int b = 0; b <= NB; b++) {
			acc += hist[b];
			if (acc >= want) {
				*p95 = (b + 1) * 0.05;
				break;
			}
		}
	}
	free(hist);
	return 0;
}

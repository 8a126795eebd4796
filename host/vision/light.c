/* light.c: the table's stations in a frame, the light field fitted to the bare board, and station colours measured with the light divided out. */
#include "vision/light.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cv/cv.h"

#define SAMPLE_HALF_PX 3        /* a board sample is the median of a 7 x 7 px box */
#define MARGIN_MM 6.0           /* board this close to anything placed on it is not sampled */
#define MIN_SAMPLES 40
#define MAX_RANGE 4.0           /* a field varying more than this across the table is not light */

int vis_table_to_px(const struct vis_geometry *g, const struct machine *m, const double *xy_mm,
		    double *px, int n, bl_err *err)
{
	for (int i = 0; i < n; i++) {
		px[2 * i] = xy_mm[2 * i] - m->canvas.origin_mm[0];
		px[2 * i + 1] = xy_mm[2 * i + 1] - m->canvas.origin_mm[1];
	}
	cv_apply_homography(g->H, px, px, n);
	return g->has_camera ? cv_distort_points(&g->camera, px, px, n, err) : 0;
}

int vis_px_to_table(const struct vis_geometry *g, const struct machine *m, const double *px,
		    double *xy_mm, int n, bl_err *err)
{
	double inv[9];
	int rc;

	if (g->has_camera)
		rc = cv_undistort_points(&g->camera, px, xy_mm, n, err);
	else
		rc = (memmove(xy_mm, px, sizeof(double) * 2 * (size_t)n), 0);
	if (rc == 0)
		rc = cv_invert3(g->H, inv, err);
	if (rc)
		return rc;
	cv_apply_homography(inv, xy_mm, xy_mm, n);
	for (int i = 0; i < n; i++) {
		xy_mm[2 * i] += m->canvas.origin_mm[0];
		xy_mm[2 * i + 1] += m->canvas.origin_mm[1];
	}
	return 0;
}

int vis_station_roi(const struct vis_geometry *g, const struct machine *m,
		    const struct machine_station *st, struct meas_roi *roi, bl_err *err)
{
	/* The centre and a point 0.45 of the radius out: the square's half side in px there. */
	const double pts[4] = { st->center_mm[0], st->center_mm[1],
				st->center_mm[0] + 0.45 * st->radius_mm, st->center_mm[1] };
	double px[4], half;
	int rc = vis_table_to_px(g, m, pts, px, 2, err);

	if (rc)
		return rc;
	half = hypot(px[2] - px[0], px[3] - px[1]);
	if (half < 2.0)
		half = 2.0;
	roi->x = (int)lround(px[0] - half);
	roi->y = (int)lround(px[1] - half);
	roi->w = roi->h = (int)lround(2.0 * half);
	return 0;
}

/* ---- the light field ---- */

static double lin_lut[256];

static void lut_init(void)
{
	if (lin_lut[255] > 0.0)
		return;
	for (int i = 0; i < 256; i++)
		lin_lut[i] = meas_srgb_to_linear(i / 255.0);
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

/*
 * Mean linear luminance of the box about (u, v) px; -1 when outside the
 * frame, clipped or black. A mean, not a median: 8-bit codes would quantise
 * a median to steps coarser than the lamp's drift over an hour.
 */
static double box_luma(const struct img *im, double u, double v)
{
	int cx = (int)lround(u), cy = (int)lround(v), k = 0;
	double sum = 0.0;

	if (cx - SAMPLE_HALF_PX < 0 || cy - SAMPLE_HALF_PX < 0 || cx + SAMPLE_HALF_PX >= im->w ||
	    cy + SAMPLE_HALF_PX >= im->h)
		return -1.0;
	for (int y = cy - SAMPLE_HALF_PX; y <= cy + SAMPLE_HALF_PX; y++)
		for (int x = cx - SAMPLE_HALF_PX; x <= cx + SAMPLE_HALF_PX; x++) {
			const unsigned char *p = im->px + 3 * ((size_t)y * im->w + x);

			if (p[0] >= 254 || p[1] >= 254 || p[2] >= 254)
				return -1.0;
			sum += 0.2126 * lin_lut[p[0]] + 0.7152 * lin_lut[p[1]] + 0.0722 * lin_lut[p[2]];
			k++;
		}
	return sum / k > 1e-3 ? sum / k : -1.0;
}

static int near_station(const struct machine_station *st, double x, double y)
{
	return st->radius_mm > 0.0 &&
	       hypot(x - st->center_mm[0], y - st->center_mm[1]) < st->radius_mm + MARGIN_MM;
}

enum { COVERED, BOARD, CANVAS };

/*
 * What lies at table point (x, y) mm: the bare board, the canvas (well
 * inside its edges), or something the machine file places there (markers,
 * stations, keep-out zones, the canvas's edge), with a margin.
 */
static int surface_at(const struct machine *m, const struct vis_markers *mk, double x, double y)
{
	const double *o = m->canvas.origin_mm, *s = m->canvas.size_mm;
	double reach = vis_marker_reach_mm(mk) + MARGIN_MM;

	if (x > o[0] + 2 * MARGIN_MM && x < o[0] + s[0] - 2 * MARGIN_MM &&
	    y > o[1] + 2 * MARGIN_MM && y < o[1] + s[1] - 2 * MARGIN_MM)
		return CANVAS;
	if (x > o[0] - MARGIN_MM && x < o[0] + s[0] + MARGIN_MM && y > o[1] - MARGIN_MM &&
	    y < o[1] + s[1] + MARGIN_MM)
		return COVERED;
	for (int k = 0; k < 4; k++) {
		double c[2];

		vis_marker_centre(mk, k, c);
		if (fabs(x - o[0] - c[0]) < reach && fabs(y - o[1] - c[1]) < reach)
			return COVERED;
	}
	for (int i = 0; i < m->n_wells; i++)
		if (near_station(&m->wells[i], x, y))
			return COVERED;
	for (int i = 0; i < m->n_cells; i++)
		if (near_station(&m->cells[i], x, y))
			return COVERED;
	if (near_station(&m->water, x, y) || near_station(&m->wipe, x, y))
		return COVERED;
	for (int i = 0; i < m->n_keep_out; i++) {
		const struct machine_box *b = &m->keep_out[i];

		if (x > b->min_mm[0] - MARGIN_MM && x < b->max_mm[0] + MARGIN_MM &&
		    y > b->min_mm[1] - MARGIN_MM && y < b->max_mm[1] + MARGIN_MM)
			return COVERED;
	}
	return BOARD;
}

/* The field's terms: every monomial u^i v^j with i + j <= VIS_LIGHT_DEGREE. */
static void terms(const struct vis_light *l, double x, double y, double t[VIS_LIGHT_TERMS])
{
	double u = (x - l->x0) / l->scale, v = (y - l->y0) / l->scale, pu = 1.0;
	int k = 0;

	for (int i = 0; i <= VIS_LIGHT_DEGREE; i++, pu *= u) {
		double pv = 1.0;

		for (int j = 0; i + j <= VIS_LIGHT_DEGREE; j++, pv *= v)
			t[k++] = pu * pv;
	}
}

static double field(const struct vis_light *l, double x, double y)
{
	double t[VIS_LIGHT_TERMS], f = 0.0;

	terms(l, x, y, t);
	for (int j = 0; j < VIS_LIGHT_TERMS; j++)
		f += l->c[j] * t[j];
	return f;
}

/* Solves the n x n system a x = b in place (Gaussian elimination, partial pivoting); 0 when singular. */
static int solve(double *a, double *b, int n)
{
	for (int c = 0; c < n; c++) {
		int p = c;

		for (int r = c + 1; r < n; r++)
			if (fabs(a[r * n + c]) > fabs(a[p * n + c]))
				p = r;
		if (fabs(a[p * n + c]) < 1e-12)
			return 0;
		if (p != c) {
			for (int k = 0; k < n; k++) {
				double t = a[c * n + k];

				a[c * n + k] = a[p * n + k];
				a[p * n + k] = t;
			}
			double t = b[c];

			b[c] = b[p];
			b[p] = t;
		}
		for (int r = c + 1; r < n; r++) {
			double f = a[r * n + c] / a[c * n + c];

			for (int k = c; k < n; k++)
				a[r * n + k] -= f * a[c * n + k];
			b[r] -= f * b[c];
		}
	}
	for (int c = n - 1; c >= 0; c--) {
		for (int k = c + 1; k < n; k++)
			b[c] -= a[c * n + k] * b[k];
		b[c] /= a[c * n + c];
	}
	return 1;
}

/* A sample's luminance as the board would show it: the canvas's divided by its brightness. */
static double board_luma(const struct vis_light *l, int i)
{
	return l->on_canvas[i] ? l->luma[i] / l->canvas_ratio : l->luma[i];
}

/*
 * Least squares of the kept samples' luminance on the polynomial's terms, in
 * passes: each pass refits the canvas's brightness against the board's
 * (the median ratio of its samples to the field) and drops samples off the
 * fit by more than three robust sigmas (a speck, a shadow, paint on the
 * canvas, something on the board).
 */
static int fit_field(struct vis_light *l, unsigned char *use, double *rel)
{
	int n = l->n_samples, board_only = 1;

	l->canvas_ratio = 1.0;
	for (int pass = 0; pass < 5; pass++) {
		double a[VIS_LIGHT_TERMS * VIS_LIGHT_TERMS] = { 0 }, b[VIS_LIGHT_TERMS] = { 0 };
		double mad, sum2 = 0.0;
		int kept = 0, nc = 0;

		for (int i = 0; i < n; i++) {
			double t[VIS_LIGHT_TERMS], v = board_luma(l, i);

			if (!use[i] || (board_only && l->on_canvas[i]))
				continue;
			terms(l, l->xy_mm[i][0], l->xy_mm[i][1], t);
			for (int j = 0; j < VIS_LIGHT_TERMS; j++) {
				b[j] += t[j] * v;
				for (int k = 0; k < VIS_LIGHT_TERMS; k++)
					a[j * VIS_LIGHT_TERMS + k] += t[j] * t[k];
			}
			kept++;
		}
		if (kept < MIN_SAMPLES || !solve(a, b, VIS_LIGHT_TERMS))
			return 0;
		memcpy(l->c, b, sizeof(b));
		/* The canvas's brightness against the board's, from its kept samples. */
		for (int i = 0; i < n; i++)
			if (use[i] && l->on_canvas[i])
				rel[nc++] = l->luma[i] / field(l, l->xy_mm[i][0], l->xy_mm[i][1]);
		if (nc >= MIN_SAMPLES) {
			qsort(rel, (size_t)nc, sizeof(double), cmp_double);
			l->canvas_ratio = rel[nc / 2];
			board_only = 0;
		}
		kept = 0;
		for (int i = 0; i < n; i++) {
			double f = field(l, l->xy_mm[i][0], l->xy_mm[i][1]);

			if (!(f > 0.0) || !(l->canvas_ratio > 0.0))
				return 0;
			if (use[i])
				rel[kept++] = fabs(board_luma(l, i) / f - 1.0);
		}
		qsort(rel, (size_t)kept, sizeof(double), cmp_double);
		mad = 1.4826 * rel[kept / 2];
		l->n_used = 0;
		for (int i = 0; i < n; i++) {
			double r = fabs(board_luma(l, i) / field(l, l->xy_mm[i][0], l->xy_mm[i][1]) - 1.0);

			use[i] = r <= 3.0 * mad + 1e-4;
			if (use[i]) {
				l->n_used++;
				sum2 += r * r;
			}
		}
		l->rms = l->n_used ? sqrt(sum2 / l->n_used) : 0.0;
	}
	return l->n_used >= MIN_SAMPLES;
}

int vis_light_fit(const struct img *bare, const char *name, const struct vis_geometry *g,
		  const struct machine *m, struct vis_light *l, bl_err *err)
{
	const double *lo = m->work_min_mm, *hi = m->work_max_mm;
	double w = hi[0] - lo[0], h = hi[1] - lo[1];
	double step = fmax(5.0, sqrt(w * h / (0.8 * VIS_LIGHT_MAX_SAMPLES)));
	struct vis_markers mk;
	unsigned char *use = NULL;
	double *rel = NULL, sum = 0.0;
	int rc = 0;

	lut_init();
	memset(l, 0, sizeof(*l));
	l->x0 = 0.5 * (lo[0] + hi[0]);
	l->y0 = 0.5 * (lo[1] + hi[1]);
	l->scale = fmax(0.5 * fmax(w, h), 1.0);
	vis_markers_from_machine(m, &mk);
	for (double y = lo[1] + 0.5 * step; y < hi[1]; y += step)
		for (double x = lo[0] + 0.5 * step; x < hi[0]; x += step) {
			double xy[2] = { x, y }, px[2], v;
			int on = surface_at(m, &mk, x, y);

			if (l->n_samples >= VIS_LIGHT_MAX_SAMPLES || on == COVERED)
				continue;
			if ((rc = vis_table_to_px(g, m, xy, px, 1, err)))
				return rc;
			v = box_luma(bare, px[0], px[1]);
			if (v < 0.0)
				continue;
			l->xy_mm[l->n_samples][0] = x;
			l->xy_mm[l->n_samples][1] = y;
			l->on_canvas[l->n_samples] = on == CANVAS;
			l->luma[l->n_samples++] = v;
		}
	if (l->n_samples < MIN_SAMPLES)
		return bl_fail(err, BL_EINVAL, "%s: only %d samples of bare board around the canvas and "
			       "stations are in view (at least %d needed) to measure the light across "
			       "the table", name, l->n_samples, MIN_SAMPLES);
	use = malloc((size_t)l->n_samples);
	rel = malloc(sizeof(double) * (size_t)l->n_samples);
	if (!use || !rel) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_free;
	}
	memset(use, 1, (size_t)l->n_samples);
	if (!fit_field(l, use, rel)) {
		rc = bl_fail(err, BL_EINVAL, "%s: the board's light does not fit a smooth field (%d of "
			     "%d samples agree): is something lying on the table?", name, l->n_used,
			     l->n_samples);
		goto out_free;
	}
	l->min = HUGE_VAL;
	l->max = 0.0;
	for (int i = 0; i < l->n_samples; i++) {
		double f = field(l, l->xy_mm[i][0], l->xy_mm[i][1]);

		if (!use[i]) {
			l->luma[i] = 0.0;
			continue;
		}
		sum += f;
		l->min = fmin(l->min, f);
		l->max = fmax(l->max, f);
	}
	l->ref = sum / l->n_used;
	l->min /= l->ref;
	l->max /= l->ref;
	if (l->max > MAX_RANGE * l->min) {
		rc = bl_fail(err, BL_EINVAL, "%s: the light across the table varies %.1f-fold: light "
			     "it evenly", name, l->max / l->min);
		goto out_free;
	}
out_free:
	free(use);
	free(rel);
	return rc;
}

int vis_light_reference(struct vis_light *l, const double *xy_mm, int n, bl_err *err)
{
	double sum = 0.0;

	if (n < 1)
		return bl_fail(err, BL_EINVAL, "light reference: no points");
	for (int i = 0; i < n; i++) {
		double f = field(l, xy_mm[2 * i], xy_mm[2 * i + 1]);

		if (!(f > 0.0))
			return bl_fail(err, BL_EINVAL, "light reference: the field at (%.1f, %.1f) mm "
				       "is %g: is that point on the table?", xy_mm[2 * i],
				       xy_mm[2 * i + 1], f);
		sum += f;
	}
	l->ref = sum / n;
	return 0;
}

double vis_light_at(const struct vis_light *l, double x_mm, double y_mm)
{
	return field(l, x_mm, y_mm) / l->ref;
}

int vis_light_lamp(const struct vis_light *l, const struct img *frame, const char *name,
		   const struct vis_geometry *g, const struct machine *m, double *ratio,
		   bl_err *err)
{
	double *r = malloc(sizeof(double) * (size_t)(l->n_samples > 0 ? l->n_samples : 1));
	int n = 0, rc = 0;

	lut_init();
	if (!r)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	for (int i = 0; i < l->n_samples; i++) {
		double px[2], v;

		/* The board only: the canvas may have been painted since. */
		if (l->luma[i] <= 0.0 || l->on_canvas[i])
			continue;
		if ((rc = vis_table_to_px(g, m, l->xy_mm[i], px, 1, err)))
			goto out_free;
		v = box_luma(frame, px[0], px[1]);
		if (v > 0.0)
			r[n++] = v / l->luma[i];
	}
	if (n < MIN_SAMPLES) {
		rc = bl_fail(err, BL_EINVAL, "%s: only %d of the board's light samples are in view "
			     "(at least %d needed): is the arm or something else over the table?",
			     name, n, MIN_SAMPLES);
		goto out_free;
	}
	/* The middle half's mean: robust to what covers a few samples, finer than any one. */
	qsort(r, (size_t)n, sizeof(double), cmp_double);
	{
		double sum = 0.0;
		int k = 0;

		for (int i = n / 4; i < n - n / 4; i++, k++)
			sum += r[i];
		*ratio = sum / k;
	}
out_free:
	free(r);
	return rc;
}

int vis_measure_station(const struct img *frame, const char *name, const struct vis_geometry *g,
			const struct machine *m, const struct machine_station *st,
			const struct meas_profile *p, const struct vis_light *l,
			struct vis_station_meas *out, bl_err *err)
{
	double enc[3];
	int rc;

	memset(out, 0, sizeof(*out));
	out->light = out->lamp = 1.0;
	if ((rc = vis_station_roi(g, m, st, &out->roi, err)) ||
	    (rc = meas_swatch(frame, name, &out->roi, p, &out->sw, err)))
		return rc;
	out->uncorrected = out->sw.lab;
	if (!l)
		return 0;
	if ((rc = vis_light_lamp(l, frame, name, g, m, &out->lamp, err)))
		return rc;
	out->light = out->lamp * vis_light_at(l, st->center_mm[0], st->center_mm[1]);
	/* As the calibration divided the light out of the chart's patches before fitting. */
	for (int k = 0; k < 3; k++)
		enc[k] = meas_linear_to_srgb(fmin(1.0, out->sw.rgb_linear[k] / out->light));
	meas_profile_lab(p, enc, &out->sw.lab);
	return 0;
}

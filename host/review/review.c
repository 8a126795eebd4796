/* review.c: the built-in reviewer: what each observation leaves for it, and its rules, one row of a table each, judging a checkpoint or a mix verdict by another path than the run's. */
#include "review/review.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cv/cv.h"

const char *const review_point_names[] = { "checkpoint", "mix", NULL };
_Static_assert(sizeof(review_point_names) / sizeof(review_point_names[0]) == REVIEW_POINT_COUNT + 1,
	       "a review point without a name");

void review_init(struct review *rv, const struct machine *m)
{
	memset(rv, 0, sizeof(*rv));
	rv->m = m;
	vis_markers_from_machine(m, &rv->markers);
	rv->change_levels = -1.0;
	rv->canvas_round = -1;
	rv->canvas_sub = -1;
}

void review_free(struct review *rv)
{
	img_free(&rv->raw);
	free(rv->canvas);
	rv->canvas = NULL;
}

/* ---- what each observation leaves ---- */

/*
 * FNV-1a over the pixels, eight bytes a step (a byte a step cost a frame
 * 7 ms): two frames with the same digest are, for this purpose, the same frame.
 */
static uint64_t pixels_digest(const struct img *im)
{
	const unsigned char *p = im->px;
	size_t n = (size_t)im->w * im->h * 3, i = 0;
	uint64_t h = 1469598103934665603ULL ^ (uint64_t)im->w << 32 ^ (uint64_t)im->h;

	for (; i + 8 <= n; i += 8) {
		uint64_t w;

		memcpy(&w, p + i, 8);
		h = (h ^ w) * 1099511628211ULL;
	}
	for (; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

/* Mean |a - b| over every sample of two frames of one size, code values (summed in rows, which vectorise). */
static double mean_change(const struct img *a, const struct img *b)
{
	size_t row = (size_t)a->w * 3;
	uint64_t s = 0;

	for (int y = 0; y < a->h; y++) {
		const unsigned char *p = a->px + y * row, *q = b->px + y * row;
		uint32_t r = 0;

		for (size_t i = 0; i < row; i++)
			r += p[i] > q[i] ? p[i] - q[i] : q[i] - p[i];
		s += r;
	}
	return (double)s / ((double)row * a->h);
}

/*
 * The patches: a 7 x 7 grid of points over the middle third of each marker
 * but the origin's (all paper there), mapped to the frame by the run's
 * geometry; their mean in raw (linearised) and in the frame the run measures.
 */
static int read_patches(const struct review *rv, const struct img *raw, const struct img *seen,
			const struct vis_geometry *g, const struct meas_profile *p, struct review_patches *out,
			bl_err *err)
{
	double pts[3 * 49 * 2], lin[3] = { 0, 0, 0 }, code[3] = { 0, 0, 0 }, half = rv->markers.size_mm / 6.0;
	int n = 0, got = 0, rc;

	memset(out, 0, sizeof(*out));
	for (int id = 1; id < 4; id++) {
		double c[2];

		vis_marker_centre(&rv->markers, id, c);
		for (int j = 0; j < 7; j++)
			for (int i = 0; i < 7; i++) {
				pts[2 * n] = c[0] + half * (i / 3.0 - 1.0);
				pts[2 * n + 1] = c[1] + half * (j / 3.0 - 1.0);
				n++;
			}
	}
	cv_apply_homography(g->H, pts, pts, n);
	if (g->has_camera && (rc = cv_distort_points(&g->camera, pts, pts, n, err)))
		return rc;
	for (int i = 0; i < n; i++) {
		int x = (int)lround(pts[2 * i]), y = (int)lround(pts[2 * i + 1]);
		size_t at;

		if (x < 0 || y < 0 || x >= raw->w || y >= raw->h)
			continue;
		at = 3 * ((size_t)y * raw->w + x);
		for (int k = 0; k < 3; k++) {
			lin[k] += meas_srgb_to_linear(raw->px[at + k] / 255.0);
			code[k] += seen->px[at + k] / 255.0;
		}
		got++;
	}
	/* Most of each patch in view, or the patches say nothing. */
	if (got < (2 * n) / 3)
		return 0;
	for (int k = 0; k < 3; k++) {
		out->raw[k] = lin[k] / got;
		code[k] /= got;
	}
	meas_profile_lab(p, code, &out->lab);
	out->ok = 1;
	return 0;
}

int review_observed(struct review *rv, const struct img *raw, const struct img *seen,
		    const struct vis_geometry *g, const struct meas_profile *p, const char *frame,
		    bl_err *err)
{
	const char *base = strrchr(frame, '/');
	uint64_t d = pixels_digest(raw);
	int rc;

	base = base ? base + 1 : frame;
	rv->repeat_of[0] = '\0';
	for (int i = 0; i < rv->n_digests; i++)
		if (rv->digest[i] == d)
			snprintf(rv->repeat_of, sizeof(rv->repeat_of), "%s", rv->digest_frame[i]);
	rv->change_levels = rv->raw.px && rv->raw.w == raw->w && rv->raw.h == raw->h ? mean_change(raw, &rv->raw)
										      : -1.0;
	if (rv->n_digests == REVIEW_DIGESTS) {
		memmove(rv->digest, rv->digest + 1, sizeof(rv->digest[0]) * (REVIEW_DIGESTS - 1));
		memmove(rv->digest_frame, rv->digest_frame + 1, sizeof(rv->digest_frame[0]) * (REVIEW_DIGESTS - 1));
		rv->n_digests--;
	}
	rv->digest[rv->n_digests] = d;
	snprintf(rv->digest_frame[rv->n_digests], sizeof(rv->digest_frame[0]), "%s", base);
	rv->n_digests++;
	if (!rv->raw.px || rv->raw.w != raw->w || rv->raw.h != raw->h) {
		img_free(&rv->raw);
		if ((rc = img_alloc(&rv->raw, raw->w, raw->h, err)))
			return rc;
	}
	memcpy(rv->raw.px, raw->px, (size_t)raw->w * raw->h * 3);
	snprintf(rv->frame, sizeof(rv->frame), "%s", base);
	memcpy(rv->corners_px, g->corners_px, sizeof(rv->corners_px));
	if ((rc = read_patches(rv, raw, seen, g, p, &rv->now, err)))
		return rc;
	rv->now.t_s = rv->clock_s;
	if (rv->now.ok && !rv->start.ok) {
		rv->start = rv->now;
		snprintf(rv->start_frame, sizeof(rv->start_frame), "%s", base);
	}
	if (rv->now.ok && !rv->agreed.ok)
		review_agreed(rv);
	return 0;
}

void review_agreed(struct review *rv)
{
	if (!rv->now.ok)
		return;
	rv->agreed = rv->now;
	snprintf(rv->agreed_frame, sizeof(rv->agreed_frame), "%s", rv->frame);
}

int review_baseline(struct review *rv, const float *lab, int w, int h, int round, long sub, bl_err *err)
{
	size_t bytes = (size_t)w * h * 3 * sizeof(float);
	float *keep = realloc(rv->canvas, bytes);

	if (!keep)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	memcpy(keep, lab, bytes);
	rv->canvas = keep;
	rv->canvas_w = w;
	rv->canvas_h = h;
	rv->canvas_round = round;
	rv->canvas_sub = sub;
	return 0;
}

/* ---- the rules ---- */

/* Everything a rule may look at; the one it needs may be absent (then it is not judged). */
struct evidence {
	const struct review *rv;
	const struct review_canvas *c;
	const struct review_mix *x;
};

static void not_judged(struct review_finding *f, const char *why)
{
	f->judged = 0;
	f->agree = 1;
	snprintf(f->why, sizeof(f->why), "%s", why);
}

static void rule_frame_new(const struct evidence *ev, struct review_finding *f)
{
	const struct review *rv = ev->rv;

	if (rv->repeat_of[0]) {
		f->judged = 1;
		f->agree = 0;
		f->figure = 0.0;
		snprintf(f->why, sizeof(f->why), "the frame %s repeats %s pixel for pixel", rv->frame, rv->repeat_of);
		return;
	}
	if (rv->change_levels < 0.0)
		return not_judged(f, "no earlier frame in this process to compare with");
	f->judged = 1;
	f->figure = rv->change_levels;
	f->agree = f->figure >= f->threshold;
	snprintf(f->why, sizeof(f->why), "the frame %s differs from the one before by %.3f on average "
		 "(at least %g expected of a new frame)", rv->frame, f->figure, f->threshold);
}

/*
 * The frame with the canvas (where the run's geometry puts it) painted flat
 * grey: markers lie outside it, and paint can look like one (a run of
 * real/ihc.png showed five). A camera knocked by up to the markers' gap to
 * the canvas (about a third of their side) leaves them all in view.
 */
static int canvas_masked(const struct review *rv, struct img *out, bl_err *err)
{
	const double *c = rv->corners_px;
	double x0 = c[0], x1 = c[0], y0 = c[1], y1 = c[1];
	int rc;

	if ((rc = img_alloc(out, rv->raw.w, rv->raw.h, err)))
		return rc;
	memcpy(out->px, rv->raw.px, (size_t)rv->raw.w * rv->raw.h * 3);
	for (int k = 1; k < 4; k++) {
		x0 = fmin(x0, c[2 * k]);
		x1 = fmax(x1, c[2 * k]);
		y0 = fmin(y0, c[2 * k + 1]);
		y1 = fmax(y1, c[2 * k + 1]);
	}
	for (int y = (int)fmax(0.0, y0); y <= (int)fmin(out->h - 1.0, y1); y++)
		for (int x = (int)fmax(0.0, x0); x <= (int)fmin(out->w - 1.0, x1); x++) {
			int pos = 0, neg = 0;

			/* Inside a convex quadrilateral: on the same side of its four edges. */
			for (int k = 0; k < 4; k++) {
				const double *a = c + 2 * k, *b = c + 2 * ((k + 1) % 4);
				double cr = (b[0] - a[0]) * (y - a[1]) - (b[1] - a[1]) * (x - a[0]);

				pos |= cr > 0.0;
				neg |= cr < 0.0;
			}
			if (!(pos && neg))
				memset(out->px + 3 * ((size_t)y * out->w + x), 128, 3);
		}
	return 0;
}

static void rule_markers(const struct evidence *ev, struct review_finding *f)
{
	const struct review *rv = ev->rv;
	struct vis_geometry g;
	struct img masked = { 0 };
	bl_err e = { 0 };
	double worst = 0.0;
	int rc;

	if (!rv->raw.px)
		return not_judged(f, "no frame");
	if (canvas_masked(rv, &masked, &e))
		return not_judged(f, "out of memory");
	f->judged = 1;
	/* Found afresh in this frame, not taken from canvas.json or the calibration as the run does. */
	rc = vis_locate(&masked, rv->frame, NULL, &rv->markers, &g, &e);
	img_free(&masked);
	if (rc) {
		f->agree = 0;
		f->figure = -1.0;
		snprintf(f->why, sizeof(f->why), "the corner markers are not where a frame shows them: %.180s", e.msg);
		return;
	}
	for (int k = 0; k < 4; k++)
		worst = fmax(worst, hypot(g.corners_px[2 * k] - rv->corners_px[2 * k],
					  g.corners_px[2 * k + 1] - rv->corners_px[2 * k + 1]));
	f->figure = worst;
	f->agree = worst <= f->threshold;
	snprintf(f->why, sizeof(f->why), "the markers put a canvas corner %.1f px from where the run measures it "
		 "(at most %g)", worst, f->threshold);
}

/* The largest relative change of the patches' light from ref to now, and its channel. */
static double light_change(const struct review_patches *ref, const struct review_patches *now, int *channel)
{
	double worst = 0.0;

	*channel = 0;
	for (int k = 0; k < 3; k++) {
		double r = ref->raw[k] > 1e-6 ? now->raw[k] / ref->raw[k] : 1.0;

		if (fabs(r - 1.0) > worst) {
			worst = fabs(r - 1.0);
			*channel = k;
		}
	}
	return worst;
}

static const char *const channel_names[] = { "red", "green", "blue" };

/*
 * A sudden change: since the last review that agreed. A lamp that drifts
 * slowly is what the run's own light correction follows (rule reference
 * checks it); lamp_drift judges its pace.
 */
static void rule_lamp(const struct evidence *ev, struct review_finding *f)
{
	const struct review *rv = ev->rv;
	const struct review_patches *ref = rv->agreed.ok ? &rv->agreed : &rv->start;
	int k0;

	if (!ref->ok || !rv->now.ok)
		return not_judged(f, ref->ok ? "the reference patches are not in this frame"
					     : "no reference patches read yet");
	f->judged = 1;
	f->figure = light_change(ref, &rv->now, &k0);
	f->agree = f->figure <= f->threshold;
	snprintf(f->why, sizeof(f->why), "the reference patches' light reads %.2f of what it read at the last review "
		 "agreed (%s, %s channel; within %g of it expected)", rv->now.raw[k0] / fmax(ref->raw[k0], 1e-6),
		 rv->agreed.ok ? rv->agreed_frame : rv->start_frame, channel_names[k0], f->threshold);
}

/* The pace of the light's change since the start, per hour of the run clock (one hour at least, so noise does not count early). */
static void rule_lamp_drift(const struct evidence *ev, struct review_finding *f)
{
	const struct review *rv = ev->rv;
	double h;
	int k0;

	if (!rv->start.ok || !rv->now.ok)
		return not_judged(f, rv->start.ok ? "the reference patches are not in this frame"
					    : "no reference patches read yet");
	h = fmax(1.0, (rv->now.t_s - rv->start.t_s) / 3600.0);
	f->judged = 1;
	f->figure = light_change(&rv->start, &rv->now, &k0) / h;
	f->agree = f->figure <= f->threshold;
	snprintf(f->why, sizeof(f->why), "the reference patches' light reads %.2f of what it read at the start (%s, "
		 "%s channel) after %.1f h: %.3f an hour (at most %g)", rv->now.raw[k0] / fmax(rv->start.raw[k0], 1e-6),
		 rv->start_frame, channel_names[k0], (rv->now.t_s - rv->start.t_s) / 3600.0, f->figure, f->threshold);
}

static void rule_reference(const struct evidence *ev, struct review_finding *f)
{
	const struct review *rv = ev->rv;

	if (!rv->start.ok || !rv->now.ok)
		return not_judged(f, rv->start.ok ? "the reference patches are not in this frame"
					    : "no reference patches read yet");
	f->judged = 1;
	f->figure = color_de00(&rv->now.lab, &rv->start.lab);
	f->agree = f->figure <= f->threshold;
	snprintf(f->why, sizeof(f->why), "the reference patches measure %.2f CIEDE2000 from what they measured at "
		 "the start (L* %.1f against %.1f; at most %g)", f->figure, rv->now.lab.L, rv->start.lab.L,
		 f->threshold);
}

static int checkpoint_ready(const struct evidence *ev, struct review_finding *f)
{
	const struct review *rv = ev->rv;
	const struct review_canvas *c = ev->c;

	if (!c || !c->now || !c->cover) {
		not_judged(f, "no canvas observed");
		return 0;
	}
	if (!rv->canvas || rv->canvas_w != c->w || rv->canvas_h != c->h) {
		not_judged(f, "no canvas agreed on before to judge the change from");
		return 0;
	}
	return 1;
}

/*
 * Where the strokes went, the canvas must have gone towards their paint:
 * per pixel the share of the way from the canvas agreed on to the paint
 * (its projection on that line in Lab), where the paint differs from what
 * was there by more than 10 and the footprint covers at least half.
 */
static void rule_paint_landed(const struct evidence *ev, struct review_finding *f)
{
	const struct review_canvas *c = ev->c;
	const float *before = ev->rv->canvas;
	double sum = 0.0;
	long n = 0;

	if (!checkpoint_ready(ev, f))
		return;
	if (!c->paint)
		return not_judged(f, "the paint of the strokes since the last checkpoint is not known to this process");
	for (size_t i = 0; i < (size_t)c->w * c->h; i++) {
		double dp[3], ds[3], n2;

		if (c->cover[i] < 0.5)
			continue;
		for (int k = 0; k < 3; k++) {
			dp[k] = c->paint[3 * i + k] - before[3 * i + k];
			ds[k] = c->now[3 * i + k] - before[3 * i + k];
		}
		n2 = dp[0] * dp[0] + dp[1] * dp[1] + dp[2] * dp[2];
		if (n2 < 100.0)
			continue;
		sum += (ds[0] * dp[0] + ds[1] * dp[1] + ds[2] * dp[2]) / n2;
		n++;
	}
	if (n < 100)
		return not_judged(f, "too few pixels painted with a colour unlike what was there");
	f->judged = 1;
	f->figure = sum / n;
	f->agree = f->figure >= f->threshold;
	snprintf(f->why, sizeof(f->why), "where %ld strokes laid %.2f ml since the last checkpoint, %ld px went "
		 "%.2f of the way to their paint (at least %g expected)", c->strokes, c->paint_ml, n, f->figure,
		 f->threshold);
}

/*
 * The pixels no stroke went near since the baseline: 3 mm or more from any
 * footprint and from paint still drying then (a square grown by a max
 * filter, rows then columns). clear[i] is 1 for such a pixel.
 */
static unsigned char *clear_pixels(const struct review_canvas *c, int grow)
{
	size_t n = (size_t)c->w * c->h;
	unsigned char *t = calloc(n, 1), *u = calloc(n, 1);

	if (!t || !u) {
		free(t);
		free(u);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		t[i] = c->cover[i] > 0.02f || (c->settle && c->settle[i] > 0.0f);
	for (int y = 0; y < c->h; y++)
		for (int x = 0; x < c->w; x++)
			for (int d = -grow; d <= grow && !u[(size_t)y * c->w + x]; d++)
				u[(size_t)y * c->w + x] = x + d >= 0 && x + d < c->w && t[(size_t)y * c->w + x + d];
	for (int y = 0; y < c->h; y++)
		for (int x = 0; x < c->w; x++) {
			int any = 0;

			for (int d = -grow; d <= grow && !any; d++)
				any = y + d >= 0 && y + d < c->h && u[(size_t)(y + d) * c->w + x];
			t[(size_t)y * c->w + x] = !any;
		}
	free(u);
	return t;
}

/*
 * Where no stroke went, the canvas must not change: per 10 mm block, the
 * mean of its clear pixels (clear_pixels; a block with fewer than 30 of them
 * is not judged) now against the canvas agreed on; the largest change is
 * the figure.
 */
static void rule_unpainted_unchanged(const struct evidence *ev, struct review_finding *f)
{
	const struct review_canvas *c = ev->c;
	const float *before = ev->rv->canvas;
	const int blk = 10;
	double worst = 0.0;
	int wx = 0, wy = 0, blocks = 0;
	unsigned char *clear;

	if (!checkpoint_ready(ev, f))
		return;
	if (!(clear = clear_pixels(c, 3)))
		return not_judged(f, "out of memory");
	for (int by = 0; by + blk <= c->h; by += blk)
		for (int bx = 0; bx + blk <= c->w; bx += blk) {
			double s0[3] = { 0, 0, 0 }, s1[3] = { 0, 0, 0 }, de;
			int n = 0;
			color_lab a, b;

			for (int y = by; y < by + blk; y++)
				for (int x = bx; x < bx + blk; x++) {
					size_t i = (size_t)y * c->w + x;

					if (!clear[i])
						continue;
					for (int k = 0; k < 3; k++) {
						s0[k] += before[3 * i + k];
						s1[k] += c->now[3 * i + k];
					}
					n++;
				}
			if (n < 30)
				continue;
			a = (color_lab){ s0[0] / n, s0[1] / n, s0[2] / n };
			b = (color_lab){ s1[0] / n, s1[1] / n, s1[2] / n };
			blocks++;
			de = color_de00(&a, &b);
			if (de > worst) {
				worst = de;
				wx = bx;
				wy = by;
			}
		}
	free(clear);
	if (!blocks)
		return not_judged(f, "every part of the canvas was painted since the last checkpoint");
	f->judged = 1;
	f->figure = worst;
	f->agree = worst <= f->threshold;
	snprintf(f->why, sizeof(f->why), "of %d blocks of 10 mm with pixels no stroke went near since the last "
		 "checkpoint, the one at canvas (%d, %d) mm changed most there: %.2f CIEDE2000 (at most %g)", blocks,
		 wx, wy, worst, f->threshold);
}

/* The cell as the run's mixing model predicts it from what went in, with what the run learnt of its paints. */
static void rule_mix_model(const struct evidence *ev, struct review_finding *f)
{
	const struct review_mix *x = ev->x;
	double amt[MIX_MAX_PAINTS] = { 0 };
	color_lab pred;
	int any = 0;

	if (!x || !x->model || !x->units)
		return not_judged(f, "no mix");
	for (int i = 0; i < x->model->n_paints && i < MIX_MAX_PAINTS; i++) {
		amt[i] = x->units[i];
		any |= x->units[i] > 0;
	}
	if (!any)
		return not_judged(f, "nothing is known to be in the cell");
	mix_predict(x->model, x->learn, amt, &pred);
	f->judged = 1;
	f->figure = color_de00(&x->measured, &pred);
	f->agree = f->figure <= f->threshold;
	snprintf(f->why, sizeof(f->why), "the cell measured Lab (%.1f, %.1f, %.1f), %.2f CIEDE2000 from the "
		 "(%.1f, %.1f, %.1f) the mixing model and the paints' history predict for what went in (at most %g)",
		 x->measured.L, x->measured.a, x->measured.b, f->figure, pred.L, pred.a, pred.b, f->threshold);
}

#define AT_BOTH ((1u << REVIEW_AT_CHECKPOINT) | (1u << REVIEW_AT_MIX))
#define AT_CHECKPOINT (1u << REVIEW_AT_CHECKPOINT)
#define AT_MIX (1u << REVIEW_AT_MIX)

/* The rules: a row each, its threshold the machine file's review.KEY (struct machine_review at off). */
static const struct rule {
	struct review_rule_info info;
	size_t off;
	void (*judge)(const struct evidence *ev, struct review_finding *f);
} rules[] = {
	{ { "frame_new", "the frame is new: its pixels repeat none of the last 16 observations' and differ from "
	    "the last one's by at least the threshold (mean |difference|, code values)", "review.frame_min_change",
	    AT_BOTH }, offsetof(struct machine_review, frame_min_change), rule_frame_new },
	{ { "markers", "the canvas is where the calibration says: the corner markers found afresh in the frame "
	    "put each canvas corner within the threshold of where the run's geometry puts it (px)",
	    "review.marker_shift_px", AT_BOTH }, offsetof(struct machine_review, marker_shift_px), rule_markers },
	{ { "lamp", "the light on the reference patches (the paper inside three corner markers) in the frame as "
	    "the camera gave it is within the threshold of what it was at the last review that agreed (relative, "
	    "any channel)", "review.lamp_change", AT_BOTH }, offsetof(struct machine_review, lamp_change), rule_lamp },
	{ { "lamp_drift", "that light has changed since the run's start by at most the threshold an hour of the run "
	    "clock (relative, any channel, one hour at least)", "review.lamp_drift_per_h", AT_BOTH },
	  offsetof(struct machine_review, lamp_drift_per_h), rule_lamp_drift },
	{ { "reference", "the reference patches measured through the run's own pipeline (light divided out, camera "
	    "profile) are within the threshold of their start (CIEDE2000)", "review.reference_de00", AT_BOTH },
	  offsetof(struct machine_review, reference_de00), rule_reference },
	{ { "paint_landed", "where the strokes since the last checkpoint went, the canvas went at least the threshold "
	    "of the way from what was there to their paint", "review.min_landed", AT_CHECKPOINT },
	  offsetof(struct machine_review, min_landed), rule_paint_landed },
	{ { "unpainted_unchanged", "where no stroke went since the last checkpoint (the pixels of each 10 mm block 3 mm "
	    "clear of every footprint and of paint still drying then), no block changed by more than the threshold "
	    "(CIEDE2000)", "review.unpainted_change_de00",
	    AT_CHECKPOINT }, offsetof(struct machine_review, unpainted_change_de00), rule_unpainted_unchanged },
	{ { "mix_model", "the mix measured is within the threshold of what the mixing model, with what the run "
	    "learnt of its paints, predicts for the units in the cell (CIEDE2000)", "review.mix_model_de00",
	    AT_MIX }, offsetof(struct machine_review, mix_model_de00), rule_mix_model },
};
_Static_assert(sizeof(rules) / sizeof(rules[0]) <= REVIEW_MAX_RULES, "more rules than a result holds");

int review_rule_count(void)
{
	return (int)(sizeof(rules) / sizeof(rules[0]));
}

const struct review_rule_info *review_rule_info(int i)
{
	return i >= 0 && i < review_rule_count() ? &rules[i].info : NULL;
}

int review_judge(struct review *rv, enum review_point point, const struct review_canvas *c,
		 const struct review_mix *x, struct review_result *out, bl_err *err)
{
	const struct evidence ev = { rv, c, x };

	(void)err;
	memset(out, 0, sizeof(*out));
	out->point = point;
	out->agree = 1;
	for (int i = 0; i < review_rule_count(); i++) {
		struct review_finding *f;

		if (!(rules[i].info.points & 1u << point))
			continue;
		f = &out->f[out->n++];
		f->rule = rules[i].info.name;
		f->threshold = *(const double *)((const char *)&rv->m->review + rules[i].off);
		rules[i].judge(&ev, f);
		out->agree &= !f->judged || f->agree;
	}
	return 0;
}

cJSON *review_result_json(const struct review_result *res)
{
	cJSON *o = cJSON_CreateObject(), *a;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "point", review_point_names[res->point]);
	cJSON_AddBoolToObject(o, "agree", res->agree);
	a = cJSON_AddArrayToObject(o, "rules");
	for (int i = 0; i < res->n; i++) {
		const struct review_finding *f = &res->f[i];
		cJSON *r = cJSON_CreateObject();

		cJSON_AddStringToObject(r, "rule", f->rule);
		cJSON_AddBoolToObject(r, "judged", f->judged);
		if (f->judged) {
			cJSON_AddBoolToObject(r, "agree", f->agree);
			cJSON_AddNumberToObject(r, "figure", round(f->figure * 1000) / 1000);
			cJSON_AddNumberToObject(r, "threshold", f->threshold);
		}
		cJSON_AddStringToObject(r, "why", f->why);
		cJSON_AddItemToArray(a, r);
	}
	return o;
}

void review_result_why(const struct review_result *res, char *buf, size_t n)
{
	buf[0] = '\0';
	for (int i = 0; i < res->n; i++)
		if (res->f[i].judged && !res->f[i].agree) {
			snprintf(buf, n, "%s: %s", res->f[i].rule, res->f[i].why);
			return;
		}
}

/* calib_camera.c: the camera session: chart patches measured and corrected for uneven light, models fitted and compared on held-out patches, the ICC profile built and checked through LittleCMS. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/json.h"
#include "calib/calib.h"

const char *const calib_light_names[] = { "none", "chart frame", "flat frame", NULL };

#define MIN_FRAME_SAMPLES 12
#define CLIPPED_MAX 0.02      /* fraction of a patch's px at 254..255 that makes it clipped */
#define KEPT_MIN 0.5          /* fraction of a patch's px that must agree */
#define SWAP_CANDIDATES 8     /* the worst held-out patches searched for a pair of swapped references */
#define FLAT_MAX_SPREAD 3.0   /* brightest over darkest patch area of a flat frame (a lamp's falloff is tens of %) */
#define FLAT_MAX_CHROMA_CODES 40 /* sRGB codes between a flat area's strongest and weakest channel: coloured beyond */

void calib_camera_free(struct calib_camera_result *r)
{
	if (!r)
		return;
	free(r->icc);
	free(r);
}

/* Solves a small dense system by Gaussian elimination with partial pivoting; 0 when singular. */
static int solve(double *a, double *b, int n)
{
	for (int p = 0; p < n; p++) {
		int piv = p;

		for (int q = p + 1; q < n; q++)
			if (fabs(a[q * n + p]) > fabs(a[piv * n + p]))
				piv = q;
		if (fabs(a[piv * n + p]) < 1e-14)
			return 0;
		if (piv != p) {
			for (int k = 0; k < n; k++) {
				double t = a[p * n + k];

				a[p * n + k] = a[piv * n + k];
				a[piv * n + k] = t;
			}
			double t = b[p];

			b[p] = b[piv];
			b[piv] = t;
		}
		for (int q = p + 1; q < n; q++) {
			double f = a[q * n + p] / a[p * n + p];

			for (int k = p; k < n; k++)
				a[q * n + k] -= f * a[p * n + k];
			b[q] -= f * b[p];
		}
	}
	for (int p = n - 1; p >= 0; p--) {
		double s = b[p];

		for (int k = p + 1; k < n; k++)
			s -= a[p * n + k] * b[k];
		b[p] = s / a[p * n + p];
	}
	return 1;
}

static void quad_terms(double u, double v, double t[6])
{
	t[0] = 1;
	t[1] = u;
	t[2] = v;
	t[3] = u * u;
	t[4] = u * v;
	t[5] = v * v;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * The light over the chart as a quadratic in its outline coordinates,
 * fitted to the dark surround's samples; samples off by more than three
 * robust sigmas (a glint, a speck of dust) are dropped and the fit repeated.
 */
static int light_from_frame(const struct calib_chart_view *v, double q[6])
{
	int n = v->n_frame;
	unsigned char *use = malloc((size_t)n);
	double *res = malloc(sizeof(double) * (size_t)n);
	int ok = 0;

	if (!use || !res)
		goto out_free;
	memset(use, 1, (size_t)n);
	for (int pass = 0; pass < 3; pass++) {
		double a[36] = { 0 }, b[6] = { 0 }, mad;
		int m = 0;

		for (int i = 0; i < n; i++) {
			double t[6];

			if (!use[i])
				continue;
			quad_terms(v->frame_uv[i][0], v->frame_uv[i][1], t);
			for (int j = 0; j < 6; j++) {
				b[j] += t[j] * v->frame_luma[i];
				for (int k = 0; k < 6; k++)
					a[j * 6 + k] += t[j] * t[k];
			}
			m++;
		}
		if (m < MIN_FRAME_SAMPLES || !solve(a, b, 6))
			goto out_free;
		memcpy(q, b, sizeof(b));
		for (int i = 0; i < n; i++) {
			double t[6], p = 0;

			quad_terms(v->frame_uv[i][0], v->frame_uv[i][1], t);
			for (int j = 0; j < 6; j++)
				p += q[j] * t[j];
			res[i] = fabs(v->frame_luma[i] - p);
		}
		{
			double *s = malloc(sizeof(double) * (size_t)n);

			if (!s)
				goto out_free;
			memcpy(s, res, sizeof(double) * (size_t)n);
			qsort(s, (size_t)n, sizeof(double), cmp_double);
			mad = 1.4826 * s[n / 2];
			free(s);
		}
		for (int i = 0; i < n; i++)
			use[i] = res[i] <= 3.0 * mad + 1e-6;
	}
	ok = 1;
out_free:
	free(use);
	free(res);
	return ok;
}

/* Median linear luminance of a region of the flat frame; -1 when it is clipped. */
static double flat_luma(const struct img *im, const struct meas_roi *r)
{
	int n = r->w * r->h, k = 0, clipped = 0;
	double *v = malloc(sizeof(double) * (size_t)n), m;

	if (!v)
		return -2;
	for (int y = r->y; y < r->y + r->h; y++)
		for (int x = r->x; x < r->x + r->w; x++) {
			const unsigned char *p = im->px + 3 * ((size_t)y * im->w + x);

			if (p[0] >= 254 || p[1] >= 254 || p[2] >= 254)
				clipped++;
			v[k++] = 0.2126 * meas_srgb_to_linear(p[0] / 255.0) +
				 0.7152 * meas_srgb_to_linear(p[1] / 255.0) +
				 0.0722 * meas_srgb_to_linear(p[2] / 255.0);
		}
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	m = v[n / 2];
	free(v);
	return clipped > n / 50 ? -1 : m;
}

int calib_light_map(const struct img *flat, const struct calib_camera_result *r, int cols,
		    struct vis_light *out, bl_err *err)
{
	double ref = 0.0;
	int rows, n = 0;

	memset(out, 0, sizeof(*out));
	if (cols < 2 || cols > flat->w)
		return bl_fail(err, BL_EINVAL, "light map: %d columns for a %d px wide frame", cols,
			       flat->w);
	for (int i = 0; i < r->n; i++) {
		double l = flat_luma(flat, &r->p[i].roi);

		if (l == -2)
			return bl_fail(err, BL_ENOMEM, "out of memory");
		if (l > 0) {
			ref += l;
			n++;
		}
	}
	if (n < r->n / 2 || ref <= 0.0)
		return bl_fail(err, BL_EINVAL, "the flat frame is clipped or dark where the chart lay");
	ref /= n;
	rows = (int)lround((double)cols * flat->h / flat->w);
	rows = rows < 2 ? 2 : rows;
	out->width = flat->w;
	out->height = flat->h;
	out->cols = cols;
	out->rows = rows;
	out->gain = calloc((size_t)cols * rows, sizeof(*out->gain));
	if (!out->gain)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	for (int gr = 0; gr < rows; gr++)
		for (int gc = 0; gc < cols; gc++) {
			struct meas_roi roi;
			double l, lo, hi;

			roi.x = gc * flat->w / cols;
			roi.y = gr * flat->h / rows;
			roi.w = (gc + 1) * flat->w / cols - roi.x;
			roi.h = (gr + 1) * flat->h / rows - roi.y;
			l = flat_luma(flat, &roi);
			if (l == -2) {
				vis_light_free(out);
				return bl_fail(err, BL_ENOMEM, "out of memory");
			}
			if (l <= 0.0 || l / ref < 0.4 || l / ref > 2.5)
				continue; /* clipped, or not the card (the room beyond the table) */
			/* A cell across the card's edge (or a marker) is not a flat field: its quarters differ. */
			lo = 1e9;
			hi = -1e9;
			for (int q = 0; q < 4; q++) {
				struct meas_roi qr = { roi.x + (q & 1) * (roi.w / 2), roi.y + (q >> 1) * (roi.h / 2),
						       roi.w / 2, roi.h / 2 };
				double v = qr.w > 0 && qr.h > 0 ? flat_luma(flat, &qr) : -1.0;

				lo = fmin(lo, v);
				hi = fmax(hi, v);
			}
			if (lo <= 0.0 || hi - lo > 0.05 * l)
				continue;
			out->gain[gr * cols + gc] = (float)(l / ref);
		}
	return 0;
}

/* The mean sRGB code values (0..255) of a region. */
static void region_mean(const struct img *im, const struct meas_roi *r, double rgb[3])
{
	double n = (double)r->w * r->h;

	rgb[0] = rgb[1] = rgb[2] = 0;
	for (int y = r->y; y < r->y + r->h; y++)
		for (int x = r->x; x < r->x + r->w; x++)
			for (int k = 0; k < 3; k++)
				rgb[k] += im->px[3 * ((size_t)y * im->w + x) + k];
	for (int k = 0; k < 3; k++)
		rgb[k] /= n > 0 ? n : 1;
}

/*
 * A flat frame shows a light, grey card: where the patches lay its light
 * varies smoothly and by tens of percent at most, and nowhere is it
 * coloured. A chart's frame given as --flat (the same file twice, or the
 * wrong one of a pair) varies many times over and is coloured at most of its
 * patches; taken as the light it would blame the lamp for the chart's own
 * colours.
 */
static int flat_is_no_chart(const struct img *flat, const char *fn, const struct calib_camera_result *r,
			    bl_err *err)
{
	double lo = 1e9, hi = 0, rgb[3];
	int coloured = 0;

	for (int i = 0; i < r->n; i++) {
		double l, mx, mn;

		region_mean(flat, &r->p[i].roi, rgb);
		l = 0.2126 * meas_srgb_to_linear(rgb[0] / 255.0) + 0.7152 * meas_srgb_to_linear(rgb[1] / 255.0) +
		    0.0722 * meas_srgb_to_linear(rgb[2] / 255.0);
		mx = fmax(rgb[0], fmax(rgb[1], rgb[2]));
		mn = fmin(rgb[0], fmin(rgb[1], rgb[2]));
		lo = fmin(lo, l);
		hi = fmax(hi, l);
		if (mx - mn > FLAT_MAX_CHROMA_CODES)
			coloured++;
	}
	if (r->n && hi > FLAT_MAX_SPREAD * lo && coloured >= r->n / 4)
		return bl_fail(err, BL_EINVAL, "%s is no flat frame: where the chart's patches lie it shows "
			       "patches, its light ranging %.1f times over (%.3f..%.3f) and %d of %d coloured; "
			       "is it the chart's frame? --flat takes a frame of a light, uniform grey card "
			       "laid where the chart was, taken with the same camera settings", fn,
			       hi / fmax(lo, 1e-6), lo, hi, coloured, r->n);
	return 0;
}

static int correct_light(const struct img *frame, const struct calib_camera_opts *o,
			 struct calib_camera_result *r, bl_err *err)
{
	const struct calib_chart *c = o->chart;
	double sum = 0;
	int rc;

	for (int i = 0; i < r->n; i++)
		r->p[i].light = 1.0;
	r->light_source = CALIB_LIGHT_NONE;
	if (o->light < 0)
		goto out_done;
	if (o->flat) {
		const char *fn = o->flat_name ? o->flat_name : "the flat frame";

		if (o->flat->w != frame->w || o->flat->h != frame->h)
			return bl_fail(err, BL_EINVAL, "%s: %dx%d px, but the chart's frame is %dx%d: "
				       "take both with the same camera settings", fn, o->flat->w,
				       o->flat->h, frame->w, frame->h);
		if ((rc = flat_is_no_chart(o->flat, fn, r, err)))
			return rc;
		for (int i = 0; i < r->n; i++) {
			double l = flat_luma(o->flat, &r->p[i].roi);

			if (l == -2)
				return bl_fail(err, BL_ENOMEM, "out of memory");
			if (l < 0)
				return bl_fail(err, BL_EINVAL, "%s: clipped to white where patch '%s' "
					       "lies: lower the exposure", fn, c->patch[i]);
			if (l < 0.02)
				return bl_fail(err, BL_EINVAL, "%s: dark where patch '%s' lies "
					       "(luminance %.3f): is it a frame of a light, uniform "
					       "card where the chart was?", fn, c->patch[i], l);
			r->p[i].light = l;
			sum += l;
		}
		r->light_source = CALIB_LIGHT_FLAT;
	} else if (c->dark_frame && r->view.n_frame >= MIN_FRAME_SAMPLES) {
		double q[6];

		if (!light_from_frame(&r->view, q))
			goto out_done;
		for (int i = 0; i < r->n; i++) {
			double t[6], l = 0;

			quad_terms(r->view.centre_uv[i][0], r->view.centre_uv[i][1], t);
			for (int j = 0; j < 6; j++)
				l += q[j] * t[j];
			if (!(l > 0))
				return bl_fail(err, BL_EINVAL, "%s: the light measured on the chart's "
					       "frame makes no sense near patch '%s' (is the frame "
					       "uniformly dark?); --no-light-correction skips it",
					       o->frame_name, c->patch[i]);
			r->p[i].light = l;
			sum += l;
		}
		r->light_source = CALIB_LIGHT_FRAME;
	} else {
		goto out_done;
	}
	for (int i = 0; i < r->n; i++)
		r->p[i].light /= sum / r->n;
out_done:
	r->light_min = 1e9;
	r->light_max = 0;
	for (int i = 0; i < r->n; i++) {
		r->light_min = fmin(r->light_min, r->p[i].light);
		r->light_max = fmax(r->light_max, r->p[i].light);
	}
	if (r->light_max > 2.0 * r->light_min)
		return bl_fail(err, BL_EINVAL, "%s: the light on the chart varies %.1f-fold from "
			       "patch to patch: light it evenly", o->frame_name,
			       r->light_max / r->light_min);
	return 0;
}

/* Every clipped patch named at once (the exposure to lower is the chart's, not one patch's). */
static int clipped_patches(const struct calib_camera_opts *o, const struct meas_swatch *s, int n,
			   bl_err *err)
{
	char names[512] = "";
	int k = 0, first = -1;

	for (int i = 0; i < n; i++)
		if (s[i].saturated || s[i].clipped > CLIPPED_MAX * s[i].total) {
			size_t used = strlen(names);

			if (first < 0)
				first = i;
			snprintf(names + used, sizeof(names) - used, "%s'%s' (%ld of %ld px)", k ? ", " : "",
				 o->chart->patch[i], s[i].at_top, s[i].total);
			k++;
		}
	if (first < 0)
		return 0;
	return bl_fail(err, BL_EINVAL, "%s: %d of the chart's %d patches %s clipped, a channel at 254 "
		       "or 255 (overexposed, or a glare): %s: lower the exposure or move the light",
		       o->frame_name, k, n, k == 1 ? "is" : "are", names);
}

static int measure_patches(const struct img *frame, const struct calib_camera_opts *o,
			   struct calib_camera_result *r, bl_err *err)
{
	const struct calib_chart *c = o->chart;
	struct meas_profile *srgb;
	struct meas_swatch *sw = malloc(sizeof(*sw) * (size_t)c->n);
	int rc = sw ? meas_profile_open(NULL, &srgb, err) : bl_fail(err, BL_ENOMEM, "out of memory");

	if (rc) {
		free(sw);
		return rc;
	}
	for (int i = 0; i < c->n; i++) {
		char nm[600];

		snprintf(nm, sizeof(nm), "%s: patch '%s'", o->frame_name, c->patch[i]);
		if ((rc = meas_swatch(frame, nm, &r->view.roi[i], srgb, &sw[i], err)))
			goto out_close;
	}
	if ((rc = clipped_patches(o, sw, c->n, err)))
		goto out_close;
	for (int i = 0; i < c->n; i++) {
		struct calib_patch *p = &r->p[i];
		const struct meas_swatch *s = &sw[i];

		snprintf(p->name, sizeof(p->name), "%s", c->patch[i]);
		memcpy(p->ref_lab, c->lab[i], sizeof(p->ref_lab));
		p->roi = r->view.roi[i];
		if (s->pixels < KEPT_MIN * s->total) {
			rc = bl_fail(err, BL_EINVAL, "%s: patch '%s' is not uniform: only %ld of its "
				     "%ld px agree (partly covered, dirty, or a shadow?)",
				     o->frame_name, c->patch[i], s->pixels, s->total);
			goto out_close;
		}
		if (s->rgb_linear[0] + s->rgb_linear[1] + s->rgb_linear[2] < 3e-4) {
			rc = bl_fail(err, BL_EINVAL, "%s: patch '%s' is black (no light?)",
				     o->frame_name, c->patch[i]);
			goto out_close;
		}
		p->pixels = s->pixels;
		memcpy(p->rgb_linear, s->rgb_linear, sizeof(p->rgb_linear));
	}
	r->n = c->n;
out_close:
	meas_profile_close(srgb);
	free(sw);
	return rc;
}

/* Figures of one kind of difference over the patches (in_range: those the camera did not clip). */
static void figures(const struct calib_camera_result *r, size_t off, int in_range,
		    struct calib_figures *f)
{
	double de[CALIB_MAX_PATCHES];
	char names[CALIB_MAX_PATCHES][CALIB_NAME_MAX];

	for (int i = 0; i < r->n; i++) {
		de[i] = *(const double *)((const char *)&r->p[i] + off);
		if (in_range && r->p[i].at_limit)
			de[i] = -1;
		memcpy(names[i], r->p[i].name, CALIB_NAME_MAX);
	}
	calib_figures_of(de, (const char (*)[CALIB_NAME_MAX])names, r->n, f);
}

/* Fits kind with every patch left out in turn: held[i] gets patch i's prediction. */
static int leave_one_out(int kind, const struct calib_camera_result *r, double (*v)[3],
			 double (*ref)[3], double (*held)[3], bl_err *err)
{
	unsigned char use[CALIB_MAX_PATCHES];

	memset(use, 1, sizeof(use));
	for (int i = 0; i < r->n; i++) {
		struct calib_cam_model m;
		int rc;

		use[i] = 0;
		rc = calib_model_fit(kind, r->n, (const double (*)[3])v, (const double (*)[3])ref,
				     use, &m, err);
		use[i] = 1;
		if (rc)
			return rc;
		calib_model_lab(&m, v[i], held[i]);
	}
	return 0;
}

/* Each patch's camera values (v, in sRGB encoding, light divided out), its reference, and sRGB's reading. */
static void patch_values(struct calib_camera_result *r, struct meas_profile *srgb, double (*v)[3],
			 double (*ref)[3])
{
	for (int i = 0; i < r->n; i++) {
		struct calib_patch *p = &r->p[i];
		color_lab lab;

		for (int k = 0; k < 3; k++) {
			p->v[k] = meas_linear_to_srgb(fmin(1.0, p->rgb_linear[k] / p->light));
			/* Within a code of the ends: the camera clipped this channel. */
			if (p->rgb_linear[k] < meas_srgb_to_linear(1.0 / 255) ||
			    p->rgb_linear[k] > meas_srgb_to_linear(254.0 / 255))
				p->at_limit = 1;
		}
		memcpy(v[i], p->v, sizeof(v[i]));
		memcpy(ref[i], p->ref_lab, sizeof(ref[i]));
		meas_profile_lab(srgb, p->v, &lab);
		p->srgb_lab[0] = lab.L;
		p->srgb_lab[1] = lab.a;
		p->srgb_lab[2] = lab.b;
		p->srgb_de00 = calib_de00(p->srgb_lab, p->ref_lab);
	}
}

/*
 * Every model (or the one asked for), fitted on all patches and with each
 * left out in turn; a richer model is kept only when it predicts patches it
 * never saw clearly better. held[k] gets model k's left-out predictions.
 */
static int choose_model(const struct calib_camera_opts *o, struct calib_camera_result *r, double (*v)[3],
			double (*ref)[3], double (*held)[CALIB_MAX_PATCHES][3], bl_err *err)
{
	r->model = -1;
	for (int k = 0; k < CALIB_MODEL_COUNT; k++) {
		struct calib_cam_model m;
		double fd[CALIB_MAX_PATCHES], hd[CALIB_MAX_PATCHES];
		bl_err e2 = { 0 };

		if (o->model >= 0 && o->model != k)
			continue;
		if (calib_model_fit(k, r->n, (const double (*)[3])v, (const double (*)[3])ref, NULL, &m, &e2) ||
		    leave_one_out(k, r, v, ref, held[k], &e2)) {
			if (e2.code == BL_ENOMEM)
				return bl_fail(err, BL_ENOMEM, "out of memory");
			if (o->model >= 0)
				return bl_fail(err, BL_EINVAL, "%s: %s", o->frame_name, e2.msg);
			continue;
		}
		for (int i = 0; i < r->n; i++) {
			double lab[3];

			calib_model_lab(&m, v[i], lab);
			fd[i] = calib_de00(lab, ref[i]);
			hd[i] = calib_de00(held[k][i], ref[i]);
		}
		calib_figures_of(fd, NULL, r->n, &r->cand_fit[k]);
		calib_figures_of(hd, NULL, r->n, &r->cand_held[k]);
		r->cand_ok[k] = 1;
		if (r->model < 0 ||
		    r->cand_held[k].mean_de00 < r->cand_held[r->model].mean_de00 - CALIB_MODEL_MARGIN_DE00) {
			r->model = k;
			r->fitted = m;
		}
	}
	if (r->model < 0)
		return bl_fail(err, BL_EINVAL, "%s: no camera model could be fitted to the chart's %d patches",
			       o->frame_name, r->n);
	return 0;
}

/*
 * Two references exchanged (two rows of a chart file, or a chart whose two
 * patches trade places): fitted without both, each reads as the other's
 * reference and far from its own. Of the worst predicted patches, the pair
 * that fits that best, when it fits within half of max_patch; -1 in *pi when
 * none does. d gets each one's difference from the other's reference, then
 * from its own.
 */
static void swapped_pair(const struct calib_camera_result *r, double (*v)[3], double (*ref)[3], double max_patch,
			 int *pi, int *pj, double d[4])
{
	unsigned char use[CALIB_MAX_PATCHES];
	int cand[CALIB_MAX_PATCHES], nc = r->n < SWAP_CANDIDATES ? r->n : SWAP_CANDIDATES;
	double best = max_patch / 2;

	*pi = *pj = -1;
	/* The worst held-out patches, worst first (a selection: the first nc). */
	for (int i = 0; i < r->n; i++)
		cand[i] = i;
	for (int x = 0; x < nc; x++)
		for (int y = x + 1; y < r->n; y++)
			if (r->p[cand[y]].held_de00 > r->p[cand[x]].held_de00) {
				int t = cand[x];

				cand[x] = cand[y];
				cand[y] = t;
			}
	memset(use, 1, sizeof(use));
	for (int x = 0; x < nc; x++)
		for (int y = x + 1; y < nc; y++) {
			int a = cand[x], b = cand[y];
			struct calib_cam_model m;
			double la[3], lb[3], sa, sb, oa, ob;
			bl_err e2 = { 0 };
			int rc;

			use[a] = use[b] = 0;
			rc = calib_model_fit(r->model, r->n, (const double (*)[3])v, (const double (*)[3])ref, use, &m,
					     &e2);
			use[a] = use[b] = 1;
			if (rc)
				continue;
			calib_model_lab(&m, v[a], la);
			calib_model_lab(&m, v[b], lb);
			sa = calib_de00(la, ref[b]);
			sb = calib_de00(lb, ref[a]);
			oa = calib_de00(la, ref[a]);
			ob = calib_de00(lb, ref[b]);
			if (fmax(sa, sb) < best && fmax(sa, sb) < 0.5 * fmin(oa, ob)) {
				/* In the chart's order. */
				int lo = a < b;

				best = fmax(sa, sb);
				*pi = lo ? a : b;
				*pj = lo ? b : a;
				d[0] = lo ? sa : sb;
				d[1] = lo ? sb : sa;
				d[2] = lo ? oa : ob;
				d[3] = lo ? ob : oa;
			}
		}
}

/* A patch its neighbours cannot predict (above max_patch) is not what the chart says it is. */
static int held_out_check(const struct calib_camera_opts *o, struct calib_camera_result *r, double (*v)[3],
			  double (*ref)[3], double (*held)[3], double max_patch, bl_err *err)
{
	int a, b;
	double d[4];

	for (int i = 0; i < r->n; i++) {
		struct calib_patch *p = &r->p[i];

		memcpy(p->held_lab, held[i], sizeof(p->held_lab));
		p->held_de00 = calib_de00(p->held_lab, p->ref_lab);
	}
	for (int i = 0; i < r->n; i++)
		if (r->p[i].held_de00 > max_patch) {
			swapped_pair(r, v, ref, max_patch, &a, &b, d);
			if (a >= 0)
				return bl_fail(err, BL_EINVAL, "%s: patches '%s' and '%s' read as each other's "
					       "references (%.1f and %.1f CIEDE2000 from the other's, %.1f and %.1f "
					       "from their own, predicted from the other patches): their references "
					       "are swapped in chart '%s', or the two patches are", o->frame_name,
					       r->p[a].name, r->p[b].name, d[0], d[1], d[2], d[3], o->chart->name);
			break;
		}
	for (int i = 0; i < r->n; i++)
		if (r->p[i].held_de00 > max_patch)
			return bl_fail(err, BL_EINVAL, "%s: patch '%s' reads %.1f CIEDE2000 away from its "
				       "reference when predicted from the other patches (limit %.0f): "
				       "covered, dirty, faded, in a shadow, or another chart?",
				       o->frame_name, r->p[i].name, r->p[i].held_de00, max_patch);
	return 0;
}

/* The profile of the chosen model, and the fit's figures as they come through it, as `measure` reads it. */
static int build_profile(const struct calib_camera_opts *o, struct calib_camera_result *r, bl_err *err)
{
	struct meas_profile *prof = NULL;
	char desc[256], *targ = calib_ti3_text(r, o->chart);
	int rc;

	snprintf(desc, sizeof(desc), "brushloop camera profile (%s model, chart %s)",
		 calib_model_names[r->model], o->chart->name);
	if (!targ)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	rc = calib_icc_build(&r->fitted, o->icc_version ? o->icc_version : CALIB_ICC_VERSION, desc, targ,
			     &r->icc, &r->icc_len, err);
	free(targ);
	if (rc ||
	    (rc = meas_profile_open_mem(r->icc, r->icc_len, "the new profile", &prof, err)))
		return rc;
	for (int i = 0; i < r->n; i++) {
		struct calib_patch *p = &r->p[i];
		color_lab lab;

		meas_profile_lab(prof, p->v, &lab);
		p->fit_lab[0] = lab.L;
		p->fit_lab[1] = lab.a;
		p->fit_lab[2] = lab.b;
		p->fit_de00 = calib_de00(p->fit_lab, p->ref_lab);
	}
	figures(r, offsetof(struct calib_patch, fit_de00), 0, &r->fit);
	figures(r, offsetof(struct calib_patch, held_de00), 0, &r->held_out);
	figures(r, offsetof(struct calib_patch, srgb_de00), 0, &r->srgb);
	figures(r, offsetof(struct calib_patch, held_de00), 1, &r->held_in_range);
	meas_profile_close(prof);
	return 0;
}

int calib_camera_run(const struct img *frame, const struct calib_camera_opts *o,
		     struct calib_camera_result **out, bl_err *err)
{
	struct calib_camera_result *r = calloc(1, sizeof(*r));
	struct meas_profile *srgb = NULL;
	double (*v)[3] = malloc(sizeof(*v) * CALIB_MAX_PATCHES);
	double (*ref)[3] = malloc(sizeof(*ref) * CALIB_MAX_PATCHES);
	double (*held)[CALIB_MAX_PATCHES][3] = malloc(sizeof(*held) * CALIB_MODEL_COUNT);
	double max_patch = o->max_patch_de00 > 0 ? o->max_patch_de00 : 10.0;
	int rc;

	*out = NULL;
	if (!r || !v || !ref || !held) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_free;
	}
	if ((rc = calib_chart_find(frame, o->frame_name, o->chart, o->corners_px, &r->view, err)) ||
	    (rc = measure_patches(frame, o, r, err)) || (rc = calib_camera_check(frame, o->frame_name, o->chart, r, err)) ||
	    (rc = correct_light(frame, o, r, err)) ||
	    (rc = meas_profile_open(NULL, &srgb, err)))
		goto out_free;
	patch_values(r, srgb, v, ref);
	if ((rc = choose_model(o, r, v, ref, held, err)) ||
	    (rc = held_out_check(o, r, v, ref, held[r->model], max_patch, err)) ||
	    (rc = build_profile(o, r, err)))
		goto out_free;
	*out = r;
	r = NULL;
out_free:
	meas_profile_close(srgb);
	free(v);
	free(ref);
	free(held);
	calib_camera_free(r);
	return rc;
}

/*
 * The truth's patch of p: the one of its name, else the one whose centre
 * lies in p's region of the frame. A chart read from CGATS names its
 * patches by grid place (A01), the simulator by colour ("dark skin"): the
 * place is what both frames share.
 */
static const struct calib_truth_patch *truth_of(const struct calib_patch *p, const struct calib_truth_patch *t,
						int n)
{
	for (int k = 0; k < n; k++)
		if (strcmp(t[k].name, p->name) == 0)
			return &t[k];
	for (int k = 0; k < n; k++) {
		int cx = t[k].roi.x + t[k].roi.w / 2, cy = t[k].roi.y + t[k].roi.h / 2;

		if (cx >= p->roi.x && cx < p->roi.x + p->roi.w && cy >= p->roi.y && cy < p->roi.y + p->roi.h)
			return &t[k];
	}
	return NULL;
}

int calib_camera_truth(struct calib_camera_result *r, const struct calib_truth_patch *t, int n,
		       const char *truth_path, bl_err *err)
{
	int found = 0;

	for (int i = 0; i < r->n; i++) {
		struct calib_patch *p = &r->p[i];
		const struct calib_truth_patch *tp = truth_of(p, t, n);

		p->has_truth = tp != NULL;
		if (tp)
			memcpy(p->truth_lab, tp->lab, sizeof(p->truth_lab));
		if (!p->has_truth) {
			p->truth_fit_de00 = p->truth_held_de00 = p->truth_srgb_de00 = -1;
			continue;
		}
		found++;
		p->truth_fit_de00 = calib_de00(p->fit_lab, p->truth_lab);
		p->truth_held_de00 = calib_de00(p->held_lab, p->truth_lab);
		p->truth_srgb_de00 = calib_de00(p->srgb_lab, p->truth_lab);
	}
	if (!found)
		return bl_fail(err, BL_EINVAL, "%s: none of the chart's patches is named there, nor lies where "
			       "one of its patches does", truth_path);
	r->has_truth = 1;
	figures(r, offsetof(struct calib_patch, truth_fit_de00), 0, &r->truth_fit);
	figures(r, offsetof(struct calib_patch, truth_held_de00), 0, &r->truth_held_out);
	figures(r, offsetof(struct calib_patch, truth_srgb_de00), 0, &r->truth_srgb);
	figures(r, offsetof(struct calib_patch, truth_held_de00), 1, &r->truth_held_in_range);
	return 0;
}

static cJSON *fig_pair(const struct calib_figures *fit, const struct calib_figures *held,
		       const struct calib_figures *srgb, const struct calib_figures *in_range)
{
	cJSON *j = cJSON_CreateObject();

	if (!j)
		return NULL;
	cJSON_AddItemToObject(j, "fit", calib_figures_json(fit));
	cJSON_AddItemToObject(j, "held_out", calib_figures_json(held));
	cJSON_AddItemToObject(j, "srgb", calib_figures_json(srgb));
	cJSON_AddItemToObject(j, "held_out_in_range", calib_figures_json(in_range));
	return j;
}

cJSON *calib_camera_json(const struct calib_camera_result *r)
{
	cJSON *j = cJSON_CreateObject(), *arr, *l;

	if (!j)
		return NULL;
	cJSON_AddStringToObject(j, "model", calib_model_names[r->model]);
	cJSON_AddItemToObject(j, "fit", calib_figures_json(&r->fit));
	cJSON_AddItemToObject(j, "held_out", calib_figures_json(&r->held_out));
	cJSON_AddItemToObject(j, "srgb", calib_figures_json(&r->srgb));
	cJSON_AddItemToObject(j, "held_out_in_range", calib_figures_json(&r->held_in_range));
	if (r->has_truth)
		cJSON_AddItemToObject(j, "truth", fig_pair(&r->truth_fit, &r->truth_held_out,
							   &r->truth_srgb, &r->truth_held_in_range));
	arr = cJSON_AddArrayToObject(j, "candidates");
	for (int k = 0; arr && k < CALIB_MODEL_COUNT; k++) {
		cJSON *c;

		if (!r->cand_ok[k])
			continue;
		c = cJSON_CreateObject();
		if (!c)
			break;
		cJSON_AddStringToObject(c, "model", calib_model_names[k]);
		cJSON_AddItemToObject(c, "fit", calib_figures_json(&r->cand_fit[k]));
		cJSON_AddItemToObject(c, "held_out", calib_figures_json(&r->cand_held[k]));
		cJSON_AddBoolToObject(c, "kept", k == r->model);
		cJSON_AddItemToArray(arr, c);
	}
	l = cJSON_AddObjectToObject(j, "light");
	if (l) {
		cJSON_AddStringToObject(l, "source", calib_light_names[r->light_source]);
		cJSON_AddNumberToObject(l, "min", r->light_min);
		cJSON_AddNumberToObject(l, "max", r->light_max);
		cJSON_AddNumberToObject(l, "frame_samples", r->view.n_frame);
	}
	l = cJSON_AddObjectToObject(j, "camera");
	if (l) {
		cJSON_AddStringToObject(l, "white_patch", r->p[r->white_patch].name);
		cJSON_AddNumberToObject(l, "exposure_stops", r->exposure_stops);
		cJSON_AddNumberToObject(l, "blur_px", r->blur_px);
		cJSON_AddNumberToObject(l, "edges", r->edges);
	}
	json_add_vec(j, "chart_corners_px", r->view.corners_px, 8);
	cJSON_AddBoolToObject(j, "corners_given", r->view.given);
	cJSON_AddNumberToObject(j, "gamma_r", r->fitted.gamma[0]);
	cJSON_AddNumberToObject(j, "gamma_g", r->fitted.gamma[1]);
	cJSON_AddNumberToObject(j, "gamma_b", r->fitted.gamma[2]);
	arr = cJSON_AddArrayToObject(j, "patches");
	for (int i = 0; arr && i < r->n; i++) {
		const struct calib_patch *p = &r->p[i];
		cJSON *pj = cJSON_CreateObject();
		const int roi[4] = { p->roi.x, p->roi.y, p->roi.w, p->roi.h };

		if (!pj)
			break;
		cJSON_AddStringToObject(pj, "name", p->name);
		cJSON_AddItemToObject(pj, "roi", cJSON_CreateIntArray(roi, 4));
		cJSON_AddNumberToObject(pj, "pixels", (double)p->pixels);
		json_add_vec(pj, "rgb_linear", p->rgb_linear, 3);
		cJSON_AddNumberToObject(pj, "light", p->light);
		json_add_vec(pj, "code", p->v, 3);
		json_add_vec(pj, "ref_lab", p->ref_lab, 3);
		json_add_vec(pj, "fit_lab", p->fit_lab, 3);
		cJSON_AddNumberToObject(pj, "fit_de00", p->fit_de00);
		json_add_vec(pj, "held_lab", p->held_lab, 3);
		cJSON_AddNumberToObject(pj, "held_de00", p->held_de00);
		json_add_vec(pj, "srgb_lab", p->srgb_lab, 3);
		cJSON_AddNumberToObject(pj, "srgb_de00", p->srgb_de00);
		cJSON_AddBoolToObject(pj, "at_limit", p->at_limit);
		if (p->has_truth) {
			json_add_vec(pj, "truth_lab", p->truth_lab, 3);
			cJSON_AddNumberToObject(pj, "truth_fit_de00", p->truth_fit_de00);
			cJSON_AddNumberToObject(pj, "truth_held_de00", p->truth_held_de00);
			cJSON_AddNumberToObject(pj, "truth_srgb_de00", p->truth_srgb_de00);
		}
		cJSON_AddItemToArray(arr, pj);
	}
	return j;
}

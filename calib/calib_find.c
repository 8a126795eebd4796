/* calib_find.c: finding a colour chart in a camera frame: the frame as linear light, the search over its dark regions and the four turns, and the view of the best (outline: calib_find_outline.c; grid and colours: calib_find_grid.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calib/calib.h"
#include "calib/calib_find_int.h"

#define MAX_CANDIDATES 8
#define MAX_MISFIT 25.0     /* CIE76 after an affine camera fit: beyond it, not this chart */

static float lin_lut[256];

static void lut_init(void)
{
	static int done;

	if (done)
		return;
	for (int i = 0; i < 256; i++)
		lin_lut[i] = (float)meas_srgb_to_linear(i / 255.0);
	done = 1;
}

static int lum_from_img(const struct img *im, struct lum_img *l, bl_err *err)
{
	size_t n = (size_t)im->w * im->h;

	lut_init();
	l->w = im->w;
	l->h = im->h;
	l->y = malloc(n * sizeof(float));
	l->rgb = malloc(3 * n * sizeof(float));
	if (!l->y || !l->rgb) {
		free(l->y);
		free(l->rgb);
		return bl_fail(err, BL_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		float r = lin_lut[im->px[3 * i]], g = lin_lut[im->px[3 * i + 1]],
		      b = lin_lut[im->px[3 * i + 2]];

		l->rgb[3 * i] = r;
		l->rgb[3 * i + 1] = g;
		l->rgb[3 * i + 2] = b;
		l->y[i] = 0.2126f * r + 0.7152f * g + 0.0722f * b;
	}
	return 0;
}

static void lum_free(struct lum_img *l)
{
	free(l->y);
	free(l->rgb);
}

int calib_find_cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

/* ---- the search ---- */

static void rotate_corners(const double q[8], int r, double out[8])
{
	for (int i = 0; i < 4; i++) {
		out[2 * i] = q[2 * ((i + r) % 4)];
		out[2 * i + 1] = q[2 * ((i + r) % 4) + 1];
	}
}

/* The chart at the corners the operator gave: its grid and colours checked, then read. */
static int chart_at_corners(const struct lum_img *l, const char *name, const struct calib_chart *c,
			    const double *corners_px, struct calib_chart_view *v, bl_err *err)
{
	struct grid g;
	double mis;
	int rc = calib_find_read_grid(l, corners_px, c->cols, c->rows, &g, err);

	if (rc < 0)
		return rc;
	if (rc > 0 || !calib_find_grid_ok(&g))
		return bl_fail(err, BL_EINVAL, "%s: the corners given do not frame a %d x %d grid "
			       "of patches with dark gaps between them (gaps %.0f%% dark): "
			       "check their order (clockwise from the chart's top left)",
			       name, c->cols, c->rows, rc > 0 ? 0.0 : 100 * g.gap_dark);
	if ((mis = calib_find_colour_misfit(l, &g, c)) > MAX_MISFIT)
		return bl_fail(err, BL_EINVAL, "%s: the corners given frame a %d x %d grid whose "
			       "colours are not those of chart %s (mean difference %.0f after "
			       "an affine fit): check their order (clockwise from the chart's "
			       "top left as it lies upright)", name, c->cols, c->rows, c->name, mis);
	memcpy(v->corners_px, corners_px, sizeof(v->corners_px));
	v->given = 1;
	return calib_find_fill_view(l, &g, c, name, v, err);
}

/* The best chart found: its grid, corners and colour misfit (1e9 none), and what was passed over. */
struct chart_best {
	double misfit, second, corners[8];
	struct grid grid;
	int rejected_shape;
};

/* Region k's four turns, each read as a grid and matched against the chart's colours. */
static int chart_try_region(const struct lum_img *l, const int *labels, const struct comp *k,
			    const struct calib_chart *c, struct chart_best *b, bl_err *err)
{
	double q[8], fill;

	if (!calib_find_region_quad(labels, l->w, l->h, k, q, &fill) || fill < 0.85) {
		b->rejected_shape++;
		return 0;
	}
	for (int r = 0; r < 4; r++) {
		struct grid g;
		double cq[8], mis;
		int rc;

		rotate_corners(q, r, cq);
		rc = calib_find_read_grid(l, cq, c->cols, c->rows, &g, err);
		if (rc < 0)
			return rc;
		if (rc > 0 || !calib_find_grid_ok(&g))
			continue;
		mis = calib_find_colour_misfit(l, &g, c);
		if (mis < b->misfit) {
			b->second = b->misfit;
			b->misfit = mis;
			b->grid = g;
			memcpy(b->corners, cq, sizeof(cq));
		} else if (mis < b->second) {
			b->second = mis;
		}
	}
	return 0;
}

/* No chart found among nc dark regions: why, as far as the frame tells (overexposure named). */
static int chart_not_found(const struct img *frame, const char *name, const struct calib_chart *c, int nc,
			   int rejected_shape, bl_err *err)
{
	size_t n = (size_t)frame->w * frame->h, nclip = 0;
	char clip[160] = "";

	for (size_t i = 0; i < n; i++)
		nclip += frame->px[3 * i] >= 254 || frame->px[3 * i + 1] >= 254 || frame->px[3 * i + 2] >= 254;
	if (nclip > n / 20)
		snprintf(clip, sizeof(clip), "; %.0f%% of the frame is clipped to white: "
			 "overexposed, lower the exposure", 100.0 * (double)nclip / (double)n);
	if (nc == 0)
		return bl_fail(err, BL_EINVAL, "%s: no colour chart found: nothing dark enough to "
			       "be its frame (lay the chart on a light surface, check the "
			       "exposure, or give its corners with --corners)%s", name, clip);
	return bl_fail(err, BL_EINVAL, "%s: no colour chart found: %d dark region%s "
		       "examined, %d not four-sided, none showing a %d x %d grid of "
		       "patches (is the chart partly covered or out of the frame? "
		       "--corners gives its corners)%s", name, nc, nc == 1 ? "" : "s",
		       rejected_shape, c->cols, c->rows, clip);
}

int calib_chart_find(const struct img *frame, const char *name, const struct calib_chart *c,
		     const double *corners_px, struct calib_chart_view *v, bl_err *err)
{
	struct lum_img l;
	struct comp comps[MAX_CANDIDATES];
	struct chart_best b = { .misfit = 1e9, .second = 1e9 };
	int *labels = NULL, nc = 0, rc;
	float *sorted = NULL, thr;
	size_t n = (size_t)frame->w * frame->h;

	memset(v, 0, sizeof(*v));
	if ((rc = lum_from_img(frame, &l, err)))
		return rc;
	if (corners_px) {
		rc = chart_at_corners(&l, name, c, corners_px, v, err);
		goto out_free;
	}
	labels = malloc(n * sizeof(int));
	sorted = malloc(n * sizeof(float));
	if (!labels || !sorted) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_free;
	}
	memcpy(sorted, l.y, n * sizeof(float));
	qsort(sorted, n, sizeof(float), calib_find_cmp_float);
	/* Dark relative to the light surfaces: the chart's frame reflects a few percent. */
	thr = 0.10f * sorted[n * 95 / 100];
	nc = calib_find_dark_regions(&l, thr, (long)fmax(400.0, 0.002 * (double)n), labels, comps, MAX_CANDIDATES, err);
	if (nc < 0) {
		rc = nc;
		goto out_free;
	}
	for (int k = 0; k < nc && b.misfit >= 1e9; k++)
		if ((rc = chart_try_region(&l, labels, &comps[k], c, &b, err)))
			goto out_free;
	v->candidates = nc;
	if (b.misfit >= 1e9) {
		rc = chart_not_found(frame, name, c, nc, b.rejected_shape, err);
		goto out_free;
	}
	if (b.misfit > MAX_MISFIT) {
		rc = bl_fail(err, BL_EINVAL, "%s: a %d x %d grid was found but its colours are not "
			     "those of chart %s (mean difference %.0f even after an affine fit): "
			     "another chart, or patches covered?", name, c->cols, c->rows, c->name,
			     b.misfit);
		goto out_free;
	}
	memcpy(v->corners_px, b.corners, sizeof(v->corners_px));
	rc = calib_find_fill_view(&l, &b.grid, c, name, v, err);
out_free:
	free(labels);
	free(sorted);
	lum_free(&l);
	return rc;
}

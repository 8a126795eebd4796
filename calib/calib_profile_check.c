/* calib_profile_check.c: an existing camera profile checked on a fresh chart frame: each patch's error through it, and the picture of those errors. */
#include <math.h>
#include <string.h>

#include "calib/calib.h"
#include "color/color.h"
#include "vision/measure.h"

void calib_profile_check(const struct calib_camera_result *r, const struct meas_profile *prof,
			 struct calib_profile_check *c)
{
	char names[CALIB_MAX_PATCHES][CALIB_NAME_MAX];

	for (int i = 0; i < r->n; i++) {
		color_lab l;

		/* The code values as the session fits them (light-corrected), as a profile is made of them. */
		meas_profile_lab(prof, r->p[i].v, &l);
		c->lab[i][0] = l.L;
		c->lab[i][1] = l.a;
		c->lab[i][2] = l.b;
		c->de00[i] = calib_de00(c->lab[i], r->p[i].ref_lab);
		memcpy(names[i], r->p[i].name, CALIB_NAME_MAX);
	}
	calib_figures_of(c->de00, (const char (*)[CALIB_NAME_MAX])names, r->n, &c->figures);
}

/* Lab to 8-bit sRGB, clipped: the colour to paint a half patch with. */
static void srgb8(const double lab[3], unsigned char out[3])
{
	const color_lab l = { lab[0], lab[1], lab[2] };
	color_rgb rgb = { 0, 0, 0 };
	int in_gamut;
	bl_err e = { 0 };

	color_lab_to_srgb(&l, &rgb, &in_gamut, &e);
	out[0] = (unsigned char)lround(fmin(fmax(rgb.r, 0), 255));
	out[1] = (unsigned char)lround(fmin(fmax(rgb.g, 0), 255));
	out[2] = (unsigned char)lround(fmin(fmax(rgb.b, 0), 255));
}

static void fill(struct img *im, int x0, int y0, int x1, int y1, const unsigned char rgb[3])
{
	x0 = x0 < 0 ? 0 : x0;
	y0 = y0 < 0 ? 0 : y0;
	x1 = x1 > im->w ? im->w : x1;
	y1 = y1 > im->h ? im->h : y1;
	for (int y = y0; y < y1; y++)
		for (int x = x0; x < x1; x++)
			memcpy(&im->px[3 * ((size_t)y * im->w + x)], rgb, 3);
}

int calib_profile_check_picture(const struct img *frame, const struct calib_camera_result *r,
				const struct calib_profile_check *c, double threshold, struct img *out,
				bl_err *err)
{
	static const unsigned char green[3] = { 0, 200, 0 }, amber[3] = { 255, 170, 0 }, red[3] = { 230, 0, 0 };
	int rc = img_alloc(out, frame->w, frame->h, err);

	if (rc)
		return rc;
	/* The frame dimmed to half, so the patches drawn over it stand out. */
	for (size_t k = 0; k < 3 * (size_t)frame->w * frame->h; k++)
		out->px[k] = (unsigned char)(frame->px[k] / 2);
	for (int i = 0; i < r->n; i++) {
		const struct meas_roi *b = &r->p[i].roi;
		const double de = c->de00[i];
		/* The border: within the threshold, within twice it, beyond; its width grows with the error. */
		const unsigned char *edge = de <= threshold ? green : de <= 2 * threshold ? amber : red;
		int t = (int)fmin(fmax(2.0, de * b->w / 24.0), b->w / 4.0), mid = b->x + b->w / 2;
		unsigned char ref[3], got[3];

		srgb8(r->p[i].ref_lab, ref);
		srgb8(c->lab[i], got);
		fill(out, b->x - t, b->y - t, b->x + b->w + t, b->y + b->h + t, edge);
		/* Left half what the chart is, right half what the profile reads. */
		fill(out, b->x, b->y, mid, b->y + b->h, ref);
		fill(out, mid, b->y, b->x + b->w, b->y + b->h, got);
	}
	return 0;
}

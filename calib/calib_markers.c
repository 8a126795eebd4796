/* calib_markers.c: sub-pixel corners of vision's finder markers for calibration: every edge of their three squares located along profiles and fitted as a line. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calib/calib.h"
#include "calib/calib_markers.h"
#include "cv/cv.h"

#define PROFILE_N 19          /* samples across an edge */
#define PROFILE_HALF 0.45     /* of a band (S/6) each side of the edge: inside the neighbouring bands */
#define ALONG_N 9             /* profiles along a side */
#define ALONG_SPAN 0.75       /* of the half-side: away from the corners */

static void apply(const double H[9], double x, double y, double *u, double *v)
{
	double w = H[6] * x + H[7] * y + H[8];

	*u = (H[0] * x + H[1] * y + H[2]) / w;
	*v = (H[3] * x + H[4] * y + H[5]) / w;
}

static double sample(const struct calib_lumplane *l, double x, double y)
{
	int x0, y0;
	double fx, fy;
	const float *p = l->px;

	if (x < 0)
		x = 0;
	if (y < 0)
		y = 0;
	if (x > l->w - 1.001)
		x = l->w - 1.001;
	if (y > l->h - 1.001)
		y = l->h - 1.001;
	x0 = (int)x;
	y0 = (int)y;
	fx = x - x0;
	fy = y - y0;
	return (1 - fy) * ((1 - fx) * p[(size_t)y0 * l->w + x0] + fx * p[(size_t)y0 * l->w + x0 + 1]) +
	       fy * ((1 - fx) * p[(size_t)(y0 + 1) * l->w + x0] +
		     fx * p[(size_t)(y0 + 1) * l->w + x0 + 1]);
}

/*
 * One edge: the side of the square of half-side h (modules) given by side
 * (0 top, 1 right, 2 bottom, 3 left, in marker coordinates), located along
 * ALONG_N profiles where the luminance crosses halfway between its two
 * bands. Returns the points found.
 */
static int edge_points(const struct calib_lumplane *l, const double H[9], double h, double band,
		       int side, double (*pts)[2])
{
	static const double nrm[4][2] = { { 0, -1 }, { 1, 0 }, { 0, 1 }, { -1, 0 } };
	int n = 0;

	for (int k = 0; k < ALONG_N; k++) {
		double t = (-1.0 + 2.0 * k / (ALONG_N - 1)) * ALONG_SPAN * h;
		double ex = nrm[side][0] * h + (nrm[side][0] == 0 ? t : 0);
		double ey = nrm[side][1] * h + (nrm[side][1] == 0 ? t : 0);
		double v[PROFILE_N], xy[PROFILE_N][2], lo = 0, hi = 0, thr;
		int found = 0;

		for (int i = 0; i < PROFILE_N; i++) {
			double d = band * PROFILE_HALF * (-1.0 + 2.0 * i / (PROFILE_N - 1));

			apply(H, ex + d * nrm[side][0], ey + d * nrm[side][1], &xy[i][0], &xy[i][1]);
			v[i] = sample(l, xy[i][0], xy[i][1]);
		}
		for (int i = 0; i < 3; i++) {
			lo += v[i] / 3;
			hi += v[PROFILE_N - 1 - i] / 3;
		}
		/* Too little contrast: covered, blurred or off the marker. */
		if (fabs(hi - lo) < 0.25 * l->contrast)
			continue;
		thr = 0.5 * (lo + hi);
		for (int i = 0; i + 1 < PROFILE_N && !found; i++)
			if ((v[i] - thr) * (v[i + 1] - thr) <= 0 && v[i] != v[i + 1]) {
				double f = (thr - v[i]) / (v[i + 1] - v[i]);

				pts[n][0] = xy[i][0] + f * (xy[i + 1][0] - xy[i][0]);
				pts[n][1] = xy[i][1] + f * (xy[i + 1][1] - xy[i][1]);
				n++;
				found = 1;
			}
	}
	return n;
}

int calib_marker_refine(const struct calib_lumplane *l, const double corners_px[8], double size_mm,
			int origin, struct calib_marker_fit *out)
{
	const double half[3] = { size_mm / 2, size_mm / 3, size_mm / 6 }, band = size_mm / 6;
	const int nsq = origin ? 3 : 2;
	double H[9], src[24], dst[24], hs[12];
	bl_err e2 = { 0 };

	{
		const double h = half[0];
		const double sq[8] = { -h, -h, h, -h, h, h, -h, h };

		if (cv_homography(sq, corners_px, 4, H, &e2))
			return 0;
	}
	for (int pass = 0; pass < 2; pass++) {
		int np = 0;

		for (int s = 0; s < nsq; s++) {
			double lc[4][2], ld[4][2];
			int ok = 1;

			for (int side = 0; side < 4 && ok; side++) {
				double pts[ALONG_N][2];
				int n = edge_points(l, H, half[s], band, side, pts);

				ok = n >= ALONG_N / 2 && calib_line_fit((const double (*)[2])pts, n,
									lc[side], ld[side]);
			}
			if (!ok)
				continue;
			for (int c = 0; c < 4; c++) {
				/* Corner c lies between side c - 1 and side c: 0 top left, 1 top right ... */
				int a = (c + 3) % 4, b = c;
				double p[2];
				static const double sx[4] = { -1, 1, 1, -1 }, sy[4] = { -1, -1, 1, 1 };

				if (!calib_lines_meet(lc[a], ld[a], lc[b], ld[b], p))
					continue;
				src[2 * np] = sx[c] * half[s];
				src[2 * np + 1] = sy[c] * half[s];
				dst[2 * np] = p[0];
				dst[2 * np + 1] = p[1];
				hs[np] = half[s];
				np++;
			}
		}
		if (np < 4 || cv_homography(src, dst, np, H, &e2))
			return 0;
		out->n = np;
		for (int i = 0; i < np; i++) {
			out->half_mm[i] = hs[i];
			out->local[i][0] = src[2 * i];
			out->local[i][1] = src[2 * i + 1];
			out->px[i][0] = dst[2 * i];
			out->px[i][1] = dst[2 * i + 1];
		}
	}
	memcpy(out->H, H, sizeof(out->H));
	apply(H, 0, 0, &out->centre[0], &out->centre[1]);
	return 1;
}

int calib_lumplane_from(const struct img *im, struct calib_lumplane *l, bl_err *err)
{
	size_t n = (size_t)im->w * im->h;
	float lut[256];

	l->w = im->w;
	l->h = im->h;
	l->px = malloc(n * sizeof(float));
	if (!l->px)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	for (int i = 0; i < 256; i++)
		lut[i] = (float)meas_srgb_to_linear(i / 255.0);
	for (size_t i = 0; i < n; i++)
		l->px[i] = 0.2126f * lut[im->px[3 * i]] + 0.7152f * lut[im->px[3 * i + 1]] +
			   0.0722f * lut[im->px[3 * i + 2]];
	l->contrast = 0.1;
	return 0;
}

void calib_lumplane_free(struct calib_lumplane *l)
{
	free(l->px);
	l->px = NULL;
}

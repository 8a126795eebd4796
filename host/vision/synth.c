/* synth.c: renders a synthetic camera view of a canvas and its corner markers through a homography and optional lens distortion. */
#include "vision/synth.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vision/canvas.h"

/* A small, seeded generator: frames must be the same on every machine. */
static double synth_gauss(unsigned long long *st)
{
	double u1, u2;

	*st = *st * 6364136223846793005ULL + 1442695040888963407ULL;
	u1 = ((*st >> 11) + 0.5) / 9007199254740992.0;
	*st = *st * 6364136223846793005ULL + 1442695040888963407ULL;
	u2 = ((*st >> 11) + 0.5) / 9007199254740992.0;
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

int vis_synth_frame(const struct vis_synth *s, struct img *out, bl_err *err)
{
	const double canvas_pts[8] = { 0, 0, s->size_mm[0], 0, s->size_mm[0], s->size_mm[1], 0,
				       s->size_mm[1] };
	double H[9], Hi[9], *pts = NULL;
	unsigned long long st = 0x9e3779b97f4a7c15ULL ^ s->seed;
	const struct vis_markers mk = { { s->size_mm[0], s->size_mm[1] }, s->marker_size_mm,
					s->marker_offset_mm };
	int rc;

	memset(out, 0, sizeof(*out));
	rc = cv_homography(canvas_pts, s->corners_px, 4, H, err);
	if (rc || (rc = cv_invert3(H, Hi, err)))
		return rc;
	rc = img_alloc(out, s->w, s->h, err);
	if (rc)
		return rc;
	/* Four samples a pixel, one row at a time: raw px -> ideal px -> canvas mm. */
	pts = malloc((size_t)s->w * 4 * 2 * sizeof(double));
	if (!pts) {
		img_free(out);
		return bl_fail(err, BL_ENOMEM, "out of memory");
	}
	for (int y = 0; y < s->h; y++) {
		for (int x = 0; x < s->w; x++)
			for (int k = 0; k < 4; k++) {
				pts[(x * 4 + k) * 2] = x - 0.25 + 0.5 * (k & 1);
				pts[(x * 4 + k) * 2 + 1] = y - 0.25 + 0.5 * (k >> 1);
			}
		if (s->camera && (rc = cv_undistort_points(s->camera, pts, pts, s->w * 4, err))) {
			free(pts);
			img_free(out);
			return rc;
		}
		cv_apply_homography(Hi, pts, pts, s->w * 4);
		for (int x = 0; x < s->w; x++) {
			double acc[3] = { 0, 0, 0 };

			for (int k = 0; k < 4; k++) {
				double u = pts[(x * 4 + k) * 2], v = pts[(x * 4 + k) * 2 + 1];
				unsigned char c[3];
				const double m = s->paper_margin_mm;
				int ink = s->markers ? vis_marker_at(&mk, u, v) : -1;

				if (ink >= 0)
					memset(c, ink ? 25 : 235, 3);
				else if (u >= 0 && v >= 0 && u < s->size_mm[0] && v < s->size_mm[1] && s->paint)
					s->paint(s->ctx, u, v, c);
				else if (u >= -m && v >= -m && u < s->size_mm[0] + m &&
					 v < s->size_mm[1] + m)
					memcpy(c, s->paper, 3);
				else
					memcpy(c, s->table, 3);
				for (int ch = 0; ch < 3; ch++)
					acc[ch] += c[ch];
			}
			for (int ch = 0; ch < 3; ch++)
				out->px[((size_t)y * s->w + x) * 3 + ch] =
					(unsigned char)lround(acc[ch] / 4.0);
		}
	}
	free(pts);
	if (s->noise > 0.0)
		for (size_t i = 0; i < (size_t)s->w * s->h * 3; i++) {
			double v = out->px[i] + s->noise * synth_gauss(&st);

			out->px[i] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : lround(v));
		}
	return 0;
}

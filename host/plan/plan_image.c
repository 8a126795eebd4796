/* plan_image.c: the planner's pictures: a target file to Lab on the planner's grid, an observed canvas to Lab, the preview beside the target. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/log.h"
#include "plan/plan_image.h"
#include "plan/plan_int.h"
#include "vision/canvas.h"
#include "vision/measure.h"
#include "vision/observe.h"

void plan_grid_size(const struct machine *m, int w, int h, int *gw, int *gh, double image_mm[4])
{
	struct pm_grid g;
	double r[4];

	pm_fit(m, w, h, r);
	for (int i = 0; i < 4; i++)
		r[i] = round(r[i] * 100.0) / 100.0;
	pm_grid_for(&g, r);
	*gw = g.w;
	*gh = g.h;
	if (image_mm)
		memcpy(image_mm, r, sizeof(r));
}

int plan_target_load(const char *path, const struct machine *m, struct plan_target *out,
		     bl_err *err)
{
	unsigned char *buf = NULL;
	struct img im = { 0 };
	size_t len;
	int rc, gw, gh;

	memset(out, 0, sizeof(*out));
	if ((rc = fs_read_file(path, IMG_MAX_FILE_BYTES, (char **)&buf, &len, err)))
		return rc;
	if (len == 0) {
		rc = bl_fail(err, BL_EINVAL, "%s: the target file is empty", path);
		goto out_free;
	}
	/* The machine's pixel limit is checked from the header, before any pixel memory is taken. */
	if ((rc = img_decode(buf, len, path, m->camera.max_pixels, &im, err)))
		goto out_free;
	if (im.w < PLAN_MIN_TARGET_PX || im.h < PLAN_MIN_TARGET_PX) {
		rc = bl_fail(err, BL_EINVAL,
			     "%s: the target is %d x %d px, too small to paint from (at least %d x %d px)",
			     path, im.w, im.h, PLAN_MIN_TARGET_PX, PLAN_MIN_TARGET_PX);
		goto out_free;
	}
	plan_hash_hex(buf, len, out->hash);
	out->w = im.w;
	out->h = im.h;
	out->orientation = im.orientation;
	/* Straight onto the planner's grid: the area average and the embedded profile are vision's. */
	plan_grid_size(m, im.w, im.h, &gw, &gh, NULL);
	if ((rc = plan_raster_alloc(&out->lab, gw, gh, err)))
		goto out_free;
	if ((rc = meas_target_lab(&im, path, gw, gh, out->lab.px, err)))
		plan_raster_free(&out->lab);

out_free:
	img_free(&im);
	free(buf);
	return rc;
}

void plan_target_free(struct plan_target *t)
{
	plan_raster_free(&t->lab);
}

int plan_observed_load(const char *path, const struct machine *m, const struct plan *p,
		       int rectified, struct plan_raster *out, bl_err *err)
{
	struct img im = { 0 };
	struct vis_observer o;
	struct vis_observation ob = { 0 };
	double sx, sy;
	int rc, x0, y0, x1, y1;

	memset(out, 0, sizeof(*out));
	if ((rc = vis_observer_load(&o, m, err)))
		return rc;
	if ((rc = img_load(path, m->camera.max_pixels, &im, err)))
		goto out_free;
	/* As measure: a frame of another size is not of the camera the light map was made for. */
	if (o.light && (o.light->width != im.w || o.light->height != im.h)) {
		log_warn("%s: %dx%d px, not a frame of the %dx%d camera the light map %s was made "
			 "for: its light is not divided out", path, im.w, im.h, o.light->width,
			 o.light->height, m->calibration.light_map);
		o.light = NULL;
	}
	/*
	 * A camera frame goes through the run's own pipeline (its light map
	 * included), so a correction sees the colours the run saw; an image
	 * that is already the rectified canvas is only converted.
	 */
	rc = rectified ? vis_observe_raster(&o, &im, NULL, &ob, err)
		       : vis_observe_canvas(&o, &im, path, NULL, &ob, err);
	if (rc)
		goto out_free;
	/* The picture's rectangle of the whole canvas. */
	sx = ob.w / p->canvas_size_mm[0];
	sy = ob.h / p->canvas_size_mm[1];
	x0 = (int)floor(p->image_mm[0] * sx);
	y0 = (int)floor(p->image_mm[1] * sy);
	x1 = (int)ceil((p->image_mm[0] + p->image_mm[2]) * sx);
	y1 = (int)ceil((p->image_mm[1] + p->image_mm[3]) * sy);
	x1 = x1 > ob.w ? ob.w : x1;
	y1 = y1 > ob.h ? ob.h : y1;
	if (x1 - x0 < 1 || y1 - y0 < 1) {
		rc = bl_fail(err, BL_EINVAL, "%s: %d x %d px is too small to show the canvas", path,
			     ob.w, ob.h);
		goto out_free;
	}
	if ((rc = plan_raster_alloc(out, x1 - x0, y1 - y0, err)))
		goto out_free;
	for (int y = y0; y < y1; y++)
		memcpy(out->px + (size_t)(y - y0) * out->w * 3, ob.lab + ((size_t)y * ob.w + x0) * 3,
		       (size_t)out->w * 3 * sizeof(float));

out_free:
	vis_observation_free(&ob);
	img_free(&im);
	vis_observer_close(&o);
	return rc;
}

static void lab_to_rgb8(const float *p, unsigned char *out)
{
	color_lab l = { p[0], p[1], p[2] };
	color_rgb c;
	int in_gamut;

	if (color_lab_to_srgb(&l, &c, &in_gamut, NULL) == 0)
		color_rgb_to_u8(&c, out);
	else
		out[0] = out[1] = out[2] = 0;
}

int plan_preview_save(const char *path, const struct plan *p, const struct machine *m,
		      const struct plan_raster *target, bl_err *err)
{
	struct plan_raster canvas = { 0 };
	struct img pic = { 0 };
	int rc, gap = 8, w, h;

	if ((rc = plan_predict(p, m, NULL, 0.0, &canvas, NULL, NULL, err)))
		return rc;
	w = canvas.w;
	h = canvas.h;
	/* The target and the predicted painting side by side, on a grey ground. */
	if ((rc = img_alloc(&pic, 2 * w + 3 * gap, h + 2 * gap, err)))
		goto out_free;
	memset(pic.px, 128, (size_t)pic.w * pic.h * 3);
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++) {
			int tx = (int)((x + 0.5) * target->w / w), ty = (int)((y + 0.5) * target->h / h);
			unsigned char *row = pic.px + ((size_t)(y + gap) * pic.w) * 3;

			tx = tx >= target->w ? target->w - 1 : tx;
			ty = ty >= target->h ? target->h - 1 : ty;
			lab_to_rgb8(target->px + ((size_t)ty * target->w + tx) * 3, row + (size_t)(x + gap) * 3);
			lab_to_rgb8(canvas.px + ((size_t)y * w + x) * 3, row + (size_t)(x + w + 2 * gap) * 3);
		}
	rc = img_save(path, &pic, err);

out_free:
	img_free(&pic);
	plan_raster_free(&canvas);
	return rc;
}

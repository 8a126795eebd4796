/* run_observe.c: the run's witness: averaged camera frames through the calibrated pipeline, the canvas in plan coordinates, mixing cells, comparisons with the target. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "base/fs.h"
#include "base/json.h"
#include "base/log.h"
#include "engine/run_int.h"
#include "vision/canvas.h"
#include "vision/station.h"

void run_canvas_free(struct run_canvas *c)
{
	free(c->lab);
	c->lab = NULL;
}

/*
 * camera.average_frames frames, each retried on a dropped or corrupt frame
 * (a camera error: the breaker counts it), averaged per channel. The average
 * is saved in frames/ as what the verdict rests on.
 */
static int capture_average(struct run *r, const char *what, struct img *avg, char *frame,
			   size_t frame_n, bl_err *err)
{
	int n = r->m.camera.average_frames > 0 ? r->m.camera.average_frames : 1, got = 0, rc;
	uint32_t *sum = NULL;
	size_t px = 0;

	memset(avg, 0, sizeof(*avg));
	while (got < n) {
		struct cam_frame f = { 0 };
		struct img im = { 0 };
		enum run_brake b;

		if ((rc = run_poll(r, err)))
			goto out_free;
		rc = cam_capture(r->rig.cam, &f, err);
		if (rc == 0)
			rc = img_decode_frame(&f, r->m.camera.max_pixels, &im, err);
		cam_frame_free(&f);
		if (rc == 0 && sum && (im.w != avg->w || im.h != avg->h))
			rc = bl_fail(err, BL_EIO, "the camera changed its frame size mid-observation");
		if (rc) {
			img_free(&im);
			if (rc == BL_ENOMEM)
				goto out_free;
			b = run_brakes_comm(&r->st.brakes, &r->m.brakes, 0, err->msg);
			if ((rc = run_event(r, "camera_error",
					    cJSON_CreateString(err->msg), err)))
				goto out_free;
			if (b != RUN_BRAKE_NONE) {
				rc = run_brake(r, b, err);
				goto out_free;
			}
			continue;
		}
		if (!sum) {
			*avg = im;
			im.px = NULL;
			im.icc = NULL;
			px = (size_t)avg->w * avg->h * 3;
			sum = calloc(px, sizeof(*sum));
			if (!sum) {
				rc = bl_fail(err, BL_ENOMEM, "out of memory averaging frames");
				goto out_free;
			}
			for (size_t i = 0; i < px; i++)
				sum[i] = avg->px[i];
		} else {
			for (size_t i = 0; i < px; i++)
				sum[i] += im.px[i];
		}
		img_free(&im);
		got++;
	}
	for (size_t i = 0; i < px; i++)
		avg->px[i] = (unsigned char)((sum[i] + (uint32_t)n / 2) / (uint32_t)n);
	r->st.cost.verifications++;
	{
		char name[96];

		snprintf(name, sizeof(name), "frames/%06ld-%s.jpg", ++r->frames_saved, what);
		if ((rc = run_path(r, name, frame, frame_n, err)) || (rc = img_save(frame, avg, err)))
			goto out_free;
	}
	/* The frame as saved is the camera's; measured, it is the light-corrected one the profile expects. */
	if (r->have_light && (rc = vis_light_apply(&r->light, avg, err)))
		goto out_free;
	free(sum);
	return 0;

out_free:
	free(sum);
	img_free(avg);
	return rc;
}

/*
 * Where the canvas is. The camera and the canvas stay put for a run, so once
 * found the geometry is kept: calibration.canvas when the machine has one,
 * else the corner markers of the first frame (the blank canvas), saved as
 * canvas.json in the run directory. Later frames, with paint that may look
 * like a marker and an arm that may hide one, are rectified with it.
 */
static int locate(struct run *r, const struct img *frame, const char *name, struct vis_geometry *g,
		  bl_err *err)
{
	char p[RUN_PATH_MAX];
	struct vis_markers mk;
	struct vis_canvas f;
	int rc;

	if (r->m.calibration.canvas[0]) {
		r->st.canvas_from_file = 1;
		if ((rc = vis_canvas_load(r->m.calibration.canvas, &f, err)))
			return rc;
		return vis_locate(frame, name, &f, NULL, g, err);
	}
	if ((rc = run_path(r, "canvas.json", p, sizeof(p), err)))
		return rc;
	if (access(p, F_OK) == 0) {
		if ((rc = vis_canvas_load(p, &f, err)))
			return rc;
		return vis_locate(frame, name, &f, NULL, g, err);
	}
	vis_markers_from_machine(&r->m, &mk);
	if ((rc = vis_locate(frame, name, NULL, &mk, g, err)))
		return rc;
	vis_canvas_init(&f);
	f.image_w = frame->w;
	f.image_h = frame->h;
	f.size_mm[0] = g->size_mm[0];
	f.size_mm[1] = g->size_mm[1];
	memcpy(f.corners_px, g->corners_px, sizeof(f.corners_px));
	if ((rc = vis_canvas_save(p, &f, err)))
		return rc;
	{
		cJSON *d = cJSON_CreateObject();

		cJSON_AddStringToObject(d, "source", "corner markers");
		cJSON_AddNumberToObject(d, "markers_found", g->markers_found);
		json_add_vec(d, "corners_px", g->corners_px, 8);
		cJSON_AddStringToObject(d, "saved", "canvas.json");
		return run_event(r, "canvas_located", d, err);
	}
}

int run_observe_canvas(struct run *r, const char *what, struct run_canvas *out, bl_err *err)
{
	struct img avg = { 0 }, rect = { 0 };
	struct vis_geometry g;
	float *lab = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	for (int tries = 0;; tries++) {
		rc = capture_average(r, what, &avg, out->frame, sizeof(out->frame), err);
		if (rc)
			return rc;
		rc = locate(r, &avg, out->frame, &g, err);
		if (rc == 0)
			break;
		img_free(&avg);
		/* A frame where the canvas cannot be found is a camera error like a dropped one. */
		{
			enum run_brake b = run_brakes_comm(&r->st.brakes, &r->m.brakes, 0, err->msg);

			if ((rc = run_event(r, "camera_error", cJSON_CreateString(err->msg), err)))
				return rc;
			if (b != RUN_BRAKE_NONE)
				return run_brake(r, b, err);
		}
	}
	run_brakes_comm(&r->st.brakes, &r->m.brakes, 1, "");
	if ((rc = vis_rectify(&avg, &g, 1.0, &rect, err)))
		goto out_free;
	lab = malloc((size_t)rect.w * rect.h * 3 * sizeof(float));
	if (!lab) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_free;
	}
	if ((rc = meas_lab_raster(r->profile, &rect, lab, err)))
		goto out_free;
	out->w = rect.w;
	out->h = rect.h;
	out->lab = lab;
	lab = NULL;
	/*
	 * The closed loop looks at the canvas under the lamp of the blank canvas
	 * (run_lamp); the blank canvas is that lamp, and the final canvas is
	 * reported as the camera sees it.
	 */
	if (!r->st.open_loop && strcmp(what, "blank") && strcmp(what, "final")) {
		if (run_lamp(r, out, r->lamp)) {
			rc = bl_fail(err, BL_ENOMEM, "out of memory");
			goto out_free;
		}
		run_canvas_relight(out, r->lamp);
	}
	/* Kept: the next paint pass is judged on the change it makes to what is seen now. */
	{
		size_t bytes = (size_t)rect.w * rect.h * 3 * sizeof(float);
		float *keep = realloc(r->last_lab, bytes);

		if (!keep) {
			rc = bl_fail(err, BL_ENOMEM, "out of memory");
			goto out_free;
		}
		memcpy(keep, out->lab, bytes);
		r->last_lab = keep;
	}
	/* Kept for the operator's previews (gate_image: rows along machine y, as here). */
	free(r->last_rgb);
	r->last_rgb = rect.px;
	r->last_w = rect.w;
	r->last_h = rect.h;
	rect.px = NULL;
out_free:
	free(lab);
	img_free(&rect);
	img_free(&avg);
	return rc;
}

/* The lamp (run_lamp) in a frame of the whole bench: its canvas rectified and measured. */
static int frame_lamp(const struct run *r, const struct img *avg, const struct vis_geometry *g,
		      double k[3], bl_err *err)
{
	struct img rect = { 0 };
	struct run_canvas c = { 0 };
	int rc;

	k[0] = k[1] = k[2] = 1.0;
	if ((rc = vis_rectify(avg, g, 1.0, &rect, err)))
		return rc;
	c.w = rect.w;
	c.h = rect.h;
	c.lab = malloc((size_t)rect.w * rect.h * 3 * sizeof(float));
	if (!c.lab) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_free_rect;
	}
	if ((rc = meas_lab_raster(r->profile, &rect, c.lab, err)))
		goto out_free_lab;
	if (run_lamp(r, &c, k))
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
out_free_lab:
	free(c.lab);
out_free_rect:
	img_free(&rect);
	return rc;
}

int run_observe_cell(struct run *r, const char *cell, color_lab *out, char *frame, size_t n,
		     bl_err *err)
{
	const struct machine_station *st = machine_find_cell(&r->m, cell);
	struct img avg = { 0 };
	struct vis_geometry g;
	struct meas_swatch sw;
	double lamp[3];
	char what[64];
	int rc;

	if (!st)
		return bl_fail(err, BL_EINVAL, "%s: no mixing cell '%s'", r->m.file, cell);
	snprintf(what, sizeof(what), "cell-%s", cell);
	for (;;) {
		enum run_brake b;

		rc = capture_average(r, what, &avg, frame, n, err);
		if (rc)
			return rc;
		rc = locate(r, &avg, frame, &g, err);
		if (rc == 0)
			rc = vis_measure_station(&avg, frame, &g, &r->m, st, r->profile, &sw, err);
		if (rc == 0)
			rc = frame_lamp(r, &avg, &g, lamp, err);
		img_free(&avg);
		if (rc == 0)
			break;
		if (rc == BL_ENOMEM)
			return rc;
		b = run_brakes_comm(&r->st.brakes, &r->m.brakes, 0, err->msg);
		if ((rc = run_event(r, "camera_error", cJSON_CreateString(err->msg), err)))
			return rc;
		if (b != RUN_BRAKE_NONE)
			return run_brake(r, b, err);
	}
	run_brakes_comm(&r->st.brakes, &r->m.brakes, 1, "");
	/* A mix is judged under the blank canvas's lamp, like the canvas: the lamp dims over a night's run. */
	run_relight(lamp, &sw.lab);
	memcpy(r->lamp, lamp, sizeof(lamp));
	*out = sw.lab;
	return 0;
}

int run_canvas_mean(const struct run_canvas *c, double x0, double y0, double x1, double y1,
		    color_lab *out)
{
	int ix0 = (int)floor(x0), iy0 = (int)floor(y0), ix1 = (int)ceil(x1), iy1 = (int)ceil(y1);
	double s[3] = { 0, 0, 0 };
	long n = 0;

	ix0 = ix0 < 0 ? 0 : ix0;
	iy0 = iy0 < 0 ? 0 : iy0;
	ix1 = ix1 > c->w ? c->w : ix1;
	iy1 = iy1 > c->h ? c->h : iy1;
	for (int y = iy0; y < iy1; y++)
		for (int x = ix0; x < ix1; x++) {
			const float *p = c->lab + ((size_t)y * c->w + x) * 3;

			s[0] += p[0];
			s[1] += p[1];
			s[2] += p[2];
			n++;
		}
	if (!n)
		return -1;
	out->L = s[0] / n;
	out->a = s[1] / n;
	out->b = s[2] / n;
	return 0;
}

/* The picture's rectangle on the 1 px/mm canvas raster. */
static void picture_box(const struct plan *p, const struct run_canvas *c, int *x0, int *y0, int *w,
			int *h)
{
	*x0 = (int)floor(p->image_mm[0]);
	*y0 = (int)floor(p->image_mm[1]);
	*w = (int)lround(p->image_mm[2]);
	*h = (int)lround(p->image_mm[3]);
	if (*x0 + *w > c->w)
		*w = c->w - *x0;
	if (*y0 + *h > c->h)
		*h = c->h - *y0;
}

int run_canvas_to_raster(const struct run *r, const struct run_canvas *c, struct plan_raster *out,
			 bl_err *err)
{
	int x0, y0, w, h, rc;

	picture_box(&r->plan, c, &x0, &y0, &w, &h);
	if (w < 1 || h < 1)
		return bl_fail(err, BL_EINVAL, "the picture lies outside the observed canvas");
	if ((rc = plan_raster_alloc(out, w, h, err)))
		return rc;
	for (int y = 0; y < h; y++)
		memcpy(out->px + (size_t)y * w * 3, c->lab + ((size_t)(y0 + y) * c->w + x0) * 3,
		       (size_t)w * 3 * sizeof(float));
	return 0;
}

static int cmp_f(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

int run_lamp(const struct run *r, const struct run_canvas *c, double k[3])
{
	int x0, y0, w, h, n = 0;
	float *ch[3];
	color_lab now, ref = r->plan.canvas_lab;
	color_xyz xn, xr;

	k[0] = k[1] = k[2] = 1.0;
	picture_box(&r->plan, c, &x0, &y0, &w, &h);
	ch[0] = malloc(sizeof(float) * 3 * (size_t)c->w * c->h);
	if (!ch[0])
		return BL_ENOMEM;
	ch[1] = ch[0] + (size_t)c->w * c->h;
	ch[2] = ch[1] + (size_t)c->w * c->h;
	/*
	 * The bare band: canvas left and right of the picture, 2 mm clear of the
	 * canvas's edge and of the picture (no stroke leaves the picture), and
	 * 10 mm clear of the top and bottom.
	 */
	for (int y = 10; y < c->h - 10; y++)
		for (int x = 2; x < c->w - 2; x++) {
			const float *q = c->lab + ((size_t)y * c->w + x) * 3;

			if (x >= x0 - 2 && x < x0 + w + 2)
				continue;
			ch[0][n] = q[0], ch[1][n] = q[1], ch[2][n] = q[2];
			n++;
		}
	if (n < RUN_LAMP_MIN_PX) {
		free(ch[0]);
		return 0; /* the picture fills the canvas: nothing bare to measure the lamp on */
	}
	for (int q = 0; q < 3; q++) {
		qsort(ch[q], (size_t)n, sizeof(float), cmp_f);
		(&now.L)[q] = ch[q][n / 2];
	}
	free(ch[0]);
	color_lab_to_xyz(&now, &xn);
	color_lab_to_xyz(&ref, &xr);
	if (!(xn.X > 0.0 && xn.Y > 0.0 && xn.Z > 0.0))
		return 0;
	k[0] = xr.X / xn.X;
	k[1] = xr.Y / xn.Y;
	k[2] = xr.Z / xn.Z;
	/* Far beyond a lamp's drift (paint on the band, a lamp failing): not followed, the brakes see it. */
	for (int q = 0; q < 3; q++)
		if (fabs(k[q] - 1.0) > RUN_LAMP_MAX) {
			k[0] = k[1] = k[2] = 1.0;
			return 0;
		}
	return 0;
}

void run_relight(const double k[3], color_lab *l)
{
	color_xyz x;

	color_lab_to_xyz(l, &x);
	x.X *= k[0], x.Y *= k[1], x.Z *= k[2];
	color_xyz_to_lab(&x, l);
}

void run_canvas_relight(struct run_canvas *c, const double k[3])
{
	if (k[0] == 1.0 && k[1] == 1.0 && k[2] == 1.0)
		return;
	for (size_t i = 0; i < (size_t)c->w * c->h; i++) {
		float *q = c->lab + 3 * i;
		color_lab l = { q[0], q[1], q[2] };

		run_relight(k, &l);
		q[0] = (float)l.L, q[1] = (float)l.a, q[2] = (float)l.b;
	}
}

int run_canvas_vs_target(struct run *r, const struct run_canvas *c, double *mean, double *p95,
			 bl_err *err)
{
	struct plan_raster obs = { 0 };
	struct meas_map map = { 0 };
	float *tl = NULL;
	int rc;

	if ((rc = run_canvas_to_raster(r, c, &obs, err)))
		return rc;
	tl = malloc((size_t)obs.w * obs.h * 3 * sizeof(float));
	if (!tl) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_free;
	}
	if ((rc = meas_target_lab(&r->target_img, r->target_copy, obs.w, obs.h, tl, err)) ||
	    (rc = meas_de_map(obs.px, tl, obs.w, obs.h, 1.0, r->plan.cell_mm, 4, &map, err)))
		goto out_free;
	*mean = map.mean;
	*p95 = map.p95;
out_free:
	meas_map_free(&map);
	free(tl);
	plan_raster_free(&obs);
	return rc;
}

int run_canvas_save_png(const struct run_canvas *c, const char *path, bl_err *err)
{
	struct img im = { 0 };
	int rc = img_alloc(&im, c->w, c->h, err);

	if (rc)
		return rc;
	for (size_t i = 0; i < (size_t)c->w * c->h; i++) {
		color_lab l = { c->lab[3 * i], c->lab[3 * i + 1], c->lab[3 * i + 2] };
		color_rgb rgb;
		int in_gamut;

		if (color_lab_to_srgb(&l, &rgb, &in_gamut, NULL) == 0)
			color_rgb_to_u8(&rgb, im.px + 3 * i);
		else
			memset(im.px + 3 * i, 0, 3);
	}
	rc = img_save(path, &im, err);
	img_free(&im);
	return rc;
}

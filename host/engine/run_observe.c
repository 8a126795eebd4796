/* run_observe.c: the run's witness: averaged camera frames through the calibrated pipeline, the canvas in plan coordinates, mixing cells, comparisons with the target. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/json.h"
#include "base/log.h"
#include "base/prof.h"
#include "color/scielab.h"
#include "engine/run_exec.h"
#include "engine/run_int.h"
#include "vision/canvas.h"
#include "vision/observe.h"

void run_canvas_free(struct run_canvas *c)
{
	free(c->lab);
	c->lab = NULL;
}

/* lamp.json in the run directory: the lamp's reference, kept so that a resumed run follows the same. */
int run_lamp_load(struct run *r, bl_err *err)
{
	char p[RUN_PATH_MAX];
	cJSON *root;
	int rc;

	r->lamp_now[0] = r->lamp_now[1] = r->lamp_now[2] = 1.0;
	if ((rc = run_path(r, "lamp.json", p, sizeof(p), err)))
		return rc;
	if (access(p, F_OK) != 0) {
		/*
		 * None, but frames were taken: the first frame gave no reference
		 * (too little board, or not followed), and one taken now, hours
		 * later, would hold the light as it is now for the light at the start.
		 */
		DIR *d;
		struct dirent *e;

		if ((rc = run_path(r, "frames", p, sizeof(p), err)))
			return rc;
		if ((d = opendir(p))) {
			while ((e = readdir(d)))
				if (e->d_name[0] != '.')
					r->lamp_off = 1;
			closedir(d);
		}
		return 0;
	}
	r->lamp = malloc(sizeof(*r->lamp));
	if (!r->lamp)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	if ((rc = json_parse_file(p, &root, err)))
		return rc;
	rc = vis_lamp_from_json(root, p, r->lamp, err);
	cJSON_Delete(root);
	return rc;
}

/* The lamp's change journaled when it moved by half a percent in any channel since last said. */
static int lamp_journal(struct run *r, bl_err *err)
{
	cJSON *d;
	int moved = 0;

	for (int k = 0; k < 3; k++)
		moved |= fabs(r->lamp_now[k] - r->lamp_logged[k]) >= 0.005;
	if (!moved)
		return 0;
	memcpy(r->lamp_logged, r->lamp_now, sizeof(r->lamp_logged));
	d = cJSON_CreateObject();
	json_add_vec(d, "rgb", r->lamp_now, 3);
	return run_event(r, "lamp", d, err);
}

/*
 * After the run's first frame is located: its bare board becomes the lamp's
 * reference (lamp.json). A view without enough board is said once in the
 * journal and the lamp is not followed.
 */
static int lamp_begin(struct run *r, const struct vis_geometry *g, const char *name, bl_err *err)
{
	char p[RUN_PATH_MAX];
	cJSON *d;
	bl_err e2;
	int rc;

	if (r->lamp || r->lamp_off || !r->first_raw.px)
		return 0;
	if (!r->m.calibration.follow_lamp) {
		img_free(&r->first_raw);
		r->lamp_off = 1;
		return run_event(r, "lamp_reference", cJSON_CreateString("not followed: "
				 "calibration.follow_lamp is false"), err);
	}
	r->lamp = malloc(sizeof(*r->lamp));
	if (!r->lamp)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	d = cJSON_CreateObject();
	rc = vis_lamp_reference(r->lamp, &r->first_raw, name, g, &r->m, &e2);
	img_free(&r->first_raw);
	if (rc) {
		free(r->lamp);
		r->lamp = NULL;
		r->lamp_off = 1;
		cJSON_AddStringToObject(d, "not_followed", e2.msg);
		return run_event(r, "lamp_reference", d, err);
	}
	r->lamp_logged[0] = r->lamp_logged[1] = r->lamp_logged[2] = 1.0;
	cJSON_AddNumberToObject(d, "board_points", r->lamp->n);
	cJSON_AddStringToObject(d, "saved", "lamp.json");
	if ((rc = run_path(r, "lamp.json", p, sizeof(p), err)) == 0) {
		cJSON *o = vis_lamp_json(r->lamp);

		rc = o ? json_write_file(p, o, err) : bl_fail(err, BL_ENOMEM, "out of memory");
		cJSON_Delete(o);
	}
	if (rc) {
		cJSON_Delete(d);
		return rc;
	}
	return run_event(r, "lamp_reference", d, err);
}

/*
 * A frame that failed (dropped, corrupt, no canvas in it, no board for the
 * lamp): a final error stays one; else it is a camera error like any other,
 * journaled and counted by the breaker. 0: take another; else the brake's.
 */
static int camera_error(struct run *r, int rc, bl_err *err)
{
	enum run_brake b;

	if (run_error_final(rc))
		return rc;
	b = run_brakes_comm(&r->st.brakes, &r->m.brakes, 0, err->msg);
	if ((rc = run_event(r, "camera_error", cJSON_CreateString(err->msg), err)))
		return rc;
	return b != RUN_BRAKE_NONE ? run_brake(r, b, err) : 0;
}

/*
 * camera.average_frames frames, each retried on a dropped or corrupt frame
 * (a camera error: the breaker counts it), averaged per channel in the
 * camera's memory (cam_average_add): *avg is the camera's until its next
 * average. The average is saved in frames/ as what the verdict rests on.
 */
static int average_frames(struct run *r, const char *what, struct img **avg, char *frame,
			  size_t frame_n, bl_err *err)
{
	struct camera *cam = r->rig.cam;
	int n = r->m.camera.average_frames > 0 ? r->m.camera.average_frames : 1, got = 0, rc;
	char name[96];

	*avg = NULL;
	if ((rc = cam_average_begin(cam, err)))
		return rc;
	while (got < n) {
		if ((rc = run_poll(r, err)))
			return rc;
		if ((rc = cam_average_add(cam, err)) == 0)
			got++;
		else if ((rc = camera_error(r, rc, err)))
			return rc;
	}
	if ((rc = cam_average_end(cam, avg, NULL, err)))
		return rc;
	r->st.cost.verifications++;
	snprintf(name, sizeof(name), "frames/%06ld-%s.jpg", ++r->frames_saved, what);
	if ((rc = run_path(r, name, frame, frame_n, err)))
		return rc;
	{
		enum prof_phase prev = prof_enter(PROF_FRAMES);

		rc = img_save(frame, *avg, err);
		prof_leave(prev);
	}
	return rc;
}

/* The run's observer: its profile, light map and lamp; the canvas is located by locate() below. */
static void run_observer(struct run *r, struct vis_observer *o)
{
	vis_observer_init(o, &r->m, r->profile);
	o->light = r->have_light ? &r->light : NULL;
	o->lamp = r->lamp;
	o->px_per_mm = 1.0;
}

/*
 * An observation: averaged frames (average_frames), with the light divided
 * out as the profile expects it (vis_observe_light: the map's light over the
 * view and the lamp's change since the run's first frame, in one pass). A
 * frame whose board cannot be read for the lamp (the arm or something left
 * over it) is a camera error like a dropped one: counted by the breaker,
 * taken again.
 */
static int capture_average(struct run *r, const char *what, struct img **avg, char *frame,
			   size_t frame_n, bl_err *err)
{
	struct vis_observer o;
	int rc;

	for (;;) {
		if ((rc = average_frames(r, what, avg, frame, frame_n, err)) ||
		    (rc = run_review_raw(r, *avg, err)))
			return rc;
		if (!r->lamp && !r->lamp_off && !r->first_raw.px) {
			/* The reference is taken from this frame once the canvas shows where the board is. */
			if ((rc = img_alloc(&r->first_raw, (*avg)->w, (*avg)->h, err)))
				return rc;
			memcpy(r->first_raw.px, (*avg)->px, (size_t)(*avg)->w * (*avg)->h * 3);
		}
		run_observer(r, &o);
		if ((rc = vis_observe_light(&o, *avg, frame, err)) == 0)
			break;
		if (rc != BL_EIO || !r->lamp)
			return rc; /* not the board: a frame of another size than the reference's or the map's */
		if ((rc = camera_error(r, rc, err)))
			return rc;
	}
	if (r->lamp) {
		memcpy(r->lamp_now, o.lamp_now, sizeof(r->lamp_now));
		return lamp_journal(r, err);
	}
	return 0;
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
	size_t len;
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
	f.prov.verdict = PROV_PASS;
	/* The frame as the run directory names it: the directory's own name may hold anything. */
	len = strlen(r->dir);
	if (!strncmp(name, r->dir, len) && name[len] == '/')
		name += len + 1;
	snprintf(f.prov.source, sizeof(f.prov.source), "%s", name);
	snprintf(f.prov.why, sizeof(f.prov.why), "located by the run from the 4 corner markers of its first frame");
	if ((rc = vis_canvas_save(p, &f, NULL, NULL, err)))
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

/*
 * At a process's first look, calibration.canvas against the corner markers
 * the frame shows: a canvas file that no longer fits (the camera or the
 * canvas moved, another machine's file) would put every verdict in the wrong
 * place, so the run refuses it before anything moves (exit 2), saying why.
 */
static int canvas_cross_check(struct run *r, const struct img *frame, const char *name, bl_err *err)
{
	struct vis_markers mk;
	struct vis_canvas f;
	double off_mm;
	cJSON *d;
	int rc;

	if (!r->m.calibration.canvas[0] || r->canvas_checked)
		return 0;
	r->canvas_checked = 1;
	vis_markers_from_machine(&r->m, &mk);
	if ((rc = vis_canvas_load(r->m.calibration.canvas, &f, err)))
		return rc;
	rc = vis_canvas_cross_check(frame, name, r->m.calibration.canvas, &f, &mk, VIS_CANVAS_CORNER_TOL_MM,
				    &off_mm, err);
	if (rc == BL_EINVAL) {
		char what[BL_ERR_MSG_MAX];

		snprintf(what, sizeof(what), "%s", err->msg);
		return bl_fail(err, BL_EINVAL, "calibration.canvas does not fit the canvas in view: %s: "
			       "the camera or the canvas moved since calibration, or the file is not this "
			       "canvas's; calibrate it again (brushloop calib canvas)", what);
	}
	if (rc)
		return rc;
	if (!(d = cJSON_CreateObject()))
		return bl_fail(err, BL_ENOMEM, "out of memory");
	if (off_mm >= 0)
		cJSON_AddNumberToObject(d, "off_markers_mm", off_mm);
	else
		cJSON_AddNullToObject(d, "off_markers_mm");
	return run_event(r, "canvas_checked", d, err);
}
static int observe_canvas(struct run *r, const char *what, struct run_canvas *out, bl_err *err);
static int observe_cell(struct run *r, const char *cell, color_lab *out, char *frame, size_t n,
			bl_err *err);
static int save_latest(const struct run *r, const struct run_canvas *c, bl_err *err);

int run_observe_canvas(struct run *r, const char *what, struct run_canvas *out, bl_err *err)
{
	enum prof_phase prev = prof_enter(PROF_MEASURE);
	int rc = observe_canvas(r, what, out, err);

	prof_leave(prev);
	return rc;
}

int run_observe_cell(struct run *r, const char *cell, color_lab *out, char *frame, size_t n,
		     bl_err *err)
{
	enum prof_phase prev = prof_enter(PROF_MEASURE);
	int rc = observe_cell(r, cell, out, frame, n, err);

	prof_leave(prev);
	return rc;
}

static int observe_canvas(struct run *r, const char *what, struct run_canvas *out, bl_err *err)
{
	struct img *avg;
	struct vis_geometry g;
	struct vis_observer o;
	struct vis_observation ob = { 0 };
	int rc;

	memset(out, 0, sizeof(*out));
	for (int tries = 0;; tries++) {
		rc = capture_average(r, what, &avg, out->frame, sizeof(out->frame), err);
		if (rc)
			return rc;
		rc = locate(r, avg, out->frame, &g, err);
		if (rc == 0)
			break;
		/* A frame where the canvas cannot be found is a camera error like a dropped one. */
		if ((rc = camera_error(r, rc, err)))
			return rc;
	}
	run_brakes_comm(&r->st.brakes, &r->m.brakes, 1, "");
	if ((rc = canvas_cross_check(r, avg, out->frame, err)))
		return rc;
	run_observer(r, &o);
	if ((rc = run_review_observed(r, avg, &g, out->frame, err)) || (rc = lamp_begin(r, &g, out->frame, err)) ||
	    (rc = vis_observe_raster(&o, avg, &g, &ob, err)))
		goto out_free;
	out->w = ob.w;
	out->h = ob.h;
	out->lab = ob.lab;
	ob.lab = NULL;
	/* Kept: the next paint pass is judged on the change it makes to what is seen now. */
	{
		size_t bytes = (size_t)ob.w * ob.h * 3 * sizeof(float);
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
	r->last_rgb = ob.rect.px;
	r->last_w = ob.rect.w;
	r->last_h = ob.rect.h;
	ob.rect.px = NULL;
	rc = save_latest(r, out, err);
out_free:
	vis_observation_free(&ob);
	return rc;
}

static int observe_cell(struct run *r, const char *cell, color_lab *out, char *frame, size_t n,
			bl_err *err)
{
	const struct machine_station *st = machine_find_cell(&r->m, cell);
	struct img *avg;
	struct vis_geometry g;
	struct vis_observer o;
	struct meas_swatch sw;
	char what[64];
	int rc;

	if (!st)
		return bl_fail(err, BL_EINVAL, "%s: no mixing cell '%s'", r->m.file, cell);
	snprintf(what, sizeof(what), "cell-%s", cell);
	for (;;) {
		rc = capture_average(r, what, &avg, frame, n, err);
		if (rc)
			return rc;
		rc = locate(r, avg, frame, &g, err);
		run_observer(r, &o);
		if (rc == 0)
			rc = vis_observe_station(&o, avg, frame, &g, st, &sw, err);
		if (rc == 0)
			break;
		if ((rc = camera_error(r, rc, err)))
			return rc;
	}
	run_brakes_comm(&r->st.brakes, &r->m.brakes, 1, "");
	if ((rc = run_review_observed(r, avg, &g, frame, err)) || (rc = lamp_begin(r, &g, frame, err)))
		return rc;
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

/*
 * The target in Lab at the picture box's size: the same for every
 * observation of a run (the box does not move), so made once; the resize and
 * the profile's transform cost more than the comparison itself.
 */
static int target_lab(struct run *r, int w, int h, bl_err *err)
{
	size_t bytes = (size_t)w * h * 3 * sizeof(float);
	float *tl;
	int rc;

	if (r->target_lab && r->target_w == w && r->target_h == h)
		return 0;
	tl = malloc(bytes);
	if (!tl)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	if ((rc = meas_target_lab(&r->target_img, r->target_copy, w, h, tl, err))) {
		free(tl);
		return rc;
	}
	free(r->target_other);
	r->target_other = NULL;
	/* The target the run does not aim at kept beside it: the picture as it is, or as mapped. */
	if (r->gamut.mapped) {
		if (!(r->target_other = malloc(bytes))) {
			free(tl);
			return bl_fail(err, BL_ENOMEM, "out of memory");
		}
		memcpy(r->target_other, tl, bytes);
		plan_gamut_apply(&r->gamut, r->m.painting.map_gamut ? tl : r->target_other,
				 (size_t)w * h);
	}
	free(r->target_lab);
	r->target_lab = tl;
	r->target_w = w;
	r->target_h = h;
	return 0;
}

int run_gamut_map(struct run *r, bl_err *err)
{
	int rc = plan_gamut_fit(&r->mixer.solver, &r->target.lab, &r->gamut, err);

	if (rc)
		return rc;
	if (r->m.painting.map_gamut)
		plan_gamut_apply(&r->gamut, r->target.lab.px, (size_t)r->target.lab.w * r->target.lab.h);
	return 0;
}

/* The picture as it is (original), or as mapped into the paints' reach, at the raster's size. */
static const float *target_as(const struct run *r, int original)
{
	int aimed = !r->gamut.mapped || original != r->m.painting.map_gamut;

	return aimed || !r->target_other ? r->target_lab : r->target_other;
}

int run_canvas_vs_target(struct run *r, const struct run_canvas *c, int original, double *mean,
			 double *p95, bl_err *err)
{
	struct plan_raster obs = { 0 };
	struct meas_map map = { 0 };
	int rc;

	if ((rc = run_canvas_to_raster(r, c, &obs, err)))
		return rc;
	if ((rc = target_lab(r, obs.w, obs.h, err)) ||
	    (rc = meas_de_map(obs.px, target_as(r, original), obs.w, obs.h, 1.0, r->plan.cell_mm, 4,
			      &map, err)))
		goto out_free;
	*mean = map.mean;
	*p95 = map.p95;
out_free:
	meas_map_free(&map);
	plan_raster_free(&obs);
	return rc;
}

/*
 * What a person sees of the observation against the target over the
 * picture, at the raster's 1 px/mm: CIEDE2000 pixel by pixel, and S-CIELAB
 * seen from RUN_VIEW_DISTANCE_MM.
 */
int run_canvas_seen(struct run *r, const struct run_canvas *c, int original, double *pixel_de00,
		    double *scielab, bl_err *err)
{
	struct plan_raster obs = { 0 };
	const float *t;
	int rc;

	if ((rc = run_canvas_to_raster(r, c, &obs, err)))
		return rc;
	if (!(rc = target_lab(r, obs.w, obs.h, err))) {
		t = target_as(r, original);
		if (!(rc = scielab_de00_pixels(obs.px, t, obs.w, obs.h, pixel_de00, NULL, err)))
			rc = scielab_mean(obs.px, t, obs.w, obs.h, 1.0, RUN_VIEW_DISTANCE_MM, scielab,
					  err);
	}
	plan_raster_free(&obs);
	return rc;
}

/* The observed canvas as sRGB (out of gamut: black). */
static int canvas_rgb(const struct run_canvas *c, struct img *im, bl_err *err)
{
	int rc = img_alloc(im, c->w, c->h, err);

	if (rc)
		return rc;
	for (size_t i = 0; i < (size_t)c->w * c->h; i++) {
		color_lab l = { c->lab[3 * i], c->lab[3 * i + 1], c->lab[3 * i + 2] };
		color_rgb rgb;
		int in_gamut;

		if (color_lab_to_srgb(&l, &rgb, &in_gamut, NULL) == 0)
			color_rgb_to_u8(&rgb, im->px + 3 * i);
		else
			memset(im->px + 3 * i, 0, 3);
	}
	return 0;
}

int run_canvas_save_png(const struct run_canvas *c, const char *path, bl_err *err)
{
	struct img im = { 0 };
	int rc = canvas_rgb(c, &im, err);

	if (rc == 0)
		rc = img_save(path, &im, err);
	img_free(&im);
	return rc;
}

/*
 * canvas-latest.png: the canvas at every look (the blank one, each paint
 * batch's verification, each checkpoint), so that a person (and the console)
 * sees the painting from the first look on. Renamed into place without
 * fsyncs: the next look writes it again, and nothing is judged on it.
 */
static int save_latest(const struct run *r, const struct run_canvas *c, bl_err *err)
{
	char path[RUN_PATH_MAX];
	struct img im = { 0 };
	unsigned char *png = NULL;
	size_t len;
	int rc;

	if ((rc = run_path(r, "canvas-latest.png", path, sizeof(path), err)) ||
	    (rc = canvas_rgb(c, &im, err)) || (rc = img_encode_png(&im, &png, &len, err)))
		goto out;
	rc = fs_write_replace(path, png, len, err);
out:
	free(png);
	img_free(&im);
	return rc;
}

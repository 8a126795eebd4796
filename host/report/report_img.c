/* report_img.c: the canvas and its CIEDE2000 map at each observation, drawn from the frame it rests on through the run's own calibrated pipeline. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include "base/fs.h"
#include "base/json.h"
#include "report/report_int.h"
#include "vision/canvas.h"
#include "vision/image.h"
#include "vision/light.h"
#include "vision/measure.h"

/* Pixels a map cell is drawn with (the plan's cells are 10 mm: the map is as wide as the canvas picture at 0.8 px/mm). */
#define MAP_CELL_PX 8

/* The camera as the run saw through it: profile, light map, lamp reference, canvas geometry, and the target. */
struct eye {
	struct meas_profile *prof;
	struct vis_light light;
	int have_light;
	struct vis_lamp *lamp;
	struct vis_canvas geom;
	struct img target;
	float *target_lab;       /* the target on the picture's raster, tw x th */
	int tw, th;
};

static void eye_close(struct eye *e)
{
	meas_profile_close(e->prof);
	if (e->have_light)
		vis_light_free(&e->light);
	free(e->lamp);
	img_free(&e->target);
	free(e->target_lab);
	memset(e, 0, sizeof(*e));
}

/* What the engine loads for a run (machine.json's calibration, lamp.json, canvas.json), read the same way. */
static int eye_open(const struct report *r, struct eye *e, bl_err *err)
{
	const struct machine *m = &r->m;
	char p[REPORT_PATH_MAX];
	cJSON *root;
	int rc;

	memset(e, 0, sizeof(*e));
	if ((rc = meas_profile_open(m->calibration.camera_profile, &e->prof, err)))
		return rc;
	if (m->calibration.light_map[0]) {
		if ((rc = vis_light_load(m->calibration.light_map, &e->light, err)))
			return rc;
		e->have_light = 1;
	}
	snprintf(p, sizeof(p), "%s/lamp.json", r->dir);
	if (access(p, F_OK) == 0) {
		if (!(e->lamp = malloc(sizeof(*e->lamp))))
			return bl_fail(err, BL_ENOMEM, "out of memory");
		if ((rc = json_parse_file(p, &root, err)))
			return rc;
		rc = vis_lamp_from_json(root, p, e->lamp, err);
		cJSON_Delete(root);
		if (rc)
			return rc;
	}
	if (m->calibration.canvas[0])
		snprintf(p, sizeof(p), "%s", m->calibration.canvas);
	else
		snprintf(p, sizeof(p), "%s/canvas.json", r->dir);
	if (access(p, R_OK) != 0)
		return bl_fail(err, BL_EINVAL, "%s: missing (the frames cannot be rectified without "
			       "the canvas geometry the run found)", p);
	if ((rc = vis_canvas_load(p, &e->geom, err)))
		return rc;
	snprintf(p, sizeof(p), "%s/%s", r->dir, r->target);
	return img_load(p, m->camera.max_pixels, &e->target, err);
}

/*
 * A picture of the report: a PNG renamed into place without fsyncs (drawn
 * again from its frame whenever it is missing or empty, so a crash loses
 * nothing; twenty fsyncs would cost the end of a run twenty seconds on a
 * busy disk).
 */
static int save_png(const char *path, const struct img *im, bl_err *err)
{
	unsigned char *buf;
	size_t len;
	int rc = img_encode_png(im, &buf, &len, err);

	if (rc)
		return bl_err_prefix(err, "%s", path);
	rc = fs_write_replace(path, buf, len, err);
	free(buf);
	return rc;
}

/* Whether a picture drawn earlier is there (an empty one is what a power loss may leave). */
static int drawn_before(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 && sb.st_size > 0;
}

/* An observation's Lab as an sRGB picture. */
static int save_lab_png(const float *lab, int w, int h, const char *path, bl_err *err)
{
	struct img im = { 0 };
	int rc = img_alloc(&im, w, h, err);

	if (rc)
		return rc;
	for (size_t i = 0; i < (size_t)w * h; i++) {
		const double l[3] = { lab[3 * i], lab[3 * i + 1], lab[3 * i + 2] };

		report_lab_rgb(l, im.px + 3 * i);
	}
	rc = save_png(path, &im, err);
	img_free(&im);
	return rc;
}

/* The picture's rectangle of a w x h canvas raster (1 px/mm), as the checkpoints compare it. */
static void picture_box(const struct plan *p, int w, int h, int box[4])
{
	box[0] = (int)floor(p->image_mm[0]);
	box[1] = (int)floor(p->image_mm[1]);
	box[2] = (int)lround(p->image_mm[2]);
	box[3] = (int)lround(p->image_mm[3]);
	if (box[0] + box[2] > w)
		box[2] = w - box[0];
	if (box[1] + box[3] > h)
		box[3] = h - box[1];
}

/* The CIEDE2000 map of the picture's part of a canvas raster against the target, drawn to path. */
static int save_map(const struct report *r, struct eye *e, const float *lab, int w, int h,
		    const char *path, bl_err *err)
{
	struct meas_map map = { 0 };
	struct img pic = { 0 };
	float *obs = NULL;
	int box[4], rc;

	picture_box(&r->plan, w, h, box);
	if (box[0] < 0 || box[1] < 0 || box[2] < 1 || box[3] < 1)
		return bl_fail(err, BL_EINVAL, "%s/plan.json: the picture lies outside the observed "
			       "canvas", r->dir);
	if (!e->target_lab || e->tw != box[2] || e->th != box[3]) {
		free(e->target_lab);
		e->tw = box[2];
		e->th = box[3];
		if (!(e->target_lab = malloc((size_t)e->tw * e->th * 3 * sizeof(float))))
			return bl_fail(err, BL_ENOMEM, "out of memory");
		if ((rc = meas_target_lab(&e->target, r->target, e->tw, e->th, e->target_lab, err)))
			return rc;
	}
	if (!(obs = malloc((size_t)box[2] * box[3] * 3 * sizeof(float))))
		return bl_fail(err, BL_ENOMEM, "out of memory");
	for (int y = 0; y < box[3]; y++)
		memcpy(obs + (size_t)y * box[2] * 3, lab + ((size_t)(box[1] + y) * w + box[0]) * 3,
		       (size_t)box[2] * 3 * sizeof(float));
	rc = meas_de_map(obs, e->target_lab, box[2], box[3], 1.0, r->plan.cell_mm, 0, &map, err);
	if (rc == 0)
		rc = meas_map_image(&map, MAP_CELL_PX, &pic, err);
	if (rc == 0)
		rc = save_png(path, &pic, err);
	img_free(&pic);
	meas_map_free(&map);
	free(obs);
	return rc;
}

/* One frame through the pipeline the engine observed it with: lamp, light map, canvas, profile. */
static int draw(const struct report *r, struct eye *e, const char *frame, const char *canvas_png,
		const char *map_png, bl_err *err)
{
	char p[REPORT_PATH_MAX];
	struct img im = { 0 }, rect = { 0 };
	struct vis_geometry g;
	double ratio[3];
	float *lab = NULL;
	int rc;

	snprintf(p, sizeof(p), "%s/frames/%s", r->dir, frame);
	if ((rc = img_load(p, r->m.camera.max_pixels, &im, err)))
		goto out;
	if (e->lamp && (rc = vis_lamp_ratio(e->lamp, &im, p, ratio, err)))
		goto out;
	if ((e->have_light || e->lamp) &&
	    (rc = vis_light_apply(e->have_light ? &e->light : NULL, e->lamp ? ratio : NULL, &im, err)))
		goto out;
	if ((rc = vis_locate(&im, p, &e->geom, NULL, &g, err)) ||
	    (rc = vis_rectify(&im, &g, 1.0, &rect, err)))
		goto out;
	if (!(lab = malloc((size_t)rect.w * rect.h * 3 * sizeof(float)))) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = meas_lab_raster(e->prof, &rect, lab, err)) ||
	    (rc = save_map(r, e, lab, rect.w, rect.h, map_png, err)))
		goto out;
	rc = save_lab_png(lab, rect.w, rect.h, canvas_png, err);
out:
	free(lab);
	img_free(&rect);
	img_free(&im);
	/* A frame that cannot be read or rectified is a damaged file of the run: bad input. */
	return rc == BL_ENOMEM || rc == 0 ? rc : bl_fail(err, BL_EINVAL, "%s", err->msg);
}

/* The map's colours from 0 to 25 CIEDE2000, drawn by the map's own ramp (report/legend.png). */
static int draw_legend(const struct report *r, bl_err *err)
{
	char p[REPORT_PATH_MAX];
	float de[100 * 4];
	struct meas_map map = { .cols = 100, .rows = 4, .cell_mm = 1, .de = de };
	struct img pic = { 0 };
	int rc;

	snprintf(p, sizeof(p), "%s/" REPORT_DIR "/legend.png", r->dir);
	if (drawn_before(p))
		return 0;
	for (int i = 0; i < 400; i++)
		de[i] = (float)(i % 100) * 0.25f;
	if ((rc = meas_map_image(&map, 3, &pic, err)) == 0)
		rc = save_png(p, &pic, err);
	img_free(&pic);
	return rc;
}

int report_images(struct report *r, bl_err *err)
{
	struct eye e;
	cJSON *o;
	int rc = 0, opened = 0;

	if ((rc = draw_legend(r, err)))
		return rc;
	cJSON_ArrayForEach(o, r->obs) {
		char stem[128], canvas[REPORT_PATH_MAX], map[REPORT_PATH_MAX], rel[2][300];
		const char *frame = report_str(o, "frame");

		const char *dot = strrchr(frame, '.');

		/* frames/000021-c1.s7.jpg: the stem keeps the subtask's dot. */
		snprintf(stem, sizeof(stem), "%.*s", (int)(dot ? dot - frame : (long)strlen(frame)), frame);
		snprintf(rel[0], sizeof(rel[0]), REPORT_DIR "/%s-canvas.png", stem);
		snprintf(rel[1], sizeof(rel[1]), REPORT_DIR "/%s-map.png", stem);
		snprintf(canvas, sizeof(canvas), "%s/%s", r->dir, rel[0]);
		snprintf(map, sizeof(map), "%s/%s", r->dir, rel[1]);
		if (!drawn_before(canvas) || !drawn_before(map)) {
			if (!opened) {
				opened = 1;
				if ((rc = eye_open(r, &e, err)))
					goto out;
			}
			if ((rc = draw(r, &e, frame, canvas, map, err)))
				goto out;
			r->drawn += 2;
		}
		cJSON_AddStringToObject(o, "canvas", rel[0]);
		cJSON_AddStringToObject(o, "map", rel[1]);
	}
out:
	if (opened)
		eye_close(&e);
	return rc;
}

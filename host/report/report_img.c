/* report_img.c: the pictures report.html embeds, drawn once into report/ at the size the page shows them: each observation's canvas and CIEDE2000 map over the picture's rectangle, the target over the same, the mix frames' thumbnails, the map's legend. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include "base/fs.h"
#include "base/json.h"
#include "cv/cv.h"
#include "report/report_int.h"
#include "vision/canvas.h"
#include "vision/image.h"
#include "vision/light.h"
#include "vision/measure.h"

/* px wide of a mix frame's thumbnail: shown 120 CSS px wide, sharp on a phone's screen of 2 device px a CSS px. */
#define THUMB_W 240
/* JPEG quality of the canvas pictures, the target and the thumbnails: ten times smaller than PNG, no visible loss at their size. */
#define PIC_JPEG_QUALITY 85

/* The camera as the run saw through it (profile, light map, lamp reference, canvas geometry), and the target on the picture's raster. */
struct eye {
	int open;                /* the camera's part is loaded (only a frame to draw needs it) */
	struct meas_profile *prof;
	struct vis_light light;
	int have_light;
	struct vis_lamp *lamp;
	struct vis_canvas geom;
	float *target_lab;       /* the target over the picture's rectangle at 1 px/mm, box[2] x box[3] */
};

static void eye_close(struct eye *e)
{
	meas_profile_close(e->prof);
	if (e->have_light)
		vis_light_free(&e->light);
	free(e->lamp);
	free(e->target_lab);
	memset(e, 0, sizeof(*e));
}

/* The target as the run compares it: its Lab (embedded profile honoured) over the picture's rectangle. */
static int eye_target(const struct report *r, struct eye *e, bl_err *err)
{
	char p[REPORT_PATH_MAX];
	struct img target = { 0 };
	int rc;

	if (e->target_lab)
		return 0;
	snprintf(p, sizeof(p), "%s/%s", r->dir, r->target);
	if ((rc = img_load(p, r->m.camera.max_pixels, &target, err)))
		return rc;
	if (!(e->target_lab = malloc((size_t)r->box[2] * r->box[3] * 3 * sizeof(float))))
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
	else
		rc = meas_target_lab(&target, r->target, r->box[2], r->box[3], e->target_lab, err);
	img_free(&target);
	return rc;
}

/* What the engine loads for a run (machine.json's calibration, lamp.json, canvas.json), read the same way. */
static int eye_open(const struct report *r, struct eye *e, bl_err *err)
{
	const struct machine *m = &r->m;
	char p[REPORT_PATH_MAX];
	cJSON *root;
	int rc;

	if (e->open)
		return 0;
	e->open = 1;
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
	return vis_canvas_load(p, &e->geom, err);
}

/*
 * A picture of the report, PNG or JPEG by its name, renamed into place
 * without fsyncs (drawn again from its frame whenever it is missing or empty,
 * so a crash loses nothing; twenty fsyncs would cost the end of a run twenty
 * seconds on a busy disk).
 */
static int save_pic(const char *path, const struct img *im, bl_err *err)
{
	size_t n = strlen(path), len;
	unsigned char *buf;
	int rc = n > 4 && !strcmp(path + n - 4, ".png") ? img_encode_png(im, &buf, &len, err)
						       : img_encode_jpeg(im, PIC_JPEG_QUALITY, &buf, &len, err);

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

/* w x h Lab as an sRGB picture (out of gamut clipped). */
static int save_lab(const float *lab, int w, int h, const char *path, bl_err *err)
{
	struct img im = { 0 };
	int rc = img_alloc(&im, w, h, err);

	if (rc)
		return rc;
	for (size_t i = 0; i < (size_t)w * h; i++) {
		const double l[3] = { lab[3 * i], lab[3 * i + 1], lab[3 * i + 2] };

		report_lab_rgb(l, im.px + 3 * i);
	}
	rc = save_pic(path, &im, err);
	img_free(&im);
	return rc;
}

/*
 * The CIEDE2000 map of obs (the picture's rectangle, 1 px/mm) against the
 * target, drawn at 1 px/mm over exactly that rectangle: cells the rectangle
 * cuts are drawn cut, so the map and the canvas picture cover the same ground.
 */
static int save_map(const struct report *r, const float *obs, const float *target, const char *path,
		    bl_err *err)
{
	const int w = r->box[2], h = r->box[3], cpx = (int)lround(r->cell_mm);
	struct meas_map map = { 0 };
	struct img cells = { 0 }, pic = { 0 };
	int rc;

	if ((rc = meas_de_map(obs, target, w, h, 1.0, r->cell_mm, 0, &map, err)) ||
	    (rc = meas_map_image(&map, cpx, &cells, err)) || (rc = img_alloc(&pic, w, h, err)))
		goto out;
	for (int y = 0; y < h; y++)
		memcpy(pic.px + (size_t)y * w * 3, cells.px + (size_t)y * cells.w * 3, (size_t)w * 3);
	rc = save_pic(path, &pic, err);
out:
	img_free(&pic);
	img_free(&cells);
	meas_map_free(&map);
	return rc;
}

/* One frame through the pipeline the engine observed it with (lamp, light map, canvas, profile), cut to the picture's rectangle. */
static int draw(const struct report *r, struct eye *e, const char *frame, const char *canvas_pic,
		const char *map_pic, bl_err *err)
{
	char p[REPORT_PATH_MAX];
	struct img im = { 0 }, rect = { 0 };
	struct vis_geometry g;
	const int *box = r->box;
	double ratio[3];
	float *lab = NULL, *obs = NULL;
	int rc;

	snprintf(p, sizeof(p), "%s/frames/%s", r->dir, frame);
	if ((rc = eye_open(r, e, err)) || (rc = eye_target(r, e, err)) ||
	    (rc = img_load(p, r->m.camera.max_pixels, &im, err)))
		goto out;
	if (e->lamp && (rc = vis_lamp_ratio(e->lamp, &im, p, ratio, err)))
		goto out;
	if ((e->have_light || e->lamp) &&
	    (rc = vis_light_apply(e->have_light ? &e->light : NULL, e->lamp ? ratio : NULL, &im, err)))
		goto out;
	if ((rc = vis_locate(&im, p, &e->geom, NULL, &g, err)) ||
	    (rc = vis_rectify(&im, &g, 1.0, &rect, err)))
		goto out;
	if (box[0] + box[2] > rect.w || box[1] + box[3] > rect.h) {
		rc = bl_fail(err, BL_EINVAL, "%s/plan.json: the picture lies outside the observed "
			     "canvas", r->dir);
		goto out;
	}
	lab = malloc((size_t)rect.w * rect.h * 3 * sizeof(float));
	obs = malloc((size_t)box[2] * box[3] * 3 * sizeof(float));
	if (!lab || !obs) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out;
	}
	if ((rc = meas_lab_raster(e->prof, &rect, lab, err)))
		goto out;
	for (int y = 0; y < box[3]; y++)
		memcpy(obs + (size_t)y * box[2] * 3, lab + ((size_t)(box[1] + y) * rect.w + box[0]) * 3,
		       (size_t)box[2] * 3 * sizeof(float));
	if ((rc = save_map(r, obs, e->target_lab, map_pic, err)) == 0)
		rc = save_lab(obs, box[2], box[3], canvas_pic, err);
out:
	free(obs);
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
		rc = save_pic(p, &pic, err);
	img_free(&pic);
	return rc;
}

/* report/target.jpg: the target over the picture's rectangle, as the canvas pictures beside it. */
static int draw_target(struct report *r, struct eye *e, bl_err *err)
{
	char p[REPORT_PATH_MAX];
	int rc;

	snprintf(p, sizeof(p), "%s/" REPORT_DIR "/target.jpg", r->dir);
	if (drawn_before(p))
		return 0;
	if ((rc = eye_target(r, e, err)) || (rc = save_lab(e->target_lab, r->box[2], r->box[3], p, err)))
		return rc;
	r->drawn++;
	return 0;
}

/* report/NAME-thumb.jpg: a frame of frames/ THUMB_W px wide. */
static int draw_thumb(struct report *r, const char *frame, const char *path, bl_err *err)
{
	char p[REPORT_PATH_MAX];
	struct img im = { 0 }, small = { 0 };
	int rc, w, h;

	snprintf(p, sizeof(p), "%s/frames/%s", r->dir, frame);
	if ((rc = img_load(p, r->m.camera.max_pixels, &im, err)))
		return rc == BL_ENOMEM ? rc : bl_fail(err, BL_EINVAL, "%s", err->msg);
	w = im.w < THUMB_W ? im.w : THUMB_W;
	h = (int)lround((double)im.h * w / im.w);
	if ((rc = img_alloc(&small, w, h > 0 ? h : 1, err)) == 0) {
		struct cv_view s = { im.px, im.w, im.h, im.w * 3, 3 };
		struct cv_view d = { small.px, small.w, small.h, small.w * 3, 3 };

		if ((rc = cv_resize(&s, &d, err)) == 0 && (rc = save_pic(path, &small, err)) == 0)
			r->drawn++;
	}
	img_free(&small);
	img_free(&im);
	return rc;
}

/* The file name of frame with its extension replaced by suffix, under report/ (000021-c1.s7.jpg keeps the subtask's dot). */
static void pic_name(const char *frame, const char *suffix, char *out, size_t n)
{
	const char *dot = strrchr(frame, '.');

	snprintf(out, n, REPORT_DIR "/%.*s%s", (int)(dot ? dot - frame : (long)strlen(frame)), frame,
		 suffix);
}

static int draw_observations(struct report *r, struct eye *e, bl_err *err)
{
	cJSON *o;
	int rc;

	cJSON_ArrayForEach(o, r->obs) {
		char rel[2][300], canvas[REPORT_PATH_MAX], map[REPORT_PATH_MAX];
		const char *frame = report_str(o, "frame");

		pic_name(frame, "-canvas.jpg", rel[0], sizeof(rel[0]));
		pic_name(frame, "-map.png", rel[1], sizeof(rel[1]));
		snprintf(canvas, sizeof(canvas), "%s/%s", r->dir, rel[0]);
		snprintf(map, sizeof(map), "%s/%s", r->dir, rel[1]);
		if (!drawn_before(canvas) || !drawn_before(map)) {
			if ((rc = draw(r, e, frame, canvas, map, err)))
				return rc;
			r->drawn += 2;
		}
		cJSON_AddStringToObject(o, "canvas", rel[0]);
		cJSON_AddStringToObject(o, "map", rel[1]);
	}
	return 0;
}

static int draw_thumbs(struct report *r, bl_err *err)
{
	const cJSON *c;
	cJSON *a;
	int rc;

	cJSON_ArrayForEach(c, r->mixes)
		cJSON_ArrayForEach(a, cJSON_GetObjectItem(c, "attempts")) {
			char rel[300], path[REPORT_PATH_MAX];

			pic_name(report_str(a, "frame"), "-thumb.jpg", rel, sizeof(rel));
			snprintf(path, sizeof(path), "%s/%s", r->dir, rel);
			if (!drawn_before(path) && (rc = draw_thumb(r, report_str(a, "frame"), path, err)))
				return rc;
			cJSON_AddStringToObject(a, "thumb", rel);
		}
	return 0;
}

/* The last look at the canvas, drawn even when it is a paint batch's (the latest canvas of a run still running). */
static int draw_latest(struct report *r, struct eye *e, bl_err *err)
{
	cJSON *o = cJSON_GetArrayItem(r->looks, cJSON_GetArraySize(r->looks) - 1);
	char rel[2][300], canvas[REPORT_PATH_MAX], map[REPORT_PATH_MAX];
	int rc;

	if (!o || cJSON_GetObjectItem(o, "canvas"))
		return 0; /* none, or one of obs, drawn already */
	pic_name(report_str(o, "frame"), "-canvas.jpg", rel[0], sizeof(rel[0]));
	pic_name(report_str(o, "frame"), "-map.png", rel[1], sizeof(rel[1]));
	snprintf(canvas, sizeof(canvas), "%s/%s", r->dir, rel[0]);
	snprintf(map, sizeof(map), "%s/%s", r->dir, rel[1]);
	if (!drawn_before(canvas) || !drawn_before(map)) {
		if ((rc = draw(r, e, report_str(o, "frame"), canvas, map, err)))
			return rc;
		r->drawn += 2;
	}
	cJSON_AddStringToObject(o, "canvas", rel[0]);
	cJSON_AddStringToObject(o, "map", rel[1]);
	return 0;
}

int report_images(struct report *r, bl_err *err)
{
	char p[REPORT_PATH_MAX];
	struct eye e = { 0 };
	int rc;

	snprintf(p, sizeof(p), "%s/" REPORT_DIR, r->dir);
	if (r->box[2] < 1 || r->box[3] < 1 || r->box[0] < 0 || r->box[1] < 0)
		return bl_fail(err, BL_EINVAL, "%s/plan.json: the picture's rectangle is empty", r->dir);
	if ((rc = fs_mkdirs(p, err)) || (rc = draw_legend(r, err)) || (rc = draw_target(r, &e, err)) ||
	    (rc = draw_observations(r, &e, err)) || (rc = draw_latest(r, &e, err)))
		goto out;
	rc = draw_thumbs(r, err);
out:
	eye_close(&e);
	return rc;
}

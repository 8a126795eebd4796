/* cli_measure.c: `brushloop measure`: the colour of a region, of every patch of a truth file, or the canvas against its target as a CIEDE2000 map. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/log.h"
#include "calib/calib.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "color/color.h"
#include "config/machine.h"
#include "vision/canvas.h"
#include "vision/light.h"
#include "vision/measure.h"
#include "vision/observe.h"

#define MAX_TRUTH_PATCHES 1024

struct measure_opts {
	const char *image, *profile, *machine, *truth, *target, *geometry, *errmap, *raster;
	struct meas_roi roi;
	int have_roi, canvas, json, worst;
	double cell_mm, px_per_mm;
};

static cJSON *vec3(const double *v)
{
	return cJSON_CreateDoubleArray(v, 3);
}

static void lab_arr(const color_lab *c, double v[3])
{
	v[0] = c->L;
	v[1] = c->a;
	v[2] = c->b;
}

static void warn_uncalibrated(const struct meas_profile *p)
{
	if (!meas_profile_calibrated(p))
		log_warn("no camera profile (--profile, or calibration.camera_profile in the machine "
			 "file): colours are measured as if the camera were sRGB and are uncalibrated");
}

static int measure_roi(const struct measure_opts *o, const struct img *im,
		       const struct meas_profile *p)
{
	struct meas_swatch s;
	bl_err err = { 0 };
	double lab[3];

	if (meas_swatch(im, o->image, &o->roi, p, &s, &err))
		return cli_fail(&err);
	lab_arr(&s.lab, lab);
	if (s.saturated)
		log_warn("%s: most of the region has a channel at 254 or 255: the colour may lie "
			 "beyond what the camera recorded (lower the exposure)", o->image);
	if (o->json) {
		cJSON *j = cJSON_CreateObject(), *rej;
		const int roi[4] = { o->roi.x, o->roi.y, o->roi.w, o->roi.h };

		if (!j)
			return BL_EXIT_FAIL;
		cJSON_AddStringToObject(j, "image", o->image);
		cJSON_AddItemToObject(j, "roi", cJSON_CreateIntArray(roi, 4));
		cJSON_AddItemToObject(j, "lab", vec3(lab));
		cJSON_AddItemToObject(j, "stddev", vec3(s.stddev));
		cJSON_AddNumberToObject(j, "pixels", (double)s.pixels);
		cJSON_AddNumberToObject(j, "total", (double)s.total);
		rej = cJSON_AddObjectToObject(j, "rejected");
		if (rej) {
			cJSON_AddNumberToObject(rej, "clipped", (double)s.clipped);
			cJSON_AddNumberToObject(rej, "edges", (double)s.edges);
			cJSON_AddNumberToObject(rej, "outliers", (double)s.outliers);
		}
		cJSON_AddItemToObject(j, "rgb_linear", vec3(s.rgb_linear));
		cJSON_AddBoolToObject(j, "saturated", s.saturated);
		cJSON_AddStringToObject(j, "profile", meas_profile_name(p));
		cJSON_AddBoolToObject(j, "calibrated", meas_profile_calibrated(p));
		return cli_print_json(j);
	}
	printf("lab:%.4f,%.4f,%.4f\n", lab[0], lab[1], lab[2]);
	printf("stddev: L %.3f a %.3f b %.3f\n", s.stddev[0], s.stddev[1], s.stddev[2]);
	printf("pixels: %ld of %ld (rejected: %ld clipped, %ld on edges, %ld outliers)\n", s.pixels,
	       s.total, s.clipped, s.edges, s.outliers);
	printf("profile: %s%s\n", meas_profile_name(p),
	       meas_profile_calibrated(p) ? "" : " (uncalibrated)");
	return 0;
}

struct truth_patch {
	char name[64];
	struct meas_roi roi;
	color_lab lab;
};

/* The sim's markers entry, read strictly though measure uses none of it: a typo is still an error. */
static int check_truth_marker(json_obj *o, const cJSON *it, size_t i, bl_err *err)
{
	json_obj mo;
	const cJSON *corners, *c;
	size_t n, k = 0;
	double v[2];
	int id, vis, rc;
	char corner[16];

	if ((rc = json_item_obj(o, "markers", it, i, &mo, err)) < 0 ||
	    (rc = json_i32(&mo, "id", JSON_REQUIRED, 0, 3, &id, err)) < 0 ||
	    (rc = json_str(&mo, "corner", JSON_REQUIRED, corner, sizeof(corner), err)) < 0 ||
	    (rc = json_vec(&mo, "center_mm", JSON_REQUIRED, 2, -1e5, 1e5, v, err)) < 0 ||
	    (rc = json_vec(&mo, "center", JSON_OPTIONAL, 2, -1e8, 1e8, v, err)) < 0 ||
	    (rc = json_bool(&mo, "visible", JSON_REQUIRED, &vis, err)) < 0 ||
	    (rc = json_array(&mo, "corners", JSON_REQUIRED, 4, &corners, &n, err)) < 0)
		return rc;
	cJSON_ArrayForEach(c, corners) {
		if (!cJSON_IsArray(c) || cJSON_GetArraySize(c) != 2 ||
		    !cJSON_IsNumber(cJSON_GetArrayItem(c, 0)) ||
		    !cJSON_IsNumber(cJSON_GetArrayItem(c, 1)))
			return json_fail(&mo, "corners", err, BL_EINVAL, "corner %zu must be [u, v] in px",
					 k);
		k++;
	}
	return json_end(&mo, err);
}

/*
 * A truth file as `brushloop sim render --truth` writes it: {"scene", "width",
 * "height", "time_s", "patches": [{"name", "roi", "lab"}], "markers": [...]};
 * only "patches" is required, and a truth made for frames of another size
 * than the image is refused.
 */
static int load_truth(const char *path, const struct img *im, struct truth_patch **out, int *n,
		      bl_err *err)
{
	cJSON *root;
	json_obj o, po;
	const cJSON *arr, *it;
	size_t count, i = 0;
	struct truth_patch *p = NULL;
	char scene[32];
	double size[2] = { 0, 0 }, t;
	int rc;

	*out = NULL;
	*n = 0;
	rc = json_parse_file(path, &root, err);
	if (rc)
		return rc;
	if ((rc = json_obj_open(root, path, "", &o, err)) < 0)
		goto out_free;
	if ((rc = json_str(&o, "scene", JSON_OPTIONAL, scene, sizeof(scene), err)) < 0 ||
	    (rc = json_num(&o, "width", JSON_OPTIONAL, 1, 1e6, &size[0], err)) < 0 ||
	    (rc = json_num(&o, "height", JSON_OPTIONAL, 1, 1e6, &size[1], err)) < 0 ||
	    (rc = json_num(&o, "time_s", JSON_OPTIONAL, 0, 1e12, &t, err)) < 0)
		goto out_free;
	if ((size[0] || size[1]) && (size[0] != im->w || size[1] != im->h)) {
		rc = json_fail(&o, "width", err, BL_EINVAL,
			       "the truth is for %gx%g frames, the image is %dx%d", size[0], size[1],
			       im->w, im->h);
		goto out_free;
	}
	if ((rc = json_array(&o, "markers", JSON_OPTIONAL, 4, &arr, &count, err)) < 0)
		goto out_free;
	if (rc == 0)
		cJSON_ArrayForEach(it, arr)
			if ((rc = check_truth_marker(&o, it, i++, err)) < 0)
				goto out_free;
	i = 0;
	if ((rc = json_array(&o, "patches", JSON_REQUIRED, MAX_TRUTH_PATCHES, &arr, &count, err)) < 0)
		goto out_free;
	if (count == 0) {
		rc = json_fail(&o, "patches", err, BL_EINVAL, "no patches");
		goto out_free;
	}
	p = calloc(count, sizeof(*p));
	if (!p) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_free;
	}
	cJSON_ArrayForEach(it, arr) {
		double roi[4], lab[3];

		if ((rc = json_item_obj(&o, "patches", it, i, &po, err)) < 0 ||
		    (rc = json_str(&po, "name", JSON_REQUIRED, p[i].name, sizeof(p[i].name), err)) < 0 ||
		    (rc = json_vec(&po, "roi", JSON_REQUIRED, 4, -1e8, 1e8, roi, err)) < 0 ||
		    (rc = json_vec(&po, "lab", JSON_REQUIRED, 3, -200.0, 200.0, lab, err)) < 0 ||
		    (rc = json_end(&po, err)) < 0)
			goto out_free;
		for (int k = 0; k < 4; k++)
			if (roi[k] != floor(roi[k]) || (k >= 2 && roi[k] <= 0)) {
				rc = json_fail(&po, "roi", err, BL_EINVAL,
					       "[x, y, w, h] in whole pixels, w and h positive");
				goto out_free;
			}
		p[i].roi = (struct meas_roi){ (int)roi[0], (int)roi[1], (int)roi[2], (int)roi[3] };
		p[i].lab = (color_lab){ lab[0], lab[1], lab[2] };
		i++;
	}
	if ((rc = json_end(&o, err)) < 0)
		goto out_free;
	*out = p;
	*n = (int)count;
	p = NULL;
	rc = 0;
out_free:
	free(p);
	cJSON_Delete(root);
	return rc;
}

static int measure_truth(const struct measure_opts *o, const struct img *im,
			 const struct meas_profile *p)
{
	struct truth_patch *t;
	bl_err err = { 0 };
	cJSON *j = NULL, *arr = NULL;
	double sum = 0.0, max = 0.0;
	int n, rc;

	rc = load_truth(o->truth, im, &t, &n, &err);
	if (rc)
		return cli_fail(&err);
	if (o->json) {
		j = cJSON_CreateObject();
		arr = j ? cJSON_AddArrayToObject(j, "patches") : NULL;
		if (!arr) {
			free(t);
			cJSON_Delete(j);
			return BL_EXIT_FAIL;
		}
	} else {
		printf("%-16s %-28s %-28s %8s\n", "patch", "measured lab", "truth lab", "de00");
	}
	for (int i = 0; i < n; i++) {
		struct meas_swatch s;
		double de, a[3], b[3];
		char name[600];

		snprintf(name, sizeof(name), "%s: patch '%s'", o->image, t[i].name);
		if (meas_swatch(im, name, &t[i].roi, p, &s, &err)) {
			free(t);
			cJSON_Delete(j);
			return cli_fail(&err);
		}
		/* The report's difference goes through lcms2, the colour core's reference. */
		de = color_de00(&s.lab, &t[i].lab);
		sum += de;
		max = de > max ? de : max;
		lab_arr(&s.lab, a);
		lab_arr(&t[i].lab, b);
		if (arr) {
			cJSON *pj = cJSON_CreateObject();
			const int roi[4] = { t[i].roi.x, t[i].roi.y, t[i].roi.w, t[i].roi.h };

			cJSON_AddItemToArray(arr, pj);
			cJSON_AddStringToObject(pj, "name", t[i].name);
			cJSON_AddItemToObject(pj, "roi", cJSON_CreateIntArray(roi, 4));
			cJSON_AddItemToObject(pj, "lab", vec3(a));
			cJSON_AddItemToObject(pj, "truth_lab", vec3(b));
			cJSON_AddItemToObject(pj, "stddev", vec3(s.stddev));
			cJSON_AddNumberToObject(pj, "pixels", (double)s.pixels);
			cJSON_AddNumberToObject(pj, "de00", de);
		} else {
			char ms[64], ts[64];

			snprintf(ms, sizeof(ms), "%.2f,%.2f,%.2f", a[0], a[1], a[2]);
			snprintf(ts, sizeof(ts), "%.2f,%.2f,%.2f", b[0], b[1], b[2]);
			printf("%-16.16s %-28s %-28s %8.4f\n", t[i].name, ms, ts, de);
		}
	}
	free(t);
	if (j) {
		cJSON_AddNumberToObject(j, "mean_de00", sum / n);
		cJSON_AddNumberToObject(j, "max_de00", max);
		cJSON_AddNumberToObject(j, "count", n);
		cJSON_AddStringToObject(j, "profile", meas_profile_name(p));
		cJSON_AddBoolToObject(j, "calibrated", meas_profile_calibrated(p));
		return cli_print_json(j);
	}
	printf("%d patches: mean CIEDE2000 %.4f, max %.4f against the truth (%s%s)\n", n, sum / n,
	       max, meas_profile_name(p), meas_profile_calibrated(p) ? "" : ", uncalibrated");
	return 0;
}

/* measure --canvas --json: the canvas's figures and its worst cells as one document. */
static int canvas_json(const struct measure_opts *o, const struct vis_geometry *g, const struct meas_map *m,
		       const struct meas_profile *p)
{
	cJSON *j = cJSON_CreateObject(), *w;
	const int cells[2] = { m->cols, m->rows };

	if (!j)
		return cli_fail(&(bl_err){ BL_ENOMEM, "out of memory" });
	cJSON_AddStringToObject(j, "image", o->image);
	cJSON_AddStringToObject(j, "target", o->target);
	cJSON_AddStringToObject(j, "source", g->source == VIS_FROM_MARKERS ? "markers" : "file");
	cJSON_AddNumberToObject(j, "markers_found", g->markers_found);
	json_add_vec(j, "size_mm", g->size_mm, 2);
	json_add_vec(j, "corners_px", g->corners_px, 8);
	cJSON_AddNumberToObject(j, "px_per_mm", o->px_per_mm);
	cJSON_AddNumberToObject(j, "cell_mm", o->cell_mm);
	cJSON_AddItemToObject(j, "cells", cJSON_CreateIntArray(cells, 2));
	cJSON_AddNumberToObject(j, "mean_de00", m->mean);
	cJSON_AddNumberToObject(j, "p95_de00", m->p95);
	cJSON_AddNumberToObject(j, "max_de00", m->max);
	w = cJSON_AddArrayToObject(j, "worst");
	for (int i = 0; w && i < m->n_worst; i++) {
		const struct meas_cell *c = &m->worst[i];
		cJSON *cj = cJSON_CreateObject();
		double a[3], b[3];

		lab_arr(&c->obs, a);
		lab_arr(&c->target, b);
		cJSON_AddItemToArray(w, cj);
		cJSON_AddNumberToObject(cj, "x_mm", c->col * m->cell_mm);
		cJSON_AddNumberToObject(cj, "y_mm", c->row * m->cell_mm);
		cJSON_AddNumberToObject(cj, "de00", c->de00);
		cJSON_AddItemToObject(cj, "lab", vec3(a));
		cJSON_AddItemToObject(cj, "target_lab", vec3(b));
	}
	if (o->errmap)
		cJSON_AddStringToObject(j, "errmap", o->errmap);
	cJSON_AddStringToObject(j, "profile", meas_profile_name(p));
	cJSON_AddBoolToObject(j, "calibrated", meas_profile_calibrated(p));
	return cli_print_json(j);
}

static int measure_canvas(const struct measure_opts *o, const struct img *im,
			  struct vis_observer *ob)
{
	const struct meas_profile *p = ob->profile;
	const struct machine *m = ob->m;
	struct vis_canvas file;
	struct vis_geometry g;
	struct vis_observation seen = { 0 };
	struct img target = { 0 }, pic = { 0 };
	const struct img *raster = &seen.rect;
	struct meas_map map = { 0 };
	float *tgt = NULL;
	bl_err err = { 0 };
	const char *geom = o->geometry;
	long max_pixels = m->camera.max_pixels;
	size_t n;
	int rc;

	if (!geom && m->calibration.canvas[0])
		geom = m->calibration.canvas;
	if (geom) {
		rc = vis_canvas_load(geom, &file, &err);
		if (rc)
			return cli_fail(&err);
		if (file.error_mm > m->calibration.max_canvas_error_mm)
			log_warn("%s: its recorded error %.2f mm exceeds calibration.max_canvas_error_mm "
				 "%.2f", geom, file.error_mm, m->calibration.max_canvas_error_mm);
		ob->canvas = &file;
	}
	/* measure looks for the corner markers first, the file where they are not seen. */
	ob->use_markers = 1;
	ob->px_per_mm = o->px_per_mm;
	rc = vis_observe_locate(ob, im, o->image, &g, &err);
	if (rc == 0)
		rc = vis_observe_raster(ob, im, &g, &seen, &err);
	if (rc)
		goto out_fail;
	if (o->raster && (rc = img_save(o->raster, raster, &err)))
		goto out_fail;
	rc = img_load(o->target, max_pixels, &target, &err);
	if (rc)
		goto out_fail;
	n = (size_t)raster->w * raster->h * 3;
	tgt = malloc(n * sizeof(float));
	if (!tgt) {
		rc = bl_fail(&err, BL_ENOMEM, "out of memory");
		goto out_fail;
	}
	if ((rc = meas_target_lab(&target, o->target, raster->w, raster->h, tgt, &err)) ||
	    (rc = meas_de_map(seen.lab, tgt, raster->w, raster->h, o->px_per_mm, o->cell_mm, o->worst,
			      &map, &err)))
		goto out_fail;
	if (o->errmap) {
		rc = meas_map_image(&map, (int)lround(o->cell_mm * o->px_per_mm), &pic, &err);
		if (rc == 0)
			rc = img_save(o->errmap, &pic, &err);
		if (rc)
			goto out_fail;
	}
	if (o->json) {
		rc = canvas_json(o, &g, &map, p);
	} else {
		printf("canvas: %gx%g mm from %s (%d corner markers seen), raster %dx%d px at %g px/mm\n",
		       g.size_mm[0], g.size_mm[1],
		       g.source == VIS_FROM_MARKERS ? "the corner markers" : "the canvas file",
		       g.markers_found, raster->w, raster->h, o->px_per_mm);
		printf("CIEDE2000 over %dx%d cells of %g mm: mean %.2f, p95 %.2f, max %.2f\n",
		       map.cols, map.rows, map.cell_mm, map.mean, map.p95, map.max);
		for (int i = 0; i < map.n_worst; i++) {
			const struct meas_cell *c = &map.worst[i];

			printf("  cell at x %g, y %g mm: %.2f (lab:%.1f,%.1f,%.1f, target "
			       "lab:%.1f,%.1f,%.1f)\n",
			       c->col * map.cell_mm, c->row * map.cell_mm, c->de00, c->obs.L, c->obs.a,
			       c->obs.b, c->target.L, c->target.a, c->target.b);
		}
		if (o->errmap)
			printf("error map: %s\n", o->errmap);
		rc = 0;
	}
	goto out_free;
out_fail:
	rc = cli_fail(&err);
out_free:
	meas_map_free(&map);
	free(tgt);
	vis_observation_free(&seen);
	img_free(&target);
	img_free(&pic);
	return rc;
}

enum measure_opt {
	MEASURE_ROI, MEASURE_PROFILE, MEASURE_MACHINE, MEASURE_TRUTH, MEASURE_CANVAS, MEASURE_TARGET, MEASURE_GEOMETRY, MEASURE_CELL, MEASURE_PX_PER_MM, MEASURE_WORST, MEASURE_OUTPUT, MEASURE_RASTER, MEASURE_JSON,
	MEASURE_OPT_COUNT
};

static const struct cli_opt measure_opts[MEASURE_OPT_COUNT] = {
	[MEASURE_ROI] = { "roi", 0, "X,Y,W,H", "measure the region X,Y,W,H", 0 },
	[MEASURE_PROFILE] = { "profile", 0, "ICC", "camera ICC profile", 0 },
	[MEASURE_MACHINE] = CLI_OPT_MACHINE,
	[MEASURE_TRUTH] = { "truth", 0, "FILE", "the truth file of the frame", 0 },
	[MEASURE_CANVAS] = { "canvas", 0, NULL, "measure the canvas cell by cell against a target", 0 },
	[MEASURE_TARGET] = { "target", 0, "IMAGE", "the target image", 0 },
	[MEASURE_GEOMETRY] = { "geometry", 0, "FILE", "canvas geometry file", 0 },
	[MEASURE_CELL] = { "cell", 0, "MM", "cell size (mm)", 0 },
	[MEASURE_PX_PER_MM] = { "px-per-mm", 0, "N", "rectified resolution (px/mm)", 0 },
	[MEASURE_WORST] = { "worst", 0, "N", "list the N worst cells", 0 },
	[MEASURE_OUTPUT] = { "output", 'o', "FILE", "the file to write", 0 },
	[MEASURE_RASTER] = { "raster", 0, "FILE", "write the rectified canvas to FILE", 0 },
	[MEASURE_JSON] = CLI_OPT_JSON,
};
static const struct cli_optset measure_set = { "measure", measure_opts, MEASURE_OPT_COUNT, 0, NULL };

/* The options and the image into o: 0 or a usage exit status. */
static int measure_parse(const struct cli_command *cmd, int argc, char **argv, struct measure_opts *o)
{
	struct cli_optparse op;
	bl_err err = { 0 };
	long v;
	int opt, modes;

	cli_opt_start(&op, cmd, &measure_set, argc, argv);
	while ((opt = cli_opt_next(&op)) != CLI_OPT_END) {
		if (opt == CLI_OPT_BAD)
			return BL_EXIT_USAGE;
		switch ((enum measure_opt)opt) {
		case MEASURE_ROI:
			if (meas_roi_parse(op.arg, &o->roi, &err))
				return cli_usage(cmd, "%s", err.msg);
			o->have_roi = 1;
			break;
		case MEASURE_PROFILE:
			o->profile = op.arg;
			break;
		case MEASURE_MACHINE:
			o->machine = op.arg;
			break;
		case MEASURE_TRUTH:
			o->truth = op.arg;
			break;
		case MEASURE_CANVAS:
			o->canvas = 1;
			break;
		case MEASURE_TARGET:
			o->target = op.arg;
			break;
		case MEASURE_GEOMETRY:
			o->geometry = op.arg;
			break;
		case MEASURE_CELL:
			if (cli_parse_double("--cell", op.arg, &o->cell_mm, &err))
				return cli_usage(cmd, "%s", err.msg);
			if (o->cell_mm <= 0.0 || o->cell_mm > 1000.0)
				return cli_usage(cmd, "--cell: %g mm is outside 0..1000", o->cell_mm);
			break;
		case MEASURE_PX_PER_MM:
			if (cli_parse_double("--px-per-mm", op.arg, &o->px_per_mm, &err))
				return cli_usage(cmd, "%s", err.msg);
			if (o->px_per_mm <= 0.0 || o->px_per_mm > 20.0)
				return cli_usage(cmd, "--px-per-mm: %g is outside 0..20", o->px_per_mm);
			break;
		case MEASURE_WORST:
			if (cli_parse_long("--worst", op.arg, 0, MEAS_MAX_WORST, &v, &err))
				return cli_usage(cmd, "%s", err.msg);
			o->worst = (int)v;
			break;
		case MEASURE_OUTPUT:
			o->errmap = op.arg;
			break;
		case MEASURE_RASTER:
			o->raster = op.arg;
			break;
		case MEASURE_JSON:
			o->json = 1;
			break;
		case MEASURE_OPT_COUNT:
			break;
		}
	}
	if (argc - op.ind != 1)
		return cli_usage(cmd, "measure takes one image");
	o->image = argv[op.ind];
	modes = o->have_roi + (o->truth != NULL) + o->canvas;
	if (modes != 1)
		return cli_usage(cmd, "give exactly one of --roi, --truth or --canvas");
	if (o->canvas && !o->target)
		return cli_usage(cmd, "--canvas needs --target TARGET");
	if (!o->canvas && (o->target || o->geometry || o->errmap || o->raster))
		return cli_usage(cmd, "--target, --geometry, -o and --raster go with --canvas");
	return 0;
}

int cli_measure_main(int argc, char **argv)
{
	const struct cli_command *cmd = cli_find("measure");
	struct measure_opts o = { .cell_mm = 5.0, .px_per_mm = VIS_DEFAULT_PX_PER_MM, .worst = 5 };
	struct machine *m = NULL;
	struct meas_profile *p = NULL;
	struct vis_observer ob;
	struct vis_light lm;
	struct img im = { 0 };
	bl_err err = { 0 };
	const char *profile;
	char mpath[CFG_PATH_MAX];
	int rc;

	if ((rc = measure_parse(cmd, argc, argv, &o)))
		return rc;
	/* The machine gives the pixel limit, the camera profile and the canvas size and file. */
	cli_machine_path(o.machine, mpath, sizeof(mpath));
	m = malloc(sizeof(*m));
	if (!m)
		return BL_EXIT_FAIL;
	rc = machine_load(mpath, m, &err);
	if (rc)
		goto out_fail;
	profile = o.profile ? o.profile
		  : m->calibration.camera_profile[0] ? m->calibration.camera_profile : NULL;
	rc = meas_profile_open(profile, &p, &err);
	if (rc)
		goto out_fail;
	if (o.profile) {
		calib_profile_warn(o.profile);
	} else {
		struct calib_set cs;

		if ((rc = calib_load_machine(m, &cs, &err)))
			goto out_fail;
		calib_set_warn(&cs);
		calib_set_free(&cs);
	}
	rc = img_load(o.image, m->camera.max_pixels, &im, &err);
	if (rc)
		goto out_fail;
	/* A frame's colours are the camera's: what its file says of them is not used, and said so. */
	if (im.icc)
		log_warn("%s: its embedded colour profile (%s) is ignored: a frame is measured "
			 "through the camera profile (%s)", o.image, im.icc_from ? im.icc_from : "ICC",
			 meas_profile_name(p));
	/*
	 * The machine's light map, when the image is a frame of that camera's
	 * size, with the machine's profile or one given: the light across the
	 * view is the bench's, whichever profile reads the colours.
	 */
	vis_observer_init(&ob, m, p);
	if (m->calibration.light_map[0]) {
		rc = vis_light_load(m->calibration.light_map, &lm, &err);
		if (rc == 0 && lm.width == im.w && lm.height == im.h)
			ob.light = &lm;
		if (rc == 0)
			rc = vis_observe_light(&ob, &im, o.image, &err);
		vis_light_free(&lm);
		if (rc) {
			img_free(&im);
			goto out_fail;
		}
	}
	warn_uncalibrated(p);
	if (o.have_roi)
		rc = measure_roi(&o, &im, p);
	else if (o.truth)
		rc = measure_truth(&o, &im, p);
	else
		rc = measure_canvas(&o, &im, &ob);
	img_free(&im);
	meas_profile_close(p);
	free(m);
	return rc;
out_fail:
	meas_profile_close(p);
	free(m);
	return cli_fail(&err);
}

const struct cli_optset *const cli_measure_sets[] = { &measure_set, NULL };

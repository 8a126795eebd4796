/* calib_mixbench.c: the mixing trial's bench: cells filled and stirred on the simulator, photographed, measured through the profile and light map a run would use, and its truth beside. */
#include "calib/calib_mixbench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "plan/plan.h"
#include "sim/sim.h"
#include "vision/cam_open.h"
#include "vision/station.h"


/* The bench's observer, as the run's: its profile, light map and lamp. */
static void bench_observer(const struct calib_mixbench *b, struct vis_observer *o)
{
	vis_observer_init(o, b->m, b->profile);
	o->light = b->has_light ? &b->light : NULL;
	o->lamp = b->lamp;
	/* Where the canvas lies, as the run finds it: calibration.canvas, else the corner markers. */
	if (b->has_cs && b->cs.has_canvas) {
		o->canvas = &b->cs.canvas;
		o->use_markers = 0;
	}
}

/*
 * A frame from the sim camera for measurement: controls locked,
 * camera.average_frames averaged, the light divided out as the engine
 * divides it out of every frame it measures: the map, and the lamp's change
 * since the bare frame. raw (may be NULL) gets the frame as the camera gave it.
 */
static int bench_frame(struct calib_mixbench *b, enum sim_scene scene, struct img *im, struct img *raw,
		       bl_err *err)
{
	int rc;

	sim_set_scene(b->sim, scene);
	if ((rc = cam_capture_for_measurement(b->rig.cam, im, err)))
		return rc;
	if (raw && (rc = img_alloc(raw, im->w, im->h, err)) == 0)
		memcpy(raw->px, im->px, (size_t)im->w * im->h * 3);
	if (rc == 0 && b->has_light) {
		struct vis_observer o;

		bench_observer(b, &o);
		rc = vis_observe_light(&o, im, "the sim camera's frame", err);
		memcpy(b->lamp_now, o.lamp_now, sizeof(b->lamp_now));
	}
	if (rc)
		img_free(im);
	return rc;
}

/* The light map's gain over the cells' regions, for the report. */
static int light_at_cells(struct calib_mixbench *b, bl_err *err)
{
	b->light_min = 1e9;
	b->light_max = 0.0;
	for (int i = 0; i < b->m->n_cells; i++) {
		struct meas_roi r;
		int rc = vis_station_roi(&b->g, b->m, &b->m->cells[i], &r, err);
		double l;

		if (rc)
			return rc;
		l = vis_light_at(&b->light, r.x + 0.5 * r.w, r.y + 0.5 * r.h);
		b->light_min = fmin(b->light_min, l);
		b->light_max = fmax(b->light_max, l);
	}
	return 0;
}

static int bench_calibrate(struct calib_mixbench *b, int light, bl_err *err)
{
	const struct machine *m = b->m;
	const int make_profile = !m->calibration.camera_profile[0];
	const int make_light = light && !m->calibration.light_map[0];
	struct calib_chart *chart = malloc(sizeof(*chart));
	struct calib_camera_result *r = NULL;
	struct img chart_im = { 0 }, flat = { 0 }, bare = { 0 }, bare_raw = { 0 };
	struct vis_observer o;
	int rc;

	if (!chart)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	/* The chart and the flat card as the camera gives them: calibration sees them uncorrected. */
	if ((rc = cam_lock_controls(b->rig.cam, err)) ||
	    (rc = calib_chart_builtin("colorchecker24", chart, err)) ||
	    (rc = bench_frame(b, SIM_SCENE_CHART, &chart_im, NULL, err)) ||
	    (light && (make_profile || make_light) &&
	     (rc = bench_frame(b, SIM_SCENE_FLAT, &flat, NULL, err))))
		goto out_free;
	if (make_profile || make_light) {
		/* One session, as `calib camera [--flat F --light-map MAP]` runs it. */
		struct calib_camera_opts co = { 0 };

		co.chart = chart;
		co.frame_name = "the sim camera's chart frame";
		co.flat = flat.px ? &flat : NULL;
		co.flat_name = "the sim camera's flat frame";
		co.model = -1;
		if ((rc = calib_camera_run(&chart_im, &co, &r, err)))
			goto out_free;
	}
	if (!make_profile) {
		if ((rc = calib_load_machine(m, &b->cs, err)))
			goto out_free;
		b->has_cs = 1;
		b->profile = b->cs.profile;
		snprintf(b->profile_source, sizeof(b->profile_source),
			 "the machine file's calibration.camera_profile %s", m->calibration.camera_profile);
	} else {
		cJSON *truth = NULL;

		if (r->held_out.mean_de00 > m->calibration.max_camera_de00) {
			rc = bl_fail(err, BL_EIO, "the camera profile made from the chart frame fails: "
				     "held-out mean %.2f CIEDE2000 exceeds calibration.max_camera_de00 "
				     "%.2f of %s", r->held_out.mean_de00,
				     m->calibration.max_camera_de00, m->file);
			goto out_free;
		}
		if ((rc = meas_profile_open_mem(r->icc, r->icc_len, "the trial's chart calibration",
						&b->profile, err)))
			goto out_free;
		b->calibrated_here = 1;
		b->calib_held_mean = r->held_out.mean_de00;
		b->calib_held_max = r->held_out.max_de00;
		b->calib_truth_held_mean = -1;
		if (sim_truth(b->sim, SIM_SCENE_CHART, &truth, err) == 0) {
			struct calib_truth_patch *tp = NULL;
			int tn;

			if (calib_truth_parse(truth, "the simulator's truth", &tp, &tn, NULL, err) == 0 &&
			    calib_camera_truth(r, tp, tn, "the simulator's truth", err) == 0)
				b->calib_truth_held_mean = r->truth_held_out.mean_de00;
			free(tp);
			cJSON_Delete(truth);
		}
		snprintf(b->profile_source, sizeof(b->profile_source),
			 "made now from a chart frame of this bench, as `calib camera` makes it "
			 "(%s model, held out mean %.2f, max %.2f CIEDE2000)", calib_model_names[r->model],
			 r->held_out.mean_de00, r->held_out.max_de00);
	}
	if (!light) {
		snprintf(b->light_source, sizeof(b->light_source), "not corrected (--no-light-correction)");
	} else if (make_light) {
		if ((rc = calib_light_map(&flat, r, CALIB_LIGHT_MAP_COLS, &b->light, err)))
			goto out_free;
		snprintf(b->light_source, sizeof(b->light_source),
			 "light map made now from the simulator's flat scene, as `calib camera --flat F "
			 "--light-map MAP` makes it (the machine file names no calibration.light_map)");
	} else {
		if ((rc = vis_light_load(m->calibration.light_map, &b->light, err)))
			goto out_free;
		snprintf(b->light_source, sizeof(b->light_source),
			 "the machine file's calibration.light_map %s", m->calibration.light_map);
	}
	b->has_light = light;
	/* The bench as it stands, the light divided out: where the canvas, and so every station, lies. */
	bench_observer(b, &o);
	if ((rc = bench_frame(b, SIM_SCENE_CANVAS, &bare, &bare_raw, err)) ||
	    (rc = vis_observe_locate(&o, &bare, "the sim camera's frame of the bare table", &b->g,
				     err)) ||
	    (b->has_light && (rc = light_at_cells(b, err))))
		goto out_free;
	/* The lamp followed from here on, as a run follows it from its first frame. */
	if (b->has_light && m->calibration.follow_lamp) {
		b->lamp = malloc(sizeof(*b->lamp));
		if (!b->lamp) {
			rc = bl_fail(err, BL_ENOMEM, "out of memory");
			goto out_free;
		}
		if ((rc = vis_lamp_reference(b->lamp, &bare_raw, "the sim camera's frame of the bare "
					     "table", &b->g, m, err)))
			goto out_free;
	}
	/* From here on the truth of the cells is read from the swatches scene's world. */
	sim_set_scene(b->sim, SIM_SCENE_SWATCHES);
out_free:
	img_free(&chart_im);
	img_free(&flat);
	img_free(&bare);
	img_free(&bare_raw);
	calib_camera_free(r);
	free(chart);
	return rc;
}

static int bench_fresh(void *ctx, bl_err *err)
{
	struct calib_mixbench *b = ctx;

	/* The next cell in turn, emptied and cleaned: the bench has a dozen. */
	b->cell = (b->cell + 1) % b->m->n_cells;
	return sim_bench_clear(b->sim, b->m->cells[b->cell].name, err);
}

static int bench_dispense(void *ctx, const int *units, bl_err *err)
{
	struct calib_mixbench *b = ctx;
	const char *cell = b->m->cells[b->cell].name;
	int rc;

	/*
	 * The person at the bench keeps the wells full: fifty mixes draw more
	 * white than a well holds, and a dry well would be measured as a mixing
	 * error (the run engine counts its wells and asks for a refill instead).
	 */
	for (int i = 0; i < b->model->n_paints; i++)
		if (units[i] > 0 && ((rc = sim_well_refill(b->sim, b->well[i], NULL, err)) ||
				     (rc = sim_bench_dispense(b->sim, b->well[i], cell, units[i], err))))
			return rc;
	if ((rc = sim_bench_stir(b->sim, cell, b->m->mixing.stir_ms, err)))
		return rc;
	/* As a plan does after stirring: the spatula washed and wiped, carrying nothing on. */
	return sim_bench_clean(b->sim, b->wash_ms, err);
}

/* The truth of the cell as it lies, from the simulator's truth of the frame just measured. */
static int cell_as_seen(struct calib_mixbench *b, const struct machine_station *st,
			const color_lab *measured, bl_err *err)
{
	struct calib_truth_patch *tp = NULL;
	cJSON *truth = NULL;
	double paint[3];
	int n = 0, rc;

	if ((rc = sim_truth(b->sim, SIM_SCENE_SWATCHES, &truth, err)) ||
	    (rc = calib_truth_parse(truth, "the simulator's truth", &tp, &n, NULL, err)) ||
	    (rc = sim_station_lab(b->sim, st->name, paint, err)))
		goto out_free;
	if (b->n_seen == b->cap_seen) {
		int cap = b->cap_seen ? 2 * b->cap_seen : 256;
		double *s1 = realloc(b->seen_de00, sizeof(double) * (size_t)cap);
		double *s2 = s1 ? realloc(b->thin_de00, sizeof(double) * (size_t)cap) : NULL;

		if (s1)
			b->seen_de00 = s1;
		if (s2)
			b->thin_de00 = s2;
		if (!s1 || !s2) {
			rc = bl_fail(err, BL_ENOMEM, "out of memory");
			goto out_free;
		}
		b->cap_seen = cap;
	}
	/* A cell still streaky after stirring has no truth as seen: it is left out. */
	for (int i = 0; i < n; i++)
		if (strcmp(tp[i].name, st->name) == 0) {
			color_lab seen = { tp[i].lab[0], tp[i].lab[1], tp[i].lab[2] };
			color_lab pl = { paint[0], paint[1], paint[2] };

			b->seen_de00[b->n_seen] = color_de00(measured, &seen);
			b->thin_de00[b->n_seen++] = color_de00(&seen, &pl);
		}
out_free:
	free(tp);
	cJSON_Delete(truth);
	return rc;
}

static int bench_measure(void *ctx, color_lab *out, bl_err *err)
{
	struct calib_mixbench *b = ctx;
	const struct machine_station *st = &b->m->cells[b->cell];
	struct meas_swatch sw;
	struct img im = { 0 };
	char name[96];
	int rc;

	snprintf(name, sizeof(name), "the sim camera's frame of cell %s", st->name);
	rc = bench_frame(b, SIM_SCENE_SWATCHES, &im, NULL, err);
	if (rc == 0) {
		struct vis_observer o;

		bench_observer(b, &o);
		rc = vis_observe_station(&o, &im, name, &b->g, st, &sw, err);
	}
	img_free(&im);
	if (rc)
		return rc;
	b->measurements++;
	*out = sw.lab;
	return cell_as_seen(b, st, out, err);
}

/* The simulator's spectrophotometric Lab of the cell's paint: reported, never decided on. */
static int bench_truth(void *ctx, color_lab *out, bl_err *err)
{
	struct calib_mixbench *b = ctx;
	double lab[3];
	int rc = sim_station_lab(b->sim, b->m->cells[b->cell].name, lab, err);

	if (rc == 0) {
		out->L = lab[0];
		out->a = lab[1];
		out->b = lab[2];
	}
	return rc;
}

void calib_mixbench_close(struct calib_mixbench *b)
{
	if (!b)
		return;
	if (b->has_cs)
		calib_set_free(&b->cs);
	else if (b->profile)
		meas_profile_close(b->profile);
	rig_close(&b->rig);
	free(b->lamp);
	vis_light_free(&b->light);
	free(b->seen_de00);
	free(b->thin_de00);
	free(b);
}

int calib_mixbench_open(const struct machine *mc, const struct palette *p,
			    const struct mix_model *model, uint64_t seed, int light,
			    struct calib_mixbench **out, struct mix_ops *ops, bl_err *err)
{
	struct rig_options ro = { 0 };
	struct calib_mixbench *b;
	int rc;

	memset(ops, 0, sizeof(*ops));
	*out = NULL;
	if (mc->camera.backend != MACHINE_CAM_SIM)
		return bl_fail(err, BL_EINVAL, "%s: mix trial runs on the simulator, and camera.backend "
			       "is '%s', not 'sim'", mc->file,
			       machine_cam_backend_names[mc->camera.backend]);
	if (mc->n_cells < 1)
		return bl_fail(err, BL_EINVAL, "%s: mix trial needs a mixing cell (zones.mixing_cells)",
			       mc->file);
	b = calloc(1, sizeof(*b));
	if (!b)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	b->cell = -1;
	b->model = model;
	{
		struct plan_options po;

		plan_options_default(&po, mc);
		b->wash_ms = po.wash_ms;
	}
	for (int i = 0; i < model->n_paints; i++) {
		int k = palette_find(p, model->name[i]);

		if (k < 0) {
			free(b);
			return bl_fail(err, BL_EINVAL, "palette %s has no paint '%s'", p->file,
				       model->name[i]);
		}
		snprintf(b->well[i], sizeof(b->well[i]), "%s", p->paints[k].well);
		/* The simulator's well must hold the paint the palette says it holds. */
		for (int j = 0; j < mc->sim.n_paints; j++)
			if (strcmp(mc->sim.paint_well[j], b->well[i]) == 0 &&
			    strcmp(mc->sim.paint_name[j], model->name[i]) != 0) {
				free(b);
				return bl_fail(err, BL_EINVAL, "palette %s puts '%s' in well %s, but %s's "
					       "sim.paints has '%s' there", p->file, model->name[i],
					       mc->sim.paint_well[j], mc->file, mc->sim.paint_name[j]);
			}
	}
	ro.seed = seed;
	ro.seed_given = 1;
	if ((rc = rig_open_camera(mc, &ro, &b->rig, err))) {
		free(b);
		return rc;
	}
	b->m = &b->rig.m;
	b->sim = b->rig.sim;
	if (!b->sim) {
		rc = bl_fail(err, BL_EINVAL, "%s: the sim camera came without its simulated world",
			     mc->file);
		goto out_fail;
	}
	if ((rc = bench_calibrate(b, light, err)))
		goto out_fail;
	ops->ctx = b;
	ops->fresh_cell = bench_fresh;
	ops->dispense = bench_dispense;
	ops->measure = bench_measure;
	ops->truth = bench_truth;
	*out = b;
	return 0;
out_fail:
	calib_mixbench_close(b);
	return rc;
}

cJSON *calib_mixbench_json(const struct mix_trial_stats *st, const struct calib_mixbench *b,
			 const struct mix_trial_spread *seen, const struct mix_trial_spread *thin)
{
	cJSON *o = mix_trial_json(st), *c;

	if (!o)
		return NULL;
	c = cJSON_GetObjectItem(o, "truth");
	if (c) {
		mix_trial_spread_json(c, "camera_vs_cell_as_seen_de00", seen);
		mix_trial_spread_json(c, "cell_as_seen_vs_paint_de00", thin);
	}
	c = cJSON_AddObjectToObject(o, "camera");
	if (c) {
		cJSON_AddStringToObject(c, "profile", b->calibrated_here ? "chart frame" : "machine file");
		cJSON_AddStringToObject(c, "profile_source", b->profile_source);
		if (b->calibrated_here) {
			cJSON_AddNumberToObject(c, "held_out_mean_de00", b->calib_held_mean);
			cJSON_AddNumberToObject(c, "held_out_max_de00", b->calib_held_max);
			if (b->calib_truth_held_mean >= 0)
				cJSON_AddNumberToObject(c, "truth_held_out_mean_de00",
							b->calib_truth_held_mean);
		}
		cJSON_AddBoolToObject(c, "light_corrected", b->has_light);
		cJSON_AddStringToObject(c, "light", !b->has_light ? "none" :
					b->m->calibration.light_map[0] ? "machine file" : "flat frame");
		cJSON_AddStringToObject(c, "light_source", b->light_source);
		if (b->has_light)
			json_add_vec(c, "light_at_cells", (double[]){ b->light_min, b->light_max }, 2);
		if (b->lamp) {
			cJSON_AddNumberToObject(c, "lamp_points", b->lamp->n);
			json_add_vec(c, "lamp_end", b->lamp_now, 3);
		}
		cJSON_AddNumberToObject(c, "measurements", b->measurements);
	}
	cJSON_AddNumberToObject(o, "simulated_h", b->time_s / 3600.0);
	return o;
}


void calib_mixbench_finish(struct calib_mixbench *b, struct mix_trial_spread *seen, struct mix_trial_spread *thin)
{
	struct sim_stats ss;

	sim_get_stats(b->sim, &ss);
	b->time_s = ss.time_s;
	mix_trial_spread_of(b->seen_de00, b->n_seen, seen);
	mix_trial_spread_of(b->thin_de00, b->n_seen, thin);
}

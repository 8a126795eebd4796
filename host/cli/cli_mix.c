/* cli_mix.c: `brushloop mix`: a recipe for a target colour, the correction of a measured mix, and `mix trial`, the closed mixing loop on the simulator's bench. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "calib/calib.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "color/mix.h"
#include "config/machine.h"
#include "config/palette.h"
#include "plan/plan.h"
#include "rig/rig.h"
#include "sim/sim.h"
#include "vision/cam_open.h"
#include "vision/light.h"
#include "vision/observe.h"
#include "vision/station.h"

/* Files shipped with brushloop: under $BL_SOURCE_ROOT, else where it was built from. */
static void source_path(char *out, size_t n, const char *rel)
{
	const char *root = getenv("BL_SOURCE_ROOT");

	snprintf(out, n, "%s/%s", root && *root ? root : BL_SOURCE_ROOT, rel);
}

static void print_units(const struct mix_model *m, const int *units, double unit_ml)
{
	for (int i = 0; i < m->n_paints; i++)
		if (units[i] > 0)
			printf("  %-20s %4d units  %6.2f ml\n", m->name[i], units[i],
			       units[i] * unit_ml);
}

static cJSON *lab_json(cJSON *o, const char *key, const color_lab *c)
{
	const double v[3] = { c->L, c->a, c->b };

	return json_add_vec(o, key, v, 3);
}

static int mix_recipe_out(const struct mix_model *m, const struct mix_limits *lim,
			  const char *palette, const color_lab *target, int json)
{
	struct mix_solution sol;
	const struct mix_recipe *r = &sol.recipe;
	bl_err err = { 0 };

	if (mix_solve(m, NULL, target, lim, &sol, &err))
		return cli_fail(&err);
	if (json) {
		cJSON *o = cJSON_CreateObject();

		if (!o)
			return BL_EXIT_FAIL;
		cJSON_AddStringToObject(o, "palette", palette);
		lab_json(o, "target_lab", target);
		cJSON_AddItemToObject(o, "recipe", mix_units_json(m, r->units));
		cJSON_AddNumberToObject(o, "total_units", r->total);
		cJSON_AddNumberToObject(o, "unit_ml", lim->unit_ml);
		cJSON_AddNumberToObject(o, "volume_ml", r->total * lim->unit_ml);
		lab_json(o, "predicted_lab", &r->predicted);
		cJSON_AddNumberToObject(o, "de00", r->de00);
		cJSON_AddBoolToObject(o, "in_gamut", sol.in_gamut);
		lab_json(o, "nearest_lab", &sol.nearest);
		cJSON_AddNumberToObject(o, "nearest_de00", sol.nearest_de00);
		cJSON_AddNumberToObject(o, "max_paints", lim->max_paints);
		cJSON_AddNumberToObject(o, "tolerance_de00", lim->tol_de00);
		return cli_print_json(o);
	}
	printf("target     lab:%.2f,%.2f,%.2f\n", target->L, target->a, target->b);
	if (!sol.in_gamut)
		printf("OUT OF GAMUT: with at most %d paints the nearest reachable colour is\n"
		       "           lab:%.2f,%.2f,%.2f, %.2f CIEDE2000 from the target (tolerance %.2f)\n"
		       "the closest recipe:\n",
		       lim->max_paints, sol.nearest.L, sol.nearest.a, sol.nearest.b,
		       sol.nearest_de00, lim->tol_de00);
	printf("recipe     %d units of %g ml, %.2f ml\n", r->total, lim->unit_ml,
	       r->total * lim->unit_ml);
	print_units(m, r->units, lim->unit_ml);
	printf("predicted  lab:%.2f,%.2f,%.2f, %.2f CIEDE2000 from the target\n", r->predicted.L,
	       r->predicted.a, r->predicted.b, r->de00);
	if (sol.in_gamut)
		printf("gamut      in gamut with at most %d paints (continuous optimum %.2f CIEDE2000)\n",
		       lim->max_paints, sol.nearest_de00);
	if (sol.in_gamut && r->de00 > lim->tol_de00)
		printf("note: the colour is in gamut, but whole units of %g ml within %d units "
		       "cannot reach the tolerance %.2f\n",
		       lim->unit_ml, lim->max_units, lim->tol_de00);
	return 0;
}

static int mix_correct_out(const struct mix_model *m, const struct mix_limits *lim,
			   const char *palette, const color_lab *target, const int *have,
			   const color_lab *measured, int json)
{
	struct mix_learn *l = calloc(1, sizeof(*l));
	struct mix_job job;
	struct mix_action act;
	bl_err err = { 0 };
	int status = 0, total = 0;

	if (!l)
		return BL_EXIT_FAIL;
	mix_learn_init(l, m->n_paints);
	memset(&job, 0, sizeof(job));
	job.target = *target;
	job.lim = *lim;
	/* One correction is asked for: no attempt limit applies here. */
	job.lim.max_attempts = 1000;
	memcpy(job.have, have, sizeof(job.have));
	for (int i = 0; i < m->n_paints; i++)
		total += have[i];
	job.cells = 1;
	job.dispensed_units = total;
	if (total > lim->max_units) {
		status = cli_usage(cli_find("mix"), "--have: %d units exceed the cell's %d", total,
				   lim->max_units);
		goto out_free;
	}
	if (mix_step(m, l, &job, measured, &act, &err)) {
		status = cli_fail(&err);
		goto out_free;
	}
	if (json) {
		cJSON *o = mix_action_json(m, &act);

		if (!o) {
			status = BL_EXIT_FAIL;
			goto out_free;
		}
		cJSON_AddStringToObject(o, "palette", palette);
		lab_json(o, "target_lab", target);
		lab_json(o, "measured_lab", measured);
		cJSON_AddItemToObject(o, "have", mix_units_json(m, have));
		cJSON_AddItemToObject(o, "learnt", mix_learn_json(m, l));
		status = cli_print_json(o);
		goto out_free;
	}
	printf("measured   lab:%.2f,%.2f,%.2f, %.2f CIEDE2000 from the target "
	       "lab:%.2f,%.2f,%.2f (tolerance %.2f)\n",
	       measured->L, measured->a, measured->b, act.measured_de00, target->L, target->a,
	       target->b, lim->tol_de00);
	switch (act.kind) {
	case MIX_ACT_DONE:
		printf("done: nothing to add\n");
		break;
	case MIX_ACT_ADD:
		printf("add to the cell (it then holds %d units, %.2f ml):\n", act.total_after,
		       act.total_after * lim->unit_ml);
		print_units(m, act.units, lim->unit_ml);
		break;
	case MIX_ACT_FRESH:
		printf("FRESH CELL: discard this one (%.2f ml) and mix:\n", total * lim->unit_ml);
		print_units(m, act.units, lim->unit_ml);
		break;
	default:
		printf("CANNOT REACH the target from here\n");
		break;
	}
	if (act.kind == MIX_ACT_ADD || act.kind == MIX_ACT_FRESH)
		printf("predicted  lab:%.2f,%.2f,%.2f, %.2f CIEDE2000 from the target\n",
		       act.predicted.L, act.predicted.a, act.predicted.b, act.predicted_de00);
	printf("why        %s\n", act.reason);
	if (act.waste_add_ml >= 0.0 || act.waste_fresh_ml >= 0.0) {
		printf("waste      ");
		if (act.waste_add_ml >= 0.0)
			printf("adding: %.2f ml beyond the %.2f ml needed", act.waste_add_ml,
			       lim->min_units * lim->unit_ml);
		else
			printf("adding: not possible");
		if (act.waste_fresh_ml >= 0.0)
			printf("; fresh cell: %.2f ml (this cell's %.2f ml included)",
			       act.waste_fresh_ml, total * lim->unit_ml);
		printf("\n");
	}
out_free:
	free(l);
	return status;
}

/*
 * The world of a trial: the simulator's mixing cells and camera, without the
 * arm (sim_bench_*), measured through the calibrated vision pipeline exactly
 * as the run engine measures a cell: the camera profile (made here from a
 * chart frame of the same bench, as `calib camera` makes it, unless the
 * machine file names one), the machine's light map divided out of every frame
 * as the engine divides it (made here from the simulator's flat scene, as
 * `calib camera --flat --light-map` makes it, when the machine file names
 * none), the canvas geometry from the corner markers (or calibration.canvas),
 * and the cell's region through vis_measure_station.
 */
struct trial_bench {
	struct rig rig;              /* the rig keeps pointers into itself: never moved */
	const struct machine *m;     /* rig.m */
	struct sim *sim;
	const struct mix_model *model;
	char well[MIX_MAX_PAINTS][CFG_NAME_MAX]; /* the well of each model paint */
	int cell;                    /* the current mixing cell, -1 before the first */
	int wash_ms;                 /* the spatula's wash after each dispense, as a plan washes */
	struct meas_profile *profile;
	struct calib_set cs;
	int has_cs;
	char profile_source[CFG_PATH_MAX + 96];
	int calibrated_here;
	double calib_held_mean, calib_held_max; /* of a profile made here, against the chart */
	double calib_truth_held_mean;
	struct vis_geometry g;
	struct vis_light light;
	int has_light;               /* 0: light not corrected */
	struct vis_lamp *lamp;       /* the board in the bare frame: the lamp followed from it (with the light) */
	double lamp_now[3];          /* the lamp in the last frame against the bare one, R, G, B */
	char light_source[CFG_PATH_MAX + 96];
	double light_min, light_max; /* the map's gain over the cells' regions */
	int measurements;
	double time_s;               /* simulated time at the end */
	/*
	 * Beside the truth of the paint, the truth of the cell as it lies (its
	 * content as deep as its volume over the cell's white floor, what the
	 * camera looks at): it splits the camera's distance from the paint's
	 * colour into the camera's own error and the floor showing through a
	 * thin layer.
	 */
	double *seen_de00;           /* camera against the cell as seen, per measurement */
	double *thin_de00;           /* the cell as seen against its paint's colour */
	int n_seen, cap_seen;
};

/* The bench's observer, as the run's: its profile, light map and lamp. */
static void bench_observer(const struct trial_bench *b, struct vis_observer *o)
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
static int bench_frame(struct trial_bench *b, enum sim_scene scene, struct img *im, struct img *raw,
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
static int light_at_cells(struct trial_bench *b, bl_err *err)
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

static int bench_calibrate(struct trial_bench *b, int light, bl_err *err)
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
	struct trial_bench *b = ctx;

	/* The next cell in turn, emptied and cleaned: the bench has a dozen. */
	b->cell = (b->cell + 1) % b->m->n_cells;
	return sim_bench_clear(b->sim, b->m->cells[b->cell].name, err);
}

static int bench_dispense(void *ctx, const int *units, bl_err *err)
{
	struct trial_bench *b = ctx;
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
static int cell_as_seen(struct trial_bench *b, const struct machine_station *st,
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
	struct trial_bench *b = ctx;
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
	struct trial_bench *b = ctx;
	double lab[3];
	int rc = sim_station_lab(b->sim, b->m->cells[b->cell].name, lab, err);

	if (rc == 0) {
		out->L = lab[0];
		out->a = lab[1];
		out->b = lab[2];
	}
	return rc;
}

static void trial_world_close(struct trial_bench *b)
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

static int trial_world_open(const struct machine *mc, const struct palette *p,
			    const struct mix_model *model, uint64_t seed, int light,
			    struct trial_bench **out, struct mix_ops *ops, bl_err *err)
{
	struct rig_options ro = { 0 };
	struct trial_bench *b;
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
	trial_world_close(b);
	return rc;
}

static void print_spread(const char *what, const struct mix_trial_spread *s)
{
	printf("%s median %.2f, p95 %.2f, worst %.2f", what, s->median, s->p95, s->max);
}

static void print_trial(const struct mix_trial_stats *st, const struct mix_limits *lim,
			const struct trial_bench *b, const struct mix_trial_spread *seen,
			const struct mix_trial_spread *thin)
{
	printf("camera:       profile %s\n", b->profile_source);
	printf("light:        %s", b->light_source);
	if (b->has_light)
		printf("; at the cells %.3f..%.3f of the light where the chart lay", b->light_min,
		       b->light_max);
	printf("\n");
	if (b->lamp)
		printf("lamp:         followed on %d points of bare board; at the end %.3f, %.3f, %.3f "
		       "(R, G, B) of the bare frame's, divided out\n", b->lamp->n, b->lamp_now[0],
		       b->lamp_now[1], b->lamp_now[2]);
	printf("%d targets inside the gamut, tolerance %.2f CIEDE2000 measured by the camera, at "
	       "most %d attempts each, %.2f h simulated\n",
	       st->targets, lim->tol_de00, lim->max_attempts, b->time_s / 3600.0);
	printf("closed loop:  attempts median %.0f, p95 %.0f, worst %d; unreached %d; final "
	       "CIEDE2000 median %.2f, p95 %.2f\n",
	       st->attempts_median, st->attempts_p95, st->attempts_max, st->unreached,
	       st->final_de00_median, st->final_de00_p95);
	printf("uncorrected:  first recipe only: attempts 1; %d beyond %.2f; CIEDE2000 median %.2f, "
	       "p95 %.2f, worst %.2f\n",
	       st->uncorrected_unreached, lim->tol_de00, st->uncorrected_de00_median,
	       st->uncorrected_de00_p95, st->uncorrected_de00_max);
	printf("paint:        closed loop %.1f ml in %d cells (%.1f ml of it discarded) against "
	       "%.1f ml for its first recipes alone; uncorrected %.1f ml (the nominal model's first "
	       "recipes: the ideal, were they right)\n",
	       st->used_ml, st->cells, st->discarded_ml, st->ideal_ml, st->uncorrected_ml);
	if (st->has_truth) {
		printf("truth:        the simulator's spectrophotometric Lab of each cell's paint, "
		       "never used to decide:\n");
		print_spread("  closed loop's last cell against the target:", &st->truth_final);
		printf("; %d the camera passed are beyond %.2f\n", st->truth_beyond, lim->tol_de00);
		print_spread("  uncorrected against the target:", &st->truth_uncorrected);
		printf("; %d beyond %.2f\n", st->truth_uncorrected_unreached, lim->tol_de00);
		print_spread("  camera against the truth, every measurement:", &st->camera_vs_truth);
		printf("\n");
		print_spread("    of which the camera against the cell as it lies:", seen);
		printf("\n");
		print_spread("    and the cell as it lies against its paint (the floor through thin "
			     "layers):", thin);
		printf("\n");
	}
	for (int i = 0; i < st->n_reasons; i++)
		printf("unreached:    %s\n", st->reasons[i]);
	if (st->unreached > st->n_reasons)
		printf("unreached:    (%d more; the first %d are listed)\n",
		       st->unreached - st->n_reasons, st->n_reasons);
}

static cJSON *trial_json(const struct mix_trial_stats *st, const struct trial_bench *b,
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

enum trial_opt {
	TRIAL_PALETTE, TRIAL_MACHINE, TRIAL_TARGETS, TRIAL_SEED, TRIAL_NO_LIGHT_CORRECTION, TRIAL_JSON,
	TRIAL_OPT_COUNT
};

static const struct cli_opt trial_opts[TRIAL_OPT_COUNT] = {
	[TRIAL_PALETTE] = CLI_OPT_PALETTE,
	[TRIAL_MACHINE] = CLI_OPT_MACHINE,
	[TRIAL_TARGETS] = { "targets", 0, "N", "the number of targets (default 50)", 0 },
	[TRIAL_SEED] = { "seed", 0, "S", "seed of the targets and the simulator (default 1)", 0 },
	[TRIAL_NO_LIGHT_CORRECTION] = { "no-light-correction", 0, NULL, "divide out no light map", 0 },
	[TRIAL_JSON] = CLI_OPT_JSON,
};
static const struct cli_optset trial_set = { "mix trial", trial_opts, TRIAL_OPT_COUNT, 0, NULL };

static int mix_trial_main(const struct cli_command *cmd, int argc, char **argv,
			  char *palette_path, char *machine_path)
{
	struct cli_optparse op;
	struct palette *p = NULL;
	struct machine *mc = NULL;
	struct mix_model *m = NULL;
	struct mix_trial_stats *st = NULL;
	struct trial_bench *b = NULL;
	struct mix_trial_spread seen, thin;
	struct mix_limits lim;
	struct mix_ops ops;
	bl_err err = { 0 };
	long targets = 50, seed = 1;
	int json = 0, light = 1, opt, status = 0;

	cli_opt_start(&op, cmd, &trial_set, argc, argv);
	while ((opt = cli_opt_next(&op)) != CLI_OPT_END) {
		if (opt == CLI_OPT_BAD)
			return BL_EXIT_USAGE;
		switch ((enum trial_opt)opt) {
		case TRIAL_PALETTE:
		case TRIAL_MACHINE:
			if (strlen(op.arg) >= CFG_PATH_MAX)
				return cli_usage(cmd, "--%s: path too long",
						 opt == TRIAL_PALETTE ? "palette" : "machine");
			snprintf(opt == TRIAL_PALETTE ? palette_path : machine_path, CFG_PATH_MAX, "%s", op.arg);
			break;
		case TRIAL_TARGETS:
			if (cli_parse_long("--targets", op.arg, 1, 10000, &targets, &err))
				return cli_usage(cmd, "%s", err.msg);
			break;
		case TRIAL_SEED:
			if (cli_parse_long("--seed", op.arg, 0, 0x7fffffffL, &seed, &err))
				return cli_usage(cmd, "%s", err.msg);
			break;
		case TRIAL_NO_LIGHT_CORRECTION:
			light = 0;
			break;
		case TRIAL_JSON:
			json = 1;
			break;
		case TRIAL_OPT_COUNT:
			break;
		}
	}
	if (op.ind != argc)
		return cli_usage(cmd, "mix trial takes no colour ('%s')", argv[op.ind]);
	p = calloc(1, sizeof(*p));
	mc = calloc(1, sizeof(*mc));
	m = calloc(1, sizeof(*m));
	st = calloc(1, sizeof(*st));
	if (!p || !mc || !m || !st) {
		status = BL_EXIT_FAIL;
		goto out_free;
	}
	if (palette_load(palette_path, p, &err) || machine_load(machine_path, mc, &err) ||
	    palette_check_machine(p, mc, &err) || mix_model_from_palette(p, m, &err) ||
	    trial_world_open(mc, p, m, (uint64_t)seed, light, &b, &ops, &err)) {
		status = cli_fail(&err);
		goto out_free;
	}
	mix_limits_from_machine(mc, &lim);
	if (mix_trial(m, &lim, &ops, (int)targets, (uint64_t)seed, 1, st, &err)) {
		status = cli_fail(&err);
		goto out_free;
	}
	{
		struct sim_stats ss;

		sim_get_stats(b->sim, &ss);
		b->time_s = ss.time_s;
	}
	mix_trial_spread_of(b->seen_de00, b->n_seen, &seen);
	mix_trial_spread_of(b->thin_de00, b->n_seen, &thin);
	if (json)
		status = cli_print_json(trial_json(st, b, &seen, &thin));
	else
		print_trial(st, &lim, b, &seen, &thin);
out_free:
	trial_world_close(b);
	free(p);
	free(mc);
	free(m);
	free(st);
	return status;
}

enum recipe_opt {
	RECIPE_PALETTE, RECIPE_MACHINE, RECIPE_MAX_PAINTS, RECIPE_VOLUME, RECIPE_HAVE, RECIPE_MEASURED, RECIPE_JSON,
	RECIPE_OPT_COUNT
};

static const struct cli_opt recipe_opts[RECIPE_OPT_COUNT] = {
	[RECIPE_PALETTE] = CLI_OPT_PALETTE,
	[RECIPE_MACHINE] = CLI_OPT_MACHINE,
	[RECIPE_MAX_PAINTS] = { "max-paints", 0, "N", "at most N paints", 0 },
	[RECIPE_VOLUME] = { "volume", 0, "ML", "the cell volume (ml)", 0 },
	[RECIPE_HAVE] = { "have", 0, "NAME:UNITS,...", "what the cell holds (units per paint)", 0 },
	[RECIPE_MEASURED] = { "measured", 0, "COLOR", "the measured colour of the cell", 0 },
	[RECIPE_JSON] = CLI_OPT_JSON,
};
static const struct cli_optset mix_set = { "mix", recipe_opts, RECIPE_OPT_COUNT, 0, NULL };

int cli_mix_main(int argc, char **argv)
{
	struct cli_optparse op;
	const struct cli_command *cmd = cli_find("mix");
	char palette_path[CFG_PATH_MAX], machine_path[CFG_PATH_MAX];
	const char *have_text = NULL, *measured_text = NULL;
	struct palette *p = NULL;
	struct machine *mc = NULL;
	struct mix_model *m = NULL;
	struct mix_limits lim;
	color_lab target, measured;
	bl_err err = { 0 };
	long max_paints = 0;
	double volume_ml = 0.0;
	int json = 0, opt, status = 0, have[MIX_MAX_PAINTS];

	source_path(palette_path, sizeof(palette_path), "palettes/kimera-13.json");
	cli_machine_path(NULL, machine_path, sizeof(machine_path));
	if (argc >= 2 && strcmp(argv[1], "trial") == 0)
		return mix_trial_main(cmd, argc - 1, argv + 1, palette_path, machine_path);
	cli_opt_start(&op, cmd, &mix_set, argc, argv);
	while ((opt = cli_opt_next(&op)) != CLI_OPT_END) {
		if (opt == CLI_OPT_BAD)
			return BL_EXIT_USAGE;
		switch ((enum recipe_opt)opt) {
		case RECIPE_PALETTE:
		case RECIPE_MACHINE:
			if (strlen(op.arg) >= CFG_PATH_MAX)
				return cli_usage(cmd, "--%s: path too long",
						 opt == RECIPE_PALETTE ? "palette" : "machine");
			snprintf(opt == RECIPE_PALETTE ? palette_path : machine_path, CFG_PATH_MAX, "%s", op.arg);
			break;
		case RECIPE_MAX_PAINTS:
			if (cli_parse_long("--max-paints", op.arg, 1, MIX_RECIPE_MAX, &max_paints, &err))
				return cli_usage(cmd, "%s", err.msg);
			break;
		case RECIPE_VOLUME:
			if (cli_parse_double("--volume", op.arg, &volume_ml, &err))
				return cli_usage(cmd, "%s", err.msg);
			if (volume_ml <= 0.0)
				return cli_usage(cmd, "--volume: %g ml must be positive", volume_ml);
			break;
		case RECIPE_HAVE:
			have_text = op.arg;
			break;
		case RECIPE_MEASURED:
			measured_text = op.arg;
			break;
		case RECIPE_JSON:
			json = 1;
			break;
		case RECIPE_OPT_COUNT:
			break;
		}
	}
	if (argc - op.ind != 1)
		return cli_usage(cmd, "mix takes one target colour");
	if (!have_text != !measured_text)
		return cli_usage(cmd, "--have and --measured go together: what is in the cell and "
				      "what it measured");
	if (color_parse(argv[op.ind], &target, &err))
		return cli_usage(cmd, "target: %s", err.msg);
	if (measured_text && color_parse(measured_text, &measured, &err))
		return cli_usage(cmd, "--measured: %s", err.msg);
	p = calloc(1, sizeof(*p));
	mc = calloc(1, sizeof(*mc));
	m = calloc(1, sizeof(*m));
	if (!p || !mc || !m) {
		status = BL_EXIT_FAIL;
		goto out_free;
	}
	if (palette_load(palette_path, p, &err) || machine_load(machine_path, mc, &err) ||
	    mix_model_from_palette(p, m, &err)) {
		status = cli_fail(&err);
		goto out_free;
	}
	mix_limits_from_machine(mc, &lim);
	if (max_paints)
		lim.max_paints = (int)max_paints;
	if (volume_ml > 0.0) {
		/* Compared as a double first: 1e9 ml in units does not fit an int. */
		double units = volume_ml / lim.unit_ml + 1.0 - 1e-9;

		lim.min_units = units > lim.max_units ? lim.max_units + 1 : (int)units;
		if (lim.min_units > lim.max_units) {
			status = cli_usage(cmd, "--volume: %g ml exceeds the cell's %g ml", volume_ml,
					   lim.max_units * lim.unit_ml);
			goto out_free;
		}
	}
	if (have_text) {
		if (mix_parse_units(m, have_text, have, &err)) {
			status = cli_usage(cmd, "--have: %s", err.msg);
			goto out_free;
		}
		status = mix_correct_out(m, &lim, palette_path, &target, have, &measured, json);
	} else {
		status = mix_recipe_out(m, &lim, palette_path, &target, json);
	}
out_free:
	free(p);
	free(mc);
	free(m);
	return status;
}

const struct cli_optset *const cli_mix_sets[] = { &mix_set, &trial_set, NULL };

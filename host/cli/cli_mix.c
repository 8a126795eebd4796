/* cli_mix.c: `brushloop mix`: a recipe for a target colour, the correction of a measured mix, and `mix trial`, the closed mixing loop on the simulator's bench. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "calib/calib.h"
#include "calib/calib_mixbench.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "color/mix.h"
#include "config/machine.h"
#include "config/palette.h"

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
	switch ((enum mix_action_kind)act.kind) {
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
	case MIX_ACT_GIVE_UP:
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

static void print_spread(const char *what, const struct mix_trial_spread *s)
{
	printf("%s median %.2f, p95 %.2f, worst %.2f", what, s->median, s->p95, s->max);
}

static void print_trial(const struct mix_trial_stats *st, const struct mix_limits *lim,
			const struct calib_mixbench *b, const struct mix_trial_spread *seen,
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
	struct calib_mixbench *b = NULL;
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
	    calib_mixbench_open(mc, p, m, (uint64_t)seed, light, &b, &ops, &err)) {
		status = cli_fail(&err);
		goto out_free;
	}
	mix_limits_from_machine(mc, &lim);
	if (mix_trial(m, &lim, &ops, (int)targets, (uint64_t)seed, 1, st, &err)) {
		status = cli_fail(&err);
		goto out_free;
	}
	calib_mixbench_finish(b, &seen, &thin);
	if (json)
		status = cli_print_json(calib_mixbench_json(st, b, &seen, &thin));
	else
		print_trial(st, &lim, b, &seen, &thin);
out_free:
	calib_mixbench_close(b);
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

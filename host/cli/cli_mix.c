/* cli_mix.c: `brushloop mix`: a recipe for a target colour, or the correction of a measured mix. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "cli/cli.h"
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
 * The world of a trial: the simulator's mixing cell and camera, measured
 * through the calibrated vision pipeline. Until those exist in this build,
 * there is nothing to run the loop against.
 */
static int trial_world_open(const struct machine *mc, const struct palette *p, uint64_t seed,
			    struct mix_ops *ops, bl_err *err)
{
	(void)mc;
	(void)p;
	(void)seed;
	memset(ops, 0, sizeof(*ops));
	return bl_fail(err, BL_EIO,
		       "mix trial needs the simulator and the calibrated vision pipeline, which "
		       "this build does not have yet");
}

static void print_trial(const struct mix_trial_stats *st, const struct mix_limits *lim)
{
	printf("%d targets inside the gamut, tolerance %.2f CIEDE2000, at most %d attempts each\n",
	       st->targets, lim->tol_de00, lim->max_attempts);
	printf("closed loop:  attempts median %.0f, p95 %.0f, worst %d; unreached %d; final "
	       "CIEDE2000 median %.2f, p95 %.2f\n",
	       st->attempts_median, st->attempts_p95, st->attempts_max, st->unreached,
	       st->final_de00_median, st->final_de00_p95);
	printf("uncorrected:  first recipe only: %d beyond %.2f; CIEDE2000 median %.2f, p95 %.2f, "
	       "worst %.2f\n",
	       st->uncorrected_unreached, lim->tol_de00, st->uncorrected_de00_median,
	       st->uncorrected_de00_p95, st->uncorrected_de00_max);
	printf("paint:        %.1f ml used against %.1f ml ideal (first recipes), %.1f ml "
	       "discarded, %d cells\n",
	       st->used_ml, st->ideal_ml, st->discarded_ml, st->cells);
	for (int i = 0; i < st->n_reasons; i++)
		printf("unreached:    %s\n", st->reasons[i]);
}

static int mix_trial_main(const struct cli_command *cmd, int argc, char **argv,
			  char *palette_path, char *machine_path)
{
	static const struct option opts[] = {
		{ "palette", required_argument, NULL, 'p' },
		{ "machine", required_argument, NULL, 'm' },
		{ "targets", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	struct palette *p = NULL;
	struct machine *mc = NULL;
	struct mix_model *m = NULL;
	struct mix_trial_stats *st = NULL;
	struct mix_limits lim;
	struct mix_ops ops;
	bl_err err = { 0 };
	long targets = 50, seed = 1;
	int json = 0, opt, status = 0;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
		case 'm':
			if (strlen(optarg) >= CFG_PATH_MAX)
				return cli_usage(cmd, "--%s: path too long",
						 opt == 'p' ? "palette" : "machine");
			snprintf(opt == 'p' ? palette_path : machine_path, CFG_PATH_MAX, "%s", optarg);
			break;
		case 'n':
			if (cli_parse_long("--targets", optarg, 1, 10000, &targets, &err))
				return cli_usage(cmd, "%s", err.msg);
			break;
		case 's':
			if (cli_parse_long("--seed", optarg, 0, 0x7fffffffL, &seed, &err))
				return cli_usage(cmd, "%s", err.msg);
			break;
		case 'j':
			json = 1;
			break;
		default:
			return cli_usage(cmd, "bad option");
		}
	}
	if (optind != argc)
		return cli_usage(cmd, "mix trial takes no colour ('%s')", argv[optind]);
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
	    trial_world_open(mc, p, (uint64_t)seed, &ops, &err)) {
		status = cli_fail(&err);
		goto out_free;
	}
	mix_limits_from_machine(mc, &lim);
	if (mix_trial(m, &lim, &ops, (int)targets, (uint64_t)seed, 1, st, &err)) {
		status = cli_fail(&err);
		goto out_free;
	}
	if (json)
		status = cli_print_json(mix_trial_json(st));
	else
		print_trial(st, &lim);
out_free:
	free(p);
	free(mc);
	free(m);
	free(st);
	return status;
}

int cli_mix_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "palette", required_argument, NULL, 'p' },
		{ "machine", required_argument, NULL, 'm' },
		{ "max-paints", required_argument, NULL, 'n' },
		{ "volume", required_argument, NULL, 'v' },
		{ "have", required_argument, NULL, 'h' },
		{ "measured", required_argument, NULL, 'M' },
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
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
	optind = 0;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'p':
		case 'm':
			if (strlen(optarg) >= CFG_PATH_MAX)
				return cli_usage(cmd, "--%s: path too long",
						 opt == 'p' ? "palette" : "machine");
			snprintf(opt == 'p' ? palette_path : machine_path, CFG_PATH_MAX, "%s", optarg);
			break;
		case 'n':
			if (cli_parse_long("--max-paints", optarg, 1, MIX_RECIPE_MAX, &max_paints, &err))
				return cli_usage(cmd, "%s", err.msg);
			break;
		case 'v':
			if (cli_parse_double("--volume", optarg, &volume_ml, &err))
				return cli_usage(cmd, "%s", err.msg);
			if (volume_ml <= 0.0)
				return cli_usage(cmd, "--volume: %g ml must be positive", volume_ml);
			break;
		case 'h':
			have_text = optarg;
			break;
		case 'M':
			measured_text = optarg;
			break;
		case 'j':
			json = 1;
			break;
		default:
			return cli_usage(cmd, "bad option");
		}
	}
	if (argc - optind != 1)
		return cli_usage(cmd, "mix takes one target colour");
	if (!have_text != !measured_text)
		return cli_usage(cmd, "--have and --measured go together: what is in the cell and "
				      "what it measured");
	if (color_parse(argv[optind], &target, &err))
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
		lim.min_units = (int)(volume_ml / lim.unit_ml + 1.0 - 1e-9);
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

/* cli_plan.c: `brushloop plan`: a target picture to plan.json, corrective strokes for an observed canvas, and the planner against the grid baseline. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/json.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "config/machine.h"
#include "config/palette.h"
#include "plan/plan.h"
#include "plan/plan_image.h"
#include "plan/plan_mix.h"
#include "vision/image.h"

struct plan_cli {
	const char *machine, *palette, *out, *preview, *observed;
	int colours, max_strokes, json, correct, compare, baseline, rectified;
	int budgets[8], n_budgets;
	char machine_path[CFG_PATH_MAX], palette_path[CFG_PATH_MAX];
};

/* Everything a command needs loaded once: machine, palette, the mixing model. */
struct plan_env {
	struct machine m;
	struct palette pal;
	struct plan_mixer mixer;
};

static int env_open(const struct plan_cli *o, struct plan_env *e, bl_err *err)
{
	int rc;

	if ((rc = machine_load(o->machine_path, &e->m, err)) ||
	    (rc = palette_load(o->palette_path, &e->pal, err)))
		return rc;
	return plan_mixer_init(&e->mixer, &e->pal, &e->m, err);
}

static void options_for(const struct plan_cli *o, const struct machine *m, struct plan_options *po)
{
	plan_options_default(po, m);
	if (o->colours >= 0)
		po->colours = o->colours;
	if (o->max_strokes >= 0)
		po->max_strokes = o->max_strokes;
	po->baseline = o->baseline;
}

static cJSON *lab_vec(const color_lab *c)
{
	const double v[3] = { c->L, c->a, c->b };

	return cJSON_CreateDoubleArray(v, 3);
}

/* The recipe of a colour's first mix. */
static const struct plan_recipe *colour_recipe(const struct plan *p, int c)
{
	for (size_t i = 0; i < p->n_subtasks; i++)
		if (p->subtasks[i].type == PLAN_MIX && p->subtasks[i].colour == c)
			return &p->subtasks[i].mix.recipe;
	return NULL;
}

static void count_subtasks(const struct plan *p, int n[PLAN_SUBTASK_COUNT])
{
	memset(n, 0, PLAN_SUBTASK_COUNT * sizeof(*n));
	for (size_t i = 0; i < p->n_subtasks; i++)
		n[p->subtasks[i].type]++;
}

static int report(const struct plan_cli *o, const struct plan *p, const struct plan_target *t,
		  const char *out_path, const char *preview, double plan_s)
{
	int n[PLAN_SUBTASK_COUNT];

	count_subtasks(p, n);
	if (o->json) {
		cJSON *j = cJSON_CreateObject(), *pr, *cols, *unf;

		if (!j)
			return BL_EXIT_FAIL;
		cJSON_AddStringToObject(j, "plan", out_path);
		cJSON_AddStringToObject(j, "target", p->target_file);
		cJSON_AddNumberToObject(j, "orientation", t->orientation);
		cJSON_AddBoolToObject(j, "correction", p->correction);
		pr = cJSON_AddObjectToObject(j, "predicted");
		cJSON_AddNumberToObject(pr, "mean_de00", p->mean_de00);
		cJSON_AddNumberToObject(pr, "p95_de00", p->p95_de00);
		cJSON_AddNumberToObject(j, "strokes", p->n_strokes);
		cols = cJSON_AddArrayToObject(j, "colours");
		for (int c = 0; c < p->n_colours; c++) {
			const struct plan_colour *pc = &p->colours[c];
			const struct plan_recipe *r = colour_recipe(p, c);
			cJSON *it = cJSON_CreateObject(), *rec;

			cJSON_AddStringToObject(it, "name", pc->name);
			cJSON_AddItemToObject(it, "lab", lab_vec(&pc->lab));
			cJSON_AddItemToObject(it, "want_lab", lab_vec(&pc->want));
			cJSON_AddStringToObject(it, "cell", pc->cell);
			rec = cJSON_AddObjectToObject(it, "recipe");
			for (int i = 0; r && i < r->n; i++)
				cJSON_AddNumberToObject(rec, r->item[i].paint, r->item[i].units);
			cJSON_AddNumberToObject(it, "strokes", pc->strokes);
			cJSON_AddNumberToObject(it, "paint_ml", pc->paint_ml);
			cJSON_AddItemToArray(cols, it);
		}
		cJSON_AddNumberToObject(j, "mixes", n[PLAN_MIX]);
		cJSON_AddNumberToObject(j, "paint_batches", n[PLAN_PAINT]);
		cJSON_AddNumberToObject(j, "checkpoints", n[PLAN_CHECKPOINT]);
		cJSON_AddNumberToObject(j, "paint_ml", plan_paint_ml(p));
		cJSON_AddNumberToObject(j, "arm_time_s", p->arm_time_s);
		cJSON_AddNumberToObject(j, "plan_s", plan_s);
		if (preview)
			cJSON_AddStringToObject(j, "preview", preview);
		unf = cJSON_AddArrayToObject(j, "unfixable");
		for (size_t i = 0; i < p->n_unfixable; i++) {
			cJSON *it = cJSON_CreateObject();
			const double cell[2] = { p->unfixable[i].col, p->unfixable[i].row };

			json_add_vec(it, "cell", cell, 2);
			cJSON_AddItemToObject(it, "target_lab", lab_vec(&p->unfixable[i].target));
			cJSON_AddItemToObject(it, "best_lab", lab_vec(&p->unfixable[i].best));
			cJSON_AddNumberToObject(it, "de00", p->unfixable[i].de00);
			cJSON_AddItemToArray(unf, it);
		}
		return cli_print_json(j);
	}
	printf("%s: %s -> %s (machine %s)\n", p->correction ? "corrections" : "plan",
	       p->target_file, out_path, p->machine_name);
	printf("picture: %d x %d px on the canvas at %.1f, %.1f mm, %.1f x %.1f mm\n", p->target_w,
	       p->target_h, p->image_mm[0], p->image_mm[1], p->image_mm[2], p->image_mm[3]);
	if (t->orientation > 1)
		printf("orientation: EXIF %d, %s as viewers show it\n", t->orientation,
		       img_orientation_name(t->orientation));
	printf("colours: %d\n", p->n_colours);
	for (int c = 0; c < p->n_colours; c++) {
		const struct plan_colour *pc = &p->colours[c];
		const struct plan_recipe *r = colour_recipe(p, c);

		printf("  %-4s lab %6.2f %7.2f %7.2f  cell %-4s %5d strokes %7.2f ml  ", pc->name,
		       pc->lab.L, pc->lab.a, pc->lab.b, pc->cell, pc->strokes, pc->paint_ml);
		for (int i = 0; r && i < r->n; i++)
			printf("%s%s %d", i ? ", " : "", r->item[i].paint, r->item[i].units);
		printf("\n");
	}
	printf("strokes: %d\n", p->n_strokes);
	printf("subtasks: %zu (%d mixes, %d paint batches, %d checkpoints)\n", p->n_subtasks,
	       n[PLAN_MIX], n[PLAN_PAINT], n[PLAN_CHECKPOINT]);
	printf("paint: %.2f ml\n", plan_paint_ml(p));
	printf("arm time: %.0f s (%.1f h)\n", p->arm_time_s, p->arm_time_s / 3600.0);
	printf("predicted: mean CIEDE2000 %.2f, 95th percentile %.2f\n", p->mean_de00, p->p95_de00);
	if (p->correction) {
		printf("cells no colour can fix: %zu\n", p->n_unfixable);
		for (size_t i = 0; i < p->n_unfixable && i < 20; i++)
			printf("  cell %d,%d wants lab %.1f %.1f %.1f, nearest colour %.1f away\n",
			       p->unfixable[i].col, p->unfixable[i].row, p->unfixable[i].target.L,
			       p->unfixable[i].target.a, p->unfixable[i].target.b, p->unfixable[i].de00);
	}
	if (preview)
		printf("preview: %s\n", preview);
	return 0;
}

static int make_plan(const struct plan_cli *o, const char *target)
{
	struct plan_env *e = calloc(1, sizeof(*e));
	struct plan_target t = { 0 };
	struct plan_options po;
	struct plan_inputs in = { 0 };
	struct plan p = { 0 };
	bl_err err = { 0 };
	const char *out_path = o->out ? o->out : "plan.json";
	double t0 = clk_real_ns() * 1e-9;
	int rc;

	if (!e)
		return BL_EXIT_FAIL;
	if ((rc = env_open(o, e, &err)) || (rc = plan_target_load(target, &e->m, &t, &err)))
		goto out_fail;
	options_for(o, &e->m, &po);
	in.machine = &e->m;
	in.solver = &e->mixer.solver;
	in.target = &t.lab;
	in.target_file = target;
	in.target_hash = t.hash;
	in.target_w = t.w;
	in.target_h = t.h;
	if ((rc = plan_make(&in, &po, &p, &err)) || (rc = plan_check(&p, &e->m, &err)) ||
	    (rc = plan_save(out_path, &p, &err)))
		goto out_fail;
	if (o->preview && (rc = plan_preview_save(o->preview, &p, &e->m, &t.lab, &err)))
		goto out_fail;
	rc = report(o, &p, &t, out_path, o->preview, clk_real_ns() * 1e-9 - t0);
	plan_free(&p);
	plan_target_free(&t);
	free(e);
	return rc;

out_fail:
	plan_free(&p);
	plan_target_free(&t);
	free(e);
	return cli_fail(&err);
}

static int correct_plan(const struct plan_cli *o, const char *plan_path)
{
	struct plan_env *e = calloc(1, sizeof(*e));
	struct plan_target t = { 0 };
	struct plan_raster obs = { 0 };
	struct plan_options po;
	struct plan_inputs in = { 0 };
	struct plan p = { 0 }, c = { 0 };
	bl_err err = { 0 };
	const char *out_path = o->out ? o->out : "corrections.json";
	double t0 = clk_real_ns() * 1e-9;
	int rc;

	if (!e)
		return BL_EXIT_FAIL;
	if ((rc = env_open(o, e, &err)) || (rc = plan_load(plan_path, &p, &err)) ||
	    (rc = plan_check(&p, &e->m, &err)))
		goto out_fail;
	if ((rc = plan_target_load(p.target_file, &e->m, &t, &err)))
		goto out_fail;
	if (strcmp(t.hash, p.target_hash) != 0) {
		rc = bl_fail(&err, BL_EINVAL, "%s: the target %s has changed since the plan was made",
			     plan_path, p.target_file);
		goto out_fail;
	}
	if ((rc = plan_observed_load(o->observed, &e->m, &p, o->rectified, &obs, &err)))
		goto out_fail;
	options_for(o, &e->m, &po);
	if (o->max_strokes < 0)
		po.max_strokes = 300;
	in.machine = &e->m;
	in.solver = &e->mixer.solver;
	in.target = &t.lab;
	if ((rc = plan_correct(&p, &in, &obs, &po, &c, &err)) || (rc = plan_check(&c, &e->m, &err)) ||
	    (rc = plan_save(out_path, &c, &err)))
		goto out_fail;
	if (o->preview && (rc = plan_preview_save(o->preview, &c, &e->m, &t.lab, &err)))
		goto out_fail;
	rc = report(o, &c, &t, out_path, o->preview, clk_real_ns() * 1e-9 - t0);
	goto out_free;

out_fail:
	rc = cli_fail(&err);
out_free:
	plan_free(&p);
	plan_free(&c);
	plan_raster_free(&obs);
	plan_target_free(&t);
	free(e);
	return rc;
}

static const char *const example_targets[] = { "autumn-tree", "flat-shapes", "gradient-sky",
					       "fine-detail", "still-life", NULL };

/* The planner against the grid baseline, at each budget, on each target. */
static int compare(const struct plan_cli *o, int ntargets, char **targets)
{
	struct plan_env *e = calloc(1, sizeof(*e));
	char paths[8][CFG_PATH_MAX];
	const char *list[64];
	cJSON *j = NULL, *rows = NULL;
	bl_err err = { 0 };
	int n = 0, rc = 0, wins = 0, cases = 0;

	if (!e)
		return BL_EXIT_FAIL;
	if (ntargets == 0) {
		for (int i = 0; example_targets[i]; i++) {
			snprintf(paths[i], sizeof(paths[i]), "%s/examples/targets/%s.png", BL_SOURCE_ROOT,
				 example_targets[i]);
			list[n++] = paths[i];
		}
	} else {
		for (int i = 0; i < ntargets && n < 64; i++)
			list[n++] = targets[i];
	}
	if ((rc = env_open(o, e, &err)))
		goto out_fail;
	if (o->json) {
		j = cJSON_CreateObject();
		rows = cJSON_AddArrayToObject(j, "results");
	} else {
		printf("%-40s %7s %10s %10s %7s %7s\n", "target", "budget", "planner", "grid", "ratio",
		       "plan_s");
	}
	for (int i = 0; i < n; i++) {
		struct plan_target t = { 0 };

		if ((rc = plan_target_load(list[i], &e->m, &t, &err)))
			goto out_fail;
		for (int b = 0; b < o->n_budgets; b++) {
			struct plan a = { 0 }, g = { 0 };
			struct plan_options po;
			struct plan_inputs in = { 0 };
			double t0;

			options_for(o, &e->m, &po);
			po.max_strokes = o->budgets[b];
			in.machine = &e->m;
			in.solver = &e->mixer.solver;
			in.target = &t.lab;
			in.target_file = list[i];
			in.target_hash = t.hash;
			in.target_w = t.w;
			in.target_h = t.h;
			t0 = clk_real_ns() * 1e-9;
			rc = plan_make(&in, &po, &a, &err);
			t0 = clk_real_ns() * 1e-9 - t0;
			po.baseline = 1;
			if (rc == 0)
				rc = plan_make(&in, &po, &g, &err);
			if (rc) {
				plan_free(&a);
				plan_target_free(&t);
				goto out_fail;
			}
			cases++;
			wins += a.mean_de00 < g.mean_de00;
			if (o->json) {
				cJSON *r = cJSON_CreateObject(), *pl, *gr;

				cJSON_AddStringToObject(r, "target", list[i]);
				cJSON_AddNumberToObject(r, "budget", o->budgets[b]);
				pl = cJSON_AddObjectToObject(r, "planner");
				cJSON_AddNumberToObject(pl, "mean_de00", a.mean_de00);
				cJSON_AddNumberToObject(pl, "p95_de00", a.p95_de00);
				cJSON_AddNumberToObject(pl, "strokes", a.n_strokes);
				cJSON_AddNumberToObject(pl, "colours", a.n_colours);
				cJSON_AddNumberToObject(pl, "plan_s", t0);
				gr = cJSON_AddObjectToObject(r, "grid");
				cJSON_AddNumberToObject(gr, "mean_de00", g.mean_de00);
				cJSON_AddNumberToObject(gr, "p95_de00", g.p95_de00);
				cJSON_AddNumberToObject(gr, "strokes", g.n_strokes);
				cJSON_AddItemToArray(rows, r);
			} else {
				printf("%-40s %7d %10.2f %10.2f %7.2f %7.2f\n", list[i], o->budgets[b],
				       a.mean_de00, g.mean_de00, a.mean_de00 / g.mean_de00, t0);
				fflush(stdout);
			}
			plan_free(&a);
			plan_free(&g);
		}
		plan_target_free(&t);
	}
	free(e);
	if (o->json) {
		cJSON_AddNumberToObject(j, "cases", cases);
		cJSON_AddNumberToObject(j, "planner_better", wins);
		return cli_print_json(j);
	}
	printf("planner better than the grid in %d of %d cases (predicted mean CIEDE2000)\n", wins,
	       cases);
	return 0;

out_fail:
	cJSON_Delete(j);
	free(e);
	return cli_fail(&err);
}

static int parse_budgets(const char *text, struct plan_cli *o, bl_err *err)
{
	const char *s = text;

	o->n_budgets = 0;
	while (*s) {
		char item[32];
		const char *c = strchr(s, ',');
		size_t len = c ? (size_t)(c - s) : strlen(s);
		long v;

		if (len == 0 || len >= sizeof(item) || o->n_budgets == 8)
			return bl_fail(err, BL_EINVAL, "--budgets: '%s' is not a list of up to 8 numbers",
				       text);
		memcpy(item, s, len);
		item[len] = 0;
		if (cli_parse_long("--budgets", item, 1, PLAN_MAX_STROKES, &v, err))
			return BL_EINVAL;
		o->budgets[o->n_budgets++] = (int)v;
		s += len + (c ? 1 : 0);
	}
	return o->n_budgets ? 0 : bl_fail(err, BL_EINVAL, "--budgets: empty");
}

enum plano_opt {
	PLANO_MACHINE, PLANO_PALETTE, PLANO_OUTPUT, PLANO_COLOURS, PLANO_COLORS, PLANO_MAX_STROKES, PLANO_PREVIEW, PLANO_JSON, PLANO_CORRECT, PLANO_OBSERVED, PLANO_RECTIFIED, PLANO_COMPARE, PLANO_BUDGETS, PLANO_BASELINE,
	PLANO_OPT_COUNT
};

static const struct cli_opt plan_opts[PLANO_OPT_COUNT] = {
	[PLANO_MACHINE] = CLI_OPT_MACHINE,
	[PLANO_PALETTE] = CLI_OPT_PALETTE,
	[PLANO_OUTPUT] = { "output", 'o', "FILE", "the plan (or corrections) file to write", 0 },
	[PLANO_COLOURS] = { "colours", 0, "K", "the number of mixed colours", 0 },
	[PLANO_COLORS] = { "colors", 0, "K", "the same as --colours", 1 },
	[PLANO_MAX_STROKES] = { "max-strokes", 0, "N", "the stroke budget", 0 },
	[PLANO_PREVIEW] = { "preview", 0, "FILE", "write target and prediction side by side to FILE", 0 },
	[PLANO_JSON] = CLI_OPT_JSON,
	[PLANO_CORRECT] = { "correct", 0, NULL, "plan corrective strokes from an observed canvas", 0 },
	[PLANO_OBSERVED] = { "observed", 0, "CANVAS", "the observed canvas image", 0 },
	[PLANO_RECTIFIED] = { "rectified", 0, NULL, "the observed image is the canvas alone", 0 },
	[PLANO_COMPARE] = { "compare", 0, NULL, "compare the planner with the grid baseline", 0 },
	[PLANO_BUDGETS] = { "budgets", 0, "N,N,...", "stroke budgets to compare (default 100,300,1000)", 0 },
	[PLANO_BASELINE] = { "baseline", 0, NULL, "plan strokes on a regular grid", 0 },
};
static const struct cli_optset plan_set = { "plan", plan_opts, PLANO_OPT_COUNT, 0, NULL };

int cli_plan_main(int argc, char **argv)
{
	struct cli_optparse p;
	const struct cli_command *cmd = cli_find("plan");
	struct plan_cli o;
	bl_err err = { 0 };
	int opt;
	long v;

	memset(&o, 0, sizeof(o));
	o.colours = -1;
	o.max_strokes = -1;
	o.budgets[0] = 100;
	o.budgets[1] = 300;
	o.budgets[2] = 1000;
	o.n_budgets = 3;
	cli_opt_start(&p, cmd, &plan_set, argc, argv);
	while ((opt = cli_opt_next(&p)) != CLI_OPT_END) {
		if (opt == CLI_OPT_BAD)
			return BL_EXIT_USAGE;
		switch ((enum plano_opt)opt) {
		case PLANO_MACHINE:
			o.machine = p.arg;
			break;
		case PLANO_PALETTE:
			o.palette = p.arg;
			break;
		case PLANO_OUTPUT:
			o.out = p.arg;
			break;
		case PLANO_COLOURS:
		case PLANO_COLORS:
			if (cli_parse_long("--colours", p.arg, 1, PLAN_MAX_COLOURS, &v, &err))
				return cli_usage(cmd, "%s", err.msg);
			o.colours = (int)v;
			break;
		case PLANO_MAX_STROKES:
			if (cli_parse_long("--max-strokes", p.arg, 0, PLAN_MAX_STROKES, &v, &err))
				return cli_usage(cmd, "%s", err.msg);
			o.max_strokes = (int)v;
			break;
		case PLANO_PREVIEW:
			o.preview = p.arg;
			break;
		case PLANO_JSON:
			o.json = 1;
			break;
		case PLANO_CORRECT:
			o.correct = 1;
			break;
		case PLANO_OBSERVED:
			o.observed = p.arg;
			break;
		case PLANO_RECTIFIED:
			o.rectified = 1;
			break;
		case PLANO_COMPARE:
			o.compare = 1;
			break;
		case PLANO_BUDGETS:
			if (parse_budgets(p.arg, &o, &err))
				return cli_usage(cmd, "%s", err.msg);
			break;
		case PLANO_BASELINE:
			o.baseline = 1;
			break;
		case PLANO_OPT_COUNT:
			break;
		}
	}
	cli_machine_path(o.machine, o.machine_path, sizeof(o.machine_path));
	if (o.palette)
		snprintf(o.palette_path, sizeof(o.palette_path), "%s", o.palette);
	else
		snprintf(o.palette_path, sizeof(o.palette_path), "%s/palettes/kimera-13.json",
			 BL_SOURCE_ROOT);
	if (o.compare) {
		if (o.correct || o.observed || o.out || o.preview)
			return cli_usage(cmd, "--compare takes targets, --budgets and the machine and palette only");
		return compare(&o, argc - p.ind, argv + p.ind);
	}
	if (o.correct) {
		if (!o.observed)
			return cli_usage(cmd, "--correct needs --observed CANVAS");
		if (argc - p.ind != 1)
			return cli_usage(cmd, "--correct takes one plan file");
		return correct_plan(&o, argv[p.ind]);
	}
	if (o.observed || o.rectified)
		return cli_usage(cmd, "--observed and --rectified go with --correct");
	if (argc - p.ind != 1)
		return cli_usage(cmd, "plan takes one target picture");
	return make_plan(&o, argv[p.ind]);
}

const struct cli_optset *const cli_plan_sets[] = { &plan_set, NULL };

/* cli_calib.c: `brushloop calib camera|canvas|arm|paints`: parses a session's options, runs it (calib/calib_session.h) and prints its steps, residuals and pass or fail against the machine file. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "calib/calib.h"
#include "calib/calib_session.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "color/mix.h"
#include "vision/measure.h"

enum cal_opt {
	CAL_MACHINE, CAL_FRAME, CAL_CHART, CAL_CORNERS, CAL_FLAT, CAL_LIGHT_MAP, CAL_NO_LIGHT_CORRECTION, CAL_MODEL, CAL_ICC_VERSION, CAL_TRUTH, CAL_OUTPUT, CAL_FORCE, CAL_JSON, CAL_SEED, CAL_WORLD, CAL_SIZE, CAL_POINTS, CAL_TARGETS, CAL_BY_HAND, CAL_RUN_DIR, CAL_PALETTE, CAL_CARD, CAL_LAYOUT, CAL_TINTS, CAL_SVG, CAL_PROFILE, CAL_TI3, CAL_CHECK,
	CAL_OPT_COUNT
};

/* One table for every session: an option means the same in each that takes it. */
static const struct cli_opt calib_opts[CAL_OPT_COUNT] = {
	[CAL_MACHINE] = CLI_OPT_MACHINE,
	[CAL_FRAME] = { "frame", 0, "F", "work on this frame instead of capturing one", 0 },
	[CAL_CHART] = { "chart", 0, "CHART", "the chart: colorchecker24, a chart file, or CGATS .cie/.ti2", 0 },
	[CAL_CORNERS] = { "corners", 0, "X,Y;...", "the 4 corners (px), clockwise as the frame shows them from the first: the chart's top left, the canvas's origin", 0 },
	[CAL_FLAT] = { "flat", 0, "F", "a frame of a light uniform card where the chart lay", 0 },
	[CAL_LIGHT_MAP] = { "light-map", 0, "MAP.json", "write the light map to MAP.json", 0 },
	[CAL_NO_LIGHT_CORRECTION] = { "no-light-correction", 0, NULL, "correct no uneven light", 0 },
	[CAL_MODEL] = { "model", 0, "MODEL", "the model to fit (camera: matrix, affine, root-polynomial; arm: similarity, affine)", 0 },
	[CAL_ICC_VERSION] = { "icc-version", 0, "2|4", "ICC version 2 (2.4, default) or 4 (4.3)", 0 },
	[CAL_TRUTH] = { "truth", 0, "T", "compare with a simulator truth file", 0 },
	[CAL_OUTPUT] = { "output", 'o', "FILE", "where to write the result (default: the machine file's calibration section)", 0 },
	[CAL_FORCE] = { "force", 0, NULL, "write a result that fails", 0 },
	[CAL_JSON] = CLI_OPT_JSON,
	[CAL_SEED] = { "seed", 0, "S", "seed of the simulator when capturing from it", 0 },
	[CAL_WORLD] = { "world", 0, "FILE", "the simulated world file when capturing from it", 0 },
	[CAL_SIZE] = { "size", 0, "WxH", "the canvas size (mm)", 0 },
	[CAL_POINTS] = { "points", 0, "PAIRS.json", "point pairs file instead of a guided session", 0 },
	[CAL_TARGETS] = { "targets", 0, "X,Y;...", "the targets (canvas mm)", 0 },
	[CAL_BY_HAND] = { "by-hand", 0, NULL, "move the arm by hand, not by jogs", 0 },
	[CAL_RUN_DIR] = { "run-dir", 0, "DIR", "where the session's journal goes", 0 },
	[CAL_PALETTE] = { "palette", 0, "P", "the palette whose paints the card holds", 0 },
	[CAL_CARD] = { "card", 0, "CARD.json", "the paint card file", 0 },
	[CAL_LAYOUT] = { "layout", 0, NULL, "write the card to print", 0 },
	[CAL_TINTS] = { "tints", 0, "F,F", "the tint fractions", 0 },
	[CAL_SVG] = { "svg", 0, "S", "write the card as SVG too", 0 },
	[CAL_PROFILE] = { "profile", 0, "ICC", "the camera ICC profile", 0 },
	[CAL_TI3] = { "ti3", 0, "FILE.ti3", "write the chart's measurements as ArgyllCMS's .ti3 too", 0 },
	[CAL_CHECK] = { "check", 0, "PROFILE.icc", "check this profile on the chart, not replacing it (-o: the picture)", 0 },
};
extern const struct cli_optset *const cli_calib_sets[];
static const struct cli_optset camera_set = {
	"calib camera", calib_opts, CAL_OPT_COUNT,
	CLI_BIT(CAL_MACHINE) | CLI_BIT(CAL_FRAME) | CLI_BIT(CAL_CHART) | CLI_BIT(CAL_CORNERS) | CLI_BIT(CAL_FLAT) | CLI_BIT(CAL_LIGHT_MAP) | CLI_BIT(CAL_NO_LIGHT_CORRECTION) | CLI_BIT(CAL_MODEL) | CLI_BIT(CAL_ICC_VERSION) | CLI_BIT(CAL_TRUTH) | CLI_BIT(CAL_OUTPUT) | CLI_BIT(CAL_FORCE) | CLI_BIT(CAL_JSON) | CLI_BIT(CAL_SEED) | CLI_BIT(CAL_WORLD) | CLI_BIT(CAL_TI3) | CLI_BIT(CAL_CHECK),
	cli_calib_sets,
};
static const struct cli_optset canvas_set = {
	"calib canvas", calib_opts, CAL_OPT_COUNT,
	CLI_BIT(CAL_MACHINE) | CLI_BIT(CAL_FRAME) | CLI_BIT(CAL_CORNERS) | CLI_BIT(CAL_SIZE) | CLI_BIT(CAL_TRUTH) | CLI_BIT(CAL_OUTPUT) | CLI_BIT(CAL_FORCE) | CLI_BIT(CAL_JSON) | CLI_BIT(CAL_SEED) | CLI_BIT(CAL_WORLD),
	cli_calib_sets,
};
static const struct cli_optset arm_set = {
	"calib arm", calib_opts, CAL_OPT_COUNT,
	CLI_BIT(CAL_MACHINE) | CLI_BIT(CAL_POINTS) | CLI_BIT(CAL_MODEL) | CLI_BIT(CAL_TARGETS) | CLI_BIT(CAL_BY_HAND) | CLI_BIT(CAL_RUN_DIR) | CLI_BIT(CAL_OUTPUT) | CLI_BIT(CAL_JSON) | CLI_BIT(CAL_SEED) | CLI_BIT(CAL_WORLD),
	cli_calib_sets,
};
static const struct cli_optset paints_set = {
	"calib paints", calib_opts, CAL_OPT_COUNT,
	CLI_BIT(CAL_MACHINE) | CLI_BIT(CAL_PALETTE) | CLI_BIT(CAL_CARD) | CLI_BIT(CAL_LAYOUT) | CLI_BIT(CAL_TINTS) | CLI_BIT(CAL_SVG) | CLI_BIT(CAL_FRAME) | CLI_BIT(CAL_PROFILE) | CLI_BIT(CAL_TRUTH) | CLI_BIT(CAL_OUTPUT) | CLI_BIT(CAL_FORCE) | CLI_BIT(CAL_JSON) | CLI_BIT(CAL_SEED) | CLI_BIT(CAL_WORLD),
	cli_calib_sets,
};
const struct cli_optset *const cli_calib_sets[] = { &camera_set, &canvas_set, &arm_set, &paints_set, NULL };

/* Every session's options, as parsed: each session reads its own. */
struct calib_args {
	struct calib_session s;
	const char *machine_given;   /* --machine, else NULL */
	char machine[CFG_PATH_MAX];  /* the machine file: given, else $BRUSHLOOP_MACHINE, else the example */
	int json;
	const char *chart, *flat, *light_map, *model, *points, *run_dir, *palette, *card, *svg, *profile, *ti3, *check;
	double corners[8], size_mm[2], targets[2 * CALIB_ARM_MAX_POINTS], tints[CALIB_CARD_MAX_TINTS];
	int have_corners, no_light, icc_version, n_targets, by_hand, layout, n_tints;
};

/* "X,Y;X,Y;..." into up to max points; returns how many, or a negative code. */
static int parse_points(const char *opt, const char *text, double *out, int max, bl_err *err)
{
	const char *p = text;
	int n = 0;

	while (*p) {
		char *end;
		double x, y;

		if (n == max)
			return bl_fail(err, BL_EINVAL, "%s: more than %d points in '%s'", opt, max, text);
		errno = 0;
		x = strtod(p, &end);
		if (end == p || *end != ',' || errno || !isfinite(x))
			return bl_fail(err, BL_EINVAL, "%s: '%s' is not X,Y;X,Y;... (point %d)", opt, text,
				       n + 1);
		p = end + 1;
		y = strtod(p, &end);
		if (end == p || (*end && *end != ';') || errno || !isfinite(y))
			return bl_fail(err, BL_EINVAL, "%s: '%s' is not X,Y;X,Y;... (point %d)", opt, text,
				       n + 1);
		out[2 * n] = x;
		out[2 * n + 1] = y;
		n++;
		p = *end ? end + 1 : end;
	}
	return n;
}

static int parse_fractions(const char *text, double *out, int max, bl_err *err)
{
	const char *p = text;
	int n = 0;

	while (*p) {
		char *end;
		double v;

		if (n == max)
			return bl_fail(err, BL_EINVAL, "--tints: at most %d", max);
		errno = 0;
		v = strtod(p, &end);
		if (end == p || (*end && *end != ',') || errno || !(v > 0 && v < 1))
			return bl_fail(err, BL_EINVAL, "--tints: '%s' is not a list of paint fractions "
				       "between 0 and 1", text);
		out[n++] = v;
		p = *end ? end + 1 : end;
	}
	return n;
}

static int parse_corners(const struct cli_optparse *op, struct calib_args *a)
{
	bl_err err = { 0 };
	int n = parse_points("--corners", op->arg, a->corners, 4, &err);

	if (n < 0)
		return cli_usage(op->cmd, "%s", err.msg);
	if (n != 4)
		return cli_usage(op->cmd, "--corners takes the %s 4 corners, %d given",
				 op->set == &camera_set ? "chart's" : "canvas's", n);
	a->have_corners = 1;
	return 0;
}

static int parse_targets(const struct cli_optparse *op, struct calib_args *a)
{
	bl_err err = { 0 };

	a->n_targets = parse_points("--targets", op->arg, a->targets, CALIB_ARM_MAX_POINTS, &err);
	if (a->n_targets < 0)
		return cli_usage(op->cmd, "%s", err.msg);
	if (a->n_targets < 4)
		return cli_usage(op->cmd, "--targets: %d points; at least 4", a->n_targets);
	return 0;
}

static int parse_tints(const struct cli_optparse *op, struct calib_args *a)
{
	bl_err err = { 0 };

	if ((a->n_tints = parse_fractions(op->arg, a->tints, CALIB_CARD_MAX_TINTS, &err)) < 0)
		return cli_usage(op->cmd, "%s", err.msg);
	return 0;
}

static int parse_seed(const struct cli_optparse *op, struct calib_args *a)
{
	long v;

	if (cli_opt_long(op, 0, 0x7fffffffffffffffL, &v))
		return BL_EXIT_USAGE;
	a->s.ro.seed = (uint64_t)v;
	a->s.ro.seed_given = 1;
	return 0;
}

/* One row into a: 0 or a usage exit status. */
static int parse_row(const struct cli_optparse *op, enum cal_opt row, struct calib_args *a)
{
	switch (row) {
	case CAL_MACHINE:
		a->machine_given = op->arg;
		break;
	case CAL_FRAME:
		a->s.frame = op->arg;
		break;
	case CAL_CHART:
		a->chart = op->arg;
		break;
	case CAL_FLAT:
		a->flat = op->arg;
		break;
	case CAL_LIGHT_MAP:
		a->light_map = op->arg;
		break;
	case CAL_NO_LIGHT_CORRECTION:
		a->no_light = 1;
		break;
	case CAL_MODEL:
		a->model = op->arg;
		break;
	case CAL_TRUTH:
		a->s.truth = op->arg;
		break;
	case CAL_OUTPUT:
		a->s.output = op->arg;
		break;
	case CAL_FORCE:
		a->s.force = 1;
		break;
	case CAL_JSON:
		a->json = 1;
		break;
	case CAL_WORLD:
		a->s.ro.world_file = op->arg;
		break;
	case CAL_POINTS:
		a->points = op->arg;
		break;
	case CAL_BY_HAND:
		a->by_hand = 1;
		break;
	case CAL_RUN_DIR:
		a->run_dir = op->arg;
		break;
	case CAL_PALETTE:
		a->palette = op->arg;
		break;
	case CAL_CARD:
		a->card = op->arg;
		break;
	case CAL_LAYOUT:
		a->layout = 1;
		break;
	case CAL_SVG:
		a->svg = op->arg;
		break;
	case CAL_PROFILE:
		a->profile = op->arg;
		break;
	case CAL_TI3:
		a->ti3 = op->arg;
		break;
	case CAL_CHECK:
		a->check = op->arg;
		break;
	case CAL_CORNERS:
		return parse_corners(op, a);
	case CAL_ICC_VERSION:
		if (strcmp(op->arg, "2") != 0 && strcmp(op->arg, "4") != 0)
			return cli_usage(op->cmd, "--icc-version: '%s' is not 2 (ICC 2.4, the default) or 4 (ICC 4.3)",
					 op->arg);
		a->icc_version = op->arg[0] - '0';
		break;
	case CAL_SEED:
		return parse_seed(op, a);
	case CAL_SIZE:
		if (sscanf(op->arg, "%lfx%lf", &a->size_mm[0], &a->size_mm[1]) != 2 || !(a->size_mm[0] >= 10) ||
		    !(a->size_mm[1] >= 10) || a->size_mm[0] > 5000 || a->size_mm[1] > 5000)
			return cli_usage(op->cmd, "--size: '%s' is not WxH in mm (10..5000)", op->arg);
		break;
	case CAL_TARGETS:
		return parse_targets(op, a);
	case CAL_TINTS:
		return parse_tints(op, a);
	case CAL_OPT_COUNT:
		break;
	}
	return 0;
}

/* A session's options into a (which it zeroes first): 0 or a usage exit status. */
static int parse(const struct cli_command *cmd, const struct cli_optset *set, int argc, char **argv,
		 struct calib_args *a)
{
	struct cli_optparse op;
	int row, rc;

	memset(a, 0, sizeof(*a));
	cli_opt_start(&op, cmd, set, argc, argv);
	while ((row = cli_opt_next(&op)) != CLI_OPT_END) {
		if (row == CLI_OPT_BAD)
			return BL_EXIT_USAGE;
		if ((rc = parse_row(&op, (enum cal_opt)row, a)))
			return rc;
	}
	if (op.ind != argc)
		return cli_usage(cmd, "%s takes no arguments%s", set->verb,
				 set == &camera_set || set == &canvas_set ? " (the frame is --frame F)" : "");
	cli_machine_path(a->machine_given, a->machine, sizeof(a->machine));
	a->s.machine_path = a->machine;
	a->s.say = a->json ? NULL : stdout;
	return 0;
}

static void print_figures(const char *what, const struct calib_figures *f)
{
	printf("  %-28s mean %5.2f  max %5.2f%s%s%s\n", what, f->mean_de00, f->max_de00,
	       f->worst[0] ? "  (worst: " : "", f->worst, f->worst[0] ? ")" : "");
}

/* ---- camera ---- */

static int camera_json(const struct calib_camera_session *cs)
{
	cJSON *j = calib_camera_json(cs->r);

	if (!j)
		return BL_EXIT_FAIL;
	cJSON_AddStringToObject(j, "chart", cs->chart->name);
	cJSON_AddStringToObject(j, "frame", cs->fs.name);
	if (cs->fs.truth)
		cJSON_AddStringToObject(j, "truth_source", cs->fs.truth_name);
	cJSON_AddStringToObject(j, "output", cs->out);
	cJSON_AddBoolToObject(j, "written", cs->written);
	if (cs->ti3_path)
		cJSON_AddStringToObject(j, "ti3", cs->ti3_path);
	cJSON_AddNumberToObject(j, "threshold_mean_de00", cs->m->calibration.max_camera_de00);
	cJSON_AddBoolToObject(j, "pass", cs->pass);
	if (cs->has_drift)
		cJSON_AddItemToObject(j, "drift", calib_drift_json(&cs->drift));
	cli_print_json(j);
	return 0;
}

static void camera_patches(const struct calib_camera_result *r)
{
	printf("4. Models (CIEDE2000 against the chart's references; held out = each patch "
	       "predicted by the model fitted without it):\n");
	for (int k = 0; k < CALIB_MODEL_COUNT; k++)
		if (r->cand_ok[k])
			printf("   %-16s fit mean %5.2f max %5.2f   held out mean %5.2f max %5.2f%s\n",
			       calib_model_names[k], r->cand_fit[k].mean_de00, r->cand_fit[k].max_de00,
			       r->cand_held[k].mean_de00, r->cand_held[k].max_de00,
			       k == r->model ? "   <- kept" : "");
	printf("\n%-16s %8s %8s %8s%s\n", "patch", "fit", "held", "sRGB",
	       r->has_truth ? "   truth: fit  held  sRGB" : "");
	for (int i = 0; i < r->n; i++) {
		const struct calib_patch *p = &r->p[i];

		printf("%-16s %8.2f %8.2f %8.2f", p->name, p->fit_de00, p->held_de00, p->srgb_de00);
		if (p->has_truth)
			printf("        %5.2f %5.2f %5.2f", p->truth_fit_de00, p->truth_held_de00,
			       p->truth_srgb_de00);
		printf("%s\n", p->at_limit ? "   (a channel clipped: beyond the camera's range)" : "");
	}
}

static void camera_text(const struct calib_camera_session *cs)
{
	const struct calib_camera_result *r = cs->r;

	if (cs->light_written)
		printf("light map: %d x %d cells, %d on the card, light %.3f..%.3f of the chart's; written to %s\n",
		       cs->lm_cols, cs->lm_rows, cs->lm_known, cs->lm_lo, cs->lm_hi, cs->light_path);
	printf("   found: corners (%.1f, %.1f) (%.1f, %.1f) (%.1f, %.1f) (%.1f, %.1f) px%s\n",
	       r->view.corners_px[0], r->view.corners_px[1], r->view.corners_px[2], r->view.corners_px[3],
	       r->view.corners_px[4], r->view.corners_px[5], r->view.corners_px[6], r->view.corners_px[7],
	       r->view.given ? " (given)" : "");
	printf("3. Measured %d patches; light across the chart %.3f..%.3f of its mean, "
	       "corrected from the %s.\n", r->n, r->light_min, r->light_max, calib_light_names[r->light_source]);
	camera_patches(r);
	printf("\nReport (CIEDE2000, %s model):\n", calib_model_names[r->model]);
	print_figures("fit (through the profile)", &r->fit);
	print_figures("held out", &r->held_out);
	if (r->held_in_range.n < r->n)
		print_figures("held out, unclipped patches", &r->held_in_range);
	print_figures("uncalibrated sRGB", &r->srgb);
	if (cs->ti3_path)
		printf("  measurements written to %s (ArgyllCMS .ti3: profcheck -k %s PROFILE)\n", cs->ti3_path,
		       cs->ti3_path);
	if (r->has_truth) {
		print_figures("truth: fit", &r->truth_fit);
		print_figures("truth: held out", &r->truth_held_out);
		print_figures("truth: uncalibrated sRGB", &r->truth_srgb);
	}
	if (cs->has_drift) {
		printf("Drift since the previous calibration (%.2f h):\n", cs->drift.hours);
		print_figures("previous profile now", &cs->drift.previous_now);
		print_figures("change of the chart", &cs->drift.change);
		printf("  light on the neutral patches %+.1f%%; %s\n", 100 * cs->drift.intensity_change,
		       cs->drift.recalibrate ? "the previous profile no longer passes: recalibrate"
					     : "the previous profile still passes");
	}
	printf("%s: held-out mean %.2f %s the machine's calibration.max_camera_de00 %.2f; %s %s\n",
	       cs->pass ? "PASS" : "FAIL", r->held_out.mean_de00, cs->pass ? "within" : "exceeds",
	       cs->m->calibration.max_camera_de00, cs->written ? "profile written to" : "nothing written to",
	       cs->out);
	if (!cs->pass && !cs->written)
		printf("(--force writes it anyway)\n");
}

static void check_json(const struct calib_camera_session *cs)
{
	cJSON *j = cJSON_CreateObject(), *arr;

	if (!j)
		return;
	cJSON_AddStringToObject(j, "check", cs->check_path);
	cJSON_AddStringToObject(j, "chart", cs->chart->name);
	cJSON_AddStringToObject(j, "frame", cs->fs.name);
	cJSON_AddItemToObject(j, "profile_now", calib_figures_json(&cs->check->figures));
	arr = cJSON_AddArrayToObject(j, "patches");
	for (int i = 0; arr && i < cs->r->n; i++) {
		cJSON *p = cJSON_CreateObject();

		const struct meas_roi *b = &cs->r->p[i].roi;
		const int roi[4] = { b->x, b->y, b->w, b->h };

		cJSON_AddStringToObject(p, "name", cs->r->p[i].name);
		cJSON_AddItemToObject(p, "roi", cJSON_CreateIntArray(roi, 4));
		json_add_vec(p, "ref_lab", cs->r->p[i].ref_lab, 3);
		json_add_vec(p, "lab", cs->check->lab[i], 3);
		cJSON_AddNumberToObject(p, "de00", cs->check->de00[i]);
		cJSON_AddItemToArray(arr, p);
	}
	cJSON_AddStringToObject(j, "picture", cs->out);
	if (cs->ti3_path)
		cJSON_AddStringToObject(j, "ti3", cs->ti3_path);
	cJSON_AddNumberToObject(j, "threshold_mean_de00", cs->m->calibration.max_camera_de00);
	cJSON_AddBoolToObject(j, "pass", cs->pass);
	cli_print_json(j);
}

static void check_text(const struct calib_camera_session *cs)
{
	const struct calib_profile_check *c = cs->check;

	printf("3. Measured %d patches; light across the chart %.3f..%.3f of its mean, corrected from the %s.\n",
	       cs->r->n, cs->r->light_min, cs->r->light_max, calib_light_names[cs->r->light_source]);
	printf("\n%-16s %22s %22s %8s\n", "patch", "reference Lab", "through the profile", "CIEDE2000");
	for (int i = 0; i < cs->r->n; i++)
		printf("%-16s %6.2f %6.2f %7.2f  %6.2f %6.2f %7.2f  %8.2f\n", cs->r->p[i].name,
		       cs->r->p[i].ref_lab[0], cs->r->p[i].ref_lab[1], cs->r->p[i].ref_lab[2], c->lab[i][0],
		       c->lab[i][1], c->lab[i][2], c->de00[i]);
	printf("\n");
	print_figures("the profile on this chart", &c->figures);
	printf("  patch errors drawn in %s (left half the reference, right half the reading; framed green "
	       "within %.2f, amber within twice it, red beyond)\n", cs->out, cs->m->calibration.max_camera_de00);
	printf("%s: mean %.2f %s the machine's calibration.max_camera_de00 %.2f; %s is not replaced\n",
	       cs->pass ? "PASS" : "FAIL", c->figures.mean_de00, cs->pass ? "within" : "exceeds",
	       cs->m->calibration.max_camera_de00, cs->check_path);
}

/* --check writes no profile: the options that shape one contradict it; -o names its picture. */
static int check_args(const struct cli_command *cmd, const struct calib_args *a)
{
	size_t n = a->s.output ? strlen(a->s.output) : 0;

	if (a->model || a->icc_version || a->light_map || a->s.force)
		return cli_usage(cmd, "--check writes no profile: %s has nothing to do",
				 a->model ? "--model" : a->icc_version ? "--icc-version" : a->light_map ? "--light-map"
				 : "--force");
	if (a->s.output && (n < 4 || strcmp(a->s.output + n - 4, ".png") != 0))
		return cli_usage(cmd, "-o with --check names the patch-error picture: a .png, not '%s'",
				 a->s.output);
	return 0;
}

static int calib_camera_cmd(const struct cli_command *cmd, int argc, char **argv)
{
	struct calib_camera_session cs = { 0 };
	struct calib_args a;
	bl_err err = { 0 };
	int rc = parse(cmd, &camera_set, argc, argv, &a);

	if (rc)
		return rc;
	cs.co.model = -1;
	if (a.model) {
		for (int k = 0; calib_model_names[k]; k++)
			if (strcmp(a.model, calib_model_names[k]) == 0)
				cs.co.model = k;
		if (cs.co.model < 0)
			return cli_usage(cmd, "--model: '%s' is not matrix, affine or root-polynomial", a.model);
	}
	cs.co.icc_version = a.icc_version;
	cs.co.light = a.no_light ? -1 : 0;
	if (a.flat && a.no_light)
		return cli_usage(cmd, "--flat and --no-light-correction contradict each other");
	if (a.light_map && !a.flat)
		return cli_usage(cmd, "--light-map is made from the flat frame: give --flat F (a frame "
				 "of a uniform white card over the whole view)");
	cs.chart_name = a.chart ? a.chart : "colorchecker24";
	cs.flat_path = a.flat;
	cs.light_path = a.light_map;
	cs.ti3_path = a.ti3;
	cs.check_path = a.check;
	if (a.check && (rc = check_args(cmd, &a)))
		return rc;
	cs.corners_px = a.have_corners ? a.corners : NULL;
	if ((rc = calib_camera_session_run(&cs, &a.s, &err)))
		rc = cs.m && !cs.out ? cli_usage(cmd, "%s", err.msg) : cli_fail(&err);
	else if (a.check) {
		if (a.json)
			check_json(&cs);
		else
			check_text(&cs);
		rc = cs.pass ? 0 : BL_EXIT_FAIL;
	} else if (a.json)
		rc = camera_json(&cs) ? BL_EXIT_FAIL : cs.pass ? 0 : BL_EXIT_FAIL;
	else {
		camera_text(&cs);
		rc = cs.pass ? 0 : BL_EXIT_FAIL;
	}
	calib_camera_session_free(&cs);
	return rc;
}

/* ---- canvas ---- */

static void canvas_json(const struct calib_canvas_session *cs)
{
	cJSON *j = calib_canvas_json(&cs->r);

	if (!j)
		return;
	cJSON_AddStringToObject(j, "frame", cs->fs.name);
	if (cs->truth_mean_mm >= 0) {
		cJSON *t = cJSON_AddObjectToObject(j, "truth");

		if (t) {
			cJSON_AddNumberToObject(t, "mean_mm", cs->truth_mean_mm);
			cJSON_AddNumberToObject(t, "max_mm", cs->truth_max_mm);
		}
	}
	cJSON_AddStringToObject(j, "output", cs->out);
	cJSON_AddBoolToObject(j, "written", cs->written);
	cJSON_AddNumberToObject(j, "threshold_mm", cs->m->calibration.max_canvas_error_mm);
	cJSON_AddBoolToObject(j, "pass", cs->pass);
	cli_print_json(j);
}

static void canvas_text(const struct calib_canvas_session *cs)
{
	const struct calib_canvas_result *r = &cs->r;

	printf("2. %s: %d of the corner markers seen; homography from %d points (%s).\n", cs->fs.name,
	       r->markers_found, r->n_points,
	       r->source == VIS_FROM_MARKERS ? "marker centres and outer corners" : "corners given");
	printf("   corners (%.1f, %.1f) (%.1f, %.1f) (%.1f, %.1f) (%.1f, %.1f) px, %.3f mm/px\n",
	       r->canvas.corners_px[0], r->canvas.corners_px[1], r->canvas.corners_px[2],
	       r->canvas.corners_px[3], r->canvas.corners_px[4], r->canvas.corners_px[5],
	       r->canvas.corners_px[6], r->canvas.corners_px[7], r->mm_per_px);
	if (r->rms_mm >= 0)
		printf("Report: canvas error %.3f mm (the fitted map, from %d corners whose "
		       "reprojection error is rms %.3f, max %.3f mm)\n", r->map_error_mm, r->n_points,
		       r->rms_mm, r->max_mm);
	else if (r->corners_off_mm >= 0)
		printf("Report: four corners given fit exactly; their error cannot be measured; they lie "
		       "within %.1f mm of where the 4 markers in view put them\n", r->corners_off_mm);
	else
		printf("Report: four corners given fit exactly; their error cannot be measured, nor "
		       "checked against the markers (%d in view, the check needs all 4)\n", r->markers_found);
	if (cs->truth_mean_mm >= 0)
		printf("  against the truth: mean %.3f mm, max %.3f mm\n", cs->truth_mean_mm, cs->truth_max_mm);
	printf("%s: %s the machine's calibration.max_canvas_error_mm %.2f; %s %s\n",
	       cs->pass ? "PASS" : "FAIL",
	       r->map_error_mm < 0 ? "not measured against" : cs->pass ? "within" : "exceeds",
	       cs->m->calibration.max_canvas_error_mm,
	       cs->written ? "canvas file written to" : "nothing written to", cs->out);
}

static int calib_canvas_cmd(const struct cli_command *cmd, int argc, char **argv)
{
	struct calib_canvas_session cs = { 0 };
	struct calib_args a;
	bl_err err = { 0 };
	int rc = parse(cmd, &canvas_set, argc, argv, &a);

	if (rc)
		return rc;
	cs.corners_px = a.have_corners ? a.corners : NULL;
	cs.size_mm[0] = a.size_mm[0];
	cs.size_mm[1] = a.size_mm[1];
	if ((rc = calib_canvas_session_run(&cs, &a.s, &err)))
		rc = cs.m && !cs.out ? cli_usage(cmd, "%s", err.msg) : cli_fail(&err);
	else {
		if (a.json)
			canvas_json(&cs);
		else
			canvas_text(&cs);
		rc = cs.pass ? 0 : BL_EXIT_FAIL;
	}
	calib_canvas_session_free(&cs);
	return rc;
}

/* ---- arm ---- */

static void arm_json(const struct calib_registration *as)
{
	cJSON *j = calib_arm_json(as->a);

	if (!j)
		return;
	cJSON_AddStringToObject(j, "output", as->out);
	cJSON_AddBoolToObject(j, "written", as->pass);
	cJSON_AddNumberToObject(j, "threshold_mm", as->m->calibration.max_arm_residual_mm);
	cJSON_AddBoolToObject(j, "pass", as->pass);
	cli_print_json(j);
}

static void arm_text(const struct calib_registration *as)
{
	const struct calib_arm *a = as->a;

	printf("Arm registration (%s) from %d points:\n", calib_arm_model_names[a->model], a->n);
	printf("  %-20s %-30s %s\n", "canvas mm", "arm mm", "residual mm");
	for (int i = 0; i < a->n; i++) {
		char cs[64], ams[96];

		snprintf(cs, sizeof(cs), "(%.1f, %.1f)", a->canvas_mm[i][0], a->canvas_mm[i][1]);
		snprintf(ams, sizeof(ams), "(%.2f, %.2f, %.2f)", a->arm_mm[i].x, a->arm_mm[i].y, a->arm_mm[i].z);
		printf("  %-20s %-30s %.3f\n", cs, ams, a->residual_mm[i]);
	}
	printf("  scale %.5f, rotation %.3f deg%s; surface z = %.3f %+.5f x %+.5f y mm (rms %.3f)\n",
	       a->scale, a->rotation_deg, a->a[0][0] * a->a[1][1] - a->a[0][1] * a->a[1][0] < 0 ? ", mirrored" : "",
	       a->z[0], a->z[1], a->z[2], a->z_rms_mm);
	printf("Report: residual rms %.3f mm, max %.3f mm\n", a->rms_mm, a->max_mm);
	printf("%s: max residual %.3f mm %s the machine's calibration.max_arm_residual_mm %.3f; %s %s\n",
	       as->pass ? "PASS" : "REFUSED", a->max_mm, as->pass ? "within" : "exceeds",
	       as->m->calibration.max_arm_residual_mm,
	       as->pass ? "registration written to" : "nothing written to", as->out);
	if (!as->pass)
		printf("Touch the points again more carefully (the worst are listed above).\n");
}

static int calib_arm_cmd(const struct cli_command *cmd, int argc, char **argv)
{
	struct calib_registration as = { 0 };
	struct calib_args a;
	bl_err err = { 0 };
	int rc = parse(cmd, &arm_set, argc, argv, &a);

	if (rc)
		return rc;
	as.model = CALIB_ARM_SIMILARITY;
	if (a.model && strcmp(a.model, "affine") == 0)
		as.model = CALIB_ARM_AFFINE;
	else if (a.model && strcmp(a.model, "similarity") != 0)
		return cli_usage(cmd, "--model: '%s' is not similarity or affine", a.model);
	if (a.points && (a.n_targets || a.by_hand || a.run_dir))
		return cli_usage(cmd, "--points gives the pairs: --targets, --by-hand and --run-dir "
				 "are for the guided session");
	as.points = a.points;
	as.by_hand = a.by_hand;
	as.n_targets = a.n_targets;
	as.targets = a.targets;
	as.run_dir = a.run_dir;
	if ((rc = calib_registration_run(&as, &a.s, &err)))
		rc = as.m && !as.out ? cli_usage(cmd, "%s", err.msg) : cli_fail(&err);
	else {
		if (a.json)
			arm_json(&as);
		else
			arm_text(&as);
		rc = as.pass ? 0 : BL_EXIT_FAIL;
	}
	calib_registration_free(&as);
	return rc;
}

/* ---- paints ---- */

static void layout_print(const struct calib_paints_session *ps, int json)
{
	const struct calib_card *card = ps->card;

	if (json) {
		cJSON *j = cJSON_CreateObject();

		if (j) {
			cJSON_AddStringToObject(j, "card", ps->card_path);
			if (ps->svg)
				cJSON_AddStringToObject(j, "svg", ps->svg);
			json_add_vec(j, "size_mm", card->size_mm, 2);
			cJSON_AddNumberToObject(j, "swatches", card->n);
			json_add_vec(j, "tints", card->tints, card->n_tints);
		}
		cli_print_json(j);
		return;
	}
	printf("Paint card for %s: %d swatches on %.0fx%.0f mm, written to %s%s%s.\n", ps->pal->name,
	       card->n, card->size_mm[0], card->size_mm[1], ps->card_path, ps->svg ? " and " : "",
	       ps->svg ? ps->svg : "");
	printf("1. Print the card at 100%% (the markers are %g mm across; the one with "
	       "the dark core goes top left).\n", card->marker_size_mm);
	printf("2. Paint every box opaquely: the paint alone (masstone), then mixed with %s "
	       "by weight at", ps->pal->white);
	for (int i = 0; i < card->n_tints; i++)
		printf(" %g%%", 100 * card->tints[i]);
	printf(" paint.\n3. Let it dry, lay it on the canvas upright under the camera, "
	       "then run: brushloop calib paints --palette %s --card %s -o PALETTE.json\n",
	       ps->palette_path, ps->card_path);
}

static void paints_json(const struct calib_paints_session *ps, const char *output)
{
	cJSON *j = calib_paints_json(ps->r);

	if (!j)
		return;
	cJSON_AddStringToObject(j, "frame", ps->fs.name);
	cJSON_AddStringToObject(j, "profile", meas_profile_name(ps->prof));
	cJSON_AddStringToObject(j, "output", output);
	cJSON_AddBoolToObject(j, "written", ps->written);
	cJSON_AddNumberToObject(j, "threshold_de00", ps->m->tolerances.mix_de00);
	cJSON_AddBoolToObject(j, "pass", ps->pass);
	cli_print_json(j);
}

static void paints_text(const struct calib_paints_session *ps, const char *output)
{
	const struct calib_paints_result *r = ps->r;

	printf("Card found by its markers in %s; measured through %s.\n", ps->fs.name,
	       meas_profile_name(ps->prof));
	printf("\n%-20s %8s  %-26s %s\n", "paint", "fraction", "Lab", r->has_truth ? "truth de00" : "");
	for (int i = 0; i < r->n; i++) {
		const struct calib_swatch_result *s = &r->s[i];
		char lab[64];

		snprintf(lab, sizeof(lab), "%.2f, %.2f, %.2f", s->lab[0], s->lab[1], s->lab[2]);
		printf("%-20s %8g  %-26s", s->paint, s->fraction, lab);
		if (s->has_truth)
			printf(" %.2f", s->truth_de00);
		printf("\n");
	}
	printf("\nReport: the mixing model's fit to each paint's measurements (CIEDE2000):\n");
	for (int i = 0; i < r->out.n_paints; i++)
		printf("  %-20s %.2f\n", r->out.paints[i].name, r->model_de00[i]);
	if (r->n_heldout)
		print_figures("last tint, held out", &r->heldout);
	if (r->has_truth)
		print_figures("card against the truth", &r->truth);
	printf("%s: every paint's fit %s the machine's tolerances.mix_de00 %.2f; %s %s\n",
	       ps->pass ? "PASS" : "FAIL", ps->pass ? "within" : "not within", ps->m->tolerances.mix_de00,
	       ps->written ? "palette written to" : "nothing written to", output);
}

static int calib_paints_cmd(const struct cli_command *cmd, int argc, char **argv)
{
	struct calib_paints_session ps = { 0 };
	struct calib_args a;
	bl_err err = { 0 };
	int rc = parse(cmd, &paints_set, argc, argv, &a);

	if (rc)
		return rc;
	if (!a.palette)
		return cli_usage(cmd, "calib paints needs --palette P (its paints, wells and white)");
	if (!a.card)
		return cli_usage(cmd, "calib paints needs --card CARD.json (written by --layout, read "
				 "when measuring)");
	if (a.layout && (a.s.frame || a.profile || a.s.truth || a.s.output || a.s.force))
		return cli_usage(cmd, "--layout writes the card: --frame, --profile, --truth, -o and "
				 "--force are for measuring it");
	if (!a.layout && (a.n_tints || a.svg))
		return cli_usage(cmd, "--tints and --svg go with --layout");
	if (!a.layout && !a.s.output)
		return cli_usage(cmd, "give -o PALETTE.json for the measured palette");
	ps.palette_path = a.palette;
	ps.card_path = a.card;
	ps.layout = a.layout;
	ps.n_tints = a.n_tints;
	ps.tints = a.tints;
	ps.svg = a.svg;
	ps.profile = a.profile;
	if ((rc = calib_paints_session_run(&ps, &a.s, &err)))
		rc = cli_fail(&err);
	else if (a.layout)
		layout_print(&ps, a.json);
	else {
		if (a.json)
			paints_json(&ps, a.s.output);
		else
			paints_text(&ps, a.s.output);
		rc = ps.pass ? 0 : BL_EXIT_FAIL;
	}
	calib_paints_session_free(&ps);
	return rc;
}

int cli_calib_main(int argc, char **argv)
{
	const struct cli_command *cmd = cli_find("calib");

	if (argc < 2)
		return cli_usage(cmd, "calib needs a session: camera, canvas, arm or paints");
	if (strcmp(argv[1], "camera") == 0)
		return calib_camera_cmd(cmd, argc - 1, argv + 1);
	if (strcmp(argv[1], "canvas") == 0)
		return calib_canvas_cmd(cmd, argc - 1, argv + 1);
	if (strcmp(argv[1], "arm") == 0)
		return calib_arm_cmd(cmd, argc - 1, argv + 1);
	if (strcmp(argv[1], "paints") == 0)
		return calib_paints_cmd(cmd, argc - 1, argv + 1);
	return cli_usage(cmd, "unknown calibration session '%s' (camera, canvas, arm, paints)",
			 argv[1]);
}

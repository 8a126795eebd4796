/* cli_calib.c: `brushloop calib camera|canvas|arm|paints`: the calibration sessions, guided at the terminal or run from frames on disk, each ending with its residuals and pass or fail against the machine file. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/journal.h"
#include "base/json.h"
#include "base/log.h"
#include "calib/calib.h"
#include "calib/calib_arm_session.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "color/mix.h"
#include "config/palette.h"
#include "rig/rig.h"
#include "safety/gate.h"
#include "sim/sim.h"
#include "vision/cam_open.h"

/* ---- shared ---- */

struct common {
	const char *machine, *frame, *output, *truth, *world;
	int json, force;
	struct rig_options ro;
};

/* The frame a session works on, and the truth about it when there is one. */
struct frame_src {
	struct img im;
	char name[CFG_PATH_MAX + 64];
	cJSON *truth;             /* --truth FILE, or the simulator's own */
	char truth_name[CFG_PATH_MAX + 64];
	double time_s;            /* simulated time of the frame, -1 when unknown */
};

static void frame_src_free(struct frame_src *f)
{
	img_free(&f->im);
	cJSON_Delete(f->truth);
	f->truth = NULL;
}

static int load_machine(const char *given, struct machine **m, bl_err *err)
{
	char path[CFG_PATH_MAX];

	cli_machine_path(given, path, sizeof(path));
	*m = malloc(sizeof(**m));
	if (!*m)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	/* Calibration measures the machine as its file alone places the canvas: an arm registration is what calib arm makes. */
	return machine_load_nominal(path, *m, err);
}

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

static void wait_operator(const char *what)
{
	char line[64];

	if (!isatty(STDIN_FILENO))
		return;
	printf("%s\nPress Enter when ready... ", what);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		printf("\n");
}

enum cal_opt {
	CAL_MACHINE, CAL_FRAME, CAL_CHART, CAL_CORNERS, CAL_FLAT, CAL_LIGHT_MAP, CAL_NO_LIGHT_CORRECTION, CAL_MODEL, CAL_ICC_VERSION, CAL_TRUTH, CAL_OUTPUT, CAL_FORCE, CAL_JSON, CAL_SEED, CAL_WORLD, CAL_SIZE, CAL_POINTS, CAL_TARGETS, CAL_BY_HAND, CAL_RUN_DIR, CAL_PALETTE, CAL_CARD, CAL_LAYOUT, CAL_TINTS, CAL_SVG, CAL_PROFILE,
	CAL_OPT_COUNT
};

/* One table for every session: an option means the same in each that takes it. */
static const struct cli_opt calib_opts[CAL_OPT_COUNT] = {
	[CAL_MACHINE] = CLI_OPT_MACHINE,
	[CAL_FRAME] = { "frame", 0, "F", "work on this frame instead of capturing one", 0 },
	[CAL_CHART] = { "chart", 0, "CHART", "the chart: colorchecker24 or a chart file", 0 },
	[CAL_CORNERS] = { "corners", 0, "X,Y;...", "the 4 corners, clockwise from the top left (px)", 0 },
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
};
extern const struct cli_optset *const cli_calib_sets[];
static const struct cli_optset camera_set = {
	"calib camera", calib_opts, CAL_OPT_COUNT,
	CLI_BIT(CAL_MACHINE) | CLI_BIT(CAL_FRAME) | CLI_BIT(CAL_CHART) | CLI_BIT(CAL_CORNERS) | CLI_BIT(CAL_FLAT) | CLI_BIT(CAL_LIGHT_MAP) | CLI_BIT(CAL_NO_LIGHT_CORRECTION) | CLI_BIT(CAL_MODEL) | CLI_BIT(CAL_ICC_VERSION) | CLI_BIT(CAL_TRUTH) | CLI_BIT(CAL_OUTPUT) | CLI_BIT(CAL_FORCE) | CLI_BIT(CAL_JSON) | CLI_BIT(CAL_SEED) | CLI_BIT(CAL_WORLD),
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

/* The common options every session takes; 1 when opt was one of them, 0 when not, else exit status. */
static int common_opt(const struct cli_optparse *p, int opt, struct common *c)
{
	long v;

	switch (opt) {
	case CAL_MACHINE:
		c->machine = p->arg;
		return 1;
	case CAL_FRAME:
		c->frame = p->arg;
		return 1;
	case CAL_TRUTH:
		c->truth = p->arg;
		return 1;
	case CAL_OUTPUT:
		c->output = p->arg;
		return 1;
	case CAL_JSON:
		c->json = 1;
		return 1;
	case CAL_SEED:
		if (cli_opt_long(p, 0, 0x7fffffffffffffffL, &v))
			return -BL_EXIT_USAGE;
		c->ro.seed = (uint64_t)v;
		c->ro.seed_given = 1;
		return 1;
	case CAL_WORLD:
		c->world = p->arg;
		c->ro.world_file = p->arg;
		return 1;
	default:
		return 0;
	}
}

/*
 * The frame a session works on: the file given, else one captured from the
 * machine's camera through the rig (controls locked, camera.average_frames
 * averaged; the simulator shows scene, and tells its truth).
 */
static int get_frame(const struct common *c, const struct machine *m, int scene,
		     const struct sim_card *card, const char *prompt, struct frame_src *f,
		     bl_err *err)
{
	struct rig *r = NULL;
	int rc;

	memset(f, 0, sizeof(*f));
	f->time_s = -1;
	if (c->frame) {
		snprintf(f->name, sizeof(f->name), "%s", c->frame);
		rc = img_load(c->frame, m->camera.max_pixels, &f->im, err);
	} else {
		r = malloc(sizeof(*r));
		if (!r)
			return bl_fail(err, BL_ENOMEM, "out of memory");
		if (m->camera.backend != MACHINE_CAM_SIM && !c->json)
			wait_operator(prompt);
		rc = rig_open(m, &c->ro, r, err);
		if (rc) {
			free(r);
			return rc;
		}
		if (r->sim) {
			sim_set_scene(r->sim, (enum sim_scene)scene);
			if (card)
				rc = sim_set_card(r->sim, card, err);
		}
		if (rc == 0)
			rc = cam_lock_controls(r->cam, err);
		if (rc == 0)
			rc = cam_capture_for_measurement(r->cam, &f->im, err);
		if (rc == 0 && r->sim && !c->truth) {
			rc = sim_truth(r->sim, (enum sim_scene)scene, &f->truth, err);
			snprintf(f->truth_name, sizeof(f->truth_name), "the simulator's truth");
		}
		snprintf(f->name, sizeof(f->name), "the %s camera%s%s",
			 machine_cam_backend_names[m->camera.backend], m->camera.device[0] ? " " : "",
			 m->camera.device);
		rig_close(r);
		free(r);
	}
	if (rc == 0 && c->truth) {
		rc = json_parse_file(c->truth, &f->truth, err);
		snprintf(f->truth_name, sizeof(f->truth_name), "%s", c->truth);
	}
	if (rc == 0 && f->truth) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(f->truth, "time_s");

		if (cJSON_IsNumber(t))
			f->time_s = t->valuedouble;
	}
	if (rc)
		frame_src_free(f);
	return rc;
}

int cli_sim_card(const char *card_path, const struct machine *m, struct sim_card *out, bl_err *err)
{
	struct calib_card *card = malloc(sizeof(*card));
	int rc;

	if (!card)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	rc = calib_card_load(card_path, card, err);
	if (rc == 0 && card->n > SIM_CARD_MAX)
		rc = bl_fail(err, BL_EINVAL, "%s: %d swatches, the simulator shows at most %d",
			     card_path, card->n, SIM_CARD_MAX);
	if (rc == 0) {
		/* On the canvas, centred. */
		struct machine_pt c = xform_to_machine(
			&m->xf, (struct canvas_pt){ 0.5 * m->canvas.size_mm[0], 0.5 * m->canvas.size_mm[1] });

		memset(out, 0, sizeof(*out));
		memcpy(out->size_mm, card->size_mm, sizeof(out->size_mm));
		out->center_mm[0] = c.x;
		out->center_mm[1] = c.y;
		out->marker_inset_mm = card->marker_inset_mm;
		out->marker_size_mm = card->marker_size_mm;
		out->n = card->n;
		for (int i = 0; i < card->n; i++) {
			snprintf(out->box[i].paint, sizeof(out->box[i].paint), "%s", card->s[i].paint);
			out->box[i].fraction = card->s[i].fraction;
			memcpy(out->box[i].rect_mm, card->s[i].rect_mm, sizeof(out->box[i].rect_mm));
		}
	}
	free(card);
	return rc;
}

static const char *out_path(const char *given, const char *machine_key)
{
	if (given)
		return given;
	return machine_key[0] ? machine_key : NULL;
}

static int file_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static void print_figures(const char *what, const struct calib_figures *f)
{
	printf("  %-28s mean %5.2f  max %5.2f%s%s%s\n", what, f->mean_de00, f->max_de00,
	       f->worst[0] ? "  (worst: " : "", f->worst, f->worst[0] ? ")" : "");
}

/* ---- camera ---- */

static int calib_camera(const struct cli_command *cmd, int argc, char **argv)
{
	struct cli_optparse op;
	struct common c = { 0 };
	struct calib_camera_opts co = { 0 };
	struct calib_chart *chart = NULL;
	struct calib_camera_result *r = NULL;
	struct machine *m = NULL;
	struct img flat = { 0 };
	struct frame_src fs = { 0 };
	struct calib_drift drift;
	const char *chart_name = "colorchecker24", *flat_path = NULL, *light_path = NULL, *out;
	double corners[8];
	char record[CFG_PATH_MAX + 8];
	bl_err err = { 0 };
	int opt, rc, have_corners = 0, has_drift = 0, pass, written = 0;

	co.model = -1;
	cli_opt_start(&op, cmd, &camera_set, argc, argv);
	while ((opt = cli_opt_next(&op)) != CLI_OPT_END) {
		if (opt == CLI_OPT_BAD)
			return BL_EXIT_USAGE;
		switch (opt) {
		case CAL_MACHINE:
			c.machine = op.arg;
			break;
		case CAL_FRAME:
			c.frame = op.arg;
			break;
		case CAL_CHART:
			chart_name = op.arg;
			break;
		case CAL_CORNERS:
			rc = parse_points("--corners", op.arg, corners, 4, &err);
			if (rc < 0)
				return cli_usage(cmd, "%s", err.msg);
			if (rc != 4)
				return cli_usage(cmd, "--corners takes the chart's 4 corners, %d given", rc);
			have_corners = 1;
			break;
		case CAL_FLAT:
			flat_path = op.arg;
			break;
		case CAL_LIGHT_MAP:
			light_path = op.arg;
			break;
		case CAL_NO_LIGHT_CORRECTION:
			co.light = -1;
			break;
		case CAL_MODEL:
			co.model = -1;
			for (int k = 0; calib_model_names[k]; k++)
				if (strcmp(op.arg, calib_model_names[k]) == 0)
					co.model = k;
			if (co.model < 0)
				return cli_usage(cmd, "--model: '%s' is not matrix, affine or "
						 "root-polynomial", op.arg);
			break;
		case CAL_ICC_VERSION:
			if (strcmp(op.arg, "2") != 0 && strcmp(op.arg, "4") != 0)
				return cli_usage(cmd, "--icc-version: '%s' is not 2 (ICC 2.4, the "
						 "default) or 4 (ICC 4.3)", op.arg);
			co.icc_version = op.arg[0] - '0';
			break;
		case CAL_TRUTH:
			c.truth = op.arg;
			break;
		case CAL_OUTPUT:
			c.output = op.arg;
			break;
		case CAL_FORCE:
			c.force = 1;
			break;
		case CAL_JSON:
			c.json = 1;
			break;
		case CAL_SEED:
		case CAL_WORLD:
			rc = common_opt(&op, opt, &c);
			if (rc < 0)
				return -rc;
			break;
		default: /* a row this session's set does not take: never returned */
			break;
		}
	}
	if (op.ind != argc)
		return cli_usage(cmd, "calib camera takes no arguments (the frame is --frame F)");
	if (flat_path && co.light < 0)
		return cli_usage(cmd, "--flat and --no-light-correction contradict each other");
	if (light_path && !flat_path)
		return cli_usage(cmd, "--light-map is made from the flat frame: give --flat F (a frame "
				 "of a uniform white card over the whole view)");
	chart = malloc(sizeof(*chart));
	if (!chart)
		return BL_EXIT_FAIL;
	if ((rc = load_machine(c.machine, &m, &err)) || (rc = calib_chart_open(chart_name, chart, &err)))
		goto out_fail;
	out = out_path(c.output, m->calibration.camera_profile);
	if (!out) {
		free(chart);
		free(m);
		return cli_usage(cmd, "no output: give -o PROFILE.icc or set calibration.camera_profile "
				 "in the machine file");
	}
	snprintf(record, sizeof(record), "%s.json", out);
	if (!c.json) {
		printf("Camera calibration with chart %s (%d patches) for machine %s.\n", chart->name,
		       chart->n, m->name);
		printf("1. Lay the chart flat on the canvas, upright as the camera sees it, evenly lit, "
		       "nothing over it.\n");
	}
	rc = get_frame(&c, m, SIM_SCENE_CHART, NULL, "Place the chart now.", &fs, &err);
	if (rc)
		goto out_fail;
	if (flat_path) {
		rc = img_load(flat_path, m->camera.max_pixels, &flat, &err);
		if (rc)
			goto out_fail;
		co.flat = &flat;
		co.flat_name = flat_path;
	}
	co.chart = chart;
	co.frame_name = fs.name;
	co.corners_px = have_corners ? corners : NULL;
	if (!c.json)
		printf("2. Looking for the chart in %s (%dx%d px)%s...\n", fs.name, fs.im.w, fs.im.h,
		       have_corners ? " at the corners given" : "");
	rc = calib_camera_run(&fs.im, &co, &r, &err);
	if (rc)
		goto out_fail;
	if (fs.truth) {
		struct calib_truth_patch *tp;
		int tn;

		rc = calib_truth_parse(fs.truth, fs.truth_name, &tp, &tn, NULL, &err);
		if (rc)
			goto out_fail;
		rc = calib_camera_truth(r, tp, tn, fs.truth_name, &err);
		free(tp);
		if (rc)
			goto out_fail;
	}
	/* The previous profile, before it is replaced: how far has the camera drifted since? */
	if (file_exists(out) && file_exists(record)) {
		char *icc;
		size_t len;
		bl_err e2 = { 0 };

		if (fs_read_file(out, 64u << 20, &icc, &len, &e2) == 0) {
			if (calib_camera_drift(r, record, (unsigned char *)icc, len,
					       m->calibration.max_camera_de00, fs.time_s, &drift, &e2) == 0)
				has_drift = 1;
			free(icc);
		}
		if (!has_drift)
			log_warn("cannot compare with the previous calibration: %s", e2.msg);
	}
	pass = r->held_out.mean_de00 <= m->calibration.max_camera_de00;
	if (pass || c.force) {
		rc = fs_write_atomic(out, r->icc, r->icc_len, &err);
		if (rc == 0)
			rc = calib_camera_record_save(record, r, fs.name, fs.time_s, &err);
		if (rc == 0 && light_path) {
			/* The light over the whole view, relative to what the profile holds for. */
			struct vis_light lm;

			rc = calib_light_map(&flat, r, CALIB_LIGHT_MAP_COLS, &lm, &err);
			if (rc == 0)
				rc = vis_light_save(light_path, &lm, &err);
			if (rc == 0 && !c.json) {
				double lo = 1e9, hi = 0.0;
				int known = 0;

				for (int i = 0; i < lm.cols * lm.rows; i++)
					if (lm.gain[i] > 0.0f) {
						lo = fmin(lo, lm.gain[i]);
						hi = fmax(hi, lm.gain[i]);
						known++;
					}
				printf("light map: %d x %d cells, %d on the card, light %.3f..%.3f of the "
				       "chart's; written to %s\n", lm.cols, lm.rows, known, lo, hi,
				       light_path);
			}
			vis_light_free(&lm);
		}
		if (rc)
			goto out_fail;
		written = 1;
	}
	if (c.json) {
		cJSON *j = calib_camera_json(r);

		if (!j) {
			rc = bl_fail(&err, BL_ENOMEM, "out of memory");
			goto out_fail;
		}
		cJSON_AddStringToObject(j, "chart", chart->name);
		cJSON_AddStringToObject(j, "frame", fs.name);
		if (fs.truth)
			cJSON_AddStringToObject(j, "truth_source", fs.truth_name);
		cJSON_AddStringToObject(j, "output", out);
		cJSON_AddBoolToObject(j, "written", written);
		cJSON_AddNumberToObject(j, "threshold_mean_de00", m->calibration.max_camera_de00);
		cJSON_AddBoolToObject(j, "pass", pass);
		if (has_drift)
			cJSON_AddItemToObject(j, "drift", calib_drift_json(&drift));
		cli_print_json(j);
	} else {
		printf("   found: corners (%.1f, %.1f) (%.1f, %.1f) (%.1f, %.1f) (%.1f, %.1f) px%s\n",
		       r->view.corners_px[0], r->view.corners_px[1], r->view.corners_px[2],
		       r->view.corners_px[3], r->view.corners_px[4], r->view.corners_px[5],
		       r->view.corners_px[6], r->view.corners_px[7], r->view.given ? " (given)" : "");
		printf("3. Measured %d patches; light across the chart %.3f..%.3f of its mean, "
		       "corrected from the %s.\n", r->n, r->light_min, r->light_max,
		       calib_light_names[r->light_source]);
		printf("4. Models (CIEDE2000 against the chart's references; held out = each patch "
		       "predicted by the model fitted without it):\n");
		for (int k = 0; k < CALIB_MODEL_COUNT; k++)
			if (r->cand_ok[k])
				printf("   %-16s fit mean %5.2f max %5.2f   held out mean %5.2f max %5.2f%s\n",
				       calib_model_names[k], r->cand_fit[k].mean_de00,
				       r->cand_fit[k].max_de00, r->cand_held[k].mean_de00,
				       r->cand_held[k].max_de00, k == r->model ? "   <- kept" : "");
		printf("\n%-16s %8s %8s %8s%s\n", "patch", "fit", "held", "sRGB",
		       r->has_truth ? "   truth: fit  held  sRGB" : "");
		for (int i = 0; i < r->n; i++) {
			const struct calib_patch *p = &r->p[i];

			printf("%-16s %8.2f %8.2f %8.2f", p->name, p->fit_de00, p->held_de00,
			       p->srgb_de00);
			if (p->has_truth)
				printf("        %5.2f %5.2f %5.2f", p->truth_fit_de00, p->truth_held_de00,
				       p->truth_srgb_de00);
			printf("%s\n", p->at_limit ? "   (a channel clipped: beyond the camera's range)" : "");
		}
		printf("\nReport (CIEDE2000, %s model):\n", calib_model_names[r->model]);
		print_figures("fit (through the profile)", &r->fit);
		print_figures("held out", &r->held_out);
		if (r->held_in_range.n < r->n)
			print_figures("held out, unclipped patches", &r->held_in_range);
		print_figures("uncalibrated sRGB", &r->srgb);
		if (r->has_truth) {
			print_figures("truth: fit", &r->truth_fit);
			print_figures("truth: held out", &r->truth_held_out);
			print_figures("truth: uncalibrated sRGB", &r->truth_srgb);
		}
		if (has_drift) {
			printf("Drift since the previous calibration (%.2f h):\n", drift.hours);
			print_figures("previous profile now", &drift.previous_now);
			print_figures("change of the chart", &drift.change);
			printf("  light on the neutral patches %+.1f%%; %s\n",
			       100 * drift.intensity_change,
			       drift.recalibrate ? "the previous profile no longer passes: recalibrate"
						 : "the previous profile still passes");
		}
		printf("%s: held-out mean %.2f %s the machine's calibration.max_camera_de00 %.2f; "
		       "%s %s\n", pass ? "PASS" : "FAIL", r->held_out.mean_de00, pass ? "within" : "exceeds",
		       m->calibration.max_camera_de00, written ? "profile written to" : "nothing written to",
		       out);
		if (!pass && !written)
			printf("(--force writes it anyway)\n");
	}
	rc = pass ? 0 : BL_EXIT_FAIL;
	goto out_free;
out_fail:
	rc = cli_fail(&err);
out_free:
	calib_camera_free(r);
	frame_src_free(&fs);
	img_free(&flat);
	free(chart);
	free(m);
	return rc;
}

/* ---- canvas ---- */

static int calib_canvas(const struct cli_command *cmd, int argc, char **argv)
{
	struct cli_optparse op;
	struct common c = { 0 };
	struct machine *m = NULL;
	struct frame_src fs = { 0 };
	struct calib_canvas_result r;
	double corners[8], size[2] = { 0, 0 }, tmean = -1, tmax = -1;
	const char *out;
	bl_err err = { 0 };
	int opt, rc, have_corners = 0, pass, written = 0;

	cli_opt_start(&op, cmd, &canvas_set, argc, argv);
	while ((opt = cli_opt_next(&op)) != CLI_OPT_END) {
		if (opt == CLI_OPT_BAD)
			return BL_EXIT_USAGE;
		switch (opt) {
		case CAL_MACHINE:
			c.machine = op.arg;
			break;
		case CAL_FRAME:
			c.frame = op.arg;
			break;
		case CAL_CORNERS:
			rc = parse_points("--corners", op.arg, corners, 4, &err);
			if (rc < 0)
				return cli_usage(cmd, "%s", err.msg);
			if (rc != 4)
				return cli_usage(cmd, "--corners takes the canvas's 4 corners, %d given", rc);
			have_corners = 1;
			break;
		case CAL_SIZE:
			if (sscanf(op.arg, "%lfx%lf", &size[0], &size[1]) != 2 || !(size[0] >= 10) ||
			    !(size[1] >= 10) || size[0] > 5000 || size[1] > 5000)
				return cli_usage(cmd, "--size: '%s' is not WxH in mm (10..5000)", op.arg);
			break;
		case CAL_TRUTH:
			c.truth = op.arg;
			break;
		case CAL_OUTPUT:
			c.output = op.arg;
			break;
		case CAL_FORCE:
			c.force = 1;
			break;
		case CAL_JSON:
			c.json = 1;
			break;
		case CAL_SEED:
		case CAL_WORLD:
			rc = common_opt(&op, opt, &c);
			if (rc < 0)
				return -rc;
			break;
		default: /* a row this session's set does not take: never returned */
			break;
		}
	}
	if (op.ind != argc)
		return cli_usage(cmd, "calib canvas takes no arguments (the frame is --frame F)");
	if ((rc = load_machine(c.machine, &m, &err)))
		goto out_fail;
	out = out_path(c.output, m->calibration.canvas);
	if (!out) {
		free(m);
		return cli_usage(cmd, "no output: give -o CANVAS.json or set calibration.canvas in the "
				 "machine file");
	}
	if (size[0] == 0) {
		size[0] = m->canvas.size_mm[0];
		size[1] = m->canvas.size_mm[1];
	}
	if (!c.json) {
		printf("Canvas calibration: a %gx%g mm canvas on machine %s.\n", size[0], size[1],
		       m->name);
		printf("1. Clear the canvas's four corner markers (arm parked, nothing over them).\n");
	}
	rc = get_frame(&c, m, SIM_SCENE_CANVAS, NULL, "Park the arm and clear the markers now.",
		       &fs, &err);
	if (rc)
		goto out_fail;
	{
		struct vis_markers mk;

		vis_markers_from_machine(m, &mk);
		mk.canvas_mm[0] = size[0];
		mk.canvas_mm[1] = size[1];
		rc = calib_canvas_run(&fs.im, fs.name, &mk, have_corners ? corners : NULL, &r, &err);
	}
	if (rc)
		goto out_fail;
	if (fs.truth) {
		rc = calib_canvas_truth(&r, fs.truth, fs.truth_name, &tmean, &tmax, &err);
		if (rc)
			goto out_fail;
	}
	pass = r.map_error_mm < 0 || r.map_error_mm <= m->calibration.max_canvas_error_mm;
	if (pass || c.force) {
		rc = vis_canvas_save(out, &r.canvas, &err);
		if (rc)
			goto out_fail;
		written = 1;
	}
	if (c.json) {
		cJSON *j = calib_canvas_json(&r);

		if (!j) {
			rc = bl_fail(&err, BL_ENOMEM, "out of memory");
			goto out_fail;
		}
		cJSON_AddStringToObject(j, "frame", fs.name);
		if (tmean >= 0) {
			cJSON *t = cJSON_AddObjectToObject(j, "truth");

			if (t) {
				cJSON_AddNumberToObject(t, "mean_mm", tmean);
				cJSON_AddNumberToObject(t, "max_mm", tmax);
			}
		}
		cJSON_AddStringToObject(j, "output", out);
		cJSON_AddBoolToObject(j, "written", written);
		cJSON_AddNumberToObject(j, "threshold_mm", m->calibration.max_canvas_error_mm);
		cJSON_AddBoolToObject(j, "pass", pass);
		cli_print_json(j);
	} else {
		printf("2. %s: %d of the corner markers seen; homography from %d points (%s).\n", fs.name,
		       r.markers_found, r.n_points,
		       r.source == VIS_FROM_MARKERS ? "marker centres and outer corners" : "corners given");
		printf("   corners (%.1f, %.1f) (%.1f, %.1f) (%.1f, %.1f) (%.1f, %.1f) px, %.3f mm/px\n",
		       r.canvas.corners_px[0], r.canvas.corners_px[1], r.canvas.corners_px[2],
		       r.canvas.corners_px[3], r.canvas.corners_px[4], r.canvas.corners_px[5],
		       r.canvas.corners_px[6], r.canvas.corners_px[7], r.mm_per_px);
		if (r.rms_mm >= 0)
			printf("Report: canvas error %.3f mm (the fitted map, from %d corners whose "
			       "reprojection error is rms %.3f, max %.3f mm)\n", r.map_error_mm, r.n_points,
			       r.rms_mm, r.max_mm);
		else
			printf("Report: four corners given fit exactly; their error cannot be measured\n");
		if (tmean >= 0)
			printf("  against the truth: mean %.3f mm, max %.3f mm\n", tmean, tmax);
		printf("%s: %s the machine's calibration.max_canvas_error_mm %.2f; %s %s\n",
		       pass ? "PASS" : "FAIL",
		       r.map_error_mm < 0 ? "not measured against" : pass ? "within" : "exceeds",
		       m->calibration.max_canvas_error_mm,
		       written ? "canvas file written to" : "nothing written to", out);
	}
	rc = pass ? 0 : BL_EXIT_FAIL;
	goto out_free;
out_fail:
	rc = cli_fail(&err);
out_free:
	frame_src_free(&fs);
	free(m);
	return rc;
}

/* ---- arm ---- */

/*
 * The guided registration: opens the machine's arm (and the simulator when
 * it is one), a gate journaling into run_dir, homes through the gate, and
 * leads the operator at this terminal through every target.
 */
static int guided_arm(const struct machine *m, const struct common *c, int by_hand, int n_targets,
		      const double *targets, const char *run_dir, int *n, double (*cmm)[2],
		      arm_point *amm, bl_err *err)
{
	struct rig *r = malloc(sizeof(*r));
	struct calib_arm_session *s = calloc(1, sizeof(*s));
	struct gate *g = NULL;
	struct gate_config gc;
	struct gate_decision d;
	struct journal *jr = calloc(1, sizeof(*jr));
	char journal[CFG_PATH_MAX + 32], dir[CFG_PATH_MAX];
	int rc, jopen = 0;

	if (!r || !s || !jr) {
		free(r);
		free(s);
		free(jr);
		return bl_fail(err, BL_ENOMEM, "out of memory");
	}
	snprintf(dir, sizeof(dir), "%s", run_dir ? run_dir : "calib-arm.run");
	rc = fs_mkdirs(dir, err);
	if (rc)
		goto out_free;
	rc = fs_join(journal, sizeof(journal), dir, "journal.jsonl", err);
	if (rc)
		goto out_free;
	rc = rig_open(m, &c->ro, r, err);
	if (rc)
		goto out_free;
	rc = journal_open(jr, journal, r->clock, err);
	if (rc)
		goto out_close;
	jopen = 1;
	memset(&gc, 0, sizeof(gc));
	gc.m = &r->m;
	gc.run_dir = dir;
	gc.journal = jr;
	gc.clock = r->clock;
	gc.mode = isatty(STDIN_FILENO) ? GATE_TERMINAL : GATE_UNATTENDED;
	gc.tty_in_fd = STDIN_FILENO;
	gc.tty_out_fd = STDOUT_FILENO;
	rc = gate_open(&gc, &g, err);
	if (rc)
		goto out_close;
	if (!by_hand) {
		printf("Homing the arm (through the safety gate)...\n");
		rc = gate_home(g, r->arm, &d, err);
		if (rc)
			goto out_close;
	}
	s->m = &r->m;
	s->gate = g;
	s->arm = r->arm;
	s->by_hand = by_hand;
	s->speed_mm_s = calib_arm_jog_speed(&r->m);
	s->step_mm = 1.0;
	s->in = stdin;
	s->out = stdout;
	if (n_targets) {
		s->n_targets = n_targets;
		for (int i = 0; i < n_targets; i++) {
			s->targets[i][0] = targets[2 * i];
			s->targets[i][1] = targets[2 * i + 1];
		}
	} else {
		s->n_targets = calib_arm_default_targets(&r->m, s->targets);
	}
	rc = calib_arm_session_run(s, err);
	if (rc)
		goto out_close;
	*n = s->n;
	memcpy(cmm, s->canvas_mm, sizeof(double) * 2 * (size_t)s->n);
	memcpy(amm, s->arm_mm, sizeof(arm_point) * (size_t)s->n);
out_close:
	gate_close(g);
	if (jopen)
		journal_close(jr);
	rig_close(r);
out_free:
	free(r);
	free(s);
	free(jr);
	return rc;
}

static int calib_arm_cmd(const struct cli_command *cmd, int argc, char **argv)
{
	struct cli_optparse op;
	struct common c = { 0 };
	struct machine *m = NULL;
	struct calib_arm *a = NULL;
	double (*cmm)[2] = NULL, targets[2 * CALIB_ARM_MAX_POINTS];
	arm_point *amm = NULL;
	const char *points = NULL, *out, *run_dir = NULL;
	bl_err err = { 0 };
	int opt, rc, model = CALIB_ARM_SIMILARITY, n = 0, n_targets = 0, by_hand = 0, pass;

	cli_opt_start(&op, cmd, &arm_set, argc, argv);
	while ((opt = cli_opt_next(&op)) != CLI_OPT_END) {
		if (opt == CLI_OPT_BAD)
			return BL_EXIT_USAGE;
		switch (opt) {
		case CAL_MACHINE:
			c.machine = op.arg;
			break;
		case CAL_POINTS:
			points = op.arg;
			break;
		case CAL_MODEL:
			if (strcmp(op.arg, "similarity") == 0)
				model = CALIB_ARM_SIMILARITY;
			else if (strcmp(op.arg, "affine") == 0)
				model = CALIB_ARM_AFFINE;
			else
				return cli_usage(cmd, "--model: '%s' is not similarity or affine", op.arg);
			break;
		case CAL_TARGETS:
			n_targets = parse_points("--targets", op.arg, targets, CALIB_ARM_MAX_POINTS, &err);
			if (n_targets < 0)
				return cli_usage(cmd, "%s", err.msg);
			if (n_targets < 4)
				return cli_usage(cmd, "--targets: %d points; at least 4", n_targets);
			break;
		case CAL_BY_HAND:
			by_hand = 1;
			break;
		case CAL_RUN_DIR:
			run_dir = op.arg;
			break;
		case CAL_OUTPUT:
			c.output = op.arg;
			break;
		case CAL_JSON:
			c.json = 1;
			break;
		case CAL_SEED:
		case CAL_WORLD:
			rc = common_opt(&op, opt, &c);
			if (rc < 0)
				return -rc;
			break;
		default: /* a row this session's set does not take: never returned */
			break;
		}
	}
	if (op.ind != argc)
		return cli_usage(cmd, "calib arm takes no arguments");
	if (points && (n_targets || by_hand || run_dir))
		return cli_usage(cmd, "--points gives the pairs: --targets, --by-hand and --run-dir "
				 "are for the guided session");
	cmm = malloc(sizeof(*cmm) * CALIB_ARM_MAX_POINTS);
	amm = malloc(sizeof(*amm) * CALIB_ARM_MAX_POINTS);
	a = malloc(sizeof(*a));
	if (!cmm || !amm || !a) {
		rc = bl_fail(&err, BL_ENOMEM, "out of memory");
		goto out_fail;
	}
	if ((rc = load_machine(c.machine, &m, &err)))
		goto out_fail;
	out = out_path(c.output, m->calibration.arm);
	if (!out) {
		rc = cli_usage(cmd, "no output: give -o ARM.json or set calibration.arm in the machine "
			       "file");
		goto out_free;
	}
	if (points) {
		rc = calib_arm_points_load(points, &n, cmm, amm, &err);
		if (rc)
			goto out_fail;
	} else {
		rc = guided_arm(m, &c, by_hand, n_targets, targets, run_dir, &n, cmm, amm, &err);
		if (rc)
			goto out_fail;
	}
	rc = calib_arm_fit(model, n, (const double (*)[2])cmm, amm, a, &err);
	if (rc) {
		bl_err_prefix(&err, "%s", points ? points : "the recorded points");
		goto out_fail;
	}
	pass = a->max_mm <= m->calibration.max_arm_residual_mm;
	if (pass) {
		rc = calib_arm_save(out, a, &err);
		if (rc)
			goto out_fail;
	}
	if (c.json) {
		cJSON *j = calib_arm_json(a);

		if (!j) {
			rc = bl_fail(&err, BL_ENOMEM, "out of memory");
			goto out_fail;
		}
		cJSON_AddStringToObject(j, "output", out);
		cJSON_AddBoolToObject(j, "written", pass);
		cJSON_AddNumberToObject(j, "threshold_mm", m->calibration.max_arm_residual_mm);
		cJSON_AddBoolToObject(j, "pass", pass);
		cli_print_json(j);
	} else {
		printf("Arm registration (%s) from %d points:\n", calib_arm_model_names[a->model], a->n);
		printf("  %-20s %-30s %s\n", "canvas mm", "arm mm", "residual mm");
		for (int i = 0; i < a->n; i++) {
			char cs[64], as[96];

			snprintf(cs, sizeof(cs), "(%.1f, %.1f)", a->canvas_mm[i][0], a->canvas_mm[i][1]);
			snprintf(as, sizeof(as), "(%.2f, %.2f, %.2f)", a->arm_mm[i].x, a->arm_mm[i].y,
				 a->arm_mm[i].z);
			printf("  %-20s %-30s %.3f\n", cs, as, a->residual_mm[i]);
		}
		printf("  scale %.5f, rotation %.3f deg%s; surface z = %.3f %+.5f x %+.5f y mm (rms %.3f)\n",
		       a->scale, a->rotation_deg,
		       a->a[0][0] * a->a[1][1] - a->a[0][1] * a->a[1][0] < 0 ? ", mirrored" : "",
		       a->z[0], a->z[1], a->z[2], a->z_rms_mm);
		printf("Report: residual rms %.3f mm, max %.3f mm\n", a->rms_mm, a->max_mm);
		printf("%s: max residual %.3f mm %s the machine's calibration.max_arm_residual_mm %.3f; "
		       "%s %s\n", pass ? "PASS" : "REFUSED", a->max_mm, pass ? "within" : "exceeds",
		       m->calibration.max_arm_residual_mm,
		       pass ? "registration written to" : "nothing written to", out);
		if (!pass)
			printf("Touch the points again more carefully (the worst are listed above).\n");
	}
	rc = pass ? 0 : BL_EXIT_FAIL;
	goto out_free;
out_fail:
	rc = cli_fail(&err);
out_free:
	free(cmm);
	free(amm);
	free(a);
	free(m);
	return rc;
}

/* ---- paints ---- */

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

static int calib_paints(const struct cli_command *cmd, int argc, char **argv)
{
	struct cli_optparse op;
	struct common c = { 0 };
	struct machine *m = NULL;
	struct palette *pal = NULL, *check = NULL;
	struct calib_card *card = NULL;
	struct calib_paints_result *r = NULL;
	struct meas_profile *prof = NULL;
	struct mix_model *model = NULL;
	struct frame_src fs = { 0 };
	struct sim_card *sc = NULL;
	const char *palette = NULL, *card_path = NULL, *svg = NULL, *profile = NULL;
	double tints[CALIB_CARD_MAX_TINTS];
	bl_err err = { 0 };
	int opt, rc, layout = 0, n_tints = 0, pass = 1, written = 0;

	cli_opt_start(&op, cmd, &paints_set, argc, argv);
	while ((opt = cli_opt_next(&op)) != CLI_OPT_END) {
		if (opt == CLI_OPT_BAD)
			return BL_EXIT_USAGE;
		switch (opt) {
		case CAL_MACHINE:
			c.machine = op.arg;
			break;
		case CAL_PALETTE:
			palette = op.arg;
			break;
		case CAL_CARD:
			card_path = op.arg;
			break;
		case CAL_LAYOUT:
			layout = 1;
			break;
		case CAL_TINTS:
			n_tints = parse_fractions(op.arg, tints, CALIB_CARD_MAX_TINTS, &err);
			if (n_tints < 0)
				return cli_usage(cmd, "%s", err.msg);
			break;
		case CAL_SVG:
			svg = op.arg;
			break;
		case CAL_FRAME:
			c.frame = op.arg;
			break;
		case CAL_PROFILE:
			profile = op.arg;
			break;
		case CAL_TRUTH:
			c.truth = op.arg;
			break;
		case CAL_OUTPUT:
			c.output = op.arg;
			break;
		case CAL_FORCE:
			c.force = 1;
			break;
		case CAL_JSON:
			c.json = 1;
			break;
		case CAL_SEED:
		case CAL_WORLD:
			rc = common_opt(&op, opt, &c);
			if (rc < 0)
				return -rc;
			break;
		default: /* a row this session's set does not take: never returned */
			break;
		}
	}
	if (op.ind != argc)
		return cli_usage(cmd, "calib paints takes no arguments");
	if (!palette)
		return cli_usage(cmd, "calib paints needs --palette P (its paints, wells and white)");
	if (!card_path)
		return cli_usage(cmd, "calib paints needs --card CARD.json (written by --layout, read "
				 "when measuring)");
	if (layout && (c.frame || profile || c.truth || c.output || c.force))
		return cli_usage(cmd, "--layout writes the card: --frame, --profile, --truth, -o and "
				 "--force are for measuring it");
	if (!layout && (n_tints || svg))
		return cli_usage(cmd, "--tints and --svg go with --layout");
	if (!layout && !c.output)
		return cli_usage(cmd, "give -o PALETTE.json for the measured palette");
	pal = malloc(sizeof(*pal));
	card = malloc(sizeof(*card));
	if (!pal || !card) {
		rc = bl_fail(&err, BL_ENOMEM, "out of memory");
		goto out_fail;
	}
	if ((rc = load_machine(c.machine, &m, &err)) || (rc = palette_load(palette, pal, &err)))
		goto out_fail;
	if (layout) {
		rc = calib_card_layout(pal, n_tints, tints, card, &err);
		if (rc == 0)
			rc = calib_card_save(card_path, card, &err);
		if (rc == 0 && svg) {
			char *text;

			rc = calib_card_svg(card, &text, &err);
			if (rc == 0) {
				rc = fs_write_atomic(svg, text, strlen(text), &err);
				free(text);
			}
		}
		if (rc)
			goto out_fail;
		if (c.json) {
			cJSON *j = cJSON_CreateObject();

			if (j) {
				cJSON_AddStringToObject(j, "card", card_path);
				if (svg)
					cJSON_AddStringToObject(j, "svg", svg);
				json_add_vec(j, "size_mm", card->size_mm, 2);
				cJSON_AddNumberToObject(j, "swatches", card->n);
				json_add_vec(j, "tints", card->tints, card->n_tints);
			}
			cli_print_json(j);
		} else {
			printf("Paint card for %s: %d swatches on %.0fx%.0f mm, written to %s%s%s.\n",
			       pal->name, card->n, card->size_mm[0], card->size_mm[1], card_path,
			       svg ? " and " : "", svg ? svg : "");
			printf("1. Print the card at 100%% (the markers are %g mm across; the one with "
			       "the dark core goes top left).\n", card->marker_size_mm);
			printf("2. Paint every box opaquely: the paint alone (masstone), then mixed with %s "
			       "by weight at", pal->white);
			for (int i = 0; i < card->n_tints; i++)
				printf(" %g%%", 100 * card->tints[i]);
			printf(" paint.\n3. Let it dry, lay it on the canvas upright under the camera, "
			       "then run: brushloop calib paints --palette %s --card %s -o PALETTE.json\n",
			       palette, card_path);
		}
		rc = 0;
		goto out_free;
	}
	rc = calib_card_load(card_path, card, &err);
	if (rc)
		goto out_fail;
	if (!profile && m->calibration.camera_profile[0])
		profile = m->calibration.camera_profile;
	rc = meas_profile_open(profile, &prof, &err);
	if (rc)
		goto out_fail;
	if (!meas_profile_calibrated(prof))
		log_warn("no camera profile (--profile, or calibration.camera_profile): the paints are "
			 "measured as if the camera were sRGB; run brushloop calib camera first");
	if (!c.json)
		printf("Paint characterisation of %s from card %s (%d swatches).\n", pal->name,
		       card_path, card->n);
	if (!c.frame && m->camera.backend == MACHINE_CAM_SIM) {
		/* The simulator paints the card as the layout says, with this run's paints. */
		sc = malloc(sizeof(*sc));
		if (!sc) {
			rc = bl_fail(&err, BL_ENOMEM, "out of memory");
			goto out_fail;
		}
		rc = cli_sim_card(card_path, m, sc, &err);
		if (rc)
			goto out_fail;
	}
	rc = get_frame(&c, m, SIM_SCENE_CARD, sc,
		       "Lay the dry card upright on the canvas, all four markers in view.", &fs, &err);
	if (rc)
		goto out_fail;
	rc = calib_paints_run(&fs.im, fs.name, card, pal, prof, &r, &err);
	if (rc)
		goto out_fail;
	if (fs.truth) {
		struct calib_truth_patch *tp;
		int tn;

		rc = calib_truth_parse(fs.truth, fs.truth_name, &tp, &tn, NULL, &err);
		if (rc)
			goto out_fail;
		rc = calib_paints_truth(r, tp, tn, fs.truth_name, &err);
		free(tp);
		if (rc)
			goto out_fail;
	}
	for (int i = 0; i < r->out.n_paints; i++)
		if (r->model_de00[i] > m->tolerances.mix_de00)
			pass = 0;
	if (pass || c.force) {
		cJSON *pj = mix_palette_to_json(&r->out);

		if (!pj) {
			rc = bl_fail(&err, BL_ENOMEM, "out of memory");
			goto out_fail;
		}
		rc = json_write_file(c.output, pj, &err);
		cJSON_Delete(pj);
		if (rc)
			goto out_fail;
		/* Read back as any command will: the file loads and the mixing model takes it. */
		check = malloc(sizeof(*check));
		model = malloc(sizeof(*model));
		if (!check || !model) {
			rc = bl_fail(&err, BL_ENOMEM, "out of memory");
			goto out_fail;
		}
		if ((rc = palette_load(c.output, check, &err)) ||
		    (rc = mix_model_from_palette(check, model, &err)))
			goto out_fail;
		written = 1;
	}
	if (c.json) {
		cJSON *j = calib_paints_json(r);

		if (!j) {
			rc = bl_fail(&err, BL_ENOMEM, "out of memory");
			goto out_fail;
		}
		cJSON_AddStringToObject(j, "frame", fs.name);
		cJSON_AddStringToObject(j, "profile", meas_profile_name(prof));
		cJSON_AddStringToObject(j, "output", c.output);
		cJSON_AddBoolToObject(j, "written", written);
		cJSON_AddNumberToObject(j, "threshold_de00", m->tolerances.mix_de00);
		cJSON_AddBoolToObject(j, "pass", pass);
		cli_print_json(j);
	} else {
		printf("Card found by its markers in %s; measured through %s.\n", fs.name,
		       meas_profile_name(prof));
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
		       pass ? "PASS" : "FAIL", pass ? "within" : "not within", m->tolerances.mix_de00,
		       written ? "palette written to" : "nothing written to", c.output);
	}
	rc = pass ? 0 : BL_EXIT_FAIL;
	goto out_free;
out_fail:
	rc = cli_fail(&err);
out_free:
	frame_src_free(&fs);
	free(sc);
	meas_profile_close(prof);
	free(r);
	free(model);
	free(check);
	free(card);
	free(pal);
	free(m);
	return rc;
}

int cli_calib_main(int argc, char **argv)
{
	const struct cli_command *cmd = cli_find("calib");

	if (argc < 2)
		return cli_usage(cmd, "calib needs a session: camera, canvas, arm or paints");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fputs(cmd->usage, stdout);
		return 0;
	}
	if (strcmp(argv[1], "camera") == 0)
		return calib_camera(cmd, argc - 1, argv + 1);
	if (strcmp(argv[1], "canvas") == 0)
		return calib_canvas(cmd, argc - 1, argv + 1);
	if (strcmp(argv[1], "arm") == 0)
		return calib_arm_cmd(cmd, argc - 1, argv + 1);
	if (strcmp(argv[1], "paints") == 0)
		return calib_paints(cmd, argc - 1, argv + 1);
	return cli_usage(cmd, "unknown calibration session '%s' (camera, canvas, arm, paints)",
			 argv[1]);
}

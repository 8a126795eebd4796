/* cli_sim.c: `brushloop sim render` and `brushloop sim exec`: camera frames with their truth, and actions executed on the simulated arm through the safety gate. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <sys/stat.h>

#include "arm/action.h"
#include "base/fs.h"
#include "base/json.h"
#include "calib/calib_session.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "config/machine.h"
#include "engine/run.h"
#include "rig/rig.h"
#include "safety/gate.h"
#include "sim/sim.h"
#include "vision/image.h"

struct sim_args {
	const char *machine;
	const char *world;
	const char *out;         /* render: -o */
	const char *truth;       /* render: --truth */
	const char *frames;      /* exec: --frames */
	const char *actions;     /* exec: the positional file */
	const char *run;         /* exec: --run, the gate's run directory */
	long from;               /* exec: --from, the first action to run */
	int ask;                 /* exec: --ask, the gate asks at the terminal */
	const char *card;        /* --card: the paint card the card scene shows */
	int scene;
	int json;
	struct rig_options ro;
	char machine_buf[CFG_PATH_MAX];
};

enum sim_opt {
	SIM_MACHINE, SIM_SEED, SIM_SCENE, SIM_WORLD, SIM_FAULT, SIM_TRUTH, SIM_FRAMES, SIM_JSON, SIM_OUTPUT, SIM_RUN, SIM_FROM, SIM_ASK, SIM_CARD,
	SIM_OPT_COUNT
};

static const struct cli_opt sim_opts[SIM_OPT_COUNT] = {
	[SIM_MACHINE] = CLI_OPT_MACHINE,
	[SIM_SEED] = CLI_OPT_SEED,
	[SIM_SCENE] = { "scene", 0, "SCENE", "the scene to show", 0 },
	[SIM_WORLD] = { "world", 0, "FILE", "the simulated world file", 0 },
	[SIM_FAULT] = { "fault", 0, "KEY=VALUE", "inject a simulator fault (repeatable)", 0 },
	[SIM_TRUTH] = { "truth", 0, "FILE", "write the frame's truth to FILE", 0 },
	[SIM_FRAMES] = { "frames", 0, "DIR", "write a frame after each action into DIR", 0 },
	[SIM_JSON] = CLI_OPT_JSON,
	[SIM_OUTPUT] = { "output", 'o', "FILE", "the frame to write (.jpg or .png)", 0 },
	[SIM_RUN] = { "run", 0, "DIR", "the run directory to execute in", 0 },
	[SIM_FROM] = { "from", 0, "N", "begin at action N of the file", 0 },
	[SIM_ASK] = { "ask", 0, NULL, "ask at the terminal for what needs an operator", 0 },
	[SIM_CARD] = { "card", 0, "FILE", "paint card file", 0 },
};
extern const struct cli_optset *const cli_sim_sets[];
/* render and exec share one table: an option means the same in both. */
static const struct cli_optset render_set = {
	"sim render", sim_opts, SIM_OPT_COUNT,
	~(CLI_BIT(SIM_FRAMES) | CLI_BIT(SIM_RUN) | CLI_BIT(SIM_FROM) | CLI_BIT(SIM_ASK)), cli_sim_sets,
};
static const struct cli_optset exec_set = {
	"sim exec", sim_opts, SIM_OPT_COUNT, ~(CLI_BIT(SIM_TRUTH) | CLI_BIT(SIM_OUTPUT)), cli_sim_sets,
};
const struct cli_optset *const cli_sim_sets[] = { &render_set, &exec_set, NULL };

static int parse_args(const struct cli_command *cmd, int exec, int argc, char **argv,
		      struct sim_args *a)
{
	struct cli_optparse p;
	bl_err err = { 0 };
	long seed;
	int opt, k;

	memset(a, 0, sizeof(*a));
	cli_opt_start(&p, cmd, exec ? &exec_set : &render_set, argc, argv);
	while ((opt = cli_opt_next(&p)) != CLI_OPT_END) {
		if (opt == CLI_OPT_BAD)
			return BL_EXIT_USAGE;
		switch ((enum sim_opt)opt) {
		case SIM_MACHINE:
			a->machine = p.arg;
			break;
		case SIM_SEED:
			if (cli_parse_long("--seed", p.arg, 0, 0x7fffffffffffffffL, &seed, &err))
				return cli_usage(cmd, "%s", err.msg);
			a->ro.seed = (uint64_t)seed;
			a->ro.seed_given = 1;
			break;
		case SIM_SCENE:
			for (k = 0; sim_scene_names[k] && strcmp(sim_scene_names[k], p.arg); k++)
				;
			if (!sim_scene_names[k])
				return cli_usage(cmd, "--scene: '%s' is not one of canvas, swatches, "
						 "chart, card, flat", p.arg);
			a->scene = k;
			break;
		case SIM_WORLD:
			a->world = p.arg;
			break;
		case SIM_FAULT:
			if (a->ro.n_faults == RIG_MAX_FAULTS)
				return cli_usage(cmd, "--fault: at most %d", RIG_MAX_FAULTS);
			a->ro.faults[a->ro.n_faults++] = p.arg;
			break;
		case SIM_TRUTH:
			a->truth = p.arg;
			break;
		case SIM_FRAMES:
			a->frames = p.arg;
			break;
		case SIM_OUTPUT:
			a->out = p.arg;
			break;
		case SIM_JSON:
			a->json = 1;
			break;
		case SIM_RUN:
		case SIM_FROM:
		case SIM_ASK:
			if (opt == SIM_RUN)
				a->run = p.arg;
			else if (opt == SIM_ASK)
				a->ask = 1;
			else if (cli_parse_long("--from", p.arg, 0, 1000000, &a->from, &err))
				return cli_usage(cmd, "%s", err.msg);
			break;
		case SIM_CARD:
			a->card = p.arg;
			break;
		case SIM_OPT_COUNT:
			break;
		}
	}
	/* Like every command: --machine, else $BRUSHLOOP_MACHINE, else the example simulator machine. */
	cli_machine_path(a->machine, a->machine_buf, sizeof(a->machine_buf));
	a->machine = a->machine_buf;
	if ((a->scene == SIM_SCENE_CARD) != (a->card != NULL))
		return cli_usage(cmd, "the card scene and --card CARD.json go together");
	if (exec) {
		if (p.ind != argc - 1)
			return cli_usage(cmd, "sim exec takes one actions file");
		a->actions = argv[p.ind];
	} else {
		if (p.ind != argc)
			return cli_usage(cmd, "unexpected argument '%s'", argv[p.ind]);
		if (!a->out)
			return cli_usage(cmd, "sim render needs -o FRAME.jpg");
		if (!img_save_name_ok(a->out))
			return cli_usage(cmd, "-o %s: name the file .jpg or .png", a->out);
	}
	a->ro.world_file = a->world;
	return 0;
}

static int open_rig(const struct sim_args *a, struct machine *m, struct rig *r, bl_err *err)
{
	int rc = machine_load(a->machine, m, err);

	if (rc)
		return rc;
	if (m->arm_backend != MACHINE_ARM_SIM || m->camera.backend != MACHINE_CAM_SIM)
		return bl_fail(err, BL_EINVAL, "%s: 'sim' needs arm.backend and camera.backend "
			       "\"sim\"", a->machine);
	rc = rig_open(m, &a->ro, r, err);
	if (rc == 0)
		sim_set_scene(r->sim, (enum sim_scene)a->scene);
	if (rc == 0 && a->card) {
		struct sim_card *card = malloc(sizeof(*card));

		rc = card ? calib_sim_card(a->card, m, card, err) : bl_fail(err, BL_ENOMEM, "out of memory");
		if (rc == 0)
			rc = sim_set_card(r->sim, card, err);
		free(card);
		if (rc)
			rig_close(r);
	}
	return rc;
}

/* Whether a frame's file name says PNG (img_save_name_ok allowed only .png, .jpg and .jpeg). */
static int is_png(const char *path)
{
	size_t n = strlen(path);

	return n >= 4 && strcasecmp(path + n - 4, ".png") == 0;
}

static int render_main(const struct cli_command *cmd, int argc, char **argv)
{
	struct sim_args a;
	struct machine *m = malloc(sizeof(*m));
	struct rig *r = malloc(sizeof(*r));
	struct cam_frame f = { 0 };
	struct stat written;
	cJSON *truth = NULL;
	bl_err err = { 0 };
	int rc, n_patches = 0;

	if (!m || !r) {
		free(m);
		free(r);
		return cli_fail(&(bl_err){ BL_ENOMEM, "out of memory" });
	}
	rc = parse_args(cmd, 0, argc, argv, &a);
	if (rc)
		goto out_free;
	rc = open_rig(&a, m, r, &err);
	if (rc) {
		rc = cli_fail(&err);
		goto out_free;
	}
	rc = cam_capture(r->cam, &f, &err);
	if (rc == 0)
		rc = img_save_frame(a.out, &f, m->camera.max_pixels, NULL, NULL, &err);
	if (rc == 0 && stat(a.out, &written) != 0)
		rc = bl_fail(&err, BL_EIO, "%s: written, then gone: %s", a.out, strerror(errno));
	if (rc == 0 && a.truth) {
		rc = sim_truth(r->sim, (enum sim_scene)a.scene, &truth, &err);
		if (rc == 0)
			rc = json_write_file(a.truth, truth, &err);
		if (rc == 0)
			n_patches = cJSON_GetArraySize(cJSON_GetObjectItem(truth, "patches"));
	}
	if (rc) {
		rc = cli_fail(&err);
		goto out_close;
	}
	if (a.json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "frame", a.out);
		cJSON_AddNumberToObject(o, "bytes", (double)written.st_size);
		cJSON_AddNumberToObject(o, "width", f.width);
		cJSON_AddNumberToObject(o, "height", f.height);
		cJSON_AddStringToObject(o, "scene", sim_scene_names[a.scene]);
		cJSON_AddNumberToObject(o, "time_s", (double)f.t_ns * 1e-9);
		if (a.truth) {
			cJSON_AddStringToObject(o, "truth", a.truth);
			cJSON_AddNumberToObject(o, "patches", n_patches);
		}
		rc = cli_print_json(o);
	} else {
		printf("wrote %s: %dx%d %s, %lld bytes, scene %s, simulated time %.3f s\n", a.out,
		       f.width, f.height, is_png(a.out) ? "PNG" : "JPEG", (long long)written.st_size,
		       sim_scene_names[a.scene], (double)f.t_ns * 1e-9);
		if (a.truth)
			printf("wrote %s: %d patches\n", a.truth, n_patches);
		rc = 0;
	}
out_close:
	cJSON_Delete(truth);
	cam_frame_free(&f);
	rig_close(r);
out_free:
	free(m);
	free(r);
	return rc;
}

/*
 * The gate's run directory: --run (made if missing, and owned by this
 * process while it runs: *lock_fd), else a new one under $TMPDIR.
 */
static int run_dir(const struct sim_args *a, char *out, size_t n, int *lock_fd, bl_err *err)
{
	const char *tmp = getenv("TMPDIR");
	int rc;

	if (a->run) {
		if (snprintf(out, n, "%s", a->run) >= (int)n)
			return bl_fail(err, BL_EINVAL, "--run: path too long");
		if ((rc = fs_mkdirs(out, err)))
			return rc;
		return run_dir_own(out, lock_fd, err);
	}
	if (snprintf(out, n, "%s/brushloop-sim-XXXXXX", tmp && *tmp ? tmp : "/tmp") >= (int)n)
		return bl_fail(err, BL_EINVAL, "$TMPDIR: path too long");
	if (!mkdtemp(out))
		return bl_fail(err, BL_EIO, "cannot make a run directory %s: %s", out, strerror(errno));
	return 0;
}

static int open_gate(const struct sim_args *a, struct rig *r, const char *dir, char *journal,
		     size_t n, struct journal *j, struct gate **g, bl_err *err)
{
	struct gate_config cfg = { 0 };
	int rc = fs_join(journal, n, dir, "journal.jsonl", err);

	if (rc || (rc = journal_open(j, journal, r->clock, err)))
		return rc;
	cfg.m = &r->m;
	cfg.run_dir = dir;
	cfg.journal = j;
	cfg.clock = r->clock;
	cfg.mode = a->ask ? GATE_TERMINAL : GATE_UNATTENDED;
	cfg.tty_in_fd = STDIN_FILENO;
	cfg.tty_out_fd = STDERR_FILENO;
	rc = gate_signals_install(err);
	return rc ? rc : gate_open(&cfg, g, err);
}

/* How to go on after an operator's answer: the same run directory, from the deferred action. */
static void print_continue(const struct sim_args *a, const char *dir, const struct gate_decision *d,
			   int homing, size_t i)
{
	fprintf(stderr, "brushloop: %s %zu needs an operator: request %s is filed in %s\n"
		"  approve it:  brushloop approve %s %s\n"
		"  then go on:  brushloop sim exec %s --run %s --from %zu%s%s\n",
		homing ? "the homing cycle before action" : "action", i, d->request_id, dir, dir,
		d->request_id, a->actions, dir, i, a->world ? " --world " : "", a->world ? a->world : "");
	if (!a->world)
		fprintf(stderr, "  (without --world the simulated world is not kept between runs)\n");
}

/* Where an exec stands: what ran, what was kept, and why it stopped. */
struct exec_state {
	const struct sim_args *a;
	struct rig *r;
	struct gate *g;
	struct gate_decision d;
	cJSON *per, *deferred;
	bl_err err;
	size_t done, i;
	long saved, dropped;
	int fail, homing_failed;
};

/* A decision that waits for an operator: which action, and its request. */
static void note_deferred(struct exec_state *x, double index)
{
	x->deferred = cJSON_CreateObject();
	cJSON_AddNumberToObject(x->deferred, "index", index);
	cJSON_AddStringToObject(x->deferred, "request", x->d.request_id);
}

/*
 * Going on part way through a file, in a new process on a world file: the
 * arm starts unhomed, as after power-up, so the gate's homing cycle runs
 * first (and asks for an operator where the machine says so).
 */
static void exec_homing(struct exec_state *x)
{
	struct arm_status as;
	double t0 = clk_now_s(x->r->clock);
	int rc = arm_status(x->r->arm, &as, &x->err);

	if (rc == 0 && !as.homed) {
		cJSON *o = cJSON_CreateObject();

		rc = gate_home(x->g, x->r->arm, &x->d, &x->err);
		cJSON_AddNumberToObject(o, "index", -1);
		cJSON_AddStringToObject(o, "type", "home");
		cJSON_AddBoolToObject(o, "homing_cycle", 1);
		cJSON_AddStringToObject(o, "decision", gate_verdict_names[x->d.verdict]);
		if (x->d.request_id[0])
			cJSON_AddStringToObject(o, "request", x->d.request_id);
		cJSON_AddNumberToObject(o, "time_s", clk_now_s(x->r->clock) - t0);
		cJSON_AddBoolToObject(o, "ok", rc == 0);
		if (rc)
			cJSON_AddStringToObject(o, "error", x->err.msg);
		cJSON_AddItemToArray(x->per, o);
		if (!x->a->json)
			printf("   - homing   %9.3f s%s%s\n", clk_now_s(x->r->clock) - t0,
			       rc ? "  FAILED: " : "", rc ? x->err.msg : "");
	}
	if (rc == BL_EDEFERRED)
		note_deferred(x, -1);
	if (rc) {
		x->fail = rc;
		x->homing_failed = 1;
	}
}

/* The camera's frame after action i into the frames directory; a dropped frame is counted, a write that fails ends the exec. */
static int save_frame(struct exec_state *x)
{
	struct cam_frame f = { 0 };
	char name[64], path[CFG_PATH_MAX + 64];
	bl_err fe = { 0 };

	if (cam_capture(x->r->cam, &f, &fe) != 0) {
		x->dropped++;
		if (!x->a->json)
			printf("     frame after action %zu not saved: %s\n", x->i, fe.msg);
		return 0;
	}
	snprintf(name, sizeof(name), "after-%04zu.jpg", x->i);
	if (fs_join(path, sizeof(path), x->a->frames, name, &fe) == 0 &&
	    fs_write_atomic(path, f.data, f.len, &fe) == 0) {
		x->saved++;
		cam_frame_free(&f);
		return 0;
	}
	cam_frame_free(&f);
	x->err = fe;
	x->fail = fe.code;
	return fe.code;
}

/* One action through the gate, its line and its JSON; 0 to go on. */
static int exec_one(struct exec_state *x, const struct arm_action *act)
{
	double t0 = clk_now_s(x->r->clock);
	int rc = gate_execute(x->g, x->r->arm, act, NULL, &x->d, &x->err);
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "index", (double)x->i);
	if (act->id >= 0)
		cJSON_AddNumberToObject(o, "id", (double)act->id);
	cJSON_AddStringToObject(o, "type", arm_kind_names[act->kind]);
	cJSON_AddStringToObject(o, "decision", gate_verdict_names[x->d.verdict]);
	if (gate_decision_primary(&x->d))
		cJSON_AddStringToObject(o, "reason", gate_reason_names[gate_decision_primary(&x->d)->reason]);
	if (x->d.request_id[0])
		cJSON_AddStringToObject(o, "request", x->d.request_id);
	cJSON_AddNumberToObject(o, "time_s", clk_now_s(x->r->clock) - t0);
	cJSON_AddNumberToObject(o, "segments", (double)x->d.n_segments);
	cJSON_AddNumberToObject(o, "paint_ml", x->d.executed ? sim_last_paint_ml(x->r->sim) : 0.0);
	cJSON_AddBoolToObject(o, "ok", rc == 0);
	if (rc)
		cJSON_AddStringToObject(o, "error", x->err.msg);
	cJSON_AddItemToArray(x->per, o);
	if (!x->a->json)
		printf("%4zu %-9s %9.3f s%s%s\n", x->i, arm_kind_names[act->kind], clk_now_s(x->r->clock) - t0,
		       rc ? "  FAILED: " : "", rc ? x->err.msg : "");
	if (rc == BL_EDEFERRED)
		note_deferred(x, (double)x->i);
	if (rc) {
		x->fail = rc;
		return rc;
	}
	x->done++;
	return x->a->frames ? save_frame(x) : 0;
}

/* What the exec did, as text or JSON; 0 or the exit status of printing. */
static int exec_report(struct exec_state *x, const struct arm_action_list *list, const struct sim_stats *st0,
		       const char *dir, const char *journal)
{
	const struct sim_args *a = x->a;
	struct sim_stats st;
	cJSON *o;

	sim_get_stats(x->r->sim, &st);
	if (!a->json) {
		printf("executed %zu of %zu actions in %.3f s simulated (arm moving %.3f s); world "
		       "time %.3f s, %.4f ml of paint on the canvas\n", x->done, list->n - (size_t)a->from,
		       st.time_s - st0->time_s, st.arm_time_s - st0->arm_time_s, st.time_s, st.canvas_paint_ml);
		printf("journal: %s\n", journal);
		if (a->frames)
			printf("frames: %ld saved in %s, %ld dropped\n", x->saved, a->frames, x->dropped);
		return 0;
	}
	o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "actions", (double)list->n);
	cJSON_AddNumberToObject(o, "from", (double)a->from);
	cJSON_AddNumberToObject(o, "executed", (double)x->done);
	cJSON_AddNumberToObject(o, "sim_time_s", st.time_s - st0->time_s);
	cJSON_AddNumberToObject(o, "arm_time_s", st.arm_time_s - st0->arm_time_s);
	cJSON_AddNumberToObject(o, "world_time_s", st.time_s);
	cJSON_AddNumberToObject(o, "canvas_paint_ml", st.canvas_paint_ml);
	cJSON_AddNumberToObject(o, "seed", (double)st.seed);
	cJSON_AddStringToObject(o, "run_dir", dir);
	cJSON_AddStringToObject(o, "journal", journal);
	if (a->frames) {
		cJSON_AddNumberToObject(o, "frames_saved", (double)x->saved);
		cJSON_AddNumberToObject(o, "frames_dropped", (double)x->dropped);
	}
	if (x->deferred) {
		cJSON_AddItemToObject(o, "deferred", x->deferred);
		x->deferred = NULL;
	}
	if (x->fail)
		cJSON_AddStringToObject(o, "error", x->err.msg);
	cJSON_AddItemToObject(o, "per_action", x->per);
	x->per = NULL;
	return cli_print_json(o);
}

static int exec_main(const struct cli_command *cmd, int argc, char **argv)
{
	struct sim_args a;
	struct machine *m = malloc(sizeof(*m));
	struct rig *r = malloc(sizeof(*r));
	struct arm_action_list list = { 0 };
	struct exec_state x = { .a = &a, .r = r };
	struct sim_stats st0;
	char dir[PATH_MAX], journal[PATH_MAX + 32];
	struct journal jnl = { .fd = -1 };
	int rc, lock_fd = -1;

	if (!m || !r) {
		free(m);
		free(r);
		return cli_fail(&(bl_err){ BL_ENOMEM, "out of memory" });
	}
	rc = parse_args(cmd, 1, argc, argv, &a);
	if (rc)
		goto out_free;
	/* The whole file is read before anything moves: a bad action runs nothing. */
	rc = arm_actions_load(a.actions, &list, &x.err);
	if (rc == 0 && (size_t)a.from > list.n)
		rc = bl_fail(&x.err, BL_EINVAL, "--from %ld: %s has %zu actions", a.from, a.actions, list.n);
	if (rc == 0)
		rc = open_rig(&a, m, r, &x.err);
	if (rc) {
		rc = cli_fail(&x.err);
		goto out_list;
	}
	/* Every action reaches the arm through the gate, which journals every decision. */
	if ((rc = run_dir(&a, dir, sizeof(dir), &lock_fd, &x.err)) ||
	    (rc = open_gate(&a, r, dir, journal, sizeof(journal), &jnl, &x.g, &x.err)) ||
	    (a.frames && (rc = fs_mkdirs(a.frames, &x.err)))) {
		rc = cli_fail(&x.err);
		goto out_close;
	}
	sim_get_stats(r->sim, &st0);
	x.per = cJSON_CreateArray();
	x.i = (size_t)a.from;
	if (a.from > 0)
		exec_homing(&x);
	for (; !x.homing_failed && x.i < list.n; x.i++)
		if (exec_one(&x, &list.items[x.i]))
			break;
	/* Frames taken after the last action moved the clock and the camera's noise: keep them too. */
	if (a.world && x.done > 0) {
		bl_err se = { 0 };

		if (sim_save(r->sim, NULL, &se) != 0 && !x.fail) {
			x.err = se;
			x.fail = se.code;
		}
	}
	rc = exec_report(&x, &list, &st0, dir, journal);
	if (x.fail == BL_EDEFERRED)
		print_continue(&a, dir, &x.d, x.homing_failed, x.i);
	else if (x.fail)
		fprintf(stderr, "brushloop: error: %s %zu: %s\n",
			x.homing_failed ? "the homing cycle before action" : "action", x.i, x.err.msg);
	if (x.fail)
		rc = bl_exit_status(x.fail);
out_close:
	cJSON_Delete(x.per);
	cJSON_Delete(x.deferred);
	gate_close(x.g);
	journal_close(&jnl);
	rig_close(r);
	if (lock_fd >= 0)
		close(lock_fd);
out_list:
	arm_actions_free(&list);
out_free:
	free(m);
	free(r);
	return rc;
}

int cli_sim_main(int argc, char **argv)
{
	const struct cli_command *cmd = cli_find("sim");

	if (argc < 2)
		return cli_usage(cmd, "sim needs a subcommand: render or exec");
	if (strcmp(argv[1], "render") == 0)
		return render_main(cmd, argc - 1, argv + 1);
	if (strcmp(argv[1], "exec") == 0)
		return exec_main(cmd, argc - 1, argv + 1);
	return cli_usage(cmd, "unknown sim subcommand '%s' (render or exec)", argv[1]);
}

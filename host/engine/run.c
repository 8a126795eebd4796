/* run.c: a run's opening, start and resume: its directory, inputs, calibration, world and run.json, then the loop core (run_loop.c). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/json.h"
#include "base/strbuf.h"
#include "engine/run_exec.h"
#include "engine/run_int.h"
#include "engine/run_kind.h"

void run_options_init(struct run_options *o)
{
	memset(o, 0, sizeof(*o));
	o->seed = 1;
	o->progress_fd = -1;
}

/* ---- opening a run ---- */

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

/* The machine file as the run keeps it: calibration paths made absolute so the copy finds them. */
static int copy_machine(const char *src, const struct machine *m, const char *dst, cJSON **copy,
			bl_err *err)
{
	cJSON *root, *cal;
	int rc = json_parse_file(src, &root, err);

	if (rc)
		return rc;
	cal = cJSON_GetObjectItemCaseSensitive(root, "calibration");
	if (cJSON_IsObject(cal)) {
		static const char *const keys[] = { "camera_profile", "canvas", "arm", "light_map" };
		const char *vals[] = { m->calibration.camera_profile, m->calibration.canvas,
				       m->calibration.arm, m->calibration.light_map };

		for (int k = 0; k < 4; k++) {
			char abs[PATH_MAX];

			if (!vals[k][0] || !cJSON_GetObjectItemCaseSensitive(cal, keys[k]))
				continue;
			cJSON_ReplaceItemInObjectCaseSensitive(
				cal, keys[k], cJSON_CreateString(realpath(vals[k], abs) ? abs : vals[k]));
		}
	}
	rc = json_write_file(dst, root, err);
	if (rc == 0 && copy)
		*copy = root;
	else
		cJSON_Delete(root);
	return rc;
}

/*
 * What the calibration files say of themselves (the validator has warned of
 * a forced result or one older than calibration.max_age_h): an old one
 * refuses an unattended run (nobody will see the warning before the night is
 * painted on it). Every file's digest goes into run.json's "calibration".
 */
static int calibration_checked(struct run *r, struct run_calibration *c, bl_err *err)
{
	if (c->too_old && !r->opt.attended)
		return bl_fail(err, BL_EINVAL, "an unattended run refuses old calibration: %s; calibrate "
			       "again, or run attended (--attended)", c->warnings);
	cJSON_Delete(r->calib_used);
	r->calib_used = c->files;
	c->files = NULL;
	return 0;
}

static void calibration_free(struct run_calibration *c)
{
	meas_profile_close(c->profile);
	c->profile = NULL;
	if (c->has_light)
		vis_light_free(&c->light);
	c->has_light = 0;
	cJSON_Delete(c->files);
	c->files = NULL;
}

/*
 * Every calibration file the machine names, through the validator `config
 * check` uses (once: a new run loads them before it writes anything), and the
 * canvas a run located itself: a bad file is refused at the start, never met
 * later as a failed observation.
 */
static int load_calibration(struct run *r, bl_err *err)
{
	struct run_calibration c = { 0 };
	struct vis_canvas f;
	char p[RUN_PATH_MAX];
	int rc;

	if (r->profile)
		return 0;
	if (!r->opt.calibration)
		return bl_fail(err, BL_EINVAL, "run: no calibration validator was handed in "
			       "(run_options.calibration)");
	if ((rc = r->opt.calibration(&r->m, &c, err))) {
		calibration_free(&c);
		return rc;
	}
	if ((rc = calibration_checked(r, &c, err))) {
		calibration_free(&c);
		return rc;
	}
	r->profile = c.profile;
	c.profile = NULL;
	if (c.has_light) {
		r->light = c.light;
		r->have_light = 1;
		c.has_light = 0;
	}
	calibration_free(&c);
	if ((rc = run_path(r, "canvas.json", p, sizeof(p), err)))
		return rc;
	if (access(p, F_OK) == 0 && (rc = vis_canvas_load(p, &f, err)))
		return rc;
	return 0;
}

static int open_world(struct run *r, int fresh, bl_err *err)
{
	struct rig_options ro = { 0 };
	char world[RUN_PATH_MAX];
	struct gate_config gc = { 0 };
	int rc;

	if ((rc = run_path(r, "world.sim", world, sizeof(world), err)))
		return rc;
	ro.seed = r->st.seed;
	ro.seed_given = fresh;
	ro.world_file = world;
	ro.world_owner = r->id; /* another run's world.sim is refused */
	ro.n_faults = r->opt.n_faults;
	for (int i = 0; i < r->opt.n_faults && i < RIG_MAX_FAULTS; i++)
		ro.faults[i] = r->opt.faults[i];
	if ((rc = rig_open(&r->m, &ro, &r->rig, err)))
		return rc;
	r->rig_open = 1;
	/* A real clock starts again in every process: the run clock goes on from the saved state. */
	if (!fresh && !r->rig.clock->is_virtual)
		r->clock_off_s = (double)r->st.clock_ns * 1e-9 - clk_now_s(r->rig.clock);
	/* The journal was opened (and verified) before anything else: from here on the run's clock stamps it. */
	r->j.clock = r->rig.clock;
	if ((rc = load_calibration(r, err)) || (rc = run_lamp_load(r, err)) || (rc = run_review_open(r, err)))
		return rc;
	r->st.calibrated = meas_profile_calibrated(r->profile);
	gc.m = &r->rig.m;
	gc.run_dir = r->dir;
	gc.journal = &r->j;
	gc.clock = r->rig.clock;
	gc.mode = r->opt.attended ? GATE_TERMINAL : GATE_UNATTENDED;
	gc.tty_in_fd = r->opt.attended ? 0 : -1;
	gc.tty_out_fd = r->opt.attended ? 2 : -1;
	if ((rc = gate_open(&gc, &r->gate, err)))
		return rc;
	return gate_signals_install(err);
}

static void run_close(struct run *r)
{
	if (r->lock_fd >= 0)
		close(r->lock_fd); /* the directory is free again */
	r->lock_fd = -1;
	if (r->gate)
		gate_close(r->gate);
	r->gate = NULL;
	if (r->rig_open)
		rig_close(&r->rig);
	r->rig_open = 0;
	journal_close(&r->j);
	run_record_free(&r->rec);
	cJSON_Delete(r->saved_state);
	r->saved_state = NULL;
	meas_profile_close(r->profile);
	r->profile = NULL;
	vis_light_free(&r->light);
	r->have_light = 0;
	free(r->lamp);
	r->lamp = NULL;
	img_free(&r->first_raw);
	cJSON_Delete(r->calib_used);
	r->calib_used = NULL;
	plan_free(&r->plan);
	plan_free(&r->corr);
	planner_close(&r->planner);
	planner_close(&r->ext);
	plan_target_free(&r->target);
	img_free(&r->target_img);
	run_state_free(&r->st);
	free(r->last_rgb);
	r->last_rgb = NULL;
	free(r->last_lab);
	r->last_lab = NULL;
	free(r->target_lab);
	free(r->target_other);
	r->target_lab = NULL;
	free(r->before_lab);
	r->before_lab = NULL;
	free(r->alpha);
	r->alpha = NULL;
	run_review_close(r);
}

static int load_inputs(struct run *r, const char *machine, const char *palette, bl_err *err)
{
	int rc;

	if ((rc = machine_load(machine, &r->m, err)) || (rc = palette_load(palette, &r->pal, err)) ||
	    (rc = plan_mixer_init(&r->mixer, &r->pal, &r->m, err)))
		return rc;
	mix_learn_init(&r->st.learn, r->mixer.model.n_paints);
	run_wells_full(r);
	/* No mix yet, but state.json holds the job from the first save on: valid limits. */
	r->st.job.lim = r->mixer.lim;
	return run_planner_open(r, err);
}

static int load_target(struct run *r, bl_err *err)
{
	int rc;

	if ((rc = plan_target_load(r->target_copy, &r->m, &r->target, err)) ||
	    (rc = img_load(r->target_copy, r->m.camera.max_pixels, &r->target_img, err)) ||
	    (rc = run_gamut_map(r, err)))
		return rc;
	return 0;
}

static int write_run_json(struct run *r, const char *target_src, cJSON *machine_copy, bl_err *err)
{
	char p[RUN_PATH_MAX], pal[RUN_PATH_MAX];
	cJSON *o = cJSON_CreateObject(), *t, *pj = NULL, *v;
	int rc;

	if (!o)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	cJSON_AddStringToObject(o, "kind", run_json_format.kind);
	cJSON_AddNumberToObject(o, "version", run_json_format.version);
	cJSON_AddStringToObject(o, "id", r->id);
	t = cJSON_AddObjectToObject(o, "target");
	cJSON_AddStringToObject(t, "file", target_src);
	cJSON_AddStringToObject(t, "copy", strrchr(r->target_copy, '/') + 1);
	cJSON_AddStringToObject(t, "hash", r->target.hash);
	cJSON_AddNumberToObject(o, "seed", (double)r->st.seed);
	cJSON_AddBoolToObject(o, "open_loop", r->opt.open_loop);
	cJSON_AddBoolToObject(o, "accept_nearest", r->opt.accept_nearest);
	cJSON_AddNumberToObject(o, "max_strokes", r->opt.max_strokes);
	cJSON_AddNumberToObject(o, "colours", r->opt.colours);
	/* The night's budget as given, and the strokes it bought: a resume before the plan plans the same. */
	if (r->opt.arm_hours > 0)
		cJSON_AddNumberToObject(o, "arm_hours", r->opt.arm_hours);
	if (r->budget_strokes > 0)
		cJSON_AddNumberToObject(o, "budget_strokes", r->budget_strokes);
	if (r->planner_cmd[0]) /* run --planner: a resume asks the same planner */
		cJSON_AddStringToObject(o, "planner", r->planner_cmd);
	if (r->reviewer_cmd[0]) /* run --reviewer: a resume asks the same reviewer */
		cJSON_AddStringToObject(o, "reviewer", r->reviewer_cmd);
	if (r->opt.on_disagreement) /* run --on-disagreement: set before the run, kept for its resumes */
		cJSON_AddStringToObject(o, "on_disagreement", machine_review_action_names[r->opt.on_disagreement - 1]);
	cJSON_AddNumberToObject(o, "created_wall_ms", (double)clk_wall_ms());
	v = cJSON_AddObjectToObject(o, "versions");
	cJSON_AddStringToObject(v, "brushloop", BL_VERSION);
	cJSON_AddNumberToObject(v, "plan", 1);
	cJSON_AddNumberToObject(v, "state", run_state_format.version);
	cJSON_AddItemToObject(o, "machine", machine_copy);
	if ((rc = run_path(r, "palette.json", pal, sizeof(pal), err)) ||
	    (rc = json_parse_file(pal, &pj, err)))
		goto out;
	cJSON_AddItemToObject(o, "palette", pj);
	/* The digest of every calibration file the run loaded (load_calibration), and what each says of itself. */
	cJSON_AddItemToObject(o, "calibration", r->calib_used ? cJSON_Duplicate(r->calib_used, 1) : cJSON_CreateObject());
	if ((rc = run_inputs_add(r, o, err)))
		goto out;
	if ((rc = run_path(r, "run.json", p, sizeof(p), err)) == 0)
		rc = json_write_file(p, o, err);
out:
	cJSON_Delete(o);
	return rc;
}


/*
 * The blank canvas as the camera sees it (the median over the canvas less a
 * margin, per channel): the planner predicts strokes over this, not over a
 * guessed white, so its predictions and the observations share one pipeline.
 */
static int observe_blank(struct run *r, color_lab *out, bl_err *err)
{
	struct run_canvas c = { 0 };
	struct arm_action a;
	struct gate_decision d;
	float *ch = NULL;
	size_t n = 0;
	int rc, margin;
	cJSON *dj;

	/* Out of the camera's view first. */
	memset(&a, 0, sizeof(a));
	a.kind = ARM_PARK;
	a.id = r->st.next_action_id++;
	a.zones = arm_default_zones(ARM_PARK);
	a.speed_mm_s = fmin(100.0, r->m.limits.soft.speed_mm_s);
	if ((rc = run_actions_planned(r, "actions_planned", "park", &a, 1, NULL, err)) ||
	    (rc = run_act(r, &a, &d, err)) || (rc = run_observe_canvas(r, "blank", &c, err)))
		return rc;
	if ((rc = run_camera_check(r, err)))
		goto out;
	margin = (int)fmin(10.0, 0.1 * fmin(c.w, c.h));
	ch = malloc(sizeof(*ch) * (size_t)c.w * c.h);
	if (!ch) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out;
	}
	for (int k = 0; k < 3; k++) {
		n = 0;
		for (int y = margin; y < c.h - margin; y++)
			for (int x = margin; x < c.w - margin; x++)
				ch[n++] = c.lab[((size_t)y * c.w + x) * 3 + k];
		if (!n) {
			rc = bl_fail(err, BL_EINVAL, "the observed canvas is too small (%d x %d mm)", c.w, c.h);
			goto out;
		}
		/* Median by selection: nth_element would do; a sort of the channel is fast enough once. */
		qsort(ch, n, sizeof(*ch), cmp_float);
		(&out->L)[k] = ch[n / 2];
	}
	dj = cJSON_CreateObject();
	json_add_vec(dj, "canvas_lab", (double[]){ out->L, out->a, out->b }, 3);
	cJSON_AddStringToObject(dj, "frame", strrchr(c.frame, '/') + 1);
	/* The first canvas the second judge measures change from. */
	if ((rc = run_event(r, "blank_canvas", dj, err)) == 0)
		rc = run_review_baseline(r, &c, -1, err);
out:
	free(ch);
	run_canvas_free(&c);
	return rc;
}

/* Plans, writes the state and paints: a new run, or one stopped before its first state was saved. */
static int begin_run(struct run *r, const char *target_src, bl_err *err)
{
	char p[RUN_PATH_MAX];
	struct plan_inputs in;
	struct plan_options po;
	color_lab blank;
	int rc;

	if ((rc = open_world(r, 1, err)))
		return rc;
	if ((rc = run_home(r, err)) || (rc = observe_blank(r, &blank, err)))
		return run_settle(r, rc, err); /* no plan yet: resume plans again */
	/* The plan, its expected results written before anything runs. */
	run_plan_inputs(r, &in);
	in.target_file = target_src;
	run_plan_options(r, &po);
	if (r->budget_strokes > 0)
		po.max_strokes = r->budget_strokes;
	po.canvas_lab = blank;
	rc = run_planner_ask(r, &(struct planner_request){ .phase = PLANNER_PLAN, .in = &in, .opt = &po }, NULL,
			     &r->plan, err);
	if (rc == BL_EPAUSED)
		return run_settle(r, rc, err); /* no plan yet: resume asks again */
	if (rc || (rc = run_path(r, "plan.json", p, sizeof(p), err)) || (rc = plan_save(p, &r->plan, err)) ||
	    (rc = run_file_written(r, "plan.json", err)))
		return rc;
	r->st.n_colours = r->plan.n_colours;
	for (int c = 0; c < r->plan.n_colours; c++) {
		r->st.colours[c].measured_de00 = -1.0;
		r->st.colours[c].hide = 1.0;
	}
	r->st.strokes_total = run_plan_strokes(&r->plan);
	if ((rc = run_state_resize(&r->st, r->plan.n_subtasks, err)))
		return rc;
	{
		cJSON *dj = cJSON_CreateObject();

		cJSON_AddStringToObject(dj, "target", target_src);
		cJSON_AddStringToObject(dj, "machine", r->m.file);
		cJSON_AddNumberToObject(dj, "seed", (double)r->st.seed);
		cJSON_AddBoolToObject(dj, "open_loop", r->st.open_loop);
		cJSON_AddBoolToObject(dj, "calibrated", r->st.calibrated);
		cJSON_AddNumberToObject(dj, "subtasks", (double)r->plan.n_subtasks);
		cJSON_AddNumberToObject(dj, "strokes", r->plan.n_strokes);
		cJSON_AddNumberToObject(dj, "colours", r->plan.n_colours);
		cJSON_AddNumberToObject(dj, "predicted_mean_de00", r->plan.mean_de00);
		if ((rc = run_event(r, "run_start", dj, err)))
			return rc;
	}
	r->status_now = 1;
	if ((rc = run_state_save(r, err)))
		return rc;
	return run_drive(r, 1, err);
}

/* A run for directory dir with its state initialised; NULL, err filled, when it cannot be. */
static struct run *run_new(const struct run_options *o, const char *dir, bl_err *err)
{
	struct run *r = calloc(1, sizeof(*r));

	if (!r) {
		bl_fail(err, BL_ENOMEM, "out of memory");
		return NULL;
	}
	if (snprintf(r->dir, sizeof(r->dir), "%s", dir) >= (int)sizeof(r->dir)) {
		char shown[512];

		bl_name_shown(dir, shown, sizeof(shown));
		bl_fail(err, BL_EINVAL, "the run directory's path is longer than the %d bytes a path may "
			"have (%s)", RUN_PATH_MAX - 1, shown);
		free(r);
		return NULL;
	}
	bl_name_shown(dir, r->dir_shown, sizeof(r->dir_shown));
	r->opt = *o;
	r->lock_fd = -1;
	r->wall0_ns = clk_real_ns();
	planner_builtin(&r->planner);
	if (o->planner && snprintf(r->planner_cmd, sizeof(r->planner_cmd), "%s", o->planner) >= (int)sizeof(r->planner_cmd)) {
		bl_fail(err, BL_EINVAL, "--planner: the command is longer than %zu bytes", sizeof(r->planner_cmd) - 1);
		free(r);
		return NULL;
	}
	if (o->reviewer && snprintf(r->reviewer_cmd, sizeof(r->reviewer_cmd), "%s", o->reviewer) >=
				   (int)sizeof(r->reviewer_cmd)) {
		bl_fail(err, BL_EINVAL, "--reviewer: the command is longer than %zu bytes", sizeof(r->reviewer_cmd) - 1);
		free(r);
		return NULL;
	}
	run_state_init(&r->st);
	return r;
}

/* The run directory is missing or holds nothing but its lock: a new run may take it. */
static int dir_unused(const struct run *r, bl_err *err)
{
	DIR *dir = opendir(r->dir);
	struct dirent *de;
	int used = 0;

	if (!dir)
		return 0;
	while ((de = readdir(dir)))
		used |= de->d_name[0] != '.' && strcmp(de->d_name, RUN_LOCK);
	closedir(dir);
	if (used)
		return bl_fail(err, BL_EINVAL, "%s: the run directory exists and is not empty "
			       "(resume it with `brushloop resume %s`, or choose another --out)",
			       r->dir_shown, r->dir_shown);
	return 0;
}

/*
 * The supply check's estimate, priced from the same files and options as the
 * report prices the run directory's copies: kept where the report looks for
 * it (report/estimate.json), naming the target as the copy, so the plan is
 * not made a third time for the report. NULL (no supply check): nothing.
 */
static int keep_estimate(struct run *r, cJSON *estimate, bl_err *err)
{
	char p[RUN_PATH_MAX];
	int rc;

	if (!estimate)
		return 0;
	cJSON_ReplaceItemInObjectCaseSensitive(estimate, "target", cJSON_CreateString(r->target_copy));
	if ((rc = run_path(r, RUN_REPORT_DIR, p, sizeof(p), err)) || (rc = fs_mkdirs(p, err)) ||
	    (rc = run_path(r, RUN_REPORT_DIR "/estimate.json", p, sizeof(p), err)))
		return rc;
	return json_write_file(p, estimate, err);
}

int run_start(const struct run_options *o, bl_err *err)
{
	struct run *r = run_new(o, o->out_dir, err);
	char p[RUN_PATH_MAX], frames[RUN_PATH_MAX], target_shown[CFG_PATH_MAX];
	const char *ext;
	cJSON *machine_copy = NULL, *estimate = NULL;
	int rc;

	if (!r)
		return err->code;
	/* The target's name as the run's files keep it: they are read back strictly, and shown. */
	bl_name_shown(o->target, target_shown, sizeof(target_shown));
	r->st.seed = o->seed;
	r->st.open_loop = o->open_loop;
	r->st.accept_nearest = o->accept_nearest;
	/*
	 * A signal from here on is a request to stop, counted and answered at
	 * the first poll with a clean pause; never a process ended half way.
	 * A run directory is new: an existing one with files is somebody's run.
	 */
	if ((rc = gate_signals_install(err)) || (rc = run_out_possible(r, err)) || (rc = dir_unused(r, err)))
		goto out;
	if ((rc = load_inputs(r, o->machine_path, o->palette_path, err)))
		goto out;
	ext = strrchr(o->target, '.');
	if (!ext || strchr(ext, '/'))
		ext = "";
	/*
	 * A target that does not decode, or calibration files that do not load,
	 * are refused naming the file before anything is written: a directory
	 * left half made would refuse the same command run again.
	 */
	{
		struct img probe = { 0 };

		if ((rc = img_load(o->target, r->m.camera.max_pixels, &probe, err)))
			goto out;
		img_free(&probe);
		if ((rc = load_calibration(r, err)))
			goto out;
	}
	/*
	 * The night sized to its arm-time budget, and paint for all of it checked,
	 * before the run directory exists: a refusal leaves nothing.
	 */
	if ((rc = run_supply_check(o, &r->m, &r->budget_strokes, &estimate, err)))
		goto out;
	/* Owned before anything is written, and still unused once owned (two runs started at once). */
	if ((rc = fs_mkdirs(r->dir, err)) || (rc = run_dir_own(r->dir, &r->lock_fd, err)) ||
	    (rc = dir_unused(r, err)) ||
	    (rc = run_path(r, "frames", frames, sizeof(frames), err)) || (rc = fs_mkdirs(frames, err)))
		goto out;
	/* The journal before run.json: a run directory whose journal is missing is never started over. */
	if ((rc = run_id_new(r->id, sizeof(r->id), err)) || (rc = run_journal_open(r, 0, err)))
		goto out;
	snprintf(p, sizeof(p), "target%s", ext);
	if ((rc = run_path(r, p, r->target_copy, sizeof(r->target_copy), err)) ||
	    (rc = fs_copy_atomic(o->target, r->target_copy, 1u << 30, err)) || (rc = load_target(r, err)))
		goto out;
	if ((rc = run_path(r, "machine.json", p, sizeof(p), err)) ||
	    (rc = copy_machine(o->machine_path, &r->m, p, &machine_copy, err)) ||
	    (rc = run_path(r, "palette.json", p, sizeof(p), err)) ||
	    (rc = fs_copy_atomic(o->palette_path, p, 1u << 30, err)))
		goto out;
	/* run.json first: from here on the directory is a run that `resume` can start again. */
	if ((rc = write_run_json(r, target_shown, machine_copy, err)) ||
	    (rc = keep_estimate(r, estimate, err)))
		goto out;
	machine_copy = NULL;
	rc = begin_run(r, target_shown, err);
out:
	cJSON_Delete(estimate);
	cJSON_Delete(machine_copy);
	run_close(r);
	free(r);
	return rc;
}

int run_resume(const char *dirpath, const struct run_options *o, bl_err *err)
{
	struct run_substitute subs[RUN_MAX_SUBSTITUTES];
	struct run *r = run_new(o, dirpath, err);
	char p[RUN_PATH_MAX], pal[RUN_PATH_MAX];
	int rc;

	if (!r)
		return err->code;
	/* One process drives a run: a second resume (or a run still going) is refused, naming it. */
	if ((rc = gate_signals_install(err)) || (rc = run_dir_fits(r, "the run directory", err)) ||
	    (rc = run_json_read(r, err)) || (rc = run_dir_own(r->dir, &r->lock_fd, err)) ||
	    (rc = run_trust_open(r, err)) ||
	    (rc = run_path(r, "machine.json", p, sizeof(p), err)) ||
	    (rc = run_path(r, "palette.json", pal, sizeof(pal), err)) ||
	    (rc = load_inputs(r, p, pal, err)) || (rc = load_target(r, err)) ||
	    (rc = run_files_present(r, err)) || (rc = run_path(r, "plan.json", p, sizeof(p), err)))
		goto out;
	if (access(p, F_OK) != 0 || (rc = run_state_trusted(r, err)) == 1) {
		/* Stopped before it had a plan or a state: nothing has painted; plan and start again. */
		char target_src[CFG_PATH_MAX];

		snprintf(target_src, sizeof(target_src), "%s", r->target_copy);
		r->st.open_loop = r->opt.open_loop;
		r->st.accept_nearest = r->opt.accept_nearest;
		rc = begin_run(r, target_src, err);
		goto out;
	}
	if (rc < 0 || (rc = plan_load(p, &r->plan, err)) ||
	    (rc = run_correction_load(r, r->st.round, err)))
		goto out;
	if ((rc = run_state_fits_plan(r, err)))
		goto out;
	/* The plan's strokes are machine points placed by its map: under another, the gate guards one canvas and the arm paints another. */
	if (!xform_same(&r->plan.xf, &r->m.xf)) {
		rc = bl_fail(err, BL_EINVAL, "%s: the canvas placement is not the one the plan was made "
			     "with (%s): the arm registration changed since the run started; start a new "
			     "run", r->dir_shown, r->m.xf.registered ? "calibration.arm" : "no calibration.arm");
		goto out;
	}
	run_apply_substitutes(r);
	if (o->overrule_review && !r->st.review_pending.active) {
		rc = bl_fail(err, BL_EINVAL, "--overrule-review: %s does not wait for the reviewer (nothing to overrule)",
			     r->dir);
		goto out;
	}
	r->review_overruled = o->overrule_review;
	if (!strcmp(r->st.state, "finished")) {
		rc = bl_fail(err, BL_EINVAL, "%s: the run has finished; nothing to resume", r->dir_shown);
		goto out;
	}
	if ((rc = run_answers_check(r, o, subs, err)))
		goto out;
	r->opt.open_loop = r->st.open_loop;
	r->wall_s0 = r->st.wall_s;
	if ((rc = open_world(r, 0, err)) || (rc = run_state_catch_up(r, err)))
		goto out;
	run_prune_deferred(r);
	{
		cJSON *d = cJSON_CreateObject();

		cJSON_AddStringToObject(d, "was", r->st.state);
		cJSON_AddStringToObject(d, "reason", r->st.reason);
		cJSON_AddNumberToObject(d, "round", r->st.round);
		cJSON_AddNumberToObject(d, "next", (double)r->st.next);
		cJSON_AddBoolToObject(d, "batch_unknown", r->st.batch_unknown);
		cJSON_AddBoolToObject(d, "dispense_under_way", r->st.pending.active);
		if (o->answered_by)
			cJSON_AddStringToObject(d, "by", o->answered_by);
		if (r->st.review_pending.active)
			cJSON_AddStringToObject(d, "review", o->overrule_review ? "overruled: the run's verdict stands"
								       : "looked at again");
		if ((rc = run_event(r, "resume", d, err)))
			goto out;
	}
	/* A brake or a pause is over when a person resumes: the counters that tripped it start again. */
	if (!strcmp(r->st.state, "braked")) {
		r->st.brakes.attempts = 0;
		r->st.brakes.comm_errors = 0;
		r->st.brakes.same_failure = 0;
		r->st.brakes.checkpoints_no_progress = 0;
	}
	snprintf(r->st.state, sizeof(r->st.state), "running");
	r->st.reason[0] = '\0';
	r->st.brake[0] = '\0';
	if ((rc = run_answers_accept(r, o->accept_mix, err)))
		goto out;
	for (int i = 0; i < o->n_substitute; i++)
		if ((rc = run_substitute_take(r, &subs[i], err)))
			goto out;
	if ((rc = run_wells_refilled(r, o->refilled, err)) || (rc = run_cells_emptied(r, o->emptied, err)))
		goto out;
	rc = run_drive(r, 0, err);
out:
	run_close(r);
	free(r);
	return rc;
}

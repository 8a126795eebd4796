/* calib_session.c: what every calibration session shares (the machine, the frame, the simulator's card), and the canvas and arm sessions. */
#include "calib/calib_session.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/journal.h"
#include "base/json.h"
#include "calib/calib_arm_session.h"
#include "safety/gate.h"
#include "sim/sim.h"
#include "vision/cam_open.h"
#include "vision/canvas.h"

void calib_frame_prov(const struct calib_frame *f, int pass, const char *why, struct prov *p)
{
	memset(p, 0, sizeof(*p));
	p->verdict = pass ? PROV_PASS : PROV_FORCED;
	snprintf(p->why, sizeof(p->why), "%s", why);
	snprintf(p->source, sizeof(p->source), "%s", f->name);
	snprintf(p->source_sha256, sizeof(p->source_sha256), "%s", f->sha256);
}

int calib_keep_previous(const char *path, bl_err *err)
{
	char prev[CFG_PATH_MAX + 8];

	if (access(path, F_OK) != 0)
		return 0;
	snprintf(prev, sizeof(prev), "%s.prev", path);
	if (rename(path, prev))
		return bl_fail(err, BL_EIO, "%s: cannot keep it as %s before replacing it: %s", path, prev,
			       strerror(errno));
	return 0;
}

int calib_output_check(const char *what, const char *path, bl_err *err)
{
	char dir[CFG_PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat st;

	if (!path[0])
		return bl_fail(err, BL_EINVAL, "%s: an empty path", what);
	if (strlen(path) >= sizeof(dir))
		return bl_fail(err, BL_EINVAL, "%s %s: the path is too long", what, path);
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return bl_fail(err, BL_EINVAL, "%s %s: is a folder; give the path of the file to write", what,
			       path);
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	if (stat(dir, &st) != 0)
		return bl_fail(err, BL_EINVAL, "%s %s: its folder %s %s; nothing was captured or measured", what,
			       path, dir, errno == ENOENT ? "does not exist (make it first)" : strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return bl_fail(err, BL_EINVAL, "%s %s: %s is not a folder; nothing was captured or measured",
			       what, path, dir);
	if (access(dir, W_OK | X_OK) != 0)
		return bl_fail(err, BL_EINVAL, "%s %s: cannot write in its folder %s: %s; nothing was captured or "
			       "measured", what, path, dir, strerror(errno));
	return 0;
}

void calib_frame_free(struct calib_frame *f)
{
	img_free(&f->im);
	cJSON_Delete(f->truth);
	f->truth = NULL;
}

int calib_session_machine(const struct calib_session *s, struct machine **m, bl_err *err)
{
	int rc;

	*m = malloc(sizeof(**m));
	if (!*m)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	/* Calibration measures the machine as its file alone places the canvas: an arm registration is what calib arm makes. */
	if ((rc = machine_load_nominal(s->machine_path, *m, err))) {
		/* No machine: the caller reports the file's error as it is, not as a usage error. */
		free(*m);
		*m = NULL;
	}
	return rc;
}

static void wait_operator(const struct calib_session *s, const char *what)
{
	char line[64];

	if (!s->say || !isatty(STDIN_FILENO))
		return;
	fprintf(s->say, "%s\nPress Enter when ready... ", what);
	fflush(s->say);
	if (!fgets(line, sizeof(line), stdin))
		fprintf(s->say, "\n");
}

/* A frame from the machine's camera through the rig; the simulator's truth with it. */
static int capture(const struct calib_session *s, const struct machine *m, int scene,
		   const struct sim_card *card, const char *prompt, struct calib_frame *f, bl_err *err)
{
	struct rig *r = malloc(sizeof(*r));
	int rc;

	if (!r)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	if (m->camera.backend != MACHINE_CAM_SIM)
		wait_operator(s, prompt);
	rc = rig_open(m, &s->ro, r, err);
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
	if (rc == 0 && r->sim && !s->truth) {
		rc = sim_truth(r->sim, (enum sim_scene)scene, &f->truth, err);
		snprintf(f->truth_name, sizeof(f->truth_name), "the simulator's truth");
	}
	snprintf(f->name, sizeof(f->name), "the %s camera%s%s", machine_cam_backend_names[m->camera.backend],
		 m->camera.device[0] ? " " : "", m->camera.device);
	rig_close(r);
	free(r);
	return rc;
}

int calib_session_frame(const struct calib_session *s, const struct machine *m, int scene,
			const struct sim_card *card, const char *prompt, struct calib_frame *f, bl_err *err)
{
	int rc;

	memset(f, 0, sizeof(*f));
	f->time_s = -1;
	if (s->frame) {
		snprintf(f->name, sizeof(f->name), "%s", s->frame);
		rc = img_load(s->frame, m->camera.max_pixels, &f->im, err);
		if (rc == 0)
			rc = bl_digest_file(s->frame, 1u << 30, f->sha256, err);
	} else {
		rc = capture(s, m, scene, card, prompt, f, err);
		if (rc == 0)
			rc = bl_digest_hex(f->im.px, (size_t)f->im.w * f->im.h * 3, f->sha256, err);
	}
	if (rc == 0 && s->truth) {
		rc = json_parse_file(s->truth, &f->truth, err);
		snprintf(f->truth_name, sizeof(f->truth_name), "%s", s->truth);
	}
	if (rc == 0 && f->truth) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(f->truth, "time_s");

		if (cJSON_IsNumber(t))
			f->time_s = t->valuedouble;
	}
	if (rc)
		calib_frame_free(f);
	return rc;
}

int calib_sim_card(const char *card_path, const struct machine *m, struct sim_card *out, bl_err *err)
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

/* s->output, else the machine file's key, checked writable; a usage error naming both when neither is there. */
static int out_path(const struct calib_session *s, const char *machine_key, const char *what,
		    const char *key, const char **out, bl_err *err)
{
	char label[64];

	*out = s->output ? s->output : machine_key[0] ? machine_key : NULL;
	if (!*out)
		return bl_fail(err, BL_EINVAL, "no output: give -o %s or set calibration.%s in the machine file",
			       what, key);
	if (s->output)
		snprintf(label, sizeof(label), "-o");
	else
		snprintf(label, sizeof(label), "the machine file's calibration.%s", key);
	return calib_output_check(label, *out, err);
}

/* ---- canvas ---- */

int calib_canvas_session_run(struct calib_canvas_session *cs, const struct calib_session *s, bl_err *err)
{
	struct vis_markers mk;
	int rc;

	cs->truth_mean_mm = cs->truth_max_mm = -1;
	if ((rc = calib_session_machine(s, &cs->m, err)) ||
	    (rc = out_path(s, cs->m->calibration.canvas, "CANVAS.json", "canvas", &cs->out, err)))
		return rc;
	if (cs->size_mm[0] == 0) {
		cs->size_mm[0] = cs->m->canvas.size_mm[0];
		cs->size_mm[1] = cs->m->canvas.size_mm[1];
	}
	if (s->say) {
		fprintf(s->say, "Canvas calibration: a %gx%g mm canvas on machine %s.\n", cs->size_mm[0],
			cs->size_mm[1], cs->m->name);
		fprintf(s->say, "1. Clear the canvas's four corner markers (arm parked, nothing over them).\n");
	}
	if ((rc = calib_session_frame(s, cs->m, SIM_SCENE_CANVAS, NULL,
				      "Park the arm and clear the markers now.", &cs->fs, err)))
		return rc;
	vis_markers_from_machine(cs->m, &mk);
	mk.canvas_mm[0] = cs->size_mm[0];
	mk.canvas_mm[1] = cs->size_mm[1];
	if ((rc = calib_canvas_run(&cs->fs.im, cs->fs.name, &mk, cs->corners_px, &cs->r, err)))
		return rc;
	if (cs->fs.truth &&
	    (rc = calib_canvas_truth(&cs->r, cs->fs.truth, cs->fs.truth_name, &cs->truth_mean_mm,
				     &cs->truth_max_mm, err)))
		return rc;
	cs->pass = cs->r.map_error_mm < 0 || cs->r.map_error_mm <= cs->m->calibration.max_canvas_error_mm;
	if (cs->pass || s->force) {
		char why[256];
		cJSON *set = cJSON_CreateObject();

		if (cs->r.map_error_mm < 0)
			snprintf(why, sizeof(why), "corners given: the error is not measured");
		else
			snprintf(why, sizeof(why), "canvas error %.3f mm %s calibration.max_canvas_error_mm %.2f",
				 cs->r.map_error_mm, cs->pass ? "within" : "exceeds",
				 cs->m->calibration.max_canvas_error_mm);
		calib_frame_prov(&cs->fs, cs->pass, why, &cs->r.canvas.prov);
		cJSON_AddStringToObject(set, "machine", cs->m->file);
		cJSON_AddBoolToObject(set, "corners_given", cs->corners_px != NULL);
		json_add_vec(set, "size_mm", cs->size_mm, 2);
		if ((rc = calib_keep_previous(cs->out, err)) ||
		    (rc = vis_canvas_save(cs->out, &cs->r.canvas, set, calib_canvas_json(&cs->r), err)))
			return rc;
		cs->written = 1;
	}
	return 0;
}

void calib_canvas_session_free(struct calib_canvas_session *cs)
{
	calib_frame_free(&cs->fs);
	free(cs->m);
	cs->m = NULL;
}

/* ---- arm ---- */

/* The gate a guided registration moves through, journaling into dir. */
static int open_gate(struct rig *r, const char *dir, struct journal *jr, struct gate **g, bl_err *err)
{
	struct gate_config gc;
	char journal[CFG_PATH_MAX + 32];
	int rc;

	if ((rc = fs_mkdirs(dir, err)) || (rc = fs_join(journal, sizeof(journal), dir, "journal.jsonl", err)) ||
	    (rc = journal_open(jr, journal, r->clock, err)))
		return rc;
	memset(&gc, 0, sizeof(gc));
	gc.m = &r->m;
	gc.run_dir = dir;
	gc.journal = jr;
	gc.clock = r->clock;
	gc.mode = isatty(STDIN_FILENO) ? GATE_TERMINAL : GATE_UNATTENDED;
	gc.tty_in_fd = STDIN_FILENO;
	gc.tty_out_fd = STDOUT_FILENO;
	rc = gate_open(&gc, g, err);
	if (rc)
		journal_close(jr);
	return rc;
}

/*
 * The guided registration: opens the machine's arm (and the simulator when
 * it is one), a gate journaling into the run directory, homes through the
 * gate, and leads the operator at this terminal through every target.
 */
static int guided(const struct calib_registration *as, const struct calib_session *s, int *n,
		  double (*cmm)[2], arm_point *amm, bl_err *err)
{
	struct rig *r = malloc(sizeof(*r));
	struct calib_arm_session *ss = calloc(1, sizeof(*ss));
	struct journal *jr = calloc(1, sizeof(*jr));
	struct gate *g = NULL;
	struct gate_decision d;
	int rc;

	if (!r || !ss || !jr) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_free;
	}
	if ((rc = rig_open(as->m, &s->ro, r, err)))
		goto out_free;
	if ((rc = open_gate(r, as->run_dir ? as->run_dir : "calib-arm.run", jr, &g, err)))
		goto out_rig;
	if (!as->by_hand) {
		printf("Homing the arm (through the safety gate)...\n");
		if ((rc = gate_home(g, r->arm, &d, err)))
			goto out_gate;
	}
	ss->m = &r->m;
	ss->gate = g;
	ss->arm = r->arm;
	ss->by_hand = as->by_hand;
	ss->speed_mm_s = calib_arm_jog_speed(&r->m);
	ss->step_mm = 1.0;
	ss->in = stdin;
	ss->out = stdout;
	ss->n_targets = as->n_targets ? as->n_targets : calib_arm_default_targets(&r->m, ss->targets);
	for (int i = 0; i < as->n_targets; i++) {
		ss->targets[i][0] = as->targets[2 * i];
		ss->targets[i][1] = as->targets[2 * i + 1];
	}
	if ((rc = calib_arm_session_run(ss, err)))
		goto out_gate;
	*n = ss->n;
	memcpy(cmm, ss->canvas_mm, sizeof(double) * 2 * (size_t)ss->n);
	memcpy(amm, ss->arm_mm, sizeof(arm_point) * (size_t)ss->n);
out_gate:
	gate_close(g);
	journal_close(jr);
out_rig:
	rig_close(r);
out_free:
	free(r);
	free(ss);
	free(jr);
	return rc;
}

int calib_registration_run(struct calib_registration *as, const struct calib_session *s, bl_err *err)
{
	double(*cmm)[2] = malloc(sizeof(*cmm) * CALIB_ARM_MAX_POINTS);
	arm_point *amm = malloc(sizeof(*amm) * CALIB_ARM_MAX_POINTS);
	int rc, n = 0;

	as->a = malloc(sizeof(*as->a));
	if (!cmm || !amm || !as->a) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_free;
	}
	if ((rc = calib_session_machine(s, &as->m, err)) ||
	    (rc = out_path(s, as->m->calibration.arm, "ARM.json", "arm", &as->out, err)))
		goto out_free;
	if (as->points)
		rc = calib_arm_points_load(as->points, &n, cmm, amm, err);
	else
		rc = guided(as, s, &n, cmm, amm, err);
	if (rc)
		goto out_free;
	if ((rc = calib_arm_fit(as->model, n, (const double(*)[2])cmm, amm, as->a, err))) {
		bl_err_prefix(err, "%s", as->points ? as->points : "the recorded points");
		goto out_free;
	}
	/* A map the machine cannot use (canvas off its work area, over a station) is bad input, never written. */
	{
		struct xform xf;

		if ((rc = xform_from_map(&xf, as->a->a, err)) || (rc = machine_canvas_fits(as->m, &xf, err))) {
			bl_err_prefix(err, "%s: the registration", as->points ? as->points : "the recorded points");
			goto out_free;
		}
	}
	as->pass = as->a->max_mm <= as->m->calibration.max_arm_residual_mm;
	/* A registration that fails is never written: a wrong one would move every stroke. */
	if (as->pass) {
		cJSON *set = cJSON_CreateObject();
		struct prov *p = &as->a->prov;

		memset(p, 0, sizeof(*p));
		p->verdict = PROV_PASS;
		snprintf(p->why, sizeof(p->why), "max residual %.3f mm within calibration.max_arm_residual_mm %.3f",
			 as->a->max_mm, as->m->calibration.max_arm_residual_mm);
		if (as->points) {
			snprintf(p->source, sizeof(p->source), "%s", as->points);
			if ((rc = bl_digest_file(as->points, 1u << 24, p->source_sha256, err))) {
				cJSON_Delete(set);
				goto out_free;
			}
		} else {
			snprintf(p->source, sizeof(p->source), "the %s session journaled in %s",
				 as->by_hand ? "by-hand" : "guided", as->run_dir ? as->run_dir : "calib-arm.run");
		}
		cJSON_AddStringToObject(set, "machine", as->m->file);
		cJSON_AddStringToObject(set, "model", calib_arm_model_names[as->model]);
		if ((rc = calib_keep_previous(as->out, err)) == 0)
			rc = calib_arm_save(as->out, as->a, set, err);
		else
			cJSON_Delete(set);
	}
out_free:
	free(cmm);
	free(amm);
	return rc;
}

void calib_registration_free(struct calib_registration *as)
{
	free(as->a);
	free(as->m);
	as->a = NULL;
	as->m = NULL;
}

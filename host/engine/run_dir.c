/* run_dir.c: the run directory: its paths, its owner's lock, STATUS.md for a person, the heartbeat. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/prof.h"
#include "base/json.h"
#include "base/strbuf.h"
#include "engine/run_int.h"
#include "engine/run_kind.h"


int run_path(const struct run *r, const char *name, char *out, size_t n, bl_err *err)
{
	return fs_join(out, n, r->dir, name, err);
}

const char *run_well_paint(const struct run *r, int well)
{
	for (int k = 0; k < r->pal.n_paints; k++)
		if (!strcmp(r->pal.paints[k].well, r->m.wells[well].name))
			return r->pal.paints[k].name;
	return "";
}

/*
 * Whether dir's path can hold a run: every file of the run has a path of
 * at most CFG_PATH_MAX - 1 bytes (the machine and palette copies are
 * loaded through the config layer, the simulator keeps its world's path)
 * and every part of it is a name the file system takes. what names the
 * path in the message ("--out", "the run directory"): the reason first,
 * the path (shown escaped) last.
 */
int run_dir_fits(const struct run *r, const char *what, bl_err *err)
{
	size_t len = strlen(r->dir), part = 0;

	if (!len)
		return bl_fail(err, BL_EINVAL, "%s: the run directory's name is empty", what);
	if (len > RUN_DIR_MAX)
		return bl_fail(err, BL_EINVAL, "%s: the path is %zu bytes, and a run directory's may have "
			       "%d (the files in it are named by paths of at most %d): choose a shorter "
			       "one (%s)", what, len, RUN_DIR_MAX, CFG_PATH_MAX - 1, r->dir_shown);
	for (const char *p = r->dir; *p; p++) {
		part = *p == '/' ? 0 : part + 1;
		if (part > NAME_MAX)
			return bl_fail(err, BL_EINVAL, "%s: a part of the path is longer than the %d bytes "
				       "a name may have (%s)", what, NAME_MAX, r->dir_shown);
	}
	return 0;
}

/*
 * Whether a run can be made at the path of dir: it fits (dir_fits), and
 * the nearest directory that exists is one this process may write in.
 * Asked before anything is written, so an impossible --out leaves nothing
 * behind.
 */
int run_out_possible(const struct run *r, bl_err *err)
{
	char up[RUN_PATH_MAX], *slash;
	struct stat sb;
	int rc;

	if ((rc = run_dir_fits(r, "--out", err)))
		return rc;
	snprintf(up, sizeof(up), "%s", r->dir);
	/* The nearest part of the path that exists decides: it must be a directory we may write in. */
	while (stat(up, &sb) != 0) {
		if (errno == ENOTDIR)
			return bl_fail(err, BL_EINVAL, "--out: a part of the path is a file, not a "
				       "directory (%s)", r->dir_shown);
		if (errno != ENOENT || !strcmp(up, "."))
			return bl_fail(err, BL_EINVAL, "--out: %s (%s)", strerror(errno), r->dir_shown);
		while ((slash = strrchr(up, '/')) && slash[1] == '\0' && slash > up)
			*slash = '\0';
		slash = strrchr(up, '/');
		if (!slash) {
			snprintf(up, sizeof(up), ".");
			continue;
		}
		*(slash == up ? slash + 1 : slash) = '\0';
	}
	if (!S_ISDIR(sb.st_mode))
		return bl_fail(err, BL_EINVAL, "--out: a part of the path is a file, not a directory "
			       "(%s)", r->dir_shown);
	if (access(up, W_OK | X_OK) != 0)
		return bl_fail(err, BL_EINVAL, "--out: the directory it would be made in cannot be "
			       "written by this user: %s (%s)", strerror(errno), r->dir_shown);
	return 0;
}

int run_dir_own(const char *dir, int *fd, bl_err *err)
{
	return fs_lock_owner(dir, RUN_LOCK, fd, err);
}

/* ---- STATUS.md ---- */

static const char *sub_what(const struct plan *p, size_t i, char *buf, size_t n)
{
	const struct plan_subtask *s = &p->subtasks[i];

	run_kind_of(s->type)->what(p, s, buf, n);
	return buf;
}

/* The colours the machine file's rule accepted, so a person sees in the morning what was decided. */
static void status_accepted_within(strbuf *sb, const struct run *r)
{
	const struct run_state *st = &r->st;
	int n = 0;

	for (int c = 0; c < st->n_colours; c++) {
		const struct run_colour *rc2 = &st->colours[c];
		const color_lab *t = &r->plan.colours[c].lab;

		if (!rc2->accepted_within)
			continue;
		if (!n++)
			sb_printf(sb, "\n## Accepted without a person (unattended.accept_within_de00 %g)\n\n"
				      "| colour | target lab | reached lab | CIEDE2000 |\n|---|---|---|---|\n",
				  r->m.unattended.accept_within_de00);
		sb_printf(sb, "| %s | %.1f %.1f %.1f | %.1f %.1f %.1f | %.2f |\n",
			  r->plan.colours[c].name, t->L, t->a, t->b, rc2->measured.L, rc2->measured.a,
			  rc2->measured.b, rc2->measured_de00);
	}
}

/* The run at a glance: state, target, machine, calibration, lamp, progress, canvas, cost. */
static void status_head(strbuf *sb, const struct run *r)
{
	const struct run_state *st = &r->st;
	size_t done = 0, skipped = 0;

	sb_printf(sb, "# brushloop run: %s\n\n", r->dir_shown);
	sb_printf(sb, "- **state**: %s%s%s\n", st->state, st->reason[0] ? ": " : "", st->reason);
	if (st->brake[0])
		sb_printf(sb, "- **brake**: %s\n", st->brake);
	{
		char t[512];

		/* Before the plan (a run stopped at its homing or first look) the target is the run's own copy. */
		bl_name_shown(r->plan.target_file[0] ? r->plan.target_file : r->opt.target ? r->opt.target : r->target_copy,
			      t, sizeof(t));
		sb_printf(sb, "- **target**: %s (%s)\n", t, r->plan.target_hash[0] ? r->plan.target_hash : r->target.hash);
	}
	sb_printf(sb, "- **machine**: %s (arm %s, camera %s)%s\n", r->m.name,
		      machine_arm_backend_names[r->m.arm_backend],
		      machine_cam_backend_names[r->m.camera.backend],
		      st->open_loop ? ", open loop: no verification, no correction" : "");
	if (st->calibrated)
		sb_printf(sb, "- **calibration**: camera profile %s; %s%s; canvas from %s\n",
			      r->m.calibration.camera_profile,
			      r->m.calibration.light_map[0] ? "light map " : "no light map (the profile "
			      "holds where the chart lay)", r->m.calibration.light_map,
			      st->canvas_from_file ? "calibration.canvas" : "the corner markers");
	else
		sb_printf(sb, "- **calibration**: NONE. This run is uncalibrated: colours are "
			      "measured as if the camera were sRGB (no calibration.camera_profile in "
			      "the machine file), so every verdict is only as good as that guess.%s\n",
			      st->canvas_from_file ? "" : " The canvas is located by its corner markers.");
	if (r->lamp)
		sb_printf(sb, "- **lamp**: the light in the last frame is %.3f, %.3f, %.3f (R, G, B) of the "
			      "run's first, from %d points of bare board; divided out of every frame\n",
			      r->lamp_now[0], r->lamp_now[1], r->lamp_now[2], r->lamp->n);
	else if (r->lamp_off)
		sb_printf(sb, "- **lamp**: not followed (%s): the profile holds only while the light "
			      "is as it was when it was made\n", r->m.calibration.follow_lamp ?
			      "too little bare board in view; journal: lamp_reference" :
			      "calibration.follow_lamp is false");
	for (size_t i = 0; i < st->n_sub; i++) {
		done += st->sub[i].status == RUN_SUB_DONE;
		skipped += st->sub[i].status == RUN_SUB_SKIPPED;
	}
	sb_printf(sb, "- **progress**: %s, subtask %zu of %zu done", st->round ? "correction round" : "the plan",
		      done, st->n_sub);
	if (skipped)
		sb_printf(sb, " (%zu skipped)", skipped);
	sb_printf(sb, "; strokes %ld of %ld; arm actions %ld\n", st->strokes_done, st->strokes_total,
		      st->actions_done);
	if (st->round)
		sb_printf(sb, "  (correction round %d of at most %d)\n", st->round,
			      r->m.brakes.correction_rounds);
	if (st->n_hist) {
		const struct run_hist *h = &st->hist[st->n_hist - 1];

		sb_printf(sb, "- **canvas** (last observation, against the target): mean "
			      "CIEDE2000 %.2f, 95th percentile %.2f\n", h->mean_de00, h->p95_de00);
	}
	if (st->gamut_share >= 0)
		sb_printf(sb, "- **beyond the paints**: %.0f %% of the picture is darker than the darkest "
			      "mix (L* %.1f; the picture's black L* %.1f), mapped into reach keeping its "
			      "contrasts; against the mapped target: S-CIELAB 1 m %.2f, 10 mm cells %.2f\n",
			      100.0 * st->gamut_share, r->gamut.paint_black_L, r->gamut.picture_black_L,
			      st->final_mapped_scielab_1m, st->final_mapped_de00);
	if (st->final_scielab_1m >= 0)
		sb_printf(sb, "- **what a person sees** (the final canvas against the target at 1 px/mm): "
			      "S-CIELAB seen from 1 m %.2f, CIEDE2000 pixel by pixel %.2f\n",
			      st->final_scielab_1m, st->final_pixel_de00);
	if (st->final_mean_de00 >= 0)
		sb_printf(sb, "- **final canvas** (10 mm cells): mean CIEDE2000 %.2f, 95th percentile %.2f "
			      "(%s); image: final-canvas.png beside target%s\n",
			      st->final_mean_de00, st->final_p95_de00,
			      st->final_verified ? "verified against its prediction" : "not verified",
			      strrchr(r->target_copy, '.') ? strrchr(r->target_copy, '.') : "");
	/* Which of the two a finished night was: inside its budget, or stopped at it. */
	sb_printf(sb, "- **budget**: arm time %.2f h of %.2f h%s\n", st->cost.arm_s / 3600.0,
		      run_budget_s(r) / 3600.0,
		      !strcmp(st->state, "finished") && r->budget_stopped ? ": stopped at it"
		      : !strcmp(st->state, "finished")			    ? ": finished inside it"
									    : "");
	sb_printf(sb, "- **cost**: arm %.0f s, %ld verifications, %ld planner calls (%.1f s), paint "
		      "%.2f ml: %.2f %s (budget %.2f)\n",
		      st->cost.arm_s, st->cost.verifications, st->cost.planner_calls, st->cost.planner_s,
		      st->cost.paint_ml, run_cost_total(&st->cost, &r->m.costs), r->m.costs.currency,
		      r->m.brakes.cost_max);
	{
		double wasted = 0.0;

		for (int c = 0; c < st->n_colours; c++)
			wasted += st->colours[c].wasted_ml;
		sb_printf(sb, "- **paint wasted**: %.2f ml left in mixing cells discarded for a clean "
			      "one\n", wasted);
	}
	sb_printf(sb, "- **wall time**: %.0f s over every process of the run\n\n", st->wall_s);

}

/* What only a person can answer: a refill, a request, a colour the loop could not mix. */
static void status_waiting(strbuf *sb, const struct run *r)
{
	const struct run_state *st = &r->st;

	sb_printf(sb, "## Waiting for the operator\n\n");
	if (!st->n_deferred && !st->well_low && !st->review_pending.active) {
		int any = 0;

		for (int c = 0; c < st->n_colours; c++)
			any |= st->colours[c].escalated && !st->colours[c].accepted;
		if (!any)
			sb_printf(sb, "Nothing.\n");
	}
	if (st->well_low > 0 && st->well_low <= r->m.n_wells) {
		int w = st->well_low - 1;

		sb_printf(sb, "- well %s (%s) is nearly empty: about %.1f ml of %.1f ml left. Refill it, "
			      "then `brushloop resume %s --refilled %s`.\n", r->m.wells[w].name,
			      run_well_paint(r, w), fmax(st->wells_ml[w], 0.0), r->m.wells[w].capacity_ml,
			      r->dir_shown, r->m.wells[w].name);
	}
	if (st->review_pending.active)
		sb_printf(sb, "- the second judge disagrees with the %s verdict of subtask %ld of round %d: %s. "
			      "Look at the frame it names (frames/), then `brushloop resume %s` to look again once the "
			      "cause is fixed, or `brushloop resume %s --overrule-review` if the run's verdict stands "
			      "(docs/review.md).\n", review_point_names[st->review_pending.point],
			      st->review_pending.subtask + 1, st->review_pending.round, st->review_pending.why, r->dir_shown,
			      r->dir_shown);
	for (int i = 0; i < st->n_deferred; i++) {
		char at[64] = "before the plan";

		if ((r->st.round ? r->corr.n_subtasks : r->plan.n_subtasks) > 0)
			snprintf(at, sizeof(at), "subtask %d of round %d", st->deferred[i].subtask,
				 st->deferred[i].round);
		sb_printf(sb, "- request %s (%s): %s. Answer with `brushloop approve %s %s` (or "
			      "`--deny`), then `brushloop resume %s`.\n", st->deferred[i].request, at,
			      st->deferred[i].why, r->dir_shown, st->deferred[i].request, r->dir_shown);
	}
	for (int c = 0; c < st->n_colours; c++)
		if (st->colours[c].escalated && !st->colours[c].accepted) {
			const char *n = r->plan.colours[c].name;
			const color_lab *w = &r->plan.colours[c].lab;

			sb_printf(sb, "- colour %s (lab %.1f %.1f %.1f) could not be mixed within %.1f "
				      "CIEDE2000 (best measured %.2f, lab %.1f %.1f %.1f): accept the "
				      "nearest with `brushloop resume %s --accept-mix %s`, or name another "
				      "colour to mix in its place with `brushloop resume %s --substitute "
				      "%s=lab:L,a,b` (or `%s=c1`, as colour c1); its strokes wait.\n",
				      n, w->L, w->a, w->b, r->m.tolerances.mix_de00,
				      st->colours[c].measured_de00, st->colours[c].measured.L,
				      st->colours[c].measured.a, st->colours[c].measured.b, r->dir_shown, n,
				      r->dir_shown, n, n);
		}
}

/* Every subtask of the plan under way, with its status, attempts and verdict. */
static void status_subtasks(strbuf *sb, struct run *r)
{
	const struct run_state *st = &r->st;
	const struct plan *p = run_plan(r);
	char buf[256], name[32];

	if (!p->n_subtasks) {
		sb_printf(sb, "\n## Subtasks\n\nNone yet: the run stopped before it had a plan (no "
			      "plan.json); a resume plans first.\n");
		return;
	}
	sb_printf(sb, "\n## Subtasks (%s)\n\n| subtask | what | status | attempts | "
		      "verdict CIEDE2000 | note |\n|---|---|---|---|---|---|\n",
		      st->round ? "correction plan" : "plan.json");
	for (size_t i = 0; i < st->n_sub && i < p->n_subtasks; i++) {
		const char *mark = i == st->next && !strcmp(st->state, "running") ? " (in progress)"
				   : i == st->next ? " (next)" : "";

		run_subtask_name(r, i, name, sizeof(name));
		sb_printf(sb, "| %s | %s | %s%s | %d | ", name, sub_what(p, i, buf, sizeof(buf)),
			      run_sub_status_names[st->sub[i].status], mark, st->sub[i].attempts);
		if (st->sub[i].verdict_de00 >= 0)
			sb_printf(sb, "%.2f", st->sub[i].verdict_de00);
		sb_printf(sb, " | %s |\n", st->sub[i].note);
	}
}

/* Every colour: its cell, whether it was verified, its mixes and paint. */
static void status_colours(strbuf *sb, const struct run *r)
{
	const struct run_state *st = &r->st;

	if (!st->n_colours)
		return;
	sb_printf(sb, "\n## Colours\n\n| colour | cell | verified | measured CIEDE2000 | mixes "
		      "| attempts | cells | paint ml |\n|---|---|---|---|---|---|---|---|\n");
	for (int c = 0; c < st->n_colours; c++) {
		const struct run_colour *rc2 = &st->colours[c];

		sb_printf(sb, "| %s | %s | %s | ", r->plan.colours[c].name,
			      rc2->cell[0] ? rc2->cell : "-",
			      rc2->accepted ? "accepted" : rc2->verified ? "yes" : "no");
		if (rc2->measured_de00 >= 0 && rc2->mixes)
			sb_printf(sb, "%.2f", rc2->measured_de00);
		sb_printf(sb, " | %d | %d | %d | %.2f |\n", rc2->mixes, rc2->attempts, rc2->cells,
			      rc2->dispensed_ml);
	}
}

static int status_write(struct run *r, bl_err *err);

int run_status_write(struct run *r, bl_err *err)
{
	enum prof_phase prev = prof_enter(PROF_STATUS);
	int rc = status_write(r, err);

	prof_leave(prev);
	return rc;
}

static int status_write(struct run *r, bl_err *err)
{
	char path[RUN_PATH_MAX];
	strbuf sb;
	int rc;

	sb_init(&sb);
	status_head(&sb, r);
	status_waiting(&sb, r);
	status_accepted_within(&sb, r);
	status_subtasks(&sb, r);
	status_colours(&sb, r);
	sb_printf(&sb, "\nEvery step is in journal.jsonl; the frames the verdicts rest on are in "
		      "frames/. `brushloop status %s` says the same as JSON.\n", r->dir_shown);
	if (!sb.s) {
		sb_free(&sb);
		return bl_fail(err, BL_ENOMEM, "out of memory writing STATUS.md");
	}
	rc = run_path(r, "STATUS.md", path, sizeof(path), err);
	/*
	 * While the run runs, renamed into place without fsyncs: it is made again
	 * from state.json (which is durable) at the next save, and two fsyncs every
	 * two seconds were 8 % of a run. Once it stopped nothing writes it again,
	 * and it tells the person how to answer: then it is made durable.
	 */
	if (rc == 0)
		rc = strcmp(r->st.state, "running") ? fs_write_atomic(path, sb.s, sb.len, err)
						    : fs_write_replace(path, sb.s, sb.len, err);
	sb_free(&sb);
	return rc;
}

/* run_planner.c: the run asks its planner (built-in, or external in a sandbox) for a plan or a correction, counts the call and its wall time, and keeps only an admitted answer. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/prof.h"
#include "base/json.h"
#include "base/log.h"
#include "engine/run_int.h"
#include "planner/planner_ext.h"
#include "planner/planner_proto.h"

/* The sandbox's and the broker's events go into the run's journal beside the run's own. */
static void sbx_log(void *ctx, const char *event, cJSON *data)
{
	struct run *r = ctx;
	bl_err e = { 0 };

	if (run_event(r, event, data, &e))
		log_warn("journal: %s", e.msg);
}

int run_planner_open(struct run *r, bl_err *err)
{
	const struct machine_planner *mp = &r->m.planner;
	struct planner_ext_config cfg = { 0 };
	const char *cmd = r->planner_cmd[0] ? r->planner_cmd : mp->command;
	const char *files[CFG_PLANNER_FILES_MAX + 1];
	cJSON *eg;
	int rc;

	planner_builtin(&r->planner);
	if (!cmd[0])
		return 0;
	if (mp->egress_json[0]) {
		char where[CFG_PATH_MAX + 32];

		if (!(eg = cJSON_Parse(mp->egress_json)))
			return bl_fail(err, BL_ENOMEM, "out of memory reading planner.egress");
		snprintf(where, sizeof(where), "%s: planner.egress", r->m.file);
		rc = egress_policy_from_json(eg, where, &r->egress, err);
		cJSON_Delete(eg);
		if (rc)
			return rc;
	}
	/* Unset, a working value is a share of its limit: an external planner would read the limit back. */
	if (!r->m.painting.envelope_written)
		return bl_fail(err, BL_EINVAL,
			       "%s: an external planner needs the working envelope written out: painting.stroke_speed_mm_s, "
			       "travel_speed_mm_s, curve_accel_mm_s2, move_mm and press_max_mm (docs/config.md)",
			       r->m.file);
	/* A planner that cannot be sandboxed is never run: the run does not start. */
	if ((rc = sbx_probe(err)))
		return bl_fail(err, BL_EINVAL, "the external planner cannot be sandboxed here: %s", err->msg);
	cfg.command = cmd;
	cfg.answer_deadline_ms = (int)(mp->answer_deadline_s * 1000.0);
	cfg.max_answer_bytes = (size_t)mp->max_answer_kb * 1024;
	cfg.cpu_s = mp->cpu_s;
	cfg.as_mb = mp->memory_mb;
	cfg.tmpfs_mb = mp->tmpfs_mb;
	cfg.egress = mp->egress_json[0] ? &r->egress : NULL;
	cfg.log = sbx_log;
	cfg.log_ctx = r;
	cfg.grants_dir = r->dir;
	cfg.max_grant_s = r->m.safety.max_grant_s;
	for (int i = 0; i < mp->n_files; i++)
		files[i] = mp->files[i];
	files[mp->n_files] = NULL;
	cfg.files = files;
	/* A planner that names a folder, or a file that is not there, is refused before the run starts. */
	if ((rc = planner_external(&cfg, &r->ext, err)))
		return bl_err_prefix(err, "the external planner cannot be run");
	return 0;
}

/* Per cell of the painting's grid: CIEDE2000 of the observed canvas against the target. */
static cJSON *error_map(const struct plan *p, const struct plan_raster *tgt, const struct plan_raster *obs)
{
	cJSON *o = cJSON_CreateObject(), *a = cJSON_AddArrayToObject(o, "de00");

	cJSON_AddNumberToObject(o, "cols", p->grid_cols);
	cJSON_AddNumberToObject(o, "rows", p->grid_rows);
	cJSON_AddNumberToObject(o, "cell_mm", p->cell_mm);
	for (int row = 0; row < p->grid_rows; row++)
		for (int col = 0; col < p->grid_cols; col++) {
			double s[2][3] = { { 0 } }, cnt[2] = { 0 };
			const struct plan_raster *ras[2] = { tgt, obs };

			for (int k = 0; k < 2; k++) {
				const struct plan_raster *q = ras[k];
				int x0 = (int)(col * p->cell_mm / p->image_mm[2] * q->w);
				int x1 = (int)fmin(q->w, ceil((col + 1) * p->cell_mm / p->image_mm[2] * q->w));
				int y0 = (int)(row * p->cell_mm / p->image_mm[3] * q->h);
				int y1 = (int)fmin(q->h, ceil((row + 1) * p->cell_mm / p->image_mm[3] * q->h));

				for (int y = y0; y < y1; y++)
					for (int x = x0; x < x1; x++, cnt[k]++)
						for (int c = 0; c < 3; c++)
							s[k][c] += q->px[((size_t)y * q->w + x) * 3 + c];
			}
			if (cnt[0] > 0 && cnt[1] > 0) {
				color_lab t = { s[0][0] / cnt[0], s[0][1] / cnt[0], s[0][2] / cnt[0] };
				color_lab v = { s[1][0] / cnt[1], s[1][1] / cnt[1], s[1][2] / cnt[1] };

				cJSON_AddItemToArray(a, cJSON_CreateNumber(round(color_de00(&t, &v) * 100) / 100));
			} else {
				cJSON_AddItemToArray(a, cJSON_CreateNull());
			}
		}
	return o;
}

/* observed.lab: "LAB32 W H\n", then W x H x 3 float32 little-endian (L, a, b), rows top to bottom. */
static int write_lab(const char *path, const struct plan_raster *ras, bl_err *err)
{
	char head[64];
	int hn = snprintf(head, sizeof(head), "LAB32 %d %d\n", ras->w, ras->h);
	size_t n = (size_t)ras->w * ras->h * 3 * sizeof(float);
	char *buf = malloc((size_t)hn + n);
	int rc;

	if (!buf)
		return bl_fail(err, BL_ENOMEM, "out of memory for observed.lab");
	memcpy(buf, head, (size_t)hn);
	memcpy(buf + hn, ras->px, n); /* x86-64 and aarch64 are little-endian, as the format is */
	rc = fs_write_atomic(path, buf, (size_t)hn + n, err);
	free(buf);
	return rc;
}

struct world_store {
	struct planner_world w;
	char record[RUN_PATH_MAX], in[RUN_PATH_MAX + 8], target[64];
	cJSON *machine_file, *view, *palette, *wells, *budgets, *emap;
};

static void world_free(struct world_store *s)
{
	cJSON_Delete(s->machine_file);
	cJSON_Delete(s->view);
	cJSON_Delete(s->palette);
	cJSON_Delete(s->wells);
	cJSON_Delete(s->budgets);
	cJSON_Delete(s->emap);
}

static int world_files(struct run *r, struct world_store *s, const struct planner_request *q,
		       const struct run_canvas *seen, bl_err *err)
{
	char name[64], p[RUN_PATH_MAX + 64], *buf;
	const char *ext = strrchr(r->target_copy, '.');
	size_t len;
	int rc;

	snprintf(name, sizeof(name), "planner/r%d", q->round);
	if ((rc = run_path(r, name, s->record, sizeof(s->record), err)))
		return rc;
	snprintf(s->in, sizeof(s->in), "%s/in", s->record);
	snprintf(s->target, sizeof(s->target), "target%s", ext && !strchr(ext, '/') ? ext : "");
	snprintf(p, sizeof(p), "%s/%s", s->in, s->target);
	if ((rc = fs_mkdirs(s->in, err)) || (rc = fs_read_file(r->target_copy, 1u << 30, &buf, &len, err)))
		return rc;
	rc = fs_write_atomic(p, buf, len, err);
	free(buf);
	if (rc || !seen || !q->observed)
		return rc;
	snprintf(p, sizeof(p), "%s/observed.png", s->in);
	if ((rc = run_canvas_save_png(seen, p, err)))
		return rc;
	snprintf(p, sizeof(p), "%s/observed.lab", s->in);
	if ((rc = write_lab(p, q->observed, err)))
		return rc;
	s->w.has_observed = 1;
	s->emap = error_map(q->painting, q->in->target, q->observed);
	return 0;
}

static int world_make(struct run *r, struct world_store *s, const struct planner_request *q,
		      const struct run_canvas *seen, bl_err *err)
{
	const struct machine_planner *mp = &r->m.planner;
	char p[RUN_PATH_MAX];
	int rc;

	memset(s, 0, sizeof(*s));
	if ((rc = world_files(r, s, q, seen, err)) || (rc = run_path(r, "machine.json", p, sizeof(p), err)) ||
	    (rc = json_parse_file(p, &s->machine_file, err)) ||
	    (rc = run_path(r, "palette.json", p, sizeof(p), err)) || (rc = json_parse_file(p, &s->palette, err)))
		return rc;
	s->view = planner_machine_view(s->machine_file, &r->m, q->opt);
	s->wells = cJSON_CreateArray();
	for (int w = 0; w < r->m.n_wells; w++) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "well", r->m.wells[w].name);
		cJSON_AddStringToObject(o, "paint", run_well_paint(r, w));
		cJSON_AddNumberToObject(o, "left_ml", round(r->st.wells_ml[w] * 100) / 100);
		cJSON_AddItemToArray(s->wells, o);
	}
	s->budgets = cJSON_CreateObject();
	if (mp->max_calls > 0)
		cJSON_AddNumberToObject(s->budgets, "calls_left", mp->max_calls - (double)r->st.cost.planner_ext_calls);
	if (mp->cost_max > 0)
		cJSON_AddNumberToObject(s->budgets, "cost_left",
					mp->cost_max - (double)r->st.cost.planner_ext_calls * r->m.costs.per_external_call);
	cJSON_AddStringToObject(s->budgets, "currency", r->m.costs.currency);
	if (q->left) {
		cJSON_AddNumberToObject(s->budgets, "arm_time_s_left", q->left->arm_time_s);
		cJSON_AddBoolToObject(s->budgets, "refill_ok", !q->left->wells_ml);
	}
	s->w.in_dir = s->in;
	s->w.target_name = s->target;
	s->w.machine_view = s->view;
	s->w.palette = s->palette;
	s->w.wells = s->wells;
	s->w.budgets = s->budgets;
	s->w.error_map = s->emap;
	return s->view && s->wells && s->budgets ? 0 : bl_fail(err, BL_ENOMEM, "out of memory for the request");
}

/* Whether the external planner's budget allows another call; why filled when not. */
static int budget_left(const struct run *r, struct planner_denial *why)
{
	const struct machine_planner *mp = &r->m.planner;
	long n = r->st.cost.planner_ext_calls;

	if ((mp->max_calls <= 0 || n < mp->max_calls) &&
	    (mp->cost_max <= 0 || (double)(n + 1) * r->m.costs.per_external_call <= mp->cost_max + 1e-9))
		return 1;
	memset(why, 0, sizeof(*why));
	why->reason = PLANNER_R_BUDGET;
	why->subtask = why->action = -1;
	snprintf(why->message, sizeof(why->message), "the planner's budget is spent");
	snprintf(why->detail, sizeof(why->detail), "%ld calls made, %.4g %s spent (planner.max_calls %d, cost_max %g)",
		 n, (double)n * r->m.costs.per_external_call, r->m.costs.currency, mp->max_calls, mp->cost_max);
	return 0;
}

static int journal_answer(struct run *r, const struct planner *pl, const struct planner_request *q,
			  const struct plan *out, const struct planner_denial *why, cJSON *claims, bl_err *err)
{
	cJSON *d = why ? planner_denial_json(why, GATE_VIEW_OPERATOR) : cJSON_CreateObject();
	int rc;

	cJSON_AddStringToObject(d, "planner", pl->ops->name);
	cJSON_AddStringToObject(d, "phase", planner_phase_names[q->phase]);
	cJSON_AddNumberToObject(d, "round", q->round);
	cJSON_AddNumberToObject(d, "subtasks", (double)out->n_subtasks);
	rc = run_event(r, why ? "planner_denied" : "planner_answer", d, err);
	/* What a planner says of itself (usage, "verified", a colour) is its claim: journaled, never used. */
	if (rc == 0 && claims && claims->child) {
		cJSON *c = cJSON_CreateObject();

		cJSON_AddStringToObject(c, "planner", pl->ops->name);
		cJSON_AddNumberToObject(c, "round", q->round);
		cJSON_AddItemToObject(c, "claims", claims);
		claims = NULL;
		rc = run_event(r, "planner_claims", c, err);
	}
	cJSON_Delete(claims);
	return rc;
}

/* One planner asked once: its answer admitted (0), refused (BL_EDENIED, why), or an error. */
static int ask_one(struct run *r, struct planner *pl, const struct planner_request *q, struct plan *out,
		   struct planner_denial *why, bl_err *err)
{
	cJSON *claims = NULL;
	int64_t t0 = clk_real_ns();
	enum prof_phase prev = prof_enter(PROF_PLAN);
	int rc, rc2;

	rc = pl->ops->propose(pl->ctx, q, out, &claims, why, err);
	prof_leave(prev);
	/* Wall time, not the run clock: a planner's time is real even when the arm is simulated. */
	r->st.cost.planner_calls++;
	r->st.cost.planner_ext_calls += pl == &r->ext;
	r->st.cost.planner_s += (double)(clk_real_ns() - t0) * 1e-9;
	if (rc == 0)
		rc = planner_admit(q, out, why, err);
	/* The target file is the host's: a planner names it as its sandbox shows it, and only matched the hash. */
	if (rc == 0 && q->in->target_file)
		snprintf(out->target_file, sizeof(out->target_file), "%s", q->in->target_file);
	if (rc && rc != BL_EDENIED) {
		cJSON_Delete(claims);
		if (pl->ops->told)
			pl->ops->told(pl->ctx, NULL);
		plan_free(out);
		return rc;
	}
	if (pl->ops->told)
		pl->ops->told(pl->ctx, rc ? why : NULL);
	rc2 = journal_answer(r, pl, q, out, rc ? why : NULL, claims, err);
	if (rc || rc2)
		plan_free(out);
	return rc2 ? rc2 : rc;
}

/* The external planner refused: the built-in plans instead, or the run pauses, as planner.on_failure says. */
static int ext_failed(struct run *r, const struct planner_request *q, const struct planner_denial *why,
		      struct plan *out, bl_err *err)
{
	cJSON *d;
	int rc;

	if (r->m.planner.on_failure == MACHINE_PLANNER_PAUSE)
		return bl_fail(err, BL_EPAUSED, "the external planner's %s (round %d) was refused: %s: %s "
			       "(planner.on_failure is pause; `brushloop resume %s` asks it again)",
			       planner_phase_names[q->phase], q->round, planner_reason_names[why->reason],
			       why->detail, r->dir_shown);
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "reason", planner_reason_names[why->reason]);
	cJSON_AddNumberToObject(d, "round", q->round);
	if ((rc = run_event(r, "planner_fallback", d, err)))
		return rc;
	return run_planner_ask_builtin(r, q, out, err);
}

int run_planner_ask_builtin(struct run *r, const struct planner_request *q, struct plan *out, bl_err *err)
{
	struct planner_denial why;
	int rc = ask_one(r, &r->planner, q, out, &why, err);

	if (rc == BL_EDENIED)
		return bl_fail(err, BL_EINVAL, "the built-in planner's %s (round %d) was not admitted: %s: %s",
			       planner_phase_names[q->phase], q->round, planner_reason_names[why.reason],
			       why.detail);
	return rc;
}

int run_planner_ask(struct run *r, const struct planner_request *q0, const struct run_canvas *seen,
		    struct plan *out, bl_err *err)
{
	struct planner_request q = *q0;
	struct planner_budget left;
	double wells_left[CFG_MAX_WELLS];
	struct planner_denial why;
	struct world_store ws;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!r->ext.ops)
		return run_planner_ask_builtin(r, &q, out, err);
	if (!budget_left(r, &why)) {
		cJSON *d = planner_denial_json(&why, GATE_VIEW_OPERATOR);

		cJSON_AddNumberToObject(d, "round", q.round);
		if ((rc = run_event(r, "planner_budget", d, err)))
			return rc;
		return ext_failed(r, &q, &why, out, err);
	}
	/*
	 * An external planner's answer is held to what the run has left, in the
	 * figures its request tells it (so a replay decides the same); with
	 * --refill-ok the wells may be refilled and their paint is not held.
	 */
	left.arm_time_s = floor(fmax(r->m.brakes.arm_time_s - r->st.cost.arm_s, 0.0));
	for (int w = 0; w < r->m.n_wells; w++)
		wells_left[w] = round(r->st.wells_ml[w] * 100) / 100;
	left.wells_ml = r->opt.refill_ok ? NULL : wells_left;
	q.left = &left;
	if ((rc = world_make(r, &ws, &q, seen, err)) == 0) {
		q.world = &ws.w;
		planner_ext_record_dir(&r->ext, ws.record);
		rc = ask_one(r, &r->ext, &q, out, &why, err);
		planner_ext_record_dir(&r->ext, NULL);
	}
	world_free(&ws);
	if (rc == BL_EDENIED)
		return ext_failed(r, q0, &why, out, err);
	return rc;
}

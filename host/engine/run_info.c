/* run_info.c: what a run directory says (status) and what a painting would cost before it starts (estimate). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/fs.h"
#include "base/prof.h"
#include "base/json.h"
#include "base/strbuf.h"
#include "engine/run_int.h"

static const cJSON *get(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

static double num(const cJSON *o, const char *k, double dflt)
{
	const cJSON *v = get(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

int run_status(const char *dir, cJSON **out, bl_err *err)
{
	char p[RUN_PATH_MAX];
	cJSON *st = NULL, *mach = NULL, *o, *c, *h, *mixes;
	const cJSON *it, *hist, *subs;
	struct stat sb;
	double stale_s = 30, age = -1;
	int rc, done = 0, n = 0;

	*out = NULL;
	if ((rc = fs_join(p, sizeof(p), dir, "state.json", err)))
		return rc;
	if (stat(p, &sb) != 0)
		return bl_fail(err, BL_EINVAL, "%s: not a run directory (no state.json)", dir);
	if ((rc = json_parse_file(p, &st, err)))
		return rc;
	if ((rc = fs_join(p, sizeof(p), dir, "machine.json", err)) == 0 &&
	    json_parse_file(p, &mach, NULL) == 0)
		stale_s = num(get(mach, "brakes"), "heartbeat_stale_s", stale_s);
	cJSON_Delete(mach);
	if ((rc = fs_join(p, sizeof(p), dir, "heartbeat", err)) == 0 && stat(p, &sb) == 0) {
		struct timespec now;

		clock_gettime(CLOCK_REALTIME, &now);
		age = (double)(now.tv_sec - sb.st_mtim.tv_sec) +
		      (double)(now.tv_nsec - sb.st_mtim.tv_nsec) * 1e-9;
	}
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "run", dir);
	cJSON_AddStringToObject(o, "state", cJSON_GetStringValue(get(st, "state")));
	cJSON_AddStringToObject(o, "reason", cJSON_GetStringValue(get(st, "reason")));
	cJSON_AddStringToObject(o, "brake", cJSON_GetStringValue(get(st, "brake")));
	cJSON_AddNumberToObject(o, "round", num(st, "round", 0));
	subs = get(st, "subtasks");
	cJSON_ArrayForEach(it, subs) {
		n++;
		done += !strcmp(cJSON_GetStringValue(get(it, "status")) ?: "", "done");
	}
	{
		long next;
		const cJSON *s = json_whole(get(st, "next"), 0, INT_MAX, &next) ?
				 cJSON_GetArrayItem(subs, (int)next) : NULL;

		cJSON_AddStringToObject(o, "subtask", s ? cJSON_GetStringValue(get(s, "name")) : "");
	}
	cJSON_AddNumberToObject(o, "subtasks_done", done);
	cJSON_AddNumberToObject(o, "subtasks", n);
	cJSON_AddNumberToObject(o, "strokes_done", num(st, "strokes_done", 0));
	cJSON_AddNumberToObject(o, "strokes_total", num(st, "strokes_total", 0));
	c = cJSON_AddObjectToObject(o, "canvas");
	hist = get(st, "canvas_history");
	{
		const cJSON *last = cJSON_GetArrayItem(hist, cJSON_GetArraySize(hist) - 1);
		double fm = num(st, "final_mean_de00", -1);

		if (fm >= 0) {
			cJSON_AddNumberToObject(c, "mean_de00", fm);
			cJSON_AddNumberToObject(c, "p95_de00", num(st, "final_p95_de00", -1));
		} else if (last) {
			cJSON_AddNumberToObject(c, "mean_de00", num(last, "mean_de00", -1));
			cJSON_AddNumberToObject(c, "p95_de00", num(last, "p95_de00", -1));
		} else {
			cJSON_AddNullToObject(c, "mean_de00");
			cJSON_AddNullToObject(c, "p95_de00");
		}
		/* What a person sees of the final canvas (null until there is one): the morning figure. */
		if (num(st, "final_pixel_de00", -1) >= 0) {
			cJSON_AddNumberToObject(c, "pixel_de00", num(st, "final_pixel_de00", -1));
			cJSON_AddNumberToObject(c, "scielab_1m", num(st, "final_scielab_1m", -1));
		} else {
			cJSON_AddNullToObject(c, "pixel_de00");
			cJSON_AddNullToObject(c, "scielab_1m");
		}
		/* Where the picture lies beyond the paints: the figures against the target mapped into reach. */
		if (num(st, "gamut_share", -1) >= 0) {
			cJSON *g = cJSON_AddObjectToObject(c, "mapped");

			cJSON_AddNumberToObject(g, "share", num(st, "gamut_share", -1));
			cJSON_AddNumberToObject(g, "mean_de00", num(st, "final_mapped_de00", -1));
			cJSON_AddNumberToObject(g, "scielab_1m", num(st, "final_mapped_scielab_1m", -1));
		}
		cJSON_AddBoolToObject(c, "final", fm >= 0);
		cJSON_AddBoolToObject(c, "verified", cJSON_IsTrue(get(st, "final_verified")));
		cJSON_AddItemToObject(c, "history", cJSON_Duplicate(hist, 1));
	}
	mixes = cJSON_AddArrayToObject(o, "mixes");
	cJSON_ArrayForEach(it, get(st, "colours")) {
		cJSON *m = cJSON_CreateObject();

		cJSON_AddStringToObject(m, "colour", cJSON_GetStringValue(get(it, "name")));
		cJSON_AddStringToObject(m, "cell", cJSON_GetStringValue(get(it, "cell")));
		cJSON_AddBoolToObject(m, "verified", cJSON_IsTrue(get(it, "verified")));
		cJSON_AddBoolToObject(m, "escalated", cJSON_IsTrue(get(it, "escalated")));
		cJSON_AddBoolToObject(m, "accepted", cJSON_IsTrue(get(it, "accepted")));
		/* The colour the operator named in place of the planned one, if any. */
		if (get(it, "substitute"))
			cJSON_AddItemToObject(m, "substitute", cJSON_Duplicate(get(it, "substitute"), 1));
		cJSON_AddNumberToObject(m, "measured_de00", num(it, "measured_de00", -1));
		cJSON_AddNumberToObject(m, "mixes", num(it, "mixes", 0));
		cJSON_AddNumberToObject(m, "attempts", num(it, "attempts", 0));
		cJSON_AddNumberToObject(m, "cells", num(it, "cells", 0));
		cJSON_AddNumberToObject(m, "paint_ml", num(it, "dispensed_ml", 0));
		cJSON_AddNumberToObject(m, "wasted_ml", num(it, "wasted_ml", 0));
		cJSON_AddItemToArray(mixes, m);
	}
	cJSON_AddItemToObject(o, "cost", cJSON_Duplicate(get(st, "cost"), 1));
	cJSON_AddItemToObject(o, "deferred", cJSON_Duplicate(get(st, "deferred"), 1));
	/* The second judge's disagreement a person has not settled (docs/review.md), when there is one. */
	if (cJSON_IsTrue(get(get(st, "review_pending"), "active")))
		cJSON_AddItemToObject(o, "review_pending", cJSON_Duplicate(get(st, "review_pending"), 1));
	if (get(st, "wells"))
		cJSON_AddItemToObject(o, "wells", cJSON_Duplicate(get(st, "wells"), 1));
	cJSON_AddBoolToObject(o, "calibrated", cJSON_IsTrue(get(st, "calibrated")));
	cJSON_AddBoolToObject(o, "open_loop", cJSON_IsTrue(get(st, "open_loop")));
	cJSON_AddNumberToObject(o, "wall_s", num(st, "wall_s", 0));
	h = cJSON_AddObjectToObject(o, "heartbeat");
	if (age >= 0)
		cJSON_AddNumberToObject(h, "age_s", age);
	else
		cJSON_AddNullToObject(h, "age_s");
	cJSON_AddNumberToObject(h, "stale_after_s", stale_s);
	/* Only a run that says it is running can be dead: a paused one is meant to be still. */
	cJSON_AddBoolToObject(h, "stale", !strcmp(cJSON_GetStringValue(get(st, "state")) ?: "", "running") &&
					       (age < 0 || age > stale_s));
	cJSON_Delete(st);
	*out = o;
	return 0;
}

#define STALE_MARK "> **STALE**"

int run_status_mark_stale(const char *dir, double age_s, double limit_s, bl_err *err)
{
	char p[RUN_PATH_MAX], *text = NULL, *body;
	strbuf sb;
	size_t len = 0;
	int rc;

	if ((rc = fs_join(p, sizeof(p), dir, "STATUS.md", err)))
		return rc;
	if (fs_read_file(p, 1u << 24, &text, &len, NULL))
		text = NULL;
	body = text ? text : "";
	/* One banner: an older one is replaced. */
	if (!strncmp(body, STALE_MARK, strlen(STALE_MARK))) {
		char *end = strstr(body, "\n\n");

		body = end ? end + 2 : body + strlen(body);
	}
	sb_init(&sb);
	sb_printf(&sb, STALE_MARK ": state.json says the run is running, but its heartbeat is %.0f s old "
		      "(brakes.heartbeat_stale_s %.0f s): the process has died or hangs. Nothing below is "
		      "current. If no brushloop process runs for it, `brushloop resume %s` goes on from "
		      "the last saved state.\n\n%s", age_s, limit_s, dir, body);
	if (!sb.s)
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
	else
		rc = fs_write_atomic(p, sb.s, sb.len, err);
	sb_free(&sb);
	free(text);
	return rc;
}

/* What an estimate counts in a plan: its subtasks by kind and the paint its mixes draw, per well. */
struct estimate_count {
	int mixes, batches, checks;
	double mix_ml, well_ml[CFG_MAX_WELLS];
};

static void estimate_count(const struct run *r, struct estimate_count *n)
{
	memset(n, 0, sizeof(*n));
	for (size_t i = 0; i < r->plan.n_subtasks; i++) {
		const struct plan_subtask *s = &r->plan.subtasks[i];

		n->mixes += s->type == PLAN_MIX;
		n->batches += s->type == PLAN_PAINT;
		n->checks += s->type == PLAN_CHECKPOINT;
		if (s->type == PLAN_MIX)
			for (int k = 0; k < s->mix.recipe.n; k++) {
				const struct machine_station *w = machine_find_well(&r->m, s->mix.recipe.item[k].well);
				double ml = s->mix.recipe.item[k].units * r->m.mixing.dispense_unit_ml;

				n->mix_ml += ml;
				if (w)
					n->well_ml[w - r->m.wells] += ml;
			}
	}
}

/* The expected cost of the plan and its upper bound, from its arm time plan_arm_s and its counts. */
static void estimate_costs(const struct run *r, const struct run_options *o, double plan_arm_s,
			   const struct estimate_count *n, struct run_cost *exp, struct run_cost *up)
{
	int mixes = n->mixes, batches = n->batches, checks = n->checks;
	double mix_ml = n->mix_ml;

	memset(exp, 0, sizeof(*exp));
	memset(up, 0, sizeof(*up));
	/*
	 * Expected: the plan with factors measured on whole closed-loop runs of the
	 * five example targets at 300 strokes on the example machine (docs/run.md,
	 * "Estimates"): the machine's arm time with mixing, retries and the correction
	 * rounds is 1.45 times the plan's, paint 1.45 times its mixes'; about 1.9 verifications
	 * for every mix, batch and checkpoint (mix measurements, batch observations
	 * and their second looks, the corrections' own), plus the blank and the final
	 * canvas; the plan and every correction round planned.
	 */
	exp->arm_s = run_expected_arm_s(o->open_loop, plan_arm_s);
	if (o->open_loop) {
		/* Top-ups add paint. */
		exp->verifications = checks + 2; /* looks at the checkpoints, the blank canvas and the final one */
		exp->planner_calls = 1;
		exp->paint_ml = mix_ml * 1.7;
	} else {
		exp->verifications = (long)lround(1.9 * (mixes + batches + checks) + 2);
		exp->planner_calls = 1 + r->m.brakes.correction_rounds;
		exp->paint_ml = mix_ml * 1.45;
	}
	/*
	 * Upper bound: everything retried to its limit: every mix to its attempt
	 * limit in fresh cells (a minute of arm time a measurement), every batch
	 * painted again attempts - 1 times and looked at twice a pass, every
	 * correction round full (a quarter of the plan's strokes each).
	 */
	{
		int att = r->m.brakes.attempts_per_subtask, rounds = r->m.brakes.correction_rounds;
		double more = 1.0 + 0.25 * rounds;

		up->arm_s = plan_arm_s * att * more + mixes * att * 60.0;
		up->verifications = (long)ceil((mixes * att + batches * 2.0 * att + checks) * more + 2 + rounds);
		up->planner_calls = 1 + rounds;
		up->paint_ml = mix_ml * (att > 1 ? 2.0 : 1.0) * att * more;
		if (o->open_loop) {
			up->arm_s = plan_arm_s * 2.0;
			up->verifications = checks + 2;
			up->planner_calls = 1;
			up->paint_ml = mix_ml * 3.0;
		}
	}
	/*
	 * An external planner (run --planner, or the machine's planner.command) is
	 * asked for the plan and every round, each call at its own price
	 * (planner.price_per_call). The plan counted here is the built-in planner's:
	 * the estimate never starts a planner process.
	 */
	if ((o->planner && o->planner[0]) || r->m.planner.command[0]) {
		exp->planner_ext_calls = exp->planner_calls;
		up->planner_ext_calls = up->planner_calls;
	}
}

/* Each well's share of the expected paint exp_ml, and the refills it needs. */
static cJSON *estimate_wells_json(const struct run *r, const struct estimate_count *n, double exp_ml)
{
	/*
	 * Each well's share of the expected paint, and the refills it needs: a
	 * run pauses before a mix would draw a well below its reserve.
	 */
	double paint_factor = n->mix_ml > 0.0 ? exp_ml / n->mix_ml : 0.0;
	cJSON *wells = cJSON_CreateArray();

	for (int w = 0; w < r->m.n_wells; w++) {
		double need = n->well_ml[w] * paint_factor;
		double usable = r->m.wells[w].capacity_ml - run_well_reserve_ml(&r->m, w);
		cJSON *x;

		if (need <= 0.0)
			continue;
		x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "well", r->m.wells[w].name);
		cJSON_AddStringToObject(x, "paint", run_well_paint(r, w));
		cJSON_AddNumberToObject(x, "expected_ml", need);
		cJSON_AddNumberToObject(x, "capacity_ml", r->m.wells[w].capacity_ml);
		cJSON_AddNumberToObject(x, "refills", usable > 0.0 ? fmax(0.0, ceil(need / usable) - 1.0) : 0.0);
		cJSON_AddItemToArray(wells, x);
	}
	return wells;
}

static int estimate(const struct run_options *o, cJSON **out, bl_err *err);

int run_estimate(const struct run_options *o, cJSON **out, bl_err *err)
{
	enum prof_phase prev = prof_enter(PROF_PLAN);
	int rc = estimate(o, out, err);

	prof_leave(prev);
	return rc;
}

static int estimate(const struct run_options *o, cJSON **out, bl_err *err)
{
	struct run *r = calloc(1, sizeof(*r));
	struct plan_inputs in;
	struct plan_options po;
	struct run_cost exp, up;
	struct estimate_count n;
	double plan_arm_s = 0.0;
	int rc;
	cJSON *j;

	*out = NULL;
	if (!r)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	r->opt = *o;
	if ((rc = machine_load(o->machine_path, &r->m, err)) ||
	    (rc = palette_load(o->palette_path, &r->pal, err)) ||
	    (rc = plan_mixer_init(&r->mixer, &r->pal, &r->m, err)) ||
	    (rc = plan_target_load(o->target, &r->m, &r->target, err)) || (rc = run_gamut_map(r, err)))
		goto out;
	run_plan_inputs(r, &in);
	in.target_file = o->target;
	run_plan_options(r, &po);
	if ((rc = run_budget_plan(r, &in, &po, &plan_arm_s, err)))
		goto out;
	estimate_count(r, &n);
	estimate_costs(r, o, plan_arm_s, &n, &exp, &up);
	j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "target", o->target);
	cJSON_AddStringToObject(j, "machine", r->m.name);
	cJSON_AddNumberToObject(j, "strokes", r->plan.n_strokes);
	cJSON_AddNumberToObject(j, "colours", r->plan.n_colours);
	cJSON_AddNumberToObject(j, "mixes", n.mixes);
	cJSON_AddNumberToObject(j, "paint_batches", n.batches);
	cJSON_AddNumberToObject(j, "checkpoints", n.checks);
	/* What the budget buys: the plan's strokes, its brush passes (a checkpoint ends each), its colours. */
	cJSON_AddNumberToObject(j, "passes", n.checks);
	cJSON_AddNumberToObject(j, "correction_rounds", o->open_loop ? 0 : r->m.brakes.correction_rounds);
	cJSON_AddNumberToObject(j, "arm_budget_s", run_budget_s(r));
	cJSON_AddNumberToObject(j, "predicted_mean_de00", r->plan.mean_de00);
	cJSON_AddItemToObject(j, "expected", run_cost_json(&exp, &r->m.costs));
	cJSON_AddItemToObject(j, "upper_bound", run_cost_json(&up, &r->m.costs));
	cJSON_AddNumberToObject(j, "budget", r->m.brakes.cost_max);
	cJSON_AddItemToObject(j, "wells", estimate_wells_json(r, &n, exp.paint_ml));
	*out = j;
out:
	plan_free(&r->plan);
	plan_target_free(&r->target);
	free(r);
	return rc;
}

int run_supply_check(const struct run_options *o, const struct machine *m, int *strokes,
		     cJSON **estimate, bl_err *err)
{
	const cJSON *w, *wells;
	cJSON *e = NULL;
	strbuf sb;
	int short_wells = 0, rc;

	if ((rc = run_estimate(o, &e, err)))
		return rc;
	*strokes = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(e, "strokes"));
	sb_init(&sb);
	/* With --refill-ok a person refills what runs low: no well is too small. */
	wells = o->refill_ok ? NULL : cJSON_GetObjectItem(e, "wells");
	cJSON_ArrayForEach(w, wells) {
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(w, "well"));
		const struct machine_station *st = name ? machine_find_well(m, name) : NULL;
		double need = cJSON_GetNumberValue(cJSON_GetObjectItem(w, "expected_ml"));
		double reserve, lack;

		if (!st)
			continue;
		reserve = run_well_reserve_ml(m, (int)(st - m->wells));
		lack = need + reserve - st->capacity_ml;
		if (lack <= 0.0)
			continue;
		sb_printf(&sb, "%s well %s (%s) holds %.1f ml, the plan is expected to need %.1f ml "
			      "of it and %.1f ml it cannot draw: %.1f ml to add",
			  short_wells++ ? ";" : "", name,
			  cJSON_GetStringValue(cJSON_GetObjectItem(w, "paint")), st->capacity_ml, need,
			  reserve, ceil(lack * 10.0) / 10.0);
	}
	if (short_wells)
		rc = bl_fail(err, BL_EINVAL, "%s: the wells cannot supply the plan for %s:%s. Give those "
			     "wells room for that much more (zones.wells[].capacity_ml), or start with "
			     "`--refill-ok` and refill them when the run pauses for it", m->file,
			     o->target, sb.s ? sb.s : " (out of memory)");
	sb_free(&sb);
	if (rc == 0 && estimate)
		*estimate = e;
	else
		cJSON_Delete(e);
	return rc;
}

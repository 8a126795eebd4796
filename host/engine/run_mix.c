/* run_mix.c: a plan's mix subtask on the machine: mix_run's ops through the gate and the camera, cells chosen, no dispense ever repeated. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "engine/run_exec.h"
#include "engine/run_int.h"
#include "engine/run_kind.h"

struct mix_ctx {
	struct run *r;
	int colour;
	const struct plan_subtask *s;
	char sub[32];
	int resumed;       /* this process resumed the run: the journal may know of dispenses */
	int measured;      /* measurements taken by this subtask */
	int fresh;         /* a top-up that cannot keep the cell's ratio: a clean cell, not the old one */
	int same_ratio;    /* a top-up in the verified ratio: the colour's own cell */
	int waits;         /* no clean cell, or no room in the cell: the colour waits for a person */
};

/* A clean cell: never used, and not the planned cell of a colour still to be mixed. */
static int free_cell(struct run *r, int colour)
{
	const struct plan *p = &r->plan;

	for (int i = 0; i < r->m.n_cells; i++) {
		int reserved = 0;

		if (r->st.cells_used >> i & 1)
			continue;
		for (int c = 0; c < p->n_colours; c++)
			if (c != colour && !r->st.colours[c].cell[0] &&
			    strcmp(p->colours[c].cell, r->m.cells[i].name) == 0)
				reserved = 1;
		if (!reserved)
			return i;
	}
	return -1;
}

static void take_cell(struct run *r, int colour, int idx)
{
	struct run_colour *rc = &r->st.colours[colour];
	const char *name = r->m.cells[idx].name;
	/* A copy by length: snprintf between two members of *r trips -Wrestrict under ASan. */
	size_t n = strnlen(name, sizeof(rc->cell) - 1);

	memcpy(rc->cell, name, n);
	rc->cell[n] = '\0';
	rc->cell_ml = 0.0;
	rc->cells++;
	r->st.cells_used |= 1ull << idx;
}

static int op_fresh_cell(void *ctx, bl_err *err)
{
	struct mix_ctx *x = ctx;
	struct run *r = x->r;
	struct run_colour *rc = &r->st.colours[x->colour];
	const char *planned = r->plan.colours[x->colour].cell;
	cJSON *d = cJSON_CreateObject();
	int idx;

	if (r->st.job.cells == 0 && rc->cell[0] && !x->fresh &&
	    (rc->verified || x->same_ratio || r->st.topup_ml > 0.0)) {
		/* The colour mixed again: its own cell still holds it, so it is topped up. */
		cJSON_AddStringToObject(d, "cell", rc->cell);
		cJSON_AddStringToObject(d, "why", "the colour's cell holds its verified mix: topped up");
	} else {
		idx = run_cell_index(&r->m, planned);
		idx = !rc->cell[0] && idx >= 0 && !(r->st.cells_used >> idx & 1) ? idx
										 : free_cell(r, x->colour);
		if (idx < 0 && rc->cell[0]) {
			/*
			 * Mixing afresh over what the cell holds stacks recipes in it (3.0 +
			 * 3.0 + 2.7 ml in a 3 ml cell): the colour waits for a person, or a
			 * cell cleaned (resume --emptied).
			 */
			cJSON_Delete(d);
			x->waits = 1;
			return bl_fail(err, BL_EPAUSED, "no clean cell is left for a fresh mix of colour %s "
				       "(its cell %s holds %.2f ml): it waits for a person, or a cell "
				       "cleaned (resume --emptied)", r->plan.colours[x->colour].name,
				       rc->cell, rc->cell_ml);
		} else if (idx < 0) {
			cJSON_Delete(d);
			return bl_fail(err, BL_EINVAL, "no clean mixing cell is left for colour %s",
				       r->plan.colours[x->colour].name);
		} else {
			if (rc->cell[0]) {
				cJSON_AddStringToObject(d, "discarded", rc->cell);
				cJSON_AddNumberToObject(d, "wasted_ml", fmax(rc->cell_ml, 0.0));
				rc->wasted_ml += fmax(rc->cell_ml, 0.0);
			}
			take_cell(r, x->colour, idx);
			cJSON_AddStringToObject(d, "cell", rc->cell);
		}
	}
	snprintf(r->st.pending.cell, sizeof(r->st.pending.cell), "%s", rc->cell);
	return run_event(r, "mix_cell", d, err);
}

/* The plan's own action of a kind in the mix subtask (its speeds fit the gate's motion model), or NULL. */
static const struct arm_action *plan_kind(const struct plan_subtask *s, enum arm_kind k)
{
	for (size_t i = 0; i < s->n_actions; i++)
		if (s->actions[i].kind == k)
			return &s->actions[i];
	return NULL;
}

/* The pending set's dispense i as it will run: into the mix's cell, at the plan's dispense speed. */
static struct arm_action dispense_action(const struct mix_ctx *x, int i)
{
	const struct run *r = x->r;
	const struct run_pending *p = &r->st.pending;
	const struct arm_action *pa = plan_kind(x->s, ARM_DISPENSE);
	struct arm_action a;

	memset(&a, 0, sizeof(a));
	a.kind = ARM_DISPENSE;
	a.id = p->action_id[i];
	a.zones = arm_default_zones(ARM_DISPENSE);
	a.speed_mm_s = pa ? pa->speed_mm_s : fmin(100.0, r->m.limits.soft.speed_mm_s);
	snprintf(a.well, sizeof(a.well), "%s", r->pal.paints[p->paint[i]].well);
	snprintf(a.cell, sizeof(a.cell), "%s", p->cell);
	a.units = p->units[i];
	return a;
}

/*
 * What a dispense put in its cell and took from its well; sent is 0 for one
 * that may have run before a crash: counted on the safe side of the cell's
 * and the well's limits, but not as paint the colour is known to have used.
 */
static void count_dispense(struct mix_ctx *x, const struct arm_action *a, int sent)
{
	struct run *r = x->r;
	double ml = a->units * r->m.mixing.dispense_unit_ml;
	int w = run_well_index(&r->m, a->well);

	if (sent)
		r->st.colours[x->colour].dispensed_ml += ml;
	r->st.colours[x->colour].cell_ml += ml;
	if (w >= 0)
		r->st.wells_ml[w] -= ml;
}

static int dispense_item(struct mix_ctx *x, int i, bl_err *err)
{
	struct run *r = x->r;
	struct run_pending *p = &r->st.pending;
	struct arm_action a = dispense_action(x, i);
	struct gate_decision d;
	int rc;

	if ((rc = run_cell_admit(r, a.cell, a.units * r->m.mixing.dispense_unit_ml, err))) {
		x->waits = 1;
		return rc;
	}
	rc = run_act(r, &a, &d, err);
	if (rc == 0) {
		p->done[i] = 1;
		count_dispense(x, &a, 1);
		rc = run_state_save(r, err);
	}
	return rc;
}

/*
 * Stirs the cell, cleans the brush and parks out of the camera's view: the
 * plan's own actions of those kinds, the stir sent to the mix's cell, all
 * repeatable; journaled as a step before the first of them runs.
 */
static int stir_and_park(struct run *r, const struct plan_subtask *s, const char *cell, bl_err *err)
{
	static const enum arm_kind seq[] = { ARM_STIR, ARM_WASH, ARM_WIPE, ARM_PARK };
	struct arm_action a[sizeof(seq) / sizeof(seq[0])];
	struct gate_decision d;
	size_t n = 0;
	int rc;

	for (size_t k = 0; k < sizeof(seq) / sizeof(seq[0]); k++) {
		const struct arm_action *pa = plan_kind(s, seq[k]);

		if (!pa)
			continue;
		a[n] = *pa;
		a[n].id = r->st.next_action_id++;
		if (a[n].kind == ARM_STIR)
			snprintf(a[n].cell, sizeof(a[n].cell), "%s", cell);
		n++;
	}
	if ((rc = run_actions_planned(r, "actions_planned", "stir", a, n, NULL, err)))
		return rc;
	for (size_t k = 0; k < n; k++)
		if ((rc = run_act(r, &a[k], &d, err)))
			return rc;
	return 0;
}

static int op_dispense(void *ctx, const int *units, bl_err *err)
{
	struct mix_ctx *x = ctx;
	struct run *r = x->r;
	struct run_pending *p = &r->st.pending;
	struct arm_action set[MIX_RECIPE_MAX];
	cJSON *dj;
	int rc;

	if (!p->active) {
		int total = 0;

		for (int i = 0; i < r->mixer.model.n_paints; i++)
			total += units[i];
		/* The whole set fits the cell, or none of it is dispensed. */
		if ((rc = run_cell_admit(r, p->cell, total * r->m.mixing.dispense_unit_ml, err))) {
			x->waits = 1;
			return rc;
		}
		if ((rc = run_wells_check(r, units, err)))
			return rc;
		/* The intent is on disk before the first drop: a crash can never repeat a dispense. */
		memset(p->paint, 0, sizeof(p->paint));
		memset(p->applied_units, 0, sizeof(p->applied_units));
		p->n = 0;
		for (int i = 0; i < r->mixer.model.n_paints && p->n < MIX_RECIPE_MAX; i++)
			if (units[i] > 0) {
				p->paint[p->n] = i;
				p->units[p->n] = units[i];
				p->action_id[p->n] = r->st.next_action_id++;
				p->done[p->n] = 0;
				p->applied_units[i] = units[i];
				p->n++;
			}
		p->active = 1;
		for (int i = 0; i < p->n; i++)
			set[i] = dispense_action(x, i);
		dj = cJSON_CreateObject();
		cJSON_AddStringToObject(dj, "cell", p->cell);
		cJSON_AddItemToObject(dj, "units", mix_units_json(&r->mixer.model, units));
		if ((rc = run_actions_planned(r, "dispense_planned", "dispense", set, (size_t)p->n, dj, err)) ||
		    (rc = run_state_save(r, err)))
			return rc;
	}
	for (int i = 0; i < p->n; i++) {
		if (p->done[i])
			continue;
		if (x->resumed) {
			int seen = run_journal_allowed(r, x->sub, p->action_id[i]);

			if (seen) {
				/*
				 * It may have run: never again. The measurement shows what is there;
				 * the cell is counted as holding it, so nothing later overfills it.
				 */
				cJSON *e = cJSON_CreateObject();
				struct arm_action a = dispense_action(x, i);

				cJSON_AddNumberToObject(e, "action_id", (double)p->action_id[i]);
				cJSON_AddStringToObject(e, "outcome", seen == 2 ? "done" : "unknown");
				p->done[i] = 1;
				count_dispense(x, &a, 0);
				if ((rc = run_event(r, "dispense_not_repeated", e, err)) ||
				    (rc = run_state_save(r, err)))
					return rc;
				continue;
			}
		}
		if ((rc = dispense_item(x, i, err)))
			return rc;
	}
	if ((rc = stir_and_park(r, x->s, p->cell, err)))
		return rc;
	/* mix_run applies the units and saves through on_applied. */
	p->active = 0;
	return 0;
}

static int op_measure(void *ctx, color_lab *out, bl_err *err)
{
	struct mix_ctx *x = ctx;
	struct run *r = x->r;
	struct run_colour *rc = &r->st.colours[x->colour];
	struct gate_decision d;
	struct arm_action a;
	char frame[RUN_PATH_MAX];
	cJSON *dj;
	int e;

	/* Out of the camera's view first (after a resume the arm may be anywhere). */
	memset(&a, 0, sizeof(a));
	a.kind = ARM_PARK;
	a.zones = arm_default_zones(ARM_PARK);
	a.speed_mm_s = fmin(100.0, r->m.limits.soft.speed_mm_s);
	if (plan_kind(x->s, ARM_PARK))
		a = *plan_kind(x->s, ARM_PARK);
	a.id = r->st.next_action_id++;
	if ((e = run_actions_planned(r, "actions_planned", "park", &a, 1, NULL, err)) ||
	    (e = run_act(r, &a, &d, err)) ||
	    (e = run_observe_cell(r, rc->cell, out, frame, sizeof(frame), err)))
		return e;
	rc->measured = *out;
	rc->measured_de00 = color_de00(out, &x->s->mix.lab);
	rc->attempts++;
	x->measured++;
	dj = cJSON_CreateObject();
	cJSON_AddStringToObject(dj, "cell", rc->cell);
	json_add_vec(dj, "measured_lab", (double[]){ out->L, out->a, out->b }, 3);
	json_add_vec(dj, "target_lab", (double[]){ x->s->mix.lab.L, x->s->mix.lab.a, x->s->mix.lab.b }, 3);
	cJSON_AddNumberToObject(dj, "de00", rc->measured_de00);
	cJSON_AddNumberToObject(dj, "tolerance_de00", x->s->tolerance_de00);
	cJSON_AddStringToObject(dj, "verdict", rc->measured_de00 <= x->s->tolerance_de00 ? "pass" : "fail");
	cJSON_AddStringToObject(dj, "frame", strrchr(frame, '/') ? strrchr(frame, '/') + 1 : frame);
	return run_event(r, "mix_measured", dj, err);
}

static int op_clean_cell_left(void *ctx)
{
	struct mix_ctx *x = ctx;

	return free_cell(x->r, x->colour) >= 0;
}

static int op_on_action(void *ctx, const struct mix_job *job, const struct mix_action *act,
			bl_err *err)
{
	struct mix_ctx *x = ctx;

	(void)job;
	return run_event(x->r, "mix_decision", mix_action_json(&x->r->mixer.model, act), err);
}

static int op_on_applied(void *ctx, const struct mix_job *job, bl_err *err)
{
	struct mix_ctx *x = ctx;

	(void)job;
	return run_state_save(x->r, err);
}

int run_mix_finish_pending(struct run *r, bl_err *err)
{
	struct run_pending *p = &r->st.pending;
	const struct plan *pl = run_plan(r);
	struct mix_ctx x = { 0 };
	int rc;

	struct plan_subtask topup;

	if (!p->active)
		return 0;
	if (r->st.next < pl->n_subtasks && pl->subtasks[r->st.next].type == PLAN_PAINT &&
	    r->st.topup_ml > 0.0 && run_mix_topup_subtask(r, pl->subtasks[r->st.next].colour, &topup) == 0) {
		x.s = &topup; /* a top-up of the batch's colour under way */
	} else if (r->st.next >= pl->n_subtasks || pl->subtasks[r->st.next].type != PLAN_MIX) {
		return bl_fail(err, BL_EINVAL, "state.json: a dispense is under way outside a mix subtask");
	} else {
		x.s = &pl->subtasks[r->st.next];
	}
	x.r = r;
	x.colour = x.s->colour;
	x.resumed = 1;
	run_subtask_name(r, r->st.next, x.sub, sizeof(x.sub));
	journal_set_subtask(&r->j, x.sub);
	if ((rc = run_event(r, "dispense_resumed", NULL, err)) ||
	    (rc = op_dispense(&x, p->applied_units, err)))
		return rc;
	/* What mix_run would have applied had the process lived. */
	mix_apply_dispense(&r->st.job, p->applied_units);
	return run_state_save(r, err);
}

static int mix_subtask_run(struct run *r, const struct plan_subtask *s, bl_err *err)
{
	return run_mix(r, s, &r->st.sub[r->st.next], err);
}

int run_mix_topup_subtask(struct run *r, int colour, struct plan_subtask *out)
{
	/* The colour's mix as planned (the plan under way, else round 0's), sized to the top-up. */
	const struct plan *plans[2] = { run_plan(r), &r->plan };

	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < plans[k]->n_subtasks; i++)
			if (plans[k]->subtasks[i].type == PLAN_MIX && plans[k]->subtasks[i].colour == colour) {
				*out = plans[k]->subtasks[i];
				out->volume_ml = r->st.topup_ml;
				return 0;
			}
	return -1;
}

/* Shrinks a recipe to at most max_units in all, in proportion, each of its paints kept. */
static void scale_units(int *u, int n, int max_units)
{
	int total = 0, got = 0;

	for (int i = 0; i < n; i++)
		total += u[i];
	if (total <= max_units || total == 0)
		return;
	for (int i = 0; i < n; i++)
		if (u[i] > 0) {
			u[i] = (int)lround((double)u[i] * max_units / total);
			u[i] = u[i] < 1 ? 1 : u[i];
			got += u[i];
		}
	while (got > max_units) {
		int k = -1;

		for (int i = 0; i < n; i++)
			if (u[i] > 1 && (k < 0 || u[i] > u[k]))
				k = i;
		if (k < 0)
			break;
		u[k]--;
		got--;
	}
}

static int gcd(int a, int b)
{
	while (b) {
		int t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/* The recipe's ratio in lowest whole units into ratio; returns its total (0: no recipe). */
static int ratio_of(const int *recipe, int n, int *ratio)
{
	int g = 0, total = 0;

	for (int i = 0; i < n; i++)
		g = recipe[i] > 0 ? gcd(g, recipe[i]) : g;
	for (int i = 0; i < n; i++) {
		ratio[i] = g ? recipe[i] / g : 0;
		total += ratio[i];
	}
	return total;
}

/*
 * How many times the ratio (total units) a top-up dispenses: the least k
 * that reaches want units, at least once, within room; 0 when one ratio
 * does not fit (a 29:1 tint needs 30 units: then a clean cell).
 */
static int ratio_times(int total, int want, int room)
{
	int k;

	if (total <= 0 || total > room)
		return 0;
	k = (want + total - 1) / total;
	return k < 1 ? 1 : k * total > room ? room / total : k;
}

/*
 * With no clean cell left and one ratio too big for the room (a 12:1:17
 * recipe of 30 units over 25 units of room): the ratio scaled to n whole
 * units (each paint rounded, at least one unit) into u, for the largest n
 * within the room whose cell (what is held, in the verified ratio, and the
 * addition) the model predicts within half the tolerance of the ratio itself;
 * returns the units, 0 when no size would do.
 */
static int ratio_scaled(const struct run *r, const struct plan_subtask *s, const int *ratio, int total,
			double held_units, int room, int *u)
{
	double pure[MIX_MAX_PAINTS] = { 0 };
	color_lab want;

	for (int i = 0; i < MIX_MAX_PAINTS; i++)
		pure[i] = ratio[i];
	mix_predict(&r->mixer.model, &r->st.learn, pure, &want);
	for (int n = room; n >= 1; n--) {
		double amt[MIX_MAX_PAINTS] = { 0 };
		color_lab lab;
		int got = 0;

		for (int i = 0; i < MIX_MAX_PAINTS; i++) {
			/* Every paint of the ratio stays in it: a tint that lost its green drifted 6 off in three top-ups. */
			u[i] = ratio[i] > 0 ? (int)fmax(1.0, round((double)ratio[i] * n / total)) : 0;
			got += u[i];
			amt[i] = ratio[i] * held_units / total + u[i];
		}
		if (got <= 0 || got > room)
			continue;
		/*
		 * The shift the rounding makes, as the model sees it (its bias on
		 * this recipe cancels): at most half the tolerance, and the cell
		 * is measured after as any top-up. A fresh recipe on the old
		 * paint, the other way, is predicted as if the cell were clean (a
		 * 7:20 yellow on a 0.5 ml 12:1:17 measured 13.8 off).
		 */
		mix_predict(&r->mixer.model, &r->st.learn, amt, &lab);
		if (color_de00(&lab, &want) <= 0.5 * s->tolerance_de00)
			return got;
	}
	memset(u, 0, MIX_MAX_PAINTS * sizeof(*u));
	return 0;
}

/* Whether u is a whole multiple of the ratio (total units). */
static int same_multiple(const int *ratio, int total, const int *u)
{
	int got = 0, k;

	for (int i = 0; i < MIX_MAX_PAINTS; i++)
		got += u[i];
	if (total <= 0 || got % total)
		return 0;
	k = got / total;
	for (int i = 0; i < MIX_MAX_PAINTS; i++)
		if (u[i] != ratio[i] * k)
			return 0;
	return 1;
}

/*
 * Tops up the colour's cell with its own verified ratio, then lets the loop
 * measure it (mix_run finds a dispensed cell). The job holds the cell as
 * the recipe plus the addition, the same ratio, so its prediction is the
 * verified colour's.
 */
static int topup_same_ratio(struct mix_ctx *x, const struct mix_limits *lim, const int *ratio,
			    int total, const int *u, bl_err *err)
{
	struct run *r = x->r;
	struct run_colour *col = &r->st.colours[x->colour];
	struct mix_job *job = &r->st.job;
	/* What the cell holds, in whole ratios (its volume, not the first mix's). */
	int held = (int)lround(fmax(col->cell_ml, 0.0) / lim->unit_ml / total);
	cJSON *dj;
	int rc;

	memset(job, 0, sizeof(*job));
	job->target = x->s->mix.lab;
	job->lim = *lim;
	r->st.mix_active = 1;
	col->mixes++;
	x->same_ratio = 1;
	if ((rc = run_state_save(r, err)) || (rc = op_fresh_cell(x, err)))
		return rc;
	for (int i = 0; i < MIX_MAX_PAINTS; i++)
		job->have[i] = ratio[i] * held;
	job->first_units = total * held;
	job->cells = 1;
	{
		/* Paint the whole ratios leave out (5 units of a 30-unit ratio) is in the cell all the same: out of its room. */
		int hidden = (int)ceil(fmax(col->cell_ml, 0.0) / lim->unit_ml - 1e-6) - total * held;

		if (hidden > 0)
			mix_limits_cap(&job->lim, job->lim.max_units - hidden);
	}
	dj = cJSON_CreateObject();
	cJSON_AddStringToObject(dj, "cell", col->cell);
	cJSON_AddItemToObject(dj, "recipe", mix_units_json(&r->mixer.model, col->recipe));
	cJSON_AddItemToObject(dj, "units", mix_units_json(&r->mixer.model, u));
	/* Scaled to the room (ratio_scaled) when one ratio did not fit and no clean cell was left. */
	cJSON_AddBoolToObject(dj, "scaled_to_room", !same_multiple(ratio, total, u));
	if ((rc = run_event(r, "topup_same_ratio", dj, err)) || (rc = run_state_save(r, err)) ||
	    (rc = op_dispense(x, u, err)))
		return rc;
	mix_apply_dispense(job, u);
	return run_state_save(r, err);
}

/*
 * A top-up of a colour whose cell holds what was verified (or accepted): its
 * ratio in whole units, or a clean cell when one ratio does not fit, never a
 * recipe of its own for the small volume (14:1 dispensed into a verified
 * 29:1 tint ruins it). Sets lim and x->fresh for the loop: 0 to go on to it,
 * 1 when the subtask is settled without it (sub says how), or a negative code.
 */
static int topup_kept(struct mix_ctx *x, struct run_sub *sub, struct mix_limits *lim, int units, bl_err *err)
{
	struct run *r = x->r;
	const struct run_colour *col = &r->st.colours[x->colour];
	int room = (int)floor((r->m.mixing.cell_max_ml - fmax(col->cell_ml, 0.0)) / lim->unit_ml + 1e-9);
	int ratio[MIX_MAX_PAINTS] = { 0 };
	int total = ratio_of(col->recipe, r->mixer.model.n_paints, ratio);
	int k = ratio_times(total, units, room), u[MIX_MAX_PAINTS] = { 0 };
	int clean = free_cell(r, x->colour), rc;

	for (int i = 0; i < MIX_MAX_PAINTS; i++)
		u[i] = ratio[i] * k;
	if (k > 0 || (clean < 0 &&
		      ratio_scaled(r, x->s, ratio, total, fmax(col->cell_ml, 0.0) / lim->unit_ml, room, u)))
		return topup_same_ratio(x, lim, ratio, total, u, err);
	/*
	 * A clean cell replaces the old one, whose paint is lost: it holds what
	 * the old one held and the top-up (hubble: a 0.5 ml top-up mixed fresh
	 * for a 1.7 ml batch ran the brush dry, and the batch was braked 23.7
	 * from its prediction). With no clean cell left and no scaled ratio
	 * that keeps the colour, the batch paints with what the cell holds: a
	 * recipe mixed on its paint is one the model cannot see (a 26:1:1 tint
	 * mixed afresh in the 17 units of room over it was out of reach and
	 * waited for a person). Only the film a brush leaves is mixed over, in
	 * the room the cell has: what the loop mixes and adds after (mix_step
	 * adds only, no clean cell being left) never overfills the cell.
	 */
	if (clean >= 0) {
		units = (int)ceil((fmax(col->cell_ml, 0.0) + x->s->volume_ml) / lim->unit_ml - 1e-9);
		lim->min_units = units < lim->max_units ? units : lim->max_units;
	} else if (room < 1 || col->cell_ml > RUN_CELL_FILM_ML) {
		sub->status = RUN_SUB_DONE;
		snprintf(sub->note, sizeof(sub->note),
			 "no clean cell is left, and no top-up of the cell %s (%.2f ml) keeps its "
			 "colour: the batch paints with what it holds", col->cell, col->cell_ml);
		rc = run_event(r, "topup_not_possible", cJSON_CreateString(sub->note), err);
		return rc ? rc : 1;
	} else {
		mix_limits_cap(lim, room);
	}
	x->fresh = 1;
	return 0;
}

/* What the loop's end means for the colour. */
enum mix_outcome {
	MIX_VERIFIED,      /* measured within tolerance */
	MIX_NEAREST,       /* the operator said beforehand the nearest will do (--accept-nearest) */
	MIX_WITHIN,        /* near enough by the machine file (unattended.accept_within_de00) */
	MIX_ESCALATED,     /* given up: an operator may accept the nearest; unattended, carry on */
};

static enum mix_outcome mix_outcome(const struct run *r, const struct plan_subtask *s, const struct mix_action *last)
{
	const struct run_colour *col = &r->st.colours[s->colour];
	/*
	 * Only a colour the camera measured in this mix's cell can be accepted:
	 * a mix given up before anything was dispensed (out of gamut) has no
	 * nearest, and the colour's last measurement is of another mix.
	 */
	int measured = r->st.job.attempts > 0;

	if (last->kind == MIX_ACT_DONE)
		return MIX_VERIFIED;
	if (measured && r->st.accept_nearest)
		return MIX_NEAREST;
	if (measured && r->m.unattended.accept_within_de00 > 0.0 &&
	    col->measured_de00 <= r->m.unattended.accept_within_de00)
		return MIX_WITHIN;
	return MIX_ESCALATED;
}

/* What the loop's end means for the colour: verified, accepted as the run allows, or the operator's. */
static int mix_verdict(struct run *r, const struct plan_subtask *s, struct run_sub *sub,
		       const struct mix_action *last, bl_err *err)
{
	struct run_colour *col = &r->st.colours[s->colour];
	cJSON *dj;

	dj = mix_action_json(&r->mixer.model, last);
	/* A mix that dispensed nothing (it waits for a cell) leaves the cell, and its recipe, as they were. */
	if (r->st.job.dispensed_units > 0)
		memcpy(col->recipe, r->st.job.have, sizeof(col->recipe));
	switch (mix_outcome(r, s, last)) {
	case MIX_VERIFIED:
		col->verified = 1;
		col->escalated = 0;
		sub->status = RUN_SUB_DONE;
		run_brakes_success(&r->st.brakes);
		return run_event(r, "mix_verified", dj, err);
	case MIX_NEAREST:
		/* The operator said beforehand that the nearest the loop reaches will do. */
		col->accepted = 1;
		sub->status = RUN_SUB_DONE;
		snprintf(sub->note, sizeof(sub->note), "accepted (--accept-nearest) at %.2f: %.120s",
			 col->measured_de00, last->reason);
		return run_event(r, "mix_accepted_nearest", dj, err);
	case MIX_WITHIN:
		/* The machine file's rule, set before the run: near enough needs nobody. */
		col->accepted = 1;
		col->accepted_within = 1;
		sub->status = RUN_SUB_DONE;
		snprintf(sub->note, sizeof(sub->note), "accepted at %.2f (unattended.accept_within_de00 "
			 "%g): %.100s", col->measured_de00, r->m.unattended.accept_within_de00,
			 last->reason);
		cJSON_AddStringToObject(dj, "colour", r->plan.colours[s->colour].name);
		json_add_vec(dj, "target_lab", (double[]){ s->mix.lab.L, s->mix.lab.a, s->mix.lab.b }, 3);
		json_add_vec(dj, "reached_lab", (double[]){ col->measured.L, col->measured.a,
							    col->measured.b }, 3);
		cJSON_AddNumberToObject(dj, "de00", col->measured_de00);
		cJSON_AddNumberToObject(dj, "accept_within_de00", r->m.unattended.accept_within_de00);
		return run_event(r, "mix_accepted_within", dj, err);
	case MIX_ESCALATED:
		break;
	}
	/* Given up: an operator may accept the nearest reachable colour; unattended, carry on. */
	col->escalated = 1;
	sub->status = RUN_SUB_DEFERRED;
	snprintf(sub->note, sizeof(sub->note), "needs the operator%s: %.150s",
		 r->st.job.attempts > 0 ? "" : " (nothing was mixed to accept)", last->reason);
	return run_event(r, "mix_escalated", dj, err);
}

/*
 * The loop cannot go on: no clean cell for a fresh mix, or no room in the
 * cell (err says which). Never a recipe over what the cell holds: the mix
 * ends there, as one given up, and its verdict is the run's rule for a mix
 * given up: accepted as reached where --accept-nearest or
 * unattended.accept_within_de00 allows, else the colour waits for a person
 * (who accepts, substitutes, or cleans a cell: resume --emptied).
 */
static int mix_waits(struct run *r, const struct plan_subtask *s, struct run_sub *sub, bl_err *err)
{
	struct run_colour *col = &r->st.colours[s->colour];
	struct mix_action end;
	int rc;

	memset(&end, 0, sizeof(end));
	end.kind = MIX_ACT_GIVE_UP;
	end.measured_de00 = col->measured_de00;
	end.add_de00 = end.waste_add_ml = end.waste_fresh_ml = -1.0;
	snprintf(end.reason, sizeof(end.reason), "%s", err->msg);
	bl_err_clear(err);
	r->st.mix_active = 0;
	sub->attempts = r->st.job.attempts;
	sub->verdict_de00 = col->measured_de00;
	if ((rc = run_event(r, "mix_waits_for_a_cell", cJSON_CreateString(end.reason), err)))
		return rc;
	return mix_verdict(r, s, sub, &end, err);
}

/*
 * Open loop: the plan's recipe, dispensed once and never looked at: scaled
 * down to the subtask's volume units (a top-up) and to the room in the cell.
 * Once the job holds what was dispensed (a set a crash interrupted is
 * finished by run_mix_finish_pending), never again.
 */
static int mix_open_loop(struct mix_ctx *x, struct run_sub *sub, const struct mix_limits *lim, int units,
			 bl_err *err)
{
	struct run *r = x->r;
	const struct plan_subtask *s = x->s;
	struct run_colour *col = &r->st.colours[s->colour];
	int u[MIX_MAX_PAINTS] = { 0 };
	int rc;

	for (int i = 0; i < s->mix.recipe.n; i++) {
		int k = mix_model_find(&r->mixer.model, s->mix.recipe.item[i].paint);

		if (k >= 0)
			u[k] += s->mix.recipe.item[i].units;
	}
	scale_units(u, r->mixer.model.n_paints,
		    r->st.topup_ml > 0.0 && units < lim->max_units ? units : lim->max_units);
	if (r->st.job.cells == 0) {
		if ((rc = op_fresh_cell(x, err)))
			return rc;
		r->st.job.cells = 1;
		if ((rc = run_state_save(r, err)))
			return rc;
	}
	if (r->st.job.dispensed_units == 0) {
		if ((rc = op_dispense(x, u, err)))
			return rc;
		mix_apply_dispense(&r->st.job, u);
	}
	col->verified = 0;
	r->st.mix_active = 0;
	sub->status = RUN_SUB_DONE;
	snprintf(sub->note, sizeof(sub->note), "open loop: dispensed, not measured");
	return run_event(r, "mix_open_loop", NULL, err);
}

int run_mix(struct run *r, const struct plan_subtask *s, struct run_sub *sub, bl_err *err)
{
	struct run_colour *col = &r->st.colours[s->colour];
	struct mix_ctx x = { 0 };
	struct mix_ops ops = { 0 };
	struct mix_limits lim = r->mixer.lim;
	struct mix_action last;
	struct gate_decision d;
	int rc, units;

	x.r = r;
	x.s = s;
	x.colour = s->colour;
	x.resumed = 0; /* sets planned before a crash are finished by run_mix_finish_pending */
	run_subtask_name(r, r->st.next, x.sub, sizeof(x.sub));
	if ((rc = run_tolerance(r, "mix", s->tolerance_de00, &d, err)))
		return rc;
	/* A correction round finds the colour still in its cell: no new mix needed. */
	if (r->st.round > 0 && s->type == PLAN_MIX && r->st.topup_ml <= 0.0 &&
	    (col->verified || col->accepted) &&
	    col->cell_ml >= 0.5 * s->volume_ml) {
		sub->status = RUN_SUB_SKIPPED;
		snprintf(sub->note, sizeof(sub->note), "the cell %s still holds %.2f ml of the mix",
			 col->cell, col->cell_ml);
		return run_event(r, "mix_not_needed", cJSON_CreateString(sub->note), err);
	}
	lim.tol_de00 = s->tolerance_de00;
	units = (int)ceil(s->volume_ml / lim.unit_ml - 1e-9);
	lim.min_units = units < lim.min_units ? lim.min_units : units > lim.max_units ? lim.max_units : units;
	if (!r->st.open_loop && !r->st.mix_active && col->cell[0] && (col->verified || col->accepted)) {
		if ((rc = topup_kept(&x, sub, &lim, units, err)))
			return rc > 0 ? 0 : x.waits ? mix_waits(r, s, sub, err) : rc;
	} else if (col->cell[0] && (col->verified || r->st.open_loop)) {
		/*
		 * Topping up: the cell holds what is left, and never more than it
		 * takes (the least volume a cell is measured at is there already).
		 */
		int room = (int)floor((r->m.mixing.cell_max_ml - fmax(col->cell_ml, 0.0)) / lim.unit_ml + 1e-9);

		if (room < 1) {
			sub->status = RUN_SUB_DONE;
			snprintf(sub->note, sizeof(sub->note), "the cell %s is full (%.2f ml): no top-up",
				 col->cell, col->cell_ml);
			return run_event(r, "topup_not_possible", cJSON_CreateString(sub->note), err);
		}
		mix_limits_cap(&lim, room);
	}
	ops.ctx = &x;
	ops.fresh_cell = op_fresh_cell;
	ops.dispense = op_dispense;
	ops.measure = op_measure;
	ops.on_action = op_on_action;
	ops.on_applied = op_on_applied;
	ops.clean_cell_left = op_clean_cell_left;
	if (!r->st.mix_active) {
		memset(&r->st.job, 0, sizeof(r->st.job));
		r->st.job.lim = lim; /* saved before mix_run starts it: a state read back needs valid limits */
		r->st.mix_active = 1;
		col->mixes++;
		x.resumed = 0;
		if ((rc = run_state_save(r, err)))
			return rc;
	}
	if (r->st.open_loop) {
		rc = mix_open_loop(&x, sub, &lim, units, err);
		return rc && x.waits ? mix_waits(r, s, sub, err) : rc;
	}
	rc = mix_run(&r->mixer.model, &r->st.learn, &r->st.job, &s->mix.lab, &lim, &ops, &last, err);
	if (rc && x.waits)
		return mix_waits(r, s, sub, err);
	if (rc)
		return rc;
	/* A verdict the run takes is the second judge's to agree with first; a give-up waits for a person anyway. */
	if (mix_outcome(r, s, &last) != MIX_ESCALATED && (rc = run_review_mix(r, s, err)))
		return rc;
	r->st.mix_active = 0;
	sub->attempts = x.measured;
	sub->verdict_de00 = col->measured_de00;
	return mix_verdict(r, s, sub, &last, err);
}

static void mix_expected(const struct plan *p, const struct plan_subtask *s, cJSON *d, cJSON *e)
{
	cJSON_AddStringToObject(d, "colour", p->colours[s->colour].name);
	json_add_vec(e, "target_lab", (double[]){ s->mix.lab.L, s->mix.lab.a, s->mix.lab.b }, 3);
	cJSON_AddStringToObject(e, "verified_by", "the stirred cell measured by the camera");
}

static void mix_what(const struct plan *p, const struct plan_subtask *s, char *buf, size_t n)
{
	snprintf(buf, n, "mix colour %s", p->colours[s->colour].name);
}

const struct run_kind run_kind_mix = {
	.run = mix_subtask_run,
	.expected = mix_expected,
	.what = mix_what,
	.paints = 0,
};

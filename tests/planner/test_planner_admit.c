/* test_planner_admit.c: the engine admits a planner's answer only when its header, references, tolerances and every action pass its own checks. */
#include "test.h"

#include "plan/plan_fixture.h"
#include "planner/planner.h"

#define TW 96
#define TH 72

/* A request for the painting of example target 0 and the built-in planner's answer to it. */
struct fx {
	struct plan_raster target, observed;
	struct plan_options opt;
	struct plan_inputs in;
	struct planner_request q;
	struct plan p;
};

static void fx_plan(struct fx *f)
{
	struct planner pl;
	bl_err err = { 0 };
	struct machine *m = fixture_machine();

	memset(f, 0, sizeof(*f));
	CHECK(fixture_target(0, TW, TH, &f->target) == 0);
	plan_options_default(&f->opt, m);
	f->opt.max_strokes = 60;
	f->in.machine = m;
	f->in.solver = &fake_solver;
	f->in.target = &f->target;
	f->in.target_file = "t.png";
	f->in.target_hash = "0123456789abcdef";
	f->q.phase = PLANNER_PLAN;
	f->q.in = &f->in;
	f->q.opt = &f->opt;
	planner_builtin(&pl);
	CHECK_MSG(pl.ops->propose(pl.ctx, &f->q, &f->p, NULL, NULL, &err) == 0, "%s", err.msg);
	planner_close(&pl);
}

static void fx_free(struct fx *f)
{
	plan_free(&f->p);
	plan_raster_free(&f->target);
	plan_raster_free(&f->observed);
}

/* Admits f's answer; returns the code, the denial in why. */
static int admit(struct fx *f, struct planner_denial *why)
{
	bl_err err = { 0 };
	int rc = planner_admit(&f->q, &f->p, why, &err);

	CHECK_MSG(rc == 0 || rc == BL_EDENIED, "%s", err.msg);
	return rc;
}

static struct plan_subtask *first_of(struct plan *p, enum plan_subtask_type t)
{
	for (size_t i = 0; i < p->n_subtasks; i++)
		if (p->subtasks[i].type == t)
			return &p->subtasks[i];
	return NULL;
}

static struct arm_action *first_stroke(struct plan *p)
{
	for (size_t i = 0; i < p->n_subtasks; i++)
		for (size_t k = 0; k < p->subtasks[i].n_actions; k++)
			if (p->subtasks[i].actions[k].kind == ARM_STROKE)
				return &p->subtasks[i].actions[k];
	return NULL;
}

static int has_gate_reason(const struct planner_denial *w, enum gate_reason r)
{
	for (int i = 0; w->has_gate && i < w->gate.n_findings; i++)
		if (w->gate.findings[i].reason == r)
			return 1;
	return 0;
}

TEST(builtin_plan_and_correction_are_admitted)
{
	struct planner_denial why;
	struct plan corr = { 0 };
	struct planner pl;
	struct planner_request q;
	bl_err err = { 0 };
	struct fx f;

	fx_plan(&f);
	CHECK_MSG(admit(&f, &why) == 0, "%s", why.detail);
	/* Behind the interface, the built-in planner is plan_make. */
	CHECK(fixture_plan(0, TW, TH, 60, 0, &corr, &err) == 0);
	CHECK(corr.n_subtasks == f.p.n_subtasks && corr.n_strokes == f.p.n_strokes &&
	      corr.mean_de00 == f.p.mean_de00);
	plan_free(&corr);
	/* A correction of a canvas observed blank: every cell is off. */
	CHECK(plan_raster_alloc(&f.observed, TW, TH, &err) == 0);
	for (size_t i = 0; i < (size_t)TW * TH; i++) {
		f.observed.px[3 * i] = 95.0f;
		f.observed.px[3 * i + 1] = f.observed.px[3 * i + 2] = 0.0f;
	}
	q = f.q;
	q.phase = PLANNER_CORRECT;
	q.round = 1;
	q.painting = &f.p;
	q.observed = &f.observed;
	planner_builtin(&pl);
	CHECK_MSG(pl.ops->propose(pl.ctx, &q, &corr, NULL, NULL, &err) == 0, "%s", err.msg);
	CHECK(corr.n_strokes > 0);
	CHECK_MSG(planner_admit(&q, &corr, &why, &err) == 0, "%s", why.detail);
	/* The same answer does not pass as a plan of its own: it is a correction of f.p's colours. */
	corr.colours[0].lab.L += 1.0;
	CHECK(planner_admit(&q, &corr, &why, &err) == BL_EDENIED && why.reason == PLANNER_R_HEADER);
	plan_free(&corr);
	fx_free(&f);
}

TEST(tolerance_looser_than_the_bar_is_denied)
{
	struct planner_denial why;
	struct fx f;
	struct plan_subtask *s;

	fx_plan(&f);
	s = first_of(&f.p, PLAN_PAINT);
	s->tolerance_de00 = 2.0 * f.in.machine->tolerances.paint_de00;
	CHECK(admit(&f, &why) == BL_EDENIED);
	CHECK(why.reason == PLANNER_R_TOLERANCE && has_gate_reason(&why, GATE_R_TOLERANCE));
	CHECK(why.subtask == s - f.p.subtasks);
	s->tolerance_de00 = NAN;
	CHECK(admit(&f, &why) == BL_EDENIED && why.reason == PLANNER_R_TOLERANCE);
	/* A checkpoint is held to the painting's bar too. */
	s->tolerance_de00 = f.in.machine->tolerances.paint_de00;
	first_of(&f.p, PLAN_CHECKPOINT)->tolerance_de00 = 50.0;
	CHECK(admit(&f, &why) == BL_EDENIED && why.reason == PLANNER_R_TOLERANCE);
	fx_free(&f);
}

TEST(speed_past_the_hard_limit_is_denied)
{
	struct planner_denial why;
	struct fx f;

	fx_plan(&f);
	first_stroke(&f.p)->speed_mm_s = 2.0 * f.in.machine->limits.hard.speed_mm_s;
	CHECK(admit(&f, &why) == BL_EDENIED);
	CHECK(why.reason == PLANNER_R_ACTION && has_gate_reason(&why, GATE_R_SPEED_HARD));
	CHECK(why.action >= 0 && strcmp(why.field, "speed_mm_s") == 0);
	fx_free(&f);
}

/*
 * A stroke around a circle of radius_mm in 12 chords (30 degrees a turn,
 * taken at speed), centred on the canvas: v^2 / R is its acceleration.
 */
static void circle_stroke(struct fx *f, double radius_mm, double speed_mm_s)
{
	const struct machine *m = f->in.machine;
	struct arm_action *a = first_stroke(&f->p);
	double cx = m->canvas.origin_mm[0] + 0.5 * m->canvas.size_mm[0];
	double cy = m->canvas.origin_mm[1] + 0.5 * m->canvas.size_mm[1];
	arm_point *pt = realloc(a->points, sizeof(*pt) * 13);

	CHECK(pt != NULL);
	for (int i = 0; i < 13; i++) {
		pt[i].x = cx + radius_mm * cos(i * M_PI / 6.0);
		pt[i].y = cy + radius_mm * sin(i * M_PI / 6.0);
		pt[i].z = m->canvas.surface_z_mm;
	}
	a->points = pt;
	a->n_points = 13;
	a->has_bounds = 0;
	a->speed_mm_s = speed_mm_s;
}

TEST(curve_acceleration_past_the_limits_is_denied)
{
	const struct machine *m = fixture_machine();
	struct planner_denial why;
	struct fx f;
	double r_mm = 10.0;

	/* Past the hard acceleration: denied outright. */
	fx_plan(&f);
	circle_stroke(&f, r_mm, sqrt(1.5 * m->limits.hard.accel_mm_s2 * r_mm));
	CHECK(admit(&f, &why) == BL_EDENIED);
	CHECK_MSG(why.reason == PLANNER_R_ACTION && has_gate_reason(&why, GATE_R_ACCEL_HARD), "%s",
		  why.detail);
	fx_free(&f);
	/* Between soft and hard: the gate would ask a person; a plan may not plan that. */
	fx_plan(&f);
	circle_stroke(&f, r_mm,
		      sqrt(0.5 * (m->limits.soft.accel_mm_s2 + m->limits.hard.accel_mm_s2) * r_mm));
	CHECK(admit(&f, &why) == BL_EDENIED);
	CHECK_MSG(why.reason == PLANNER_R_ACTION && has_gate_reason(&why, GATE_R_ACCEL_SOFT), "%s",
		  why.detail);
	fx_free(&f);
	/* The same circle slowly is a stroke like any. */
	fx_plan(&f);
	circle_stroke(&f, r_mm, sqrt(0.5 * m->limits.soft.accel_mm_s2 * r_mm));
	CHECK_MSG(admit(&f, &why) == 0, "%s", why.detail);
	fx_free(&f);
}

TEST(action_kind_its_subtask_may_not_hold_is_denied)
{
	struct planner_denial why;
	struct fx f;
	struct arm_action *a;

	fx_plan(&f);
	a = first_stroke(&f.p);
	arm_action_release(a);
	a->kind = ARM_HOME;
	CHECK(admit(&f, &why) == BL_EDENIED && why.reason == PLANNER_R_ACTION_KIND);
	a->kind = ARM_DISPENSE; /* paint from a well straight into a painting batch */
	CHECK(admit(&f, &why) == BL_EDENIED && why.reason == PLANNER_R_ACTION_KIND);
	a->kind = (enum arm_kind)ARM_KIND_COUNT;
	CHECK(admit(&f, &why) == BL_EDENIED && why.reason == PLANNER_R_ACTION_KIND);
	fx_free(&f);
}

TEST(references_the_machine_lacks_are_denied)
{
	struct planner_denial why;
	struct fx f;
	struct plan_subtask *s;

	fx_plan(&f);
	s = first_of(&f.p, PLAN_PAINT);
	s->colour = f.p.n_colours;
	CHECK(admit(&f, &why) == BL_EDENIED && why.reason == PLANNER_R_BAD_SUBTASK &&
	      strcmp(why.field, "colour") == 0);
	s->colour = 0;
	snprintf(s->brush, sizeof(s->brush), "no-such-brush");
	CHECK(admit(&f, &why) == BL_EDENIED && strcmp(why.field, "brush") == 0);
	fx_free(&f);
	fx_plan(&f);
	s = first_of(&f.p, PLAN_MIX);
	snprintf(s->mix.recipe.item[0].well, CFG_NAME_MAX, "w99");
	CHECK(admit(&f, &why) == BL_EDENIED && strcmp(why.field, "mix.recipe") == 0);
	snprintf(s->mix.recipe.item[0].well, CFG_NAME_MAX, "w1");
	s->mix.recipe.item[0].units = 1000000;
	CHECK(admit(&f, &why) == BL_EDENIED && strcmp(why.field, "mix.recipe") == 0);
	fx_free(&f);
}

TEST(cells_outside_the_grid_or_not_colours_are_denied)
{
	struct planner_denial why;
	struct fx f;
	struct plan_subtask *s;

	fx_plan(&f);
	s = first_of(&f.p, PLAN_PAINT);
	s->cells[0].col = f.p.grid_cols;
	CHECK(admit(&f, &why) == BL_EDENIED && why.reason == PLANNER_R_BAD_CELL);
	s->cells[0].col = 0;
	s->cells[0].lab.L = NAN;
	CHECK(admit(&f, &why) == BL_EDENIED && why.reason == PLANNER_R_BAD_CELL);
	s->cells[0].lab.L = 50.0;
	s->cells[0].coverage = 1.5;
	CHECK(admit(&f, &why) == BL_EDENIED && why.reason == PLANNER_R_BAD_CELL);
	fx_free(&f);
}

TEST(a_plan_for_another_target_or_grid_is_denied)
{
	struct planner_denial why;
	struct fx f;

	fx_plan(&f);
	snprintf(f.p.target_hash, sizeof(f.p.target_hash), "ffffffffffffffff");
	CHECK(admit(&f, &why) == BL_EDENIED && why.reason == PLANNER_R_HEADER);
	snprintf(f.p.target_hash, sizeof(f.p.target_hash), "%s", f.in.target_hash);
	f.p.grid_cols++;
	CHECK(admit(&f, &why) == BL_EDENIED && why.reason == PLANNER_R_HEADER);
	f.p.grid_cols--;
	f.p.image_mm[0] = f.in.machine->canvas.size_mm[0];
	CHECK(admit(&f, &why) == BL_EDENIED && why.reason == PLANNER_R_HEADER);
	fx_free(&f);
}

TEST(an_action_id_used_twice_is_denied)
{
	struct planner_denial why;
	struct fx f;
	struct plan_subtask *s;

	fx_plan(&f);
	s = first_of(&f.p, PLAN_PAINT);
	CHECK(s->n_actions >= 2);
	s->actions[1].id = s->actions[0].id;
	CHECK(admit(&f, &why) == BL_EDENIED && why.reason == PLANNER_R_BAD_SUBTASK &&
	      strcmp(why.field, "id") == 0);
	fx_free(&f);
}

/* The planner is told what and where, never the limit it was held to; the journal gets both. */
TEST(the_planner_view_of_a_denial_has_no_limit)
{
	struct planner_denial why;
	char limit[32];
	struct fx f;
	cJSON *pv, *ov;
	char *ps, *os;

	fx_plan(&f);
	first_stroke(&f.p)->speed_mm_s = 777.0;
	CHECK(admit(&f, &why) == BL_EDENIED);
	pv = planner_denial_json(&why, GATE_VIEW_PLANNER);
	ov = planner_denial_json(&why, GATE_VIEW_OPERATOR);
	ps = cJSON_PrintUnformatted(pv);
	os = cJSON_PrintUnformatted(ov);
	snprintf(limit, sizeof(limit), "%g", f.in.machine->limits.hard.speed_mm_s);
	CHECK_MSG(strstr(ps, limit) == NULL, "%s", ps);
	CHECK(cJSON_GetObjectItem(pv, "detail") == NULL);
	CHECK_MSG(strstr(os, limit) != NULL, "%s", os);
	CHECK_STR_CONTAINS(ps, "\"reason\":\"action\"");
	cJSON_free(ps);
	cJSON_free(os);
	cJSON_Delete(pv);
	cJSON_Delete(ov);
	fx_free(&f);
}

/* The painting with more strokes than its budget, or a stroke count its batches do not hold: refused. */
TEST(strokes_past_the_phase_budget_are_denied)
{
	struct planner_denial why;
	struct fx f;

	fx_plan(&f);
	CHECK(f.p.n_strokes > 1);
	f.opt.max_strokes = f.p.n_strokes;
	CHECK_MSG(admit(&f, &why) == 0, "%s", why.detail);
	f.opt.max_strokes = f.p.n_strokes - 1;
	CHECK(admit(&f, &why) == BL_EDENIED);
	CHECK_MSG(why.reason == PLANNER_R_OVER_BUDGET && strcmp(why.field, "strokes") == 0, "%s", why.detail);
	/* The header's count is not the budget's measure: the batches' strokes are. */
	f.p.n_strokes = 1;
	CHECK(admit(&f, &why) == BL_EDENIED && why.reason == PLANNER_R_HEADER && strcmp(why.field, "strokes") == 0);
	fx_free(&f);
}

/* A correction round is answered with a correction, the painting with none. */
TEST(an_answer_of_the_other_phase_is_denied)
{
	struct planner_denial why;
	struct planner_request q;
	struct fx f;

	fx_plan(&f);
	f.p.correction = 1;
	CHECK(admit(&f, &why) == BL_EDENIED);
	CHECK_MSG(why.reason == PLANNER_R_PHASE && strcmp(why.field, "correction") == 0, "%s", why.detail);
	f.p.correction = 0;
	/* The painting again as round 1's answer. */
	q = f.q;
	q.phase = PLANNER_CORRECT;
	q.round = 1;
	q.painting = &f.p;
	q.observed = &f.target;
	f.q = q;
	CHECK(admit(&f, &why) == BL_EDENIED && why.reason == PLANNER_R_PHASE);
	fx_free(&f);
}

/* f's plan with subtask i written twice, the copy's actions numbered apart. */
static void twice(struct fx *f, size_t i)
{
	cJSON *j = plan_to_json(&f->p), *subs = cJSON_DetachItemFromObject(j, "subtasks"), *out, *a, *s, *c;
	bl_err err = { 0 };
	int id = 1;
	size_t k = 0;

	out = cJSON_AddArrayToObject(j, "subtasks");
	cJSON_ArrayForEach(s, subs) {
		cJSON_AddItemToArray(out, cJSON_Duplicate(s, 1));
		if (k++ != i)
			continue;
		c = cJSON_Duplicate(s, 1);
		cJSON_ArrayForEach(a, cJSON_GetObjectItem(c, "actions"))
			cJSON_SetNumberValue(cJSON_GetObjectItem(a, "id"),
					     cJSON_GetObjectItem(a, "id")->valuedouble + 50000000);
		cJSON_AddItemToArray(out, c);
	}
	cJSON_ArrayForEach(s, out)
		cJSON_SetNumberValue(cJSON_GetObjectItem(s, "id"), id++);
	cJSON_Delete(subs);
	plan_free(&f->p);
	CHECK_MSG(plan_from_json(j, "twice", &f->p, &err) == 0, "%s", err.msg);
	cJSON_Delete(j);
}

/* A mix no paint batch uses before the next mix of its colour dispenses for nothing: a correction's "new mixes". */
TEST(a_mix_no_batch_uses_is_denied)
{
	struct planner_denial why;
	struct plan_subtask *mix;
	struct fx f;
	long at;

	fx_plan(&f);
	mix = first_of(&f.p, PLAN_MIX);
	CHECK(mix != NULL);
	at = mix - f.p.subtasks;
	twice(&f, (size_t)at);
	CHECK(admit(&f, &why) == BL_EDENIED);
	CHECK_MSG(why.reason == PLANNER_R_BAD_SUBTASK && why.subtask == at, "%s", why.detail);
	CHECK_STR_CONTAINS(why.message, "that no paint batch uses before its next mix");
	fx_free(&f);
	/* The last batch of the last colour mixed turned into a checkpoint's place: its mix is used by none. */
	fx_plan(&f);
	for (size_t i = f.p.n_subtasks; i-- > 0;)
		if (f.p.subtasks[i].type == PLAN_MIX) {
			mix = &f.p.subtasks[i];
			break;
		}
	for (size_t i = (size_t)(mix - f.p.subtasks) + 1; i < f.p.n_subtasks; i++)
		if (f.p.subtasks[i].type == PLAN_PAINT)
			f.p.subtasks[i].colour = mix->colour == 0 ? 1 : 0;
	CHECK(admit(&f, &why) == BL_EDENIED);
	CHECK_MSG(why.reason == PLANNER_R_BAD_SUBTASK && why.subtask == mix - f.p.subtasks, "%s", why.detail);
	fx_free(&f);
}

/* An external planner's answer within what the run has left of paint and arm time, or refused. */
TEST(paint_or_arm_time_past_what_is_left_is_denied)
{
	struct planner_budget left = { .arm_time_s = 1e9 };
	const struct machine *m = fixture_machine();
	double wells[CFG_MAX_WELLS];
	struct planner_denial why;
	struct fx f;

	for (int w = 0; w < CFG_MAX_WELLS; w++)
		wells[w] = 1e6;
	left.wells_ml = wells;
	fx_plan(&f);
	f.q.left = &left;
	CHECK_MSG(admit(&f, &why) == 0, "%s", why.detail);
	for (int w = 0; w < m->n_wells; w++)
		wells[w] = 0.0; /* every well empty: the first mix draws more than is left */
	CHECK(admit(&f, &why) == BL_EDENIED);
	CHECK_MSG(why.reason == PLANNER_R_OVER_BUDGET && strcmp(why.field, "mix.recipe") == 0, "%s", why.detail);
	left.wells_ml = NULL; /* --refill-ok: the wells are refilled when they run low */
	CHECK_MSG(admit(&f, &why) == 0, "%s", why.detail);
	left.arm_time_s = 1.0;
	CHECK(admit(&f, &why) == BL_EDENIED);
	CHECK_MSG(why.reason == PLANNER_R_OVER_BUDGET && strcmp(why.field, "arm_time_s") == 0, "%s", why.detail);
	/* The planner is told the field, not the time left. */
	CHECK(strstr(why.message, "1 s") == NULL && strstr(why.detail, "1 s of arm time left") != NULL);
	fx_free(&f);
}

TEST_MAIN(T(strokes_past_the_phase_budget_are_denied), T(an_answer_of_the_other_phase_is_denied),
	  T(a_mix_no_batch_uses_is_denied), T(paint_or_arm_time_past_what_is_left_is_denied),
	  T(builtin_plan_and_correction_are_admitted), T(tolerance_looser_than_the_bar_is_denied),
	  T(speed_past_the_hard_limit_is_denied), T(curve_acceleration_past_the_limits_is_denied),
	  T(action_kind_its_subtask_may_not_hold_is_denied), T(references_the_machine_lacks_are_denied),
	  T(cells_outside_the_grid_or_not_colours_are_denied),
	  T(a_plan_for_another_target_or_grid_is_denied), T(an_action_id_used_twice_is_denied),
	  T(the_planner_view_of_a_denial_has_no_limit))

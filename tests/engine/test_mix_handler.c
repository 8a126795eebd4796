/* test_mix_handler.c: the mix handler against the recording arm: a dispense set a crash cut is finished without repeating what may have run; nothing unmeasured is accepted. */
#include <stdlib.h>
#include <string.h>

#include "../safety/rec_arm.h"
#include "../safety/safety_test.h"
#include "base/journal.h"
#include "engine/run_int.h"
#include "engine/run_kind.h"
#include "test.h"

/*
 * A run in a fresh directory with the test machine and the example palette,
 * the gate over a recording arm on a virtual clock, and a plan of one mix
 * subtask with no actions of its own (so what the arm sees is the handler's
 * dispenses alone).
 */
struct mix_rig {
	struct run *r;
	struct rec_state rec;
	clk clock;
	struct plan_subtask sub;
};

static void mix_rig_open(struct mix_rig *x, const char *name)
{
	struct gate_config cfg;
	char jpath[RUN_PATH_MAX];
	bl_err err = { 0 };
	struct run *r;

	memset(x, 0, sizeof(*x));
	x->r = r = calloc(1, sizeof(*r));
	CHECK(r != NULL);
	snprintf(r->dir, sizeof(r->dir), "%s", fresh_dir(name));
	r->lock_fd = -1;
	r->m = *test_machine();
	CHECK_MSG(palette_load(src_path("examples/palette.json"), &r->pal, &err) == 0, "%s", err.msg);
	CHECK_MSG(plan_mixer_init(&r->mixer, &r->pal, &r->m, &err) == 0, "%s", err.msg);
	clk_virtual_init(&x->clock, 0);
	r->rig.clock = &x->clock;
	r->rig.arm = rec_arm_open(&r->m, &x->clock, &x->rec);
	CHECK(r->rig.arm != NULL);
	snprintf(jpath, sizeof(jpath), "%s/journal.jsonl", r->dir);
	CHECK_MSG(journal_open(&r->j, jpath, &x->clock, &err) == 0, "%s", err.msg);
	memset(&cfg, 0, sizeof(cfg));
	cfg.m = &r->m;
	cfg.run_dir = r->dir;
	cfg.journal = &r->j;
	cfg.clock = &x->clock;
	cfg.mode = GATE_UNATTENDED;
	cfg.tty_in_fd = cfg.tty_out_fd = -1;
	CHECK_MSG(gate_open(&cfg, &r->gate, &err) == 0, "%s", err.msg);
	r->opt.quiet = 1;
	r->wall0_ns = clk_real_ns();

	/* One colour, one mix subtask (s1) under way. */
	r->plan.n_colours = 1;
	snprintf(r->plan.colours[0].name, sizeof(r->plan.colours[0].name), "c1");
	x->sub.id = 1;
	x->sub.type = PLAN_MIX;
	x->sub.colour = 0;
	x->sub.tolerance_de00 = r->m.tolerances.mix_de00;
	r->plan.subtasks = &x->sub;
	r->plan.n_subtasks = 1;
	run_state_init(&r->st);
	CHECK(run_state_resize(&r->st, 1, &err) == 0);
	r->st.n_colours = 1;
	run_wells_full(r);
	r->st.sub[0].status = RUN_SUB_RUNNING;
	snprintf(r->st.colours[0].cell, sizeof(r->st.colours[0].cell), "m1");
}

static void mix_rig_close(struct mix_rig *x)
{
	struct run *r = x->r;

	gate_close(r->gate);
	arm_close(r->rig.arm);
	journal_close(&r->j);
	cJSON_Delete(r->saved_state); /* the state the last save journaled */
	run_state_free(&r->st);
	free(r);
}

/* A dispense set of three paints in cell m1, as state.json keeps it before the first drop. */
static void pending_three(struct run *r)
{
	struct run_pending *p = &r->st.pending;

	p->active = 1;
	snprintf(p->cell, sizeof(p->cell), "m1");
	p->n = 3;
	for (int i = 0; i < 3; i++) {
		p->paint[i] = i;
		p->units[i] = 2 + i;
		p->action_id[i] = RUN_ACTION_ID_BASE + i;
		p->applied_units[i] = p->units[i];
	}
	r->st.next_action_id = RUN_ACTION_ID_BASE + 3;
}

/* The gate's decision to allow action id in subtask s1, as the journal keeps it (whether it ran, unknown). */
static void journal_allowed(struct run *r, long id)
{
	cJSON *d = cJSON_CreateObject(), *a = cJSON_AddObjectToObject(d, "action"),
	      *dec = cJSON_AddObjectToObject(d, "decision");
	bl_err err = { 0 };

	cJSON_AddNumberToObject(a, "id", (double)id);
	cJSON_AddStringToObject(dec, "decision", "allow");
	journal_set_subtask(&r->j, "s1");
	CHECK_MSG(journal_event_from(&r->j, "gate", "decision", d, NULL, &err) == 0, "%s", err.msg);
}

TEST(a_cut_dispense_set_sends_only_what_never_reached_the_gate)
{
	struct mix_rig x;
	bl_err err = { 0 };
	char jpath[RUN_PATH_MAX];
	struct run *r;

	mix_rig_open(&x, "cut-set");
	r = x.r;
	pending_three(r);
	r->st.pending.done[0] = 1;                    /* sent and counted before the crash */
	journal_allowed(r, RUN_ACTION_ID_BASE + 1);   /* allowed: it may have run */
	CHECK_MSG(run_mix_finish_pending(r, &err) == 0, "%s", err.msg);
	/* The arm saw one command: the third paint's dispense, nothing twice. */
	CHECK_MSG(x.rec.n_execute == 1, "%d commands", x.rec.n_execute);
	CHECK(x.rec.last_kind == ARM_DISPENSE);
	CHECK(!r->st.pending.active);
	for (int i = 0; i < 3; i++)
		CHECK(r->st.pending.done[i]);
	snprintf(jpath, sizeof(jpath), "%s/journal.jsonl", r->dir);
	CHECK(lines_with(jpath, "\"dispense_not_repeated\"") == 1);
	CHECK(lines_with(jpath, "\"dispense_resumed\"") == 1);
	/*
	 * Only what was dispensed now is paint the colour used; the cell holds what
	 * may have run too (3 units), so nothing later overfills it.
	 */
	CHECK_NEAR(r->st.colours[0].dispensed_ml, 4 * r->m.mixing.dispense_unit_ml, 1e-9);
	CHECK_NEAR(r->st.colours[0].cell_ml, 7 * r->m.mixing.dispense_unit_ml, 1e-9);
	mix_rig_close(&x);
}

TEST(no_dispense_set_under_way_moves_nothing)
{
	struct mix_rig x;
	bl_err err = { 0 };

	mix_rig_open(&x, "no-set");
	CHECK(run_mix_finish_pending(x.r, &err) == 0);
	CHECK(x.rec.n_execute == 0);
	mix_rig_close(&x);
}

TEST(a_set_outside_a_mix_subtask_is_refused)
{
	struct mix_rig x;
	bl_err err = { 0 };

	mix_rig_open(&x, "outside");
	pending_three(x.r);
	x.sub.type = PLAN_CHECKPOINT;
	x.sub.colour = -1;
	CHECK(run_mix_finish_pending(x.r, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "outside a mix subtask");
	CHECK(x.rec.n_execute == 0);
	x.sub.type = PLAN_MIX;
	mix_rig_close(&x);
}

/*
 * A colour no mix of the palette reaches is given up before anything is
 * dispensed: even with --accept-nearest it is not accepted (there is nothing
 * measured to accept), it waits for the operator, and the arm never moved.
 */
TEST(a_mix_given_up_before_anything_was_dispensed_is_never_accepted)
{
	struct mix_rig x;
	bl_err err = { 0 };
	char jpath[RUN_PATH_MAX];
	struct run *r;

	mix_rig_open(&x, "nothing-mixed");
	r = x.r;
	x.sub.mix.lab = (color_lab){ 50.0, 90.0, -90.0 };
	x.sub.volume_ml = 2.0;
	r->st.accept_nearest = 1;
	r->m.unattended.accept_within_de00 = 5.0;
	r->st.colours[0].measured_de00 = 0.0; /* no measurement yet: not a measurement of 0 */
	CHECK_MSG(run_kind_of(PLAN_MIX)->run(r, &x.sub, &err) == 0, "%s", err.msg);
	CHECK(!r->st.colours[0].accepted);
	CHECK(r->st.colours[0].escalated);
	CHECK_MSG(r->st.sub[0].status == RUN_SUB_DEFERRED, "status %d", (int)r->st.sub[0].status);
	CHECK_STR_CONTAINS(r->st.sub[0].note, "nothing was mixed to accept");
	CHECK_MSG(x.rec.n_execute == 0, "%d commands", x.rec.n_execute);
	snprintf(jpath, sizeof(jpath), "%s/journal.jsonl", r->dir);
	CHECK(lines_with(jpath, "\"mix_escalated\"") == 1);
	CHECK(lines_with(jpath, "\"mix_accepted_nearest\"") == 0);
	CHECK(lines_with(jpath, "\"mix_accepted_within\"") == 0);
	mix_rig_close(&x);
}

TEST(every_kind_has_its_handlers)
{
	/* The table the core loop dispatches through: a kind without a row would run as nothing. */
	for (int t = 0; t < PLAN_SUBTASK_COUNT; t++) {
		const struct run_kind *k = run_kind_of((enum plan_subtask_type)t);

		CHECK_MSG(k && k->run && k->expected && k->what, "kind %s", plan_subtask_names[t]);
	}
	CHECK(run_kind_of(PLAN_SUBTASK_COUNT) == NULL);
	CHECK(run_kind_of(PLAN_PAINT)->paints && !run_kind_of(PLAN_MIX)->paints &&
	      !run_kind_of(PLAN_CHECKPOINT)->paints);
}

TEST_MAIN(T(a_cut_dispense_set_sends_only_what_never_reached_the_gate), T(no_dispense_set_under_way_moves_nothing),
	  T(a_set_outside_a_mix_subtask_is_refused), T(a_mix_given_up_before_anything_was_dispensed_is_never_accepted),
	  T(every_kind_has_its_handlers))

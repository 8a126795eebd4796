/* test_brakes.c: each brake fires under the condition it guards, and cost is priced by category. */
#include "engine/brakes.h"
#include "test.h"

static struct machine_brakes lim(void)
{
	struct machine_brakes l = { 0 };

	l.attempts_per_subtask = 4;
	l.stuck_repeats = 3;
	l.no_progress_checkpoints = 2;
	l.comm_errors = 3;
	l.wall_time_s = 100;
	l.arm_time_s = 50;
	l.cost_max = 10;
	return l;
}

TEST(attempts_brake_after_the_limit)
{
	struct machine_brakes l = lim();
	struct run_brakes b;

	run_brakes_init(&b);
	run_brakes_subtask_start(&b);
	CHECK(run_brakes_failure(&b, &l, "dE 3.1", "dE 3.1") == RUN_BRAKE_NONE);
	CHECK(run_brakes_failure(&b, &l, "dE 2.7", "dE 2.7") == RUN_BRAKE_NONE);
	CHECK(run_brakes_failure(&b, &l, "dE 2.4", "dE 2.4") == RUN_BRAKE_NONE);
	CHECK(run_brakes_failure(&b, &l, "dE 2.2", "dE 2.2") == RUN_BRAKE_ATTEMPTS);
	CHECK_STR_CONTAINS(b.reason, "all 4 attempts");
	/* A new subtask starts with fresh attempts. */
	run_brakes_subtask_start(&b);
	CHECK(run_brakes_failure(&b, &l, "dE 5", "dE 5") == RUN_BRAKE_NONE);
}

TEST(same_failure_three_times_is_stuck)
{
	struct machine_brakes l = lim();
	struct run_brakes b;

	run_brakes_init(&b);
	CHECK(run_brakes_failure(&b, &l, "arm timeout", "arm timeout") == RUN_BRAKE_NONE);
	run_brakes_subtask_start(&b);
	CHECK(run_brakes_failure(&b, &l, "arm timeout", "arm timeout") == RUN_BRAKE_NONE);
	run_brakes_subtask_start(&b);
	CHECK(run_brakes_failure(&b, &l, "arm timeout", "arm timeout") == RUN_BRAKE_STUCK);
	CHECK_STR_CONTAINS(b.reason, "same failure 3 times");
	/* A success in between breaks the streak. */
	run_brakes_init(&b);
	run_brakes_failure(&b, &l, "x", "x");
	run_brakes_failure(&b, &l, "x", "x");
	run_brakes_success(&b);
	run_brakes_subtask_start(&b);
	CHECK(run_brakes_failure(&b, &l, "x", "x") == RUN_BRAKE_NONE);
}

TEST(no_progress_is_wandering)
{
	struct machine_brakes l = lim();
	struct run_brakes b;

	run_brakes_init(&b);
	/* observed, predicted: the plan expects each checkpoint to gain a unit */
	CHECK(run_brakes_checkpoint(&b, &l, 12.0, 11.0, 0.1) == RUN_BRAKE_NONE);
	CHECK(run_brakes_checkpoint(&b, &l, 9.0, 10.0, 0.1) == RUN_BRAKE_NONE);
	CHECK(run_brakes_checkpoint(&b, &l, 8.95, 9.0, 0.1) == RUN_BRAKE_NONE);
	CHECK(run_brakes_checkpoint(&b, &l, 9.5, 8.0, 0.1) == RUN_BRAKE_WANDERING);
	CHECK_STR_CONTAINS(b.reason, "wandering");
	/* Checkpoints after a few strokes (a predicted gain under 2 x 0.1) count neither way. */
	run_brakes_init(&b);
	CHECK(run_brakes_checkpoint(&b, &l, 9.0, 9.0, 0.1) == RUN_BRAKE_NONE);
	for (int i = 0; i < 5; i++)
		CHECK(run_brakes_checkpoint(&b, &l, 9.0, 8.9 - 0.01 * i, 0.1) == RUN_BRAKE_NONE);
	CHECK(b.checkpoints_no_progress == 0);
	/* A correction round sets where the next expected gain is measured from. */
	run_brakes_round(&b, 9.0);
	CHECK(run_brakes_checkpoint(&b, &l, 9.0, 8.0, 0.1) == RUN_BRAKE_NONE);
	CHECK(b.checkpoints_no_progress == 1);
}

TEST(comm_errors_open_the_breaker)
{
	struct machine_brakes l = lim();
	struct run_brakes b;

	run_brakes_init(&b);
	CHECK(run_brakes_comm(&b, &l, 0, "crc") == RUN_BRAKE_NONE);
	CHECK(run_brakes_comm(&b, &l, 0, "crc") == RUN_BRAKE_NONE);
	CHECK(run_brakes_comm(&b, &l, 1, "") == RUN_BRAKE_NONE);
	CHECK(run_brakes_comm(&b, &l, 0, "crc") == RUN_BRAKE_NONE);
	CHECK(run_brakes_comm(&b, &l, 0, "crc") == RUN_BRAKE_NONE);
	CHECK(run_brakes_comm(&b, &l, 0, "camera timeout") == RUN_BRAKE_COMM);
	CHECK_STR_CONTAINS(b.reason, "camera timeout");
}

TEST(budgets_and_cost)
{
	struct machine m;
	struct run_brakes b;
	struct run_cost c = { 0 };

	memset(&m, 0, sizeof(m));
	m.brakes = lim();
	m.costs.arm_per_hour = 36.0;
	m.costs.per_verification = 0.5;
	m.costs.per_planner_call = 1.0;
	m.costs.paint_per_ml = 2.0;
	snprintf(m.costs.currency, sizeof(m.costs.currency), "EUR");
	run_brakes_init(&b);
	c.arm_s = 100; /* 1 EUR */
	c.verifications = 4; /* 2 EUR */
	c.planner_calls = 1; /* 1 EUR */
	c.paint_ml = 1.5; /* 3 EUR */
	CHECK_NEAR(run_cost_total(&c, &m.costs), 7.0, 1e-12);
	CHECK(run_brakes_budgets(&b, &m, &c, 10) == RUN_BRAKE_ARM_TIME);
	c.arm_s = 10;
	CHECK(run_brakes_budgets(&b, &m, &c, 101) == RUN_BRAKE_WALL_TIME);
	c.paint_ml = 5;
	CHECK(run_brakes_budgets(&b, &m, &c, 10) == RUN_BRAKE_COST);
	CHECK_STR_CONTAINS(b.reason, "cost budget");
	c.paint_ml = 0;
	CHECK(run_brakes_budgets(&b, &m, &c, 10) == RUN_BRAKE_NONE);
}

TEST(state_round_trips_through_json)
{
	struct machine_costs r = { "EUR", 1, 2, 3, 4, 3, 5 };
	struct run_cost c = { .arm_s = 12.5, .verifications = 3, .planner_calls = 2, .planner_s = 1.25,
			      .paint_ml = 0.75, .reviewer_calls = 4, .reviewer_s = 0.5 }, c2;
	struct run_brakes b, b2;
	struct machine_brakes l = lim();
	bl_err err = { 0 };
	cJSON *j;

	run_brakes_init(&b);
	run_brakes_failure(&b, &l, "dE 4.2", "dE 4.2");
	run_brakes_checkpoint(&b, &l, 7.5, 7.0, 0.1);
	j = run_brakes_json(&b);
	CHECK(run_brakes_from_json(j, &b2, &err) == 0);
	CHECK(memcmp(&b, &b2, sizeof(b)) == 0);
	cJSON_Delete(j);
	j = run_cost_json(&c, &r);
	CHECK(run_cost_from_json(j, &c2, &err) == 0);
	CHECK(c2.arm_s == c.arm_s && c2.verifications == 3 && c2.planner_calls == 2 &&
	      c2.planner_s == 1.25 && c2.paint_ml == 0.75 && c2.reviewer_calls == 4 && c2.reviewer_s == 0.5);
	/* An external reviewer's calls are priced at reviewer.price_per_call. */
	CHECK_NEAR(run_cost_total(&c, &r), 12.5 / 3600 + 3 * 2 + 2 * 3 + 0.75 * 4 + 4 * 5, 1e-9);
	cJSON_Delete(j);
}

/*
 * A version 1 state.json written before the planner's wall time and external
 * calls were counted: refused as it is, read as none spent once migrated.
 */
TEST(cost_without_planner_time_migrates_to_zero)
{
	struct machine_costs r = { "EUR", 1, 2, 3, 4, 3, 5 };
	struct run_cost c = { .arm_s = 1, .planner_calls = 1, .planner_s = 2.5, .planner_ext_calls = 1 }, c2;
	bl_err err = { 0 };
	cJSON *j = run_cost_json(&c, &r);

	cJSON_DeleteItemFromObject(j, "planner_s");
	cJSON_DeleteItemFromObject(j, "planner_external_calls");
	CHECK(run_cost_from_json(j, &c2, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "planner_s: missing");
	CHECK(run_cost_v1_to_v2(j, &err) == 0);
	memset(&c2, 0xff, sizeof(c2));
	CHECK_MSG(run_cost_from_json(j, &c2, &err) == 0, "%s", err.msg);
	CHECK(c2.planner_s == 0.0 && c2.planner_ext_calls == 0 && c2.planner_calls == 1);
	cJSON_Delete(j);
}

/* A version 2 state.json, before an external reviewer was counted: refused as it is, none made once migrated. */
TEST(cost_without_reviewer_calls_migrates_to_zero)
{
	struct machine_costs r = { "EUR", 1, 2, 3, 4, 3, 5 };
	struct run_cost c = { .arm_s = 1, .reviewer_calls = 2, .reviewer_s = 1.5 }, c2;
	bl_err err = { 0 };
	cJSON *j = run_cost_json(&c, &r);

	cJSON_DeleteItemFromObject(j, "reviewer_calls");
	cJSON_DeleteItemFromObject(j, "reviewer_s");
	CHECK(run_cost_from_json(j, &c2, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "reviewer_calls: missing");
	CHECK(run_cost_v2_to_v3(j, &err) == 0);
	memset(&c2, 0xff, sizeof(c2));
	CHECK_MSG(run_cost_from_json(j, &c2, &err) == 0, "%s", err.msg);
	CHECK(c2.reviewer_calls == 0 && c2.reviewer_s == 0.0 && c2.arm_s == 1);
	cJSON_Delete(j);
}

TEST_MAIN(T(attempts_brake_after_the_limit), T(same_failure_three_times_is_stuck),
	  T(no_progress_is_wandering), T(comm_errors_open_the_breaker), T(budgets_and_cost),
	  T(state_round_trips_through_json), T(cost_without_planner_time_migrates_to_zero),
	  T(cost_without_reviewer_calls_migrates_to_zero))

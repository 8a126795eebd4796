/* brakes.c: attempts, stuck and wandering detection, budgets, the circuit breaker, and cost accounting. */
#include "engine/brakes.h"

#include <stdio.h>
#include <string.h>

#include "base/json.h"

const char *const run_brake_names[] = { "none", "attempts", "stuck", "wandering", "wall_time",
					"arm_time", "cost", "comm_errors", "review", NULL };

double run_cost_total(const struct run_cost *c, const struct machine_costs *r)
{
	return c->arm_s / 3600.0 * r->arm_per_hour + (double)c->verifications * r->per_verification +
	       (double)(c->planner_calls - c->planner_ext_calls) * r->per_planner_call +
	       (double)c->planner_ext_calls * r->per_external_call + c->paint_ml * r->paint_per_ml +
	       (double)c->reviewer_calls * r->per_review_call;
}

cJSON *run_cost_json(const struct run_cost *c, const struct machine_costs *r)
{
	cJSON *o = cJSON_CreateObject(), *p;

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "arm_s", c->arm_s);
	cJSON_AddNumberToObject(o, "verifications", (double)c->verifications);
	cJSON_AddNumberToObject(o, "planner_calls", (double)c->planner_calls);
	cJSON_AddNumberToObject(o, "planner_s", c->planner_s);
	cJSON_AddNumberToObject(o, "planner_external_calls", (double)c->planner_ext_calls);
	cJSON_AddNumberToObject(o, "paint_ml", c->paint_ml);
	cJSON_AddNumberToObject(o, "reviewer_calls", (double)c->reviewer_calls);
	cJSON_AddNumberToObject(o, "reviewer_s", c->reviewer_s);
	p = cJSON_AddObjectToObject(o, "priced");
	cJSON_AddNumberToObject(p, "arm", c->arm_s / 3600.0 * r->arm_per_hour);
	cJSON_AddNumberToObject(p, "verifications", (double)c->verifications * r->per_verification);
	cJSON_AddNumberToObject(p, "planner", (double)(c->planner_calls - c->planner_ext_calls) * r->per_planner_call +
					      (double)c->planner_ext_calls * r->per_external_call);
	cJSON_AddNumberToObject(p, "paint", c->paint_ml * r->paint_per_ml);
	cJSON_AddNumberToObject(p, "reviewer", (double)c->reviewer_calls * r->per_review_call);
	cJSON_AddNumberToObject(p, "total", run_cost_total(c, r));
	cJSON_AddStringToObject(o, "currency", r->currency);
	return o;
}

int run_cost_v1_to_v2(cJSON *cost, bl_err *err)
{
	int rc = json_migrate_add(cost, "planner_s", cJSON_CreateNumber(0), err);

	return rc ? rc : json_migrate_add(cost, "planner_external_calls", cJSON_CreateNumber(0), err);
}

int run_cost_v2_to_v3(cJSON *cost, bl_err *err)
{
	int rc = json_migrate_add(cost, "reviewer_calls", cJSON_CreateNumber(0), err);

	return rc ? rc : json_migrate_add(cost, "reviewer_s", cJSON_CreateNumber(0), err);
}

int run_cost_from_json(const cJSON *node, struct run_cost *c, bl_err *err)
{
	json_obj o;
	double v;

	if (json_obj_open(node, "state.json", "cost", &o, err))
		return err->code;
	if (json_num(&o, "arm_s", JSON_REQUIRED, 0, 1e9, &c->arm_s, err) ||
	    json_num(&o, "paint_ml", JSON_REQUIRED, 0, 1e9, &c->paint_ml, err))
		return err->code;
	if (json_num(&o, "verifications", JSON_REQUIRED, 0, 1e12, &v, err))
		return err->code;
	c->verifications = (long)v;
	if (json_num(&o, "planner_calls", JSON_REQUIRED, 0, 1e12, &v, err))
		return err->code;
	c->planner_calls = (long)v;
	if (json_num(&o, "planner_s", JSON_REQUIRED, 0, 1e9, &c->planner_s, err) ||
	    json_num(&o, "planner_external_calls", JSON_REQUIRED, 0, (double)c->planner_calls, &v, err))
		return err->code;
	c->planner_ext_calls = (long)v;
	if (json_num(&o, "reviewer_calls", JSON_REQUIRED, 0, 1e12, &v, err) ||
	    json_num(&o, "reviewer_s", JSON_REQUIRED, 0, 1e9, &c->reviewer_s, err))
		return err->code;
	c->reviewer_calls = (long)v;
	/* The priced figures and currency are derived: read past them. */
	json_take(&o, "priced");
	json_take(&o, "currency");
	return json_end(&o, err);
}

void run_brakes_init(struct run_brakes *b)
{
	memset(b, 0, sizeof(*b));
	b->best_canvas_de00 = -1.0;
	b->last_predicted_de00 = -1.0;
	b->round_best_de00 = -1.0;
}

void run_brakes_subtask_start(struct run_brakes *b)
{
	b->attempts = 0;
}

enum run_brake run_brakes_failure(struct run_brakes *b, const struct machine_brakes *lim,
				  const char *key, const char *reason)
{
	b->attempts++;
	if (strcmp(b->last_failure, key) == 0) {
		b->same_failure++;
	} else {
		snprintf(b->last_failure, sizeof(b->last_failure), "%s", key);
		b->same_failure = 1;
	}
	if (b->same_failure >= lim->stuck_repeats) {
		snprintf(b->reason, sizeof(b->reason), "stuck: the same failure %d times in a row: %s",
			 b->same_failure, reason);
		return RUN_BRAKE_STUCK;
	}
	if (b->attempts >= lim->attempts_per_subtask) {
		snprintf(b->reason, sizeof(b->reason), "a subtask used all %d attempts; last failure: %s",
			 b->attempts, reason);
		return RUN_BRAKE_ATTEMPTS;
	}
	return RUN_BRAKE_NONE;
}

void run_brakes_success(struct run_brakes *b)
{
	b->same_failure = 0;
	b->last_failure[0] = '\0';
}

void run_brakes_round(struct run_brakes *b, double observed_de00)
{
	b->last_predicted_de00 = observed_de00;
	b->round_best_de00 = b->best_canvas_de00;
}

enum run_brake run_brakes_checkpoint(struct run_brakes *b, const struct machine_brakes *lim,
				     double mean_de00, double predicted_de00, double min_gain)
{
	double expected_gain = b->last_predicted_de00 >= 0.0 ? b->last_predicted_de00 - predicted_de00
							      : 1e9;

	b->last_predicted_de00 = predicted_de00;
	if (b->best_canvas_de00 >= 0.0 && expected_gain < 2.0 * min_gain) {
		/* Too little painted since the last look to expect a measurable change. */
		if (mean_de00 < b->best_canvas_de00)
			b->best_canvas_de00 = mean_de00;
		return RUN_BRAKE_NONE;
	}
	if (b->best_canvas_de00 < 0.0 || mean_de00 < b->best_canvas_de00 - min_gain) {
		b->best_canvas_de00 = mean_de00;
		b->checkpoints_no_progress = 0;
		return RUN_BRAKE_NONE;
	}
	b->checkpoints_no_progress++;
	if (b->checkpoints_no_progress >= lim->no_progress_checkpoints) {
		snprintf(b->reason, sizeof(b->reason),
			 "wandering: the canvas error has not improved over %d checkpoints (best mean %.2f, now %.2f CIEDE2000)",
			 b->checkpoints_no_progress, b->best_canvas_de00, mean_de00);
		return RUN_BRAKE_WANDERING;
	}
	return RUN_BRAKE_NONE;
}

enum run_brake run_brakes_comm(struct run_brakes *b, const struct machine_brakes *lim, int ok,
			       const char *what)
{
	if (ok) {
		b->comm_errors = 0;
		return RUN_BRAKE_NONE;
	}
	b->comm_errors++;
	if (b->comm_errors >= lim->comm_errors) {
		snprintf(b->reason, sizeof(b->reason),
			 "circuit breaker: %d communication or camera errors in a row; last: %s",
			 b->comm_errors, what);
		return RUN_BRAKE_COMM;
	}
	return RUN_BRAKE_NONE;
}

enum run_brake run_brakes_budgets(struct run_brakes *b, const struct machine *m,
				  const struct run_cost *c, double wall_s)
{
	const struct machine_brakes *lim = &m->brakes;
	double cost = run_cost_total(c, &m->costs);

	if (wall_s > lim->wall_time_s) {
		snprintf(b->reason, sizeof(b->reason), "wall-time budget of %.0f s spent (%.0f s)",
			 lim->wall_time_s, wall_s);
		return RUN_BRAKE_WALL_TIME;
	}
	if (c->arm_s > lim->arm_time_s) {
		snprintf(b->reason, sizeof(b->reason), "arm-time budget of %.0f s spent (%.0f s)",
			 lim->arm_time_s, c->arm_s);
		return RUN_BRAKE_ARM_TIME;
	}
	if (cost > lim->cost_max) {
		snprintf(b->reason, sizeof(b->reason), "cost budget of %.2f %s spent (%.2f %s)",
			 lim->cost_max, m->costs.currency, cost, m->costs.currency);
		return RUN_BRAKE_COST;
	}
	return RUN_BRAKE_NONE;
}

cJSON *run_brakes_json(const struct run_brakes *b)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "attempts", b->attempts);
	cJSON_AddStringToObject(o, "last_failure", b->last_failure);
	cJSON_AddNumberToObject(o, "same_failure", b->same_failure);
	cJSON_AddNumberToObject(o, "best_canvas_de00", b->best_canvas_de00);
	cJSON_AddNumberToObject(o, "checkpoints_no_progress", b->checkpoints_no_progress);
	cJSON_AddNumberToObject(o, "last_predicted_de00", b->last_predicted_de00);
	cJSON_AddNumberToObject(o, "round_best_de00", b->round_best_de00);
	cJSON_AddNumberToObject(o, "comm_errors", b->comm_errors);
	cJSON_AddStringToObject(o, "reason", b->reason);
	return o;
}

int run_brakes_from_json(const cJSON *node, struct run_brakes *b, bl_err *err)
{
	json_obj o;

	run_brakes_init(b);
	if (json_obj_open(node, "state.json", "brakes", &o, err) ||
	    json_i32(&o, "attempts", JSON_REQUIRED, 0, 1000000, &b->attempts, err) ||
	    json_str(&o, "last_failure", JSON_REQUIRED, b->last_failure, sizeof(b->last_failure),
		     err) ||
	    json_i32(&o, "same_failure", JSON_REQUIRED, 0, 1000000, &b->same_failure, err) ||
	    json_num(&o, "best_canvas_de00", JSON_REQUIRED, -1.0, 1000.0, &b->best_canvas_de00,
		     err) ||
	    json_i32(&o, "checkpoints_no_progress", JSON_REQUIRED, 0, 1000000,
		     &b->checkpoints_no_progress, err) ||
	    json_num(&o, "last_predicted_de00", JSON_REQUIRED, -1.0, 1000.0, &b->last_predicted_de00,
		     err) ||
	    json_num(&o, "round_best_de00", JSON_REQUIRED, -1.0, 1000.0, &b->round_best_de00, err) ||
	    json_i32(&o, "comm_errors", JSON_REQUIRED, 0, 1000000, &b->comm_errors, err) ||
	    json_str(&o, "reason", JSON_REQUIRED, b->reason, sizeof(b->reason), err))
		return err->code;
	return json_end(&o, err);
}

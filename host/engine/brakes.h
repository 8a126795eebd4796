/* brakes.h: what stops a run that is running away, stuck or wandering, and what it has cost so far. */
#ifndef BL_ENGINE_BRAKES_H
#define BL_ENGINE_BRAKES_H

#include <cJSON.h>

#include "config/machine.h"

/* Spending by category, as the machine file prices it. */
struct run_cost {
	double arm_s;        /* arm motion time, s */
	long verifications;  /* camera verifications */
	long planner_calls;  /* calls to the planner (plans and corrections) */
	double planner_s;    /* the planner's wall time over those calls, s (real time, also in the simulator) */
	long planner_ext_calls; /* of planner_calls, those to an external planner (priced per_external_call) */
	double paint_ml;     /* paint dispensed or loaded, ml */
	long reviewer_calls; /* calls to an external reviewer (priced per_review_call) */
	double reviewer_s;   /* its wall time over those calls, s */
};

/* The cost in the machine's currency. */
double run_cost_total(const struct run_cost *c, const struct machine_costs *rates);

/* {"arm_s", "verifications", "planner_calls", "planner_s", "paint_ml", "priced": {"arm", "verifications", "planner", "paint", "total"}, "currency"} */
cJSON *run_cost_json(const struct run_cost *c, const struct machine_costs *rates);

/* A version 1 state's cost migrated to version 2: no planner time or external calls where it names none. */
int run_cost_v1_to_v2(cJSON *cost, bl_err *err);
/* A version 2 state's cost migrated to version 3: no reviewer calls. */
int run_cost_v2_to_v3(cJSON *cost, bl_err *err);
/* Reads what run_cost_json wrote (for resume); a missing key is an error. */
int run_cost_from_json(const cJSON *o, struct run_cost *c, bl_err *err);

enum run_brake {
	RUN_BRAKE_NONE,
	RUN_BRAKE_ATTEMPTS,  /* a subtask used all its attempts */
	RUN_BRAKE_STUCK,     /* the same failure several times in a row */
	RUN_BRAKE_WANDERING, /* the canvas stopped improving */
	RUN_BRAKE_WALL_TIME,
	RUN_BRAKE_ARM_TIME,
	RUN_BRAKE_COST,
	RUN_BRAKE_COMM,      /* consecutive communication or camera errors: circuit breaker */
	RUN_BRAKE_REVIEW,    /* the second judge disagreed (review.on_disagreement brake) */
};

extern const char *const run_brake_names[];

/* Counters the brakes watch; all of it is saved in state.json so a resumed run keeps its brakes. */
struct run_brakes {
	int attempts;               /* failed attempts of the current subtask */
	char last_failure[128];     /* the reason of the last failure */
	int same_failure;           /* how many times in a row it was that reason */
	double best_canvas_de00;    /* best mean canvas CIEDE2000 at a checkpoint (<0: none yet) */
	int checkpoints_no_progress;
	double last_predicted_de00; /* the plan's predicted mean at the last checkpoint (<0: none) */
	double round_best_de00;     /* best_canvas_de00 when the correction round under way began */
	int comm_errors;            /* consecutive */
	char reason[256];           /* why the last brake fired, for STATUS.md */
};

void run_brakes_init(struct run_brakes *b);

/* A subtask starts: its attempt count starts again. */
void run_brakes_subtask_start(struct run_brakes *b);

/*
 * A failed attempt: ATTEMPTS when the subtask has used its attempts, STUCK
 * when the same failure (by key) repeats; reason says what happened, for
 * the brake's message.
 */
enum run_brake run_brakes_failure(struct run_brakes *b, const struct machine_brakes *lim,
				  const char *key, const char *reason);

/* A verified attempt clears the failure streak. */
void run_brakes_success(struct run_brakes *b);

/*
 * A checkpoint's observed mean canvas CIEDE2000 and the plan's prediction for
 * it: WANDERING after N checkpoints without improving on the best by
 * min_gain. A checkpoint the plan expected to gain less than 2 min_gain over
 * the last (a few strokes) counts neither way.
 */
enum run_brake run_brakes_checkpoint(struct run_brakes *b, const struct machine_brakes *lim,
				     double mean_de00, double predicted_de00, double min_gain);

/* A correction round starts from an observed mean: the next checkpoint's expected gain is against it. */
void run_brakes_round(struct run_brakes *b, double observed_de00);

/* A communication or camera error (ok = 0) or a success (ok = 1): COMM when the breaker opens. */
enum run_brake run_brakes_comm(struct run_brakes *b, const struct machine_brakes *lim, int ok,
			       const char *what);

/* Budgets: wall time and arm time in s, cost in currency. */
enum run_brake run_brakes_budgets(struct run_brakes *b, const struct machine *m,
				  const struct run_cost *c, double wall_s);

cJSON *run_brakes_json(const struct run_brakes *b);
int run_brakes_from_json(const cJSON *o, struct run_brakes *b, bl_err *err);

#endif

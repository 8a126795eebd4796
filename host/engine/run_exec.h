/* run_exec.h: the run's executor, the engine's one way to the gate and the arm: actions, homing, tolerances, the poll between them. */
#ifndef BL_ENGINE_RUN_EXEC_H
#define BL_ENGINE_RUN_EXEC_H

#include "arm/action.h"
#include "base/json.h"
#include "base/err.h"
#include "safety/gate.h"

struct run;

/*
 * Executes one action through the gate with retries for communication
 * errors (the breaker counts them), the cost and heartbeat kept; the gate
 * journals its decision and what was executed. Returns 0, BL_EDEFERRED,
 * BL_EDENIED, BL_EPAUSED, BL_ESAFETY, BL_EBRAKE (breaker).
 */
int run_act(struct run *r, const struct arm_action *a, struct gate_decision *d, bl_err *err);
/*
 * Journals actions the engine made at run time as one typed step (event
 * dispense_planned for a mix's dispenses, actions_planned for the rest: a
 * mix's stir, a retry's strokes, a batch whose dips go to its colour's new
 * cell), before the first of them reaches the gate, so `gate check JOURNAL`
 * vets them as it vets a plan. d: more of the event's data (taken), or NULL.
 */
int run_actions_planned(struct run *r, const char *event, const char *step,
			const struct arm_action *a, size_t n, cJSON *d, bl_err *err);
/* Homes the arm through the gate, communication errors retried and counted like run_act's. */
int run_home(struct run *r, bl_err *err);
/* The gate's word on a subtask's verification threshold against the machine's bar ("mix", "paint"). */
int run_tolerance(struct run *r, const char *bar, double tol_de00, struct gate_decision *d, bl_err *err);
/* Checks signals and faults (gate_stop_poll) and the budgets; touches the heartbeat. */
int run_poll(struct run *r, bl_err *err);
/*
 * The run's state and reason after a signal held the arm, whichever part of
 * the run saw it (the poll between actions, the gate or the backend during
 * one): one reason, which `regress` and people read.
 */
void run_paused_by_signal(struct run *r);
/* Whether the journal shows a decision to allow action id in subtask sub (it may have run). */
int run_journal_allowed(struct run *r, const char *sub, long action_id);

#endif

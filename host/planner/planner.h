/* planner.h: the planner interface: the engine asks with an observation, gets typed subtasks with end conditions back, and admits nothing it has not checked itself. */
#ifndef BL_PLANNER_PLANNER_H
#define BL_PLANNER_PLANNER_H

#include "base/err.h"
#include "config/machine.h"
#include "plan/plan.h"
#include "safety/gate.h"

/*
 * A planner is anything that turns a request into a plan: the built-in one
 * (plan_make, plan_correct) or, behind the same operations, a process in a
 * sandbox whose answers are untrusted. Whatever it is, its answer passes
 * planner_admit before the engine keeps it, every action still passes the
 * gate when it runs, and every end condition is verified by the engine's
 * own observation against a threshold no looser than the machine's.
 */

enum planner_phase {
	PLANNER_PLAN,    /* the painting: target and the blank canvas in, the whole plan out */
	PLANNER_CORRECT, /* a correction round: the canvas as observed in, corrective subtasks out */
	PLANNER_PHASE_COUNT
};
extern const char *const planner_phase_names[]; /* "plan", "correct" */

/*
 * What an external planner is told beyond the request proper, gathered by the
 * engine: files the sandbox sees read-only at /in (in_dir's regular files),
 * and JSON the protocol carries as it is (docs/planner.md).
 */
struct planner_world {
	const char *in_dir;            /* host directory copied to /in: target.*, observed.png, observed.lab */
	const char *target_name;       /* its file name in in_dir ("target.png") */
	int has_observed;              /* observed.png and observed.lab are in in_dir */
	const cJSON *machine_view;     /* planner_machine_view: no limit values */
	const cJSON *palette;          /* the palette file */
	const cJSON *wells;            /* [{"well", "paint", "left_ml"}] */
	const cJSON *budgets;          /* {"calls_left", "cost_left", "currency"} */
	const cJSON *error_map;        /* correct: {"cols", "rows", "de00": [...]} (NULL: none) */
};

/*
 * What is left of the run when an external planner is asked: admission holds
 * its answer to it (over_budget). The built-in planner is sized by the
 * request's options and stopped by the brakes, and is asked with none.
 */
struct planner_budget {
	double arm_time_s;      /* arm motion time left, s (the arm-time brake less what the arm has moved) */
	const double *wells_ml; /* paint left in each of the machine's wells, ml; NULL: not held to it (--refill-ok) */
};

/* What the engine knows and the planner may be told: the observation and the budgets. */
struct planner_request {
	enum planner_phase phase;
	int round;                          /* 0: the painting; r: correction round r */
	const struct plan_inputs *in;       /* machine, colour solver, target (Lab) */
	const struct plan_options *opt;     /* budgets (max_strokes, colours) and the canvas as seen */
	const struct plan *painting;        /* correct: round 0's plan, whose colours a correction keeps */
	const struct plan_raster *observed; /* correct: the canvas as observed over the image rectangle */
	const struct planner_world *world;  /* for a planner in another process (NULL for the built-in) */
	const struct planner_budget *left;  /* what the run has left (NULL: opt->max_strokes alone) */
};

struct planner_denial;

/* One planner behind function pointers; ctx is the implementation's. */
struct planner_ops {
	const char *name;                   /* "builtin", "external" */
	/*
	 * Answers the request with a plan (out is zeroed first, freed by the
	 * caller). An answer that never came or is not one (late, too large,
	 * malformed, the process gone) is BL_EDENIED with why filled; claims
	 * (may be NULL) gets what the planner said of itself (usage, "verified"),
	 * which authorises nothing and is only journaled.
	 */
	int (*propose)(void *ctx, const struct planner_request *q, struct plan *out, cJSON **claims,
		       struct planner_denial *why, bl_err *err);
	/* Tells the planner the engine's decision (NULL: admitted) and ends the phase; may be NULL. */
	void (*told)(void *ctx, const struct planner_denial *why);
	void (*close)(void *ctx);           /* may be NULL */
};

struct planner {
	const struct planner_ops *ops;
	void *ctx;
};

/* The built-in planner: plan_make for the painting, plan_correct for a round. */
void planner_builtin(struct planner *out);
void planner_close(struct planner *p);

/* Why an answer was not admitted; a stable name each (planner_reason_names). */
enum planner_reason {
	PLANNER_R_OK,
	PLANNER_R_FAILED,        /* the planner could not answer (its own error, a sandbox that failed) */
	PLANNER_R_GONE,          /* it closed its end or exited before answering */
	PLANNER_R_LATE,          /* no whole answer within the deadline */
	PLANNER_R_TOO_LARGE,     /* an answer line longer than the size limit */
	PLANNER_R_MALFORMED,     /* not JSON, not an answer, or not the schema (the field named) */
	PLANNER_R_BUDGET,        /* the planner's budget (calls, cost) is spent: not asked */
	PLANNER_R_HEADER,        /* target, machine, canvas or grid not the ones asked about */
	PLANNER_R_TOO_MANY,      /* more subtasks, actions, cells or colours than a plan may hold */
	PLANNER_R_BAD_SUBTASK,   /* a subtask's colour, brush, recipe, region or ids make no sense */
	PLANNER_R_BAD_CELL,      /* an expected-result cell outside the grid or not a colour */
	PLANNER_R_TOLERANCE,     /* a verification threshold looser than the bar (or not a number) */
	PLANNER_R_ACTION_KIND,   /* an action kind that subtask type may not hold */
	PLANNER_R_ACTION,        /* the gate's check refuses an action (limits, floors, curves ...) */
	PLANNER_R_PHASE,         /* not the phase's kind of answer: a correction that is not one, or a painting that is */
	PLANNER_R_OVER_BUDGET,   /* more strokes than the phase's budget, more arm time or paint than the run has left */
	PLANNER_R_COUNT
};
extern const char *const planner_reason_names[];

/*
 * The admission decision. message is for the planner: it names the subtask,
 * the action and the field, never a limit; detail is for the operator and
 * the journal, with the figures.
 */
struct planner_denial {
	enum planner_reason reason;
	long subtask;                 /* index in the answer, -1 for the plan as a whole */
	long action;                  /* index in that subtask's actions, -1 when none */
	char field[GATE_FIELD_MAX];
	char message[GATE_MSG_MAX];
	char detail[GATE_MSG_MAX];
	int has_gate;                 /* reason PLANNER_R_ACTION or _TOLERANCE: the gate's decision */
	struct gate_decision gate;
};

/*
 * Admits answer p to request q, or refuses it with the first reason found
 * (why filled; returns BL_EDENIED). The checks are the engine's, whoever
 * planned: the header is the request's (target, machine, canvas, grid); ids,
 * colours, brushes, wells, cells and sizes are bounded and known to the
 * machine; every tolerance passes the bar (gate_check_tolerance); every
 * action is a kind its subtask may hold and passes the gate's pure check
 * from where the last one left the tool (hard limits, floors, keep-outs,
 * curve acceleration) and the unattended soft limits (speed, single move,
 * curve acceleration: a plan never plans what needs a person for its
 * motion); then plan_check. The answer is the phase's (a correction in
 * the correct phase, a painting otherwise), its strokes within
 * opt->max_strokes, every mix used by a paint batch of its colour before
 * the next mix of it, every paint batch with a stroke, and, when q->left is
 * given, its motion time within the arm time left and its recipes within
 * the paint each well has left. Returns 0 when admitted, another negative code
 * only when the check itself could not run (out of memory).
 */
int planner_admit(const struct planner_request *q, const struct plan *p,
		  struct planner_denial *why, bl_err *err);

/* The denial as JSON: {"reason", "subtask", "action", "field", "message"[, "detail", "gate"]} by view. */
cJSON *planner_denial_json(const struct planner_denial *why, enum gate_view view);

#endif

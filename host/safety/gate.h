/* gate.h: the admission gate: every arm action is checked against the machine file, journaled, and only then executed. */
#ifndef BL_SAFETY_GATE_H
#define BL_SAFETY_GATE_H

#include <stddef.h>

#include <cJSON.h>

#include "arm/action.h"
#include "arm/arm.h"
#include "base/clock.h"
#include "base/err.h"
#include "base/journal.h"
#include "config/machine.h"

/*
 * Every action from any planner is an untrusted request. The gate expands it
 * with arm_motion into the exact segments the tool would follow, classifies
 * that geometry itself (the planner's zone tags are claims, not facts) and
 * decides: allow, needs an operator, or deny. The decision is a structured
 * record with a reason code and the field it concerns; the planner sees a
 * message without the limit it was checked against, the operator (and the
 * journal) sees both.
 */

enum gate_verdict {
	GATE_ALLOW,
	GATE_OPERATOR, /* needs an operator (or a grant) */
	GATE_DENY,
};

enum gate_reason {
	GATE_R_OK,
	/* malformed input (deny) */
	GATE_R_NOT_JSON,        /* the file is not JSON at all */
	GATE_R_BAD_FILE,        /* JSON, but not an actions or plan file */
	GATE_R_UNKNOWN_KIND,    /* "type" names no action kind */
	GATE_R_UNKNOWN_FIELD,   /* a key the action kind does not have */
	GATE_R_MISSING_FIELD,
	GATE_R_DUPLICATE_FIELD,
	GATE_R_BAD_TYPE,        /* a string where a number belongs, a fraction for a count ... */
	GATE_R_NOT_FINITE,      /* NaN or infinity */
	GATE_R_OUT_OF_RANGE,    /* absurd magnitude, integer overflow */
	GATE_R_NEGATIVE_AMOUNT, /* negative units, depth or duration */
	GATE_R_ABSURD_SIZE,     /* too many items, too long a string */
	GATE_R_BAD_VALUE,       /* well-typed but meaningless (inverted bounds, one-point stroke) */
	GATE_R_MALFORMED,       /* any other parse failure */
	/* against the machine (deny) */
	GATE_R_BAD_POSITION,    /* the tool's current position is not finite */
	GATE_R_UNKNOWN_REFERENCE,/* a well, cell or brush the machine lacks */
	GATE_R_TOO_MANY_POINTS, /* more stroke points than limits.max_stroke_points */
	GATE_R_PAINT_AMOUNT,    /* more paint than a mixing cell holds */
	GATE_R_TOO_DEEP,        /* dips deeper than the station allows */
	GATE_R_SPEED_HARD,
	GATE_R_OUTSIDE_WORK_AREA,
	GATE_R_KEEP_OUT,
	GATE_R_BELOW_FLOOR,
	GATE_R_UNDECLARED_ZONE,
	GATE_R_OFF_CANVAS,      /* a painting segment leaves the canvas (less half the brush) */
	GATE_R_OUTSIDE_BOUNDS,  /* the path leaves the bounds the action declared */
	GATE_R_MOVE_HARD,       /* one straight segment longer than the hard limit */
	GATE_R_ACCEL_HARD,
	GATE_R_TOLERANCE,       /* a verification threshold looser than the machine allows */
	GATE_R_FAULT,           /* the arm reports a fault or e-stop: no motion */
	/* needs an operator */
	GATE_R_SPEED_SOFT,
	GATE_R_MOVE_SOFT,
	GATE_R_ACCEL_SOFT,
	GATE_R_OVERRIDE_LIMITS, /* the action asks for soft limits overridden */
	GATE_R_OPERATOR_KIND,   /* safety.operator_kinds lists the kind */
	GATE_R_HOMING,          /* safety.confirm_homing */
	GATE_R_FIRST_MOTION,    /* safety.confirm_first_motion: first motion after connecting */
	GATE_R_AFTER_FAULT,     /* first motion after a fault (always) */
	GATE_R_COUNT
};

/* Stable names ("speed_hard", ...) used in JSON, the corpus and docs/safety.md. */
extern const char *const gate_reason_names[];
extern const char *const gate_verdict_names[]; /* "allow", "needs_operator", "deny" */

/* The verdict a reason calls for on its own. */
enum gate_verdict gate_reason_verdict(enum gate_reason r);
/* Whether a time-limited grant may stand in for an operator on this reason. */
int gate_reason_grantable(enum gate_reason r);

#define GATE_MAX_REASONS 8
#define GATE_FIELD_MAX 64
#define GATE_MSG_MAX 288

struct gate_finding {
	enum gate_reason reason;
	char field[GATE_FIELD_MAX];     /* the action's key: "speed_mm_s", "points_mm[3]", "zones" */
	long segment;                   /* index into the expanded path, -1 when none */
	char message[GATE_MSG_MAX];     /* for the planner: names the field, never the limit */
	char detail[GATE_MSG_MAX];      /* for the operator: the value and the limit */
	int has_figures;
	double value, limit;            /* the operator's figures (same units as the field) */
};

struct gate_decision {
	enum gate_verdict verdict;
	long index;                     /* position in the batch or file; -1 for a whole file */
	long action_id;                 /* the action's "id", -1 when absent */
	int kind;                       /* enum arm_kind, -1 when unknown */
	int n_findings;                 /* findings beyond GATE_MAX_REASONS are counted, not kept */
	int n_dropped;
	struct gate_finding findings[GATE_MAX_REASONS];

	/* The path as the gate saw it (valid when has_path). */
	int has_path;
	arm_point from, to;             /* mm */
	size_t n_segments;
	double length_mm;               /* whole path */
	double longest_mm;              /* longest straight segment */
	double speed_mm_s;
	double peak_accel_mm_s2;        /* centripetal, at junctions taken at speed */
	unsigned zones_entered;         /* bit per enum arm_zone, from geometry */

	/* Set by gate_execute only (never part of a pure check). */
	char request_id[32];            /* an operator request was filed or answered */
	char grant_id[32];              /* a grant stood in for the operator */
	int executed;                   /* the backend ran the path */
};

/* The finding that decides the verdict (the first with the decision's verdict); NULL when allowed. */
const struct gate_finding *gate_decision_primary(const struct gate_decision *d);

/*
 * State that is not in the action: the first motion after connecting, or
 * after a fault, needs a person.
 */
struct gate_context {
	int first_motion;
	int after_fault;
};

/*
 * Checks action a, starting at tool position from, against machine m. The
 * expanded path is left in path (emptied first; may be NULL) so a caller
 * executes exactly what was checked. Always fills d; returns 0, or a
 * negative code only when the check itself could not run (out of memory).
 */
int gate_check(const struct machine *m, const arm_point *from, const struct arm_action *a,
	       const struct gate_context *ctx, struct arm_path *path, struct gate_decision *d,
	       bl_err *err);

/*
 * The decision on a homing cycle, which has no path to check (the position
 * is unknown until it is done): needs an operator when safety.confirm_homing
 * says so or after a fault.
 */
void gate_check_homing(const struct machine *m, const struct gate_context *ctx,
		       struct gate_decision *d);

/*
 * A deny decision for an action that did not parse: parse_err is what
 * arm_action_parse said, item the raw JSON (may be NULL), file the name the
 * parser was given. The reason code and field are taken from the failure.
 */
void gate_decide_malformed(const char *file, long index, const cJSON *item,
			   const bl_err *parse_err, struct gate_decision *d);

/* A deny decision for a whole file (not JSON, not an actions file). */
void gate_decide_file(enum gate_reason r, const char *message, struct gate_decision *d);

/*
 * The tolerance bar: a subtask states the CIEDE2000 threshold its result is
 * verified against; anything looser than the machine's tolerances (or not a
 * positive finite number) is denied. kind is "mix" or "paint".
 */
enum gate_verdict gate_check_tolerance(const struct machine *m, const char *kind,
				       double value_de00, struct gate_decision *d);

/* Views of a decision as JSON. Deterministic: the same decision prints the same bytes. */
enum gate_view {
	GATE_VIEW_PLANNER,  /* what a planner may see: no limit values */
	GATE_VIEW_OPERATOR, /* everything, for the operator and the journal */
};
cJSON *gate_decision_to_json(const struct gate_decision *d, enum gate_view view);
/* The JSON printed unformatted (malloc'd; free with free()); NULL when out of memory. */
char *gate_decision_print(const struct gate_decision *d, enum gate_view view);

/*
 * Checks a whole actions file ({"kind": "actions", "version": 1, "actions":
 * [...]}), a plan file (every "actions" array in it, in document order) or a
 * run's journal (a path ending .jsonl: the actions of every step the engine
 * journaled before running it, in journal order), one decision per action,
 * handed to fn in order. The tool starts at start;
 * after an action that is not denied it stands where that path ends. A file
 * that is not JSON, or not such a file, gives one decision with index -1.
 * Returns 0, a negative code when the file cannot be read, or what fn returns.
 */
typedef int (*gate_decision_fn)(void *ctx, const struct gate_decision *d, bl_err *err);
int gate_check_file(const struct machine *m, const char *path, const arm_point *start,
		    gate_decision_fn fn, void *ctx, bl_err *err);

/* ---- the gate: the only path to an arm backend's execute ---- */

enum gate_mode {
	GATE_UNATTENDED, /* nobody to ask: file the request, defer (BL_EDEFERRED), carry on */
	GATE_REMOTE,     /* wait up to the timeout for `brushloop approve` from another process */
	GATE_TERMINAL,   /* ask at the terminal (and accept `brushloop approve` meanwhile) */
};

struct gate_config {
	const struct machine *m;
	const char *run_dir;      /* approvals/, grants.json and fault.json live here */
	struct journal *journal;  /* the run's journal (shared with the engine): every decision,
				     grant and grant use, as events from src "gate" */
	clk *clock;               /* the run's clock (grant expiry); NULL: monotonic */
	enum gate_mode mode;
	int tty_in_fd, tty_out_fd;/* GATE_TERMINAL: where to read the answer and show the request */
	int timeout_ms;           /* operator wait; 0: safety.operator_timeout_s */
};

struct gate;

/* Opens a gate; creates RUN_DIR/approvals. Fails if the machine lists an unknown operator kind. */
int gate_open(const struct gate_config *cfg, struct gate **out, bl_err *err);
void gate_close(struct gate *g);

/* An RGB image (8 bits a channel, rows top to bottom) of the rectified canvas:
 * pixel (0, 0) at the canvas origin, columns along machine x, rows along machine y. */
struct gate_image {
	const unsigned char *rgb;
	int width, height;        /* px */
	size_t stride;            /* bytes a row */
};

/*
 * Decides action a from the arm's own reported position, journals the
 * decision, consults grants and the operator, and only on allow calls the
 * backend's execute with the path it checked. frame (may be NULL) is the last
 * canvas frame, drawn under the path in the preview next to a request.
 * Returns 0 when executed; BL_EDENIED when denied, refused or unanswered at
 * a terminal; BL_EDEFERRED when it needs an operator nobody can answer now
 * (the request is filed, see gate_deferred); BL_EPAUSED when a first signal
 * held the arm; BL_ESAFETY on a second signal or a fault; else the
 * backend's or the journal's error (a decision that cannot be journaled is
 * not executed). d is always filled.
 */
int gate_execute(struct gate *g, struct arm *arm, const struct arm_action *a,
		 const struct gate_image *frame, struct gate_decision *d, bl_err *err);

/*
 * Runs the backend's homing cycle through the same decide, journal, ask
 * path as gate_execute (homing real hardware usually asks a person).
 */
int gate_home(struct gate *g, struct arm *arm, struct gate_decision *d, bl_err *err);

/* Journals a deny for an action that failed to parse (see gate_decide_malformed). */
int gate_reject_malformed(struct gate *g, const char *file, long index, const cJSON *item,
			  const bl_err *parse_err, struct gate_decision *d, bl_err *err);

/* Checks and journals a tolerance a subtask states. Returns 0 when acceptable, BL_EDENIED when not. */
int gate_tolerance(struct gate *g, const char *kind, double value_de00, struct gate_decision *d,
		   bl_err *err);

/* Deferred requests (unattended): what is waiting for an operator, and whether it can go now. */
enum gate_wait { GATE_WAITING, GATE_READY, GATE_REFUSED };
struct gate_deferred {
	char request_id[32];
	long action_id;
	int kind;                    /* enum arm_kind */
	enum gate_wait state;        /* after the last gate_recheck */
	char why[GATE_MSG_MAX];      /* the operator detail of the first reason */
};
size_t gate_deferred_count(const struct gate *g);
const struct gate_deferred *gate_deferred_get(const struct gate *g, size_t i);
/*
 * Reads answers and grants again and updates each deferred request's state;
 * returns how many are ready (answered yes, or covered by a grant now) and
 * sets *refused to how many were answered no. Resubmit a ready action with
 * gate_execute; drop a refused one.
 */
int gate_recheck(struct gate *g, int *refused, bl_err *err);

/* The number of motions executed, and whether a fault is latched (the next motion needs an operator). */
long gate_motions(const struct gate *g);
int gate_fault_latched(const struct gate *g);

/* ---- stopping ---- */

/*
 * Installs handlers that only count for every signal that would end the
 * process on request (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,
 * SIGALRM, the real-time ones, ...; signals.c lists them) and ignores
 * SIGPIPE; loops poll gate_signals_count().
 */
int gate_signals_install(bl_err *err);
int gate_signals_count(void);
void gate_signals_reset(void);
/* A descriptor that becomes readable when a signal arrives (for poll() in wait loops). */
int gate_signals_fd(void);

/*
 * The poll point of every loop: after a first signal, a controlled hold
 * (arm_hold, waiting for the arm to come to rest) and BL_EPAUSED (the caller
 * saves state and exits 3); after a second, arm_stop and BL_ESAFETY (exit 5);
 * a fault or e-stop in arm_status is journaled and latched, BL_ESAFETY.
 * 0 when the loop may carry on. Each event is journaled once.
 */
int gate_stop_poll(struct gate *g, struct arm *arm, bl_err *err);

/* ---- the preview picture ---- */

/*
 * Writes a PNG (about width_px wide) of the work area seen from above: the
 * canvas frame (or a blank canvas) in its rectangle, stations and keep-out
 * boxes, and the path: travel, in-zone and painting segments, the segments
 * a finding names in red, the start in green.
 */
int gate_preview_png(const struct machine *m, const struct arm_path *path,
		     const struct gate_decision *d, const struct gate_image *frame, int width_px,
		     const char *out_path, bl_err *err);

#endif

/* operator.h: the operator's files in a run directory: approval requests and their answers, and time-limited grants. */
#ifndef BL_SAFETY_OPERATOR_H
#define BL_SAFETY_OPERATOR_H

#include <stdint.h>

#include "base/digest.h"
#include "safety/gate.h"

/*
 * RUN_DIR/approvals/ID.json        a request, written atomically by the gate only
 * RUN_DIR/approvals/ID.answer.json its answer, created once (never overwritten) by
 *                                  `brushloop approve` or by the gate's terminal prompt;
 *                                  it names the request's digest and is newer than it
 * RUN_DIR/approvals/ID.answer.ignored-MS.json an answer that did not answer ID (written
 *                                  before it, for another action, or in the old format),
 *                                  moved aside by the next answer
 * RUN_DIR/approvals/ID.png         the preview of the path, when the gate could draw it
 * RUN_DIR/grants.json              grants, rewritten atomically by `brushloop grant`
 *                                  under a lock on RUN_DIR/grants.lock; the gate only reads it
 * RUN_DIR/fault.json               a latched fault: the next motion needs an operator
 * docs/safety.md describes every field.
 */

#define GATE_ID_MAX 32

enum gate_req_status {
	GATE_REQ_PENDING,    /* waiting for an answer, or answered and not yet acted on */
	GATE_REQ_USED,       /* approved, and the action went ahead */
	GATE_REQ_REFUSED,    /* answered no */
	GATE_REQ_TIMED_OUT,  /* nobody answered at the terminal in time: no */
	GATE_REQ_SUPERSEDED, /* the same action was asked again for other reasons */
};
extern const char *const gate_req_status_names[];

struct gate_why {
	enum gate_reason reason;
	char field[GATE_FIELD_MAX];
	char detail[GATE_MSG_MAX];
};

struct gate_request {
	char id[GATE_ID_MAX];
	enum gate_req_status status;
	int64_t created_wall_ms;
	long index;                 /* the action's position in its batch, -1 when not known */
	long action_id;
	int kind;                   /* enum arm_kind */
	char *action_json;          /* the action exactly as checked (malloc'd) */
	arm_point from, to;         /* mm */
	double speed_mm_s, length_mm;
	size_t n_segments;
	unsigned zones;             /* entered, from geometry */
	int n_why;
	struct gate_why why[GATE_MAX_REASONS];
	char preview[GATE_ID_MAX + 8]; /* file name next to the request, "" when none */
	/* from the answer file, when there is one that answers this request */
	int answered, approved;
	int64_t answer_wall_ms;
	char answer_by[96];
	char answer_ignored[GATE_MSG_MAX]; /* why the answer file on disk answers nothing, or "" */
};

/*
 * What an answer approves: SHA-256 over the request's id, the wall time it
 * was filed and the exact action and reasons asked about. An answer that
 * names another digest (written before the request existed, or for another
 * action) answers nothing.
 */
int gate_request_digest(const struct gate_request *r, char out[BL_DIGEST_HEX], bl_err *err);

/* RUN_DIR/approvals into out. */
int gate_approvals_dir(const char *run_dir, char *out, size_t n, bl_err *err);

/* The next free request id ("r000001", ...) in RUN_DIR/approvals. */
int gate_request_new_id(const char *run_dir, char *id, size_t n, bl_err *err);

/* Fills a request from a decision (not yet written: id and status are the caller's). */
int gate_request_from_decision(const struct gate_decision *d, const struct arm_action *a,
			       struct gate_request *r, bl_err *err);

/* Adds what a request asks to move (from, to, speed, zones, why, preview) to o: the file and `pending` show the same. */
void gate_request_add_motion(cJSON *o, const struct gate_request *r);

/* A request as `pending --json` and the console show it: id, status, answer, kind, action, motion, created_wall_ms. */
cJSON *gate_request_json(const struct gate_request *r);

int gate_request_write(const char *run_dir, const struct gate_request *r,
		       const struct gate_decision *d, bl_err *err);
/* Loads request id with its answer, strictly; a malformed file is an error naming it. */
int gate_request_load(const char *run_dir, const char *id, struct gate_request *r, bl_err *err);
void gate_request_free(struct gate_request *r);

/*
 * Every request in RUN_DIR/approvals, sorted by id. Files that do not load are
 * skipped and counted in *n_bad, the first problem in bad_err (may be NULL).
 */
int gate_requests_list(const char *run_dir, struct gate_request **out, size_t *n, size_t *n_bad,
		       bl_err *bad_err, bl_err *err);
void gate_requests_free(struct gate_request *l, size_t n);

/* Whether a request waits for an answer (pending and unanswered). */
int gate_request_waiting(const struct gate_request *r);

/*
 * Answers request id once, naming its digest: fails (BL_EINVAL) when it
 * does not exist, is no longer pending or was answered already. An answer
 * file that answers nothing (see answer_ignored) is moved aside first. by
 * says who (a user, "terminal", "console (client ...)"). Whoever can write
 * the run directory can answer: docs/safety.md says why that is the line.
 */
int gate_request_answer(const char *run_dir, const char *id, int approve, const char *by,
			bl_err *err);

/* ---- grants ---- */

/* "host:port" of an egress grant, its NUL included. */
#define GATE_EGRESS_MAX 300

/*
 * A motion grant (kinds, zones, max speed) stands in for the operator at the
 * gate; an egress grant (egress set) opens one destination to an external
 * planner's broker and covers no motion at all.
 */
struct gate_grant {
	char id[GATE_ID_MAX];
	char egress[GATE_EGRESS_MAX]; /* "host:port", or "" for a motion grant */
	unsigned kinds;           /* bit per enum arm_kind */
	unsigned zones;           /* bit per enum arm_zone where the tool may go down; travel is always part */
	double max_speed_mm_s;
	double for_s;             /* lifetime, counted on the run's clock from when the gate first sees it */
	int64_t issued_wall_ms;   /* and never longer than for_s of wall time after this */
	int revoked;
	char by[96];
};

struct gate_grants {
	struct gate_grant *g;
	size_t n;
	size_t n_bad;             /* entries that were malformed and are ignored */
	char bad[4][BL_ERR_MSG_MAX]; /* the first few of their messages */
};

/* Grant zone names: the arm zones plus "palette" (wells, cells, water and wipe). */
int gate_parse_zones(const char *list, unsigned *zones, bl_err *err);
int gate_parse_kinds(const char *list, unsigned *kinds, bl_err *err);
/* "15m", "90s", "2h", "1h30m", or plain seconds; positive, at most 30 days. */
int gate_parse_duration(const char *text, double *seconds, bl_err *err);

/*
 * Reads RUN_DIR/grants.json: an absent file is no grants; a file that is not
 * a grants file is an error; a malformed entry is skipped and reported in
 * out->bad, so one typo never voids the others.
 */
int gate_grants_load(const char *run_dir, struct gate_grants *out, bl_err *err);
void gate_grants_free(struct gate_grants *gs);

/* Adds a grant (its id is chosen here and copied back into g->id), under the lock. */
int gate_grant_add(const char *run_dir, struct gate_grant *g, bl_err *err);
int gate_grant_revoke(const char *run_dir, const char *id, bl_err *err);

/* Why a grant cannot be used on machine m at all (too long, too fast), or 0. */
int gate_grant_validate(const struct machine *m, const struct gate_grant *g, bl_err *err);

/* A grant as a person writes it (`brushloop grant`'s options, the console's form). */
struct gate_grant_text {
	const char *kinds, *zones; /* "stroke,dip", "canvas,palette" */
	const char *egress;        /* "host:port": an egress grant instead (kinds, zones and max speed NULL) */
	const char *max_speed;     /* mm/s */
	const char *for_;          /* a duration, as gate_parse_duration reads it */
	const char *by;            /* who grants, for the record */
	const char *machine_path;  /* when given, a grant the gate would ignore is refused here */
};

/* A grant as `grant --list --json` and the console show it, its state and time left by the wall clock at now_ms. */
cJSON *gate_grant_json(const struct gate_grant *g, int64_t now_ms);

/* Parses, checks and adds the grant t describes, issued now: g is what was added (its id). */
int gate_grant_give(const char *run_dir, const struct gate_grant_text *t, struct gate_grant *g,
		    bl_err *err);

/*
 * Seconds grant g has left at wall time now_ms, 0 when it has none (revoked
 * or expired). An egress grant is held to the wall clock alone: a planner's
 * phase is no part of the run's clock.
 */
double gate_grant_wall_left_s(const struct gate_grant *g, int64_t now_ms);

/* Whether grant g covers decision d of an action of kind at speed (limits and scope, not time). */
int gate_grant_covers(const struct gate_grant *g, const struct gate_decision *d);

#endif

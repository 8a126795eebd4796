/* review_ext.h: an external reviewer (docs/reviewer.md): a lab's own process in the planner's sandbox, fresh for every review, asked with a request line and heard in one answer line. */
#ifndef BL_REVIEW_REVIEW_EXT_H
#define BL_REVIEW_REVIEW_EXT_H

#include <stddef.h>

#include <cJSON.h>

#include "base/err.h"
#include "sandbox/sbx.h"

#define REVIEW_PROTOCOL 1

struct review_ext_config {
	const char *command;          /* "COMMAND ARGS...": words split at spaces, no shell (as a planner's) */
	int answer_deadline_ms;       /* from starting it to the answer's newline */
	size_t max_answer_bytes;      /* one answer line */
	double cpu_s;                 /* the sandbox's limits (0: sbx's defaults) */
	long as_mb;
	int tmpfs_mb;
	const struct egress_policy *egress; /* NULL: no network at all */
	sbx_log_fn log;               /* the sandbox's and broker's events (the run's journal) */
	void *log_ctx;
};

struct review_ext;

int review_ext_open(const struct review_ext_config *cfg, struct review_ext **out, bl_err *err);
void review_ext_close(struct review_ext *x);

/* What a review call came to. Anything but an answer that agrees withholds agreement. */
struct review_ext_answer {
	int answered;                 /* a well-formed answer came in time */
	int agree;                    /* it agreed (never more than that: it grants nothing) */
	char failure[32];             /* no answer: failed, gone, late, too_large, malformed */
	char reason[400];             /* the reviewer's reason, or why there was none */
	cJSON *claims;                /* the answer's other keys (journaled, never read), or NULL */
	double wall_s;                /* the call's wall time, s */
};

/*
 * One review: starts the command in a fresh sandbox with in_dir (the frame,
 * the target) at /in, sends req (the caller's keys; type, protocol, id and
 * limits are added) and reads one answer line against the deadline and the
 * size limit, then ends the sandbox whatever it is doing. Returns 0 with a
 * filled (a reviewer that fails is an answer withheld, never an error), or
 * BL_ENOMEM.
 */
int review_ext_ask(struct review_ext *x, cJSON *req, const char *in_dir, struct review_ext_answer *a, bl_err *err);

/* {"answered", "agree", "failure", "reason", "wall_s", "claims"} */
cJSON *review_ext_answer_json(const struct review_ext_answer *a);
void review_ext_answer_free(struct review_ext_answer *a);

#endif

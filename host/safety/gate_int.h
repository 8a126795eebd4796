/* gate_int.h: the gate's state, shared by gate.c (deciding and executing) and gate_grants.c (grants on a clock that survives processes). */
#ifndef BL_SAFETY_GATE_INT_H
#define BL_SAFETY_GATE_INT_H

#include <limits.h>
#include <stdint.h>
#include <sys/stat.h>

#include "safety/gate.h"
#include "safety/operator.h"

/* How far a grant's issued_wall_ms may lie ahead of the wall clock (clocks of two hosts disagree a little). */
#define GATE_GRANT_SKEW_MS 5000

/* A grant the run has seen, as the journal records it: the same id issued again is another grant. */
struct seen_grant {
	char id[GATE_ID_MAX];
	int64_t issued_wall_ms;
	int64_t seen_run_ns;  /* the run's clock (gate_run_ns) when the gate first saw it */
	int expired;          /* journaled as expired, in this process or an earlier one */
};

struct deferred;

/* A request the gate filed in this run, as its journal records it (the request event). */
struct journaled_request {
	char id[GATE_ID_MAX];
	char digest[BL_DIGEST_HEX]; /* "" in a journal from before requests were journaled with it */
};

struct gate {
	struct gate_config cfg;
	const struct machine *m;
	clk *clock;
	int64_t run_off_ns;   /* added to clock: the run's clock goes on from what the journal holds */
	int64_t wall_floor_ms;/* the latest wall time the journal holds: a clock set back gains nothing */
	char run_dir[PATH_MAX];
	char fault_path[PATH_MAX];
	long motions;
	int after_fault;      /* latched: the next motion needs an operator */
	int fault_told;       /* this latch is journaled */
	int held, stopped;    /* signal handling done once each */
	struct seen_grant *seen;
	size_t n_seen;
	struct gate_grants grants;  /* grants.json as last read */
	struct stat grants_st;      /* to re-read it only when it changed */
	int grants_read;
	uint64_t *told;       /* hashes of grant problems already reported */
	size_t n_told;
	struct deferred *def;
	size_t n_def;
	struct journaled_request *reqs; /* every request this run's journal holds */
	size_t n_reqs;
};

/* Journals an event from src "gate" (body consumed; NULL: empty). */
int gate_journal(struct gate *g, const char *event, cJSON *body, bl_err *err);
cJSON *gate_body_str(const char *k1, const char *v1);
/* Reports a problem once per distinct message (journal and log). */
void gate_tell_once(struct gate *g, const char *event, const char *msg);

/*
 * Reads the run's journal before the gate writes to it: where the run's
 * clock and the wall clock had got to, and every grant seen or expired in
 * an earlier process, so a lifetime goes on where it was.
 */
int gate_grants_restore(struct gate *g, bl_err *err);
/*
 * Whether r is a request this run's gate filed: its request event is in
 * the run's journal with r's digest (an answer counts only for such a
 * request). A request planted in approvals/, or another run's, is not.
 */
int gate_request_journaled(const struct gate *g, const struct gate_request *r);
/* Notes a request just filed and journaled (its id and digest); 0 or BL_ENOMEM. */
int gate_request_noted(struct gate *g, const char *id, const char *digest, bl_err *err);
/* The run's clock: the gate's clock plus what earlier processes used, ns. */
int64_t gate_run_ns(struct gate *g);
/* Re-reads grants.json when it changed; starts the lifetime of grants seen for the first time. */
void gate_grants_refresh(struct gate *g);
/* Finds a grant in force that covers d; copies its id. */
int gate_grants_find(struct gate *g, const struct gate_decision *d, char *id, size_t n);

#endif

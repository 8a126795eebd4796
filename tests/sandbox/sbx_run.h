/* sbx_run.h: running one hostile planner in a sandbox for the sandbox's tests, with what it said and what was journaled. */
#ifndef BL_TESTS_SBX_RUN_H
#define BL_TESTS_SBX_RUN_H

#include "sandbox/sbx.h"

struct hostile_run {
	char out[8192];      /* what the planner wrote on its stdout */
	char err[8192];      /* the stderr kept */
	int status;          /* bwrap's wait status */
	int ended;           /* it ended by itself within the time given */
	cJSON *events;       /* [{"event": NAME, "data": {...}}, ...] as pol->log got them */
	double wall_ms;
};

/*
 * Runs the hostile planner (tests/sandbox/hostile, or base->argv[0] when
 * base gives one: a copy of it elsewhere) with args in a sandbox made from
 * base (NULL: defaults; argv, files and log are filled in: the planner's file
 * first, then base's files), for at most timeout_ms, then stops it. 0, or -1 when the sandbox could not start (the
 * error in err).
 */
int hostile_run(const struct sbx_policy *base, const char *const *args, int timeout_ms,
		struct hostile_run *r, bl_err *err);
void hostile_free(struct hostile_run *r);

/*
 * hostile_run as a test's check: the sandbox started, and journaled its start
 * and its stop once each (SBX_DEBUG=1 prints what it said and the events).
 */
void hostile_check(const struct sbx_policy *pol, const char *const *args, int timeout_ms,
		   struct hostile_run *r);

/* The n-th (0-based) event named name, or NULL. */
const cJSON *hostile_event(const struct hostile_run *r, const char *name, int n);
/* How many events named name whose data's key equals value (value NULL: any). */
int hostile_count(const struct hostile_run *r, const char *name, const char *key, const char *value);

#endif

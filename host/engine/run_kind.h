/* run_kind.h: the subtask kinds' handlers, one row a kind, that the run's core loop dispatches through. */
#ifndef BL_ENGINE_RUN_KIND_H
#define BL_ENGINE_RUN_KIND_H

#include <stddef.h>

#include <cJSON.h>

#include "base/err.h"
#include "plan/plan.h"

struct run;

/*
 * What the core loop asks of a kind. The loop journals subtask_start (with
 * the end condition `expected` adds), saves, calls `run`, then journals
 * subtask_end with the status `run` left in st.sub[st.next].
 */
struct run_kind {
	/*
	 * Runs subtask s (the plan's st.next): executes its actions through
	 * run_act, verifies its end condition by the engine's own observation,
	 * and leaves its status. 0, or the run's codes (BL_EPAUSED, BL_EBRAKE, ...).
	 */
	int (*run)(struct run *r, const struct plan_subtask *s, bl_err *err);
	/* Adds its end condition to subtask_start: d the event's data, e its "expected" object. */
	void (*expected)(const struct plan *p, const struct plan_subtask *s, cJSON *d, cJSON *e);
	/* What it does, in a few words, for STATUS.md. */
	void (*what)(const struct plan *p, const struct plan_subtask *s, char *buf, size_t n);
	int paints;  /* its strokes count in the run's strokes_total */
};

extern const struct run_kind run_kind_mix;        /* run_mix.c */
extern const struct run_kind run_kind_paint;      /* run_paint.c */
extern const struct run_kind run_kind_checkpoint; /* run_checkpoint.c */

/* The handlers of kind t (a switch without default: a kind without a row does not compile). */
const struct run_kind *run_kind_of(enum plan_subtask_type t);

#endif

/* journal.h: the run's append-only journal (journal.jsonl): one fsync'd JSON event a line, torn last lines tolerated. */
#ifndef BL_ENGINE_JOURNAL_H
#define BL_ENGINE_JOURNAL_H

#include <stdint.h>

#include <cJSON.h>

#include "base/clock.h"
#include "base/err.h"

/*
 * Every event carries: seq (1, 2, ... over the whole run, across resumes),
 * wall_ms (Unix ms), mono_ns (the run's clock: virtual under the simulator),
 * subtask (id or ""), event (a short name) and optional data (inputs,
 * outputs, measurement, verdict). A line is written and fsync'd in one write,
 * so a crash tears at most the last line; opening an existing journal
 * terminates a torn line and notes it, never fails on it.
 */
struct run_journal {
	char path[4096];
	int fd;
	long seq;      /* sequence number of the last event written */
	long torn;     /* torn lines found when opened (0 or 1) */
	clk *clock;
};

/* Opens (creating) the journal at path; continues the sequence of an existing one. */
int run_journal_open(struct run_journal *j, const char *path, clk *clock, bl_err *err);

/* Appends one event; data (may be NULL) is consumed. Returns 0 or an error; *seq_out gets its seq. */
int run_journal_event(struct run_journal *j, const char *subtask, const char *event, cJSON *data,
		      long *seq_out, bl_err *err);

void run_journal_close(struct run_journal *j);

/*
 * Reads a journal: calls fn for each well-formed event in order (fn returns
 * nonzero to stop). Lines that do not parse are skipped and counted in
 * *bad_lines; a torn last line is never an error.
 */
typedef int (*run_journal_fn)(const cJSON *event, void *ctx);
int run_journal_read(const char *path, run_journal_fn fn, void *ctx, long *bad_lines, bl_err *err);

#endif

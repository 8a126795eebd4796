/* journal.h: the run's append-only journal (journal.jsonl): one fsync'd JSON event a line, torn last lines tolerated. */
#ifndef BL_BASE_JOURNAL_H
#define BL_BASE_JOURNAL_H

#include <stdint.h>

#include <cJSON.h>

#include "base/clock.h"
#include "base/err.h"

/*
 * Every event carries: seq (1, 2, ... over the whole run, across resumes),
 * wall_ms (Unix ms), mono_ns (the run's clock: virtual under the simulator),
 * src (who wrote it: "engine", "gate", ...), subtask (id or ""), event (a
 * short name) and optional data (inputs, outputs, measurement, verdict). A
 * line is written and fsync'd in one write, so a crash tears at most the last
 * line; opening an existing journal terminates a torn line and notes it,
 * never fails on it. One journal object is shared by everyone writing to a
 * run's journal, so the sequence is one.
 */
struct journal {
	char path[4096];
	int fd;
	long seq;      /* sequence number of the last event written */
	long torn;     /* torn lines found when opened (0 or 1) */
	clk *clock;
	char subtask[64]; /* the subtask under way: events written with subtask NULL carry it */
};

/* Opens (creating) the journal at path; continues the sequence of an existing one. */
int journal_open(struct journal *j, const char *path, clk *clock, bl_err *err);

/*
 * Appends one event from src "engine"; data (may be NULL) is consumed; subtask
 * NULL means the current one (journal_set_subtask). Returns 0 or an error;
 * *seq_out (may be NULL) gets its seq.
 */
int journal_event(struct journal *j, const char *subtask, const char *event, cJSON *data,
		  long *seq_out, bl_err *err);

/* The same from another writer (src "gate", ...), in the current subtask. */
int journal_event_from(struct journal *j, const char *src, const char *event, cJSON *data,
		       long *seq_out, bl_err *err);

/* Sets the subtask later events are attributed to ("" for none). */
void journal_set_subtask(struct journal *j, const char *subtask);

void journal_close(struct journal *j);

/*
 * Reads a journal: calls fn for each well-formed event in order (fn returns
 * nonzero to stop). Lines that do not parse are skipped and counted in
 * *bad_lines; a torn last line is never an error.
 */
typedef int (*journal_fn)(const cJSON *event, void *ctx);
int journal_read(const char *path, journal_fn fn, void *ctx, long *bad_lines, bl_err *err);

#endif

/* journal.h: the run's append-only journal (journal.jsonl): one fsync'd JSON event a line, chained by digest, torn last lines cut off. */
#ifndef BL_BASE_JOURNAL_H
#define BL_BASE_JOURNAL_H

#include <stdint.h>
#include <sys/types.h>

#include <cJSON.h>

#include "base/clock.h"
#include "base/digest.h"
#include "base/err.h"

/*
 * Every event carries: seq (1, 2, ... over the whole run, across resumes),
 * run (the run's id, in a run's journal), prev (the SHA-256 of the line
 * before it, in hex; 64 zeros for the first), wall_ms (Unix ms), mono_ns
 * (the run's clock: virtual under the simulator), src (who wrote it:
 * "engine", "gate", ...), subtask (id or ""), event (a short name) and
 * optional data (inputs, outputs, measurement, verdict). The lines form a
 * chain, as a write-ahead log's checksummed frames: a line edited, taken
 * out or put in, or another run's, breaks it, and opening refuses it. A
 * line is written and fsync'd in one write, so a crash tears at most the
 * last line, which opening cuts off and notes, never fails on. One journal
 * object is shared by everyone writing to a run's journal, so the sequence
 * is one; before every append it checks that the file at its path is the
 * one it opened and ends where it last wrote (one writer, proven).
 */
struct journal {
	char path[4096];
	int fd;
	long seq;      /* sequence number of the last event written */
	long torn;     /* a torn last line was cut off when opened (0 or 1) */
	clk *clock;
	char subtask[64]; /* the subtask under way: events written with subtask NULL carry it */
	char run[48];  /* the run id every line carries ("": a journal of no run) */
	char last[BL_DIGEST_HEX]; /* the last line's SHA-256, which the next names as "prev" */
	dev_t dev;     /* the file this process opened ... */
	ino_t ino;
	off_t end;     /* ... and where it last wrote */
	int lost;      /* the file is no longer ours (or a write failed part way): nothing more is written */
};

/* What a scan of a journal found. */
struct journal_info {
	long lines;      /* complete lines */
	long bytes;      /* up to the end of the last complete line */
	long torn_bytes; /* after it, with no newline: a torn line (0: none) */
	long seq;        /* the last line's seq */
	long legacy;     /* lines from before the chain (an older brushloop's), at the start */
	int chained;     /* lines of the chain follow */
	char last[BL_DIGEST_HEX]; /* the last complete line's SHA-256 */
};

/*
 * Called for each line of a verified journal, in order, with its line
 * number and SHA-256; returns 0 to go on, or a negative code (err filled)
 * that ends the scan with it. Lines from before the chain come too.
 */
typedef int (*journal_line_fn)(const cJSON *event, long line, const char *digest, void *ctx,
			       bl_err *err);

/*
 * Reads the journal at path and checks its chain from the first line: each
 * line a JSON object naming run (NULL or "": none), the seq after the one
 * before, and that line's digest; lines from before the chain (no "prev")
 * only at the start, adopted by a journal_chained line with their digest. A
 * torn last line is reported (info->torn_bytes), never an error. Any other
 * break is BL_EINVAL naming the line and why.
 */
int journal_verify(const char *path, const char *run, journal_line_fn fn, void *ctx,
		   struct journal_info *info, bl_err *err);
/* The same over len bytes of text; name is the file's name for messages. */
int journal_verify_text(const char *text, size_t len, const char *name, const char *run,
			journal_line_fn fn, void *ctx, struct journal_info *info, bl_err *err);

/* journal_open_run's flags. */
enum { JOURNAL_EXISTING = 1 }; /* a missing journal is refused, never made afresh */

/*
 * Opens (creating unless JOURNAL_EXISTING) the journal of run at path:
 * verifies an existing one (journal_verify, with fn for each line), cuts
 * off a torn last line, adopts the lines of an older brushloop (a
 * journal_chained event) and continues its sequence and chain.
 */
int journal_open_run(struct journal *j, const char *path, const char *run, int flags,
		     journal_line_fn fn, void *ctx, clk *clock, bl_err *err);

/* journal_open_run with no run: a journal of its own (a calibration session, sim exec). */
int journal_open(struct journal *j, const char *path, clk *clock, bl_err *err);

/*
 * Appends one event from src "engine"; data (may be NULL) is consumed; subtask
 * NULL means the current one (journal_set_subtask). Returns 0 or an error
 * (BL_ESAFETY when the file is no longer the one this process writes); *seq_out
 * (may be NULL) gets its seq.
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
 * Reads a journal without checking its chain (a report, a journal being
 * written by a live run): calls fn for each well-formed event in order (fn
 * returns nonzero to stop). Lines that do not parse are skipped and counted
 * in *bad_lines; a torn last line is never an error.
 */
typedef int (*journal_fn)(const cJSON *event, void *ctx);
int journal_read(const char *path, journal_fn fn, void *ctx, long *bad_lines, bl_err *err);

#endif

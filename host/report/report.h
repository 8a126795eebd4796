/* report.h: the morning report: report.html in a run directory, made from the run's files alone, read without a server or JavaScript. */
#ifndef BL_REPORT_REPORT_H
#define BL_REPORT_REPORT_H

#include <stddef.h>

#include "base/err.h"
#include "engine/run.h"

/* Where the pictures the report draws from the run's frames (and embeds) are kept, inside the run directory. */
#define REPORT_DIR RUN_REPORT_DIR

/* What report_write wrote. */
struct report_info {
	char path[4200];     /* DIR/report.html */
	size_t bytes;        /* its size */
	int images;          /* pictures it embeds */
	int drawn;           /* of them drawn now from a frame (the rest were drawn by an earlier report) */
	double estimate_s;   /* time spent pricing the run's plan as `brushloop estimate` would (0: cached) */
};

/*
 * Writes DIR/report.html (atomically) from journal.jsonl, state.json,
 * run.json, plan.json (when the run has one), machine.json, palette.json and
 * frames/: the target beside the canvas at the last look, the canvas and its
 * CIEDE2000 map at every observation of the whole canvas (over the picture's
 * rectangle), each colour's mix attempts against the tolerance with their
 * frames, paint per well, cost against the estimate, the subtasks on the run
 * clock, and every deferral, accepted colour, brake and operator answer with
 * its reason. One file: every picture is embedded as a data: URI, drawn once
 * from the frames into DIR/report/ at the size the page shows it (a picture
 * already there is kept: a frame never changes). A missing or damaged file is
 * BL_EINVAL naming it, and report.html is left as it was. info may be NULL.
 * Safe while the run runs (its files are written atomically; a torn journal
 * line is skipped and counted).
 */
int report_write(const char *dir, struct report_info *info, bl_err *err);
/* report_write with no info: what a run draws when its process ends (run_options.report). */
int report_for_run(const char *dir, bl_err *err);

#endif

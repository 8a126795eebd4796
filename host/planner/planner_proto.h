/* planner_proto.h: the JSON-lines protocol between the host and a planner process (docs/planner.md): messages, strict parsing, size limits, deadlines. */
#ifndef BL_PLANNER_PLANNER_PROTO_H
#define BL_PLANNER_PLANNER_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "planner/planner.h"

#define PLANNER_PROTOCOL 1
#define PLANNER_CLAIMS_MAX 4096 /* bytes of the planner's claims journaled; the rest is cut */

/* What a phase allows a planner: one answer line of at most max_answer_bytes, within the deadline. */
struct planner_limits {
	size_t max_answer_bytes;
	int answer_deadline_ms;
};

/*
 * The request line for q (docs/planner.md, "request"): the files at /in,
 * the target, the grid and options, the painting's plan without its subtasks
 * (a correction), and the world's JSON as the engine gave it. id numbers
 * the phase; an answer must carry it.
 */
cJSON *planner_request_json(const struct planner_request *q, long id,
			    const struct planner_limits *lim);

/*
 * Parses one answer line (text, n bytes, no newline) to request q: strict
 * JSON, {"type": "answer", "id": id, "plan": PLAN, ...}; every other top-level
 * key is the planner's claim (usage, "verified", a measured colour, an
 * "approval"), moved to *claims for the journal and never read otherwise.
 * A subtask without its tolerance gets the machine's bar; one that states
 * it is held to the bar by admission. Returns 0 with out filled, BL_EDENIED
 * with why (malformed: the field named, never a limit), or BL_ENOMEM.
 */
int planner_answer_parse(const char *text, size_t n, const struct planner_request *q, long id,
			 struct plan *out, cJSON **claims, struct planner_denial *why, bl_err *err);

/* The host's verdict line: {"type": "verdict", "id", "admitted"} and, when refused, the planner's view of why. */
cJSON *planner_verdict_json(long id, const struct planner_denial *why);

/*
 * Reads one line from fd until deadline_ns (clk_real_ns): 0 with *out
 * (malloc'd, NUL-terminated, newline dropped) and *n; BL_EDENIED with why
 * late, too_large (more than max bytes before a newline: reading stops
 * there) or gone (EOF or an error before a whole line).
 */
int planner_read_line(int fd, size_t max, int64_t deadline_ns, char **out, size_t *n,
		      struct planner_denial *why, bl_err *err);

/* Writes msg as one line to fd (send, MSG_NOSIGNAL) by deadline_ns: 0, or BL_EIO when the planner does not take it. */
int planner_write_line(int fd, const cJSON *msg, int64_t deadline_ns, bl_err *err);

/*
 * The machine as a planner may know it (machine_file is the machine file's
 * JSON): geometry (work area, home, travel height, zones, brushes), mixing
 * and painting, and "motion", the working values the host's own planner
 * plans with (travel and stroke speed, curve acceleration, longest move,
 * deepest press into the canvas), each inside the limits by a margin. The
 * limits, safety, tolerances, costs, brakes, calibration, camera, the
 * backend's connection and the simulator are left out.
 */
cJSON *planner_machine_view(const cJSON *machine_file, const struct machine *m,
			    const struct plan_options *o);

#endif

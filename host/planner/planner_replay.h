/* planner_replay.h: a phase's admission decision made again from the run's records of it. */
#ifndef BL_PLANNER_PLANNER_REPLAY_H
#define BL_PLANNER_PLANNER_REPLAY_H

#include <cJSON.h>

#include "base/err.h"
#include "config/machine.h"

/*
 * Reads record_dir/request.json and record_dir/answer.json (a run's
 * DIR/planner/rN), parses and admits the answer for machine m as the run did,
 * and gives the decision: the run's planner_denied data in the operator's
 * view (without "planner", "phase", "round", "subtasks"), or {} for an
 * admitted answer, with "admitted" added either way. The same records give
 * the same bytes.
 */
int planner_replay(const char *record_dir, const struct machine *m, cJSON **out, bl_err *err);

#endif

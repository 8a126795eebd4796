/* planner_serve.h: the built-in planner as a process speaking the planner protocol (`brushloop planner serve`). */
#ifndef BL_PLANNER_PLANNER_SERVE_H
#define BL_PLANNER_PLANNER_SERVE_H

#include "base/err.h"

/*
 * Reads one request line from in_fd, plans it with the built-in planner from
 * what the request says alone (the machine's view, the palette, the files at
 * /in), writes the answer line to out_fd, and logs the host's verdict line
 * to stderr. Working files go in $TMPDIR (the sandbox's /tmp).
 */
int planner_serve(int in_fd, int out_fd, bl_err *err);

#endif

/* rec_arm.h: a recording arm backend for tests: counts every call and keeps the last path it was asked to execute. */
#ifndef BL_TESTS_REC_ARM_H
#define BL_TESTS_REC_ARM_H

#include <stdint.h>

#include "arm/arm.h"

struct rec_state {
	int n_execute, n_home, n_hold, n_resume, n_stop;
	struct arm_path last;         /* a copy of the last executed path */
	int last_kind;
	arm_point pos;                /* where the tool is (moved to each path's end) */
	int fault, estop;             /* reported by status */
	char fault_msg[160];
	int execute_rc;               /* what execute returns (0: success) */
	int fault_during_execute;     /* execute latches a fault and returns BL_ESAFETY */
	int execute_ms;               /* execute takes this much real time, or until a signal */
	int settle_ms;                /* after a hold, status reports moving this long */
	int64_t hold_ns;              /* real time of the last hold */
	int moving;
	const char *log_path;         /* each call appends a line here (for child processes) */
};

/* Opens a recording arm on m with clock c; st is owned by the caller and outlives the arm. */
struct arm *rec_arm_open(const struct machine *m, clk *c, struct rec_state *st);

#endif

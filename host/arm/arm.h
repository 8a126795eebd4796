/* arm.h: the arm interface: a small table of functions every backend of config/backends.def implements. */
#ifndef BL_ARM_ARM_H
#define BL_ARM_ARM_H

#include "arm/action.h"
#include "base/clock.h"
#include "base/err.h"
#include "config/machine.h"

struct arm_status {
	arm_point pos_mm;       /* tool position, machine coordinates */
	int homed;
	int moving;
	int held;               /* in a controlled hold (feed hold) */
	int fault;              /* a fault latched: the next motion needs an operator */
	int estop;              /* e-stop input latched */
	char fault_msg[160];
	double arm_time_s;      /* motion time since open, s (arm/arm_backend.h: never wall time) */
};

/*
 * An arm backend behind an opaque handle. Motion (home, execute) is reachable
 * only through arm/arm_backend.h, which only the backends and the safety gate
 * include; everything here only reads status or reduces motion.
 */
struct arm;

int arm_status(struct arm *a, struct arm_status *st, bl_err *err);
int arm_hold(struct arm *a, bl_err *err);
int arm_resume(struct arm *a, bl_err *err);
int arm_stop(struct arm *a, bl_err *err);
void arm_close(struct arm *a);

/*
 * The opener of each hardware backend of config/backends.def, defined in the
 * backend's own file (the simulator's arm comes with its world: sim_arm).
 * On failure nothing stays open.
 */
#define BL_ARM_BACKEND(ID, name, load_connection, open) \
	int open(const struct machine *m, clk *c, struct arm **out, bl_err *err);
#include "config/backends.def"
#undef BL_ARM_BACKEND

/* The machine the arm was opened for, and its clock (virtual for the simulator). */
const struct machine *arm_machine(const struct arm *a);
clk *arm_clock(const struct arm *a);
/* The backend's name, as the machine file's arm.backend says it. */
const char *arm_backend_name(const struct arm *a);

#endif

/* arm.h: the arm interface: a small table of functions every backend (sim, modbus, gcode) implements. */
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
	double arm_time_s;      /* motion time since open */
};

struct arm;

/*
 * The backend's table. Motion comes only from home and execute, and those are
 * called only by the safety gate (safety/gate.c): nothing else includes
 * arm/arm_backend.h, which declares the table's callers. Status, hold, resume
 * and stop only ever reduce motion and are open to everyone through arm.h.
 */
struct arm_ops {
	const char *name;
	int (*home)(struct arm *a, bl_err *err);
	int (*execute)(struct arm *a, const struct arm_action *act, const struct arm_path *path,
		       bl_err *err);
	int (*status)(struct arm *a, struct arm_status *st, bl_err *err);
	int (*hold)(struct arm *a, bl_err *err);   /* decelerate and stop, resumable */
	int (*resume)(struct arm *a, bl_err *err);
	int (*stop)(struct arm *a, bl_err *err);   /* stop at once, drop queued motion */
	void (*close)(struct arm *a);
};

struct arm {
	const struct arm_ops *ops;
	void *priv;                 /* the backend's state */
	const struct machine *m;
	clk *clock;
};

int arm_status(struct arm *a, struct arm_status *st, bl_err *err);
int arm_hold(struct arm *a, bl_err *err);
int arm_resume(struct arm *a, bl_err *err);
int arm_stop(struct arm *a, bl_err *err);
void arm_close(struct arm *a);

#endif

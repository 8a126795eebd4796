/* arm_backend.h: the arm ops table, for the backends that implement it and the safety gate that alone calls its motion. */
#ifndef BL_ARM_ARM_BACKEND_H
#define BL_ARM_ARM_BACKEND_H

#include "arm/arm.h"

/*
 * Who may include this file: the arm backends (host/arm/, sim/) and the
 * safety gate (host/safety/gate.c). Every other part moves the arm through
 * the gate, so an action nobody approved cannot reach execute. A test checks
 * the includes.
 */
struct arm_ops {
	const char *name;
	int (*home)(struct arm *a, bl_err *err);
	/* Executes one action along its expanded path (arm_motion); returns when done or failed. */
	int (*execute)(struct arm *a, const struct arm_action *act, const struct arm_path *path,
		       bl_err *err);
	int (*status)(struct arm *a, struct arm_status *st, bl_err *err);
	int (*hold)(struct arm *a, bl_err *err);   /* decelerate and stop, resumable */
	int (*resume)(struct arm *a, bl_err *err);
	int (*stop)(struct arm *a, bl_err *err);   /* stop at once, drop queued motion */
	void (*close)(struct arm *a);              /* also frees the struct arm */
};

struct arm {
	const struct arm_ops *ops;
	void *priv;                 /* the backend's state */
	const struct machine *m;
	clk *clock;
	/*
	 * Set by the gate before motion (may be NULL): how many stop signals came.
	 * A backend that streams (gcode) polls it and holds at once, instead of
	 * after the action, and returns BL_EPAUSED.
	 */
	int (*signalled)(void);
};

#endif

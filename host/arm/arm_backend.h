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
/*
 * The contract every backend keeps (config/backends.def lists them; one file
 * each, opened by `open` there). Units: positions in machine mm (the
 * canvas-to-machine transform is done before an action gets here), speeds in
 * mm/s, times in s unless a name says ms. Every operation returns 0 or a
 * negative BL_E* code with err filled (err may be NULL for status, hold,
 * resume, stop), and the caller relies on what each code means:
 *
 *   BL_ENOTSENT   nothing reached the arm: the command may be sent again.
 *   BL_EIO,       the link failed or went silent; the arm may have begun, so
 *   BL_ETIMEDOUT  whether it may be sent again is the repeat rule's
 *                 (arm_kind_repeatable), never the backend's.
 *   BL_EPAUSED    the arm is held (a feed hold, or the gate's stop signal
 *                 seen mid-motion): motion stopped under control, resumable.
 *   BL_ESAFETY    the controller refused or latched a fault, an e-stop, a
 *                 limit, or is not homed: an operator must act; never retried.
 *   BL_EINVAL     the action cannot be expressed on this controller (a
 *                 target its kinematics cannot reach); nothing was sent.
 *   BL_ENOMEM     as everywhere.
 * A backend does not retry motion itself: it may repeat a read, or a write
 * the controller's protocol makes idempotent (a register write; a Modbus
 * segment, whose sequence number the firmware accepts once), but never a
 * line of G-code or anything the controller would run twice.
 */
struct arm_ops {
	const char *name;
	/*
	 * Brings the arm to the machine's home_mm (homing cycle on hardware) and
	 * clears latches that a home clears. 0: homed, at rest at home_mm.
	 */
	int (*home)(struct arm *a, bl_err *err);
	/*
	 * Executes one action along its expanded path (arm_motion), every point
	 * already checked by the gate; returns when the arm has run the whole
	 * path and is at rest (0) or has failed. Polls a->signalled where the
	 * controller streams, holding at once and returning BL_EPAUSED.
	 */
	int (*execute)(struct arm *a, const struct arm_action *act, const struct arm_path *path,
		       bl_err *err);
	/*
	 * Fills st. arm_time_s is motion time: the time the arm has spent
	 * executing actions since open, on the controller's clock where it has
	 * one (the firmware's periods running a segment, GRBL's planned time,
	 * the simulator's); never wall time, so an arm standing still while the
	 * host waits costs nothing.
	 * It never decreases. Cost and the arm-time brake are computed from it.
	 */
	int (*status)(struct arm *a, struct arm_status *st, bl_err *err);
	int (*hold)(struct arm *a, bl_err *err);   /* decelerate and stop, resumable */
	int (*resume)(struct arm *a, bl_err *err);
	int (*stop)(struct arm *a, bl_err *err);   /* stop at once, drop queued motion */
	void (*close)(struct arm *a);              /* also frees the struct arm; safe mid-fault */
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

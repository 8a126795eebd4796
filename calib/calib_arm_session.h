/* calib_arm_session.h: the guided arm registration: jogging through the safety gate or moving by hand, recording where the arm reports the tip. */
#ifndef BL_CALIB_ARM_SESSION_H
#define BL_CALIB_ARM_SESSION_H

#include <stdio.h>

#include "calib/calib.h"
#include "safety/gate.h"

struct calib_arm_session {
	/* set by the caller */
	const struct machine *m;
	struct gate *gate;             /* every motion goes through it */
	struct arm *arm;
	int by_hand;                   /* the operator moves the arm (motors off); no jogging */
	double speed_mm_s;             /* jog speed (calib_arm_jog_speed) */
	double step_mm;                /* default jog step */
	int n_targets;
	double targets[CALIB_ARM_MAX_POINTS][2]; /* canvas mm */
	FILE *in, *out;                /* the operator's terminal */
	/* filled by the session */
	int n;                         /* points recorded */
	double canvas_mm[CALIB_ARM_MAX_POINTS][2];
	arm_point arm_mm[CALIB_ARM_MAX_POINTS];
	int jogs, refused;
};

/* The reduced speed for jogging: a tenth of the machine's soft speed limit, at most 25 mm/s. */
double calib_arm_jog_speed(const struct machine *m);

/*
 * Leads the operator through every target: jogs (typed "x+ 2", "z- 0.5"),
 * a move above the target's nominal position ("go"), each a typed jog or
 * move action through gate_execute at the session's speed; "ok" records
 * where arm_status says the tip is. A refused motion is reported and the
 * session goes on; a pause, deferral or safety stop ends it with that code.
 */
int calib_arm_session_run(struct calib_arm_session *s, bl_err *err);

#endif

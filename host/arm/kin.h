/* kin.h: the machine's kinematics: tool position (mm) to joint values and back, for backends that drive joints. */
#ifndef BL_ARM_KIN_H
#define BL_ARM_KIN_H

#include "arm/action.h"
#include "base/err.h"
#include "config/machine.h"

#define ARM_KIN_JOINTS 4

/*
 * Joint values, in each joint's unit. Cartesian: x, y, z in mm and an unused
 * fourth joint at 0. SCARA: shoulder and elbow in degrees (0 = the link points
 * along machine +x, counter-clockwise positive), z in mm, wrist roll in degrees
 * (held at 0: a round brush has no orientation). A right-handed elbow has a
 * negative elbow angle.
 */
int arm_kin_inverse(const struct machine *m, const arm_point *p, double joint[ARM_KIN_JOINTS],
		    bl_err *err);
void arm_kin_forward(const struct machine *m, const double joint[ARM_KIN_JOINTS], arm_point *p);

/*
 * Longest tool move (mm) a backend may send as one joint-space straight line:
 * joint-linear motion of a SCARA bends away from the tool's straight line, by
 * at most about 0.05 mm over 2 mm pieces for arms of a few hundred mm.
 */
double arm_kin_step_mm(const struct machine *m);

#endif

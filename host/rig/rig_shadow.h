/* rig_shadow.h: a real arm whose completed actions a simulated world repeats, for hardware-in-the-loop runs with simulated paint and camera. */
#ifndef BL_RIG_RIG_SHADOW_H
#define BL_RIG_RIG_SHADOW_H

#include "arm/arm.h"
#include "base/err.h"

struct sim;

/*
 * Wraps real (taking it over: closing the wrapper closes it) so that every
 * action it completes is then executed on world's simulated arm, expanded
 * from that arm's own position; homing homes both. Status, hold, resume and
 * stop are the real arm's (hold and stop reach the simulated one too).
 */
int rig_shadow_arm(struct arm *real, struct sim *world, struct arm **out, bl_err *err);

#endif

/* arm_gcode.h: opens the gcode arm backend (GRBL-protocol arms and plotters over a serial port); the rig registers it. */
#ifndef BL_ARM_ARM_GCODE_H
#define BL_ARM_ARM_GCODE_H

#include "arm/arm.h"

/*
 * Opens m->connection.port through libserialport (baud, parity, 8 data bits,
 * 1 stop bit, no flow control), soft-resets the controller, waits for its
 * GRBL banner, reads $$ and checks connection.grbl_offset_mm against GRBL's
 * travel. Motion is streamed as G53 G1 / G4 lines by character counting into
 * the controller's 128-byte receive buffer, each reply awaited by the motion
 * still queued; hold, resume and stop are GRBL's real-time commands '!', '~'
 * and Ctrl-X, and a stop signal (arm->signalled) holds at once. An ALARM is a
 * fault (BL_ESAFETY) that only homing ($H, or $X without switches) clears;
 * GRBL's lock at power-up is "not homed".
 */
int arm_gcode_open(const struct machine *m, clk *c, struct arm **out, bl_err *err);

#endif

/* arm_gcode.h: opens the gcode arm backend (GRBL-protocol arms and plotters over a serial port); the rig registers it. */
#ifndef BL_ARM_ARM_GCODE_H
#define BL_ARM_ARM_GCODE_H

#include "arm/arm.h"

/*
 * Opens m->connection.port through libserialport (baud, parity, 8 data bits,
 * 1 stop bit, no flow control), soft-resets the controller and waits for its
 * GRBL banner. Motion is streamed as G1/G4 lines by character counting into
 * the controller's 128-byte receive buffer; hold, resume and stop are GRBL's
 * real-time commands '!', '~' and Ctrl-X. An ALARM is a fault (BL_ESAFETY)
 * that only homing ($H, or $X without switches) clears.
 */
int arm_gcode_open(const struct machine *m, clk *c, struct arm **out, bl_err *err);

#endif

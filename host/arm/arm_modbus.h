/* arm_modbus.h: opens the modbus arm backend (brushloop's firmware over Modbus RTU or TCP); the rig registers it. */
#ifndef BL_ARM_ARM_MODBUS_H
#define BL_ARM_ARM_MODBUS_H

#include "arm/arm.h"

/*
 * Connects to the firmware named by m->connection (serial port or host:port,
 * slave address, response timeout), checks its magic and protocol version,
 * sets its host watchdog and enables the drive unless a fault or e-stop is
 * latched (only homing, which the gate puts in front of an operator, clears
 * those). Communication errors are retried a few times, then BL_EIO.
 */
int arm_modbus_open(const struct machine *m, clk *c, struct arm **out, bl_err *err);

/* Latches the firmware's software e-stop: the arm stops at once and stays stopped until homed again. */
int arm_modbus_estop(struct arm *a, bl_err *err);

#endif

/* regmap.h: the Modbus register map of the brushloop arm firmware, shared by the firmware and the host's modbus backend (docs/register-map.md). */
#ifndef BL_FW_REGMAP_H
#define BL_FW_REGMAP_H

/*
 * Plain defines only (no types): this header is included by C99 firmware and
 * by the C11 host alike. Register numbers are 0-based protocol addresses
 * (mbpoll needs -0 to use them as written here). A 32-bit value occupies two
 * registers, high word first; signed values are two's complement.
 *
 * Units: a joint position is in thousandths of its joint's unit, written um
 * throughout: micrometres for a linear joint (mm), millidegrees for a rotary
 * one (degrees); a joint speed in um/s; an acceleration in units/s^2 (mm/s^2
 * or deg/s^2).
 */

#define FW_MAGIC 0x424C          /* "BL" */
#define FW_PROTOCOL_VERSION 2
#define FW_DEFAULT_ADDRESS 1
#define FW_JOINTS 4
#define FW_QUEUE_LEN 32          /* segments the firmware can hold ahead of motion */

/* ---- Input registers (function 4, read-only) ---- */
#define FW_IR_MAGIC 0            /* FW_MAGIC */
#define FW_IR_VERSION 1          /* FW_PROTOCOL_VERSION */
#define FW_IR_STATE 2            /* enum FW_STATE_* */
#define FW_IR_STATUS 3           /* FW_SW_* bits */
#define FW_IR_FAULT 4            /* latched fault, FW_FAULT_* (0 when none) */
#define FW_IR_FAULT_DETAIL 5     /* the joint (1..4) a limit fault is about, else 0 */
#define FW_IR_REFUSAL 6          /* why the last request was refused, FW_FAULT_* (0 none) */
#define FW_IR_QUEUE_LEN 7        /* segments waiting, the running one included */
#define FW_IR_QUEUE_FREE 8       /* segments that can be sent now */
#define FW_IR_LAST_SEQ 9         /* 32-bit: sequence number of the last accepted segment */
#define FW_IR_DONE_SEQ 11        /* 32-bit: sequence number of the last finished segment */
#define FW_IR_ACCEPTED 13        /* 32-bit: segments accepted since boot */
#define FW_IR_DONE 15            /* 32-bit: segments finished since boot */
#define FW_IR_POS 17             /* 4 x 32-bit signed: joint positions, um */
#define FW_IR_TIME_MS 25         /* 32-bit: firmware time since boot, ms */
#define FW_IR_TICKS 27           /* 32-bit: control periods run since boot */
#define FW_IR_GOOD_FRAMES 29     /* 32-bit: frames with a good CRC addressed to us */
#define FW_IR_CRC_ERRORS 31      /* 32-bit: frames dropped for a bad CRC or a bad length */
#define FW_IR_EXCEPTIONS 33      /* 32-bit: exception responses sent */
#define FW_IR_LAST_RX_MS 35      /* 32-bit: firmware time of the last good frame, ms */
#define FW_IR_WD_TRIP_MS 37      /* 32-bit: firmware time the watchdog last tripped, ms (0 never) */
#define FW_IR_STOPPED_MS 39      /* 32-bit: firmware time the last controlled stop reached rest, ms */
#define FW_IR_PERIOD_US 41       /* control period, us */
#define FW_IR_BOARD 42           /* FW_BOARD_* */
#define FW_IR_WD_LAST_RX_MS 43   /* 32-bit: firmware time of the last frame before the watchdog tripped, ms */
#define FW_IR_MOTION_MS 45       /* 32-bit: firmware time a segment ran since boot (motion, dwell, stop ramps), ms */
#define FW_IR_LIMITS 48          /* per joint j (0..3), at FW_IR_LIMITS + 8*j: */
#define FW_LIM_MIN 0             /*   32-bit signed: lowest position, um */
#define FW_LIM_MAX 2             /*   32-bit signed: highest position, um */
#define FW_LIM_SPEED 4           /*   32-bit: highest speed, um/s */
#define FW_LIM_ACCEL 6           /*   32-bit: acceleration of every profile, units/s^2 */
#define FW_IR_COUNT 80

/* ---- Holding registers (function 3 reads, 6 and 16 write) ---- */
#define FW_HR_CONTROL 0          /* FW_CW_* bits: commands, see below */
#define FW_HR_WATCHDOG_MS 1      /* host watchdog, FW_WATCHDOG_MIN_MS..FW_WATCHDOG_MAX_MS */
#define FW_HR_HOME 2             /* 4 x 32-bit signed: joint positions homing sets, um */
#define FW_HR_SEG_FLAGS 10       /* FW_SEG_* */
#define FW_HR_SEG_DWELL_MS 11    /* dwell time of a FW_SEG_DWELL segment, ms */
#define FW_HR_SEG_SPEED 12       /* 32-bit: speed of the joint that moves furthest, um/s */
#define FW_HR_SEG_TARGET 14      /* 4 x 32-bit signed: target joint positions, um */
#define FW_HR_SEG_SEQ 22         /* 32-bit: sequence number; writing its low word (23) sends the segment */
#define FW_HR_COUNT 24
#define FW_SEG_REGS 14           /* FW_HR_SEG_FLAGS..FW_HR_SEG_SEQ+1: one function 16 sends a segment */

#define FW_WATCHDOG_DEFAULT_MS 500
#define FW_WATCHDOG_MIN_MS 20
#define FW_WATCHDOG_MAX_MS 60000

/* Segment flags. */
#define FW_SEG_DWELL 0x0001      /* stay in place for dwell_ms; target and speed are ignored */

/*
 * Control word, in the manner of CiA 402: level bits select the state, edge
 * bits (acting when they go from 0 to 1) give one-shot commands. Transitions
 * happen when the word is written.
 */
#define FW_CW_READY 0x0001       /* level: disabled -> ready; cleared: -> disabled */
#define FW_CW_ENABLE 0x0002      /* level: ready -> enabled (motion allowed); cleared: stop -> ready */
#define FW_CW_HOLD 0x0004        /* level: enabled -> hold (decelerate, keep the queue); cleared: resume */
#define FW_CW_STOP 0x0008        /* edge: controlled stop, drop the queue */
#define FW_CW_HOME 0x0010        /* edge: home (ready or enabled, at rest) */
#define FW_CW_ESTOP 0x0020       /* edge: software e-stop, latches like the input */
#define FW_CW_ESTOP_CLEAR 0x0040 /* edge: e-stop -> disabled, only with the input released */
#define FW_CW_FAULT_RESET 0x0080 /* edge: fault -> disabled */
#define FW_CW_DEFINED 0x00ff     /* the bits above; a word with any other is refused (exception 3, BAD_VALUE) */

/* Status word. */
#define FW_SW_READY 0x0001       /* ready or further */
#define FW_SW_ENABLED 0x0002     /* motion allowed (enabled or hold) */
#define FW_SW_HOLD 0x0004
#define FW_SW_FAULT 0x0008
#define FW_SW_ESTOP 0x0010       /* e-stop latched */
#define FW_SW_ESTOP_INPUT 0x0020 /* the e-stop input is active now */
#define FW_SW_MOVING 0x0040      /* a joint is moving (or a dwell runs) */
#define FW_SW_HOMED 0x0080
#define FW_SW_QUEUE_FULL 0x0100
#define FW_SW_STOPPING 0x0200    /* a controlled stop is decelerating */
#define FW_SW_WATCHDOG 0x0400    /* the host watchdog tripped (until fault reset) */

/* States (FW_IR_STATE). */
#define FW_STATE_DISABLED 0
#define FW_STATE_READY 1
#define FW_STATE_ENABLED 2
#define FW_STATE_HOLD 3
#define FW_STATE_FAULT 4
#define FW_STATE_ESTOP 5

/* Faults (FW_IR_FAULT) and refusals (FW_IR_REFUSAL). */
#define FW_FAULT_NONE 0
#define FW_FAULT_JOINT_LIMIT 1   /* a target beyond a joint limit (detail: the joint) */
#define FW_FAULT_SPEED_LIMIT 2   /* a segment faster than a joint's speed limit (detail: the joint) */
#define FW_FAULT_HOST_TIMEOUT 3  /* the host watchdog tripped while the arm moved */
#define FW_FAULT_SEQ_GAP 4       /* a segment's sequence number skipped one: a segment was lost */
#define FW_FAULT_NOT_HOMED 5     /* motion before homing */
#define FW_FAULT_BAD_SEGMENT 6   /* zero speed, unknown flags */
#define FW_FAULT_NOT_ENABLED 7   /* refusal only: motion sent while not enabled */
#define FW_FAULT_BUSY 8          /* refusal only: queue full or a stop decelerating; send again later */
#define FW_FAULT_BAD_VALUE 9     /* refusal only: a register value out of range */
#define FW_FAULT_COUNT 10

/* Boards (FW_IR_BOARD). */
#define FW_BOARD_NATIVE 1
#define FW_BOARD_MPS2_AN385 2
#define FW_BOARD_STM32F4 3

/* Modbus exception codes the firmware sends. */
#define FW_EX_ILLEGAL_FUNCTION 1
#define FW_EX_ILLEGAL_ADDRESS 2
#define FW_EX_ILLEGAL_VALUE 3
#define FW_EX_BUSY 6             /* queue full: not an error, send the segment again later */

#endif

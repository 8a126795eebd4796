/* arm_gcode_int.h: the gcode backend's connection state and GRBL's line protocol (arm_gcode_wire.c), for its operations (arm_gcode.c). */
#ifndef BL_ARM_ARM_GCODE_INT_H
#define BL_ARM_ARM_GCODE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "arm/arm_backend.h"
#include "base/err.h"
#include "config/machine.h"

struct sp_port;

/*
 * What GRBL does (gnea/grbl 1.1, its source and doc/markdown/interface.md)
 * and what the backend makes of it:
 * - "ok" comes when a line has been executed: a motion line once the planner
 *   (15 blocks) has room for it, seconds after a long move; G4 only after
 *   every queued block and the dwell. Each wait for a reply is therefore given
 *   the motion still queued (gc.q: every line sent and not known finished,
 *   with its planned time), and when it runs out, a '?' says whether the
 *   machine is still moving, held or idle before anything is concluded.
 * - '?', '!', '~' and Ctrl-X bypass the 128-byte receive buffer. A '?' sent
 *   while GRBL resets is lost: a status query asks again.
 * - "Hold:1" is a hold still decelerating, "Hold:0" a complete one.
 * - With homing enabled GRBL starts (and restarts) in Alarm saying only
 *   "[MSG:'$H'|'$X' to unlock]": that asks for homing, it is no fault.
 * - ALARM:1 (hard limit) and ALARM:2 (soft limit) are followed by
 *   "[MSG:Reset to continue]" and nothing is accepted until a soft reset:
 *   this backend sends Ctrl-X at once.
 * - Positions are machine positions (MPos, negative space below the homing
 *   switches) or work positions (WPos = MPos - WCO) as $10 says; brushloop's
 *   machine coordinates are GRBL's MPos + connection.grbl_offset_mm, and every
 *   move is sent in machine coordinates (G53), so no work offset matters.
 */

/* Lines sent and not yet finished that the backend keeps track of. */
#define GC_QUEUE 256
/* The queued motion's planned time is stretched by this before a wait gives up on it. */
#define GC_SLACK 1.5

/* What a line from GRBL was (arm_gc_pump's answer). */
enum { LN_OK = 1, LN_ERROR, LN_ALARM, LN_STATUS, LN_BANNER, LN_OTHER };

struct gc_line {
	int bytes;     /* in GRBL's receive buffer until answered */
	double est_s;  /* planned motion time */
	int block;     /* a planner block (G1) */
	int sync;      /* G4: its answer means every line before it has finished */
	int motion;    /* its time counts as arm time ($H's generous estimate does not) */
	int acked;
};

struct gc {
	struct sp_port *port;
	char where[CFG_PATH_MAX];
	char rx[1024];
	size_t rx_len;
	struct gc_line q[GC_QUEUE];    /* in the order sent; the answered ones first */
	int q_head, q_n, q_acked, unacked_bytes;
	int last_error;                /* error:N of the latest rejected line, 0 none */
	int alarm;                     /* ALARM:N since the last homing, 0 none */
	int need_reset;                /* ALARM:1/2: GRBL accepts nothing until Ctrl-X */
	int locked;                    /* "'$H'|'$X' to unlock" seen: homing wanted */
	char state[16];                /* from the latest status report: Idle, Run, Hold:0, Alarm... */
	double pos[3];                 /* GRBL machine position (MPos), mm */
	double wco[3];
	int have_wco;
	int homed;
	int executing;                 /* in execute: a stop signal holds (homing runs on) */
	/* $10 bit 0, $20, $22, $23, $27, $130..$132, read at connect */
	int s10, s20, s22, s23;
	double s27, travel[3];
	int64_t last_query_ns;
	double feed_sent;              /* modal F of the latest move line, mm/min; < 0 none */
	double arm_time_s;             /* planned time of the motion completed */
	int timeout_ms;
	/* figures, logged at close */
	long lines, retries, max_ok_ms;
	double sum_ok_ms;
	int64_t sent_ns[GC_QUEUE];
};

static inline struct gc *priv(struct arm *a)
{
	return a->priv;
}

/* ---- arm_gcode_wire.c ---- */

/* GRBL's words for ALARM:code. */
const char *arm_gc_alarm_text(int code);
int arm_gc_write_all(struct gc *p, const char *buf, size_t n, bl_err *err);
/* A soft reset, done when GRBL's banner comes. */
int arm_gc_soft_reset(struct gc *p, bl_err *err);
/* Reads one line within ms: its kind (LN_*), 0 on timeout, or a negative error; sends the reset an ALARM:1/2 asks for. */
int arm_gc_pump(struct gc *p, int ms, bl_err *err);
/* A status report, asked for and waited on: p->state and p->pos are fresh. */
int arm_gc_query(struct gc *p, bl_err *err);
int arm_gc_is_moving(const struct gc *p);
int arm_gc_alarm_error(struct gc *p, bl_err *err);
/* The latest line refused (p->last_error) as a failure. */
int arm_gc_line_error(struct gc *p, const char *what, bl_err *err);
/* A stop signal while executing. */
int arm_gc_signalled(struct arm *a);
/* '!' and its confirmation, "Hold:0". */
int arm_gc_hold_now(struct arm *a, bl_err *err);
/* Sends one line by character counting; block: a planner block; est_s: its planned motion time. */
int arm_gc_send_line(struct arm *a, const char *text, double est_s, int block, bl_err *err);
/* Every line sent answered, or the first error. */
int arm_gc_wait_acked(struct arm *a, const char *what, bl_err *err);
/* After a line refused mid-stream (rc): the machine seen at rest before rc is told. */
int arm_gc_settle_after(struct arm *a, int rc, bl_err *err);
/* One line, answered. */
int arm_gc_command(struct arm *a, const char *text, bl_err *err);

#endif

/* arm_gcode.c: the gcode arm backend: GRBL 1.1 controllers over a serial port through libserialport, its operations and its connection (the line protocol: arm_gcode_wire.c). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libserialport.h>

#include "arm/arm_backend.h"
#include "arm/arm_gcode.h"
#include "arm/arm_gcode_int.h"
#include "base/log.h"
#include "config/machine_conn.h"

/* Homing ($H) may take this long, ms. */
#define GC_HOMING_MS 120000

/* ---- the ops ---- */

static int gc_status(struct arm *a, struct arm_status *st, bl_err *err)
{
	struct gc *p = priv(a);
	const double *off = a->m->connection.grbl_offset_mm;
	int rc = arm_gc_query(p, err);

	if (rc)
		return rc;
	memset(st, 0, sizeof(*st));
	st->pos_mm = (arm_point){ p->pos[0] + off[0], p->pos[1] + off[1], p->pos[2] + off[2] };
	st->homed = p->homed && strcmp(p->state, "Alarm");
	st->moving = arm_gc_is_moving(p);
	st->held = !strncmp(p->state, "Hold", 4) || !strncmp(p->state, "Door", 4);
	/* Locked at power-up or after a reset, with no ALARM:N: homing is wanted, no fault. */
	st->fault = !strcmp(p->state, "Alarm") && p->alarm;
	if (st->fault)
		snprintf(st->fault_msg, sizeof(st->fault_msg),
			 "ALARM:%d (%s); clearing it needs an operator (home)", p->alarm,
			 arm_gc_alarm_text(p->alarm));
	else if (!strncmp(p->state, "Door", 4))
		snprintf(st->fault_msg, sizeof(st->fault_msg), "safety door open");
	st->arm_time_s = p->arm_time_s;
	return 0;
}

/* Waits, at the status rate, for GRBL to report Idle. */
static int wait_idle(struct arm *a, double est_s, const char *what, bl_err *err)
{
	struct gc *p = priv(a);
	int64_t end = clk_real_ns() + (int64_t)((GC_SLACK * est_s + 5.0) * 1e9);
	int rc;

	for (;;) {
		if (arm_gc_signalled(a))
			return arm_gc_hold_now(a, err);
		if ((rc = arm_gc_query(p, err)))
			return rc;
		if (!strcmp(p->state, "Idle"))
			return 0;
		if (!strcmp(p->state, "Alarm"))
			return arm_gc_alarm_error(p, err);
		if (clk_real_ns() > end && strncmp(p->state, "Hold", 4))
			return bl_fail(err, BL_ETIMEDOUT, "gcode %s: %s: GRBL still %s after %.1f s",
				       p->where, what, p->state, GC_SLACK * est_s + 5.0);
	}
}

/* A move in GRBL machine coordinates (G53), from a brushloop point; F only when it changes (modal). */
static void move_line(struct arm *a, char *buf, size_t n, arm_point to, double speed_mm_s)
{
	struct gc *p = priv(a);
	const double *off = a->m->connection.grbl_offset_mm;
	double f = round(speed_mm_s * 600.0) / 10.0;
	int k = snprintf(buf, n, "G53 G1 X%.3f Y%.3f Z%.3f", to.x - off[0], to.y - off[1],
			 to.z - off[2]);

	if (f != p->feed_sent && k > 0 && (size_t)k < n)
		snprintf(buf + k, n - (size_t)k, " F%.1f", f);
	p->feed_sent = f;
}

/* After $H: GRBL stands at its pull-off (limits.c), brushloop wants home_mm. */
static int go_home_pose(struct arm *a, bl_err *err)
{
	struct gc *p = priv(a);
	const double *h = a->m->home_mm, *off = a->m->connection.grbl_offset_mm;
	double speed = a->m->limits.soft.speed_mm_s;
	arm_point at = { p->pos[0] + off[0], p->pos[1] + off[1], p->pos[2] + off[2] };
	arm_point over = { h[0], h[1], at.z }, home = { h[0], h[1], h[2] };
	struct arm_segment s1 = { .from = at, .to = over }, s2 = { .from = over, .to = home };
	double est = arm_move_time_s(arm_segment_length(&s1), speed, a->m->limits.soft.accel_mm_s2) +
		     arm_move_time_s(arm_segment_length(&s2), speed, a->m->limits.soft.accel_mm_s2);
	char line[96];
	int rc;

	/* Across at the height homing left it, then down: the switches sit at the top of z. */
	move_line(a, line, sizeof(line), over, speed);
	if ((rc = arm_gc_send_line(a, line, est, 1, err)))
		return rc;
	move_line(a, line, sizeof(line), home, speed);
	if ((rc = arm_gc_send_line(a, line, 0, 1, err)) || (rc = arm_gc_command(a, "G4 P0", err)))
		return rc;
	return wait_idle(a, est, "moving to home_mm", err);
}

/* With switches, $H leaves each axis at its pull-off; anything else means the settings lie. */
static int check_homed_pose(struct gc *p, bl_err *err)
{
	for (int k = 0; k < 3; k++) {
		double want = (p->s23 >> k & 1) ? -p->travel[k] + p->s27 : -p->s27;

		if (fabs(p->pos[k] - want) > 0.5)
			return bl_fail(err, BL_EIO, "gcode %s: after $H GRBL reports MPos %c %.3f, where "
				       "its settings ($23=%d, $27=%.3f, $13%d=%.3f) put the pull-off "
				       "at %.3f", p->where, "XYZ"[k], p->pos[k], p->s23, p->s27, k,
				       p->travel[k], want);
	}
	return 0;
}

static int gc_home(struct arm *a, bl_err *err)
{
	struct gc *p = priv(a);
	int rc = 0, switches = 1;

	if (p->need_reset && (rc = arm_gc_soft_reset(p, err)))
		return rc;
	if ((rc = arm_gc_query(p, err)))
		return rc;
	if (strcmp(p->state, "Idle") && strcmp(p->state, "Alarm"))
		return bl_fail(err, BL_EIO, "gcode %s: GRBL is %s: $H needs it Idle or in Alarm",
			       p->where, p->state);
	rc = arm_gc_send_line(a, "$H", GC_HOMING_MS / 1000.0 / GC_SLACK, 0, err);
	if (rc == 0)
		rc = arm_gc_wait_acked(a, "$H", err);
	if (rc && p->last_error == 5) {
		/* No homing switches ($22=0): unlock and trust the position, set by hand. */
		switches = 0;
		rc = arm_gc_command(a, "$X", err);
	}
	if (rc)
		return rc;
	if ((rc = arm_gc_query(p, err)) || (switches && (rc = check_homed_pose(p, err))))
		return rc;
	p->alarm = 0;
	p->locked = 0;
	if ((rc = arm_gc_command(a, "G21 G90 G94", err)) || (rc = go_home_pose(a, err)))
		return rc;
	p->homed = 1;
	return 0;
}

static int stream_path(struct arm *a, const struct arm_path *path, double *est, bl_err *err)
{
	double accel = a->m->limits.soft.accel_mm_s2;
	char line[96];
	int rc;

	*est = 0;
	for (size_t i = 0; i < path->n; i++) {
		const struct arm_segment *s = &path->seg[i];
		double t;

		if (s->flags & ARM_SEG_DWELL) {
			t = s->dwell_ms / 1000.0;
			snprintf(line, sizeof(line), "G4 P%.3f", t);
		} else if (arm_segment_length(s) > 0.0) {
			t = arm_move_time_s(arm_segment_length(s), s->speed_mm_s, accel);
			move_line(a, line, sizeof(line), s->to, s->speed_mm_s);
		} else {
			continue;
		}
		*est += t;
		if ((rc = arm_gc_send_line(a, line, t, !(s->flags & ARM_SEG_DWELL), err)))
			return rc;
	}
	/* G4 P0 is answered when the planner has emptied: the path is done. */
	if ((rc = arm_gc_send_line(a, "G4 P0", 0, 0, err)))
		return rc;
	return arm_gc_wait_acked(a, "streaming", err);
}

static int gc_execute(struct arm *a, const struct arm_action *act, const struct arm_path *path,
		      bl_err *err)
{
	struct gc *p = priv(a);
	double est;
	int rc;

	(void)act;
	if (!p->homed)
		return bl_fail(err, BL_ESAFETY, "gcode %s: not homed: home it first", p->where);
	if ((rc = arm_gc_query(p, err)))
		return rc;
	if (!strcmp(p->state, "Alarm"))
		return arm_gc_alarm_error(p, err);
	if (!strncmp(p->state, "Hold", 4) || p->q_acked < p->q_n)
		return bl_fail(err, BL_EPAUSED, "gcode %s: held: resume it first", p->where);
	p->executing = 1;
	if (arm_gc_signalled(a))
		rc = arm_gc_hold_now(a, err);
	else if ((rc = stream_path(a, path, &est, err)) == BL_EIO)
		rc = arm_gc_settle_after(a, rc, err);
	else if (rc == 0)
		rc = wait_idle(a, 0, "streaming", err);
	p->executing = 0;
	return rc;
}

static int gc_hold(struct arm *a, bl_err *err)
{
	return arm_gc_write_all(priv(a), "!", 1, err);
}

static int gc_resume(struct arm *a, bl_err *err)
{
	return arm_gc_write_all(priv(a), "~", 1, err);
}

/*
 * Soft reset: GRBL stops at once and drops everything queued; reset during
 * motion it alarms (3), so the next motion needs homing. Like hold and resume
 * this only writes, so another thread may call it while execute runs: that
 * execute then reads the alarm and fails with it.
 */
static int gc_stop(struct arm *a, bl_err *err)
{
	return arm_gc_write_all(priv(a), "\x18", 1, err);
}

static void gc_close(struct arm *a)
{
	struct gc *p = priv(a);

	log_msg(LOG_INFO, "gcode %s: %ld lines, reply after %.1f ms on average (at most %ld ms), "
		"%ld status queries asked again", p->where, p->lines,
		p->lines ? p->sum_ok_ms / (double)p->lines : 0.0, p->max_ok_ms, p->retries);
	sp_close(p->port);
	sp_free_port(p->port);
	free(p);
	free(a);
}

static const struct arm_ops gc_ops = {
	"gcode", gc_home, gc_execute, gc_status, gc_hold, gc_resume, gc_stop, gc_close,
};

/* ---- connecting ---- */

static int sp_check(struct gc *p, enum sp_return rc, const char *what, bl_err *err)
{
	char *msg;

	if (rc >= 0)
		return 0;
	msg = sp_last_error_message();
	bl_fail(err, BL_EIO, "gcode %s: %s: %s", p->where, what,
		rc == SP_ERR_FAIL && msg ? msg : rc == SP_ERR_ARG ? "invalid port" : "failed");
	sp_free_error_message(msg);
	return BL_EIO;
}

static int open_port(struct gc *p, const struct machine *m, bl_err *err)
{
	static const enum sp_parity parity[] = { SP_PARITY_NONE, SP_PARITY_EVEN, SP_PARITY_ODD };
	char real[PATH_MAX];
	int rc;

	/* libserialport knows devices by their /dev name, not by a udev or test symlink. */
	if (!realpath(m->connection.port, real))
		snprintf(real, sizeof(real), "%s", m->connection.port);
	if ((rc = sp_check(p, sp_get_port_by_name(real, &p->port), "no such serial port", err)))
		return rc;
	if ((rc = sp_check(p, sp_open(p->port, SP_MODE_READ_WRITE), "cannot open", err))) {
		sp_free_port(p->port);
		return rc;
	}
	if ((rc = sp_check(p, sp_set_baudrate(p->port, m->connection.baud), "baud rate", err)) ||
	    (rc = sp_check(p, sp_set_bits(p->port, 8), "data bits", err)) ||
	    (rc = sp_check(p, sp_set_parity(p->port, parity[m->connection.parity]), "parity",
			   err)) ||
	    (rc = sp_check(p, sp_set_stopbits(p->port, 1), "stop bits", err)) ||
	    (rc = sp_check(p, sp_set_flowcontrol(p->port, SP_FLOWCONTROL_NONE), "flow control",
			   err))) {
		sp_close(p->port);
		sp_free_port(p->port);
		return rc;
	}
	sp_flush(p->port, SP_BUF_BOTH);
	return 0;
}

/*
 * The machine file against GRBL's settings: with homing ($22=1) GRBL's
 * machine space is -max_travel..0 on each axis ($130..$132; system.c
 * system_check_travel_limits), and the work area, moved by grbl_offset_mm,
 * must lie in it, or GRBL's soft limits would alarm where brushloop allows.
 */
static int check_mapping(struct gc *p, const struct machine *m, bl_err *err)
{
	const double *off = m->connection.grbl_offset_mm;

	if (p->s10 < 0 || p->s22 < 0 || p->travel[0] <= 0 || p->travel[1] <= 0 ||
	    p->travel[2] <= 0)
		return bl_fail(err, BL_EIO, "gcode %s: $$ did not list $10, $22 and $130..$132: not "
			       "GRBL 1.1?", p->where);
	if (!p->s22) {
		log_msg(LOG_WARN, "gcode %s: homing is off ($22=0): GRBL's machine space is wherever "
			"it was switched on; arm.connection.grbl_offset_mm cannot be checked",
			p->where);
		return 0;
	}
	for (int k = 0; k < 3; k++) {
		double lo = m->work_min_mm[k] - off[k], hi = m->work_max_mm[k] - off[k];

		if (lo < -p->travel[k] - 1e-6 || hi > 1e-6)
			return bl_fail(err, BL_EINVAL, "gcode %s: arm.connection.grbl_offset_mm %c %.3f "
				       "puts the work area's %.3f..%.3f at GRBL %.3f..%.3f, outside "
				       "its machine space %.3f..0 ($13%d=%.3f)", p->where, "xyz"[k],
				       off[k], m->work_min_mm[k], m->work_max_mm[k], lo,
				       hi, -p->travel[k], k, p->travel[k]);
	}
	return 0;
}

/* $$ and its settings; 1 when a banner came instead (a reset was still under way). */
static int read_settings(struct gc *p, bl_err *err)
{
	int rc;

	p->s10 = p->s22 = -1;
	if ((rc = arm_gc_write_all(p, "$$\n", 3, err)))
		return rc;
	p->q[0] = (struct gc_line){ .bytes = 3 };
	p->sent_ns[0] = clk_real_ns();
	p->q_n = 1;
	p->unacked_bytes = 3;
	while (p->q_acked < p->q_n) {
		int kind = arm_gc_pump(p, p->timeout_ms + 1000, err);

		if (kind <= 0)
			return kind < 0 ? kind : bl_fail(err, BL_EIO, "gcode %s: no reply to $$",
							 p->where);
		if (kind == LN_ERROR)
			return arm_gc_line_error(p, "$$", err);
		if (kind == LN_BANNER)
			return 1;
	}
	return 0;
}

/* Reset, banner, settings, the mapping checked, a first status (with a work offset if WPos). */
static int handshake(struct gc *p, const struct machine *m, bl_err *err)
{
	int rc;

	/*
	 * The banner read may be an earlier one (power-up, or a board that resets
	 * when its port opens): $$ sent into a reset is lost, and the banner that
	 * follows says so. Then ask again.
	 */
	if ((rc = arm_gc_soft_reset(p, err)))
		return rc;
	for (int i = 0; (rc = read_settings(p, err)) == 1 && i < 3; i++)
		;
	if (rc)
		return rc < 0 ? rc : bl_fail(err, BL_EIO, "gcode %s: GRBL keeps resetting", p->where);
	if ((rc = check_mapping(p, m, err)))
		return rc;
	/* report.c: WCO comes with the first report after a reset, then every 10th to 30th. */
	for (int i = 0; i < 32; i++) {
		if ((rc = arm_gc_query(p, err)))
			return rc;
		if ((p->s10 & 1) || p->have_wco)
			return 0;
	}
	return bl_fail(err, BL_EIO, "gcode %s: GRBL reports WPos ($10=%d) but sent no WCO", p->where,
		       p->s10);
}

/* arm.connection of a GRBL controller: a serial port, and where GRBL's machine space lies in ours. */
int arm_gcode_load_connection(json_obj *o, struct machine_connection *c, bl_err *err)
{
	BL_TRY(machine_conn_link(o, c, MACHINE_LINK_SERIAL, "gcode", err));
	/* GRBL's machine space lies below its homing switches: no default can be right. */
	BL_TRY(json_vec(o, "grbl_offset_mm", JSON_REQUIRED, 3, -MACHINE_COORD_MAX_MM,
			MACHINE_COORD_MAX_MM, c->grbl_offset_mm, err));
	return json_end(o, err);
}

int arm_gcode_open(const struct machine *m, clk *c, struct arm **out, bl_err *err)
{
	struct arm *a = calloc(1, sizeof(*a));
	struct gc *p = calloc(1, sizeof(*p));
	int rc;

	if (!a || !p) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out_free;
	}
	a->ops = &gc_ops;
	a->priv = p;
	a->m = m;
	a->clock = c;
	p->timeout_ms = m->connection.timeout_ms;
	snprintf(p->where, sizeof(p->where), "%s", m->connection.port);
	if ((rc = open_port(p, m, err)))
		goto out_free;
	if ((rc = handshake(p, m, err)))
		goto out_close;
	*out = a;
	return 0;
out_close:
	sp_close(p->port);
	sp_free_port(p->port);
out_free:
	free(p);
	free(a);
	return rc;
}

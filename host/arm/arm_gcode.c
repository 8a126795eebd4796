/* arm_gcode.c: the gcode arm backend: GRBL 1.1 controllers over a serial port through libserialport, streamed by character counting with deadlines from the motion queued. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libserialport.h>

#include "arm/arm_backend.h"
#include "arm/arm_gcode.h"
#include "base/log.h"
#include "config/machine_conn.h"

/*
 * What GRBL does (gnea/grbl 1.1, its source and doc/markdown/interface.md)
 * and what this file makes of it:
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

/* GRBL's serial receive buffer (serial.h), one byte of which stays free. */
#define GC_RX_BYTES 128
/* Lines sent and not yet finished that the backend keeps track of. */
#define GC_QUEUE 256
#define GC_MAX_UNACKED 64
/* GRBL's planner: 15 blocks (planner.h, one of 16 slots kept free). */
#define GC_PLANNER_BLOCKS 15
/* Longest wait on the port between looks at the signal count, ms. */
#define GC_SLICE_MS 50
/* Fewest ms between two status queries: GRBL asks for at most 5 Hz for a display, 20 Hz here while waiting on motion. */
#define GC_POLL_MS 50
/* Homing ($H) may take this long, ms. */
#define GC_HOMING_MS 120000
/* The queued motion's planned time is stretched by this before a wait gives up on it. */
#define GC_SLACK 1.5

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

static struct gc *priv(struct arm *a)
{
	return a->priv;
}

/* doc/csv/alarm_codes_en_US.csv, in brushloop's words. */
static const char *alarm_text(int code)
{
	static const char *const t[] = { "unknown alarm",
		"hard limit: a limit switch triggered; position likely lost, home again",
		"soft limit: a target beyond the machine's travel; position kept",
		"reset while in motion; position likely lost, home again",
		"probe fail: not in the expected state before probing",
		"probe fail: no contact within the travel",
		"homing fail: the cycle was reset", "homing fail: safety door opened",
		"homing fail: pull-off did not clear the switch",
		"homing fail: no switch found within the search distance",
		"homing fail: the second switch of a dual axis did not trigger" };

	return code > 0 && code < (int)(sizeof(t) / sizeof(t[0])) ? t[code] : t[0];
}

/* doc/csv/error_codes_en_US.csv, in brushloop's words. */
static const char *error_text(int code)
{
	static const char *const t[] = { "unknown error",
		[1] = "a G-code word without its letter", [2] = "bad number format",
		[3] = "unknown $ command", [4] = "negative value where a positive one is expected",
		[5] = "homing not enabled ($22)", [6] = "step pulse under 3 us",
		[7] = "EEPROM read failed, defaults restored",
		[8] = "$ command only valid when Idle", [9] = "G-code locked out by an alarm or jog",
		[10] = "soft limits need homing enabled", [11] = "line too long",
		[12] = "step rate over 30 kHz", [13] = "safety door open",
		[14] = "line too long for EEPROM", [15] = "jog target beyond travel",
		[16] = "bad jog command", [17] = "laser mode needs PWM",
		[20] = "unsupported command", [21] = "two commands of one modal group",
		[22] = "feed rate not set", [23] = "command needs an integer value",
		[24] = "two commands that need axis words", [25] = "word repeated",
		[26] = "no axis words where they are needed", [27] = "bad line number",
		[28] = "a required value word is missing", [29] = "G59.x not supported",
		[30] = "G53 only with G0 and G1", [31] = "axis words nothing uses",
		[32] = "arc without an in-plane axis word", [33] = "invalid motion target",
		[34] = "invalid arc radius", [35] = "arc without an in-plane offset word",
		[36] = "unused value words", [37] = "tool length offset on the wrong axis",
		[38] = "tool number too large" };

	return code > 0 && code < (int)(sizeof(t) / sizeof(t[0])) && t[code] ? t[code] : t[0];
}

static int write_all(struct gc *p, const char *buf, size_t n, bl_err *err)
{
	enum sp_return rc = sp_blocking_write(p->port, buf, n, (unsigned)p->timeout_ms);

	if (rc != (int)n) {
		char *msg = rc < 0 ? sp_last_error_message() : NULL;

		bl_fail(err, BL_EIO, "gcode %s: write: %s", p->where, msg ? msg : "timed out");
		sp_free_error_message(msg);
		return BL_EIO;
	}
	return 0;
}

/* ---- what is still queued ---- */

static struct gc_line *q_at(struct gc *p, int i)
{
	return &p->q[(p->q_head + i) % GC_QUEUE];
}

static void q_forget(struct gc *p)
{
	p->q_head = p->q_n = p->q_acked = p->unacked_bytes = 0;
}

/* Drops the answered lines GRBL has certainly finished: beyond the planner's 15 newest blocks. */
static void q_retire(struct gc *p)
{
	int blocks = 0;

	for (int i = 0; i < p->q_acked; i++)
		blocks += q_at(p, i)->block;
	while (p->q_acked && (!q_at(p, 0)->block || blocks > GC_PLANNER_BLOCKS)) {
		blocks -= q_at(p, 0)->block;
		if (q_at(p, 0)->motion)
			p->arm_time_s += q_at(p, 0)->est_s;
		p->q_head = (p->q_head + 1) % GC_QUEUE;
		p->q_n--;
		p->q_acked--;
	}
}

/* Every answered line is done (GRBL said Idle, or a G4 answered). */
static void q_all_done(struct gc *p)
{
	for (int i = 0; i < p->q_acked; i++)
		q_at(p, i)->block = 0;
	q_retire(p);
}

static double q_time_s(struct gc *p)
{
	double s = 0;

	for (int i = 0; i < p->q_n; i++)
		s += q_at(p, i)->est_s;
	return s;
}

/* A reply answers the oldest line unanswered. */
static void q_ack(struct gc *p, int rejected)
{
	struct gc_line *l;
	double ms;

	if (p->q_acked == p->q_n)
		return;
	l = q_at(p, p->q_acked);
	ms = (double)(clk_real_ns() - p->sent_ns[(p->q_head + p->q_acked) % GC_QUEUE]) / 1e6;
	p->sum_ok_ms += ms;
	if (ms > (double)p->max_ok_ms)
		p->max_ok_ms = (long)ms;
	p->unacked_bytes -= l->bytes;
	p->q_acked++;
	if (rejected)
		l->block = 0, l->est_s = 0;
	if (l->sync && !rejected)
		q_all_done(p);
	q_retire(p);
}

/* ---- reading ---- */

static void parse_status(struct gc *p, const char *s)
{
	const char *bar = strchr(s, '|'), *mpos = strstr(s, "|MPos:"), *wpos = strstr(s, "|WPos:");
	const char *wco = strstr(s, "|WCO:");
	size_t n = bar ? (size_t)(bar - s - 1) : 0;
	double v[3];

	if (n >= sizeof(p->state))
		n = sizeof(p->state) - 1;
	memcpy(p->state, s + 1, n);
	p->state[n] = '\0';
	if (wco && sscanf(wco + 5, "%lf,%lf,%lf", &p->wco[0], &p->wco[1], &p->wco[2]) == 3)
		p->have_wco = 1;
	if (mpos && sscanf(mpos + 6, "%lf,%lf,%lf", &v[0], &v[1], &v[2]) == 3)
		memcpy(p->pos, v, sizeof(v));
	else if (wpos && sscanf(wpos + 6, "%lf,%lf,%lf", &v[0], &v[1], &v[2]) == 3)
		for (int k = 0; k < 3; k++)
			p->pos[k] = v[k] + p->wco[k]; /* report.c: WPos = MPos - WCO */
	if (!strcmp(p->state, "Idle") && p->q_acked == p->q_n)
		q_all_done(p);
}

static void parse_setting(struct gc *p, const char *s)
{
	int n;
	double v;

	if (sscanf(s, "$%d=%lf", &n, &v) != 2)
		return;
	switch (n) {
	case 10: p->s10 = (int)v; break;
	case 20: p->s20 = (int)v; break;
	case 22: p->s22 = (int)v; break;
	case 23: p->s23 = (int)v; break;
	case 27: p->s27 = v; break;
	case 130: case 131: case 132: p->travel[n - 130] = v; break;
	default: break;
	}
}

/* Sorts one whole line from GRBL and keeps what it says. */
static int take_line(struct gc *p, const char *s)
{
	if (!strcmp(s, "ok") || !strncmp(s, "error:", 6)) {
		q_ack(p, s[0] == 'e');
		if (s[0] == 'e') {
			p->last_error = atoi(s + 6);
			return LN_ERROR;
		}
		return LN_OK;
	}
	if (!strncmp(s, "ALARM:", 6)) {
		p->alarm = atoi(s + 6) > 0 ? atoi(s + 6) : -1;
		p->homed = 0;
		if (p->alarm == 1 || p->alarm == 2)
			p->need_reset = 1;
		return LN_ALARM;
	}
	if (s[0] == '<') {
		parse_status(p, s);
		return LN_STATUS;
	}
	if (!strncmp(s, "Grbl ", 5)) {
		/* A reset: the receive buffer and the planner are empty again. */
		q_forget(p);
		p->have_wco = 0;
		p->feed_sent = -1;
		return LN_BANNER;
	}
	if (!strcmp(s, "[MSG:'$H'|'$X' to unlock]")) {
		p->locked = 1;
		p->homed = 0;
	} else if (!strcmp(s, "[MSG:Reset to continue]")) {
		p->need_reset = 1;
	} else if (s[0] == '$') {
		parse_setting(p, s);
	}
	return LN_OTHER;
}

/* Reads one line within timeout_ms: its kind, 0 on timeout, or a negative error. */
static int read_line(struct gc *p, int timeout_ms, bl_err *err)
{
	int64_t end = clk_real_ns() + (int64_t)timeout_ms * 1000000;

	for (;;) {
		char *nl = memchr(p->rx, '\n', p->rx_len);
		int64_t left;
		enum sp_return rc;

		if (nl) {
			char s[sizeof(p->rx)];
			size_t n = (size_t)(nl - p->rx);

			memcpy(s, p->rx, n);
			s[n] = '\0';
			if (n && s[n - 1] == '\r')
				s[n - 1] = '\0';
			memmove(p->rx, nl + 1, p->rx_len - n - 1);
			p->rx_len -= n + 1;
			if (s[0])
				return take_line(p, s);
			continue;
		}
		if (p->rx_len == sizeof(p->rx))
			p->rx_len = 0; /* a line longer than any GRBL sends: noise */
		left = (end - clk_real_ns()) / 1000000;
		if (left <= 0)
			return 0;
		rc = sp_blocking_read_next(p->port, p->rx + p->rx_len, sizeof(p->rx) - p->rx_len,
					   (unsigned)left);
		if (rc < 0) {
			char *msg = sp_last_error_message();

			bl_fail(err, BL_EIO, "gcode %s: read: %s", p->where, msg);
			sp_free_error_message(msg);
			return BL_EIO;
		}
		p->rx_len += (size_t)rc;
	}
}

/* Ctrl-X and the banner after it; a '?' now would be lost, so none is sent. */
static int soft_reset(struct gc *p, bl_err *err)
{
	int64_t end = clk_real_ns() + (int64_t)(p->timeout_ms + 2000) * 1000000;
	int rc = write_all(p, "\x18", 1, err), kind;

	while (rc == 0) {
		int left = (int)((end - clk_real_ns()) / 1000000);

		if (left <= 0 || (kind = read_line(p, left, err)) == 0)
			return bl_fail(err, BL_EIO, "gcode %s: no GRBL banner within %d ms after a reset: "
				       "not a GRBL controller?", p->where, p->timeout_ms + 2000);
		if (kind < 0)
			return kind;
		if (kind == LN_BANNER) {
			p->need_reset = 0; /* "[MSG:Reset to continue]" came before it */
			return 0;
		}
	}
	return rc;
}

/* Reads one line within ms; sends the reset an ALARM:1/2 asks for. */
static int pump(struct gc *p, int ms, bl_err *err)
{
	int kind = read_line(p, ms, err), rc;

	if (kind > 0 && p->need_reset && (rc = soft_reset(p, err)))
		return rc;
	return kind;
}

/*
 * Asks for a status report ('?', outside the counted buffer) and waits for
 * it, asking again when it does not come: a reset loses a '?' sent during it.
 * Unless GRBL said Idle last, at most one query every GC_POLL_MS, whoever calls.
 */
static int query(struct gc *p, bl_err *err)
{
	int64_t end = clk_real_ns() + (int64_t)(p->timeout_ms + 1000) * 1000000;
	int try_ms = p->timeout_ms < 100 ? 100 : p->timeout_ms > 250 ? 250 : p->timeout_ms;
	int64_t gap = clk_real_ns() - p->last_query_ns;
	int rc;

	/* Polling a machine in motion or held is what needs a bound; an idle one answers once. */
	if (strcmp(p->state, "Idle") && gap < (int64_t)GC_POLL_MS * 1000000)
		clk_sleep_ns(clk_monotonic(), (int64_t)GC_POLL_MS * 1000000 - gap);
	for (int tries = 0; clk_real_ns() < end; tries++) {
		int64_t try_end = clk_real_ns() + (int64_t)try_ms * 1000000;

		if (tries)
			p->retries++;
		if ((rc = write_all(p, "?", 1, err)))
			return rc;
		p->last_query_ns = clk_real_ns();
		while (clk_real_ns() < try_end) {
			int kind = pump(p, (int)((try_end - clk_real_ns()) / 1000000) + 1, err);

			if (kind < 0)
				return kind;
			if (kind == LN_STATUS)
				return 0;
		}
	}
	return bl_fail(err, BL_EIO, "gcode %s: no status report within %d ms", p->where,
		       p->timeout_ms + 1000);
}

static int is_moving(const struct gc *p)
{
	return !strcmp(p->state, "Run") || !strcmp(p->state, "Jog") ||
	       !strcmp(p->state, "Home") || !strcmp(p->state, "Hold:1");
}

static int alarm_error(struct gc *p, bl_err *err)
{
	return bl_fail(err, BL_ESAFETY, "gcode %s: ALARM:%d (%s)%s; clearing it needs an operator "
		       "(home)", p->where, p->alarm, alarm_text(p->alarm),
		       p->alarm == 1 || p->alarm == 2 ? "; GRBL was soft-reset, as it asks" : "");
}

/* ---- signals: a feed hold at once ---- */

static int signalled(struct arm *a)
{
	return priv(a)->executing && a->signalled && a->signalled() > 0;
}

/* '!' and its confirmation: "Hold:0" (GRBL's complete hold), polled at a bounded rate. */
static int hold_now(struct arm *a, bl_err *err)
{
	struct gc *p = priv(a);
	double speed = a->m->limits.hard.speed_mm_s, accel = a->m->limits.soft.accel_mm_s2;
	int ms = (int)(1000.0 * speed / accel) + p->timeout_ms + 2000;
	int64_t end = clk_real_ns() + (int64_t)ms * 1000000;
	int rc = write_all(p, "!", 1, err);

	while (rc == 0) {
		if ((rc = query(p, err)))
			return rc;
		if (!strcmp(p->state, "Hold:0"))
			return bl_fail(err, BL_EPAUSED, "gcode %s: held after a signal (Hold:0 at "
				       "MPos %.3f,%.3f,%.3f)", p->where, p->pos[0], p->pos[1],
				       p->pos[2]);
		if (!strcmp(p->state, "Alarm"))
			return alarm_error(p, err);
		if (clk_real_ns() > end)
			return bl_fail(err, BL_ESAFETY, "gcode %s: a feed hold not complete within "
				       "%d ms (state %s)", p->where, ms, p->state);
	}
	return rc;
}

/* ---- waiting on GRBL ---- */

/*
 * Reads one line, giving up only when the queued motion (at its planned time,
 * stretched) plus a reply's time has passed without one: then a '?' decides.
 * Moving or held, the wait goes on (a held machine waits for its operator);
 * idle with lines unanswered, or not moving on, is an error.
 */
static int await(struct arm *a, const char *what, bl_err *err)
{
	struct gc *p = priv(a);
	int64_t budget = (int64_t)((GC_SLACK * q_time_s(p) * 1000.0) + p->timeout_ms + 1000);
	int64_t end = clk_real_ns() + budget * 1000000;
	double seen[3];
	int rc;

	memcpy(seen, p->pos, sizeof(seen));
	for (;;) {
		int kind;

		if (signalled(a))
			return hold_now(a, err);
		kind = pump(p, GC_SLICE_MS, err);
		if (kind != 0)
			return kind;
		if (clk_real_ns() < end)
			continue;
		if ((rc = query(p, err)))
			return rc;
		if (!strcmp(p->state, "Alarm"))
			return alarm_error(p, err);
		if (!strncmp(p->state, "Hold", 4) || !strncmp(p->state, "Door", 4) ||
		    (is_moving(p) && memcmp(seen, p->pos, sizeof(seen)))) {
			memcpy(seen, p->pos, sizeof(seen));
			end = clk_real_ns() + budget * 1000000;
			continue;
		}
		return bl_fail(err, BL_EIO, "gcode %s: %s: no reply within %lld ms with %.1f s of "
			       "motion queued, and GRBL is %s at MPos %.3f,%.3f,%.3f", p->where, what,
			       (long long)budget, q_time_s(p), p->state, p->pos[0], p->pos[1],
			       p->pos[2]);
	}
}

static int line_error(struct gc *p, const char *what, bl_err *err)
{
	return bl_fail(err, p->last_error == 9 ? BL_ESAFETY : BL_EIO,
		       "gcode %s: %s refused: error:%d (%s)", p->where, what, p->last_error,
		       error_text(p->last_error));
}

/* Handles one line read: an error or alarm becomes a failure. */
static int check_line(struct gc *p, int kind, const char *what, bl_err *err)
{
	if (kind < 0)
		return kind;
	if (kind == LN_ALARM)
		return alarm_error(p, err);
	if (kind == LN_ERROR)
		return line_error(p, what, err);
	return 0;
}

/*
 * Sends one line with character counting: it goes out only when every line
 * still unanswered plus this one fits the controller's receive buffer.
 */
static int send_line(struct arm *a, const char *text, double est_s, int block, bl_err *err)
{
	struct gc *p = priv(a);
	char buf[96];
	int n = snprintf(buf, sizeof(buf), "%s\n", text), rc, slot;
	struct gc_line *l;

	if (n >= (int)sizeof(buf) || n >= GC_RX_BYTES)
		return bl_fail(err, BL_EINVAL, "gcode: line too long: %s", text);
	while (p->unacked_bytes + n > GC_RX_BYTES - 1 || p->q_n - p->q_acked == GC_MAX_UNACKED ||
	       p->q_n == GC_QUEUE)
		if ((rc = check_line(p, await(a, text, err), text, err)))
			return rc;
	if ((rc = write_all(p, buf, (size_t)n, err)))
		return rc;
	slot = (p->q_head + p->q_n) % GC_QUEUE;
	l = &p->q[slot];
	*l = (struct gc_line){ n, est_s, block, !strncmp(text, "G4", 2), text[0] == 'G', 0 };
	p->sent_ns[slot] = clk_real_ns();
	p->q_n++;
	p->unacked_bytes += n;
	p->lines++;
	return 0;
}

/* Waits until every line sent has been answered. */
static int wait_acked(struct arm *a, const char *what, bl_err *err)
{
	struct gc *p = priv(a);
	int rc;

	while (p->q_acked < p->q_n)
		if ((rc = check_line(p, await(a, what, err), what, err)))
			return rc;
	return 0;
}

/*
 * After a line was refused mid-stream: GRBL goes on with what it had queued.
 * Everything still in flight is answered and the machine seen at rest
 * (G4 P0 answers once the planner is empty) before the error is told.
 */
static int settle_after(struct arm *a, int rc, bl_err *err)
{
	struct gc *p = priv(a);
	bl_err e2 = { 0 };

	if (rc == BL_EIO && p->port && send_line(a, "G4 P0", 0, 0, &e2) == 0) {
		while (p->q_acked < p->q_n) {
			int kind = await(a, "G4 P0", &e2);

			if (kind < 0 || kind == LN_ALARM)
				break;
		}
		if (query(p, &e2) == 0)
			bl_err_prefix(err, "GRBL, %s at MPos %.3f,%.3f,%.3f after it", p->state,
				      p->pos[0], p->pos[1], p->pos[2]);
	}
	return rc;
}

/* Sends a line and waits for its reply. */
static int command(struct arm *a, const char *text, bl_err *err)
{
	int rc = send_line(a, text, 0, 0, err);

	return rc ? rc : wait_acked(a, text, err);
}

/* ---- the ops ---- */

static int gc_status(struct arm *a, struct arm_status *st, bl_err *err)
{
	struct gc *p = priv(a);
	const double *off = a->m->connection.grbl_offset_mm;
	int rc = query(p, err);

	if (rc)
		return rc;
	memset(st, 0, sizeof(*st));
	st->pos_mm = (arm_point){ p->pos[0] + off[0], p->pos[1] + off[1], p->pos[2] + off[2] };
	st->homed = p->homed && strcmp(p->state, "Alarm");
	st->moving = is_moving(p);
	st->held = !strncmp(p->state, "Hold", 4) || !strncmp(p->state, "Door", 4);
	/* Locked at power-up or after a reset, with no ALARM:N: homing is wanted, no fault. */
	st->fault = !strcmp(p->state, "Alarm") && p->alarm;
	if (st->fault)
		snprintf(st->fault_msg, sizeof(st->fault_msg),
			 "ALARM:%d (%s); clearing it needs an operator (home)", p->alarm,
			 alarm_text(p->alarm));
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
		if (signalled(a))
			return hold_now(a, err);
		if ((rc = query(p, err)))
			return rc;
		if (!strcmp(p->state, "Idle"))
			return 0;
		if (!strcmp(p->state, "Alarm"))
			return alarm_error(p, err);
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
	if ((rc = send_line(a, line, est, 1, err)))
		return rc;
	move_line(a, line, sizeof(line), home, speed);
	if ((rc = send_line(a, line, 0, 1, err)) || (rc = command(a, "G4 P0", err)))
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

	if (p->need_reset && (rc = soft_reset(p, err)))
		return rc;
	if ((rc = query(p, err)))
		return rc;
	if (strcmp(p->state, "Idle") && strcmp(p->state, "Alarm"))
		return bl_fail(err, BL_EIO, "gcode %s: GRBL is %s: $H needs it Idle or in Alarm",
			       p->where, p->state);
	rc = send_line(a, "$H", GC_HOMING_MS / 1000.0 / GC_SLACK, 0, err);
	if (rc == 0)
		rc = wait_acked(a, "$H", err);
	if (rc && p->last_error == 5) {
		/* No homing switches ($22=0): unlock and trust the position, set by hand. */
		switches = 0;
		rc = command(a, "$X", err);
	}
	if (rc)
		return rc;
	if ((rc = query(p, err)) || (switches && (rc = check_homed_pose(p, err))))
		return rc;
	p->alarm = 0;
	p->locked = 0;
	if ((rc = command(a, "G21 G90 G94", err)) || (rc = go_home_pose(a, err)))
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
		if ((rc = send_line(a, line, t, !(s->flags & ARM_SEG_DWELL), err)))
			return rc;
	}
	/* G4 P0 is answered when the planner has emptied: the path is done. */
	if ((rc = send_line(a, "G4 P0", 0, 0, err)))
		return rc;
	return wait_acked(a, "streaming", err);
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
	if ((rc = query(p, err)))
		return rc;
	if (!strcmp(p->state, "Alarm"))
		return alarm_error(p, err);
	if (!strncmp(p->state, "Hold", 4) || p->q_acked < p->q_n)
		return bl_fail(err, BL_EPAUSED, "gcode %s: held: resume it first", p->where);
	p->executing = 1;
	if (signalled(a))
		rc = hold_now(a, err);
	else if ((rc = stream_path(a, path, &est, err)) == BL_EIO)
		rc = settle_after(a, rc, err);
	else if (rc == 0)
		rc = wait_idle(a, 0, "streaming", err);
	p->executing = 0;
	return rc;
}

static int gc_hold(struct arm *a, bl_err *err)
{
	return write_all(priv(a), "!", 1, err);
}

static int gc_resume(struct arm *a, bl_err *err)
{
	return write_all(priv(a), "~", 1, err);
}

/*
 * Soft reset: GRBL stops at once and drops everything queued; reset during
 * motion it alarms (3), so the next motion needs homing. Like hold and resume
 * this only writes, so another thread may call it while execute runs: that
 * execute then reads the alarm and fails with it.
 */
static int gc_stop(struct arm *a, bl_err *err)
{
	return write_all(priv(a), "\x18", 1, err);
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
	if ((rc = write_all(p, "$$\n", 3, err)))
		return rc;
	p->q[0] = (struct gc_line){ .bytes = 3 };
	p->sent_ns[0] = clk_real_ns();
	p->q_n = 1;
	p->unacked_bytes = 3;
	while (p->q_acked < p->q_n) {
		int kind = pump(p, p->timeout_ms + 1000, err);

		if (kind <= 0)
			return kind < 0 ? kind : bl_fail(err, BL_EIO, "gcode %s: no reply to $$",
							 p->where);
		if (kind == LN_ERROR)
			return line_error(p, "$$", err);
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
	if ((rc = soft_reset(p, err)))
		return rc;
	for (int i = 0; (rc = read_settings(p, err)) == 1 && i < 3; i++)
		;
	if (rc)
		return rc < 0 ? rc : bl_fail(err, BL_EIO, "gcode %s: GRBL keeps resetting", p->where);
	if ((rc = check_mapping(p, m, err)))
		return rc;
	/* report.c: WCO comes with the first report after a reset, then every 10th to 30th. */
	for (int i = 0; i < 32; i++) {
		if ((rc = query(p, err)))
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

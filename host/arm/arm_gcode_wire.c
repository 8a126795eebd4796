/* arm_gcode_wire.c: the gcode backend's side of GRBL's line protocol: writing and reading lines, what each says, the queue of lines unfinished, status queries, a feed hold, and character-counted sending with its waits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libserialport.h>

#include "arm/arm_gcode_int.h"

/* GRBL's serial receive buffer (serial.h), one byte of which stays free. */
#define GC_RX_BYTES 128
#define GC_MAX_UNACKED 64
/* GRBL's planner: 15 blocks (planner.h, one of 16 slots kept free). */
#define GC_PLANNER_BLOCKS 15
/* Longest wait on the port between looks at the signal count, ms. */
#define GC_SLICE_MS 50
/* Fewest ms between two status queries: GRBL asks for at most 5 Hz for a display, 20 Hz here while waiting on motion. */
#define GC_POLL_MS 50

/* doc/csv/alarm_codes_en_US.csv, in brushloop's words. */
const char *arm_gc_alarm_text(int code)
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

int arm_gc_write_all(struct gc *p, const char *buf, size_t n, bl_err *err)
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
int arm_gc_soft_reset(struct gc *p, bl_err *err)
{
	int64_t end = clk_real_ns() + (int64_t)(p->timeout_ms + 2000) * 1000000;
	int rc = arm_gc_write_all(p, "\x18", 1, err), kind;

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
int arm_gc_pump(struct gc *p, int ms, bl_err *err)
{
	int kind = read_line(p, ms, err), rc;

	if (kind > 0 && p->need_reset && (rc = arm_gc_soft_reset(p, err)))
		return rc;
	return kind;
}

/*
 * Asks for a status report ('?', outside the counted buffer) and waits for
 * it, asking again when it does not come: a reset loses a '?' sent during it.
 * Unless GRBL said Idle last, at most one query every GC_POLL_MS, whoever calls.
 */
int arm_gc_query(struct gc *p, bl_err *err)
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
		if ((rc = arm_gc_write_all(p, "?", 1, err)))
			return rc;
		p->last_query_ns = clk_real_ns();
		while (clk_real_ns() < try_end) {
			int kind = arm_gc_pump(p, (int)((try_end - clk_real_ns()) / 1000000) + 1, err);

			if (kind < 0)
				return kind;
			if (kind == LN_STATUS)
				return 0;
		}
	}
	return bl_fail(err, BL_EIO, "gcode %s: no status report within %d ms", p->where,
		       p->timeout_ms + 1000);
}

int arm_gc_is_moving(const struct gc *p)
{
	return !strcmp(p->state, "Run") || !strcmp(p->state, "Jog") ||
	       !strcmp(p->state, "Home") || !strcmp(p->state, "Hold:1");
}

int arm_gc_alarm_error(struct gc *p, bl_err *err)
{
	return bl_fail(err, BL_ESAFETY, "gcode %s: ALARM:%d (%s)%s; clearing it needs an operator "
		       "(home)", p->where, p->alarm, arm_gc_alarm_text(p->alarm),
		       p->alarm == 1 || p->alarm == 2 ? "; GRBL was soft-reset, as it asks" : "");
}

/* ---- signals: a feed hold at once ---- */

int arm_gc_signalled(struct arm *a)
{
	return priv(a)->executing && a->signalled && a->signalled() > 0;
}

/* '!' and its confirmation: "Hold:0" (GRBL's complete hold), polled at a bounded rate. */
int arm_gc_hold_now(struct arm *a, bl_err *err)
{
	struct gc *p = priv(a);
	double speed = a->m->limits.hard.speed_mm_s, accel = a->m->limits.soft.accel_mm_s2;
	int ms = (int)(1000.0 * speed / accel) + p->timeout_ms + 2000;
	int64_t end = clk_real_ns() + (int64_t)ms * 1000000;
	int rc = arm_gc_write_all(p, "!", 1, err);

	while (rc == 0) {
		if ((rc = arm_gc_query(p, err)))
			return rc;
		if (!strcmp(p->state, "Hold:0"))
			return bl_fail(err, BL_EPAUSED, "gcode %s: held after a signal (Hold:0 at "
				       "MPos %.3f,%.3f,%.3f)", p->where, p->pos[0], p->pos[1],
				       p->pos[2]);
		if (!strcmp(p->state, "Alarm"))
			return arm_gc_alarm_error(p, err);
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

		if (arm_gc_signalled(a))
			return arm_gc_hold_now(a, err);
		kind = arm_gc_pump(p, GC_SLICE_MS, err);
		if (kind != 0)
			return kind;
		if (clk_real_ns() < end)
			continue;
		if ((rc = arm_gc_query(p, err)))
			return rc;
		if (!strcmp(p->state, "Alarm"))
			return arm_gc_alarm_error(p, err);
		if (!strncmp(p->state, "Hold", 4) || !strncmp(p->state, "Door", 4) ||
		    (arm_gc_is_moving(p) && memcmp(seen, p->pos, sizeof(seen)))) {
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

int arm_gc_line_error(struct gc *p, const char *what, bl_err *err)
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
		return arm_gc_alarm_error(p, err);
	if (kind == LN_ERROR)
		return arm_gc_line_error(p, what, err);
	return 0;
}

/*
 * Sends one line with character counting: it goes out only when every line
 * still unanswered plus this one fits the controller's receive buffer.
 */
int arm_gc_send_line(struct arm *a, const char *text, double est_s, int block, bl_err *err)
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
	if ((rc = arm_gc_write_all(p, buf, (size_t)n, err)))
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
int arm_gc_wait_acked(struct arm *a, const char *what, bl_err *err)
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
int arm_gc_settle_after(struct arm *a, int rc, bl_err *err)
{
	struct gc *p = priv(a);
	bl_err e2 = { 0 };

	if (rc == BL_EIO && p->port && arm_gc_send_line(a, "G4 P0", 0, 0, &e2) == 0) {
		while (p->q_acked < p->q_n) {
			int kind = await(a, "G4 P0", &e2);

			if (kind < 0 || kind == LN_ALARM)
				break;
		}
		if (arm_gc_query(p, &e2) == 0)
			bl_err_prefix(err, "GRBL, %s at MPos %.3f,%.3f,%.3f after it", p->state,
				      p->pos[0], p->pos[1], p->pos[2]);
	}
	return rc;
}

/* Sends a line and waits for its reply. */
int arm_gc_command(struct arm *a, const char *text, bl_err *err)
{
	int rc = arm_gc_send_line(a, text, 0, 0, err);

	return rc ? rc : arm_gc_wait_acked(a, text, err);
}

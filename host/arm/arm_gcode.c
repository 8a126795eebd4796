/* arm_gcode.c: the gcode arm backend: GRBL-protocol controllers over a serial port through libserialport, with character-counting streaming. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libserialport.h>

#include "arm/arm_backend.h"
#include "arm/arm_gcode.h"

/* GRBL's serial receive buffer: lines sent and not yet acknowledged stay below it. */
#define GC_RX_BYTES 128
#define GC_MAX_INFLIGHT 64
/* Time between status queries while motion runs, ns. */
#define GC_POLL_NS 20000000
/* Homing ($H) may take this long, ms. */
#define GC_HOMING_MS 120000

struct gc {
	struct sp_port *port;
	char where[CFG_PATH_MAX];
	char rx[1024];
	size_t rx_len;
	int inflight[GC_MAX_INFLIGHT]; /* bytes of each line not yet acknowledged */
	int in_head, in_count, in_bytes;
	int last_error;                /* error:N of the latest rejected line, 0 none */
	int alarm;                     /* ALARM:N seen and not cleared, 0 none */
	char state[16];                /* from the latest status report: Idle, Run, Hold:0, Alarm... */
	double mpos[3];
	int have_status;
	int homed;
	int64_t t0_ns;
	int timeout_ms;
};

static struct gc *priv(struct arm *a)
{
	return a->priv;
}

static const char *alarm_text(int code)
{
	static const char *const t[] = { "unknown alarm", "hard limit triggered",
		"soft limit: a target beyond the machine's travel", "reset while in motion",
		"probe fail", "probe fail", "homing fail: reset", "homing fail: door open",
		"homing fail: pull-off", "homing fail: no switch found" };

	return code > 0 && code < (int)(sizeof(t) / sizeof(t[0])) ? t[code] : t[0];
}

static const char *error_text(int code)
{
	switch (code) {
	case 1: return "G-code words consist of a letter and a value";
	case 2: return "bad number format";
	case 3: return "unknown $ command";
	case 5: return "homing not enabled";
	case 9: return "locked by an alarm";
	case 15: return "travel exceeded";
	case 20: return "unsupported command";
	case 22: return "feed rate not set";
	case 33: return "invalid target";
	default: return "refused";
	}
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

static void parse_status(struct gc *p, const char *s)
{
	const char *bar = strchr(s, '|'), *pos = strstr(s, "Pos:");
	size_t n = bar ? (size_t)(bar - s - 1) : 0;

	if (n >= sizeof(p->state))
		n = sizeof(p->state) - 1;
	memcpy(p->state, s + 1, n);
	p->state[n] = '\0';
	/* MPos (machine) is what brushloop works in; WPos without offsets is the same. */
	if (pos)
		sscanf(pos + 4, "%lf,%lf,%lf", &p->mpos[0], &p->mpos[1], &p->mpos[2]);
	p->have_status = 1;
}

enum { LN_OK = 1, LN_ERROR, LN_ALARM, LN_STATUS, LN_BANNER, LN_OTHER };

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
			if (!s[0])
				continue;
			if (!strcmp(s, "ok") || !strncmp(s, "error:", 6)) {
				/* Each reply acknowledges the oldest line in flight. */
				if (p->in_count) {
					p->in_bytes -= p->inflight[p->in_head];
					p->in_head = (p->in_head + 1) % GC_MAX_INFLIGHT;
					p->in_count--;
				}
				if (s[0] == 'e') {
					p->last_error = atoi(s + 6);
					return LN_ERROR;
				}
				return LN_OK;
			}
			if (!strncmp(s, "ALARM:", 6)) {
				p->alarm = atoi(s + 6);
				if (!p->alarm)
					p->alarm = -1;
				return LN_ALARM;
			}
			if (s[0] == '<') {
				parse_status(p, s);
				return LN_STATUS;
			}
			if (!strncmp(s, "Grbl ", 5)) {
				/* A reset: the controller's receive buffer is empty again. */
				p->in_count = p->in_bytes = 0;
				return LN_BANNER;
			}
			return LN_OTHER;
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

static int alarm_error(struct gc *p, bl_err *err)
{
	return bl_fail(err, BL_ESAFETY,
		       "gcode %s: ALARM:%d (%s); clearing it needs an operator (home)", p->where,
		       p->alarm, alarm_text(p->alarm));
}

static int line_error(struct gc *p, const char *line, bl_err *err)
{
	return bl_fail(err, p->last_error == 9 ? BL_ESAFETY : BL_EIO,
		       "gcode %s: '%s' refused: error:%d (%s)", p->where, line, p->last_error,
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
 * still unacknowledged plus this one fits the controller's receive buffer.
 */
static int send_line(struct gc *p, const char *text, bl_err *err)
{
	char buf[96];
	int n = snprintf(buf, sizeof(buf), "%s\n", text), rc;

	if (n >= (int)sizeof(buf) || n >= GC_RX_BYTES)
		return bl_fail(err, BL_EINVAL, "gcode: line too long: %s", text);
	while (p->in_bytes + n > GC_RX_BYTES - 1 || p->in_count == GC_MAX_INFLIGHT) {
		int kind = read_line(p, p->timeout_ms + 2000, err);

		if (kind == 0)
			return bl_fail(err, BL_EIO, "gcode %s: no reply within %d ms", p->where,
				       p->timeout_ms + 2000);
		if ((rc = check_line(p, kind, text, err)))
			return rc;
	}
	if ((rc = write_all(p, buf, (size_t)n, err)))
		return rc;
	p->inflight[(p->in_head + p->in_count) % GC_MAX_INFLIGHT] = n;
	p->in_count++;
	p->in_bytes += n;
	return 0;
}

/* Waits until every line sent has been acknowledged. */
static int wait_acked(struct gc *p, int timeout_ms, const char *what, bl_err *err)
{
	int64_t end = clk_real_ns() + (int64_t)timeout_ms * 1000000;
	int rc;

	while (p->in_count) {
		int left = (int)((end - clk_real_ns()) / 1000000), kind;

		if (left <= 0 || (kind = read_line(p, left, err)) == 0)
			return bl_fail(err, BL_EIO, "gcode %s: %s: no reply within %d ms", p->where,
				       what, timeout_ms);
		if ((rc = check_line(p, kind, what, err)))
			return rc;
	}
	return 0;
}

/* Sends a line and waits for its reply. */
static int command(struct gc *p, const char *text, int timeout_ms, bl_err *err)
{
	int rc = send_line(p, text, err);

	return rc ? rc : wait_acked(p, timeout_ms, text, err);
}

/*
 * Asks for a status report ('?', outside the counted buffer) and waits for
 * it. An alarm on the way is a failure when fail_on_alarm, else just noted.
 */
static int query(struct gc *p, int fail_on_alarm, bl_err *err)
{
	int64_t end = clk_real_ns() + (int64_t)(p->timeout_ms + 1000) * 1000000;
	int rc;

	if ((rc = write_all(p, "?", 1, err)))
		return rc;
	for (;;) {
		int left = (int)((end - clk_real_ns()) / 1000000), kind;

		if (left <= 0 || (kind = read_line(p, left, err)) == 0)
			return bl_fail(err, BL_EIO, "gcode %s: no status report within %d ms",
				       p->where, p->timeout_ms + 1000);
		if (kind < 0)
			return kind;
		if (kind == LN_ALARM && fail_on_alarm)
			return alarm_error(p, err);
		if (kind == LN_STATUS)
			return 0;
	}
}

static int gc_status(struct arm *a, struct arm_status *st, bl_err *err)
{
	struct gc *p = priv(a);
	int rc = query(p, 0, err);

	if (rc)
		return rc;
	memset(st, 0, sizeof(*st));
	st->pos_mm = (arm_point){ p->mpos[0], p->mpos[1], p->mpos[2] };
	st->homed = p->homed;
	st->moving = !strcmp(p->state, "Run") || !strcmp(p->state, "Jog") ||
		     !strcmp(p->state, "Home") || !strcmp(p->state, "Hold:0");
	st->held = !strncmp(p->state, "Hold", 4) || !strncmp(p->state, "Door", 4);
	st->fault = !strcmp(p->state, "Alarm");
	if (st->fault)
		snprintf(st->fault_msg, sizeof(st->fault_msg),
			 "ALARM:%d (%s); clearing it needs an operator (home)", p->alarm,
			 alarm_text(p->alarm));
	else if (!strncmp(p->state, "Door", 4))
		snprintf(st->fault_msg, sizeof(st->fault_msg), "safety door open");
	st->arm_time_s = (double)(clk_real_ns() - p->t0_ns) / 1e9;
	return 0;
}

static int gc_home(struct arm *a, bl_err *err)
{
	struct gc *p = priv(a);
	int rc = command(p, "$H", GC_HOMING_MS, err);

	if (rc && p->last_error == 5) {
		/* No homing switches: unlock and trust the controller's position, set by hand. */
		rc = command(p, "$X", p->timeout_ms + 1000, err);
	}
	if (rc)
		return rc;
	p->alarm = 0;
	p->homed = 1;
	return command(p, "G21 G90", p->timeout_ms + 1000, err);
}

static int gc_execute(struct arm *a, const struct arm_action *act, const struct arm_path *path,
		      bl_err *err)
{
	struct gc *p = priv(a);
	double est = 0.0, accel = a->m->limits.soft.accel_mm_s2;
	int64_t deadline, next_poll;
	char line[96];
	int rc;

	(void)act;
	if (!p->homed)
		return bl_fail(err, BL_ESAFETY, "gcode %s: not homed: home it first", p->where);
	if ((rc = query(p, 1, err)))
		return rc;
	if (!strcmp(p->state, "Alarm"))
		return alarm_error(p, err);
	if (!strncmp(p->state, "Hold", 4))
		return bl_fail(err, BL_EPAUSED, "gcode %s: held: resume it first", p->where);
	for (size_t i = 0; i < path->n; i++)
		est += (path->seg[i].flags & ARM_SEG_DWELL) ? path->seg[i].dwell_ms / 1000.0 :
		       arm_move_time_s(arm_segment_length(&path->seg[i]), path->seg[i].speed_mm_s,
				       accel);
	deadline = clk_real_ns() + (int64_t)((2.0 * est + 0.01 * (double)path->n + 5.0) * 1e9);
	next_poll = clk_real_ns() + GC_POLL_NS;
	for (size_t i = 0; i < path->n; i++) {
		const struct arm_segment *s = &path->seg[i];

		if (s->flags & ARM_SEG_DWELL)
			snprintf(line, sizeof(line), "G4 P%.3f", s->dwell_ms / 1000.0);
		else if (arm_segment_length(s) > 0.0)
			snprintf(line, sizeof(line), "G1 X%.3f Y%.3f Z%.3f F%.1f", s->to.x, s->to.y,
				 s->to.z, s->speed_mm_s * 60.0);
		else
			continue;
		if ((rc = send_line(p, line, err)))
			return rc;
		/* A status query now and then: it sees an alarm before the buffer drains. */
		if (clk_real_ns() > next_poll) {
			if ((rc = query(p, 1, err)))
				return rc;
			next_poll = clk_real_ns() + GC_POLL_NS;
		}
		if (clk_real_ns() > deadline)
			return bl_fail(err, BL_ETIMEDOUT, "gcode %s: streaming took longer than %.1f s",
				       p->where, 2.0 * est + 5.0);
	}
	if ((rc = wait_acked(p, (int)((deadline - clk_real_ns()) / 1000000) + 1, "streaming",
			     err)))
		return rc;
	for (;;) {
		if ((rc = query(p, 1, err)))
			return rc;
		if (!strcmp(p->state, "Idle"))
			return 0;
		if (!strcmp(p->state, "Alarm"))
			return alarm_error(p, err);
		if (clk_real_ns() > deadline)
			return bl_fail(err, BL_ETIMEDOUT,
				       "gcode %s: motion not done after %.1f s (planned %.1f s)",
				       p->where, 2.0 * est + 5.0, est);
		clk_sleep_ns(a->clock, GC_POLL_NS);
	}
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

	sp_close(p->port);
	sp_free_port(p->port);
	free(p);
	free(a);
}

static const struct arm_ops gc_ops = {
	"gcode", gc_home, gc_execute, gc_status, gc_hold, gc_resume, gc_stop, gc_close,
};

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

int arm_gcode_open(const struct machine *m, clk *c, struct arm **out, bl_err *err)
{
	static const enum sp_parity parity[] = { SP_PARITY_NONE, SP_PARITY_EVEN, SP_PARITY_ODD };
	struct arm *a = calloc(1, sizeof(*a));
	struct gc *p = calloc(1, sizeof(*p));
	char real[PATH_MAX];
	int rc, kind;

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
	/* libserialport knows devices by their /dev name, not by a udev or test symlink. */
	if (!realpath(m->connection.port, real))
		snprintf(real, sizeof(real), "%s", m->connection.port);
	if ((rc = sp_check(p, sp_get_port_by_name(real, &p->port), "no such serial port", err)))
		goto out_free;
	if ((rc = sp_check(p, sp_open(p->port, SP_MODE_READ_WRITE), "cannot open", err)))
		goto out_free_port;
	if ((rc = sp_check(p, sp_set_baudrate(p->port, m->connection.baud), "baud rate", err)) ||
	    (rc = sp_check(p, sp_set_bits(p->port, 8), "data bits", err)) ||
	    (rc = sp_check(p, sp_set_parity(p->port, parity[m->connection.parity]), "parity",
			   err)) ||
	    (rc = sp_check(p, sp_set_stopbits(p->port, 1), "stop bits", err)) ||
	    (rc = sp_check(p, sp_set_flowcontrol(p->port, SP_FLOWCONTROL_NONE), "flow control",
			   err)))
		goto out_close;
	sp_flush(p->port, SP_BUF_BOTH);
	/* A soft reset puts GRBL in a known state and makes it say who it is. */
	if ((rc = write_all(p, "\x18", 1, err)))
		goto out_close;
	while ((kind = read_line(p, p->timeout_ms + 2000, err)) > 0 && kind != LN_BANNER)
		;
	if (kind <= 0) {
		rc = kind < 0 ? kind : bl_fail(err, BL_EIO,
					       "gcode %s: no GRBL banner within %d ms after a reset: not a GRBL controller?",
					       p->where, p->timeout_ms + 2000);
		goto out_close;
	}
	p->t0_ns = clk_real_ns();
	if ((rc = query(p, 0, err)))
		goto out_close;
	*out = a;
	return 0;
out_close:
	sp_close(p->port);
out_free_port:
	sp_free_port(p->port);
out_free:
	free(p);
	free(a);
	return rc;
}

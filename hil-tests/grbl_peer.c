/* grbl_peer.c: a GRBL 1.1 controller on a pseudo-terminal for the gcode backend's tests, following gnea/grbl's source and doc/markdown point by point (each rule names its file). */
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

/*
 * What it follows (gnea/grbl at bfb67f0, read, not copied):
 * - serial.c: a 128-byte receive ring (one byte kept free, so 127 usable);
 *   '?', '!', '~' and Ctrl-X are picked off in the receive interrupt and never
 *   reach it. A byte that does not fit is dropped.
 * - protocol.c protocol_main_loop: a line is parsed when its newline is read;
 *   its "ok" or "error:N" is sent when the line has been executed. '$' lines
 *   run as system commands, G-code in Alarm answers error:9.
 * - motion_control.c mc_line: with the planner full (planner.h: 16 slots, one
 *   kept free, so 15 blocks, the executing one among them) the parsed line
 *   waits for a block to finish, so its "ok" comes only then, and no further
 *   line is read meanwhile. mc_dwell: G4 first waits until the planner is
 *   empty, then dwells; its "ok" comes after both.
 * - protocol.c protocol_exec_rt_system: '!' in a cycle decelerates (report.c:
 *   "Hold:1") and, stopped, is complete ("Hold:0"); '!' while idle is a
 *   complete hold at once. While suspended the main loop reads no line. '~'
 *   resumes a complete hold (to Idle when nothing is queued).
 * - limits.c limits_soft_check: a target beyond travel (machine space
 *   -max_travel..0 per axis, system.c system_check_travel_limits) holds the
 *   running cycle to a stop, then ALARM:2 and "[MSG:Reset to continue]", and
 *   nothing more (no line, no status report) until Ctrl-X; report.c
 *   report_alarm_message, report_feedback_message.
 * - motion_control.c mc_reset: Ctrl-X while moving (cycle, decelerating hold,
 *   homing) is ALARM:3; main.c: after a reset the alarm state survives, the
 *   receive buffer and every pending flag are cleared (a '?' received during
 *   the reset is lost), the banner is printed and, in Alarm,
 *   "[MSG:'$H'|'$X' to unlock]" (protocol.c) without any ALARM:N line.
 * - main.c HOMING_INIT_LOCK (config.h, on by default): with homing enabled
 *   ($22=1) power-up is in Alarm, printing only that message.
 * - limits.c limits_go_home: after homing an axis stands at -pull-off ($27),
 *   or at -max_travel + pull-off when $23 homes it towards negative.
 * - report.c report_realtime_status: MPos when $10 bit 0 is set, else WPos
 *   (machine less the work offset); "|Bf:" when bit 1 is; "|WCO:" on the
 *   first report and then every 10th (idle) or 30th (busy) (config.h).
 * - system.c system_execute_line: $$ (error:8 in a cycle or hold), $#, $X
 *   ("[MSG:Caution: Unlocked]"), $H (error:5 without $22, error:8 unless
 *   Idle or Alarm), $N=V settings (Idle or Alarm only).
 * - gcode.c: G0 G1 G4 G10 L2/L20 P0/P1 G17 G21 G53 G54 G90 G94, modal motion.
 * Simplified, and said so: motion runs at the programmed feed from the
 * block's start (no acceleration planning), a hold decelerates at $120 mm/s2.
 */

#define RX_SIZE 128      /* serial.c RX_RING_BUFFER: one byte stays free */
#define PLANNER_BLOCKS 15 /* planner.h BLOCK_BUFFER_SIZE 16, one slot kept free */
#define RAPID_MM_S 500.0 /* $110-$112 default 500 mm/min is slow: this peer's rapid */
#define RESET_S 0.02      /* real time a reset takes here: bytes arriving in it are lost */

enum state { IDLE, RUN, HOLD, HOME, ALARM };

struct block {
	double to[3];       /* machine position, mm */
	double feed_mm_s;
};

static struct {
	int fd;
	enum state st;
	int hold_done;       /* in HOLD: stopped ("Hold:0") */
	int soft_stop;       /* decelerating before a soft-limit alarm */
	int critical;        /* after ALARM:1/2: only Ctrl-X is heard */
	int owed_ok;         /* the line that hit a soft limit: gcode.c returns ok after the reset */
	double reset_until;  /* a reset in progress until then (real s) */
	double pos[3], g54[3], g92[3];
	double v_mm_s;       /* current speed */
	int motion;          /* modal G0/G1 */
	double feed_mm_min;  /* modal F */
	/* settings */
	int s10, s20, s22, s23;
	double s27, s120, travel[3];
	double speedup;
	char rx[RX_SIZE];
	int rx_len;
	struct block q[PLANNER_BLOCKS];
	int q_head, q_len;
	/* the line parsed and not yet answered: a block waiting for room, a dwell, homing */
	int waiting;          /* 0 none, 1 block, 2 dwell, 3 homing */
	struct block wait_block;
	double dwell_left_s, home_left_s;
	double parsed_at;     /* real time the waiting line was parsed */
	int wco_counter;
	/* what the tests read afterwards */
	long lines, overflows, resets, max_rx, statuses, lost_statuses, blocks, dwells, holds;
	double mm, max_ok_wait_s, sum_ok_wait_s;
	long ok_waits;
} g;

static volatile sig_atomic_t stop_flag;

static void on_term(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > 0 && write(g.fd, buf, (size_t)n) < 0)
		return; /* nobody listens: as a real controller, talk into the void */
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* A line's answer; how long it waited after it was parsed is a statistic. */
static void answer(const char *s, double parsed_at)
{
	double w = now_s() - parsed_at;

	g.ok_waits++;
	g.sum_ok_wait_s += w;
	if (w > g.max_ok_wait_s)
		g.max_ok_wait_s = w;
	say("%s\r\n", s);
}

static void banner(void)
{
	say("\r\nGrbl 1.1h ['$' for help]\r\n");
	if (g.st == ALARM)
		say("[MSG:'$H'|'$X' to unlock]\r\n");
}

static void alarm_now(int code)
{
	g.st = ALARM;
	g.q_len = 0;
	g.waiting = 0;
	g.v_mm_s = 0;
	say("ALARM:%d\r\n", code);
	if (code == 1 || code == 2) {
		say("[MSG:Reset to continue]\r\n");
		g.critical = 1;
	}
}

static void status_report(void)
{
	static const char *const names[] = { "Idle", "Run", "Hold", "Home", "Alarm" };
	int busy = g.st == RUN || g.st == HOLD || g.st == HOME;
	double wco[3], p[3];

	for (int k = 0; k < 3; k++) {
		wco[k] = g.g54[k] + g.g92[k];
		p[k] = (g.s10 & 1) ? g.pos[k] : g.pos[k] - wco[k];
	}
	say("<%s%s|%s:%.3f,%.3f,%.3f", names[g.st],
	    g.st == HOLD ? (g.hold_done ? ":0" : ":1") : "", (g.s10 & 1) ? "MPos" : "WPos", p[0],
	    p[1], p[2]);
	if (g.s10 & 2)
		say("|Bf:%d,%d", PLANNER_BLOCKS - g.q_len, RX_SIZE - 1 - g.rx_len);
	say("|FS:%.0f,0", g.v_mm_s * 60.0);
	if (g.wco_counter > 0) {
		g.wco_counter--;
	} else {
		g.wco_counter = busy ? 29 : 9;
		say("|WCO:%.3f,%.3f,%.3f", wco[0], wco[1], wco[2]);
	}
	say(">\r\n");
}

static void reset_begin(void)
{
	g.resets++;
	/* mc_reset: stopping steppers in motion loses the position. */
	if (!g.critical && (g.st == RUN || g.st == HOME || (g.st == HOLD && !g.hold_done)))
		alarm_now(g.st == HOME ? 6 : 3);
	g.critical = 0;
	g.reset_until = now_s() + RESET_S;
}

static void reset_end(void)
{
	g.reset_until = 0;
	if (g.owed_ok)
		say("ok\r\n");
	g.owed_ok = 0;
	g.rx_len = 0;
	g.q_len = 0;
	g.waiting = 0;
	g.v_mm_s = 0;
	g.soft_stop = 0;
	g.wco_counter = 0;
	g.motion = 0;
	if (g.st != ALARM)
		g.st = IDLE;
	g.hold_done = 0;
	banner();
}

static void realtime(char c)
{
	if (g.reset_until) {
		/* The reset clears every flag set meanwhile: a '?' now is lost. */
		if (c == '?')
			g.lost_statuses++;
		return;
	}
	if (c == 0x18) {
		reset_begin();
		return;
	}
	if (g.critical) {
		if (c == '?')
			g.lost_statuses++; /* the critical loop waits for a reset only */
		return;
	}
	switch (c) {
	case '?':
		g.statuses++;
		status_report();
		break;
	case '!':
		if (g.st == RUN) {
			g.st = HOLD;
			g.hold_done = 0;
			g.holds++;
		} else if (g.st == IDLE) {
			g.st = HOLD;
			g.hold_done = 1;
			g.holds++;
		}
		break;
	case '~':
		if (g.st == HOLD && g.hold_done) {
			g.st = g.q_len ? RUN : IDLE;
			g.hold_done = 0;
		}
		break;
	}
}

static int in_travel(const double *t)
{
	for (int k = 0; k < 3; k++)
		if (t[k] > 0 || t[k] < -g.travel[k])
			return 0;
	return 1;
}

static void queue_block(const struct block *b)
{
	g.q[(g.q_head + g.q_len++) % PLANNER_BLOCKS] = *b;
	g.blocks++;
	if (g.st == IDLE)
		g.st = RUN;
}

static const char *setting(int n, double v)
{
	switch (n) {
	case 10: g.s10 = (int)v; return NULL;
	case 20:
		if (v && !g.s22)
			return "error:10"; /* soft limits need homing */
		g.s20 = (int)v;
		return NULL;
	case 22: g.s22 = (int)v; return NULL;
	case 23: g.s23 = (int)v; return NULL;
	case 27: g.s27 = v; return NULL;
	case 120: case 121: case 122: g.s120 = v; return NULL;
	case 130: case 131: case 132: g.travel[n - 130] = v; return NULL;
	default: return "error:3";
	}
}

/* system.c system_execute_line, for what the backend and the tests use. */
static const char *dollar(char *s)
{
	int idle_or_alarm = g.st == IDLE || g.st == ALARM;

	if (!strcmp(s, "$X")) {
		if (g.st == ALARM) {
			say("[MSG:Caution: Unlocked]\r\n");
			g.st = IDLE;
		}
		return "ok";
	}
	if (!strcmp(s, "$$")) {
		if (g.st == RUN || g.st == HOLD)
			return "error:8";
		say("$10=%d\r\n$20=%d\r\n$22=%d\r\n$23=%d\r\n$27=%.3f\r\n", g.s10, g.s20, g.s22,
		    g.s23, g.s27);
		for (int k = 0; k < 3; k++)
			say("$%d=%.3f\r\n", 120 + k, g.s120);
		for (int k = 0; k < 3; k++)
			say("$%d=%.3f\r\n", 130 + k, g.travel[k]);
		return "ok";
	}
	if (!idle_or_alarm)
		return "error:8";
	if (!strcmp(s, "$#")) {
		say("[G54:%.3f,%.3f,%.3f]\r\n[G92:%.3f,%.3f,%.3f]\r\n[TLO:0.000]\r\n", g.g54[0],
		    g.g54[1], g.g54[2], g.g92[0], g.g92[1], g.g92[2]);
		return "ok";
	}
	if (!strcmp(s, "$H")) {
		if (!g.s22)
			return "error:5";
		g.st = HOME;
		g.waiting = 3;
		g.home_left_s = 1.0;
		return NULL; /* answered when homing ends */
	}
	if (s[1] >= '0' && s[1] <= '9') {
		char *end;
		long n = strtol(s + 1, &end, 10);
		double v;

		if (*end != '=')
			return "error:3";
		v = strtod(end + 1, &end);
		if (*end)
			return "error:2";
		return setting((int)n, v) ? setting((int)n, v) : "ok";
	}
	return "error:3";
}

/* gcode.c gc_execute_line, for the words the backend sends. */
static const char *gcode(char *s)
{
	double v_x[3] = { NAN, NAN, NAN }, p = -1, l = -1, pn = -1;
	int motion = g.motion, g53 = 0, g4 = 0, g10 = 0;
	char *c = s;

	while (*c) {
		char letter = *c++, *end;
		double v = strtod(c, &end);

		if (letter < 'A' || letter > 'Z')
			return "error:1";
		if (end == c)
			return "error:2";
		c = end;
		switch (letter) {
		case 'G':
			if (v == 0 || v == 1)
				motion = (int)v;
			else if (v == 4)
				g4 = 1;
			else if (v == 10)
				g10 = 1;
			else if (v == 53)
				g53 = 1;
			else if (v != 17 && v != 21 && v != 54 && v != 90 && v != 94)
				return "error:20";
			break;
		case 'X': v_x[0] = v; break;
		case 'Y': v_x[1] = v; break;
		case 'Z': v_x[2] = v; break;
		case 'F': g.feed_mm_min = v; break;
		case 'P': p = v; pn = v; break;
		case 'L': l = v; break;
		default: return "error:20";
		}
	}
	if (g4) {
		if (p < 0)
			return "error:28";
		g.waiting = 2;
		g.dwell_left_s = p;
		return NULL; /* answered after the planner empties and the dwell */
	}
	if (g10) {
		if ((l != 2 && l != 20) || (pn != 0 && pn != 1))
			return "error:20"; /* this peer keeps G54 only */
		for (int k = 0; k < 3; k++)
			if (!isnan(v_x[k]))
				g.g54[k] = l == 2 ? v_x[k] : g.pos[k] - g.g92[k] - v_x[k];
		return "ok";
	}
	g.motion = motion;
	if (!isnan(v_x[0]) || !isnan(v_x[1]) || !isnan(v_x[2])) {
		struct block b;
		const double *last = g.q_len ? g.q[(g.q_head + g.q_len - 1) % PLANNER_BLOCKS].to : g.pos;

		if (motion == 1 && g.feed_mm_min <= 0)
			return "error:22";
		for (int k = 0; k < 3; k++)
			b.to[k] = isnan(v_x[k]) ? last[k] : g53 ? v_x[k] : v_x[k] + g.g54[k] + g.g92[k];
		b.feed_mm_s = motion == 0 ? RAPID_MM_S : g.feed_mm_min / 60.0;
		if (g.s20 && !in_travel(b.to)) {
			g.owed_ok = 1;
			if (g.st == RUN) {
				g.soft_stop = 1; /* hold to a stop first: position is kept */
				g.st = HOLD;
				g.hold_done = 0;
				return NULL;
			}
			alarm_now(2);
			return NULL;
		}
		if (g.q_len >= PLANNER_BLOCKS) {
			g.wait_block = b;
			g.waiting = 1;
			return NULL; /* answered when a block frees */
		}
		queue_block(&b);
	}
	return "ok";
}

/* One line parsed (spaces dropped, upper case, as protocol.c does). */
static void line(char *raw)
{
	char s[RX_SIZE + 1];
	const char *r;
	int n = 0;

	g.lines++;
	for (char *d = raw; *d; d++)
		if (*d > ' ')
			s[n++] = (*d >= 'a' && *d <= 'z') ? (char)(*d - 32) : *d;
	s[n] = '\0';
	g.parsed_at = now_s();
	if (!s[0])
		r = "ok";
	else if (s[0] == '$')
		r = dollar(s);
	else if (g.st == ALARM)
		r = "error:9";
	else
		r = gcode(s);
	if (r)
		answer(r, g.parsed_at);
}

/* Reads lines while the main loop would: not while suspended, waiting or alarmed critically. */
static void parse_lines(void)
{
	while (!g.waiting && !g.critical && !g.reset_until && g.st != HOLD) {
		char *nl = memchr(g.rx, '\n', (size_t)g.rx_len);
		char buf[RX_SIZE + 1];
		int n;

		if (!nl)
			return;
		n = (int)(nl - g.rx);
		memcpy(buf, g.rx, (size_t)n);
		buf[n] = '\0';
		memmove(g.rx, nl + 1, (size_t)(g.rx_len - n - 1));
		g.rx_len -= n + 1;
		line(buf);
	}
}

static void home_done(void)
{
	for (int k = 0; k < 3; k++)
		g.pos[k] = (g.s23 >> k & 1) ? -g.travel[k] + g.s27 : -g.s27;
	g.st = IDLE;
	g.waiting = 0;
	answer("ok", g.parsed_at);
}

/* What finishing a block or a wait lets happen next. */
static void after_progress(void)
{
	if (g.waiting == 1 && g.q_len < PLANNER_BLOCKS && g.st != HOLD) {
		queue_block(&g.wait_block);
		g.waiting = 0;
		answer("ok", g.parsed_at);
	}
}

/* Advances the head block by dt s of machine time; returns the time left over. */
static double run_block(double dt)
{
	struct block *b = &g.q[g.q_head];
	double d[3], len = 0, step;

	for (int k = 0; k < 3; k++) {
		d[k] = b->to[k] - g.pos[k];
		len += d[k] * d[k];
	}
	len = sqrt(len);
	if (g.st == HOLD) {
		double dv = g.s120 * dt;

		step = g.v_mm_s * dt - 0.5 * fmin(dv, g.v_mm_s) * dt;
		g.v_mm_s = fmax(0.0, g.v_mm_s - dv);
		if (g.v_mm_s == 0.0)
			g.hold_done = 1;
	} else {
		g.v_mm_s = b->feed_mm_s;
		step = b->feed_mm_s * dt;
	}
	if (step < len) {
		for (int k = 0; k < 3; k++)
			g.pos[k] += d[k] * step / len;
		g.mm += step;
		return 0;
	}
	g.mm += len;
	memcpy(g.pos, b->to, sizeof(g.pos));
	g.q_head = (g.q_head + 1) % PLANNER_BLOCKS;
	g.q_len--;
	after_progress();
	return g.v_mm_s > 0 ? dt - len / g.v_mm_s : 0;
}

static void machine(double dt)
{
	if (g.st == HOME) {
		g.home_left_s -= dt;
		if (g.home_left_s <= 0)
			home_done();
		return;
	}
	while (dt > 0 && (g.st == RUN || (g.st == HOLD && !g.hold_done)) && g.q_len)
		dt = run_block(dt);
	if (g.st == HOLD && (!g.q_len || g.hold_done)) {
		g.hold_done = 1;
		g.v_mm_s = 0;
		if (g.soft_stop) {
			g.soft_stop = 0;
			alarm_now(2);
			return;
		}
	}
	if (g.st == RUN && !g.q_len) {
		g.st = IDLE;
		g.v_mm_s = 0;
	}
	if (g.waiting == 2 && g.st == IDLE) {
		g.dwell_left_s -= dt;
		if (g.dwell_left_s <= 0) {
			g.waiting = 0;
			g.dwells++;
			answer("ok", g.parsed_at);
		}
	}
}

static int vec(const char *s, double *v, int n)
{
	char *end;

	for (int i = 0; i < n; i++) {
		v[i] = strtod(s, &end);
		if (end == s || (i < n - 1 && *end != ','))
			return -1;
		s = end + 1;
	}
	return *end ? -1 : 0;
}

static void write_stats(const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return;
	fprintf(f, "lines=%ld overflows=%ld max_rx=%ld resets=%ld statuses=%ld lost_statuses=%ld "
		"blocks=%ld dwells=%ld holds=%ld mm=%.3f ok_waits=%ld max_ok_wait_ms=%.1f "
		"mean_ok_wait_ms=%.3f\n",
		g.lines, g.overflows, g.max_rx, g.resets, g.statuses, g.lost_statuses, g.blocks,
		g.dwells, g.holds, g.mm, g.ok_waits, 1000.0 * g.max_ok_wait_s,
		g.ok_waits ? 1000.0 * g.sum_ok_wait_s / (double)g.ok_waits : 0.0);
	fclose(f);
}

static void usage(void)
{
	fprintf(stderr, "usage: grbl-peer --pty PATH [--stats FILE] [--speedup X] [--no-homing 1] "
		"[--travel X,Y,Z] [--status-mask N] [--g54 X,Y,Z] [--homing-dir MASK] [--pull-off MM]\n");
}

static int args(int argc, char **argv, const char **link, const char **stats)
{
	for (int i = 1; i + 1 < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];

		if (!strcmp(k, "--pty"))
			*link = v;
		else if (!strcmp(k, "--stats"))
			*stats = v;
		else if (!strcmp(k, "--speedup"))
			g.speedup = atof(v);
		else if (!strcmp(k, "--no-homing"))
			g.s22 = g.s20 = !atoi(v);
		else if (!strcmp(k, "--status-mask"))
			g.s10 = atoi(v);
		else if (!strcmp(k, "--homing-dir"))
			g.s23 = atoi(v);
		else if (!strcmp(k, "--pull-off"))
			g.s27 = atof(v);
		else if (!strcmp(k, "--travel") && vec(v, g.travel, 3) == 0)
			continue;
		else if (!strcmp(k, "--g54") && vec(v, g.g54, 3) == 0)
			continue;
		else
			return -1;
	}
	return *link && g.speedup > 0 ? 0 : -1;
}

static int open_pty(const char *link, int *slave)
{
	struct termios tio;
	char name[128];

	g.fd = posix_openpt(O_RDWR | O_NOCTTY);
	if (g.fd < 0 || grantpt(g.fd) || unlockpt(g.fd) || ptsname_r(g.fd, name, sizeof(name))) {
		perror("grbl-peer: pty");
		return -1;
	}
	*slave = open(name, O_RDWR | O_NOCTTY);
	if (*slave < 0 || tcgetattr(*slave, &tio)) {
		perror("grbl-peer: pty slave");
		return -1;
	}
	cfmakeraw(&tio);
	tcsetattr(*slave, TCSANOW, &tio);
	unlink(link);
	if (symlink(name, link)) {
		perror("grbl-peer: link");
		return -1;
	}
	return 0;
}

static void receive(void)
{
	struct pollfd p = { g.fd, POLLIN, 0 };
	char buf[256];
	ssize_t n;

	if (poll(&p, 1, 1) <= 0 || !(p.revents & POLLIN))
		return;
	n = read(g.fd, buf, sizeof(buf));
	for (ssize_t i = 0; i < n; i++) {
		char c = buf[i];

		if (c == '?' || c == '!' || c == '~' || c == 0x18) {
			realtime(c);
		} else if (g.reset_until) {
			continue; /* the buffer is being cleared */
		} else if (g.rx_len < RX_SIZE - 1) {
			g.rx[g.rx_len++] = c;
			if (g.rx_len > g.max_rx)
				g.max_rx = g.rx_len;
		} else {
			g.overflows++; /* GRBL drops it: the host counted wrong */
		}
	}
}

int main(int argc, char **argv)
{
	const char *link = NULL, *stats = NULL;
	struct sigaction sa;
	double last;
	int slave;

	/* defaults.h, except travel and acceleration, which fit the tests' machine */
	g.speedup = 1;
	g.s10 = 1;
	g.s20 = g.s22 = 1;
	g.s27 = 1.0;
	g.s120 = 500.0;
	memcpy(g.travel, (double[3]){ 720, 520, 200 }, sizeof(g.travel));
	if (args(argc, argv, &link, &stats)) {
		usage();
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (open_pty(link, &slave))
		return 1;
	/* HOMING_INIT_LOCK: with homing enabled, power-up is in Alarm. */
	g.st = g.s22 ? ALARM : IDLE;
	banner();
	last = now_s();
	while (!stop_flag) {
		double t;

		receive();
		if (g.reset_until && now_s() >= g.reset_until)
			reset_end();
		parse_lines();
		t = now_s();
		if (!g.critical && !g.reset_until)
			machine((t - last) * g.speedup);
		last = t;
	}
	unlink(link);
	if (stats)
		write_stats(stats);
	close(slave);
	close(g.fd);
	return 0;
}

/* grbl_peer.c: a GRBL 1.1-protocol controller on a pseudo-terminal, for testing the gcode backend: 128-byte RX buffer, planner, real-time commands, alarms. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define RX_SIZE 128      /* GRBL's serial receive buffer */
#define PLANNER_BLOCKS 15

enum state { IDLE, RUN, HOLD, ALARM };
static const char *const state_names[] = { "Idle", "Run", "Hold:1", "Alarm" };

struct block {
	double to[3];
	double feed_mm_s;
	double dwell_s;  /* > 0: a G4 */
};

static struct {
	int fd;
	enum state st;
	double pos[3], home[3], min[3], max[3];
	double feed_mm_min;   /* modal F */
	int homing;           /* $H works (switches fitted) */
	double speedup;
	char rx[RX_SIZE];
	int rx_len;
	struct block q[PLANNER_BLOCKS];
	int q_head, q_len;
	double dwell_left;
	/* what the tests read afterwards */
	long lines, overflows, resets, max_rx, statuses;
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
	char buf[256];
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
	g.dwell_left = 0;
	say("ALARM:%d\r\n", code);
}

static void realtime(char c)
{
	switch (c) {
	case '?':
		g.statuses++;
		say("<%s|MPos:%.3f,%.3f,%.3f|FS:%.0f,0|Bf:%d,%d>\r\n", state_names[g.st], g.pos[0],
		    g.pos[1], g.pos[2], g.feed_mm_min, PLANNER_BLOCKS - g.q_len, RX_SIZE - g.rx_len);
		break;
	case '!':
		if (g.st == RUN)
			g.st = HOLD;
		break;
	case '~':
		if (g.st == HOLD)
			g.st = g.q_len ? RUN : IDLE;
		break;
	case 0x18:
		g.resets++;
		g.rx_len = 0;
		/* A reset while moving loses position: GRBL alarms (3) and wants homing or $X. */
		if (g.st == RUN || g.st == HOLD) {
			alarm_now(3);
		}
		g.q_len = 0;
		g.dwell_left = 0;
		banner();
		break;
	}
}

/* One line from the RX buffer: "ok", "error:N" or an alarm. */
static void line(char *s)
{
	double to[3] = { g.pos[0], g.pos[1], g.pos[2] }, p = -1;
	int motion = -1, have_xyz = 0;
	char *c = s;

	g.lines++;
	for (char *d = s; *d; d++)
		if (*d >= 'a' && *d <= 'z')
			*d = (char)(*d - 32);
	if (!strcmp(s, "$H")) {
		if (!g.homing) {
			say("error:5\r\n");
			return;
		}
		memcpy(g.pos, g.home, sizeof(g.pos));
		g.st = IDLE;
		say("ok\r\n");
		return;
	}
	if (!strcmp(s, "$X")) {
		if (g.st == ALARM) {
			g.st = IDLE;
			say("[MSG:Caution: Unlocked]\r\n");
		}
		say("ok\r\n");
		return;
	}
	if (s[0] == '$') {
		say("error:3\r\n");
		return;
	}
	if (!s[0]) {
		say("ok\r\n");
		return;
	}
	if (g.st == ALARM) {
		say("error:9\r\n");
		return;
	}
	while (*c) {
		char letter = *c++;
		char *end;
		double v;

		if (letter == ' ')
			continue;
		if (letter < 'A' || letter > 'Z') {
			say("error:1\r\n");
			return;
		}
		v = strtod(c, &end);
		if (end == c) {
			say("error:2\r\n");
			return;
		}
		c = end;
		switch (letter) {
		case 'G':
			if (v == 0 || v == 1 || v == 4)
				motion = (int)v;
			else if (v != 21 && v != 90 && v != 94) {
				say("error:20\r\n");
				return;
			}
			break;
		case 'X': to[0] = v; have_xyz = 1; break;
		case 'Y': to[1] = v; have_xyz = 1; break;
		case 'Z': to[2] = v; have_xyz = 1; break;
		case 'F': g.feed_mm_min = v; break;
		case 'P': p = v; break;
		default:
			say("error:20\r\n");
			return;
		}
	}
	if (motion == 4) {
		struct block *b = &g.q[(g.q_head + g.q_len++) % PLANNER_BLOCKS];

		if (p < 0) {
			g.q_len--;
			say("error:28\r\n");
			return;
		}
		memcpy(b->to, g.q_len > 1 ? g.q[(g.q_head + g.q_len - 2) % PLANNER_BLOCKS].to : g.pos,
		       sizeof(b->to));
		b->dwell_s = p;
		b->feed_mm_s = 0;
	} else if ((motion == 0 || motion == 1) && have_xyz) {
		struct block *b;

		if (motion == 1 && g.feed_mm_min <= 0) {
			say("error:22\r\n");
			return;
		}
		for (int k = 0; k < 3; k++)
			if (to[k] < g.min[k] || to[k] > g.max[k]) {
				/* Soft limits: the move never starts, everything stops. */
				alarm_now(2);
				say("ok\r\n");
				return;
			}
		b = &g.q[(g.q_head + g.q_len++) % PLANNER_BLOCKS];
		memcpy(b->to, to, sizeof(to));
		b->feed_mm_s = motion == 0 ? 1000.0 : g.feed_mm_min / 60.0;
		b->dwell_s = 0;
	}
	if (g.st == IDLE && g.q_len)
		g.st = RUN;
	say("ok\r\n");
}

/* Takes lines out of the RX buffer while the planner has room, as GRBL does. */
static void parse_lines(void)
{
	for (;;) {
		char *nl = memchr(g.rx, '\n', (size_t)g.rx_len);
		char buf[RX_SIZE + 1];
		int n;

		if (!nl || g.q_len >= PLANNER_BLOCKS)
			return;
		n = (int)(nl - g.rx);
		memcpy(buf, g.rx, (size_t)n);
		buf[n] = '\0';
		if (n && buf[n - 1] == '\r')
			buf[n - 1] = '\0';
		memmove(g.rx, nl + 1, (size_t)(g.rx_len - n - 1));
		g.rx_len -= n + 1;
		line(buf);
	}
}

static void motion(double dt)
{
	while (g.st == RUN && dt > 0) {
		struct block *b = &g.q[g.q_head];

		if (!g.q_len) {
			g.st = IDLE;
			return;
		}
		if (b->dwell_s > 0) {
			if (g.dwell_left <= 0)
				g.dwell_left = b->dwell_s;
			if (dt < g.dwell_left) {
				g.dwell_left -= dt;
				return;
			}
			dt -= g.dwell_left;
			g.dwell_left = 0;
		} else {
			double d[3], len = 0, step = b->feed_mm_s * dt;

			for (int k = 0; k < 3; k++) {
				d[k] = b->to[k] - g.pos[k];
				len += d[k] * d[k];
			}
			len = sqrt(len);
			if (step < len) {
				for (int k = 0; k < 3; k++)
					g.pos[k] += d[k] * step / len;
				return;
			}
			memcpy(g.pos, b->to, sizeof(g.pos));
			dt -= len / b->feed_mm_s;
		}
		g.q_head = (g.q_head + 1) % PLANNER_BLOCKS;
		g.q_len--;
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

int main(int argc, char **argv)
{
	const char *link = NULL, *stats = NULL;
	char name[128];
	struct termios tio;
	struct sigaction sa;
	double last;
	int slave;

	g.speedup = 1;
	g.homing = 1;
	memcpy(g.home, (double[3]){ 10, 10, 100 }, sizeof(g.home));
	memcpy(g.min, (double[3]){ 0, 0, -40 }, sizeof(g.min));
	memcpy(g.max, (double[3]){ 700, 500, 150 }, sizeof(g.max));
	for (int i = 1; i + 1 < argc; i += 2) {
		double v6[6];

		if (!strcmp(argv[i], "--pty"))
			link = argv[i + 1];
		else if (!strcmp(argv[i], "--stats"))
			stats = argv[i + 1];
		else if (!strcmp(argv[i], "--speedup"))
			g.speedup = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--no-homing"))
			g.homing = !atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--travel") && vec(argv[i + 1], v6, 6) == 0) {
			memcpy(g.min, v6, sizeof(g.min));
			memcpy(g.max, v6 + 3, sizeof(g.max));
		} else {
			fprintf(stderr, "usage: grbl-peer --pty PATH [--stats FILE] [--speedup X] [--no-homing 1] [--travel x0,y0,z0,x1,y1,z1]\n");
			return 2;
		}
	}
	if (!link || !(g.speedup > 0)) {
		fprintf(stderr, "grbl-peer: --pty PATH is required\n");
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	g.fd = posix_openpt(O_RDWR | O_NOCTTY);
	if (g.fd < 0 || grantpt(g.fd) || unlockpt(g.fd) || ptsname_r(g.fd, name, sizeof(name))) {
		perror("grbl-peer: pty");
		return 1;
	}
	slave = open(name, O_RDWR | O_NOCTTY);
	if (slave < 0 || tcgetattr(slave, &tio)) {
		perror("grbl-peer: pty slave");
		return 1;
	}
	cfmakeraw(&tio);
	tcsetattr(slave, TCSANOW, &tio);
	unlink(link);
	if (symlink(name, link)) {
		perror("grbl-peer: link");
		return 1;
	}
	/* Real GRBL with homing switches starts locked until $H or $X. */
	g.st = g.homing ? ALARM : IDLE;
	banner();
	last = now_s();
	while (!stop_flag) {
		struct pollfd p = { g.fd, POLLIN, 0 };
		double t;

		if (poll(&p, 1, 1) > 0 && (p.revents & POLLIN)) {
			char buf[256];
			ssize_t n = read(g.fd, buf, sizeof(buf));

			for (ssize_t i = 0; i < n; i++) {
				char c = buf[i];

				if (c == '?' || c == '!' || c == '~' || c == 0x18) {
					realtime(c);
				} else if (g.rx_len < RX_SIZE) {
					g.rx[g.rx_len++] = c;
					if (g.rx_len > g.max_rx)
						g.max_rx = g.rx_len;
				} else {
					g.overflows++; /* GRBL drops it: the host counted wrong */
				}
			}
		}
		parse_lines();
		t = now_s();
		motion((t - last) * g.speedup);
		last = t;
	}
	unlink(link);
	if (stats) {
		FILE *f = fopen(stats, "w");

		if (f) {
			fprintf(f, "lines=%ld overflows=%ld max_rx=%ld resets=%ld statuses=%ld\n", g.lines,
				g.overflows, g.max_rx, g.resets, g.statuses);
			fclose(f);
		}
	}
	close(slave);
	close(g.fd);
	return 0;
}

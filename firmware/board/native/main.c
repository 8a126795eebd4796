/* main.c: brushloop-fw-native, the firmware core as a Linux program serving its UART on a pseudo-terminal (a board with simulated joints). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "fw.h"

static volatile sig_atomic_t stop_flag;
static volatile sig_atomic_t estop_flag;

static void on_term(int sig)
{
	(void)sig;
	stop_flag = 1;
}

/* SIGUSR1 presses the e-stop input, SIGUSR2 releases it: the native board's one physical input. */
static void on_estop(int sig)
{
	estop_flag = sig == SIGUSR1;
}

struct board {
	int fd;           /* pty master */
	struct timespec t0;
	double speedup;   /* firmware time runs this many times faster than the wall clock */
};

static uint64_t now_us(void *ctx)
{
	struct board *b = ctx;
	struct timespec t;
	double us;

	clock_gettime(CLOCK_MONOTONIC, &t);
	us = (double)(t.tv_sec - b->t0.tv_sec) * 1e6 + (double)(t.tv_nsec - b->t0.tv_nsec) / 1e3;
	return (uint64_t)(us * b->speedup);
}

static void tx(void *ctx, const uint8_t *buf, unsigned n)
{
	struct board *b = ctx;

	while (n) {
		ssize_t w = write(b->fd, buf, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				struct pollfd p = { b->fd, POLLOUT, 0 };

				poll(&p, 1, 10);
				continue;
			}
			return; /* nobody reads: the reply is lost, as on an unplugged line */
		}
		buf += w;
		n -= (unsigned)w;
	}
}

static void usage(void)
{
	fprintf(stderr,
		"usage: brushloop-fw-native --pty PATH [--address N] [--speedup X]\n"
		"                           [--joint J,MIN,MAX,SPEED,ACCEL]...\n"
		"\n"
		"Runs the brushloop arm firmware with simulated joints, serving Modbus RTU on a\n"
		"pseudo-terminal linked at PATH, until SIGTERM or SIGINT. SIGUSR1 presses the\n"
		"e-stop input, SIGUSR2 releases it. --speedup runs firmware time X times faster\n"
		"than the wall clock (default 1). --joint sets joint J's (1-4) limits: position\n"
		"MIN..MAX in joint units (mm or deg), SPEED in units/s, ACCEL in units/s^2.\n");
}

static int parse_joint(const char *s, struct fw_config *cfg)
{
	int j;
	double mn, mx, sp, ac;
	char extra;

	if (sscanf(s, "%d,%lf,%lf,%lf,%lf%c", &j, &mn, &mx, &sp, &ac, &extra) != 5 || j < 1 ||
	    j > FW_JOINTS || !(mn < mx) || mn < -2e6 || mx > 2e6 || !(sp > 0) || sp > 4e6 ||
	    !(ac >= 1) || ac > 4e9)
		return -1;
	cfg->lim[j - 1].min_um = (int32_t)(mn * 1000.0);
	cfg->lim[j - 1].max_um = (int32_t)(mx * 1000.0);
	cfg->lim[j - 1].speed_um_s = (uint32_t)(sp * 1000.0);
	cfg->lim[j - 1].accel_u_s2 = (uint32_t)ac;
	return 0;
}

static int open_pty(const char *link, struct board *b, int *slave)
{
	struct termios tio;
	char name[128];
	struct stat st;

	b->fd = posix_openpt(O_RDWR | O_NOCTTY);
	if (b->fd < 0 || grantpt(b->fd) || unlockpt(b->fd) || ptsname_r(b->fd, name, sizeof(name))) {
		perror("brushloop-fw-native: pty");
		return -1;
	}
	/* Keeping the slave open means a master that closes it does not hang up our side. */
	*slave = open(name, O_RDWR | O_NOCTTY);
	if (*slave < 0 || tcgetattr(*slave, &tio)) {
		perror("brushloop-fw-native: pty slave");
		return -1;
	}
	cfmakeraw(&tio);
	tcsetattr(*slave, TCSANOW, &tio);
	fcntl(b->fd, F_SETFL, O_NONBLOCK);
	if (lstat(link, &st) == 0 && S_ISLNK(st.st_mode))
		unlink(link);
	if (symlink(name, link)) {
		fprintf(stderr, "brushloop-fw-native: cannot link %s to %s: %s\n", link, name,
			strerror(errno));
		return -1;
	}
	fprintf(stderr, "brushloop-fw-native: serving Modbus RTU on %s (%s)\n", link, name);
	return 0;
}

int main(int argc, char **argv)
{
	struct fw_config cfg;
	struct board b = { -1, { 0, 0 }, 1.0 };
	const char *link = NULL;
	struct sigaction sa;
	struct fw *f;
	uint64_t next_tick;
	int slave = -1;

	fw_default_config(&cfg, FW_BOARD_NATIVE);
	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage();
			return 0;
		}
		if (!v) {
			usage();
			return 2;
		}
		if (!strcmp(argv[i], "--pty")) {
			link = v;
		} else if (!strcmp(argv[i], "--address")) {
			int a = atoi(v);

			if (a < 1 || a > 247) {
				fprintf(stderr, "brushloop-fw-native: --address %s: use 1..247\n", v);
				return 2;
			}
			cfg.address = (uint8_t)a;
		} else if (!strcmp(argv[i], "--speedup")) {
			b.speedup = atof(v);
			if (!(b.speedup >= 0.01 && b.speedup <= 1000.0)) {
				fprintf(stderr, "brushloop-fw-native: --speedup %s: use 0.01..1000\n", v);
				return 2;
			}
		} else if (!strcmp(argv[i], "--joint")) {
			if (parse_joint(v, &cfg)) {
				fprintf(stderr, "brushloop-fw-native: --joint %s: want J,MIN,MAX,SPEED,ACCEL\n", v);
				return 2;
			}
		} else {
			usage();
			return 2;
		}
		i++;
	}
	if (!link) {
		usage();
		return 2;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_estop;
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	f = malloc(sizeof(*f));
	if (!f || open_pty(link, &b, &slave)) {
		free(f);
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &b.t0);
	{
		struct fw_io io = { now_us, tx, &b };

		fw_init(f, &cfg, &io);
	}
	next_tick = cfg.period_us;
	while (!stop_flag) {
		struct pollfd p = { b.fd, POLLIN, 0 };
		uint8_t buf[256];
		uint64_t now;

		if (poll(&p, 1, 1) > 0 && (p.revents & POLLIN)) {
			ssize_t n = read(b.fd, buf, sizeof(buf));

			if (n > 0)
				fw_rx(f, buf, (unsigned)n);
		}
		fw_poll(f);
		fw_set_estop_input(f, estop_flag);
		/* Catch up on every control period that came due, whatever the wall clock did. */
		for (now = now_us(&b); now >= next_tick; next_tick += cfg.period_us)
			fw_tick(f);
	}
	unlink(link);
	close(slave);
	close(b.fd);
	free(f);
	fprintf(stderr, "brushloop-fw-native: stopped\n");
	return 0;
}

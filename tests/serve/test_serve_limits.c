/* test_serve_limits.c: clients without the token holding connections open (idle, or sending headers a byte at a time) never keep the token's holder from an answer. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "serve/serve.h"
#include "test.h"

#define TOKEN "0123456789abcdef0123456789abcdef"
#define IDLE 500
#define SLOW 40
#define N (IDLE + SLOW)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A connection to the console, made without waiting (-1 when none could be made now). */
static int open_conn(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The other clients for secs seconds: IDLE connections that send nothing and
 * SLOW that send a request line, then one header byte every 200 ms; each one
 * the console closes is opened again at once. Returns how many were closed
 * by the console (and opened again).
 */
static long hold(int port, int fd[N], double secs)
{
	struct pollfd p[N];
	static double next_byte;
	double end = now_s() + secs;
	long reopened = 0;

	do {
		int slow_turn = now_s() >= next_byte;

		for (int i = 0; i < N; i++) {
			p[i].fd = fd[i];
			p[i].events = POLLIN;
			p[i].revents = 0;
		}
		if (poll(p, N, secs > 0 ? 50 : 0) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < N; i++) {
			char buf[512];

			/* Whatever the console answers, the connection is over: make another. */
			if (fd[i] < 0 || (p[i].revents && read(fd[i], buf, sizeof(buf)) >= 0) ||
			    (p[i].revents & (POLLERR | POLLHUP))) {
				if (fd[i] >= 0)
					close(fd[i]);
				fd[i] = open_conn(port);
				reopened++;
				if (i >= IDLE && fd[i] >= 0)
					send(fd[i], "GET /api/runs HTTP/1.1\r\nHost: x\r\n", 33, MSG_NOSIGNAL);
				continue;
			}
			if (i >= IDLE && slow_turn)
				send(fd[i], "X", 1, MSG_NOSIGNAL);
		}
		if (slow_turn)
			next_byte = now_s() + 0.2;
	} while (now_s() < end);
	return reopened;
}

/* The token's holder asks once, on a new connection, while the others are held: the status, or -1 after 10 s. */
static int ask(int port, int fd[N], double *secs)
{
	const char req[] = "GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " TOKEN
			   "\r\nConnection: close\r\n\r\n";
	double t0 = now_s();
	int c = open_conn(port), status = -1;
	size_t sent = 0;
	char buf[64];

	while (c >= 0 && status < 0 && now_s() - t0 < 10.0) {
		struct pollfd pc = { .fd = c, .events = sent < sizeof(req) - 1 ? POLLOUT : POLLIN };
		ssize_t n;

		hold(port, fd, 0.0); /* the others keep coming while it waits */
		if (poll(&pc, 1, 20) <= 0)
			continue;
		if (sent < sizeof(req) - 1) {
			n = send(c, req + sent, sizeof(req) - 1 - sent, MSG_NOSIGNAL);
			sent += n > 0 ? (size_t)n : 0;
			continue;
		}
		n = read(c, buf, sizeof(buf) - 1);
		if (n <= 0)
			break;
		buf[n] = '\0';
		if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1)
			break;
	}
	*secs = now_s() - t0;
	if (c >= 0)
		close(c);
	return status;
}

/*
 * 500 idle connections and 40 sending their headers a byte at a time, each
 * opened again as soon as the console ends it: the token's holder is answered
 * every time it asks (before, with every worker held until its headers timed
 * out, it waited in the queue behind them past 30 s).
 */
TEST(idle_and_slow_clients_never_starve_the_token_holder)
{
	struct serve_options o = { 0 };
	struct rlimit rl;
	struct serve *s = NULL;
	bl_err err = { 0 };
	int fd[N], port, answered = 0;
	long reopened;

	CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
	if (rl.rlim_max < 2 * N + 256)
		test_skip("RLIMIT_NOFILE's hard limit is below what 540 clients and the console need");
	rl.rlim_cur = rl.rlim_max;
	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	o.runs_dir = test_tmpdir();
	o.listen = "127.0.0.1:0";
	o.token = TOKEN;
	CHECK_MSG(serve_start(&o, &s, &err) == 0, "%s", err.msg);
	if (!s)
		return;
	port = serve_port(s);
	for (int i = 0; i < N; i++)
		fd[i] = open_conn(port);
	reopened = hold(port, fd, 2.0);
	for (int k = 0; k < 3; k++) {
		double secs;
		int st = ask(port, fd, &secs);

		fprintf(stderr, "asked with the token: %d after %.2f s\n", st, secs);
		answered += st == 200;
		reopened += hold(port, fd, 0.5);
	}
	fprintf(stderr, "the others' connections ended by the console and opened again: %ld\n", reopened);
	CHECK_MSG(answered == 3, "%d of 3 asks answered within 10 s", answered);
	for (int i = 0; i < N; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	serve_stop(s);
}

TEST_MAIN(T(idle_and_slow_clients_never_starve_the_token_holder))

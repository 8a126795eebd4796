/* test_serve_limits.c: clients without the token holding connections open (idle, or sending headers a byte at a time) never keep the token's holder, nor another client, from an answer. */
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
#define OVER 1200 /* more connections than a client may keep waiting (1024) */
#define N_MAX (OVER + SLOW)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A connection to the console from address src, made without waiting (-1 when none could be made now). */
static int open_conn_from(int port, const char *src)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct sockaddr_in b = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	inet_pton(AF_INET, src, &b.sin_addr);
	if (fd >= 0 && ((strcmp(src, "127.0.0.1") && bind(fd, (struct sockaddr *)&b, sizeof(b)) < 0) ||
			(connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 && errno != EINPROGRESS))) {
		close(fd);
		return -1;
	}
	return fd;
}

static int open_conn(int port)
{
	return open_conn_from(port, "127.0.0.1");
}

/*
 * The other clients for secs seconds: IDLE connections that send nothing and
 * SLOW that send a request line, then one header byte every 200 ms; each one
 * the console closes is opened again at once. Returns how many were closed
 * by the console (and opened again).
 */
static long reopened_all; /* by every hold, for the tests that hold from within an ask */

static long hold(int port, int fd[], int n, double secs)
{
	static struct pollfd p[N_MAX];
	static double next_byte;
	double end = now_s() + secs;
	long reopened = 0;

	do {
		int slow_turn = now_s() >= next_byte;

		for (int i = 0; i < n; i++) {
			p[i].fd = fd[i];
			p[i].events = POLLIN;
			p[i].revents = 0;
		}
		if (poll(p, (nfds_t)n, secs > 0 ? 50 : 0) < 0 && errno != EINTR)
			break;
		for (int i = 0; i < n; i++) {
			char buf[512];

			/* Whatever the console answers, the connection is over: make another. */
			if (fd[i] < 0 || (p[i].revents && read(fd[i], buf, sizeof(buf)) >= 0) ||
			    (p[i].revents & (POLLERR | POLLHUP))) {
				if (fd[i] >= 0)
					close(fd[i]);
				fd[i] = open_conn(port);
				reopened++;
				if (i >= n - SLOW && fd[i] >= 0)
					send(fd[i], "GET /api/runs HTTP/1.1\r\nHost: x\r\n", 33, MSG_NOSIGNAL);
				continue;
			}
			if (i >= n - SLOW && slow_turn)
				send(fd[i], "X", 1, MSG_NOSIGNAL);
		}
		if (slow_turn)
			next_byte = now_s() + 0.2;
	} while (now_s() < end);
	reopened_all += reopened;
	return reopened;
}

/*
 * A client at src asks once with the token, on a connection it opens now and
 * sends its request on after wait_s, while the others are held: the status,
 * or -1 when the connection ended without one or after 10 s.
 */
static int ask_from(int port, int fd[], int nfd, const char *src, double wait_s, double *secs)
{
	const char req[] = "GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " TOKEN
			   "\r\nConnection: close\r\n\r\n";
	double t0 = now_s();
	int c = open_conn_from(port, src), status = -1;
	size_t sent = 0;
	char buf[64];

	while (c >= 0 && status < 0 && now_s() - t0 < 10.0 + wait_s) {
		struct pollfd pc = { .fd = c, .events = sent < sizeof(req) - 1 ? POLLOUT : POLLIN };
		ssize_t n;

		hold(port, fd, nfd, 0.0); /* the others keep coming while it waits */
		if (poll(&pc, 1, 20) <= 0 || (sent == 0 && now_s() - t0 < wait_s))
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

static int ask(int port, int fd[N], double *secs)
{
	return ask_from(port, fd, N, "127.0.0.1", 0.0, secs);
}

/* A console with the test's token, the descriptors raised for its own and the test's clients (NULL: it failed). */
static struct serve *start(int clients)
{
	struct serve_options o = { 0 };
	struct rlimit rl;
	struct serve *s = NULL;
	bl_err err = { 0 };

	CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
	if (rl.rlim_max < 2 * (rlim_t)clients + 256)
		test_skip("RLIMIT_NOFILE's hard limit is below what the clients and the console need");
	rl.rlim_cur = rl.rlim_max;
	CHECK(setrlimit(RLIMIT_NOFILE, &rl) == 0);
	o.runs_dir = test_tmpdir();
	o.listen = "127.0.0.1:0";
	o.token = TOKEN;
	CHECK_MSG(serve_start(&o, &s, &err) == 0, "%s", err.msg);
	return s;
}

/*
 * 500 idle connections and 40 sending their headers a byte at a time, each
 * opened again as soon as the console ends it: the token's holder is answered
 * every time it asks (before, with every worker held until its headers timed
 * out, it waited in the queue behind them past 30 s).
 */
TEST(idle_and_slow_clients_never_starve_the_token_holder)
{
	struct serve *s = start(N);
	int fd[N], port, answered = 0;
	long reopened;

	if (!s)
		return;
	port = serve_port(s);
	for (int i = 0; i < N; i++)
		fd[i] = open_conn(port);
	reopened = hold(port, fd, N, 2.0);
	for (int k = 0; k < 3; k++) {
		double secs;
		int st = ask(port, fd, &secs);

		fprintf(stderr, "asked with the token: %d after %.2f s\n", st, secs);
		answered += st == 200;
		reopened += hold(port, fd, N, 0.5);
	}
	fprintf(stderr, "the others' connections ended by the console and opened again: %ld\n", reopened);
	CHECK_MSG(answered == 3, "%d of 3 asks answered within 10 s", answered);
	for (int i = 0; i < N; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	serve_stop(s);
}

/*
 * Another client (127.0.0.2) opens a connection and sends its request only
 * 1.5 s later (a phone on a slow network) while one client (127.0.0.1) holds
 * more connections than its share, 1200 idle and 40 slow, each opened again
 * as soon as the console ends it: the other client is answered. Before, the connections without
 * the token shared one pool of 48 workers and the oldest of them was ended
 * after 200 ms, the other client's first of all.
 */
TEST(one_client_over_its_limit_never_keeps_another_out)
{
	struct serve *s = start(N_MAX);
	static int fd[N_MAX];
	int port, answered = 0;

	if (!s)
		return;
	port = serve_port(s);
	reopened_all = 0;
	for (int i = 0; i < N_MAX; i++)
		fd[i] = -1;
	for (int k = 0; k < 2; k++) {
		double secs;
		int st;

		/* The other client's connection first, then the flood (hold opens every one closed). */
		for (int i = 0; i < N_MAX; i++) {
			if (fd[i] >= 0)
				close(fd[i]);
			fd[i] = -1;
		}
		nanosleep(&(struct timespec){ 0, 300 * 1000000L }, NULL);
		st = ask_from(port, fd, N_MAX, "127.0.0.2", 1.5, &secs);

		fprintf(stderr, "the other client, its request sent after 1.5 s: %d after %.2f s\n", st, secs);
		answered += st == 200;
	}
	fprintf(stderr, "the first client's connections ended by the console and opened again: %ld\n", reopened_all);
	CHECK_MSG(reopened_all > 0, "the first client was never over its limit");
	CHECK_MSG(answered == 2, "%d of 2 asks of the other client answered", answered);
	for (int i = 0; i < N_MAX; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	serve_stop(s);
}

TEST_MAIN(T(idle_and_slow_clients_never_starve_the_token_holder), T(one_client_over_its_limit_never_keeps_another_out))

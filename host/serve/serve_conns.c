/* serve_conns.c: the console's connections as civetweb's workers hold them: a cap on those not yet authenticated, the oldest ended first, and a reserve of workers for the token's holder. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "serve/serve_int.h"

/*
 * civetweb gives each connection a worker thread of its own until the
 * request's headers are read (request_timeout_ms): idle or slow clients
 * without the token would hold every worker and the operator's request would
 * wait in the queue behind them. So the connections without a valid token
 * yet may hold at most SERVE_UNAUTH_MAX workers: while they hold that many,
 * the oldest of them that has had its worker for SERVE_EVICT_MIN_MS (ample
 * time to send a request on loopback or a LAN) is ended, on each new
 * connection and every SERVE_SWEEP_MS, so idle and slow clients turn over
 * fast and the other SERVE_RESERVE workers are left for requests that carry
 * the token. A client that sent its request at once is never ended for one
 * that did not.
 *
 * civetweb 1.15 tells nothing of a connection when it starts (no address, no
 * socket: mg_get_request_info is NULL until a request is read), but
 * init_connection runs on the worker that will wait for its headers in
 * poll(): a signal to that thread makes poll fail with EINTR, and civetweb
 * closes the connection (pull_inner returns an error). Only connections that
 * have not shown the token are ever signalled.
 */
#define SERVE_EVICT_SIGNAL (SIGRTMIN + 3)

static void on_evict(int sig)
{
	(void)sig; /* its whole work is to interrupt the worker's poll */
}

static void evict(struct serve_conns *t, int i)
{
	pthread_kill(t->slot[i].worker, SERVE_EVICT_SIGNAL);
	t->slot[i].evicted = 1;
	t->evicted++;
}

/* The oldest slot not yet authenticated, or -1; counts them in *n. */
static int oldest_unauth(const struct serve_conns *t, int *n)
{
	int best = -1;

	*n = 0;
	for (int i = 0; i < SERVE_WORKERS; i++) {
		const struct serve_conn_slot *s = &t->slot[i];

		if (!s->c || s->authed || s->evicted)
			continue;
		(*n)++;
		if (best < 0 || s->since_ns < t->slot[best].since_ns)
			best = i;
	}
	return best;
}

/* Under the lock: while the unauthenticated hold SERVE_UNAUTH_MAX workers or more, the oldest that had time go. */
static void make_room(struct serve_conns *t)
{
	int64_t old = clk_real_ns() - (int64_t)SERVE_EVICT_MIN_MS * 1000000;
	int n, i;

	while ((i = oldest_unauth(t, &n)) >= 0 && n >= SERVE_UNAUTH_MAX && t->slot[i].since_ns <= old)
		evict(t, i);
}

static void *sweeper(void *arg)
{
	struct serve_conns *t = arg;
	struct timespec ts = { 0, SERVE_SWEEP_MS * 1000000L };

	pthread_mutex_lock(&t->lock);
	while (!t->stop) {
		make_room(t);
		pthread_mutex_unlock(&t->lock);
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&t->lock);
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

int serve_conn_open(const struct mg_connection *c, void **data)
{
	struct serve *s = mg_get_user_data(mg_get_context(c));
	struct serve_conns *t = &s->conns;
	int slot = -1, i;

	pthread_mutex_lock(&t->lock);
	for (i = 0; i < SERVE_WORKERS && slot < 0; i++)
		if (!t->slot[i].c)
			slot = i;
	if (slot >= 0) {
		struct serve_conn_slot *sl = &t->slot[slot];

		memset(sl, 0, sizeof(*sl));
		sl->c = c;
		sl->worker = pthread_self();
		sl->since_ns = clk_real_ns();
		make_room(t);
	}
	pthread_mutex_unlock(&t->lock);
	*data = NULL;
	return 0;
}

void serve_conn_close(const struct mg_connection *c)
{
	struct serve *s = mg_get_user_data(mg_get_context(c));
	struct serve_conns *t = &s->conns;

	pthread_mutex_lock(&t->lock);
	for (int i = 0; i < SERVE_WORKERS; i++)
		if (t->slot[i].c == c)
			memset(&t->slot[i], 0, sizeof(t->slot[i]));
	pthread_mutex_unlock(&t->lock);
}

void serve_conn_authed(struct serve *s, const struct mg_connection *c)
{
	struct serve_conns *t = &s->conns;

	pthread_mutex_lock(&t->lock);
	for (int i = 0; i < SERVE_WORKERS; i++)
		if (t->slot[i].c == c)
			t->slot[i].authed = 1;
	pthread_mutex_unlock(&t->lock);
}

int serve_conns_init(struct serve_conns *t, bl_err *err)
{
	struct sigaction sa = { .sa_handler = on_evict }; /* no SA_RESTART; poll never restarts anyway */

	memset(t, 0, sizeof(*t));
	sigemptyset(&sa.sa_mask);
	if (sigaction(SERVE_EVICT_SIGNAL, &sa, NULL) < 0)
		return bl_fail(err, BL_EIO, "sigaction: %s", strerror(errno));
	pthread_mutex_init(&t->lock, NULL);
	if (pthread_create(&t->thread, NULL, sweeper, t)) {
		pthread_mutex_destroy(&t->lock);
		return bl_fail(err, BL_EIO, "the console's sweeper thread could not start");
	}
	return 0;
}

void serve_conns_free(struct serve_conns *t)
{
	pthread_mutex_lock(&t->lock);
	t->stop = 1;
	pthread_mutex_unlock(&t->lock);
	pthread_join(t->thread, NULL);
	pthread_mutex_destroy(&t->lock);
}

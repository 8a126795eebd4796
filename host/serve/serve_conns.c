/* serve_conns.c: the console's listener: a connection waits without a thread until its headers are in, and each client holds at most its share of libmicrohttpd's connections and of the waiting ones. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include "base/clock.h"
#include "serve/serve_int.h"

/*
 * libmicrohttpd gives each connection a thread from the moment it takes it
 * (thread per connection, so a handler may take its time and an event stream
 * may wait), and an idle or slow client would hold that thread until its
 * headers timed out. So the console accepts connections itself and keeps them
 * here, in one epoll set and no thread of their own, until the request line
 * and headers are all in the socket (a peek finds their blank line, or
 * SERVE_HEADERS_MAX bytes): only then is the connection given to
 * libmicrohttpd (MHD_add_connection), when its client holds fewer than
 * SERVE_CLIENT_LIVE of libmicrohttpd's connections. A connection whose headers
 * are not in after SERVE_HEADER_MS is closed. Waiting connections are at most
 * SERVE_CLIENT_WAITING per client (its oldest without headers makes room for
 * its newest) and SERVE_WAITING_MAX in all (the oldest without headers of
 * the client that waits with the most goes), so one client, idle or slow or
 * fast, never keeps another out, and a request that is all there is never
 * dropped for one that is not.
 */

void serve_addr_text(const struct sockaddr *sa, char *out, size_t n, int *port)
{
	*port = 0;
	snprintf(out, n, "?");
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &a->sin_addr, out, (socklen_t)n);
		*port = ntohs(a->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)sa;

		if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr))
			inet_ntop(AF_INET, &a->sin6_addr.s6_addr[12], out, (socklen_t)n);
		else
			inet_ntop(AF_INET6, &a->sin6_addr, out, (socklen_t)n);
		*port = ntohs(a->sin6_port);
	}
}

static void drop(struct serve_conns *t, int i)
{
	close(t->wait[i].fd); /* leaves the epoll set with it */
	t->wait[i] = t->wait[--t->n_wait];
	t->dropped++;
}

static int count_waiting(const struct serve_conns *t, const char *addr)
{
	int n = 0;

	for (int i = 0; i < t->n_wait; i++)
		n += !strcmp(t->wait[i].addr, addr);
	return n;
}

/* Whether fd's request line and headers are all in: 1, 0 not yet, -1 the client went. */
static int headers_in(int fd)
{
	static __thread char buf[SERVE_HEADERS_MAX];
	ssize_t n = recv(fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		return -1;
	if (n < 0)
		return 0;
	return n == (ssize_t)sizeof(buf) || memmem(buf, (size_t)n, "\r\n\r\n", 4) || memmem(buf, (size_t)n, "\n\n", 2);
}

/*
 * The oldest waiting connection of addr (any client when NULL) without its
 * headers, else its oldest: looked at again first, as its headers may have
 * come since (or its client gone, when it is dropped and the next looked at).
 */
static int oldest_of(struct serve_conns *t, const char *addr)
{
	for (;;) {
		int best = -1, in;

		for (int pass = 0; pass < 2 && best < 0; pass++)
			for (int i = 0; i < t->n_wait; i++) {
				const struct serve_waiting *w = &t->wait[i];

				if ((addr && strcmp(w->addr, addr)) || (pass == 0 && w->ready))
					continue;
				if (best < 0 || w->since_ms < t->wait[best].since_ms)
					best = i;
			}
		if (best < 0 || t->wait[best].ready)
			return best;
		in = headers_in(t->wait[best].fd);
		if (in == 0)
			return best;
		if (in > 0)
			t->wait[best].ready = 1;
		else
			drop(t, best);
	}
}

/* The client that waits with the most connections (for the room of all). */
static const char *most_waiting(const struct serve_conns *t)
{
	const char *best = NULL;
	int most = 0;

	for (int i = 0; i < t->n_wait; i++) {
		int n = count_waiting(t, t->wait[i].addr);

		if (n > most) {
			most = n;
			best = t->wait[i].addr;
		}
		if (most > t->n_wait / 2)
			break;
	}
	return best;
}

static void take_new(struct serve_conns *t)
{
	for (int k = 0; k < 64; k++) {
		struct serve_waiting w = { .sa_len = sizeof(w.sa) };
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | EPOLLET };
		int port, i;

		w.fd = accept4(t->listen_fd, (struct sockaddr *)&w.sa, &w.sa_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (w.fd < 0 && (errno == EMFILE || errno == ENFILE)) {
			/* Out of descriptors: the connection waits in the kernel's backlog a sweep. */
			struct epoll_event off = { .events = 0, .data.fd = t->listen_fd };

			epoll_ctl(t->epoll_fd, EPOLL_CTL_MOD, t->listen_fd, &off);
			t->paused = 1;
		}
		if (w.fd < 0)
			return;
		serve_addr_text((struct sockaddr *)&w.sa, w.addr, sizeof(w.addr), &port);
		w.since_ms = clk_real_ns() / 1000000;
		pthread_mutex_lock(&t->lock);
		if (count_waiting(t, w.addr) >= SERVE_CLIENT_WAITING && (i = oldest_of(t, w.addr)) >= 0)
			drop(t, i);
		if (t->n_wait >= SERVE_WAITING_MAX) {
			char most[sizeof(w.addr)];

			snprintf(most, sizeof(most), "%s", most_waiting(t));
			if ((i = oldest_of(t, most)) >= 0)
				drop(t, i);
		}
		ev.data.fd = w.fd;
		w.ready = headers_in(w.fd);
		if (w.ready < 0 || epoll_ctl(t->epoll_fd, EPOLL_CTL_ADD, w.fd, &ev) < 0) {
			close(w.fd);
		} else {
			t->wait[t->n_wait++] = w;
		}
		pthread_mutex_unlock(&t->lock);
	}
}

static int live_of(const struct serve_conns *t, const char *addr)
{
	int n = 0;

	for (int i = 0; i < SERVE_LIVE_MAX; i++)
		n += t->live[i].used && !strcmp(t->live[i].addr, addr);
	return n;
}

/* Gives libmicrohttpd the waiting connections whose headers are in, oldest first, while their clients have room. */
static void hand_over(struct serve *s)
{
	struct serve_conns *t = &s->conns;

	for (;;) {
		struct serve_waiting w;
		int best = -1;

		pthread_mutex_lock(&t->lock);
		for (int i = 0; i < t->n_wait; i++)
			if (t->wait[i].ready && (best < 0 || t->wait[i].since_ms < t->wait[best].since_ms) &&
			    t->n_live < SERVE_LIVE_MAX && live_of(t, t->wait[i].addr) < SERVE_CLIENT_LIVE)
				best = i;
		if (best < 0) {
			pthread_mutex_unlock(&t->lock);
			return;
		}
		w = t->wait[best];
		t->wait[best] = t->wait[--t->n_wait];
		epoll_ctl(t->epoll_fd, EPOLL_CTL_DEL, w.fd, NULL);
		for (int i = 0; i < SERVE_LIVE_MAX; i++)
			if (!t->live[i].used) {
				t->live[i].used = 1;
				snprintf(t->live[i].addr, sizeof(t->live[i].addr), "%s", w.addr);
				t->n_live++;
				break;
			}
		pthread_mutex_unlock(&t->lock);
		/* It takes the socket, and closes it when it cannot (its notice then never comes). */
		if (MHD_add_connection(s->mhd, w.fd, (struct sockaddr *)&w.sa, w.sa_len) != MHD_YES) {
			pthread_mutex_lock(&t->lock);
			for (int i = 0; i < SERVE_LIVE_MAX; i++)
				if (t->live[i].used && !strcmp(t->live[i].addr, w.addr)) {
					t->live[i].used = 0;
					t->n_live--;
					break;
				}
			pthread_mutex_unlock(&t->lock);
		}
	}
}

void serve_conn_notify(void *cls, struct MHD_Connection *mc, void **socket_context,
		       enum MHD_ConnectionNotificationCode code)
{
	struct serve *s = cls;
	struct serve_conns *t = &s->conns;
	const union MHD_ConnectionInfo *ci;
	char addr[48];
	int port;

	if (code != MHD_CONNECTION_NOTIFY_CLOSED)
		return;
	ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	if (!ci || !ci->client_addr)
		return;
	serve_addr_text(ci->client_addr, addr, sizeof(addr), &port);
	pthread_mutex_lock(&t->lock);
	for (int i = 0; i < SERVE_LIVE_MAX; i++)
		if (t->live[i].used && !strcmp(t->live[i].addr, addr)) {
			t->live[i].used = 0;
			t->n_live--;
			break;
		}
	pthread_mutex_unlock(&t->lock);
	/* A client's room came back: its next waiting connection may go. */
	eventfd_write(t->wake_fd, 1);
}

static void *listener(void *arg)
{
	struct serve *s = arg;
	struct serve_conns *t = &s->conns;
	struct epoll_event ev[64];

	while (!t->stop) {
		int n = epoll_wait(t->epoll_fd, ev, 64, SERVE_SWEEP_MS);
		int64_t old = clk_real_ns() / 1000000 - SERVE_HEADER_MS;

		for (int k = 0; k < n; k++) {
			int fd = ev[k].data.fd;

			if (fd == t->listen_fd) {
				take_new(t);
				continue;
			}
			if (fd == t->wake_fd) {
				eventfd_t v;

				eventfd_read(t->wake_fd, &v);
				continue;
			}
			pthread_mutex_lock(&t->lock);
			for (int i = 0; i < t->n_wait; i++) {
				int in;

				if (t->wait[i].fd != fd || t->wait[i].ready)
					continue;
				in = headers_in(fd);
				if (in < 0)
					drop(t, i);
				else
					t->wait[i].ready = in;
				break;
			}
			pthread_mutex_unlock(&t->lock);
		}
		pthread_mutex_lock(&t->lock);
		for (int i = 0; i < t->n_wait;)
			if (!t->wait[i].ready && t->wait[i].since_ms < old)
				drop(t, i);
			else
				i++;
		pthread_mutex_unlock(&t->lock);
		if (t->paused) {
			struct epoll_event on = { .events = EPOLLIN, .data.fd = t->listen_fd };

			epoll_ctl(t->epoll_fd, EPOLL_CTL_MOD, t->listen_fd, &on);
			t->paused = 0;
		}
		hand_over(s);
	}
	return NULL;
}

int serve_conns_start(struct serve *s, const struct sockaddr *sa, socklen_t len, bl_err *err)
{
	struct serve_conns *t = &s->conns;
	struct epoll_event ev = { .events = EPOLLIN };
	int one = 1, any6 = 0, rc;

	struct rlimit rl;

	memset(t, 0, sizeof(*t));
	/* Waiting connections hold a descriptor each (the kernel's backlog held them before accept). */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < SERVE_FILES_MAX) {
		rl.rlim_cur = rl.rlim_max < SERVE_FILES_MAX ? rl.rlim_max : SERVE_FILES_MAX;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	t->listen_fd = t->epoll_fd = t->wake_fd = -1;
	pthread_mutex_init(&t->lock, NULL);
	t->listen_fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (t->listen_fd < 0) {
		rc = bl_fail(err, BL_EIO, "socket: %s", strerror(errno));
		goto out;
	}
	setsockopt(t->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sa->sa_family == AF_INET6) {
		/* [::] is every address, IPv4 too; any other IPv6 address is that one only. */
		any6 = IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)sa)->sin6_addr);
		one = !any6;
		setsockopt(t->listen_fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	}
	if (bind(t->listen_fd, sa, len) < 0 || listen(t->listen_fd, 512) < 0) {
		rc = bl_fail(err, BL_EIO, "%s", strerror(errno));
		goto out;
	}
	t->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	t->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (t->epoll_fd < 0 || t->wake_fd < 0) {
		rc = bl_fail(err, BL_EIO, "epoll: %s", strerror(errno));
		goto out;
	}
	ev.data.fd = t->listen_fd;
	epoll_ctl(t->epoll_fd, EPOLL_CTL_ADD, t->listen_fd, &ev);
	ev.data.fd = t->wake_fd;
	epoll_ctl(t->epoll_fd, EPOLL_CTL_ADD, t->wake_fd, &ev);
	if (pthread_create(&t->thread, NULL, listener, s)) {
		rc = bl_fail(err, BL_EIO, "the console's listener thread could not start");
		goto out;
	}
	t->started = 1;
	return 0;
out:
	serve_conns_stop(t);
	serve_conns_free(t);
	return rc;
}

void serve_conns_stop(struct serve_conns *t)
{
	if (t->started) {
		t->stop = 1;
		eventfd_write(t->wake_fd, 1);
		pthread_join(t->thread, NULL);
		t->started = 0;
	}
	while (t->n_wait)
		drop(t, 0);
	if (t->listen_fd >= 0)
		close(t->listen_fd);
	if (t->epoll_fd >= 0)
		close(t->epoll_fd);
	t->listen_fd = t->epoll_fd = -1;
}

void serve_conns_free(struct serve_conns *t)
{
	if (t->wake_fd >= 0)
		close(t->wake_fd);
	t->wake_fd = -1;
	pthread_mutex_destroy(&t->lock);
}

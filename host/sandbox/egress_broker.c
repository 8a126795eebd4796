/* egress_broker.c: the planner's only way out: an HTTP CONNECT proxy on a Unix socket that resolves and connects only what the policy lists. */
#include "sandbox/sbx_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/hostport.h"

int egress_listen(struct sbx_impl *s, int to_nobody, bl_err *err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *base = getenv("XDG_RUNTIME_DIR");
	char tmpl[PATH_MAX];

	/* A fresh 0700 directory: nobody else on the host can reach or replace the socket. */
	snprintf(tmpl, sizeof(tmpl), "%s/brushloop-egress-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(tmpl))
		return bl_fail(err, BL_EIO, "egress: making %s: %s", tmpl, strerror(errno));
	snprintf(s->sock_dir, sizeof(s->sock_dir), "%s", tmpl);
	snprintf(s->sock_path, sizeof(s->sock_path), "%s/egress.sock", tmpl);
	if (strlen(s->sock_path) >= sizeof(sa.sun_path)) {
		rmdir(s->sock_dir);
		s->sock_dir[0] = '\0';
		return bl_fail(err, BL_EINVAL, "egress: socket path %s too long", s->sock_path);
	}
	strcpy(sa.sun_path, s->sock_path);
	s->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->listen_fd < 0 || bind(s->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(s->listen_fd, EGRESS_MAX_CONNS) < 0 ||
	    /* Under a root host bwrap and the planner are nobody: theirs, and still nobody else's. */
	    (to_nobody && (chown(s->sock_path, SBX_UID, SBX_UID) < 0 ||
			   chown(s->sock_dir, SBX_UID, SBX_UID) < 0))) {
		int e = errno;
		egress_close_all(s);
		return bl_fail(err, BL_EIO, "egress: listening on %s: %s", sa.sun_path, strerror(e));
	}
	return 0;
}

static void conn_close(struct sbx_impl *s, struct egress_conn *c)
{
	if (c->state == EGRESS_RELAY) {
		cJSON *d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "name", c->name);
		cJSON_AddNumberToObject(d, "port", c->port);
		cJSON_AddNumberToObject(d, "bytes_out", (double)c->up_total);
		cJSON_AddNumberToObject(d, "bytes_in", (double)c->down_total);
		cJSON_AddNumberToObject(d, "ms", sbx_now_ms() - c->t_open_ms);
		sbx_queue(s, "egress_close", d);
	}
	if (c->in_fd >= 0)
		close(c->in_fd);
	if (c->out_fd >= 0)
		close(c->out_fd);
	memset(c, 0, offsetof(struct egress_conn, req));
	c->in_fd = c->out_fd = -1;
	c->state = EGRESS_FREE;
}

void egress_close_all(struct sbx_impl *s)
{
	for (int i = 0; i < EGRESS_MAX_CONNS; i++)
		if (s->conns[i].state != EGRESS_FREE)
			conn_close(s, &s->conns[i]);
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	s->listen_fd = -1;
	if (s->sock_dir[0]) {
		unlink(s->sock_path);
		rmdir(s->sock_dir);
		s->sock_dir[0] = '\0';
	}
}

/* One journaled verdict; reason is for the journal only, the planner hears "denied". */
static void verdict(struct sbx_impl *s, const char *event, const char *name, int port,
		    const char *addr, const char *reason, int allowed)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddStringToObject(d, "name", name);
	cJSON_AddNumberToObject(d, "port", port);
	if (addr)
		cJSON_AddStringToObject(d, "address", addr);
	cJSON_AddStringToObject(d, "verdict", allowed ? "allowed" : "denied");
	cJSON_AddStringToObject(d, "reason", reason);
	sbx_queue(s, event, d);
}

static void reply(struct egress_conn *c, const char *status)
{
	char msg[128];
	int n = snprintf(msg, sizeof(msg), "HTTP/1.1 %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
			 status);

	/* A new non-blocking socket has room for a line; a planner that does not read loses it. */
	if (send(c->in_fd, msg, (size_t)n, MSG_NOSIGNAL) < 0)
		(void)0;
}

/* The rate limit over the last minute; a refused query is not counted, so a flood ends a minute after it stops. */
static int rate_ok(struct sbx_impl *s, double now)
{
	int cap = s->egress.rate_limit_per_minute;

	if (s->q_count == cap && s->q_times[s->q_next] > now - 60000)
		return 0;
	s->q_times[s->q_next] = now;
	s->q_next = (s->q_next + 1) % cap;
	if (s->q_count < cap)
		s->q_count++;
	return 1;
}

/* A grant for name:port (port 0: any port of name) still running. */
static int granted(struct sbx_impl *s, const char *name, int port, double now)
{
	char want[300];
	int hit = 0;

	snprintf(want, sizeof(want), "%s:%d", name, port);
	pthread_mutex_lock(&s->lock);
	for (int i = 0; i < EGRESS_MAX_GRANTS && !hit; i++) {
		const struct egress_grant *g = &s->grants[i];
		size_t nl = strlen(name);

		if (g->until_ms <= now)
			continue;
		hit = port ? strcmp(g->dest, want) == 0 :
			     strncmp(g->dest, name, nl) == 0 && g->dest[nl] == ':';
	}
	pthread_mutex_unlock(&s->lock);
	return hit;
}

/* Parses "CONNECT host:port HTTP/1.x"; 0 when it is one. */
static int parse_connect(const char *req, char *name, size_t n, int *port)
{
	char target[300], ver[16];

	if (sscanf(req, "CONNECT %299s HTTP/%15s", target, ver) != 2 || strncmp(ver, "1.", 2))
		return -1;
	return hostport_split(target, name, n, port);
}

/* Connects to one of name's addresses within EGRESS_CONNECT_TIMEOUT_MS; the fd, or -1 with why. */
static int dial(const char *name, int port, char *addr, size_t an, char *why, size_t wn)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res, *ai;
	char service[8];
	int fd = -1, rc;

	snprintf(service, sizeof(service), "%d", port);
	rc = getaddrinfo(name, service, &hints, &res);
	if (rc) {
		snprintf(why, wn, "no address: %s", gai_strerror(rc));
		return -1;
	}
	snprintf(why, wn, "no address");
	for (ai = res; ai && fd < 0; ai = ai->ai_next) {
		struct pollfd pfd;
		int e = 0;
		socklen_t el = sizeof(e);

		getnameinfo(ai->ai_addr, ai->ai_addrlen, addr, (socklen_t)an, NULL, 0, NI_NUMERICHOST);
		fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
			e = errno;
		} else {
			pfd = (struct pollfd){ .fd = fd, .events = POLLOUT };
			if (poll(&pfd, 1, EGRESS_CONNECT_TIMEOUT_MS) != 1)
				e = ETIMEDOUT;
			else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
				e = errno;
		}
		if (e) {
			snprintf(why, wn, "connect to %s: %s", addr, strerror(e));
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(res);
	return fd;
}

/* A whole request is in: check, resolve, connect, answer; the connection relays or is closed. */
static void handle_request(struct sbx_impl *s, struct egress_conn *c, size_t head_len)
{
	char why[160], addr[64] = "";
	double now = sbx_now_ms();
	int listed;

	if (parse_connect(c->req, c->name, sizeof(c->name), &c->port)) {
		verdict(s, "egress_query", "", 0, NULL, "not a CONNECT request", 0);
		reply(c, "400 Bad Request");
		conn_close(s, c);
		return;
	}
	if (!rate_ok(s, now)) {
		verdict(s, "egress_query", c->name, c->port, NULL, "rate limit", 0);
		reply(c, "403 denied");
		conn_close(s, c);
		return;
	}
	if (egress_check_name(&s->egress, c->name, why, sizeof(why)) &&
	    !(granted(s, c->name, 0, now) && strncmp(why, "name not", 8) == 0)) {
		verdict(s, "egress_query", c->name, c->port, NULL, why, 0);
		reply(c, "403 denied");
		conn_close(s, c);
		return;
	}
	verdict(s, "egress_query", c->name, c->port, NULL, "allowed", 1);
	listed = egress_dest_listed(&s->egress, c->name, c->port) || granted(s, c->name, c->port, now);
	if (!listed) {
		verdict(s, "egress_connect", c->name, c->port, NULL, "destination not on the allowlist", 0);
		reply(c, "403 denied");
		conn_close(s, c);
		return;
	}
	c->out_fd = dial(c->name, c->port, addr, sizeof(addr), why, sizeof(why));
	if (c->out_fd < 0) {
		verdict(s, "egress_connect", c->name, c->port, addr[0] ? addr : NULL, why, 0);
		reply(c, "502 Bad Gateway");
		conn_close(s, c);
		return;
	}
	verdict(s, "egress_connect", c->name, c->port, addr, "allowed", 1);
	reply(c, "200 Connection established");
	c->state = EGRESS_RELAY;
	c->t_open_ms = now;
	/* Bytes the planner sent after its request (a TLS hello) go first. */
	c->up_len = c->req_len - head_len;
	memcpy(c->up, c->req + head_len, c->up_len);
	c->up_off = 0;
}

static void accept_one(struct sbx_impl *s)
{
	int fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0)
		return;
	for (int i = 0; i < EGRESS_MAX_CONNS; i++) {
		struct egress_conn *c = &s->conns[i];

		if (c->state != EGRESS_FREE)
			continue;
		c->state = EGRESS_REQUEST;
		c->in_fd = fd;
		c->out_fd = -1;
		c->req_len = 0;
		c->t_open_ms = sbx_now_ms();
		return;
	}
	verdict(s, "egress_query", "", 0, NULL, "too many connections", 0);
	close(fd);
}

static void read_request(struct sbx_impl *s, struct egress_conn *c)
{
	ssize_t r = read(c->in_fd, c->req + c->req_len, EGRESS_REQ_MAX - c->req_len);
	char *end;

	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		conn_close(s, c);
		return;
	}
	c->req_len += (size_t)r;
	c->req[c->req_len] = '\0';
	end = strstr(c->req, "\r\n\r\n");
	if (end) {
		handle_request(s, c, (size_t)(end + 4 - c->req));
	} else if (c->req_len == EGRESS_REQ_MAX || memchr(c->req, '\0', c->req_len)) {
		verdict(s, "egress_query", "", 0, NULL, "request too long or not text", 0);
		reply(c, "400 Bad Request");
		conn_close(s, c);
	}
}

int egress_poll_fds(struct sbx_impl *s, struct pollfd *pfd)
{
	int n = 0;

	pfd[n++] = (struct pollfd){ .fd = s->listen_fd, .events = POLLIN };
	for (int i = 0; i < EGRESS_MAX_CONNS; i++) {
		const struct egress_conn *c = &s->conns[i];
		short in = 0, out = 0;

		if (c->state == EGRESS_REQUEST) {
			in = POLLIN;
		} else if (c->state == EGRESS_RELAY) {
			in = (short)((c->up_len == 0 && !c->up_eof ? POLLIN : 0) |
				     (c->down_len > c->down_off ? POLLOUT : 0));
			out = (short)((c->down_len == 0 && !c->down_eof ? POLLIN : 0) |
				      (c->up_len > c->up_off ? POLLOUT : 0));
		}
		pfd[n++] = (struct pollfd){ .fd = c->state != EGRESS_FREE ? c->in_fd : -1, .events = in };
		pfd[n++] = (struct pollfd){ .fd = c->state == EGRESS_RELAY ? c->out_fd : -1, .events = out };
	}
	return n;
}

/* Moves what is ready from one side to the other; -1 when the connection is broken. */
static int pump(int from, int to, char *buf, size_t *len, size_t *off, int *eof,
		unsigned long long *total, short rev_from, short rev_to)
{
	if (*len == 0 && !*eof && (rev_from & (POLLIN | POLLHUP | POLLERR))) {
		ssize_t r = read(from, buf, EGRESS_BUF);

		if (r < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		if (r == 0) {
			*eof = 1;
			shutdown(to, SHUT_WR);
		} else if (r > 0) {
			*len = (size_t)r;
			*off = 0;
			*total += (unsigned long long)r;
		}
	}
	if (*len > *off && (rev_to & (POLLOUT | POLLERR | POLLHUP))) {
		ssize_t w = send(to, buf + *off, *len - *off, MSG_NOSIGNAL);

		if (w < 0 && errno != EAGAIN && errno != EINTR)
			return -1;
		if (w > 0)
			*off += (size_t)w;
		if (*off == *len) {
			*len = *off = 0;
			if (*eof)
				shutdown(to, SHUT_WR);
		}
	}
	return 0;
}

void egress_poll_done(struct sbx_impl *s, const struct pollfd *pfd, int n)
{
	double now = sbx_now_ms();

	if (n > 0 && (pfd[0].revents & POLLIN))
		accept_one(s);
	for (int i = 0; i < EGRESS_MAX_CONNS && 1 + 2 * i + 1 < n; i++) {
		struct egress_conn *c = &s->conns[i];
		short rin = pfd[1 + 2 * i].revents, rout = pfd[2 + 2 * i].revents;

		if (c->state == EGRESS_REQUEST) {
			if (rin)
				read_request(s, c);
			else if (now - c->t_open_ms > EGRESS_REQ_TIMEOUT_MS) {
				verdict(s, "egress_query", "", 0, NULL, "no request in time", 0);
				conn_close(s, c);
			}
			continue;
		}
		if (c->state != EGRESS_RELAY || !(rin | rout))
			continue;
		if (pump(c->in_fd, c->out_fd, c->up, &c->up_len, &c->up_off, &c->up_eof, &c->up_total,
			 rin, rout) < 0 ||
		    pump(c->out_fd, c->in_fd, c->down, &c->down_len, &c->down_off, &c->down_eof,
			 &c->down_total, rout, rin) < 0 ||
		    (c->up_eof && c->down_eof && !c->up_len && !c->down_len))
			conn_close(s, c);
	}
}

int egress_grant(struct sbx_proc *p, const char *dest, double minutes, bl_err *err)
{
	struct sbx_impl *s = p ? p->impl : NULL;
	struct egress_policy one = { .max_label_length = 63 };
	double now = sbx_now_ms();
	char why[96], host[256];
	int slot = -1, port;

	if (!s || !s->has_egress)
		return bl_fail(err, BL_EINVAL, "egress grant: the sandbox has no egress broker "
			       "(its machine file gives the planner no planner.egress)");
	if (!(minutes > 0 && minutes <= 24 * 60))
		return bl_fail(err, BL_EINVAL, "egress grant: %g minutes is not in (0, 1440]", minutes);
	if (strlen(dest) >= sizeof(s->grants[0].dest) || hostport_split(dest, host, sizeof(host), &port))
		return bl_fail(err, BL_EINVAL, "egress grant: \"%s\" is not host:port", dest);
	snprintf(one.domains[0], sizeof(one.domains[0]), "%s", host);
	one.n_domains = 1;
	if (egress_check_name(&one, host, why, sizeof(why)))
		return bl_fail(err, BL_EINVAL, "egress grant: \"%s\" is not host:port (%s)", dest, why);
	pthread_mutex_lock(&s->lock);
	for (int i = 0; i < EGRESS_MAX_GRANTS; i++)
		if (s->grants[i].until_ms <= now && slot < 0)
			slot = i;
	if (slot >= 0) {
		snprintf(s->grants[slot].dest, sizeof(s->grants[slot].dest), "%s:%d", host, port);
		s->grants[slot].until_ms = now + minutes * 60000;
	}
	pthread_mutex_unlock(&s->lock);
	if (slot < 0)
		return bl_fail(err, BL_EINVAL, "egress grant: %d grants already running", EGRESS_MAX_GRANTS);
	cJSON *d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "destination", dest);
	cJSON_AddNumberToObject(d, "minutes", minutes);
	sbx_queue(s, "egress_grant", d);
	return 0;
}

/* serve.c: the console's server: libmicrohttpd behind the console's own listener on the address asked, every request routed through one table after the token check. */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "serve/serve_int.h"

typedef int (*serve_handler)(struct serve *s, struct serve_req *c, const char *rest);

static int page(struct serve *s, struct serve_req *c, const char *rest)
{
	const struct serve_asset *a = serve_asset_find("index.html");

	return serve_send(c, 200, a->type, a->data, a->len, "Cache-Control: no-store\r\n");
}

static int asset(struct serve *s, struct serve_req *c, const char *rest)
{
	const struct serve_asset *a = serve_asset_find(rest);

	if (!a)
		return serve_send_error(c, 404, "no such asset: %s", rest);
	return serve_send(c, 200, a->type, a->data, a->len, "Cache-Control: no-cache\r\n");
}

/* /favicon.ico, which browsers ask for on every page (the report's too): the console's icon. */
static int favicon(struct serve *s, struct serve_req *c, const char *rest)
{
	const struct serve_asset *a = serve_asset_find("favicon.svg");

	return serve_send(c, 200, a->type, a->data, a->len, "Cache-Control: max-age=86400\r\n");
}

static int runs(struct serve *s, struct serve_req *c, const char *rest)
{
	bl_err err = { 0 };
	cJSON *o;

	if (serve_runs_json(s, &o, &err))
		return serve_send_error(c, 500, "%s", err.msg);
	cJSON_AddBoolToObject(o, "read_only", s->o.read_only);
	return serve_send_json(c, 200, o);
}

/* "NAME" or "NAME/WHAT": the run and what is asked of it ("" for the run itself). */
static int run_of(struct serve *s, struct serve_req *c, const char *rest, struct serve_run *r,
		  const char **what)
{
	char name[SERVE_NAME_MAX];
	const char *slash = strchr(rest, '/');
	size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
	bl_err err = { 0 };

	if (n >= sizeof(name)) {
		serve_send_error(c, 404, "no such run");
		return -1;
	}
	memcpy(name, rest, n);
	name[n] = '\0';
	*what = slash ? slash + 1 : "";
	if (serve_run_find(s, name, r, &err)) {
		serve_send_error(c, 404, "%s", err.msg);
		return -1;
	}
	return 0;
}

static int run_get(struct serve *s, struct serve_req *c, const char *rest)
{
	struct serve_run r;
	const char *what;
	bl_err err = { 0 };

	if (run_of(s, c, rest, &r, &what))
		return 1;
	if (!*what) {
		cJSON *o;

		if (serve_run_json(s, &r, &o, &err))
			return serve_send_error(c, 500, "%s", err.msg);
		cJSON_AddBoolToObject(o, "read_only", s->o.read_only);
		return serve_send_json(c, 200, o);
	}
	if (!strcmp(what, "events"))
		return serve_run_events(s, c, &r);
	if (!strcmp(what, "errmap.png") || !strcmp(what, "canvas.png")) {
		unsigned char *png = NULL;
		size_t n = 0;
		int rc;

		if ((!strcmp(what, "errmap.png") ? serve_run_errmap_png : serve_run_canvas_png)(&r, &png, &n, &err))
			return serve_send_error(c, n == 0 ? 404 : 500, "%s", err.msg);
		rc = serve_send(c, 200, "image/png", png, n, "Cache-Control: no-store\r\n");
		free(png);
		return rc;
	}
	return serve_send_error(c, 404, "no such page of run %s: %s", r.name, what);
}

static int run_post(struct serve *s, struct serve_req *c, const char *rest)
{
	struct serve_run r;
	const char *what;

	if (run_of(s, c, rest, &r, &what))
		return 1;
	return serve_answer(s, c, &r, what);
}

static int file_get(struct serve *s, struct serve_req *c, const char *rest)
{
	struct serve_run r;
	const char *what;

	if (run_of(s, c, rest, &r, &what))
		return 1;
	return serve_send_run_file(s, c, &r, what);
}

/* Every page; a path ending in '/' is a prefix, the rest passed on. */
static const struct serve_route {
	const char *method;
	const char *path;
	int post; /* changes state: the Origin is checked and read-only mode refuses it */
	serve_handler handle;
} routes[] = {
	{ "GET", "/", 0, page },
	{ "GET", "/run/", 0, page },
	{ "GET", "/assets/", 0, asset },
	{ "GET", "/favicon.ico", 0, favicon },
	{ "GET", "/api/runs", 0, runs },
	{ "GET", "/api/runs/", 0, run_get },
	{ "GET", "/files/", 0, file_get },
	{ "POST", "/api/runs/", 1, run_post },
};

static const struct serve_route *route_find(const char *method, const char *uri, const char **rest,
					    int *method_known)
{
	*method_known = 0;
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		const struct serve_route *rt = &routes[i];
		size_t n = strlen(rt->path);
		int prefix = n > 1 && rt->path[n - 1] == '/';

		if (prefix ? strncmp(uri, rt->path, n) : strcmp(uri, rt->path))
			continue;
		if (prefix && !uri[n])
			continue;
		if (strcmp(method, rt->method)) {
			*method_known = 1;
			continue;
		}
		*rest = uri + (prefix ? n : strlen(uri));
		return rt;
	}
	return NULL;
}

/* The request's first call: the token, then the route; a GET is answered now, a POST once its body is in. */
static int request_start(struct serve *s, struct serve_req *c)
{
	const char *len = serve_header(c, "Content-Length");
	int method_known, post = !strcmp(c->method, "POST");

	if (strlen(c->url) >= SERVE_PATH_MAX)
		return serve_send_error(c, 400, "a request for a path of this server");
	/* The token first: nothing, not even a 404, is told to a client without it. */
	if (serve_auth(s, c, post))
		return 0;
	c->rt = route_find(c->method, c->url, &c->rest, &method_known);
	if (!c->rt) {
		if (method_known)
			return serve_send_error(c, 405, "%s is not allowed on %s", c->method, c->url);
		return serve_send_error(c, 404, "no such page: %s", c->url);
	}
	c->content_length = -1;
	if (len) {
		char *end;

		errno = 0;
		c->content_length = strtoll(len, &end, 10);
		if (errno || *end || end == len || c->content_length < 0)
			c->content_length = -1;
	}
	if (c->rt->post && (c->content_length < 0 || c->content_length > SERVE_BODY_MAX))
		return serve_send_error(c, 413, "a body of at most %d bytes, with its Content-Length", SERVE_BODY_MAX);
	if (!c->rt->post)
		c->rt->handle(s, c, c->rest);
	return 0;
}

/* libmicrohttpd's access handler: called with the headers, then with each piece of the body, then once more. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *mc, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_n, void **con_cls)
{
	struct serve *s = cls;
	struct serve_req *c = *con_cls;

	if (!c) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return MHD_NO;
		*con_cls = c;
		c->mc = mc;
		c->s = s;
		c->method = method;
		c->url = url;
		request_start(s, c);
		return c->answered || c->rt ? MHD_YES : MHD_NO;
	}
	if (*upload_n) {
		/* Past the answer, or past SERVE_BODY_MAX: read and dropped (the Content-Length said less). */
		if (!c->answered && c->body_n + *upload_n <= SERVE_BODY_MAX) {
			memcpy(c->body + c->body_n, upload, *upload_n);
			c->body_n += *upload_n;
		} else {
			c->body_n = SERVE_BODY_MAX + 1;
		}
		*upload_n = 0;
		return MHD_YES;
	}
	if (!c->answered && c->rt) {
		if (c->body_n > SERVE_BODY_MAX)
			c->body_n = 0;
		c->rt->handle(s, c, c->rest);
	}
	if (!c->answered)
		serve_send_error(c, 500, "no answer");
	return c->answered ? MHD_YES : MHD_NO;
}

static void on_request_done(void *cls, struct MHD_Connection *mc, void **con_cls,
			    enum MHD_RequestTerminationCode code)
{
	free(*con_cls);
	*con_cls = NULL;
}

/* Whether host ("127.0.0.1", "localhost", "[::1]") is this machine's loopback. */
static int loopback_host(const char *host)
{
	return !strncmp(host, "127.", 4) || !strcmp(host, "localhost") || !strcmp(host, "[::1]");
}

/* "HOST:PORT" into the address to listen on ("[::1]:PORT" for IPv6; "localhost" is 127.0.0.1). */
static int listen_addr(const char *listen, char *host, size_t hn, struct sockaddr_storage *sa,
		       socklen_t *len, bl_err *err)
{
	const char *colon = strrchr(listen, ':');
	char bare[256];
	char *end;
	long port;

	if (!colon || colon == listen)
		return bl_fail(err, BL_EINVAL, "--listen %s: give HOST:PORT (127.0.0.1:8080)", listen);
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || port < 0 || port > 65535)
		return bl_fail(err, BL_EINVAL, "--listen %s: port must be 0 to 65535", listen);
	if ((size_t)(colon - listen) >= hn || (size_t)(colon - listen) >= sizeof(bare))
		return bl_fail(err, BL_EINVAL, "--listen %s: host too long", listen);
	memcpy(host, listen, (size_t)(colon - listen));
	host[colon - listen] = '\0';
	memset(sa, 0, sizeof(*sa));
	if (strchr(host, ':')) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)sa;
		size_t n = strlen(host);

		if (host[0] != '[' || host[n - 1] != ']')
			return bl_fail(err, BL_EINVAL, "--listen %s: an IPv6 address goes in brackets ([::1]:8080)", listen);
		memcpy(bare, host + 1, n - 2);
		bare[n - 2] = '\0';
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)port);
		if (inet_pton(AF_INET6, bare, &a->sin6_addr) != 1)
			return bl_fail(err, BL_EINVAL, "--listen %s: %s is not an IPv6 address", listen, bare);
		*len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)sa;

		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)port);
		if (inet_pton(AF_INET, strcmp(host, "localhost") ? host : "127.0.0.1", &a->sin_addr) != 1)
			return bl_fail(err, BL_EINVAL, "--listen %s: %s is not an IPv4 address (give one, or [IPv6])",
				       listen, host);
		*len = sizeof(*a);
	}
	return 0;
}

static int runs_given(struct serve *s, bl_err *err)
{
	struct stat st;

	if (s->o.runs_dir) {
		if (!realpath(s->o.runs_dir, s->runs_dir) || stat(s->runs_dir, &st) || !S_ISDIR(st.st_mode))
			return bl_fail(err, BL_EINVAL, "--runs %s: not a directory", s->o.runs_dir);
	}
	for (int i = 0; i < s->o.n_run_dirs; i++) {
		struct serve_run *r = &s->named[s->n_named];
		char path[SERVE_PATH_MAX], *base;

		if (!realpath(s->o.run_dirs[i], r->dir) || stat(r->dir, &st) || !S_ISDIR(st.st_mode) ||
		    snprintf(path, sizeof(path), "%s/run.json", r->dir) >= (int)sizeof(path) ||
		    access(path, R_OK))
			return bl_fail(err, BL_EINVAL, "%s: not a run directory (no run.json)",
				       s->o.run_dirs[i]);
		base = strrchr(r->dir, '/');
		snprintf(r->name, sizeof(r->name), "%s", base ? base + 1 : r->dir);
		if (serve_path_ok(r->name, err) || strchr(r->name, '/'))
			return bl_fail(err, BL_EINVAL, "%s: a run directory's name must be letters, digits, '.', '_' or '-'",
				       s->o.run_dirs[i]);
		for (int k = 0; k < s->n_named; k++)
			if (!strcmp(s->named[k].name, r->name))
				return bl_fail(err, BL_EINVAL, "%s and %s have the same name: serve them from different commands",
					       s->named[k].dir, r->dir);
		s->n_named++;
	}
	if (!s->o.runs_dir && !s->n_named)
		return bl_fail(err, BL_EINVAL, "serve needs --runs DIR or at least one RUN_DIR");
	return 0;
}

int serve_start(const struct serve_options *o, struct serve **out, bl_err *err)
{
	struct serve *s = calloc(1, sizeof(*s));
	struct sockaddr_storage sa;
	socklen_t sa_len = 0;
	int rc;

	if (!s)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	s->o = *o;
	s->o.listen = o->listen ? o->listen : "127.0.0.1:8080";
	pthread_mutex_init(&s->lock, NULL);
	if ((rc = runs_given(s, err)) ||
	    (rc = listen_addr(s->o.listen, s->host, sizeof(s->host), &sa, &sa_len, err)))
		goto out_free;
	/* Anyone who can reach the address can try the token: only this machine, unless told. */
	if (!loopback_host(s->host) && !o->allow_remote) {
		rc = bl_fail(err, BL_EINVAL, "--listen %s is not a loopback address: the console would be open to "
			     "the network; give --allow-remote as well to mean it", s->o.listen);
		goto out_free;
	}
	if (o->token) {
		if (strlen(o->token) < 16 || strlen(o->token) > SERVE_TOKEN_HEX) {
			rc = bl_fail(err, BL_EINVAL, "a token must be 16 to 64 characters");
			goto out_free;
		}
		snprintf(s->token, sizeof(s->token), "%s", o->token);
	} else if ((rc = serve_token_new(s->token, err))) {
		goto out_free;
	}
	if (o->self_exe)
		snprintf(s->exe, sizeof(s->exe), "%s", o->self_exe);
	else if (!realpath("/proc/self/exe", s->exe))
		snprintf(s->exe, sizeof(s->exe), "brushloop");
	/* Answers: 2 a second (bursts of 10) from everyone together; each client's requests have their own bucket (serve_auth.c). */
	s->post = (struct serve_bucket){ .tokens = 10, .rate_per_s = 2, .burst = 10, .last_ms = clk_real_ns() / 1000000 };
	/*
	 * glibc gives busy threads malloc arenas of their own, each keeping what
	 * it freed: with a thread per connection and the estimates' planning
	 * that is memory that only grows. Two arenas serve a console's few
	 * allocations at once.
	 */
	mallopt(M_ARENA_MAX, 2);
	/*
	 * A thread per connection (a handler may take seconds, an event stream
	 * waits in its reader), taken only from the console's listener
	 * (serve_conns.c) once the headers are in; its own error pages are fixed
	 * texts, and it answers no preflight itself.
	 */
	s->mhd = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL |
				  MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC,
				  0, NULL, NULL, on_request, s,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned int)SERVE_LIVE_MAX,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)SERVE_IDLE_S,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SERVE_HEADERS_MAX,
				  MHD_OPTION_NOTIFY_COMPLETED, on_request_done, s,
				  MHD_OPTION_NOTIFY_CONNECTION, serve_conn_notify, s,
				  MHD_OPTION_END);
	if (!s->mhd) {
		rc = bl_fail(err, BL_EIO, "cannot start the console's HTTP server (libmicrohttpd %s)", MHD_get_version());
		goto out_free;
	}
	if ((rc = serve_conns_start(s, (struct sockaddr *)&sa, sa_len, err))) {
		char why[BL_ERR_MSG_MAX];

		snprintf(why, sizeof(why), "%s", err ? err->msg : "");
		rc = bl_fail(err, rc, "cannot listen on %s: %s", s->o.listen, why);
		goto out_mhd;
	}
	{
		struct sockaddr_storage got;
		socklen_t n = sizeof(got);

		if (getsockname(s->conns.listen_fd, (struct sockaddr *)&got, &n) == 0)
			s->port = got.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&got)->sin6_port)
							    : ntohs(((struct sockaddr_in *)&got)->sin_port);
	}
	*out = s;
	return 0;
out_mhd:
	MHD_stop_daemon(s->mhd);
out_free:
	pthread_mutex_destroy(&s->lock);
	free(s);
	return rc;
}

int serve_port(const struct serve *s)
{
	return s->port;
}

int serve_loopback(const struct serve *s)
{
	return loopback_host(s->host);
}

const char *serve_token(const struct serve *s)
{
	return s->token;
}

void serve_url(const struct serve *s, char *out, size_t n)
{
	const char *h = s->host;

	/* An address for every interface is reached through loopback on this machine. */
	if (!strcmp(h, "0.0.0.0") || !*h)
		h = "127.0.0.1";
	else if (!strcmp(h, "[::]"))
		h = "[::1]";
	snprintf(out, n, "http://%s:%d/?token=%s", h, s->port, s->token);
}

void serve_stop(struct serve *s)
{
	if (!s)
		return;
	s->stopping = 1; /* the event streams see it within half a second and end */
	serve_conns_stop(&s->conns);
	MHD_stop_daemon(s->mhd);
	serve_conns_free(&s->conns);
	serve_children_stop(s);
	serve_estimates_stop(s);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

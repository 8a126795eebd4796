/* serve.c: the console's server: starts civetweb on the address asked, routes every request through one table after the token check. */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "serve/serve_int.h"

typedef int (*serve_handler)(struct serve *s, struct mg_connection *c, const char *rest);

static int page(struct serve *s, struct mg_connection *c, const char *rest)
{
	const struct serve_asset *a = serve_asset_find("index.html");

	return serve_send(c, 200, a->type, a->data, a->len, "Cache-Control: no-store\r\n");
}

static int asset(struct serve *s, struct mg_connection *c, const char *rest)
{
	const struct serve_asset *a = serve_asset_find(rest);

	if (!a)
		return serve_send_error(c, 404, "no such asset: %s", rest);
	return serve_send(c, 200, a->type, a->data, a->len, "Cache-Control: no-cache\r\n");
}

/* /favicon.ico, which browsers ask for on every page (the report's too): the console's icon. */
static int favicon(struct serve *s, struct mg_connection *c, const char *rest)
{
	const struct serve_asset *a = serve_asset_find("favicon.svg");

	return serve_send(c, 200, a->type, a->data, a->len, "Cache-Control: max-age=86400\r\n");
}

static int runs(struct serve *s, struct mg_connection *c, const char *rest)
{
	bl_err err = { 0 };
	cJSON *o;

	if (serve_runs_json(s, &o, &err))
		return serve_send_error(c, 500, "%s", err.msg);
	cJSON_AddBoolToObject(o, "read_only", s->o.read_only);
	return serve_send_json(c, 200, o);
}

/* "NAME" or "NAME/WHAT": the run and what is asked of it ("" for the run itself). */
static int run_of(struct serve *s, struct mg_connection *c, const char *rest, struct serve_run *r,
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

static int run_get(struct serve *s, struct mg_connection *c, const char *rest)
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

static int run_post(struct serve *s, struct mg_connection *c, const char *rest)
{
	struct serve_run r;
	const char *what;

	if (run_of(s, c, rest, &r, &what))
		return 1;
	return serve_answer(s, c, &r, what);
}

static int file_get(struct serve *s, struct mg_connection *c, const char *rest)
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

static int on_request(struct mg_connection *c, void *data)
{
	struct serve *s = data;
	const struct mg_request_info *ri = mg_get_request_info(c);
	const char *uri = ri->local_uri_raw, *rest = "";
	const struct serve_route *rt;
	int method_known, post = !strcmp(ri->request_method, "POST");

	if (!uri || strlen(uri) >= SERVE_PATH_MAX)
		return serve_send_error(c, 400, "a request for a path of this server"), 400;
	/* The token first: nothing, not even a 404, is told to a client without it. */
	if (serve_auth(s, c, post))
		return 403;
	rt = route_find(ri->request_method, uri, &rest, &method_known);
	if (!rt) {
		if (method_known)
			serve_send_error(c, 405, "%s is not allowed on %s", ri->request_method, uri);
		else
			serve_send_error(c, 404, "no such page: %s", uri);
		return 404;
	}
	rt->handle(s, c, rest);
	return 200;
}

static int on_log(const struct mg_connection *c, const char *msg)
{
	/* civetweb's own messages (a client gone mid-response) are not the operator's business. */
	return 1;
}

/* Whether host ("127.0.0.1", "localhost", "[::1]") is this machine's loopback. */
static int loopback_host(const char *host)
{
	return !strncmp(host, "127.", 4) || !strcmp(host, "localhost") || !strcmp(host, "[::1]");
}

/* "HOST:PORT" into what civetweb listens on ("[::1]:PORT" for IPv6); a bare port is loopback. */
static int listen_spec(const char *listen, char *host, size_t hn, char *spec, size_t sn,
		       bl_err *err)
{
	const char *colon = strrchr(listen, ':');
	char *end;
	long port;

	if (!colon || colon == listen)
		return bl_fail(err, BL_EINVAL, "--listen %s: give HOST:PORT (127.0.0.1:8080)", listen);
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno || *end || end == colon + 1 || port < 0 || port > 65535)
		return bl_fail(err, BL_EINVAL, "--listen %s: port must be 0 to 65535", listen);
	if ((size_t)(colon - listen) >= hn)
		return bl_fail(err, BL_EINVAL, "--listen %s: host too long", listen);
	memcpy(host, listen, (size_t)(colon - listen));
	host[colon - listen] = '\0';
	if (strchr(host, ':') && (host[0] != '[' || host[strlen(host) - 1] != ']'))
		return bl_fail(err, BL_EINVAL, "--listen %s: an IPv6 address goes in brackets ([::1]:8080)", listen);
	/* Debian's civetweb 1.15 is built without USE_IPV6: said plainly, not as "Failed to setup server ports". */
	if (host[0] == '[' && !mg_check_feature(8))
		return bl_fail(err, BL_EINVAL, "--listen %s: this civetweb (%s) was built without IPv6, so the console "
			       "listens on IPv4 only (127.0.0.1)", listen, mg_version());
	snprintf(spec, sn, "%s:%ld", host, port);
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
	char spec[320];
	const char *opts[] = {
		"listening_ports", spec,
		"num_threads", SERVE_WORKERS_TEXT,
		"request_timeout_ms", SERVE_HEADER_MS,
		"max_request_size", "16384", /* bytes of request line and headers */
		"enable_keep_alive", "yes",
		"enable_directory_listing", "no",
		"connection_queue", "64",
		"listen_backlog", "512",
		/* civetweb answers a CORS preflight itself with "*" unless these are empty: it goes to serve_auth. */
		"access_control_allow_origin", "",
		"access_control_allow_methods", "",
		"access_control_allow_headers", "",
		NULL, NULL,
	};
	struct mg_callbacks cb = { .log_message = on_log, .http_error = serve_http_error,
				   .init_connection = serve_conn_open, .connection_close = serve_conn_close };
	struct mg_init_data init = { .callbacks = &cb, .configuration_options = opts };
	struct mg_error_data ed;
	char emsg[256] = "";
	struct mg_server_port ports[4];
	int rc, np;

	if (!s)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	s->o = *o;
	s->o.listen = o->listen ? o->listen : "127.0.0.1:8080";
	pthread_mutex_init(&s->lock, NULL);
	if ((rc = serve_conns_init(&s->conns, err))) {
		pthread_mutex_destroy(&s->lock);
		free(s);
		return rc;
	}
	if ((rc = runs_given(s, err)) ||
	    (rc = listen_spec(s->o.listen, s->host, sizeof(s->host), spec, sizeof(spec), err)))
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
	 * it freed: with 64 workers and the estimates' planning that is memory
	 * that only grows. Two arenas serve a console's few allocations at once.
	 */
	mallopt(M_ARENA_MAX, 2);
	init.user_data = s;
	memset(&ed, 0, sizeof(ed));
	ed.text = emsg;
	ed.text_buffer_size = sizeof(emsg);
	mg_init_library(0);
	s->ctx = mg_start2(&init, &ed);
	if (!s->ctx) {
		rc = bl_fail(err, BL_EIO, "cannot listen on %s: %s", s->o.listen, emsg[0] ? emsg : "unknown error");
		goto out_lib;
	}
	np = mg_get_server_ports(s->ctx, 4, ports);
	s->port = np > 0 ? ports[0].port : 0;
	mg_set_request_handler(s->ctx, "/", on_request, s);
	*out = s;
	return 0;
out_lib:
	mg_exit_library();
out_free:
	serve_conns_free(&s->conns);
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
	s->stopping = 1; /* the event streams see it within a second and end */
	mg_stop(s->ctx);
	mg_exit_library();
	serve_children_stop(s);
	serve_estimates_stop(s);
	serve_conns_free(&s->conns);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

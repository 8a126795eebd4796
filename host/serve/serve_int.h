/* serve_int.h: what the console's files share: the server, its runs, the request helpers and the route table. */
#ifndef BL_SERVE_SERVE_INT_H
#define BL_SERVE_SERVE_INT_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include <civetweb.h>
#include <cJSON.h>

#include "serve/serve.h"

#define SERVE_PATH_MAX 4096
#define SERVE_NAME_MAX 128
#define SERVE_BODY_MAX 4096        /* bytes: every answer fits in far less */
#define SERVE_FILE_MAX (64u << 20) /* bytes: the largest run file served */
#define SERVE_STREAMS_MAX 8        /* event streams at once (each holds a thread) */
#define SERVE_CHILDREN_MAX 8

/*
 * civetweb's workers, each holding one connection from its accept to its
 * close (serve_conns.c): those without the token yet hold at most
 * SERVE_UNAUTH_MAX of them, and the rest are the token's holder's.
 */
#define SERVE_WORKERS 64
#define SERVE_WORKERS_TEXT "64"
#define SERVE_RESERVE 16
#define SERVE_UNAUTH_MAX (SERVE_WORKERS - SERVE_RESERVE)
#define SERVE_HEADER_MS "5000"     /* a request's line and headers arrive within this, or it is closed */
#define SERVE_EVICT_MIN_MS 200     /* under pressure, a connection without the token after this long may be ended */
#define SERVE_SWEEP_MS 50
#define SERVE_CLIENTS_MAX 64       /* clients with a rate bucket of their own (the least recent make room) */

/* A token bucket: rate_per_s sustained, burst at once. */
struct serve_bucket {
	double tokens, rate_per_s, burst;
	int64_t last_ms;
};

/* One worker's connection: the worker's thread, since when, whether a request of it carried the token. */
struct serve_conn_slot {
	const struct mg_connection *c; /* NULL: the worker is free */
	pthread_t worker;
	int64_t since_ns;
	int authed, evicted;
};

struct serve_conns {
	pthread_mutex_t lock;
	struct serve_conn_slot slot[SERVE_WORKERS];
	long evicted; /* connections ended to make room, since the start */
	pthread_t thread; /* the sweeper */
	int stop;
};

/* A client's rate: its address and its bucket, for requests that carried the token. */
struct serve_client {
	char addr[48];
	struct serve_bucket b;
	int64_t last_ms;
};

struct serve_run {
	char name[SERVE_NAME_MAX];
	char dir[SERVE_PATH_MAX];
};

struct serve_estimate {
	char name[SERVE_NAME_MAX];
	char dir[SERVE_PATH_MAX];
	cJSON *json;      /* what `brushloop estimate` says for the run's target, machine and palette */
	int done;         /* json is there (or null: it could not be made) */
	pthread_t thread; /* planning takes seconds: done aside, joined once done */
	int joined;
	struct serve *s;
};

struct serve {
	struct mg_context *ctx;
	struct serve_options o;
	char runs_dir[SERVE_PATH_MAX];         /* realpath of --runs, "" when none */
	struct serve_run named[SERVE_MAX_RUNS]; /* realpaths of the RUN_DIRs given */
	int n_named;
	char token[SERVE_TOKEN_HEX + 1];
	char host[256];                        /* as listened on */
	int port;
	char exe[SERVE_PATH_MAX];
	volatile int stopping;
	pthread_mutex_t lock;                  /* the buckets, streams, estimates and children */
	struct serve_client clients[SERVE_CLIENTS_MAX];
	struct serve_bucket post;
	struct serve_conns conns;
	int streams;
	struct serve_estimate est[SERVE_MAX_RUNS];
	int n_est;
	pid_t children[SERVE_CHILDREN_MAX];    /* resumes the console started, by run */
	char child_run[SERVE_CHILDREN_MAX][SERVE_NAME_MAX];
};

/* ---- serve_http.c: responses and requests ---- */
int serve_send(struct mg_connection *c, int status, const char *type, const void *body, size_t n,
	       const char *extra_headers);
int serve_send_json(struct mg_connection *c, int status, cJSON *o); /* frees o */
int serve_send_error(struct mg_connection *c, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The request's JSON body, at most SERVE_BODY_MAX bytes, Content-Type application/json. */
int serve_read_json(struct mg_connection *c, cJSON **out, int *http_status, bl_err *err);
/* A header's value, or NULL. */
const char *serve_header(struct mg_connection *c, const char *name);
/* Sends the file rel of a run directory (no symlink, no temporary file) with its type by extension. */
int serve_send_run_file(struct serve *s, struct mg_connection *c, const struct serve_run *r,
			const char *rel);
/* Who answers from the console, for the journal: "console (client ADDR:PORT, UA)". */
void serve_client_name(struct mg_connection *c, char *out, size_t n);

/* The console's error page for what civetweb refuses itself: its status and a fixed text, nothing of the request. */
int serve_http_error(struct mg_connection *c, int status, const char *msg);

/* ---- serve_conns.c: who holds civetweb's workers ---- */
int serve_conns_init(struct serve_conns *t, bl_err *err);
void serve_conns_free(struct serve_conns *t);
int serve_conn_open(const struct mg_connection *c, void **data); /* civetweb's init_connection */
void serve_conn_close(const struct mg_connection *c);            /* civetweb's connection_close */
/* The connection's request carried the token: it holds its worker as the reserve's. */
void serve_conn_authed(struct serve *s, const struct mg_connection *c);

/* ---- serve_auth.c: token, cookie, Origin, rates ---- */
int serve_token_new(char out[SERVE_TOKEN_HEX + 1], bl_err *err);
/*
 * Whether the request may go on: the token (cookie, ?token= or Authorization:
 * Bearer), the rate, and for a state-changing request the Origin and
 * read-only mode. Sends the refusal itself and returns nonzero when not.
 */
int serve_auth(struct serve *s, struct mg_connection *c, int post);
int serve_bucket_take(struct serve *s, struct serve_bucket *b);

/* ---- serve_runs.c: the runs and what they say ---- */
/* Finds run name among those served; 0, or BL_EINVAL when there is none. */
int serve_run_find(struct serve *s, const char *name, struct serve_run *out, bl_err *err);
/* Every run served, as the runs page shows them. */
int serve_runs_json(struct serve *s, cJSON **out, bl_err *err);
/* One run, as its page shows it. */
int serve_run_json(struct serve *s, const struct serve_run *r, cJSON **out, bl_err *err);
/* The run's events: one "run" event now and one each time its files change, until the client or the server goes. */
int serve_run_events(struct serve *s, struct mg_connection *c, const struct serve_run *r);
/* The CIEDE2000 map of the latest canvas against the target over the target's rectangle, as PNG bytes (malloc'd). */
int serve_run_errmap_png(const struct serve_run *r, unsigned char **png, size_t *n, bl_err *err);
/* The latest canvas over the same rectangle (the whole canvas before there is a plan), as PNG bytes. */
int serve_run_canvas_png(const struct serve_run *r, unsigned char **png, size_t *n, bl_err *err);

/* ---- serve_answer.c: the operator's answers ---- */
int serve_answer(struct serve *s, struct mg_connection *c, const struct serve_run *r,
		 const char *action);
/* Reaps resumes that ended; signals those still running on stop. */
void serve_children_reap(struct serve *s);
void serve_children_stop(struct serve *s);
/* Waits for the estimates being made (serve_runs.c). */
void serve_estimates_stop(struct serve *s);
/* Whether the console's resume of run name is running (its pid, or 0). */
pid_t serve_child_of(struct serve *s, const char *name);

/* ---- serve_assets.c (generated): the page, its script and its style ---- */
struct serve_asset {
	const char *name; /* "index.html", "app.js", "style.css" */
	const char *type;
	const unsigned char *data;
	size_t len;
};
extern const struct serve_asset serve_assets[];
const struct serve_asset *serve_asset_find(const char *name);

#endif

/* serve_int.h: what the console's files share: the server, its runs, the request helpers and the route table. */
#ifndef BL_SERVE_SERVE_INT_H
#define BL_SERVE_SERVE_INT_H

#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <microhttpd.h>
#include <cJSON.h>

#include "serve/serve.h"

#define SERVE_PATH_MAX 4096
#define SERVE_NAME_MAX 128
#define SERVE_BODY_MAX 4096        /* bytes: every answer fits in far less */
#define SERVE_FILE_MAX (64u << 20) /* bytes: the largest run file served */
#define SERVE_STREAMS_MAX 8        /* event streams at once (each holds a thread) */
#define SERVE_CHILDREN_MAX 8

/*
 * The connections (serve_conns.c): a connection waits in the console's own
 * listener, without a thread, until its request line and headers are all in
 * (SERVE_HEADER_MS at most); only then does libmicrohttpd take it, a thread
 * of its own, at most SERVE_CLIENT_LIVE per client address and SERVE_LIVE_MAX
 * in all. Waiting connections are kept at most SERVE_CLIENT_WAITING per client
 * and SERVE_WAITING_MAX in all, those without their headers dropped first.
 */
#define SERVE_LIVE_MAX 128
#define SERVE_CLIENT_LIVE 32
#define SERVE_WAITING_MAX 2048
#define SERVE_CLIENT_WAITING 1024
#define SERVE_FILES_MAX 4096       /* the descriptors the console asks for (waiting and live connections, runs) */
#define SERVE_HEADER_MS 5000       /* a request's line and headers arrive within this, or it is closed */
#define SERVE_HEADERS_MAX 16384    /* bytes of request line and headers */
#define SERVE_IDLE_S 30            /* a kept-alive connection with nothing asked is closed after this */
#define SERVE_SWEEP_MS 50
#define SERVE_CLIENTS_MAX 64       /* clients with a rate bucket of their own (the least recent make room) */

/* A token bucket: rate_per_s sustained, burst at once. */
struct serve_bucket {
	double tokens, rate_per_s, burst;
	int64_t last_ms;
};

/* A connection waiting for its headers: its socket, its client and since when. */
struct serve_waiting {
	int fd;
	char addr[48];
	struct sockaddr_storage sa;
	socklen_t sa_len;
	int64_t since_ms;
	int ready; /* its headers are all in */
};

/* A connection libmicrohttpd holds, counted against its client. */
struct serve_live {
	char addr[48];
	int used;
};

struct serve_conns {
	pthread_mutex_t lock;
	int listen_fd, epoll_fd, wake_fd;
	struct serve_waiting wait[SERVE_WAITING_MAX];
	int n_wait;
	struct serve_live live[SERVE_LIVE_MAX];
	int n_live;
	long dropped; /* waiting connections closed: no headers in time, or to make room */
	pthread_t thread; /* the listener */
	int started, stop;
	int paused; /* out of descriptors: the listening socket rests one sweep */
};

/* One request: its connection, what it asked, its body as it arrives. */
struct serve_req {
	struct MHD_Connection *mc;
	struct serve *s;
	const char *method, *url;
	const struct serve_route *rt;
	const char *rest;
	char body[SERVE_BODY_MAX + 1];
	size_t body_n;
	long long content_length; /* -1: none given */
	int answered;             /* a response is queued */
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
	struct MHD_Daemon *mhd;
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
int serve_send(struct serve_req *c, int status, const char *type, const void *body, size_t n,
	       const char *extra_headers);
int serve_send_json(struct serve_req *c, int status, cJSON *o); /* frees o */
/* Adds the common headers, Content-Type and extra ("Name: value\r\n"...) to r; NULL (r destroyed) when one is refused. */
struct MHD_Response *serve_response_headers(struct MHD_Response *r, const char *type, const char *extra);
/* Queues r (NULL: -1) as the request's answer and lets go of it. */
int serve_queue(struct serve_req *c, int status, struct MHD_Response *r);
int serve_send_error(struct serve_req *c, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The request's JSON body, at most SERVE_BODY_MAX bytes, Content-Type application/json. */
int serve_read_json(struct serve_req *c, cJSON **out, int *http_status, bl_err *err);
/* A header's value, or NULL. */
const char *serve_header(struct serve_req *c, const char *name);
/* Sends the file rel of a run directory (no symlink, no temporary file) with its type by extension. */
int serve_send_run_file(struct serve *s, struct serve_req *c, const struct serve_run *r,
			const char *rel);
/* Who answers from the console, for the journal: "console (client ADDR:PORT, UA)". */
void serve_client_name(struct serve_req *c, char *out, size_t n);


/* ---- serve_conns.c: the listener and the connections per client ---- */
/* Listens on sa (IPv6 only for an IPv6 address but [::], which takes both) and starts the listener. */
int serve_conns_start(struct serve *s, const struct sockaddr *sa, socklen_t len, bl_err *err);
/* Stops listening and closes the waiting connections; serve_conns_free once libmicrohttpd has stopped. */
void serve_conns_stop(struct serve_conns *t);
void serve_conns_free(struct serve_conns *t);
/* libmicrohttpd's connection notices: a connection it took, one it closed. */
void serve_conn_notify(void *cls, struct MHD_Connection *mc, void **socket_context,
		       enum MHD_ConnectionNotificationCode code);
/* The client's address as text ("127.0.0.1", "::1"), an IPv4-mapped IPv6 address as IPv4. */
void serve_addr_text(const struct sockaddr *sa, char *out, size_t n, int *port);

/* ---- serve_auth.c: token, cookie, Origin, rates ---- */
int serve_token_new(char out[SERVE_TOKEN_HEX + 1], bl_err *err);
/*
 * Whether the request may go on: the token (cookie, ?token= or Authorization:
 * Bearer), the rate, and for a state-changing request the Origin and
 * read-only mode. Sends the refusal itself and returns nonzero when not.
 */
int serve_auth(struct serve *s, struct serve_req *c, int post);
int serve_bucket_take(struct serve *s, struct serve_bucket *b);

/* ---- serve_runs.c: the runs and what they say ---- */
/* Finds run name among those served; 0, or BL_EINVAL when there is none. */
int serve_run_find(struct serve *s, const char *name, struct serve_run *out, bl_err *err);
/* Every run served, as the runs page shows them. */
int serve_runs_json(struct serve *s, cJSON **out, bl_err *err);
/* One run, as its page shows it. */
int serve_run_json(struct serve *s, const struct serve_run *r, cJSON **out, bl_err *err);
/* The run's events: one "run" event now and one each time its files change, until the client or the server goes. */
int serve_run_events(struct serve *s, struct serve_req *c, const struct serve_run *r);
/* The CIEDE2000 map of the latest canvas against the target over the target's rectangle, as PNG bytes (malloc'd). */
int serve_run_errmap_png(const struct serve_run *r, unsigned char **png, size_t *n, bl_err *err);
/* The latest canvas over the same rectangle (the whole canvas before there is a plan), as PNG bytes. */
int serve_run_canvas_png(const struct serve_run *r, unsigned char **png, size_t *n, bl_err *err);

/* ---- serve_answer.c: the operator's answers ---- */
int serve_answer(struct serve *s, struct serve_req *c, const struct serve_run *r,
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

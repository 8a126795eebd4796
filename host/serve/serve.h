/* serve.h: the web console: an HTTP server (GNU libmicrohttpd) over run directories, answering through the same library as the command line. */
#ifndef BL_SERVE_SERVE_H
#define BL_SERVE_SERVE_H

#include <stddef.h>

#include "base/err.h"

#define SERVE_MAX_RUNS 256
#define SERVE_TOKEN_HEX 64 /* 32 random bytes */

struct serve_options {
	const char *runs_dir;                   /* --runs: every run directory directly under it, or NULL */
	const char *run_dirs[SERVE_MAX_RUNS];   /* run directories named one by one */
	int n_run_dirs;
	const char *listen;                     /* "HOST:PORT"; port 0 picks a free one */
	int read_only;                          /* no buttons, every POST refused */
	const char *token;                      /* tests and bench: this token; NULL: a random one */
	const char *self_exe;                   /* the brushloop binary `resume` runs (NULL: /proc/self/exe) */
	int allow_remote;                       /* listen on an address other than loopback (refused without it) */
};

struct serve;

/* Starts serving in threads of its own; the caller waits (a signal) and calls serve_stop. */
int serve_start(const struct serve_options *o, struct serve **out, bl_err *err);
/* The port it listens on, the access token and the URL that carries it. */
int serve_port(const struct serve *s);
/* Whether it listens on loopback only (127.0.0.0/8, localhost, [::1]). */
int serve_loopback(const struct serve *s);
const char *serve_token(const struct serve *s);
void serve_url(const struct serve *s, char *out, size_t n);
/* Stops accepting, ends the event streams, waits for the threads and any resume it started to be told. */
void serve_stop(struct serve *s);

/*
 * A path inside a run directory from a request (already percent-decoded):
 * segments of [A-Za-z0-9_-][A-Za-z0-9._-]*, no temporary file (".tmp."), at most
 * 4 deep. Returns 0, or BL_EINVAL naming what is wrong. Opening is
 * serve_open_in (no symlink anywhere below the run directory).
 */
int serve_path_ok(const char *rel, bl_err *err);
/* Opens rel below the directory fd dirfd without following a symlink: a regular file's fd, or -1 (errno). */
int serve_open_in(int dirfd, const char *rel);

/* Whether two tokens are equal, in time that does not depend on where they differ. */
int serve_token_equal(const char *a, const char *b);

#endif

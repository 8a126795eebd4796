/* sbx_int.h: the sandbox module's private state: the service thread, its event queue and the broker's connections. */
#ifndef BL_SANDBOX_SBX_INT_H
#define BL_SANDBOX_SBX_INT_H

#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sys/resource.h>

#include "sandbox/sbx.h"

/* The uid and gid a root host gives the sandbox (nobody): root's processes escape RLIMIT_NPROC. */
#define SBX_UID 65534
/* Where the broker's socket appears inside the sandbox (env BRUSHLOOP_EGRESS). */
#define SBX_EGRESS_PATH "/run/egress.sock"

#define EGRESS_MAX_CONNS 8      /* connections at once; more are refused */
#define EGRESS_MAX_GRANTS 16
#define EGRESS_REQ_MAX 4096     /* a CONNECT request with its headers */
#define EGRESS_BUF 16384        /* relay buffer per direction */
#define EGRESS_REQ_TIMEOUT_MS 10000
#define EGRESS_CONNECT_TIMEOUT_MS 5000

struct sbx_event {
	struct sbx_event *next;
	char name[32];
	cJSON *data;
};

enum egress_conn_state { EGRESS_FREE, EGRESS_REQUEST, EGRESS_RELAY };

struct egress_conn {
	enum egress_conn_state state;
	int in_fd;  /* the sandbox's end */
	int out_fd; /* the destination */
	double t_open_ms;
	char req[EGRESS_REQ_MAX + 1];
	size_t req_len;
	char up[EGRESS_BUF], down[EGRESS_BUF]; /* sandbox to destination, and back */
	size_t up_len, up_off, down_len, down_off;
	int up_eof, down_eof; /* the side that sends this direction has closed */
	unsigned long long up_total, down_total;
	char name[256];
	int port;
};

struct egress_grant {
	char dest[300];
	double until_ms; /* monotonic; 0: slot unused */
};

struct sbx_impl {
	sbx_log_fn log;
	void *log_ctx;
	double t_start_ms;
	pid_t pid;
	int reaped, status;
	struct rusage ru;  /* bwrap's and every process reaped below it, once reaped */
	int killed;        /* the host ended it (sbx_stop), not the planner */
	double cpu_s;      /* the CPU limit it ran under */

	pthread_mutex_t lock; /* the event queue, the stderr buffer and the grants */
	pthread_t thread;
	int thread_on;
	int wake[2]; /* written by sbx_stop: the thread ends */

	int err_fd; /* the planner's stderr */
	char *err_buf;
	size_t err_len, err_max;
	unsigned long long err_total;

	struct sbx_event *q_head, *q_tail;

	int has_egress;
	struct egress_policy egress;
	int listen_fd;
	char sock_dir[PATH_MAX];
	char sock_path[PATH_MAX + 16];
	struct egress_grant grants[EGRESS_MAX_GRANTS];
	double *q_times; /* the last rate_limit_per_minute query times, a ring */
	int q_count, q_next;
	struct egress_conn conns[EGRESS_MAX_CONNS];
};

/* Queues an event for the caller's thread (takes data; thread-safe). */
void sbx_queue(struct sbx_impl *s, const char *event, cJSON *data);

/* Monotonic milliseconds. */
double sbx_now_ms(void);

/* The service thread: drains stderr, runs the broker, until wake is written. */
void *sbx_service(void *arg);

/* A compiled seccomp filter (BPF) in a sealed memfd at offset 0, for bwrap --seccomp. */
int sbx_seccomp_fd(int *fd_out, bl_err *err);

/* The broker: its listening socket in a fresh 0700 directory (nobody's when to_nobody), and its part of the service loop. */
int egress_listen(struct sbx_impl *s, int to_nobody, bl_err *err);
void egress_close_all(struct sbx_impl *s);
/* Adds the broker's fds to pfd (at most EGRESS_MAX_CONNS * 2 + 1); returns how many. */
int egress_poll_fds(struct sbx_impl *s, struct pollfd *pfd);
/* Handles what poll saw on the fds egress_poll_fds gave, and expires stale requests. */
void egress_poll_done(struct sbx_impl *s, const struct pollfd *pfd, int n);

/* 1 when name:port is one of the policy's destinations. */
int egress_dest_listed(const struct egress_policy *pol, const char *name, int port);

#endif

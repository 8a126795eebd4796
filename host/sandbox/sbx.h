/* sbx.h: the external planner's sandbox (bubblewrap, seccomp, rlimits) and its only way out, the egress broker. */
#ifndef BL_SANDBOX_SBX_H
#define BL_SANDBOX_SBX_H

#include <stddef.h>
#include <sys/types.h>

#include <cJSON.h>

#include "base/err.h"

/*
 * What the planner may reach through the broker (docs/sandbox.md). Parsed
 * from a machine file's planner.egress; the default, no policy at all, is no
 * network: not even a resolver.
 */
#define EGRESS_MAX_DOMAINS 16
#define EGRESS_MAX_DEST 16
struct egress_policy {
	int n_domains;
	char domains[EGRESS_MAX_DOMAINS][256]; /* dns.allow_domains: "api.example.org" or "*.example.org" */
	int max_label_length;                  /* dns.max_label_length, default 40 */
	int rate_limit_per_minute;             /* dns.rate_limit_per_minute, default 30: names asked, allowed or not */
	int n_dest;
	char dest[EGRESS_MAX_DEST][300]; /* https.allow_destinations: "host:port" */
};

/*
 * Strict parse of {"default":"deny","dns":{...},"https":{...}}: an unknown
 * key, a wrong type or a default other than "deny" is BL_EINVAL naming the
 * key; where names the file and key path ("machine.json: planner.egress").
 */
int egress_policy_from_json(const cJSON *j, const char *where, struct egress_policy *out,
			    bl_err *err);

/*
 * The broker's check of a name: 0 when the policy allows it (exact or "*."
 * entry, every label within max_label_length), else BL_EDENIED and why.
 */
int egress_check_name(const struct egress_policy *pol, const char *name, char *why, size_t n);

/*
 * Receives the sandbox's events: egress_query, egress_connect, egress_close,
 * egress_grant, sandbox_start, sandbox_stop. Takes ownership of data. Called
 * only on the caller's thread, from sbx_start, sbx_pump and sbx_stop, never
 * from the broker's thread, so it may write the run's journal directly.
 */
typedef void (*sbx_log_fn)(void *ctx, const char *event, cJSON *data);

/* Everything 0 or NULL takes its default (in brackets). */
struct sbx_policy {
	const char *const *argv;     /* the planner; argv[0] found on PATH=/usr/bin:/bin inside the sandbox */
	const char *in_dir;          /* host directory bound read-only at /in, or NULL */
	const char *const *ro_paths; /* host paths bound read-only at the same path, NULL-terminated, or NULL */
	int tmpfs_mb;                /* size of /tmp, the only writable place [64] */
	double cpu_s;                /* RLIMIT_CPU per process: SIGXCPU, then SIGKILL a second later [60] */
	long as_mb;                  /* RLIMIT_AS [2048] */
	int nproc, nofile;           /* RLIMIT_NPROC [64], counted inside the sandbox's user namespace; RLIMIT_NOFILE [64] */
	size_t stderr_max;           /* bytes of the planner's stderr kept; the rest is read and dropped [64 KiB] */
	const struct egress_policy *egress; /* NULL: no network at all; else the broker at /run/egress.sock */
	sbx_log_fn log;              /* may be NULL */
	void *log_ctx;
};

struct sbx_impl;
struct sbx_proc {
	pid_t pid;             /* bwrap's pid: killing it takes the sandbox's whole pid namespace with it */
	int fd;                /* host end of a socketpair: the planner's stdin and stdout (JSON lines); write
				  with send(MSG_NOSIGNAL): a planner that died must not SIGPIPE the host */
	struct sbx_impl *impl; /* private: stderr, broker thread, timings */
};

/*
 * 0 when a sandbox can be made here: bwrap found, a trivial planner run in
 * the same sandbox sbx_start makes (namespaces, seccomp, rlimits). Else
 * BL_EINVAL with what is missing: the caller exits 2 and never runs the
 * planner unsandboxed.
 */
int sbx_probe(bl_err *err);

/*
 * Starts pol->argv in a fresh sandbox. A host running as root drops to uid
 * and gid 65534 (nobody) before bwrap, so the sandbox's processes are counted
 * for RLIMIT_NPROC (root's are not); in_dir and ro_paths are bound by open
 * descriptors, but their files must be readable by that uid. The thread that
 * calls sbx_start must outlive the sandbox (--die-with-parent follows it).
 * A sandbox that fails after bwrap started shows as EOF on fd and in
 * sandbox_stop's status and stderr.
 */
int sbx_start(const struct sbx_policy *pol, struct sbx_proc *out, bl_err *err);

/* Waits up to timeout_ms for the sandbox to end by itself: 1 ended (*wstatus as sbx_stop's), 0 still running, -1 none. */
int sbx_wait(struct sbx_proc *p, int timeout_ms, int *wstatus);

/* Delivers the events the broker queued to pol->log; returns how many. Call it when convenient (after each answer). */
int sbx_pump(struct sbx_proc *p);

/* Copies at most n - 1 bytes of the stderr kept so far into buf (NUL-terminated); returns the bytes copied. */
size_t sbx_stderr(struct sbx_proc *p, char *buf, size_t n);

/*
 * Kills the whole sandbox (SIGKILL to bwrap), reaps it, stops the broker,
 * closes fds, delivers the last events and sandbox_stop. *wstatus (may be
 * NULL) gets bwrap's wait status: the planner's exit code, or 128 + the
 * signal that ended it. Idempotent: a stopped or zeroed sbx_proc returns 0.
 */
int sbx_stop(struct sbx_proc *p, int *wstatus, bl_err *err);

/*
 * Allows one destination "host:port" (its name included) for minutes, in a
 * running sandbox with a broker; the grant expires by itself, and with the
 * sandbox at the latest. Journaled as egress_grant.
 */
int egress_grant(struct sbx_proc *p, const char *dest, double minutes, bl_err *err);

#endif

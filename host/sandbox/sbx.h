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

/*
 * A host file the sandbox holds: a regular file the host opened, copied
 * read-only into each sandbox at its own path (executable when the file has
 * an execute bit). Never a folder: a planner sees the files it names and
 * nothing beside them.
 */
#define SBX_FILE_MAX_BYTES (256ll << 20) /* each file: its copy lives in memory while a phase runs */
struct sbx_file {
	int fd;             /* O_RDONLY; rewound for each sandbox */
	char path[512];     /* absolute: where the host found it and the sandbox shows it */
	int exec;
	long long bytes;
};

/*
 * Opens path for sandboxes to hold: an absolute path to a regular file of at
 * most SBX_FILE_MAX_BYTES, outside what the sandbox makes itself (/proc,
 * /dev, /sys, /run, /in). A folder, a socket, a device or a missing file is
 * BL_EINVAL naming the path and what it is.
 */
int sbx_file_open(const char *path, struct sbx_file *out, bl_err *err);
void sbx_file_close(struct sbx_file *f);

/* Everything 0 or NULL takes its default (in brackets). */
struct sbx_policy {
	const char *const *argv;     /* the planner; argv[0] found on PATH=/usr/bin:/bin inside the sandbox */
	const char *in_dir;          /* host directory whose regular files are copied read-only to /in, or NULL */
	const struct sbx_file *files; /* n_files host files copied read-only at their own paths */
	int n_files;
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
 * for RLIMIT_NPROC (root's are not); in_dir's files and files are copied
 * from descriptors the host opened, so they need not be readable by it. The thread that
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
 * Kills the whole sandbox (SIGKILL to its pid 1, whose namespace's processes
 * die with it; to bwrap too if it does not then end), reaps it, stops the
 * broker, closes fds, delivers the last events and sandbox_stop with what
 * the sandbox's processes used (CPU, largest resident size, blocks: every
 * process reaped inside counts). *wstatus (may be NULL) gets bwrap's wait
 * status: the planner's exit code, or 128 + the signal that ended it.
 * Idempotent: a stopped or zeroed sbx_proc returns 0.
 */
int sbx_stop(struct sbx_proc *p, int *wstatus, bl_err *err);

/*
 * Allows one destination "host:port" (its name included) for minutes, in a
 * running sandbox with a broker; the grant expires by itself, and with the
 * sandbox at the latest. Journaled as egress_grant.
 */
int egress_grant(struct sbx_proc *p, const char *dest, double minutes, bl_err *err);

#endif

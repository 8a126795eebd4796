/* planner_ext.h: a planner in another process, sandboxed fresh for every phase, behind the planner interface. */
#ifndef BL_PLANNER_PLANNER_EXT_H
#define BL_PLANNER_PLANNER_EXT_H

#include "planner/planner.h"
#include "sandbox/sbx.h"

#define PLANNER_EXT_MAX_ARGS 32
#define PLANNER_EXT_MAX_FILES 48 /* the command's absolute words and planner.files */

struct planner_ext_config {
	const char *command;          /* "COMMAND ARGS...": words split at spaces, no shell */
	int answer_deadline_ms;       /* from sending the request to the answer's newline */
	size_t max_answer_bytes;      /* one answer line */
	double cpu_s;                 /* the sandbox's limits (0: sbx's defaults) */
	long as_mb;
	int tmpfs_mb;
	const struct egress_policy *egress; /* NULL: no network at all */
	sbx_log_fn log;               /* the sandbox's and broker's events (the run's journal) */
	void *log_ctx;
	const char *record_dir;       /* where request.json and answer.json of a phase are kept (may be NULL) */
	double max_grant_s;           /* the machine's safety.max_grant_s: a longer egress grant opens nothing */
	const char *grants_dir;       /* the run directory whose grants.json's egress grants each phase's broker opens (may be NULL) */
	const char *const *files;     /* planner.files, NULL-terminated (may be NULL); read by planner_external only */
};

/*
 * An external planner: each propose starts cfg->command in a fresh sandbox
 * (sbx_start, in_dir from the request's world at /in), sends the request
 * line, reads one answer line within the deadline and the size limit and
 * parses it strictly (planner_answer_parse); told sends the verdict and ends
 * the sandbox. Nothing of one phase's process survives into the next.
 * The sandbox holds the files the planner names, copied one by one: the
 * absolute paths among the command's words (outside /usr) and cfg->files,
 * opened here; one that is a folder, a socket or missing is BL_EINVAL now,
 * before any phase.
 * The egress grants in force in cfg->grants_dir's grants.json when a phase
 * starts are opened for that phase, for what is left of each.
 */
int planner_external(const struct planner_ext_config *cfg, struct planner *out, bl_err *err);

/* Where the phase about to be asked keeps its request and answer (dir must outlive the phase). */
void planner_ext_record_dir(struct planner *p, const char *dir);

/* Splits cmd into at most max words (argv NULL-terminated, pointing into store of n bytes). */
int planner_ext_split(const char *cmd, char *store, size_t n, const char **argv, int max, bl_err *err);

/*
 * A command as the sandbox runs it (an external planner's, an external
 * reviewer's): its words split at spaces, no shell, and the files it is
 * given, opened once: the absolute paths among its words (but /usr and
 * /bin) and files (NULL-terminated, may be NULL). Each is copied into the
 * sandbox at its own path, never its folder; a folder, a socket or a
 * missing file is BL_EINVAL here.
 */
struct planner_ext_cmd {
	char *store;                                   /* the strings argv points into */
	const char *argv[PLANNER_EXT_MAX_ARGS + 1];
	struct sbx_file files[PLANNER_EXT_MAX_FILES];
	int n_files;
};
int planner_ext_cmd_init(struct planner_ext_cmd *c, const char *command, const char *const *files,
			 bl_err *err);
void planner_ext_cmd_free(struct planner_ext_cmd *c);

#endif

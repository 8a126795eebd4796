/* regress.h: simulator regression suites: a suite file's cases run as ordinary runs, judged against thresholds and a baseline, reported as a table, JSON and JUnit. */
#ifndef BL_REGRESS_REGRESS_H
#define BL_REGRESS_REGRESS_H

#include <stdio.h>

#include <cJSON.h>

#include "base/err.h"

#define REGRESS_PATH_MAX 4096
#define REGRESS_ID_MAX 192
#define REGRESS_MAX_CASES 4096
#define REGRESS_MAX_LIST 64 /* seeds, strokes, targets per entry */

/* The figures a case is judged on; every one is "lower is better". */
enum regress_fig {
	RF_MEAN_DE00,
	RF_P95_DE00,
	RF_SCIELAB_1M,
	RF_PIXEL_DE00,
	RF_ARM_S,
	RF_PAINT_ML,
	RF_MIXES_PER_COLOUR,
	RF_N,
};

struct regress_fig_info {
	const char *key;  /* in the suite's thresholds, the JSON and the baseline */
	const char *what; /* for a person, in messages */
	const char *unit; /* "" when none */
};

extern const struct regress_fig_info regress_figs[RF_N];

/* What a case must meet: a maximum per figure, finishing, and how much worse than the baseline. */
struct regress_limits {
	int has_max[RF_N];
	double max[RF_N];
	int finished; /* 1: the run must finish unattended (state finished, exit 0) */
	int has_tol[RF_N];
	double tol[RF_N]; /* tolerated increase over the baseline, in the figure's unit */
};

enum regress_loop { RL_CLOSED, RL_OPEN, RL_N };

extern const char *const regress_loop_names[RL_N + 1];

/* One expanded case: one target, seed, stroke budget and loop. */
struct regress_case {
	char id[REGRESS_ID_MAX];    /* unique in the suite; the run directory's name */
	char group[64];             /* the entry's "name" ("" when none) */
	char target[REGRESS_PATH_MAX];
	char machine[REGRESS_PATH_MAX]; /* "" : brushloop run's default */
	char palette[REGRESS_PATH_MAX];
	long seed;
	int strokes;
	int colours; /* 0: as many as the target needs */
	enum regress_loop loop;
	int accept_nearest; /* closed loop: take the nearest mix, as an operator would */
	int refill;         /* a run paused for a refill is resumed with --refilled all */
	struct regress_limits lim;
};

struct regress_suite {
	char name[64];
	char path[REGRESS_PATH_MAX];
	char base_dir[REGRESS_PATH_MAX]; /* relative paths are taken from here */
	cJSON *root;                     /* the file as read (copied into the output directory) */
	int n;
	struct regress_case *cases;
};

/* Reads and strictly validates a suite file and expands its cases; BL_EINVAL names file and key. */
int regress_suite_load(const char *path, struct regress_suite *s, bl_err *err);
void regress_suite_free(struct regress_suite *s);

/* Writes the suite into dir/suite.json with its base_dir made absolute, so --collect reads it there. */
int regress_suite_save(const struct regress_suite *s, const char *dir, bl_err *err);

/*
 * The `brushloop run` argument list of a case (argv[0] is bin), NULL-ended,
 * into argv (at least REGRESS_ARGV_MAX entries); strings point into c and out.
 */
#define REGRESS_ARGV_MAX 24
void regress_case_argv(const struct regress_case *c, const char *bin, const char *run_dir,
		       char seed_buf[24], char strokes_buf[24], char colours_buf[24],
		       const char **argv);

/* Runs every case not already done into out_dir, jobs at once, with progress on stderr. */
struct regress_run_options {
	const char *bin; /* the brushloop binary */
	const char *out_dir;
	int jobs;
	int quiet; /* no progress lines */
};
int regress_run(const struct regress_suite *s, const struct regress_run_options *o, bl_err *err);

/*
 * Judges every case from its run directory under dir (and against the
 * baseline result, may be NULL, read from baseline_file, whose path and
 * SHA-256 the result names): {"kind": "regress-result", "suite", "cases":
 * [{"id", "verdict": "pass"|"fail"|"error", "figures", "failures",
 * "attachments", ...}], ...}. Each case's canvas, error map and report are
 * copied into dir/attachments/ for a CI to show.
 */
int regress_collect(const struct regress_suite *s, const char *dir, const cJSON *baseline,
		    const char *baseline_file, cJSON **result, bl_err *err);

/* Reads an earlier result (regress --json, or DIR/result.json) as a baseline. */
int regress_baseline_load(const char *path, cJSON **out, bl_err *err);

/* The summary table for a person. */
void regress_print_table(const cJSON *result, FILE *f);

/*
 * Writes the result as JUnit XML (a case a testcase with its properties; a
 * missed threshold a failure; its attachments in system-out as Jenkins'
 * junit-attachments plugin and GitLab read them), paths relative to the
 * current folder.
 */
int regress_junit_write(const cJSON *result, const char *path, bl_err *err);

/* Writes the result as Markdown for a pull-request comment: the totals, the cases that failed first, the rest folded. */
int regress_markdown_write(const cJSON *result, const char *path, bl_err *err);

/* Writes dir/regress.sbatch: a Slurm array job, one task per case, at most cap at once (0: no cap). */
int regress_slurm_write(const struct regress_suite *s, const char *bin, const char *dir, int cap,
			bl_err *err);

/* 0 when every case passed, 1 otherwise. */
int regress_exit_status(const cJSON *result);

#endif

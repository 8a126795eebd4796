/* cli.h: the brushloop command table and the helpers every subcommand shares. */
#ifndef BL_CLI_CLI_H
#define BL_CLI_CLI_H

#include <cJSON.h>

#include "base/err.h"

struct cli_command {
	const char *name;
	const char *summary; /* one line for `brushloop help` */
	const char *usage;   /* the full text for `brushloop COMMAND --help` */
	int (*run)(int argc, char **argv);
	const struct cli_optset *const *optsets; /* its verbs' option tables (cli_opt.h), NULL-terminated */
};

/* All subcommands, ending with a zeroed entry. */
extern const struct cli_command cli_commands[];

/* Prints "brushloop: error: MESSAGE" and returns the exit status for err->code. */
int cli_fail(const bl_err *err);

/* Prints a usage error for cmd with a hint to --help; returns 2. */
int cli_usage(const struct cli_command *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Finds a command by name (NULL when unknown). */
const struct cli_command *cli_find(const char *name);

/* Prints obj as one JSON document on stdout and frees it; returns 0 or exit status 1. */
int cli_print_json(cJSON *obj);

/* Parses a finite double from an option value; 0 or a usage error message in err. */
int cli_parse_double(const char *opt, const char *text, double *out, bl_err *err);

/* Parses an integer in [lo, hi] from an option value. */
int cli_parse_long(const char *opt, const char *text, long lo, long hi, long *out, bl_err *err);

/* The subcommands, each in its own file. */
int cli_help_main(int argc, char **argv);
int cli_color_main(int argc, char **argv);
int cli_config_main(int argc, char **argv);
int cli_bench_main(int argc, char **argv);
int cli_gate_main(int argc, char **argv);
int cli_pending_main(int argc, char **argv);
int cli_approve_main(int argc, char **argv);
int cli_grant_main(int argc, char **argv);

/* The machine file a command uses: given, else $BRUSHLOOP_MACHINE, else the example simulator machine. */
int cli_machine_path(const char *given, char *out, size_t n);
/* 0 when dir is an existing directory, else a message naming it. */
int cli_run_dir_ok(const char *dir, bl_err *err);
/* Who answers or grants, for the record: "$USER (pid N)". */
void cli_operator_name(char *out, size_t n);
int cli_palette_main(int argc, char **argv);
int cli_mix_main(int argc, char **argv);
int cli_camera_main(int argc, char **argv);
int cli_measure_main(int argc, char **argv);
int cli_sim_main(int argc, char **argv);
int cli_plan_main(int argc, char **argv);
int cli_run_main(int argc, char **argv);
int cli_resume_main(int argc, char **argv);
int cli_serve_main(int argc, char **argv);
int cli_planner_main(int argc, char **argv);
int cli_status_main(int argc, char **argv);
int cli_estimate_main(int argc, char **argv);
int cli_regress_main(int argc, char **argv);
int cli_report_main(int argc, char **argv);

/*
 * The run commands' shared options (cli_run.c), parsed against set (one of
 * cli_run_set, cli_resume_set, cli_estimate_set): 0 or a usage exit status;
 * *ind is the first operand.
 */
struct run_options;
struct cli_optset;
struct cli_run_paths {
	char machine[4096], palette[4096];
};
int cli_run_parse(const struct cli_command *cmd, const struct cli_optset *set, int argc, char **argv,
		  int need_target, struct run_options *o, struct cli_run_paths *paths, int *json, int *ind);
extern const struct cli_optset cli_run_set, cli_resume_set, cli_estimate_set;
/* Says where a run directory and its STATUS.md and canvas are; the exit status for rc. */
int cli_run_report(const char *dir, int rc, const bl_err *err, int quiet);

int cli_calib_main(int argc, char **argv);

/* Each command's option tables (cli_opt.h), NULL-terminated, in the file of its command. */
struct cli_optset;
extern const struct cli_optset *const cli_color_sets[];
extern const struct cli_optset *const cli_config_sets[];
extern const struct cli_optset *const cli_bench_sets[];
extern const struct cli_optset *const cli_mix_sets[];
extern const struct cli_optset *const cli_palette_sets[];
extern const struct cli_optset *const cli_gate_sets[];
extern const struct cli_optset *const cli_pending_sets[];
extern const struct cli_optset *const cli_approve_sets[];
extern const struct cli_optset *const cli_grant_sets[];
extern const struct cli_optset *const cli_camera_sets[];
extern const struct cli_optset *const cli_measure_sets[];
extern const struct cli_optset *const cli_calib_sets[];
extern const struct cli_optset *const cli_sim_sets[];
extern const struct cli_optset *const cli_plan_sets[];
extern const struct cli_optset *const cli_run_sets[];
extern const struct cli_optset *const cli_resume_sets[];
extern const struct cli_optset *const cli_serve_sets[];
extern const struct cli_optset *const cli_status_sets[];
extern const struct cli_optset *const cli_estimate_sets[];
extern const struct cli_optset *const cli_regress_sets[];
extern const struct cli_optset *const cli_report_sets[];

#endif

/* cli_opt.h: option tables: each command's options described once, a row each, driving its parsing, its --help option lines and the docs check. */
#ifndef BL_CLI_CLI_OPT_H
#define BL_CLI_CLI_OPT_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

struct cli_command;

/* One option. A table is an array of these indexed by the command's own enum (designated initialisers). */
struct cli_opt {
	const char *name;   /* the long name, without "--" */
	char letter;        /* the short form, 0 for none */
	const char *value;  /* the value's name in help ("M", "N"); NULL for a flag */
	const char *help;   /* one line for --help */
	int alias;          /* another spelling of an option listed beside it: parsed, not required in usage or docs */
};

#define CLI_OPT_MAX 40

/*
 * The options one verb takes: a table, and which of its rows this verb takes
 * (bit i for row i; 0 takes every row). Verbs that share a table (run,
 * resume, estimate) name each other in family, so that an option of a
 * sibling is refused naming the verbs it belongs to.
 */
struct cli_optset {
	const char *verb;                      /* "run", "calib camera" */
	const struct cli_opt *opts;
	int n;
	uint64_t takes;
	const struct cli_optset *const *family; /* NULL-terminated, or NULL */
};

#define CLI_OPT_N(table) ((int)(sizeof(table) / sizeof((table)[0])))
#define CLI_BIT(i) ((uint64_t)1 << (i))

/* The rows several commands share, with one meaning everywhere. */
#define CLI_OPT_MACHINE { "machine", 0, "M", "machine file (default $BRUSHLOOP_MACHINE, else the example simulator machine)", 0 }
#define CLI_OPT_PALETTE { "palette", 0, "P", "palette file (default palettes/kimera-13.json)", 0 }
#define CLI_OPT_JSON { "json", 0, NULL, "print one JSON document instead of text", 0 }
#define CLI_OPT_SEED { "seed", 0, "S", "seed of the simulator (default 1)", 0 }

/* Where a parse stands: getopt_long underneath, with the table's rows as its options. */
struct cli_optparse {
	const struct cli_command *cmd;
	const struct cli_optset *set;
	int argc;
	char **argv;
	struct option longs[CLI_OPT_MAX + 1];
	char shorts[2 + 2 * CLI_OPT_MAX + 1];
	const char *arg;  /* the value of the option cli_opt_next returned */
	const char *name; /* "--NAME" of that option, for messages */
	int ind;          /* after CLI_OPT_END: the first operand (the operands are argv[ind..argc)) */
};

enum {
	CLI_OPT_END = -1, /* no option left */
	CLI_OPT_BAD = -2, /* a usage error, already printed: exit 2 */
};

/* Starts a parse of argv[1..argc) against set, for cmd's messages. */
void cli_opt_start(struct cli_optparse *p, const struct cli_command *cmd, const struct cli_optset *set,
		   int argc, char **argv);

/*
 * The row index of the next option (its value in p->arg), CLI_OPT_END, or
 * CLI_OPT_BAD after printing a usage error that names the option: unknown,
 * missing its value, given a value it does not take, or a sibling verb's.
 * Operands may stand between options; at the end they are argv[p->ind..argc).
 */
int cli_opt_next(struct cli_optparse *p);

/* Parses the value of the option just returned as an integer in [lo, hi] or a finite double; a usage error (exit 2) otherwise. */
int cli_opt_long(const struct cli_optparse *p, long lo, long hi, long *out);
int cli_opt_double(const struct cli_optparse *p, double *out);

/* Whether set takes row i. */
int cli_opt_takes(const struct cli_optset *set, int i);

/* Prints set's option lines, one an option: "  -o, --output FILE  help". */
void cli_opt_help(FILE *f, const struct cli_optset *set);

/* Prints cmd's usage text followed by the option lines of each of its verbs. */
void cli_print_usage(FILE *f, const struct cli_command *cmd);

/* The verb of cmd named "NAME WORD" ("calib camera"), or NULL. */
const struct cli_optset *cli_verb_set(const struct cli_command *cmd, const char *word);

/*
 * Prints one verb's usage: its lines of cmd's synopsis, the text but the
 * paragraphs of its sibling verbs (those opening "WORD: "), its option lines.
 */
void cli_print_verb_usage(FILE *f, const struct cli_command *cmd, const struct cli_optset *set);

/*
 * For a command that takes one run directory and flags of set (status,
 * report): the directory, and in *given a bit for each flag given. 0, or a
 * usage error's exit status.
 */
int cli_one_dir(const struct cli_command *cmd, const struct cli_optset *set, int argc, char **argv,
		uint64_t *given, const char **dir);

#endif

/* cli_bench.c: `brushloop bench`: runs the built-in benchmarks and prints the median of each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"

/* A name selects a benchmark exactly, or every benchmark of a part ("sim" selects "sim.*"). */
static int selected(const char *name, int argc, char **argv, int first)
{
	size_t n;

	if (first >= argc)
		return 1;
	for (int i = first; i < argc; i++) {
		n = strlen(argv[i]);
		if (strcmp(name, argv[i]) == 0 || (strncmp(name, argv[i], n) == 0 && name[n] == '.'))
			return 1;
	}
	return 0;
}

enum bench_opt {
	BENCH_JSON, BENCH_RUNS, BENCH_QUICK,
	BENCH_OPT_COUNT
};

static const struct cli_opt bench_opts[BENCH_OPT_COUNT] = {
	[BENCH_JSON] = CLI_OPT_JSON,
	[BENCH_RUNS] = { "runs", 0, "N", "runs of each benchmark (its own default otherwise)", 0 },
	[BENCH_QUICK] = { "quick", 0, NULL, "one run each on its smallest inputs: shows every benchmark "
			  "runs, measures nothing", 0 },
};
static const struct cli_optset bench_set = { "bench", bench_opts, BENCH_OPT_COUNT, 0, NULL };

int cli_bench_main(int argc, char **argv)
{
	struct cli_optparse p;
	const struct cli_command *cmd = cli_find("bench");
	cJSON *list = NULL;
	bl_err err = { 0 };
	long runs = 0;
	int json = 0, quick = 0, opt, any = 0;

	cli_opt_start(&p, cmd, &bench_set, argc, argv);
	while ((opt = cli_opt_next(&p)) != CLI_OPT_END) {
		if (opt == CLI_OPT_BAD)
			return BL_EXIT_USAGE;
		switch ((enum bench_opt)opt) {
		case BENCH_JSON:
			json = 1;
			break;
		case BENCH_RUNS:
			if (cli_parse_long("--runs", p.arg, 1, 1000, &runs, &err))
				return cli_usage(cmd, "%s", err.msg);
			break;
		case BENCH_QUICK:
			quick = 1;
			break;
		case BENCH_OPT_COUNT:
			break;
		}
	}
	for (int i = p.ind; i < argc; i++) {
		int known = 0;

		for (const struct bench_case *b = bench_cases; b->name; b++)
			known |= selected(b->name, 2, (char *[]){ NULL, argv[i] }, 1);
		if (!known)
			return cli_usage(cmd, "no benchmark named '%s'", argv[i]);
	}
	if (quick && runs > 1)
		return cli_usage(cmd, "--quick runs each benchmark once: it takes no --runs %ld", runs);
	if (quick)
		runs = 1;
	if (json)
		list = cJSON_CreateArray();
	for (const struct bench_case *b = bench_cases; b->name; b++) {
		int n = runs ? (int)runs : b->runs;
		double *v;

		if (!selected(b->name, argc, argv, p.ind))
			continue;
		v = calloc((size_t)n, sizeof(*v));
		if (!v)
			return 1;
		for (int r = 0; r < n; r++) {
			if (b->run(&v[r], quick, &err)) {
				free(v);
				cJSON_Delete(list);
				bl_err_prefix(&err, "benchmark %s", b->name);
				return cli_fail(&err);
			}
		}
		any = 1;
		if (json) {
			cJSON *o = cJSON_CreateObject();

			cJSON_AddStringToObject(o, "name", b->name);
			cJSON_AddNumberToObject(o, "value", bench_median(v, n));
			cJSON_AddStringToObject(o, "unit", b->unit);
			cJSON_AddNumberToObject(o, "runs", n);
			cJSON_AddBoolToObject(o, "quick", quick);
			cJSON_AddItemToArray(list, o);
		} else {
			printf("%s: %.3f %s%s\n", b->name, bench_median(v, n), b->unit,
			       quick ? " (quick: no figure)" : "");
			fflush(stdout);
		}
		free(v);
	}
	if (!any)
		return cli_usage(cmd, "no benchmark selected");
	return json ? cli_print_json(list) : 0;
}

const struct cli_optset *const cli_bench_sets[] = { &bench_set, NULL };

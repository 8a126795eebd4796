/* cli_bench.c: `brushloop bench`: runs the built-in benchmarks and prints the median of each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"

/*
 * The mean of each phase over the runs of the benchmark just run (bench
 * --phases), printed or added to o; the sums are cleared for the next.
 */
static void phases_out(cJSON *o)
{
	double wall = 0.0, cpu = 0.0;
	cJSON *ph = o ? cJSON_AddObjectToObject(o, "phases") : NULL;

	if (!bench_phase_runs)
		return;
	for (int i = 0; i < PROF_COUNT; i++) {
		wall += bench_phase_sum.wall_s[i] / bench_phase_runs;
		cpu += bench_phase_sum.cpu_s[i] / bench_phase_runs;
	}
	if (!o)
		printf("  %-8s %9s %9s %6s\n", "phase", "wall s", "cpu s", "wall%");
	for (int i = 0; i < PROF_COUNT; i++) {
		double w = bench_phase_sum.wall_s[i] / bench_phase_runs;
		double c = bench_phase_sum.cpu_s[i] / bench_phase_runs;

		if (ph) {
			cJSON *x = cJSON_AddObjectToObject(ph, prof_phase_names[i]);

			cJSON_AddNumberToObject(x, "wall_s", w);
			cJSON_AddNumberToObject(x, "cpu_s", c);
		} else {
			printf("  %-8s %9.3f %9.3f %5.1f%%\n", prof_phase_names[i], w, c,
			       wall > 0.0 ? 100.0 * w / wall : 0.0);
		}
	}
	if (!o)
		printf("  %-8s %9.3f %9.3f\n", "total", wall, cpu);
	memset(&bench_phase_sum, 0, sizeof(bench_phase_sum));
	bench_phase_runs = 0;
}

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
	BENCH_JSON, BENCH_RUNS, BENCH_QUICK, BENCH_PHASES,
	BENCH_OPT_COUNT
};

static const struct cli_opt bench_opts[BENCH_OPT_COUNT] = {
	[BENCH_JSON] = CLI_OPT_JSON,
	[BENCH_RUNS] = { "runs", 0, "N", "runs of each benchmark (its own default otherwise)", 0 },
	[BENCH_QUICK] = { "quick", 0, NULL, "one run each on its smallest inputs: shows every benchmark "
			  "runs, measures nothing", 0 },
	[BENCH_PHASES] = { "phases", 0, NULL, "after each night benchmark, where its time went: wall and "
			   "CPU seconds per phase, scaled as its figure is", 0 },
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
		case BENCH_PHASES:
			bench_phases = 1;
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
			phases_out(o);
			cJSON_AddItemToArray(list, o);
		} else {
			printf("%s: %.3f %s%s\n", b->name, bench_median(v, n), b->unit,
			       quick ? " (quick: no figure)" : "");
			phases_out(NULL);
			fflush(stdout);
		}
		free(v);
	}
	if (!any)
		return cli_usage(cmd, "no benchmark selected");
	return json ? cli_print_json(list) : 0;
}

const struct cli_optset *const cli_bench_sets[] = { &bench_set, NULL };

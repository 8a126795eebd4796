/* cli_bench.c: `brushloop bench`: runs the built-in benchmarks and prints the median of each. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "cli/cli.h"

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

int cli_bench_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "runs", required_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 },
	};
	const struct cli_command *cmd = cli_find("bench");
	cJSON *list = NULL;
	bl_err err = { 0 };
	long runs = 0;
	int json = 0, opt, any = 0;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'j':
			json = 1;
			break;
		case 'r':
			if (cli_parse_long("--runs", optarg, 1, 1000, &runs, &err))
				return cli_usage(cmd, "%s", err.msg);
			break;
		default:
			return cli_usage(cmd, "bad option");
		}
	}
	for (int i = optind; i < argc; i++) {
		int known = 0;

		for (const struct bench_case *b = bench_cases; b->name; b++)
			known |= selected(b->name, 2, (char *[]){ NULL, argv[i] }, 1);
		if (!known)
			return cli_usage(cmd, "no benchmark named '%s'", argv[i]);
	}
	if (json)
		list = cJSON_CreateArray();
	for (const struct bench_case *b = bench_cases; b->name; b++) {
		int n = runs ? (int)runs : b->runs;
		double *v;

		if (!selected(b->name, argc, argv, optind))
			continue;
		v = calloc((size_t)n, sizeof(*v));
		if (!v)
			return 1;
		for (int r = 0; r < n; r++) {
			if (b->run(&v[r], &err)) {
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
			cJSON_AddItemToArray(list, o);
		} else {
			printf("%s: %.3f %s\n", b->name, bench_median(v, n), b->unit);
			fflush(stdout);
		}
		free(v);
	}
	if (!any)
		return cli_usage(cmd, "no benchmark selected");
	return json ? cli_print_json(list) : 0;
}

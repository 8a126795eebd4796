/* cli_regress.c: `brushloop regress`: parses, runs or emits or collects a suite, prints its table, JSON and JUnit. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/json.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "regress/regress.h"

struct regress_args {
	const char *suite, *out, *baseline, *junit, *markdown, *slurm, *collect;
	int jobs, jobs_given, json, quiet;
};

enum regress_opt {
	REGRESS_JOBS, REGRESS_BASELINE, REGRESS_JUNIT, REGRESS_MARKDOWN, REGRESS_JSON, REGRESS_OUT, REGRESS_EMIT_SLURM, REGRESS_COLLECT, REGRESS_QUIET,
	REGRESS_OPT_COUNT
};

static const struct cli_opt regress_opts[REGRESS_OPT_COUNT] = {
	[REGRESS_JOBS] = { "jobs", 'j', "N", "cases at once (default 1)", 0 },
	[REGRESS_BASELINE] = { "baseline", 0, "FILE", "an earlier result to compare with", 0 },
	[REGRESS_JUNIT] = { "junit", 0, "OUT.xml", "write JUnit XML to FILE", 0 },
	[REGRESS_MARKDOWN] = { "markdown", 0, "OUT.md", "write a Markdown summary (a pull-request comment) to FILE", 0 },
	[REGRESS_JSON] = { "json", 0, NULL, "print every figure as one JSON document", 0 },
	[REGRESS_OUT] = { "out", 'o', "DIR", "the suite's directory", 0 },
	[REGRESS_EMIT_SLURM] = { "emit-slurm", 0, "DIR", "write a Slurm array job into DIR, run nothing", 0 },
	[REGRESS_COLLECT] = { "collect", 0, "DIR", "judge the run directories in DIR", 0 },
	[REGRESS_QUIET] = { "quiet", 'q', NULL, "no progress line", 0 },
};
static const struct cli_optset regress_set = { "regress", regress_opts, REGRESS_OPT_COUNT, 0, NULL };

static int parse(const struct cli_command *cmd, int argc, char **argv, struct regress_args *a)
{
	struct cli_optparse p;
	bl_err err = { 0 };
	long v;
	int opt;

	memset(a, 0, sizeof(*a));
	a->jobs = 1;
	cli_opt_start(&p, cmd, &regress_set, argc, argv);
	while ((opt = cli_opt_next(&p)) != CLI_OPT_END) {
		if (opt == CLI_OPT_BAD)
			return BL_EXIT_USAGE;
		switch ((enum regress_opt)opt) {
		case REGRESS_JOBS:
			if (cli_parse_long("--jobs", p.arg, 1, 256, &v, &err))
				return cli_usage(cmd, "%s", err.msg);
			a->jobs = (int)v;
			a->jobs_given = 1;
			break;
		case REGRESS_BASELINE:
			a->baseline = p.arg;
			break;
		case REGRESS_JUNIT:
			a->junit = p.arg;
			break;
		case REGRESS_MARKDOWN:
			a->markdown = p.arg;
			break;
		case REGRESS_JSON:
			a->json = 1;
			break;
		case REGRESS_OUT:
			a->out = p.arg;
			break;
		case REGRESS_EMIT_SLURM:
			a->slurm = p.arg;
			break;
		case REGRESS_COLLECT:
			a->collect = p.arg;
			break;
		case REGRESS_QUIET:
			a->quiet = 1;
			break;
		case REGRESS_OPT_COUNT:
			break;
		}
	}
	if (a->collect) {
		if (p.ind != argc)
			return cli_usage(cmd, "--collect DIR reads the suite from DIR/suite.json: no SUITE");
		if (a->slurm || a->out || a->jobs_given)
			return cli_usage(cmd, "--collect takes only --baseline, --junit, --markdown and --json");
		return 0;
	}
	if (p.ind != argc - 1)
		return cli_usage(cmd, "%s", p.ind >= argc ? "a SUITE file is needed" : "only one SUITE");
	a->suite = argv[p.ind];
	if (a->slurm && (a->out || a->baseline || a->junit || a->markdown || a->json))
		return cli_usage(cmd, "--emit-slurm DIR writes a job and runs nothing: --out, "
				      "--baseline, --junit, --markdown and --json belong to the run or --collect");
	return 0;
}

/* dir made (if needed) and absolute: the run directories and the job script name it. */
static int abs_dir(const char *dir, char *out, bl_err *err)
{
	BL_TRY(fs_mkdirs(dir, err));
	if (!realpath(dir, out))
		return bl_fail(err, BL_EIO, "%s: cannot resolve the folder", dir);
	return 0;
}

/*
 * Where a suite's runs go without --out: the user's cache
 * ($XDG_CACHE_HOME, else ~/.cache)/brushloop/regress/NAME, never the folder
 * regress was started in (a source tree), and the same each time, so a suite
 * started again goes on where it stopped.
 */
static void default_out(const char *name, char *out, size_t n)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");

	if (xdg && xdg[0] == '/')
		snprintf(out, n, "%s/brushloop/regress/%s", xdg, name);
	else if (home && home[0] == '/')
		snprintf(out, n, "%s/.cache/brushloop/regress/%s", home, name);
	else
		snprintf(out, n, "/tmp/brushloop-regress-%s", name);
}

static int self_path(char *out, size_t n, bl_err *err)
{
	ssize_t len = readlink("/proc/self/exe", out, n - 1);

	if (len <= 0)
		return bl_fail(err, BL_EIO, "cannot find the brushloop binary (/proc/self/exe)");
	out[len] = '\0';
	return 0;
}

/* Judges the cases in dir, writes dir/result.json and the JUnit file, prints the table or JSON. */
static int report(const struct regress_suite *s, const char *dir, const struct regress_args *a,
		  const cJSON *baseline, bl_err *err)
{
	char p[REGRESS_PATH_MAX + 32];
	cJSON *result = NULL;
	int rc;

	if ((rc = regress_collect(s, dir, baseline, a->baseline, &result, err)))
		return rc;
	snprintf(p, sizeof(p), "%s/result.json", dir);
	if ((rc = json_write_file(p, result, err)))
		goto free_result;
	if (a->junit && (rc = regress_junit_write(result, a->junit, err)))
		goto free_result;
	if (a->markdown && (rc = regress_markdown_write(result, a->markdown, err)))
		goto free_result;
	if (a->json) {
		rc = regress_exit_status(result);
		return cli_print_json(result) ? BL_EXIT_FAIL : rc;
	}
	regress_print_table(result, stdout);
	rc = regress_exit_status(result);
free_result:
	cJSON_Delete(result);
	return rc;
}

int cli_regress_main(int argc, char **argv)
{
	const struct cli_command *cmd = cli_find("regress");
	char dir[PATH_MAX], bin[PATH_MAX], p[PATH_MAX + 16];
	struct regress_suite s;
	struct regress_args a;
	cJSON *baseline = NULL;
	bl_err err = { 0 };
	int rc = parse(cmd, argc, argv, &a);

	if (rc)
		return rc;
	/* A bad baseline is said before anything runs. */
	if (a.baseline && regress_baseline_load(a.baseline, &baseline, &err))
		return cli_fail(&err);
	if (a.collect) {
		snprintf(p, sizeof(p), "%s/suite.json", a.collect);
		if (!realpath(a.collect, dir)) {
			cJSON_Delete(baseline);
			return cli_usage(cmd, "%s: no such folder", a.collect);
		}
		if ((rc = regress_suite_load(p, &s, &err)))
			goto free_baseline;
		rc = report(&s, dir, &a, baseline, &err);
		goto free_suite;
	}
	if ((rc = regress_suite_load(a.suite, &s, &err)))
		goto free_baseline;
	if ((rc = self_path(bin, sizeof(bin), &err)))
		goto free_suite;
	if (a.slurm) {
		if ((rc = abs_dir(a.slurm, dir, &err)) || (rc = regress_suite_save(&s, dir, &err)) ||
		    (rc = regress_slurm_write(&s, bin, dir, a.jobs_given ? a.jobs : 0, &err)))
			goto free_suite;
		printf("%d cases: sbatch %s/regress.sbatch, then brushloop regress --collect %s; or %s/submit "
		       "for both (the collect job after the array)\n", s.n, dir, dir, dir);
		goto free_suite;
	}
	if (!a.out) {
		default_out(s.name, p, sizeof(p));
		a.out = p;
	}
	if ((rc = abs_dir(a.out, dir, &err)) || (rc = regress_suite_save(&s, dir, &err)))
		goto free_suite;
	{
		struct regress_run_options o = { .bin = bin, .out_dir = dir, .jobs = a.jobs,
						 .quiet = a.quiet };

		if ((rc = regress_run(&s, &o, &err)))
			goto free_suite;
	}
	rc = report(&s, dir, &a, baseline, &err);
free_suite:
	regress_suite_free(&s);
free_baseline:
	cJSON_Delete(baseline);
	if (rc < 0)
		return cli_fail(&err);
	return rc;
}

const struct cli_optset *const cli_regress_sets[] = { &regress_set, NULL };

/* cli_run.c: `brushloop run`: paint a target on the machine (the simulator by default), unattended, into a run directory. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "engine/run.h"

/* Files shipped with brushloop: under $BL_SOURCE_ROOT, else where it was built from. */
static void shipped(char *out, size_t n, const char *rel)
{
	const char *root = getenv("BL_SOURCE_ROOT");

	snprintf(out, n, "%s/%s", root && *root ? root : BL_SOURCE_ROOT, rel);
}

int cli_run_parse(const struct cli_command *cmd, int argc, char **argv, int need_target,
		  struct run_options *o, struct cli_run_paths *paths, int *json)
{
	static const struct option longopts[] = {
		{ "machine", required_argument, NULL, 'm' },
		{ "palette", required_argument, NULL, 'p' },
		{ "out", required_argument, NULL, 'o' },
		{ "seed", required_argument, NULL, 's' },
		{ "open-loop", no_argument, NULL, 'L' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "max-strokes", required_argument, NULL, 'n' },
		{ "colours", required_argument, NULL, 'k' },
		{ "fault", required_argument, NULL, 'f' },
		{ "attended", no_argument, NULL, 'A' },
		{ "accept-mix", required_argument, NULL, 'a' },
		{ "refilled", required_argument, NULL, 'R' },
		{ "substitute", required_argument, NULL, 'S' },
		{ "accept-nearest", no_argument, NULL, 'N' },
		{ "refill-ok", no_argument, NULL, 'F' },
		{ "answered-by", required_argument, NULL, 'B' },
		{ "accept-changed", no_argument, NULL, 'C' },
		{ "planner", required_argument, NULL, 'P' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *machine = NULL, *palette = NULL;
	bl_err err = { 0 };
	long v;
	int opt;

	run_options_init(o);
	optind = 1;
	while ((opt = getopt_long(argc, argv, "m:p:o:s:qn:k:f:a:jh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'm':
			machine = optarg;
			break;
		case 'p':
			palette = optarg;
			break;
		case 'o':
			o->out_dir = optarg;
			break;
		case 's':
			if (cli_parse_long("--seed", optarg, 0, 2147483647L, &v, &err))
				return cli_usage(cmd, "%s", err.msg);
			o->seed = (uint64_t)v;
			break;
		case 'L':
			o->open_loop = 1;
			break;
		case 'q':
			o->quiet = 1;
			break;
		case 'n':
			if (cli_parse_long("--max-strokes", optarg, 1, 100000, &v, &err))
				return cli_usage(cmd, "%s", err.msg);
			o->max_strokes = (int)v;
			break;
		case 'k':
			if (cli_parse_long("--colours", optarg, 1, 32, &v, &err))
				return cli_usage(cmd, "%s", err.msg);
			o->colours = (int)v;
			break;
		case 'f':
			if (o->n_faults >= RUN_MAX_FAULTS)
				return cli_usage(cmd, "at most %d --fault options", RUN_MAX_FAULTS);
			o->faults[o->n_faults++] = optarg;
			break;
		case 'A':
			o->attended = 1;
			break;
		case 'a':
			o->accept_mix = optarg;
			break;
		case 'R':
			o->refilled = optarg;
			break;
		case 'S':
			if (o->n_substitute >= RUN_MAX_SUBSTITUTES)
				return cli_usage(cmd, "at most %d --substitute options", RUN_MAX_SUBSTITUTES);
			o->substitute[o->n_substitute++] = optarg;
			break;
		case 'N':
			o->accept_nearest = 1;
			break;
		case 'F':
			o->refill_ok = 1;
			break;
		case 'B':
			if (!*optarg || strlen(optarg) >= 96 || strpbrk(optarg, "\n\r\t"))
				return cli_usage(cmd, "--answered-by: a name of 1 to 95 characters on one line");
			o->answered_by = optarg;
			break;
		case 'C':
			o->accept_changed = 1;
			break;
		case 'P':
			if (strcmp(cmd->name, "run"))
				return cli_usage(cmd, "--planner is an option of run (a resume asks the run's planner)");
			if (!*optarg || strpbrk(optarg, "\n\r"))
				return cli_usage(cmd, "--planner: a command on one line");
			o->planner = optarg;
			break;
		case 'j':
			if (!json)
				return cli_usage(cmd, "--json is not an option of %s", cmd->name);
			*json = 1;
			break;
		case 'h':
			printf("%s", cmd->usage);
			return -1;
		default:
			return cli_usage(cmd, "unknown option");
		}
	}
	if (need_target) {
		if (optind != argc - 1)
			return cli_usage(cmd, "%s", optind >= argc ? "a TARGET image is needed"
							    : "only one TARGET");
		o->target = argv[optind];
		if (access(o->target, R_OK) != 0)
			return cli_usage(cmd, "%s: cannot read the target", o->target);
	}
	cli_machine_path(machine, paths->machine, sizeof(paths->machine));
	if (palette)
		snprintf(paths->palette, sizeof(paths->palette), "%s", palette);
	else if (machine)
		/* A machine of one's own keeps its own palette next to it unless one is given. */
		shipped(paths->palette, sizeof(paths->palette), "examples/palette.json");
	else
		shipped(paths->palette, sizeof(paths->palette), "examples/palette.json");
	if (!machine && !getenv("BRUSHLOOP_MACHINE"))
		shipped(paths->machine, sizeof(paths->machine), "examples/machine-sim.json");
	o->machine_path = paths->machine;
	o->palette_path = paths->palette;
	o->progress_live = isatty(2);
	return 0;
}

int cli_run_no_answers(const struct cli_command *cmd, const struct run_options *o)
{
	const char *which = o->accept_mix ? "--accept-mix" : o->refilled ? "--refilled"
			  : o->n_substitute ? "--substitute" : o->answered_by ? "--answered-by"
			  : o->accept_changed ? "--accept-changed" : NULL;

	return which ? cli_usage(cmd, "%s answers a paused run: use it with `brushloop resume`", which)
		     : 0;
}

int cli_run_main(int argc, char **argv)
{
	const struct cli_command *cmd = cli_find("run");
	struct run_options o;
	struct cli_run_paths paths;
	char out[4096];
	bl_err err = { 0 };
	int rc = cli_run_parse(cmd, argc, argv, 1, &o, &paths, NULL);

	if (rc)
		return rc < 0 ? 0 : rc;
	if ((rc = cli_run_no_answers(cmd, &o)))
		return rc;
	if (!o.out_dir) {
		/* runs/NAME-YYYYmmdd-HHMMSS under the current directory */
		const char *base = strrchr(o.target, '/') ? strrchr(o.target, '/') + 1 : o.target;
		char stem[64];
		time_t now = time(NULL);
		struct tm tm;

		snprintf(stem, sizeof(stem), "%s", base);
		if (strrchr(stem, '.'))
			*strrchr(stem, '.') = '\0';
		localtime_r(&now, &tm);
		snprintf(out, sizeof(out), "runs/%s-%04d%02d%02d-%02d%02d%02d", stem, tm.tm_year + 1900,
			 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
		o.out_dir = out;
	}
	if (!o.quiet)
		fprintf(stderr, "brushloop: painting %s into %s\n", o.target, o.out_dir);
	rc = run_start(&o, &err);
	return cli_run_report(o.out_dir, rc, &err, o.quiet);
}

int cli_run_report(const char *dir, int rc, const bl_err *err, int quiet)
{
	cJSON *st = NULL;
	bl_err e2 = { 0 };

	if (rc == BL_EINVAL && access(dir, F_OK) != 0)
		return cli_fail(err);
	if (run_status(dir, &st, &e2) == 0) {
		const cJSON *c = cJSON_GetObjectItem(st, "canvas");
		const cJSON *mean = cJSON_GetObjectItem(c, "mean_de00");
		const cJSON *p95 = cJSON_GetObjectItem(c, "p95_de00");
		/* A damaged state.json is read leniently here: any of these may be missing. */
		const char *state = cJSON_GetStringValue(cJSON_GetObjectItem(st, "state"));
		const char *reason = cJSON_GetStringValue(cJSON_GetObjectItem(st, "reason"));

		printf("run directory: %s\n", dir);
		printf("state: %s%s%s\n", state ? state : "unknown", reason && *reason ? ": " : "",
		       reason ? reason : "");
		printf("status: %s/STATUS.md\n", dir);
		{
			char rp[4200];

			snprintf(rp, sizeof(rp), "%s/report.html", dir);
			if (access(rp, F_OK) == 0)
				printf("report: %s (open it in a browser)\n", rp);
		}
		if (cJSON_IsNumber(mean) && cJSON_IsNumber(p95))
			printf("canvas: mean CIEDE2000 %.2f, 95th percentile %.2f against the target\n",
			       mean->valuedouble, p95->valuedouble);
		if (rc == 0)
			printf("final canvas: %s/final-canvas.png (target beside it: %s/final-target.*)\n",
			       dir, dir);
		cJSON_Delete(st);
	}
	(void)quiet;
	if (rc)
		return cli_fail(err);
	return 0;
}

/* cli_run.c: `brushloop run`: paint a target on the machine (the simulator by default), unattended, into a run directory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "calib/calib.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "config/machine.h"
#include "engine/run.h"
#include "report/report.h"

/* Files shipped with brushloop: under $BL_SOURCE_ROOT, else where it was built from. */
static void shipped(char *out, size_t n, const char *rel)
{
	const char *root = getenv("BL_SOURCE_ROOT");

	snprintf(out, n, "%s/%s", root && *root ? root : BL_SOURCE_ROOT, rel);
}

enum run_opt {
	RUN_MACHINE, RUN_PALETTE, RUN_OUT, RUN_SEED, RUN_OPEN_LOOP, RUN_QUIET, RUN_MAX_STROKES,
	RUN_COLOURS, RUN_FAULT, RUN_ATTENDED, RUN_ACCEPT_MIX, RUN_REFILLED, RUN_SUBSTITUTE,
	RUN_ACCEPT_NEAREST, RUN_REFILL_OK, RUN_ANSWERED_BY, RUN_ACCEPT_CHANGED, RUN_PLANNER, RUN_JSON, RUN_ARM_HOURS,
	RUN_REVIEWER, RUN_ON_DISAGREEMENT, RUN_OVERRULE_REVIEW, RUN_EMPTIED,
	RUN_OPT_COUNT
};

/* One table for run, resume and estimate: an option means the same in each verb that takes it. */
static const struct cli_opt run_opts[RUN_OPT_COUNT] = {
	[RUN_MACHINE] = { "machine", 'm', "M", "machine file (default $BRUSHLOOP_MACHINE, else examples/machine-sim.json)", 0 },
	[RUN_PALETTE] = { "palette", 'p', "P", "palette file (default examples/palette.json)", 0 },
	[RUN_OUT] = { "out", 'o', "DIR", "the run directory (default runs/TARGET-DATE-TIME)", 0 },
	[RUN_SEED] = { "seed", 's', "S", "seed of the simulator (default 1)", 0 },
	[RUN_OPEN_LOOP] = { "open-loop", 0, NULL, "the same plan without verification or correction", 0 },
	[RUN_QUIET] = { "quiet", 'q', NULL, "no progress lines", 0 },
	[RUN_MAX_STROKES] = { "max-strokes", 'n', "N", "the planner's stroke budget", 0 },
	[RUN_COLOURS] = { "colours", 'k', "K", "the number of mixed colours", 0 },
	[RUN_FAULT] = { "fault", 'f', "KEY=VALUE", "inject a simulator fault for this process (repeatable)", 0 },
	[RUN_ATTENDED] = { "attended", 0, NULL, "ask at the terminal instead of deferring", 0 },
	[RUN_ACCEPT_MIX] = { "accept-mix", 'a', "COLOURS", "accept the nearest mix reached for these colours (or all)", 0 },
	[RUN_REFILLED] = { "refilled", 0, "WELLS", "these wells (or all) have been filled again", 0 },
	[RUN_SUBSTITUTE] = { "substitute", 0, "COLOUR=NEW", "mix another colour in this one's place (repeatable)", 0 },
	[RUN_ACCEPT_NEAREST] = { "accept-nearest", 0, NULL, "accept beforehand the nearest colour a mix reaches", 0 },
	[RUN_REFILL_OK] = { "refill-ok", 0, NULL, "start although the wells cannot supply the plan", 0 },
	[RUN_ANSWERED_BY] = { "answered-by", 0, "NAME", "who gives these answers, for the journal", 0 },
	[RUN_ACCEPT_CHANGED] = { "accept-changed", 0, NULL, "go on with a changed machine, palette or target", 0 },
	[RUN_PLANNER] = { "planner", 0, "'COMMAND ARGS'", "plan with an external planner in a sandbox", 0 },
	[RUN_JSON] = { "json", 'j', NULL, "print one JSON document instead of text", 0 },
	[RUN_ARM_HOURS] = { "arm-hours", 0, "H", "the night's arm-time budget (default painting.arm_hours)", 0 },
	[RUN_REVIEWER] = { "reviewer", 0, "'COMMAND ARGS'", "a second judge of the run's own in a sandbox (docs/reviewer.md)", 0 },
	[RUN_ON_DISAGREEMENT] = { "on-disagreement", 0, "pause|brake", "what the run does when the second judge disagrees", 0 },
	[RUN_OVERRULE_REVIEW] = { "overrule-review", 0, NULL, "the second judge's disagreement was looked at: the run's verdict stands", 0 },
	[RUN_EMPTIED] = { "emptied", 0, "CELLS", "these mixing cells (or all) have been emptied and cleaned", 0 },
};

extern const struct cli_optset *const cli_run_family[];

const struct cli_optset cli_run_set = {
	"run", run_opts, RUN_OPT_COUNT,
	CLI_BIT(RUN_MACHINE) | CLI_BIT(RUN_PALETTE) | CLI_BIT(RUN_OUT) | CLI_BIT(RUN_SEED) |
		CLI_BIT(RUN_OPEN_LOOP) | CLI_BIT(RUN_QUIET) | CLI_BIT(RUN_MAX_STROKES) | CLI_BIT(RUN_COLOURS) |
		CLI_BIT(RUN_FAULT) | CLI_BIT(RUN_ATTENDED) | CLI_BIT(RUN_ACCEPT_NEAREST) |
		CLI_BIT(RUN_REFILL_OK) | CLI_BIT(RUN_PLANNER) | CLI_BIT(RUN_ARM_HOURS) | CLI_BIT(RUN_REVIEWER) |
		CLI_BIT(RUN_ON_DISAGREEMENT),
	cli_run_family,
};
/* A resume goes on with what the run was started with: only the answers, faults and how it talks. */
const struct cli_optset cli_resume_set = {
	"resume", run_opts, RUN_OPT_COUNT,
	CLI_BIT(RUN_QUIET) | CLI_BIT(RUN_FAULT) | CLI_BIT(RUN_ATTENDED) | CLI_BIT(RUN_ACCEPT_MIX) |
		CLI_BIT(RUN_REFILLED) | CLI_BIT(RUN_SUBSTITUTE) | CLI_BIT(RUN_ANSWERED_BY) |
		CLI_BIT(RUN_ACCEPT_CHANGED) | CLI_BIT(RUN_OVERRULE_REVIEW) | CLI_BIT(RUN_EMPTIED),
	cli_run_family,
};
/* An estimate plans as run would and paints nothing. */
const struct cli_optset cli_estimate_set = {
	"estimate", run_opts, RUN_OPT_COUNT,
	CLI_BIT(RUN_MACHINE) | CLI_BIT(RUN_PALETTE) | CLI_BIT(RUN_OPEN_LOOP) | CLI_BIT(RUN_MAX_STROKES) |
		CLI_BIT(RUN_COLOURS) | CLI_BIT(RUN_JSON) | CLI_BIT(RUN_ARM_HOURS),
	cli_run_family,
};
const struct cli_optset *const cli_run_family[] = { &cli_run_set, &cli_resume_set, &cli_estimate_set, NULL };
const struct cli_optset *const cli_run_sets[] = { &cli_run_set, NULL };
const struct cli_optset *const cli_resume_sets[] = { &cli_resume_set, NULL };
const struct cli_optset *const cli_estimate_sets[] = { &cli_estimate_set, NULL };

/* One option of a run verb into o; 0 or a usage exit status. */
static int run_opt(const struct cli_optparse *p, enum run_opt row, struct run_options *o,
		   const char **machine, const char **palette, int *json)
{
	long v;

	switch (row) {
	case RUN_MACHINE:
		*machine = p->arg;
		break;
	case RUN_PALETTE:
		*palette = p->arg;
		break;
	case RUN_OUT:
		o->out_dir = p->arg;
		break;
	case RUN_SEED:
		if (cli_opt_long(p, 0, 2147483647L, &v))
			return BL_EXIT_USAGE;
		o->seed = (uint64_t)v;
		break;
	case RUN_OPEN_LOOP:
		o->open_loop = 1;
		break;
	case RUN_QUIET:
		o->quiet = 1;
		break;
	case RUN_MAX_STROKES:
		if (cli_opt_long(p, 1, 100000, &v))
			return BL_EXIT_USAGE;
		o->max_strokes = (int)v;
		break;
	case RUN_COLOURS:
		if (cli_opt_long(p, 1, 32, &v))
			return BL_EXIT_USAGE;
		o->colours = (int)v;
		break;
	case RUN_FAULT:
		if (o->n_faults >= RUN_MAX_FAULTS)
			return cli_usage(p->cmd, "at most %d --fault options", RUN_MAX_FAULTS);
		o->faults[o->n_faults++] = p->arg;
		break;
	case RUN_ATTENDED:
		o->attended = 1;
		break;
	case RUN_ACCEPT_MIX:
		o->accept_mix = p->arg;
		break;
	case RUN_REFILLED:
		o->refilled = p->arg;
		break;
	case RUN_SUBSTITUTE:
		if (o->n_substitute >= RUN_MAX_SUBSTITUTES)
			return cli_usage(p->cmd, "at most %d --substitute options", RUN_MAX_SUBSTITUTES);
		o->substitute[o->n_substitute++] = p->arg;
		break;
	case RUN_ACCEPT_NEAREST:
		o->accept_nearest = 1;
		break;
	case RUN_REFILL_OK:
		o->refill_ok = 1;
		break;
	case RUN_ANSWERED_BY:
		if (!*p->arg || strlen(p->arg) >= 96 || strpbrk(p->arg, "\n\r\t"))
			return cli_usage(p->cmd, "--answered-by: a name of 1 to 95 characters on one line");
		o->answered_by = p->arg;
		break;
	case RUN_ACCEPT_CHANGED:
		o->accept_changed = 1;
		break;
	case RUN_PLANNER:
		if (!*p->arg || strpbrk(p->arg, "\n\r"))
			return cli_usage(p->cmd, "--planner: a command on one line");
		o->planner = p->arg;
		break;
	case RUN_JSON:
		*json = 1;
		break;
	case RUN_ARM_HOURS:
		if (cli_opt_double(p, &o->arm_hours))
			return BL_EXIT_USAGE;
		if (!(o->arm_hours >= 0.01 && o->arm_hours <= 240))
			return cli_usage(p->cmd, "--arm-hours: %s is not 0.01 to 240 hours", p->arg);
		break;
	case RUN_REVIEWER:
		if (!*p->arg || strpbrk(p->arg, "\n\r"))
			return cli_usage(p->cmd, "--reviewer: a command on one line");
		o->reviewer = p->arg;
		break;
	case RUN_ON_DISAGREEMENT:
		for (int k = 0; machine_review_action_names[k]; k++)
			if (!strcmp(p->arg, machine_review_action_names[k]))
				o->on_disagreement = k + 1;
		if (!o->on_disagreement)
			return cli_usage(p->cmd, "--on-disagreement: '%s' is neither pause nor brake", p->arg);
		break;
	case RUN_OVERRULE_REVIEW:
		o->overrule_review = 1;
		break;
	case RUN_EMPTIED:
		o->emptied = p->arg;
		break;
	case RUN_OPT_COUNT:
		break;
	}
	return 0;
}

int cli_run_parse(const struct cli_command *cmd, const struct cli_optset *set, int argc, char **argv,
		  int need_target, struct run_options *o, struct cli_run_paths *paths, int *json, int *ind)
{
	const char *machine = NULL, *palette = NULL;
	struct cli_optparse p;
	int row, rc, json_seen = 0;

	run_options_init(o);
	o->calibration = calib_for_run;
	o->report = report_for_run;
	cli_opt_start(&p, cmd, set, argc, argv);
	while ((row = cli_opt_next(&p)) != CLI_OPT_END) {
		if (row == CLI_OPT_BAD)
			return BL_EXIT_USAGE;
		if ((rc = run_opt(&p, (enum run_opt)row, o, &machine, &palette, &json_seen)))
			return rc;
	}
	if (json)
		*json = json_seen;
	*ind = p.ind;
	if (need_target) {
		if (p.ind != argc - 1)
			return cli_usage(cmd, "%s", p.ind >= argc ? "a TARGET image is needed"
							    : "only one TARGET");
		o->target = argv[p.ind];
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

int cli_run_main(int argc, char **argv)
{
	const struct cli_command *cmd = cli_find("run");
	struct run_options o;
	struct cli_run_paths paths;
	char out[4096];
	bl_err err = { 0 };
	int ind, rc = cli_run_parse(cmd, &cli_run_set, argc, argv, 1, &o, &paths, NULL, &ind);

	if (rc)
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
	if (!o.quiet) {
		char t[512], d[512];

		bl_name_shown(o.target, t, sizeof(t));
		bl_name_shown(o.out_dir, d, sizeof(d));
		fprintf(stderr, "brushloop: painting %s into %s\n", t, d);
	}
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

		char shown[2048], why[4096];

		/* The directory's name and the reason (which may quote it) as a terminal may show them. */
		bl_name_shown(dir, shown, sizeof(shown));
		bl_name_shown(reason ? reason : "", why, sizeof(why));
		printf("run directory: %s\n", shown);
		printf("state: %s%s%s\n", state ? state : "unknown", *why ? ": " : "", why);
		printf("status: %s/STATUS.md\n", shown);
		{
			char rp[4200];

			snprintf(rp, sizeof(rp), "%s/report.html", dir);
			if (access(rp, F_OK) == 0)
				printf("report: %s/report.html (open it in a browser)\n", shown);
		}
		if (cJSON_IsNumber(cJSON_GetObjectItem(c, "scielab_1m")))
			printf("seen from 1 m: S-CIELAB %.2f, CIEDE2000 pixel by pixel %.2f\n",
			       cJSON_GetObjectItem(c, "scielab_1m")->valuedouble,
			       cJSON_GetNumberValue(cJSON_GetObjectItem(c, "pixel_de00")));
		if (cJSON_IsNumber(mean) && cJSON_IsNumber(p95))
			printf("canvas: mean CIEDE2000 %.2f, 95th percentile %.2f against the target\n",
			       mean->valuedouble, p95->valuedouble);
		if (rc == 0)
			printf("final canvas: %s/final-canvas.png (target beside it: %s/final-target.*)\n",
			       shown, shown);
		cJSON_Delete(st);
	}
	(void)quiet;
	if (rc)
		return cli_fail(err);
	return 0;
}

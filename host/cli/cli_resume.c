/* cli_resume.c: `brushloop resume`: continue a run from its state.json and journal after a crash, a pause or a brake. */
#include <stdio.h>

#include "base/strbuf.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "engine/run.h"

int cli_resume_main(int argc, char **argv)
{
	const struct cli_command *cmd = cli_find("resume");
	struct run_options o;
	struct cli_run_paths paths;
	bl_err err = { 0 };
	const char *dir;
	char by[96];
	int ind, rc = cli_run_parse(cmd, &cli_resume_set, argc, argv, 0, &o, &paths, NULL, &ind);

	if (rc)
		return rc;
	if (ind != argc - 1)
		return cli_usage(cmd, "resume takes one run directory");
	dir = argv[argc - 1];
	if (cli_run_dir_ok(dir, &err))
		return cli_fail(&err);
	if (!o.answered_by) {
		cli_operator_name(by, sizeof(by));
		o.answered_by = by;
	}
	if (!o.quiet) {
		char shown[512];

		bl_name_shown(dir, shown, sizeof(shown));
		fprintf(stderr, "brushloop: resuming %s\n", shown);
	}
	rc = run_resume(dir, &o, &err);
	return cli_run_report(dir, rc, &err, o.quiet);
}

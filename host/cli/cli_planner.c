/* cli_planner.c: `brushloop planner serve|replay`: the built-in planner over stdin and stdout, as an external planner would be, and a run's planner decisions made again. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "config/machine.h"
#include "planner/planner_replay.h"
#include "planner/planner_serve.h"

/* Each recorded phase of run directory dir (DIR/planner/rN), its decision one line: {"round", ...}. */
static int replay(const char *dir)
{
	static struct machine m;
	char p[4200];
	bl_err err = { 0 };
	int rounds = 0;

	snprintf(p, sizeof(p), "%s/machine.json", dir);
	if (cli_run_dir_ok(dir, &err) || machine_load(p, &m, &err))
		return cli_fail(&err);
	for (int r = 0; r < 1000; r++) {
		cJSON *d;
		char *s;

		snprintf(p, sizeof(p), "%s/planner/r%d/answer.json", dir, r);
		if (access(p, R_OK) != 0)
			continue;
		snprintf(p, sizeof(p), "%s/planner/r%d", dir, r);
		if (planner_replay(p, &m, &d, &err))
			return cli_fail(&err);
		s = cJSON_PrintUnformatted(d);
		printf("{\"round\":%d,\"decision\":%s}\n", r, s ? s : "null");
		cJSON_free(s);
		cJSON_Delete(d);
		rounds++;
	}
	if (!rounds) {
		bl_fail(&err, BL_EINVAL, "%s: no planner answers recorded (DIR/planner/rN/answer.json)", dir);
		return cli_fail(&err);
	}
	return 0;
}

int cli_planner_main(int argc, char **argv)
{
	const struct cli_command *cmd = cli_find("planner");
	bl_err err = { 0 };

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("%s", cmd->usage);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "replay"))
		return replay(argv[2]);
	if (argc != 2 || strcmp(argv[1], "serve"))
		return cli_usage(cmd, "the subcommands are serve and replay RUN_DIR");
	if (planner_serve(0, 1, &err))
		return cli_fail(&err);
	return 0;
}

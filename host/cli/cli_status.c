/* cli_status.c: `brushloop status`: where a run stands, from its directory alone, also while it runs. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "engine/run.h"

int cli_status_main(int argc, char **argv)
{
	const struct cli_command *cmd = cli_find("status");
	const char *dir = NULL;
	int json = 0, stale = 0;
	cJSON *st, *c, *cost, *hb;
	bl_err err = { 0 };

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = 1;
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("%s", cmd->usage);
			return 0;
		} else if (argv[i][0] == '-')
			return cli_usage(cmd, "unknown option '%s'", argv[i]);
		else if (dir)
			return cli_usage(cmd, "one run directory only");
		else
			dir = argv[i];
	}
	if (!dir)
		return cli_usage(cmd, "a run directory is needed");
	if (cli_run_dir_ok(dir, &err) || run_status(dir, &st, &err))
		return cli_fail(&err);
	hb = cJSON_GetObjectItem(st, "heartbeat");
	if (cJSON_IsTrue(cJSON_GetObjectItem(hb, "stale"))) {
		/* A dead or hung run is a brake a watchdog (cron, a person) acts on: exit 4, said in STATUS.md. */
		const cJSON *age = cJSON_GetObjectItem(hb, "age_s");

		stale = 1;
		if (run_status_mark_stale(dir, cJSON_IsNumber(age) ? age->valuedouble : -1.0,
					  cJSON_GetObjectItem(hb, "stale_after_s")->valuedouble, &err))
			fprintf(stderr, "brushloop: warning: %s\n", err.msg);
	}
	if (json) {
		int rc = cli_print_json(st);

		return rc ? rc : stale ? BL_EXIT_BRAKE : 0;
	}
	c = cJSON_GetObjectItem(st, "canvas");
	cost = cJSON_GetObjectItem(st, "cost");
	printf("run: %s\nstate: %s%s%s\n", dir, cJSON_GetStringValue(cJSON_GetObjectItem(st, "state")),
	       *cJSON_GetStringValue(cJSON_GetObjectItem(st, "reason")) ? ": " : "",
	       cJSON_GetStringValue(cJSON_GetObjectItem(st, "reason")));
	printf("subtask: %s (%d of %d done, round %d); strokes %d of %d\n",
	       cJSON_GetStringValue(cJSON_GetObjectItem(st, "subtask")),
	       (int)cJSON_GetObjectItem(st, "subtasks_done")->valuedouble,
	       (int)cJSON_GetObjectItem(st, "subtasks")->valuedouble,
	       (int)cJSON_GetObjectItem(st, "round")->valuedouble,
	       (int)cJSON_GetObjectItem(st, "strokes_done")->valuedouble,
	       (int)cJSON_GetObjectItem(st, "strokes_total")->valuedouble);
	if (cJSON_IsNumber(cJSON_GetObjectItem(c, "mean_de00")))
		printf("canvas: mean CIEDE2000 %.2f, 95th percentile %.2f%s\n",
		       cJSON_GetObjectItem(c, "mean_de00")->valuedouble,
		       cJSON_GetObjectItem(c, "p95_de00")->valuedouble,
		       cJSON_IsTrue(cJSON_GetObjectItem(c, "final")) ? " (final)" : "");
	else
		printf("canvas: not observed yet\n");
	if (cost)
		printf("cost: arm %.0f s, %d verifications, %d planner calls (%.1f s), paint %.2f ml: %.2f %s\n",
		       cJSON_GetObjectItem(cost, "arm_s")->valuedouble,
		       (int)cJSON_GetObjectItem(cost, "verifications")->valuedouble,
		       (int)cJSON_GetObjectItem(cost, "planner_calls")->valuedouble,
		       /* a state written before planner_s was kept has none */
		       cJSON_GetNumberValue(cJSON_GetObjectItem(cost, "planner_s")) > 0
			       ? cJSON_GetNumberValue(cJSON_GetObjectItem(cost, "planner_s")) : 0.0,
		       cJSON_GetObjectItem(cost, "paint_ml")->valuedouble,
		       cJSON_GetObjectItem(cJSON_GetObjectItem(cost, "priced"), "total")->valuedouble,
		       cJSON_GetStringValue(cJSON_GetObjectItem(cost, "currency")));
	if (cJSON_IsNumber(cJSON_GetObjectItem(hb, "age_s")))
		printf("heartbeat: %.1f s ago%s\n", cJSON_GetObjectItem(hb, "age_s")->valuedouble,
		       cJSON_IsTrue(cJSON_GetObjectItem(hb, "stale")) ? " - STALE: the run says it is running but has stopped beating" : "");
	printf("calibrated: %s\n", cJSON_IsTrue(cJSON_GetObjectItem(st, "calibrated")) ? "yes" : "NO (sRGB assumed)");
	cJSON_Delete(st);
	return stale ? BL_EXIT_BRAKE : 0;
}

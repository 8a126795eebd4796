/* cli_status.c: `brushloop status`: where a run stands, from its directory alone, also while it runs. */
#include <stdio.h>
#include <stdlib.h>

#include "calib/calib.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "engine/run.h"

enum status_opt { STATUS_JSON, STATUS_OPT_COUNT };

static const struct cli_opt status_opts[STATUS_OPT_COUNT] = {
	[STATUS_JSON] = CLI_OPT_JSON,
};
static const struct cli_optset status_set = { "status", status_opts, STATUS_OPT_COUNT, 0, NULL };
const struct cli_optset *const cli_status_sets[] = { &status_set, NULL };

/* The run's calibration files as they are now: forced, or older than calibration.max_age_h. */
static void calibration_note(const char *dir)
{
	char p[CFG_PATH_MAX];
	struct machine *m = malloc(sizeof(*m));
	struct calib_set cs;
	bl_err err = { 0 };

	snprintf(p, sizeof(p), "%s/machine.json", dir);
	if (m && machine_load(p, m, &err) == 0 && calib_load_machine(m, &cs, &err) == 0) {
		if (cs.warnings[0])
			printf("calibration: WARNING: %s\n", cs.warnings);
		calib_set_free(&cs);
	} else if (m) {
		printf("calibration: cannot be checked: %s\n", err.msg);
	}
	free(m);
}

int cli_status_main(int argc, char **argv)
{
	const struct cli_command *cmd = cli_find("status");
	const char *dir = NULL;
	uint64_t given;
	int rc, json, stale = 0;
	cJSON *st, *c, *cost, *hb;
	bl_err err = { 0 };

	if ((rc = cli_one_dir(cmd, &status_set, argc, argv, &given, &dir)))
		return rc;
	json = !!(given & CLI_BIT(STATUS_JSON));
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
		rc = cli_print_json(st);
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
	if (cJSON_IsNumber(cJSON_GetObjectItem(c, "scielab_1m")))
		printf("seen from 1 m: S-CIELAB %.2f, CIEDE2000 pixel by pixel %.2f (final)\n",
		       cJSON_GetObjectItem(c, "scielab_1m")->valuedouble,
		       cJSON_GetNumberValue(cJSON_GetObjectItem(c, "pixel_de00")));
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
	calibration_note(dir);
	cJSON_Delete(st);
	return stale ? BL_EXIT_BRAKE : 0;
}

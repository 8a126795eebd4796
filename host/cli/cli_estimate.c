/* cli_estimate.c: `brushloop estimate`: what painting a target would take and cost, before any paint is touched. */
#include <stdio.h>

#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "engine/run.h"

static void print_cost(const char *what, const cJSON *c)
{
	const cJSON *p = cJSON_GetObjectItem(c, "priced");

	printf("%-12s arm %7.0f s (%.1f h), %4d verifications, %2d planner calls, paint %6.2f ml: %.2f %s\n",
	       what, cJSON_GetObjectItem(c, "arm_s")->valuedouble,
	       cJSON_GetObjectItem(c, "arm_s")->valuedouble / 3600.0,
	       (int)cJSON_GetObjectItem(c, "verifications")->valuedouble,
	       (int)cJSON_GetObjectItem(c, "planner_calls")->valuedouble,
	       cJSON_GetObjectItem(c, "paint_ml")->valuedouble,
	       cJSON_GetObjectItem(p, "total")->valuedouble,
	       cJSON_GetStringValue(cJSON_GetObjectItem(c, "currency")));
}

int cli_estimate_main(int argc, char **argv)
{
	const struct cli_command *cmd = cli_find("estimate");
	struct run_options o;
	struct cli_run_paths paths;
	bl_err err = { 0 };
	cJSON *e;
	int ind, json = 0, rc = cli_run_parse(cmd, &cli_estimate_set, argc, argv, 1, &o, &paths, &json, &ind);

	if (rc)
		return rc;
	if (run_estimate(&o, &e, &err))
		return cli_fail(&err);
	if (json)
		return cli_print_json(e);
	printf("target: %s on %s\n", o.target, cJSON_GetStringValue(cJSON_GetObjectItem(e, "machine")));
	printf("plan: %d strokes, %d colours, %d mixes, %d paint batches, %d checkpoints; predicted mean CIEDE2000 %.2f\n",
	       (int)cJSON_GetObjectItem(e, "strokes")->valuedouble,
	       (int)cJSON_GetObjectItem(e, "colours")->valuedouble,
	       (int)cJSON_GetObjectItem(e, "mixes")->valuedouble,
	       (int)cJSON_GetObjectItem(e, "paint_batches")->valuedouble,
	       (int)cJSON_GetObjectItem(e, "checkpoints")->valuedouble,
	       cJSON_GetObjectItem(e, "predicted_mean_de00")->valuedouble);
	print_cost("expected:", cJSON_GetObjectItem(e, "expected"));
	print_cost("upper bound:", cJSON_GetObjectItem(e, "upper_bound"));
	printf("arm-time budget: %.2f h buys %d strokes in %d brush pass%s, %d colours, %d correction "
	       "round%s: expected %.2f h\n",
	       cJSON_GetNumberValue(cJSON_GetObjectItem(e, "arm_budget_s")) / 3600.0,
	       (int)cJSON_GetNumberValue(cJSON_GetObjectItem(e, "strokes")),
	       (int)cJSON_GetNumberValue(cJSON_GetObjectItem(e, "passes")),
	       cJSON_GetNumberValue(cJSON_GetObjectItem(e, "passes")) == 1 ? "" : "es",
	       (int)cJSON_GetNumberValue(cJSON_GetObjectItem(e, "colours")),
	       (int)cJSON_GetNumberValue(cJSON_GetObjectItem(e, "correction_rounds")),
	       cJSON_GetNumberValue(cJSON_GetObjectItem(e, "correction_rounds")) == 1 ? "" : "s",
	       cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "expected"), "arm_s")) / 3600.0);
	printf("cost budget: %.2f\n", cJSON_GetObjectItem(e, "budget")->valuedouble);
	{
		const cJSON *w;
		int refills = 0;

		cJSON_ArrayForEach(w, cJSON_GetObjectItem(e, "wells")) {
			int n = (int)cJSON_GetObjectItem(w, "refills")->valuedouble;

			if (n > 0)
				printf("refill: %s (%s) expected %.1f ml of its %.0f ml: about %d refill%s\n",
				       cJSON_GetStringValue(cJSON_GetObjectItem(w, "well")),
				       cJSON_GetStringValue(cJSON_GetObjectItem(w, "paint")),
				       cJSON_GetObjectItem(w, "expected_ml")->valuedouble,
				       cJSON_GetObjectItem(w, "capacity_ml")->valuedouble, n, n == 1 ? "" : "s");
			refills += n;
		}
		if (!refills)
			printf("wells: every well holds what the run is expected to draw from it\n");
	}
	cJSON_Delete(e);
	return 0;
}

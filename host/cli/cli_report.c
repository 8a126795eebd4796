/* cli_report.c: `brushloop report DIR`: writes the run's report.html (host/report/). */
#include <stdio.h>

#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "report/report.h"

enum report_opt { REPORT_JSON, REPORT_OPT_COUNT };

static const struct cli_opt report_opts[REPORT_OPT_COUNT] = {
	[REPORT_JSON] = CLI_OPT_JSON,
};
static const struct cli_optset report_set = { "report", report_opts, REPORT_OPT_COUNT, 0, NULL };
const struct cli_optset *const cli_report_sets[] = { &report_set, NULL };

int cli_report_main(int argc, char **argv)
{
	const struct cli_command *cmd = cli_find("report");
	const char *dir = NULL;
	struct report_info info;
	bl_err err = { 0 };
	uint64_t given;
	int rc, json;

	if ((rc = cli_one_dir(cmd, &report_set, argc, argv, &given, &dir)))
		return rc;
	json = !!(given & CLI_BIT(REPORT_JSON));
	if (cli_run_dir_ok(dir, &err) || report_write(dir, &info, &err))
		return cli_fail(&err);
	if (json) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "report", info.path);
		cJSON_AddNumberToObject(o, "bytes", (double)info.bytes);
		cJSON_AddNumberToObject(o, "images", info.images);
		cJSON_AddNumberToObject(o, "drawn", info.drawn);
		return cli_print_json(o);
	}
	printf("report: %s (%zu bytes, %d pictures, %d drawn now)\n", info.path, info.bytes,
	       info.images, info.drawn);
	return 0;
}

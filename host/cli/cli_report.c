/* cli_report.c: `brushloop report DIR`: writes the run's report.html (host/report/). */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "report/report.h"

int cli_report_main(int argc, char **argv)
{
	const struct cli_command *cmd = cli_find("report");
	const char *dir = NULL;
	struct report_info info;
	bl_err err = { 0 };
	int json = 0;

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

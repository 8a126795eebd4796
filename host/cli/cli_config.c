/* cli_config.c: `brushloop config check`: strict validation of machine and palette files. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "cli/cli.h"
#include "config/machine.h"
#include "config/palette.h"

/* Reads only the "kind" key, to know which loader validates the file. */
static int file_kind(const char *path, char *kind, size_t n, bl_err *err)
{
	const cJSON *k;
	cJSON *doc;
	int rc = json_parse_file(path, &doc, err);

	if (rc)
		return rc;
	k = cJSON_IsObject(doc) ? cJSON_GetObjectItemCaseSensitive(doc, "kind") : NULL;
	if (!cJSON_IsString(k) || strlen(k->valuestring) >= n) {
		cJSON_Delete(doc);
		return bl_fail(err, BL_EINVAL,
			       "%s: kind: missing; a config file says \"kind\": \"machine\" or \"palette\"",
			       path);
	}
	snprintf(kind, n, "%s", k->valuestring);
	cJSON_Delete(doc);
	return 0;
}

static int config_check(const struct cli_command *cmd, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ NULL, 0, NULL, 0 },
	};
	struct machine *m = NULL;
	struct palette *p = NULL;
	cJSON *out = NULL, *files = NULL;
	bl_err err = { 0 };
	int json = 0, opt, status = 0, have_machine = 0, npal = 0;
	char **pal_files;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (opt != 'j')
			return cli_usage(cmd, "bad option");
		json = 1;
	}
	if (optind >= argc)
		return cli_usage(cmd, "config check needs at least one file");
	m = calloc(1, sizeof(*m));
	p = calloc(1, sizeof(*p));
	pal_files = calloc((size_t)argc, sizeof(*pal_files));
	if (!m || !p || !pal_files) {
		status = 1;
		goto out_free;
	}
	if (json) {
		out = cJSON_CreateObject();
		files = cJSON_AddArrayToObject(out, "files");
	}
	for (int i = optind; i < argc; i++) {
		char kind[32], *summary = NULL;
		cJSON *f = NULL;
		int rc = file_kind(argv[i], kind, sizeof(kind), &err);

		if (rc == 0 && strcmp(kind, "machine") == 0) {
			if (have_machine) {
				status = cli_usage(cmd, "%s: give at most one machine file", argv[i]);
				goto out_free;
			}
			rc = machine_load(argv[i], m, &err);
			if (rc == 0) {
				have_machine = 1;
				summary = machine_summary(m);
			}
		} else if (rc == 0 && strcmp(kind, "palette") == 0) {
			rc = palette_load(argv[i], p, &err);
			if (rc == 0) {
				summary = palette_summary(p);
				pal_files[npal++] = argv[i];
			}
		} else if (rc == 0) {
			rc = bl_fail(&err, BL_EINVAL,
				     "%s: kind: '%s' is not a config file kind (machine, palette)",
				     argv[i], kind);
		}
		if (rc) {
			status = cli_fail(&err);
			goto out_free;
		}
		if (json) {
			f = cJSON_CreateObject();
			cJSON_AddStringToObject(f, "file", argv[i]);
			cJSON_AddStringToObject(f, "kind", kind);
			cJSON_AddStringToObject(f, "summary", summary ? summary : "");
			cJSON_AddItemToArray(files, f);
		} else if (summary) {
			fputs(summary, stdout);
		}
		free(summary);
	}
	/* Palettes given with a machine must fit it: every paint in a well that exists. */
	if (have_machine) {
		for (int i = 0; i < npal; i++) {
			if (palette_load(pal_files[i], p, &err) ||
			    palette_check_machine(p, m, &err)) {
				status = cli_fail(&err);
				goto out_free;
			}
		}
	}
	if (json) {
		cJSON_AddBoolToObject(out, "valid", 1);
		status = cli_print_json(out);
		out = NULL;
	} else {
		printf("ok: %d file%s valid\n", argc - optind, argc - optind == 1 ? "" : "s");
	}
out_free:
	cJSON_Delete(out);
	free(pal_files);
	free(p);
	free(m);
	return status;
}

int cli_config_main(int argc, char **argv)
{
	const struct cli_command *cmd = cli_find("config");

	if (argc < 2 || strcmp(argv[1], "check") != 0)
		return cli_usage(cmd, "config needs a subcommand: check");
	return config_check(cmd, argc - 1, argv + 1);
}

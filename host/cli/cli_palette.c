/* cli_palette.c: `brushloop palette`: derive a palette's Kubelka-Munk data from measured spectra, and show how a palette models. */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/json.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "color/mix.h"

/* The licence beside the measurements, with a line saying what was derived from them. */
static int load_notice(const char *notice_file, const char *masstone, const char *tints,
		       char *out, size_t n, bl_err *err)
{
	char path[CFG_PATH_MAX], mcopy[CFG_PATH_MAX], tcopy[CFG_PATH_MAX], *text = NULL;
	size_t len;
	int rc;

	snprintf(mcopy, sizeof(mcopy), "%s", masstone);
	snprintf(tcopy, sizeof(tcopy), "%s", tints);
	if (notice_file) {
		snprintf(path, sizeof(path), "%s", notice_file);
	} else {
		char dcopy[CFG_PATH_MAX];

		snprintf(dcopy, sizeof(dcopy), "%s", masstone);
		if (fs_join(path, sizeof(path), dirname(dcopy), "LICENSE", err))
			return BL_EINVAL;
		{
			FILE *f = fopen(path, "r");

			if (!f) {
				out[0] = '\0';
				return 0; /* no licence beside the data: nothing to carry */
			}
			fclose(f);
		}
	}
	rc = fs_read_file(path, n, &text, &len, err);
	if (rc)
		return rc;
	while (len && (text[len - 1] == '\n' || text[len - 1] == ' '))
		text[--len] = '\0';
	/* Palette strings hold no control characters: the licence's line breaks become spaces. */
	{
		size_t w = 0;

		for (size_t r = 0; r < len; r++) {
			char ch = text[r] == '\n' || text[r] == '\r' || text[r] == '\t' ? ' ' : text[r];

			if ((unsigned char)ch < 0x20 || (ch == ' ' && w && text[w - 1] == ' '))
				continue;
			text[w++] = ch;
		}
		text[w] = '\0';
	}
	if ((size_t)snprintf(out, n,
			     "Kubelka-Munk K and S derived by brushloop (palette derive) from the "
			     "measured spectra %s and %s, which come with this notice: %s",
			     basename(mcopy), basename(tcopy), text) >= n) {
		free(text);
		return bl_fail(err, BL_EINVAL, "%s: the notice is too long (at most %zu bytes)",
			       path, n - 200);
	}
	free(text);
	return 0;
}

enum derive_opt {
	DERIVE_MASSTONE, DERIVE_TINTS, DERIVE_OUTPUT, DERIVE_NAME, DERIVE_NOTICE_FILE, DERIVE_STEP, DERIVE_JSON,
	DERIVE_OPT_COUNT
};

static const struct cli_opt derive_opts[DERIVE_OPT_COUNT] = {
	[DERIVE_MASSTONE] = { "masstone", 0, "FILE", "masstone spectra file", 0 },
	[DERIVE_TINTS] = { "tints", 0, "FILE", "tint spectra file", 0 },
	[DERIVE_OUTPUT] = { "output", 'o', "FILE", "the palette file to write", 0 },
	[DERIVE_NAME] = { "name", 0, "NAME", "the palette's name", 0 },
	[DERIVE_NOTICE_FILE] = { "notice-file", 0, "FILE", "licence notice file", 0 },
	[DERIVE_STEP] = { "step", 0, "NM", "band spacing (nm, default 10)", 0 },
	[DERIVE_JSON] = CLI_OPT_JSON,
};
static const struct cli_optset derive_set = { "palette derive", derive_opts, DERIVE_OPT_COUNT, 0, NULL };

/* A palette's name from its file's: the base name without its extension. */
static void name_from_file(const char *path, char *out, size_t n)
{
	char copy[CFG_PATH_MAX], *b, *dot;

	snprintf(copy, sizeof(copy), "%s", path);
	b = basename(copy);
	dot = strrchr(b, '.');
	if (dot && dot != b)
		*dot = '\0';
	snprintf(out, n, "%s", b);
}

static int palette_derive(const struct cli_command *cmd, int argc, char **argv)
{
	struct cli_optparse op;
	const char *masstone = NULL, *tints = NULL, *output = NULL, *notice_file = NULL;
	struct mix_derive_opts o;
	struct mix_derive_report *rep = NULL;
	struct palette *p = NULL;
	cJSON *doc = NULL;
	bl_err err = { 0 };
	int json = 0, opt, status = 0;

	mix_derive_defaults(&o);
	o.name[0] = '\0';
	cli_opt_start(&op, cmd, &derive_set, argc, argv);
	while ((opt = cli_opt_next(&op)) != CLI_OPT_END) {
		if (opt == CLI_OPT_BAD)
			return BL_EXIT_USAGE;
		switch ((enum derive_opt)opt) {
		case DERIVE_MASSTONE:
			masstone = op.arg;
			break;
		case DERIVE_TINTS:
			tints = op.arg;
			break;
		case DERIVE_OUTPUT:
			output = op.arg;
			break;
		case DERIVE_NAME:
			if (!op.arg[0] || strlen(op.arg) >= sizeof(o.name))
				return cli_usage(cmd, "--name must be 1..%zu characters",
						 sizeof(o.name) - 1);
			snprintf(o.name, sizeof(o.name), "%s", op.arg);
			break;
		case DERIVE_NOTICE_FILE:
			notice_file = op.arg;
			break;
		case DERIVE_STEP:
			if (cli_opt_double(&op, &o.step_nm))
				return BL_EXIT_USAGE;
			if (o.step_nm < 1.0 || o.step_nm > 50.0)
				return cli_usage(cmd, "--step: %g nm is outside 1..50", o.step_nm);
			break;
		case DERIVE_JSON:
			json = 1;
			break;
		case DERIVE_OPT_COUNT:
			break;
		}
	}
	if (op.ind != argc)
		return cli_usage(cmd, "palette derive takes no arguments besides options ('%s')",
				 argv[op.ind]);
	if (!masstone || !tints || !output)
		return cli_usage(cmd, "palette derive needs --masstone, --tints and -o");
	if (!o.name[0])
		name_from_file(output, o.name, sizeof(o.name));
	if (load_notice(notice_file, masstone, tints, o.notice, sizeof(o.notice), &err))
		return cli_fail(&err);
	p = calloc(1, sizeof(*p));
	rep = calloc(1, sizeof(*rep));
	if (!p || !rep) {
		status = BL_EXIT_FAIL;
		goto out_free;
	}
	if (mix_derive_kimera(masstone, tints, &o, p, rep, &err)) {
		status = cli_fail(&err);
		goto out_free;
	}
	doc = mix_palette_to_json(p);
	if (!doc || json_write_file(output, doc, &err)) {
		if (!doc)
			bl_fail(&err, BL_ENOMEM, "out of memory");
		status = cli_fail(&err);
		goto out_free;
	}
	if (json) {
		cJSON *r = cJSON_CreateObject(), *arr = cJSON_AddArrayToObject(r, "paints");

		cJSON_AddStringToObject(r, "output", output);
		cJSON_AddNumberToObject(r, "bands", p->n_bands);
		for (int i = 0; i < rep->n_paints; i++) {
			cJSON *e = cJSON_CreateObject();

			cJSON_AddStringToObject(e, "name", rep->name[i]);
			json_add_vec(e, "masstone_lab", rep->masstone_lab[i], 3);
			cJSON_AddNumberToObject(e, "masstone_de00", rep->masstone_de00[i]);
			if (strcmp(rep->name[i], p->white) != 0) {
				json_add_vec(e, "tint_lab", rep->tint_lab[i], 3);
				cJSON_AddNumberToObject(e, "tint_fraction", rep->tint_fraction[i]);
				cJSON_AddNumberToObject(e, "tint_de00", rep->tint_de00[i]);
			}
			cJSON_AddNumberToObject(e, "repeat_de00", rep->repeat_de00[i]);
			cJSON_AddItemToArray(arr, e);
		}
		status = cli_print_json(r);
		goto out_free;
	}
	printf("wrote %s: %d paints, %d bands %g..%g nm\n", output, p->n_paints, p->n_bands,
	       p->wavelengths_nm[0], p->wavelengths_nm[p->n_bands - 1]);
	printf("  %-18s %9s %9s %9s   (CIEDE2000 of the model against the measured spectra)\n",
	       "paint", "masstone", "tint", "repeats");
	for (int i = 0; i < rep->n_paints; i++) {
		if (strcmp(rep->name[i], p->white) == 0)
			printf("  %-18s %9.3f %9s %9.3f\n", rep->name[i], rep->masstone_de00[i], "-",
			       rep->repeat_de00[i]);
		else
			printf("  %-18s %9.3f %9.3f %9.3f\n", rep->name[i], rep->masstone_de00[i],
			       rep->tint_de00[i], rep->repeat_de00[i]);
	}
out_free:
	cJSON_Delete(doc);
	free(p);
	free(rep);
	return status;
}

int cli_palette_main(int argc, char **argv)
{
	const struct cli_command *cmd = cli_find("palette");

	if (argc < 2)
		return cli_usage(cmd, "palette needs a subcommand: derive");
	if (strcmp(argv[1], "derive") == 0)
		return palette_derive(cmd, argc - 1, argv + 1);
	return cli_usage(cmd, "unknown palette subcommand '%s'", argv[1]);
}

const struct cli_optset *const cli_palette_sets[] = { &derive_set, NULL };

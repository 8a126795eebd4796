/* cli_config.c: `brushloop config check`: every file kind through the validator its loaders use. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arm/action.h"
#include "base/json.h"
#include "base/strbuf.h"
#include "calib/calib.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "config/machine.h"
#include "config/palette.h"
#include "sandbox/sbx.h"
#include "vision/canvas.h"
#include "vision/light.h"

/* What one `config check` has read so far: palettes are checked against the machine at the end. */
struct check_ctx {
	struct machine *m;
	struct palette *p;
	int have_machine;
	int npal;
	char **pal_files;
};

/* Each kind's validator fills a summary (malloc'd) or fails naming the file and key. */
typedef int (*check_fn)(struct check_ctx *c, const char *path, char **summary, bl_err *err);

/* A machine and every calibration file it names: what a run loads before it writes anything. */
static int check_machine(struct check_ctx *c, const char *path, char **summary, bl_err *err)
{
	struct calib_set cs;
	int rc;

	if ((rc = machine_load(path, c->m, err)) || (rc = calib_load_machine(c->m, &cs, err)))
		return rc;
	calib_set_warn(&cs);
	calib_set_free(&cs);
	/* planner.egress is the sandbox's to read: checked by its reader, as a run checks it. */
	if (c->m->planner.egress_json[0]) {
		struct egress_policy pol;
		cJSON *eg = cJSON_Parse(c->m->planner.egress_json);
		char where[4200];

		snprintf(where, sizeof(where), "%s: planner.egress", path);
		rc = eg ? egress_policy_from_json(eg, where, &pol, err) : bl_fail(err, BL_ENOMEM, "out of memory");
		cJSON_Delete(eg);
		if (rc)
			return rc;
	}
	c->have_machine = 1;
	*summary = machine_summary(c->m);
	return 0;
}

static int check_palette(struct check_ctx *c, const char *path, char **summary, bl_err *err)
{
	int rc = palette_load(path, c->p, err);

	if (rc)
		return rc;
	c->pal_files[c->npal++] = (char *)path;
	*summary = palette_summary(c->p);
	return 0;
}

static int check_canvas(struct check_ctx *c, const char *path, char **summary, bl_err *err)
{
	struct vis_canvas v;
	strbuf sb;
	int rc = vis_canvas_load(path, &v, err);

	(void)c;
	if (rc)
		return rc;
	sb_init(&sb);
	sb_printf(&sb, "canvas (%s): %g x %g mm in %dx%d px frames\n", path, v.size_mm[0],
		  v.size_mm[1], v.image_w, v.image_h);
	*summary = sb_take(&sb);
	return 0;
}

static int check_light(struct check_ctx *c, const char *path, char **summary, bl_err *err)
{
	struct vis_light l;
	strbuf sb;
	int rc = vis_light_load(path, &l, err);

	(void)c;
	if (rc)
		return rc;
	sb_init(&sb);
	sb_printf(&sb, "light map (%s): %d x %d cells over %dx%d px\n", path, l.cols, l.rows,
		  l.width, l.height);
	vis_light_free(&l);
	*summary = sb_take(&sb);
	return 0;
}

static int check_arm(struct check_ctx *c, const char *path, char **summary, bl_err *err)
{
	struct calib_arm a;
	strbuf sb;
	int rc = calib_arm_load(path, &a, err);

	(void)c;
	if (rc)
		return rc;
	sb_init(&sb);
	sb_printf(&sb, "arm registration (%s): %d points, max residual %.3f mm\n", path, a.n,
		  a.max_mm);
	*summary = sb_take(&sb);
	return 0;
}

static int check_arm_points(struct check_ctx *c, const char *path, char **summary, bl_err *err)
{
	double canvas_mm[CALIB_ARM_MAX_POINTS][2];
	arm_point arm_mm[CALIB_ARM_MAX_POINTS];
	strbuf sb;
	int n = 0, rc = calib_arm_points_load(path, &n, canvas_mm, arm_mm, err);

	(void)c;
	if (rc)
		return rc;
	sb_init(&sb);
	sb_printf(&sb, "arm points (%s): %d pairs\n", path, n);
	*summary = sb_take(&sb);
	return 0;
}

/* The actions' form; their limits need a machine and are `gate check`'s. */
static int check_actions(struct check_ctx *c, const char *path, char **summary, bl_err *err)
{
	struct arm_action_list l;
	strbuf sb;
	int rc = arm_actions_load(path, &l, err);

	(void)c;
	if (rc)
		return rc;
	sb_init(&sb);
	sb_printf(&sb, "actions (%s): %zu well formed\n", path, l.n);
	arm_actions_free(&l);
	*summary = sb_take(&sb);
	return 0;
}

static const struct {
	const char *kind;
	check_fn check;
} kinds[] = {
	{ "machine", check_machine },     { "palette", check_palette },
	{ "canvas", check_canvas },       { "light-map", check_light },
	{ "arm-calibration", check_arm }, { "arm-points", check_arm_points },
	{ "actions", check_actions },
};

#define N_KINDS (sizeof(kinds) / sizeof(kinds[0]))

/* Reads only the "kind" key, to know which validator reads the file. */
static int file_kind(const char *path, size_t *which, bl_err *err)
{
	char list[160] = "";
	const cJSON *k;
	cJSON *doc;
	int rc = json_parse_file(path, &doc, err);

	if (rc)
		return rc;
	for (size_t i = 0; i < N_KINDS; i++)
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
			 kinds[i].kind);
	k = cJSON_IsObject(doc) ? cJSON_GetObjectItemCaseSensitive(doc, "kind") : NULL;
	rc = bl_fail(err, BL_EINVAL, "%s: kind: missing; a config file says \"kind\": one of %s",
		     path, list);
	for (size_t i = 0; cJSON_IsString(k) && i < N_KINDS; i++)
		if (strcmp(k->valuestring, kinds[i].kind) == 0) {
			*which = i;
			rc = 0;
		}
	if (rc && cJSON_IsString(k))
		rc = bl_fail(err, BL_EINVAL, "%s: kind: not a config file kind (%s)", path, list);
	cJSON_Delete(doc);
	return rc;
}

enum check_opt {
	CHECK_JSON,
	CHECK_OPT_COUNT
};

static const struct cli_opt check_opts[CHECK_OPT_COUNT] = {
	[CHECK_JSON] = CLI_OPT_JSON,
};
static const struct cli_optset check_set = { "config check", check_opts, CHECK_OPT_COUNT, 0, NULL };

static int config_check(const struct cli_command *cmd, int argc, char **argv)
{
	struct cli_optparse p;
	struct check_ctx c = { 0 };
	cJSON *out = NULL, *files = NULL;
	bl_err err = { 0 };
	int json = 0, opt, status = 0;

	cli_opt_start(&p, cmd, &check_set, argc, argv);
	while ((opt = cli_opt_next(&p)) != CLI_OPT_END) {
		if (opt == CLI_OPT_BAD)
			return BL_EXIT_USAGE;
		json = opt == CHECK_JSON;
	}
	if (p.ind >= argc)
		return cli_usage(cmd, "config check needs at least one file");
	c.m = calloc(1, sizeof(*c.m));
	c.p = calloc(1, sizeof(*c.p));
	c.pal_files = calloc((size_t)argc, sizeof(*c.pal_files));
	if (!c.m || !c.p || !c.pal_files) {
		status = 1;
		goto out_free;
	}
	if (json) {
		out = cJSON_CreateObject();
		files = cJSON_AddArrayToObject(out, "files");
	}
	for (int i = p.ind; i < argc; i++) {
		char *summary = NULL;
		size_t k = 0;
		int rc = file_kind(argv[i], &k, &err);

		if (rc == 0 && kinds[k].check == check_machine && c.have_machine) {
			status = cli_usage(cmd, "%s: give at most one machine file", argv[i]);
			goto out_free;
		}
		if (rc == 0)
			rc = kinds[k].check(&c, argv[i], &summary, &err);
		if (rc) {
			status = cli_fail(&err);
			goto out_free;
		}
		if (json) {
			cJSON *f = cJSON_CreateObject();

			cJSON_AddStringToObject(f, "file", argv[i]);
			cJSON_AddStringToObject(f, "kind", kinds[k].kind);
			cJSON_AddStringToObject(f, "summary", summary ? summary : "");
			cJSON_AddItemToArray(files, f);
		} else if (summary) {
			fputs(summary, stdout);
		}
		free(summary);
	}
	/* Palettes given with a machine must fit it: every paint in a well that exists. */
	for (int i = 0; c.have_machine && i < c.npal; i++) {
		if (palette_load(c.pal_files[i], c.p, &err) || palette_check_machine(c.p, c.m, &err)) {
			status = cli_fail(&err);
			goto out_free;
		}
	}
	if (json) {
		cJSON_AddBoolToObject(out, "valid", 1);
		status = cli_print_json(out);
		out = NULL;
	} else {
		printf("ok: %d file%s valid\n", argc - p.ind, argc - p.ind == 1 ? "" : "s");
	}
out_free:
	cJSON_Delete(out);
	free(c.pal_files);
	free(c.p);
	free(c.m);
	return status;
}

int cli_config_main(int argc, char **argv)
{
	const struct cli_command *cmd = cli_find("config");

	if (argc < 2 || strcmp(argv[1], "check") != 0)
		return cli_usage(cmd, "config needs a subcommand: check");
	return config_check(cmd, argc - 1, argv + 1);
}

const struct cli_optset *const cli_config_sets[] = { &check_set, NULL };

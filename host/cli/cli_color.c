/* cli_color.c: `brushloop color`: CIEDE2000 differences and conversions between colour spaces. */
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "color/color.h"

static cJSON *lab_json(const color_lab *c)
{
	const double v[3] = { c->L, c->a, c->b };
	cJSON *o = cJSON_CreateObject();

	if (o && !json_add_vec(o, "lab", v, 3)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

enum diff_opt {
	DIFF_KL, DIFF_KC, DIFF_KH, DIFF_JSON,
	DIFF_OPT_COUNT
};

static const struct cli_opt diff_opts[DIFF_OPT_COUNT] = {
	[DIFF_KL] = { "kl", 0, "K", "CIEDE2000 lightness weight (default 1)", 0 },
	[DIFF_KC] = { "kc", 0, "K", "CIEDE2000 chroma weight (default 1)", 0 },
	[DIFF_KH] = { "kh", 0, "K", "CIEDE2000 hue weight (default 1)", 0 },
	[DIFF_JSON] = CLI_OPT_JSON,
};
static const struct cli_optset diff_set = { "color diff", diff_opts, DIFF_OPT_COUNT, 0, NULL };

static int color_diff(const struct cli_command *cmd, int argc, char **argv)
{
	struct cli_optparse p;
	double k[3] = { 1.0, 1.0, 1.0 };
	color_lab a, b;
	bl_err err = { 0 };
	int json = 0, opt;
	double de;

	cli_opt_start(&p, cmd, &diff_set, argc, argv);
	while ((opt = cli_opt_next(&p)) != CLI_OPT_END) {
		int idx = opt == DIFF_KL ? 0 : opt == DIFF_KC ? 1 : 2;

		if (opt == CLI_OPT_BAD)
			return BL_EXIT_USAGE;

		switch ((enum diff_opt)opt) {
		case DIFF_KL:
		case DIFF_KC:
		case DIFF_KH:
			if (cli_opt_double(&p, &k[idx]))
				return BL_EXIT_USAGE;
			if (k[idx] <= 0.0)
				return cli_usage(cmd, "--%s must be positive", p.name);
			break;
		case DIFF_JSON:
			json = 1;
			break;
		case DIFF_OPT_COUNT:
			break;
		}
	}
	if (argc - p.ind != 2)
		return cli_usage(cmd, "color diff takes two colours");
	if (color_parse(argv[p.ind], &a, &err) || color_parse(argv[p.ind + 1], &b, &err))
		return cli_fail(&err);
	de = color_de2000(&a, &b, k[0], k[1], k[2]);
	if (json) {
		cJSON *o = cJSON_CreateObject();

		if (!o)
			return 1;
		cJSON_AddNumberToObject(o, "de00", de);
		cJSON_AddItemToObject(o, "a", lab_json(&a));
		cJSON_AddItemToObject(o, "b", lab_json(&b));
		json_add_vec(o, "k", k, 3);
		return cli_print_json(o);
	}
	printf("%.4f\n", de);
	return 0;
}

enum convert_opt {
	CONVERT_TO, CONVERT_JSON,
	CONVERT_OPT_COUNT
};

static const struct cli_opt convert_opts[CONVERT_OPT_COUNT] = {
	[CONVERT_TO] = { "to", 0, "SPACE", "the space to convert to: lab, srgb or xyz", 0 },
	[CONVERT_JSON] = CLI_OPT_JSON,
};
static const struct cli_optset convert_set = { "color convert", convert_opts, CONVERT_OPT_COUNT, 0, NULL };

static int color_convert(const struct cli_command *cmd, int argc, char **argv)
{
	struct cli_optparse p;
	static const char *const spaces[] = { "lab", "srgb", "xyz", NULL };
	const char *to = NULL;
	bl_err err = { 0 };
	color_lab lab;
	int json = 0, opt, space = -1;
	cJSON *o = NULL;

	cli_opt_start(&p, cmd, &convert_set, argc, argv);
	while ((opt = cli_opt_next(&p)) != CLI_OPT_END) {
		if (opt == CLI_OPT_BAD)
			return BL_EXIT_USAGE;
		switch ((enum convert_opt)opt) {
		case CONVERT_TO:
			to = p.arg;
			break;
		case CONVERT_JSON:
			json = 1;
			break;
		case CONVERT_OPT_COUNT:
			break;
		}
	}
	if (argc - p.ind != 1)
		return cli_usage(cmd, "color convert takes one colour");
	if (!to)
		return cli_usage(cmd, "color convert needs --to lab|srgb|xyz");
	for (int i = 0; spaces[i]; i++)
		if (strcmp(to, spaces[i]) == 0)
			space = i;
	if (space < 0)
		return cli_usage(cmd, "--to: '%s' is not one of lab, srgb, xyz", to);
	if (color_parse(argv[p.ind], &lab, &err))
		return cli_fail(&err);
	if (json) {
		o = cJSON_CreateObject();
		if (!o)
			return 1;
		cJSON_AddStringToObject(o, "space", to);
	}
	if (space == 0) {
		const double v[3] = { lab.L, lab.a, lab.b };

		if (o)
			json_add_vec(o, "lab", v, 3);
		else
			printf("lab:%.4f,%.4f,%.4f\n", lab.L, lab.a, lab.b);
	} else if (space == 1) {
		color_rgb rgb;
		unsigned char u8[3];
		int in_gamut;

		if (color_lab_to_srgb(&lab, &rgb, &in_gamut, &err))
			return cli_fail(&err);
		color_rgb_to_u8(&rgb, u8);
		if (o) {
			const double v[3] = { rgb.r, rgb.g, rgb.b };
			char hex[8];

			snprintf(hex, sizeof(hex), "#%02x%02x%02x", u8[0], u8[1], u8[2]);
			json_add_vec(o, "srgb", v, 3);
			cJSON_AddStringToObject(o, "hex", hex);
			cJSON_AddBoolToObject(o, "in_gamut", in_gamut);
		} else {
			printf("srgb:%d,%d,%d #%02x%02x%02x%s\n", u8[0], u8[1], u8[2], u8[0], u8[1],
			       u8[2], in_gamut ? "" : " (out of sRGB gamut, clipped)");
		}
	} else {
		color_xyz xyz;

		color_lab_to_xyz(&lab, &xyz);
		if (o) {
			const double v[3] = { xyz.X, xyz.Y, xyz.Z };

			json_add_vec(o, "xyz", v, 3);
		} else {
			printf("xyz:%.4f,%.4f,%.4f\n", xyz.X, xyz.Y, xyz.Z);
		}
	}
	return o ? cli_print_json(o) : 0;
}

int cli_color_main(int argc, char **argv)
{
	const struct cli_command *cmd = cli_find("color");

	if (argc < 2)
		return cli_usage(cmd, "color needs a subcommand: diff or convert");
	if (strcmp(argv[1], "diff") == 0)
		return color_diff(cmd, argc - 1, argv + 1);
	if (strcmp(argv[1], "convert") == 0)
		return color_convert(cmd, argc - 1, argv + 1);
	return cli_usage(cmd, "unknown color subcommand '%s'", argv[1]);
}

const struct cli_optset *const cli_color_sets[] = { &diff_set, &convert_set, NULL };

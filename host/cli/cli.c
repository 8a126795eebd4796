/* cli.c: the command table and shared helpers of the brushloop CLI. */
#include "cli/cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct cli_command cli_commands[] = {
	{ "help", "show the commands, or one command's usage",
	  "usage: brushloop help [COMMAND]\n", cli_help_main },
	{ "color", "colour arithmetic: CIEDE2000 differences and conversions",
	  "usage: brushloop color diff A B [--kl K] [--kc K] [--kh K] [--json]\n"
	  "       brushloop color convert COLOR --to lab|srgb|xyz [--json]\n"
	  "\n"
	  "Colours are written lab:L,a,b (CIELAB, D50), srgb:R,G,B (0-255) or #rrggbb.\n"
	  "diff prints the CIEDE2000 difference with 4 decimals; --kl, --kc, --kh set its\n"
	  "weighting factors (default 1). convert prints the colour in another space:\n"
	  "lab (D50), srgb (0-255, clipped, with a note when out of gamut) or xyz (D50,\n"
	  "Y of white 100).\n",
	  cli_color_main },
	{ "config", "validate machine and palette files",
	  "usage: brushloop config check FILE... [--json]\n"
	  "\n"
	  "Validates each file strictly (its \"kind\" says whether it is a machine or a\n"
	  "palette) and prints a normalised summary. With a machine and palettes given\n"
	  "together, also checks that every paint's well exists on the machine.\n"
	  "Exit 0 when all are valid, 2 with a message naming the file and key otherwise.\n",
	  cli_config_main },
	{ "bench", "run the built-in benchmarks (median of several runs)",
	  "usage: brushloop bench [NAME...] [--runs N] [--json]\n"
	  "\n"
	  "Runs the built-in benchmarks and prints one figure a line, 'name: value unit',\n"
	  "the median of N runs (each benchmark has its own default). A NAME selects one\n"
	  "benchmark, or all of a part ('sim' selects sim.*). --json prints a list of\n"
	  "{\"name\", \"value\", \"unit\", \"runs\"}. The machine is shared and noisy: compare\n"
	  "figures from one run, not against remembered numbers.\n",
	  cli_bench_main },
	{ "sim", "the simulator: render camera frames, execute actions on the simulated arm",
	  "usage: brushloop sim render [--machine M] [--seed S] [--scene canvas|swatches|chart]\n"
	  "                            [--world FILE] [--fault KEY=VALUE]... -o FRAME.jpg\n"
	  "                            [--truth TRUTH.json] [--json]\n"
	  "       brushloop sim exec ACTIONS.json [--machine M] [--seed S] [--world FILE]\n"
	  "                            [--frames DIR] [--scene S] [--fault KEY=VALUE]... [--json]\n"
	  "\n"
	  "render captures one frame of the simulated camera as JPEG. --scene picks what it\n"
	  "shows: canvas (the world as it is, default), swatches (its wells and mixing cells;\n"
	  "a fresh world shows seeded test mixes in them) or chart (a ColorChecker 24 laid on\n"
	  "the canvas). --truth writes where each patch lies in the image and its true\n"
	  "colour: {\"patches\": [{\"name\", \"roi\": [x, y, w, h], \"lab\": [L, a, b]}], ...}\n"
	  "(CIELAB D50, what a spectrophotometer reads). See docs/sim.md.\n"
	  "\n"
	  "exec executes an actions file (docs/actions.md) on the simulated arm and reports\n"
	  "the simulated time it took; nothing runs unless the whole file is valid. The arm\n"
	  "starts unhomed: the file begins with a \"home\" action. --frames saves a frame\n"
	  "after each action in DIR (after-NNNN.jpg).\n"
	  "\n"
	  "--machine defaults to examples/machine-sim.json; --seed (default 1) seeds the\n"
	  "paint batch and every noise. --world FILE loads the simulated world from FILE if\n"
	  "it exists, and exec saves it after every action, so a run continues where the\n"
	  "last one stopped (a world keeps its seed). --fault KEY=VALUE overrides one of\n"
	  "sim.faults: drop_frames, corrupt_frames, command_failures (rates 0..1),\n"
	  "stall_at_s, dry_well, dry_well_ml, power_loss_after (the process exits at once\n"
	  "with status 86 after that many actions of the world). Exit status: 0 done, 1 a\n"
	  "runtime failure (a failed command, a dropped frame), 2 invalid input, 3 held,\n"
	  "5 the arm stalled or refused to move unhomed.\n",
	  cli_sim_main },
	{ NULL, NULL, NULL, NULL },
};

const struct cli_command *cli_find(const char *name)
{
	for (const struct cli_command *c = cli_commands; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

int cli_fail(const bl_err *err)
{
	fprintf(stderr, "brushloop: error: %s\n", err->msg[0] ? err->msg : bl_strerror(err->code));
	return bl_exit_status(err->code);
}

int cli_usage(const struct cli_command *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "brushloop: error: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n(see 'brushloop %s --help')\n", cmd ? cmd->name : "help");
	return BL_EXIT_USAGE;
}

int cli_print_json(cJSON *obj)
{
	char *s = obj ? cJSON_Print(obj) : NULL;

	cJSON_Delete(obj);
	if (!s) {
		fprintf(stderr, "brushloop: error: out of memory printing JSON\n");
		return BL_EXIT_FAIL;
	}
	puts(s);
	cJSON_free(s);
	return 0;
}

int cli_parse_double(const char *opt, const char *text, double *out, bl_err *err)
{
	char *end;

	errno = 0;
	*out = strtod(text, &end);
	if (end == text || *end || errno == ERANGE || !isfinite(*out))
		return bl_fail(err, BL_EINVAL, "%s: '%s' is not a finite number", opt, text);
	return 0;
}

int cli_parse_long(const char *opt, const char *text, long lo, long hi, long *out, bl_err *err)
{
	char *end;

	errno = 0;
	*out = strtol(text, &end, 10);
	if (end == text || *end || errno == ERANGE)
		return bl_fail(err, BL_EINVAL, "%s: '%s' is not an integer", opt, text);
	if (*out < lo || *out > hi)
		return bl_fail(err, BL_EINVAL, "%s: %ld is outside %ld..%ld", opt, *out, lo, hi);
	return 0;
}

int cli_help_main(int argc, char **argv)
{
	const struct cli_command *c;

	if (argc > 2)
		return cli_usage(cli_find("help"), "help takes at most one command");
	if (argc == 2) {
		c = cli_find(argv[1]);
		if (!c)
			return cli_usage(NULL, "unknown command '%s'", argv[1]);
		fputs(c->usage, stdout);
		return 0;
	}
	printf("usage: brushloop [--version] COMMAND [ARGS]\n\n"
	       "brushloop paints pictures with a robotic arm, checking every mix and every\n"
	       "layer with a camera. Commands:\n\n");
	for (c = cli_commands; c->name; c++)
		printf("  %-10s %s\n", c->name, c->summary);
	printf("\n'brushloop COMMAND --help' shows one command's usage. Exit codes: 0 done,\n"
	       "1 runtime failure, 2 usage or invalid input, 3 paused for an operator,\n"
	       "4 stopped by a brake, 5 safety stop.\n");
	return 0;
}

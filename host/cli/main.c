/* main.c: the brushloop binary: dispatches to a subcommand in the manner of git. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_opt.h"

#ifndef BL_VERSION
#define BL_VERSION "unknown"
#endif

int main(int argc, char **argv)
{
	const struct cli_command *cmd;

	/*
	 * Past a file-size limit (RLIMIT_FSIZE) the kernel sends SIGXFSZ, whose
	 * default ends the process without a word: ignored, the write fails with
	 * EFBIG and reaches the storage-error path, which says so and pauses.
	 */
	signal(SIGXFSZ, SIG_IGN);
	/*
	 * A reader that closed the pipe brushloop prints into (`brushloop run
	 * ... | head`) costs the output, never the process: a finished run
	 * ended with 141 looks like one that died.
	 */
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2) {
		cli_help_main(1, argv);
		return 2;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		printf("brushloop %s\n", BL_VERSION);
		return 0;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return cli_help_main(1, argv);
	cmd = cli_find(argv[1]);
	if (!cmd)
		return cli_usage(NULL, "unknown command '%s'", argv[1]);
	/* COMMAND --help anywhere among its arguments shows its usage. */
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			break;
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			/* A verb's own ("calib camera --help"): its forms and options alone. */
			const struct cli_optset *verb = argc > 2 ? cli_verb_set(cmd, argv[2]) : NULL;

			if (verb)
				cli_print_verb_usage(stdout, cmd, verb);
			else
				cli_print_usage(stdout, cmd);
			return 0;
		}
	}
	return cmd->run(argc - 1, argv + 1);
}

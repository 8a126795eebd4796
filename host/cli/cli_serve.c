/* cli_serve.c: `brushloop serve`: the web console until SIGINT or SIGTERM. */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "serve/serve.h"

int cli_serve_main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "runs", required_argument, NULL, 'r' },
		{ "listen", required_argument, NULL, 'l' },
		{ "read-only", no_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const struct cli_command *cmd = cli_find("serve");
	struct serve_options o = { 0 };
	struct serve *s = NULL;
	bl_err err = { 0 };
	char url[512];
	sigset_t stop;
	int opt, sig = 0;

	optind = 0;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'r': o.runs_dir = optarg; break;
		case 'l': o.listen = optarg; break;
		case 'o': o.read_only = 1; break;
		case 'h': printf("%s", cmd->usage); return 0;
		default: return cli_usage(cmd, "bad option");
		}
	}
	if (argc - optind > SERVE_MAX_RUNS)
		return cli_usage(cmd, "at most %d RUN_DIRs", SERVE_MAX_RUNS);
	for (int i = optind; i < argc; i++)
		o.run_dirs[o.n_run_dirs++] = argv[i];
	if (!o.runs_dir && !o.n_run_dirs)
		return cli_usage(cmd, "serve needs --runs DIR or at least one RUN_DIR");
	/* Blocked before the server's threads start, so only this thread takes them, in sigwait. */
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	if (serve_start(&o, &s, &err))
		return cli_fail(&err);
	serve_url(s, url, sizeof(url));
	printf("brushloop: the console%s is at\n%s\n", o.read_only ? " (read-only)" : "", url);
	fflush(stdout);
	sigwait(&stop, &sig);
	fprintf(stderr, "brushloop: %s: the console stops\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
	serve_stop(s);
	return 0;
}

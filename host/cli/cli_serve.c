/* cli_serve.c: `brushloop serve`: the web console until SIGINT or SIGTERM. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "serve/serve.h"

enum serve_opt {
	SERVE_RUNS, SERVE_LISTEN, SERVE_ALLOW_REMOTE, SERVE_READ_ONLY,
	SERVE_OPT_COUNT
};

static const struct cli_opt serve_opts[SERVE_OPT_COUNT] = {
	[SERVE_RUNS] = { "runs", 0, "DIR", "serve every run directory under DIR", 0 },
	[SERVE_LISTEN] = { "listen", 0, "HOST:PORT", "address to listen on (default 127.0.0.1:8080)", 0 },
	[SERVE_ALLOW_REMOTE] = { "allow-remote", 0, NULL, "let --listen be an address other than loopback", 0 },
	[SERVE_READ_ONLY] = { "read-only", 0, NULL, "no buttons, every POST refused", 0 },
};
static const struct cli_optset serve_set = { "serve", serve_opts, SERVE_OPT_COUNT, 0, NULL };

int cli_serve_main(int argc, char **argv)
{
	struct cli_optparse p;
	const struct cli_command *cmd = cli_find("serve");
	struct serve_options o = { 0 };
	struct serve *s = NULL;
	bl_err err = { 0 };
	char url[512];
	sigset_t stop;
	int opt, sig = 0;

	cli_opt_start(&p, cmd, &serve_set, argc, argv);
	while ((opt = cli_opt_next(&p)) != CLI_OPT_END) {
		if (opt == CLI_OPT_BAD)
			return BL_EXIT_USAGE;
		switch ((enum serve_opt)opt) {
		case SERVE_RUNS: o.runs_dir = p.arg; break;
		case SERVE_LISTEN: o.listen = p.arg; break;
		case SERVE_ALLOW_REMOTE: o.allow_remote = 1; break;
		case SERVE_READ_ONLY: o.read_only = 1; break;
		case SERVE_OPT_COUNT:
			break;
		}
	}
	if (argc - p.ind > SERVE_MAX_RUNS)
		return cli_usage(cmd, "at most %d RUN_DIRs", SERVE_MAX_RUNS);
	for (int i = p.ind; i < argc; i++)
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
	if (!serve_loopback(s))
		fprintf(stderr,
			"brushloop: WARNING: the console listens on %s, not on loopback: anyone who can reach that "
			"address can try its token, and the token and cookie travel unencrypted (plain HTTP)\n",
			o.listen);
	serve_url(s, url, sizeof(url));
	printf("brushloop: the console%s is at\n%s\n", o.read_only ? " (read-only)" : "", url);
	fflush(stdout);
	sigwait(&stop, &sig);
	fprintf(stderr, "brushloop: %s: the console stops\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
	serve_stop(s);
	return 0;
}

const struct cli_optset *const cli_serve_sets[] = { &serve_set, NULL };

/* cli_approve.c: `brushloop approve`: answers a request a running or paused run waits on, from another process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "safety/operator.h"

void cli_operator_name(char *out, size_t n)
{
	const char *user = getenv("USER");

	snprintf(out, n, "%s (pid %ld)", user && *user ? user : "unknown user", (long)getpid());
}

enum approve_opt {
	APPROVE_DENY, APPROVE_ALL, APPROVE_JSON,
	APPROVE_OPT_COUNT
};

static const struct cli_opt approve_opts[APPROVE_OPT_COUNT] = {
	[APPROVE_DENY] = { "deny", 0, NULL, "answer no", 0 },
	[APPROVE_ALL] = { "all", 0, NULL, "every request (approve: answer all that wait; pending: answered ones too)", 0 },
	[APPROVE_JSON] = CLI_OPT_JSON,
};
static const struct cli_optset approve_set = { "approve", approve_opts, APPROVE_OPT_COUNT, 0, NULL };

int cli_approve_main(int argc, char **argv)
{
	struct cli_optparse p;
	const struct cli_command *cmd = cli_find("approve");
	struct gate_request *l = NULL;
	size_t n = 0, bad, waiting = 0;
	bl_err err = { 0 };
	int deny = 0, all = 0, json = 0, opt, status = 0;
	const char *run_dir, *id = NULL;
	char by[128];
	cJSON *root = NULL, *arr = NULL;

	cli_opt_start(&p, cmd, &approve_set, argc, argv);
	while ((opt = cli_opt_next(&p)) != CLI_OPT_END) {
		if (opt == CLI_OPT_BAD)
			return BL_EXIT_USAGE;
		if (opt == APPROVE_DENY)
			deny = 1;
		else if (opt == APPROVE_ALL)
			all = 1;
		else if (opt == APPROVE_JSON)
			json = 1;
	}
	if (p.ind >= argc || argc - p.ind > 2)
		return cli_usage(cmd, "approve needs RUN_DIR and at most one request ID");
	run_dir = argv[p.ind];
	if (argc - p.ind == 2)
		id = argv[p.ind + 1];
	if (id && all)
		return cli_usage(cmd, "give a request ID or --all, not both");
	if (cli_run_dir_ok(run_dir, &err))
		return cli_fail(&err);
	cli_operator_name(by, sizeof(by));
	if (json) {
		root = cJSON_CreateObject();
		arr = cJSON_AddArrayToObject(root, "answered");
	}
	if (!id) {
		/* No id: the one request waiting, or all of them with --all; never a guess among several. */
		if (gate_requests_list(run_dir, &l, &n, &bad, NULL, &err)) {
			cJSON_Delete(root);
			return cli_fail(&err);
		}
		for (size_t i = 0; i < n; i++)
			waiting += gate_request_waiting(&l[i]);
		if (waiting == 0) {
			fprintf(stderr, "brushloop: error: %s: no request is waiting for an answer\n",
				run_dir);
			status = BL_EXIT_USAGE;
			goto out;
		}
		if (waiting > 1 && !all) {
			fprintf(stderr, "brushloop: error: %zu requests are waiting:", waiting);
			for (size_t i = 0; i < n; i++)
				if (gate_request_waiting(&l[i]))
					fprintf(stderr, " %s", l[i].id);
			fprintf(stderr, "\ngive one ID, or --all (see 'brushloop pending %s')\n", run_dir);
			status = BL_EXIT_USAGE;
			goto out;
		}
	}
	for (size_t i = 0; i < (id ? 1 : n); i++) {
		const char *rid = id ? id : l[i].id;

		if (!id && !gate_request_waiting(&l[i]))
			continue;
		if (gate_request_answer(run_dir, rid, !deny, by, &err)) {
			status = cli_fail(&err);
			goto out;
		}
		if (json) {
			cJSON *a = cJSON_CreateObject();

			cJSON_AddStringToObject(a, "id", rid);
			cJSON_AddStringToObject(a, "answer", deny ? "no" : "yes");
			cJSON_AddItemToArray(arr, a);
		} else {
			printf("%s: %s\n", rid, deny ? "denied" : "approved");
		}
	}
	if (json) {
		status = cli_print_json(root) ? BL_EXIT_FAIL : 0;
		root = NULL;
	}
out:
	cJSON_Delete(root);
	gate_requests_free(l, n);
	return status;
}

const struct cli_optset *const cli_approve_sets[] = { &approve_set, NULL };

/* cli_pending.c: `brushloop pending`: the approval requests a running or paused run waits on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/json.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "safety/operator.h"

int cli_run_dir_ok(const char *dir, bl_err *err)
{
	struct stat st;

	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return bl_fail(err, BL_EINVAL, "%s: not a run directory (no such directory)", dir);
	return 0;
}

static void request_text(const char *run_dir, const struct gate_request *r)
{
	printf("%s  %s", r->id, r->kind >= 0 ? arm_kind_names[r->kind] : "?");
	if (r->action_id >= 0)
		printf(" id=%ld", r->action_id);
	printf("  from (%.1f, %.1f, %.1f) to (%.1f, %.1f, %.1f) mm at %g mm/s, zones", r->from.x,
	       r->from.y, r->from.z, r->to.x, r->to.y, r->to.z, r->speed_mm_s);
	for (int k = 0; k < ARM_ZONE_COUNT; k++)
		if (r->zones & (1u << k))
			printf(" %s", arm_zone_names[k]);
	if (!gate_request_waiting(r))
		printf("  [%s%s%s]", gate_req_status_names[r->status], r->answered ? ", answered " : "",
		       r->answered ? (r->approved ? "yes" : "no") : "");
	printf("\n");
	for (int i = 0; i < r->n_why; i++)
		printf("         why: %s: %s\n", gate_reason_names[r->why[i].reason], r->why[i].detail);
	if (r->preview[0])
		printf("         preview: %s/approvals/%s\n", run_dir, r->preview);
}

enum pending_opt {
	PENDING_JSON, PENDING_ALL,
	PENDING_OPT_COUNT
};

static const struct cli_opt pending_opts[PENDING_OPT_COUNT] = {
	[PENDING_JSON] = CLI_OPT_JSON,
	[PENDING_ALL] = { "all", 0, NULL, "answered and closed requests too", 0 },
};
static const struct cli_optset pending_set = { "pending", pending_opts, PENDING_OPT_COUNT, 0, NULL };

int cli_pending_main(int argc, char **argv)
{
	struct cli_optparse p;
	const struct cli_command *cmd = cli_find("pending");
	struct gate_request *l;
	size_t n, bad, shown = 0;
	bl_err err = { 0 }, berr = { 0 };
	int json = 0, all = 0, opt;
	cJSON *root = NULL, *arr = NULL;

	cli_opt_start(&p, cmd, &pending_set, argc, argv);
	while ((opt = cli_opt_next(&p)) != CLI_OPT_END) {
		if (opt == CLI_OPT_BAD)
			return BL_EXIT_USAGE;
		if (opt == PENDING_JSON)
			json = 1;
		else if (opt == PENDING_ALL)
			all = 1;
	}
	if (p.ind + 1 != argc)
		return cli_usage(cmd, "pending needs exactly one RUN_DIR");
	if (cli_run_dir_ok(argv[p.ind], &err) ||
	    gate_requests_list(argv[p.ind], &l, &n, &bad, &berr, &err))
		return cli_fail(&err);
	if (bad)
		fprintf(stderr, "brushloop: warning: %zu request file(s) do not load (first: %s)\n",
			bad, berr.msg);
	if (json) {
		root = cJSON_CreateObject();
		cJSON_AddStringToObject(root, "run_dir", argv[p.ind]);
		arr = cJSON_AddArrayToObject(root, all ? "requests" : "pending");
	}
	for (size_t i = 0; i < n; i++) {
		if (!all && !gate_request_waiting(&l[i]))
			continue;
		shown++;
		if (json)
			cJSON_AddItemToArray(arr, gate_request_json(&l[i]));
		else
			request_text(argv[p.ind], &l[i]);
	}
	gate_requests_free(l, n);
	if (json) {
		cJSON_AddNumberToObject(root, "unreadable", (double)bad);
		return cli_print_json(root) ? BL_EXIT_FAIL : 0;
	}
	if (!shown)
		printf("no %srequests in %s\n", all ? "" : "pending ", argv[p.ind]);
	return 0;
}

const struct cli_optset *const cli_pending_sets[] = { &pending_set, NULL };

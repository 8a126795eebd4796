/* cli_grant.c: `brushloop grant`: a scoped, time-limited permission for a run, its list and its revocation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "config/machine.h"
#include "safety/operator.h"

static void names(unsigned bits, const char *const *list, int count, char *out, size_t n)
{
	size_t used = 0;

	out[0] = '\0';
	for (int k = 0; k < count && used < n; k++)
		if (bits & (1u << k))
			used += (size_t)snprintf(out + used, n - used, "%s%s", used ? "," : "", list[k]);
}

static int list_grants(const char *run_dir, int json)
{
	struct gate_grants gs;
	bl_err err = { 0 };
	int64_t now = clk_wall_ms();
	cJSON *root = NULL, *arr = NULL;

	if (gate_grants_load(run_dir, &gs, &err))
		return cli_fail(&err);
	for (size_t i = 0; i < gs.n_bad && i < sizeof(gs.bad) / sizeof(gs.bad[0]); i++)
		fprintf(stderr, "brushloop: warning: ignored: %s\n", gs.bad[i]);
	if (json) {
		root = cJSON_CreateObject();
		arr = cJSON_AddArrayToObject(root, "grants");
		cJSON_AddNumberToObject(root, "malformed", (double)gs.n_bad);
	}
	for (size_t i = 0; i < gs.n; i++) {
		const struct gate_grant *g = &gs.g[i];
		char k[256], z[128];
		double left = gate_grant_wall_left_s(g, now);

		if (json) {
			cJSON_AddItemToArray(arr, gate_grant_json(g, now));
			continue;
		}
		names(g->kinds, arm_kind_names, ARM_KIND_COUNT, k, sizeof(k));
		names(g->zones, arm_zone_names, ARM_ZONE_COUNT, z, sizeof(z));
		if (g->egress[0])
			printf("%s  egress %s for the planner, for %g s: %s", g->id, g->egress, g->for_s,
			       g->revoked ? "revoked" : left > 0 ? "active" : "expired");
		else
			printf("%s  kinds %s, zones %s, up to %g mm/s, for %g s: %s", g->id, k, z,
			       g->max_speed_mm_s, g->for_s,
			       g->revoked ? "revoked" : left > 0 ? "active" : "expired");
		if (!g->revoked && left > 0)
			printf(" (%.0f s left by the wall clock)", left);
		printf("  (by %s)\n", g->by);
	}
	if (!json && gs.n == 0)
		printf("no grants in %s\n", run_dir);
	gate_grants_free(&gs);
	return json ? (cli_print_json(root) ? BL_EXIT_FAIL : 0) : 0;
}

enum grant_opt {
	GRANT_KINDS, GRANT_ZONE, GRANT_MAX_SPEED, GRANT_EGRESS, GRANT_FOR, GRANT_MACHINE, GRANT_LIST, GRANT_REVOKE, GRANT_JSON,
	GRANT_OPT_COUNT
};

static const struct cli_opt grant_opts[GRANT_OPT_COUNT] = {
	[GRANT_KINDS] = { "kinds", 0, "K[,K...]", "the action kinds granted", 0 },
	[GRANT_ZONE] = { "zone", 0, "Z[,Z...]", "the zones the actions may go down in", 0 },
	[GRANT_MAX_SPEED] = { "max-speed", 0, "MM_S", "the fastest a granted action may move (mm/s)", 0 },
	[GRANT_EGRESS] = { "egress", 0, "HOST:PORT", "open one destination to the run's external planner instead", 0 },
	[GRANT_FOR] = { "for", 0, "DURATION", "how long the grant lasts (15m, 90s, 2h, 1h30m)", 0 },
	[GRANT_MACHINE] = CLI_OPT_MACHINE,
	[GRANT_LIST] = { "list", 0, NULL, "list the grants", 0 },
	[GRANT_REVOKE] = { "revoke", 0, "ID", "revoke grant ID", 0 },
	[GRANT_JSON] = CLI_OPT_JSON,
};
static const struct cli_optset grant_set = { "grant", grant_opts, GRANT_OPT_COUNT, 0, NULL };

int cli_grant_main(int argc, char **argv)
{
	struct cli_optparse p;
	const struct cli_command *cmd = cli_find("grant");
	const char *kinds = NULL, *zones = NULL, *speed = NULL, *egress = NULL, *dur = NULL,
		   *machine = NULL, *revoke = NULL;
	struct gate_grant g;
	bl_err err = { 0 };
	int list = 0, json = 0, opt;
	const char *run_dir;
	char by[96];

	cli_opt_start(&p, cmd, &grant_set, argc, argv);
	while ((opt = cli_opt_next(&p)) != CLI_OPT_END) {
		if (opt == CLI_OPT_BAD)
			return BL_EXIT_USAGE;
		switch ((enum grant_opt)opt) {
		case GRANT_KINDS: kinds = p.arg; break;
		case GRANT_ZONE: zones = p.arg; break;
		case GRANT_MAX_SPEED: speed = p.arg; break;
		case GRANT_EGRESS: egress = p.arg; break;
		case GRANT_FOR: dur = p.arg; break;
		case GRANT_MACHINE: machine = p.arg; break;
		case GRANT_LIST: list = 1; break;
		case GRANT_REVOKE: revoke = p.arg; break;
		case GRANT_JSON: json = 1; break;
		case GRANT_OPT_COUNT:
			break;
		}
	}
	if (p.ind + 1 != argc)
		return cli_usage(cmd, "grant needs exactly one RUN_DIR");
	run_dir = argv[p.ind];
	if (cli_run_dir_ok(run_dir, &err))
		return cli_fail(&err);
	if (list || revoke) {
		if (kinds || zones || speed || egress || dur || (list && revoke))
			return cli_usage(cmd, "--list and --revoke take no other grant options");
		if (list)
			return list_grants(run_dir, json);
		if (gate_grant_revoke(run_dir, revoke, &err))
			return cli_fail(&err);
		if (json) {
			cJSON *o = cJSON_CreateObject();

			cJSON_AddStringToObject(o, "revoked", revoke);
			return cli_print_json(o) ? BL_EXIT_FAIL : 0;
		}
		printf("%s: revoked\n", revoke);
		return 0;
	}
	if (egress && (kinds || zones || speed))
		return cli_usage(cmd, "--egress opens a destination: it takes no --kinds, --zone or --max-speed");
	if (!egress && (!kinds || !zones || !speed || !dur))
		return cli_usage(cmd, "a grant needs --kinds, --zone, --max-speed and --for (or --egress and --for)");
	if (!dur)
		return cli_usage(cmd, "--egress needs --for");
	cli_operator_name(by, sizeof(by));
	{
		const struct gate_grant_text t = { .kinds = kinds, .zones = zones, .egress = egress,
						   .max_speed = speed, .for_ = dur, .by = by,
						   .machine_path = machine };

		if (gate_grant_give(run_dir, &t, &g, &err))
			return cli_fail(&err);
	}
	if (json)
		return cli_print_json(gate_grant_json(&g, g.issued_wall_ms)) ? BL_EXIT_FAIL : 0;
	if (egress) {
		printf("%s: %s opened to the run's planner for %g s of wall time, from its next phase on\n",
		       g.id, g.egress, g.for_s);
		return 0;
	}
	{
		char k[256], z[128];

		names(g.kinds, arm_kind_names, ARM_KIND_COUNT, k, sizeof(k));
		names(g.zones, arm_zone_names, ARM_ZONE_COUNT, z, sizeof(z));
		printf("%s: %s in %s (travel included) up to %g mm/s, for %g s of the run's time from when it first sees it\n",
		       g.id, k, z, g.max_speed_mm_s, g.for_s);
	}
	return 0;
}

const struct cli_optset *const cli_grant_sets[] = { &grant_set, NULL };

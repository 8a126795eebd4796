/* cli_gate.c: `brushloop gate check`: the gate's decision for every action of an actions or plan file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/cli_opt.h"
#include "config/machine.h"
#include "safety/gate.h"

int cli_machine_path(const char *given, char *out, size_t n)
{
	const char *env = getenv("BRUSHLOOP_MACHINE");

	if (given)
		snprintf(out, n, "%s", given);
	else if (env && *env)
		snprintf(out, n, "%s", env);
	else
		snprintf(out, n, "%s", BL_SOURCE_ROOT "/examples/machine-sim.json");
	return 0;
}

struct check_out {
	int json;
	const char *header; /* printed before the first decision, so a read error prints nothing else */
	enum gate_view view;
	cJSON *arr;
	long counts[3];
};

static int print_decision(void *ctx, const struct gate_decision *d, bl_err *err)
{
	struct check_out *o = ctx;
	const struct gate_finding *pf = gate_decision_primary(d);

	(void)err;
	o->counts[d->verdict]++;
	if (o->json) {
		cJSON_AddItemToArray(o->arr, gate_decision_to_json(d, o->view));
		return 0;
	}
	if (o->header) {
		printf("%s", o->header);
		o->header = NULL;
	}
	if (d->index >= 0)
		printf("  [%ld] %s", d->index,
		       d->kind >= 0 ? arm_kind_names[d->kind] : "(unknown kind)");
	else
		printf("  file");
	if (d->action_id >= 0)
		printf(" id=%ld", d->action_id);
	printf(": %s", gate_verdict_names[d->verdict]);
	if (pf)
		printf(" (%s) %s", gate_reason_names[pf->reason],
		       o->view == GATE_VIEW_OPERATOR ? pf->detail : pf->message);
	printf("\n");
	/* The other findings, so an operator sees everything a yes would cover. */
	for (int i = 0; i < d->n_findings; i++) {
		const struct gate_finding *f = &d->findings[i];

		if (f == pf)
			continue;
		printf("        also %s (%s) %s\n", gate_verdict_names[gate_reason_verdict(f->reason)],
		       gate_reason_names[f->reason],
		       o->view == GATE_VIEW_OPERATOR ? f->detail : f->message);
	}
	return 0;
}

static int parse_point(const char *text, arm_point *p, bl_err *err)
{
	char *end;
	double v[3];
	const char *s = text;

	for (int i = 0; i < 3; i++) {
		v[i] = strtod(s, &end);
		if (end == s || (i < 2 && *end != ',') || (i == 2 && *end) || !(v[i] == v[i]) ||
		    v[i] > 1e5 || v[i] < -1e5)
			return bl_fail(err, BL_EINVAL, "--from: '%s' is not X,Y,Z in mm", text);
		s = end + 1;
	}
	p->x = v[0];
	p->y = v[1];
	p->z = v[2];
	return 0;
}

enum gate_opt {
	GATE_MACHINE, GATE_FROM, GATE_JSON, GATE_PLANNER,
	GATE_OPT_COUNT
};

static const struct cli_opt gate_opts[GATE_OPT_COUNT] = {
	[GATE_MACHINE] = CLI_OPT_MACHINE,
	[GATE_FROM] = { "from", 0, "X,Y,Z", "start at this point (mm) instead of home", 0 },
	[GATE_JSON] = CLI_OPT_JSON,
	[GATE_PLANNER] = { "planner", 0, NULL, "the messages a planner is told (no limit values)", 0 },
};
static const struct cli_optset gate_set = { "gate check", gate_opts, GATE_OPT_COUNT, 0, NULL };

static int gate_check_cmd(const struct cli_command *cmd, int argc, char **argv)
{
	struct cli_optparse p;
	struct check_out o = { 0 };
	struct machine *m;
	const char *machine_opt = NULL, *from_opt = NULL;
	char machine_path[1024], header[1200];
	arm_point start;
	bl_err err = { 0 };
	cJSON *root = NULL;
	int opt, rc, status;

	o.view = GATE_VIEW_OPERATOR;
	cli_opt_start(&p, cmd, &gate_set, argc, argv);
	while ((opt = cli_opt_next(&p)) != CLI_OPT_END) {
		if (opt == CLI_OPT_BAD)
			return BL_EXIT_USAGE;
		switch ((enum gate_opt)opt) {
		case GATE_MACHINE:
			machine_opt = p.arg;
			break;
		case GATE_FROM:
			from_opt = p.arg;
			break;
		case GATE_JSON:
			o.json = 1;
			break;
		case GATE_PLANNER:
			o.view = GATE_VIEW_PLANNER;
			break;
		case GATE_OPT_COUNT:
			break;
		}
	}
	if (p.ind + 1 != argc)
		return cli_usage(cmd, "gate check needs exactly one PLAN_OR_ACTIONS.json");
	cli_machine_path(machine_opt, machine_path, sizeof(machine_path));
	m = calloc(1, sizeof(*m));
	if (!m)
		return BL_EXIT_FAIL;
	if ((rc = machine_load(machine_path, m, &err))) {
		free(m);
		return cli_fail(&err);
	}
	start = (arm_point){ m->home_mm[0], m->home_mm[1], m->home_mm[2] };
	if (from_opt && parse_point(from_opt, &start, &err)) {
		free(m);
		return cli_usage(cmd, "%s", err.msg);
	}
	if (o.json) {
		root = cJSON_CreateObject();
		cJSON_AddStringToObject(root, "file", argv[p.ind]);
		cJSON_AddStringToObject(root, "machine", machine_path);
		cJSON_AddStringToObject(root, "view",
					o.view == GATE_VIEW_OPERATOR ? "operator" : "planner");
		o.arr = cJSON_AddArrayToObject(root, "decisions");
	} else {
		snprintf(header, sizeof(header), "%s (machine %s):\n", argv[p.ind], m->name);
		o.header = header;
	}
	rc = gate_check_file(m, argv[p.ind], &start, print_decision, &o, &err);
	free(m);
	if (rc) {
		cJSON_Delete(root);
		return cli_fail(&err);
	}
	status = o.counts[GATE_DENY] ? BL_EXIT_USAGE : o.counts[GATE_OPERATOR] ? BL_EXIT_PAUSED : 0;
	if (o.json) {
		cJSON_AddNumberToObject(root, "allowed", (double)o.counts[GATE_ALLOW]);
		cJSON_AddNumberToObject(root, "needs_operator", (double)o.counts[GATE_OPERATOR]);
		cJSON_AddNumberToObject(root, "denied", (double)o.counts[GATE_DENY]);
		cJSON_AddNumberToObject(root, "exit", status);
		if (cli_print_json(root))
			return BL_EXIT_FAIL;
	} else {
		printf("%ld allowed, %ld need an operator, %ld denied\n", o.counts[GATE_ALLOW],
		       o.counts[GATE_OPERATOR], o.counts[GATE_DENY]);
	}
	return status;
}

int cli_gate_main(int argc, char **argv)
{
	const struct cli_command *cmd = cli_find("gate");

	if (argc < 2 || strcmp(argv[1], "check") != 0)
		return cli_usage(cmd, "gate needs a subcommand: check");
	return gate_check_cmd(cmd, argc - 1, argv + 1);
}

const struct cli_optset *const cli_gate_sets[] = { &gate_set, NULL };

/* test_safety_cli.c: `brushloop gate check`, `pending`, `approve` and `grant` as a user meets them: exit codes, messages, nothing lost on bad input. */
#include "safety/operator.h"
#include "safety_test.h"

static char mpath[4096];

static const char *corpus(const char *name)
{
	static char p[8][4096];
	static int k;
	char *out = p[k++ % 8];

	snprintf(out, 4096, "%s/%s", src_path("tests/safety/corpus"), name);
	return out;
}

static int cli_check(const char *file, const char *extra, char **out, char **err)
{
	const char *args[] = { "gate", "check", file, "--machine", mpath, extra, NULL };

	snprintf(mpath, sizeof(mpath), "%s", src_path("tests/safety/machine.json"));
	return test_brushloop(args, out, err);
}

TEST(gate_check_exit_codes)
{
	char *out = NULL, *err = NULL;

	CHECK(cli_check(corpus("ok_stroke.json"), NULL, &out, &err) == 0);
	CHECK_STR_CONTAINS(out, "1 allowed, 0 need an operator, 0 denied");
	free(out);
	free(err);
	CHECK(cli_check(corpus("op_speed_soft.json"), NULL, &out, &err) == 3);
	CHECK_STR_CONTAINS(out, "needs_operator (speed_soft)");
	free(out);
	free(err);
	CHECK(cli_check(corpus("deny_mixed_batch.json"), NULL, &out, &err) == 2);
	CHECK_STR_CONTAINS(out, "1 allowed, 1 need an operator, 1 denied");
	free(out);
	free(err);
	CHECK(cli_check(corpus("notjson_binary.bin"), NULL, &out, &err) == 2);
	CHECK_STR_CONTAINS(out, "deny (not_json)");
	free(out);
	free(err);
}

TEST(gate_check_json_and_planner_view)
{
	char *out = NULL, *err = NULL;
	cJSON *o, *ds, *d0;

	CHECK(cli_check(corpus("deny_speed_hard.json"), "--json", &out, &err) == 2);
	o = cJSON_Parse(out ? out : "");
	CHECK(o != NULL);
	ds = cJSON_GetObjectItemCaseSensitive(o, "decisions");
	d0 = cJSON_GetArrayItem(ds, 0);
	CHECK(cJSON_GetArraySize(ds) == 1);
	CHECK(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(d0, "reason")) &&
	      strcmp(cJSON_GetObjectItemCaseSensitive(d0, "reason")->valuestring, "speed_hard") == 0);
	CHECK(cJSON_GetObjectItemCaseSensitive(o, "exit")->valuedouble == 2);
	CHECK_STR_CONTAINS(out, "\"limit\":\t500");
	cJSON_Delete(o);
	free(out);
	free(err);
	{
		const char *args[] = { "gate", "check", corpus("deny_speed_hard.json"), "--machine",
				       mpath, "--planner", "--json", NULL };

		CHECK(test_brushloop(args, &out, &err) == 2);
		CHECK_STR_CONTAINS(out, "\"view\":\t\"planner\"");
		CHECK_STR_CONTAINS(out, "speed_mm_s: 600 mm/s is faster than this machine allows");
		CHECK_MSG(out && !strstr(out, "500"), "planner view shows the limit: %s", out);
		free(out);
		free(err);
	}
}

TEST(gate_check_bad_usage)
{
	char *out = NULL, *err = NULL;
	const char *none[] = { "gate", "check", NULL };
	const char *two[] = { "gate", "check", "a.json", "b.json", NULL };
	const char *sub[] = { "gate", "inspect", "a.json", NULL };
	const char *from[] = { "gate", "check", corpus("ok_move.json"), "--from", "1,2", NULL };
	const char *badm[] = { "gate", "check", corpus("ok_move.json"), "--machine", "/nope.json", NULL };

	CHECK(test_brushloop(none, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "exactly one");
	free(out);
	free(err);
	CHECK(test_brushloop(two, &out, &err) == 2);
	free(out);
	free(err);
	CHECK(test_brushloop(sub, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "subcommand: check");
	free(out);
	free(err);
	CHECK(test_brushloop(from, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "--from: '1,2'");
	free(out);
	free(err);
	CHECK(test_brushloop(badm, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "/nope.json");
	free(out);
	free(err);
	CHECK(cli_check("/nonexistent/actions.json", NULL, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "/nonexistent/actions.json: cannot open");
	CHECK(out && out[0] == '\0');
	free(out);
	free(err);
}

/* The tool starts where --from says: a move that is short from there is allowed. */
TEST(gate_check_from)
{
	char *out = NULL, *err = NULL;
	const char *args[] = { "gate", "check", corpus("op_move_soft.json"), "--machine", mpath,
			       "--from", "500,250,50", NULL };

	snprintf(mpath, sizeof(mpath), "%s", src_path("tests/safety/machine.json"));
	CHECK(test_brushloop(args, &out, &err) == 0);
	free(out);
	free(err);
}

/* A request file as the gate writes it, without running a gate. */
static void file_request(const char *run, const char *id)
{
	struct gate_request r;
	struct gate_decision d;
	struct arm_action a;
	cJSON *item = cJSON_Parse("{\"type\":\"move\",\"id\":5,\"speed_mm_s\":300,\"zones\":[\"travel\"],\"to_mm\":[300,200,50]}");
	arm_point from = { 10, 10, 100 };
	bl_err err = { 0 };
	char dir[4200];

	snprintf(dir, sizeof(dir), "%s/approvals", run);
	fs_mkdirs(dir, NULL);
	CHECK(arm_action_parse(item, "t", 0, &a, &err) == 0);
	CHECK(gate_check(test_machine(), &from, &a, NULL, NULL, &d, &err) == 0);
	CHECK(gate_request_from_decision(&d, &a, &r, &err) == 0);
	snprintf(r.id, sizeof(r.id), "%s", id);
	CHECK(gate_request_write(run, &r, &d, &err) == 0);
	gate_request_free(&r);
	cJSON_Delete(item);
}

TEST(pending_and_approve)
{
	const char *run = fresh_dir("run");
	char *out = NULL, *err = NULL;
	const char *pending[] = { "pending", run, NULL };
	const char *pending_json[] = { "pending", run, "--json", NULL };
	const char *approve_none[] = { "approve", run, NULL };
	const char *approve_one[] = { "approve", run, "r000002", "--deny", NULL };
	const char *approve_again[] = { "approve", run, "r000002", NULL };
	const char *approve_bad[] = { "approve", run, "r999999", NULL };
	const char *approve_junk[] = { "approve", run, "../../etc/passwd", NULL };
	const char *approve_all[] = { "approve", run, "--all", NULL };

	CHECK(test_brushloop(pending, &out, &err) == 0);
	CHECK_STR_CONTAINS(out, "no pending requests");
	free(out);
	free(err);
	CHECK(test_brushloop(approve_none, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "no request is waiting");
	free(out);
	free(err);
	file_request(run, "r000001");
	file_request(run, "r000002");
	file_request(run, "r000003");
	CHECK(test_brushloop(pending, &out, &err) == 0);
	CHECK_STR_CONTAINS(out, "r000001  move id=5  from (10.0, 10.0, 100.0) to (300.0, 200.0, 50.0) mm at 300 mm/s, zones travel");
	CHECK_STR_CONTAINS(out, "why: speed_soft: speed_mm_s: 300 mm/s is above limits.soft.speed_mm_s 250 mm/s");
	free(out);
	free(err);
	/* Several waiting and no id: no guessing. */
	CHECK(test_brushloop(approve_none, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "3 requests are waiting: r000001 r000002 r000003");
	free(out);
	free(err);
	CHECK(test_brushloop(approve_one, &out, &err) == 0);
	CHECK_STR_CONTAINS(out, "r000002: denied");
	free(out);
	free(err);
	CHECK(test_brushloop(approve_again, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "answered already (no");
	free(out);
	free(err);
	CHECK(test_brushloop(approve_bad, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "r999999.json: cannot open");
	free(out);
	free(err);
	CHECK(test_brushloop(approve_junk, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "is not a request id");
	free(out);
	free(err);
	CHECK(test_brushloop(pending_json, &out, &err) == 0);
	{
		cJSON *o = cJSON_Parse(out ? out : "");

		CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(o, "pending")) == 2);
		cJSON_Delete(o);
	}
	free(out);
	free(err);
	CHECK(test_brushloop(approve_all, &out, &err) == 0);
	CHECK_STR_CONTAINS(out, "r000001: approved");
	CHECK_STR_CONTAINS(out, "r000003: approved");
	free(out);
	free(err);
	CHECK(test_brushloop(pending, &out, &err) == 0);
	CHECK_STR_CONTAINS(out, "no pending requests");
	free(out);
	free(err);
}

TEST(pending_on_missing_dir_and_corrupt_request)
{
	const char *run = fresh_dir("corrupt");
	char *out = NULL, *err = NULL, p[4200];
	const char *missing[] = { "pending", "/no/such/run", NULL };
	const char *pending[] = { "pending", run, NULL };
	FILE *f;

	CHECK(test_brushloop(missing, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "/no/such/run: not a run directory");
	free(out);
	free(err);
	file_request(run, "r000001");
	snprintf(p, sizeof(p), "%s/approvals/r000002.json", run);
	f = fopen(p, "w");
	CHECK(f != NULL);
	if (f) {
		fputs("{\"kind\":\"approval_request\",", f);
		fclose(f);
	}
	CHECK(test_brushloop(pending, &out, &err) == 0);
	CHECK_STR_CONTAINS(out, "r000001");
	CHECK_STR_CONTAINS(err, "1 request file(s) do not load");
	CHECK_STR_CONTAINS(err, "r000002.json");
	free(out);
	free(err);
}

TEST(grant_command)
{
	const char *run = fresh_dir("grants");
	char *out = NULL, *err = NULL;
	const char *ok[] = { "grant", run, "--kinds", "move,stroke", "--zone", "palette", "--max-speed",
			     "300", "--for", "15m", NULL };
	const char *bad_for[] = { "grant", run, "--kinds", "move", "--zone", "travel", "--max-speed",
				  "300", "--for", "forever", NULL };
	const char *bad_zone[] = { "grant", run, "--kinds", "move", "--zone", "kitchen", "--max-speed",
				   "300", "--for", "1m", NULL };
	const char *bad_kind[] = { "grant", run, "--kinds", "fly", "--zone", "travel", "--max-speed",
				   "300", "--for", "1m", NULL };
	const char *bad_speed[] = { "grant", run, "--kinds", "move", "--zone", "travel",
				    "--max-speed", "-3", "--for", "1m", NULL };
	const char *missing[] = { "grant", run, "--kinds", "move", NULL };
	const char *too_long[] = { "grant", run, "--kinds", "move", "--zone", "travel", "--max-speed",
				   "300", "--for", "2h", "--machine", mpath, NULL };
	const char *too_fast[] = { "grant", run, "--kinds", "move", "--zone", "travel", "--max-speed",
				   "900", "--for", "5m", "--machine", mpath, NULL };
	const char *list[] = { "grant", run, "--list", NULL };
	const char *revoke[] = { "grant", run, "--revoke", "g1", NULL };
	const char *revoke_bad[] = { "grant", run, "--revoke", "g9", NULL };
	struct gate_grants gs;
	bl_err e = { 0 };

	snprintf(mpath, sizeof(mpath), "%s", src_path("tests/safety/machine.json"));
	CHECK(test_brushloop(ok, &out, &err) == 0);
	CHECK_STR_CONTAINS(out, "g1: move,stroke in well,cell,water,wipe");
	free(out);
	free(err);
	/* Every bad grant is exit 2 with the reason, and the good one is still there. */
	CHECK(test_brushloop(bad_for, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "--for: 'forever' is not a duration");
	free(out);
	free(err);
	CHECK(test_brushloop(bad_zone, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "--zone: 'kitchen'");
	free(out);
	free(err);
	CHECK(test_brushloop(bad_kind, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "--kinds: 'fly'");
	free(out);
	free(err);
	CHECK(test_brushloop(bad_speed, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "--max-speed");
	free(out);
	free(err);
	CHECK(test_brushloop(missing, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "needs --kinds, --zone, --max-speed and --for");
	free(out);
	free(err);
	CHECK(test_brushloop(too_long, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "safety.max_grant_s 3600");
	free(out);
	free(err);
	CHECK(test_brushloop(too_fast, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "limits.hard.speed_mm_s 500");
	free(out);
	free(err);
	CHECK(gate_grants_load(run, &gs, &e) == 0 && gs.n == 1 && gs.n_bad == 0);
	CHECK(gs.n == 1 && gs.g[0].for_s == 900 && gs.g[0].max_speed_mm_s == 300);
	gate_grants_free(&gs);
	CHECK(test_brushloop(list, &out, &err) == 0);
	CHECK_STR_CONTAINS(out, "g1  kinds move,stroke, zones well,cell,water,wipe, up to 300 mm/s, for 900 s: active");
	free(out);
	free(err);
	CHECK(test_brushloop(revoke, &out, &err) == 0);
	free(out);
	free(err);
	CHECK(test_brushloop(revoke, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "revoked already");
	free(out);
	free(err);
	CHECK(test_brushloop(revoke_bad, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "no grant 'g9'");
	free(out);
	free(err);
	CHECK(test_brushloop(list, &out, &err) == 0);
	CHECK_STR_CONTAINS(out, ": revoked");
	free(out);
	free(err);
}

/* A grants file somebody broke is not rewritten over: the operator fixes it first. */
TEST(grant_refuses_to_overwrite_a_broken_file)
{
	const char *run = fresh_dir("broken");
	char *out = NULL, *err = NULL, p[4200], *after;
	const char *ok[] = { "grant", run, "--kinds", "move", "--zone", "travel", "--max-speed", "300",
			     "--for", "15m", NULL };
	FILE *f;

	snprintf(p, sizeof(p), "%s/grants.json", run);
	f = fopen(p, "w");
	CHECK(f != NULL);
	if (f) {
		fputs("{\"kind\":\"grants\",\"version\":1,\"grants\":[{\"id\":\"g1\"}]}", f);
		fclose(f);
	}
	CHECK(test_brushloop(ok, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "malformed grant");
	after = slurp(p);
	CHECK(after && strcmp(after, "{\"kind\":\"grants\",\"version\":1,\"grants\":[{\"id\":\"g1\"}]}") == 0);
	free(after);
	free(out);
	free(err);
}

TEST(help_lists_the_safety_commands)
{
	char *out = NULL;
	const char *help[] = { "help", NULL };
	const char *gh[] = { "gate", "--help", NULL };

	CHECK(test_brushloop(help, &out, NULL) == 0);
	CHECK_STR_CONTAINS(out, "gate");
	CHECK_STR_CONTAINS(out, "pending");
	CHECK_STR_CONTAINS(out, "approve");
	CHECK_STR_CONTAINS(out, "grant");
	free(out);
	CHECK(test_brushloop(gh, &out, NULL) == 0);
	CHECK_STR_CONTAINS(out, "usage: brushloop gate check");
	free(out);
}

TEST_MAIN(T(gate_check_exit_codes), T(gate_check_json_and_planner_view), T(gate_check_bad_usage),
	  T(gate_check_from), T(pending_and_approve), T(pending_on_missing_dir_and_corrupt_request),
	  T(grant_command), T(grant_refuses_to_overwrite_a_broken_file),
	  T(help_lists_the_safety_commands))

/* test_gate_exec.c: gate_execute against a recording arm: what is denied or unanswered never reaches it; grants, approvals, deferral, faults, the journal. */
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gate_rig.h"

TEST(denied_actions_never_reach_the_backend)
{
	static const char *const denied[] = {
		"{\"type\":\"move\",\"speed_mm_s\":600,\"zones\":[\"travel\"],\"to_mm\":[300,200,50]}",
		"{\"type\":\"move\",\"speed_mm_s\":100,\"zones\":[\"travel\"],\"to_mm\":[300,200,2]}",
		"{\"type\":\"move\",\"speed_mm_s\":100,\"zones\":[\"travel\"],\"to_mm\":[680,20,100]}",
		"{\"type\":\"move\",\"speed_mm_s\":100,\"zones\":[\"travel\",\"canvas\"],\"to_mm\":[300,200,-9]}",
		"{\"type\":\"dip\",\"speed_mm_s\":100,\"brush\":\"round-6\",\"well\":\"w99\",\"depth_mm\":2}",
		"{\"type\":\"dispense\",\"speed_mm_s\":100,\"well\":\"w1\",\"cell\":\"m1\",\"units\":50}",
		"{\"type\":\"stir\",\"speed_mm_s\":200,\"cell\":\"m1\",\"depth_mm\":3,\"ms\":1000}",
		"{\"type\":\"park\",\"speed_mm_s\":100}",
		NULL,
	};
	struct rig r;
	struct gate_decision d;
	bl_err err = { 0 };

	rig_open(&r, "denied", GATE_TERMINAL, 200);
	for (int i = 0; denied[i]; i++) {
		CHECK_MSG(run(&r, denied[i], &d, &err) == BL_EDENIED, "%s: %s", denied[i], err.msg);
		CHECK(d.verdict == GATE_DENY && !d.executed);
	}
	/* And one that does not even parse. */
	{
		cJSON *item = cJSON_Parse("{\"type\":\"move\",\"speed_mm_s\":\"x\"}");
		struct arm_action a;
		bl_err perr = { 0 };

		CHECK(arm_action_parse(item, "t", 9, &a, &perr) != 0);
		CHECK(gate_reject_malformed(r.g, "t", 9, item, &perr, &d, &err) == 0);
		CHECK(d.verdict == GATE_DENY);
		cJSON_Delete(item);
	}
	CHECK(r.st.n_execute == 0 && r.st.n_home == 0);
	CHECK(lines_with(r.journal, "\"event\":\"decision\"") == 9);
	CHECK(lines_with(r.journal, "\"decision\":\"deny\"") == 9);
	CHECK(lines_with(r.journal, "\"event\":\"executed\"") == 0);
	/* Nothing was asked: a denial is not a question. */
	CHECK(lines_with(r.journal, "\"event\":\"request\"") == 0);
	rig_close(&r);
}

TEST(allowed_action_runs_exactly_the_checked_path)
{
	struct rig r;
	struct gate_decision d, d0;
	struct arm_path path = { 0 };
	const char *stroke = "{\"type\":\"stroke\",\"id\":3,\"speed_mm_s\":80,\"brush\":\"round-6\","
			     "\"points_mm\":[[300,200,0],[350,220,0],[400,200,0]]}";
	struct arm_action a = act(stroke);
	bl_err err = { 0 };

	rig_open(&r, "allowed", GATE_UNATTENDED, 0);
	CHECK(gate_check(&r.m, &r.st.pos, &a, NULL, &path, &d0, &err) == 0);
	CHECK(gate_execute(r.g, r.arm, &a, NULL, &d, &err) == 0);
	CHECK(d.verdict == GATE_ALLOW && d.executed);
	CHECK(r.st.n_execute == 1);
	CHECK(r.st.last.n == path.n && path.n > 3);
	CHECK(r.st.last.n == path.n &&
	      memcmp(r.st.last.seg, path.seg, path.n * sizeof(*path.seg)) == 0);
	CHECK(gate_motions(r.g) == 1);
	CHECK(lines_with(r.journal, "\"event\":\"executed\"") == 1);
	arm_path_free(&path);
	arm_action_release(&a);
	rig_close(&r);
}

TEST(unattended_defers_carries_on_and_runs_after_approval)
{
	struct rig r;
	struct gate_decision d;
	struct gate_request req;
	bl_err err = { 0 };
	int refused = -1;

	rig_open(&r, "defer", GATE_UNATTENDED, 0);
	CHECK(run(&r, MOVE_FAST, &d, &err) == BL_EDEFERRED);
	CHECK(bl_exit_status(BL_EDEFERRED) == 3);
	CHECK(d.verdict == GATE_OPERATOR && !d.executed);
	CHECK(strcmp(d.request_id, "r000001") == 0);
	CHECK(r.st.n_execute == 0);
	CHECK(gate_deferred_count(r.g) == 1);
	CHECK(gate_deferred_get(r.g, 0)->state == GATE_WAITING);
	CHECK(gate_deferred_get(r.g, 0)->action_id == 7);
	CHECK_STR_CONTAINS(gate_deferred_get(r.g, 0)->why, "speed_soft");
	CHECK(gate_request_load(r.run, "r000001", &req, &err) == 0);
	CHECK(req.status == GATE_REQ_PENDING && !req.answered && req.n_why == 1);
	CHECK(req.preview[0]);
	gate_request_free(&req);
	/* The same action again while unanswered: the same request, not a second one. */
	CHECK(run(&r, MOVE_FAST, &d, &err) == BL_EDEFERRED);
	CHECK(strcmp(d.request_id, "r000001") == 0 && gate_deferred_count(r.g) == 1);
	/* Other work goes on meanwhile. */
	CHECK(run(&r, MOVE_OK, &d, &err) == 0 && r.st.n_execute == 1);
	CHECK(gate_recheck(r.g, &refused, &err) == 0 && refused == 0);
	{
		const char *args[] = { "approve", r.run, "r000001", NULL };
		char *out = NULL;

		CHECK(test_brushloop(args, &out, NULL) == 0);
		CHECK_STR_CONTAINS(out, "r000001: approved");
		free(out);
	}
	CHECK(gate_recheck(r.g, &refused, &err) == 1 && refused == 0);
	CHECK(gate_deferred_get(r.g, 0)->state == GATE_READY);
	/* Resubmitted from where the tool is now (another start): the approval still covers it. */
	CHECK(run(&r, MOVE_FAST, &d, &err) == 0);
	CHECK(d.executed && strcmp(d.request_id, "r000001") == 0);
	CHECK(r.st.n_execute == 2 && gate_deferred_count(r.g) == 0);
	CHECK(gate_request_load(r.run, "r000001", &req, &err) == 0 && req.status == GATE_REQ_USED);
	gate_request_free(&req);
	/* One approval, one execution: the next time asks again. */
	CHECK(run(&r, MOVE_FAST, &d, &err) == BL_EDEFERRED && strcmp(d.request_id, "r000002") == 0);
	CHECK(r.st.n_execute == 2);
	CHECK(lines_with(r.journal, "\"event\":\"deferred\"") == 3);
	CHECK(lines_with(r.journal, "\"outcome\":\"approved\"") == 1);
	rig_close(&r);
}

TEST(refused_request_never_runs)
{
	struct rig r;
	struct gate_decision d;
	bl_err err = { 0 };
	int refused = 0;
	const char *args[] = { "approve", NULL, "--deny", NULL };

	rig_open(&r, "refused", GATE_UNATTENDED, 0);
	CHECK(run(&r, MOVE_FAST, &d, &err) == BL_EDEFERRED);
	args[1] = r.run;
	CHECK(test_brushloop(args, NULL, NULL) == 0);
	CHECK(gate_recheck(r.g, &refused, &err) == 0 && refused == 1);
	CHECK(gate_deferred_get(r.g, 0)->state == GATE_REFUSED);
	CHECK(r.st.n_execute == 0);
	CHECK(lines_with(r.journal, "\"outcome\":\"refused\"") == 1);
	rig_close(&r);
}

TEST(remote_wait_without_answer_is_no)
{
	struct rig r;
	struct gate_decision d;
	struct gate_request req;
	bl_err err = { 0 };
	int64_t t0 = clk_real_ns();

	rig_open(&r, "timeout", GATE_REMOTE, 300);
	CHECK(run(&r, MOVE_FAST, &d, &err) == BL_EDENIED);
	CHECK_STR_CONTAINS(err.msg, "no answer in time");
	CHECK(clk_real_ns() - t0 >= 300 * 1000000LL);
	CHECK(r.st.n_execute == 0);
	CHECK(gate_request_load(r.run, d.request_id, &req, &err) == 0);
	CHECK(req.status == GATE_REQ_TIMED_OUT);
	gate_request_free(&req);
	/* A late answer is refused: the question is closed. */
	{
		const char *args[] = { "approve", r.run, d.request_id, NULL };
		char *e = NULL;

		CHECK(test_brushloop(args, NULL, &e) == 2);
		CHECK_STR_CONTAINS(e, "no longer pending (timed_out)");
		free(e);
	}
	rig_close(&r);
}

/* A child process runs `brushloop approve RUN_DIR` while the gate waits; yes or --deny. */
static void approve_from_child(int deny)
{
	struct rig r;
	struct gate_decision d;
	bl_err err = { 0 };
	pid_t pid;
	int status = -1, rc;

	rig_open(&r, deny ? "remote-no" : "remote-yes", GATE_REMOTE, 30000);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		char req[4200];
		const char *bin = brushloop_bin();

		snprintf(req, sizeof(req), "%s/approvals/r000001.json", r.run);
		for (int i = 0; i < 4000 && access(req, F_OK) != 0; i++)
			usleep(5000);
		if (deny)
			execl(bin, bin, "approve", r.run, "--deny", (char *)NULL);
		else
			execl(bin, bin, "approve", r.run, (char *)NULL);
		_exit(127);
	}
	rc = run(&r, MOVE_FAST, &d, &err);
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	if (deny) {
		CHECK_MSG(rc == BL_EDENIED, "rc %d: %s", rc, err.msg);
		CHECK_STR_CONTAINS(err.msg, "the operator said no");
		CHECK(r.st.n_execute == 0);
	} else {
		CHECK_MSG(rc == 0, "rc %d: %s", rc, err.msg);
		CHECK(r.st.n_execute == 1 && d.executed);
	}
	CHECK(lines_with(r.journal, "\"event\":\"answer\"") == 1);
	rig_close(&r);
}

TEST(approval_from_another_process_while_waiting)
{
	approve_from_child(0);
}

TEST(denial_from_another_process_while_waiting)
{
	approve_from_child(1);
}

/* The terminal prompt, fed through a pipe: what it shows, and yes, no, end of input, silence. */
static int terminal(const char *name, const char *input, int close_input, int timeout_ms,
		    struct rig *r, char **shown)
{
	int in[2], outfd, rc;
	struct gate_decision d;
	struct gate_config cfg;
	bl_err err = { 0 };
	char outpath[4200];

	rig_open(r, name, GATE_TERMINAL, timeout_ms);
	gate_close(r->g);
	CHECK(pipe(in) == 0);
	snprintf(outpath, sizeof(outpath), "%s/prompt.txt", r->run);
	outfd = open(outpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(outfd >= 0);
	memset(&cfg, 0, sizeof(cfg));
	cfg.m = &r->m;
	cfg.run_dir = r->run;
	cfg.journal = &r->jr;
	cfg.clock = &r->clock;
	cfg.mode = GATE_TERMINAL;
	cfg.tty_in_fd = in[0];
	cfg.tty_out_fd = outfd;
	cfg.timeout_ms = timeout_ms;
	CHECK(gate_open(&cfg, &r->g, &err) == 0);
	if (input)
		CHECK(write(in[1], input, strlen(input)) == (ssize_t)strlen(input));
	if (close_input)
		close(in[1]);
	rc = run(r, MOVE_FAST, &d, &err);
	close(in[0]);
	if (!close_input)
		close(in[1]);
	close(outfd);
	*shown = slurp(outpath);
	return rc;
}

TEST(terminal_prompt_yes_no_eof_timeout)
{
	struct rig r;
	char *shown = NULL;

	CHECK(terminal("tty-yes", "y\n", 0, 5000, &r, &shown) == 0);
	CHECK(r.st.n_execute == 1);
	CHECK_STR_CONTAINS(shown, "approval needed [r000001]");
	CHECK_STR_CONTAINS(shown, "from (10.0, 10.0, 100.0) mm to (300.0, 220.0, 50.0) mm");
	CHECK_STR_CONTAINS(shown, "speed 280 mm/s, zones: travel");
	CHECK_STR_CONTAINS(shown, "why: speed_soft: speed_mm_s: 280 mm/s is above limits.soft.speed_mm_s 250 mm/s");
	CHECK_STR_CONTAINS(shown, "approvals/r000001.png");
	CHECK_STR_CONTAINS(shown, "Allow? [y/N]");
	free(shown);
	rig_close(&r);

	CHECK(terminal("tty-no", "n\n", 0, 5000, &r, &shown) == BL_EDENIED);
	CHECK(r.st.n_execute == 0);
	free(shown);
	rig_close(&r);

	CHECK(terminal("tty-eof", NULL, 1, 5000, &r, &shown) == BL_EDENIED);
	CHECK(r.st.n_execute == 0);
	free(shown);
	rig_close(&r);

	CHECK(terminal("tty-silent", NULL, 0, 250, &r, &shown) == BL_EDENIED);
	CHECK(r.st.n_execute == 0);
	CHECK(lines_with(r.journal, "\"outcome\":\"timed_out\"") == 1);
	free(shown);
	rig_close(&r);
}

TEST(grant_allows_within_scope_until_it_expires_by_the_run_clock)
{
	struct rig r;
	struct gate_decision d;
	bl_err err = { 0 };
	const char *args[] = { "grant", NULL, "--kinds", "move", "--zone", "travel", "--max-speed",
			       "300", "--for", "15m", NULL };
	char *out = NULL;

	rig_open(&r, "grant", GATE_UNATTENDED, 0);
	args[1] = r.run;
	CHECK(test_brushloop(args, &out, NULL) == 0);
	CHECK_STR_CONTAINS(out, "g1:");
	free(out);
	CHECK(run(&r, MOVE_FAST, &d, &err) == 0);
	CHECK(d.executed && strcmp(d.grant_id, "g1") == 0);
	CHECK(lines_with(r.journal, "\"event\":\"grant\"") == 1);
	CHECK(lines_with(r.journal, "\"event\":\"grant_use\"") == 1);
	/* Outside its scope: faster than granted, or down on the canvas. */
	CHECK(run(&r, "{\"type\":\"move\",\"speed_mm_s\":320,\"zones\":[\"travel\"],\"to_mm\":[310,220,50]}",
		  &d, &err) == BL_EDEFERRED);
	CHECK(run(&r, "{\"type\":\"move\",\"speed_mm_s\":280,\"zones\":[\"travel\",\"canvas\"],\"to_mm\":[310,220,0]}",
		  &d, &err) == BL_EDEFERRED);
	/* Not a grant's to give: limits overridden. */
	CHECK(run(&r, "{\"type\":\"move\",\"speed_mm_s\":100,\"zones\":[\"travel\"],\"to_mm\":[310,230,50],\"override_limits\":true}",
		  &d, &err) == BL_EDEFERRED);
	CHECK(r.st.n_execute == 1);
	/* 14 minutes of simulated time later it still holds; past 15 it is gone. */
	clk_advance(&r.clock, 14LL * 60 * 1000000000);
	CHECK(run(&r, MOVE_FAST, &d, &err) == 0);
	CHECK(r.st.n_execute == 2 && strcmp(d.grant_id, "g1") == 0);
	clk_advance(&r.clock, 2LL * 60 * 1000000000);
	CHECK(run(&r, "{\"type\":\"move\",\"speed_mm_s\":280,\"zones\":[\"travel\"],\"to_mm\":[300,260,50]}",
		  &d, &err) == BL_EDEFERRED);
	CHECK(r.st.n_execute == 2 && !d.grant_id[0]);
	CHECK(lines_with(r.journal, "\"event\":\"grant_expired\"") == 1);
	CHECK(lines_with(r.journal, "\"event\":\"grant_use\"") == 2);
	rig_close(&r);
}

TEST(grant_arriving_later_readies_deferred_request)
{
	struct rig r;
	struct gate_decision d;
	bl_err err = { 0 };
	int refused = -1;
	const char *args[] = { "grant", NULL, "--kinds", "move,stroke", "--zone", "palette",
			       "--max-speed", "300", "--for", "10m", NULL };

	rig_open(&r, "grant-later", GATE_UNATTENDED, 0);
	CHECK(run(&r, MOVE_FAST, &d, &err) == BL_EDEFERRED);
	CHECK(gate_recheck(r.g, &refused, &err) == 0);
	args[1] = r.run;
	CHECK(test_brushloop(args, NULL, NULL) == 0);
	CHECK(gate_recheck(r.g, &refused, &err) == 1 && refused == 0);
	CHECK(run(&r, MOVE_FAST, &d, &err) == 0 && strcmp(d.grant_id, "g1") == 0);
	CHECK(r.st.n_execute == 1);
	rig_close(&r);
}

TEST(bad_grants_are_reported_and_ignored)
{
	struct rig r;
	struct gate_decision d;
	bl_err err = { 0 };
	char text[2048];
	long long now = (long long)clk_wall_ms();

	rig_open(&r, "bad-grants", GATE_UNATTENDED, 0);
	/* Not JSON at all: reported once, nothing granted, nothing crashes. */
	write_text(r.run, "grants.json", "{ this is not json");
	CHECK(run(&r, MOVE_FAST, &d, &err) == BL_EDEFERRED);
	CHECK(run(&r, MOVE_FAST, &d, &err) == BL_EDEFERRED);
	CHECK(lines_with(r.journal, "\"event\":\"grant_invalid\"") == 1);
	/* One malformed entry, one too long for the machine, one issued long ago, one good: only the good one counts. */
	snprintf(text, sizeof(text),
		 "{\"kind\":\"grants\",\"version\":1,\"grants\":["
		 "{\"id\":\"g1\",\"kinds\":[\"fly\"],\"zones\":[\"travel\"],\"max_speed_mm_s\":300,\"for_s\":60,\"issued_wall_ms\":%lld,\"by\":\"t\"},"
		 "{\"id\":\"g2\",\"kinds\":[\"move\"],\"zones\":[\"travel\"],\"max_speed_mm_s\":300,\"for_s\":86400,\"issued_wall_ms\":%lld,\"by\":\"t\"},"
		 "{\"id\":\"g3\",\"kinds\":[\"move\"],\"zones\":[\"travel\"],\"max_speed_mm_s\":300,\"for_s\":60,\"issued_wall_ms\":%lld,\"by\":\"t\"}"
		 "]}",
		 now, now, now - 3600 * 1000LL);
	write_text(r.run, "grants.json", text);
	CHECK(run(&r, MOVE_FAST, &d, &err) == BL_EDEFERRED);
	CHECK(r.st.n_execute == 0);
	CHECK(lines_with(r.journal, "kinds[0]") == 1);
	CHECK(lines_with(r.journal, "safety.max_grant_s") == 1);
	CHECK(lines_with(r.journal, "\"event\":\"grant_expired\"") == 1);
	{
		char more[2600];

		snprintf(more, sizeof(more), "%.*s,{\"id\":\"g4\",\"kinds\":[\"move\"],\"zones\":[\"travel\"],\"max_speed_mm_s\":300,\"for_s\":60,\"issued_wall_ms\":%lld,\"by\":\"t\"}]}",
			 (int)strlen(text) - 2, text, now);
		write_text(r.run, "grants.json", more);
	}
	CHECK(run(&r, MOVE_FAST, &d, &err) == 0 && strcmp(d.grant_id, "g4") == 0);
	CHECK(r.st.n_execute == 1);
	rig_close(&r);
}

TEST(fault_stops_and_next_motion_needs_operator)
{
	struct rig r;
	struct gate_decision d;
	bl_err err = { 0 };
	char fault[4200];

	rig_open(&r, "fault", GATE_UNATTENDED, 0);
	snprintf(fault, sizeof(fault), "%s/fault.json", r.run);
	r.st.fault_during_execute = 1;
	CHECK(run(&r, MOVE_OK, &d, &err) == BL_ESAFETY);
	CHECK(bl_exit_status(BL_ESAFETY) == 5);
	CHECK_STR_CONTAINS(err.msg, "limit switch X+");
	CHECK(access(fault, F_OK) == 0 && gate_fault_latched(r.g));
	CHECK(lines_with(r.journal, "\"event\":\"fault\"") == 1);
	/* While the arm still reports the fault, nothing moves at all. */
	r.st.fault_during_execute = 0;
	CHECK(run(&r, MOVE_OK, &d, &err) == BL_ESAFETY);
	CHECK(d.verdict == GATE_DENY);
	CHECK_STR_CONTAINS(gate_reason_names[d.findings[0].reason], "fault");
	CHECK(r.st.n_execute == 1);
	CHECK(lines_with(r.journal, "\"event\":\"fault\"") == 1);
	/* The backend's fault cleared: the next motion still needs a person, even in a new process. */
	r.st.fault = 0;
	gate_close(r.g);
	{
		struct gate_config cfg = { &r.m, r.run, &r.jr, &r.clock, GATE_UNATTENDED, -1, -1, 0 };

		CHECK(gate_open(&cfg, &r.g, &err) == 0);
	}
	CHECK(gate_fault_latched(r.g));
	CHECK(run(&r, MOVE_OK, &d, &err) == BL_EDEFERRED);
	CHECK_STR_CONTAINS(gate_reason_names[d.findings[0].reason], "after_fault");
	{
		const char *args[] = { "grant", r.run, "--kinds", "move", "--zone", "travel",
				       "--max-speed", "300", "--for", "5m", NULL };

		CHECK(test_brushloop(args, NULL, NULL) == 0);
		/* A grant does not clear a fault. */
		CHECK(run(&r, MOVE_OK, &d, &err) == BL_EDEFERRED);
	}
	{
		const char *args[] = { "approve", r.run, d.request_id, NULL };

		CHECK(test_brushloop(args, NULL, NULL) == 0);
	}
	CHECK(run(&r, MOVE_OK, &d, &err) == 0 && d.executed);
	CHECK(r.st.n_execute == 2);
	CHECK(access(fault, F_OK) != 0 && !gate_fault_latched(r.g));
	CHECK(lines_with(r.journal, "\"event\":\"fault_cleared\"") == 1);
	/* An e-stop reported by status is a safety stop too. */
	r.st.estop = 1;
	CHECK(run(&r, MOVE_OK, &d, &err) == BL_ESAFETY);
	CHECK_STR_CONTAINS(err.msg, "e-stop");
	CHECK(r.st.n_execute == 2);
	rig_close(&r);
}

TEST(first_motion_needs_a_person_when_the_machine_says_so)
{
	struct rig r;
	struct gate_decision d;
	bl_err err = { 0 };

	rig_open(&r, "first", GATE_UNATTENDED, 0);
	r.m.safety.confirm_first_motion = 1;
	CHECK(run(&r, MOVE_OK, &d, &err) == BL_EDEFERRED);
	CHECK_STR_CONTAINS(gate_reason_names[gate_decision_primary(&d)->reason], "first_motion");
	{
		const char *args[] = { "approve", r.run, NULL };

		CHECK(test_brushloop(args, NULL, NULL) == 0);
	}
	CHECK(run(&r, MOVE_OK, &d, &err) == 0);
	CHECK(run(&r, "{\"type\":\"move\",\"speed_mm_s\":100,\"zones\":[\"travel\"],\"to_mm\":[320,200,50]}",
		  &d, &err) == 0);
	CHECK(r.st.n_execute == 2);
	rig_close(&r);
}

TEST(no_journal_no_motion)
{
	struct rig r;
	struct gate_decision d;
	bl_err err = { 0 };

	rig_open(&r, "nojournal", GATE_UNATTENDED, 0);
	/* The journal's file may grow no more: appends fail whoever runs the test, a storage error. */
	{
		struct rlimit rl = { (rlim_t)r.jr.end, (rlim_t)r.jr.end };

		signal(SIGXFSZ, SIG_IGN);
		CHECK(setrlimit(RLIMIT_FSIZE, &rl) == 0);
	}
	CHECK(run(&r, MOVE_OK, &d, &err) == BL_ESTORAGE);
	CHECK_STR_CONTAINS(err.msg, "journal");
	CHECK(r.st.n_execute == 0);
	rig_close(&r);
}

/* A journal that is no longer the one the gate's writer opened (another process's): no motion. */
TEST(a_journal_not_the_writers_own_no_motion)
{
	struct rig r;
	struct gate_decision d;
	bl_err err = { 0 };

	rig_open(&r, "notown", GATE_UNATTENDED, 0);
	close(r.jr.fd);
	r.jr.fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
	CHECK(r.jr.fd >= 0);
	CHECK(run(&r, MOVE_OK, &d, &err) == BL_ESAFETY);
	CHECK_STR_CONTAINS(err.msg, "journal");
	CHECK(r.st.n_execute == 0);
	rig_close(&r);
}

/* Every decision line of a journal, as printed JSON, without its time stamps. */
static char *decisions_of(const char *journal)
{
	char *text = slurp(journal), *save = NULL, *line;
	size_t cap = 1 << 16, len = 0;
	char *out = calloc(1, cap);

	for (line = text ? strtok_r(text, "\n", &save) : NULL; line && out;
	     line = strtok_r(NULL, "\n", &save)) {
		cJSON *o = cJSON_Parse(line);
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(o, "data"), "decision");
		const cJSON *ev = cJSON_GetObjectItemCaseSensitive(o, "event");
		char *s;

		if (cJSON_IsString(ev) && strcmp(ev->valuestring, "decision") == 0 && d) {
			s = cJSON_PrintUnformatted(d);
			while (len + strlen(s) + 2 > cap)
				out = realloc(out, cap *= 2);
			len += (size_t)sprintf(out + len, "%s\n", s);
			cJSON_free(s);
		}
		cJSON_Delete(o);
	}
	free(text);
	return out;
}

TEST(replay_through_fresh_gate_journals_same_decisions)
{
	static const char *const batch[] = {
		MOVE_OK,
		"{\"type\":\"stroke\",\"id\":3,\"speed_mm_s\":80,\"brush\":\"round-6\",\"points_mm\":[[300,200,0],[350,220,0],[400,200,0]]}",
		"{\"type\":\"dip\",\"speed_mm_s\":100,\"brush\":\"round-6\",\"well\":\"w3\",\"depth_mm\":4}",
		MOVE_FAST,
		"{\"type\":\"stir\",\"speed_mm_s\":200,\"cell\":\"m2\",\"depth_mm\":3,\"ms\":1000}",
		"{\"type\":\"dispense\",\"speed_mm_s\":100,\"well\":\"w2\",\"cell\":\"m2\",\"units\":4}",
		"{\"type\":\"wash\",\"speed_mm_s\":80,\"ms\":1000}",
		NULL,
	};
	struct rig a, b;
	struct gate_decision d;
	bl_err err = { 0 };
	char *ja, *jb;

	rig_open(&a, "replay-a", GATE_UNATTENDED, 0);
	rig_open(&b, "replay-b", GATE_UNATTENDED, 0);
	for (int i = 0; batch[i]; i++) {
		run(&a, batch[i], &d, &err);
		run(&b, batch[i], &d, &err);
	}
	ja = decisions_of(a.journal);
	jb = decisions_of(b.journal);
	CHECK(ja && jb && strlen(ja) > 500);
	CHECK_MSG(ja && jb && strcmp(ja, jb) == 0, "replayed decisions differ:\n%s\n--\n%s", ja, jb);
	CHECK(a.st.n_execute == b.st.n_execute && a.st.n_execute == 4);
	free(ja);
	free(jb);
	rig_close(&a);
	rig_close(&b);
}

TEST(homing_goes_through_the_gate)
{
	struct rig r;
	struct gate_decision d;
	bl_err err = { 0 };

	rig_open(&r, "home", GATE_UNATTENDED, 0);
	/* The test machine confirms homing: unattended, it waits for a person. */
	CHECK(gate_home(r.g, r.arm, &d, &err) == BL_EDEFERRED);
	CHECK_STR_CONTAINS(gate_reason_names[gate_decision_primary(&d)->reason], "homing");
	CHECK(r.st.n_home == 0);
	{
		const char *args[] = { "approve", r.run, NULL };

		CHECK(test_brushloop(args, NULL, NULL) == 0);
	}
	CHECK(gate_home(r.g, r.arm, &d, &err) == 0 && d.executed);
	CHECK(r.st.n_home == 1 && r.st.n_execute == 0);
	/* Where homing is not confirmed, it just runs (and is journaled). */
	r.m.safety.confirm_homing = 0;
	CHECK(gate_home(r.g, r.arm, &d, &err) == 0 && r.st.n_home == 2);
	CHECK(lines_with(r.journal, "\"kind\":\"home\",\"result\":\"done\"") == 2);
	rig_close(&r);
}

TEST(journal_carries_actions_and_counts_on_across_processes)
{
	struct rig r;
	struct gate_decision d;
	bl_err err = { 0 };
	char *text, *last;
	cJSON *o;

	rig_open(&r, "seq", GATE_UNATTENDED, 0);
	CHECK(run(&r, MOVE_OK, &d, &err) == 0);
	CHECK(lines_with(r.journal, "\"action\":{\"type\":\"move\"") == 1);
	gate_close(r.g);
	{
		struct gate_config cfg = { &r.m, r.run, &r.jr, &r.clock, GATE_UNATTENDED, -1, -1, 0 };
		int fd;

		/* A torn last line (a crash mid-append) is noted and skipped, not fatal. */
		journal_close(&r.jr);
		fd = open(r.journal, O_WRONLY | O_APPEND);
		CHECK(fd >= 0 && write(fd, "{\"seq\": 99, \"event\": \"dec", 25) == 25);
		close(fd);
		CHECK(journal_open(&r.jr, r.journal, &r.clock, &err) == 0 && r.jr.torn == 1);
		CHECK(gate_open(&cfg, &r.g, &err) == 0);
	}
	text = slurp(r.journal);
	CHECK(text != NULL);
	/* The last line: events nest their data, so from the line's start. */
	if (text && *text && text[strlen(text) - 1] == '\n')
		text[strlen(text) - 1] = '\0';
	last = text ? strrchr(text, '\n') : NULL;
	o = last ? cJSON_Parse(last + 1) : NULL;
	/* gate_open, decision, executed: 3 lines; the torn one; its note as 4; gate_open again as 5. */
	CHECK(o && cJSON_GetObjectItemCaseSensitive(o, "seq")->valuedouble == 5);
	cJSON_Delete(o);
	free(text);
	rig_close(&r);
}

/* An approval covers the reasons the operator saw; the same action needing more files a new request. */
TEST(new_reason_supersedes_old_request)
{
	const char *x = "{\"type\":\"move\",\"id\":11,\"speed_mm_s\":280,\"zones\":[\"travel\"],\"to_mm\":[600,300,50]}";
	struct rig r;
	struct gate_decision d;
	struct gate_request req;
	bl_err err = { 0 };

	rig_open(&r, "supersede", GATE_UNATTENDED, 0);
	CHECK(run(&r, MOVE_OK, &d, &err) == 0);
	CHECK(run(&r, "{\"type\":\"move\",\"speed_mm_s\":100,\"zones\":[\"travel\"],\"to_mm\":[550,300,50]}", &d, &err) == 0);
	/* Near its target: too fast only. */
	CHECK(run(&r, x, &d, &err) == BL_EDEFERRED && strcmp(d.request_id, "r000001") == 0);
	CHECK(run(&r, MOVE_OK, &d, &err) == 0);
	CHECK(run(&r, "{\"type\":\"move\",\"speed_mm_s\":100,\"zones\":[\"travel\"],\"to_mm\":[10,10,100]}", &d, &err) == 0);
	/* From home: too fast and too long a move; the first request did not show the second reason. */
	CHECK(run(&r, x, &d, &err) == BL_EDEFERRED && strcmp(d.request_id, "r000002") == 0);
	CHECK(gate_deferred_count(r.g) == 1);
	CHECK(strcmp(gate_deferred_get(r.g, 0)->request_id, "r000002") == 0);
	CHECK(gate_request_load(r.run, "r000001", &req, &err) == 0 && req.status == GATE_REQ_SUPERSEDED);
	gate_request_free(&req);
	CHECK(gate_request_load(r.run, "r000002", &req, &err) == 0 && req.n_why == 2);
	gate_request_free(&req);
	/* Approved from home, it is still covered from nearer (fewer reasons). */
	{
		const char *args[] = { "approve", r.run, "r000002", NULL };

		CHECK(test_brushloop(args, NULL, NULL) == 0);
	}
	CHECK(run(&r, MOVE_OK, &d, &err) == 0);
	CHECK(run(&r, x, &d, &err) == 0 && strcmp(d.request_id, "r000002") == 0);
	CHECK(r.st.n_execute == 6); /* five moves to set the scene, then x */
	rig_close(&r);
}

TEST_MAIN(T(new_reason_supersedes_old_request), T(homing_goes_through_the_gate), T(journal_carries_actions_and_counts_on_across_processes),
	  T(denied_actions_never_reach_the_backend), T(allowed_action_runs_exactly_the_checked_path),
	  T(unattended_defers_carries_on_and_runs_after_approval), T(refused_request_never_runs),
	  T(remote_wait_without_answer_is_no), T(approval_from_another_process_while_waiting),
	  T(denial_from_another_process_while_waiting), T(terminal_prompt_yes_no_eof_timeout),
	  T(grant_allows_within_scope_until_it_expires_by_the_run_clock),
	  T(grant_arriving_later_readies_deferred_request), T(bad_grants_are_reported_and_ignored),
	  T(fault_stops_and_next_motion_needs_operator),
	  T(first_motion_needs_a_person_when_the_machine_says_so), T(no_journal_no_motion), T(a_journal_not_the_writers_own_no_motion),
	  T(replay_through_fresh_gate_journals_same_decisions))

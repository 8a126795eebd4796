/* test_planner_hostile.c: an external planner that breaks the protocol is refused with its reason journaled, and the run goes on with the built-in planner or pauses, as the machine file says. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/json.h"
#include "test.h"

/* A few strokes: the protocol, not the painting, is under test. */
#define STROKES "8"

/* The example machine with a planner section; its calibration paths made absolute. */
static const char *machine_with(const char *name, const char *planner_json)
{
	static char path[4200];
	char src[4200], *text;
	cJSON *m, *cal, *it;

	snprintf(src, sizeof(src), "%s/examples/machine-sim.json", getenv("BRUSHLOOP_SRC"));
	text = test_read_file(src);
	m = cJSON_Parse(text);
	free(text);
	cal = cJSON_GetObjectItem(m, "calibration");
	cJSON_ArrayForEach(it, cal)
		if (cJSON_IsString(it)) {
			char abs[4200];

			snprintf(abs, sizeof(abs), "%s/examples/%s", getenv("BRUSHLOOP_SRC"), it->valuestring);
			cJSON_SetValuestring(it, abs);
		}
	cJSON_AddItemToObject(m, "planner", cJSON_Parse(planner_json));
	text = cJSON_Print(m);
	snprintf(path, sizeof(path), "%s", test_write_file(name, text));
	free(text);
	cJSON_Delete(m);
	return path;
}

struct outcome {
	int rc;
	char dir[4200];
	char *journal, *status, *err;
};

static void outcome_free(struct outcome *o)
{
	free(o->journal);
	free(o->status);
	free(o->err);
}

/*
 * Runs the demo target with hostile_planner.py MODE on machine, into a fresh
 * directory, with a budget of strokes; fault (NULL: none) is a simulator
 * fault for the run.
 */
static void run_hostile_strokes(const char *mode, const char *machine, const char *fault, const char *strokes,
				struct outcome *o)
{
	const char *src = getenv("BRUSHLOOP_SRC");
	char planner[4200], target[4200], p[4300];
	const char *args[20] = { "run", target, "--machine", machine, "--out", o->dir, "--max-strokes", strokes,
				 "--accept-nearest", "--quiet", "--planner", planner };
	char *out = NULL;
	int n = 12;

	memset(o, 0, sizeof(*o));
	snprintf(o->dir, sizeof(o->dir), "%s/run-%s", test_tmpdir(), mode);
	snprintf(target, sizeof(target), "%s/examples/targets/flat-shapes.png", src);
	snprintf(planner, sizeof(planner),
		 "/usr/bin/python3 %s/tests/planner/hostile_planner.py %s %s/examples/planners/grid_planner.py",
		 src, mode, src);
	if (fault) {
		args[n++] = "--fault";
		args[n++] = fault;
	}
	args[n] = NULL;
	o->rc = test_brushloop(args, &out, &o->err);
	free(out);
	snprintf(p, sizeof(p), "%s/journal.jsonl", o->dir);
	o->journal = test_read_file(p);
	snprintf(p, sizeof(p), "%s/STATUS.md", o->dir);
	o->status = test_read_file(p);
}

static void run_hostile_with(const char *mode, const char *machine, const char *fault, struct outcome *o)
{
	run_hostile_strokes(mode, machine, fault, STROKES, o);
}

static void run_hostile(const char *mode, const char *machine, struct outcome *o)
{
	run_hostile_with(mode, machine, NULL, o);
}

/* A deadline a loaded machine's Python meets; the timing cases have their own, short one. */
static const char *fallback_machine(void)
{
	return machine_with("machine-fallback.json",
			    "{\"on_failure\": \"builtin\", \"answer_deadline_s\": 60, \"max_answer_kb\": 4096}");
}

static const char *short_deadline_machine(void)
{
	return machine_with("machine-short.json", "{\"on_failure\": \"builtin\", \"answer_deadline_s\": 2}");
}

/*
 * How far a case's run goes: to its end, or into the built-in plan's first
 * subtask, where a simulated power cut ends it (exit 86). Every refusal happens
 * at planning, before that; one case paints to the end to show the whole run.
 */
enum how_far { INTO_THE_PLAN, TO_THE_END };

/* The first action of the plan: the two before it are the homing and the park before planning. */
#define FIRST_PLAN_ACTION "power_loss_after=3"

/*
 * The run refused the planner for reason, journaled it, went on with the
 * built-in planner (painted to the end, or began its first subtask); o is
 * left for the caller's own checks.
 */
static void fell_back_at(const char *mode, const char *machine, const char *strokes, const char *reason,
			 enum how_far how, struct outcome *o)
{
	const char *builtin = "\"event\":\"planner_answer\",\"data\":{\"planner\":\"builtin\"", *at;
	char want[128];

	run_hostile_strokes(mode, machine, how == INTO_THE_PLAN ? FIRST_PLAN_ACTION : NULL, strokes, o);
	CHECK_MSG(o->rc == (how == INTO_THE_PLAN ? 86 : 0), "%s: exit %d: %s", mode, o->rc, o->err ? o->err : "");
	CHECK(o->journal != NULL);
	if (!o->journal)
		return;
	snprintf(want, sizeof(want), "\"event\":\"planner_denied\",\"data\":{\"reason\":\"%s\"", reason);
	CHECK_STR_CONTAINS(o->journal, want);
	CHECK_STR_CONTAINS(o->journal, "\"event\":\"planner_fallback\"");
	CHECK_STR_CONTAINS(o->journal, builtin);
	at = strstr(o->journal, builtin);
	CHECK_MSG(at && strstr(at, "\"event\":\"subtask_start\""), "%s: no subtask of the built-in plan began", mode);
	if (how == TO_THE_END)
		CHECK_STR_CONTAINS(o->journal, "\"event\":\"finished\"");
	/* Nothing the external planner proposed ran: its answer was never the plan. */
	CHECK(strstr(o->journal, "\"event\":\"planner_answer\",\"data\":{\"planner\":\"external\"") == NULL);
}

static void fell_back(const char *mode, const char *machine, const char *reason, enum how_far how, struct outcome *o)
{
	fell_back_at(mode, machine, STROKES, reason, how, o);
}

static void check_fell_back_on(const char *mode, const char *machine, const char *reason)
{
	struct outcome o;

	fell_back(mode, machine, reason, INTO_THE_PLAN, &o);
	outcome_free(&o);
}

static void check_fell_back(const char *mode, const char *reason)
{
	check_fell_back_on(mode, fallback_machine(), reason);
}

/* estimate prices every planner call of a machine with an external planner at that planner's rate. */
TEST(estimate_prices_an_external_planners_calls_at_its_rate)
{
	const char *src = getenv("BRUSHLOOP_SRC");
	const char *machine = machine_with("machine-priced.json",
					   "{\"command\": \"/usr/bin/python3 planner.py\", \"price_per_call\": 0.25}");
	char target[4200], *out = NULL;
	cJSON *doc, *exp;
	double calls;

	snprintf(target, sizeof(target), "%s/examples/targets/flat-shapes.png", src);
	CHECK(test_brushloop((const char *const[]){ "estimate", target, "--machine", machine, "--max-strokes", STROKES,
						    "--json", NULL },
			     &out, NULL) == 0);
	doc = out ? cJSON_Parse(out) : NULL;
	exp = cJSON_GetObjectItem(doc, "expected");
	calls = cJSON_GetNumberValue(cJSON_GetObjectItem(exp, "planner_calls"));
	CHECK(calls >= 1);
	CHECK_NEAR(cJSON_GetNumberValue(cJSON_GetObjectItem(exp, "planner_external_calls")), calls, 0);
	CHECK_NEAR(cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(exp, "priced"), "planner")),
		   0.25 * calls, 1e-9);
	cJSON_Delete(doc);
	free(out);
}

TEST(malformed_json_falls_back_to_the_builtin_planner)
{
	struct outcome o;

	fell_back("malformed", fallback_machine(), "malformed", TO_THE_END, &o);
	outcome_free(&o);
}

TEST(a_schema_violation_falls_back_naming_the_key)
{
	struct outcome o;

	check_fell_back("schema", "malformed");
	run_hostile("schema", fallback_machine(), &o);
	/* The reason names what was wrong, where. */
	CHECK(o.journal && strstr(o.journal, "answer.plan"));
	outcome_free(&o);
}

TEST(an_answer_to_another_request_is_refused)
{
	check_fell_back("wrong_id", "malformed");
}

TEST(a_million_subtasks_are_refused_at_the_size_limit)
{
	check_fell_back("million", "too_large");
}

TEST(a_gigabyte_of_output_is_cut_at_the_size_limit)
{
	check_fell_back("gigabyte", "too_large");
}

TEST(a_planner_that_never_answers_is_late)
{
	check_fell_back_on("never", short_deadline_machine(), "late");
}

TEST(an_answer_after_the_deadline_is_late)
{
	check_fell_back_on("late", short_deadline_machine(), "late");
}

TEST(an_action_past_the_hard_limits_is_refused)
{
	struct outcome o;

	fell_back("hard_limit", fallback_machine(), "action", INTO_THE_PLAN, &o);
	CHECK(o.journal && strstr(o.journal, "\"reason\":\"speed_hard\""));
	outcome_free(&o);
}

TEST(a_stroke_below_the_canvas_floor_is_refused)
{
	struct outcome o;

	fell_back("outside", fallback_machine(), "action", INTO_THE_PLAN, &o);
	CHECK(o.journal && strstr(o.journal, "\"reason\":\"below_floor\""));
	outcome_free(&o);
}

TEST(a_tolerance_looser_than_the_bar_is_refused)
{
	check_fell_back("loose", "tolerance");
}

TEST(a_verification_inside_the_plan_is_a_schema_violation)
{
	check_fell_back("verified_inside", "malformed");
}

/* --max-strokes 10 and a painting of 30 strokes: refused over the budget, and the built-in plans instead. */
TEST(a_plan_over_the_stroke_budget_is_refused)
{
	struct outcome o;

	fell_back_at("over_strokes", fallback_machine(), "10", "over_budget", INTO_THE_PLAN, &o);
	CHECK_STR_CONTAINS(o.journal, "\"field\":\"strokes\",\"message\":\"strokes: 30, more than this phase's budget of 10");
	outcome_free(&o);
}

/*
 * Each correction round answered with the painting again (correction false, a
 * mix of every colour): refused for its phase, and the rounds are the
 * built-in's; the painting's own answer was admitted.
 */
TEST(a_correction_round_answered_with_a_painting_is_refused)
{
	const char *denied = "\"event\":\"planner_denied\",\"data\":{\"reason\":\"phase\",\"subtask\":-1,"
			     "\"action\":-1,\"field\":\"correction\"";
	struct outcome o;
	char *j;

	run_hostile_strokes("uncorrected", fallback_machine(), NULL, "10", &o);
	CHECK_MSG(o.rc == 0 || o.rc == 4, "exit %d: %s", o.rc, o.err ? o.err : "");
	j = o.journal ? o.journal : "";
	CHECK_STR_CONTAINS(j, "\"event\":\"planner_answer\",\"data\":{\"planner\":\"external\",\"phase\":\"plan\"");
	CHECK_STR_CONTAINS(j, denied);
	CHECK_STR_CONTAINS(j, "\"planner\":\"external\",\"phase\":\"correct\",\"round\":1");
	CHECK_STR_CONTAINS(j, "\"event\":\"planner_fallback\",\"data\":{\"reason\":\"phase\",\"round\":1}");
	/* No correction of the external planner's ran: every one admitted is the built-in's. */
	CHECK(strstr(j, "\"event\":\"planner_answer\",\"data\":{\"planner\":\"external\",\"phase\":\"correct\"") == NULL);
	outcome_free(&o);
}

/* "verified", a measured colour, usage and an approval beside the plan: claims, journaled, and nothing more. */
TEST(claims_are_journaled_and_authorise_nothing)
{
	struct outcome o;
	char p[4300];

	run_hostile("claims", fallback_machine(), &o);
	CHECK(o.journal != NULL);
	if (o.journal) {
		CHECK_STR_CONTAINS(o.journal, "\"event\":\"planner_claims\"");
		CHECK_STR_CONTAINS(o.journal, "\"verified\":true");
		CHECK_STR_CONTAINS(o.journal, "\"approval\":{\"request\":\"r000001\"");
		CHECK_STR_CONTAINS(o.journal, "\"event\":\"planner_answer\",\"data\":{\"planner\":\"external\"");
		/* Every verdict is the host's own observation. */
		CHECK_STR_CONTAINS(o.journal, "\"event\":\"verified\"");
		/* What the sandbox held and what its processes used, seen from the host. */
		CHECK_STR_CONTAINS(o.journal, "/examples/planners/grid_planner.py\"],\"start_ms\"");
		CHECK_STR_CONTAINS(o.journal, "\"cpu_user_ms\":");
		CHECK_STR_CONTAINS(o.journal, "\"ended\":\"by itself\"");
	}
	/* The forged approval is no answer the gate would read. */
	snprintf(p, sizeof(p), "%s/approvals/r000001.answer.json", o.dir);
	CHECK(access(p, F_OK) != 0);
	/* The plan names the host's target file, not the path the planner's sandbox showed it. */
	snprintf(p, sizeof(p), "**target**: %s/examples/targets/flat-shapes.png (", getenv("BRUSHLOOP_SRC"));
	CHECK_MSG(o.status && strstr(o.status, p), "STATUS.md does not say '%s'", p);
	outcome_free(&o);
}

TEST(a_refused_answer_pauses_when_the_machine_says_pause)
{
	struct outcome o;

	run_hostile("malformed", machine_with("machine-pause.json", "{\"on_failure\": \"pause\"}"),
		    &o);
	CHECK_MSG(o.rc == 3, "exit %d: %s", o.rc, o.err ? o.err : "");
	CHECK(o.journal && strstr(o.journal, "\"event\":\"planner_denied\",\"data\":{\"reason\":\"malformed\""));
	CHECK(o.journal && !strstr(o.journal, "\"event\":\"planner_fallback\""));
	CHECK(o.status && strstr(o.status, "the external planner's plan (round 0) was refused: malformed"));
	outcome_free(&o);
}

/* The budget brake: a planner allowed one call is asked once; the corrections are the built-in's. */
TEST(a_spent_budget_is_not_asked_again)
{
	struct outcome o;

	run_hostile("claims", machine_with("machine-budget.json",
					   "{\"on_failure\": \"builtin\", \"max_calls\": 1, \"price_per_call\": 0.5}"),
		    &o);
	CHECK_MSG(o.rc == 0, "exit %d: %s", o.rc, o.err ? o.err : "");
	CHECK(o.journal && strstr(o.journal, "\"event\":\"planner_budget\",\"data\":{\"reason\":\"budget\""));
	CHECK(o.journal && strstr(o.journal, "\"planner_external_calls\":1,"));
	outcome_free(&o);
}

/* Each recorded decision, made again from DIR/planner/rN, is the journal's to the byte. */
TEST(decisions_replay_byte_for_byte)
{
	const char *modes[] = { "loose", "claims" };

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct outcome o;
		char *out = NULL, *errs = NULL, *line, *save = NULL;
		int checked = 0;

		run_hostile(modes[i], fallback_machine(), &o);
		CHECK(test_brushloop((const char *const[]){ "planner", "replay", o.dir, NULL }, &out, &errs) == 0);
		for (line = out ? strtok_r(out, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save)) {
			cJSON *r = cJSON_Parse(line), *d = cJSON_GetObjectItem(r, "decision");
			int admitted = cJSON_IsTrue(cJSON_GetObjectItem(d, "admitted"));
			char *s, want[16384];

			cJSON_DeleteItemFromObject(d, "admitted");
			s = cJSON_PrintUnformatted(d);
			/* The journal's data is the decision with the phase's names after it. */
			if (admitted)
				snprintf(want, sizeof(want), "\"event\":\"planner_answer\",\"data\":{\"planner\":\"external\"");
			else
				snprintf(want, sizeof(want), "\"event\":\"planner_denied\",\"data\":%.*s,\"planner\":\"external\"",
					 (int)strlen(s) - 1, s);
			CHECK_MSG(o.journal && strstr(o.journal, want), "%s: %s", modes[i], want);
			checked++;
			cJSON_free(s);
			cJSON_Delete(r);
		}
		CHECK_MSG(checked > 0, "%s: nothing replayed: %s", modes[i], errs ? errs : "");
		free(out);
		free(errs);
		outcome_free(&o);
	}
}

/* A working value left to its share of a limit: the run refuses the external planner with exit 2 before it writes anything. */
TEST(an_unwritten_working_envelope_refuses_the_planner)
{
	const char *path = machine_with("machine-no-move.json", "{\"on_failure\": \"builtin\"}");
	char *text = test_read_file(path), *out;
	cJSON *m = cJSON_Parse(text);
	struct outcome o;
	struct stat sb;

	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(m, "painting"), "move_mm");
	out = cJSON_Print(m);
	test_write_file("machine-no-move.json", out);
	run_hostile("claims", path, &o);
	CHECK_MSG(o.rc == 2, "exit %d", o.rc);
	CHECK(o.err && strstr(o.err, "an external planner needs the working envelope written out"));
	CHECK(stat(o.dir, &sb) != 0);
	outcome_free(&o);
	cJSON_free(out);
	cJSON_Delete(m);
	free(text);
}

/* A TCP listener on the host's 127.0.0.1 on a free port: what arrives waits in its backlog. */
static int listen_loopback(int *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
		return -1;
	*port = ntohs(sa.sin_port);
	return fd;
}

/* What the first connection waiting on fd sent ("" when none came), into buf. */
static void arrived(int fd, char *buf, size_t n)
{
	int c = accept(fd, NULL, NULL);
	ssize_t got = 0;

	buf[0] = '\0';
	if (c < 0)
		return;
	for (int tries = 0; tries < 50 && got <= 0; tries++) {
		got = recv(c, buf, n - 1, MSG_DONTWAIT);
		if (got < 0 && errno == EAGAIN)
			usleep(20000);
	}
	buf[got > 0 ? got : 0] = '\0';
	close(c);
}

/* o's string member key, or "" when it has none. */
static const char *str_or(const cJSON *o, const char *key)
{
	const char *v = cJSON_GetStringValue(cJSON_GetObjectItem(o, key));

	return v ? v : "";
}

static int grant(const char *dir, const char *dest, const char *machine)
{
	const char *args[] = { "grant", dir, "--egress", dest, "--for", "10m", machine ? "--machine" : NULL,
			       machine, NULL };

	return test_brushloop(args, NULL, NULL);
}

/*
 * An egress grant (`brushloop grant --egress`) opens its destination to the
 * planner from the next phase on: before it the broker denies the name, after
 * it the bytes arrive; a revoked grant opens nothing.
 */
TEST(an_egress_grant_opens_its_destination_from_the_next_phase)
{
	char machine[4200];
	int pg, pr, granted = listen_loopback(&pg), revoked = listen_loopback(&pr);
	char mode[64], dest[2][64], got[256], *err = NULL, *journal;
	struct outcome o;

	CHECK(granted >= 0 && revoked >= 0);
	/* machine_with's buffer is its own: the next call reuses it. */
	snprintf(machine, sizeof(machine), "%s",
		 machine_with("machine-egress.json",
			      "{\"on_failure\": \"builtin\", \"answer_deadline_s\": 60, \"egress\": "
			      "{\"default\": \"deny\", \"https\": {\"allow_destinations\": [\"api.example.org:443\"]}}}"));
	snprintf(mode, sizeof(mode), "egress:%d,%d", pg, pr);
	snprintf(dest[0], sizeof(dest[0]), "localhost:%d", pg);
	snprintf(dest[1], sizeof(dest[1]), "localhost:%d", pr);
	run_hostile_with(mode, machine, FIRST_PLAN_ACTION, &o);
	CHECK_MSG(o.rc == 86, "exit %d: %s", o.rc, o.err ? o.err : "");
	CHECK_STR_CONTAINS(o.journal, "\"name\":\"localhost\",\"port\"");
	CHECK_STR_CONTAINS(o.journal, "\"verdict\":\"denied\",\"reason\":\"name not on the allowlist\"");
	arrived(granted, got, sizeof(got));
	CHECK_MSG(got[0] == '\0', "before the grant, \"%s\" arrived", got);

	/* A machine with no planner.egress has no broker to open: refused at once. */
	CHECK(grant(o.dir, dest[0], fallback_machine()) == 2);
	CHECK(test_brushloop((const char *const[]){ "grant", o.dir, "--egress", dest[0], "--kinds", "stroke",
						    "--for", "10m", NULL }, NULL, NULL) == 2);
	CHECK(grant(o.dir, "localhost:0", NULL) == 2);
	CHECK(grant(o.dir, dest[0], machine) == 0);
	CHECK(grant(o.dir, dest[1], NULL) == 0);
	CHECK(test_brushloop((const char *const[]){ "grant", o.dir, "--revoke", "g2", NULL }, NULL, NULL) == 0);
	{
		/* The listing gives an egress grant the shape grants.json does: a destination, no motion. */
		char *list = NULL;
		cJSON *l, *g1, *g2;

		CHECK(test_brushloop((const char *const[]){ "grant", o.dir, "--list", "--json", NULL }, &list,
				     NULL) == 0);
		l = cJSON_Parse(list);
		g1 = cJSON_GetArrayItem(cJSON_GetObjectItem(l, "grants"), 0);
		g2 = cJSON_GetArrayItem(cJSON_GetObjectItem(l, "grants"), 1);
		CHECK_MSG(g1 && g2, "the listing: %s", list ? list : "");
		CHECK_MSG(strcmp(str_or(g1, "egress"), dest[0]) == 0, "g1: %s", list);
		CHECK_MSG(!cJSON_GetObjectItem(g1, "kinds") && !cJSON_GetObjectItem(g1, "max_speed_mm_s"),
			  "an egress grant listed with motion: %s", list);
		CHECK_MSG(strcmp(str_or(g1, "state"), "active") == 0, "g1: %s", list);
		CHECK_MSG(strcmp(str_or(g2, "state"), "revoked") == 0, "g2: %s", list);
		CHECK(cJSON_GetNumberValue(cJSON_GetObjectItem(g2, "wall_s_left")) == 0.0);
		cJSON_Delete(l);
		free(list);
	}
	/* Longer than the machine's safety.max_grant_s (3600 s): written without --machine, opened never. */
	CHECK(test_brushloop((const char *const[]){ "grant", o.dir, "--egress", dest[1], "--for", "2h", NULL },
			     NULL, NULL) == 0);

	/* The run's next phases (its corrections) ask again. */
	int rc = test_brushloop((const char *const[]){ "resume", o.dir, "--quiet", NULL }, NULL, &err);
	CHECK_MSG(rc == 0 || rc == 4, "resume: exit %d: %s", rc, err ? err : "");
	char p[4300];
	snprintf(p, sizeof(p), "%s/journal.jsonl", o.dir);
	journal = test_read_file(p);
	char want[256];
	snprintf(want, sizeof(want), "\"event\":\"egress_grant\",\"data\":{\"destination\":\"%s\"", dest[0]);
	CHECK_STR_CONTAINS(journal, want);
	snprintf(want, sizeof(want), "\"name\":\"localhost\",\"port\":%d,\"address\":\"127.0.0.1\",\"verdict\":\"allowed\"", pg);
	CHECK_STR_CONTAINS(journal, want);
	snprintf(want, sizeof(want), "\"event\":\"egress_grant\",\"data\":{\"destination\":\"%s\"", dest[1]);
	CHECK(journal && strstr(journal, want) == NULL);
	snprintf(want, sizeof(want), "\"grant\":\"g3\",\"destination\":\"%s\",\"reason\":\"lasts longer than safety.max_grant_s\"", dest[1]);
	CHECK_STR_CONTAINS(journal, want);
	arrived(granted, got, sizeof(got));
	CHECK_MSG(strncmp(got, "planner phase ", 14) == 0, "after the grant, \"%s\" arrived", got);
	arrived(revoked, got, sizeof(got));
	CHECK_MSG(got[0] == '\0', "through a revoked grant, \"%s\" arrived", got);
	free(journal);
	free(err);
	outcome_free(&o);
	close(granted);
	close(revoked);
}

/*
 * A planner is given the files it names, one by one: a command that names a
 * folder (here grid_planner.py's) is refused before the run writes anything.
 */
TEST(a_planner_that_names_a_folder_is_refused_at_start)
{
	const char *src = getenv("BRUSHLOOP_SRC");
	char planner[4200], target[4200], dir[4200];
	const char *args[] = { "run", target, "--machine", fallback_machine(), "--out", dir, "--max-strokes", STROKES,
			       "--quiet", "--planner", planner, NULL };
	char *err = NULL;
	struct stat sb;

	snprintf(dir, sizeof(dir), "%s/run-folder", test_tmpdir());
	snprintf(target, sizeof(target), "%s/examples/targets/flat-shapes.png", src);
	snprintf(planner, sizeof(planner), "/usr/bin/python3 %s/tests/planner/hostile_planner.py claims %s/examples/planners",
		 src, src);
	CHECK(test_brushloop(args, NULL, &err) == 2);
	CHECK_STR_CONTAINS(err, "the external planner cannot be run: sandbox: ");
	CHECK_STR_CONTAINS(err, "/examples/planners is a folder");
	CHECK(stat(dir, &sb) != 0);
	free(err);
}

/* No sandbox here (no bwrap on PATH): the run refuses the planner with exit 2 and never runs it. */
TEST(no_sandbox_refuses_the_run)
{
	const char *path = getenv("PATH");
	char *saved = path ? strdup(path) : NULL;
	struct outcome o;
	struct stat sb;

	setenv("PATH", "/nonexistent", 1);
	run_hostile("claims", fallback_machine(), &o);
	if (saved)
		setenv("PATH", saved, 1);
	free(saved);
	CHECK_MSG(o.rc == 2, "exit %d", o.rc);
	CHECK(o.err && strstr(o.err, "cannot be sandboxed"));
	CHECK(stat(o.dir, &sb) != 0); /* refused before anything was written */
	outcome_free(&o);
}

TEST_MAIN(T(estimate_prices_an_external_planners_calls_at_its_rate), T(malformed_json_falls_back_to_the_builtin_planner), T(a_schema_violation_falls_back_naming_the_key),
	  T(an_answer_to_another_request_is_refused), T(a_million_subtasks_are_refused_at_the_size_limit),
	  T(a_gigabyte_of_output_is_cut_at_the_size_limit), T(a_planner_that_never_answers_is_late),
	  T(an_answer_after_the_deadline_is_late), T(an_action_past_the_hard_limits_is_refused),
	  T(a_stroke_below_the_canvas_floor_is_refused), T(a_tolerance_looser_than_the_bar_is_refused),
	  T(a_verification_inside_the_plan_is_a_schema_violation), T(claims_are_journaled_and_authorise_nothing),
	  T(a_refused_answer_pauses_when_the_machine_says_pause), T(a_spent_budget_is_not_asked_again),
	  T(decisions_replay_byte_for_byte), T(an_unwritten_working_envelope_refuses_the_planner),
	  T(no_sandbox_refuses_the_run), T(an_egress_grant_opens_its_destination_from_the_next_phase),
	  T(a_plan_over_the_stroke_budget_is_refused), T(a_correction_round_answered_with_a_painting_is_refused),
	  T(a_planner_that_names_a_folder_is_refused_at_start))

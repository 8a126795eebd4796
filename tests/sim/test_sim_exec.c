/* test_sim_exec.c: `brushloop sim exec` moves the simulated arm only through the safety gate: every decision journaled, operator requests filed and answered, denials that move nothing. */
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "base/fs.h"
#include "base/json.h"
#include "test.h"

static const char *src_path(const char *rel)
{
	static char p[4][4096];
	static int k;
	const char *src = getenv("BRUSHLOOP_SRC");

	k = (k + 1) % 4;
	snprintf(p[k], sizeof(p[k]), "%s/%s", src ? src : ".", rel);
	return p[k];
}

static const char *tmp_path(const char *name)
{
	static char p[4][4096];
	static int k;

	k = (k + 1) % 4;
	snprintf(p[k], sizeof(p[k]), "%s/%s", test_tmpdir(), name);
	return p[k];
}

/* Counts the journal's events named event (and, when result is given, with that result). */
static int count_events(const char *journal, const char *event, const char *result)
{
	char *text = NULL, *line, *save = NULL;
	size_t len;
	int n = 0;

	if (fs_read_file(journal, 1 << 26, &text, &len, NULL))
		return -1;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		cJSON *o = cJSON_Parse(line);
		/* The gate's fields sit under "data" in the run's one journal. */
		const cJSON *e = cJSON_GetObjectItem(o, "event");
		const cJSON *r = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "data"), "result");

		if (cJSON_IsString(e) && strcmp(e->valuestring, event) == 0 &&
		    (!result || (cJSON_IsString(r) && strcmp(r->valuestring, result) == 0)))
			n++;
		cJSON_Delete(o);
	}
	free(text);
	return n;
}

static unsigned char *file_bytes(const char *path, size_t *n)
{
	char *b = NULL;

	if (fs_read_file(path, 1u << 30, &b, n, NULL))
		return NULL;
	return (unsigned char *)b;
}

/* A home, a move faster than the example machine allows unattended (soft 250 mm/s), a park. */
#define FAST                                                                                     \
	"{\"kind\": \"actions\", \"version\": 1, \"actions\": ["                                 \
	"{\"type\": \"home\", \"id\": 1, \"speed_mm_s\": 150},"                                  \
	"{\"type\": \"move\", \"id\": 2, \"speed_mm_s\": 300, \"zones\": [\"travel\"], "         \
	"\"to_mm\": [300, 150, 40]},"                                                            \
	"{\"type\": \"park\", \"id\": 3, \"speed_mm_s\": 150}]}"

TEST(every_kind_passes_the_gate_and_runs_end_to_end)
{
	const char *run = tmp_path("every"), *journal = tmp_path("every/journal.jsonl");
	const char *gate_args[] = { "gate", "check", src_path("examples/actions/every-kind.json"),
				    "--from", "680,480,120", NULL };
	char *out = NULL, *err = NULL;
	cJSON *o = NULL;
	bl_err e;
	int rc;

	/* Checked from the park pose, where a fresh simulated arm starts: all allowed. */
	rc = test_brushloop(gate_args, &out, &err);
	CHECK_MSG(rc == 0, "gate check: %d\n%s%s", rc, out, err);
	CHECK_STR_CONTAINS(out, "16 allowed, 0 need an operator, 0 denied");
	free(out);
	free(err);
	rc = test_brushloop((const char *const[]){ "sim", "exec",
						   src_path("examples/actions/every-kind.json"),
						   "--run", run, "--json", NULL }, &out, &err);
	CHECK_MSG(rc == 0, "%s", err);
	CHECK(json_parse_text(out, "stdout", &o, &e) == 0);
	if (o) {
		const cJSON *per = cJSON_GetObjectItem(o, "per_action");

		CHECK(cJSON_GetObjectItem(o, "executed")->valuedouble == 16);
		CHECK(cJSON_GetArraySize(per) == 16);
		for (const cJSON *p = per ? per->child : NULL; p; p = p->next)
			CHECK(strcmp(cJSON_GetObjectItem(p, "decision")->valuestring, "allow") == 0);
		CHECK(strcmp(cJSON_GetObjectItem(o, "journal")->valuestring, journal) == 0);
		CHECK(cJSON_GetObjectItem(o, "canvas_paint_ml")->valuedouble > 0.05);
		cJSON_Delete(o);
	}
	free(out);
	free(err);
	/* One decision and one execution journaled for every action. */
	CHECK(count_events(journal, "decision", NULL) == 16);
	CHECK(count_events(journal, "executed", "done") == 16);
	CHECK(count_events(journal, "gate_open", NULL) == 1);
}

TEST(an_action_that_needs_an_operator_is_filed_and_exits_3)
{
	const char *actions = test_write_file("fast.json", FAST);
	const char *run = tmp_path("fast"), *world = tmp_path("fast.world");
	const char *journal = tmp_path("fast/journal.jsonl");
	char *out = NULL, *err = NULL, req[4200];
	struct stat st;
	int rc;

	rc = test_brushloop((const char *const[]){ "sim", "exec", actions, "--run", run, "--world",
						   world, NULL }, &out, &err);
	CHECK_MSG(rc == 3, "exit %d: %s", rc, err);
	CHECK_STR_CONTAINS(out, "executed 1 of 3");
	CHECK_STR_CONTAINS(err, "action 1 needs an operator: request r000001");
	CHECK_STR_CONTAINS(err, "brushloop approve");
	CHECK_STR_CONTAINS(err, "--from 1 --world");
	free(out);
	free(err);
	snprintf(req, sizeof(req), "%s/approvals/r000001.json", run);
	CHECK(stat(req, &st) == 0);
	CHECK(count_events(journal, "deferred", NULL) == 1);
	CHECK(count_events(journal, "executed", NULL) == 1);
	/* Going on before anyone answered: still waiting, still nothing moved. */
	rc = test_brushloop((const char *const[]){ "sim", "exec", actions, "--run", run, "--world",
						   world, "--from", "1", NULL }, &out, &err);
	CHECK_MSG(rc == 3, "exit %d: %s", rc, err);
	free(out);
	free(err);
	/* The operator says yes; the run goes on from there after homing the re-opened world. */
	rc = test_brushloop((const char *const[]){ "approve", run, "r000001", NULL }, &out, &err);
	CHECK_MSG(rc == 0, "%s", err);
	free(out);
	free(err);
	rc = test_brushloop((const char *const[]){ "sim", "exec", actions, "--run", run, "--world",
						   world, "--from", "1", "--json", NULL }, &out, &err);
	CHECK_MSG(rc == 0, "exit %d: %s", rc, err);
	CHECK_STR_CONTAINS(out, "\"homing_cycle\":\ttrue");
	CHECK_STR_CONTAINS(out, "\"executed\":\t2");
	free(out);
	free(err);
	CHECK(count_events(journal, "answer", NULL) >= 1);
	/* home; homing while still waiting; homing, move and park. */
	CHECK(count_events(journal, "executed", "done") == 5);
}

TEST(a_denied_action_moves_nothing)
{
	/* test_write_file's path is its own buffer: each file is written just before it is used. */
	const char *actions = test_write_file("off.json",
		"{\"kind\": \"actions\", \"version\": 1, \"actions\": ["
		"{\"type\": \"home\", \"speed_mm_s\": 150},"
		"{\"type\": \"dip\", \"speed_mm_s\": 100, \"brush\": \"round-6\", \"well\": \"w1\", "
		"\"depth_mm\": 3},"
		"{\"type\": \"stroke\", \"speed_mm_s\": 80, \"brush\": \"round-6\", "
		"\"points_mm\": [[300, 150, -0.5], [700, 150, -0.5]]}]}");
	const char *run = tmp_path("off"), *world = tmp_path("off.world");
	const char *two;
	const char *ref = tmp_path("ref.world");
	unsigned char *a, *b;
	size_t na, nb;
	char *out = NULL, *err = NULL;
	int rc;

	/* A stroke off the canvas's edge: denied before the arm hears of it. */
	rc = test_brushloop((const char *const[]){ "sim", "exec", actions, "--run", run, "--world",
						   world, NULL }, &out, &err);
	CHECK_MSG(rc == 2, "exit %d: %s", rc, err);
	CHECK_STR_CONTAINS(err, "denied");
	CHECK_STR_CONTAINS(out, "executed 2 of 3");
	free(out);
	free(err);
	/* The world is exactly what the two allowed actions made of it. */
	two = test_write_file("two.json",
		"{\"kind\": \"actions\", \"version\": 1, \"actions\": ["
		"{\"type\": \"home\", \"speed_mm_s\": 150},"
		"{\"type\": \"dip\", \"speed_mm_s\": 100, \"brush\": \"round-6\", \"well\": \"w1\", "
		"\"depth_mm\": 3}]}");
	rc = test_brushloop((const char *const[]){ "sim", "exec", two, "--world", ref, NULL }, &out,
			    &err);
	CHECK_MSG(rc == 0, "%s", err);
	free(out);
	free(err);
	a = file_bytes(world, &na);
	b = file_bytes(ref, &nb);
	CHECK(a && b && na == nb && memcmp(a, b, na) == 0);
	free(a);
	free(b);
}

/* --ask: the gate asks at the terminal; yes runs the action, anything else is no. */
TEST(ask_mode_asks_at_the_terminal)
{
	const char *actions = test_write_file("ask.json", FAST);
	const char *bin = getenv("BRUSHLOOP");
	char cmd[16384];
	int rc;

	CHECK(bin != NULL);
	if (!bin)
		return;
	snprintf(cmd, sizeof(cmd), "printf 'y\\n' | '%s' sim exec '%s' --run '%s' --ask >'%s' 2>'%s'",
		 bin, actions, tmp_path("ask-yes"), tmp_path("yes.out"), tmp_path("yes.err"));
	rc = system(cmd);
	CHECK_MSG(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "status %d", rc);
	snprintf(cmd, sizeof(cmd), "printf 'n\\n' | '%s' sim exec '%s' --run '%s' --ask >'%s' 2>'%s'",
		 bin, actions, tmp_path("ask-no"), tmp_path("no.out"), tmp_path("no.err"));
	rc = system(cmd);
	CHECK_MSG(WIFEXITED(rc) && WEXITSTATUS(rc) == 2, "status %d", rc);
	{
		char *text = NULL;
		size_t len;

		CHECK(fs_read_file(tmp_path("no.err"), 1 << 20, &text, &len, NULL) == 0);
		CHECK_STR_CONTAINS(text, "Allow? [y/N]");
		CHECK_STR_CONTAINS(text, "the operator said no");
		free(text);
	}
	CHECK(count_events(tmp_path("ask-yes/journal.jsonl"), "executed", "done") == 3);
	CHECK(count_events(tmp_path("ask-no/journal.jsonl"), "executed", "done") == 1);
}

TEST(exec_options_are_checked)
{
	char *out = NULL, *err = NULL;
	int rc;

	rc = test_brushloop((const char *const[]){ "sim", "exec",
						   src_path("examples/actions/every-kind.json"),
						   "--from", "17", NULL }, &out, &err);
	CHECK(rc == 2);
	CHECK_STR_CONTAINS(err, "--from 17");
	free(out);
	free(err);
	rc = test_brushloop((const char *const[]){ "sim", "exec",
						   src_path("examples/actions/every-kind.json"),
						   "--from", "x", NULL }, &out, &err);
	CHECK(rc == 2);
	CHECK_STR_CONTAINS(err, "--from");
	free(out);
	free(err);
	rc = test_brushloop((const char *const[]){ "sim", "render", "-o", tmp_path("f.jpg"), "--ask",
						   NULL }, &out, &err);
	CHECK(rc == 2);
	CHECK_STR_CONTAINS(err, "--ask is an option of sim exec, not of sim render");
	free(out);
	free(err);
}

TEST_MAIN(T(every_kind_passes_the_gate_and_runs_end_to_end),
	  T(an_action_that_needs_an_operator_is_filed_and_exits_3), T(a_denied_action_moves_nothing),
	  T(ask_mode_asks_at_the_terminal), T(exec_options_are_checked))

/* test_planner_proto.c: the planner protocol's pieces: lines against a deadline and a size limit, strict answers, claims kept apart, a machine view without limits. */
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include "test.h"

#include "base/clock.h"
#include "base/fs.h"
#include "base/json.h"
#include "plan/plan_fixture.h"
#include "planner/planner_proto.h"

#define TW 64
#define TH 48

/* A peer on the other end of a socketpair: writes what it is given, after a wait, then holds the line open. */
struct peer {
	int fd;
	const char *text;
	size_t repeat;    /* write text this many times */
	int delay_ms;
	int done;
};

static void *peer_main(void *arg)
{
	struct peer *p = arg;

	if (p->delay_ms)
		usleep((useconds_t)p->delay_ms * 1000);
	for (size_t i = 0; i < p->repeat; i++)
		if (send(p->fd, p->text, strlen(p->text), MSG_NOSIGNAL) < 0)
			break; /* the reader stopped and closed: as the host does */
	while (!__atomic_load_n(&p->done, __ATOMIC_SEQ_CST))
		usleep(1000);
	return NULL;
}

/* Reads one line that the peer writes (text repeated) within deadline_ms, at most max bytes. */
static int read_from_peer(const char *text, size_t repeat, int delay_ms, int deadline_ms, size_t max,
			  struct planner_denial *why, char **line)
{
	int sv[2];
	struct peer p = { 0 };
	pthread_t t;
	size_t n;
	bl_err err = { 0 };
	int rc;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	p.fd = sv[1];
	p.text = text;
	p.repeat = repeat;
	p.delay_ms = delay_ms;
	pthread_create(&t, NULL, peer_main, &p);
	rc = planner_read_line(sv[0], max, clk_real_ns() + (int64_t)deadline_ms * 1000000, line, &n, why, &err);
	close(sv[0]);
	__atomic_store_n(&p.done, 1, __ATOMIC_SEQ_CST);
	pthread_join(t, NULL);
	close(sv[1]);
	return rc;
}

TEST(a_whole_line_is_read_and_the_rest_left)
{
	struct planner_denial why;
	char *line = NULL;

	CHECK(read_from_peer("{\"a\": 1}\n{\"b\": 2}\n", 1, 0, 5000, 1024, &why, &line) == 0);
	CHECK(line && strcmp(line, "{\"a\": 1}") == 0);
	free(line);
}

TEST(a_line_past_the_size_limit_is_too_large)
{
	struct planner_denial why;
	char *line = NULL;

	/* A megabyte without a newline against a 64 KiB limit: reading stops at the limit. */
	CHECK(read_from_peer("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 16384, 0, 20000, 65536, &why,
			     &line) == BL_EDENIED);
	CHECK(why.reason == PLANNER_R_TOO_LARGE && line == NULL);
}

TEST(no_line_within_the_deadline_is_late)
{
	struct planner_denial why;
	char *line = NULL;

	/* Nothing ever comes; then something comes after the deadline. */
	CHECK(read_from_peer("", 0, 0, 200, 1024, &why, &line) == BL_EDENIED && why.reason == PLANNER_R_LATE);
	CHECK(read_from_peer("{}\n", 1, 1500, 200, 1024, &why, &line) == BL_EDENIED && why.reason == PLANNER_R_LATE);
	/* Half a line, then silence, is late too. */
	CHECK(read_from_peer("{\"type\": \"ans", 1, 0, 200, 1024, &why, &line) == BL_EDENIED &&
	      why.reason == PLANNER_R_LATE);
}

TEST(a_closed_end_before_a_line_is_gone)
{
	int sv[2];
	struct planner_denial why;
	char *line = NULL;
	size_t n;
	bl_err err = { 0 };

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK(write(sv[1], "{\"half\":", 8) == 8);
	close(sv[1]);
	CHECK(planner_read_line(sv[0], 1024, clk_real_ns() + 5000000000LL, &line, &n, &why, &err) == BL_EDENIED);
	CHECK(why.reason == PLANNER_R_GONE);
	close(sv[0]);
}

/* A request for target 0 and the text of the built-in planner's answer to it. */
struct fx {
	struct plan_options opt;
	struct plan_inputs in;
	struct planner_request q;
	cJSON *answer;
};

static void fx_init(struct fx *f)
{
	struct machine *m = fixture_machine();
	struct plan p;
	bl_err err = { 0 };

	memset(f, 0, sizeof(*f));
	plan_options_default(&f->opt, m);
	f->in.machine = m;
	f->in.target_hash = "0123456789abcdef";
	f->q.phase = PLANNER_PLAN;
	f->q.in = &f->in;
	f->q.opt = &f->opt;
	CHECK_MSG(fixture_plan(0, TW, TH, 30, 0, &p, &err) == 0, "%s", err.msg);
	f->answer = cJSON_CreateObject();
	cJSON_AddStringToObject(f->answer, "type", "answer");
	cJSON_AddNumberToObject(f->answer, "id", 1);
	cJSON_AddItemToObject(f->answer, "plan", plan_to_json(&p));
	plan_free(&p);
}

static int parse(struct fx *f, struct plan *out, cJSON **claims, struct planner_denial *why)
{
	char *s = cJSON_PrintUnformatted(f->answer);
	bl_err err = { 0 };
	int rc = planner_answer_parse(s, strlen(s), &f->q, 1, out, claims, why, &err);

	cJSON_free(s);
	return rc;
}

static void fx_free(struct fx *f)
{
	cJSON_Delete(f->answer);
}

TEST(an_answer_is_read_strictly)
{
	struct planner_denial why;
	struct plan p;
	bl_err err = { 0 };
	struct fx f;
	cJSON *sub;

	fx_init(&f);
	CHECK(parse(&f, &p, NULL, &why) == 0 && p.n_subtasks > 0);
	plan_free(&p);
	CHECK(planner_answer_parse("{not json", 9, &f.q, 1, &p, NULL, &why, &err) == BL_EDENIED &&
	      why.reason == PLANNER_R_MALFORMED);
	CHECK(planner_answer_parse("{\"type\":\"answer\"}\0x", 19, &f.q, 1, &p, NULL, &why, &err) == BL_EDENIED);
	CHECK(planner_answer_parse("[1,2]", 5, &f.q, 1, &p, NULL, &why, &err) == BL_EDENIED);
	/* Another request's id. */
	cJSON_ReplaceItemInObject(f.answer, "id", cJSON_CreateNumber(2));
	CHECK(parse(&f, &p, NULL, &why) == BL_EDENIED && strcmp(why.field, "id") == 0);
	cJSON_ReplaceItemInObject(f.answer, "id", cJSON_CreateNumber(1));
	/* A key the plan schema does not have, inside a subtask: named with its path. */
	sub = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(f.answer, "plan"), "subtasks"), 1);
	cJSON_AddTrueToObject(sub, "verified");
	CHECK(parse(&f, &p, NULL, &why) == BL_EDENIED && why.reason == PLANNER_R_MALFORMED);
	CHECK_STR_CONTAINS(why.message, "verified");
	fx_free(&f);
}

TEST(what_the_planner_says_of_itself_is_a_claim)
{
	struct planner_denial why;
	struct plan p;
	cJSON *claims = NULL, *big;
	struct fx f;
	char *s;

	fx_init(&f);
	cJSON_AddTrueToObject(f.answer, "verified");
	cJSON_AddItemToObject(f.answer, "usage", cJSON_Parse("{\"tokens\": 1200, \"money\": 0.3}"));
	CHECK(parse(&f, &p, &claims, &why) == 0);
	s = cJSON_PrintUnformatted(claims);
	CHECK_STR_CONTAINS(s, "\"verified\":true");
	CHECK_STR_CONTAINS(s, "\"tokens\":1200");
	cJSON_free(s);
	cJSON_Delete(claims);
	plan_free(&p);
	/* A claim longer than the journal keeps is its size only. */
	big = cJSON_CreateArray();
	for (int i = 0; i < 2000; i++)
		cJSON_AddItemToArray(big, cJSON_CreateString("claim"));
	cJSON_AddItemToObject(f.answer, "story", big);
	CHECK(parse(&f, &p, &claims, &why) == 0);
	CHECK(cJSON_GetObjectItem(claims, "cut_bytes") && !cJSON_GetObjectItem(claims, "story"));
	cJSON_Delete(claims);
	plan_free(&p);
	fx_free(&f);
}

TEST(an_unstated_tolerance_is_the_bar)
{
	struct planner_denial why;
	struct plan p;
	struct fx f;
	cJSON *s;

	fx_init(&f);
	cJSON_ArrayForEach(s, cJSON_GetObjectItem(cJSON_GetObjectItem(f.answer, "plan"), "subtasks")) {
		cJSON_DeleteItemFromObject(s, "tolerance_de00");
		cJSON_DeleteItemFromObject(cJSON_GetObjectItem(s, "expected"), "tolerance_de00");
	}
	CHECK(parse(&f, &p, NULL, &why) == 0);
	for (size_t i = 0; i < p.n_subtasks; i++)
		CHECK(p.subtasks[i].tolerance_de00 == (p.subtasks[i].type == PLAN_MIX ? f.in.machine->tolerances.mix_de00
										   : f.in.machine->tolerances.paint_de00));
	plan_free(&p);
	fx_free(&f);
}

/* Every number of the machine's limits, tolerances, costs and brakes is absent from the view. */
TEST(the_machine_view_holds_no_limit)
{
	const struct machine *m = fixture_machine();
	char path[4200], *text, *s;
	cJSON *file, *view;
	struct plan_options o;
	size_t n;
	bl_err err = { 0 };
	const double secret[] = { m->limits.soft.speed_mm_s, m->limits.hard.speed_mm_s, m->limits.soft.accel_mm_s2,
				  m->limits.hard.accel_mm_s2, m->limits.soft.move_mm,     m->limits.hard.move_mm };

	snprintf(path, sizeof(path), "%s/examples/machine-sim.json", BL_SOURCE_ROOT);
	CHECK(fs_read_file(path, 1 << 20, &text, &n, &err) == 0);
	file = cJSON_Parse(text);
	plan_options_default(&o, m);
	view = planner_machine_view(file, m, &o);
	s = cJSON_PrintUnformatted(view);
	for (size_t i = 0; i < sizeof(secret) / sizeof(secret[0]); i++) {
		char num[32];

		snprintf(num, sizeof(num), ":%g,", secret[i]);
		CHECK_MSG(strstr(s, num) == NULL, "%s in the view", num);
	}
	for (const char *const *k = (const char *const[]){ "limits", "tolerances", "costs", "brakes", "safety",
							   "calibration", "camera", "sim", "unattended", NULL };
	     *k; k++)
		CHECK_MSG(cJSON_GetObjectItem(view, *k) == NULL, "%s in the view", *k);
	CHECK(!strstr(s, "limits") && !strstr(s, "tolerances") && !strstr(s, "connection"));
	CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(view, "motion"), "curve_accel_mm_s2"));
	cJSON_free(s);
	cJSON_Delete(view);
	cJSON_Delete(file);
	free(text);
}

/* The view made from a machine with wider limits and a deeper canvas floor: the same bytes, so no limit can be read off it. */
static char *view_with_limits(const char *dir, double scale, double floor_mm)
{
	char src[4200], path[4200], *text, *s;
	cJSON *file, *lim, *soft, *view;
	struct machine m;
	struct plan_options o;
	size_t n;
	bl_err err = { 0 };

	snprintf(src, sizeof(src), "%s/examples/machine-sim.json", BL_SOURCE_ROOT);
	CHECK(fs_read_file(src, 1 << 20, &text, &n, &err) == 0);
	file = cJSON_Parse(text);
	lim = cJSON_GetObjectItem(file, "limits");
	soft = cJSON_GetObjectItem(lim, "soft");
	for (cJSON *it = soft->child; it; it = it->next)
		cJSON_SetNumberValue(it, it->valuedouble * scale);
	cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(lim, "z_floor_mm"), "canvas"), floor_mm);
	/* The example's relative paths resolve from a copy's folder as from examples/. */
	cJSON_DeleteItemFromObject(file, "calibration");
	snprintf(path, sizeof(path), "%s/machine.json", dir);
	CHECK(json_write_file(path, file, &err) == 0);
	CHECK_MSG(machine_load(path, &m, &err) == 0, "%s", err.msg);
	plan_options_default(&o, &m);
	view = planner_machine_view(file, &m, &o);
	s = cJSON_PrintUnformatted(view);
	cJSON_Delete(view);
	cJSON_Delete(file);
	free(text);
	return s;
}

TEST(the_machine_view_does_not_move_with_the_limits)
{
	const char *dir = test_tmpdir();
	char *narrow, *wide;

	narrow = view_with_limits(dir, 1.0, -1.5);
	wide = view_with_limits(dir, 1.1, -2.5);
	CHECK_MSG(strcmp(narrow, wide) == 0, "views differ:\n%s\n%s", narrow, wide);
	cJSON_free(narrow);
	cJSON_free(wide);
}

TEST(a_verdict_tells_what_and_where_never_the_limit)
{
	struct planner_denial why = { 0 };
	cJSON *v;
	char *s;

	why.reason = PLANNER_R_ACTION;
	why.subtask = 3;
	why.action = 7;
	snprintf(why.field, sizeof(why.field), "speed_mm_s");
	snprintf(why.message, sizeof(why.message), "subtask 3 action 7: speed_mm_s: faster than this machine allows");
	snprintf(why.detail, sizeof(why.detail), "limits.hard.speed_mm_s is 500");
	v = planner_verdict_json(4, &why);
	s = cJSON_PrintUnformatted(v);
	CHECK_STR_CONTAINS(s, "\"admitted\":false");
	CHECK_STR_CONTAINS(s, "\"reason\":\"action\"");
	CHECK(strstr(s, "500") == NULL && strstr(s, "limits.") == NULL);
	cJSON_free(s);
	cJSON_Delete(v);
	v = planner_verdict_json(4, NULL);
	s = cJSON_PrintUnformatted(v);
	CHECK(strcmp(s, "{\"type\":\"verdict\",\"id\":4,\"admitted\":true}") == 0);
	cJSON_free(s);
	cJSON_Delete(v);
}

TEST_MAIN(T(a_whole_line_is_read_and_the_rest_left), T(a_line_past_the_size_limit_is_too_large),
	  T(no_line_within_the_deadline_is_late), T(a_closed_end_before_a_line_is_gone), T(an_answer_is_read_strictly),
	  T(what_the_planner_says_of_itself_is_a_claim), T(an_unstated_tolerance_is_the_bar),
	  T(the_machine_view_holds_no_limit), T(the_machine_view_does_not_move_with_the_limits),
	  T(a_verdict_tells_what_and_where_never_the_limit))

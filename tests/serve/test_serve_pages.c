/* test_serve_pages.c: what the console's pages are sent: the run list's figures as the runs have them (null for what a run has not got), events that carry what changed, the favicon. */
#include <arpa/inet.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "base/clock.h"
#include "base/fs.h"
#include "serve/serve.h"
#include "test.h"

#define TOKEN "0123456789abcdef0123456789abcdef"

/*
 * A run directory NAME under runs/ with run.json and a state.json of the
 * given state, round and subtasks ("done:14,skipped:7"), its canvas observed
 * (mean_de00 >= 0) or not, and a heartbeat file or none.
 */
static void fake_run(const char *name, const char *state, int round, const char *subs, double mean_de00,
		     int heartbeat)
{
	char p[4200], list[8192] = "", *text;
	cJSON *st = cJSON_CreateObject(), *arr;
	int k = 0;

	snprintf(p, sizeof(p), "%s/runs/%s", test_tmpdir(), name);
	CHECK(fs_mkdirs(p, NULL) == 0);
	snprintf(p, sizeof(p), "runs/%s/run.json", name);
	test_write_file(p, "{\"kind\": \"run\"}\n");
	cJSON_AddStringToObject(st, "kind", "run_state");
	cJSON_AddStringToObject(st, "state", state);
	cJSON_AddStringToObject(st, "reason", "as the test says");
	cJSON_AddNumberToObject(st, "round", round);
	cJSON_AddNumberToObject(st, "next", 0);
	arr = cJSON_AddArrayToObject(st, "subtasks");
	snprintf(list, sizeof(list), "%s", subs);
	for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char status[32];
		int n;

		CHECK(sscanf(t, "%31[a-z]:%d", status, &n) == 2);
		for (int i = 0; i < n; i++) {
			cJSON *s = cJSON_CreateObject();
			char sn[16];

			snprintf(sn, sizeof(sn), "s%d", ++k);
			cJSON_AddStringToObject(s, "name", sn);
			cJSON_AddStringToObject(s, "status", status);
			cJSON_AddItemToArray(arr, s);
		}
	}
	cJSON_AddArrayToObject(st, "colours");
	cJSON_AddArrayToObject(st, "canvas_history");
	cJSON_AddNumberToObject(st, "final_mean_de00", mean_de00);
	cJSON_AddNumberToObject(st, "final_p95_de00", mean_de00 >= 0 ? 2 * mean_de00 : -1);
	text = cJSON_Print(st);
	snprintf(p, sizeof(p), "runs/%s/state.json", name);
	test_write_file(p, text);
	free(text);
	cJSON_Delete(st);
	if (heartbeat) {
		snprintf(p, sizeof(p), "runs/%s/heartbeat", name);
		test_write_file(p, "");
	}
}

static struct serve *start(void)
{
	struct serve_options o = { 0 };
	struct serve *s = NULL;
	bl_err err = { 0 };
	char root[4200];

	snprintf(root, sizeof(root), "%s/runs", test_tmpdir());
	o.runs_dir = root;
	o.listen = "127.0.0.1:0";
	o.token = TOKEN;
	CHECK_MSG(serve_start(&o, &s, &err) == 0, "serve_start: %s", err.msg);
	return s;
}

/* A connection to the console with a GET of path sent; -1 when it cannot be made. */
static int open_get(struct serve *s, const char *path)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)serve_port(s)) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	char req[4096];
	int n = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer "
				TOKEN "\r\nConnection: close\r\n\r\n", path, serve_port(s));

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || write(fd, req, (size_t)n) != n) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* The whole response to a GET of path (malloc'd). */
static char *get(struct serve *s, const char *path)
{
	int fd = open_get(s, path);
	size_t cap = 1 << 20, used = 0;
	char *buf = calloc(1, cap + 1);
	ssize_t n;

	while (fd >= 0 && buf && used < cap && (n = read(fd, buf + used, cap - used)) > 0)
		used += (size_t)n;
	if (fd >= 0)
		close(fd);
	return buf;
}

static const cJSON *run_named(const cJSON *runs, const char *name)
{
	const cJSON *r;

	cJSON_ArrayForEach(r, cJSON_GetObjectItem(runs, "runs"))
		if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(r, "name")) ?: "", name))
			return r;
	return NULL;
}

/*
 * The run list carries what its badges and counts need, as the runs have
 * it: the subtasks of the plan under way by status and the round (a finished
 * run's last round is not its progress), the subtasks that wait for a
 * person, and null (not 0) for a canvas never observed and a heartbeat that
 * is not there.
 */
TEST(the_run_list_says_what_each_run_has_and_null_for_what_it_has_not)
{
	struct serve *s;
	char *resp, *body;
	cJSON *j;
	const cJSON *r;

	fake_run("done", "finished", 2, "done:14,skipped:7", 4.29, 1);
	fake_run("waits", "paused", 0, "done:5,deferred:13", 12.5, 1);
	fake_run("blind", "braked", 0, "", -1, 0);
	s = start();
	resp = get(s, "/api/runs");
	body = resp ? strstr(resp, "\r\n\r\n") : NULL;
	j = cJSON_Parse(body ? body + 4 : "");
	CHECK_MSG(j != NULL, "/api/runs: %s", resp ? resp : "(nothing)");
	r = run_named(j, "done");
	CHECK(r && cJSON_GetObjectItem(r, "round") && cJSON_GetObjectItem(r, "round")->valuedouble == 2);
	CHECK(r && cJSON_GetObjectItem(cJSON_GetObjectItem(r, "subtask_counts"), "done") &&
	      cJSON_GetObjectItem(cJSON_GetObjectItem(r, "subtask_counts"), "done")->valuedouble == 14);
	CHECK(r && cJSON_GetObjectItem(cJSON_GetObjectItem(r, "subtask_counts"), "skipped") &&
	      cJSON_GetObjectItem(cJSON_GetObjectItem(r, "subtask_counts"), "skipped")->valuedouble == 7);
	r = run_named(j, "waits");
	CHECK_MSG(r && cJSON_IsNumber(cJSON_GetObjectItem(r, "subtasks_waiting")) &&
		  cJSON_GetObjectItem(r, "subtasks_waiting")->valuedouble == 13,
		  "a run with 13 subtasks deferred does not say they wait");
	r = run_named(j, "blind");
	CHECK_MSG(r && cJSON_IsNull(cJSON_GetObjectItem(r, "mean_de00")) &&
		  cJSON_IsNull(cJSON_GetObjectItem(r, "p95_de00")),
		  "a canvas never observed is not null (%s)", r ? cJSON_PrintUnformatted(r) : "no run");
	CHECK_MSG(r && cJSON_IsNull(cJSON_GetObjectItem(r, "heartbeat_age_s")),
		  "a run without a heartbeat file has an age");
	cJSON_Delete(j);
	free(resp);
	serve_stop(s);
}

/* Reads one server-sent event (up to its blank line) into buf within timeout_ms; its length, 0 on timeout. */
static size_t next_event(int fd, char *buf, size_t cap, int timeout_ms)
{
	size_t used = 0;

	buf[0] = '\0';
	while (used < cap - 1) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t n;
		char *end;

		if (poll(&p, 1, timeout_ms) <= 0 || (n = read(fd, buf + used, 1)) <= 0)
			return 0;
		used += (size_t)n;
		buf[used] = '\0';
		if ((end = strstr(buf, "\n\n")) && strstr(buf, "data: "))
			return used;
	}
	return 0;
}

/* The first event whose text holds needle, within 12 s; its length (0: none came). */
static size_t event_with(int fd, char *buf, size_t cap, const char *needle)
{
	int64_t end = clk_real_ns() + 12 * (int64_t)1000000000;

	while (clk_real_ns() < end) {
		size_t n = next_event(fd, buf, cap, (int)((end - clk_real_ns()) / 1000000) + 1);

		if (!n)
			return 0;
		if (strstr(buf, needle))
			return n;
	}
	return 0;
}

/*
 * A run's page gets the run once, then only what changed: a new reason in
 * state.json comes as a patch holding the reason and not the rest of the run,
 * a journal line appended comes as that line alone.
 */
TEST(the_run_page_gets_the_run_once_then_only_what_changed)
{
	static char ev[1 << 20];
	char p[4200], *text;
	size_t first, n;
	struct serve *s;
	cJSON *st;
	int fd;

	fake_run("live", "running", 0, "done:30,pending:60", 9.5, 1);
	test_write_file("runs/live/journal.jsonl",
			"{\"seq\":1,\"wall_ms\":1,\"mono_ns\":0,\"src\":\"engine\",\"subtask\":\"\",\"event\":\"run_start\",\"data\":{}}\n");
	s = start();
	fd = open_get(s, "/api/runs/live/events");
	CHECK(fd >= 0);
	first = event_with(fd, ev, sizeof(ev), "event: run\n");
	CHECK_MSG(first > 0, "no run event");
	CHECK_STR_CONTAINS(ev, "\"subtask_table\"");
	/* The reason changes, renamed into place as the engine writes it. */
	snprintf(p, sizeof(p), "%s/runs/live/state.json", test_tmpdir());
	CHECK(fs_read_file(p, 1 << 20, &text, NULL, NULL) == 0);
	st = cJSON_Parse(text);
	free(text);
	cJSON_ReplaceItemInObject(st, "reason", cJSON_CreateString("a reason never seen before"));
	text = cJSON_Print(st);
	CHECK(fs_write_atomic(p, text, strlen(text), NULL) == 0);
	free(text);
	cJSON_Delete(st);
	n = event_with(fd, ev, sizeof(ev), "a reason never seen before");
	CHECK_MSG(n > 0, "the new reason never came");
	CHECK_MSG(!strncmp(ev, "event: patch\n", 13), "the change came as: %.60s", ev);
	CHECK_MSG(!strstr(ev, "\"subtask_table\"") && !strstr(ev, "\"files\""),
		  "the patch carries what did not change: %.300s", ev);
	CHECK_MSG(n * 5 < first, "a patch of %zu bytes against the run's %zu", n, first);
	/* A journal line appended: that line, not the journal's tail again. */
	snprintf(p, sizeof(p), "%s/runs/live/journal.jsonl", test_tmpdir());
	{
		FILE *f = fopen(p, "a");

		CHECK(f != NULL);
		if (f) {
			fputs("{\"seq\":2,\"wall_ms\":2,\"mono_ns\":1,\"src\":\"engine\",\"subtask\":\"s31\","
			      "\"event\":\"subtask_start\",\"data\":{\"type\":\"paint\"}}\n", f);
			fclose(f);
		}
	}
	n = event_with(fd, ev, sizeof(ev), "\"journal_add\"");
	CHECK_MSG(n > 0, "the new journal line never came");
	CHECK_STR_CONTAINS(ev, "\"seq\":2");
	CHECK_MSG(!strstr(ev, "\"seq\":1,"), "the journal's old line was sent again");
	close(fd);
	serve_stop(s);
}

/* Every page's browser asks for /favicon.ico: it is the console's icon, never a 404. */
TEST(the_favicon_is_served)
{
	struct serve *s;
	char *resp;

	fake_run("any", "running", 0, "", -1, 1);
	s = start();
	resp = get(s, "/favicon.ico");
	CHECK_MSG(resp && !strncmp(resp, "HTTP/1.1 200", 12), "/favicon.ico: %.40s", resp ? resp : "");
	CHECK_STR_CONTAINS(resp, "Content-Type: image/svg+xml");
	CHECK_STR_CONTAINS(resp, "<svg");
	free(resp);
	resp = get(s, "/");
	CHECK_STR_CONTAINS(resp, "<link rel=\"icon\" href=\"/assets/favicon.svg\"");
	free(resp);
	serve_stop(s);
}

TEST_MAIN(T(the_run_list_says_what_each_run_has_and_null_for_what_it_has_not),
	  T(the_run_page_gets_the_run_once_then_only_what_changed), T(the_favicon_is_served))

/* sbx_run.c: runs a hostile planner in a sandbox and collects its output and events, for the sandbox's tests. */
#include "sbx_run.h"
#include "test.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void collect(void *ctx, const char *event, cJSON *data)
{
	struct hostile_run *r = ctx;
	cJSON *e = cJSON_CreateObject();

	cJSON_AddStringToObject(e, "event", event);
	cJSON_AddItemToObject(e, "data", data ? data : cJSON_CreateNull());
	cJSON_AddItemToArray(r->events, e);
}

static const char *hostile_path(void)
{
	const char *p = getenv("BRUSHLOOP_HOSTILE");

	return p ? p : "tests/sandbox/hostile";
}

int hostile_run(const struct sbx_policy *base, const char *const *args, int timeout_ms,
		struct hostile_run *r, bl_err *err)
{
	const char *argv[32];
	struct sbx_file files[8];
	struct sbx_policy pol = { 0 };
	struct sbx_proc p;
	size_t len = 0;
	int n = 0, nf = 0, rc;

	memset(r, 0, sizeof(*r));
	r->events = cJSON_CreateArray();
	if (base)
		pol = *base;
	/* The planner is the file named, copied in alone: a test may give a copy of it kept elsewhere. */
	argv[n++] = base && base->argv ? base->argv[0] : hostile_path();
	if (sbx_file_open(argv[0], &files[nf++], err))
		return -1;
	for (int i = 0; base && i < base->n_files && nf < 8; i++)
		files[nf++] = base->files[i];
	for (int i = 0; args[i] && n < 31; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	pol.argv = argv;
	pol.files = files;
	pol.n_files = nf;
	pol.log = collect;
	pol.log_ctx = r;
	double t0 = now_ms();
	rc = sbx_start(&pol, &p, err);
	sbx_file_close(&files[0]);
	if (rc < 0)
		return -1;
	/* Read what it says until it closes its end or the time is up. */
	while (len < sizeof(r->out) - 1) {
		int left = timeout_ms - (int)(now_ms() - t0);
		struct pollfd pfd = { .fd = p.fd, .events = POLLIN };

		if (left <= 0 || poll(&pfd, 1, left) <= 0)
			break;
		ssize_t got = read(p.fd, r->out + len, sizeof(r->out) - 1 - len);
		if (got <= 0)
			break;
		len += (size_t)got;
		sbx_pump(&p);
	}
	r->out[len] = '\0';
	int left = timeout_ms - (int)(now_ms() - t0);
	r->ended = sbx_wait(&p, left > 0 ? left : 0, &r->status) == 1;
	sbx_stderr(&p, r->err, sizeof(r->err));
	sbx_stop(&p, &r->status, NULL);
	r->wall_ms = now_ms() - t0;
	return 0;
}

void hostile_free(struct hostile_run *r)
{
	cJSON_Delete(r->events);
	r->events = NULL;
}

const cJSON *hostile_event(const struct hostile_run *r, const char *name, int n)
{
	const cJSON *e;

	cJSON_ArrayForEach(e, r->events) {
		const cJSON *ev = cJSON_GetObjectItemCaseSensitive(e, "event");
		if (cJSON_IsString(ev) && strcmp(ev->valuestring, name) == 0 && n-- == 0)
			return cJSON_GetObjectItemCaseSensitive(e, "data");
	}
	return NULL;
}

int hostile_count(const struct hostile_run *r, const char *name, const char *key, const char *value)
{
	const cJSON *d;
	int n = 0;

	for (int i = 0; (d = hostile_event(r, name, i)); i++) {
		const cJSON *v = key ? cJSON_GetObjectItemCaseSensitive(d, key) : NULL;
		if (!key || (cJSON_IsString(v) && (!value || strcmp(v->valuestring, value) == 0)))
			n++;
	}
	return n;
}

void hostile_check(const struct sbx_policy *pol, const char *const *args, int timeout_ms,
		   struct hostile_run *r)
{
	bl_err err = { 0 };
	int rc = hostile_run(pol, args, timeout_ms, r, &err);

	CHECK_MSG(rc == 0, "sandbox did not start: %s", err.msg);
	CHECK(hostile_count(r, "sandbox_start", NULL, NULL) == 1);
	CHECK(hostile_count(r, "sandbox_stop", NULL, NULL) == 1);
	if (getenv("SBX_DEBUG")) {
		char *t = cJSON_Print(r->events);
		fprintf(stderr, "out: %s\nerr: %s\nevents: %s\n", r->out, r->err, t);
		free(t);
	}
}

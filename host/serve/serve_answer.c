/* serve_answer.c: the operator's answers from the console, through the functions `approve`, `grant` and `resume` call, so the gate and the journal cannot tell the difference but for who answered. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "engine/run.h"
#include "safety/operator.h"
#include "serve/serve_int.h"

#define SERVE_RESUME_WAIT_MS 2000 /* a resume that refuses its answers does so before this */

extern char **environ;

static const char *field(const cJSON *body, const char *key)
{
	return cJSON_GetStringValue(cJSON_GetObjectItem(body, key));
}

static int approve(struct serve *s, struct serve_req *c, const struct serve_run *r,
		   const cJSON *body, const char *by)
{
	const char *id = field(body, "id"), *answer = field(body, "answer");
	bl_err err = { 0 };
	cJSON *o;

	if (!id || !answer || (strcmp(answer, "yes") && strcmp(answer, "no")))
		return serve_send_error(c, 400, "approve needs {\"id\": REQUEST, \"answer\": \"yes\" or \"no\"}");
	if (serve_path_ok(id, &err) || strchr(id, '/'))
		return serve_send_error(c, 400, "no such request: %s", id);
	if (gate_request_answer(r->dir, id, !strcmp(answer, "yes"), by, &err))
		return serve_send_error(c, err.code == BL_EINVAL ? 409 : 500, "%s", err.msg);
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", id);
	cJSON_AddStringToObject(o, "answer", answer);
	cJSON_AddStringToObject(o, "by", by);
	return serve_send_json(c, 200, o);
}

static int grant(struct serve *s, struct serve_req *c, const struct serve_run *r,
		 const cJSON *body, const char *by)
{
	char machine[SERVE_PATH_MAX];
	struct gate_grant g;
	bl_err err = { 0 };
	cJSON *o;

	snprintf(machine, sizeof(machine), "%s/machine.json", r->dir);
	{
		/* The run's own copy of its machine: a grant the gate would ignore is refused now. */
		const struct gate_grant_text t = { .kinds = field(body, "kinds"), .zones = field(body, "zones"),
						   .egress = field(body, "egress"),
						   .max_speed = field(body, "max_speed"), .for_ = field(body, "for"),
						   .by = by, .machine_path = machine };

		if (gate_grant_give(r->dir, &t, &g, &err))
			return serve_send_error(c, err.code == BL_EINVAL ? 400 : 500, "%s", err.msg);
	}
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", g.id);
	cJSON_AddNumberToObject(o, "for_s", g.for_s);
	if (g.egress[0])
		cJSON_AddStringToObject(o, "egress", g.egress);
	else
		cJSON_AddNumberToObject(o, "max_speed_mm_s", g.max_speed_mm_s);
	cJSON_AddStringToObject(o, "by", by);
	return serve_send_json(c, 200, o);
}

static int revoke_grant(struct serve *s, struct serve_req *c, const struct serve_run *r,
		  const cJSON *body, const char *by)
{
	const char *id = field(body, "id");
	bl_err err = { 0 };
	cJSON *o;

	if (!id)
		return serve_send_error(c, 400, "revoke needs {\"id\": GRANT}");
	if (gate_grant_revoke(r->dir, id, &err))
		return serve_send_error(c, err.code == BL_EINVAL ? 400 : 500, "%s", err.msg);
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "revoked", id);
	return serve_send_json(c, 200, o);
}

pid_t serve_child_of(struct serve *s, const char *name)
{
	pid_t pid = 0;

	serve_children_reap(s);
	pthread_mutex_lock(&s->lock);
	for (int i = 0; i < SERVE_CHILDREN_MAX; i++)
		if (s->children[i] > 0 && !strcmp(s->child_run[i], name))
			pid = s->children[i];
	pthread_mutex_unlock(&s->lock);
	return pid;
}

void serve_children_reap(struct serve *s)
{
	pthread_mutex_lock(&s->lock);
	for (int i = 0; i < SERVE_CHILDREN_MAX; i++)
		if (s->children[i] > 0 && waitpid(s->children[i], NULL, WNOHANG) == s->children[i])
			s->children[i] = 0;
	pthread_mutex_unlock(&s->lock);
}

void serve_children_stop(struct serve *s)
{
	/* A resume paints on when the console stops (it is the run, not the console): only its zombie is not left. */
	serve_children_reap(s);
}

/* An answer's text as `resume` takes it: colour, well and colour names, lab:/srgb:/#hex, commas. */
static int answer_text_ok(const char *t)
{
	if (!t || !*t || strlen(t) > 200)
		return 0;
	for (; *t; t++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789,=:#.+-_", *t))
			return 0;
	return 1;
}

/* Starts `brushloop resume DIR --quiet ...answers --answered-by BY`, its stderr in out_fd. */
static int spawn_resume(struct serve *s, const struct serve_run *r, const cJSON *body, const char *by,
			pid_t *pid, int *err_fd, char *why, size_t wn)
{
	const char *argv[16 + RUN_MAX_SUBSTITUTES * 2];
	const cJSON *subs = cJSON_GetObjectItem(body, "substitute"), *it;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	int n = 0, rc, fd;

	argv[n++] = s->exe;
	argv[n++] = "resume";
	argv[n++] = r->dir;
	argv[n++] = "--quiet";
	static const char *const opts[][2] = { { "accept_mix", "--accept-mix" }, { "refilled", "--refilled" } };
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		const char *v = field(body, opts[i][0]);

		if (!v || !*v)
			continue;
		if (!answer_text_ok(v))
			return snprintf(why, wn, "%s: '%.60s' is not a list of names", opts[i][0], v), -1;
		argv[n++] = opts[i][1];
		argv[n++] = v;
	}
	if (subs && !cJSON_IsArray(subs))
		return snprintf(why, wn, "substitute is a list of \"cK=COLOUR\""), -1;
	cJSON_ArrayForEach(it, subs) {
		const char *v = cJSON_GetStringValue(it);

		if (n + 6 >= (int)(sizeof(argv) / sizeof(argv[0])) || !answer_text_ok(v))
			return snprintf(why, wn, "substitute: each is \"cK=COLOUR\", at most %d", RUN_MAX_SUBSTITUTES), -1;
		argv[n++] = "--substitute";
		argv[n++] = v;
	}
	/* A person looked at the second judge's disagreement and the run's verdict stands (docs/review.md). */
	if (cJSON_IsTrue(cJSON_GetObjectItem(body, "overrule_review")))
		argv[n++] = "--overrule-review";
	argv[n++] = "--answered-by";
	argv[n++] = by;
	argv[n] = NULL;
	fd = memfd_create("brushloop-resume-stderr", MFD_CLOEXEC);
	if (fd < 0)
		return snprintf(why, wn, "memfd_create: %s", strerror(errno)), -1;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, fd, 2);
	posix_spawnattr_init(&at);
	/* Its own session: a Ctrl-C meant for the console does not stop the painting. */
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK);
	{
		sigset_t none;

		sigemptyset(&none);
		posix_spawnattr_setsigmask(&at, &none);
	}
	rc = posix_spawn(pid, s->exe, &fa, &at, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (rc) {
		close(fd);
		return snprintf(why, wn, "cannot start %s: %s", s->exe, strerror(rc)), -1;
	}
	*err_fd = fd;
	return 0;
}

static int resume(struct serve *s, struct serve_req *c, const struct serve_run *r,
		  const cJSON *body, const char *by)
{
	char why[512], text[1024];
	int64_t until = clk_real_ns() + (int64_t)SERVE_RESUME_WAIT_MS * 1000000;
	pid_t pid;
	int fd, status = 0, slot = -1, ended = 0;
	ssize_t got;
	cJSON *o;

	if (serve_child_of(s, r->name))
		return serve_send_error(c, 409, "run %s is already going on (resumed from this console)", r->name);
	pthread_mutex_lock(&s->lock);
	for (int i = 0; i < SERVE_CHILDREN_MAX && slot < 0; i++)
		if (s->children[i] <= 0)
			slot = i;
	if (slot >= 0)
		s->children[slot] = -1; /* taken while it starts */
	pthread_mutex_unlock(&s->lock);
	if (slot < 0)
		return serve_send_error(c, 503, "%d resumes are going on already", SERVE_CHILDREN_MAX);
	if (spawn_resume(s, r, body, by, &pid, &fd, why, sizeof(why))) {
		s->children[slot] = 0;
		return serve_send_error(c, 400, "%s", why);
	}
	/* A resume refuses bad answers before it homes the arm: wait that long to say so. */
	while (clk_real_ns() < until) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			ended = 1;
			break;
		}
		nanosleep(&(struct timespec){ 0, 20 * 1000000 }, NULL);
	}
	pthread_mutex_lock(&s->lock);
	s->children[slot] = ended ? 0 : pid;
	snprintf(s->child_run[slot], sizeof(s->child_run[slot]), "%s", r->name);
	pthread_mutex_unlock(&s->lock);
	got = pread(fd, text, sizeof(text) - 1, 0);
	close(fd);
	text[got > 0 ? got : 0] = '\0';
	if (ended && WIFEXITED(status) && WEXITSTATUS(status) == 2)
		return serve_send_error(c, 400, "%s", text[0] ? text : "resume refused its answers");
	o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "pid", pid);
	cJSON_AddBoolToObject(o, "ended", ended);
	if (ended)
		cJSON_AddNumberToObject(o, "exit", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	cJSON_AddStringToObject(o, "by", by);
	return serve_send_json(c, 200, o);
}

static int hold(struct serve *s, struct serve_req *c, const struct serve_run *r,
		const cJSON *body, const char *by)
{
	pid_t pid = serve_child_of(s, r->name);
	cJSON *o;

	if (!pid)
		return serve_send_error(c, 409, "run %s is not painting from this console: hold it where it runs (Ctrl-C)", r->name);
	/* As a first Ctrl-C: the run stops the arm where it is safe and pauses (exit 3). */
	if (kill(pid, SIGINT) < 0)
		return serve_send_error(c, 500, "cannot signal %ld: %s", (long)pid, strerror(errno));
	o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "held", pid);
	return serve_send_json(c, 200, o);
}

static const struct {
	const char *action;
	int (*answer)(struct serve *s, struct serve_req *c, const struct serve_run *r,
		      const cJSON *body, const char *by);
} answers[] = {
	{ "approve", approve },
	{ "grant", grant },
	{ "revoke", revoke_grant },
	{ "resume", resume },
	{ "hold", hold },
};

int serve_answer(struct serve *s, struct serve_req *c, const struct serve_run *r,
		 const char *action)
{
	char by[96];
	bl_err err = { 0 };
	cJSON *body = NULL;
	int status = 400, rc;

	for (size_t i = 0; i < sizeof(answers) / sizeof(answers[0]); i++) {
		if (strcmp(action, answers[i].action))
			continue;
		if (serve_read_json(c, &body, &status, &err))
			return serve_send_error(c, status, "%s", err.msg);
		serve_client_name(c, by, sizeof(by));
		rc = answers[i].answer(s, c, r, body, by);
		cJSON_Delete(body);
		return rc;
	}
	return serve_send_error(c, 404, "no such answer: %s", action);
}

/* planner_ext.c: an external planner behind the planner interface: a fresh sandbox a phase, one request, one answer read against its deadline and size limit, the verdict sent back. */
#include "planner/planner_ext.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/fs.h"
#include "planner/planner_proto.h"
#include "safety/operator.h"
#include "sandbox/sbx.h"

/* After the verdict, how long a planner may take to end by itself before it is killed. */
#define EXT_EXIT_GRACE_MS 1000
/* The verdict is a short line: a planner that does not take it in this long is not waited for. */
#define EXT_VERDICT_MS 1000
/* As the gate's GATE_GRANT_SKEW_MS: how far ahead of the wall clock a grant's issue time may lie. */
#define EXT_GRANT_SKEW_MS 5000

struct ext {
	struct planner_ext_config cfg;
	struct planner_ext_cmd cmd; /* its words and the files it names, opened at the start */
	struct sbx_proc proc;
	int running;
	long id;                   /* the phase under way's request id */
};

static void ext_stop(struct ext *x)
{
	int st;
	bl_err e = { 0 };

	if (!x->running)
		return;
	/* A planner that has said its piece may end by itself; it is killed either way. */
	sbx_wait(&x->proc, EXT_EXIT_GRACE_MS, &st);
	sbx_stop(&x->proc, NULL, &e);
	x->running = 0;
}

/* Keeps the answer's bytes beside the request, so a decision can be replayed from them. */
static void record(const struct ext *x, const char *name, const char *text, size_t n)
{
	char p[CFG_PATH_MAX + 64];
	bl_err e = { 0 };

	if (!x->cfg.record_dir || !x->cfg.record_dir[0])
		return;
	snprintf(p, sizeof(p), "%s/%s", x->cfg.record_dir, name);
	fs_write_atomic(p, text, n, &e);
}

static void ext_log(const struct ext *x, const char *event, cJSON *data)
{
	if (x->cfg.log)
		x->cfg.log(x->cfg.log_ctx, event, data);
	else
		cJSON_Delete(data);
}

static void grant_refused(const struct ext *x, const struct gate_grant *g, const char *why)
{
	cJSON *d = cJSON_CreateObject();

	if (g) {
		cJSON_AddStringToObject(d, "grant", g->id);
		cJSON_AddStringToObject(d, "destination", g->egress);
	}
	cJSON_AddStringToObject(d, "reason", why);
	ext_log(x, "egress_grant_refused", d);
}

/*
 * Opens this phase's broker to every egress grant the operator has in force
 * now, for what is left of it (the broker journals each as egress_grant). A
 * grants file that does not load opens nothing: the policy alone holds.
 */
static void ext_grants(struct ext *x)
{
	struct gate_grants gs;
	int64_t now = clk_wall_ms();
	bl_err e = { 0 };

	if (!x->cfg.grants_dir)
		return;
	if (gate_grants_load(x->cfg.grants_dir, &gs, &e)) {
		grant_refused(x, NULL, e.msg);
		return;
	}
	for (size_t i = 0; i < gs.n; i++) {
		const struct gate_grant *g = &gs.g[i];
		double left_s = gate_grant_wall_left_s(g, now);

		if (!g->egress[0] || left_s <= 0.0)
			continue;
		/* The gate's own rules for a grant: never longer than the machine allows, never from the future. */
		if (g->for_s > x->cfg.max_grant_s) {
			grant_refused(x, g, "lasts longer than safety.max_grant_s");
			continue;
		}
		if (g->issued_wall_ms > now + EXT_GRANT_SKEW_MS) {
			grant_refused(x, g, "issued_wall_ms lies ahead of the wall clock: a grant from the future");
			continue;
		}
		/* The broker holds a grant a day at most; the phase ends long before. */
		if (egress_grant(&x->proc, g->egress, fmin(left_s / 60.0, 24 * 60.0), &e))
			grant_refused(x, g, e.msg);
	}
	gate_grants_free(&gs);
	sbx_pump(&x->proc);
}

static int ext_start(struct ext *x, const struct planner_request *q, struct planner_denial *why, bl_err *err)
{
	struct sbx_policy pol = { 0 };
	bl_err serr = { 0 };

	pol.argv = x->cmd.argv;
	pol.files = x->cmd.files;
	pol.n_files = x->cmd.n_files;
	pol.in_dir = q->world ? q->world->in_dir : NULL;
	pol.cpu_s = x->cfg.cpu_s;
	pol.as_mb = x->cfg.as_mb;
	pol.tmpfs_mb = x->cfg.tmpfs_mb;
	pol.egress = x->cfg.egress;
	pol.log = x->cfg.log;
	pol.log_ctx = x->cfg.log_ctx;
	if (sbx_start(&pol, &x->proc, &serr)) {
		/* The host's own failure (bwrap, files): the planner is not to blame, but it gives no answer. */
		memset(why, 0, sizeof(*why));
		why->reason = PLANNER_R_FAILED;
		why->subtask = why->action = -1;
		snprintf(why->message, sizeof(why->message), "the planner could not be started");
		snprintf(why->detail, sizeof(why->detail), "sandbox: %s", serr.msg);
		(void)err;
		return BL_EDENIED;
	}
	x->running = 1;
	ext_grants(x);
	return 0;
}

static int ext_propose(void *ctx, const struct planner_request *q, struct plan *out, cJSON **claims,
		       struct planner_denial *why, bl_err *err)
{
	struct ext *x = ctx;
	struct planner_limits lim = { x->cfg.max_answer_bytes, x->cfg.answer_deadline_ms };
	cJSON *req;
	char *line = NULL, *text;
	size_t n = 0;
	int64_t deadline;
	int rc;

	memset(out, 0, sizeof(*out));
	if (claims)
		*claims = NULL;
	ext_stop(x); /* a phase is one sandbox: nothing of the last one lives on */
	x->id = q->round + 1;
	if (!(req = planner_request_json(q, x->id, &lim)))
		return bl_fail(err, BL_ENOMEM, "out of memory for the planner's request");
	if ((text = cJSON_PrintUnformatted(req)))
		record(x, "request.json", text, strlen(text));
	cJSON_free(text);
	if ((rc = ext_start(x, q, why, err))) {
		cJSON_Delete(req);
		return rc;
	}
	/* One deadline for the whole exchange: taking the request counts against the answer. */
	deadline = clk_real_ns() + (int64_t)x->cfg.answer_deadline_ms * 1000000;
	rc = planner_write_line(x->proc.fd, req, deadline, err);
	cJSON_Delete(req);
	if (rc) {
		memset(why, 0, sizeof(*why));
		why->reason = PLANNER_R_GONE;
		why->subtask = why->action = -1;
		snprintf(why->message, sizeof(why->message), "the planner did not take the request");
		snprintf(why->detail, sizeof(why->detail), "%s", err->msg);
		return BL_EDENIED;
	}
	if ((rc = planner_read_line(x->proc.fd, x->cfg.max_answer_bytes, deadline, &line, &n, why, err)))
		return rc;
	record(x, "answer.json", line, n);
	rc = planner_answer_parse(line, n, q, x->id, out, claims, why, err);
	free(line);
	return rc;
}

static void ext_told(void *ctx, const struct planner_denial *why)
{
	struct ext *x = ctx;
	cJSON *v;
	bl_err e = { 0 };

	if (!x->running)
		return;
	/* A planner that is gone or late is not told: it would not listen. */
	if (!why || (why->reason != PLANNER_R_GONE && why->reason != PLANNER_R_LATE &&
		     why->reason != PLANNER_R_TOO_LARGE)) {
		if ((v = planner_verdict_json(x->id, why))) {
			planner_write_line(x->proc.fd, v, clk_real_ns() + (int64_t)EXT_VERDICT_MS * 1000000, &e);
			cJSON_Delete(v);
		}
	}
	ext_stop(x);
}

static void ext_close(void *ctx)
{
	struct ext *x = ctx;

	ext_stop(x);
	planner_ext_cmd_free(&x->cmd);
	free(x);
}

static const struct planner_ops ext_ops = {
	.name = "external",
	.propose = ext_propose,
	.told = ext_told,
	.close = ext_close,
};

int planner_ext_split(const char *cmd, char *store, size_t n, const char **argv, int max, bl_err *err)
{
	int argc = 0;
	char *p = store;

	if (strlen(cmd) >= n)
		return bl_fail(err, BL_EINVAL, "the planner command is too long");
	snprintf(store, n, "%s", cmd);
	/* Words split at spaces: the command runs without a shell, so nothing is expanded. */
	while (*p) {
		while (*p == ' ' || *p == '\t')
			*p++ = '\0';
		if (!*p)
			break;
		if (argc == max)
			return bl_fail(err, BL_EINVAL, "the planner command has more than %d words", max);
		argv[argc++] = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
	}
	argv[argc] = NULL;
	if (argc == 0)
		return bl_fail(err, BL_EINVAL, "the planner command is empty");
	return 0;
}

/* Whether path is already among c's files. */
static int has_file(const struct planner_ext_cmd *c, const char *path)
{
	for (int i = 0; i < c->n_files; i++)
		if (!strcmp(c->files[i].path, path))
			return 1;
	return 0;
}

static int add_file(struct planner_ext_cmd *c, const char *path, bl_err *err)
{
	if (has_file(c, path))
		return 0;
	if (c->n_files == PLANNER_EXT_MAX_FILES)
		return bl_fail(err, BL_EINVAL, "the command names more than %d files", PLANNER_EXT_MAX_FILES);
	BL_TRY(sbx_file_open(path, &c->files[c->n_files], err));
	c->n_files++;
	return 0;
}

/*
 * The files the command is given, opened once when the run starts: every
 * absolute path among its words (the script beside its interpreter; /usr is
 * there already) and files. Each is copied into every phase's sandbox at its
 * own path, and nothing beside it is: a word naming a folder, a socket or a
 * missing file refuses the command here.
 */
static int open_files(struct planner_ext_cmd *c, const char *const *files, bl_err *err)
{
	for (int i = 0; c->argv[i]; i++) {
		if (c->argv[i][0] != '/' || !strncmp(c->argv[i], "/usr/", 5) || !strncmp(c->argv[i], "/bin/", 5))
			continue;
		BL_TRY(add_file(c, c->argv[i], err));
	}
	for (int i = 0; files && files[i]; i++)
		BL_TRY(add_file(c, files[i], err));
	return 0;
}

int planner_ext_cmd_init(struct planner_ext_cmd *c, const char *command, const char *const *files,
			 bl_err *err)
{
	size_t n = strlen(command) + 1;
	int rc;

	memset(c, 0, sizeof(*c));
	if (!(c->store = malloc(n)))
		return bl_fail(err, BL_ENOMEM, "out of memory for the command");
	if ((rc = planner_ext_split(command, c->store, n, c->argv, PLANNER_EXT_MAX_ARGS, err)) ||
	    (rc = open_files(c, files, err))) {
		planner_ext_cmd_free(c);
		return rc;
	}
	return 0;
}

void planner_ext_cmd_free(struct planner_ext_cmd *c)
{
	for (int i = 0; i < c->n_files; i++)
		sbx_file_close(&c->files[i]);
	c->n_files = 0;
	free(c->store);
	c->store = NULL;
}

int planner_external(const struct planner_ext_config *cfg, struct planner *out, bl_err *err)
{
	struct ext *x = calloc(1, sizeof(*x));
	int rc;

	if (!x)
		return bl_fail(err, BL_ENOMEM, "out of memory for the planner");
	x->cfg = *cfg;
	x->cfg.files = NULL; /* the caller's list need not outlive this call: the files are opened now */
	if ((rc = planner_ext_cmd_init(&x->cmd, cfg->command, cfg->files, err))) {
		free(x);
		return rc;
	}
	out->ops = &ext_ops;
	out->ctx = x;
	return 0;
}

void planner_ext_record_dir(struct planner *p, const char *dir)
{
	struct ext *x = p->ctx;

	if (p->ops == &ext_ops)
		x->cfg.record_dir = dir;
}

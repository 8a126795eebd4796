/* run_trust.c: what a resume trusts: the inputs as run.json hashed them, the journal's record of what already happened, the simulated world on disk. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/digest.h"
#include "base/fs.h"
#include "base/json.h"
#include "base/strbuf.h"
#include "engine/run_int.h"

/* The largest input a run copies (copy_file's limit). */
#define INPUT_MAX_BYTES (1u << 30)
/* Differences listed by name in a refusal and in the journal; the rest are counted. */
#define DIFF_LISTED 24

/* The run's copies of its inputs, in the order run.json lists them. */
enum input { IN_MACHINE, IN_PALETTE, IN_TARGET, IN_COUNT };
static const char *const input_keys[IN_COUNT] = {
	[IN_MACHINE] = "machine",
	[IN_PALETTE] = "palette",
	[IN_TARGET] = "target",
};

static int input_path(const struct run *r, enum input k, char *out, size_t n, bl_err *err)
{
	switch (k) {
	case IN_MACHINE:
		return run_path(r, "machine.json", out, n, err);
	case IN_PALETTE:
		return run_path(r, "palette.json", out, n, err);
	case IN_TARGET:
		if (snprintf(out, n, "%s", r->target_copy) >= (int)n)
			return bl_fail(err, BL_EINVAL, "%s: path too long", r->target_copy);
		return 0;
	case IN_COUNT:
		break;
	}
	return bl_fail(err, BL_EINVAL, "no such input");
}

int run_inputs_add(const struct run *r, cJSON *run_json, bl_err *err)
{
	cJSON *in = cJSON_AddObjectToObject(run_json, "inputs");

	if (!in)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	for (int k = 0; k < IN_COUNT; k++) {
		char p[RUN_PATH_MAX], dg[BL_DIGEST_HEX];
		int rc;

		if ((rc = input_path(r, (enum input)k, p, sizeof(p), err)) ||
		    (rc = bl_digest_file(p, INPUT_MAX_BYTES, dg, err)))
			return rc;
		cJSON_AddStringToObject(in, input_keys[k], dg);
	}
	return 0;
}

/* ---- what changed in a JSON copy ---- */

struct diff {
	strbuf text;     /* "key: old -> new; ..." for the message */
	cJSON *list;     /* [{"key", "was", "now"}] for the journal */
	int n;
};

static void diff_value(char *buf, size_t n, const cJSON *v)
{
	char *s = v ? cJSON_PrintUnformatted(v) : NULL;

	snprintf(buf, n, "%s", s ? s : "(absent)");
	if (strlen(buf) == n - 1 && n > 4)
		memcpy(buf + n - 4, "...", 4);
	cJSON_free(s);
}

static void diff_add(struct diff *df, const char *key, const cJSON *was, const cJSON *now)
{
	char a[96], b[96];
	cJSON *o;

	if (df->n++ >= DIFF_LISTED)
		return;
	diff_value(a, sizeof(a), was);
	diff_value(b, sizeof(b), now);
	sb_printf(&df->text, "%s%s: %s -> %s", df->n > 1 ? "; " : "", key[0] ? key : "(the file)", a, b);
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "key", key);
	cJSON_AddItemToObject(o, "was", was ? cJSON_Duplicate(was, 1) : cJSON_CreateNull());
	cJSON_AddItemToObject(o, "now", now ? cJSON_Duplicate(now, 1) : cJSON_CreateNull());
	cJSON_AddItemToArray(df->list, o);
}

/* Every key whose value differs between was and now, by its path ("limits.soft.speed_mm_s", "wells[2].capacity_ml"). */
static void diff_json(struct diff *df, const char *key, const cJSON *was, const cJSON *now)
{
	char sub[256];

	if (cJSON_IsObject(was) && cJSON_IsObject(now)) {
		const cJSON *c;

		for (c = was->child; c; c = c->next) {
			snprintf(sub, sizeof(sub), "%s%s%s", key, key[0] ? "." : "", c->string);
			diff_json(df, sub, c, cJSON_GetObjectItemCaseSensitive(now, c->string));
		}
		for (c = now->child; c; c = c->next)
			if (!cJSON_GetObjectItemCaseSensitive(was, c->string)) {
				snprintf(sub, sizeof(sub), "%s%s%s", key, key[0] ? "." : "", c->string);
				diff_add(df, sub, NULL, c);
			}
		return;
	}
	if (cJSON_IsArray(was) && cJSON_IsArray(now) &&
	    cJSON_GetArraySize(was) == cJSON_GetArraySize(now)) {
		const cJSON *a = was->child, *b = now->child;

		for (int i = 0; a && b; i++, a = a->next, b = b->next) {
			snprintf(sub, sizeof(sub), "%s[%d]", key, i);
			diff_json(df, sub, a, b);
		}
		return;
	}
	if (!was || !now || !cJSON_Compare(was, now, 1))
		diff_add(df, key, was, now);
}

/* ---- comparing on resume ---- */

/* One changed input: what the message says and the journal records. */
static int input_changed(const struct run *r, enum input k, const char *path, const cJSON *run_json,
			 const char *was_dg, const char *now_dg, cJSON *changes, strbuf *msg,
			 bl_err *err)
{
	struct diff df = { { 0 }, cJSON_CreateArray(), 0 };
	cJSON *c = cJSON_CreateObject(), *now = NULL;
	int rc = 0;

	sb_init(&df.text);
	cJSON_AddStringToObject(c, "file", path);
	cJSON_AddStringToObject(c, "was_sha256", was_dg);
	cJSON_AddStringToObject(c, "now_sha256", now_dg);
	if (k != IN_TARGET) {
		/* run.json keeps the copies as the run started: the keys whose values differ, old -> new. */
		const cJSON *was = cJSON_GetObjectItemCaseSensitive(run_json, input_keys[k]);

		if ((rc = json_parse_file(path, &now, err)))
			goto out;
		diff_json(&df, "", was, now);
		if (df.n > DIFF_LISTED)
			sb_printf(&df.text, "; and %d more", df.n - DIFF_LISTED);
		sb_printf(msg, "\n  %s changed since the run started (%d key%s differ: %s)", path, df.n,
			  df.n == 1 ? "" : "s", df.n ? df.text.s : "only its layout");
		cJSON_AddItemToObject(c, "differences", df.list);
		df.list = NULL;
		cJSON_AddNumberToObject(c, "keys_differ", df.n);
	} else {
		sb_printf(msg, "\n  %s was replaced since the run started (SHA-256 %.16s... -> %.16s...)",
			  path, was_dg, now_dg);
	}
	cJSON_AddItemToArray(changes, c);
	c = NULL;
	(void)r;
out:
	cJSON_Delete(now);
	cJSON_Delete(c);
	cJSON_Delete(df.list);
	sb_free(&df.text);
	return rc;
}

/* Writes run.json again with the inputs as they are now: an accepted change is the run's from here on. */
static int rebase_run_json(struct run *r, cJSON *root, bl_err *err)
{
	char p[RUN_PATH_MAX];
	cJSON *v;
	int rc;

	cJSON_DeleteItemFromObjectCaseSensitive(root, "inputs");
	for (int k = IN_MACHINE; k <= IN_PALETTE; k++) {
		if ((rc = input_path(r, (enum input)k, p, sizeof(p), err)) ||
		    (rc = json_parse_file(p, &v, err)))
			return rc;
		cJSON_ReplaceItemInObjectCaseSensitive(root, input_keys[k], v);
	}
	if ((rc = run_inputs_add(r, root, err)) || (rc = run_path(r, "run.json", p, sizeof(p), err)))
		return rc;
	return json_write_file(p, root, err);
}

/* Journals the accepted changes; the journal is opened for this one event (the world is not open yet). */
static int journal_changes(struct run *r, cJSON *changes, bl_err *err)
{
	struct journal j = { .fd = -1 };
	char p[RUN_PATH_MAX];
	clk c;
	cJSON *d = cJSON_CreateObject();
	int rc;

	cJSON_AddItemToObject(d, "changes", changes);
	if (r->opt.answered_by)
		cJSON_AddStringToObject(d, "by", r->opt.answered_by);
	clk_virtual_init(&c, 0); /* no time of its own: the run's clock is not open yet */
	if ((rc = run_path(r, "journal.jsonl", p, sizeof(p), err)) ||
	    (rc = journal_open(&j, p, &c, err))) {
		cJSON_Delete(d);
		return rc;
	}
	rc = journal_event(&j, "", "inputs_changed", d, NULL, err);
	journal_close(&j);
	return rc;
}

int run_inputs_verify(struct run *r, bl_err *err)
{
	char p[RUN_PATH_MAX], now_dg[BL_DIGEST_HEX];
	cJSON *root = NULL, *changes = cJSON_CreateArray();
	const cJSON *in;
	strbuf msg;
	int rc, n = 0;

	sb_init(&msg);
	if ((rc = run_path(r, "run.json", p, sizeof(p), err)) || (rc = json_parse_file(p, &root, err)))
		goto out;
	in = cJSON_GetObjectItemCaseSensitive(root, "inputs");
	if (!in)
		goto out; /* a run from before inputs were hashed: nothing to compare with */
	for (int k = 0; k < IN_COUNT; k++) {
		const cJSON *was = cJSON_GetObjectItemCaseSensitive(in, input_keys[k]);
		char ip[RUN_PATH_MAX];

		if ((rc = input_path(r, (enum input)k, ip, sizeof(ip), err)))
			goto out;
		if (!cJSON_IsString(was) || strlen(was->valuestring) != BL_DIGEST_HEX - 1) {
			rc = bl_fail(err, BL_EINVAL, "%s: inputs.%s: must be a SHA-256 (64 hex digits)",
				     p, input_keys[k]);
			goto out;
		}
		if (access(ip, F_OK) != 0) {
			rc = bl_fail(err, BL_EINVAL, "%s is missing: the run started with it and cannot go "
				     "on without it", ip);
			goto out;
		}
		if ((rc = bl_digest_file(ip, INPUT_MAX_BYTES, now_dg, err)))
			goto out;
		if (strcmp(now_dg, was->valuestring) == 0)
			continue;
		n++;
		if ((rc = input_changed(r, (enum input)k, ip, root, was->valuestring, now_dg, changes,
					&msg, err)))
			goto out;
	}
	if (!n)
		goto out;
	if (!msg.s) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
		goto out;
	}
	if (!r->opt.accept_changed) {
		rc = bl_fail(err, BL_EINVAL, "%s: the run's inputs changed since it started, so resume "
			     "will not go on with them:%s\n  to go on with them as they are now (the "
			     "change is journaled): brushloop resume %s --accept-changed",
			     r->dir, msg.s, r->dir);
		goto out;
	}
	rc = journal_changes(r, changes, err);
	changes = NULL;
	if (rc == 0)
		rc = rebase_run_json(r, root, err);
out:
	cJSON_Delete(changes);
	cJSON_Delete(root);
	sb_free(&msg);
	return rc;
}

/* ---- the journal's record ---- */

struct record {
	/*
	 * A subtask began, or an arm action other than homing and parking ran. The run
	 * homes, parks and looks at the blank canvas before it plans, and journals
	 * run_start before its first state.json: a run stopped there has touched no
	 * paint, so planning it again repeats nothing physical.
	 */
	int progress;
	int executed;       /* any arm action ran, homing included (the world was saved) */
	long max_action_id; /* the largest action id the gate decided on (-1: none) */
};

static int record_fn(const cJSON *ev, void *ctx)
{
	struct record *rec = ctx;
	const cJSON *evn = cJSON_GetObjectItemCaseSensitive(ev, "event");
	const cJSON *src = cJSON_GetObjectItemCaseSensitive(ev, "src");
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(ev, "data"), *id = NULL;

	if (!cJSON_IsString(evn) || !cJSON_IsString(src))
		return 0;
	if (!strcmp(src->valuestring, "engine") && !strcmp(evn->valuestring, "subtask_start"))
		rec->progress = 1;
	if (strcmp(src->valuestring, "gate"))
		return 0;
	if (!strcmp(evn->valuestring, "decision"))
		id = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(data, "action"), "id");
	if (!strcmp(evn->valuestring, "executed")) {
		const cJSON *res = cJSON_GetObjectItemCaseSensitive(data, "result");
		const cJSON *kind = cJSON_GetObjectItemCaseSensitive(data, "kind");

		id = cJSON_GetObjectItemCaseSensitive(data, "id");
		if (cJSON_IsString(res) && !strcmp(res->valuestring, "done")) {
			rec->executed = 1;
			if (!cJSON_IsString(kind) ||
			    (strcmp(kind->valuestring, "home") && strcmp(kind->valuestring, "park")))
				rec->progress = 1;
		}
	}
	if (cJSON_IsNumber(id) && id->valuedouble > (double)rec->max_action_id &&
	    id->valuedouble < 1e15)
		rec->max_action_id = (long)id->valuedouble;
	return 0;
}

static int read_record(const struct run *r, struct record *rec, bl_err *err)
{
	char p[RUN_PATH_MAX];
	int rc;

	memset(rec, 0, sizeof(*rec));
	rec->max_action_id = -1;
	if ((rc = run_path(r, "journal.jsonl", p, sizeof(p), err)))
		return rc;
	if (access(p, F_OK) != 0)
		return 0; /* nothing happened yet */
	return journal_read(p, record_fn, rec, NULL, err);
}

int run_files_present(struct run *r, bl_err *err)
{
	static const char *const files[] = { "state.json", "plan.json" };
	struct record rec;
	char p[RUN_PATH_MAX];
	int rc = read_record(r, &rec, err);

	if (rc)
		return rc;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if ((rc = run_path(r, files[i], p, sizeof(p), err)))
			return rc;
		if (rec.progress && access(p, F_OK) != 0)
			return bl_fail(err, BL_EINVAL, "%s is missing, but the journal shows the run "
				       "under way (subtasks begun, arm actions done): starting it over "
				       "would repeat them (dispenses into used cells, strokes over "
				       "paint), so resume refuses; restore the file, or start a new "
				       "run in another directory", p);
	}
	/* The simulated canvas is the canvas: a missing one is refused like a missing real one. */
	if (rec.executed && (r->m.arm_backend == MACHINE_ARM_SIM ||
			     r->m.camera.backend == MACHINE_CAM_SIM)) {
		if ((rc = run_path(r, "world.sim", p, sizeof(p), err)))
			return rc;
		if (access(p, F_OK) != 0)
			return bl_fail(err, BL_EINVAL, "%s is missing, but the journal shows arm actions "
				       "done on it: the simulated canvas, its paint and the arm are in "
				       "it, and resume will not go on with a blank world; restore the "
				       "file, or start a new run in another directory", p);
	}
	return 0;
}

int run_state_catch_up(struct run *r, bl_err *err)
{
	struct record rec;
	cJSON *d;
	int rc = read_record(r, &rec, err);

	if (rc)
		return rc;
	if (rec.max_action_id < r->st.next_action_id)
		return 0;
	/* The journal decides what happened: an id it holds is never handed out again. */
	d = cJSON_CreateObject();
	cJSON_AddNumberToObject(d, "state_next_action_id", (double)r->st.next_action_id);
	cJSON_AddNumberToObject(d, "journal_max_action_id", (double)rec.max_action_id);
	r->st.next_action_id = rec.max_action_id + 1;
	cJSON_AddNumberToObject(d, "next_action_id", (double)r->st.next_action_id);
	return run_event(r, "state_behind_journal", d, err);
}

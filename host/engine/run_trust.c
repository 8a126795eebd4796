/* run_trust.c: what a resume trusts: the inputs as run.json hashed them, the journal's record of what already happened, the simulated world on disk. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
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

/* Journals the accepted changes (the journal is open; the world is not yet). */
static int journal_changes(struct run *r, cJSON *changes, bl_err *err)
{
	cJSON *d = cJSON_CreateObject();

	cJSON_AddItemToObject(d, "changes", changes);
	if (r->opt.answered_by)
		cJSON_AddStringToObject(d, "by", r->opt.answered_by);
	return journal_event(&r->j, "", "inputs_changed", d, NULL, err);
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
			     r->dir_shown, msg.s, r->dir_shown);
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

static int state_named_line(const struct run *r, long *line, char digest[BL_DIGEST_HEX], bl_err *err);

/* A journaled file's name: one the run writes in its directory and binds by digest. */
static int bound_name(const char *f)
{
	int round;
	char tail;

	return !strcmp(f, "plan.json") ||
	       (sscanf(f, "corrections-%d.json%c", &round, &tail) == 1 && round >= 1 && round <= 1000);
}

/* A file_written line: the file's digest as the run wrote it (the last one counts). */
static int note_bound(struct run_record *rec, const cJSON *data, long line, bl_err *err)
{
	const char *f = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(data, "file"));
	const char *dg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(data, "sha256"));
	int k;

	if (!f || !dg || strlen(dg) != BL_DIGEST_HEX - 1 || !bound_name(f))
		return bl_fail(err, BL_EINVAL, "journal.jsonl: line %ld: file_written names no file of the "
			       "run with its SHA-256", line);
	for (k = 0; k < rec->n_bound && strcmp(rec->bound[k].file, f); k++)
		;
	if (k == RUN_MAX_BOUND)
		return bl_fail(err, BL_EINVAL, "journal.jsonl: line %ld: more than %d files written",
			       line, RUN_MAX_BOUND);
	snprintf(rec->bound[k].file, sizeof(rec->bound[k].file), "%s", f);
	memcpy(rec->bound[k].sha256, dg, BL_DIGEST_HEX);
	rec->bound[k].line = line;
	rec->n_bound += k == rec->n_bound;
	return 0;
}

/* A state_saved line: its edits applied to the state the lines before it built. */
static int fold_state(struct run_record *rec, const cJSON *data, long line, const char *dg, bl_err *err)
{
	char what[64];

	if (!rec->state && !(rec->state = cJSON_CreateObject()))
		return bl_fail(err, BL_ENOMEM, "out of memory");
	snprintf(what, sizeof(what), "journal.jsonl: line %ld", line);
	BL_TRY(json_patch(rec->state, cJSON_GetObjectItemCaseSensitive(data, "edits"), what, err));
	rec->state_line = line;
	memcpy(rec->state_digest, dg, BL_DIGEST_HEX);
	return 0;
}

static int record_fn(const cJSON *ev, long line, const char *dg, void *ctx, bl_err *err)
{
	struct run_record *rec = ctx;
	const cJSON *evn = cJSON_GetObjectItemCaseSensitive(ev, "event");
	const cJSON *src = cJSON_GetObjectItemCaseSensitive(ev, "src");
	const cJSON *data = cJSON_GetObjectItemCaseSensitive(ev, "data"), *id = NULL;
	long v;

	if (line == rec->want_line)
		rec->want_seen = !strcmp(dg, rec->want_digest) && cJSON_IsString(evn) &&
				 !strcmp(evn->valuestring, "state_saved") ? 1 : -1;
	if (!cJSON_IsString(evn) || !cJSON_IsString(src))
		return 0;
	if (!strcmp(src->valuestring, "engine")) {
		if (!strcmp(evn->valuestring, "subtask_start"))
			rec->progress = 1;
		if (!strcmp(evn->valuestring, "state_saved"))
			return fold_state(rec, data, line, dg, err);
		if (!strcmp(evn->valuestring, "file_written"))
			return note_bound(rec, data, line, err);
		return 0;
	}
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
	/* Only an id an action can have: the gate decides on no other. */
	if (json_whole(id, 0, ARM_MAX_ID, &v) && v > rec->max_action_id)
		rec->max_action_id = v;
	return 0;
}

void run_record_free(struct run_record *rec)
{
	cJSON_Delete(rec->state);
	rec->state = NULL;
}

int run_journal_open(struct run *r, int existing, bl_err *err)
{
	char p[RUN_PATH_MAX];
	int rc;

	run_record_free(&r->rec);
	memset(&r->rec, 0, sizeof(r->rec));
	r->rec.max_action_id = -1;
	r->rec.want_line = -1;
	if ((rc = state_named_line(r, &r->rec.want_line, r->rec.want_digest, err)) ||
	    (rc = run_path(r, "journal.jsonl", p, sizeof(p), err)))
		return rc;
	clk_virtual_init(&r->pre_clock, 0); /* no time of its own: the run's clock is not open yet */
	return journal_open_run(&r->j, p, r->id, existing ? JOURNAL_EXISTING : 0, record_fn, &r->rec,
				&r->pre_clock, err);
}

int run_files_present(struct run *r, bl_err *err)
{
	static const char *const files[] = { "state.json", "plan.json" };
	const struct run_record *rec = &r->rec;
	char p[RUN_PATH_MAX], dg[BL_DIGEST_HEX];
	int rc;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if ((rc = run_path(r, files[i], p, sizeof(p), err)))
			return rc;
		/* A state the journal holds is rebuilt from it (run_state_trusted). */
		if (i == 0 && rec->state)
			continue;
		if (rec->progress && access(p, F_OK) != 0)
			return bl_fail(err, BL_EINVAL, "%s is missing, but the journal shows the run "
				       "under way (subtasks begun, arm actions done): starting it over "
				       "would repeat them (dispenses into used cells, strokes over "
				       "paint), so resume refuses; restore the file, or start a new "
				       "run in another directory", p);
	}
	/* Each file the run wrote once is the one it wrote: its digest as the journal has it. */
	for (int k = 0; k < rec->n_bound; k++) {
		if ((rc = run_path(r, rec->bound[k].file, p, sizeof(p), err)))
			return rc;
		if (access(p, F_OK) != 0)
			return bl_fail(err, BL_EINVAL, "%s is missing, but the journal (line %ld) shows the "
				       "run wrote it: resume will not go on without it; restore it, or "
				       "start a new run in another directory", p, rec->bound[k].line);
		if ((rc = bl_digest_file(p, INPUT_MAX_BYTES, dg, err)))
			return rc;
		if (strcmp(dg, rec->bound[k].sha256))
			return bl_fail(err, BL_EINVAL, "%s is not the file the run wrote: SHA-256 %.16s... "
				       "now, %.16s... as the journal has it (line %ld). An edited plan is "
				       "never executed; put the run's own back, or start a new run", p,
				       dg, rec->bound[k].sha256, rec->bound[k].line);
	}
	/* The simulated canvas is the canvas: a missing one is refused like a missing real one. */
	if (rec->executed && (r->m.arm_backend == MACHINE_ARM_SIM ||
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
	const struct run_record *rec = &r->rec;
	cJSON *d;

	if (rec->max_action_id < r->st.next_action_id)
		return 0;
	/* The journal decides what happened: an id it holds is never handed out again. */
	d = cJSON_CreateObject();
	cJSON_AddNumberToObject(d, "state_next_action_id", (double)r->st.next_action_id);
	cJSON_AddNumberToObject(d, "journal_max_action_id", (double)rec->max_action_id);
	r->st.next_action_id = rec->max_action_id + 1;
	cJSON_AddNumberToObject(d, "next_action_id", (double)r->st.next_action_id);
	return run_event(r, "state_behind_journal", d, err);
}

/* ---- the state a resume goes on from ---- */

/*
 * The journal line (and its digest) state.json says it reflects, read
 * leniently: a file that is missing or not JSON names none (-1), and the
 * strict reader says what is wrong with it later.
 */
static int state_named_line(const struct run *r, long *line, char digest[BL_DIGEST_HEX], bl_err *err)
{
	char p[RUN_PATH_MAX];
	cJSON *root = NULL;
	const char *dg;
	int rc;

	*line = -1;
	digest[0] = '\0';
	if ((rc = run_path(r, "state.json", p, sizeof(p), err)))
		return rc;
	if (access(p, F_OK) != 0 || json_parse_file(p, &root, NULL))
		return 0;
	dg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "journal_digest"));
	if (!json_whole(cJSON_GetObjectItemCaseSensitive(root, "journal_line"), 0, 1e12, line))
		*line = -1;
	snprintf(digest, BL_DIGEST_HEX, "%s", dg ? dg : "");
	cJSON_Delete(root);
	return 0;
}

/* The state the journal holds, loaded as the run's, the rebuilding journaled: was_line is what state.json named. */
static int state_rebuild(struct run *r, long was_line, const char *why, bl_err *err)
{
	cJSON *root = cJSON_Duplicate(r->rec.state, 1), *d;
	int rc;

	if (!root)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	cJSON_AddStringToObject(root, "run", r->id);
	cJSON_AddNumberToObject(root, "journal_line", (double)r->rec.state_line);
	cJSON_AddStringToObject(root, "journal_digest", r->rec.state_digest);
	rc = run_state_load_json(r, root, "journal.jsonl (its state_saved lines)", err);
	cJSON_Delete(root);
	if (rc)
		return rc;
	if (!(r->saved_state = cJSON_Duplicate(r->rec.state, 1)))
		return bl_fail(err, BL_ENOMEM, "out of memory");
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "why", why);
	cJSON_AddNumberToObject(d, "state_json_line", (double)was_line);
	cJSON_AddNumberToObject(d, "journal_line", (double)r->rec.state_line);
	return run_event(r, "state_rebuilt", d, err);
}

int run_state_trusted(struct run *r, bl_err *err)
{
	const struct run_record *rec = &r->rec;
	char p[RUN_PATH_MAX];
	cJSON *root = NULL;
	const char *run;
	long line = rec->want_line;
	int rc;

	if ((rc = run_path(r, "state.json", p, sizeof(p), err)))
		return rc;
	if (access(p, F_OK) != 0)
		return rec->state ? state_rebuild(r, -1, "state.json is missing", err) : 1;
	if ((rc = json_parse_file(p, &root, err)))
		return rc;
	run = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "run"));
	if (run && strcmp(run, r->id)) {
		rc = bl_fail(err, BL_EINVAL, "%s is of run '%.40s', and this run (run.json, journal.jsonl) "
			     "is '%s': a state from another run is never taken; put this run's back, "
			     "or remove it to have the journal's", p, run, r->id);
		goto out;
	}
	if (line > r->j.seq) {
		rc = bl_fail(err, BL_EINVAL, "%s reflects journal line %ld, and journal.jsonl ends at line "
			     "%ld: the state is ahead of the journal (a state from later on, or the journal "
			     "cut short), so what happened after line %ld is not known; resume refuses",
			     p, line, r->j.seq, r->j.seq);
		goto out;
	}
	if (line >= 1 && rec->want_seen != 1) {
		rc = bl_fail(err, BL_EINVAL, "%s reflects journal line %ld with SHA-256 %.16s..., and "
			     "journal.jsonl's line %ld is another (not that state saved): the state is "
			     "not of this journal; resume refuses", p, line, rec->want_digest, line);
		goto out;
	}
	/* Read strictly first: a damaged file is refused naming its key, whatever the journal holds. */
	if ((rc = run_state_load_json(r, root, p, err)) || !rec->state)
		goto out; /* without states in the journal (an older brushloop's), state.json is all there is */
	if (line == rec->state_line) {
		cJSON *body = cJSON_Duplicate(root, 1);

		if (!body) {
			rc = bl_fail(err, BL_ENOMEM, "out of memory");
			goto out;
		}
		cJSON_DeleteItemFromObjectCaseSensitive(body, "run");
		cJSON_DeleteItemFromObjectCaseSensitive(body, "journal_line");
		cJSON_DeleteItemFromObjectCaseSensitive(body, "journal_digest");
		rc = cJSON_Compare(body, rec->state, 1);
		cJSON_Delete(body);
		if (rc) {
			rc = (r->saved_state = cJSON_Duplicate(rec->state, 1)) ? 0
									: bl_fail(err, BL_ENOMEM, "out of memory");
			goto out;
		}
		rc = state_rebuild(r, line, "state.json differs from the state the journal saved", err);
		goto out;
	}
	rc = state_rebuild(r, line, "state.json is behind the journal", err);
out:
	cJSON_Delete(root);
	return rc;
}

/* ---- links, written files, ids ---- */

int run_links_inside(const struct run *r, bl_err *err)
{
	char real_dir[PATH_MAX];
	DIR *d;
	struct dirent *de;
	size_t n;
	int rc = 0;

	if (!realpath(r->dir, real_dir))
		return bl_fail(err, BL_EINVAL, "%s: %s", r->dir_shown, strerror(errno));
	n = strlen(real_dir);
	if (!(d = opendir(r->dir)))
		return bl_fail(err, BL_EIO, "%s: cannot list: %s", r->dir_shown, strerror(errno));
	while (rc == 0 && (de = readdir(d))) {
		char p[RUN_PATH_MAX], to[PATH_MAX], shown[512];
		struct stat sb;

		if (de->d_name[0] == '.' || run_path(r, de->d_name, p, sizeof(p), NULL) ||
		    lstat(p, &sb) != 0 || !S_ISLNK(sb.st_mode))
			continue;
		/* Inside means under the directory itself, whatever the link's own path says. */
		if (realpath(p, to) && !strncmp(to, real_dir, n) && to[n] == '/')
			continue;
		bl_name_shown(de->d_name, shown, sizeof(shown));
		rc = bl_fail(err, BL_EINVAL, "%s/%s is a link that leads out of the run directory (to "
			     "%.200s): a run's files are its own (another run's approvals or world are "
			     "never taken); put the run's own file there", r->dir_shown, shown,
			     realpath(p, to) ? to : "nowhere");
	}
	closedir(d);
	return rc;
}

int run_file_written(struct run *r, const char *name, bl_err *err)
{
	char p[RUN_PATH_MAX], dg[BL_DIGEST_HEX];
	cJSON *d;
	int rc;

	if ((rc = run_path(r, name, p, sizeof(p), err)) ||
	    (rc = bl_digest_file(p, INPUT_MAX_BYTES, dg, err)))
		return rc;
	d = cJSON_CreateObject();
	cJSON_AddStringToObject(d, "file", name);
	cJSON_AddStringToObject(d, "sha256", dg);
	return run_event(r, "file_written", d, err);
}

int run_id_new(char *out, size_t n, bl_err *err)
{
	unsigned char raw[RUN_ID_LEN / 2];
	size_t got = 0;

	if (n <= RUN_ID_LEN)
		return bl_fail(err, BL_EINVAL, "no room for a run id");
	while (got < sizeof(raw)) {
		ssize_t k = getrandom(raw + got, sizeof(raw) - got, 0);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return bl_fail(err, BL_EIO, "getrandom: %s", strerror(errno));
		got += (size_t)k;
	}
	for (size_t i = 0; i < sizeof(raw); i++) {
		out[2 * i] = "0123456789abcdef"[raw[i] >> 4];
		out[2 * i + 1] = "0123456789abcdef"[raw[i] & 15];
	}
	out[RUN_ID_LEN] = '\0';
	return 0;
}

/* A run of a brushloop from before ids gets one, in run.json first: its journal is adopted with it. */
static int run_id_adopt(struct run *r, bl_err *err)
{
	char p[RUN_PATH_MAX];
	cJSON *root;
	int rc;

	if ((rc = run_id_new(r->id, sizeof(r->id), err)) || (rc = run_path(r, "run.json", p, sizeof(p), err)) ||
	    (rc = json_parse_file(p, &root, err)))
		return rc;
	cJSON_DeleteItemFromObjectCaseSensitive(root, "id");
	cJSON_AddStringToObject(root, "id", r->id);
	cJSON_ReplaceItemInObjectCaseSensitive(root, "version", cJSON_CreateNumber(run_json_format.version));
	rc = json_write_file(p, root, err);
	cJSON_Delete(root);
	return rc;
}

int run_trust_open(struct run *r, bl_err *err)
{
	int rc;

	if ((rc = run_links_inside(r, err)) || (!r->id[0] && (rc = run_id_adopt(r, err))) ||
	    (rc = run_journal_open(r, 1, err)))
		return rc;
	return run_inputs_verify(r, err);
}

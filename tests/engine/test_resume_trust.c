/* test_resume_trust.c: a resume trusts only what the run wrote: changed inputs, missing state, plan or simulated world, impossible state values and a rewound action id are refused or overruled by the journal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "base/digest.h"
#include "base/fs.h"
#include "engine/run_checks.h"
#include "test.h"

/* Small and quick: a flat graphic target, 24 strokes, the power lost after 40 arm actions. */
static const char *src(const char *rel)
{
	static char p[4][4096];
	static int k;
	char *out = p[k++ % 4];

	snprintf(out, 4096, "%s/%s", getenv("BRUSHLOOP_SRC"), rel);
	return out;
}

/* A run in the test's temporary directory, stopped by a simulated power loss part way. */
static const char *stopped_run(const char *name)
{
	static char dir[4096];
	const char *args[] = { "run", src("examples/targets/flat-shapes.png"), "--out", dir,
			       "--max-strokes", "24", "--quiet", "--fault", "power_loss_after=40",
			       NULL };

	snprintf(dir, sizeof(dir), "%s/%s", test_tmpdir(), name);
	CHECK(test_brushloop(args, NULL, NULL) == 86);
	return dir;
}

static char *file_of(const char *dir, const char *name)
{
	char path[4200], *text = NULL;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (fs_read_file(path, 1 << 28, &text, NULL, NULL))
		return NULL;
	return text;
}

static int put_file(const char *dir, const char *name, const char *text)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return fs_write_atomic(path, text, strlen(text), NULL);
}

static int count(const char *text, const char *pat)
{
	int n = 0;

	for (const char *p = text; p && (p = strstr(p, pat)); p++)
		n++;
	return n;
}

/* `brushloop resume DIR [extra]`: its exit status, stderr in *err (malloc'd). */
static int resume(const char *dir, const char *extra, char **err)
{
	const char *args[] = { "resume", dir, "--quiet", extra, NULL };

	*err = NULL;
	return test_brushloop(args, NULL, err);
}

/* The same, the power lost again after the world's 60th action (20 more): exit 86 when it went on. */
static int resume_a_while(const char *dir, const char *extra, char **err)
{
	const char *args[] = { "resume", dir, "--quiet", "--fault", "power_loss_after=60", extra, NULL };

	*err = NULL;
	return test_brushloop(args, NULL, err);
}

/* The JSON file name of the run, edited by fn and written back. */
static void edit_json(const char *dir, const char *name, void (*fn)(cJSON *o))
{
	char *text = file_of(dir, name), *out;
	cJSON *o = text ? cJSON_Parse(text) : NULL;

	CHECK(o != NULL);
	if (!o)
		goto out;
	fn(o);
	out = cJSON_Print(o);
	CHECK(out && put_file(dir, name, out) == 0);
	free(out);
	cJSON_Delete(o);
out:
	free(text);
}

static void faster_and_lower(cJSON *m)
{
	cJSON *lim = cJSON_GetObjectItem(m, "limits");

	cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(lim, "soft"), "speed_mm_s"), 400);
	cJSON_SetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(lim, "z_floor_mm"), "canvas"), -3);
}

TEST(an_edited_machine_is_refused_unless_accepted_and_journaled)
{
	const char *dir = stopped_run("edited-machine");
	char *err = NULL, *journal;

	edit_json(dir, "machine.json", faster_and_lower);
	CHECK(resume(dir, NULL, &err) == 2);
	CHECK_STR_CONTAINS(err, "machine.json changed since the run started");
	CHECK_STR_CONTAINS(err, "limits.soft.speed_mm_s: 250 -> 400");
	CHECK_STR_CONTAINS(err, "limits.z_floor_mm.canvas: -1.5 -> -3");
	CHECK_STR_CONTAINS(err, "--accept-changed");
	free(err);
	journal = file_of(dir, "journal.jsonl");
	CHECK(journal && count(journal, "\"event\":\"resume\"") == 0); /* nothing went on */
	free(journal);
	/* Said explicitly: journaled with the differences, and the run goes on. */
	CHECK(resume_a_while(dir, "--accept-changed", &err) == 86);
	free(err);
	journal = file_of(dir, "journal.jsonl");
	CHECK(journal && count(journal, "\"event\":\"resume\"") == 1);
	CHECK(journal && count(journal, "\"event\":\"inputs_changed\"") == 1);
	CHECK_STR_CONTAINS(journal, "{\"key\":\"limits.soft.speed_mm_s\",\"was\":250,\"now\":400}");
	CHECK_STR_CONTAINS(journal, "{\"key\":\"limits.z_floor_mm.canvas\",\"was\":-1.5,\"now\":-3}");
	free(journal);
	/* The machine as accepted is the run's from here on: run.json holds its hash. */
	{
		char path[4200], dg[BL_DIGEST_HEX], *rj = file_of(dir, "run.json");

		snprintf(path, sizeof(path), "%s/machine.json", dir);
		CHECK(bl_digest_file(path, 1 << 26, dg, NULL) == 0);
		CHECK_STR_CONTAINS(rj, dg);
		free(rj);
	}
}

static void renamed_paint(cJSON *pal)
{
	cJSON *p = cJSON_GetArrayItem(cJSON_GetObjectItem(pal, "paints"), 0);

	cJSON_ReplaceItemInObject(p, "name", cJSON_CreateString("renamed"));
}

TEST(a_replaced_target_or_palette_is_refused)
{
	const char *dir = stopped_run("replaced-target");
	char *was = NULL, *other = NULL;
	char *err = NULL, path[4200];
	size_t was_len = 0, other_len = 0;

	snprintf(path, sizeof(path), "%s/target.png", dir);
	CHECK(fs_read_file(path, 1 << 26, &was, &was_len, NULL) == 0);
	CHECK(fs_read_file(src("examples/targets/still-life.png"), 1 << 26, &other, &other_len,
			   NULL) == 0);
	CHECK(other && fs_write_atomic(path, other, other_len, NULL) == 0);
	CHECK(resume(dir, NULL, &err) == 2);
	CHECK_STR_CONTAINS(err, "target.png was replaced since the run started");
	free(err);
	CHECK(was && fs_write_atomic(path, was, was_len, NULL) == 0);
	/* A palette whose first paint is renamed: the key is named, old -> new. */
	edit_json(dir, "palette.json", renamed_paint);
	CHECK(resume(dir, NULL, &err) == 2);
	CHECK_STR_CONTAINS(err, "palette.json changed since the run started (1 key differ");
	CHECK_STR_CONTAINS(err, "paints[0].name: ");
	CHECK_STR_CONTAINS(err, "-> \"renamed\"");
	free(err);
	free(was);
	free(other);
}

TEST(a_missing_plan_or_world_of_a_run_under_way_is_refused)
{
	static const char *const files[] = { "plan.json", "world.sim" };
	const char *dir = stopped_run("missing-files");
	char *journal = file_of(dir, "journal.jsonl");

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[4200], aside[4300], *err = NULL, *now;

		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		snprintf(aside, sizeof(aside), "%s.aside", path);
		CHECK(rename(path, aside) == 0);
		CHECK_MSG(resume(dir, NULL, &err) == 2, "%s: not refused", files[i]);
		CHECK_STR_CONTAINS(err, files[i]);
		CHECK_STR_CONTAINS(err, "is missing");
		free(err);
		/* Refused before anything was written: the journal is as it was. */
		now = file_of(dir, "journal.jsonl");
		CHECK_MSG(now && journal && !strcmp(now, journal), "%s: the journal changed", files[i]);
		free(now);
		CHECK(rename(aside, path) == 0);
	}
	free(journal);
}

/*
 * A kill can land after run_start is journaled and before the first state.json is
 * written: only homing and a look at the blank canvas happened, so resume plans again.
 */
TEST(a_run_stopped_before_its_first_state_plans_again)
{
	const char *dir = stopped_run("before-first-state");
	char *journal = file_of(dir, "journal.jsonl"), *cut, *err = NULL, path[4200];

	CHECK(journal != NULL);
	if (!journal)
		return;
	cut = strstr(journal, "\"event\":\"run_start\"");
	CHECK(cut != NULL && (cut = strchr(cut, '\n')) != NULL);
	if (cut) {
		cut[1] = '\0';
		CHECK(put_file(dir, "journal.jsonl", journal) == 0);
	}
	free(journal);
	snprintf(path, sizeof(path), "%s/state.json", dir);
	CHECK(unlink(path) == 0);
	CHECK_MSG(resume_a_while(dir, NULL, &err) == 86, "resume refused: %s", err ? err : "");
	free(err);
	journal = file_of(dir, "journal.jsonl");
	CHECK(journal && count(journal, "\"event\":\"run_start\"") == 2);
	free(journal);
}

static void dancing(cJSON *st)
{
	cJSON_ReplaceItemInObject(st, "state", cJSON_CreateString("dancing"));
}

static void well_below_empty(cJSON *st)
{
	cJSON *w = cJSON_GetArrayItem(cJSON_GetObjectItem(st, "wells"), 0);

	cJSON_SetNumberValue(cJSON_GetObjectItem(w, "left_ml"), -50);
}

static void well_over_full(cJSON *st)
{
	cJSON *w = cJSON_GetArrayItem(cJSON_GetObjectItem(st, "wells"), 1);

	cJSON_SetNumberValue(cJSON_GetObjectItem(w, "left_ml"), 1e5);
}

static void more_strokes_done_than_planned(cJSON *st)
{
	cJSON_SetNumberValue(cJSON_GetObjectItem(st, "strokes_done"), 1e6);
}

static void a_cell_the_machine_lacks(cJSON *st)
{
	cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(st, "colours"), 0);

	cJSON_ReplaceItemInObject(c, "cell", cJSON_CreateString("c99"));
}

TEST(impossible_state_values_are_refused_naming_the_key)
{
	static const struct {
		void (*edit)(cJSON *st);
		const char *key;
	} cases[] = {
		{ dancing, "state: 'dancing' is not a run state" },
		{ well_below_empty, "wells[0].left_ml: -50 is out of range" },
		{ well_over_full, "wells[1].left_ml" },
		{ more_strokes_done_than_planned, "strokes_done" },
		{ a_cell_the_machine_lacks, "colours[0].cell: 'c99' is no mixing cell" },
	};
	const char *dir = stopped_run("impossible-state");
	char *good = file_of(dir, "state.json");

	for (size_t i = 0; good && i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *err = NULL;

		edit_json(dir, "state.json", cases[i].edit);
		CHECK_MSG(resume(dir, NULL, &err) == 2, "case %zu (%s) not refused", i, cases[i].key);
		CHECK_STR_CONTAINS(err, "state.json");
		CHECK_STR_CONTAINS(err, cases[i].key);
		free(err);
		CHECK(put_file(dir, "state.json", good) == 0);
	}
	free(good);
}

/* Every action id the gate decided on, with the action it stood for, in journal order. */
struct ids {
	long id[4096];
	char *action[4096];
	int n, reused;
	long max_before;  /* largest engine id before the resume */
	int after_resume;
};

static void scan_ids(const char *journal, struct ids *s)
{
	char *text = strdup(journal), *save = NULL;

	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		cJSON *o = cJSON_Parse(line);
		const char *ev = cJSON_GetStringValue(cJSON_GetObjectItem(o, "event"));
		cJSON *a = cJSON_GetObjectItem(cJSON_GetObjectItem(o, "data"), "action");
		cJSON *id = cJSON_GetObjectItem(a, "id");

		if (ev && !strcmp(ev, "resume"))
			s->after_resume = 1;
		if (ev && !strcmp(ev, "decision") && cJSON_IsNumber(id) &&
		    id->valuedouble >= 100000000.0 && s->n < 4096) {
			char *txt = cJSON_PrintUnformatted(a);

			/* An id handed out again stands for another action: reused. */
			for (int k = 0; k < s->n; k++)
				if (s->id[k] == (long)id->valuedouble && strcmp(s->action[k], txt))
					s->reused++;
			if (!s->after_resume && (long)id->valuedouble > s->max_before)
				s->max_before = (long)id->valuedouble;
			s->id[s->n] = (long)id->valuedouble;
			s->action[s->n++] = txt;
		}
		cJSON_Delete(o);
	}
	free(text);
}

static void rewound(cJSON *st)
{
	cJSON_SetNumberValue(cJSON_GetObjectItem(st, "next_action_id"), 100000000);
}

TEST(a_rewound_next_action_id_reuses_no_id)
{
	const char *dir = stopped_run("rewound-id");
	struct ids s = { .max_before = -1 };
	char *err = NULL, *journal;

	edit_json(dir, "state.json", rewound);
	CHECK(resume_a_while(dir, NULL, &err) == 86);
	free(err);
	journal = file_of(dir, "journal.jsonl");
	CHECK(journal != NULL);
	if (journal)
		scan_ids(journal, &s);
	CHECK(s.max_before >= 100000000); /* the engine had made actions of its own */
	CHECK(s.n > 0 && s.id[s.n - 1] > s.max_before); /* and made more after the resume */
	CHECK_MSG(s.reused == 0, "%d decisions on ids that stood for other actions", s.reused);
	CHECK(journal && count(journal, "\"event\":\"state_behind_journal\"") == 1);
	for (int k = 0; k < s.n; k++)
		free(s.action[k]);
	free(journal);
}

/*
 * An action id in the journal just under 1e15 is no id an action can have
 * (the gate takes ids up to 1e12): it is not taken as the largest handed
 * out. On c35509f the first resume took it, handed out ids past 1e15, and
 * the next resume refused: "next_action_id: ... out of range [1e8, 1e15]".
 */
TEST(an_action_id_near_1e15_leaves_the_run_resumable)
{
	const char *dir = stopped_run("id-near-1e15");
	char *journal = file_of(dir, "journal.jsonl"), *p, *err = NULL;
	int rc;

	CHECK(journal && (p = strstr(journal, "\"id\":100000000,")) != NULL);
	if (!journal || !p) {
		free(journal);
		return;
	}
	/* Every mention of the run's first own action (the park before the blank canvas) */
	while ((p = strstr(journal, "\"id\":100000000,"))) {
		size_t n = strlen(journal) + 8;
		char *edited = malloc(n);

		snprintf(edited, n, "%.*s\"id\":999999999999999,%s", (int)(p - journal), journal,
			 p + strlen("\"id\":100000000,"));
		free(journal);
		journal = edited;
	}
	CHECK(put_file(dir, "journal.jsonl", journal) == 0);
	free(journal);
	/*
	 * Its chain made whole again (else the resume refuses the journal first),
	 * and state.json, which names a line by the digest it had, taken away:
	 * the resume rebuilds the state from this journal.
	 */
	CHECK(run_journal_rechain(dir) == 0);
	{
		char path[4200];

		snprintf(path, sizeof(path), "%s/state.json", dir);
		CHECK(unlink(path) == 0);
	}
	rc = resume_a_while(dir, NULL, &err);
	CHECK_MSG(rc == 86, "the first resume exited %d: %s", rc, err ? err : "");
	free(err);
	{
		/* The next goes on too (the power lost once more, 20 actions later). */
		const char *args[] = { "resume", dir, "--quiet", "--fault", "power_loss_after=80", NULL };

		rc = test_brushloop(args, NULL, &err);
		CHECK_MSG(rc == 86, "the next resume exited %d: %s", rc, err ? err : "");
		free(err);
	}
}

/* A copy of the run's file name (bytes, a world too) as name.kept; put_back renames it back. */
static void keep(const char *dir, const char *name)
{
	char from[4200], to[4300], *bytes = NULL;
	size_t len = 0;

	snprintf(from, sizeof(from), "%s/%s", dir, name);
	snprintf(to, sizeof(to), "%s.kept", from);
	CHECK(fs_read_file(from, 1 << 28, &bytes, &len, NULL) == 0);
	CHECK(bytes && fs_write_atomic(to, bytes, len, NULL) == 0);
	free(bytes);
}

static void put_back(const char *dir, const char *name)
{
	char from[4200], to[4200];

	snprintf(from, sizeof(from), "%s/%s.kept", dir, name);
	snprintf(to, sizeof(to), "%s/%s", dir, name);
	CHECK(rename(from, to) == 0);
}

/*
 * An older state.json put back (kept when the run stopped first, put back
 * after it went on), and state.json deleted: the journal holds every state
 * saved, so resume rebuilds the state from it (journaled state_rebuilt)
 * and no finished subtask runs again, no cell over its limit. On c35509f the
 * older state was trusted: finished subtasks ran again and cells m5 and m6
 * took 6 ml against cell_max_ml 3.
 */
TEST(an_older_or_missing_state_is_rebuilt_from_the_journal)
{
	const char *dir = stopped_run("older-state");
	char *err = NULL, *journal, path[4200];
	const char *more[] = { "resume", dir, "--quiet", "--fault", "power_loss_after=120", NULL };
	int rc;

	keep(dir, "state.json");
	CHECK(test_brushloop(more, NULL, NULL) == 86);
	put_back(dir, "state.json");
	{
		const char *args[] = { "resume", dir, "--quiet", "--fault", "power_loss_after=160", NULL };

		rc = test_brushloop(args, NULL, &err);
		CHECK_MSG(rc == 86, "resume with the older state exited %d: %s", rc, err ? err : "");
		free(err);
	}
	snprintf(path, sizeof(path), "%s/state.json", dir);
	CHECK(unlink(path) == 0);
	rc = resume(dir, NULL, &err);
	CHECK_MSG(rc == 0, "resume without state.json exited %d: %s", rc, err ? err : "");
	free(err);
	journal = file_of(dir, "journal.jsonl");
	CHECK(count(journal, "\"event\":\"state_rebuilt\"") == 2);
	CHECK_STR_CONTAINS(journal, "\"why\":\"state.json is behind the journal\"");
	CHECK_STR_CONTAINS(journal, "\"why\":\"state.json is missing\"");
	free(journal);
	CHECK_MSG(run_done_subtasks_worked_again(dir) == 0, "finished subtasks ran again");
	CHECK(run_dispenses_repeated(dir, NULL) == 0);
	run_check_cells_within_capacity(dir);
}

/* The run id of run dir (run.json's), in a static buffer. */
static const char *run_id(const char *dir)
{
	static char id[64];
	char *text = file_of(dir, "run.json");
	cJSON *o = text ? cJSON_Parse(text) : NULL;

	snprintf(id, sizeof(id), "%s", cJSON_GetStringValue(cJSON_GetObjectItem(o, "id")) ?: "");
	cJSON_Delete(o);
	free(text);
	return id;
}

/* Copies name from run src into run dir. */
static void copy_over(const char *src, const char *dir, const char *name)
{
	char from[4200], to[4200], *text = NULL;
	size_t len = 0;

	snprintf(from, sizeof(from), "%s/%s", src, name);
	snprintf(to, sizeof(to), "%s/%s", dir, name);
	CHECK(fs_read_file(from, 1 << 28, &text, &len, NULL) == 0);
	CHECK(text && fs_write_atomic(to, text, len, NULL) == 0);
	free(text);
}

/* Resume refuses (exit 2) with err naming each of want (NULL-ended), the journal untouched. */
static void refused(const char *dir, const char *what, const char *const *want)
{
	char *before = file_of(dir, "journal.jsonl"), *now, *err = NULL;
	int rc = resume(dir, NULL, &err);

	CHECK_MSG(rc == 2, "%s: resume exited %d, not 2 (refused): %s", what, rc, err ? err : "");
	for (int i = 0; want[i]; i++)
		CHECK_MSG(err && strstr(err, want[i]), "%s: '%s' does not say '%s'", what, err ? err : "",
			  want[i]);
	free(err);
	now = file_of(dir, "journal.jsonl");
	CHECK_MSG(!before || (now && !strcmp(before, now)), "%s: the refused resume wrote the journal", what);
	free(before);
	free(now);
}

/*
 * Another run of the same plan: its state.json, its journal.jsonl, its
 * world.sim (copied, or linked), its approvals/ (linked) are refused, the
 * message naming both runs or the file; a state ahead of the journal (the
 * journal cut after it) and an edited plan.json likewise; with the
 * journal deleted (alone, or with state.json or world.sim) the run is never
 * started over. Each was taken on c35509f.
 */
TEST(another_runs_files_an_edited_plan_or_a_lost_journal_are_refused)
{
	char a[4200], b[4200], la[4300], lb[4300];
	const char *ids[3] = { NULL, NULL, NULL };
	char ida[64], idb[64];

	snprintf(a, sizeof(a), "%s", stopped_run("trust-a"));
	snprintf(b, sizeof(b), "%s", stopped_run("trust-b"));
	snprintf(ida, sizeof(ida), "%s", run_id(a));
	snprintf(idb, sizeof(idb), "%s", run_id(b));
	ids[0] = ida;
	ids[1] = idb;
	keep(a, "state.json");
	copy_over(b, a, "state.json");
	refused(a, "another run's state.json", ids);
	put_back(a, "state.json");
	keep(a, "journal.jsonl");
	copy_over(b, a, "journal.jsonl");
	refused(a, "another run's journal", (const char *[]){ "journal.jsonl: line 1 is of run", NULL });
	put_back(a, "journal.jsonl");
	keep(a, "world.sim");
	copy_over(b, a, "world.sim");
	refused(a, "another run's world.sim", (const char *[]){ "is another run's world", NULL });
	put_back(a, "world.sim");
	/* Links out of the run directory: to the other run's world, and its approvals. */
	snprintf(la, sizeof(la), "%s/world.sim", a);
	snprintf(lb, sizeof(lb), "%s/world.sim", b);
	keep(a, "world.sim");
	CHECK(unlink(la) == 0 && symlink(lb, la) == 0);
	refused(a, "world.sim linked to another run's", (const char *[]){ "world.sim is a link that leads out", NULL });
	CHECK(unlink(la) == 0);
	put_back(a, "world.sim");
	snprintf(la, sizeof(la), "%s/approvals", a);
	snprintf(lb, sizeof(lb), "%s/approvals", b);
	CHECK(rmdir(la) == 0 && symlink(lb, la) == 0);
	refused(a, "approvals linked to another run's", (const char *[]){ "approvals is a link that leads out", NULL });
	CHECK(unlink(la) == 0 && mkdir(la, 0755) == 0);
	/* The journal cut after the line state.json names: the state is ahead of it. */
	{
		char *j = file_of(a, "journal.jsonl"), *cut = j ? strstr(j, "\"event\":\"state_saved\"") : NULL;

		keep(a, "journal.jsonl");
		CHECK(cut && (cut = strchr(cut, '\n')));
		if (cut) {
			cut[1] = '\0';
			CHECK(put_file(a, "journal.jsonl", j) == 0);
			refused(a, "a state ahead of the journal", (const char *[]){ "the state is ahead of the journal", NULL });
		}
		free(j);
		put_back(a, "journal.jsonl");
	}
	/* plan.json edited: a home in the first subtask and every stroke 30 mm over. */
	{
		char *plan = file_of(a, "plan.json"), *p = plan ? strstr(plan, "\"actions\":\t[") : NULL;

		keep(a, "plan.json");
		CHECK(p != NULL);
		if (p) {
			size_t n = strlen(plan) + 128;
			char *edited = malloc(n);

			p += strlen("\"actions\":\t[");
			snprintf(edited, n, "%.*s{\"type\":\"home\",\"speed_mm_s\":100},%s", (int)(p - plan), plan, p);
			CHECK(put_file(a, "plan.json", edited) == 0);
			free(edited);
			refused(a, "an edited plan.json", (const char *[]){ "plan.json is not the file the run wrote", NULL });
		}
		free(plan);
		put_back(a, "plan.json");
	}
	/* The journal deleted: alone, with state.json, with world.sim. */
	{
		static const char *const with[] = { NULL, "state.json", "world.sim" };

		for (size_t i = 0; i < 3; i++) {
			char p[4300];

			keep(a, "journal.jsonl");
			snprintf(p, sizeof(p), "%s/journal.jsonl", a);
			CHECK(unlink(p) == 0);
			if (with[i]) {
				keep(a, with[i]);
				snprintf(p, sizeof(p), "%s/%s", a, with[i]);
				CHECK(unlink(p) == 0);
			}
			refused(a, with[i] ? with[i] : "the journal", (const char *[]){ "journal.jsonl is missing", NULL });
			put_back(a, "journal.jsonl");
			if (with[i])
				put_back(a, with[i]);
		}
	}
	/* Everything put back: it goes on. */
	{
		char *err = NULL;
		int rc = resume_a_while(a, NULL, &err);

		CHECK_MSG(rc == 86, "the run put back exited %d: %s", rc, err ? err : "");
		free(err);
	}
}

static void stirs_ask(cJSON *m)
{
	cJSON_AddItemToArray(cJSON_GetObjectItem(cJSON_GetObjectItem(m, "safety"), "operator_kinds"),
			     cJSON_CreateString("stir"));
}

/*
 * A request and its answer planted together in approvals/ (r000000, for
 * the very action the run waits on, dated long ago, answered yes with its
 * digest): the gate journaled no such request, so the answer counts for
 * nothing; the run still waits for its own r000001, and r000000 is never
 * used. On c35509f the planted pair approved the action.
 */
TEST(a_planted_request_and_answer_approve_nothing)
{
	const char *dir = test_tmp_path("planted");
	char machine[4200], path[4200], *req, *planted, *err = NULL;
	const char *args[] = { "run", test_src_path("examples/targets/flat-shapes.png"), "--out", dir,
			       "--max-strokes", "24", "--quiet", "--accept-nearest", "--refill-ok",
			       "--machine", machine, NULL };
	const char *approve[] = { "approve", dir, "r000000", NULL };
	cJSON *o;
	int rc;

	CHECK(run_machine_edited("m-stir.json", stirs_ask, machine, sizeof(machine)) == 0);
	rc = test_brushloop(args, NULL, NULL);
	CHECK_MSG(rc == 3, "the run exited %d, not 3 (waiting for r000001)", rc);
	req = file_of(dir, "approvals/r000001.json");
	o = req ? cJSON_Parse(req) : NULL;
	CHECK(o != NULL);
	if (!o) {
		free(req);
		return;
	}
	cJSON_ReplaceItemInObject(o, "id", cJSON_CreateString("r000000"));
	cJSON_ReplaceItemInObject(o, "created_wall_ms", cJSON_CreateNumber(1000));
	planted = cJSON_Print(o);
	CHECK(put_file(dir, "approvals/r000000.json", planted) == 0);
	free(planted);
	cJSON_Delete(o);
	free(req);
	CHECK(test_brushloop(approve, NULL, NULL) == 0);
	rc = resume(dir, NULL, &err);
	CHECK_MSG(rc == 3, "resumed beside the planted pair, the run exited %d, not 3: %s", rc, err ? err : "");
	free(err);
	planted = file_of(dir, "approvals/r000000.json");
	CHECK_MSG(planted && strstr(planted, "\"status\":\t\"pending\""), "the planted request was used: %.300s",
		  planted ? planted : "");
	free(planted);
	planted = file_of(dir, "journal.jsonl");
	CHECK_MSG(planted && !strstr(planted, "\"request\":\"r000000\""), "the journal acted on r000000");
	free(planted);
	snprintf(path, sizeof(path), "%s/STATUS.md", dir);
	planted = file_of(dir, "STATUS.md");
	CHECK_STR_CONTAINS(planted, "request r000001");
	free(planted);
}

TEST_MAIN(T(a_planted_request_and_answer_approve_nothing), T(an_older_or_missing_state_is_rebuilt_from_the_journal),
	  T(another_runs_files_an_edited_plan_or_a_lost_journal_are_refused),
	  T(an_action_id_near_1e15_leaves_the_run_resumable),
	  T(an_edited_machine_is_refused_unless_accepted_and_journaled),
	  T(a_replaced_target_or_palette_is_refused),
	  T(a_missing_plan_or_world_of_a_run_under_way_is_refused),
	  T(a_run_stopped_before_its_first_state_plans_again),
	  T(impossible_state_values_are_refused_naming_the_key), T(a_rewound_next_action_id_reuses_no_id))

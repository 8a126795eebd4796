/* test_resume_trust.c: a resume trusts only what the run wrote: changed inputs, missing state, plan or simulated world, impossible state values and a rewound action id are refused or overruled by the journal. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cJSON.h>

#include "base/digest.h"
#include "base/fs.h"
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

TEST(a_missing_state_plan_or_world_of_a_run_under_way_is_refused)
{
	static const char *const files[] = { "state.json", "plan.json", "world.sim" };
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

TEST_MAIN(T(an_edited_machine_is_refused_unless_accepted_and_journaled),
	  T(a_replaced_target_or_palette_is_refused),
	  T(a_missing_state_plan_or_world_of_a_run_under_way_is_refused),
	  T(a_run_stopped_before_its_first_state_plans_again),
	  T(impossible_state_values_are_refused_naming_the_key), T(a_rewound_next_action_id_reuses_no_id))

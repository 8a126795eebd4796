/* test_journal.c: the journal's sequence across reopenings, fsync'd lines, and torn last lines after a crash. */
#include <fcntl.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/journal.h"
#include "test.h"

struct collect {
	long seqs[64];
	char events[64][48];
	int n;
};

static int collect_fn(const cJSON *ev, void *ctx)
{
	struct collect *c = ctx;

	if (c->n < 64) {
		c->seqs[c->n] = (long)cJSON_GetObjectItem(ev, "seq")->valuedouble;
		snprintf(c->events[c->n], sizeof(c->events[0]), "%s",
			 cJSON_GetObjectItem(ev, "event")->valuestring);
		c->n++;
	}
	return 0;
}

static const char *jpath(const char *name)
{
	static char p[4096];

	snprintf(p, sizeof(p), "%s/%s", test_tmpdir(), name);
	unlink(p);
	return p;
}

TEST(events_carry_sequence_and_times)
{
	const char *path = jpath("j1.jsonl");
	struct journal j;
	struct collect c = { 0 };
	bl_err err = { 0 };
	long seq = 0, bad = -1;
	clk vc;
	cJSON *d = cJSON_CreateObject();

	clk_virtual_init(&vc, 5000);
	CHECK(journal_open(&j, path, &vc, &err) == 0);
	cJSON_AddStringToObject(d, "verdict", "pass");
	CHECK(journal_event(&j, "mix-1", "verified", d, &seq, &err) == 0 && seq == 1);
	CHECK(journal_event(&j, "mix-2", "started", NULL, &seq, &err) == 0 && seq == 2);
	journal_close(&j);
	CHECK(journal_read(path, collect_fn, &c, &bad, &err) == 0);
	CHECK(c.n == 2 && bad == 0);
	CHECK(c.seqs[0] == 1 && c.seqs[1] == 2);
	CHECK(strcmp(c.events[0], "verified") == 0);
	{
		char *text = NULL;

		fs_read_file(path, 1 << 20, &text, NULL, &err);
		CHECK_STR_CONTAINS(text, "\"mono_ns\":5000");
		CHECK_STR_CONTAINS(text, "\"subtask\":\"mix-1\"");
		CHECK_STR_CONTAINS(text, "\"data\":{\"verdict\":\"pass\"}");
		free(text);
	}
}

TEST(sequence_continues_after_reopen)
{
	const char *path = jpath("j2.jsonl");
	struct journal j;
	bl_err err = { 0 };
	long seq = 0;

	CHECK(journal_open(&j, path, clk_monotonic(), &err) == 0);
	for (int i = 0; i < 3; i++)
		CHECK(journal_event(&j, "", "tick", NULL, &seq, &err) == 0);
	journal_close(&j);
	CHECK(journal_open(&j, path, clk_monotonic(), &err) == 0);
	CHECK(j.torn == 0);
	CHECK(journal_event(&j, "", "resumed", NULL, &seq, &err) == 0);
	CHECK(seq == 4);
	journal_close(&j);
}

TEST(torn_last_line_is_ignored_with_a_note)
{
	const char *path = jpath("j3.jsonl");
	struct journal j;
	struct collect c = { 0 };
	bl_err err = { 0 };
	long seq = 0, bad = 0;
	int fd;

	CHECK(journal_open(&j, path, clk_monotonic(), &err) == 0);
	CHECK(journal_event(&j, "s1", "dispensed", NULL, &seq, &err) == 0);
	CHECK(journal_event(&j, "s1", "stirred", NULL, &seq, &err) == 0);
	journal_close(&j);
	/* A power cut in the middle of writing the third event. */
	fd = open(path, O_WRONLY | O_APPEND);
	CHECK(fd >= 0 && write(fd, "{\"seq\":3,\"wall_ms\":17,\"ev", 25) == 25);
	close(fd);

	CHECK(journal_open(&j, path, clk_monotonic(), &err) == 0);
	CHECK(j.torn == 1);
	CHECK(j.seq == 3); /* the note took seq 3: the torn event never counted */
	CHECK(journal_event(&j, "s2", "started", NULL, &seq, &err) == 0 && seq == 4);
	journal_close(&j);
	/* Cut off, never written whole: the chain goes on from the last whole line. */
	CHECK(journal_read(path, collect_fn, &c, &bad, &err) == 0);
	CHECK(bad == 0);
	CHECK(c.n == 4);
	CHECK(strcmp(c.events[2], "journal_torn_line_ignored") == 0);
	CHECK(strcmp(c.events[3], "started") == 0);
	/* Opening again does not note the old torn line a second time. */
	CHECK(journal_open(&j, path, clk_monotonic(), &err) == 0);
	CHECK(j.torn == 0 && j.seq == 4);
	journal_close(&j);
}

/* Lines of an older brushloop (no chain, torn ones it kept) are adopted once, pinned by their digest. */
TEST(an_older_journal_is_adopted_once)
{
	const char *path = jpath("j4.jsonl");
	struct journal j;
	struct collect c = { 0 };
	bl_err err = { 0 };
	long seq = 0, bad = 0;

	test_write_file("j4.jsonl", "{\"seq\":1,\"event\":\"a\"}\nnot json\n\x01\x02\x03\n[1,2]\n");
	CHECK(journal_open(&j, path, clk_monotonic(), &err) == 0);
	CHECK(j.seq == 2); /* journal_chained took 2 */
	CHECK(journal_event(&j, "", "started", NULL, &seq, &err) == 0 && seq == 3);
	journal_close(&j);
	CHECK(journal_read(path, collect_fn, &c, &bad, &err) == 0);
	CHECK(c.n == 3 && !strcmp(c.events[1], "journal_chained"));
	CHECK(journal_open(&j, path, clk_monotonic(), &err) == 0 && j.seq == 3);
	journal_close(&j);
	/* An old line edited after the adoption breaks the chain. */
	{
		char *text = test_read_file(path), *p = text ? strstr(text, "\"a\"") : NULL;

		CHECK(p != NULL);
		if (p) {
			p[1] = 'b';
			test_write_file("j4.jsonl", text);
			CHECK(journal_open(&j, path, clk_monotonic(), &err) == BL_EINVAL);
			CHECK_STR_CONTAINS(err.msg, "line 5 follows lines from before the chain");
		}
		free(text);
	}
}

/* Three lines of a run's journal, then text edited by fn: what opening it again says (0, or the message in err). */
static int reopened(const char *name, void (*fn)(char *text), const char *run, bl_err *err)
{
	const char *path = jpath(name);
	struct journal j;
	char *text;
	int rc;

	CHECK(journal_open_run(&j, path, "aaaa", 0, NULL, NULL, clk_monotonic(), err) == 0);
	for (int i = 0; i < 3; i++)
		CHECK(journal_event(&j, "s1", i == 1 ? "second" : "other", NULL, NULL, err) == 0);
	journal_close(&j);
	text = test_read_file(path);
	fn(text);
	test_write_file(name, text);
	free(text);
	rc = journal_open_run(&j, path, run, JOURNAL_EXISTING, NULL, NULL, clk_monotonic(), err);
	journal_close(&j);
	return rc;
}

static void as_is(char *t)
{
	(void)t;
}

static void edit_second(char *t)
{
	char *p = strstr(t, "\"second\"");

	if (p)
		memcpy(p, "\"secOnd\"", 8);
}

static void drop_second(char *t)
{
	char *a = strchr(t, '\n'), *b = a ? strchr(a + 1, '\n') : NULL;

	if (a && b)
		memmove(a + 1, b + 1, strlen(b + 1) + 1);
}

static void cut_in_middle(char *t)
{
	char *a = strchr(t, '\n');

	if (a)
		a[10] = '\0';
}

/* The chain: a line edited or taken out, or another run's journal, is refused naming the line; a torn end is not. */
TEST(a_broken_chain_is_refused_naming_the_line)
{
	bl_err err = { 0 };

	CHECK(reopened("c1.jsonl", as_is, "aaaa", &err) == 0);
	CHECK(reopened("c2.jsonl", edit_second, "aaaa", &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "line 3 names another line before it");
	CHECK(reopened("c3.jsonl", drop_second, "aaaa", &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "line 2 has not the seq 2");
	CHECK(reopened("c4.jsonl", as_is, "bbbb", &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "line 1 is of run 'aaaa', and this run is 'bbbb'");
	CHECK(reopened("c5.jsonl", cut_in_middle, "aaaa", &err) == 0);
	{
		struct journal j;

		CHECK(journal_open_run(&j, jpath("c6.jsonl"), "aaaa", JOURNAL_EXISTING, NULL, NULL,
				       clk_monotonic(), &err) == BL_EINVAL);
		CHECK_STR_CONTAINS(err.msg, "c6.jsonl is missing");
	}
}

/*
 * One writer, proven: before every append the file at the path is the one
 * opened and ends where this process last wrote. Another process's line,
 * or the file replaced, stops the writer (BL_ESAFETY) and it writes nothing more.
 */
TEST(a_journal_written_by_another_stops_the_writer)
{
	const char *path = jpath("w1.jsonl");
	struct journal j;
	bl_err err = { 0 };
	int fd;

	CHECK(journal_open_run(&j, path, "aaaa", 0, NULL, NULL, clk_monotonic(), &err) == 0);
	CHECK(journal_event(&j, "", "mine", NULL, NULL, &err) == 0);
	fd = open(path, O_WRONLY | O_APPEND);
	CHECK(fd >= 0 && write(fd, "{}\n", 3) == 3);
	close(fd);
	CHECK(journal_event(&j, "", "after", NULL, NULL, &err) == BL_ESAFETY);
	CHECK_STR_CONTAINS(err.msg, "no longer the journal this process writes");
	CHECK(journal_event(&j, "", "again", NULL, NULL, &err) == BL_ESAFETY);
	journal_close(&j);
	{
		char *text = test_read_file(path);

		CHECK(text && !strstr(text, "after") && !strstr(text, "again"));
		free(text);
	}
	/* Replaced by a copy (renamed over it): the same. */
	path = jpath("w2.jsonl");
	CHECK(journal_open_run(&j, path, "aaaa", 0, NULL, NULL, clk_monotonic(), &err) == 0);
	CHECK(journal_event(&j, "", "mine", NULL, NULL, &err) == 0);
	{
		char *text = test_read_file(path), other[4200];

		snprintf(other, sizeof(other), "%s.copy", path);
		CHECK(text && fs_write_atomic(other, text, strlen(text), NULL) == 0 && rename(other, path) == 0);
		free(text);
	}
	CHECK(journal_event(&j, "", "after", NULL, NULL, &err) == BL_ESAFETY);
	journal_close(&j);
}

/*
 * A line whose seq is 1e300 (or NaN's stand-in, or a fraction) is no seq
 * this journal wrote: the next event goes on from the last good one, never
 * from a float converted past a long's range (-9.22e18 on c35509f).
 */
TEST(a_seq_out_of_range_is_not_converted)
{
	const char *path = jpath("j5.jsonl");
	struct journal j;
	bl_err err = { 0 };
	long seq = 0;

	test_write_file("j5.jsonl", "{\"seq\":1,\"event\":\"a\"}\n{\"seq\":2,\"event\":\"b\"}\n"
				    "{\"seq\":2.5,\"event\":\"c\"}\n{\"seq\":1e300,\"event\":\"d\"}\n");
	CHECK(journal_open(&j, path, clk_monotonic(), &err) == 0);
	CHECK(journal_event(&j, "", "next", NULL, &seq, &err) == 0);
	/* The older lines are adopted (journal_chained takes 3): the next goes on from the last good seq. */
	CHECK_MSG(seq == 4, "the next seq is %ld, not 4", seq);
	journal_close(&j);
}

TEST_MAIN(T(a_seq_out_of_range_is_not_converted), T(events_carry_sequence_and_times), T(sequence_continues_after_reopen),
	  T(torn_last_line_is_ignored_with_a_note), T(an_older_journal_is_adopted_once),
	  T(a_broken_chain_is_refused_naming_the_line), T(a_journal_written_by_another_stops_the_writer))

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
	CHECK(journal_read(path, collect_fn, &c, &bad, &err) == 0);
	CHECK(bad == 1);
	CHECK(c.n == 4);
	CHECK(strcmp(c.events[2], "journal_torn_line_ignored") == 0);
	CHECK(strcmp(c.events[3], "started") == 0);
	/* Opening again does not note the old torn line a second time. */
	CHECK(journal_open(&j, path, clk_monotonic(), &err) == 0);
	CHECK(j.torn == 0 && j.seq == 4);
	journal_close(&j);
}

TEST(garbage_journal_is_not_fatal)
{
	const char *path = jpath("j4.jsonl");
	struct journal j;
	bl_err err = { 0 };
	long seq = 0;

	test_write_file("j4.jsonl", "not json\n\x01\x02\x03\n[1,2]\n");
	CHECK(journal_open(&j, path, clk_monotonic(), &err) == 0);
	CHECK(j.seq == 0);
	CHECK(journal_event(&j, "", "started", NULL, &seq, &err) == 0 && seq == 1);
	journal_close(&j);
}

TEST_MAIN(T(events_carry_sequence_and_times), T(sequence_continues_after_reopen),
	  T(torn_last_line_is_ignored_with_a_note), T(garbage_journal_is_not_fatal))

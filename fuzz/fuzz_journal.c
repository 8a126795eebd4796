/* fuzz_journal.c: fuzzes the journal reader (a torn, edited or hostile journal.jsonl). */
#include "base/journal.h"
#include "fuzz.h"

/* Looks at what a reader of events looks at: the type of every top-level member. */
static int count(const cJSON *event, void *ctx)
{
	long *n = ctx;

	for (const cJSON *c = event->child; c; c = c->next)
		*n += cJSON_IsString(c) ? 1 : 2;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	long n = 0, bad = 0;
	bl_err err = { 0 };

	journal_read(fuzz_file("journal.jsonl", data, size), count, &n, &bad, &err);
	return 0;
}

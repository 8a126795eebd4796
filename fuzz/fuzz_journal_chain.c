/* fuzz_journal_chain.c: fuzzes the chained journal reader a resume trusts (journal_verify_text) and the state it folds from the journal's state_saved edits (json_patch). */
#include <stdio.h>
#include <string.h>

#include "base/journal.h"
#include "base/json.h"
#include "fuzz.h"

/* What a resume does with each verified line: a state_saved line's edits applied to the state so far. */
static int fold(const cJSON *ev, long line, const char *digest, void *ctx, bl_err *err)
{
	const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "event"));

	(void)line;
	(void)digest;
	if (!name || strcmp(name, "state_saved"))
		return 0;
	return json_patch(ctx, cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ev, "data"),
								 "edits"), "fuzz", err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data, *nl = memchr(data, '\n', size);
	char run[64] = "";
	struct journal_info in;
	bl_err err = { 0 };
	cJSON *first, *doc;

	/* The run the first line names (as run.json would), then no run at all. */
	first = nl ? cJSON_ParseWithLength(text, (size_t)(nl - text)) : NULL;
	if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(first, "run")))
		snprintf(run, sizeof(run), "%s", cJSON_GetObjectItemCaseSensitive(first, "run")->valuestring);
	cJSON_Delete(first);
	for (int k = 0; k < 2; k++) {
		doc = cJSON_CreateObject();
		journal_verify_text(text, size, "journal.jsonl", k ? "" : run, fold, doc, &in, &err);
		cJSON_Delete(doc);
	}
	/* The same bytes as one list of edits, over a state-like document. */
	doc = cJSON_Parse("{\"a\":[1,{\"b\":2}],\"c\":{\"d\":[]}}");
	first = cJSON_ParseWithLength(text, size);
	if (doc && first)
		json_patch(doc, first, "fuzz", &err);
	cJSON_Delete(first);
	cJSON_Delete(doc);
	return 0;
}

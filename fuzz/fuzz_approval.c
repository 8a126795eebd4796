/*
 * fuzz_approval.c: fuzzes reading an approval request and its answer from a
 * run directory. The input is the request file, then (after a 0xff byte,
 * which UTF-8 never holds) the answer file.
 */
#include <stdio.h>
#include <string.h>

#include "fuzz.h"
#include "safety/operator.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *cut = memchr(data, 0xff, size);
	size_t req_len = cut ? (size_t)(cut - data) : size;
	struct gate_request r, *list = NULL;
	bl_err err = { 0 }, bad = { 0 };
	char run[512];
	size_t n = 0, n_bad = 0;

	fuzz_file("run/approvals/r000001.json", data, req_len);
	if (cut)
		fuzz_file("run/approvals/r000001.answer.json", cut + 1, size - req_len - 1);
	else
		fuzz_unlink("run/approvals/r000001.answer.json");
	snprintf(run, sizeof(run), "%s/run", fuzz_dir());
	if (gate_request_load(run, "r000001", &r, &err) == 0) {
		gate_request_waiting(&r);
		gate_request_free(&r);
	}
	if (gate_requests_list(run, &list, &n, &n_bad, &bad, &err) == 0)
		gate_requests_free(list, n);
	return 0;
}

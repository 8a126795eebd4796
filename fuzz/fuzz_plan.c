/* fuzz_plan.c: fuzzes the plan file's loader. */
#include "fuzz.h"
#include "plan/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct plan p;
	bl_err err = { 0 };

	if (plan_load(fuzz_file("plan.json", data, size), &p, &err) == 0)
		plan_free(&p);
	return 0;
}

/* fuzz_actions.c: fuzzes the actions loader and the gate's whole-file check (actions and plans) against the safety tests' machine. */
#include <stdlib.h>

#include "arm/action.h"
#include "fuzz.h"
#include "safety/gate.h"

/* Prints every decision both ways: the printer must take whatever the parser let through. */
static int print(void *ctx, const struct gate_decision *d, bl_err *err)
{
	(void)ctx;
	(void)err;
	free(gate_decision_print(d, GATE_VIEW_OPERATOR));
	free(gate_decision_print(d, GATE_VIEW_PLANNER));
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct machine *m = fuzz_machine("tests/safety/machine.json");
	struct arm_action_list l;
	bl_err err = { 0 };
	arm_point home;
	const char *path;

	home = (arm_point){ m->home_mm[0], m->home_mm[1], m->home_mm[2] };
	path = fuzz_file("actions.json", data, size);
	if (arm_actions_load(path, &l, &err) == 0)
		arm_actions_free(&l);
	gate_check_file(m, path, &home, print, NULL, &err);
	return 0;
}

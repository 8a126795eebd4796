/* fuzz_grants.c: fuzzes reading a run directory's grants.json and checking each grant against the example machine. */
#include <stdio.h>

#include "fuzz.h"
#include "safety/operator.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct machine *m = fuzz_machine("examples/machine-sim.json");
	struct gate_grants gs;
	bl_err err = { 0 };
	char run[512];

	fuzz_file("run/grants.json", data, size);
	snprintf(run, sizeof(run), "%s/run", fuzz_dir());
	if (gate_grants_load(run, &gs, &err) == 0) {
		for (size_t i = 0; i < gs.n; i++)
			gate_grant_validate(m, &gs.g[i], &err);
		gate_grants_free(&gs);
	}
	return 0;
}

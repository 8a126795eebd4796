/* fuzz_state.c: fuzzes reading a run's state.json, against the example machine and palette as a run holds them. */
#include <stdio.h>
#include <stdlib.h>

#include "engine/run_int.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct run *r;
	bl_err err = { 0 };

	if (!r) {
		r = calloc(1, sizeof(*r));
		if (!r)
			abort();
		snprintf(r->dir, sizeof(r->dir), "%s/run", fuzz_dir());
		if (machine_load(fuzz_src("examples/machine-sim.json"), &r->m, &err) ||
		    palette_load(fuzz_src("examples/palette.json"), &r->pal, &err) ||
		    plan_mixer_init(&r->mixer, &r->pal, &r->m, &err)) {
			fprintf(stderr, "%s\n", err.msg);
			abort();
		}
		run_state_init(&r->st);
	}
	fuzz_file("run/state.json", data, size);
	run_state_load(r, &err);
	return 0;
}

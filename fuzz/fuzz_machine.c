/* fuzz_machine.c: fuzzes the machine file's loader (and its summary) with arbitrary bytes. */
#include <stdlib.h>

#include "config/machine.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct machine m;
	bl_err err = { 0 };

	if (machine_load(fuzz_file("machine.json", data, size), &m, &err) == 0)
		free(machine_summary(&m));
	return 0;
}

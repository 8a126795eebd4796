/* fuzz_palette.c: fuzzes the palette loader, its fit to the example machine and the mixing model built from it. */
#include <stdlib.h>

#include "color/mix.h"
#include "config/palette.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct machine *m = fuzz_machine("examples/machine-sim.json");
	static struct palette p;
	static struct mix_model model;
	bl_err err = { 0 };

	if (palette_load(fuzz_file("palette.json", data, size), &p, &err) == 0) {
		free(palette_summary(&p));
		palette_check_machine(&p, m, &err);
		mix_model_from_palette(&p, &model, &err);
	}
	return 0;
}

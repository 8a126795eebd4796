/* fuzz_icc.c: fuzzes opening an ICC profile (the camera's, or one an image embeds) and converting through it. */
#include "fuzz.h"
#include "vision/measure.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const double rgb[4][3] = { { 0, 0, 0 }, { 1, 1, 1 }, { 0.5, 0.2, 0.9 }, { 1, 0, 0 } };
	struct meas_profile *p = NULL;
	bl_err err = { 0 };

	fuzz_dir();
	if (meas_profile_open_mem(data, size, "fuzz", &p, &err) == 0) {
		for (int i = 0; i < 4; i++) {
			color_lab lab;

			meas_profile_lab(p, rgb[i], &lab);
		}
		meas_profile_close(p);
	}
	return 0;
}

/* fuzz_calib.c: fuzzes the calibration files' loaders (canvas, light map, arm registration, arm points) with the same bytes. */
#include "calib/calib.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static double canvas_mm[CALIB_ARM_MAX_POINTS][2];
	static arm_point arm_mm[CALIB_ARM_MAX_POINTS];
	static struct calib_arm arm;
	struct vis_canvas c;
	struct vis_light l;
	bl_err err = { 0 };
	const char *path = fuzz_file("calibration.json", data, size);
	int n = 0;

	vis_canvas_load(path, &c, &err);
	if (vis_light_load(path, &l, &err) == 0)
		vis_light_free(&l);
	calib_arm_load(path, &arm, &err);
	calib_arm_points_load(path, &n, canvas_mm, arm_mm, &err);
	return 0;
}

/* fuzz_image.c: fuzzes the image decoders (PNG, JPEG by their signatures) and the ICC profile an image embeds. */
#include "fuzz.h"
#include "vision/image.h"
#include "vision/measure.h"

/* Small enough that a header claiming a huge image is refused, not allocated. */
#define FUZZ_MAX_PIXELS (2L << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct img im = { 0 };
	enum cam_format fmt;
	int w, h;
	bl_err err = { 0 };

	fuzz_dir();
	img_probe(data, size, "fuzz", &fmt, &w, &h, &err);
	if (img_decode(data, size, "fuzz", FUZZ_MAX_PIXELS, &im, &err) == 0) {
		if (im.icc) {
			struct meas_profile *p = NULL;

			if (meas_profile_open_mem(im.icc, im.icc_len, "fuzz embedded", &p, &err) == 0)
				meas_profile_close(p);
		}
		img_free(&im);
	}
	return 0;
}

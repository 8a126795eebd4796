/* test_v4l2_real.c: the v4l2 backend on a real camera named by BRUSHLOOP_V4L2_DEVICE; skipped (exit 77) without one. */
#include <unistd.h>

#include "base/clock.h"
#include "config/machine.h"
#include "test.h"
#include "vision/cam_open.h"
#include "vision/image.h"

static struct machine mach;

/* Exits 77 (skip) when no camera is named: this machine may have none. */
static const char *device_or_skip(void)
{
	const char *dev = getenv("BRUSHLOOP_V4L2_DEVICE");

	if (!dev || !*dev) {
		test_skip("no camera named; set BRUSHLOOP_V4L2_DEVICE=/dev/videoN "
			  "(and BRUSHLOOP_V4L2_SIZE=WxH, default 640x480) to test a real one");
	}
	return dev;
}

TEST(real_camera_lists_opens_and_captures)
{
	const char *dev = device_or_skip(), *size = getenv("BRUSHLOOP_V4L2_SIZE");
	struct cam_v4l2_device *devs;
	struct camera cam;
	bl_err err = { 0 };
	int n = 0, listed = 0, w = 640, h = 480;

	if (size && sscanf(size, "%dx%d", &w, &h) != 2) {
		fprintf(stderr, "BRUSHLOOP_V4L2_SIZE '%s': write WxH\n", size);
		exit(1);
	}
	CHECK_MSG(cam_v4l2_list("/dev", &devs, &n, &err) == 0, "%s", err.msg);
	for (int i = 0; i < n; i++)
		listed |= strcmp(devs[i].path, dev) == 0;
	CHECK_MSG(listed, "%s is not among the %d listed devices", dev, n);
	free(devs);
	if (machine_load(BL_SOURCE_ROOT "/examples/machine-sim.json", &mach, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
	mach.camera.backend = MACHINE_CAM_V4L2;
	snprintf(mach.camera.device, sizeof(mach.camera.device), "%s", dev);
	mach.camera.width = w;
	mach.camera.height = h;
	mach.camera.timeout_ms = 3000;
	CHECK_MSG(cam_v4l2_open(&cam, &mach, clk_monotonic(), &err) == 0, "%s", err.msg);
	if (!cam.ops)
		return;
	CHECK_MSG(cam_lock_controls(&cam, &err) == 0, "%s", err.msg);
	for (int i = 0; i < 3; i++) {
		struct cam_frame f;
		struct img im;

		CHECK_MSG(cam_capture(&cam, &f, &err) == 0, "%s", err.msg);
		if (!f.data)
			break;
		CHECK(f.width == w && f.height == h);
		CHECK(f.seq == i);
		CHECK_MSG(img_decode_frame(&f, mach.camera.max_pixels, &im, &err) == 0, "%s", err.msg);
		img_free(&im);
		if (!f.controls_locked)
			printf("note: %s keeps a control automatic (see the warning above)\n", dev);
		cam_frame_free(&f);
	}
	cam_close(&cam);
}

TEST_MAIN(T(real_camera_lists_opens_and_captures))

/* test_v4l2.c: the v4l2 camera backend against a fake device at the system-call boundary: formats, controls, discards, timeout, unplugging, listing. */
#include "fake_v4l2.h" /* first: it must see no _FILE_OFFSET_BITS */

#include <sys/stat.h>
#include <time.h>

#include "base/clock.h"
#include "config/machine.h"
#include "test.h"
#include "vision/cam_open.h"
#include "vision/image.h"

static struct machine mach;

/* The example machine with a v4l2 camera on path. */
static struct machine *machine_for(const char *path)
{
	bl_err err = { 0 };

	if (machine_load(BL_SOURCE_ROOT "/examples/machine-sim.json", &mach, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
	mach.camera.backend = MACHINE_CAM_V4L2;
	snprintf(mach.camera.device, sizeof(mach.camera.device), "%s", path);
	mach.camera.width = 320;
	mach.camera.height = 240;
	mach.camera.discard_frames = 0;
	mach.camera.average_frames = 2;
	mach.camera.timeout_ms = 200;
	mach.camera.n_controls = 0;
	mach.camera.allow_auto = 0;
	return &mach;
}

static void add_control(struct machine *m, const char *name, double v)
{
	struct machine_control *c = &m->camera.controls[m->camera.n_controls++];

	snprintf(c->name, sizeof(c->name), "%s", name);
	c->value = v;
}

/* Frame seq is a flat colour whose red channel tells the sequence number. */
static int seq_red(long seq)
{
	return (int)(20 + (seq % 12) * 18);
}

static size_t mjpeg_frame(struct fake_dev *d, long seq, unsigned char *dst, size_t cap)
{
	struct img im;
	unsigned char *jpg;
	size_t len;

	if (img_alloc(&im, d->w, d->h, NULL))
		return 0;
	for (size_t i = 0; i < (size_t)d->w * d->h; i++) {
		im.px[3 * i] = (unsigned char)seq_red(seq);
		im.px[3 * i + 1] = 120;
		im.px[3 * i + 2] = 60;
	}
	if (img_encode_jpeg(&im, 90, &jpg, &len, NULL) || len > cap) {
		img_free(&im);
		return 0;
	}
	memcpy(dst, jpg, len);
	free(jpg);
	img_free(&im);
	return len;
}

/* YUYV of Y 81, U 90, V 240 (a red) in the left half, Y 126, U V 128 (mid grey) in the right. */
static size_t yuyv_frame(struct fake_dev *d, long seq, unsigned char *dst, size_t cap)
{
	size_t n = (size_t)d->w * d->h * 2;

	(void)seq;
	if (n > cap)
		return 0;
	for (int y = 0; y < d->h; y++)
		for (int x = 0; x < d->w; x += 2) {
			unsigned char *p = dst + ((size_t)y * d->w + x) * 2;
			int left = x < d->w / 2;

			p[0] = left ? 81 : 126;
			p[1] = left ? 90 : 128;
			p[2] = left ? 81 : 126;
			p[3] = left ? 240 : 128;
		}
	return n;
}

static const char *dev_path(const char *name)
{
	static char path[4][512];
	static int k;
	char *p = path[k++ % 4];

	snprintf(p, 512, "%s/%s", test_tmpdir(), name);
	return p;
}

static struct fake_dev *make_dev(const char *name, int formats)
{
	struct fake_dev *d = fake_new(dev_path(name), formats);

	d->make_frame = (formats & FAKE_MJPEG) ? mjpeg_frame : yuyv_frame;
	return d;
}

static int decode_red(const struct cam_frame *f)
{
	struct img im;
	int r;

	if (img_decode_frame(f, 40000000L, &im, NULL))
		return -1;
	r = im.px[3 * ((size_t)im.h / 2 * im.w + im.w / 2)];
	img_free(&im);
	return r;
}

TEST(mjpeg_preferred_over_yuyv)
{
	struct fake_dev *d = make_dev("video0", FAKE_MJPEG | FAKE_YUYV);
	struct camera cam;
	struct cam_frame f;
	bl_err err = { 0 };
	int rc = cam_v4l2_open(&cam, machine_for(d->path), clk_monotonic(), &err);

	CHECK_MSG(rc == 0, "%s", err.msg);
	if (rc)
		return;
	CHECK(d->pixfmt == V4L2_PIX_FMT_MJPEG);
	CHECK(d->w == 320 && d->h == 240);
	CHECK(d->streaming);
	rc = cam_capture(&cam, &f, &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	if (rc == 0) {
		CHECK(f.format == CAM_FMT_JPEG);
		CHECK(f.width == 320 && f.height == 240);
		CHECK(f.len > 100 && f.data[0] == 0xff && f.data[1] == 0xd8);
		CHECK_STR_CONTAINS(f.source, "video0");
		CHECK(abs(decode_red(&f) - seq_red(0)) <= 2);
		CHECK(f.seq == 0);
		cam_frame_free(&f);
	}
	cam_close(&cam);
	CHECK(d->fd == -1);
	fake_reset();
}

TEST(yuyv_fallback_converts_to_rgb)
{
	struct fake_dev *d = make_dev("video0", FAKE_YUYV);
	struct camera cam;
	struct cam_frame f;
	struct img im;
	bl_err err = { 0 };
	int rc = cam_v4l2_open(&cam, machine_for(d->path), clk_monotonic(), &err);

	CHECK_MSG(rc == 0, "%s", err.msg);
	if (rc)
		return;
	CHECK(d->pixfmt == V4L2_PIX_FMT_YUYV);
	rc = cam_capture(&cam, &f, &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	if (rc == 0) {
		CHECK(f.format == CAM_FMT_RGB24);
		CHECK(f.len == 320u * 240u * 3u);
		CHECK(img_decode_frame(&f, 40000000L, &im, &err) == 0);
		{
			/* ITU-R BT.601, studio range: R = 1.164 (Y-16) + 1.596 (V-128), ... */
			const unsigned char *l = im.px + (120 * 320 + 40) * 3;
			const unsigned char *r = im.px + (120 * 320 + 280) * 3;
			double y = 1.164 * (81 - 16), u = 90 - 128, v = 240 - 128;
			double er = y + 1.596 * v, eg = y - 0.392 * u - 0.813 * v, eb = y + 2.017 * u;

			er = er > 255 ? 255 : er;
			eg = eg < 0 ? 0 : eg;
			eb = eb < 0 ? 0 : eb;
			CHECK_NEAR(l[0], er, 2);
			CHECK_NEAR(l[1], eg, 2);
			CHECK_NEAR(l[2], eb, 2);
			CHECK_NEAR(r[0], 1.164 * (126 - 16), 1.5);
			CHECK(r[0] == r[1] && r[1] == r[2]);
		}
		img_free(&im);
		cam_frame_free(&f);
	}
	cam_close(&cam);
	fake_reset();
}

TEST(no_usable_format_is_refused)
{
	struct fake_dev *d = make_dev("video0", FAKE_GREY);
	struct camera cam;
	bl_err err = { 0 };
	int rc = cam_v4l2_open(&cam, machine_for(d->path), clk_monotonic(), &err);

	CHECK(rc == BL_EIO);
	CHECK_STR_CONTAINS(err.msg, "neither MJPEG nor YUYV");
	CHECK(d->fd == -1); /* closed again */
	fake_reset();
}

TEST(unsupported_size_is_refused)
{
	struct fake_dev *d = make_dev("video0", FAKE_MJPEG | FAKE_YUYV);
	struct machine *m = machine_for(d->path);
	struct camera cam;
	bl_err err = { 0 };
	int rc;

	m->camera.width = 1000;
	m->camera.height = 1000;
	rc = cam_v4l2_open(&cam, m, clk_monotonic(), &err);
	CHECK(rc == BL_EIO);
	CHECK_STR_CONTAINS(err.msg, "cannot capture 1000x1000");
	CHECK(d->fd == -1);
	fake_reset();
}

TEST(missing_device_is_a_clear_error)
{
	struct camera cam;
	bl_err err = { 0 };
	int rc = cam_v4l2_open(&cam, machine_for(dev_path("video9")), clk_monotonic(), &err);

	CHECK(rc == BL_EIO);
	CHECK_STR_CONTAINS(err.msg, "video9");
	CHECK_STR_CONTAINS(err.msg, "cannot open");
}

TEST(controls_are_locked)
{
	struct fake_dev *d = make_dev("video0", FAKE_MJPEG);
	struct machine *m = machine_for(d->path);
	struct camera cam;
	struct img im;
	bl_err err = { 0 };
	int rc;

	add_control(m, "exposure_time_absolute", 150);
	add_control(m, "gain", 10);
	add_control(m, "white_balance_temperature", 5000);
	rc = cam_v4l2_open(&cam, m, clk_monotonic(), &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	if (rc)
		return;
	rc = cam_lock_controls(&cam, &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	CHECK(fake_ctrl_find(d, V4L2_CID_EXPOSURE_AUTO)->value == V4L2_EXPOSURE_MANUAL);
	CHECK(fake_ctrl_find(d, V4L2_CID_AUTO_WHITE_BALANCE)->value == 0);
	CHECK(fake_ctrl_find(d, V4L2_CID_FOCUS_AUTO)->value == 0);
	CHECK(fake_ctrl_find(d, V4L2_CID_EXPOSURE_ABSOLUTE)->value == 150);
	CHECK(fake_ctrl_find(d, V4L2_CID_GAIN)->value == 10);
	CHECK(fake_ctrl_find(d, V4L2_CID_WHITE_BALANCE_TEMPERATURE)->value == 5000);
	/* Locked frames may be measured: two averaged. */
	rc = cam_capture_for_measurement(&cam, &im, &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	if (rc == 0) {
		CHECK(im.w == 320 && im.h == 240);
		/* The average of frames 0 and 1. */
		CHECK_NEAR(im.px[3 * (120 * 320 + 160)], (seq_red(0) + seq_red(1)) / 2.0, 2.5);
		img_free(&im);
	}
	CHECK(d->served == 2);
	cam_close(&cam);
	fake_reset();
}

TEST(unknown_control_names_the_choices)
{
	struct fake_dev *d = make_dev("video0", FAKE_MJPEG);
	struct machine *m = machine_for(d->path);
	struct camera cam;
	bl_err err = { 0 };
	int rc;

	add_control(m, "exposure_tyme_absolute", 150);
	rc = cam_v4l2_open(&cam, m, clk_monotonic(), &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	if (rc)
		return;
	rc = cam_lock_controls(&cam, &err);
	CHECK(rc == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "camera.controls.exposure_tyme_absolute");
	CHECK_STR_CONTAINS(err.msg, "exposure_time_absolute");
	CHECK_STR_CONTAINS(err.msg, "white_balance_automatic");
	cam_close(&cam);
	fake_reset();
}

TEST(control_out_of_range_is_refused)
{
	struct fake_dev *d = make_dev("video0", FAKE_MJPEG);
	struct machine *m = machine_for(d->path);
	struct camera cam;
	bl_err err = { 0 };
	int rc;

	add_control(m, "gain", 500);
	rc = cam_v4l2_open(&cam, m, clk_monotonic(), &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	if (rc)
		return;
	rc = cam_lock_controls(&cam, &err);
	CHECK(rc == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "camera.controls.gain: 500 is outside");
	CHECK(fake_ctrl_find(d, V4L2_CID_GAIN)->value == 32);
	cam_close(&cam);
	fake_reset();
}

TEST(automatic_control_refuses_measurement)
{
	struct fake_dev *d = make_dev("video0", FAKE_MJPEG);
	struct machine *m = machine_for(d->path);
	struct camera cam;
	struct img im;
	bl_err err = { 0 };
	int rc;

	/* This camera ignores the switch to manual exposure. */
	fake_ctrl_find(d, V4L2_CID_EXPOSURE_AUTO)->stuck = 1;
	rc = cam_v4l2_open(&cam, m, clk_monotonic(), &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	if (rc)
		return;
	rc = cam_lock_controls(&cam, &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	rc = cam_capture_for_measurement(&cam, &im, &err);
	CHECK(rc == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "automatic");
	CHECK_STR_CONTAINS(err.msg, "camera.allow_auto");
	{
		struct cam_frame f;

		/* A plain capture still works; the frame says what it is. */
		CHECK(cam_capture(&cam, &f, &err) == 0);
		CHECK(f.controls_locked == 0);
		cam_frame_free(&f);
	}
	cam_close(&cam);
	fake_reset();
}

TEST(allow_auto_measures_anyway)
{
	struct fake_dev *d = make_dev("video0", FAKE_MJPEG);
	struct machine *m = machine_for(d->path);
	struct camera cam;
	struct img im;
	bl_err err = { 0 };
	int rc;

	fake_ctrl_find(d, V4L2_CID_AUTO_WHITE_BALANCE)->stuck = 1;
	m->camera.allow_auto = 1;
	rc = cam_v4l2_open(&cam, m, clk_monotonic(), &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	if (rc)
		return;
	CHECK(cam_lock_controls(&cam, &err) == 0);
	rc = cam_capture_for_measurement(&cam, &im, &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	if (rc == 0)
		img_free(&im);
	cam_close(&cam);
	fake_reset();
}

TEST(frames_after_a_control_change_are_discarded)
{
	struct fake_dev *d = make_dev("video0", FAKE_MJPEG);
	struct machine *m = machine_for(d->path);
	struct camera cam;
	struct cam_frame f;
	bl_err err = { 0 };
	int rc;

	m->camera.discard_frames = 3;
	rc = cam_v4l2_open(&cam, m, clk_monotonic(), &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	if (rc)
		return;
	/* At stream start: frames 0-2 go, frame 3 is the first one seen. */
	CHECK(cam_capture(&cam, &f, &err) == 0);
	CHECK(abs(decode_red(&f) - seq_red(3)) <= 2);
	cam_frame_free(&f);
	CHECK(cam_capture(&cam, &f, &err) == 0);
	CHECK(abs(decode_red(&f) - seq_red(4)) <= 2);
	cam_frame_free(&f);
	/* A control change throws away three more: 5, 6, 7. */
	CHECK(cam_lock_controls(&cam, &err) == 0);
	CHECK(cam_capture(&cam, &f, &err) == 0);
	CHECK_MSG(abs(decode_red(&f) - seq_red(8)) <= 2, "red %d, want %d", decode_red(&f),
		  seq_red(8));
	CHECK(f.controls_locked == 1);
	cam_frame_free(&f);
	CHECK(d->served == 9);
	cam_close(&cam);
	fake_reset();
}

TEST(capture_times_out)
{
	struct fake_dev *d = make_dev("video0", FAKE_MJPEG);
	struct machine *m = machine_for(d->path);
	struct camera cam;
	struct cam_frame f;
	bl_err err = { 0 };
	int64_t t0;
	int rc;

	m->camera.timeout_ms = 50;
	rc = cam_v4l2_open(&cam, m, clk_monotonic(), &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	if (rc)
		return;
	d->stall = 1;
	t0 = clk_real_ns();
	rc = cam_capture(&cam, &f, &err);
	CHECK(rc == BL_ETIMEDOUT);
	CHECK_STR_CONTAINS(err.msg, "no frame within 50 ms");
	CHECK((clk_real_ns() - t0) < 2000000000LL);
	CHECK((clk_real_ns() - t0) >= 40000000LL);
	cam_close(&cam);
	fake_reset();
}

TEST(unplugged_mid_stream_is_a_clear_error)
{
	struct fake_dev *d = make_dev("video0", FAKE_MJPEG);
	struct machine *m = machine_for(d->path);
	struct camera cam;
	struct cam_frame f;
	bl_err err = { 0 };
	int64_t t0;
	int rc;

	/* A long timeout, so failing at once and waiting for it differ by seconds on any machine. */
	m->camera.timeout_ms = 5000;
	rc = cam_v4l2_open(&cam, m, clk_monotonic(), &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	if (rc)
		return;
	d->vanish_after = 2;
	for (int i = 0; i < 2; i++) {
		CHECK(cam_capture(&cam, &f, &err) == 0);
		cam_frame_free(&f);
	}
	t0 = clk_real_ns();
	rc = cam_capture(&cam, &f, &err);
	CHECK(rc == BL_EIO);
	CHECK_STR_CONTAINS(err.msg, "vanished");
	CHECK_STR_CONTAINS(err.msg, "video0");
	/* No waiting for a timeout: an unplugged camera fails at once, every time. */
	CHECK((clk_real_ns() - t0) < 2000000000LL);
	memset(&err, 0, sizeof(err));
	CHECK(cam_capture(&cam, &f, &err) == BL_EIO);
	CHECK_STR_CONTAINS(err.msg, "vanished");
	CHECK(cam_lock_controls(&cam, &err) == BL_EIO);
	cam_close(&cam);
	CHECK(d->fd == -1);
	fake_reset();
}

TEST(list_shows_capture_devices_and_formats)
{
	struct fake_dev *a = make_dev("video0", FAKE_MJPEG | FAKE_YUYV);
	struct fake_dev *b = make_dev("video1", FAKE_MJPEG);
	struct cam_v4l2_device *devs = NULL;
	bl_err err = { 0 };
	int n = -1, rc;
	FILE *f;

	b->meta_only = 1;
	/* The listing reads the folder; the fake answers for the paths. */
	f = fopen(a->path, "w");
	if (f)
		fclose(f);
	f = fopen(b->path, "w");
	if (f)
		fclose(f);
	test_write_file("notes.txt", "not a device\n");
	rc = cam_v4l2_list(test_tmpdir(), &devs, &n, &err);
	CHECK_MSG(rc == 0, "%s", err.msg);
	CHECK(n == 1);
	if (rc == 0 && n == 1) {
		CHECK(strcmp(devs[0].path, a->path) == 0);
		CHECK_STR_CONTAINS(devs[0].card, "fake camera");
		CHECK(devs[0].nformats == 2);
		CHECK(strcmp(devs[0].formats[0].fourcc, "MJPG") == 0);
		CHECK(strcmp(devs[0].formats[1].fourcc, "YUYV") == 0);
		CHECK(devs[0].formats[0].nsizes == 3);
		CHECK(devs[0].formats[0].sizes[2][0] == 640 && devs[0].formats[0].sizes[2][1] == 480);
	}
	free(devs);
	CHECK(a->fd == -1 && b->fd == -1);
	fake_reset();
}

TEST_MAIN(T(mjpeg_preferred_over_yuyv), T(yuyv_fallback_converts_to_rgb),
	  T(no_usable_format_is_refused), T(unsupported_size_is_refused),
	  T(missing_device_is_a_clear_error), T(controls_are_locked),
	  T(unknown_control_names_the_choices), T(control_out_of_range_is_refused),
	  T(automatic_control_refuses_measurement), T(allow_auto_measures_anyway),
	  T(frames_after_a_control_change_are_discarded), T(capture_times_out),
	  T(unplugged_mid_stream_is_a_clear_error), T(list_shows_capture_devices_and_formats))

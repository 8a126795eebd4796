/* test_replay.c: the replay camera (folders and list files), averaged captures, and the camera command on recorded frames. */
#include <sys/stat.h>

#include "base/clock.h"
#include "base/json.h"
#include "config/machine.h"
#include "vision/cam_open.h"
#include "vtest.h"

static struct machine mach;

static struct machine *replay_machine(const char *device)
{
	bl_err err = { 0 };

	if (machine_load(BL_SOURCE_ROOT "/examples/machine-sim.json", &mach, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
	mach.camera.backend = MACHINE_CAM_REPLAY;
	snprintf(mach.camera.device, sizeof(mach.camera.device), "%s", device);
	return &mach;
}

/* A flat w x h frame of grey level v, saved under dir/name. */
static void grey_frame(const char *dir, const char *name, int w, int h, int v)
{
	struct img im;
	char path[4096];
	bl_err err = { 0 };

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	img_alloc(&im, w, h, NULL);
	vt_fill(&im, 0, 0, w, h, v, v, v);
	if (img_save(path, &im, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
	img_free(&im);
}

static const char *frames_dir(const char *name)
{
	const char *d = vt_path(name);

	mkdir(d, 0755);
	return d;
}

TEST(folder_frames_in_name_order_then_an_end)
{
	const char *d = frames_dir("frames");
	struct camera cam;
	struct cam_frame f;
	bl_err err = { 0 };
	char stray[4096];

	grey_frame(d, "002.png", 40, 30, 20);
	grey_frame(d, "001.jpg", 40, 30, 10);
	grey_frame(d, "010.PNG", 48, 36, 30);
	snprintf(stray, sizeof(stray), "%s/notes.txt", d);
	vt_write_bytes(stray, "x", 1);
	snprintf(stray, sizeof(stray), "%s/.hidden.jpg", d);
	vt_write_bytes(stray, "x", 1);
	CHECK_MSG(cam_replay_open(&cam, replay_machine(d), clk_monotonic(), &err) == 0, "%s", err.msg);
	CHECK(cam_lock_controls(&cam, &err) == 0);
	CHECK(cam_capture(&cam, &f, &err) == 0);
	CHECK(f.format == CAM_FMT_JPEG && f.width == 40 && f.height == 30 && f.seq == 0);
	CHECK_STR_CONTAINS(f.source, "replay:");
	CHECK_STR_CONTAINS(f.source, "001.jpg");
	CHECK(f.controls_locked);
	cam_frame_free(&f);
	CHECK(cam_capture(&cam, &f, &err) == 0);
	CHECK(f.format == CAM_FMT_PNG);
	CHECK_STR_CONTAINS(f.source, "002.png");
	cam_frame_free(&f);
	CHECK(cam_capture(&cam, &f, &err) == 0);
	CHECK(f.width == 48 && f.seq == 2);
	cam_frame_free(&f);
	CHECK(cam_capture(&cam, &f, &err) == BL_EIO);
	CHECK_STR_CONTAINS(err.msg, "all 3 frames used");
	cam_close(&cam);
}

TEST(list_file_in_its_order)
{
	const char *d = frames_dir("listed");
	struct camera cam;
	struct cam_frame f;
	bl_err err = { 0 };
	char text[8192], abs_path[4096];
	const char *list;

	grey_frame(d, "a.png", 20, 20, 50);
	grey_frame(d, "b.png", 20, 20, 60);
	snprintf(abs_path, sizeof(abs_path), "%s/a.png", d);
	snprintf(text, sizeof(text), "# session 3\n\nlisted/b.png\n  %s  \n", abs_path);
	list = test_write_file("frames.txt", text);
	CHECK_MSG(cam_replay_open(&cam, replay_machine(list), clk_monotonic(), &err) == 0, "%s", err.msg);
	CHECK(cam_capture(&cam, &f, &err) == 0);
	CHECK_STR_CONTAINS(f.source, "b.png");
	cam_frame_free(&f);
	CHECK(cam_capture(&cam, &f, &err) == 0);
	CHECK_STR_CONTAINS(f.source, "a.png");
	cam_frame_free(&f);
	CHECK(cam_capture(&cam, &f, &err) == BL_EIO);
	cam_close(&cam);
}

TEST(bad_recordings_are_named)
{
	const char *d = frames_dir("bad"), *empty = frames_dir("empty");
	struct camera cam;
	struct cam_frame f;
	struct img im;
	bl_err err = { 0 };
	char p[4096];
	size_t len;
	unsigned char *jpg;

	CHECK(cam_replay_open(&cam, replay_machine(empty), clk_monotonic(), &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "no .jpg, .jpeg or .png frames");
	CHECK(cam_replay_open(&cam, replay_machine(vt_path("nowhere")), clk_monotonic(), &err) ==
	      BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "nowhere");
	/* 1: a text file posing as a frame; 2: a JPEG cut short. */
	snprintf(p, sizeof(p), "%s/1.jpg", d);
	vt_write_bytes(p, "not a picture", 13);
	grey_frame(d, "2.jpg", 64, 64, 100);
	snprintf(p, sizeof(p), "%s/2.jpg", d);
	jpg = vt_read_bytes(p, &len);
	vt_write_bytes(p, jpg, len - 40);
	free(jpg);
	CHECK(cam_replay_open(&cam, replay_machine(d), clk_monotonic(), &err) == 0);
	CHECK(cam_capture(&cam, &f, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "1.jpg: neither a JPEG nor a PNG");
	CHECK(cam_capture(&cam, &f, &err) == 0);
	CHECK(img_decode_frame(&f, 1000000, &im, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "replay:");
	CHECK_STR_CONTAINS(err.msg, "2.jpg");
	cam_frame_free(&f);
	cam_close(&cam);
}

TEST(average_of_frames)
{
	const char *d = frames_dir("avg");
	struct machine *m;
	struct camera cam;
	struct img im;
	bl_err err = { 0 };
	int locked = 0;

	grey_frame(d, "1.png", 16, 8, 10);
	grey_frame(d, "2.png", 16, 8, 20);
	grey_frame(d, "3.png", 16, 8, 61);
	grey_frame(d, "4.png", 20, 8, 61);
	m = replay_machine(d);
	CHECK(cam_replay_open(&cam, m, clk_monotonic(), &err) == 0);
	CHECK(cam_capture_average(&cam, 3, &im, &locked, &err) == 0);
	CHECK(locked);
	CHECK(im.w == 16 && im.px[0] == 30 && im.px[16 * 8 * 3 - 1] == 30);
	img_free(&im);
	cam_close(&cam);
	/* Frames of different sizes cannot be averaged. */
	CHECK(cam_replay_open(&cam, m, clk_monotonic(), &err) == 0);
	CHECK(cam_capture_average(&cam, 4, &im, &locked, &err) == BL_EIO);
	CHECK_STR_CONTAINS(err.msg, "4.png: frame 3 is 20x8, the first was 16x8");
	CHECK(im.px == NULL);
	cam_close(&cam);
	CHECK(cam_replay_open(&cam, m, clk_monotonic(), &err) == 0);
	m->camera.average_frames = 2;
	CHECK(cam_capture_for_measurement(&cam, &im, &err) == 0);
	CHECK(im.px[0] == 15);
	img_free(&im);
	cam_close(&cam);
}

/*
 * Averages one after another in the camera's memory: each right whatever the
 * one before left there, a smaller frame after a larger, a larger one (the
 * buffers grow), and a frame of another size dropped from an average that
 * goes on with the next.
 */
TEST(averages_in_the_cameras_memory_one_after_another)
{
	static const struct {
		const char *name;
		int w, h, grey;
	} frames[] = {
		{ "1.png", 16, 8, 10 }, { "2.png", 16, 8, 20 }, { "3.png", 16, 8, 61 },
		{ "4.png", 24, 12, 9 }, { "5.png", 16, 8, 0 }, { "6.png", 20, 10, 7 },
		{ "7.png", 16, 8, 2 },
	};
	const char *d = frames_dir("avg-again");
	struct camera cam;
	struct img *a, *b;
	bl_err err = { 0 };
	int locked = 0;

	for (size_t i = 0; i < sizeof(frames) / sizeof(frames[0]); i++)
		grey_frame(d, frames[i].name, frames[i].w, frames[i].h, frames[i].grey);
	CHECK(cam_replay_open(&cam, replay_machine(d), clk_monotonic(), &err) == 0);
	CHECK(cam_average_begin(&cam, &err) == 0);
	for (int i = 0; i < 3; i++)
		CHECK_MSG(cam_average_add(&cam, &err) == 0, "%s", err.msg);
	CHECK(cam_average_end(&cam, &a, &locked, &err) == 0 && locked);
	CHECK(a->w == 16 && a->h == 8 && a->px[0] == 30 && a->px[16 * 8 * 3 - 1] == 30);
	CHECK(cam_average_begin(&cam, &err) == 0 && cam_average_add(&cam, &err) == 0);
	CHECK(cam_average_end(&cam, &b, NULL, &err) == 0);
	CHECK(b == a); /* the camera's, not the caller's */
	CHECK(b->w == 24 && b->h == 12 && b->px[0] == 9 && b->px[24 * 12 * 3 - 1] == 9);
	CHECK(cam_average_begin(&cam, &err) == 0 && cam_average_add(&cam, &err) == 0);
	CHECK(cam_average_add(&cam, &err) == BL_EIO);
	CHECK_STR_CONTAINS(err.msg, "6.png: frame 1 is 20x10, the first was 16x8");
	CHECK(cam_average_add(&cam, &err) == 0);
	CHECK(cam_average_end(&cam, &b, NULL, &err) == 0);
	CHECK(b->w == 16 && b->h == 8 && b->px[0] == 1 && b->px[16 * 8 * 3 - 1] == 1);
	cam_close(&cam);
	CHECK(cam.buf == NULL);
}

/* The example machine's camera is the simulator's: capture reaches it through the rig, with no --machine. */
TEST(camera_capture_from_the_simulator)
{
	const char *out_path = vt_path("sim.jpg");
	const char *args[] = { "camera", "capture", "-o", out_path, "--json", NULL };
	char *out = NULL, *err = NULL;
	struct img im = { 0 };
	bl_err e = { 0 };
	cJSON *j;

	unsetenv("BRUSHLOOP_MACHINE");
	CHECK_MSG(test_brushloop(args, &out, &err) == 0, "%s", err ? err : "");
	j = vt_json(out);
	if (j) {
		CHECK(vt_num(j, "width") == 1280 && vt_num(j, "height") == 720);
		CHECK(cJSON_IsString(cJSON_GetObjectItem(j, "source")) &&
		      strncmp(cJSON_GetObjectItem(j, "source")->valuestring, "sim", 3) == 0);
		CHECK(cJSON_IsTrue(cJSON_GetObjectItem(j, "controls_locked")));
		cJSON_Delete(j);
	}
	free(out);
	free(err);
	CHECK_MSG(img_load(out_path, 40000000, &im, &e) == 0, "%s", e.msg);
	CHECK(im.w == 1280 && im.h == 720);
	img_free(&im);
}

/* The example machine file with a replay camera on device, written beside the frames. */
static const char *replay_machine_file(const char *device)
{
	char *text;
	size_t len;
	cJSON *root, *cam;
	char *s;
	const char *path = vt_path("machine-replay.json");
	bl_err err = { 0 };

	if (fs_read_file(BL_SOURCE_ROOT "/examples/machine-sim.json", 1 << 20, &text, &len, &err))
		exit(1);
	root = cJSON_Parse(text);
	free(text);
	cam = cJSON_CreateObject();
	cJSON_AddStringToObject(cam, "backend", "replay");
	cJSON_AddStringToObject(cam, "device", device);
	cJSON_AddNumberToObject(cam, "width", 40);
	cJSON_AddNumberToObject(cam, "height", 30);
	cJSON_ReplaceItemInObject(root, "camera", cam);
	s = cJSON_Print(root);
	vt_write_bytes(path, s, strlen(s));
	cJSON_free(s);
	cJSON_Delete(root);
	return path;
}

TEST(camera_capture_command)
{
	const char *d = frames_dir("cli");
	const char *m = replay_machine_file(d);
	const char *one = vt_path("one.jpg"), *avg = vt_path("avg.png");
	const char *a1[] = { "camera", "capture", "--machine", m, "-o", one, NULL };
	const char *a2[] = { "camera", "capture", "--machine", m, "-o", avg, "--average", "2", "--json", NULL };
	char *out = NULL, *err = NULL, src[4096];
	unsigned char *x, *y;
	size_t lx, ly;
	struct img im;
	bl_err e = { 0 };
	cJSON *j;

	grey_frame(d, "1.jpg", 40, 30, 100);
	grey_frame(d, "2.png", 40, 30, 140);
	grey_frame(d, "3.png", 40, 30, 200);
	CHECK(test_brushloop(a1, &out, &err) == 0);
	CHECK_STR_CONTAINS(out, "40x30, 1 frame from replay:");
	free(out);
	free(err);
	/* A camera's JPEG is stored byte for byte. */
	snprintf(src, sizeof(src), "%s/1.jpg", d);
	x = vt_read_bytes(src, &lx);
	y = vt_read_bytes(one, &ly);
	CHECK(lx == ly && memcmp(x, y, lx) == 0);
	free(x);
	free(y);
	/* A fresh process starts the recording again: frames 1 and 2 average to 120. */
	CHECK(test_brushloop(a2, &out, &err) == 0);
	j = vt_json(out);
	if (j) {
		CHECK(vt_num(j, "frames") == 2 && vt_num(j, "width") == 40);
		CHECK(cJSON_IsTrue(cJSON_GetObjectItem(j, "controls_locked")));
		cJSON_Delete(j);
	}
	free(out);
	free(err);
	CHECK(img_load(avg, 10000, &im, &e) == 0);
	CHECK(im.px && abs(im.px[0] - 120) <= 1);
	img_free(&im);
}

TEST(camera_command_usage_errors)
{
	static const char *const cases[][8] = {
		{ "camera", NULL },
		{ "camera", "snap", NULL },
		{ "camera", "capture", "--machine", "m.json", NULL },
		{ "camera", "capture", "--machine", "m.json", "-o", "x.bmp", NULL },
		{ "camera", "capture", "-o", "x.jpg", "--average", "0", NULL },
		{ "camera", "capture", "-o", "x.jpg", "--average", "nan", NULL },
	};
	static const char *const want[] = { "subcommand", "unknown camera subcommand", "-o FILE",
					    ".jpg or .png", "--average", "--average" };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out = NULL, *err = NULL;

		CHECK_MSG(test_brushloop((const char *const *)cases[i], &out, &err) == 2, "case %zu", i);
		CHECK_MSG(err && strstr(err, want[i]), "case %zu: '%s'", i, err ? err : "");
		free(out);
		free(err);
	}
	{
		/* A machine file that is not there: exit 2, named. */
		const char *args[] = { "camera", "capture", "--machine", "no-such-machine.json", "-o",
				       "x.jpg", NULL };
		char *out = NULL, *err = NULL;

		CHECK(test_brushloop(args, &out, &err) == 2);
		CHECK_STR_CONTAINS(err, "no-such-machine.json");
		free(out);
		free(err);
	}
}

TEST(camera_list_command)
{
	const char *d = frames_dir("nodevices");
	const char *a1[] = { "camera", "list", "--dir", d, NULL };
	const char *a2[] = { "camera", "list", "--dir", d, "--json", NULL };
	const char *a3[] = { "camera", "list", "--dir", vt_path("missing"), NULL };
	char *out = NULL, *err = NULL;
	cJSON *j;

	CHECK(test_brushloop(a1, &out, &err) == 0);
	CHECK_STR_CONTAINS(out, "no V4L2 video capture devices");
	free(out);
	free(err);
	CHECK(test_brushloop(a2, &out, &err) == 0);
	j = vt_json(out);
	if (j) {
		CHECK(cJSON_IsArray(cJSON_GetObjectItem(j, "devices")));
		CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(j, "devices")) == 0);
		cJSON_Delete(j);
	}
	free(out);
	free(err);
	CHECK(test_brushloop(a3, &out, &err) == 1);
	CHECK_STR_CONTAINS(err, "cannot list");
	free(out);
	free(err);
}

TEST_MAIN(T(folder_frames_in_name_order_then_an_end), T(list_file_in_its_order),
	  T(bad_recordings_are_named), T(average_of_frames),
	  T(averages_in_the_cameras_memory_one_after_another), T(camera_capture_from_the_simulator),
	  T(camera_capture_command), T(camera_command_usage_errors), T(camera_list_command))

/* test_plan_cli.c: `brushloop plan` end to end: a plan the gate allows, every PNG layout, bad targets refused with exit 2, corrections and the comparison with the grid. */
#include <cJSON.h>
#include <stdint.h>

#include "base/fs.h"
#include "examples/targets/targets.h"
#include "test.h"
#include "vision/image.h"
#include "vision/synth.h"

#define SRC BL_SOURCE_ROOT

static char *tmp(const char *name)
{
	static char buf[16][512];
	static int k;

	k = (k + 1) % 16;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", test_tmpdir(), name);
	return buf[k];
}

static cJSON *run_json(const char *const *args, int *status)
{
	char *out = NULL, *err = NULL;
	cJSON *j;

	*status = test_brushloop(args, &out, &err);
	j = out ? cJSON_Parse(out) : NULL;
	if (!j)
		fprintf(stderr, "stdout: %s\nstderr: %s\n", out ? out : "", err ? err : "");
	free(out);
	free(err);
	return j;
}

TEST(plan_writes_a_plan_the_gate_allows)
{
	const char *plan = tmp("plan.json"), *preview = tmp("preview.png");
	const char *args[] = { "plan", SRC "/examples/targets/flat-shapes.png", "-o", plan,
			       "--preview", preview, "--max-strokes", "150", "--json", NULL };
	const char *gate[] = { "gate", "check", plan, NULL };
	cJSON *j, *pred, *cols;
	struct img im = { 0 };
	bl_err err = { 0 };
	char *out = NULL, *errs = NULL;
	int st;

	j = run_json(args, &st);
	CHECK(st == 0);
	CHECK(j != NULL);
	if (!j)
		return;
	pred = cJSON_GetObjectItem(j, "predicted");
	CHECK(cJSON_IsNumber(cJSON_GetObjectItem(pred, "mean_de00")));
	CHECK(cJSON_IsNumber(cJSON_GetObjectItem(pred, "p95_de00")));
	CHECK(cJSON_GetObjectItem(pred, "mean_de00")->valuedouble <
	      cJSON_GetObjectItem(pred, "p95_de00")->valuedouble);
	CHECK(cJSON_GetObjectItem(j, "strokes")->valuedouble > 0 &&
	      cJSON_GetObjectItem(j, "strokes")->valuedouble <= 150);
	cols = cJSON_GetObjectItem(j, "colours");
	CHECK(cJSON_GetArraySize(cols) >= 3);
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetArrayItem(cols, 0), "recipe")) >= 1);
	CHECK(cJSON_GetObjectItem(j, "arm_time_s")->valuedouble > 0);
	cJSON_Delete(j);
	/* The preview shows the target and the prediction side by side. */
	CHECK_MSG(img_load(preview, 100000000, &im, &err) == 0, "%s", err.msg);
	CHECK(im.w > 2 * im.h);
	img_free(&im);
	/* Every action of the plan passes the gate on the example machine. */
	st = test_brushloop(gate, &out, &errs);
	CHECK_MSG(st == 0, "gate check exit %d: %s", st, out ? out : "");
	CHECK_STR_CONTAINS(out, "0 need an operator, 0 denied");
	free(out);
	free(errs);
}

TEST(png_layouts_accepted)
{
	/* 16-bit grey with alpha (over the white canvas). */
	const char *args[] = { "plan", SRC "/tests/plan/data/grey16-alpha.png", "-o", tmp("g.json"),
			       "--max-strokes", "60", "--json", NULL };
	cJSON *j;
	int st;

	j = run_json(args, &st);
	CHECK(st == 0);
	CHECK(j && cJSON_GetObjectItem(j, "strokes")->valuedouble > 0);
	cJSON_Delete(j);
}

static void expect_refused(const char *path, const char *want)
{
	const char *args[] = { "plan", path, "-o", tmp("bad.json"), NULL };
	char *out = NULL, *err = NULL;
	int st = test_brushloop(args, &out, &err);

	CHECK_MSG(st == 2, "%s: exit %d", path, st);
	CHECK_STR_CONTAINS(err, want);
	CHECK_STR_CONTAINS(err, path);
	free(out);
	free(err);
}

static uint32_t crc32(const unsigned char *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0xedb88320u : c >> 1;
	}
	return ~c;
}

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

TEST(bad_targets_refused)
{
	FILE *f;
	char *png = NULL;
	size_t len = 0;
	bl_err err = { 0 };
	unsigned char huge[8 + 25 + 12 + 12] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };
	const char *empty = tmp("empty.png"), *junk = tmp("junk.jpg"), *cut = tmp("cut.png"),
		   *big = tmp("huge.png");

	f = fopen(empty, "wb");
	fclose(f);
	expect_refused(empty, "empty");
	f = fopen(junk, "wb");
	fputs("this is not a picture at all, only text that claims to be one", f);
	fclose(f);
	expect_refused(junk, junk);
	/* A PNG cut in half. */
	CHECK(fs_read_file(SRC "/examples/targets/flat-shapes.png", 1 << 24, &png, &len, &err) == 0);
	f = fopen(cut, "wb");
	fwrite(png, 1, len / 2, f);
	fclose(f);
	free(png);
	expect_refused(cut, cut);
	expect_refused(SRC "/tests/plan/data/one-pixel.png", "1 x 1 px");
	/* A valid header claiming 60000 x 60000 pixels: refused before any pixel memory. */
	put32(huge + 8, 13);
	memcpy(huge + 12, "IHDR", 4);
	put32(huge + 16, 60000);
	put32(huge + 20, 60000);
	huge[24] = 8;
	huge[25] = 2;
	put32(huge + 29, crc32(huge + 12, 17));
	/* An empty IDAT and IEND, so the header is all a reader needs to see. */
	memcpy(huge + 37, "IDAT", 4);
	put32(huge + 41, crc32(huge + 37, 4));
	memcpy(huge + 49, "IEND", 4);
	put32(huge + 53, crc32(huge + 49, 4));
	f = fopen(big, "wb");
	fwrite(huge, 1, sizeof(huge), f);
	fclose(f);
	expect_refused(big, "60000");
	expect_refused(tmp("does-not-exist.png"), "does-not-exist.png");
}

TEST(usage_errors)
{
	const char *a1[] = { "plan", NULL };
	const char *a2[] = { "plan", SRC "/examples/targets/flat-shapes.png", "--colours", "20", NULL };
	const char *a3[] = { "plan", "--correct", tmp("x.json"), NULL };
	const char *a4[] = { "plan", SRC "/examples/targets/flat-shapes.png", "--max-strokes", "many", NULL };
	const char *a5[] = { "plan", SRC "/examples/targets/flat-shapes.png", "--palette",
			     tmp("no-palette.json"), NULL };
	char *out = NULL, *err = NULL;

	CHECK(test_brushloop(a1, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "one target");
	free(out);
	free(err);
	CHECK(test_brushloop(a2, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "mixing cells");
	free(out);
	free(err);
	CHECK(test_brushloop(a3, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "--observed");
	free(out);
	free(err);
	CHECK(test_brushloop(a4, &out, &err) == 2);
	CHECK_STR_CONTAINS(err, "--max-strokes");
	free(out);
	free(err);
	CHECK(test_brushloop(a5, &out, &err) != 0);
	CHECK_STR_CONTAINS(err, "no-palette.json");
	free(out);
	free(err);
}

TEST(correct_from_observed_canvas)
{
	const char *plan = tmp("p.json"), *canvas = tmp("canvas.png"), *more = tmp("more.json");
	const char *a1[] = { "plan", SRC "/examples/targets/flat-shapes.png", "-o", plan,
			     "--max-strokes", "100", NULL };
	const char *a2[] = { "plan", "--correct", "--observed", canvas, "--rectified", plan, "-o",
			     more, "--max-strokes", "80", "--json", NULL };
	struct img im = { 0 };
	unsigned char *pic = malloc(375 * 300 * 3);
	bl_err err = { 0 };
	char *out = NULL, *errs = NULL;
	cJSON *j;
	int st;

	st = test_brushloop(a1, &out, &errs);
	CHECK_MSG(st == 0, "%s", errs ? errs : "");
	free(out);
	free(errs);
	/* The canvas as a perfect painting at 1 px/mm (the picture at 12.5..387.5 mm), but for a smudge. */
	CHECK(pic && target_draw(1, 375, 300, pic) == 0);
	CHECK(img_alloc(&im, 400, 300, &err) == 0);
	memset(im.px, 242, (size_t)im.w * im.h * 3);
	for (int y = 0; y < 300; y++)
		for (int x = 0; x < 375; x++)
			memcpy(im.px + ((size_t)y * 400 + x + 12) * 3, pic + ((size_t)y * 375 + x) * 3, 3);
	for (int y = 20; y < 60; y++)
		for (int x = 330; x < 380; x++) {
			unsigned char *p = im.px + ((size_t)y * 400 + x) * 3;

			p[0] = 40;
			p[1] = 160;
			p[2] = 40;
		}
	CHECK_MSG(img_save(canvas, &im, &err) == 0, "%s", err.msg);
	j = run_json(a2, &st);
	CHECK(st == 0);
	CHECK(j && cJSON_IsTrue(cJSON_GetObjectItem(j, "correction")));
	CHECK(j && cJSON_GetObjectItem(j, "strokes")->valuedouble > 0);
	cJSON_Delete(j);
	img_free(&im);
	free(pic);
}

struct scene {
	unsigned char *pic; /* the target at 1 px/mm over the picture's 375 x 300 mm */
};

/* The canvas as the camera sees it: the picture painted perfectly but for a green smudge. */
static void paint_canvas(void *ctx, double x, double y, unsigned char rgb[3])
{
	const struct scene *sc = ctx;
	int px = (int)(x - 12.5), py = (int)y;

	if (x >= 330 && x < 380 && y >= 20 && y < 60) {
		rgb[0] = 40;
		rgb[1] = 160;
		rgb[2] = 40;
	} else if (px >= 0 && px < 375 && py >= 0 && py < 300) {
		memcpy(rgb, sc->pic + ((size_t)py * 375 + px) * 3, 3);
	} else {
		rgb[0] = rgb[1] = rgb[2] = 242;
	}
}

TEST(correct_from_camera_frame)
{
	const char *plan = tmp("p.json"), *frame = tmp("frame.png"), *more = tmp("more.json");
	const char *a1[] = { "plan", SRC "/examples/targets/flat-shapes.png", "-o", plan,
			     "--max-strokes", "100", NULL };
	const char *a2[] = { "plan", "--correct", "--observed", frame, plan, "-o", more,
			     "--max-strokes", "80", "--json", NULL };
	struct scene sc = { malloc(375 * 300 * 3) };
	struct vis_synth vs;
	struct img im = { 0 };
	bl_err err = { 0 };
	char *out = NULL, *errs = NULL;
	cJSON *j;
	int st;

	st = test_brushloop(a1, &out, &errs);
	CHECK_MSG(st == 0, "%s", errs ? errs : "");
	free(out);
	free(errs);
	CHECK(sc.pic && target_draw(1, 375, 300, sc.pic) == 0);
	memset(&vs, 0, sizeof(vs));
	vs.w = 1280;
	vs.h = 960;
	vs.size_mm[0] = 400;
	vs.size_mm[1] = 300;
	/* 2 px/mm, slightly turned: the frame must be rectified before it is compared. */
	vs.corners_px[0] = 242; vs.corners_px[1] = 175;
	vs.corners_px[2] = 1040; vs.corners_px[3] = 185;
	vs.corners_px[4] = 1034; vs.corners_px[5] = 784;
	vs.corners_px[6] = 236; vs.corners_px[7] = 776;
	vs.markers = 1;
	/* The example machine's markers (zones.canvas.markers), on paper wide enough to carry them. */
	vs.marker_size_mm = 30;
	vs.marker_offset_mm = 25;
	vs.table[0] = vs.table[1] = vs.table[2] = 60;
	vs.paper[0] = vs.paper[1] = vs.paper[2] = 242;
	vs.paper_margin_mm = 50;
	vs.paint = paint_canvas;
	vs.ctx = &sc;
	CHECK_MSG(vis_synth_frame(&vs, &im, &err) == 0, "%s", err.msg);
	CHECK_MSG(img_save(frame, &im, &err) == 0, "%s", err.msg);
	j = run_json(a2, &st);
	CHECK(st == 0);
	CHECK(j && cJSON_GetObjectItem(j, "strokes")->valuedouble > 0);
	cJSON_Delete(j);
	img_free(&im);
	free(sc.pic);
}

TEST(compare_with_grid)
{
	const char *args[] = { "plan", "--compare", SRC "/examples/targets/still-life.png",
			       "--budgets", "100", "--json", NULL };
	cJSON *j, *r;
	int st;

	j = run_json(args, &st);
	CHECK(st == 0);
	if (!j)
		return;
	CHECK(cJSON_GetObjectItem(j, "cases")->valuedouble == 1);
	CHECK(cJSON_GetObjectItem(j, "planner_better")->valuedouble == 1);
	r = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "results"), 0);
	CHECK(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "planner"), "mean_de00")->valuedouble <
	      0.85 * cJSON_GetObjectItem(cJSON_GetObjectItem(r, "grid"), "mean_de00")->valuedouble);
	cJSON_Delete(j);
}

TEST_MAIN(T(plan_writes_a_plan_the_gate_allows), T(png_layouts_accepted), T(bad_targets_refused),
	  T(usage_errors), T(correct_from_observed_canvas), T(correct_from_camera_frame), T(compare_with_grid))

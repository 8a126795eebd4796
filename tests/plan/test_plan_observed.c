/* test_plan_observed.c: `plan --correct` reads a camera frame through the run's own observation pipeline, so it corrects the colours the run saw (the light map included). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "color/color.h"
#include "config/machine.h"
#include "plan/plan.h"
#include "plan/plan_image.h"
#include "test.h"
#include "vision/canvas.h"
#include "vision/image.h"
#include "vision/light.h"
#include "vision/measure.h"

/*
 * The run's observation of a frame, step by step as docs/run.md describes
 * it: the light map divided out of the frame (light = 1), the canvas found
 * from its corner markers, rectified at 1 px/mm, Lab through the camera
 * profile. Written out here, not called, so the test holds whatever the
 * pipeline's code becomes.
 */
static float *run_view(const struct machine *m, const char *frame, int light, int *w, int *h)
{
	struct img im = { 0 }, rect = { 0 };
	struct vis_light lm;
	struct vis_markers mk;
	struct vis_geometry g;
	struct meas_profile *p = NULL;
	bl_err err = { 0 };
	float *lab = NULL;

	CHECK_MSG(img_load(frame, m->camera.max_pixels, &im, &err) == 0, "%s", err.msg);
	if (light) {
		CHECK_MSG(vis_light_load(m->calibration.light_map, &lm, &err) == 0, "%s", err.msg);
		CHECK_MSG(vis_light_apply(&lm, NULL, &im, &err) == 0, "%s", err.msg);
		vis_light_free(&lm);
	}
	vis_markers_from_machine(m, &mk);
	CHECK_MSG(vis_locate(&im, frame, NULL, &mk, &g, &err) == 0, "%s", err.msg);
	CHECK_MSG(vis_rectify(&im, &g, 1.0, &rect, &err) == 0, "%s", err.msg);
	CHECK(meas_profile_open(m->calibration.camera_profile, &p, &err) == 0);
	lab = malloc((size_t)rect.w * rect.h * 3 * sizeof(float));
	CHECK(lab && meas_lab_raster(p, &rect, lab, &err) == 0);
	*w = rect.w;
	*h = rect.h;
	meas_profile_close(p);
	img_free(&rect);
	img_free(&im);
	return lab;
}

/* Mean CIEDE2000 between the correction's raster and the run's view over the picture box. */
static double mean_de(const struct plan_raster *o, const float *lab, int w, int h, int x0, int y0)
{
	double sum = 0.0;
	long n = 0;

	for (int y = 0; y < o->h && y0 + y < h; y += 3)
		for (int x = 0; x < o->w && x0 + x < w; x += 3) {
			const float *a = o->px + ((size_t)y * o->w + x) * 3;
			const float *b = lab + ((size_t)(y0 + y) * w + x0 + x) * 3;
			color_lab la = { a[0], a[1], a[2] }, lb = { b[0], b[1], b[2] };

			sum += color_de00(&la, &lb);
			n++;
		}
	CHECK(n > 1000);
	return n ? sum / n : 1e9;
}

TEST(correction_sees_the_colours_the_run_saw)
{
	static struct machine m;
	static struct plan p;
	const char *frame = test_write_file("frame.jpg", "");
	const char *args[] = { "sim", "render", "--scene", "canvas", "-o", frame, "--machine",
			       BL_SOURCE_ROOT "/examples/machine-sim.json", NULL };
	struct plan_raster obs = { 0 };
	bl_err err = { 0 };
	float *with, *without;
	double same, unlit;
	int w, h, w2, h2;

	CHECK_MSG(machine_load(BL_SOURCE_ROOT "/examples/machine-sim.json", &m, &err) == 0, "%s",
		  err.msg);
	/* The example machine names a light map: the difference this test is about. */
	CHECK(m.calibration.light_map[0] != 0);
	CHECK(test_brushloop(args, NULL, NULL) == 0);
	/* A plan's picture box: the canvas less a 20 mm margin. */
	p.canvas_size_mm[0] = m.canvas.size_mm[0];
	p.canvas_size_mm[1] = m.canvas.size_mm[1];
	p.image_mm[0] = 20;
	p.image_mm[1] = 20;
	p.image_mm[2] = m.canvas.size_mm[0] - 40;
	p.image_mm[3] = m.canvas.size_mm[1] - 40;
	CHECK_MSG(plan_observed_load(frame, &m, &p, 0, &obs, &err) == 0, "%s", err.msg);
	with = run_view(&m, frame, 1, &w, &h);
	without = run_view(&m, frame, 0, &w2, &h2);
	CHECK(w == w2 && h == h2);
	CHECK(obs.w >= (int)p.image_mm[2] && obs.h >= (int)p.image_mm[3]);
	same = mean_de(&obs, with, w, h, 20, 20);
	unlit = mean_de(&obs, without, w, h, 20, 20);
	printf("plan --correct against the run's view: mean CIEDE2000 %.4f (against the view "
	       "without the light map: %.3f)\n", same, unlit);
	/* The same pixels through the same steps: equal but for float rounding. */
	CHECK_MSG(same < 0.01, "the correction sees other colours than the run: %.3f", same);
	/* The light map matters here, so a pipeline without it fails the line above. */
	CHECK_MSG(unlit > 0.3, "the light map changes the colours by only %.3f", unlit);
	plan_raster_free(&obs);
	free(with);
	free(without);
}

TEST_MAIN(T(correction_sees_the_colours_the_run_saw))

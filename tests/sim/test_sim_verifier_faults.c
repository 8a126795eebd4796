/* test_sim_verifier_faults.c: the verifier's faults of the simulator: a frozen camera, a knocked camera, a lamp that dims or fails, a smeared lens, a drifting exposure; each at its time, each the same with the same seed. */
#include <math.h>
#include <string.h>

#include "config/machine.h"
#include "sim/sim.h"
#include "vision/camera.h"
#include "vision/image.h"
#include "test.h"

struct world {
	struct machine m;
	clk clock;
	struct sim *s;
	struct camera *cam;
};

/* The example machine at a sixteenth of the pixels, with faults ("KEY=VALUE", NULL-terminated). */
static void open_world(struct world *w, uint64_t seed, const char *const *faults)
{
	struct sim_options o = { seed, 1, NULL };
	char p[4096];
	bl_err err;

	snprintf(p, sizeof(p), "%s/examples/machine-sim.json", getenv("BRUSHLOOP_SRC"));
	if (machine_load(p, &w->m, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
	w->m.camera.width = 320;
	w->m.camera.height = 180;
	for (; faults && *faults; faults++)
		if (machine_sim_fault_set(&w->m, *faults, &err)) {
			fprintf(stderr, "%s\n", err.msg);
			exit(1);
		}
	if (sim_open(&w->m, &o, &w->clock, &w->s, &err)) {
		fprintf(stderr, "sim_open: %s\n", err.msg);
		exit(1);
	}
	w->cam = sim_camera(w->s);
}

static void close_world(struct world *w)
{
	cam_close(w->cam);
	sim_close(w->s);
}

/* Moves the world's clock on to t s (from where it is). */
static void at(struct world *w, double t_s)
{
	int64_t now = clk_now_ns(&w->clock), want = (int64_t)(t_s * 1e9);

	if (want > now)
		clk_advance(&w->clock, want - now);
}

/* One capture, decoded; f keeps the encoded bytes. */
static void capture(struct world *w, struct cam_frame *f, struct img *im)
{
	bl_err err;

	memset(f, 0, sizeof(*f));
	memset(im, 0, sizeof(*im));
	CHECK_MSG(cam_capture(w->cam, f, &err) == 0, "capture: %s", err.msg);
	CHECK_MSG(img_decode_frame(f, 1L << 24, im, &err) == 0, "decode: %s", err.msg);
}

/* Mean code value over a box of an image, all channels. */
static double mean_box(const struct img *im, int x0, int y0, int x1, int y1)
{
	double s = 0.0;
	long n = 0;

	for (int y = y0; y < y1; y++)
		for (int x = x0; x < x1; x++, n++)
			for (int k = 0; k < 3; k++)
				s += im->px[3 * ((size_t)y * im->w + x) + k];
	return n ? s / (3.0 * n) : 0.0;
}

static double mean_all(const struct img *im)
{
	return mean_box(im, 0, 0, im->w, im->h);
}

/* The centre of marker id in a frame, from the truth. */
static void marker_px(struct world *w, int id, double uv[2])
{
	cJSON *t = NULL, *mk, *c;
	bl_err err;

	CHECK(sim_truth(w->s, SIM_SCENE_CANVAS, &t, &err) == 0);
	mk = cJSON_GetArrayItem(cJSON_GetObjectItem(t, "markers"), id);
	c = cJSON_GetObjectItem(mk, "center");
	uv[0] = cJSON_GetArrayItem(c, 0)->valuedouble;
	uv[1] = cJSON_GetArrayItem(c, 1)->valuedouble;
	cJSON_Delete(t);
}

TEST(verifier_faults_are_read_and_refused_by_their_ranges)
{
	struct machine m;
	char p[4096];
	bl_err err;
	static const char *const bad[] = { "lamp_level=1.5", "smear_radius=0", "camera_turn_deg=90",
					    "camera_shift_mm=-300", "freeze_at_s=-1", "exposure_drift_per_h=x",
					    "smear_x=2" };

	snprintf(p, sizeof(p), "%s/examples/machine-sim.json", getenv("BRUSHLOOP_SRC"));
	CHECK(machine_load(p, &m, &err) == 0);
	CHECK(m.sim.faults.freeze_at_s == 0.0 && m.sim.faults.lamp_level == 0.0 &&
	      m.sim.faults.smear_radius == 0.15 && m.sim.faults.smear_x == 0.5);
	CHECK(machine_sim_fault_set(&m, "freeze_at_s=600", &err) == 0 && m.sim.faults.freeze_at_s == 600.0);
	CHECK(machine_sim_fault_set(&m, "camera_turn_deg=-2.5", &err) == 0 &&
	      m.sim.faults.camera_turn_deg == -2.5);
	CHECK(machine_sim_fault_set(&m, "exposure_drift_per_h=0.2", &err) == 0 &&
	      m.sim.faults.exposure_drift_per_h == 0.2);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_MSG(machine_sim_fault_set(&m, bad[i], &err) == BL_EINVAL, "%s was taken", bad[i]);
		CHECK_STR_CONTAINS(err.msg, "is not a number in");
	}
	CHECK(machine_sim_fault_set(&m, "lamp=0", &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "exposure_drift_per_h");
}

TEST(a_frozen_camera_hands_back_one_frame_from_its_time_on)
{
	static const char *const freeze[] = { "freeze_at_s=10", NULL };
	struct world w, ok;
	struct cam_frame f[3], g;
	struct img im[3], gi;
	int64_t t1;

	open_world(&w, 7, freeze);
	open_world(&ok, 7, NULL);
	/* Before its time: every frame new (the noise differs), and the same as without the fault. */
	capture(&w, &f[0], &im[0]);
	capture(&w, &f[1], &im[1]);
	capture(&ok, &g, &gi);
	CHECK(f[0].len != f[1].len || memcmp(f[0].data, f[1].data, f[0].len) != 0);
	CHECK(g.len == f[0].len && memcmp(g.data, f[0].data, g.len) == 0);
	for (int i = 0; i < 2; i++) {
		cam_frame_free(&f[i]);
		img_free(&im[i]);
	}
	/* After: one frame, the same bytes, however long it goes on; time and number move on. */
	at(&w, 10.0);
	capture(&w, &f[0], &im[0]);
	at(&w, 3600.0);
	t1 = clk_now_ns(&w.clock);
	capture(&w, &f[1], &im[1]);
	capture(&w, &f[2], &im[2]);
	CHECK(f[1].len == f[0].len && memcmp(f[1].data, f[0].data, f[0].len) == 0);
	CHECK(f[2].len == f[0].len && memcmp(f[2].data, f[0].data, f[0].len) == 0);
	CHECK(f[1].t_ns == t1 && f[2].t_ns > f[1].t_ns && f[2].seq == f[1].seq + 1);
	for (int i = 0; i < 3; i++) {
		cam_frame_free(&f[i]);
		img_free(&im[i]);
	}
	cam_frame_free(&g);
	img_free(&gi);
	close_world(&w);
	close_world(&ok);
}

TEST(a_knocked_camera_sees_the_markers_elsewhere_from_its_time_on)
{
	static const char *const knock[] = { "camera_moved_at_s=100", "camera_shift_mm=8", "camera_turn_deg=1.5",
					      NULL };
	struct world w, ok;
	double a[2], b[2], c[2];

	open_world(&w, 3, knock);
	open_world(&ok, 3, NULL);
	marker_px(&w, 2, a);
	marker_px(&ok, 2, b);
	CHECK_NEAR(a[0], b[0], 1e-9);
	CHECK_NEAR(a[1], b[1], 1e-9);
	at(&w, 100.0);
	marker_px(&w, 2, c);
	/* 8 mm at this distance is several pixels at 320 wide, and the turn moves a far corner more. */
	CHECK_MSG(hypot(c[0] - a[0], c[1] - a[1]) > 3.0, "marker 2 moved %.2f px", hypot(c[0] - a[0], c[1] - a[1]));
	close_world(&w);
	close_world(&ok);
}

TEST(a_lamp_dims_or_fails_at_its_time)
{
	static const char *const dim[] = { "lamp_at_s=50", "lamp_level=0.5", NULL };
	static const char *const off[] = { "lamp_at_s=50", NULL };
	struct world w, x;
	struct cam_frame f[2];
	struct img im[2];
	double before, after;

	open_world(&w, 4, dim);
	capture(&w, &f[0], &im[0]);
	at(&w, 50.0);
	capture(&w, &f[1], &im[1]);
	before = mean_all(&im[0]);
	after = mean_all(&im[1]);
	/* Half the light: about 0.73 of the code value through the sRGB curve. */
	CHECK_MSG(after < 0.8 * before && after > 0.6 * before, "mean %.1f -> %.1f at half the light", before, after);
	for (int i = 0; i < 2; i++) {
		cam_frame_free(&f[i]);
		img_free(&im[i]);
	}
	close_world(&w);

	open_world(&x, 4, off);
	at(&x, 60.0);
	capture(&x, &f[0], &im[0]);
	CHECK_MSG(mean_all(&im[0]) < 3.0, "a failed lamp's frame has mean %.1f", mean_all(&im[0]));
	cam_frame_free(&f[0]);
	img_free(&im[0]);
	close_world(&x);
}

TEST(a_smeared_lens_hazes_its_disc_and_nothing_else)
{
	static const char *const smear[] = { "smear_at_s=5", "smear_radius=0.2", "smear_x=0.25", "smear_y=0.5",
					      NULL };
	struct world w, ok;
	struct cam_frame f, g;
	struct img im, gi;
	double in_w, in_ok;

	open_world(&w, 9, smear);
	open_world(&ok, 9, NULL);
	at(&w, 5.0);
	at(&ok, 5.0);
	capture(&w, &f, &im);
	capture(&ok, &g, &gi);
	/* Its middle (x 80, y 90 at 320x180) leans to the brown haze: red above blue. */
	in_w = mean_box(&im, 76, 86, 84, 94);
	in_ok = mean_box(&gi, 76, 86, 84, 94);
	CHECK_MSG(fabs(in_w - in_ok) > 10.0, "the smear's middle %.1f against %.1f", in_w, in_ok);
	CHECK(im.px[3 * (90 * 320 + 80)] > im.px[3 * (90 * 320 + 80) + 2]);
	/* The right half of the view lies beyond it: the same pixels as without the fault. */
	for (int y = 0; y < 180; y++)
		CHECK(memcmp(im.px + 3 * ((size_t)y * 320 + 192), gi.px + 3 * ((size_t)y * 320 + 192), 3 * 128) == 0);
	cam_frame_free(&f);
	cam_frame_free(&g);
	img_free(&im);
	img_free(&gi);
	close_world(&w);
	close_world(&ok);
}

TEST(an_exposure_left_on_drifts_over_the_night)
{
	static const char *const drift[] = { "exposure_drift_per_h=0.25", NULL };
	struct world w;
	struct cam_frame f[3];
	struct img im[3];
	double m[3];

	open_world(&w, 2, drift);
	for (int i = 0; i < 3; i++) {
		at(&w, i * 3600.0);
		capture(&w, &f[i], &im[i]);
		m[i] = mean_all(&im[i]);
	}
	CHECK_MSG(m[1] > m[0] + 5.0 && m[2] > m[1] + 3.0, "means %.1f, %.1f, %.1f at 0, 1 and 2 h", m[0], m[1], m[2]);
	for (int i = 0; i < 3; i++) {
		cam_frame_free(&f[i]);
		img_free(&im[i]);
	}
	close_world(&w);
}

TEST(the_verifier_faults_give_the_same_frames_with_the_same_seed)
{
	static const char *const all[] = { "freeze_at_s=4000", "camera_moved_at_s=100", "camera_shift_mm=-5",
					   "lamp_at_s=200", "lamp_level=0.7", "smear_at_s=300",
					   "exposure_drift_per_h=0.1", NULL };
	static const double times[] = { 0.0, 150.0, 250.0, 350.0, 4100.0 };
	struct world a, b;

	open_world(&a, 11, all);
	open_world(&b, 11, all);
	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		struct cam_frame fa, fb;
		struct img ia, ib;

		at(&a, times[i]);
		at(&b, times[i]);
		capture(&a, &fa, &ia);
		capture(&b, &fb, &ib);
		CHECK_MSG(fa.len == fb.len && memcmp(fa.data, fb.data, fa.len) == 0, "frames at %g s differ", times[i]);
		cam_frame_free(&fa);
		cam_frame_free(&fb);
		img_free(&ia);
		img_free(&ib);
	}
	close_world(&a);
	close_world(&b);
}

TEST_MAIN(T(verifier_faults_are_read_and_refused_by_their_ranges),
	  T(a_frozen_camera_hands_back_one_frame_from_its_time_on),
	  T(a_knocked_camera_sees_the_markers_elsewhere_from_its_time_on), T(a_lamp_dims_or_fails_at_its_time),
	  T(a_smeared_lens_hazes_its_disc_and_nothing_else), T(an_exposure_left_on_drifts_over_the_night),
	  T(the_verifier_faults_give_the_same_frames_with_the_same_seed))

/* test_review.c: the second judge's rules: each fires on evidence made to break it and agrees with evidence that does not; each of the simulator's verifier faults is caught by its rule on frames the simulator rendered; what it keeps reads back. */
#include <math.h>
#include <string.h>

#include "base/fs.h"
#include "config/machine.h"
#include "config/palette.h"
#include "plan/plan_mix.h"
#include "review/review.h"
#include "cv/cv.h"
#include "sim/sim.h"
#include "vision/camera.h"
#include "vision/observe.h"
#include "test.h"

static struct machine *example(void)
{
	static struct machine m;
	char p[4096];
	bl_err err;

	snprintf(p, sizeof(p), "%s/examples/machine-sim.json", getenv("BRUSHLOOP_SRC"));
	if (machine_load(p, &m, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
	return &m;
}

/* The finding of rule name in a result (NULL when it was not judged there). */
static const struct review_finding *finding(const struct review_result *res, const char *name)
{
	for (int i = 0; i < res->n; i++)
		if (!strcmp(res->f[i].rule, name))
			return &res->f[i];
	return NULL;
}

/* The rule fired: judged, and disagrees. */
static int fired(const struct review_result *res, const char *name)
{
	const struct review_finding *f = finding(res, name);

	return f && f->judged && !f->agree;
}

/* ---- frames as the simulator's camera gives them, through the run's pipeline ---- */

struct rig {
	struct machine *m;
	clk clock;
	struct sim *s;
	struct camera *cam;
	struct vis_observer o;
	struct vis_geometry g;   /* located in the first frame: the run keeps it (canvas.json) */
	int located;
};

static void rig_open(struct rig *r, const char *const *faults)
{
	struct sim_options so = { 5, 1, NULL };
	bl_err err;

	memset(r, 0, sizeof(*r));
	r->m = example();
	for (; faults && *faults; faults++)
		CHECK(machine_sim_fault_set(r->m, *faults, &err) == 0);
	if (sim_open(r->m, &so, &r->clock, &r->s, &err) || vis_observer_load(&r->o, r->m, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
	r->cam = sim_camera(r->s);
}

static void rig_close(struct rig *r)
{
	cam_close(r->cam);
	sim_close(r->s);
	vis_observer_close(&r->o);
}

/*
 * One observation at t_s (world clock): the frame as captured (raw), with the
 * light divided out (seen), the canvas's Lab through the first frame's
 * geometry; told to the reviewer. lab is malloc'd, w x h.
 */
static float *observe(struct rig *r, struct review *rv, double t_s, const char *name)
{
	int64_t now = clk_now_ns(&r->clock), want = (int64_t)(t_s * 1e9);
	struct cam_frame f = { 0 };
	struct img raw = { 0 }, seen = { 0 };
	struct vis_observation ob = { 0 };
	bl_err err;
	float *lab = NULL;

	if (want > now)
		clk_advance(&r->clock, want - now);
	CHECK_MSG(cam_capture(r->cam, &f, &err) == 0, "%s", err.msg);
	CHECK_MSG(img_decode_frame(&f, 1L << 24, &raw, &err) == 0, "%s", err.msg);
	CHECK_MSG(img_decode_frame(&f, 1L << 24, &seen, &err) == 0, "%s", err.msg);
	CHECK_MSG(vis_observe_light(&r->o, &seen, name, &err) == 0, "%s", err.msg);
	if (!r->located) {
		CHECK_MSG(vis_observe_locate(&r->o, &seen, name, &r->g, &err) == 0, "%s", err.msg);
		r->located = 1;
	}
	rv->clock_s = t_s;
	CHECK_MSG(review_observed(rv, &raw, &seen, &r->g, r->o.profile, name, &err) == 0, "%s", err.msg);
	CHECK_MSG(vis_observe_raster(&r->o, &seen, &r->g, &ob, &err) == 0, "%s", err.msg);
	lab = ob.lab;
	ob.lab = NULL;
	vis_observation_free(&ob);
	cam_frame_free(&f);
	img_free(&raw);
	img_free(&seen);
	return lab;
}

/*
 * A checkpoint after a quiet hour (no strokes) with the faults given, the
 * first frame at 0 s the canvas agreed on: the result, and how many pixels
 * the canvas has.
 */
static void quiet_checkpoint(const char *const *faults, double t_s, struct review_result *res)
{
	struct rig r;
	struct review rv;
	float *before, *now, *cover;
	struct review_canvas c = { 0 };
	bl_err err;
	int w = 400, h = 300;

	rig_open(&r, faults);
	review_init(&rv, r.m);
	before = observe(&r, &rv, 0.0, "frames/000001-blank.jpg");
	CHECK(review_baseline(&rv, before, w, h, 0, -1, &err) == 0);
	free(observe(&r, &rv, 1.0, "frames/000002-a.jpg"));
	now = observe(&r, &rv, t_s, "frames/000003-checkpoint.jpg");
	cover = calloc((size_t)w * h, sizeof(float));
	c.w = w;
	c.h = h;
	c.now = now;
	c.cover = cover;
	CHECK(review_judge(&rv, REVIEW_AT_CHECKPOINT, &c, NULL, res, &err) == 0);
	free(before);
	free(now);
	free(cover);
	review_free(&rv);
	rig_close(&r);
}

static void say(const char *what, const struct review_result *res)
{
	for (int i = 0; i < res->n; i++)
		fprintf(stderr, "%s: %s %s %.3f (%s)\n", what, res->f[i].rule,
			!res->f[i].judged ? "not judged" : res->f[i].agree ? "agrees" : "DISAGREES", res->f[i].figure,
			res->f[i].why);
}

TEST(a_quiet_hour_without_a_fault_is_agreed_with)
{
	struct review_result res;

	quiet_checkpoint(NULL, 3600.0, &res);
	say("no fault", &res);
	CHECK_MSG(res.agree, "the reviewer disagreed with nothing wrong");
	CHECK(finding(&res, "frame_new")->judged && finding(&res, "markers")->judged &&
	      finding(&res, "lamp")->judged && finding(&res, "reference")->judged &&
	      finding(&res, "unpainted_unchanged")->judged);
}

TEST(a_frozen_camera_is_caught_by_frame_new)
{
	static const char *const f[] = { "freeze_at_s=0.5", NULL };
	struct review_result res;

	quiet_checkpoint(f, 3600.0, &res);
	say("frozen", &res);
	CHECK(fired(&res, "frame_new"));
	CHECK_STR_CONTAINS(finding(&res, "frame_new")->why, "repeats 000002-a.jpg pixel for pixel");
}

TEST(a_knocked_camera_is_caught_by_markers)
{
	static const char *const f[] = { "camera_moved_at_s=600", "camera_shift_mm=6", "camera_turn_deg=0.5", NULL };
	struct review_result res;

	quiet_checkpoint(f, 3600.0, &res);
	say("knocked", &res);
	CHECK(fired(&res, "markers"));
}

TEST(a_lamp_that_dims_is_caught_by_lamp)
{
	static const char *const f[] = { "lamp_at_s=600", "lamp_level=0.6", NULL };
	struct review_result res;

	quiet_checkpoint(f, 3600.0, &res);
	say("dimmed", &res);
	CHECK(fired(&res, "lamp"));
	CHECK_NEAR(finding(&res, "lamp")->figure, 0.4, 0.05);
}

TEST(a_smeared_lens_is_caught_by_unpainted_unchanged)
{
	static const char *const f[] = { "smear_at_s=600", NULL };
	struct review_result res;

	quiet_checkpoint(f, 3600.0, &res);
	say("smeared", &res);
	CHECK(fired(&res, "unpainted_unchanged"));
}

TEST(a_drifting_exposure_is_caught_by_lamp)
{
	static const char *const f[] = { "exposure_drift_per_h=0.2", NULL };
	struct review_result res;

	quiet_checkpoint(f, 2 * 3600.0, &res);
	say("exposure", &res);
	CHECK(fired(&res, "lamp"));
	CHECK(fired(&res, "lamp_drift"));
}

/*
 * A night of the lamp's two rules as the run reviews it: an observation every
 * step_s until end_s, each judged and taken as agreed (review_agreed) unless
 * lamp or lamp_drift disagrees. This rig divides out no lamp as the run does,
 * so reference drifts with the lamp here and is left out. Returns the time of
 * the first disagreement of the two (or -1) with its result; the light's
 * largest change from the start in *drift.
 */
static double reviewed_night(const char *const *faults, double end_s, double step_s, struct review_result *res,
			     double *drift)
{
	struct rig r;
	struct review rv;
	bl_err err;
	double at = -1.0;
	char name[64];

	rig_open(&r, faults);
	review_init(&rv, r.m);
	for (double t = 0.0; t <= end_s; t += step_s) {
		snprintf(name, sizeof(name), "frames/%06d.jpg", (int)(t / step_s) + 1);
		free(observe(&r, &rv, t, name));
		CHECK(review_judge(&rv, REVIEW_AT_CHECKPOINT, NULL, NULL, res, &err) == 0);
		if (fired(res, "lamp") || fired(res, "lamp_drift")) {
			at = t;
			break;
		}
		review_agreed(&rv);
	}
	*drift = 0.0;
	for (int k = 0; k < 3; k++)
		*drift = fmax(*drift, fabs(rv.now.raw[k] / rv.start.raw[k] - 1.0));
	review_free(&rv);
	rig_close(&r);
	return at;
}

/*
 * The simulator's lamp drifts (sim.light.drift_per_h: -1 % an hour, warmer):
 * over a long night the patches' light moves further from the start than
 * lamp_change, yet slowly, each review close to the last one agreed. The run
 * divides it out; neither lamp rule may call it a fault (the lamp rule judged
 * from the start did, at 0.72 of it in a night's bench on chelsea).
 */
TEST(a_lamp_that_drifts_slowly_all_night_is_no_lamp_fault)
{
	struct review_result res;
	double drift, at = reviewed_night(NULL, 30 * 3600.0, 3600.0, &res, &drift);

	if (at >= 0.0)
		say("slow drift", &res);
	CHECK_MSG(at < 0.0, "the reviewer disagreed at %.0f s with a lamp that only drifts", at);
	CHECK_MSG(drift > 0.25, "the light moved only %.3f from the start in 30 h: the case shows nothing", drift);
	CHECK(finding(&res, "lamp")->judged && finding(&res, "lamp_drift")->judged);
}

/* An auto-exposure creeping +15 % an hour, each review close to the last: lamp_drift's pace catches it. */
TEST(a_creeping_exposure_is_caught_by_lamp_drift)
{
	static const char *const f[] = { "exposure_drift_per_h=0.15", NULL };
	struct review_result res;
	double drift, at = reviewed_night(f, 4 * 3600.0, 600.0, &res, &drift);

	say("creeping exposure", &res);
	CHECK_MSG(at >= 0.0 && at <= 2 * 3600.0, "no disagreement within 2 h (at %.0f s)", at);
	CHECK(fired(&res, "lamp_drift") && !fired(&res, "lamp"));
}

/* ---- each rule fired on evidence made for it ---- */

static void gray(struct img *im, int w, int h, int v)
{
	bl_err err;

	CHECK(img_alloc(im, w, h, &err) == 0);
	memset(im->px, v, (size_t)w * h * 3);
}

/* A geometry that puts the canvas (mm) at 1 px/mm, 100 px in from the top left of a 640 x 480 frame. */
static void plain_geometry(struct vis_geometry *g)
{
	static const double H[9] = { 1, 0, 60, 0, 1, 60, 0, 0, 1 };

	memset(g, 0, sizeof(*g));
	memcpy(g->H, H, sizeof(H));
	g->size_mm[0] = 400;
	g->size_mm[1] = 300;
}

TEST(frame_new_fires_on_a_repeat_and_on_too_little_change)
{
	struct machine *m = example();
	struct review rv;
	struct review_result res;
	struct vis_geometry g;
	struct img a, b;
	struct meas_profile *p;
	bl_err err;

	CHECK(meas_profile_open(NULL, &p, &err) == 0);
	plain_geometry(&g);
	review_init(&rv, m);
	gray(&a, 640, 480, 120);
	gray(&b, 640, 480, 120);
	b.px[7] = 121;
	CHECK(review_observed(&rv, &a, &a, &g, p, "frames/1.jpg", &err) == 0);
	CHECK(review_observed(&rv, &b, &b, &g, p, "frames/2.jpg", &err) == 0);
	CHECK(review_judge(&rv, REVIEW_AT_MIX, NULL, NULL, &res, &err) == 0);
	/* One sample of 921,600 changed: new, but not by what noise alone does. */
	CHECK(fired(&res, "frame_new") && !rv.repeat_of[0]);
	CHECK(review_observed(&rv, &a, &a, &g, p, "frames/3.jpg", &err) == 0);
	CHECK(review_judge(&rv, REVIEW_AT_MIX, NULL, NULL, &res, &err) == 0);
	CHECK(fired(&res, "frame_new"));
	CHECK_STR_CONTAINS(finding(&res, "frame_new")->why, "repeats 1.jpg");
	for (size_t i = 0; i < (size_t)640 * 480 * 3; i += 2)
		b.px[i] = (unsigned char)(120 + (i % 7));
	CHECK(review_observed(&rv, &b, &b, &g, p, "frames/4.jpg", &err) == 0);
	CHECK(review_judge(&rv, REVIEW_AT_MIX, NULL, NULL, &res, &err) == 0);
	CHECK(!fired(&res, "frame_new"));
	img_free(&a);
	img_free(&b);
	review_free(&rv);
	meas_profile_close(p);
}

TEST(lamp_and_reference_fire_when_the_patches_read_otherwise)
{
	struct machine *m = example();
	struct review rv;
	struct review_result res;
	struct vis_geometry g;
	struct img a, b;
	struct meas_profile *p;
	bl_err err;

	CHECK(meas_profile_open(NULL, &p, &err) == 0);
	plain_geometry(&g);
	review_init(&rv, m);
	gray(&a, 640, 480, 200);
	gray(&b, 640, 480, 150);
	CHECK(review_observed(&rv, &a, &a, &g, p, "frames/1.jpg", &err) == 0);
	CHECK(rv.start.ok);
	CHECK(review_observed(&rv, &b, &a, &g, p, "frames/2.jpg", &err) == 0);
	CHECK(review_judge(&rv, REVIEW_AT_CHECKPOINT, NULL, NULL, &res, &err) == 0);
	/* Raw 150 against 200: about 0.53 of the light. The run's own measure (a) did not move. */
	CHECK(fired(&res, "lamp") && !fired(&res, "reference"));
	CHECK(review_observed(&rv, &a, &b, &g, p, "frames/3.jpg", &err) == 0);
	CHECK(review_judge(&rv, REVIEW_AT_CHECKPOINT, NULL, NULL, &res, &err) == 0);
	CHECK(!fired(&res, "lamp") && fired(&res, "reference"));
	img_free(&a);
	img_free(&b);
	review_free(&rv);
	meas_profile_close(p);
}

TEST(markers_fire_when_the_run_measures_the_canvas_elsewhere)
{
	struct rig r;
	struct review rv;
	struct review_result res;
	bl_err err;

	rig_open(&r, NULL);
	review_init(&rv, r.m);
	free(observe(&r, &rv, 0.0, "frames/1.jpg"));
	CHECK(review_judge(&rv, REVIEW_AT_MIX, NULL, NULL, &res, &err) == 0);
	CHECK(finding(&res, "markers")->judged && !fired(&res, "markers"));
	/* The run's canvas.json 6 px off where the markers are. */
	rv.corners_px[4] += 6.0;
	CHECK(review_judge(&rv, REVIEW_AT_MIX, NULL, NULL, &res, &err) == 0);
	CHECK(fired(&res, "markers"));
	CHECK_NEAR(finding(&res, "markers")->figure, 6.0, 0.5);
	review_free(&rv);
	rig_close(&r);
}

/* Paint can look like a marker: a copy of marker 1 in the middle of the canvas does not hide the real four. */
TEST(markers_are_found_though_paint_on_the_canvas_looks_like_one)
{
	struct rig r;
	struct review rv;
	struct review_result res;
	double p[4] = { 425.0, -25.0, 200.0, 150.0 };
	bl_err err;

	rig_open(&r, NULL);
	review_init(&rv, r.m);
	free(observe(&r, &rv, 0.0, "frames/1.jpg"));
	cv_apply_homography(r.g.H, p, p, 2);
	for (int dy = -30; dy < 30; dy++)
		memcpy(rv.raw.px + 3 * ((size_t)((int)p[3] + dy) * rv.raw.w + (int)p[2] - 30),
		       rv.raw.px + 3 * ((size_t)((int)p[1] + dy) * rv.raw.w + (int)p[0] - 30), 3 * 60);
	CHECK(review_judge(&rv, REVIEW_AT_MIX, NULL, NULL, &res, &err) == 0);
	CHECK_MSG(finding(&res, "markers")->judged && !fired(&res, "markers"), "%s", finding(&res, "markers")->why);
	review_free(&rv);
	rig_close(&r);
}

/* A 200 x 100 canvas: white, and a 100 x 100 square on the left the strokes covered with red. */
struct canvas_case {
	float before[200 * 100 * 3], now[200 * 100 * 3], paint[200 * 100 * 3], cover[200 * 100];
};

static void canvas_case(struct canvas_case *k, double landed)
{
	static const float white[3] = { 95, 0, 2 }, red[3] = { 45, 60, 40 };

	for (int i = 0; i < 200 * 100; i++) {
		int left = i % 200 < 100;

		k->cover[i] = left ? 1.0f : 0.0f;
		for (int c = 0; c < 3; c++) {
			k->before[3 * i + c] = white[c];
			k->paint[3 * i + c] = left ? red[c] : 0.0f;
			k->now[3 * i + c] = left ? (float)(white[c] + landed * (red[c] - white[c])) : white[c];
		}
	}
}

static void judge_canvas_settling(struct canvas_case *k, const float *settle, struct review_result *res)
{
	struct review rv;
	struct review_canvas c = { .w = 200, .h = 100, .now = k->now, .cover = k->cover, .paint = k->paint,
				   .settle = settle, .strokes = 12, .paint_ml = 0.3 };
	bl_err err;

	review_init(&rv, example());
	CHECK(review_baseline(&rv, k->before, 200, 100, 0, 3, &err) == 0);
	CHECK(review_judge(&rv, REVIEW_AT_CHECKPOINT, &c, NULL, res, &err) == 0);
	review_free(&rv);
}

static void judge_canvas(struct canvas_case *k, struct review_result *res)
{
	judge_canvas_settling(k, NULL, res);
}

TEST(paint_landed_fires_when_the_strokes_left_their_cells_as_they_were)
{
	struct canvas_case *k = calloc(1, sizeof(*k));
	struct review_result res;

	canvas_case(k, 0.8);
	judge_canvas(k, &res);
	CHECK(finding(&res, "paint_landed")->judged && !fired(&res, "paint_landed"));
	CHECK_NEAR(finding(&res, "paint_landed")->figure, 0.8, 0.01);
	canvas_case(k, 0.05);
	judge_canvas(k, &res);
	CHECK(fired(&res, "paint_landed"));
	free(k);
}

TEST(unpainted_unchanged_fires_when_a_block_no_stroke_touched_changed)
{
	struct canvas_case *k = calloc(1, sizeof(*k));
	struct review_result res;

	canvas_case(k, 0.8);
	judge_canvas(k, &res);
	CHECK(finding(&res, "unpainted_unchanged")->judged && !fired(&res, "unpainted_unchanged"));
	/* A 10 x 10 mm block on the right, 3 mm clear of the footprint, darkened by 10 L*. */
	for (int y = 40; y < 50; y++)
		for (int x = 150; x < 160; x++)
			k->now[3 * (y * 200 + x)] -= 10.0f;
	judge_canvas(k, &res);
	CHECK(fired(&res, "unpainted_unchanged"));
	CHECK_STR_CONTAINS(finding(&res, "unpainted_unchanged")->why, "canvas (150, 40) mm");
	/* The same change where paint laid before the checkpoint agreed on was still drying: not held against it. */
	{
		float *settle = calloc(200 * 100, sizeof(float));

		for (int y = 40; y < 50; y++)
			for (int x = 150; x < 160; x++)
				settle[y * 200 + x] = 1.0f;
		judge_canvas_settling(k, settle, &res);
		CHECK(finding(&res, "unpainted_unchanged")->judged && !fired(&res, "unpainted_unchanged"));
		free(settle);
	}
	free(k);
}

TEST(mix_model_fires_when_the_cell_is_not_what_went_in)
{
	struct machine *m = example();
	struct palette pal;
	struct plan_mixer mixer;
	struct review rv;
	struct review_result res;
	struct review_mix x = { 0 };
	int units[MIX_MAX_PAINTS] = { 0 };
	double amt[MIX_MAX_PAINTS] = { 0 };
	char p[4096];
	bl_err err;

	snprintf(p, sizeof(p), "%s/examples/palette.json", getenv("BRUSHLOOP_SRC"));
	CHECK(palette_load(p, &pal, &err) == 0 && plan_mixer_init(&mixer, &pal, m, &err) == 0);
	review_init(&rv, m);
	units[0] = 20;
	units[1] = 5;
	amt[0] = 20;
	amt[1] = 5;
	x.model = &mixer.model;
	x.units = units;
	mix_predict(&mixer.model, NULL, amt, &x.measured);
	CHECK(review_judge(&rv, REVIEW_AT_MIX, NULL, &x, &res, &err) == 0);
	CHECK(finding(&res, "mix_model")->judged && !fired(&res, "mix_model") && finding(&res, "mix_model")->figure < 0.01);
	/* White alone in the cell, as a dry well's pump gives it. */
	amt[1] = 0;
	mix_predict(&mixer.model, NULL, amt, &x.measured);
	CHECK(review_judge(&rv, REVIEW_AT_MIX, NULL, &x, &res, &err) == 0);
	CHECK(fired(&res, "mix_model"));
	review_free(&rv);
}

TEST(every_rule_has_a_threshold_key_in_the_docs)
{
	char p[4096], *docs = NULL, *cfg = NULL;

	snprintf(p, sizeof(p), "%s/docs/review.md", getenv("BRUSHLOOP_SRC"));
	CHECK(fs_read_file(p, 1 << 20, &docs, NULL, NULL) == 0);
	snprintf(p, sizeof(p), "%s/docs/config.md", getenv("BRUSHLOOP_SRC"));
	CHECK(fs_read_file(p, 1 << 20, &cfg, NULL, NULL) == 0);
	CHECK(review_rule_count() >= 7);
	for (int i = 0; docs && cfg && i < review_rule_count(); i++) {
		const struct review_rule_info *ri = review_rule_info(i);
		char row[128];

		snprintf(row, sizeof(row), "| `%s` |", ri->name);
		CHECK_MSG(strstr(docs, row) != NULL, "docs/review.md has no row for %s", ri->name);
		snprintf(row, sizeof(row), "`%s`", ri->key);
		CHECK_MSG(strstr(docs, row) != NULL, "docs/review.md does not name %s", ri->key);
		snprintf(row, sizeof(row), "| `%s` |", ri->key);
		CHECK_MSG(strstr(cfg, row) != NULL, "docs/config.md has no row for %s", ri->key);
	}
	free(docs);
	free(cfg);
}

TEST(what_the_reviewer_keeps_reads_back_and_a_wrong_canvas_is_refused)
{
	struct machine *m = example();
	struct review rv, back;
	float lab[30 * 20 * 3];
	char p[4096];
	bl_err err;

	for (int i = 0; i < 30 * 20 * 3; i++)
		lab[i] = (float)(i % 97);
	review_init(&rv, m);
	rv.start.ok = 1;
	rv.start.raw[0] = 0.5;
	rv.start.lab = (color_lab){ 90, 1, 2 };
	snprintf(rv.start_frame, sizeof(rv.start_frame), "000001-blank.jpg");
	rv.n_digests = 2;
	rv.digest[0] = 0x0123456789abcdefULL;
	rv.digest[1] = 42;
	snprintf(rv.digest_frame[1], sizeof(rv.digest_frame[1]), "000002-s1.jpg");
	CHECK(review_baseline(&rv, lab, 30, 20, 1, 7, &err) == 0);
	CHECK_MSG(review_save(&rv, test_tmpdir(), &err) == 0, "%s", err.msg);
	review_init(&back, m);
	CHECK_MSG(review_load(&back, test_tmpdir(), &err) == 0, "%s", err.msg);
	CHECK(back.start.ok && back.start.raw[0] == 0.5 && back.start.lab.L == 90);
	CHECK(back.n_digests == 2 && back.digest[0] == 0x0123456789abcdefULL && back.digest[1] == 42);
	CHECK(!strcmp(back.digest_frame[1], "000002-s1.jpg"));
	CHECK(back.canvas_w == 30 && back.canvas_h == 20 && back.canvas_round == 1 && back.canvas_sub == 7);
	CHECK(back.canvas && memcmp(back.canvas, lab, sizeof(lab)) == 0);
	review_free(&back);
	/* A canvas.lab of another size than references.json names is refused, naming it. */
	snprintf(p, sizeof(p), "%s/review/canvas.lab", test_tmpdir());
	CHECK(fs_write_atomic(p, "LAB32 2 2\n", 10, &err) == 0);
	review_init(&back, m);
	CHECK(review_load(&back, test_tmpdir(), &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "not the 30 x 20 canvas references.json names");
	review_free(&back);
	review_free(&rv);
}

TEST_MAIN(T(a_quiet_hour_without_a_fault_is_agreed_with), T(a_frozen_camera_is_caught_by_frame_new),
	  T(a_knocked_camera_is_caught_by_markers), T(a_lamp_that_dims_is_caught_by_lamp),
	  T(a_smeared_lens_is_caught_by_unpainted_unchanged), T(a_drifting_exposure_is_caught_by_lamp),
	  T(a_lamp_that_drifts_slowly_all_night_is_no_lamp_fault), T(a_creeping_exposure_is_caught_by_lamp_drift),
	  T(frame_new_fires_on_a_repeat_and_on_too_little_change),
	  T(lamp_and_reference_fire_when_the_patches_read_otherwise),
	  T(markers_fire_when_the_run_measures_the_canvas_elsewhere),
	  T(markers_are_found_though_paint_on_the_canvas_looks_like_one),
	  T(paint_landed_fires_when_the_strokes_left_their_cells_as_they_were),
	  T(unpainted_unchanged_fires_when_a_block_no_stroke_touched_changed),
	  T(mix_model_fires_when_the_cell_is_not_what_went_in), T(every_rule_has_a_threshold_key_in_the_docs),
	  T(what_the_reviewer_keeps_reads_back_and_a_wrong_canvas_is_refused))

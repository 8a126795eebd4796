/* test_sim.c: the simulated world: paint on the canvas, determinism, the world file, every fault, refused actions, and the camera's truth. */
#include <math.h>
#include <sys/stat.h>
#include <turbojpeg.h>

#include "arm/action.h"
#include "base/fs.h"
#include "base/json.h"
#include "color/color.h"
#include "config/machine.h"
#include "rig/rig.h"
#include "sim/sim.h"
#include "sim/sim_shade.h"
#include "vision/image.h"
#include "test.h"

static const char *src_path(const char *rel)
{
	static char p[4][4096];
	static int k;
	const char *src = getenv("BRUSHLOOP_SRC");

	k = (k + 1) % 4;
	snprintf(p[k], sizeof(p[k]), "%s/%s", src ? src : ".", rel);
	return p[k];
}

static struct machine *example(void)
{
	struct machine *m = malloc(sizeof(*m));
	bl_err err;

	if (!m || machine_load(src_path("examples/machine-sim.json"), m, &err)) {
		fprintf(stderr, "cannot load the example machine: %s\n", m ? err.msg : "oom");
		exit(1);
	}
	return m;
}

struct world {
	struct machine *m;
	clk clock;
	struct sim *s;
};

/* Frames at a sixteenth of the pixels, for tests that count many of them; odd: 322x181. */
static int small_frames, odd_frames;

static void open_world(struct world *w, uint64_t seed, const char *const *faults)
{
	struct sim_options o = { seed, 1, NULL };
	bl_err err;

	w->m = example();
	if (small_frames) {
		w->m->camera.width = 320;
		w->m->camera.height = 180;
	}
	if (odd_frames) {
		w->m->camera.width = 322;
		w->m->camera.height = 181;
	}
	for (; faults && *faults; faults++)
		if (machine_sim_fault_set(w->m, *faults, &err)) {
			fprintf(stderr, "%s\n", err.msg);
			exit(1);
		}
	if (sim_open(w->m, &o, &w->clock, &w->s, &err)) {
		fprintf(stderr, "sim_open: %s\n", err.msg);
		exit(1);
	}
}

static void close_world(struct world *w)
{
	sim_close(w->s);
	free(w->m);
}

static bl_err last_err;

/* Executes one action written as JSON; returns the status (last_err has the message). */
static int act(struct sim *s, const char *json)
{
	struct arm_action a;
	cJSON *doc = NULL;
	int rc;

	memset(&last_err, 0, sizeof(last_err));
	rc = json_parse_text(json, "test", &doc, &last_err);
	if (rc == 0)
		rc = arm_action_parse(doc, "test", 0, &a, &last_err);
	cJSON_Delete(doc);
	if (rc)
		return rc;
	rc = sim_exec(s, &a, NULL, &last_err);
	arm_action_release(&a);
	return rc;
}

#define MUST(s, json)                                                                   \
	do {                                                                            \
		int rc_ = act((s), (json));                                             \
		CHECK_MSG(rc_ == 0, "%s -> %d: %s", (json), rc_, last_err.msg);        \
	} while (0)

#define HOME "{\"type\": \"home\", \"speed_mm_s\": 200}"
#define WASH "{\"type\": \"wash\", \"speed_mm_s\": 100, \"ms\": 3000}"
#define DIP(well) \
	"{\"type\": \"dip\", \"speed_mm_s\": 150, \"brush\": \"round-6\", \"well\": \"" well "\", \"depth_mm\": 3}"
/* A horizontal stroke at y from x0 to x1 (machine mm), pressed 0.5 mm. */
static char *stroke_json(double x0, double x1, double y)
{
	static char buf[256];

	snprintf(buf, sizeof(buf),
		 "{\"type\": \"stroke\", \"speed_mm_s\": 80, \"brush\": \"round-6\", "
		 "\"points_mm\": [[%g, %g, -0.5], [%g, %g, -0.5]]}", x0, y, x1, y);
	return buf;
}

static char *vstroke_json(double x, double y0, double y1)
{
	static char buf[256];

	snprintf(buf, sizeof(buf),
		 "{\"type\": \"stroke\", \"speed_mm_s\": 80, \"brush\": \"round-6\", "
		 "\"points_mm\": [[%g, %g, -0.5], [%g, %g, -0.5]]}", x, y0, x, y1);
	return buf;
}

static void lab_at(struct sim *s, double x, double y, double lab[3])
{
	bl_err err;

	if (sim_canvas_lab(s, x, y, lab, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
}

static double de(const double a[3], const double b[3])
{
	color_lab x = { a[0], a[1], a[2] }, y = { b[0], b[1], b[2] };

	return color_de00(&x, &y);
}

static double hue(const double lab[3])
{
	double h = atan2(lab[2], lab[1]) * 180.0 / M_PI;

	return h < 0.0 ? h + 360.0 : h;
}

static unsigned char *state(struct sim *s, size_t *n)
{
	unsigned char *b;
	bl_err err;

	if (sim_state_bytes(s, &b, n, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
	return b;
}

/* Decodes a JPEG strictly (a warning is an error); 0 when it decodes. */
static int decode(const unsigned char *jpg, size_t len, unsigned char **rgb, int *w, int *h)
{
	tjhandle t = tjInitDecompress();
	int ss, cs, rc = -1;

	*rgb = NULL;
	if (tjDecompressHeader3(t, jpg, (unsigned long)len, w, h, &ss, &cs) == 0) {
		*rgb = malloc((size_t)*w * *h * 3);
		rc = tjDecompress2(t, jpg, (unsigned long)len, *rgb, *w, 0, *h, TJPF_RGB,
				   TJFLAG_STOPONWARNING);
	}
	tjDestroy(t);
	if (rc) {
		free(*rgb);
		*rgb = NULL;
	}
	return rc;
}

static void roi_mean(const unsigned char *rgb, int w, const cJSON *roi, double out[3])
{
	int x = (int)cJSON_GetArrayItem(roi, 0)->valuedouble, y = (int)cJSON_GetArrayItem(roi, 1)->valuedouble;
	int rw = (int)cJSON_GetArrayItem(roi, 2)->valuedouble, rh = (int)cJSON_GetArrayItem(roi, 3)->valuedouble;

	out[0] = out[1] = out[2] = 0.0;
	for (int v = y; v < y + rh; v++)
		for (int u = x; u < x + rw; u++)
			for (int k = 0; k < 3; k++)
				out[k] += rgb[((size_t)v * w + u) * 3 + k];
	for (int k = 0; k < 3; k++)
		out[k] /= (double)rw * rh;
}

/* ---- paint on the canvas ---- */

TEST(strokes_put_paint_where_the_brush_went)
{
	struct world w;
	double ground[3], on[3], off[3], before = 0.0;
	struct sim_stats st;

	open_world(&w, 3, NULL);
	lab_at(w.s, 340, 200, ground);
	MUST(w.s, HOME);
	before = sim_station_ml(w.s, "w11");
	MUST(w.s, DIP("w11"));
	CHECK(sim_station_ml(w.s, "w11") < before - 0.05);
	MUST(w.s, stroke_json(300, 400, 200));
	lab_at(w.s, 340, 200, on);
	lab_at(w.s, 340, 215, off);
	CHECK_MSG(on[0] < ground[0] - 30.0, "stroke L %.1f vs canvas %.1f", on[0], ground[0]);
	CHECK(hue(on) > 200.0 && hue(on) < 300.0);
	CHECK(de(off, ground) < 0.01);
	sim_get_stats(w.s, &st);
	CHECK(st.painted_cells > 300 && st.painted_cells < 1500);
	CHECK(st.canvas_paint_ml > 0.02 && st.canvas_paint_ml < 0.08);
	CHECK(st.canvas_wet_ml == st.canvas_paint_ml);
	close_world(&w);
}

TEST(the_load_runs_out_along_the_stroke)
{
	struct world w;
	double start[3], mid[3], late[3], ground[3];

	open_world(&w, 3, NULL);
	MUST(w.s, HOME);
	MUST(w.s, DIP("w13"));
	/* round-6 lasts 160 mm on a load: a 360 mm stroke runs dry. */
	MUST(w.s, "{\"type\": \"stroke\", \"speed_mm_s\": 80, \"brush\": \"round-6\", \"points_mm\": "
		  "[[280, 150, -0.5], [640, 150, -0.5]]}");
	lab_at(w.s, 285, 150, start);
	lab_at(w.s, 400, 150, mid);
	lab_at(w.s, 600, 150, late);
	lab_at(w.s, 285, 170, ground);
	CHECK_MSG(start[0] < mid[0] && mid[0] < late[0], "L along the stroke: %.1f %.1f %.1f",
		  start[0], mid[0], late[0]);
	CHECK_MSG(start[0] < 40.0 && late[0] > ground[0] - 10.0, "L %.1f at the start, %.1f late",
		  start[0], late[0]);
	close_world(&w);
}

TEST(wet_paint_mixes_and_dry_paint_layers)
{
	struct world w;
	double mixed[3], layered[3], yellow[3], blue_wet[3], blue_dry[3];

	/* Wet in wet: yellow dragged through wet phthalo turns green. */
	open_world(&w, 3, NULL);
	MUST(w.s, HOME);
	MUST(w.s, DIP("w11"));
	MUST(w.s, vstroke_json(350, 120, 280));
	lab_at(w.s, 350, 200, blue_wet);
	MUST(w.s, WASH);
	MUST(w.s, DIP("w2"));
	MUST(w.s, stroke_json(320, 420, 200));
	lab_at(w.s, 350, 200, mixed);
	lab_at(w.s, 400, 200, yellow);
	CHECK_MSG(hue(mixed) > 100.0 && hue(mixed) < 200.0, "crossing hue %.1f (Lab %.1f %.1f %.1f)",
		  hue(mixed), mixed[0], mixed[1], mixed[2]);
	close_world(&w);

	/* The same after the blue dried: yellow lies over it, and nothing is mixed in. */
	open_world(&w, 3, NULL);
	MUST(w.s, HOME);
	MUST(w.s, DIP("w11"));
	MUST(w.s, vstroke_json(350, 120, 280));
	clk_advance(&w.clock, (int64_t)(w.m->sim.drying_s * 1e9) + 1000000000LL);
	lab_at(w.s, 350, 200, blue_dry);
	MUST(w.s, WASH);
	MUST(w.s, DIP("w2"));
	MUST(w.s, stroke_json(320, 420, 200));
	lab_at(w.s, 350, 200, layered);
	CHECK(de(layered, mixed) > 3.0);
	/* Wet acrylic is milky: it dries darker. */
	CHECK_MSG(blue_dry[0] < blue_wet[0] - 0.5, "wet L %.2f, dry L %.2f", blue_wet[0], blue_dry[0]);
	close_world(&w);
}

TEST(an_unwashed_brush_carries_colour_over)
{
	struct world a, b;
	double clean[3], dirty[3];

	for (int k = 0; k < 2; k++) {
		struct world *w = k ? &b : &a;

		open_world(w, 3, NULL);
		MUST(w->s, HOME);
		MUST(w->s, DIP("w11"));
		MUST(w->s, stroke_json(300, 640, 120));
		if (k == 0)
			MUST(w->s, WASH);
		MUST(w->s, DIP("w2"));
		MUST(w->s, stroke_json(300, 400, 300));
	}
	lab_at(a.s, 330, 300, clean);
	lab_at(b.s, 330, 300, dirty);
	CHECK_MSG(de(clean, dirty) > 3.0, "carry-over only %.2f", de(clean, dirty));
	CHECK(hue(dirty) > hue(clean)); /* pulled from yellow towards green */
	close_world(&a);
	close_world(&b);
}

TEST(a_clean_brush_smears_wet_paint)
{
	struct world w;
	double ground[3], beyond[3];

	open_world(&w, 3, NULL);
	lab_at(w.s, 450, 200, ground);
	MUST(w.s, HOME);
	MUST(w.s, DIP("w13"));
	MUST(w.s, vstroke_json(400, 150, 250));
	MUST(w.s, WASH);
	MUST(w.s, "{\"type\": \"wipe\", \"speed_mm_s\": 100}");
	/* A washed brush pressed through the wet black and on: it drags some along. */
	MUST(w.s, stroke_json(390, 480, 200));
	lab_at(w.s, 407, 200, beyond);
	CHECK_MSG(beyond[0] < ground[0] - 1.0, "smear L %.2f vs canvas %.2f", beyond[0], ground[0]);
	close_world(&w);
}

TEST(dispensed_and_stirred_cells_become_swatches)
{
	struct world w;
	cJSON *truth;
	bl_err err;
	double lab[3], white_ml = 0.0;
	int listed = 0;

	open_world(&w, 3, NULL);
	MUST(w.s, HOME);
	white_ml = sim_station_ml(w.s, "w1");
	MUST(w.s, "{\"type\": \"dispense\", \"speed_mm_s\": 150, \"well\": \"w1\", \"cell\": \"m3\", "
		  "\"units\": 8}");
	MUST(w.s, "{\"type\": \"dispense\", \"speed_mm_s\": 150, \"well\": \"w6\", \"cell\": \"m3\", "
		  "\"units\": 2}");
	/* 10 units of 0.1 ml, each off by a few percent, less what the spatula keeps. */
	CHECK_MSG(fabs(sim_station_ml(w.s, "m3") - 0.97) < 0.08, "m3 holds %.3f ml",
		  sim_station_ml(w.s, "m3"));
	CHECK(fabs(white_ml - sim_station_ml(w.s, "w1") - 0.8) < 0.1);
	/* Unstirred, the truth does not vouch for it. */
	CHECK(sim_truth(w.s, SIM_SCENE_SWATCHES, &truth, &err) == 0);
	for (cJSON *p = cJSON_GetObjectItem(truth, "patches")->child; p; p = p->next)
		listed += strcmp(cJSON_GetObjectItem(p, "name")->valuestring, "m3") == 0;
	CHECK(listed == 0);
	cJSON_Delete(truth);
	MUST(w.s, "{\"type\": \"stir\", \"speed_mm_s\": 40, \"cell\": \"m3\", \"depth_mm\": 3, "
		  "\"ms\": 6000}");
	MUST(w.s, "{\"type\": \"park\", \"speed_mm_s\": 200}");
	CHECK(sim_truth(w.s, SIM_SCENE_SWATCHES, &truth, &err) == 0);
	for (cJSON *p = cJSON_GetObjectItem(truth, "patches")->child; p; p = p->next)
		if (strcmp(cJSON_GetObjectItem(p, "name")->valuestring, "m3") == 0) {
			cJSON *l = cJSON_GetObjectItem(p, "lab");

			listed++;
			CHECK(sim_station_lab(w.s, "m3", lab, &err) == 0);
			/* A pink: red tinted with white. */
			CHECK(lab[1] > 20.0 && lab[0] > 45.0);
			CHECK_NEAR(cJSON_GetArrayItem(l, 0)->valuedouble, lab[0], 1.0);
		}
	CHECK(listed == 1);
	cJSON_Delete(truth);
	close_world(&w);
}

/* The planner paints mixed colours: a brush loads from a mixing cell as from a well. */
TEST(a_brush_loads_a_mixed_colour_from_a_cell)
{
	struct world w;
	double cell[3], painted[3], bare[3];
	bl_err err;

	open_world(&w, 5, NULL);
	MUST(w.s, HOME);
	lab_at(w.s, 350, 200, bare);
	MUST(w.s, "{\"type\": \"dispense\", \"speed_mm_s\": 150, \"well\": \"w1\", \"cell\": \"m2\", "
		  "\"units\": 6}");
	MUST(w.s, "{\"type\": \"dispense\", \"speed_mm_s\": 150, \"well\": \"w10\", \"cell\": \"m2\", "
		  "\"units\": 3}");
	MUST(w.s, "{\"type\": \"stir\", \"speed_mm_s\": 40, \"cell\": \"m2\", \"depth_mm\": 3, "
		  "\"ms\": 6000}");
	CHECK(sim_station_lab(w.s, "m2", cell, &err) == 0);
	{
		double before = sim_station_ml(w.s, "m2");

		MUST(w.s, "{\"type\": \"dip\", \"speed_mm_s\": 150, \"brush\": \"round-6\", "
			  "\"cell\": \"m2\", \"depth_mm\": 2.5}");
		/* The load came out of the cell. */
		CHECK_MSG(sim_station_ml(w.s, "m2") < before - 0.01, "m2 %.3f -> %.3f ml", before,
			  sim_station_ml(w.s, "m2"));
	}
	MUST(w.s, stroke_json(330, 380, 200));
	lab_at(w.s, 350, 200, painted);
	/* The stroke carries the cell's colour, not bare canvas and not a well's. */
	CHECK_MSG(de(painted, cell) < 6.0, "stroke %.1f,%.1f,%.1f vs cell %.1f,%.1f,%.1f", painted[0],
		  painted[1], painted[2], cell[0], cell[1], cell[2]);
	CHECK(de(painted, bare) > 15.0);
	/* An unknown cell is refused and nothing moves. */
	CHECK(act(w.s, "{\"type\": \"dip\", \"speed_mm_s\": 150, \"brush\": \"round-6\", "
		       "\"cell\": \"m99\", \"depth_mm\": 2}") == BL_EINVAL);
	CHECK_STR_CONTAINS(last_err.msg, "m99");
	close_world(&w);
}

/* ---- determinism and the world file ---- */

static void script(struct sim *s)
{
	MUST(s, HOME);
	MUST(s, DIP("w11"));
	MUST(s, stroke_json(300, 420, 200));
	MUST(s, WASH);
	MUST(s, "{\"type\": \"dispense\", \"speed_mm_s\": 150, \"well\": \"w2\", \"cell\": \"m1\", "
		"\"units\": 3}");
	MUST(s, DIP("w2"));
	MUST(s, vstroke_json(350, 150, 260));
}

TEST(same_machine_seed_and_actions_give_the_same_bytes)
{
	struct world a, b, c;
	struct cam_frame fa, fb, fc;
	unsigned char *sa, *sb, *sc;
	size_t na, nb, nc;
	bl_err err;

	small_frames = 1;
	open_world(&a, 42, NULL);
	open_world(&b, 42, NULL);
	open_world(&c, 43, NULL);
	small_frames = 0;
	script(a.s);
	script(b.s);
	script(c.s);
	CHECK(sim_render(a.s, SIM_SCENE_CANVAS, &fa, &err) == 0);
	CHECK(sim_render(b.s, SIM_SCENE_CANVAS, &fb, &err) == 0);
	CHECK(sim_render(c.s, SIM_SCENE_CANVAS, &fc, &err) == 0);
	CHECK(fa.len == fb.len && memcmp(fa.data, fb.data, fa.len) == 0);
	CHECK(fa.len != fc.len || memcmp(fa.data, fc.data, fa.len) != 0);
	cam_frame_free(&fa);
	cam_frame_free(&fb);
	cam_frame_free(&fc);
	/* A second frame has fresh noise, and it too repeats. */
	CHECK(sim_render(a.s, SIM_SCENE_CHART, &fa, &err) == 0);
	CHECK(sim_render(b.s, SIM_SCENE_CHART, &fb, &err) == 0);
	CHECK(fa.len == fb.len && memcmp(fa.data, fb.data, fa.len) == 0);
	cam_frame_free(&fa);
	cam_frame_free(&fb);
	sa = state(a.s, &na);
	sb = state(b.s, &nb);
	sc = state(c.s, &nc);
	CHECK(na == nb && memcmp(sa, sb, na) == 0);
	CHECK(na != nc || memcmp(sa, sc, na) != 0);
	free(sa);
	free(sb);
	free(sc);
	close_world(&a);
	close_world(&b);
	close_world(&c);
}

/*
 * The camera shades eight pixels at a time where the CPU has AVX2, and the
 * frames are the bytes the one-pixel loop makes: the same seed gives the
 * same run on any x86-64. The frame is 322x181, so each half ends in pixels
 * the one-pixel loop shades after the wide ones.
 */
/* Whether this CPU has every feature of a space-separated list. */
static int cpu_has(const char *features)
{
#if defined(__x86_64__) || defined(__i386__)
	return strcmp(features, "avx2") == 0 ? __builtin_cpu_supports("avx2")
	       : __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
#else
	(void)features;
	return 0;
#endif
}

TEST(frames_are_the_same_bytes_shaded_one_or_eight_pixels_at_a_time)
{
	static const enum sim_scene scenes[] = { SIM_SCENE_CANVAS, SIM_SCENE_CHART, SIM_SCENE_SWATCHES };
	/* Each wide path this CPU has, against one pixel at a time. */
	static const struct {
		int level;
		const char *name, *cpu;
	} paths[] = {
		{ SIM_SHADE_AVX2, "eight pixels (AVX2)", "avx2" },
		{ SIM_SHADE_AVX512, "sixteen pixels (AVX-512)", "avx512f avx512dq" },
	};
	struct world a, b;
	bl_err err = { 0 };
	int tried = 0;

	for (size_t p = 0; p < sizeof(paths) / sizeof(paths[0]); p++) {
		if (!cpu_has(paths[p].cpu))
			continue;
		tried++;
		odd_frames = 1;
		open_world(&a, 42, NULL);
		open_world(&b, 42, NULL);
		odd_frames = 0;
		script(a.s);
		script(b.s);
		for (size_t i = 0; i < sizeof(scenes) / sizeof(scenes[0]); i++) {
			struct cam_frame fa = { 0 }, fb = { 0 };

			sim_shade_wide_on = paths[p].level;
			CHECK(sim_render(a.s, scenes[i], &fa, &err) == 0);
			sim_shade_wide_on = SIM_SHADE_ONE;
			CHECK(sim_render(b.s, scenes[i], &fb, &err) == 0);
			sim_shade_wide_on = SIM_SHADE_AVX512;
			CHECK(fa.width == 322 && fb.width == 322);
			CHECK_MSG(fa.len == fb.len && memcmp(fa.data, fb.data, fa.len) == 0,
				  "scene %s, %s: the frames differ", sim_scene_names[scenes[i]],
				  paths[p].name);
			cam_frame_free(&fa);
			cam_frame_free(&fb);
		}
		close_world(&a);
		close_world(&b);
	}
	if (!tried)
		test_skip("this CPU has no AVX2: there is no wide path to compare");
}

TEST(a_saved_world_loads_as_it_was)
{
	struct world a;
	struct machine *m = example();
	struct sim *b;
	clk cb;
	struct sim_options o = { 42, 1, NULL };
	char path[4200];
	unsigned char *sa, *sb;
	size_t na, nb;
	double la[3], lb[3];
	bl_err err;

	open_world(&a, 42, NULL);
	script(a.s);
	snprintf(path, sizeof(path), "%s/world.bin", test_tmpdir());
	CHECK(sim_save(a.s, path, &err) == 0);
	o.world_file = path;
	CHECK_MSG(sim_open(m, &o, &cb, &b, &err) == 0, "%s", err.msg);
	CHECK(clk_now_ns(&cb) == clk_now_ns(&a.clock));
	lab_at(a.s, 350, 200, la);
	lab_at(b, 350, 200, lb);
	CHECK(de(la, lb) == 0.0);
	/* After power-up the arm must be homed again; then both worlds are the same world. */
	CHECK(act(b, stroke_json(300, 320, 250)) == BL_ESAFETY);
	MUST(a.s, HOME);
	MUST(b, HOME);
	MUST(a.s, stroke_json(300, 420, 250));
	MUST(b, stroke_json(300, 420, 250));
	sa = state(a.s, &na);
	sb = state(b, &nb);
	CHECK(na == nb && memcmp(sa, sb, na) == 0);
	free(sa);
	free(sb);
	sim_close(b);

	/* A world keeps its seed, and refuses a machine it was not made for. */
	o.seed = 7;
	CHECK(sim_open(m, &o, &cb, &b, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "seed 42");
	o.seed = 42;
	m->sim.batch_variation = 0.05;
	CHECK(sim_open(m, &o, &cb, &b, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "another machine");
	close_world(&a);
	free(m);
}

/* Copies a file, cutting `cut` bytes off its end, or appending `more` (n_more bytes). */
static void copy_cut(const char *from, const char *to, size_t cut, const char *more, size_t n_more)
{
	char *text = NULL, *all;
	size_t n = 0;
	bl_err err;

	CHECK(fs_read_file(from, 1u << 30, &text, &n, &err) == 0);
	all = malloc(n + n_more + 1);
	if (!text || !all) {
		free(text);
		free(all);
		return;
	}
	memcpy(all, text, n);
	if (n_more)
		memcpy(all + n, more, n_more);
	CHECK(fs_write_atomic(to, all, cut < n ? n - cut + n_more : n_more, &err) == 0);
	free(text);
	free(all);
}

/*
 * Saved after every action, the world is a snapshot and a log of what each
 * action changed: loaded again, it is the same world. A torn last record (a
 * power loss while it was written) is passed over: the world is as it was
 * after the action before; garbage after the last record changes nothing.
 */
TEST(the_world_log_replays_to_the_last_whole_record)
{
	struct machine *m = example();
	struct sim_options o = { 42, 1, NULL };
	struct sim *a, *b;
	clk ca, cb;
	char path[4200], log[4200], torn[4200], tlog[4200];
	double bare[3], first[3], last[3], got[3];
	int64_t t_before_last;
	struct stat sb;
	bl_err err;

	snprintf(path, sizeof(path), "%s/w.sim", test_tmpdir());
	snprintf(log, sizeof(log), "%s.log", path);
	o.world_file = path;
	CHECK_MSG(sim_open(m, &o, &ca, &a, &err) == 0, "%s", err.msg);
	lab_at(a, 350, 200, bare);
	MUST(a, HOME);
	MUST(a, DIP("w11"));
	MUST(a, stroke_json(300, 420, 200));
	MUST(a, WASH);
	MUST(a, DIP("w2"));
	t_before_last = clk_now_ns(&ca);
	MUST(a, vstroke_json(500, 150, 260));
	lab_at(a, 350, 200, first);
	lab_at(a, 500, 200, last);
	CHECK(de(bare, first) > 5 && de(bare, last) > 5);
	/* The actions after the first are records in the log, not whole snapshots. */
	CHECK(stat(log, &sb) == 0 && sb.st_size > 0);

	/* Whole: the same world, the same clock. */
	CHECK_MSG(sim_open(m, &o, &cb, &b, &err) == 0, "%s", err.msg);
	CHECK(clk_now_ns(&cb) == clk_now_ns(&ca));
	lab_at(b, 350, 200, got);
	CHECK(de(got, first) == 0.0);
	lab_at(b, 500, 200, got);
	CHECK(de(got, last) == 0.0);
	sim_close(b);

	/* Torn: the last record cut short; the second stroke never happened. */
	snprintf(torn, sizeof(torn), "%s/torn.sim", test_tmpdir());
	snprintf(tlog, sizeof(tlog), "%s.log", torn);
	copy_cut(path, torn, 0, NULL, 0);
	copy_cut(log, tlog, 9, NULL, 0);
	o.world_file = torn;
	CHECK_MSG(sim_open(m, &o, &cb, &b, &err) == 0, "%s", err.msg);
	CHECK(clk_now_ns(&cb) == t_before_last);
	lab_at(b, 350, 200, got);
	CHECK(de(got, first) == 0.0);
	lab_at(b, 500, 200, got);
	CHECK_MSG(de(got, bare) == 0.0, "the torn stroke shows %.2f from the bare canvas", de(got, bare));
	sim_close(b);

	/* Garbage after the last record: passed over. */
	copy_cut(log, tlog, 0, "BLWL garbage after the log", 26);
	CHECK_MSG(sim_open(m, &o, &cb, &b, &err) == 0, "%s", err.msg);
	CHECK(clk_now_ns(&cb) == clk_now_ns(&ca));
	lab_at(b, 500, 200, got);
	CHECK(de(got, last) == 0.0);
	/* Its first save writes a whole snapshot and starts the log again. */
	MUST(b, HOME);
	CHECK(stat(tlog, &sb) == 0 && sb.st_size == 0);
	sim_close(b);
	sim_close(a);
	free(m);
}

TEST(a_damaged_world_file_is_refused)
{
	struct world a;
	struct machine *m = example();
	struct sim *b;
	clk cb;
	struct sim_options o = { 42, 1, NULL };
	char path[4200];
	unsigned char *buf;
	size_t n;
	bl_err err;

	open_world(&a, 42, NULL);
	script(a.s);
	buf = state(a.s, &n);
	buf[n / 2] ^= 0x40;
	snprintf(path, sizeof(path), "%s/bad.bin", test_tmpdir());
	CHECK(fs_write_atomic(path, buf, n, &err) == 0);
	o.world_file = path;
	CHECK(sim_open(m, &o, &cb, &b, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "damaged");
	CHECK(fs_write_atomic(path, "hello", 5, &err) == 0);
	CHECK(sim_open(m, &o, &cb, &b, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "not a brushloop world file");
	free(buf);
	close_world(&a);
	free(m);
}

/* Writes an actions file of the example's actions [from, to), with a home first when asked. */
static const char *slice(const char *name, int from, int to, int home_at)
{
	char *text;
	size_t len;
	cJSON *doc, *arr, *out, *oarr;
	bl_err err;
	char *printed;
	const char *path;

	if (fs_read_file(src_path("examples/actions/every-kind.json"), 1 << 20, &text, &len, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
	doc = cJSON_Parse(text);
	free(text);
	arr = cJSON_GetObjectItem(doc, "actions");
	out = cJSON_CreateObject();
	cJSON_AddStringToObject(out, "kind", "actions");
	cJSON_AddNumberToObject(out, "version", 1);
	oarr = cJSON_AddArrayToObject(out, "actions");
	for (int i = from; i < to; i++) {
		if (i == home_at)
			cJSON_AddItemToArray(oarr, cJSON_Parse(HOME));
		cJSON_AddItemToArray(oarr, cJSON_Duplicate(cJSON_GetArrayItem(arr, i), 1));
	}
	printed = cJSON_Print(out);
	path = test_write_file(name, printed);
	cJSON_free(printed);
	cJSON_Delete(doc);
	cJSON_Delete(out);
	return path;
}

static unsigned char *file_bytes(const char *path, size_t *n)
{
	char *b = NULL;
	bl_err err;

	if (fs_read_file(path, 1u << 30, &b, n, &err))
		return NULL;
	return (unsigned char *)b;
}

TEST(a_run_resumes_after_a_power_loss_on_the_same_canvas)
{
	char w1[4200], w2[4200], all[4200], rest[4200], straight[4200];
	unsigned char *b1, *b2;
	size_t n1, n2;
	char *out, *err;
	int rc;

	snprintf(w1, sizeof(w1), "%s/w1.bin", test_tmpdir());
	snprintf(w2, sizeof(w2), "%s/w2.bin", test_tmpdir());
	snprintf(all, sizeof(all), "%s", slice("all.json", 0, 16, -1));
	snprintf(rest, sizeof(rest), "%s", slice("rest.json", 6, 16, 6));
	snprintf(straight, sizeof(straight), "%s", slice("straight.json", 0, 16, 6));

	/* The mains fail after the world's sixth action: the process ends at once. */
	rc = test_brushloop((const char *const[]){ "sim", "exec", all, "--world", w1, "--fault",
						   "power_loss_after=6", NULL }, &out, &err);
	CHECK_MSG(rc == SIM_POWER_LOSS_EXIT, "exit %d: %s", rc, err);
	CHECK_STR_CONTAINS(err, "power lost after action 6");
	CHECK(out && !strstr(out, "executed"));
	free(out);
	free(err);
	/* Restarted: the arm is not homed, the canvas is as it was. */
	rc = test_brushloop((const char *const[]){ "sim", "exec", slice("r.json", 6, 7, -1),
						   "--world", w1, NULL }, &out, &err);
	CHECK(rc == 5);
	CHECK_STR_CONTAINS(err, "not homed");
	free(out);
	free(err);
	rc = test_brushloop((const char *const[]){ "sim", "exec", rest, "--world", w1, NULL }, &out,
			    &err);
	CHECK_MSG(rc == 0, "resume: %s", err);
	free(out);
	free(err);
	/* The same actions with the same home, never interrupted. */
	rc = test_brushloop((const char *const[]){ "sim", "exec", straight, "--world", w2, NULL },
			    &out, &err);
	CHECK_MSG(rc == 0, "straight: %s", err);
	free(out);
	free(err);
	b1 = file_bytes(w1, &n1);
	b2 = file_bytes(w2, &n2);
	CHECK(b1 && b2 && n1 == n2 && memcmp(b1, b2, n1) == 0);
	free(b1);
	free(b2);
}

/* ---- faults ---- */

TEST(fault_dropped_frames)
{
	static const char *const all[] = { "drop_frames=1", NULL };
	static const char *const some[] = { "drop_frames=0.3", NULL };
	struct world w;
	struct camera *cam;
	struct cam_frame f;
	bl_err err;
	int64_t t0;
	int dropped = 0;

	small_frames = 1;
	open_world(&w, 5, all);
	cam = sim_camera(w.s);
	t0 = clk_now_ns(&w.clock);
	CHECK(cam_capture(cam, &f, &err) == BL_ETIMEDOUT);
	CHECK_STR_CONTAINS(err.msg, "dropped");
	/* A dropped frame costs the capture timeout. */
	CHECK(clk_now_ns(&w.clock) - t0 == (int64_t)w.m->camera.timeout_ms * 1000000);
	cam_close(cam);
	close_world(&w);

	open_world(&w, 5, some);
	cam = sim_camera(w.s);
	for (int i = 0; i < 200; i++) {
		if (cam_capture(cam, &f, &err) != 0)
			dropped++;
		else
			cam_frame_free(&f);
	}
	CHECK_MSG(dropped > 35 && dropped < 85, "%d of 200 dropped at 0.3", dropped);
	cam_close(cam);
	close_world(&w);
	small_frames = 0;
}

TEST(fault_corrupt_frames)
{
	static const char *const all[] = { "corrupt_frames=1", NULL };
	struct world w;
	struct camera *cam;
	struct cam_frame f;
	unsigned char *rgb;
	int width, height;
	bl_err err;

	small_frames = 1;
	open_world(&w, 5, NULL);
	cam = sim_camera(w.s);
	CHECK(cam_lock_controls(cam, &err) == 0);
	CHECK(cam_capture(cam, &f, &err) == 0);
	CHECK(f.format == CAM_FMT_JPEG && f.width == 320 && f.height == 180 && f.controls_locked);
	CHECK(decode(f.data, f.len, &rgb, &width, &height) == 0);
	CHECK(width == 320 && height == 180);
	free(rgb);
	cam_frame_free(&f);
	cam_close(cam);
	close_world(&w);

	open_world(&w, 5, all);
	cam = sim_camera(w.s);
	for (int i = 0; i < 5; i++) {
		CHECK(cam_capture(cam, &f, &err) == 0);
		CHECK_MSG(decode(f.data, f.len, &rgb, &width, &height) != 0,
			  "corrupt frame %d decoded cleanly", i);
		cam_frame_free(&f);
	}
	cam_close(cam);
	close_world(&w);
	small_frames = 0;
}

TEST(fault_command_failures)
{
	static const char *const all[] = { "command_failures=1", NULL };
	static const char *const half[] = { "command_failures=0.5", NULL };
	struct world w;
	struct arm *arm;
	struct arm_status st;
	bl_err err;
	int failed = 0;

	open_world(&w, 5, all);
	CHECK(act(w.s, HOME) == BL_ENOTSENT);
	CHECK_STR_CONTAINS(last_err.msg, "command failed");
	arm = sim_arm(w.s);
	CHECK(arm_status(arm, &st, &err) == 0);
	CHECK(!st.homed && st.pos_mm.x == w.m->park_mm[0] && !st.fault);
	arm_close(arm);
	close_world(&w);

	open_world(&w, 5, half);
	for (int i = 0; i < 200; i++)
		failed += act(w.s, HOME) == BL_ENOTSENT;
	CHECK_MSG(failed > 70 && failed < 130, "%d of 200 failed at 0.5", failed);
	close_world(&w);
}

#define SLOW_STROKE "{\"type\": \"stroke\", \"speed_mm_s\": 20, \"brush\": \"round-6\", " \
	"\"points_mm\": [[300, 200, -0.5], [620, 200, -0.5]]}"

TEST(fault_stall_latches_until_resumed)
{
	char fault[64];
	const char *f[] = { fault, NULL };
	struct world w;
	struct arm *arm;
	struct arm_status st;
	bl_err err;
	double ground[3], early[3], late[3], end_s;

	/* Unfaulted, to learn when the slow stroke ends; its last 1.5 s lift it off the canvas. */
	open_world(&w, 5, NULL);
	MUST(w.s, HOME);
	MUST(w.s, DIP("w13"));
	MUST(w.s, SLOW_STROKE);
	end_s = clk_now_ns(&w.clock) * 1e-9;
	close_world(&w);

	/* Stalled 10 s before that: half way along the painting. */
	snprintf(fault, sizeof(fault), "stall_at_s=%.3f", end_s - 10.0);
	open_world(&w, 5, f);
	arm = sim_arm(w.s);
	lab_at(w.s, 600, 200, ground);
	MUST(w.s, HOME);
	MUST(w.s, DIP("w13"));
	CHECK(act(w.s, SLOW_STROKE) == BL_ESAFETY);
	CHECK_STR_CONTAINS(last_err.msg, "stalled at");
	CHECK(fabs(clk_now_ns(&w.clock) * 1e-9 - (end_s - 10.0)) < 2e-3);
	CHECK(arm_status(arm, &st, &err) == 0);
	CHECK(st.fault);
	CHECK_STR_CONTAINS(st.fault_msg, "stalled");
	CHECK_MSG(st.pos_mm.x > 350.0 && st.pos_mm.x < 600.0, "stopped at x %.1f", st.pos_mm.x);
	/* Painted up to where it stopped, and no further. */
	lab_at(w.s, 310, 200, early);
	lab_at(w.s, 618, 200, late);
	CHECK(early[0] < ground[0] - 10.0);
	CHECK(de(late, ground) < 0.01);
	CHECK(act(w.s, HOME) == BL_ESAFETY);
	CHECK_STR_CONTAINS(last_err.msg, "fault latched");
	CHECK(arm_resume(arm, &err) == 0);
	CHECK(arm_status(arm, &st, &err) == 0 && !st.fault);
	MUST(w.s, HOME);
	arm_close(arm);
	close_world(&w);
}

TEST(fault_a_well_runs_dry)
{
	static const char *const f[] = { "dry_well=w11", "dry_well_ml=0.01", NULL };
	struct world w;
	double ground[3], lab[3];

	open_world(&w, 5, f);
	CHECK(fabs(sim_station_ml(w.s, "w11") - 0.01) < 1e-12);
	lab_at(w.s, 400, 200, ground);
	MUST(w.s, HOME);
	MUST(w.s, DIP("w11"));
	CHECK(sim_station_ml(w.s, "w11") < 1e-9);
	MUST(w.s, stroke_json(300, 500, 200));
	lab_at(w.s, 400, 200, lab);
	/* Colour for a few cm, then at most a trace: the well had almost nothing to give. */
	CHECK_MSG(de(lab, ground) < 3.0, "dry-well stroke %.2f from the canvas", de(lab, ground));
	MUST(w.s, DIP("w11"));
	close_world(&w);

	/* The same from a full well paints the whole way. */
	open_world(&w, 5, NULL);
	MUST(w.s, HOME);
	MUST(w.s, DIP("w11"));
	MUST(w.s, stroke_json(300, 500, 200));
	lab_at(w.s, 400, 200, lab);
	CHECK_MSG(de(lab, ground) > 20.0, "full-well stroke only %.2f from the canvas",
		  de(lab, ground));
	close_world(&w);
}

TEST(bad_actions_leave_the_world_unchanged)
{
	struct world w;
	unsigned char *before, *after;
	size_t nb, na;
	static const struct {
		const char *json;
		int rc;
		const char *msg;
	} bad[] = {
		{ "{\"type\": \"move\", \"speed_mm_s\": 100, \"zones\": [\"travel\"], \"to_mm\": [800, "
		  "10, 30]}", BL_EINVAL, "outside the work area" },
		{ "{\"type\": \"move\", \"speed_mm_s\": 900, \"zones\": [\"travel\"], \"to_mm\": [100, "
		  "10, 30]}", BL_EINVAL, "hard limit" },
		{ DIP("w99"), BL_EINVAL, "well 'w99'" },
		{ "{\"type\": \"stroke\", \"speed_mm_s\": 80, \"brush\": \"round-6\", \"points_mm\": "
		  "[[300, 200, -0.5], [300, 200, -60]]}", BL_EINVAL, "outside the work area" },
		{ "{\"type\": \"home\", \"speed_mm_s\": 1e999}", BL_EINVAL, "finite" },
		{ "{\"type\": \"teleport\", \"speed_mm_s\": 5}", BL_EINVAL, "teleport" },
	};

	open_world(&w, 5, NULL);
	/* Unhomed, even a good action is refused and changes nothing. */
	before = state(w.s, &nb);
	CHECK(act(w.s, DIP("w1")) == BL_ESAFETY);
	CHECK_STR_CONTAINS(last_err.msg, "not homed");
	after = state(w.s, &na);
	CHECK(nb == na && memcmp(before, after, nb) == 0);
	free(before);
	free(after);
	MUST(w.s, HOME);
	MUST(w.s, DIP("w11"));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc;

		before = state(w.s, &nb);
		rc = act(w.s, bad[i].json);
		CHECK_MSG(rc == bad[i].rc, "action %zu: %d (%s)", i, rc, last_err.msg);
		CHECK_STR_CONTAINS(last_err.msg, bad[i].msg);
		after = state(w.s, &na);
		CHECK_MSG(nb == na && memcmp(before, after, nb) == 0, "action %zu changed the world", i);
		free(before);
		free(after);
	}
	MUST(w.s, stroke_json(300, 400, 200));
	close_world(&w);
}

TEST(bad_action_files_leave_the_world_file_unchanged)
{
	char world[4200];
	unsigned char *b0, *b1;
	size_t n0, n1;
	char *out, *err;
	static const struct {
		const char *name, *body, *msg;
	} bad[] = {
		{ "nan.json", "{\"kind\": \"actions\", \"version\": 1, \"actions\": [" HOME ", "
		  "{\"type\": \"move\", \"speed_mm_s\": 100, \"zones\": [\"travel\"], \"to_mm\": "
		  "[1e999, 0, 30]}]}", "actions[1].to_mm[0]" },
		{ "kind.json", "{\"kind\": \"actions\", \"version\": 1, \"actions\": [" HOME ", "
		  "{\"type\": \"paint\", \"speed_mm_s\": 100}]}", "actions[1].type" },
	};
	int rc;

	snprintf(world, sizeof(world), "%s/keep.bin", test_tmpdir());
	rc = test_brushloop((const char *const[]){ "sim", "exec",
						   src_path("examples/actions/every-kind.json"),
						   "--world", world, NULL }, &out, &err);
	CHECK_MSG(rc == 0, "%s", err);
	free(out);
	free(err);
	b0 = file_bytes(world, &n0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rc = test_brushloop((const char *const[]){ "sim", "exec",
							   test_write_file(bad[i].name, bad[i].body),
							   "--world", world, NULL }, &out, &err);
		CHECK(rc == 2);
		CHECK_STR_CONTAINS(err, bad[i].msg);
		free(out);
		free(err);
	}
	{
		/* A polyline of a million points. */
		FILE *f;
		char path[4200];

		snprintf(path, sizeof(path), "%s/million.json", test_tmpdir());
		f = fopen(path, "w");
		fputs("{\"kind\": \"actions\", \"version\": 1, \"actions\": [{\"type\": \"stroke\", "
		      "\"speed_mm_s\": 80, \"brush\": \"round-6\", \"points_mm\": [", f);
		for (int i = 0; i < 1000000; i++)
			fputs(i ? ",[]" : "[]", f);
		fputs("]}]}", f);
		fclose(f);
		rc = test_brushloop((const char *const[]){ "sim", "exec", path, "--world", world,
							   NULL }, &out, &err);
		CHECK(rc == 2);
		CHECK_STR_CONTAINS(err, "points_mm: has more than 100000 items");
		free(out);
		free(err);
	}
	b1 = file_bytes(world, &n1);
	CHECK(b0 && b1 && n0 == n1 && memcmp(b0, b1, n0) == 0);
	free(b0);
	free(b1);
}

/* ---- the camera and its truth ---- */

static cJSON *patch(cJSON *truth, const char *name)
{
	for (cJSON *p = cJSON_GetObjectItem(truth, "patches")->child; p; p = p->next)
		if (strcmp(cJSON_GetObjectItem(p, "name")->valuestring, name) == 0)
			return p;
	return NULL;
}

TEST(chart_truth_matches_what_the_camera_sees)
{
	struct world w;
	struct cam_frame f;
	cJSON *truth;
	unsigned char *rgb;
	int width, height, n = 0;
	double sum = 0.0, prev_l = 1e9;
	bl_err err;
	static const char *const neutrals[] = { "white 9.5", "neutral 8", "neutral 6.5",
						"neutral 5", "neutral 3.5", "black 2" };

	open_world(&w, 9, NULL);
	CHECK(sim_render(w.s, SIM_SCENE_CHART, &f, &err) == 0);
	CHECK(sim_truth(w.s, SIM_SCENE_CHART, &truth, &err) == 0);
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(truth, "patches")) == 24);
	CHECK(decode(f.data, f.len, &rgb, &width, &height) == 0);
	for (cJSON *p = cJSON_GetObjectItem(truth, "patches")->child; p; p = p->next) {
		cJSON *roi = cJSON_GetObjectItem(p, "roi"), *lab = cJSON_GetObjectItem(p, "lab");
		double mean[3], t[3];
		color_rgb c;
		color_lab cam, tl;

		CHECK(cJSON_GetArraySize(roi) == 4 && cJSON_GetArraySize(lab) == 3);
		CHECK(cJSON_GetArrayItem(roi, 0)->valuedouble >= 0 &&
		      cJSON_GetArrayItem(roi, 2)->valuedouble >= 8 &&
		      cJSON_GetArrayItem(roi, 0)->valuedouble + cJSON_GetArrayItem(roi, 2)->valuedouble <= width);
		roi_mean(rgb, width, roi, mean);
		c = (color_rgb){ mean[0], mean[1], mean[2] };
		CHECK(color_srgb_to_lab(&c, &cam, &err) == 0);
		for (int k = 0; k < 3; k++)
			t[k] = cJSON_GetArrayItem(lab, k)->valuedouble;
		tl = (color_lab){ t[0], t[1], t[2] };
		sum += color_de00(&cam, &tl);
		n++;
	}
	/* The truth is the published chart; the camera sees it through its own sensor and light. */
	CHECK_NEAR(cJSON_GetArrayItem(cJSON_GetObjectItem(patch(truth, "dark skin"), "lab"), 0)->valuedouble,
		   37.54, 0.05);
	CHECK_MSG(sum / n > 0.5 && sum / n < 10.0, "uncalibrated camera: mean %.2f CIEDE2000",
		  sum / n);
	fprintf(stderr, "uncalibrated camera vs truth on the chart: mean %.2f CIEDE2000\n", sum / n);
	for (int i = 0; i < 6; i++) {
		double mean[3];

		roi_mean(rgb, width, cJSON_GetObjectItem(patch(truth, neutrals[i]), "roi"), mean);
		CHECK(mean[1] < prev_l);
		prev_l = mean[1];
	}
	free(rgb);
	cam_frame_free(&f);
	cJSON_Delete(truth);
	close_world(&w);
}

TEST(swatch_truth_covers_wells_and_the_arm_hides_some)
{
	struct world w;
	cJSON *truth;
	int parked, over;
	bl_err err;

	open_world(&w, 9, NULL);
	CHECK(sim_truth(w.s, SIM_SCENE_SWATCHES, &truth, &err) == 0);
	parked = cJSON_GetArraySize(cJSON_GetObjectItem(truth, "patches"));
	/* A fresh world shows 13 filled wells and 12 stirred test mixes. */
	CHECK_MSG(parked == 25, "%d swatches", parked);
	CHECK(patch(truth, "w1") && patch(truth, "m12") && !patch(truth, "w14"));
	cJSON_Delete(truth);
	/* The arm over the palette hides some of them. */
	MUST(w.s, HOME);
	MUST(w.s, "{\"type\": \"move\", \"speed_mm_s\": 100, \"zones\": [\"travel\"], "
		  "\"to_mm\": [70, 150, 40]}");
	CHECK(sim_truth(w.s, SIM_SCENE_SWATCHES, &truth, &err) == 0);
	over = cJSON_GetArraySize(cJSON_GetObjectItem(truth, "patches"));
	CHECK_MSG(over < parked, "%d swatches with the arm over them", over);
	cJSON_Delete(truth);
	close_world(&w);
}

TEST(the_arm_shows_in_frames_unless_parked)
{
	struct world w;
	struct cam_frame a, b;
	unsigned char *ra, *rb;
	int width, height;
	long differ = 0;
	bl_err err;

	open_world(&w, 9, NULL);
	MUST(w.s, HOME);
	MUST(w.s, "{\"type\": \"move\", \"speed_mm_s\": 100, \"zones\": [\"travel\"], "
		  "\"to_mm\": [460, 250, 40]}");
	CHECK(sim_render(w.s, SIM_SCENE_CANVAS, &a, &err) == 0);
	MUST(w.s, "{\"type\": \"park\", \"speed_mm_s\": 200}");
	CHECK(sim_render(w.s, SIM_SCENE_CANVAS, &b, &err) == 0);
	CHECK(decode(a.data, a.len, &ra, &width, &height) == 0);
	CHECK(decode(b.data, b.len, &rb, &width, &height) == 0);
	for (size_t i = 0; i < (size_t)width * height * 3; i += 3)
		differ += abs(ra[i + 1] - rb[i + 1]) > 40;
	/* A head and a beam over the canvas: thousands of pixels, not the whole frame. */
	CHECK_MSG(differ > 5000 && differ < 300000, "%ld pixels differ", differ);
	free(ra);
	free(rb);
	cam_frame_free(&a);
	cam_frame_free(&b);
	close_world(&w);
}

TEST(markers_lie_where_the_truth_says)
{
	struct world w;
	struct cam_frame f;
	cJSON *truth, *mk;
	unsigned char *rgb;
	int width, height, n = 0;
	bl_err err;

	open_world(&w, 9, NULL);
	CHECK(sim_render(w.s, SIM_SCENE_CANVAS, &f, &err) == 0);
	CHECK(sim_truth(w.s, SIM_SCENE_CANVAS, &truth, &err) == 0);
	CHECK(decode(f.data, f.len, &rgb, &width, &height) == 0);
	mk = cJSON_GetObjectItem(truth, "markers");
	CHECK(cJSON_GetArraySize(mk) == 4);
	for (cJSON *m = mk->child; m; m = m->next) {
		cJSON *c = cJSON_GetObjectItem(m, "center"), *corners = cJSON_GetObjectItem(m, "corners");
		int id = (int)cJSON_GetObjectItem(m, "id")->valuedouble;
		int u = (int)cJSON_GetArrayItem(c, 0)->valuedouble, v = (int)cJSON_GetArrayItem(c, 1)->valuedouble;
		const unsigned char *px = &rgb[((size_t)v * width + u) * 3];
		double cu = 0.0, cv = 0.0;

		CHECK(cJSON_IsTrue(cJSON_GetObjectItem(m, "visible")));
		CHECK(cJSON_GetArraySize(corners) == 4);
		/* The centre is black on the origin marker, white on the others. */
		CHECK_MSG(id == 0 ? px[1] < 80 : px[1] > 150, "marker %d centre %d", id, px[1]);
		/* The ring between centre and corners is white, the corners themselves black. */
		for (cJSON *p = corners->child; p; p = p->next) {
			double pu = cJSON_GetArrayItem(p, 0)->valuedouble, pv = cJSON_GetArrayItem(p, 1)->valuedouble;
			int qu = (int)(pu + 0.15 * (u - pu)), qv = (int)(pv + 0.15 * (v - pv));

			cu += pu / 4.0;
			cv += pv / 4.0;
			CHECK(rgb[((size_t)qv * width + qu) * 3 + 1] < 90);
		}
		CHECK(fabs(cu - u) < 2.0 && fabs(cv - v) < 2.0);
		n++;
	}
	CHECK(n == 4);
	/* A fresh canvas: every region is uniform and listed. */
	CHECK_MSG(cJSON_GetArraySize(cJSON_GetObjectItem(truth, "patches")) == 48, "%d regions",
		  cJSON_GetArraySize(cJSON_GetObjectItem(truth, "patches")));
	free(rgb);
	cam_frame_free(&f);
	cJSON_Delete(truth);
	close_world(&w);
}

TEST(the_light_falls_off_and_drifts)
{
	struct world w;
	struct cam_frame f;
	cJSON *truth;
	unsigned char *rgb;
	int width, height;
	double near[3], far[3], later[3];
	bl_err err;

	open_world(&w, 9, NULL);
	CHECK(sim_render(w.s, SIM_SCENE_CANVAS, &f, &err) == 0);
	CHECK(sim_truth(w.s, SIM_SCENE_CANVAS, &truth, &err) == 0);
	CHECK(decode(f.data, f.len, &rgb, &width, &height) == 0);
	/* Same paint, same truth, different light across the canvas. */
	roi_mean(rgb, width, cJSON_GetObjectItem(patch(truth, "canvas[0,2]"), "roi"), near);
	roi_mean(rgb, width, cJSON_GetObjectItem(patch(truth, "canvas[7,5]"), "roi"), far);
	CHECK_MSG(fabs(near[1] - far[1]) > 4.0, "green %.1f vs %.1f", near[1], far[1]);
	free(rgb);
	cam_frame_free(&f);
	/* Eight hours later the light is 8 % dimmer and warmer. */
	clk_advance(&w.clock, 8LL * 3600 * 1000000000LL);
	CHECK(sim_render(w.s, SIM_SCENE_CANVAS, &f, &err) == 0);
	CHECK(decode(f.data, f.len, &rgb, &width, &height) == 0);
	roi_mean(rgb, width, cJSON_GetObjectItem(patch(truth, "canvas[0,2]"), "roi"), later);
	CHECK_MSG(later[1] < near[1] - 3.0, "green %.1f after 8 h, %.1f before", later[1], near[1]);
	CHECK(later[0] / later[2] > near[0] / near[2]);
	free(rgb);
	cam_frame_free(&f);
	cJSON_Delete(truth);
	close_world(&w);
}

/* ---- configuration, rig and CLI ---- */

static int load_with(const char *name, const char *from, const char *to, bl_err *err)
{
	char *text, *at;
	size_t len;
	struct machine *m = malloc(sizeof(*m));
	int rc;

	if (fs_read_file(src_path("examples/machine-sim.json"), 1 << 20, &text, &len, err))
		return -99;
	at = strstr(text, from);
	if (!at) {
		fprintf(stderr, "'%s' not in the example\n", from);
		exit(1);
	}
	{
		size_t n = strlen(text) + strlen(to) + 1;
		char *out = malloc(n);

		memcpy(out, text, (size_t)(at - text));
		strcpy(out + (at - text), to);
		strcat(out, at + strlen(from));
		rc = machine_load(test_write_file(name, out), m, err);
		if (rc == 0) {
			struct sim *s;
			clk c;

			rc = sim_open(m, NULL, &c, &s, err);
			if (rc == 0)
				sim_close(s);
		}
		free(out);
	}
	free(text);
	free(m);
	return rc;
}

TEST(the_sim_section_is_read_strictly)
{
	bl_err err;

	CHECK(load_with("a.json", "\"cell_mm\": 1,", "\"cell_mm\": 1, \"gloss\": 2,", &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "sim.gloss");
	CHECK(load_with("b.json", "\"w13\": \"black\"", "\"w13\": \"blak\"", &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "sim.paints.w13: unknown paint 'blak'");
	CHECK(load_with("c.json", "\"w13\": \"black\"", "\"w15\": \"black\"", &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "'w15' is not a well");
	CHECK(load_with("d.json", "\"offset_mm\": 25", "\"offset_mm\": 19", &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "zones.canvas.markers.offset_mm: 19 is less than 2/3 of size_mm");
	CHECK(load_with("e.json", "\"jpeg_quality\": 90", "\"jpeg_quality\": 101", &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "jpeg_quality");
	CHECK(load_with("f.json", "\"drop_frames\": 0,", "\"drop_frames\": 1.5,", &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "sim.faults.drop_frames");
	CHECK(load_with("g.json", "\"spectrum\": \"led\"", "\"spectrum\": \"sun\"", &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "sim.light.spectrum");
	CHECK(load_with("h.json", "\"position_mm\": [350, -120, 780]", "\"position_mm\": [350, -120, -5]",
			&err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "must look down");
	CHECK(load_with("i.json", "\"spectrum\": \"led\"", "\"spectrum\": \"tungsten\"", &err) == 0);
}

/* Writes the example machine with one text replaced, and returns its path. */
static const char *mutated(const char *name, const char *from, const char *to)
{
	static char path[4200];
	char *text, *at, *out;
	size_t len;
	bl_err err;

	if (fs_read_file(src_path("examples/machine-sim.json"), 1 << 20, &text, &len, &err) ||
	    !(at = strstr(text, from))) {
		fprintf(stderr, "cannot mutate the example at '%s'\n", from);
		exit(1);
	}
	out = malloc(len + strlen(to) + 1);
	memcpy(out, text, (size_t)(at - text));
	strcpy(out + (at - text), to);
	strcat(out, at + strlen(from));
	free(text);
	/* The copy lives elsewhere: its calibration files by their full paths. */
	while ((at = strstr(out, "\"calibration/"))) {
		const char *dir = src_path("examples/");
		char *o2 = malloc(strlen(out) + strlen(dir) + 1);

		memcpy(o2, out, (size_t)(at - out) + 1);
		strcpy(o2 + (at - out) + 1, dir);
		strcat(o2, at + 1);
		free(out);
		out = o2;
	}
	snprintf(path, sizeof(path), "%s", test_write_file(name, out));
	free(out);
	return path;
}

TEST(faults_in_the_machine_file_apply)
{
	char machine[4200], frame[4200], world[4200];
	char *out, *err;
	int rc;

	snprintf(frame, sizeof(frame), "%s/f.jpg", test_tmpdir());
	snprintf(world, sizeof(world), "%s/pl.bin", test_tmpdir());
	snprintf(machine, sizeof(machine), "%s", mutated("drop.json", "\"drop_frames\": 0,",
							 "\"drop_frames\": 1,"));
	rc = test_brushloop((const char *const[]){ "sim", "render", "--machine", machine, "-o", frame,
						   NULL }, &out, &err);
	CHECK(rc == 1);
	CHECK_STR_CONTAINS(err, "dropped");
	free(out);
	free(err);
	/* The command line overrides the file. */
	rc = test_brushloop((const char *const[]){ "sim", "render", "--machine", machine, "-o", frame,
						   "--fault", "drop_frames=0", NULL }, &out, &err);
	CHECK_MSG(rc == 0, "%s", err);
	free(out);
	free(err);

	snprintf(machine, sizeof(machine), "%s", mutated("pl.json", "\"power_loss_after\": 0",
							 "\"power_loss_after\": 2"));
	rc = test_brushloop((const char *const[]){ "sim", "exec",
						   src_path("examples/actions/every-kind.json"),
						   "--machine", machine, "--world", world, NULL }, &out, &err);
	CHECK(rc == SIM_POWER_LOSS_EXIT);
	CHECK_STR_CONTAINS(err, "power lost after action 2");
	free(out);
	free(err);

	snprintf(machine, sizeof(machine), "%s", mutated("dry.json", "\"dry_well\": \"\"",
							 "\"dry_well\": \"w11\""));
	rc = test_brushloop((const char *const[]){ "config", "check", machine, NULL }, &out, &err);
	CHECK(rc == 0);
	CHECK_STR_CONTAINS(out, "dry_well w11 (0.05 ml)");
	free(out);
	free(err);
}

TEST(fault_overrides_are_checked)
{
	struct machine *m = example();
	bl_err err;

	CHECK(machine_sim_fault_set(m, "drop_frames=0.25", &err) == 0 &&
	      m->sim.faults.drop_frames == 0.25);
	CHECK(machine_sim_fault_set(m, "power_loss_after=3", &err) == 0 &&
	      m->sim.faults.power_loss_after == 3);
	CHECK(machine_sim_fault_set(m, "dry_well=w4", &err) == 0 &&
	      strcmp(m->sim.faults.dry_well, "w4") == 0);
	CHECK(machine_sim_fault_set(m, "drop_frames=2", &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "drop_frames");
	CHECK(machine_sim_fault_set(m, "drop_frames=nan", &err) == BL_EINVAL);
	CHECK(machine_sim_fault_set(m, "power_loss_after=2.5", &err) == BL_EINVAL);
	CHECK(machine_sim_fault_set(m, "dry_well=w99", &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "'w99' is not a well");
	CHECK(machine_sim_fault_set(m, "dry_well=", &err) == 0 && m->sim.faults.dry_well[0] == '\0');
	CHECK(machine_sim_fault_set(m, "lightning=1", &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "unknown fault 'lightning'");
	CHECK(machine_sim_fault_set(m, "drop_frames", &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "KEY=VALUE");
	free(m);
}

TEST(a_scara_arm_refuses_what_it_cannot_reach)
{
	struct machine *m = malloc(sizeof(*m));
	struct sim *s;
	struct cam_frame f;
	clk c;
	char *text, *at, *mut;
	size_t len;
	bl_err err;
	const char *from = "\"kinematics\": { \"type\": \"cartesian\" }";
	/* Mounted behind the table, so its path from park to home stays clear of its own base. */
	const char *to = "\"kinematics\": { \"type\": \"scara\", \"base_mm\": [350, 560], "
			 "\"l1_mm\": 326, \"l2_mm\": 326, \"j1_deg\": [-180, 180], "
			 "\"j2_deg\": [-150, 150], \"j4_deg\": [-360, 360], \"elbow\": \"right\" }";

	CHECK(fs_read_file(src_path("examples/machine-sim.json"), 1 << 20, &text, &len, &err) == 0);
	at = strstr(text, from);
	CHECK(at != NULL);
	mut = malloc(len + strlen(to) + 1);
	memcpy(mut, text, (size_t)(at - text));
	strcpy(mut + (at - text), to);
	strcat(mut, at + strlen(from));
	CHECK_MSG(machine_load(test_write_file("scara.json", mut), m, &err) == 0, "%s", err.msg);
	CHECK(sim_open(m, NULL, &c, &s, &err) == 0);
	MUST(s, HOME);
	/* A corner of the work area beyond the links' 652 mm. */
	CHECK(act(s, "{\"type\": \"move\", \"speed_mm_s\": 100, \"zones\": [\"travel\"], "
		     "\"to_mm\": [5, 5, 30]}") == BL_EINVAL);
	CHECK_STR_CONTAINS(last_err.msg, "out of the arm's reach");
	/* Over the shoulder the elbow would have to fold past its limit. */
	CHECK(act(s, "{\"type\": \"move\", \"speed_mm_s\": 100, \"zones\": [\"travel\"], "
		     "\"to_mm\": [351, 499, 30]}") == BL_EINVAL);
	CHECK_STR_CONTAINS(last_err.msg, "needs elbow");
	MUST(s, "{\"type\": \"move\", \"speed_mm_s\": 100, \"zones\": [\"travel\"], "
		"\"to_mm\": [460, 250, 30]}");
	/* Its links show in the frame. */
	CHECK(sim_render(s, SIM_SCENE_CANVAS, &f, &err) == 0);
	cam_frame_free(&f);
	sim_close(s);
	free(text);
	free(mut);
	free(m);
}

TEST(the_rig_opens_what_the_machine_names)
{
	struct machine *m = example();
	struct rig *r = malloc(sizeof(*r));
	struct rig_options o = { 3, 1, NULL, 1, { "drop_frames=1" }, NULL };
	struct arm_status st;
	struct cam_frame f;
	bl_err err;

	CHECK_MSG(rig_open(m, &o, r, &err) == 0, "%s", err.msg);
	CHECK(r->sim && r->arm && r->cam && r->clock && r->clock->is_virtual);
	CHECK(strcmp(arm_backend_name(r->arm), "sim") == 0);
	CHECK(arm_status(r->arm, &st, &err) == 0 && !st.homed);
	CHECK(r->m.sim.faults.drop_frames == 1.0 && m->sim.faults.drop_frames == 0.0);
	CHECK(cam_capture(r->cam, &f, &err) == BL_ETIMEDOUT);
	rig_close(r);
	/* Only the camera, and the world it films: no arm. */
	CHECK_MSG(rig_open_camera(m, NULL, r, &err) == 0, "%s", err.msg);
	CHECK(r->sim && r->cam && !r->arm);
	CHECK(cam_capture(r->cam, &f, &err) == 0 && f.width == 1280);
	cam_frame_free(&f);
	rig_close(r);
	/* The v4l2 camera is registered too: a missing device is its error, and nothing stays open. */
	m->camera.backend = MACHINE_CAM_V4L2;
	snprintf(m->camera.device, sizeof(m->camera.device), "%s/no-video", test_tmpdir());
	CHECK(rig_open(m, NULL, r, &err) != 0);
	CHECK_STR_CONTAINS(err.msg, "no-video");
	CHECK(r->arm == NULL && r->sim == NULL && r->cam == NULL);
	/* With a real arm the simulator's camera films a world in the arm's shadow (its own clock). */
	m->camera.backend = MACHINE_CAM_SIM;
	m->arm_backend = MACHINE_ARM_MODBUS;
	CHECK_MSG(rig_open_camera(m, NULL, r, &err) == 0, "%s", err.msg);
	CHECK(r->sim && r->cam && !r->arm && r->clock != &r->vclock);
	rig_close(r);
	free(r);
	free(m);
}

TEST(cli_render_writes_a_frame_and_its_truth)
{
	char frame[4200], truth[4200];
	char *out, *err;
	unsigned char *jpg, *rgb;
	size_t n;
	int width, height, rc;
	cJSON *t;
	bl_err e;

	snprintf(frame, sizeof(frame), "%s/chart.jpg", test_tmpdir());
	snprintf(truth, sizeof(truth), "%s/chart.json", test_tmpdir());
	rc = test_brushloop((const char *const[]){ "sim", "render", "--scene", "chart", "--seed", "4",
						   "-o", frame, "--truth", truth, "--json", NULL },
			    &out, &err);
	CHECK_MSG(rc == 0, "%s", err);
	CHECK_STR_CONTAINS(out, "\"patches\":\t24");
	free(out);
	free(err);
	jpg = file_bytes(frame, &n);
	CHECK(jpg && decode(jpg, n, &rgb, &width, &height) == 0 && width == 1280);
	free(rgb);
	free(jpg);
	CHECK(json_parse_file(truth, &t, &e) == 0);
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(t, "patches")) == 24);
	CHECK(strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(t, "patches"), 0),
					 "name")->valuestring, "dark skin") == 0);
	cJSON_Delete(t);

	rc = test_brushloop((const char *const[]){ "sim", "render", "--scene", "sky", "-o", frame,
						   NULL }, &out, &err);
	CHECK(rc == 2);
	CHECK_STR_CONTAINS(err, "--scene: 'sky'");
	free(out);
	free(err);
	rc = test_brushloop((const char *const[]){ "sim", "render", NULL }, &out, &err);
	CHECK(rc == 2);
	CHECK_STR_CONTAINS(err, "-o FRAME.jpg");
	free(out);
	free(err);
	rc = test_brushloop((const char *const[]){ "sim", "render", "-o", frame, "--fault",
						   "drop_frames=1", NULL }, &out, &err);
	CHECK(rc == 1);
	CHECK_STR_CONTAINS(err, "dropped");
	free(out);
	free(err);
}

/* `sim render -o x.png` writes a PNG of the very pixels the camera's JPEG decodes to; a name of no known format is refused. */
TEST(render_writes_the_format_its_name_says)
{
	char jpg[4200], png[4200], bad[4200];
	struct img a = { 0 }, b = { 0 };
	unsigned char *bytes;
	char *out, *err;
	size_t n = 0;
	struct stat sb;
	bl_err e;
	cJSON *o;

	snprintf(jpg, sizeof(jpg), "%s/same.jpg", test_tmpdir());
	snprintf(png, sizeof(png), "%s/same.PNG", test_tmpdir());
	snprintf(bad, sizeof(bad), "%s/same.bmp", test_tmpdir());
	CHECK(test_brushloop((const char *const[]){ "sim", "render", "--seed", "3", "-o", jpg, NULL },
			     NULL, NULL) == 0);
	CHECK(test_brushloop((const char *const[]){ "sim", "render", "--seed", "3", "-o", png, "--json",
						    NULL }, &out, NULL) == 0);
	bytes = file_bytes(png, &n);
	CHECK_MSG(bytes && n > 8 && !memcmp(bytes, "\x89PNG\r\n\x1a\n", 8), "%s does not start as a PNG", png);
	CHECK(bytes && n > 3 && memcmp(bytes, "\xff\xd8\xff", 3) != 0);
	free(bytes);
	bytes = file_bytes(jpg, &n);
	CHECK(bytes && n > 3 && !memcmp(bytes, "\xff\xd8\xff", 3));
	free(bytes);
	/* What --json says it wrote is the file. */
	o = cJSON_Parse(out ? out : "");
	CHECK(o && stat(png, &sb) == 0 && cJSON_GetObjectItem(o, "bytes")->valuedouble == (double)sb.st_size);
	cJSON_Delete(o);
	free(out);
	CHECK(img_load(jpg, 1 << 24, &a, &e) == 0 && img_load(png, 1 << 24, &b, &e) == 0);
	CHECK(a.w == b.w && a.h == b.h && a.px && b.px &&
	      !memcmp(a.px, b.px, (size_t)a.w * a.h * 3));
	img_free(&a);
	img_free(&b);
	CHECK(test_brushloop((const char *const[]){ "sim", "render", "-o", bad, NULL }, NULL, &err) == 2);
	CHECK_STR_CONTAINS(err, "name the file .jpg or .png");
	CHECK(stat(bad, &sb) != 0);
	free(err);
}

TEST(cli_exec_reports_simulated_time_and_saves_frames)
{
	char dir[4200], f0[4300];
	char *out, *err;
	struct stat st;
	cJSON *o;
	bl_err e;
	int rc;

	snprintf(dir, sizeof(dir), "%s/frames", test_tmpdir());
	rc = test_brushloop((const char *const[]){ "sim", "exec",
						   src_path("examples/actions/every-kind.json"),
						   "--frames", dir, "--json", NULL }, &out, &err);
	CHECK_MSG(rc == 0, "%s", err);
	CHECK(json_parse_text(out, "stdout", &o, &e) == 0);
	CHECK(cJSON_GetObjectItem(o, "executed")->valuedouble == 16);
	CHECK(cJSON_GetObjectItem(o, "sim_time_s")->valuedouble > 60.0);
	CHECK(cJSON_GetObjectItem(o, "frames_saved")->valuedouble == 16);
	CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(o, "per_action")) == 16);
	cJSON_Delete(o);
	free(out);
	free(err);
	snprintf(f0, sizeof(f0), "%s/after-0015.jpg", dir);
	CHECK(stat(f0, &st) == 0 && st.st_size > 10000);

	rc = test_brushloop((const char *const[]){ "sim", "exec",
						   src_path("examples/actions/every-kind.json"),
						   "--fault", "command_failures=1", NULL }, &out, &err);
	CHECK(rc == 1);
	CHECK_STR_CONTAINS(out, "executed 0 of 16");
	CHECK_STR_CONTAINS(err, "command failed");
	free(out);
	free(err);
}

TEST_MAIN(T(strokes_put_paint_where_the_brush_went), T(the_load_runs_out_along_the_stroke),
	  T(wet_paint_mixes_and_dry_paint_layers), T(an_unwashed_brush_carries_colour_over),
	  T(a_clean_brush_smears_wet_paint), T(dispensed_and_stirred_cells_become_swatches),
	  T(a_brush_loads_a_mixed_colour_from_a_cell),
	  T(same_machine_seed_and_actions_give_the_same_bytes),
	  T(frames_are_the_same_bytes_shaded_one_or_eight_pixels_at_a_time), T(a_saved_world_loads_as_it_was),
	  T(a_damaged_world_file_is_refused), T(the_world_log_replays_to_the_last_whole_record), T(a_run_resumes_after_a_power_loss_on_the_same_canvas),
	  T(fault_dropped_frames), T(fault_corrupt_frames), T(fault_command_failures),
	  T(fault_stall_latches_until_resumed), T(fault_a_well_runs_dry),
	  T(bad_actions_leave_the_world_unchanged), T(bad_action_files_leave_the_world_file_unchanged),
	  T(chart_truth_matches_what_the_camera_sees), T(swatch_truth_covers_wells_and_the_arm_hides_some),
	  T(the_arm_shows_in_frames_unless_parked), T(markers_lie_where_the_truth_says),
	  T(the_light_falls_off_and_drifts), T(the_sim_section_is_read_strictly),
	  T(faults_in_the_machine_file_apply), T(fault_overrides_are_checked),
	  T(a_scara_arm_refuses_what_it_cannot_reach),
	  T(the_rig_opens_what_the_machine_names),
	  T(cli_render_writes_a_frame_and_its_truth), T(render_writes_the_format_its_name_says),
	  T(cli_exec_reports_simulated_time_and_saves_frames))

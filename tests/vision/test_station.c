/* test_station.c: the table's stations in a frame and their colour measured there through the example machine's profile, light map and the lamp followed through a night, on simulator frames against its truth. */
#include "base/json.h"
#include "calib/calib.h"
#include "sim/sim.h"
#include "test.h"
#include "vision/light.h"
#include "vision/station.h"

/* The example simulator machine with its committed calibration, and its swatches scene. */
struct bench {
	struct machine m;
	clk clock;
	struct sim *s;
	struct calib_set cs;
	struct vis_light light;
	struct vis_geometry g;
	struct img sw;               /* the swatches frame as the camera gives it */
	struct calib_truth_patch *tp;
	int tn;
};

static int frame(struct bench *b, enum sim_scene scene, struct img *im, bl_err *err)
{
	struct cam_frame f = { 0 };
	int rc = sim_render(b->s, scene, &f, err);

	if (rc == 0)
		rc = img_decode_frame(&f, b->m.camera.max_pixels, im, err);
	cam_frame_free(&f);
	return rc;
}

/* NULL when something failed (checked). */
static struct bench *bench_open(void)
{
	struct bench *b = calloc(1, sizeof(*b));
	struct sim_options o = { 1, 1, NULL };
	struct vis_markers mk;
	struct img bare = { 0 };
	cJSON *truth = NULL;
	char path[4096];
	bl_err err = { 0 };
	const char *src = getenv("BRUSHLOOP_SRC");
	int rc;

	snprintf(path, sizeof(path), "%s/examples/machine-sim.json", src ? src : BL_SOURCE_ROOT);
	clk_virtual_init(&b->clock, 0);
	rc = machine_load(path, &b->m, &err);
	if (rc == 0) {
		vis_markers_from_machine(&b->m, &mk);
		rc = sim_open(&b->m, &o, &b->clock, &b->s, &err);
	}
	if (rc == 0)
		rc = calib_load_machine(&b->m, &b->cs, &err);
	if (rc == 0)
		rc = vis_light_load(b->m.calibration.light_map, &b->light, &err);
	/* The geometry from the bare table with the light divided out, as the engine finds it. */
	if (rc == 0 && (rc = frame(b, SIM_SCENE_CANVAS, &bare, &err)) == 0 &&
	    (rc = vis_light_apply(&b->light, NULL, &bare, &err)) == 0)
		rc = vis_locate(&bare, "bare", b->cs.has_canvas ? &b->cs.canvas : NULL, &mk, &b->g,
				&err);
	if (rc == 0 && (rc = frame(b, SIM_SCENE_SWATCHES, &b->sw, &err)) == 0 &&
	    (rc = sim_truth(b->s, SIM_SCENE_SWATCHES, &truth, &err)) == 0)
		rc = calib_truth_parse(truth, "truth", &b->tp, &b->tn, NULL, &err);
	cJSON_Delete(truth);
	img_free(&bare);
	CHECK_MSG(rc == 0, "bench: %s", err.msg);
	if (rc) {
		free(b);
		return NULL;
	}
	return b;
}

static void bench_close(struct bench *b)
{
	if (!b)
		return;
	free(b->tp);
	img_free(&b->sw);
	vis_light_free(&b->light);
	calib_set_free(&b->cs);
	sim_close(b->s);
	free(b);
}

static const struct machine_station *station(const struct machine *m, const char *name)
{
	const struct machine_station *st = machine_find_well(m, name);

	return st ? st : machine_find_cell(m, name);
}

/* Each station's region lies inside the part of it the simulator's truth says is uniform. */
TEST(station_regions_lie_inside_the_stations)
{
	struct bench *b = bench_open();
	bl_err err = { 0 };
	int n = 0;

	for (int i = 0; b && i < b->tn; i++) {
		const struct machine_station *st = station(&b->m, b->tp[i].name);
		const struct meas_roi *t = &b->tp[i].roi;
		struct meas_roi r;
		double cx, cy, px[2], back[2];

		if (!st)
			continue;
		CHECK(vis_station_roi(&b->g, &b->m, st, &r, &err) == 0);
		cx = r.x + 0.5 * r.w;
		cy = r.y + 0.5 * r.h;
		CHECK_MSG(cx >= t->x && cx <= t->x + t->w && cy >= t->y && cy <= t->y + t->h,
			  "%s: region centre (%.1f, %.1f) outside the truth's (%d, %d, %d, %d)",
			  b->tp[i].name, cx, cy, t->x, t->y, t->w, t->h);
		/* Inside the station: the region is smaller than the truth's uniform part. */
		CHECK_MSG(r.w >= 4 && r.w == r.h && r.w <= t->w + 2 && r.h <= t->h + 2,
			  "%s: region %dx%d against the truth's %dx%d", b->tp[i].name, r.w, r.h,
			  t->w, t->h);
		CHECK(vis_table_to_px(&b->g, &b->m, st->center_mm, px, 1, &err) == 0);
		CHECK(vis_px_to_table(&b->g, &b->m, px, back, 1, &err) == 0);
		CHECK_NEAR(back[0], st->center_mm[0], 1e-6);
		CHECK_NEAR(back[1], st->center_mm[1], 1e-6);
		n++;
	}
	CHECK(n == 25);
	bench_close(b);
}

/*
 * The swatches scene's wells and test mixes measured through the machine's
 * profile, with its light map divided out of the frame and without: the
 * wells, far from the lamp, read several L dark uncorrected; corrected, each
 * station's lightness is near the truth and the mean CIEDE2000 well below
 * the uncorrected one.
 */
TEST(the_light_map_brings_stations_to_the_truth)
{
	struct bench *b = bench_open();
	struct img lit = { 0 };
	bl_err err = { 0 };
	double mean_u = 0, mean_c = 0, worst_u = 0, worst_c = 0, de_u = 0, de_c = 0;
	int n = 0;

	if (!b)
		return;
	CHECK(img_alloc(&lit, b->sw.w, b->sw.h, &err) == 0);
	memcpy(lit.px, b->sw.px, (size_t)lit.w * lit.h * 3);
	CHECK_MSG(vis_light_apply(&b->light, NULL, &lit, &err) == 0, "%s", err.msg);
	for (int i = 0; i < b->tn; i++) {
		const struct machine_station *st = station(&b->m, b->tp[i].name);
		color_lab t = { b->tp[i].lab[0], b->tp[i].lab[1], b->tp[i].lab[2] };
		struct meas_swatch c, u;

		if (!st)
			continue;
		CHECK_MSG(vis_measure_station(&lit, "swatches", &b->g, &b->m, st, b->cs.profile, &c,
					      &err) == 0, "%s", err.msg);
		CHECK_MSG(vis_measure_station(&b->sw, "swatches", &b->g, &b->m, st, b->cs.profile,
					      &u, &err) == 0, "%s", err.msg);
		mean_u += fabs(u.lab.L - t.L);
		mean_c += fabs(c.lab.L - t.L);
		worst_u = fmax(worst_u, fabs(u.lab.L - t.L));
		worst_c = fmax(worst_c, fabs(c.lab.L - t.L));
		de_u += color_de00(&u.lab, &t);
		de_c += color_de00(&c.lab, &t);
		n++;
	}
	CHECK(n == 25);
	if (n) {
		mean_u /= n;
		mean_c /= n;
		de_u /= n;
		de_c /= n;
	}
	printf("%d stations: |dL| mean %.2f worst %.2f uncorrected, mean %.2f worst %.2f with the "
	       "light map; CIEDE2000 mean %.2f -> %.2f\n", n, mean_u, worst_u, mean_c, worst_c, de_u,
	       de_c);
	CHECK(worst_u > 3.0);
	CHECK(mean_c < 0.5 && mean_c < mean_u / 3.0);
	CHECK(worst_c < 1.5);
	CHECK(de_c < 1.5 && de_c < de_u);
	img_free(&lit);
	bench_close(b);
}

/* A station whose region falls outside the frame is refused, naming the frame and the region. */
TEST(a_station_outside_the_frame_is_refused)
{
	struct bench *b = bench_open();
	struct machine_station st;
	struct meas_swatch sw;
	bl_err err = { 0 };

	if (!b)
		return;
	st = b->m.cells[0];
	st.center_mm[0] = -2000.0;
	CHECK(vis_measure_station(&b->sw, "the frame of cell far", &b->g, &b->m, &st, b->cs.profile,
				  &sw, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "the frame of cell far");
	CHECK_STR_CONTAINS(err.msg, "outside");
	bench_close(b);
}

/* Mean CIEDE2000 of the stations in frame (light map and lamp divided out of a copy) against truth. */
static double stations_de(struct bench *b, const struct img *frame, const double *lamp,
			  const struct calib_truth_patch *tp, int tn)
{
	struct img lit = { 0 };
	bl_err err = { 0 };
	double de = 0;
	int n = 0;

	CHECK(img_alloc(&lit, frame->w, frame->h, &err) == 0);
	memcpy(lit.px, frame->px, (size_t)lit.w * lit.h * 3);
	CHECK_MSG(vis_light_apply(&b->light, lamp, &lit, &err) == 0, "%s", err.msg);
	for (int i = 0; i < tn; i++) {
		const struct machine_station *st = station(&b->m, tp[i].name);
		color_lab t = { tp[i].lab[0], tp[i].lab[1], tp[i].lab[2] };
		struct meas_swatch c;

		if (!st)
			continue;
		CHECK_MSG(vis_measure_station(&lit, "swatches", &b->g, &b->m, st, b->cs.profile, &c,
					      &err) == 0, "%s", err.msg);
		de += color_de00(&c.lab, &t);
		n++;
	}
	img_free(&lit);
	return n ? de / n : 1e9;
}

/*
 * Eight simulated hours on, the example machine's lamp is 8 % dimmer and
 * warmer: the stations, measured through a map made at the start, read
 * darker than they are. The lamp followed on the bare board from the first
 * frame brings them back to what they measured at the start.
 */
TEST(the_lamp_keeps_stations_true_through_a_night)
{
	struct bench *b = bench_open();
	struct img bare = { 0 }, late = { 0 };
	struct vis_lamp *lp = calloc(1, sizeof(*lp));
	struct calib_truth_patch *tp8 = NULL;
	cJSON *truth = NULL;
	bl_err err = { 0 };
	double ratio[3] = { 0, 0, 0 }, de0, de8, de8_lamp;
	int tn8 = 0;

	if (!b || !lp)
		goto out;
	CHECK_MSG(frame(b, SIM_SCENE_CANVAS, &bare, &err) == 0, "%s", err.msg);
	CHECK_MSG(vis_lamp_reference(lp, &bare, "the bare table", &b->g, &b->m, &err) == 0, "%s",
		  err.msg);
	CHECK(lp->n >= 200);
	clk_advance(&b->clock, (int64_t)8 * 3600 * 1000000000LL);
	CHECK_MSG(frame(b, SIM_SCENE_SWATCHES, &late, &err) == 0, "%s", err.msg);
	CHECK(sim_truth(b->s, SIM_SCENE_SWATCHES, &truth, &err) == 0);
	CHECK(calib_truth_parse(truth, "truth", &tp8, &tn8, NULL, &err) == 0);
	CHECK_MSG(vis_lamp_ratio(lp, &late, "eight hours on", ratio, &err) == 0, "%s", err.msg);
	de0 = stations_de(b, &b->sw, NULL, b->tp, b->tn);
	de8 = stations_de(b, &late, NULL, tp8, tn8);
	de8_lamp = stations_de(b, &late, ratio, tp8, tn8);
	printf("%d board points; the lamp at 8 h: %.3f %.3f %.3f (R, G, B); stations' mean CIEDE2000 "
	       "%.2f at the start, %.2f at 8 h, %.2f with the lamp divided out\n", lp->n, ratio[0],
	       ratio[1], ratio[2], de0, de8, de8_lamp);
	/* The simulator dims 1 % an hour and tilts warmer: green near 0.92, blue below red. */
	CHECK(ratio[1] > 0.89 && ratio[1] < 0.95);
	CHECK(ratio[2] < ratio[0]);
	CHECK(de8 > de0 + 0.5);
	CHECK(de8_lamp < de0 + 0.15);
out:
	cJSON_Delete(truth);
	free(tp8);
	img_free(&bare);
	img_free(&late);
	free(lp);
	bench_close(b);
}

/* Paint, an arm or a shadow over a quarter of the board points moves the lamp's median by nothing much. */
TEST(things_over_a_few_board_points_move_the_lamp_nothing)
{
	struct bench *b = bench_open();
	struct img bare = { 0 }, hid = { 0 };
	struct vis_lamp *lp = calloc(1, sizeof(*lp));
	bl_err err = { 0 };
	double r0[3], r1[3];

	if (!b || !lp)
		goto out;
	CHECK(frame(b, SIM_SCENE_CANVAS, &bare, &err) == 0);
	CHECK(vis_lamp_reference(lp, &bare, "bare", &b->g, &b->m, &err) == 0);
	CHECK(img_alloc(&hid, bare.w, bare.h, &err) == 0);
	memcpy(hid.px, bare.px, (size_t)bare.w * bare.h * 3);
	for (int i = 0; i < lp->n; i += 4)
		for (int dy = -4; dy <= 4; dy++)
			for (int dx = -4; dx <= 4; dx++) {
				int x = (int)lp->px[i][0] + dx, y = (int)lp->px[i][1] + dy;

				if (x >= 0 && y >= 0 && x < hid.w && y < hid.h)
					memset(hid.px + 3 * ((size_t)y * hid.w + x), 60, 3);
			}
	CHECK(vis_lamp_ratio(lp, &bare, "bare", r0, &err) == 0);
	CHECK(vis_lamp_ratio(lp, &hid, "hidden", r1, &err) == 0);
	for (int k = 0; k < 3; k++) {
		CHECK_NEAR(r0[k], 1.0, 1e-6);
		CHECK_NEAR(r1[k], 1.0, 0.01);
	}
out:
	img_free(&bare);
	img_free(&hid);
	free(lp);
	bench_close(b);
}

/* No bare board, a frame of another size, and broken lamp files are refused, saying what was wrong. */
TEST(the_lamp_refuses_what_it_cannot_follow)
{
	static const char *const bad[][2] = {
		{ "{\"kind\": \"light-map\", \"version\": 1}", "lamp" },
		{ "{\"kind\": \"lamp\", \"version\": 1, \"width\": 100, \"height\": 100, \"points\": []}", "points" },
		{ "{\"kind\": \"lamp\", \"version\": 1, \"width\": 100, \"height\": 100, \"points\": [[1, 2, 0.5, 0.5]]}", "points" },
		{ "{\"kind\": \"lamp\", \"version\": 1, \"width\": 100, \"height\": 100, \"points\": [[1, 2, 0.5, 0.5, \"x\"]]}", "points" },
		{ "{\"kind\": \"lamp\", \"version\": 1, \"width\": 100, \"height\": 100, \"points\": [[1, 2, 0.5, 0.5, 0.5]], \"extra\": 1}", "points" },
	};
	struct bench *b = bench_open();
	struct vis_lamp *lp = calloc(1, sizeof(*lp)), *back = calloc(1, sizeof(*back));
	struct img white = { 0 }, small = { 0 }, bare = { 0 };
	double ratio[3];
	bl_err err = { 0 };
	cJSON *j;

	if (!b || !lp || !back)
		goto out;
	CHECK(img_alloc(&white, b->sw.w, b->sw.h, &err) == 0);
	memset(white.px, 255, (size_t)white.w * white.h * 3);
	CHECK(vis_lamp_reference(lp, &white, "a white frame", &b->g, &b->m, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "a white frame");
	CHECK_STR_CONTAINS(err.msg, "bare board");
	CHECK(frame(b, SIM_SCENE_CANVAS, &bare, &err) == 0);
	CHECK(vis_lamp_reference(lp, &bare, "bare", &b->g, &b->m, &err) == 0);
	CHECK(img_alloc(&small, 64, 48, &err) == 0);
	memset(small.px, 128, (size_t)64 * 48 * 3);
	CHECK(vis_lamp_ratio(lp, &small, "a small frame", ratio, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "64x48");
	CHECK(vis_lamp_ratio(lp, &white, "a white frame", ratio, &err) == BL_EIO);
	CHECK_STR_CONTAINS(err.msg, "board points");
	/* JSON: round trip, then broken files. */
	j = vis_lamp_json(lp);
	CHECK(j && vis_lamp_from_json(j, "lamp.json", back, &err) == 0);
	CHECK(back->n == lp->n && back->width == lp->width);
	CHECK_NEAR(back->ref[back->n - 1][2], lp->ref[lp->n - 1][2], 1e-6);
	cJSON_Delete(j);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cJSON *root = NULL;

		CHECK(json_parse_text(bad[i][0], "lamp.json", &root, &err) == 0);
		CHECK_MSG(vis_lamp_from_json(root, "lamp.json", back, &err) < 0, "case %zu accepted", i);
		CHECK_STR_CONTAINS(err.msg, bad[i][1]);
		cJSON_Delete(root);
	}
out:
	img_free(&white);
	img_free(&small);
	img_free(&bare);
	free(lp);
	free(back);
	bench_close(b);
}


/*
 * vis_light_apply divides each pixel by the map's gain there as vis_light_at
 * defines it (bilinear between cell centres, cells the map does not know left
 * out) and by the lamp: a map with unknown cells, an odd size and a frame of
 * every code, against that definition pixel by pixel.
 */
TEST(the_light_map_divides_each_pixel_by_its_gain)
{
	enum { W = 97, H = 61, ENC = 4096 };
	static const double lamp[3] = { 0.93, 1.0, 1.07 };
	struct vis_light l = { .width = W, .height = H, .cols = 7, .rows = 5, .file = "test map" };
	struct img im = { 0 }, ref = { 0 };
	bl_err err = { 0 };
	int worst = 0, skipped = 0, unknown = 0;

	l.gain = calloc(35, sizeof(*l.gain));
	CHECK(l.gain != NULL);
	if (!l.gain)
		return;
	for (int i = 0; i < 35; i++)
		l.gain[i] = i % 11 == 3 ? 0.0f : (float)(0.6 + 0.02 * ((i * 7) % 23));
	l.gain[0] = l.gain[1] = l.gain[7] = l.gain[8] = 0.0f; /* a corner it does not know */
	CHECK(img_alloc(&im, W, H, &err) == 0 && img_alloc(&ref, W, H, &err) == 0);
	for (size_t i = 0; i < (size_t)W * H * 3; i++)
		im.px[i] = ref.px[i] = (unsigned char)((i * 37 + i / 5) & 255);
	CHECK(vis_light_apply(&l, lamp, &im, &err) == 0);
	for (int y = 0; y < H; y++)
		for (int x = 0; x < W; x++) {
			double g = vis_light_at(&l, x, y);

			if (g <= 0.0) {
				unknown++;
				for (int k = 0; k < 3; k++)
					skipped += im.px[3 * ((size_t)y * W + x) + k] !=
						   ref.px[3 * ((size_t)y * W + x) + k];
				continue;
			}
			for (int k = 0; k < 3; k++) {
				size_t i = 3 * ((size_t)y * W + x) + k;
				double v = meas_srgb_to_linear(ref.px[i] / 255.0) / (g * lamp[k]);
				int want = v >= 1.0 ? 255 : (int)lround(255.0 * meas_linear_to_srgb(
							   lround(v * ENC) / (double)ENC));
				int d = abs(want - (int)im.px[i]);

				worst = d > worst ? d : worst;
			}
		}
	CHECK_MSG(worst <= 1, "a pixel differs by %d codes from the map's definition", worst);
	CHECK_MSG(unknown > 0 && skipped == 0, "%d pixels where the map knows nothing, %d changed",
		  unknown, skipped);
	img_free(&im);
	img_free(&ref);
	free(l.gain);
}

/*
 * A loaded map keeps its per-pixel divisors: every frame it divides, with the
 * lamp's change too, comes out byte for byte as the map worked out per frame
 * (the same map without them) makes it.
 */
TEST(a_loaded_light_map_divides_every_frame_as_the_first)
{
	static const double lamp[3] = { 0.97, 1.0, 1.04 };
	struct bench *b = bench_open();
	struct vis_light per_frame;
	struct img a = { 0 }, c = { 0 };
	bl_err err = { 0 };
	size_t n, differ = 0;

	if (!b)
		return;
	CHECK_MSG(b->light.inv_gain != NULL, "the example machine's light map has no divisors");
	per_frame = b->light;
	per_frame.inv_gain = NULL;
	n = (size_t)b->sw.w * b->sw.h * 3;
	CHECK(img_alloc(&a, b->sw.w, b->sw.h, &err) == 0 && img_alloc(&c, b->sw.w, b->sw.h, &err) == 0);
	for (int round = 0; round < 2 && a.px && c.px; round++) {
		memcpy(a.px, b->sw.px, n);
		memcpy(c.px, b->sw.px, n);
		CHECK_MSG(vis_light_apply(&b->light, round ? lamp : NULL, &a, &err) == 0, "%s", err.msg);
		CHECK_MSG(vis_light_apply(&per_frame, round ? lamp : NULL, &c, &err) == 0, "%s", err.msg);
		for (size_t i = 0; i < n; i++)
			differ += a.px[i] != c.px[i];
	}
	CHECK_MSG(differ == 0, "%zu bytes differ from the map worked out per frame", differ);
	img_free(&a);
	img_free(&c);
	bench_close(b);
}

TEST_MAIN(T(station_regions_lie_inside_the_stations),
	  T(a_loaded_light_map_divides_every_frame_as_the_first),
	  T(the_light_map_divides_each_pixel_by_its_gain), T(the_light_map_brings_stations_to_the_truth),
	  T(a_station_outside_the_frame_is_refused), T(the_lamp_keeps_stations_true_through_a_night),
	  T(things_over_a_few_board_points_move_the_lamp_nothing),
	  T(the_lamp_refuses_what_it_cannot_follow))

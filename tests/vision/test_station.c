/* test_station.c: the table's stations in a frame and their colour measured there through the example machine's profile and light map, on simulator frames against its truth. */
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
	    (rc = vis_light_apply(&b->light, &bare, &err)) == 0)
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
	CHECK_MSG(vis_light_apply(&b->light, &lit, &err) == 0, "%s", err.msg);
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

TEST_MAIN(T(station_regions_lie_inside_the_stations), T(the_light_map_brings_stations_to_the_truth),
	  T(a_station_outside_the_frame_is_refused))

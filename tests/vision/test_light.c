/* test_light.c: the light across the table from the bare board, the lamp's drift, and stations measured with the light divided out, on simulator frames against its truth. */
#include "calib/calib.h"
#include "sim/sim.h"
#include "test.h"
#include "vision/light.h"

/* One simulated bench, the camera profile made from its chart, its geometry and light field. */
struct bench {
	struct machine m;
	clk clock;
	struct sim *s;
	struct calib_camera_result *cal;
	struct meas_profile *prof;
	struct vis_geometry g;
	struct vis_light light;
	struct img bare;
};

static void frame(struct bench *b, enum sim_scene scene, struct img *im)
{
	struct cam_frame f = { 0 };
	bl_err err = { 0 };

	if (sim_render(b->s, scene, &f, &err) ||
	    img_decode_frame(&f, b->m.camera.max_pixels, im, &err)) {
		fprintf(stderr, "sim frame: %s\n", err.msg);
		exit(1);
	}
	cam_frame_free(&f);
}

static struct bench *bench_open(uint64_t seed)
{
	static struct calib_chart chart;
	struct bench *b = calloc(1, sizeof(*b));
	struct sim_options o = { seed, 1, NULL };
	struct calib_camera_opts co = { 0 };
	struct vis_markers mk;
	struct img ch = { 0 };
	double px[2 * CALIB_MAX_PATCHES], xy[2 * CALIB_MAX_PATCHES];
	char path[4096];
	bl_err err = { 0 };
	const char *src = getenv("BRUSHLOOP_SRC");

	snprintf(path, sizeof(path), "%s/examples/machine-sim.json", src ? src : BL_SOURCE_ROOT);
	clk_virtual_init(&b->clock, 0);
	if (machine_load(path, &b->m, &err) || sim_open(&b->m, &o, &b->clock, &b->s, &err) ||
	    calib_chart_builtin("colorchecker24", &chart, &err)) {
		fprintf(stderr, "bench: %s\n", err.msg);
		exit(1);
	}
	frame(b, SIM_SCENE_CHART, &ch);
	frame(b, SIM_SCENE_CANVAS, &b->bare);
	co.chart = &chart;
	co.frame_name = "chart";
	co.model = -1;
	vis_markers_from_machine(&b->m, &mk);
	if (calib_camera_run(&ch, &co, &b->cal, &err) ||
	    meas_profile_open_mem(b->cal->icc, b->cal->icc_len, "chart profile", &b->prof, &err) ||
	    vis_locate(&b->bare, "bare", NULL, &mk, &b->g, &err) ||
	    vis_light_fit(&b->bare, "bare", &b->g, &b->m, &b->light, &err)) {
		fprintf(stderr, "bench: %s\n", err.msg);
		exit(1);
	}
	/* The light's reference: where the chart's patches lay when the profile was made. */
	for (int i = 0; i < b->cal->n; i++) {
		const struct meas_roi *r = &b->cal->view.roi[i];

		px[2 * i] = r->x + 0.5 * (r->w - 1);
		px[2 * i + 1] = r->y + 0.5 * (r->h - 1);
	}
	CHECK(vis_px_to_table(&b->g, &b->m, px, xy, b->cal->n, &err) == 0);
	CHECK(vis_light_reference(&b->light, xy, b->cal->n, &err) == 0);
	img_free(&ch);
	return b;
}

static void bench_close(struct bench *b)
{
	calib_camera_free(b->cal);
	meas_profile_close(b->prof);
	img_free(&b->bare);
	sim_close(b->s);
	free(b);
}

static const struct machine_station *station(const struct machine *m, const char *name)
{
	const struct machine_station *st = machine_find_well(m, name);

	return st ? st : machine_find_cell(m, name);
}

/*
 * The swatches scene's wells and test mixes, measured through the chart's
 * profile with and without the light field, against the truth of what each
 * holds: the wells, far from the lamp, read up to 6 L dark uncorrected; with
 * the field every station's lightness is within 1 L, the mean within 0.4.
 */
TEST(light_correction_brings_stations_to_the_truth)
{
	struct bench *b = bench_open(1);
	struct calib_truth_patch *tp = NULL;
	struct img sw = { 0 };
	cJSON *truth = NULL;
	bl_err err = { 0 };
	double mean_u = 0, mean_c = 0, worst_u = 0, worst_c = 0, de_u = 0, de_c = 0;
	int n = 0, tn = 0;

	frame(b, SIM_SCENE_SWATCHES, &sw);
	CHECK(sim_truth(b->s, SIM_SCENE_SWATCHES, &truth, &err) == 0);
	CHECK(calib_truth_parse(truth, "truth", &tp, &tn, NULL, &err) == 0);
	for (int i = 0; i < tn; i++) {
		const struct machine_station *st = station(&b->m, tp[i].name);
		struct vis_station_meas c, u;
		color_lab t = { tp[i].lab[0], tp[i].lab[1], tp[i].lab[2] };

		if (!st)
			continue;
		CHECK_MSG(vis_measure_station(&sw, "swatches", &b->g, &b->m, st, b->prof, &b->light,
					      &c, &err) == 0, "%s", err.msg);
		CHECK(vis_measure_station(&sw, "swatches", &b->g, &b->m, st, b->prof, NULL, &u,
					  &err) == 0);
		CHECK(u.light == 1.0 && c.light > 0.8 && c.light < 1.1);
		CHECK_NEAR(c.uncorrected.L, u.sw.lab.L, 1e-9);
		mean_u += fabs(u.sw.lab.L - t.L);
		mean_c += fabs(c.sw.lab.L - t.L);
		worst_u = fmax(worst_u, fabs(u.sw.lab.L - t.L));
		worst_c = fmax(worst_c, fabs(c.sw.lab.L - t.L));
		de_u += color_de00(&u.sw.lab, &t);
		de_c += color_de00(&c.sw.lab, &t);
		n++;
	}
	CHECK(n == 25);
	mean_u /= n;
	mean_c /= n;
	printf("%d stations: |dL| mean %.2f worst %.2f uncorrected, mean %.2f worst %.2f with the "
	       "light field; CIEDE2000 mean %.2f -> %.2f\n",
	       n, mean_u, worst_u, mean_c, worst_c, de_u / n, de_c / n);
	CHECK(worst_u > 3.0);
	CHECK(mean_c < 0.4 && mean_c < mean_u / 3.0);
	CHECK(worst_c < 1.0);
	CHECK(de_c < de_u);
	free(tp);
	cJSON_Delete(truth);
	img_free(&sw);
	bench_close(b);
}

/* The board in a later frame says how much the lamp dimmed (sim.light.drift_per_h). */
TEST(the_lamp_drift_is_measured_on_the_board)
{
	struct bench *b = bench_open(2);
	struct img im = { 0 };
	bl_err err = { 0 };
	double r0, r3;

	frame(b, SIM_SCENE_CANVAS, &im);
	CHECK(vis_light_lamp(&b->light, &im, "now", &b->g, &b->m, &r0, &err) == 0);
	img_free(&im);
	clk_advance(&b->clock, 3 * 3600LL * 1000000000LL);
	frame(b, SIM_SCENE_CANVAS, &im);
	CHECK(vis_light_lamp(&b->light, &im, "3 h later", &b->g, &b->m, &r3, &err) == 0);
	printf("lamp %.4f at once, %.4f after 3 h (the light drifts %+.3f per hour)\n", r0, r3,
	       b->m.sim.drift_intensity_per_h);
	CHECK_NEAR(r0, 1.0, 0.002);
	CHECK_NEAR(r3, 1.0 + 3.0 * b->m.sim.drift_intensity_per_h, 0.003);
	CHECK(b->light.n_used > 1000 && b->light.rms < 0.01 && b->light.canvas_ratio > 1.5);
	img_free(&im);
	bench_close(b);
}

/* Each station's region lies inside the part of it the simulator's truth says is uniform. */
TEST(station_regions_lie_inside_the_stations)
{
	struct bench *b = bench_open(1);
	struct calib_truth_patch *tp = NULL;
	struct img sw = { 0 };
	cJSON *truth = NULL;
	bl_err err = { 0 };
	int tn = 0, n = 0;

	frame(b, SIM_SCENE_SWATCHES, &sw);
	CHECK(sim_truth(b->s, SIM_SCENE_SWATCHES, &truth, &err) == 0);
	CHECK(calib_truth_parse(truth, "truth", &tp, &tn, NULL, &err) == 0);
	for (int i = 0; i < tn; i++) {
		const struct machine_station *st = station(&b->m, tp[i].name);
		const struct meas_roi *t = &tp[i].roi;
		struct meas_roi r;
		double cx, cy, px[2], back[2];

		if (!st)
			continue;
		CHECK(vis_station_roi(&b->g, &b->m, st, &r, &err) == 0);
		cx = r.x + 0.5 * r.w;
		cy = r.y + 0.5 * r.h;
		CHECK_MSG(cx >= t->x && cx <= t->x + t->w && cy >= t->y && cy <= t->y + t->h,
			  "%s: region centre (%.1f, %.1f) outside the truth's (%d, %d, %d, %d)",
			  tp[i].name, cx, cy, t->x, t->y, t->w, t->h);
		CHECK(r.w >= 4 && r.w == r.h);
		CHECK(vis_table_to_px(&b->g, &b->m, st->center_mm, px, 1, &err) == 0);
		CHECK(vis_px_to_table(&b->g, &b->m, px, back, 1, &err) == 0);
		CHECK_NEAR(back[0], st->center_mm[0], 1e-6);
		CHECK_NEAR(back[1], st->center_mm[1], 1e-6);
		n++;
	}
	CHECK(n == 25);
	free(tp);
	cJSON_Delete(truth);
	img_free(&sw);
	bench_close(b);
}

/* A frame that shows no board (the lens capped) is refused, naming the frame. */
TEST(a_frame_without_board_is_refused)
{
	struct bench *b = bench_open(1);
	struct vis_light *l = malloc(sizeof(*l));
	struct img dark = { 0 };
	bl_err err = { 0 };
	double r;

	CHECK(img_alloc(&dark, b->bare.w, b->bare.h, &err) == 0);
	memset(dark.px, 0, (size_t)dark.w * dark.h * 3);
	CHECK(vis_light_fit(&dark, "the capped frame", &b->g, &b->m, l, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "the capped frame");
	CHECK_STR_CONTAINS(err.msg, "bare board");
	CHECK(vis_light_lamp(&b->light, &dark, "the capped frame", &b->g, &b->m, &r, &err) ==
	      BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "the capped frame");
	free(l);
	img_free(&dark);
	bench_close(b);
}

TEST_MAIN(T(light_correction_brings_stations_to_the_truth), T(the_lamp_drift_is_measured_on_the_board),
	  T(station_regions_lie_inside_the_stations), T(a_frame_without_board_is_refused))

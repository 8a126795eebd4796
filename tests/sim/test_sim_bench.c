/* test_sim_bench.c: the simulator's mixing bench without the arm (mix trial's world): dispensing, stirring, cleaning and emptying cells, the clock, and what a thin layer in a cell shows. */
#include "color/color.h"
#include "sim/sim.h"
#include "test.h"

struct bench {
	struct machine m;
	clk clock;
	struct sim *s;
};

static struct bench *bench_open(uint64_t seed)
{
	struct bench *b = calloc(1, sizeof(*b));
	struct sim_options o = { seed, 1, NULL };
	char path[4096];
	bl_err err = { 0 };
	const char *src = getenv("BRUSHLOOP_SRC");

	snprintf(path, sizeof(path), "%s/examples/machine-sim.json", src ? src : BL_SOURCE_ROOT);
	clk_virtual_init(&b->clock, 0);
	if (!b || machine_load(path, &b->m, &err) || sim_open(&b->m, &o, &b->clock, &b->s, &err)) {
		fprintf(stderr, "bench: %s\n", err.msg);
		exit(1);
	}
	return b;
}

static void bench_close(struct bench *b)
{
	sim_close(b->s);
	free(b);
}

/*
 * Units land in the cell as the arm's dispenser lands them (each off by
 * sim.dispense_sd, the spatula keeping a little), the clock moves on as the
 * arm would take, the arm stays parked, and clearing empties the cell.
 */
TEST(the_bench_dispenses_like_the_arm)
{
	struct bench *b = bench_open(1);
	struct sim_stats st0, st1;
	bl_err err = { 0 };
	double well0 = sim_station_ml(b->s, "w2"), lab[3];

	sim_get_stats(b->s, &st0);
	CHECK(sim_bench_dispense(b->s, "w2", "m4", 10, &err) == 0);
	CHECK(sim_bench_stir(b->s, "m4", b->m.mixing.stir_ms, &err) == 0);
	CHECK(sim_bench_clean(b->s, 3000, &err) == 0);
	sim_get_stats(b->s, &st1);
	printf("10 units: %.3f ml in the cell, %.3f ml from the well, %.1f s\n",
	       sim_station_ml(b->s, "m4"), well0 - sim_station_ml(b->s, "w2"),
	       st1.time_s - st0.time_s);
	CHECK_NEAR(sim_station_ml(b->s, "m4"), 1.0, 0.1);
	CHECK_NEAR(well0 - sim_station_ml(b->s, "w2"), 1.0, 0.1);
	/* A unit a trip from the park pose, the stirring, the wash: seconds, not nothing. */
	CHECK(st1.time_s - st0.time_s > 10.0 + b->m.mixing.stir_ms / 1000.0);
	CHECK(st1.arm_time_s == st0.arm_time_s);
	CHECK(sim_station_lab(b->s, "m4", lab, &err) == 0);
	CHECK(sim_bench_clear(b->s, "m4", &err) == 0);
	CHECK(sim_station_ml(b->s, "m4") == 0.0);
	CHECK(sim_station_lab(b->s, "m4", lab, &err) != 0);
	bench_close(b);
}

/* Unknown stations and absurd amounts are refused, naming them; the world is untouched. */
TEST(the_bench_refuses_bad_requests)
{
	struct bench *b = bench_open(1);
	bl_err err = { 0 };

	CHECK(sim_bench_dispense(b->s, "w99", "m1", 1, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "w99");
	CHECK(sim_bench_dispense(b->s, "w1", "m99", 1, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "m99");
	CHECK(sim_bench_dispense(b->s, "w1", "m1", 0, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "units");
	CHECK(sim_bench_stir(b->s, "m1", -5, &err) == BL_EINVAL);
	CHECK(sim_bench_clear(b->s, "w1", &err) == BL_EINVAL);
	CHECK(sim_bench_clean(b->s, 0, &err) == BL_EINVAL);
	CHECK(sim_station_ml(b->s, "m1") == 0.0);
	bench_close(b);
}

/* The Lab of the cell as it lies (its truth in the swatches scene), or -1 when not listed. */
static int as_seen(struct bench *b, const char *cell, color_lab *out)
{
	struct cam_frame f = { 0 };
	cJSON *t = NULL, *it;
	bl_err err = { 0 };
	int rc = -1;

	if (sim_render(b->s, SIM_SCENE_SWATCHES, &f, &err) ||
	    sim_truth(b->s, SIM_SCENE_SWATCHES, &t, &err))
		return -1;
	cam_frame_free(&f);
	cJSON_ArrayForEach(it, cJSON_GetObjectItem(t, "patches")) {
		cJSON *lab = cJSON_GetObjectItem(it, "lab");

		if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(it, "name")), cell) != 0)
			continue;
		out->L = cJSON_GetArrayItem(lab, 0)->valuedouble;
		out->a = cJSON_GetArrayItem(lab, 1)->valuedouble;
		out->b = cJSON_GetArrayItem(lab, 2)->valuedouble;
		rc = 0;
	}
	cJSON_Delete(t);
	return rc;
}

/*
 * A cell shows its paint as a layer as deep as its volume over its white
 * floor: a transparent paint at the machine's least volume (0.5 ml) reads
 * lighter than the paint itself, a thick one does not. This is why a
 * camera's verdict on a thin cell is about the layer, not the paint
 * (docs/mixing.md, the trial on the simulator).
 */
TEST(bench_thin_layers_show_the_floor)
{
	static const int units[] = { 5, 10, 15, 30 };
	struct bench *b = bench_open(1);
	bl_err err = { 0 };
	double warm[4] = { 0 }, worst15 = 0.0;

	for (int w = 0; w < 13; w++) {
		const char *well = b->m.wells[w].name;

		printf("%-4s", well);
		for (int k = 0; k < 4; k++) {
			double paint[3];
			color_lab seen, pl;
			double de;

			CHECK(sim_bench_clear(b->s, "m1", &err) == 0);
			CHECK(sim_bench_dispense(b->s, well, "m1", units[k], &err) == 0);
			CHECK(sim_bench_stir(b->s, "m1", 20000, &err) == 0);
			CHECK(sim_bench_clean(b->s, 3000, &err) == 0);
			CHECK(sim_station_lab(b->s, "m1", paint, &err) == 0);
			CHECK(as_seen(b, "m1", &seen) == 0);
			pl = (color_lab){ paint[0], paint[1], paint[2] };
			de = color_de00(&seen, &pl);
			printf("  %2d units %5.2f", units[k], de);
			if (strcmp(b->m.sim.paint_name[w], "warm yellow") == 0)
				warm[k] = de;
			if (units[k] >= 15)
				worst15 = fmax(worst15, de);
		}
		printf("\n");
	}
	CHECK(warm[0] > 2.0 && warm[0] > warm[1] && warm[1] > warm[2] && warm[3] < 0.2);
	CHECK(worst15 < 1.0);
	bench_close(b);
}

TEST_MAIN(T(the_bench_dispenses_like_the_arm), T(the_bench_refuses_bad_requests),
	  T(bench_thin_layers_show_the_floor))

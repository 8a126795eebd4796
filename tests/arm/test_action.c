/* test_action.c: typed actions: JSON round trips, every rejection of malformed input, and the motion each kind expands into. */
#include <math.h>

#include "arm/action.h"
#include "base/json.h"
#include "config/machine.h"
#include "test.h"

static const struct machine *machine(void)
{
	static struct machine m;
	static int loaded;
	char path[4096];
	bl_err err;

	if (!loaded) {
		snprintf(path, sizeof(path), "%s/examples/machine-sim.json",
			 getenv("BRUSHLOOP_SRC") ? getenv("BRUSHLOOP_SRC") : ".");
		if (machine_load(path, &m, &err)) {
			fprintf(stderr, "%s\n", err.msg);
			exit(1);
		}
		loaded = 1;
	}
	return &m;
}

/* Parses one action from JSON text; returns the parse status and fills err. */
static int parse(const char *text, struct arm_action *a, bl_err *err)
{
	cJSON *doc = NULL;
	int rc = json_parse_text(text, "test", &doc, err);

	if (rc == 0)
		rc = arm_action_parse(doc, "test.json", 3, a, err);
	cJSON_Delete(doc);
	return rc;
}

static const char *const samples[] = {
	"{\"type\": \"home\", \"id\": 1, \"speed_mm_s\": 150}",
	"{\"type\": \"move\", \"speed_mm_s\": 150, \"zones\": [\"travel\"], \"to_mm\": [300, 150, 40], "
	"\"override_limits\": true}",
	"{\"type\": \"jog\", \"speed_mm_s\": 20, \"zones\": [\"travel\"], \"delta_mm\": [5, -5, 0.25]}",
	"{\"type\": \"stroke\", \"id\": 9, \"speed_mm_s\": 80, \"brush\": \"round-6\", "
	"\"bounds_mm\": {\"min\": [290, 140, -1], \"max\": [400, 220, 30]}, "
	"\"points_mm\": [[300, 150, -0.5], [380, 150, -0.5], [380, 210, -0.5]]}",
	"{\"type\": \"dip\", \"speed_mm_s\": 100, \"brush\": \"round-6\", \"well\": \"w11\", "
	"\"depth_mm\": 3}",
	"{\"type\": \"dispense\", \"speed_mm_s\": 150, \"well\": \"w1\", \"cell\": \"m1\", \"units\": 6}",
	"{\"type\": \"stir\", \"speed_mm_s\": 40, \"cell\": \"m1\", \"depth_mm\": 3, \"ms\": 4000}",
	"{\"type\": \"wipe\", \"speed_mm_s\": 100, \"zones\": [\"travel\", \"wipe\"]}",
	"{\"type\": \"wash\", \"speed_mm_s\": 100, \"ms\": 3000}",
	"{\"type\": \"park\", \"id\": 15, \"speed_mm_s\": 150}",
};

#define N_SAMPLES (sizeof(samples) / sizeof(samples[0]))

TEST(every_kind_round_trips_through_json)
{
	for (size_t i = 0; i < N_SAMPLES; i++) {
		struct arm_action a, b;
		bl_err err;
		char *t1, *t2;
		cJSON *j1, *j2;

		CHECK_MSG(parse(samples[i], &a, &err) == 0, "sample %zu: %s", i, err.msg);
		j1 = arm_action_to_json(&a);
		t1 = cJSON_PrintUnformatted(j1);
		CHECK_MSG(parse(t1, &b, &err) == 0, "printed sample %zu: %s", i, err.msg);
		j2 = arm_action_to_json(&b);
		t2 = cJSON_PrintUnformatted(j2);
		CHECK_MSG(strcmp(t1, t2) == 0, "%s != %s", t1, t2);
		CHECK(a.kind == b.kind && a.id == b.id && a.zones == b.zones);
		CHECK(a.speed_mm_s == b.speed_mm_s && a.n_points == b.n_points);
		for (size_t k = 0; k < a.n_points; k++)
			CHECK(a.points[k].x == b.points[k].x && a.points[k].y == b.points[k].y &&
			      a.points[k].z == b.points[k].z);
		CHECK(strcmp(a.brush, b.brush) == 0 && strcmp(a.well, b.well) == 0 &&
		      strcmp(a.cell, b.cell) == 0);
		CHECK(a.units == b.units && a.duration_ms == b.duration_ms &&
		      a.depth_mm == b.depth_mm && a.override_limits == b.override_limits);
		CHECK(a.has_bounds == b.has_bounds && a.target.x == b.target.x &&
		      a.target.z == b.target.z);
		cJSON_free(t1);
		cJSON_free(t2);
		cJSON_Delete(j1);
		cJSON_Delete(j2);
		arm_action_release(&a);
		arm_action_release(&b);
	}
}

TEST(fields_are_read_as_written)
{
	struct arm_action a;
	bl_err err;

	CHECK(parse(samples[3], &a, &err) == 0);
	CHECK(a.kind == ARM_STROKE && a.id == 9 && a.n_points == 3);
	CHECK_NEAR(a.points[2].y, 210.0, 0);
	CHECK(a.has_bounds && a.bounds_max.x == 400.0);
	CHECK(a.zones == ((1u << ARM_ZONE_TRAVEL) | (1u << ARM_ZONE_CANVAS)));
	arm_action_release(&a);
	CHECK(parse(samples[2], &a, &err) == 0);
	CHECK(a.kind == ARM_JOG && a.target.y == -5.0 && a.target.z == 0.25 && a.id == -1);
	arm_action_release(&a);
}

/* Each bad input must fail with a message naming the field, and own nothing after. */
static void expect_bad(const char *text, const char *needle)
{
	struct arm_action a;
	bl_err err = { 0 };
	int rc = parse(text, &a, &err);

	CHECK_MSG(rc == BL_EINVAL, "accepted: %s", text);
	CHECK_STR_CONTAINS(err.msg, needle);
	CHECK_STR_CONTAINS(err.msg, "actions[3]");
	CHECK(a.points == NULL && a.n_points == 0);
}

TEST(non_finite_numbers_are_refused)
{
	expect_bad("{\"type\": \"home\", \"speed_mm_s\": 1e999}", "speed_mm_s");
	expect_bad("{\"type\": \"home\", \"speed_mm_s\": 1e999}", "finite");
	expect_bad("{\"type\": \"move\", \"speed_mm_s\": 5, \"zones\": [\"travel\"], "
		   "\"to_mm\": [1, -1e999, 0]}", "to_mm[1]");
	expect_bad("{\"type\": \"stroke\", \"speed_mm_s\": 5, \"brush\": \"b\", "
		   "\"points_mm\": [[0, 0, 0], [1e999, 0, 0]]}", "points_mm[1][0]");
	expect_bad("{\"type\": \"dip\", \"speed_mm_s\": 5, \"brush\": \"b\", \"well\": \"w\", "
		   "\"depth_mm\": -1e999}", "depth_mm");
}

TEST(unknown_kinds_and_fields_are_refused)
{
	expect_bad("{\"type\": \"paint\", \"speed_mm_s\": 5}", "type");
	expect_bad("{\"type\": \"paint\", \"speed_mm_s\": 5}", "'paint' is not one of");
	expect_bad("{\"speed_mm_s\": 5}", "type");
	expect_bad("{\"type\": \"home\", \"speed_mm_s\": 5, \"colour\": \"red\"}", "colour");
	/* A field of another kind is unknown to this one. */
	expect_bad("{\"type\": \"home\", \"speed_mm_s\": 5, \"brush\": \"round-2\"}", "brush");
	expect_bad("{\"type\": \"move\", \"speed_mm_s\": 5, \"to_mm\": [0, 0, 0]}", "zones");
	expect_bad("{\"type\": \"wash\", \"speed_mm_s\": 5, \"zones\": [\"sky\"], \"ms\": 3}",
		   "zones[0]");
	expect_bad("{\"type\": \"wash\", \"speed_mm_s\": 0, \"ms\": 3}", "must be at least 0.1 mm/s");
	/* 1e-300 mm/s would "move" for 1e302 s. */
	expect_bad("{\"type\": \"wash\", \"speed_mm_s\": 1e-300, \"ms\": 3}", "must be at least 0.1 mm/s, not 1e-300");
	expect_bad("{\"type\": \"dispense\", \"speed_mm_s\": 5, \"well\": \"w1\", \"cell\": \"m1\", "
		   "\"units\": 0}", "units");
	expect_bad("{\"type\": \"stroke\", \"speed_mm_s\": 5, \"brush\": \"b\", "
		   "\"points_mm\": [[0, 0, 0]]}", "at least 2");
	expect_bad("{\"type\": \"stroke\", \"speed_mm_s\": 5, \"brush\": \"b\", "
		   "\"points_mm\": [[0, 0], [1, 1]]}", "[x, y, z]");
	expect_bad("{\"type\": \"jog\", \"speed_mm_s\": 5, \"zones\": [\"travel\"], "
		   "\"delta_mm\": [0, 0, 0], \"bounds_mm\": {\"min\": [1, 1, 1], \"max\": [0, 2, 2]}}",
		   "below min");
	expect_bad("[1, 2]", "actions[3]");
}

TEST(a_million_point_stroke_is_refused_before_storing_it)
{
	cJSON *o = cJSON_CreateObject(), *pts;
	struct arm_action a;
	bl_err err = { 0 };
	int rc;

	cJSON_AddStringToObject(o, "type", "stroke");
	cJSON_AddNumberToObject(o, "speed_mm_s", 10);
	cJSON_AddStringToObject(o, "brush", "round-2");
	pts = cJSON_AddArrayToObject(o, "points_mm");
	/* Cheap elements: the count alone must refuse it, before any point is read or stored. */
	for (int i = 0; i < 1000000; i++)
		cJSON_AddItemToArray(pts, cJSON_CreateArray());
	rc = arm_action_parse(o, "big.json", 0, &a, &err);
	CHECK(rc == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "points_mm");
	CHECK_STR_CONTAINS(err.msg, "more than 100000");
	CHECK(a.points == NULL && a.n_points == 0);
	cJSON_Delete(o);
}

TEST(actions_file_loads_and_refuses_half_valid_files)
{
	struct arm_action_list l;
	bl_err err = { 0 };
	char path[4096];
	const char *bad;

	snprintf(path, sizeof(path), "%s/examples/actions/every-kind.json",
		 getenv("BRUSHLOOP_SRC") ? getenv("BRUSHLOOP_SRC") : ".");
	CHECK_MSG(arm_actions_load(path, &l, &err) == 0, "%s", err.msg);
	CHECK(l.n == 16);
	{
		int seen[ARM_KIND_COUNT] = { 0 }, all = 1;

		for (size_t i = 0; i < l.n; i++)
			seen[l.items[i].kind] = 1;
		for (int k = 0; k < ARM_KIND_COUNT; k++)
			all &= seen[k];
		CHECK_MSG(all, "the example does not exercise every kind");
	}
	arm_actions_free(&l);

	bad = test_write_file("half.json",
			      "{\"kind\": \"actions\", \"version\": 1, \"actions\": ["
			      "{\"type\": \"home\", \"speed_mm_s\": 100},"
			      "{\"type\": \"wash\", \"speed_mm_s\": 100, \"ms\": 1e999}]}");
	CHECK(arm_actions_load(bad, &l, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "actions[1].ms");
	CHECK(l.n == 0 && l.items == NULL);
	bad = test_write_file("v2.json", "{\"kind\": \"actions\", \"version\": 2, \"actions\": []}");
	CHECK(arm_actions_load(bad, &l, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "version");
	bad = test_write_file("kind.json", "{\"kind\": \"machine\", \"version\": 1, \"actions\": []}");
	CHECK(arm_actions_load(bad, &l, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "expected 'actions'");
}

/* ---- motion ---- */

static struct arm_path expand(const char *text, arm_point from)
{
	struct arm_action a;
	struct arm_path p = { 0 };
	bl_err err;

	if (parse(text, &a, &err) || arm_motion(machine(), &from, &a, &p, &err)) {
		fprintf(stderr, "expand %s: %s\n", text, err.msg);
		exit(1);
	}
	arm_action_release(&a);
	return p;
}

static int at(const arm_point *p, double x, double y, double z)
{
	return fabs(p->x - x) < 1e-9 && fabs(p->y - y) < 1e-9 && fabs(p->z - z) < 1e-9;
}

/* Every path is continuous from where the tool was. */
static void check_continuous(const struct arm_path *p, arm_point from)
{
	for (size_t i = 0; i < p->n; i++) {
		const arm_point *prev = i ? &p->seg[i - 1].to : &from;

		CHECK(at(&p->seg[i].from, prev->x, prev->y, prev->z));
	}
}

TEST(home_park_move_and_jog_expand)
{
	const struct machine *m = machine();
	arm_point park = { m->park_mm[0], m->park_mm[1], m->park_mm[2] };
	arm_point low = { 300, 150, -0.5 };
	struct arm_path p;

	/* From the park pose (above travel height): across, then down to home. */
	p = expand(samples[0], park);
	CHECK(p.n == 2);
	CHECK(at(&p.seg[0].to, 10, 10, 120) && at(&p.seg[1].to, 10, 10, 100));
	CHECK(p.seg[0].zone == ARM_ZONE_TRAVEL && p.seg[0].speed_mm_s == 150.0);
	check_continuous(&p, park);
	arm_path_free(&p);

	/* From low on the canvas: up to travel height first. */
	p = expand(samples[9], low);
	CHECK(p.n == 3);
	CHECK(at(&p.seg[0].to, 300, 150, m->travel_z_mm));
	CHECK(at(&p.seg[2].to, m->park_mm[0], m->park_mm[1], m->park_mm[2]));
	check_continuous(&p, low);
	arm_path_free(&p);

	p = expand(samples[1], park);
	CHECK(p.n == 1 && at(&p.seg[0].to, 300, 150, 40) && p.seg[0].flags == 0);
	arm_path_free(&p);
	p = expand(samples[2], low);
	CHECK(p.n == 1 && at(&p.seg[0].to, 305, 145, -0.25));
	arm_path_free(&p);
}

TEST(stroke_expands_to_approach_paint_and_lift)
{
	const struct machine *m = machine();
	arm_point from = { 100, 100, 50 };
	struct arm_path p = expand(samples[3], from);
	int painting = 0;

	check_continuous(&p, from);
	/* Across at its height, down to the first point, two painting segments, lift. */
	CHECK(p.n == 5);
	CHECK(at(&p.seg[0].to, 300, 150, 50));
	CHECK(at(&p.seg[1].to, 300, 150, -0.5) && p.seg[1].zone == ARM_ZONE_CANVAS);
	CHECK(!(p.seg[1].flags & ARM_SEG_PAINTS));
	for (size_t i = 0; i < p.n; i++)
		painting += (p.seg[i].flags & ARM_SEG_PAINTS) != 0;
	CHECK(painting == 2);
	CHECK(at(&p.seg[3].to, 380, 210, -0.5) && (p.seg[3].flags & ARM_SEG_PAINTS));
	CHECK(at(&p.seg[4].to, 380, 210, m->travel_z_mm) && p.seg[4].zone == ARM_ZONE_TRAVEL);
	CHECK(p.seg[2].speed_mm_s == 80.0);
	arm_path_free(&p);
}

TEST(dip_and_dispense_expand_with_load_and_deposit_marks)
{
	const struct machine *m = machine();
	const struct machine_station *w11 = machine_find_well(m, "w11");
	const struct machine_station *w1 = machine_find_well(m, "w1");
	const struct machine_station *m1 = machine_find_cell(m, "m1");
	arm_point from = { 300, 200, 30 };
	struct arm_path p = expand(samples[4], from);
	int loads = 0, deposits = 0;

	check_continuous(&p, from);
	CHECK(p.n == 3);
	CHECK(at(&p.seg[1].to, w11->center_mm[0], w11->center_mm[1], w11->surface_z_mm - 3.0));
	CHECK(p.seg[1].flags == ARM_SEG_LOADS && p.seg[1].zone == ARM_ZONE_WELL);
	CHECK(p.seg[2].to.z == m->travel_z_mm);
	arm_path_free(&p);

	p = expand(samples[5], from);
	check_continuous(&p, from);
	for (size_t i = 0; i < p.n; i++) {
		if (p.seg[i].flags & ARM_SEG_LOADS) {
			loads++;
			CHECK(at(&p.seg[i].to, w1->center_mm[0], w1->center_mm[1],
				 w1->surface_z_mm - w1->depth_mm));
		}
		if (p.seg[i].flags & ARM_SEG_DEPOSITS) {
			deposits++;
			CHECK(at(&p.seg[i].to, m1->center_mm[0], m1->center_mm[1],
				 m1->surface_z_mm - m1->depth_mm));
			CHECK(p.seg[i].zone == ARM_ZONE_CELL);
		}
	}
	CHECK(loads == 6 && deposits == 6);
	CHECK(p.seg[p.n - 1].to.z == m->travel_z_mm);
	arm_path_free(&p);
}

TEST(stir_wipe_and_wash_expand_in_their_stations)
{
	const struct machine *m = machine();
	const struct machine_station *m1 = machine_find_cell(m, "m1");
	arm_point from = { 300, 200, 30 };
	struct arm_path p = expand(samples[6], from);
	double r = m1->radius_mm * 0.5;
	int loops = (int)ceil(40.0 * 4.0 / (2.0 * M_PI * r)), in_cell = 0;

	check_continuous(&p, from);
	for (size_t i = 0; i < p.n; i++) {
		double dx = p.seg[i].to.x - m1->center_mm[0], dy = p.seg[i].to.y - m1->center_mm[1];

		if (p.seg[i].zone != ARM_ZONE_CELL)
			continue;
		in_cell++;
		CHECK(sqrt(dx * dx + dy * dy) <= r + 1e-9);
		CHECK(fabs(p.seg[i].to.z - (m1->surface_z_mm - 3.0)) < 1e-9);
	}
	/* Down, out to the circle, 16 chords a loop, back to the centre. */
	CHECK_MSG(in_cell == 1 + 1 + 16 * loops + 1, "%d segments in the cell, %d loops", in_cell,
		  loops);
	arm_path_free(&p);

	p = expand(samples[7], from);
	check_continuous(&p, from);
	CHECK(p.n == 4);
	CHECK(at(&p.seg[2].from, m->wipe.center_mm[0] - 0.6 * m->wipe.radius_mm,
		 m->wipe.center_mm[1], m->wipe.surface_z_mm - m->wipe.depth_mm));
	CHECK(at(&p.seg[2].to, m->wipe.center_mm[0] + 0.6 * m->wipe.radius_mm,
		 m->wipe.center_mm[1], m->wipe.surface_z_mm - m->wipe.depth_mm));
	CHECK(p.seg[2].zone == ARM_ZONE_WIPE);
	arm_path_free(&p);

	p = expand(samples[8], from);
	check_continuous(&p, from);
	{
		int water = 0;

		for (size_t i = 0; i < p.n; i++)
			water += p.seg[i].zone == ARM_ZONE_WATER;
		CHECK(water > 16);
		CHECK(p.seg[p.n - 1].to.z == m->travel_z_mm);
	}
	arm_path_free(&p);
}

TEST(motion_refuses_what_the_machine_lacks)
{
	struct arm_action a;
	struct arm_path p = { 0 };
	arm_point from = { 0, 0, 30 };
	bl_err err = { 0 };

	CHECK(parse("{\"type\": \"dip\", \"speed_mm_s\": 5, \"brush\": \"round-6\", \"well\": "
		    "\"w99\", \"depth_mm\": 2}", &a, &err) == 0);
	CHECK(arm_motion(machine(), &from, &a, &p, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "well 'w99'");
	CHECK(parse("{\"type\": \"stroke\", \"speed_mm_s\": 5, \"brush\": \"fan-40\", "
		    "\"points_mm\": [[300, 150, 0], [310, 150, 0]]}", &a, &err) == 0);
	CHECK(arm_motion(machine(), &from, &a, &p, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "brush 'fan-40'");
	arm_action_release(&a);
	CHECK(parse("{\"type\": \"stir\", \"speed_mm_s\": 5, \"cell\": \"m0\", \"depth_mm\": 1, "
		    "\"ms\": 10}", &a, &err) == 0);
	CHECK(arm_motion(machine(), &from, &a, &p, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "mixing cell 'm0'");
	arm_path_free(&p);
}

TEST(trapezoid_timing)
{
	/* Long enough to cruise: ramps of v/a each way plus the cruise. */
	CHECK_NEAR(arm_move_time_s(100.0, 50.0, 500.0), 100.0 / 50.0 + 50.0 / 500.0, 1e-12);
	/* Too short to reach speed: a triangle, 2 sqrt(L/a). */
	CHECK_NEAR(arm_move_time_s(1.0, 50.0, 500.0), 2.0 * sqrt(1.0 / 500.0), 1e-12);
	/* The two meet at L = v^2/a. */
	CHECK_NEAR(arm_move_time_s(5.0, 50.0, 500.0), 2.0 * sqrt(5.0 / 500.0), 1e-12);
	CHECK(arm_move_time_s(0.0, 50.0, 500.0) == 0.0);
	CHECK(arm_move_time_s(10.0, 0.0, 500.0) == 0.0);
}

TEST_MAIN(T(every_kind_round_trips_through_json), T(fields_are_read_as_written),
	  T(non_finite_numbers_are_refused), T(unknown_kinds_and_fields_are_refused),
	  T(a_million_point_stroke_is_refused_before_storing_it),
	  T(actions_file_loads_and_refuses_half_valid_files), T(home_park_move_and_jog_expand),
	  T(stroke_expands_to_approach_paint_and_lift),
	  T(dip_and_dispense_expand_with_load_and_deposit_marks),
	  T(stir_wipe_and_wash_expand_in_their_stations), T(motion_refuses_what_the_machine_lacks),
	  T(trapezoid_timing))

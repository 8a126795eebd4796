/* test_gate.c: the gate's rules one by one: zones from geometry, floors, limits, acceleration, decisions as JSON, tolerances, grants' syntax, the preview picture. */
#include <png.h>

#include "safety/gate.h"
#include "safety/operator.h"
#include "safety_test.h"

static struct arm_action mv(double x, double y, double z, double speed, unsigned zones)
{
	struct arm_action a;

	memset(&a, 0, sizeof(a));
	a.kind = ARM_MOVE;
	a.id = -1;
	a.speed_mm_s = speed;
	a.zones = zones;
	a.target = (arm_point){ x, y, z };
	return a;
}

#define ZT (1u << ARM_ZONE_TRAVEL)
#define ZC (1u << ARM_ZONE_CANVAS)

static struct gate_decision check(const struct arm_action *a, arm_point from)
{
	struct gate_decision d;
	bl_err err = { 0 };

	CHECK(gate_check(test_machine(), &from, a, NULL, NULL, &d, &err) == 0);
	return d;
}

static const char *reason(const struct gate_decision *d)
{
	const struct gate_finding *f = gate_decision_primary(d);

	return f ? gate_reason_names[f->reason] : "ok";
}

static int has(const struct gate_decision *d, enum gate_reason r)
{
	for (int i = 0; i < d->n_findings; i++)
		if (d->findings[i].reason == r)
			return 1;
	return 0;
}

TEST(travel_over_canvas_does_not_enter_it)
{
	struct arm_action a = mv(400, 250, 40, 100, ZT);
	struct gate_decision d = check(&a, (arm_point){ 300, 200, 50 });

	CHECK(d.verdict == GATE_ALLOW);
	CHECK(d.zones_entered == ZT);
	CHECK(d.n_segments == 1);
}

TEST(going_down_over_canvas_enters_it)
{
	struct arm_action a = mv(400, 250, 0, 100, ZT | ZC);
	struct gate_decision d = check(&a, (arm_point){ 400, 250, 50 });

	CHECK(d.verdict == GATE_ALLOW);
	CHECK(d.zones_entered == (ZT | ZC));
	/* Declared tags are claims: the same move declaring only travel is denied. */
	a.zones = ZT;
	d = check(&a, (arm_point){ 400, 250, 50 });
	CHECK(d.verdict == GATE_DENY);
	CHECK_STR_CONTAINS(reason(&d), "undeclared_zone");
	CHECK_STR_CONTAINS(d.findings[0].message, "canvas");
}

TEST(floor_is_that_of_the_zone_under_the_tool)
{
	const struct machine *m = test_machine();
	/* Exactly on the canvas floor is allowed; a hair below is not. */
	struct arm_action a = mv(400, 250, m->limits.z_floor.canvas_mm, 50, ZT | ZC);
	struct gate_decision d = check(&a, (arm_point){ 400, 250, 20 });

	CHECK(d.verdict == GATE_ALLOW);
	a.target.z -= 0.01;
	d = check(&a, (arm_point){ 400, 250, 20 });
	CHECK(d.verdict == GATE_DENY && has(&d, GATE_R_BELOW_FLOOR));
	/* A diagonal that starts over the canvas and ends in the air outside it dips below the travel floor between. */
	a = mv(240, 250, 12, 50, ZT | ZC);
	d = check(&a, (arm_point){ 270, 250, 0 });
	CHECK(d.verdict == GATE_DENY && has(&d, GATE_R_BELOW_FLOOR));
	CHECK_STR_CONTAINS(d.findings[0].message, "outside every zone");
}

TEST(segment_crossing_keep_out_is_denied_though_its_ends_are_outside)
{
	struct arm_action a = mv(680, 45, 50, 100, ZT);
	struct gate_decision d = check(&a, (arm_point){ 640, 10, 50 });

	CHECK(d.verdict == GATE_DENY);
	CHECK_STR_CONTAINS(reason(&d), "keep_out");
	CHECK_STR_CONTAINS(d.findings[0].message, "camera-mast");
	/* Beside the box, not through it. */
	a = mv(650, 45, 50, 100, ZT);
	d = check(&a, (arm_point){ 640, 10, 50 });
	CHECK(d.verdict == GATE_ALLOW);
}

TEST(speed_soft_needs_operator_hard_is_denied)
{
	const struct machine *m = test_machine();
	struct arm_action a = mv(300, 200, 50, m->limits.soft.speed_mm_s, ZT);
	struct gate_decision d = check(&a, (arm_point){ 300, 150, 50 });

	CHECK(d.verdict == GATE_ALLOW);
	a.speed_mm_s = m->limits.soft.speed_mm_s + 1;
	d = check(&a, (arm_point){ 300, 150, 50 });
	CHECK(d.verdict == GATE_OPERATOR);
	CHECK_STR_CONTAINS(reason(&d), "speed_soft");
	a.speed_mm_s = m->limits.hard.speed_mm_s + 1;
	d = check(&a, (arm_point){ 300, 150, 50 });
	CHECK(d.verdict == GATE_DENY);
	CHECK_STR_CONTAINS(reason(&d), "speed_hard");
}

TEST(circle_acceleration_is_v_squared_over_r)
{
	struct arm_action a;
	struct gate_decision d;
	const struct machine_station *c = machine_find_cell(test_machine(), "m1");

	memset(&a, 0, sizeof(a));
	a.kind = ARM_STIR;
	a.id = -1;
	a.speed_mm_s = 100;
	a.zones = arm_default_zones(ARM_STIR);
	a.depth_mm = 3;
	a.duration_ms = 1000;
	snprintf(a.cell, sizeof(a.cell), "m1");
	d = check(&a, (arm_point){ 130, 30, 60 });
	CHECK(d.verdict == GATE_ALLOW);
	/* The stir circles at half the cell's radius; 16 chords put every vertex on the circle. */
	CHECK_NEAR(d.peak_accel_mm_s2, 100.0 * 100.0 / (c->radius_mm * 0.5), 1e-6);
}

TEST(planner_view_leaks_no_limit_operator_view_has_both)
{
	struct arm_action a = mv(300, 200, 50, 777, ZT);
	struct gate_decision d = check(&a, (arm_point){ 300, 150, 50 });
	char *p = gate_decision_print(&d, GATE_VIEW_PLANNER);
	char *o = gate_decision_print(&d, GATE_VIEW_OPERATOR);

	CHECK(d.verdict == GATE_DENY);
	CHECK(p && o);
	CHECK_STR_CONTAINS(p, "\"field\":\"speed_mm_s\"");
	CHECK_STR_CONTAINS(p, "777");
	CHECK_MSG(p && !strstr(p, "500"), "planner view leaks the hard limit: %s", p);
	CHECK_MSG(p && !strstr(p, "limits.hard"), "planner view names the limit key: %s", p);
	CHECK_STR_CONTAINS(o, "limits.hard.speed_mm_s 500");
	CHECK_STR_CONTAINS(o, "\"limit\":500");
	CHECK_STR_CONTAINS(o, "\"value\":777");
	free(p);
	free(o);
}

TEST(decision_json_is_deterministic)
{
	struct arm_action a = mv(300, 200, -0.0000001, 300, ZT | ZC);
	struct gate_decision d1 = check(&a, (arm_point){ 10, 10, 100 });
	struct gate_decision d2 = check(&a, (arm_point){ 10, 10, 100 });
	char *s1 = gate_decision_print(&d1, GATE_VIEW_OPERATOR);
	char *s2 = gate_decision_print(&d2, GATE_VIEW_OPERATOR);

	CHECK(s1 && s2 && strcmp(s1, s2) == 0);
	/* Figures print to the micrometre, and never as -0. */
	CHECK_MSG(s1 && !strstr(s1, "-0,") && !strstr(s1, "-0]"), "%s", s1);
	CHECK_STR_CONTAINS(s1, "\"to_mm\":[300,200,0]");
	free(s1);
	free(s2);
}

TEST(malformed_is_a_deny_naming_the_field)
{
	static const struct {
		const char *json, *reason, *field;
	} cases[] = {
		{ "{\"type\":\"move\",\"speed_mm_s\":\"fast\",\"zones\":[\"travel\"],\"to_mm\":[1,2,3]}",
		  "bad_type", "speed_mm_s" },
		{ "{\"type\":\"dispense\",\"speed_mm_s\":10,\"well\":\"w1\",\"cell\":\"m1\",\"units\":-2}",
		  "negative_amount", "units" },
		{ "{\"type\":\"stroke\",\"speed_mm_s\":10,\"brush\":\"round-2\",\"points_mm\":[[1,2,3],[4,\"5\",6]]}",
		  "bad_type", "points_mm[1][1]" },
		{ "{\"type\":\"move\",\"speed_mm_s\":10,\"zones\":[\"travel\"],\"to_mm\":[1,2,3],\"laser\":true}",
		  "unknown_field", "laser" },
		{ "{\"type\":\"stroke\",\"speed_mm_s\":10,\"brush\":\"round-2\",\"points_mm\":[[1,2,3],[4,5,6]],"
		  "\"bounds_mm\":{\"min\":[0,0,0],\"max\":[1,1,1],\"pad\":2}}",
		  "unknown_field", "bounds_mm.pad" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cJSON *item = cJSON_Parse(cases[i].json);
		struct arm_action a;
		struct gate_decision d;
		bl_err perr = { 0 };

		CHECK(item != NULL);
		CHECK(arm_action_parse(item, "t.json", 4, &a, &perr) != 0);
		gate_decide_malformed("t.json", 4, item, &perr, &d);
		CHECK(d.verdict == GATE_DENY && d.index == 4);
		CHECK_MSG(strcmp(reason(&d), cases[i].reason) == 0, "%s: reason %s, expected %s",
			  cases[i].json, reason(&d), cases[i].reason);
		CHECK_MSG(strcmp(d.findings[0].field, cases[i].field) == 0, "field %s, expected %s",
			  d.findings[0].field, cases[i].field);
		CHECK_STR_CONTAINS(d.findings[0].message, cases[i].field);
		/* The planner's message names the field, not our file path. */
		CHECK(strstr(d.findings[0].message, "t.json") == NULL);
		cJSON_Delete(item);
	}
}

static int keep_last(void *ctx, const struct gate_decision *d, bl_err *err)
{
	struct gate_decision *out = ctx;

	(void)err;
	*out = *d;
	return 0;
}

/*
 * The gate's decision on an actions file name holding one stroke of n points
 * along y = 250 mm; -1 when the file cannot be written or checked.
 */
static int check_stroke_file(const char *name, int n, struct gate_decision *got)
{
	char path[4096];
	bl_err err = { 0 };
	const arm_point home = { 10, 10, 100 };
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs("{\"kind\":\"actions\",\"version\":1,\"actions\":[{\"type\":\"stroke\",\"speed_mm_s\":50,"
	      "\"brush\":\"round-2\",\"points_mm\":[", f);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s[%.4f,250,0]", i ? "," : "", 300 + 0.0003 * i);
	fputs("]}]}", f);
	if (fclose(f))
		return -1;
	memset(got, 0, sizeof(*got));
	return gate_check_file(test_machine(), path, &home, keep_last, got, &err) ? -1 : 0;
}

/* A polyline of a million points is refused while parsing, before anything is stored for it. */
TEST(million_point_stroke_is_absurd)
{
	struct gate_decision got;

	CHECK(check_stroke_file("million.json", 1000000, &got) == 0);
	CHECK(got.verdict == GATE_DENY && got.index == 0);
	CHECK_STR_CONTAINS(reason(&got), "absurd_size");
	CHECK_STR_CONTAINS(got.findings[0].field, "points_mm");
}

/*
 * A stroke of 100,000 points (more than limits.max_stroke_points, 4096) is
 * denied by its count before its path is made: the decision has no path.
 */
TEST(a_100k_point_stroke_is_refused_before_its_path_is_made)
{
	struct gate_decision got;

	CHECK(check_stroke_file("100k.json", 100000, &got) == 0);
	CHECK(got.verdict == GATE_DENY && got.index == 0);
	CHECK_STR_CONTAINS(reason(&got), "too_many_points");
	CHECK_MSG(!got.has_path && got.n_segments == 0, "the stroke's path was made: %zu segments",
		  got.n_segments);
}

/* In a 4096-point stroke, the point where it leaves the canvas is the one named. */
/* A stroke with the round-2 brush at 50 mm/s in its default zones; its points are the caller's. */
static struct arm_action stroke_50(void)
{
	struct arm_action a;

	memset(&a, 0, sizeof(a));
	a.kind = ARM_STROKE;
	a.id = -1;
	a.speed_mm_s = 50;
	a.zones = arm_default_zones(ARM_STROKE);
	snprintf(a.brush, sizeof(a.brush), "round-2");
	return a;
}

TEST(a_long_stroke_names_the_point_that_breaks_a_rule)
{
	struct arm_action a;
	struct gate_decision d;
	const char *field = NULL;

	a = stroke_50();
	a.n_points = 4096;
	a.points = calloc(a.n_points, sizeof(*a.points));
	CHECK(a.points != NULL);
	if (!a.points)
		return;
	for (size_t i = 0; i < a.n_points; i++)
		a.points[i] = (arm_point){ 300 + 0.05 * (double)i, i >= 3000 && i < 3010 ? 450 : 250, 0 };
	d = check(&a, (arm_point){ 10, 10, 100 });
	for (int i = 0; i < d.n_findings; i++)
		if (d.findings[i].reason == GATE_R_OFF_CANVAS)
			field = d.findings[i].field;
	CHECK_MSG(field && !strcmp(field, "points_mm[3000]"), "off the canvas at %s, not points_mm[3000]",
		  field ? field : "(no finding)");
	free(a.points);
}

/*
 * The canvas zone and the paint-on-canvas rule follow the machine's transform:
 * with the canvas registered 5 degrees turned, a point past the nominal
 * rectangle's top edge lies on the canvas, and one inside the nominal
 * rectangle's far corner does not.
 */
TEST(the_canvas_zone_follows_the_arm_registration)
{
	static struct machine turned;
	const double o[2] = { 260, 100 };
	struct gate_decision d;
	struct arm_action a;
	bl_err err = { 0 };
	/* canvas (200, 295) turned 5 degrees: machine (433.5, 411.3), beyond the nominal y 400 */
	struct machine_pt on, off;
	arm_point pts[2];

	turned = *test_machine();
	xform_place(&turned.xf, o, 5.0);
	on = xform_to_machine(&turned.xf, (struct canvas_pt){ 200, 295 });
	off = (struct machine_pt){ 655, 105 }; /* nominal canvas (395, 5): off the turned canvas */
	CHECK(on.y > 400);
	a = stroke_50();
	a.n_points = 2;
	a.points = pts;
	pts[0] = (arm_point){ on.x - 5, on.y, 0 };
	pts[1] = (arm_point){ on.x + 5, on.y, 0 };
	CHECK(gate_check(&turned, &(arm_point){ on.x, on.y, 50 }, &a, NULL, NULL, &d, &err) == 0);
	CHECK_MSG(!has(&d, GATE_R_OFF_CANVAS), "registered: %s", reason(&d));
	CHECK(d.zones_entered & ZC);
	d = check(&a, (arm_point){ on.x, on.y, 50 });
	CHECK_MSG(has(&d, GATE_R_OFF_CANVAS), "nominal: %s", reason(&d));

	pts[0] = (arm_point){ off.x - 1, off.y, 0 };
	pts[1] = (arm_point){ off.x + 1, off.y, 0 };
	CHECK(gate_check(&turned, &(arm_point){ off.x, off.y, 50 }, &a, NULL, NULL, &d, &err) == 0);
	CHECK_MSG(has(&d, GATE_R_OFF_CANVAS), "registered: %s", reason(&d));
	d = check(&a, (arm_point){ off.x, off.y, 50 });
	CHECK_MSG(!has(&d, GATE_R_OFF_CANVAS), "nominal: %s", reason(&d));
}

TEST(tolerance_bar_cannot_be_lowered)
{
	const struct machine *m = test_machine();
	struct gate_decision d;

	CHECK(gate_check_tolerance(m, "mix", m->tolerances.mix_de00, &d) == GATE_ALLOW);
	CHECK(gate_check_tolerance(m, "mix", 0.5, &d) == GATE_ALLOW);
	CHECK(gate_check_tolerance(m, "paint", 7.5, &d) == GATE_DENY);
	CHECK_STR_CONTAINS(reason(&d), "tolerance_too_loose");
	CHECK_STR_CONTAINS(d.findings[0].message, "7.5");
	CHECK(strstr(d.findings[0].message, "tolerances.") == NULL);
	CHECK_STR_CONTAINS(d.findings[0].detail, "tolerances.paint_de00 6");
	CHECK(gate_check_tolerance(m, "paint", NAN, &d) == GATE_DENY);
	CHECK_STR_CONTAINS(reason(&d), "not_finite");
	CHECK(gate_check_tolerance(m, "mix", -1, &d) == GATE_DENY);
	CHECK(gate_check_tolerance(m, "mix", 0, &d) == GATE_DENY);
	CHECK(gate_check_tolerance(m, "glaze", 1, &d) == GATE_DENY);
	CHECK_STR_CONTAINS(d.findings[0].message, "glaze");
}

TEST(context_first_motion_and_after_fault)
{
	struct machine m = *test_machine();
	struct arm_action a = mv(300, 200, 50, 100, ZT);
	struct gate_context ctx = { 1, 0 };
	const arm_point from = { 300, 150, 50 };
	struct gate_decision d;
	bl_err err = { 0 };

	/* The machine file decides whether the first motion asks (the simulator's waives it). */
	CHECK(gate_check(&m, &from, &a, &ctx, NULL, &d, &err) == 0 && d.verdict == GATE_ALLOW);
	m.safety.confirm_first_motion = 1;
	CHECK(gate_check(&m, &from, &a, &ctx, NULL, &d, &err) == 0 && d.verdict == GATE_OPERATOR);
	CHECK_STR_CONTAINS(reason(&d), "first_motion");
	/* After a fault, always. */
	m.safety.confirm_first_motion = 0;
	ctx = (struct gate_context){ 0, 1 };
	CHECK(gate_check(&m, &from, &a, &ctx, NULL, &d, &err) == 0 && d.verdict == GATE_OPERATOR);
	CHECK_STR_CONTAINS(reason(&d), "after_fault");
	CHECK(!gate_reason_grantable(GATE_R_AFTER_FAULT) && !gate_reason_grantable(GATE_R_FIRST_MOTION));
	CHECK(!gate_reason_grantable(GATE_R_OVERRIDE_LIMITS) && gate_reason_grantable(GATE_R_SPEED_SOFT));
	/* A tool position that is not a number moves nothing. */
	{
		const arm_point nowhere = { NAN, 1, 1 };

		CHECK(gate_check(&m, &nowhere, &a, NULL, NULL, &d, &err) == 0);
		CHECK(d.verdict == GATE_DENY);
		CHECK_STR_CONTAINS(reason(&d), "bad_position");
	}
}

TEST(grant_syntax)
{
	double s;
	unsigned z, k;
	bl_err err = { 0 };

	CHECK(gate_parse_duration("15m", &s, &err) == 0 && s == 900);
	CHECK(gate_parse_duration("1h30m", &s, &err) == 0 && s == 5400);
	CHECK(gate_parse_duration("90", &s, &err) == 0 && s == 90);
	CHECK(gate_parse_duration("2.5s", &s, &err) == 0 && s == 2.5);
	CHECK(gate_parse_duration("1h30", &s, &err) == BL_EINVAL);
	CHECK(gate_parse_duration("-5m", &s, &err) == BL_EINVAL);
	CHECK(gate_parse_duration("0s", &s, &err) == BL_EINVAL);
	CHECK(gate_parse_duration("3d", &s, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "'3d'");
	CHECK(gate_parse_duration("1e9h", &s, &err) == BL_EINVAL);
	CHECK(gate_parse_zones("palette", &z, &err) == 0);
	CHECK(z == ((1u << ARM_ZONE_WELL) | (1u << ARM_ZONE_CELL) | (1u << ARM_ZONE_WATER) |
		    (1u << ARM_ZONE_WIPE)));
	CHECK(gate_parse_zones("canvas,travel", &z, &err) == 0 && z == (ZC | ZT));
	CHECK(gate_parse_zones("kitchen", &z, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "'kitchen'");
	CHECK(gate_parse_kinds("move,stroke", &k, &err) == 0);
	CHECK(k == ((1u << ARM_MOVE) | (1u << ARM_STROKE)));
	CHECK(gate_parse_kinds("", &k, &err) == BL_EINVAL);
	CHECK(gate_parse_kinds("move,fly", &k, &err) == BL_EINVAL);
}

TEST(grant_covers_only_its_scope)
{
	struct gate_grant g;
	struct arm_action a = mv(300, 200, 50, 300, ZT);
	struct gate_decision d = check(&a, (arm_point){ 300, 150, 50 });

	memset(&g, 0, sizeof(g));
	g.kinds = 1u << ARM_MOVE;
	g.zones = ZT;
	g.max_speed_mm_s = 300;
	g.for_s = 60;
	CHECK(d.verdict == GATE_OPERATOR);
	CHECK(gate_grant_covers(&g, &d));
	g.max_speed_mm_s = 299;
	CHECK(!gate_grant_covers(&g, &d));
	g.max_speed_mm_s = 300;
	g.kinds = 1u << ARM_STROKE;
	CHECK(!gate_grant_covers(&g, &d));
	g.kinds = 1u << ARM_MOVE;
	g.revoked = 1;
	CHECK(!gate_grant_covers(&g, &d));
	g.revoked = 0;
	/* Down on the canvas is outside a travel grant. */
	a = mv(300, 200, 0, 300, ZT | ZC);
	d = check(&a, (arm_point){ 300, 150, 50 });
	CHECK(d.verdict == GATE_OPERATOR);
	CHECK(!gate_grant_covers(&g, &d));
	g.zones = ZC;
	CHECK(gate_grant_covers(&g, &d));
	/* A deny is never granted, however wide the grant. */
	a = mv(300, 200, -5, 300, ZT | ZC);
	d = check(&a, (arm_point){ 300, 150, 50 });
	CHECK(d.verdict == GATE_DENY && !gate_grant_covers(&g, &d));
}

static int read_png(const char *path, int *w, int *h, unsigned char **px)
{
	png_image img;

	memset(&img, 0, sizeof(img));
	img.version = PNG_IMAGE_VERSION;
	if (!png_image_begin_read_from_file(&img, path))
		return -1;
	img.format = PNG_FORMAT_RGB;
	*w = (int)img.width;
	*h = (int)img.height;
	*px = malloc(PNG_IMAGE_SIZE(img));
	if (!*px || !png_image_finish_read(&img, NULL, *px, 0, NULL)) {
		png_image_free(&img);
		return -1;
	}
	return 0;
}

TEST(preview_draws_path_over_frame)
{
	const struct machine *m = test_machine();
	struct arm_action a = mv(680, 45, 50, 100, ZT);
	const arm_point from = { 640, 10, 50 };
	struct arm_path path = { 0 };
	struct gate_decision d;
	unsigned char frame[40 * 30 * 3];
	struct gate_image img = { frame, 40, 30, 40 * 3 };
	char out[4096];
	unsigned char *px = NULL;
	int w = 0, h = 0;
	bl_err err = { 0 };

	/* A frame of one colour, to find it in the canvas rectangle. */
	for (size_t i = 0; i < sizeof(frame); i += 3) {
		frame[i] = 10;
		frame[i + 1] = 200;
		frame[i + 2] = 250;
	}
	CHECK(gate_check(m, &from, &a, NULL, &path, &d, &err) == 0);
	CHECK(d.verdict == GATE_DENY && d.findings[0].segment == 0);
	snprintf(out, sizeof(out), "%s/preview.png", test_tmpdir());
	CHECK(gate_preview_png(m, &path, &d, &img, 480, out, &err) == 0);
	CHECK(read_png(out, &w, &h, &px) == 0);
	CHECK(w == 480 && h > 100 && h < 480);
	if (px) {
		double s = 480.0 / (m->work_max_mm[0] - m->work_min_mm[0]);
		int cx = (int)((m->canvas.origin_mm[0] + 100) * s), cy = (int)((m->canvas.origin_mm[1] + 100) * s);
		/* The middle of the offending segment, (660, 27.5) mm, is red. */
		int sx = (int)(660 * s), sy = (int)(27.5 * s);
		const unsigned char *c = px + ((size_t)cy * (size_t)w + (size_t)cx) * 3;
		const unsigned char *r = px + ((size_t)sy * (size_t)w + (size_t)sx) * 3;

		CHECK_MSG(c[0] == 10 && c[1] == 200 && c[2] == 250, "canvas pixel %d %d %d", c[0], c[1], c[2]);
		CHECK_MSG(r[0] > 200 && r[1] < 40 && r[2] < 40, "segment pixel %d %d %d", r[0], r[1], r[2]);
	}
	free(px);
	/* A bad frame is refused, not read past its end. */
	img.stride = 10;
	CHECK(gate_preview_png(m, &path, &d, &img, 480, out, &err) == BL_EINVAL);
	arm_path_free(&path);
}

TEST_MAIN(T(travel_over_canvas_does_not_enter_it), T(the_canvas_zone_follows_the_arm_registration), T(going_down_over_canvas_enters_it),
	  T(floor_is_that_of_the_zone_under_the_tool),
	  T(segment_crossing_keep_out_is_denied_though_its_ends_are_outside),
	  T(speed_soft_needs_operator_hard_is_denied), T(circle_acceleration_is_v_squared_over_r),
	  T(planner_view_leaks_no_limit_operator_view_has_both), T(decision_json_is_deterministic),
	  T(malformed_is_a_deny_naming_the_field), T(million_point_stroke_is_absurd),
	  T(a_100k_point_stroke_is_refused_before_its_path_is_made),
	  T(a_long_stroke_names_the_point_that_breaks_a_rule),
	  T(tolerance_bar_cannot_be_lowered), T(context_first_motion_and_after_fault),
	  T(grant_syntax),
	  T(grant_covers_only_its_scope), T(preview_draws_path_over_frame))

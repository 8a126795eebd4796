/* test_calib_arm.c: arm registration: fits to point pairs, the refusal beyond the machine's threshold, the arm file and its strict loader, the guided session jogging only through the safety gate. */
#include <math.h>
#include <unistd.h>

#include "base/journal.h"
#include "base/rng.h"
#include "calib/calib_arm_session.h"
#include "calib_test.h"
#include "safety/rec_arm.h"

/* Canvas points and where an arm with this map (plus noise) reports them. */
static void pairs(int n, double rot_deg, int mirror, double noise_mm, uint64_t seed,
		  double (*c)[2], arm_point *a)
{
	double th = rot_deg * M_PI / 180.0, s = mirror ? -1 : 1;
	rng r;

	rng_init(&r, seed);
	for (int i = 0; i < n; i++) {
		double x = 20 + 360.0 * (i % 3) / 2.0 + 7 * (i / 3), y = 20 + 260.0 * ((i / 3) % 3) / 2.0;

		c[i][0] = x;
		c[i][1] = y;
		a[i].x = 260 + cos(th) * x - sin(th) * s * y + noise_mm * rng_normal(&r);
		a[i].y = 100 + sin(th) * x + cos(th) * s * y + noise_mm * rng_normal(&r);
		a[i].z = -0.5 + 0.001 * x + noise_mm * rng_normal(&r);
	}
}

TEST(fits_recover_the_map)
{
	double c[9][2];
	arm_point a[9], p;
	struct calib_arm *r = malloc(sizeof(*r));
	bl_err err = { 0 };

	pairs(9, 1.5, 1, 0.05, 7, c, a);
	CHECK_MSG(calib_arm_fit(CALIB_ARM_SIMILARITY, 9, (const double (*)[2])c, a, r, &err) == 0,
		  "%s", err.msg);
	CHECK(r->rms_mm < 0.1 && r->max_mm < 0.2);
	CHECK_NEAR(r->scale, 1.0, 1e-3);
	CHECK_NEAR(r->rotation_deg, 1.5, 0.05);
	calib_arm_to_machine(r, 100, 50, 2.0, &p);
	CHECK_NEAR(p.x, 260 + cos(1.5 * M_PI / 180) * 100 + sin(1.5 * M_PI / 180) * 50, 0.1);
	CHECK_NEAR(p.z, -0.5 + 0.1 + 2.0, 0.1);
	{
		double x, y;

		calib_arm_to_canvas(r, p.x, p.y, &x, &y);
		CHECK_NEAR(x, 100, 1e-9);
		CHECK_NEAR(y, 50, 1e-9);
	}
	/* Affine: at least as close; a true similarity fits both. */
	CHECK(calib_arm_fit(CALIB_ARM_AFFINE, 9, (const double (*)[2])c, a, r, &err) == 0);
	CHECK(r->rms_mm < 0.1);
	free(r);
}

TEST(degenerate_points_are_refused)
{
	double c[5][2] = { { 10, 10 }, { 20, 20 }, { 30, 30 }, { 40, 40 }, { 50, 50 } };
	arm_point a[5] = { { 1, 1, 0 }, { 2, 2, 0 }, { 3, 3, 0 }, { 4, 4, 0 }, { 5, 5, 0 } };
	struct calib_arm *r = malloc(sizeof(*r));
	bl_err err = { 0 };

	CHECK(calib_arm_fit(CALIB_ARM_SIMILARITY, 5, (const double (*)[2])c, a, r, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "on a line");
	CHECK(calib_arm_fit(CALIB_ARM_SIMILARITY, 3, (const double (*)[2])c, a, r, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "at least 4");
	free(r);
}

static const char *points_file(const char *name, int n, double (*c)[2], const arm_point *a)
{
	char buf[8192];
	int k = snprintf(buf, sizeof(buf), "{\"kind\": \"arm-points\", \"version\": 1, \"points\": [");

	for (int i = 0; i < n; i++)
		k += snprintf(buf + k, sizeof(buf) - (size_t)k,
			      "%s{\"canvas_mm\": [%.4f, %.4f], \"arm_mm\": [%.4f, %.4f, %.4f]}",
			      i ? ", " : "", c[i][0], c[i][1], a[i].x, a[i].y, a[i].z);
	snprintf(buf + k, sizeof(buf) - (size_t)k, "]}");
	return test_write_file(name, buf);
}

TEST(the_cli_writes_a_registration_the_engine_loads)
{
	double c[6][2];
	arm_point a[6];
	const char *pts, *m = machine_with("arm-machine.json",
					   "{ \"arm\": \"arm.json\", \"max_arm_residual_mm\": 1.0, "
					   "\"max_canvas_error_mm\": 0.5, \"max_camera_de00\": 1.5 }");
	const char *args[] = { "calib", "arm", "--machine", m, "--points", NULL, "--json", NULL };
	struct machine *mc = malloc(sizeof(*mc));
	struct calib_set set;
	bl_err err = { 0 };
	char *out;

	pairs(6, -0.7, 0, 0.1, 3, c, a);
	pts = points_file("pairs.json", 6, c, a);
	args[5] = pts;
	CHECK(run_cli(args, &out, NULL) == 0);
	CHECK(json_at(out, "pass") == 1);
	CHECK(json_at(out, "max_mm") < 1.0);
	CHECK(file_exists(tmp_path("arm.json")));
	free(out);
	CHECK(machine_load(m, mc, &err) == 0);
	CHECK_MSG(calib_load_machine(mc, &set, &err) == 0, "%s", err.msg);
	CHECK(set.has_arm && !set.has_profile && !set.has_canvas);
	CHECK_STR_CONTAINS(set.missing, "camera_profile");
	CHECK(set.arm.n == 6);
	calib_set_free(&set);
	free(mc);
}

TEST(a_registration_beyond_the_threshold_is_refused)
{
	double c[5][2];
	arm_point a[5];
	const char *out = tmp_path("bad-arm.json");
	const char *args[] = { "calib", "arm", "--points", NULL, "-o", out, NULL };
	char *text;

	pairs(5, 0, 0, 0.0, 1, c, a);
	a[2].x += 3.0; /* the operator touched 3 mm off one point */
	args[3] = points_file("off.json", 5, c, a);
	CHECK(run_cli(args, &text, NULL) == 1);
	CHECK_STR_CONTAINS(text, "REFUSED");
	CHECK(!file_exists(out));
	free(text);
}

/*
 * Registrations the machine cannot use are refused before they are written
 * (exit 2, naming why): the canvas moved 100 mm past the work area's edge,
 * the canvas laid over a mixing cell, and a point touched twice counting
 * towards the four a fit needs.
 */
TEST(a_registration_the_machine_cannot_use_is_not_written)
{
	static const struct {
		double dx_mm;
		int dup;
		const char *want;
	} cases[] = {
		{ 100, 0, "outside work_area" },
		{ -100, 0, "over 'm9'" },
		{ 0, 1, "3 distinct places (point 4 repeats point 2" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double c[5][2];
		arm_point a[5];
		char name[32];
		const char *out = tmp_path("never.json");
		const char *args[] = { "calib", "arm", "--points", NULL, "-o", out, NULL };
		char *e;
		int n = cases[i].dup ? 4 : 5;

		pairs(5, 0, 0, 0.0, 1, c, a);
		for (int k = 0; k < 5; k++)
			a[k].x += cases[i].dx_mm;
		if (cases[i].dup) {
			c[3][0] = c[1][0];
			c[3][1] = c[1][1];
			a[3] = a[1];
		}
		snprintf(name, sizeof(name), "unusable%zu.json", i);
		args[3] = points_file(name, n, c, a);
		CHECK(run_cli(args, NULL, &e) == 2);
		fprintf(stderr, "%s", e ? e : "");
		CHECK_STR_CONTAINS(e, cases[i].want);
		CHECK(!file_exists(out));
		free(e);
	}
}

TEST(bad_point_files_exit_2)
{
	static const struct {
		const char *text, *want;
	} bad[] = {
		{ "{\"kind\": \"arm-points\", \"version\": 1, \"points\": [{\"canvas_mm\": [1, 2], "
		  "\"arm_mm\": [1, 2, 3], \"note\": 1}]}", "note" },
		{ "{\"kind\": \"arm-points\", \"version\": 1, \"points\": [{\"canvas_mm\": [1, 2], "
		  "\"arm_mm\": [1, 2]}]}", "arm_mm" },
		{ "{\"kind\": \"arm-points\", \"version\": 1, \"points\": []}", "at least 4" },
		{ "{\"kind\": \"canvas\", \"version\": 1}", "arm-points" },
		{ "not json", "" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char name[32];
		const char *args[] = { "calib", "arm", "--points", NULL, "-o", tmp_path("never.json"), NULL };
		char *e;

		snprintf(name, sizeof(name), "badpts%zu.json", i);
		args[3] = test_write_file(name, bad[i].text);
		CHECK(run_cli(args, NULL, &e) == 2);
		CHECK_STR_CONTAINS(e, bad[i].want);
		CHECK_STR_CONTAINS(e, name);
		free(e);
	}
	CHECK(!file_exists(tmp_path("never.json")));
}

TEST(arm_files_are_read_strictly)
{
	double c[5][2];
	arm_point a[5];
	struct calib_arm *r = malloc(sizeof(*r)), *b = malloc(sizeof(*b));
	const char *path = tmp_path("good-arm.json");
	bl_err err = { 0 };
	char *text;
	size_t len;

	pairs(5, 2, 1, 0.02, 9, c, a);
	CHECK(calib_arm_fit(CALIB_ARM_SIMILARITY, 5, (const double (*)[2])c, a, r, &err) == 0);
	CHECK(calib_arm_save(path, r, NULL, &err) == 0);
	CHECK_MSG(calib_arm_load(path, b, &err) == 0, "%s", err.msg);
	CHECK(b->n == 5 && b->model == CALIB_ARM_SIMILARITY);
	for (int i = 0; i < 2; i++)
		for (int k = 0; k < 3; k++)
			CHECK_NEAR(b->a[i][k], r->a[i][k], 1e-9);
	CHECK(fs_read_file(path, 1 << 20, &text, &len, &err) == 0);
	{
		static const struct {
			const char *from, *to, *want;
		} edits[] = {
			{ "\"mirrored\":\ttrue", "\"mirrored\":\tfalse", "mirrors" },
			{ "\"model\":\t\"similarity\"", "\"model\":\t\"similarity\", \"x\": 1", "x" },
			{ "\"scale\":", "\"scale\": 5, \"s\":", "scale" },
			{ "\"kind\":\t\"arm-calibration\"", "\"kind\":\t\"arm\"", "arm-calibration" },
		};

		for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
			char *at = strstr(text, edits[i].from), name[32], *t2;

			CHECK(at != NULL);
			if (!at)
				continue;
			t2 = malloc(len + 64);
			memcpy(t2, text, (size_t)(at - text));
			sprintf(t2 + (at - text), "%s%s", edits[i].to, at + strlen(edits[i].from));
			snprintf(name, sizeof(name), "edit%zu.json", i);
			CHECK(calib_arm_load(test_write_file(name, t2), b, &err) == BL_EINVAL);
			CHECK_STR_CONTAINS(err.msg, edits[i].want);
			free(t2);
		}
	}
	free(text);
	free(r);
	free(b);
}

/* A guided session against a recording arm at (10, 10, 50) through a gate journaling in the test's directory. */
struct guided {
	struct machine m;
	struct rec_state st;
	struct arm *arm;
	struct gate *g;
	struct journal jr;
	struct calib_arm_session s;
	clk c;
	char journal[4096];
};

static struct guided *guided_open(const char *keys, const char *out_name)
{
	struct guided *gs = calloc(1, sizeof(*gs));
	struct gate_config gc;
	bl_err err = { 0 };

	gs->m = *example_machine();
	gs->st.pos = (arm_point){ 10, 10, 50 };
	clk_virtual_init(&gs->c, 0);
	gs->arm = rec_arm_open(&gs->m, &gs->c, &gs->st);
	snprintf(gs->journal, sizeof(gs->journal), "%s", tmp_path("journal.jsonl"));
	CHECK_MSG(journal_open(&gs->jr, gs->journal, &gs->c, &err) == 0, "%s", err.msg);
	memset(&gc, 0, sizeof(gc));
	gc.m = &gs->m;
	gc.run_dir = test_tmpdir();
	gc.journal = &gs->jr;
	gc.clock = &gs->c;
	gc.mode = GATE_UNATTENDED;
	gc.tty_in_fd = gc.tty_out_fd = -1;
	CHECK_MSG(gate_open(&gc, &gs->g, &err) == 0, "%s", err.msg);
	gs->s.m = &gs->m;
	gs->s.gate = gs->g;
	gs->s.arm = gs->arm;
	gs->s.speed_mm_s = calib_arm_jog_speed(&gs->m);
	gs->s.step_mm = 1;
	/* Two targets: 20 mm inside the canvas's two corners along x. */
	gs->s.n_targets = 2;
	gs->s.targets[0][0] = 20;
	gs->s.targets[0][1] = 20;
	gs->s.targets[1][0] = 380;
	gs->s.targets[1][1] = 20;
	gs->s.in = fmemopen((void *)keys, strlen(keys), "r");
	gs->s.out = fopen(tmp_path(out_name), "w");
	return gs;
}

static void guided_close(struct guided *gs)
{
	fclose(gs->s.in);
	fclose(gs->s.out);
	gate_close(gs->g);
	journal_close(&gs->jr);
	arm_close(gs->arm);
	free(gs);
}

/* The guided session against a recording arm: every motion is a gate decision. */
TEST(the_guided_session_moves_only_through_the_gate)
{
	struct guided *gs = guided_open("x+ 10\n"      /* 10, 10, 50 -> 20, 10, 50 */
					"z- 200\n"     /* beyond a jog's 50 mm: refused by the session itself */
					"z- 45\n"      /* down to z 5: below the travel floor outside the canvas: the gate denies */
					"bogus\n"
					"ok\n"        /* in the air (z 50): warned, not taken */
					"ok\n"        /* the operator insists */
					"y+ 5\n"
					"ok\n"
					"ok\n", "session.out");
	struct calib_arm_session *s = &gs->s;
	struct machine *m = &gs->m;
	struct rec_state st;
	bl_err err = { 0 };

	CHECK_MSG(calib_arm_session_run(s, &err) == 0, "%s", err.msg);
	st = gs->st;
	CHECK(s->n == 2);
	CHECK(s->jogs == 3);         /* x+ 10, z- 45, y+ 5 reached the gate */
	CHECK(s->refused == 1);      /* z- 45 */
	CHECK(st.n_execute == 2);    /* and only two reached the arm */
	CHECK(st.last_kind == ARM_JOG);
	CHECK_NEAR(s->arm_mm[0].x, 20, 1e-9);
	CHECK_NEAR(s->arm_mm[0].z, 50, 1e-9);
	CHECK_NEAR(s->arm_mm[1].y, 15, 1e-9);
	/* Reduced speed: a tenth of the soft limit, at most 25 mm/s. */
	CHECK(s->speed_mm_s <= 25.0 && s->speed_mm_s <= 0.1 * m->limits.soft.speed_mm_s + 1e-9);
	fflush(s->out);
	{
		char *text;
		size_t len;

		CHECK(fs_read_file(gs->journal, 1 << 20, &text, &len, &err) == 0);
		CHECK_STR_CONTAINS(text, "\"deny\"");
		CHECK_STR_CONTAINS(text, "below_floor");
		free(text);
		CHECK(fs_read_file(tmp_path("session.out"), 1 << 20, &text, &len, &err) == 0);
		CHECK_STR_CONTAINS(text, "the gate refused it");
		CHECK_STR_CONTAINS(text, "unknown command 'bogus'");
		free(text);
	}
	guided_close(gs);
}

/*
 * The operator records a point with the tip on the canvas, then types go for
 * the next: the session lifts the tip to travel height first, so the gate
 * allows the move. A point recorded at travel height (ok typed before
 * lowering) is recorded with a warning: it is not on the canvas.
 */
TEST(go_after_ok_lifts_first_and_a_point_in_the_air_warns)
{
	struct guided *gs = guided_open("go\n"
					"z- 30\n"     /* the tip on the canvas at (280, 120, 0) */
					"ok\n"
					"go\n"        /* above (640, 120): lifted first */
					"ok\n"        /* at travel height: not taken, a warning */
					"ok\n", "go.out");     /* again: the operator insists */
	struct calib_arm_session *s = &gs->s;
	bl_err err = { 0 };
	char *text;

	CHECK_MSG(calib_arm_session_run(s, &err) == 0, "%s", err.msg);
	fflush(s->out);
	CHECK(fs_read_file(tmp_path("go.out"), 1 << 20, &text, NULL, &err) == 0);
	fprintf(stderr, "%s", text);
	CHECK(s->refused == 0);
	CHECK(s->n == 2);
	CHECK_NEAR(s->arm_mm[0].z, 0, 1e-9);
	CHECK_NEAR(s->arm_mm[1].x, 640, 1e-9);
	CHECK_NEAR(s->arm_mm[1].z, gs->m.travel_z_mm, 1e-9);
	CHECK_STR_CONTAINS(text, "travel height");
	free(text);
	guided_close(gs);
}

/* The whole guided session from the CLI on the simulated arm, the operator's keys on stdin. */
TEST(the_cli_session_registers_the_simulated_arm)
{
	const char *in = tmp_path("keys.txt"), *out = tmp_path("arm-sim.json");
	FILE *f = fopen(in, "w");
	const double t[5][2] = { { 20, 20 }, { 380, 20 }, { 380, 280 }, { 20, 280 }, { 200, 150 } };
	double pos[3] = { 10, 10, 100 };
	char cmd[8192];
	struct calib_arm a;
	bl_err err = { 0 };

	/* The example canvas: origin at machine (260, 100), x and y along the machine's. */
	for (int k = 0; k < 5; k++) {
		double want[3] = { 260 + t[k][0], 100 + t[k][1], 0 };
		static const int order[3] = { 2, 0, 1 };

		if (pos[2] < 20) {
			fprintf(f, "z+ %g\n", 20 - pos[2]);
			pos[2] = 20;
		}
		for (int o = 0; o < 3; o++) {
			int ax = order[(o + 1) % 3];

			if (o == 2)
				ax = 2;
			while (fabs(want[ax] - pos[ax]) > 1e-9) {
				double d = fmax(-50, fmin(50, want[ax] - pos[ax]));

				fprintf(f, "%c%c %g\n", "xyz"[ax], d > 0 ? '+' : '-', fabs(d));
				pos[ax] += d;
			}
		}
		fprintf(f, "ok\n");
	}
	fclose(f);
	snprintf(cmd, sizeof(cmd), "'%s' calib arm --run-dir '%s' -o '%s' < '%s' > '%s' 2>&1",
		 getenv("BRUSHLOOP"), tmp_path("armrun"), out, in, tmp_path("arm-cli.out"));
	CHECK(system(cmd) == 0);
	CHECK_MSG(calib_arm_load(out, &a, &err) == 0, "%s", err.msg);
	CHECK(a.n == 5);
	CHECK(a.max_mm < 0.01);
	CHECK_NEAR(a.a[0][2], 260, 0.01);
	CHECK_NEAR(a.a[1][2], 100, 0.01);
	CHECK(a.a[0][0] * a.a[1][1] - a.a[0][1] * a.a[1][0] > 0);
	CHECK(file_exists(tmp_path("armrun/journal.jsonl")));
}

TEST_MAIN(T(fits_recover_the_map), T(degenerate_points_are_refused),
	  T(the_cli_writes_a_registration_the_engine_loads),
	  T(a_registration_beyond_the_threshold_is_refused), T(bad_point_files_exit_2),
	  T(a_registration_the_machine_cannot_use_is_not_written),
	  T(arm_files_are_read_strictly), T(the_guided_session_moves_only_through_the_gate),
	  T(go_after_ok_lifts_first_and_a_point_in_the_air_warns),
	  T(the_cli_session_registers_the_simulated_arm))

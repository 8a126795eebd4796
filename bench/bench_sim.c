/* bench_sim.c: benchmarks of the simulator: one rendered 720p frame, and an overnight run of strokes and observations. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "bench/bench.h"
#include "config/machine.h"
#include "sim/sim.h"

#define BENCH_MACHINE BL_SOURCE_ROOT "/examples/machine-sim.json"

static int exec_simple(struct sim *s, enum arm_kind kind, const char *brush, const char *well,
		       bl_err *err)
{
	struct arm_action a;

	memset(&a, 0, sizeof(a));
	a.kind = kind;
	a.id = -1;
	a.speed_mm_s = 200.0;
	a.zones = arm_default_zones(kind);
	snprintf(a.brush, sizeof(a.brush), "%s", brush ? brush : "");
	snprintf(a.well, sizeof(a.well), "%s", well ? well : "");
	a.depth_mm = 3.0;
	a.duration_ms = 2000;
	return sim_exec(s, &a, NULL, err);
}

/* A stroke of 2 to 5 straight pieces, 10 to 40 mm each, somewhere on the canvas. */
static int exec_stroke(struct sim *s, const struct machine *m, rng *r, const char *brush,
		       bl_err *err)
{
	arm_point pts[6];
	struct arm_action a;
	int n = 3 + (int)rng_below(r, 4);
	double x = 40.0 + rng_uniform(r) * (m->canvas.size_mm[0] - 80.0); /* canvas mm */
	double y = 40.0 + rng_uniform(r) * (m->canvas.size_mm[1] - 80.0);

	for (int i = 0; i < n; i++) {
		struct machine_pt t = xform_to_machine(&m->xf, (struct canvas_pt){ x, y });

		pts[i] = (arm_point){ t.x, t.y, m->canvas.surface_z_mm - 0.5 };
		x += (rng_uniform(r) - 0.5) * 50.0;
		y += (rng_uniform(r) - 0.5) * 50.0;
		if (x < 5.0 || x > m->canvas.size_mm[0] - 5.0)
			x = 0.5 * m->canvas.size_mm[0];
		if (y < 5.0 || y > m->canvas.size_mm[1] - 5.0)
			y = 0.5 * m->canvas.size_mm[1];
	}
	memset(&a, 0, sizeof(a));
	a.kind = ARM_STROKE;
	a.id = -1;
	a.speed_mm_s = 120.0;
	a.zones = arm_default_zones(ARM_STROKE);
	snprintf(a.brush, sizeof(a.brush), "%s", brush);
	a.points = pts;
	a.n_points = (size_t)n;
	return sim_exec(s, &a, NULL, err);
}

static struct machine *load_machine(bl_err *err)
{
	struct machine *m = malloc(sizeof(*m));

	if (!m) {
		bl_fail(err, BL_ENOMEM, "out of memory");
		return NULL;
	}
	if (machine_load(BENCH_MACHINE, m, err)) {
		free(m);
		return NULL;
	}
	return m;
}

int bench_sim_render(double *value, int quick, bl_err *err)
{
	/* One world for every run: its setup and first frame (the pixel map) are not the figure. */
	static struct sim *s;
	static struct machine *m;
	static clk clock;
	struct cam_frame f;
	double t0;
	int rc;

	if (!s) {
		struct sim_options o = { 1, 1, NULL };
		rng r;

		m = load_machine(err);
		if (!m)
			return err->code;
		rc = sim_open(m, &o, &clock, &s, err);
		if (rc)
			return rc;
		rng_init(&r, 5);
		rc = exec_simple(s, ARM_HOME, NULL, NULL, err);
		for (int i = 0; i < 40 && rc == 0; i++) {
			if (i % 4 == 0)
				rc = exec_simple(s, ARM_DIP, "flat-12", m->wells[i % 13].name, err);
			if (rc == 0)
				rc = exec_stroke(s, m, &r, "flat-12", err);
		}
		if (rc == 0)
			rc = sim_render(s, SIM_SCENE_CANVAS, &f, err);
		if (rc)
			return rc;
		cam_frame_free(&f);
	}
	t0 = bench_now_ms();
	rc = sim_render(s, SIM_SCENE_CANVAS, &f, err);
	*value = bench_now_ms() - t0;
	cam_frame_free(&f);
	return rc;
}

int bench_sim_overnight(double *value, int quick, bl_err *err)
{
	/* Quick: 150 strokes still wash, dip and change brushes (every 50 strokes) through all three. */
	const int strokes = quick ? 150 : 10000, observations = quick ? 3 : 300;
	static const char *const brushes[] = { "round-2", "round-6", "flat-12" };
	struct machine *m = load_machine(err);
	struct sim_options o = { 1, 1, NULL };
	struct sim *s;
	struct cam_frame f;
	clk clock;
	rng r;
	double t0;
	int rc, frames = 0;

	if (!m)
		return err->code;
	t0 = bench_now_ms();
	rc = sim_open(m, &o, &clock, &s, err);
	if (rc)
		goto out_m;
	rng_init(&r, 11);
	rc = exec_simple(s, ARM_HOME, NULL, NULL, err);
	for (int i = 0; i < strokes && rc == 0; i++) {
		const char *brush = brushes[(i / 50) % 3];

		if (i % 50 == 0)
			rc = exec_simple(s, ARM_WASH, NULL, NULL, err);
		if (rc == 0 && i % 5 == 0)
			rc = exec_simple(s, ARM_DIP, brush, m->wells[(i / 5) % 13].name, err);
		if (rc == 0)
			rc = exec_stroke(s, m, &r, brush, err);
		if (rc == 0 && (long)(i + 1) * observations / strokes > frames) {
			rc = sim_render(s, SIM_SCENE_CANVAS, &f, err);
			cam_frame_free(&f);
			frames++;
		}
	}
	*value = (bench_now_ms() - t0) / 1000.0;
	sim_close(s);
out_m:
	free(m);
	return rc;
}

/* bench_safety.c: benchmarks of the safety gate: checking a long stroke, and printing a decision for the journal. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "config/machine.h"
#include "safety/gate.h"

/* A 1000-point wavy stroke across the example canvas, as a planner might send. */
static int stroke_setup(struct machine *m, struct arm_action *a, bl_err *err)
{
	int rc = machine_load(BL_SOURCE_ROOT "/examples/machine-sim.json", m, err);

	if (rc)
		return rc;
	memset(a, 0, sizeof(*a));
	a->kind = ARM_STROKE;
	a->id = -1;
	a->speed_mm_s = 60;
	a->zones = arm_default_zones(ARM_STROKE);
	snprintf(a->brush, sizeof(a->brush), "round-6");
	a->n_points = 1000;
	a->points = calloc(a->n_points, sizeof(*a->points));
	if (!a->points)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	for (size_t i = 0; i < a->n_points; i++)
		a->points[i] = (arm_point){ 300 + 0.3 * (double)i, 250 + 20 * sin((double)i * 0.02), 0 };
	return 0;
}

int bench_safety_check_stroke(double *value, bl_err *err)
{
	struct machine *m = malloc(sizeof(*m));
	struct arm_action a;
	struct arm_path path = { 0 };
	struct gate_decision d;
	const arm_point from = { 10, 10, 100 };
	double t0;
	int rc;

	if (!m)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	rc = stroke_setup(m, &a, err);
	if (rc == 0) {
		t0 = bench_now_ms();
		rc = gate_check(m, &from, &a, NULL, &path, &d, err);
		*value = (bench_now_ms() - t0) * 1000.0;
		if (rc == 0 && d.verdict != GATE_ALLOW)
			rc = bl_fail(err, BL_EINVAL, "benchmark stroke was not allowed");
	}
	arm_action_release(&a);
	arm_path_free(&path);
	free(m);
	return rc;
}

int bench_safety_decision_json(double *value, bl_err *err)
{
	enum { N = 2000 };
	struct machine *m = malloc(sizeof(*m));
	struct arm_action a;
	struct gate_decision d;
	const arm_point from = { 10, 10, 100 };
	double t0;
	int rc;

	if (!m)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	rc = stroke_setup(m, &a, err);
	if (rc == 0) {
		a.speed_mm_s = 300; /* a finding or two, as in a real request */
		rc = gate_check(m, &from, &a, NULL, NULL, &d, err);
	}
	if (rc == 0) {
		t0 = bench_now_ms();
		for (int i = 0; i < N; i++)
			free(gate_decision_print(&d, GATE_VIEW_OPERATOR));
		*value = (bench_now_ms() - t0) * 1000.0 / N;
	}
	arm_action_release(&a);
	free(m);
	return rc;
}

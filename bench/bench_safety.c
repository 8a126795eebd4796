/* bench_safety.c: benchmarks of the safety gate: checking a long stroke, and printing a decision for the journal. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "config/machine.h"
#include "safety/gate.h"

/* Point i of n of a wavy stroke 300 mm across the example canvas, as a planner might send. */
static arm_point wavy(size_t i, size_t n)
{
	double t = (double)i / (double)n;

	return (arm_point){ 300 + 300.0 * t, 250 + 20 * sin(20.0 * t), 0 };
}

/* A 1000-point wavy stroke across the example canvas. */
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
		a->points[i] = wavy(i, a->n_points);
	return 0;
}

int bench_safety_check_stroke(double *value, int quick, bl_err *err)
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

int bench_safety_decision_json(double *value, int quick, bl_err *err)
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

static int keep_verdict(void *ctx, const struct gate_decision *d, bl_err *err)
{
	(void)err;
	*(int *)ctx = (int)d->verdict;
	return 0;
}

/*
 * `brushloop gate check` of an actions file holding one wavy stroke of n
 * points, parsing included, ms; the verdict must be want.
 */
static int check_file(size_t n, enum gate_verdict want, double *value, bl_err *err)
{
	struct machine *m = malloc(sizeof(*m));
	const arm_point from = { 10, 10, 100 };
	char path[256];
	int rc, verdict = -1;
	double t0;
	FILE *f;

	if (!m)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	if ((rc = machine_load(BL_SOURCE_ROOT "/examples/machine-sim.json", m, err)))
		goto out_free;
	snprintf(path, sizeof(path), "/tmp/brushloop-bench-gate-%ld.json", (long)getpid());
	if (!(f = fopen(path, "w"))) {
		rc = bl_fail(err, BL_EIO, "%s: cannot create", path);
		goto out_free;
	}
	fputs("{\"kind\":\"actions\",\"version\":1,\"actions\":[{\"type\":\"stroke\","
	      "\"speed_mm_s\":60,\"brush\":\"round-6\",\"points_mm\":[", f);
	for (size_t i = 0; i < n; i++) {
		arm_point p = wavy(i, n);

		fprintf(f, "%s[%.3f,%.3f,0]", i ? "," : "", p.x, p.y);
	}
	fputs("]}]}", f);
	if (fclose(f)) {
		rc = bl_fail(err, BL_EIO, "%s: cannot write", path);
		goto out_unlink;
	}
	t0 = bench_now_ms();
	rc = gate_check_file(m, path, &from, keep_verdict, &verdict, err);
	*value = bench_now_ms() - t0;
	if (rc == 0 && verdict != (int)want)
		rc = bl_fail(err, BL_EINVAL, "a %zu-point stroke: verdict %d, expected %d", n, verdict,
			     (int)want);
out_unlink:
	unlink(path);
out_free:
	free(m);
	return rc;
}

int bench_safety_gate_check_4k(double *value, int quick, bl_err *err)
{
	/* The example machine's limits.max_stroke_points: the most it checks in full. */
	return check_file(4096, GATE_ALLOW, value, err);
}

int bench_safety_gate_check_100k(double *value, int quick, bl_err *err)
{
	/* Refused by its count before a path is made. */
	return check_file(100000, GATE_DENY, value, err);
}

/* plan_fixture.h: what the planner's tests share: the example machine, a test double of the colour solver, targets drawn in memory. */
#ifndef BL_TESTS_PLAN_FIXTURE_H
#define BL_TESTS_PLAN_FIXTURE_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "color/color.h"
#include "config/machine.h"
#include "examples/targets/targets.h"
#include "plan/plan.h"

/*
 * Test double of the mixing model (tests only): the reachable colours are
 * those with L in 20..93 and chroma at most 70, so the planner meets a gamut;
 * the recipe is one paint from well w1, sized to the volume asked for.
 */
static int fake_solve(void *ctx, const color_lab *want, double volume_ml, struct plan_mix *out,
		      bl_err *err)
{
	double c = hypot(want->a, want->b), k = c > 70.0 ? 70.0 / c : 1.0;

	(void)ctx;
	(void)err;
	memset(out, 0, sizeof(*out));
	out->lab.L = round(100.0 * (want->L < 20.0 ? 20.0 : want->L > 93.0 ? 93.0 : want->L)) / 100.0;
	out->lab.a = round(100.0 * want->a * k) / 100.0;
	out->lab.b = round(100.0 * want->b * k) / 100.0;
	out->recipe.n = 1;
	snprintf(out->recipe.item[0].paint, CFG_NAME_MAX, "white");
	snprintf(out->recipe.item[0].well, CFG_NAME_MAX, "w1");
	out->recipe.item[0].units = volume_ml > 0.0 ? (int)ceil(volume_ml / 0.1) : 10;
	return 0;
}

static const struct plan_solver fake_solver = { fake_solve, NULL };

static struct machine *fixture_machine(void)
{
	static struct machine m;
	static int loaded;
	bl_err err = { 0 };

	if (!loaded) {
		if (machine_load(BL_SOURCE_ROOT "/examples/machine-sim.json", &m, &err)) {
			fprintf(stderr, "cannot load the example machine: %s\n", err.msg);
			exit(1);
		}
		loaded = 1;
	}
	return &m;
}

/* Example target `which` drawn at w x h, as Lab. */
static int fixture_target(int which, int w, int h, struct plan_raster *r)
{
	unsigned char *rgb = malloc((size_t)w * h * 3);
	color_lab *lab = malloc((size_t)w * h * sizeof(*lab));
	bl_err err = { 0 };
	int rc = -1;

	if (rgb && lab && target_draw(which, w, h, rgb) == 0 &&
	    color_srgb8_to_lab_many(rgb, lab, (unsigned long)w * h, &err) == 0 &&
	    plan_raster_alloc(r, w, h, &err) == 0) {
		for (size_t i = 0; i < (size_t)w * h; i++) {
			r->px[3 * i] = (float)lab[i].L;
			r->px[3 * i + 1] = (float)lab[i].a;
			r->px[3 * i + 2] = (float)lab[i].b;
		}
		rc = 0;
	}
	free(rgb);
	free(lab);
	return rc;
}

/* Plans target which (drawn at w x h) with the fake solver; 0 or an error code. */
static int fixture_plan(int which, int w, int h, int strokes, int baseline, struct plan *p,
			bl_err *err)
{
	struct machine *m = fixture_machine();
	struct plan_raster r;
	struct plan_options o;
	struct plan_inputs in = { 0 };
	int rc;

	if (fixture_target(which, w, h, &r))
		return bl_fail(err, BL_EINVAL, "cannot draw target %d", which);
	plan_options_default(&o, m);
	o.max_strokes = strokes;
	o.baseline = baseline;
	in.machine = m;
	in.solver = &fake_solver;
	in.target = &r;
	in.target_file = target_names[which];
	in.target_hash = "0123456789abcdef";
	rc = plan_make(&in, &o, p, err);
	plan_raster_free(&r);
	return rc;
}

#endif

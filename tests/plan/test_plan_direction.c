/* test_plan_direction.c: where the brush's scale shows no edge, strokes follow the picture's coarser structure instead of lying horizontal. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config/machine.h"
#include "plan/plan_int.h"
#include "test.h"

#define GW 120 /* grid, mm at a pixel a millimetre */
#define GH 80

static struct machine *example_machine(void)
{
	static struct machine m;
	static int loaded;
	bl_err err = { 0 };

	if (!loaded && machine_load(BL_SOURCE_ROOT "/examples/machine-sim.json", &m, &err)) {
		fprintf(stderr, "cannot load the example machine: %s\n", err.msg);
		exit(1);
	}
	loaded = 1;
	return &m;
}

/*
 * Plans 80 strokes of four greys (L* 25 to 85) over a canvas of L* 55 for a
 * target whose L* is lightness(x, y) in mm: a gentle ramp, far under the edge
 * strength at any brush's scale. Returns the share of strokes whose chord lies
 * within 30 degrees of the isophote (the line of constant L*) at the chord's
 * middle, and the median turning along a stroke in degrees; -1 on failure.
 */
static double along_isophotes(double (*lightness)(double x, double y), double *turn_med_deg)
{
	struct machine *m = example_machine();
	struct pm_grid g = { .w = GW, .h = GH, .px_mm = 1.0, .w_mm = GW, .h_mm = GH };
	struct pm_target t = { 0 };
	struct pm_strokes st = { 0 };
	struct plan_colour pc[4];
	struct plan_options o;
	size_t n = (size_t)GW * GH;
	float *lab = malloc(n * 3 * sizeof(float)), *canvas = malloc(n * 3 * sizeof(float));
	double share = -1.0, turns[200];
	bl_err err = { 0 };
	int along = 0;

	memset(pc, 0, sizeof(pc));
	for (int k = 0; k < 4; k++)
		pc[k].lab = (color_lab){ 25.0 + 20.0 * k, 0.0, 0.0 };
	plan_options_default(&o, m);
	o.max_strokes = 80;
	if (!lab || !canvas)
		goto out;
	for (size_t i = 0; i < n; i++) {
		lab[3 * i] = (float)lightness(i % GW + 0.5, (double)(i / GW) + 0.5);
		canvas[3 * i] = 55.0f;
		lab[3 * i + 1] = lab[3 * i + 2] = canvas[3 * i + 1] = canvas[3 * i + 2] = 0.0f;
	}
	if (pm_target_init(&t, &g, lab, &err) || pm_place_strokes(&g, &t, canvas, NULL, m, pc, 4, &o, &st, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		goto out;
	}
	if (st.n == 0 || st.n > 200)
		goto out;
	for (size_t k = 0; k < st.n; k++) {
		const double *xy = st.s[k].xy;
		int e = st.s[k].n - 1;
		double cx = 0.5 * (xy[0] + xy[2 * e]), cy = 0.5 * (xy[1] + xy[2 * e + 1]), h = 1.0;
		double gx = lightness(cx + h, cy) - lightness(cx - h, cy), gy = lightness(cx, cy + h) - lightness(cx, cy - h);
		double dx = xy[2 * e] - xy[0], dy = xy[2 * e + 1] - xy[1], turn = 0.0;
		/* The chord against the isophote: |cos| between the chord and the gradient at most sin 30. */
		double c = fabs(dx * gx + dy * gy) / (hypot(dx, dy) * hypot(gx, gy) + 1e-12);

		along += c <= 0.5;
		for (int j = 1; j < e; j++) {
			double a0 = atan2(xy[2 * j + 1] - xy[2 * j - 1], xy[2 * j] - xy[2 * j - 2]);
			double a1 = atan2(xy[2 * j + 3] - xy[2 * j + 1], xy[2 * j + 2] - xy[2 * j]);
			double d = fabs(a1 - a0);

			turn += d > M_PI ? 2.0 * M_PI - d : d;
		}
		turns[k] = turn * 180.0 / M_PI;
	}
	/* Median by insertion sort: at most 200. */
	for (size_t i = 1; i < st.n; i++)
		for (size_t j = i; j > 0 && turns[j - 1] > turns[j]; j--) {
			double s = turns[j];

			turns[j] = turns[j - 1];
			turns[j - 1] = s;
		}
	*turn_med_deg = turns[st.n / 2];
	share = (double)along / st.n;
	fprintf(stderr, "%zu strokes, %.0f %% along the isophotes, median turning %.0f degrees\n", st.n,
		100.0 * share, *turn_med_deg);
out:
	pm_strokes_free(&st);
	pm_target_free(&t);
	free(lab);
	free(canvas);
	return share;
}

/* L* rising 60 along the diagonal: isophotes at 45 degrees, about 0.4 L* a millimetre. */
static double diagonal(double x, double y)
{
	return 25.0 + 60.0 * (x + y) / (GW + GH);
}

/* L* rising 60 from the centre outwards: isophotes are circles. */
static double rings(double x, double y)
{
	return 25.0 + 60.0 * hypot(x - 0.5 * GW, y - 0.5 * GH) / hypot(0.5 * GW, 0.5 * GH);
}

TEST(strokes_follow_a_gentle_diagonal)
{
	double turn, share = along_isophotes(diagonal, &turn);

	/* Lying horizontal, as strokes did where no edge showed at the brush's scale, none is (measured 0 %). */
	CHECK_MSG(share >= 0.4, "%.0f %% of the strokes along the isophotes", 100.0 * share);
}

TEST(strokes_go_round_rings)
{
	double turn, share = along_isophotes(rings, &turn);

	/* Horizontal, only those above and below the centre are (measured 12 %). */
	CHECK_MSG(share >= 0.4, "%.0f %% of the strokes along the isophotes", 100.0 * share);
}

TEST_MAIN(T(strokes_follow_a_gentle_diagonal), T(strokes_go_round_rings))

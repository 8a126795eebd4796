/* quality_dev.c: development only (not built): prints planner and baseline figures. */
#include "base/clock.h"
#include "plan_fixture.h"

int main(int argc, char **argv)
{
	int budgets[3] = { 100, 300, 1000 };
	int w = argc > 1 ? atoi(argv[1]) : 1000, h = w * 4 / 5;

	for (int t = 0; t < TARGET_COUNT; t++)
		for (int b = 0; b < 3; b++) {
			struct plan p, q;
			bl_err err = { 0 };
			int64_t t0 = clk_real_ns();

			if (fixture_plan(t, w, h, budgets[b], 0, &p, &err)) {
				printf("%s\n", err.msg);
				return 1;
			}
			double dt = (clk_real_ns() - t0) * 1e-9;
			if (fixture_plan(t, w, h, budgets[b], 1, &q, &err)) {
				printf("%s\n", err.msg);
				return 1;
			}
			printf("%-13s %5d  plan %6.2f (p95 %6.2f, %4d strokes, %d col, %.2fs)  grid %6.2f (%4d strokes)\n",
			       target_names[t], budgets[b], p.mean_de00, p.p95_de00, p.n_strokes,
			       p.n_colours, dt, q.mean_de00, q.n_strokes);
			plan_free(&p);
			plan_free(&q);
		}
	return 0;
}

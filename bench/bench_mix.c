/* bench_mix.c: benchmarks of mixing: the recipe solver with the thirteen Kimera paints. */
#include <stdlib.h>

#include "base/rng.h"
#include "bench/bench.h"
#include "color/mix.h"
#include "config/machine.h"
#include "config/palette.h"

#define SOLVE_TARGETS 24

/*
 * One run solves SOLVE_TARGETS targets with the example machine's limits (3
 * paints, 0.1 ml units, 0.5..3 ml) and reports the mean time per target.
 * Half the targets are colours the paints mix (in gamut), half random Lab
 * colours (mostly out of gamut, the harder search). Loading the palette and
 * building the model happen once, outside the timing.
 */
int bench_mix_solve(double *value, int quick, bl_err *err)
{
	static struct mix_model *m;
	static struct mix_limits lim;
	static color_lab targets[SOLVE_TARGETS];
	double t0;

	if (!m) {
		struct palette *p = malloc(sizeof(*p));
		struct machine *mc = malloc(sizeof(*mc));
		struct mix_model *mm = malloc(sizeof(*mm));
		int rc = p && mc && mm ? 0 : bl_fail(err, BL_ENOMEM, "out of memory");
		rng r;

		if (rc == 0)
			rc = palette_load(BL_SOURCE_ROOT "/palettes/kimera-13.json", p, err);
		if (rc == 0)
			rc = machine_load(BL_SOURCE_ROOT "/examples/machine-sim.json", mc, err);
		if (rc == 0)
			rc = mix_model_from_palette(p, mm, err);
		if (rc == 0)
			mix_limits_from_machine(mc, &lim);
		free(p);
		free(mc);
		if (rc) {
			free(mm);
			return rc;
		}
		rng_init(&r, 42);
		for (int t = 0; t < SOLVE_TARGETS; t++) {
			if (t % 2) {
				targets[t] = (color_lab){ 25.0 + 70.0 * rng_uniform(&r),
							  -50.0 + 100.0 * rng_uniform(&r),
							  -50.0 + 100.0 * rng_uniform(&r) };
			} else {
				double amt[MIX_MAX_PAINTS] = { 0 };

				for (int j = 0; j <= t % 3; j++)
					amt[rng_below(&r, (uint64_t)mm->n_paints)] +=
						1.0 + (double)rng_below(&r, 9);
				mix_predict(mm, NULL, amt, &targets[t]);
			}
		}
		m = mm;
	}
	t0 = bench_now_ms();
	for (int t = 0; t < SOLVE_TARGETS; t++) {
		struct mix_solution sol;
		int rc = mix_solve(m, NULL, &targets[t], &lim, &sol, err);

		if (rc)
			return rc;
	}
	*value = (bench_now_ms() - t0) / SOLVE_TARGETS;
	return 0;
}

/* bench_core.c: benchmarks of the foundation: CIEDE2000 and loading the machine file. */
#include <stdlib.h>

#include "bench/bench.h"
#include "color/color.h"
#include "config/machine.h"

int bench_color_de2000(double *value, int quick, bl_err *err)
{
	enum { N = 200000 };
	volatile double sink = 0.0;
	double t0;

	(void)err;
	t0 = bench_now_ms();
	for (int i = 0; i < N; i++) {
		color_lab x = { 50.0, (i % 97) - 48.0, (i % 89) - 44.0 };
		color_lab y = { 55.0, (i % 83) - 41.0, (i % 79) - 39.0 };

		sink += color_de00(&x, &y);
	}
	*value = (bench_now_ms() - t0) * 1e6 / N;
	(void)sink;
	return 0;
}

int bench_config_load(double *value, int quick, bl_err *err)
{
	struct machine *m = malloc(sizeof(*m));
	double t0;
	int rc;

	if (!m)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	t0 = bench_now_ms();
	rc = machine_load(BL_SOURCE_ROOT "/examples/machine-sim.json", m, err);
	*value = bench_now_ms() - t0;
	free(m);
	return rc;
}

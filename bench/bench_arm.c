/* bench_arm.c: benchmarks of the arm backends' host side: SCARA inverse kinematics, which the modbus backend runs for every 2 mm of tool path. */
#include <stdlib.h>

#include "arm/kin.h"
#include "bench/bench.h"

int bench_arm_kin_scara(double *value, int quick, bl_err *err)
{
	enum { N = 200000 };
	struct machine *m = malloc(sizeof(*m));
	double j[ARM_KIN_JOINTS], t0, sink = 0.0;
	int rc;

	if (!m)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	if ((rc = machine_load(BL_SOURCE_ROOT "/examples/machine-sim.json", m, err))) {
		free(m);
		return rc;
	}
	m->kin.type = MACHINE_KIN_SCARA;
	m->kin.base_mm[0] = 350;
	m->kin.base_mm[1] = -100;
	m->kin.l1_mm = 350;
	m->kin.l2_mm = 300;
	m->kin.j1_deg[0] = -10;
	m->kin.j1_deg[1] = 190;
	m->kin.j2_deg[0] = -160;
	m->kin.j2_deg[1] = 160;
	t0 = bench_now_ms();
	for (int i = 0; i < N; i++) {
		arm_point p = { 150 + (i % 400), 100 + (i % 300), 0 };

		if ((rc = arm_kin_inverse(m, &p, j, err)))
			break;
		sink += j[0];
	}
	*value = (bench_now_ms() - t0) * 1e6 / N;
	free(m);
	return sink != sink ? BL_EIO : rc;
}

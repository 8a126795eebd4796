/* bench_calib.c: benchmarks of calibration: a whole camera session on a simulated chart frame (finding, measuring, three models with leave-one-out, the ICC profile). */
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "bench/bench.h"
#include "calib/calib.h"
#include "sim/sim.h"

static struct img chart;
static struct calib_chart cc;

static int setup(bl_err *err)
{
	struct machine *m;
	struct sim_options o = { 1, 1, NULL };
	struct sim *s;
	struct cam_frame f = { 0 };
	clk c;
	int rc;

	if (chart.px)
		return 0;
	m = malloc(sizeof(*m));
	if (!m)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	rc = machine_load(BL_SOURCE_ROOT "/examples/machine-sim.json", m, err);
	if (rc == 0)
		rc = calib_chart_builtin("colorchecker24", &cc, err);
	clk_virtual_init(&c, 0);
	if (rc == 0)
		rc = sim_open(m, &o, &c, &s, err);
	if (rc == 0) {
		rc = sim_render(s, SIM_SCENE_CHART, &f, err);
		if (rc == 0)
			rc = img_decode_frame(&f, m->camera.max_pixels, &chart, err);
		cam_frame_free(&f);
		sim_close(s);
	}
	free(m);
	return rc;
}

int bench_calib_camera(double *value, int quick, bl_err *err)
{
	struct calib_camera_opts o = { 0 };
	struct calib_camera_result *r;
	double t0;
	int rc = setup(err);

	if (rc)
		return rc;
	o.chart = &cc;
	o.frame_name = "bench chart";
	o.model = -1;
	t0 = bench_now_ms();
	rc = calib_camera_run(&chart, &o, &r, err);
	*value = bench_now_ms() - t0;
	calib_camera_free(r);
	return rc;
}

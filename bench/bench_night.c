/* bench_night.c: a night on the simulator: a whole closed-loop run of a committed real photograph, as wall seconds per 8 h of simulated arm time. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/json.h"
#include "bench/bench.h"
#include "calib/calib.h"
#include "engine/run.h"
#include "report/report.h"

#define NIGHT_TARGET BL_SOURCE_ROOT "/examples/targets/real/chelsea.png"
#define NIGHT_ARM_S (8.0 * 3600.0) /* a night of painting, in arm time */

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* The arm time status reports for the run in dir, s. */
static int arm_seconds(const char *dir, double *arm_s, bl_err *err)
{
	cJSON *st = NULL;
	const cJSON *cost, *arm;
	int rc = run_status(dir, &st, err);

	if (rc)
		return rc;
	cost = cJSON_GetObjectItemCaseSensitive(st, "cost");
	arm = cost ? cJSON_GetObjectItemCaseSensitive(cost, "arm_s") : NULL;
	if (!cJSON_IsNumber(arm) || !(arm->valuedouble > 0.0))
		rc = bl_fail(err, BL_EIO, "%s: the run reports no arm time", dir);
	else
		*arm_s = arm->valuedouble;
	cJSON_Delete(st);
	return rc;
}

/*
 * The run is what `brushloop run examples/targets/real/chelsea.png
 * --accept-nearest` paints on the example simulator machine: planning,
 * mixing, every verification and the correction rounds, with the journal,
 * state and frames on disk. Its wall time is scaled to 8 h of arm time.
 */
int bench_sim_night_real(double *value, int quick, bl_err *err)
{
	char dir[] = "/tmp/brushloop-night-XXXXXX", out[64];
	struct run_options o;
	double t0, arm_s = 0.0;
	int rc;

	if (!mkdtemp(dir))
		return bl_fail(err, BL_EIO, "bench: cannot make a temporary directory");
	snprintf(out, sizeof(out), "%s/run", dir);
	run_options_init(&o);
	o.calibration = calib_for_run;
	o.report = report_for_run;
	o.target = NIGHT_TARGET;
	o.machine_path = BL_SOURCE_ROOT "/examples/machine-sim.json";
	o.palette_path = BL_SOURCE_ROOT "/examples/palette.json";
	o.out_dir = out;
	o.seed = 1;
	o.quiet = 1;
	o.accept_nearest = 1;
	if (quick) {
		/* The same photograph, 8 strokes of 2 colours: still mixed, verified and corrected twice. */
		o.max_strokes = 8;
		o.colours = 2;
	}
	if (bench_phases)
		prof_enable(1);
	t0 = bench_now_ms();
	rc = run_start(&o, err);
	*value = (bench_now_ms() - t0) / 1000.0;
	if (rc == 0)
		rc = arm_seconds(out, &arm_s, err);
	if (rc == 0)
		*value *= NIGHT_ARM_S / arm_s;
	if (bench_phases) {
		struct prof_totals t;

		prof_read(&t);
		prof_enable(0);
		for (int i = 0; rc == 0 && i < PROF_COUNT; i++) {
			bench_phase_sum.wall_s[i] += t.wall_s[i] * NIGHT_ARM_S / arm_s;
			bench_phase_sum.cpu_s[i] += t.cpu_s[i] * NIGHT_ARM_S / arm_s;
		}
		bench_phase_runs += rc == 0;
	}
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	return rc;
}

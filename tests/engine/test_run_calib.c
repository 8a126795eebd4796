/* test_run_calib.c: the example simulator machine's committed camera profile still matches a fresh `brushloop calib camera`, and runs use it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "color/color.h"
#include "config/machine.h"
#include "test.h"
#include "vision/measure.h"

static const char *src(const char *rel)
{
	static char p[2][4096];
	static int k;
	char *out = p[k++ % 2];

	snprintf(out, 4096, "%s/%s", getenv("BRUSHLOOP_SRC"), rel);
	return out;
}

TEST(committed_profile_matches_a_fresh_calibration)
{
	char fresh[4200];
	struct meas_profile *a = NULL, *b = NULL;
	struct machine m;
	bl_err err = { 0 };
	double sum = 0.0, worst = 0.0;
	int n = 0;

	/* The machine file names the committed profile. */
	CHECK(machine_load(src("examples/machine-sim.json"), &m, &err) == 0);
	CHECK_STR_CONTAINS(m.calibration.camera_profile, "examples/calibration/sim-camera.icc");
	snprintf(fresh, sizeof(fresh), "%s/fresh.icc", test_tmpdir());
	{
		/* The command examples/calibration/make-sim-camera.sh runs, into the test's directory. */
		const char *args[] = { "calib", "camera", "--machine", src("examples/machine-sim.json"),
				       "--seed", "1", "-o", fresh, NULL };

		CHECK(test_brushloop(args, NULL, NULL) == 0);
	}
	CHECK_MSG(meas_profile_open(m.calibration.camera_profile, &a, &err) == 0, "%s", err.msg);
	CHECK_MSG(meas_profile_open(fresh, &b, &err) == 0, "%s", err.msg);
	if (!a || !b)
		goto out;
	CHECK(meas_profile_calibrated(a) && meas_profile_calibrated(b));
	/* Both profiles over a grid of camera code values: the same colours within a tolerance. */
	for (int r = 0; r <= 8; r++)
		for (int g = 0; g <= 8; g++)
			for (int bl = 0; bl <= 8; bl++) {
				const double rgb[3] = { r / 8.0, g / 8.0, bl / 8.0 };
				color_lab la, lb;
				double de;

				meas_profile_lab(a, rgb, &la);
				meas_profile_lab(b, rgb, &lb);
				de = color_de00(&la, &lb);
				sum += de;
				worst = de > worst ? de : worst;
				n++;
			}
	/* Stated tolerance: mean 0.1, worst 0.5 CIEDE2000; regenerate with examples/calibration/make-sim-camera.sh. */
	CHECK_MSG(sum / n <= 0.1 && worst <= 0.5,
		  "committed profile against a fresh one: mean %.3f, worst %.3f CIEDE2000 "
		  "(regenerate: examples/calibration/make-sim-camera.sh)", sum / n, worst);
out:
	meas_profile_close(a);
	meas_profile_close(b);
}

TEST(a_bad_profile_path_is_refused_naming_it)
{
	char path[4200], *err = NULL;
	FILE *f;
	const char *args[] = { "run", src("examples/targets/flat-shapes.png"), "--machine", path,
			       "--out", NULL, NULL };
	char out[4200];
	char *text = NULL;

	/* The example machine with its profile path pointing nowhere. */
	snprintf(path, sizeof(path), "%s/m.json", test_tmpdir());
	snprintf(out, sizeof(out), "%s/run", test_tmpdir());
	args[5] = out;
	{
		FILE *in = fopen(src("examples/machine-sim.json"), "r");
		size_t len;
		char *p;

		CHECK(in != NULL);
		if (!in)
			return;
		text = calloc(1, 1 << 20);
		len = fread(text, 1, (1 << 20) - 1, in);
		fclose(in);
		text[len] = '\0';
		p = strstr(text, "calibration/sim-camera.icc");
		CHECK(p != NULL);
		if (!p) {
			free(text);
			return;
		}
		f = fopen(path, "w");
		fprintf(f, "%.*s/nonexistent/camera.icc%s", (int)(p - text), text,
			p + strlen("calibration/sim-camera.icc"));
		fclose(f);
		free(text);
	}
	CHECK(test_brushloop(args, NULL, &err) == 2);
	CHECK_STR_CONTAINS(err, "camera.icc");
	free(err);
}

TEST_MAIN(T(committed_profile_matches_a_fresh_calibration), T(a_bad_profile_path_is_refused_naming_it))

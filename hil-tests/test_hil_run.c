/* test_hil_run.c: `brushloop run` paints a small picture with the arm on the native firmware board over a real serial line; paint and camera are the simulator's, following the real arm (the rig's shadow). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cJSON.h>

#include "base/fs.h"
#include "hil.h"
#include "test.h"

/* The blank canvas the run saw first, against the target, as `brushloop measure` compares them. */
static double blank_mean(const char *dir, const char *target)
{
	char frame[4300], geom[4300], *out = NULL;
	const char *argv[] = { hil_env("BRUSHLOOP"), "measure", frame, "--canvas", "--target", target,
			       "--geometry", geom, "--cell", "10", "--json", NULL };
	double v = -1.0;
	cJSON *j;

	snprintf(frame, sizeof(frame), "%s/frames/000001-blank.jpg", dir);
	snprintf(geom, sizeof(geom), "%s/canvas.json", dir);
	if (hil_run(argv, 20, &out, NULL) == 0 && (j = cJSON_Parse(out ? out : ""))) {
		const cJSON *m = cJSON_GetObjectItem(j, "mean_de00");

		v = cJSON_IsNumber(m) ? m->valuedouble : -1.0;
		cJSON_Delete(j);
	}
	free(out);
	CHECK_MSG(v > 10.0, "the blank canvas measured %.2f against the target", v);
	return v;
}

TEST(a_small_painting_over_the_serial_line)
{
	/* Firmware time at 50 times the wall clock: a few minutes of arm motion in seconds. */
	static const char *const fw_args[] = { "--speedup", "50", NULL };
	struct hil_target t;
	char dir[4200], target[4200], journal[4300], canvas[4300], *out = NULL, *err = NULL;
	const char *machine;
	struct stat sb;
	modbus_t *mb;
	int rc;

	hil_start(&t, fw_args);
	machine = hil_machine_file("machine-modbus-shadow.json", "/tmp/brushloop-fw", t.tty);
	snprintf(dir, sizeof(dir), "%s/run", test_tmpdir());
	snprintf(target, sizeof(target), "%s/examples/targets/flat-shapes.png", hil_env("BRUSHLOOP_SRC"));
	{
		const char *argv[] = { hil_env("BRUSHLOOP"), "run", target, "--machine", machine,
				       "--out", dir, "--max-strokes", "6", "--colours", "2",
				       "--accept-nearest", "--quiet", NULL };

		rc = hil_run(argv, 100, &out, &err);
	}
	CHECK_MSG(rc == 0, "run exited %d: %s%s", rc, out ? out : "", err ? err : "");
	CHECK_STR_CONTAINS(out, "state: finished");
	free(out);
	free(err);
	snprintf(journal, sizeof(journal), "%s/journal.jsonl", dir);
	snprintf(canvas, sizeof(canvas), "%s/final-canvas.png", dir);
	CHECK(stat(canvas, &sb) == 0);
	/* The gate let strokes through to the modbus arm, and each was done. */
	CHECK(hil_count(journal, "\"kind\":\"stroke\",\"segments\"") >= 6);
	CHECK(hil_count(journal, "\"result\":\"done\"") > 20);
	/* The camera saw paint: the verdicts and the final canvas rest on the shadow world. */
	CHECK(hil_count(journal, "\"event\":\"verified\"") >= 1);
	{
		const char *argv[] = { hil_env("BRUSHLOOP"), "status", dir, "--json", NULL };
		cJSON *st;
		const cJSON *mean, *cost;

		CHECK(hil_run(argv, 20, &out, NULL) == 0);
		st = cJSON_Parse(out ? out : "");
		mean = cJSON_GetObjectItem(cJSON_GetObjectItem(st, "canvas"), "mean_de00");
		cost = cJSON_GetObjectItem(st, "cost");
		/* The shadow world was painted: the final canvas is clearly closer to the target than the blank. */
		CHECK(cJSON_IsNumber(mean) && mean->valuedouble < blank_mean(dir, target) - 2.0);
		/* Arm time is the firmware's own clock, read over Modbus. */
		CHECK(cJSON_GetObjectItem(cost, "arm_s")->valuedouble > 30.0);
		cJSON_Delete(st);
		free(out);
	}
	/* The firmware ran the segments: its counters, read by an independent master. */
	mb = hil_modbus(&t);
	CHECK(hil_in32(mb, FW_IR_DONE) > 50);
	CHECK(hil_in32(mb, FW_IR_DONE) == hil_in32(mb, FW_IR_ACCEPTED));
	CHECK(hil_in(mb, FW_IR_FAULT) == 0);
	modbus_close(mb);
	modbus_free(mb);
	CHECK(hil_stop(&t) == 0);
}

TEST_MAIN(T(a_small_painting_over_the_serial_line))

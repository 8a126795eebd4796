/* calib_test.h: helpers the calibration tests share: the example machine, simulated frames with their truth, edited images, the CLI. */
#ifndef BL_TESTS_CALIB_TEST_H
#define BL_TESTS_CALIB_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/clock.h"
#include "base/fs.h"
#include "base/json.h"
#include "calib/calib.h"
#include "config/machine.h"
#include "sim/sim.h"
#include "test.h"

/* A path under the source tree (four static buffers in turn). */
static inline const char *src_path(const char *rel)
{
	static char p[4][4096];
	static int k;
	const char *src = getenv("BRUSHLOOP_SRC");

	k = (k + 1) % 4;
	snprintf(p[k], sizeof(p[k]), "%s/%s", src ? src : BL_SOURCE_ROOT, rel);
	return p[k];
}

/* A path in the test's temporary directory (eight static buffers in turn). */
static inline const char *tmp_path(const char *name)
{
	static char p[8][4096];
	static int k;

	k = (k + 1) % 8;
	snprintf(p[k], sizeof(p[k]), "%s/%s", test_tmpdir(), name);
	return p[k];
}

static inline int file_exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

static inline struct machine *example_machine(void)
{
	static struct machine m;
	bl_err err = { 0 };

	if (!m.name[0] && machine_load(src_path("examples/machine-sim.json"), &m, &err)) {
		fprintf(stderr, "example machine: %s\n", err.msg);
		exit(1);
	}
	return &m;
}

/*
 * Renders one frame of the simulator's scene (seed, after hours of
 * simulated night, card for the card scene) to frame (JPEG) and its truth
 * to truth (may be NULL).
 */
static inline void sim_frame(enum sim_scene scene, uint64_t seed, double hours,
			     const struct sim_card *card, const char *frame, const char *truth)
{
	struct sim_options o = { seed, 1, NULL };
	struct sim *s;
	struct cam_frame f = { 0 };
	cJSON *t = NULL;
	clk c;
	bl_err err = { 0 };

	clk_virtual_init(&c, 0);
	if (sim_open(example_machine(), &o, &c, &s, &err)) {
		fprintf(stderr, "sim_open: %s\n", err.msg);
		exit(1);
	}
	clk_advance(&c, (int64_t)(hours * 3600e9));
	if ((card && sim_set_card(s, card, &err)) || sim_render(s, scene, &f, &err) ||
	    fs_write_atomic(frame, f.data, f.len, &err) ||
	    (truth && (sim_truth(s, scene, &t, &err) || json_write_file(truth, t, &err)))) {
		fprintf(stderr, "sim frame: %s\n", err.msg);
		exit(1);
	}
	cJSON_Delete(t);
	cam_frame_free(&f);
	sim_close(s);
}

/* The simulator's chart frame of seed 1 (no truth), rendered once for the binary. */
static inline const char *chart_seed1(void)
{
	static char f[4096];

	if (!f[0]) {
		snprintf(f, sizeof(f), "%s", tmp_path("chart.jpg"));
		sim_frame(SIM_SCENE_CHART, 1, 0, NULL, f, NULL);
	}
	return f;
}

/* Runs the CLI; returns the exit status, frees the output unless asked for it. */
static inline int run_cli(const char *const *args, char **out, char **errout)
{
	char *o = NULL, *e = NULL;
	int rc = test_brushloop(args, &o, &e);

	if (out)
		*out = o;
	else
		free(o);
	if (errout)
		*errout = e;
	else
		free(e);
	return rc;
}

/* The figure "KEY.mean_de00" style number at a dotted path of a JSON text; NaN when absent. */
static inline double json_at(const char *text, const char *path)
{
	cJSON *root = text ? cJSON_Parse(text) : NULL;
	const cJSON *n = root;
	char buf[256], *save = NULL;
	double v = NAN;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *k = strtok_r(buf, ".", &save); n && k; k = strtok_r(NULL, ".", &save))
		n = cJSON_GetObjectItemCaseSensitive(n, k);
	if (n && cJSON_IsNumber(n))
		v = n->valuedouble;
	else if (n && cJSON_IsBool(n))
		v = cJSON_IsTrue(n);
	cJSON_Delete(root);
	return v;
}

/* Writes a machine file: the example with its calibration object replaced by calibration_json. */
static inline const char *machine_with(const char *name, const char *calibration_json)
{
	static char path[4096];
	char *text;
	size_t len;
	bl_err err = { 0 };
	const char *key = "\"calibration\": { \"camera_profile\": \"calibration/sim-camera.icc\", "
			  "\"light_map\": \"calibration/sim-light.json\", "
			  "\"max_arm_residual_mm\": 1.0, \"max_canvas_error_mm\": 0.5, "
			  "\"max_camera_de00\": 1.5, \"follow_lamp\": true }";
	char *at, *out;

	if (fs_read_file(src_path("examples/machine-sim.json"), 1 << 20, &text, &len, &err)) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
	at = strstr(text, key);
	if (!at) {
		fprintf(stderr, "machine_with: the example's calibration line changed\n");
		exit(1);
	}
	out = malloc(len + strlen(calibration_json) + 64);
	memcpy(out, text, (size_t)(at - text));
	sprintf(out + (at - text), "\"calibration\": %s%s", calibration_json, at + strlen(key));
	snprintf(path, sizeof(path), "%s", tmp_path(name));
	if (fs_write_atomic(path, out, strlen(out), &err)) {
		fprintf(stderr, "%s\n", err.msg);
		exit(1);
	}
	free(out);
	free(text);
	return path;
}

#endif

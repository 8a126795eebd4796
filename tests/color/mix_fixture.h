/* mix_fixture.h: what the mixing tests share: the Kimera palette and measurements, read independently of the code under test. */
#ifndef BL_TESTS_MIX_FIXTURE_H
#define BL_TESTS_MIX_FIXTURE_H

#include <cJSON.h>

#include "base/fs.h"
#include "color/cie.h"
#include "color/mix.h"
#include "test.h"

static inline const char *fx_src(const char *rel)
{
	static char p[4][4096];
	static int k;
	const char *src = getenv("BRUSHLOOP_SRC");

	k = (k + 1) % 4;
	snprintf(p[k], sizeof(p[k]), "%s/%s", src ? src : BL_SOURCE_ROOT, rel);
	return p[k];
}

/* The committed palette's model (exits on failure: nothing else can run without it). */
static inline void fx_model(struct mix_model *m)
{
	static struct palette p;
	bl_err err;

	if (palette_load(fx_src("palettes/kimera-13.json"), &p, &err) ||
	    mix_model_from_palette(&p, m, &err)) {
		fprintf(stderr, "cannot build the kimera-13 model: %s\n", err.msg);
		exit(1);
	}
}

/* The example machine's limits: 0.1 ml units, 5..30 units, 3 paints, tolerance 2. */
static inline void fx_limits(struct mix_limits *lim)
{
	static struct machine mc;
	bl_err err;

	if (machine_load(fx_src("examples/machine-sim.json"), &mc, &err)) {
		fprintf(stderr, "cannot load the example machine: %s\n", err.msg);
		exit(1);
	}
	mix_limits_from_machine(&mc, lim);
}

/*
 * A measured patch of the Kimera files: the Lab (D50) of its averaged
 * spectrum through the CIE code, and for tints the paint's weight fraction.
 * Parsed here with plain cJSON, not through the derivation's reader.
 */
struct fx_patch {
	char key[96];  /* the entry's name in the file */
	char name[64]; /* the paint */
	double lab[3];
	double frac;
};

static inline int fx_measurements(const char *rel, struct fx_patch *out, int max)
{
	char *text = NULL;
	size_t len;
	cJSON *doc, *it, *wl = NULL;
	double sum[32][512], wlv[512];
	int counts[32] = { 0 }, n = 0, nwl = 0;

	if (fs_read_file(fx_src(rel), 1 << 24, &text, &len, NULL) != 0)
		return -1;
	doc = cJSON_Parse(text);
	free(text);
	if (!doc)
		return -1;
	cJSON_ArrayForEach(it, doc) {
		cJSON *type = cJSON_GetObjectItem(it, "type"), *r, *v;
		const char *name;
		int k, j = 0;

		if (strcmp(type->valuestring, "wavelengths") == 0) {
			wl = cJSON_GetObjectItem(it, "values");
			cJSON_ArrayForEach(v, wl)
				wlv[nwl++] = v->valuedouble;
			continue;
		}
		name = cJSON_GetObjectItem(it, "name")->valuestring;
		for (k = 0; k < n; k++)
			if (strcmp(out[k].key, name) == 0)
				break;
		if (k == n) {
			cJSON *comp = cJSON_GetObjectItem(it, "components");

			if (n == max)
				break;
			memset(&out[n], 0, sizeof(out[n]));
			snprintf(out[n].key, sizeof(out[n].key), "%s", name);
			snprintf(out[n].name, sizeof(out[n].name), "%s", name);
			out[n].frac = 1.0;
			if (comp) {
				double w = 0.0, p = 0.0;
				cJSON *c;

				cJSON_ArrayForEach(c, comp) {
					w += c->valuedouble;
					if (strcmp(c->string, "white") != 0) {
						p = c->valuedouble;
						snprintf(out[n].name, sizeof(out[n].name), "%s", c->string);
					}
				}
				out[n].frac = p / w;
			}
			memset(sum[n], 0, sizeof(sum[n]));
			n++;
		}
		r = cJSON_GetObjectItem(it, "reflectance");
		cJSON_ArrayForEach(v, r)
			sum[k][j++] += v->valuedouble / 100.0;
		counts[k]++;
	}
	cJSON_Delete(doc);
	for (int k = 0; k < n; k++) {
		double grid[CIE_N];

		for (int j = 0; j < nwl; j++)
			sum[k][j] /= counts[k];
		cie_resample(wlv, sum[k], nwl, grid);
		cie_reflectance_to_lab_d50(grid, out[k].lab);
	}
	return n;
}

static inline int fx_cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

#endif

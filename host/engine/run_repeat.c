/* run_repeat.c: the camera checked before the night: the blank canvas and an empty mixing cell observed several times before anything is painted, and the spread of the run's own measurement held to a fraction of the mix tolerance. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/log.h"
#include "color/color.h"
#include "engine/run_int.h"

#define CELL_MM 10 /* the canvas cells the loop steers by */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Each 10 mm cell's mean Lab of observation c into cells (nx * ny * 3). */
static void cell_means(const struct run_canvas *c, int nx, int ny, double *cells)
{
	for (int j = 0; j < ny; j++)
		for (int i = 0; i < nx; i++) {
			double s[3] = { 0, 0, 0 };
			int n = 0;

			for (int y = j * CELL_MM; y < (j + 1) * CELL_MM && y < c->h; y++)
				for (int x = i * CELL_MM; x < (i + 1) * CELL_MM && x < c->w; x++, n++)
					for (int k = 0; k < 3; k++)
						s[k] += c->lab[((size_t)y * c->w + x) * 3 + k];
			for (int k = 0; k < 3; k++)
				cells[((size_t)j * nx + i) * 3 + k] = n ? s[k] / n : 0;
		}
}

static double de00(const double *a, const double *b)
{
	color_lab x = { a[0], a[1], a[2] }, y = { b[0], b[1], b[2] };

	return color_de00(&x, &y);
}

/* The largest CIEDE2000 of n Lab values (stride 3 * stride_n) from their mean. */
static double spread(const double *v, int n, size_t stride)
{
	double mean[3] = { 0, 0, 0 }, worst = 0;

	for (int i = 0; i < n; i++)
		for (int k = 0; k < 3; k++)
			mean[k] += v[i * stride + k] / n;
	for (int i = 0; i < n; i++)
		worst = fmax(worst, de00(v + i * stride, mean));
	return worst;
}

int run_camera_check(struct run *r, bl_err *err)
{
	const int n = r->m.camera.repeat_observations;
	const struct machine_station *cell = r->m.n_cells ? &r->m.cells[0] : NULL;
	const double limit = r->m.camera.repeat_max_fraction * r->m.tolerances.mix_de00;
	int64_t t0 = clk_real_ns();
	double *cells = NULL, *ref = NULL, *dev = NULL, canvas_p95 = 0, ref_de = 0, figure;
	int nx = 0, ny = 0, rc = 0;
	cJSON *d;

	if (n < 2 || !cell)
		return 0;
	ref = calloc((size_t)n * 3, sizeof(double));
	for (int i = 0; i < n && rc == 0; i++) {
		struct run_canvas c = { 0 };
		color_lab lab;
		char what[32], frame[RUN_PATH_MAX];

		snprintf(what, sizeof(what), "repeat-%d", i + 1);
		if ((rc = run_observe_canvas(r, what, &c, err)) == 0) {
			if (!cells) {
				nx = c.w / CELL_MM;
				ny = c.h / CELL_MM;
				cells = calloc((size_t)n * nx * ny * 3, sizeof(double));
			}
			if (cells && ref && c.w / CELL_MM == nx && c.h / CELL_MM == ny)
				cell_means(&c, nx, ny, cells + (size_t)i * nx * ny * 3);
			rc = run_observe_cell(r, cell->name, &lab, frame, sizeof(frame), err);
			if (rc == 0 && ref) {
				ref[3 * i] = lab.L;
				ref[3 * i + 1] = lab.a;
				ref[3 * i + 2] = lab.b;
			}
		}
		run_canvas_free(&c);
	}
	if (rc == 0 && (!cells || !ref || !(dev = malloc(sizeof(double) * (size_t)(nx * ny + 1)))))
		rc = bl_fail(err, BL_ENOMEM, "out of memory");
	if (rc)
		goto out;
	/* Each cell's spread over the observations; the canvas's figure is the 95th percentile of the cells'. */
	for (int k = 0; k < nx * ny; k++)
		dev[k] = spread(cells + 3 * (size_t)k, n, (size_t)nx * ny * 3);
	qsort(dev, (size_t)(nx * ny), sizeof(double), cmp_double);
	canvas_p95 = nx > 0 && ny > 0 ? dev[(int)(0.95 * (nx * ny - 1))] : 0;
	ref_de = spread(ref, n, 3);
	figure = fmax(canvas_p95, ref_de);
	d = cJSON_CreateObject();
	cJSON_AddNumberToObject(d, "observations", n);
	cJSON_AddNumberToObject(d, "canvas_p95_de00", canvas_p95);
	cJSON_AddStringToObject(d, "reference", cell->name);
	cJSON_AddNumberToObject(d, "reference_de00", ref_de);
	cJSON_AddNumberToObject(d, "spread_de00", figure);
	cJSON_AddNumberToObject(d, "limit_de00", limit);
	cJSON_AddNumberToObject(d, "ms", (double)(clk_real_ns() - t0) / 1e6);
	if ((rc = run_event(r, "camera_check", d, err)))
		goto out;
	if (figure > limit) {
		char why[512];

		snprintf(why, sizeof(why), "the camera does not repeat its own measurement: over %d "
			 "observations of the blank canvas and cell '%s' it spreads %.2f CIEDE2000 (canvas "
			 "cells, 95th percentile, %.2f; the cell %.2f), more than camera.repeat_max_fraction "
			 "%g of tolerances.mix_de00 %g = %.2f: lock the camera's exposure and white "
			 "balance, steady the light, or average more frames (camera.average_frames)", n,
			 cell->name, figure, canvas_p95, ref_de, r->m.camera.repeat_max_fraction,
			 r->m.tolerances.mix_de00, limit);
		if (!r->opt.attended)
			rc = bl_fail(err, BL_EINVAL, "%s", why);
		else
			log_warn("%s", why);
	}
out:
	free(cells);
	free(ref);
	free(dev);
	return rc;
}

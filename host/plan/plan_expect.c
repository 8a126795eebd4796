/* plan_expect.c: a plan's expected results: each paint batch's cells with the canvas predicted after it, how much of each it repaints, and each checkpoint's whole canvas. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan_build_int.h"
#include "plan/plan_int.h"

/* ---- the prediction and its expected results ------------------------ */

int pm_expect_init(struct expect_grid *e, const struct pm_grid *g, double cell_mm,
		   bl_err *err)
{
	size_t n = (size_t)g->w * g->h;

	pm_grid_cells(g, cell_mm, &e->cols, &e->rows);
	e->cell_of = malloc(n * sizeof(int));
	e->mark = calloc(n, sizeof(uint32_t));
	e->cell_px = calloc((size_t)e->cols * e->rows, sizeof(int));
	e->covered = calloc((size_t)e->cols * e->rows, sizeof(int));
	e->slot = malloc((size_t)e->cols * e->rows * sizeof(int));
	e->rep_sum = malloc((size_t)e->cols * e->rows * sizeof(double));
	e->rep_n = malloc((size_t)e->cols * e->rows * sizeof(long));
	if (!e->cell_of || !e->mark || !e->cell_px || !e->covered || !e->slot || !e->rep_sum || !e->rep_n)
		return bl_fail(err, BL_ENOMEM, "out of memory for expected results");
	for (int c = 0; c < e->cols * e->rows; c++)
		e->slot[c] = -1;
	for (int y = 0; y < g->h; y++)
		for (int x = 0; x < g->w; x++) {
			int c = pm_cell_of(g, cell_mm, e->cols, e->rows, x, y);

			e->cell_of[(size_t)y * g->w + x] = c;
			e->cell_px[c]++;
		}
	return 0;
}

void pm_expect_free(struct expect_grid *e)
{
	free(e->cell_of);
	free(e->mark);
	free(e->cell_px);
	free(e->covered);
	free(e->slot);
	free(e->rep_sum);
	free(e->rep_n);
}

static void cell_mean(const struct expect_grid *e, const struct pm_grid *g, const float *canvas,
		      int c, color_lab *out)
{
	double s[3] = { 0, 0, 0 };
	int n = 0, cx = c % e->cols, cy = c / e->cols;

	for (int y = 0; y < g->h; y++) {
		size_t row = (size_t)y * g->w;

		if (e->cell_of[row] / e->cols != cy)
			continue;
		for (int x = 0; x < g->w; x++)
			if (e->cell_of[row + x] == c) {
				for (int q = 0; q < 3; q++)
					s[q] += canvas[3 * (row + x) + q];
				n++;
			}
	}
	(void)cx;
	out->L = n ? pm_r2(s[0] / n) : 0;
	out->a = n ? pm_r2(s[1] / n) : 0;
	out->b = n ? pm_r2(s[2] / n) : 0;
}

static int cmp_cover(const void *a, const void *b)
{
	const struct plan_cell *x = a, *y = b;

	if (x->coverage != y->coverage)
		return (x->coverage < y->coverage) - (x->coverage > y->coverage);
	return (x->row * 100000 + x->col) - (y->row * 100000 + y->col);
}

static int cmp_pos(const void *a, const void *b)
{
	const struct plan_cell *x = a, *y = b;

	return (x->row * 100000 + x->col) - (y->row * 100000 + y->col);
}

/* The cells a batch paints, with the canvas predicted there right after it. */
int pm_batch_expect(struct plan_subtask *s, const struct expect_grid *e,
		    const struct pm_grid *g, const float *canvas, uint32_t batch_mark,
		    bl_err *err)
{
	size_t nc = (size_t)e->cols * e->rows, n = 0;
	struct plan_cell *cells;

	memset(e->covered, 0, nc * sizeof(int));
	for (size_t i = 0; i < (size_t)g->w * g->h; i++)
		if (e->mark[i] == batch_mark)
			e->covered[e->cell_of[i]]++;
	for (size_t c = 0; c < nc; c++)
		n += e->covered[c] > 0;
	cells = calloc(n ? n : 1, sizeof(*cells));
	if (!cells)
		return bl_fail(err, BL_ENOMEM, "out of memory for expected results");
	n = 0;
	for (size_t c = 0; c < nc; c++)
		if (e->covered[c] > 0) {
			cells[n].col = (int)(c % e->cols);
			cells[n].row = (int)(c / e->cols);
			cells[n].coverage = round(100.0 * e->covered[c] / e->cell_px[c]) / 100.0;
			n++;
		}
	/* Cells mostly painted by the batch say most about it; fine strokes may half-cover only a few. */
	qsort(cells, n, sizeof(*cells), cmp_cover);
	{
		size_t keep = 0;

		while (keep < n && cells[keep].coverage >= 0.5)
			keep++;
		if (keep < 4)
			keep = n < 4 ? n : 4;
		n = keep;
	}
	qsort(cells, n, sizeof(*cells), cmp_pos);
	for (size_t i = 0; i < n; i++)
		cell_mean(e, g, canvas, cells[i].row * e->cols + cells[i].col, &cells[i].lab);
	s->cells = cells;
	s->n_cells = n;
	return 0;
}

/*
 * How much of each listed cell's colour the batch replaced in the model:
 * per pixel, the share of the way from its colour before to the paint
 * (what Lab blending moved it), averaged over the cell's pixels. One pass
 * over the grid adds each pixel to its cell's sum when the cell is the
 * batch's (e->slot), so each sum takes its pixels in grid order.
 */
void pm_batch_repaint(struct plan_subtask *s, const struct expect_grid *e,
		      const struct pm_grid *g, const float *before, const float *after,
		      const float *paint, uint32_t batch_mark)
{
	for (size_t c = 0; c < s->n_cells; c++) {
		int cell = s->cells[c].row * e->cols + s->cells[c].col;

		/* A cell listed twice has one sum, which both get. */
		if (e->slot[cell] < 0)
			e->slot[cell] = (int)c;
		e->rep_sum[c] = 0.0;
		e->rep_n[c] = 0;
	}
	for (size_t i = 0; i < (size_t)g->w * g->h; i++) {
		const float *b = before + 3 * i, *a = after + 3 * i;
		int c = e->slot[e->cell_of[i]];
		double dp[3], da[3], n2;

		if (c < 0)
			continue;
		for (int k = 0; k < 3; k++) {
			dp[k] = paint[k] - b[k];
			da[k] = a[k] - b[k];
		}
		n2 = dp[0] * dp[0] + dp[1] * dp[1] + dp[2] * dp[2];
		/* A pixel already the paint's colour: repainted in full where the batch painted it. */
		e->rep_sum[c] += n2 < 1e-6 ? (e->mark[i] == batch_mark ? 1.0 : 0.0)
					   : pm_clamp((da[0] * dp[0] + da[1] * dp[1] + da[2] * dp[2]) / n2, 0.0, 1.0);
		e->rep_n[c]++;
	}
	for (size_t c = 0; c < s->n_cells; c++) {
		int cell = s->cells[c].row * e->cols + s->cells[c].col, k = e->slot[cell];

		s->cells[c].repaint = e->rep_n[k] ? round(100.0 * e->rep_sum[k] / e->rep_n[k]) / 100.0
						  : s->cells[c].coverage;
	}
	for (size_t c = 0; c < s->n_cells; c++)
		e->slot[s->cells[c].row * e->cols + s->cells[c].col] = -1;
}

int pm_checkpoint_expect(struct plan_subtask *s, const struct expect_grid *e,
			 const struct pm_grid *g, const float *canvas, bl_err *err)
{
	size_t nc = (size_t)e->cols * e->rows;
	double (*sum)[3] = calloc(nc, sizeof(*sum));

	s->cells = calloc(nc, sizeof(*s->cells));
	if (!sum || !s->cells) {
		free(sum);
		return bl_fail(err, BL_ENOMEM, "out of memory for a checkpoint");
	}
	for (size_t i = 0; i < (size_t)g->w * g->h; i++)
		for (int q = 0; q < 3; q++)
			sum[e->cell_of[i]][q] += canvas[3 * i + q];
	s->n_cells = 0;
	for (size_t c = 0; c < nc; c++) {
		struct plan_cell *k = &s->cells[s->n_cells];
		int n = e->cell_px[c];

		/* A sliver of a last column or row with no pixel of the grid expects nothing. */
		if (!n)
			continue;
		k->col = (int)(c % e->cols);
		k->row = (int)(c / e->cols);
		k->coverage = 1.0;
		k->lab.L = pm_r2(sum[c][0] / n);
		k->lab.a = pm_r2(sum[c][1] / n);
		k->lab.b = pm_r2(sum[c][2] / n);
		s->n_cells++;
	}
	free(sum);
	return 0;
}

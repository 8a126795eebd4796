/* plan_paint.c: placing strokes where the predicted canvas is furthest from the target, pass by pass and brush by brush. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "plan/plan_int.h"

/* ---- strokes ---------------------------------------------------------- */

struct pass {
	const struct pm_grid *g;
	const struct pm_target *t;
	const unsigned char *mask;
	float *canvas;
	float *err;
	float *floor_err; /* the error left if the nearest colour covered the pixel: what no stroke can beat */
	float *tb;  /* target blurred to the brush's scale */
	float *tan; /* edge tangents at the brush's scale */
	float *tanc; /* the structure's tangents at a coarser scale: where tan has no edge */
	int follow;  /* the stroke being built takes its direction from tanc where tan is weak */
	int followed; /* it did, somewhere */
	float (*col)[3];
	int nc;
	int brush;
	double w_mm, lmax_mm, lmin_mm, step_mm;
	double op[PLAN_MAX_COLOURS]; /* opacity of each colour's stroke */
	double xlo, xhi, ylo, yhi; /* where a stroke's centre line may go, canvas mm */
	struct pm_footprint fp;
	double *buf;               /* scratch polyline */
	int bufcap;
	struct cell_sums *cells;   /* NULL: each pixel counts on its own */
};

/*
 * The canvas as a checkpoint judges it (measure.h's meas_de_map): each
 * cell_mm cell by the mean of its pixels against the target's mean. With
 * these a stroke's gain is also counted on the cells it touches (gain_of).
 */
struct cell_sums {
	int n;
	int *of;            /* pixel to cell */
	int *px;            /* pixels of each cell */
	double (*sum)[3];   /* the canvas summed over each cell */
	float (*want)[3];   /* the target's mean over each cell */
	float *err;         /* distance of the cell's mean to want */
	double (*delta)[3]; /* scratch: a stroke's change to each cell's sum */
	int *touched;       /* scratch: the cells a stroke changes */
	unsigned char *mark;
};

static void cell_sums_free(struct cell_sums *c)
{
	if (!c)
		return;
	free(c->of);
	free(c->px);
	free(c->sum);
	free(c->want);
	free(c->err);
	free(c->delta);
	free(c->touched);
	free(c->mark);
	free(c);
}

/* Cells of cell_mm from the grid's top-left corner, as plan_correct and the checkpoints count them. */
static int cell_sums_new(const struct pm_grid *g, const struct pm_target *t, const float *canvas,
			 double cell_mm, struct cell_sums **out, bl_err *err)
{
	struct cell_sums *c = calloc(1, sizeof(*c));
	double (*tsum)[3] = NULL;

	int cols, rows;

	if (!c)
		goto out_nomem;
	pm_grid_cells(g, cell_mm, &cols, &rows);
	c->n = cols * rows;
	c->of = malloc((size_t)g->w * g->h * sizeof(*c->of));
	c->px = calloc((size_t)c->n, sizeof(*c->px));
	c->sum = calloc((size_t)c->n, sizeof(*c->sum));
	c->want = calloc((size_t)c->n, sizeof(*c->want));
	c->err = calloc((size_t)c->n, sizeof(*c->err));
	c->delta = calloc((size_t)c->n, sizeof(*c->delta));
	c->touched = calloc((size_t)c->n, sizeof(*c->touched));
	c->mark = calloc((size_t)c->n, 1);
	tsum = calloc((size_t)c->n, sizeof(*tsum));
	if (!c->of || !c->px || !c->sum || !c->want || !c->err || !c->delta || !c->touched ||
	    !c->mark || !tsum)
		goto out_nomem;
	for (int y = 0; y < g->h; y++)
		for (int x = 0; x < g->w; x++) {
			size_t i = (size_t)y * g->w + x;
			int k = pm_cell_of(g, cell_mm, cols, rows, x, y);

			c->of[i] = k;
			c->px[k]++;
			for (int q = 0; q < 3; q++) {
				c->sum[k][q] += canvas[3 * i + q];
				tsum[k][q] += t->lab[3 * i + q];
			}
		}
	for (int k = 0; k < c->n; k++) {
		float mean[3];

		if (c->px[k] == 0)
			continue;
		for (int q = 0; q < 3; q++) {
			c->want[k][q] = (float)(tsum[k][q] / c->px[k]);
			mean[q] = (float)(c->sum[k][q] / c->px[k]);
		}
		c->err[k] = pm_dist_ref(c->want[k], mean);
	}
	free(tsum);
	*out = c;
	return 0;

out_nomem:
	free(tsum);
	cell_sums_free(c);
	return bl_fail(err, BL_ENOMEM, "out of memory for the cells");
}

/* What painting colour k over the footprint adds to each cell's sum; returns the cells touched. */
static int cell_deltas(const struct pass *p, int k)
{
	struct cell_sums *c = p->cells;
	const float *col = p->col[k];
	int nt = 0;

	for (int j = 0; j < p->fp.n; j++) {
		size_t i = (size_t)p->fp.idx[j];
		const float *px = p->canvas + 3 * i;
		float a = p->fp.a[j];
		int cc = c->of[i];

		if (!c->mark[cc]) {
			c->mark[cc] = 1;
			c->touched[nt++] = cc;
			c->delta[cc][0] = c->delta[cc][1] = c->delta[cc][2] = 0.0;
		}
		for (int q = 0; q < 3; q++)
			c->delta[cc][q] += a * (col[q] - px[q]);
	}
	for (int q = 0; q < nt; q++)
		c->mark[c->touched[q]] = 0;
	return nt;
}

/* The distance of touched cell cc to its target with the stroke's delta added to its sum. */
static float cell_err_after(const struct cell_sums *c, int cc)
{
	float mean[3];

	for (int q = 0; q < 3; q++)
		mean[q] = (float)((c->sum[cc][q] + c->delta[cc][q]) / c->px[cc]);
	return pm_dist_ref(c->want[cc], mean);
}

static int pix(const struct pass *p, double x, double y)
{
	int ix = (int)((x - p->g->x0_mm) * p->g->px_mm), iy = (int)((y - p->g->y0_mm) * p->g->px_mm);

	ix = ix < 0 ? 0 : ix >= p->g->w ? p->g->w - 1 : ix;
	iy = iy < 0 ? 0 : iy >= p->g->h ? p->g->h - 1 : iy;
	return iy * p->g->w + ix;
}

/* Edge strength (pm_tangents) under which the brush's own scale gives no direction. */
#define PM_EDGE_MIN 2.0f
/*
 * The scale of the structure a stroke follows where the brush's own shows no
 * edge, in multiples of the brush's: Kyprianidis' orientation field, the
 * structure tensor integrated over a wider neighbourhood. On chelsea, astronaut
 * and coffee at 300 strokes, twice and eight times predicted worse on two of
 * the three (docs/run.md).
 */
#define PM_COARSE 4.0

/*
 * The direction at pixel i: the edge at the brush's scale where it is clear,
 * else (when p->follow) the coarser structure's where it has any; 0 if none.
 */
static int direction_at(struct pass *p, int i, double *tx, double *ty)
{
	const float *tg = p->tan + 3 * (size_t)i;

	if (tg[2] <= PM_EDGE_MIN) {
		if (!p->follow || p->tanc[3 * (size_t)i + 2] <= 0.0f)
			return 0;
		tg = p->tanc + 3 * (size_t)i;
		p->followed = 1;
	}
	*tx = tg[0];
	*ty = tg[1];
	return 1;
}

/* Most a stroke may turn between two steps: a brush follows gentle curves, not corners. */
#define PM_MAX_TURN_COS 0.866 /* 30 degrees */

/*
 * Grows a stroke from (x, y) along the image's edges (Hertzmann's curved
 * strokes): each step follows the local edge tangent, smoothed against the
 * last direction and limited in turn, and the stroke ends where the target
 * there is closer to what the canvas already shows than to the stroke's colour.
 */
static int grow(struct pass *p, double x, double y, double dx, double dy, int k, double budget_mm,
		double *pts, int maxpts)
{
	double len = 0.0;
	int n = 0;

	while (n < maxpts && len + p->step_mm <= budget_mm + 1e-9) {
		int i = pix(p, x, y);
		double tx, ty, nx, ny, nl, c;

		if (direction_at(p, i, &tx, &ty)) {
			if (tx * dx + ty * dy < 0.0) {
				tx = -tx;
				ty = -ty;
			}
			nx = 0.5 * tx + 0.5 * dx;
			ny = 0.5 * ty + 0.5 * dy;
			nl = hypot(nx, ny);
			if (nl > 1e-6) {
				nx /= nl;
				ny /= nl;
			} else {
				nx = dx;
				ny = dy;
			}
			c = nx * dx + ny * dy;
			if (c < PM_MAX_TURN_COS) {
				/* Turn by the limit only, towards the tangent. */
				double s = dx * ny - dy * nx >= 0 ? 1.0 : -1.0, sn = sqrt(1 - PM_MAX_TURN_COS * PM_MAX_TURN_COS);

				nx = dx * PM_MAX_TURN_COS - s * dy * sn;
				ny = dy * PM_MAX_TURN_COS + s * dx * sn;
			}
			dx = nx;
			dy = ny;
		}
		x += p->step_mm * dx;
		y += p->step_mm * dy;
		if (x < p->xlo || x > p->xhi || y < p->ylo || y > p->yhi)
			break;
		i = pix(p, x, y);
		if (p->mask && !p->mask[i])
			break;
		if (len >= p->lmin_mm) {
			const float *ref = p->tb + 3 * (size_t)i;

			if (pm_dist_ref(ref, p->col[k]) > pm_dist_ref(ref, p->canvas + 3 * (size_t)i))
				break;
		}
		pts[2 * n] = x;
		pts[2 * n + 1] = y;
		n++;
		len += p->step_mm;
	}
	return n;
}

/* Builds the stroke of colour k through (x, y) into p->buf; returns its point count. */
static int make_stroke(struct pass *p, double x, double y, int k, double *len_mm)
{
	int i = pix(p, x, y), half = (p->bufcap - 1) / 2, nf, nb, n = 0;
	double dx = 1.0, dy = 0.0, *fw = p->buf + 2 * (size_t)p->bufcap, *bw = fw + 2 * (size_t)half;

	if (!direction_at(p, i, &dx, &dy)) {
		dx = 1.0;
		dy = 0.0;
	}
	nf = grow(p, x, y, dx, dy, k, p->lmax_mm, fw, half);
	nb = grow(p, x, y, -dx, -dy, k, p->lmax_mm - nf * p->step_mm, bw, half);
	for (int j = nb - 1; j >= 0; j--) {
		p->buf[2 * n] = bw[2 * j];
		p->buf[2 * n + 1] = bw[2 * j + 1];
		n++;
	}
	p->buf[2 * n] = x;
	p->buf[2 * n + 1] = y;
	n++;
	for (int j = 0; j < nf; j++) {
		p->buf[2 * n] = fw[2 * j];
		p->buf[2 * n + 1] = fw[2 * j + 1];
		n++;
	}
	if (n == 1) {
		/* A dab: the shortest stroke a brush makes, along the edge. */
		double h = 0.25 * p->step_mm;

		p->buf[0] = pm_clamp(x - h * dx, p->xlo, p->xhi);
		p->buf[1] = pm_clamp(y - h * dy, p->ylo, p->yhi);
		p->buf[2] = pm_clamp(x + h * dx, p->xlo, p->xhi);
		p->buf[3] = pm_clamp(y + h * dy, p->ylo, p->yhi);
		n = 2;
	}
	*len_mm = 0.0;
	for (int j = 1; j < n; j++)
		*len_mm += hypot(p->buf[2 * j] - p->buf[2 * j - 2], p->buf[2 * j + 1] - p->buf[2 * j - 1]);
	return n;
}

/* The part of a pixel's error that painting can still remove. */
static inline float fixable(const struct pass *p, size_t i)
{
	float f = p->err[i] - p->floor_err[i];

	return f > 0.0f ? f : 0.0f;
}

/* How much the error over the footprint drops if colour k is painted there. */
static double gain_of(const struct pass *p, int k)
{
	const float *col = p->col[k];
	double gain = 0.0, cells = 0.0;

	for (int j = 0; j < p->fp.n; j++) {
		size_t i = (size_t)p->fp.idx[j];
		const float *c = p->canvas + 3 * i;
		float a = p->fp.a[j], nc[3];

		nc[0] = c[0] + a * (col[0] - c[0]);
		nc[1] = c[1] + a * (col[1] - c[1]);
		nc[2] = c[2] + a * (col[2] - c[2]);
		gain += p->err[i] - pm_dist(p->t, i, nc);
	}
	if (!p->cells)
		return gain;
	/*
	 * By cell, a stroke is worth the lesser of what it does for the cells'
	 * means (weighted by their pixels: the same scale) and for the pixels: a
	 * cell brought nearer by covering detail the brush cannot paint back, or
	 * pixels brought nearer while their cell's mean goes further, is not a
	 * correction.
	 */
	for (int q = 0, nt = cell_deltas(p, k); q < nt; q++) {
		int cc = p->cells->touched[q];

		cells += p->cells->px[cc] * (p->cells->err[cc] - cell_err_after(p->cells, cc));
	}
	return fmin(gain, cells);
}

struct hent {
	float key;   /* the gain of the cell's best stroke when last evaluated, else an estimate from its error */
	int cell;
	unsigned ver;
	int guessed; /* key is a guess, not an evaluated gain */
};

struct heap {
	struct hent *e;
	size_t n, cap;
};

static int heap_push(struct heap *h, struct hent v)
{
	size_t i;

	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 1024;
		struct hent *ne = realloc(h->e, cap * sizeof(*ne));

		if (!ne)
			return -1;
		h->e = ne;
		h->cap = cap;
	}
	i = h->n++;
	while (i > 0) {
		size_t up = (i - 1) / 2;

		/* Ties go to the lower cell number, so the order never depends on the heap's history. */
		if (h->e[up].key > v.key || (h->e[up].key == v.key && h->e[up].cell < v.cell))
			break;
		h->e[i] = h->e[up];
		i = up;
	}
	h->e[i] = v;
	return 0;
}

static int hless(const struct hent *a, const struct hent *b)
{
	return a->key < b->key || (a->key == b->key && a->cell > b->cell);
}

static struct hent heap_pop(struct heap *h)
{
	struct hent top = h->e[0], last = h->e[--h->n];
	size_t i = 0;

	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		const struct hent *best = &last;

		if (l < h->n && hless(best, &h->e[l])) {
			m = l;
			best = &h->e[l];
		}
		if (r < h->n && hless(best, &h->e[r]))
			m = r;
		if (m == i)
			break;
		h->e[i] = h->e[m];
		i = m;
	}
	if (h->n)
		h->e[i] = last;
	return top;
}

/*
 * The queue of a pass: the grid in square cells of about a brush width, each
 * queued by the gain of its best stroke when last evaluated, or a guess from
 * its error before that.
 */
struct placer {
	int cs, ncx, ncy;   /* cell side, px; cells across and down */
	unsigned *ver;      /* per cell: strokes that changed it */
	unsigned char *tries;
	unsigned *touch;    /* per cell: the stamp of the last stroke that changed it */
	unsigned stamp;
	struct heap h;
	float guess;        /* gain per unit of a cell's error, before a cell is evaluated */
	double ratio_sum;   /* gains seen against the error of the cells they started from */
	long ratio_n, evals;
};

/* The best stroke found from a cell. */
struct best_stroke {
	int k, n;           /* colour, points (kept at the scratch buffer's third part) */
	double gain, len;
};

static int queue(struct placer *pl, float key, int cell, int guessed, bl_err *err)
{
	if (heap_push(&pl->h, (struct hent){ key, cell, pl->ver[cell], guessed }))
		return bl_fail(err, BL_ENOMEM, "out of memory placing strokes");
	return 0;
}

/* The error a stroke could fix in cell (cx, cy), over the mask; *best_px its worst pixel (-1: none). */
static float cell_fixable(const struct pass *p, const struct placer *pl, int cx, int cy, int masked,
			  int *best_px)
{
	const struct pm_grid *g = p->g;
	float s = 0.0f, emax = -1.0f;

	*best_px = -1;
	for (int y = cy * pl->cs; y < (cy + 1) * pl->cs && y < g->h; y++)
		for (int x = cx * pl->cs; x < (cx + 1) * pl->cs && x < g->w; x++) {
			size_t i = (size_t)y * g->w + x;

			if (masked && p->mask && !p->mask[i])
				continue;
			s += fixable(p, i);
			if (fixable(p, i) > emax) {
				emax = fixable(p, i);
				*best_px = (int)i;
			}
		}
	return s;
}

static void placer_free(struct placer *pl)
{
	free(pl->ver);
	free(pl->tries);
	free(pl->touch);
	free(pl->h.e);
}

/* Every cell queued at a guess from its error: a stroke from a cell spans several cells. */
static int placer_init(struct placer *pl, const struct pass *p, bl_err *err)
{
	const struct pm_grid *g = p->g;
	size_t nc;
	int px, rc;

	memset(pl, 0, sizeof(*pl));
	pl->cs = (int)fmax(2.0, round(p->w_mm * g->px_mm));
	pl->ncx = (g->w + pl->cs - 1) / pl->cs;
	pl->ncy = (g->h + pl->cs - 1) / pl->cs;
	pl->guess = (float)fmax(1.0, 0.5 * p->lmax_mm / p->w_mm);
	nc = (size_t)pl->ncx * pl->ncy;
	pl->ver = calloc(nc, sizeof(unsigned));
	pl->tries = calloc(nc, 1);
	pl->touch = calloc(nc, sizeof(unsigned));
	if (!pl->ver || !pl->tries || !pl->touch)
		return bl_fail(err, BL_ENOMEM, "out of memory placing strokes");
	for (int cy = 0; cy < pl->ncy; cy++)
		for (int cx = 0; cx < pl->ncx; cx++)
			if ((rc = queue(pl, cell_fixable(p, pl, cx, cy, 0, &px) * pl->guess, cy * pl->ncx + cx, 1,
					err)))
				return rc;
	return 0;
}

/* The two colours closest to the target at pixel bi, at the brush's scale (-1 when fewer). */
static void closest_two(const struct pass *p, int bi, int *c1, int *c2)
{
	const float *ref = p->tb + 3 * (size_t)bi;
	float d1 = 1e30f, d2 = 1e30f;

	*c1 = *c2 = -1;
	for (int k = 0; k < p->nc; k++) {
		float d = pm_dist_ref(ref, p->col[k]);

		if (d < d1) {
			d2 = d1;
			*c2 = *c1;
			d1 = d;
			*c1 = k;
		} else if (d < d2) {
			d2 = d;
			*c2 = k;
		}
	}
}

/* Builds colour k's stroke from (sx, sy) and keeps it in b if it gains more than b. */
static int try_stroke(struct pass *p, struct placer *pl, int k, double sx, double sy, struct best_stroke *b,
		      bl_err *err)
{
	double len, gn;
	int n = make_stroke(p, sx, sy, k, &len), rc;

	pl->evals++;
	if ((rc = pm_fp_stroke(&p->fp, p->g, p->buf, n, p->w_mm, p->op[k], err)))
		return rc;
	gn = gain_of(p, k);
	if (gn > b->gain) {
		*b = (struct best_stroke){ k, n, gn, len };
		memcpy(p->buf + 8 * (size_t)p->bufcap, p->buf, (size_t)n * 2 * sizeof(double));
	}
	return 0;
}

/*
 * The best of the strokes from (sx, sy) in the two colours closest to the
 * target at pixel bi, each once following the coarser structure where the
 * brush's scale shows no edge and once going straight there: the structure's
 * stroke is the one kept unless the straight one gains more.
 */
static int best_from(struct pass *p, struct placer *pl, int bi, double sx, double sy, struct best_stroke *b,
		     bl_err *err)
{
	int c[2], rc;

	memset(b, 0, sizeof(*b));
	b->k = -1;
	closest_two(p, bi, &c[0], &c[1]);
	p->followed = 0;
	/* Where no stroke met the coarser structure, going straight builds the same strokes again. */
	for (int f = 1; f >= 0 && (f || p->followed); f--) {
		p->follow = f;
		for (int q = 0; q < 2; q++)
			if (c[q] >= 0 && (rc = try_stroke(p, pl, c[q], sx, sy, b, err)))
				return rc;
	}
	return 0;
}

/* Lays the best stroke: into out, onto the canvas, the cells it changed marked. */
static int lay_stroke(struct pass *p, struct placer *pl, const struct best_stroke *b, int pass_no,
		      struct pm_strokes *out, bl_err *err)
{
	const struct pm_grid *g = p->g;
	struct pm_stroke st = { b->k, p->brush, pass_no, b->n, NULL, b->len, -1 };
	int rc;

	st.xy = malloc((size_t)b->n * 2 * sizeof(double));
	if (!st.xy)
		return bl_fail(err, BL_ENOMEM, "out of memory for a stroke");
	memcpy(st.xy, p->buf + 8 * (size_t)p->bufcap, (size_t)b->n * 2 * sizeof(double));
	if ((rc = pm_strokes_push(out, &st, err))) {
		free(st.xy);
		return rc;
	}
	if ((rc = pm_fp_stroke(&p->fp, g, st.xy, st.n, p->w_mm, p->op[b->k], err)))
		return rc;
	if (p->cells) {
		int nt = cell_deltas(p, b->k);

		for (int q = 0; q < nt; q++) {
			int cc = p->cells->touched[q];

			p->cells->err[cc] = cell_err_after(p->cells, cc);
			for (int r = 0; r < 3; r++)
				p->cells->sum[cc][r] += p->cells->delta[cc][r];
		}
	}
	pm_fp_apply(&p->fp, p->canvas, p->col[b->k]);
	pl->stamp++;
	for (int j = 0; j < p->fp.n; j++) {
		size_t i = (size_t)p->fp.idx[j];
		int c = (int)((i / g->w) / pl->cs) * pl->ncx + (int)((i % g->w) / pl->cs);

		p->err[i] = pm_dist(p->t, i, p->canvas + 3 * i);
		if (pl->touch[c] != pl->stamp) {
			pl->touch[c] = pl->stamp;
			pl->ver[c]++;
		}
	}
	return 0;
}

/*
 * One queued cell: its best stroke laid (1), queued again or passed over (0),
 * or < 0. Lazy greedy: gains only shrink as the canvas improves, so a fresh
 * gain that still beats every other cell's last known gain is the best stroke.
 */
static int place_from(struct pass *p, struct placer *pl, struct hent e, int pass_no, double min_gain,
		      struct pm_strokes *out, bl_err *err)
{
	const struct pm_grid *g = p->g;
	int cx = e.cell % pl->ncx, cy = e.cell / pl->ncx, bi, rc;
	float s = cell_fixable(p, pl, cx, cy, 1, &bi);
	struct best_stroke b;
	double sx, sy;

	if (bi < 0 || s < 1.5f * pl->cs * pl->cs * 0.25f)
		return 0;
	if (e.guessed && s * pl->guess < 0.99f * e.key)
		/* The guess has been learnt since this cell was queued: queue it again at the better guess. */
		return queue(pl, s * pl->guess, e.cell, 1, err);
	if (pl->tries[e.cell] >= 2)
		return 0;
	sx = pm_clamp(g->x0_mm + ((bi % g->w) + 0.5) / g->px_mm, p->xlo, p->xhi);
	sy = pm_clamp(g->y0_mm + ((bi / g->w) + 0.5) / g->px_mm, p->ylo, p->yhi);
	if ((rc = best_from(p, pl, bi, sx, sy, &b, err)))
		return rc;
	/* Learn the guess: gains seen so far against the error of the cells they started from. */
	pl->ratio_sum += b.gain / (s > 1e-3f ? s : 1e-3f);
	pl->ratio_n++;
	if (pl->ratio_n >= 16)
		pl->guess = (float)fmax(0.5, 1.5 * pl->ratio_sum / pl->ratio_n);
	if (b.k < 0 || b.gain < min_gain) {
		pl->tries[e.cell]++;
		return queue(pl, (float)b.gain * 0.5f, e.cell, 0, err);
	}
	if (pl->h.n > 0 && (float)b.gain < pl->h.e[0].key)
		return queue(pl, (float)b.gain, e.cell, 0, err);
	if ((rc = lay_stroke(p, pl, &b, pass_no, out, err)))
		return rc;
	/* The start cell goes back in the queue: it may want a second stroke. */
	pl->tries[e.cell] = 0;
	return (rc = queue(pl, (float)b.gain, e.cell, 0, err)) ? rc : 1;
}

/* One pass of one brush: up to budget strokes, each where the error is largest. Returns strokes placed or < 0. */
static int run_pass(struct pass *p, int pass_no, int budget, double min_gain_px,
		    struct pm_strokes *out, bl_err *err)
{
	double side = p->w_mm * p->g->px_mm, min_gain = min_gain_px * side * side;
	long max_evals = 40L * budget + 20000;
	struct placer pl;
	int placed = 0, rc;

	if ((rc = placer_init(&pl, p, err)))
		goto out_free;
	/* Ends when the best remaining gain is too small to be worth a stroke; the cap only bounds a pathological image. */
	while (placed < budget && pl.h.n > 0 && pl.h.e[0].key >= min_gain && pl.evals < max_evals) {
		if ((rc = place_from(p, &pl, heap_pop(&pl.h), pass_no, min_gain, out, err)) < 0)
			goto out_free;
		placed += rc;
	}
	rc = placed;

out_free:
	placer_free(&pl);
	return rc;
}

static int cmp_brush_desc(const void *a, const void *b, void *m)
{
	const struct machine *mm = m;
	double x = mm->brushes[*(const int *)a].width_mm, y = mm->brushes[*(const int *)b].width_mm;

	return (x < y) - (x > y);
}

/* Brushes from widest to narrowest (insertion sort: at most eight). */
static int brush_order(const struct machine *m, int *order)
{
	int n = m->n_brushes;

	for (int i = 0; i < n; i++)
		order[i] = i;
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && cmp_brush_desc(&order[j - 1], &order[j], (void *)m) > 0; j--) {
			int t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	return n;
}

/*
 * Sets p up for a pass of brush br (its index in the machine's brushes): the
 * step, the stroke lengths, the bounds and the target's flow at its width.
 */
static int pass_brush(struct pass *p, int brush, const struct machine_brush *br, bl_err *err)
{
	const struct pm_grid *g = p->g;
	double img_w = g->w / g->px_mm, img_h = g->h / g->px_mm;
	int rc;

	p->brush = brush;
	p->w_mm = br->width_mm;
	p->step_mm = fmax(0.5 * br->width_mm, 1.5 / g->px_mm);
	p->lmax_mm = fmax(p->step_mm, fmin(br->reload_mm, 40.0 * br->width_mm));
	p->lmin_mm = fmin(p->lmax_mm, 2.0 * br->width_mm);
	p->xlo = g->x0_mm + 0.5 * br->width_mm;
	p->xhi = g->x0_mm + img_w - 0.5 * br->width_mm;
	p->ylo = g->y0_mm + 0.5 * br->width_mm;
	p->yhi = g->y0_mm + img_h - 0.5 * br->width_mm;
	p->bufcap = (int)(2.0 * p->lmax_mm / p->step_mm) + 8;
	free(p->buf);
	p->buf = malloc((size_t)p->bufcap * 12 * sizeof(double));
	if (!p->buf)
		return bl_fail(err, BL_ENOMEM, "out of memory placing strokes");
	rc = pm_blur(p->t->lab, p->tb, g->w, g->h, 3, 0.5 * br->width_mm * g->px_mm, err);
	if (rc == 0)
		rc = pm_tangents(p->tb, g->w, g->h, fmax(1.5, br->width_mm * g->px_mm), p->tan, err);
	if (rc == 0)
		rc = pm_tangents(p->tb, g->w, g->h, PM_COARSE * fmax(1.5, br->width_mm * g->px_mm), p->tanc, err);
	return rc;
}

int pm_place_strokes(const struct pm_grid *g, const struct pm_target *t, const float *start_canvas,
		     const unsigned char *mask, const struct machine *m,
		     const struct plan_colour *colours, int n_colours,
		     const struct plan_options *opt, struct pm_strokes *out, bl_err *err)
{
	size_t n = (size_t)g->w * g->h;
	struct pass p;
	int order[CFG_MAX_BRUSHES], nb, used = 0, rc = 0, usable = 0;
	double img_w = g->w / g->px_mm, img_h = g->h / g->px_mm;
	float col[PLAN_MAX_COLOURS][3];

	memset(&p, 0, sizeof(p));
	if (n_colours == 0 || opt->max_strokes == 0)
		return 0;
	for (int c = 0; c < n_colours; c++) {
		const color_lab *l = opt->looks ? &opt->looks[c] : &colours[c].lab;

		col[c][0] = (float)l->L;
		col[c][1] = (float)l->a;
		col[c][2] = (float)l->b;
	}
	p.g = g;
	p.t = t;
	p.mask = mask;
	p.col = col;
	p.nc = n_colours;
	for (int c = 0; c < n_colours; c++)
		p.op[c] = pm_opacity(opt, c);
	p.canvas = malloc(n * 3 * sizeof(float));
	p.err = malloc(n * sizeof(float));
	p.tb = malloc(n * 3 * sizeof(float));
	p.tan = malloc(n * 3 * sizeof(float));
	p.tanc = malloc(n * 3 * sizeof(float));
	p.floor_err = malloc(n * sizeof(float));
	if (!p.canvas || !p.err || !p.tb || !p.tan || !p.tanc || !p.floor_err) {
		rc = bl_fail(err, BL_ENOMEM, "out of memory placing strokes");
		goto out_free;
	}
	if ((rc = pm_fp_init(&p.fp, g, err)))
		goto out_free;
	memcpy(p.canvas, start_canvas, n * 3 * sizeof(float));
	for (size_t i = 0; i < n; i++) {
		float best = 1e30f;

		p.err[i] = pm_dist(t, i, p.canvas + 3 * i);
		for (int c = 0; c < n_colours; c++) {
			float d = pm_dist(t, i, col[c]);

			best = d < best ? d : best;
		}
		p.floor_err[i] = best < p.err[i] ? best : p.err[i];
	}
	if (opt->by_cell && (rc = cell_sums_new(g, t, p.canvas, opt->cell_mm, &p.cells, err)))
		goto out_free;

	nb = brush_order(m, order);
	for (int b = 0; b < nb; b++)
		if (m->brushes[order[b]].width_mm < fmin(img_w, img_h))
			usable++;
	for (int b = 0, pass_no = 0; b < nb && used < opt->max_strokes; b++) {
		const struct machine_brush *br = &m->brushes[order[b]];
		int left = opt->max_strokes - used, budget, got, passes_left;
		double frac;

		if (br->width_mm >= fmin(img_w, img_h))
			continue; /* a brush wider than the picture cannot stay inside it */
		passes_left = usable - pass_no;
		/*
		 * Coarse passes cover the picture, fine ones its detail: the widest
		 * brush takes about half of the budget, and what a pass leaves unused
		 * goes to the next.
		 */
		frac = passes_left <= 1 ? 1.0 : passes_left == 2 ? 0.6 : 0.5;
		if (pass_no == 0 && passes_left > 1) {
			/* A small budget goes mostly to covering the picture once with the widest brush. */
			double cover = 1.3 * img_w * img_h /
				       (br->width_mm * 0.6 * fmin(br->reload_mm, 40.0 * br->width_mm));

			frac = pm_clamp(cover / left, frac, 0.9);
		}
		budget = (int)ceil(left * frac);
		if ((rc = pass_brush(&p, order[b], br, err)))
			goto out_free;
		got = run_pass(&p, pass_no, budget, 0.6, out, err);
		if (got < 0) {
			rc = got;
			goto out_free;
		}
		used += got;
		pass_no++;
	}

out_free:
	pm_fp_free(&p.fp);
	free(p.canvas);
	free(p.err);
	free(p.tb);
	free(p.tan);
	free(p.tanc);
	free(p.floor_err);
	free(p.buf);
	cell_sums_free(p.cells);
	return rc;
}

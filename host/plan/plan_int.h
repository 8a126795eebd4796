/* plan_int.h: the planner's internals shared by its files: the work grid, the fast canvas model, strokes. */
#ifndef BL_PLAN_PLAN_INT_H
#define BL_PLAN_PLAN_INT_H

#include <math.h>
#include <stdint.h>

#include "plan/plan.h"

/* The grid the planner thinks on: the image rectangle of the canvas at px_mm pixels a mm. */
struct pm_grid {
	int w, h;
	double px_mm;
	double x0_mm, y0_mm; /* canvas mm of the grid's top-left corner */
	double w_mm, h_mm;   /* the picture's rectangle the grid is over (its pixels may fall short) */
};

/* A target at grid resolution, with the CIE94 weights of each pixel precomputed. */
struct pm_target {
	float *lab; /* w * h * 3 */
	float *c;   /* chroma */
	float *wc;  /* 1 / S_C^2 */
	float *wh;  /* 1 / S_H^2 */
};

/*
 * The inner loops measure colour error with CIE94 against the target as
 * reference: close to CIEDE2000 in ranking and ten times cheaper. Figures that
 * are reported always use CIEDE2000 (lcms2).
 */
static inline float pm_dist_w(const float *ref, float refc, float wc, float wh, const float *x)
{
	float dl = ref[0] - x[0], da = ref[1] - x[1], db = ref[2] - x[2];
	float dc = refc - sqrtf(x[1] * x[1] + x[2] * x[2]);
	float dh2 = da * da + db * db - dc * dc;

	if (dh2 < 0.0f)
		dh2 = 0.0f;
	return sqrtf(dl * dl + dc * dc * wc + dh2 * wh);
}

static inline float pm_dist(const struct pm_target *t, size_t i, const float *x)
{
	return pm_dist_w(t->lab + 3 * i, t->c[i], t->wc[i], t->wh[i], x);
}

/* Distance with weights computed for ref on the spot. */
float pm_dist_ref(const float *ref, const float *x);

int pm_target_init(struct pm_target *t, const struct pm_grid *g, const float *lab, bl_err *err);
void pm_target_free(struct pm_target *t);

/* A stroke as the planner holds it: a polyline in canvas mm. */
struct pm_stroke {
	int colour;
	int brush;  /* index into the machine's brushes */
	int pass;
	int n;
	double *xy; /* n * 2, canvas mm */
	double len_mm;
	int batch;  /* paint subtask it lands in */
};

struct pm_strokes {
	struct pm_stroke *s;
	size_t n, cap;
};

int pm_strokes_push(struct pm_strokes *l, const struct pm_stroke *s, bl_err *err);
void pm_strokes_free(struct pm_strokes *l);

/* The pixels one stroke touches and its coverage at each. */
struct pm_footprint {
	int n, cap;
	int *idx;
	float *a;
	/* scratch of grid size */
	float *amax;
	uint32_t *stamp;
	uint32_t cur;
	int bx0, by0, bx1, by1; /* bounding box of the last footprint, px */
};

int pm_fp_init(struct pm_footprint *f, const struct pm_grid *g, bl_err *err);
void pm_fp_free(struct pm_footprint *f);
/* Rasterises a polyline of n points (canvas mm) with width_mm into f. */
int pm_fp_stroke(struct pm_footprint *f, const struct pm_grid *g, const double *xy, int n,
		 double width_mm, double opacity, bl_err *err);
/* Paints colour over canvas where f covers it. */
void pm_fp_apply(const struct pm_footprint *f, float *canvas, const float *colour);

/* Separable Gaussian blur of an interleaved nch-channel float image. */
int pm_blur(const float *in, float *out, int w, int h, int nch, double sigma, bl_err *err);

/*
 * Edge tangents of an image: the minor eigenvector of its colour structure
 * tensor at scale sigma, as (tx, ty, strength) per pixel.
 */
int pm_tangents(const float *lab, int w, int h, double sigma, float *out, bl_err *err);

/* Resamples a Lab raster onto the grid by area averaging. */
int pm_resample(const struct plan_raster *src, const struct pm_grid *g, float *out, bl_err *err);

/* The grid for a plan: the image rectangle at a resolution that keeps planning fast. */
void pm_grid_for(struct pm_grid *g, const double image_mm[4]);

/* The plan's cells over the grid's rectangle: plan_grid_cells for a grid at hand. */
void pm_grid_cells(const struct pm_grid *g, double cell_mm, int *cols, int *rows);

/*
 * The expected-result cell (of cell_mm, cols x rows from the grid's top-left
 * corner, row by row) that grid pixel (x, y) counts in: by its centre, the
 * last column and row taking what is left. Planning, corrections and the
 * checkpoints' cells are the same.
 */
static inline int pm_cell_of(const struct pm_grid *g, double cell_mm, int cols, int rows, int x,
			     int y)
{
	int cx = (int)(((x + 0.5) / g->px_mm) / cell_mm), cy = (int)(((y + 0.5) / g->px_mm) / cell_mm);

	return (cy >= rows ? rows - 1 : cy) * cols + (cx >= cols ? cols - 1 : cx);
}

/* The opacity of colour k's stroke: the model's, times the share it hides when learnt (corrections). */
static inline double pm_opacity(const struct plan_options *opt, int k)
{
	return opt->opacity * (opt->hiding ? opt->hiding[k] : 1.0);
}

/* Fits a w x h image into the canvas keeping its aspect ratio, centred: x, y, w, h in canvas mm. */
void pm_fit(const struct machine *m, int w, int h, double out[4]);

/* Colour choice: up to k reachable colours for the target (k = 0: as many as it needs, at most kmax), lightest first. */
int pm_choose_colours(const struct pm_grid *g, const struct pm_target *t,
		      const struct plan_solver *solver, const struct plan_options *opt, int k,
		      int kmax, struct plan_colour *out, int *n_out, bl_err *err);

/* Stroke placement by the planner, and the grid baseline. */
int pm_place_strokes(const struct pm_grid *g, const struct pm_target *t, const float *start_canvas,
		     const unsigned char *mask, const struct machine *m,
		     const struct plan_colour *colours, int n_colours,
		     const struct plan_options *opt, struct pm_strokes *out, bl_err *err);
int pm_baseline_strokes(const struct pm_grid *g, const struct pm_target *t,
			const struct machine *m, const struct plan_colour *colours, int n_colours,
			const struct plan_options *opt, struct pm_strokes *out, bl_err *err);

/* Orders strokes (pass, light to dark, short travel) and builds subtasks and predictions into p. */
int pm_build(struct plan *p, const struct pm_grid *g, const struct pm_target *t,
	     const float *start_canvas, const struct machine *m, const struct plan_solver *solver,
	     const struct plan_options *opt, struct pm_strokes *strokes, bl_err *err);

/* Mean and 95th percentile CIEDE2000 of canvas against target over the grid. */
int pm_score(const struct pm_grid *g, const float *target, const float *canvas, double *mean,
	     double *p95, bl_err *err);

static inline double pm_clamp(double v, double lo, double hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

#endif

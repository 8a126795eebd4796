/* mix_impl.h: helpers shared by the mix_*.c files and nobody else (small dense linear algebra, the measured-paint fit). */
#ifndef BL_COLOR_MIX_IMPL_H
#define BL_COLOR_MIX_IMPL_H

#include "color/mix.h"

/* The band grid of palettes that have no spectra of their own (nm). */
#define MIX_DEFAULT_WL0_NM 400.0
#define MIX_DEFAULT_STEP_NM 10.0
#define MIX_DEFAULT_BANDS 31

/* Fills the XYZ weights of the model's bands (wl_nm and n_bands set). */
void mix_model_weights(struct mix_model *m);

/*
 * Fits K and S of the palette's measured-only paints on the model's bands
 * (mix_fit.c). The white, if measured, is fitted first with S = 1.
 */
int mix_fit_measured(const struct palette *p, struct mix_model *m, bl_err *err);

/* mix_solve with the current cell's offset (measured minus predicted) added to every prediction. */
int mix_solve_bias(const struct mix_model *m, const struct mix_learn *l, const color_lab *target,
		   const color_lab *bias, const struct mix_limits *lim, struct mix_solution *out,
		   bl_err *err);

/*
 * Solves the symmetric positive definite n x n system A x = b in place
 * (Cholesky; A is overwritten, x returned in b). Returns -1 when A is not
 * positive definite.
 */
int mix_spd_solve(double *a, double *b, int n);

/* Residual r = U (lab - target) for the CIEDE2000 metric factor U. */
static inline void mix_metric_apply(double u[3][3], const double d[3], double r[3])
{
	r[0] = u[0][0] * d[0] + u[0][1] * d[1] + u[0][2] * d[2];
	r[1] = u[1][1] * d[1] + u[1][2] * d[2];
	r[2] = u[2][2] * d[2];
}

#endif

/* sim_shade.h: the simulated camera's per-pixel pipeline sixteen or eight pixels at a time, byte for byte as sim_camera.c's one at a time. */
#ifndef BL_SIM_SHADE_H
#define BL_SIM_SHADE_H

#include <stddef.h>
#include <stdint.h>

#define SIM_LUT_N 4096            /* linear -> 8-bit sRGB table: a 12-bit converter */
#define SIM_GAUSS_N 4096          /* standard normal quantiles, indexed by 12 random bits (fits L1) */
#define SIM_SIGMA_N 2048          /* noise sigma by raw level, 0..2 */
#define SIM_SIGMA_PER_UNIT 1024.0f
#define SIM_SPLITMIX_GAMMA 0x9e3779b97f4a7c15ULL

/* What a frame's pixels are shaded from (sim_camera.c's camera, copied out). */
struct sim_shade {
	const uint32_t *src;       /* per pixel: its source */
	const float *gain;         /* per pixel: light falloff times vignetting */
	const float (*rgb)[3];     /* per source, this frame */
	const float *sigma;        /* SIM_SIGMA_N */
	const float *gauss;        /* SIM_GAUSS_N */
	const unsigned char *lut;  /* SIM_LUT_N */
	float mat[3][3];
	unsigned char *out;        /* RGB8 */
};

/* The widest path sim_shade_wide may take (tests compare each with one pixel at a time). */
enum {
	SIM_SHADE_ONE = 0,    /* none: the caller's one-pixel loop shades every pixel */
	SIM_SHADE_AVX2 = 1,   /* eight pixels at a time */
	SIM_SHADE_AVX512 = 2, /* sixteen at a time, then eight (the default) */
};
extern int sim_shade_wide_on;

/*
 * Shades pixels from, from + 16 (or + 8), ... while sixteen (or eight)
 * remain before to, on CPUs with AVX-512 (F and DQ) or AVX2, exactly as the
 * one-pixel loop does: the same single-precision operations in the same
 * order, the noise of pixel n drawn from the splitmix stream at
 * *st + (n - from + 1) * gamma. Returns the pixels done (0 without either,
 * or when turned off) and advances *st past them.
 */
size_t sim_shade_wide(const struct sim_shade *sh, float scale, uint64_t *st, size_t from,
		      size_t to);

#endif

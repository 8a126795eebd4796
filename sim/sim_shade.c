/* sim_shade.c: the simulated camera's per-pixel pipeline eight pixels at a time with AVX2, byte for byte as the one-pixel loop in sim_camera.c. */
#include "sim/sim_shade.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SHADE_AVX2 1
#endif

int sim_shade_wide_on = 1;

#ifdef SHADE_AVX2
static inline uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/*
 * AVX2 without FMA: a fused multiply-add rounds once where the one-pixel
 * loop rounds twice, and the frames would differ in their last bits.
 */
__attribute__((target("avx2"))) static size_t shade_avx2(const struct sim_shade *sh, float scale,
							   uint64_t *st, size_t from, size_t to)
{
	const __m256 top = _mm256_set1_ps((float)(SIM_LUT_N - 1)), half = _mm256_set1_ps(0.5f);
	const __m256 zero = _mm256_setzero_ps(), per = _mm256_set1_ps(SIM_SIGMA_PER_UNIT);
	const __m256 k_scale = _mm256_set1_ps(scale);
	const __m256i s_top = _mm256_set1_epi32(SIM_SIGMA_N - 1), s_zero = _mm256_setzero_si256();
	const __m256i three = _mm256_set1_epi32(3);
	__m256 m[3][3];
	const float *rgb = &sh->rgb[0][0];
	uint64_t s = *st;
	size_t n = from;

	for (int r = 0; r < 3; r++)
		for (int c = 0; c < 3; c++)
			m[r][c] = _mm256_set1_ps(sh->mat[r][c]);
	for (; n + 8 <= to; n += 8) {
		int32_t gi[3][8] __attribute__((aligned(32)));
		int32_t oi[3][8] __attribute__((aligned(32)));
		__m256i at = _mm256_mullo_epi32(
			_mm256_loadu_si256((const __m256i *)(sh->src + n)), three);
		__m256 k = _mm256_mul_ps(_mm256_loadu_ps(sh->gain + n), k_scale);
		__m256 v[3], o[3];

		/* The noise's draws: independent of each other, so the scalar loop pipelines. */
		for (int j = 0; j < 8; j++) {
			uint64_t rnd = mix64(s += SIM_SPLITMIX_GAMMA);

			gi[0][j] = (int32_t)(rnd & (SIM_GAUSS_N - 1));
			gi[1][j] = (int32_t)((rnd >> 12) & (SIM_GAUSS_N - 1));
			gi[2][j] = (int32_t)((rnd >> 24) & (SIM_GAUSS_N - 1));
		}
		for (int c = 0; c < 3; c++) {
			__m256 q = _mm256_i32gather_ps(rgb + c, at, 4);
			__m256i si;

			v[c] = _mm256_mul_ps(q, k);
			si = _mm256_cvttps_epi32(_mm256_mul_ps(v[c], per));
			si = _mm256_min_epi32(_mm256_max_epi32(si, s_zero), s_top);
			v[c] = _mm256_add_ps(v[c], _mm256_mul_ps(
				_mm256_i32gather_ps(sh->sigma, si, 4),
				_mm256_i32gather_ps(sh->gauss, _mm256_load_si256((const __m256i *)gi[c]), 4)));
		}
		for (int r = 0; r < 3; r++) {
			o[r] = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(m[r][0], v[0]),
							   _mm256_mul_ps(m[r][1], v[1])),
					     _mm256_mul_ps(m[r][2], v[2]));
			o[r] = _mm256_add_ps(_mm256_mul_ps(o[r], top), half);
			/* As the scalar clamps: below 0 is 0, above top is top. */
			o[r] = _mm256_min_ps(_mm256_max_ps(o[r], zero), top);
			_mm256_store_si256((__m256i *)oi[r], _mm256_cvttps_epi32(o[r]));
		}
		for (int j = 0; j < 8; j++) {
			unsigned char *p = sh->out + 3 * (n + (size_t)j);

			p[0] = sh->lut[oi[0][j]];
			p[1] = sh->lut[oi[1][j]];
			p[2] = sh->lut[oi[2][j]];
		}
	}
	*st = s;
	return n - from;
}
#endif

size_t sim_shade_wide(const struct sim_shade *sh, float scale, uint64_t *st, size_t from,
		      size_t to)
{
#ifdef SHADE_AVX2
	if (sim_shade_wide_on && __builtin_cpu_supports("avx2"))
		return shade_avx2(sh, scale, st, from, to);
#endif
	(void)sh;
	(void)scale;
	(void)st;
	(void)from;
	(void)to;
	return 0;
}

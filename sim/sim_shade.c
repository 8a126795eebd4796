/* sim_shade.c: the simulated camera's per-pixel pipeline sixteen pixels at a time with AVX-512 or eight with AVX2, byte for byte as the one-pixel loop in sim_camera.c. */
#include "sim/sim_shade.h"

#include "base/kernel.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SHADE_AVX2 1
#endif

int sim_shade_wide_on = SIM_SHADE_AVX512;

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
BL_KERNEL __attribute__((target("avx2"))) static size_t shade_avx2(const struct sim_shade *sh, float scale,
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

/*
 * Sixteen pixels at a time: the splitmix draws too, in 64-bit lanes (AVX-512
 * DQ multiplies them exactly as the scalar code does, modulo 2^64), and
 * contraction to fused multiply-adds is off (AVX-512 implies FMA, and a fused
 * operation rounds once where the one-pixel loop rounds twice).
 */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#else
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
__attribute__((target("avx512f,avx512dq"))) static inline __m512i mix64x8(__m512i z)
{
	const __m512i c1 = _mm512_set1_epi64((long long)0xbf58476d1ce4e5b9ULL);
	const __m512i c2 = _mm512_set1_epi64((long long)0x94d049bb133111ebULL);

	z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 30)), c1);
	z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 27)), c2);
	return _mm512_xor_si512(z, _mm512_srli_epi64(z, 31));
}

/* The three 12-bit gauss indices of sixteen draws, bits 0, 12 and 24 of each. */
__attribute__((target("avx512f,avx512dq"))) static inline __m512i draw_bits(__m512i lo, __m512i hi,
									    int shift)
{
	const __m512i mask = _mm512_set1_epi64(SIM_GAUSS_N - 1);
	__m256i a = _mm512_cvtepi64_epi32(_mm512_and_si512(_mm512_srli_epi64(lo, (unsigned)shift), mask));
	__m256i b = _mm512_cvtepi64_epi32(_mm512_and_si512(_mm512_srli_epi64(hi, (unsigned)shift), mask));

	return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
}

BL_KERNEL __attribute__((target("avx512f,avx512dq"))) static size_t shade_avx512(const struct sim_shade *sh,
									float scale, uint64_t *st,
									size_t from, size_t to)
{
	const __m512 top = _mm512_set1_ps((float)(SIM_LUT_N - 1)), half = _mm512_set1_ps(0.5f);
	const __m512 zero = _mm512_setzero_ps(), per = _mm512_set1_ps(SIM_SIGMA_PER_UNIT);
	const __m512 k_scale = _mm512_set1_ps(scale);
	const __m512i s_top = _mm512_set1_epi32(SIM_SIGMA_N - 1), s_zero = _mm512_setzero_si512();
	const __m512i three = _mm512_set1_epi32(3);
	/* Lane j of the first eight draws is s + (j + 1) gamma; the next eight 8 gamma on. */
	const __m512i step = _mm512_set_epi64(
		(long long)(8 * SIM_SPLITMIX_GAMMA), (long long)(7 * SIM_SPLITMIX_GAMMA),
		(long long)(6 * SIM_SPLITMIX_GAMMA), (long long)(5 * SIM_SPLITMIX_GAMMA),
		(long long)(4 * SIM_SPLITMIX_GAMMA), (long long)(3 * SIM_SPLITMIX_GAMMA),
		(long long)(2 * SIM_SPLITMIX_GAMMA), (long long)SIM_SPLITMIX_GAMMA);
	const __m512i eight = _mm512_set1_epi64((long long)(8 * SIM_SPLITMIX_GAMMA));
	__m512 m[3][3];
	const float *rgb = &sh->rgb[0][0];
	uint64_t s = *st;
	size_t n = from;

	for (int r = 0; r < 3; r++)
		for (int c = 0; c < 3; c++)
			m[r][c] = _mm512_set1_ps(sh->mat[r][c]);
	for (; n + 16 <= to; n += 16) {
		int32_t oi[3][16] __attribute__((aligned(64)));
		__m512i lo = _mm512_add_epi64(_mm512_set1_epi64((long long)s), step);
		__m512i hi = _mm512_add_epi64(lo, eight);
		__m512i gi[3];
		__m512i at = _mm512_mullo_epi32(
			_mm512_loadu_si512((const void *)(sh->src + n)), three);
		__m512 k = _mm512_mul_ps(_mm512_loadu_ps(sh->gain + n), k_scale);
		__m512 v[3], o[3];

		s += 16 * SIM_SPLITMIX_GAMMA;
		lo = mix64x8(lo);
		hi = mix64x8(hi);
		gi[0] = draw_bits(lo, hi, 0);
		gi[1] = draw_bits(lo, hi, 12);
		gi[2] = draw_bits(lo, hi, 24);
		for (int c = 0; c < 3; c++) {
			__m512 q = _mm512_i32gather_ps(at, rgb + c, 4);
			__m512i si;

			v[c] = _mm512_mul_ps(q, k);
			si = _mm512_cvttps_epi32(_mm512_mul_ps(v[c], per));
			si = _mm512_min_epi32(_mm512_max_epi32(si, s_zero), s_top);
			v[c] = _mm512_add_ps(v[c], _mm512_mul_ps(_mm512_i32gather_ps(si, sh->sigma, 4),
								 _mm512_i32gather_ps(gi[c], sh->gauss, 4)));
		}
		for (int r = 0; r < 3; r++) {
			o[r] = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(m[r][0], v[0]),
							   _mm512_mul_ps(m[r][1], v[1])),
					     _mm512_mul_ps(m[r][2], v[2]));
			o[r] = _mm512_add_ps(_mm512_mul_ps(o[r], top), half);
			o[r] = _mm512_min_ps(_mm512_max_ps(o[r], zero), top);
			_mm512_store_si512((void *)oi[r], _mm512_cvttps_epi32(o[r]));
		}
		for (int j = 0; j < 16; j++) {
			unsigned char *p = sh->out + 3 * (n + (size_t)j);

			p[0] = sh->lut[oi[0][j]];
			p[1] = sh->lut[oi[1][j]];
			p[2] = sh->lut[oi[2][j]];
		}
	}
	*st = s;
	return n - from;
}
#if !defined(__clang__)
#pragma GCC pop_options
#endif
#endif

size_t sim_shade_wide(const struct sim_shade *sh, float scale, uint64_t *st, size_t from,
		      size_t to)
{
#ifdef SHADE_AVX2
	if (sim_shade_wide_on >= SIM_SHADE_AVX512 && __builtin_cpu_supports("avx512f") &&
	    __builtin_cpu_supports("avx512dq")) {
		size_t n = shade_avx512(sh, scale, st, from, to);

		/* The last eight to fifteen pixels, eight more where they fit. */
		return n + shade_avx2(sh, scale, st, from + n, to);
	}
	if (sim_shade_wide_on >= SIM_SHADE_AVX2 && __builtin_cpu_supports("avx2"))
		return shade_avx2(sh, scale, st, from, to);
#endif
	(void)sh;
	(void)scale;
	(void)st;
	(void)from;
	(void)to;
	return 0;
}

/* rng.c: xoshiro256** seeded by splitmix64, with Box-Muller normals. */
#include "base/rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

void rng_init(rng *r, uint64_t seed)
{
	uint64_t x = seed;

	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
	r->has_spare = 0;
	r->spare = 0.0;
}

void rng_fork(rng *child, uint64_t seed, const char *tag)
{
	/* FNV-1a of the tag, mixed with the seed. */
	uint64_t h = 0xcbf29ce484222325ULL;

	for (const char *p = tag; *p; p++) {
		h ^= (unsigned char)*p;
		h *= 0x100000001b3ULL;
	}
	rng_init(child, seed ^ h);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t rng_u64(rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

double rng_uniform(rng *r)
{
	return (double)(rng_u64(r) >> 11) * 0x1.0p-53;
}

uint64_t rng_below(rng *r, uint64_t n)
{
	/* Rejection keeps it unbiased for any n. */
	uint64_t limit = UINT64_MAX - UINT64_MAX % n;
	uint64_t v;

	do
		v = rng_u64(r);
	while (v >= limit);
	return v % n;
}

double rng_normal(rng *r)
{
	double u1, u2, m;

	if (r->has_spare) {
		r->has_spare = 0;
		return r->spare;
	}
	do
		u1 = rng_uniform(r);
	while (u1 <= 0.0);
	u2 = rng_uniform(r);
	m = sqrt(-2.0 * log(u1));
	r->spare = m * sin(2.0 * M_PI * u2);
	r->has_spare = 1;
	return m * cos(2.0 * M_PI * u2);
}

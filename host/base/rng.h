/* rng.h: a seeded, portable random number generator (xoshiro256**), so simulated runs repeat exactly. */
#ifndef BL_BASE_RNG_H
#define BL_BASE_RNG_H

#include <stdint.h>

typedef struct rng {
	uint64_t s[4];
	int has_spare;
	double spare; /* second value of the last Box-Muller pair */
} rng;

/* Seeds the generator; the same seed gives the same sequence on every machine. */
void rng_init(rng *r, uint64_t seed);

/* Seeds child from parent's seed and a stream tag, so independent parts of a
 * simulation do not shift each other's sequences when one draws more numbers. */
void rng_fork(rng *child, uint64_t seed, const char *tag);

uint64_t rng_u64(rng *r);
/* Uniform in [0, 1). */
double rng_uniform(rng *r);
/* Uniform integer in [0, n), n > 0. */
uint64_t rng_below(rng *r, uint64_t n);
/* Standard normal (mean 0, standard deviation 1). */
double rng_normal(rng *r);

#endif

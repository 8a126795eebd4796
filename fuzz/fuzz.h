/* fuzz.h: what every fuzz target shares: the libFuzzer entry point, a scratch directory, an input written as a file. */
#ifndef BL_FUZZ_FUZZ_H
#define BL_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* libFuzzer's entry point: each target defines it; replay.c calls it for saved inputs. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A private temporary directory, made on first use (logging turned down), removed at exit. */
const char *fuzz_dir(void);

/* Writes data as fuzz_dir()/name (a subdirectory is made when name has one) and returns its path. */
const char *fuzz_file(const char *name, const uint8_t *data, size_t size);

/* Removes fuzz_dir()/name if it is there (an input that has no second part). */
void fuzz_unlink(const char *name);

struct machine;

/* The machine file rel (under the source tree), loaded on first use; a bad one aborts the target. */
const struct machine *fuzz_machine(const char *rel);

/* A path under the source tree (machine files the targets read their inputs against). */
const char *fuzz_src(const char *rel);

#endif

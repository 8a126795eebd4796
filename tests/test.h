/* test.h: a small harness: named cases in one binary, each run as its own meson test. */
#ifndef BL_TESTS_TEST_H
#define BL_TESTS_TEST_H

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * A test file defines cases with TEST(name) and lists them in TEST_MAIN(...).
 * `prog NAME` runs one case (meson registers each case as its own test, so the
 * count of tests is the count of behaviours checked); `prog` runs them all.
 * A failed CHECK prints where and why and marks the case failed; the case goes
 * on so one run shows every broken assertion.
 */
struct test_case {
	const char *name;
	void (*fn)(void);
};

extern int test_failures;
extern int test_checks;

#define CHECK(cond)                                                                  \
	do {                                                                         \
		test_checks++;                                                       \
		if (!(cond)) {                                                       \
			test_failures++;                                             \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
				#cond);                                              \
		}                                                                    \
	} while (0)

#define CHECK_MSG(cond, ...)                                                         \
	do {                                                                         \
		test_checks++;                                                       \
		if (!(cond)) {                                                       \
			test_failures++;                                             \
			fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, \
				#cond);                                              \
			fprintf(stderr, __VA_ARGS__);                                \
			fputc('\n', stderr);                                         \
		}                                                                    \
	} while (0)

#define CHECK_NEAR(a, b, tol)                                                        \
	do {                                                                         \
		double a_ = (a), b_ = (b);                                           \
		CHECK_MSG(fabs(a_ - b_) <= (tol), "%s = %.6f, expected %.6f +- %g", #a, \
			  a_, b_, (double)(tol));                                    \
	} while (0)

#define CHECK_STR_CONTAINS(hay, needle)                                              \
	do {                                                                         \
		const char *h_ = (hay), *n_ = (needle);                              \
		CHECK_MSG(h_ && strstr(h_, n_), "'%s' does not contain '%s'", h_ ? h_ : "(null)", \
			  n_);                                                       \
	} while (0)

#define TEST(name) static void name(void)

int test_run(const struct test_case *cases, int argc, char **argv);

#define TEST_MAIN(...)                                                    \
	int test_failures, test_checks;                                   \
	int main(int argc, char **argv)                                   \
	{                                                                 \
		static const struct test_case cases_[] = { __VA_ARGS__, { NULL, NULL } }; \
		return test_run(cases_, argc, argv);                      \
	}

#define T(fn) { #fn, fn }

#endif

/*
 * Runs the brushloop binary (path in $BRUSHLOOP, set by meson) with args
 * (NULL-terminated, without argv[0]); captures stdout and stderr (malloc'd,
 * NUL-terminated, may be NULL) and returns the exit status, or -1 when it
 * could not run or died from a signal.
 */
int test_brushloop(const char *const *args, char **out, char **err);

/*
 * Runs argv[0] (found on PATH) with argv (NULL-terminated), stdin from
 * in_path (NULL: this process's), capturing stdout and stderr as test_brushloop
 * does; the same exit status.
 */
int test_spawn(const char *const *argv, const char *in_path, char **out, char **err);

/* A fresh temporary directory for this test (removed by the OS, not by us). */
const char *test_tmpdir(void);

/* The target most whole-run tests paint: a small flat graphic, quick to paint. */
#define TEST_TARGET "examples/targets/flat-shapes.png"

/* rel under the source tree (BRUSHLOOP_SRC); eight calls' results stay valid at once. */
const char *test_src_path(const char *rel);

/* name under test_tmpdir(); eight calls' results stay valid at once. */
const char *test_tmp_path(const char *name);

/* `brushloop status DIR --json`, parsed (NULL when it printed no JSON); *rc its exit status when rc is given. */
cJSON *test_status(const char *dir, int *rc);

/*
 * fn(line, ctx) for each line of dir/journal.jsonl, parsed (NULL for a line
 * that is not JSON); -1 when the journal cannot be read, else 0.
 */
int test_journal_each(const char *dir, void (*fn)(const cJSON *line, void *ctx), void *ctx);

/*
 * Runs job(i, ctx) for i from 0 to n - 1, at most at_once at a time, each in a child
 * forked from this test, and waits for them all: for cases made of independent whole
 * runs (each a process of its own), so that two of them share a machine's cores. A
 * child's failed checks count as this case's, and its output goes where this one's goes;
 * what it changes in memory stays in the child.
 */
void test_parallel(int n, int at_once, void (*job)(int i, void *ctx), void *ctx);

/* Ends the binary as skipped (exit 77, meson's skip), saying why; its directory goes as for a pass. */
void test_skip(const char *why) __attribute__((noreturn));

/* A whole file as a NUL-terminated string (malloc'd); NULL when it cannot be read. */
char *test_read_file(const char *path);

/* Writes text to dir/name and returns the path (static buffer, valid until the next call). */
const char *test_write_file(const char *name, const char *text);

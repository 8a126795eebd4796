/* safety_test.h: helpers the safety tests share: the test machine, fresh run directories, reading journals. */
#ifndef BL_TESTS_SAFETY_TEST_H
#define BL_TESTS_SAFETY_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "config/machine.h"
#include "test.h"

/* A path under the source tree (static buffer, one at a time). */
static inline const char *src_path(const char *rel)
{
	static char p[4096];
	const char *src = getenv("BRUSHLOOP_SRC");

	snprintf(p, sizeof(p), "%s/%s", src ? src : BL_SOURCE_ROOT, rel);
	return p;
}

/* tests/safety/machine.json: the example machine with operator kinds, homing confirmation and shorter moves. */
static inline struct machine *test_machine(void)
{
	static struct machine m;
	bl_err err = { 0 };

	if (!m.name[0] && machine_load(src_path("tests/safety/machine.json"), &m, &err)) {
		fprintf(stderr, "test machine: %s\n", err.msg);
		exit(1);
	}
	return &m;
}

/* A new, empty directory under the test's temporary directory. */
static inline const char *fresh_dir(const char *name)
{
	static char p[8][4096];
	static int k;
	char *out = p[k++ % 8];

	snprintf(out, 4096, "%s/%s", test_tmpdir(), name);
	if (mkdir(out, 0755) != 0) {
		perror(out);
		exit(1);
	}
	return out;
}

static inline char *slurp(const char *path)
{
	char *buf = NULL;
	size_t len;

	if (fs_read_file(path, 64u << 20, &buf, &len, NULL))
		return NULL;
	return buf;
}

/* How many lines of a file contain needle (0 when the file is missing). */
static inline int lines_with(const char *path, const char *needle)
{
	char *text = slurp(path), *save = NULL, *line;
	int n = 0;

	if (!text)
		return 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		n += strstr(line, needle) != NULL;
	free(text);
	return n;
}

#endif

/* replay.c: runs a fuzz target's entry point on saved inputs (files, or every file under directories): the regression test of both ordinary builds. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "fuzz.h"

static long replayed;

static int replay_path(const char *path)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0;

	if (stat(path, &st) != 0) {
		fprintf(stderr, "replay: %s: not found\n", path);
		return 1;
	}
	if (S_ISDIR(st.st_mode)) {
		struct dirent **names;
		int n = scandir(path, &names, NULL, alphasort), rc = 0;

		if (n < 0) {
			fprintf(stderr, "replay: %s: cannot list\n", path);
			return 1;
		}
		for (int i = 0; i < n; i++) {
			char sub[4096];

			if (names[i]->d_name[0] != '.') {
				snprintf(sub, sizeof(sub), "%s/%s", path, names[i]->d_name);
				rc |= replay_path(sub);
			}
			free(names[i]);
		}
		free(names);
		return rc;
	}
	if (!S_ISREG(st.st_mode))
		return 0;
	if (fs_read_file(path, 64u << 20, &buf, &len, NULL) != 0) {
		fprintf(stderr, "replay: %s: cannot read\n", path);
		return 1;
	}
	/* A crash or a sanitizer report here fails the test; the entry point's result is not a verdict. */
	LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
	free(buf);
	replayed++;
	return 0;
}

int main(int argc, char **argv)
{
	int rc = 0;

	for (int i = 1; i < argc; i++)
		rc |= replay_path(argv[i]);
	printf("replayed %ld inputs\n", replayed);
	/* No input at all means the paths were wrong: a test that replays nothing proves nothing. */
	return rc || replayed == 0 ? 1 : 0;
}

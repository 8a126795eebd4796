/* fuzz.c: the scratch directory and file writing every fuzz target shares. */
#include "fuzz.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "config/machine.h"

static char dir[256];

static void remove_dir(void)
{
	char cmd[300];

	/* Only the directory mkdtemp made: its name is ours. */
	if (dir[0] && snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir) < (int)sizeof(cmd) &&
	    system(cmd) != 0)
		fprintf(stderr, "fuzz: could not remove %s\n", dir);
}

const char *fuzz_dir(void)
{
	const char *tmp = getenv("TMPDIR");

	if (dir[0])
		return dir;
	snprintf(dir, sizeof(dir), "%s/blfuzz.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("fuzz: mkdtemp");
		abort();
	}
	atexit(remove_dir);
	/* Every rejected input would print a warning: thousands a second. */
	log_set_level(LOG_ERROR + 1);
	return dir;
}

const char *fuzz_file(const char *name, const uint8_t *data, size_t size)
{
	static char path[512];
	int fd;

	/* Each directory on the way, "run" then "run/approvals". */
	for (const char *slash = strchr(name, '/'); slash; slash = strchr(slash + 1, '/')) {
		char sub[512];

		snprintf(sub, sizeof(sub), "%s/%.*s", fuzz_dir(), (int)(slash - name), name);
		mkdir(sub, 0755);
	}
	snprintf(path, sizeof(path), "%s/%s", fuzz_dir(), name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size)) {
		perror(path);
		abort();
	}
	close(fd);
	return path;
}

void fuzz_unlink(const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", fuzz_dir(), name);
	unlink(path);
}

const char *fuzz_src(const char *rel)
{
	static char path[1024];

	snprintf(path, sizeof(path), "%s/%s", BL_SOURCE_ROOT, rel);
	return path;
}

const struct machine *fuzz_machine(const char *rel)
{
	static struct machine m;
	bl_err err = { 0 };

	if (m.name[0])
		return &m;
	fuzz_dir();
	if (machine_load(fuzz_src(rel), &m, &err)) {
		fprintf(stderr, "fuzz: %s\n", err.msg);
		abort();
	}
	return &m;
}

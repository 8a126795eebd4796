/* test_run_progress.c: a run's progress: one live line on a terminal, plain lines elsewhere, nothing with --quiet. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

/* A few strokes: progress, not painting, is under test. */
#define STROKES "8"

/* Runs brushloop run with stderr on fd_err (stdout to /dev/null); returns its exit status. */
static int run_with_stderr(int fd_err, const char *dir, int quiet)
{
	const char *bin = getenv("BRUSHLOOP");
	pid_t pid = fork();
	int status = 0;

	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		dup2(fd_err, 2);
		if (quiet)
			execl(bin, bin, "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", STROKES,
			      "--accept-nearest", "--quiet", (char *)NULL);
		else
			execl(bin, bin, "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", STROKES,
			      "--accept-nearest", (char *)NULL);
		_exit(127);
	}
	if (pid < 0)
		return -1;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	size_t n;

	if (!f)
		return NULL;
	buf = calloc(1, 1 << 20);
	n = fread(buf, 1, (1 << 20) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

TEST(plain_lines_when_not_a_terminal)
{
	char path[4200], dir[4200], *text;
	int fd, rc, lines = 0;

	snprintf(path, sizeof(path), "%s/stderr.txt", test_tmpdir());
	snprintf(dir, sizeof(dir), "%s/plain", test_tmpdir());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	rc = run_with_stderr(fd, dir, 0);
	close(fd);
	CHECK_MSG(rc == 0, "exit %d", rc);
	text = slurp(path);
	CHECK(text != NULL);
	if (!text)
		return;
	/* Whole lines, no carriage returns or terminal escapes. */
	CHECK(!strchr(text, '\r'));
	CHECK(!strchr(text, '\033'));
	for (char *p = text; (p = strstr(p, "strokes ")); p++)
		lines++;
	CHECK_MSG(lines >= 2, "%d progress lines", lines);
	CHECK_STR_CONTAINS(text, "checkpoint");
	CHECK_STR_CONTAINS(text, "ETA");
	CHECK_STR_CONTAINS(text, "canvas CIEDE2000");
	CHECK_STR_CONTAINS(text, "finished");
	free(text);
}

TEST(quiet_prints_no_progress)
{
	char path[4200], dir[4200], *text;
	int fd, rc;

	snprintf(path, sizeof(path), "%s/stderr.txt", test_tmpdir());
	snprintf(dir, sizeof(dir), "%s/quiet", test_tmpdir());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	rc = run_with_stderr(fd, dir, 1);
	close(fd);
	CHECK_MSG(rc == 0, "exit %d", rc);
	text = slurp(path);
	CHECK(text != NULL && text[0] == '\0');
	free(text);
}

TEST(a_live_line_on_a_terminal)
{
	char dir[4200], buf[1 << 16];
	size_t got = 0;
	int master, slave, status = 0, crs = 0;
	const char *bin = getenv("BRUSHLOOP");
	pid_t pid;

	snprintf(dir, sizeof(dir), "%s/live", test_tmpdir());
	master = posix_openpt(O_RDWR | O_NOCTTY);
	CHECK(master >= 0);
	if (master < 0)
		return;
	CHECK(grantpt(master) == 0 && unlockpt(master) == 0);
	slave = open(ptsname(master), O_RDWR | O_NOCTTY);
	CHECK(slave >= 0);
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		close(master);
		dup2(null, 1);
		dup2(slave, 2);
		execl(bin, bin, "run", test_src_path(TEST_TARGET), "--out", dir, "--max-strokes", STROKES,
		      "--accept-nearest", (char *)NULL);
		_exit(127);
	}
	close(slave);
	/* Drain the terminal until the run ends (a full pty would stall it). */
	for (;;) {
		struct pollfd pf = { master, POLLIN, 0 };
		ssize_t k;

		if (poll(&pf, 1, 100) > 0) {
			k = read(master, buf + got, sizeof(buf) - 1 - got);
			if (k > 0) {
				got += (size_t)k;
				if (got >= sizeof(buf) - 1)
					got = 0; /* keep the tail */
				continue;
			}
			if (k < 0 && errno != EAGAIN && errno != EINTR)
				break; /* EIO: the child closed the terminal */
		}
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
	}
	waitpid(pid, &status, WNOHANG);
	close(master);
	buf[got] = '\0';
	CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "exit status %d", status);
	for (size_t i = 0; i < got; i++)
		crs += buf[i] == '\r' && (i + 1 >= got || buf[i + 1] != '\n');
	/* One line rewritten in place: carriage returns and erase-to-end-of-line. */
	CHECK_MSG(crs >= 2, "%d rewrites", crs);
	CHECK_STR_CONTAINS(buf, "\033[K");
	CHECK_STR_CONTAINS(buf, "strokes ");
	CHECK_STR_CONTAINS(buf, "ETA");
	CHECK_STR_CONTAINS(buf, "canvas CIEDE2000");
}

TEST_MAIN(T(plain_lines_when_not_a_terminal), T(quiet_prints_no_progress), T(a_live_line_on_a_terminal))

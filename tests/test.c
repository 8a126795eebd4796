/* test.c: runs the named cases of a test binary and reports failures and empty cases. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <ftw.h>

#include "test.h"
#include "engine/run_checks.h"

static char tmp_dir[4096]; /* made on first use by test_tmpdir */

static int remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	remove(path);
	return 0;
}

/*
 * A passing binary removes its directory (whole simulated runs leave tens of
 * megabytes each, and a suite hundreds of such directories); a failing one
 * keeps it to be looked at, and says where.
 */
static int finish(int failed)
{
	if (!tmp_dir[0])
		return failed;
	if (failed)
		fprintf(stderr, "kept for a look: %s\n", tmp_dir);
	else
		nftw(tmp_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	return failed;
}

/* Every run directory under the test's directory (a journal.jsonl beside a machine.json): its cells replayed. */
static int check_run_dir(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	size_t n = strlen(path);
	char dir[4096];

	(void)sb;
	(void)ftw;
	if (type != FTW_F || n < 14 || strcmp(path + n - 14, "/journal.jsonl") || n - 14 >= sizeof(dir))
		return 0;
	snprintf(dir, sizeof(dir), "%.*s", (int)(n - 14), path);
	run_check_dir_cells(dir);
	return 0;
}

static int run_one(const struct test_case *c)
{
	int before_f = test_failures, before_c = test_checks;

	c->fn();
	/* A case that checked nothing proves nothing: count it as failed. */
	if (test_checks == before_c) {
		fprintf(stderr, "%s: made no checks\n", c->name);
		test_failures++;
	}
	/* No whole run, in any case, ever filled a mixing cell past its limit at any journal line. */
	if (tmp_dir[0])
		nftw(tmp_dir, check_run_dir, 16, FTW_PHYS);
	fprintf(stderr, "%s: %s (%d checks)\n", c->name,
		test_failures == before_f ? "ok" : "FAILED", test_checks - before_c);
	return test_failures == before_f ? 0 : 1;
}

void test_skip(const char *why)
{
	fprintf(stderr, "SKIP: %s\n", why);
	exit(finish(0) ? 1 : 77);
}

int test_run(const struct test_case *cases, int argc, char **argv)
{
	int failed = 0;

	if (argc > 1) {
		for (int i = 1; i < argc; i++) {
			const struct test_case *c = cases;

			while (c->name && strcmp(c->name, argv[i]) != 0)
				c++;
			if (!c->name) {
				fprintf(stderr, "no test case named '%s'\n", argv[i]);
				return finish(1);
			}
			failed |= run_one(c);
		}
		return finish(failed);
	}
	for (const struct test_case *c = cases; c->name; c++)
		failed |= run_one(c);
	return finish(failed);
}

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static char *slurp_fd(int fd)
{
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap);

	if (!buf)
		return NULL;
	for (;;) {
		ssize_t n;

		if (len + 1 >= cap) {
			char *nb = realloc(buf, cap * 2);

			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	return buf;
}

/* The spawns of this process so far: each captures its output in files of its own. */
static unsigned spawns;

int test_spawn(const char *const *argv, const char *in_path, char **out, char **err)
{
	char outpath[4096], errpath[4096];
	posix_spawn_file_actions_t fa;
	int status, fd;
	pid_t pid;

	if (out)
		*out = NULL;
	if (err)
		*err = NULL;
	/*
	 * Named for this process and call: the jobs of test_parallel share the
	 * case's directory, and one job's output must not be another's.
	 */
	snprintf(outpath, sizeof(outpath), "%s/stdout.%ld.%u", test_tmpdir(), (long)getpid(), spawns);
	snprintf(errpath, sizeof(errpath), "%s/stderr.%ld.%u", test_tmpdir(), (long)getpid(), spawns++);
	posix_spawn_file_actions_init(&fa);
	if (in_path)
		posix_spawn_file_actions_addopen(&fa, 0, in_path, O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, outpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_addopen(&fa, 2, errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (posix_spawnp(&pid, argv[0], &fa, NULL, (char *const *)argv, environ) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		return -1;
	}
	posix_spawn_file_actions_destroy(&fa);
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	fd = open(outpath, O_RDONLY);
	if (fd >= 0) {
		if (out)
			*out = slurp_fd(fd);
		close(fd);
	}
	fd = open(errpath, O_RDONLY);
	if (fd >= 0) {
		if (err)
			*err = slurp_fd(fd);
		close(fd);
	}
	unlink(outpath);
	unlink(errpath);
	if (!WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

int test_brushloop(const char *const *args, char **out, char **err)
{
	const char *bin = getenv("BRUSHLOOP");
	const char *argv[256];
	int n = 0;

	if (out)
		*out = NULL;
	if (err)
		*err = NULL;
	if (!bin) {
		fprintf(stderr, "BRUSHLOOP is not set: run through meson test\n");
		return -1;
	}
	argv[n++] = bin;
	while (*args && n < 255)
		argv[n++] = *args++;
	argv[n] = NULL;
	return test_spawn(argv, NULL, out, err);
}

const char *test_tmpdir(void)
{
	if (!tmp_dir[0]) {
		const char *base = getenv("TMPDIR");

		snprintf(tmp_dir, sizeof(tmp_dir), "%s/bltest.XXXXXX", base ? base : "/tmp");
		if (!mkdtemp(tmp_dir)) {
			perror("mkdtemp");
			exit(1);
		}
	}
	return tmp_dir;
}

/* Eight rotating buffers: a call's result outlives the next seven calls. */
static char *path_buf(void)
{
	static char p[8][4096];
	static unsigned k;

	return p[k++ % 8];
}

const char *test_src_path(const char *rel)
{
	char *p = path_buf();
	const char *src = getenv("BRUSHLOOP_SRC");

	snprintf(p, 4096, "%s/%s", src ? src : ".", rel);
	return p;
}

const char *test_tmp_path(const char *name)
{
	char *p = path_buf();

	snprintf(p, 4096, "%s/%s", test_tmpdir(), name);
	return p;
}

cJSON *test_status(const char *dir, int *rc)
{
	const char *args[] = { "status", dir, "--json", NULL };
	char *out = NULL;
	cJSON *o = NULL;
	int r = test_brushloop(args, &out, NULL);

	if (rc)
		*rc = r;
	if (out)
		o = cJSON_Parse(out);
	free(out);
	return o;
}

int test_journal_each(const char *dir, void (*fn)(const cJSON *line, void *ctx), void *ctx)
{
	char path[4200], *text, *save = NULL;

	snprintf(path, sizeof(path), "%s/journal.jsonl", dir);
	if (!(text = test_read_file(path)))
		return -1;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		cJSON *o = cJSON_Parse(line);

		fn(o, ctx);
		cJSON_Delete(o);
	}
	free(text);
	return 0;
}

/* One job in a forked child: its exit status is the number of its failed checks (at most 100). */
static pid_t start_job(int i, void (*job)(int i, void *ctx), void *ctx)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		test_failures = 0;
		job(i, ctx);
		fflush(NULL);
		_exit(test_failures > 100 ? 100 : test_failures);
	}
	return pid;
}

void test_parallel(int n, int at_once, void (*job)(int i, void *ctx), void *ctx)
{
	pid_t pids[64];
	int next = 0, running = 0;

	/* Made here, before any fork: every child names the same directory. */
	test_tmpdir();
	CHECK_MSG(n >= 0 && n <= 64 && at_once > 0, "%d jobs, %d at once", n, at_once);
	if (n < 0 || n > 64 || at_once <= 0)
		return;
	while (next < n || running > 0) {
		int ended = 0;

		while (next < n && running < at_once) {
			pids[next] = start_job(next, job, ctx);
			CHECK_MSG(pids[next] > 0, "job %d: fork failed", next);
			running += pids[next] > 0;
			next++;
		}
		/* Each of ours by its pid: a child the case started itself is left to the case. */
		for (int i = 0; i < next; i++) {
			int status = 0;

			if (pids[i] <= 0 || waitpid(pids[i], &status, WNOHANG) != pids[i])
				continue;
			pids[i] = 0;
			running--;
			ended = 1;
			CHECK_MSG(WIFEXITED(status), "job %d ended by signal %d", i,
				  WIFSIGNALED(status) ? WTERMSIG(status) : 0);
			if (WIFEXITED(status))
				test_failures += WEXITSTATUS(status);
		}
		if (!ended && running > 0)
			usleep(10000);
	}
}

const char *test_write_file(const char *name, const char *text)
{
	static char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", test_tmpdir(), name);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
	return path;
}

char *test_read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = calloc(1, (size_t)n + 1)) && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/* bench_journal.c: benchmarks of the journal's chain: what it adds to each line written (its digest and the check that the file is the writer's own), and what checking it costs a resume per line. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/digest.h"
#include "base/journal.h"
#include "bench/bench.h"

/* A line as long as a run's journal lines are on average (measured: about 560 bytes at 24 strokes). */
static void typical_line(char *buf, size_t n, long seq)
{
	int k = snprintf(buf, n, "{\"seq\":%ld,\"run\":\"0123456789abcdef0123456789abcdef\",\"prev\":\"%064d\","
			 "\"wall_ms\":1796665808451,\"mono_ns\":400363282673,\"src\":\"gate\",\"subtask\":\"s4\","
			 "\"event\":\"decision\",\"data\":{", seq, 0);

	while (k > 0 && (size_t)k < n - 40 && k < 540)
		k += snprintf(buf + k, n - (size_t)k, "\"k%d\":%d,", k, k);
	snprintf(buf + k, n - (size_t)k, "\"end\":1}}");
}

int bench_journal_chain_line(double *value, int quick, bl_err *err)
{
	enum { N = 20000 };
	char line[1024], dg[BL_DIGEST_HEX], path[256];
	struct stat a, b;
	double t0;
	int fd, rc = 0;

	(void)quick;
	snprintf(path, sizeof(path), "/tmp/brushloop-bench-journal-%ld", (long)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return bl_fail(err, BL_EIO, "%s: cannot create", path);
	typical_line(line, sizeof(line), 1);
	t0 = bench_now_ms();
	/* What the chain adds to an append: the line's SHA-256, and the file checked to be the writer's own. */
	for (int i = 0; i < N && rc == 0; i++)
		if ((rc = bl_digest_hex(line, strlen(line), dg, err)) == 0 &&
		    (fstat(fd, &a) < 0 || stat(path, &b) < 0 || a.st_ino != b.st_ino))
			rc = bl_fail(err, BL_EIO, "%s: stat failed", path);
	*value = (bench_now_ms() - t0) * 1000.0 / N;
	close(fd);
	unlink(path);
	return rc;
}

int bench_journal_verify_line(double *value, int quick, bl_err *err)
{
	enum { N = 4000 };
	size_t cap = (size_t)N * 1100, len = 0;
	char *text = malloc(cap), prev[BL_DIGEST_HEX];
	struct journal_info in;
	double t0;
	int rc = 0;

	(void)quick;
	if (!text)
		return bl_fail(err, BL_ENOMEM, "out of memory");
	memset(prev, '0', BL_DIGEST_HEX - 1);
	prev[BL_DIGEST_HEX - 1] = '\0';
	/* A chained journal of N typical lines, each naming the one before. */
	for (long s = 1; s <= N && rc == 0; s++) {
		char line[1024], *p;

		typical_line(line, sizeof(line), s);
		p = strstr(line, "\"prev\":\"") + 8;
		memcpy(p, prev, BL_DIGEST_HEX - 1);
		len += (size_t)snprintf(text + len, cap - len, "%s\n", line);
		rc = bl_digest_hex(line, strlen(line), prev, err);
	}
	if (rc == 0) {
		t0 = bench_now_ms();
		rc = journal_verify_text(text, len, "bench", "0123456789abcdef0123456789abcdef", NULL, NULL, &in, err);
		*value = (bench_now_ms() - t0) * 1000.0 / N;
		if (rc == 0 && in.lines != N)
			rc = bl_fail(err, BL_EINVAL, "verified %ld lines of %d", in.lines, N);
	}
	free(text);
	return rc;
}

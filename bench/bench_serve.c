/* bench_serve.c: benchmarks of the console: time to the first byte of a run's page, and of the event after its state changes. */
#include <arpa/inet.h>
#include <cJSON.h>
#include <ftw.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/fs.h"
#include "bench/bench.h"
#include "calib/calib.h"
#include "engine/run.h"
#include "report/report.h"
#include "serve/serve.h"

#define BENCH_TOKEN "bench0123456789abcdef0123456789ab"

static struct serve *bench_console;
static char bench_tmp[64];

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	return remove(path);
}

/* At exit: the console stopped, its run removed. */
static void console_end(void)
{
	serve_stop(bench_console);
	if (bench_tmp[0])
		nftw(bench_tmp, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * One small simulated run (40 strokes of flat-shapes; quick: 8 strokes of 2 colours, a run
 * directory with every file the page shows) and a console over it, made once a process.
 */
static struct serve *console(char *run, size_t n, int quick, bl_err *err)
{
	static char dir[4096];
	struct serve *s = bench_console;
	struct run_options o;
	struct serve_options so = { 0 };
	char tmpl[] = "/tmp/brushloop-bench-serve-XXXXXX";
	int rc;

	if (s) {
		snprintf(run, n, "%s", dir);
		return s;
	}
	if (!mkdtemp(tmpl)) {
		bl_fail(err, BL_EIO, "mkdtemp failed");
		return NULL;
	}
	snprintf(bench_tmp, sizeof(bench_tmp), "%s", tmpl);
	atexit(console_end);
	snprintf(dir, sizeof(dir), "%s/run", tmpl);
	run_options_init(&o);
	o.calibration = calib_for_run;
	o.report = report_for_run;
	o.target = BL_SOURCE_ROOT "/examples/targets/flat-shapes.png";
	o.machine_path = BL_SOURCE_ROOT "/examples/machine-sim.json";
	o.palette_path = BL_SOURCE_ROOT "/examples/palette.json";
	o.out_dir = dir;
	o.max_strokes = quick ? 8 : 40;
	o.colours = quick ? 2 : 0;
	o.quiet = 1;
	o.accept_nearest = 1;
	rc = run_start(&o, err);
	if (rc && rc != BL_EPAUSED && rc != BL_EBRAKE)
		return NULL;
	so.run_dirs[so.n_run_dirs++] = dir;
	so.listen = "127.0.0.1:0";
	so.token = BENCH_TOKEN;
	if (serve_start(&so, &s, err))
		return NULL;
	bench_console = s;
	snprintf(run, n, "%s", dir);
	return s;
}

static int connect_to(struct serve *s, const char *path, bl_err *err)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)serve_port(s)) };
	char req[512];
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer " BENCH_TOKEN
		 "\r\nConnection: close\r\n\r\n", path, serve_port(s));
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    fs_write_fd(fd, req, strlen(req)) < 0) {
		if (fd >= 0)
			close(fd);
		return bl_fail(err, BL_EIO, "cannot reach the console");
	}
	return fd;
}

int bench_serve_run_page(double *value, int quick, bl_err *err)
{
	char run[4096], buf[65536];
	struct serve *s = console(run, sizeof(run), quick, err);
	double t0;
	int fd;

	if (!s)
		return err->code;
	t0 = bench_now_ms();
	fd = connect_to(s, "/api/runs/run", err);
	if (fd < 0)
		return fd;
	if (read(fd, buf, 1) != 1) {
		close(fd);
		return bl_fail(err, BL_EIO, "the run page sent nothing");
	}
	*value = bench_now_ms() - t0;
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
	return 0;
}

/* Reads the stream until it has sent count lines "event: NAME" more ("run", then "patch"), within timeout_ms. */
static int events(int fd, const char *name, int count, int timeout_ms, bl_err *err)
{
	char buf[65536], mark[32];
	size_t have = 0, mlen = (size_t)snprintf(mark, sizeof(mark), "event: %s\n", name);

	while (count > 0) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t n;

		if (poll(&p, 1, timeout_ms) <= 0)
			return bl_fail(err, BL_ETIMEDOUT, "no event within %d ms", timeout_ms);
		n = read(fd, buf + have, sizeof(buf) - 1 - have);
		if (n <= 0)
			return bl_fail(err, BL_EIO, "the event stream ended");
		have += (size_t)n;
		buf[have] = '\0';
		for (char *m; count > 0 && (m = strstr(buf, mark));) {
			count--;
			have -= (size_t)(m + mlen - buf);
			memmove(buf, m + mlen, have + 1);
		}
		if (have > sizeof(buf) / 2) { /* a long event's data: keep only its end */
			memmove(buf, buf + have - 16, 17);
			have = 16;
		}
	}
	return 0;
}

/* state.json as it was but for its reason, written as the engine writes it. */
static int changed_state(const char *path, const char *state, bl_err *err)
{
	cJSON *st = cJSON_Parse(state);
	char *text;
	int rc;

	if (!st)
		return bl_fail(err, BL_EINVAL, "%s: not JSON", path);
	cJSON_DeleteItemFromObject(st, "reason");
	cJSON_AddStringToObject(st, "reason", "changed by the benchmark");
	text = cJSON_Print(st);
	cJSON_Delete(st);
	if (!text)
		return bl_fail(err, BL_ENOMEM, "state.json: out of memory");
	rc = fs_write_atomic(path, text, strlen(text), err);
	free(text);
	return rc;
}

int bench_serve_event(double *value, int quick, bl_err *err)
{
	char run[4096], path[4200], *state = NULL;
	struct serve *s = console(run, sizeof(run), quick, err);
	size_t len;
	double t0;
	int fd, rc;

	if (!s)
		return err->code;
	snprintf(path, sizeof(path), "%s/state.json", run);
	if ((rc = fs_read_file(path, 1 << 26, &state, &len, err)))
		return rc;
	fd = connect_to(s, "/api/runs/run/events", err);
	if (fd < 0) {
		free(state);
		return fd;
	}
	/*
	 * The whole run comes at once; past the stream's 100 ms spacing, the state changes as the
	 * engine writes it (its reason, so the page has something to patch).
	 */
	rc = events(fd, "run", 1, 5000, err);
	usleep(300 * 1000);
	t0 = bench_now_ms();
	if (rc == 0)
		rc = changed_state(path, state, err);
	if (rc == 0)
		rc = events(fd, "patch", 1, 5000, err);
	*value = bench_now_ms() - t0;
	close(fd);
	free(state);
	return rc;
}

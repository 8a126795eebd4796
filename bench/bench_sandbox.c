/* bench_sandbox.c: what a fresh planner sandbox costs a phase: start, one line answered, teardown. */
#include <poll.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "bench/bench.h"
#include "sandbox/sbx.h"

/* The host's CPU time and its reaped children's (bwrap, prlimit, the planner), in ms. */
static double cpu_ms(void)
{
	struct rusage self, kids;

	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &kids);
	return (self.ru_utime.tv_sec + kids.ru_utime.tv_sec + self.ru_stime.tv_sec +
		kids.ru_stime.tv_sec) * 1e3 +
	       (self.ru_utime.tv_usec + kids.ru_utime.tv_usec + self.ru_stime.tv_usec +
		kids.ru_stime.tv_usec) / 1e3;
}

/* One sandbox whose planner (head -n1) answers one line; wall and CPU ms. */
static int one_phase(double *wall, double *cpu, bl_err *err)
{
	static const char *const argv[] = { "head", "-n1", NULL };
	struct sbx_policy pol = { .argv = argv };
	struct pollfd pfd;
	struct sbx_proc p;
	char line[64];
	ssize_t n = 0;
	double t0 = bench_now_ms(), c0 = cpu_ms();

	BL_TRY(sbx_start(&pol, &p, err));
	if (write(p.fd, "{\"ping\":1}\n", 11) == 11) {
		pfd = (struct pollfd){ .fd = p.fd, .events = POLLIN };
		if (poll(&pfd, 1, 10000) == 1)
			n = read(p.fd, line, sizeof(line));
	}
	/* head has exited: its own end, reaped with the sandbox. */
	sbx_wait(&p, 10000, NULL);
	sbx_stop(&p, NULL, NULL);
	*wall = bench_now_ms() - t0;
	*cpu = cpu_ms() - c0;
	if (n != 11 || memcmp(line, "{\"ping\":1}\n", 11))
		return bl_fail(err, BL_EIO, "bench sandbox: the planner did not answer its line");
	return 0;
}

int bench_sandbox_start(double *value, int quick, bl_err *err)
{
	double cpu;

	return one_phase(value, &cpu, err);
}

int bench_sandbox_start_cpu(double *value, int quick, bl_err *err)
{
	double wall;

	return one_phase(&wall, value, err);
}

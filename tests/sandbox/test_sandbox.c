/* test_sandbox.c: hostile planners against the sandbox's walls: files, environment, processes, limits, system calls. */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sbx_run.h"
#include "test.h"

/* Runs one hostile case with the default policy; its output line is in r->out. */
static void run(const char *const *args, int timeout_ms, struct hostile_run *r)
{
	bl_err err = { 0 };
	int rc = hostile_run(NULL, args, timeout_ms, r, &err);

	CHECK_MSG(rc == 0, "sandbox did not start: %s", err.msg);
	/* Every sandbox is journaled when it starts and when it stops. */
	CHECK(hostile_count(r, "sandbox_start", NULL, NULL) == 1);
	CHECK(hostile_count(r, "sandbox_stop", NULL, NULL) == 1);
	if (getenv("SBX_DEBUG")) {
		char *t = cJSON_Print(r->events);
		fprintf(stderr, "out: %s\nerr: %s\nevents: %s\n", r->out, r->err, t);
		free(t);
	}
}

TEST(capabilities_are_all_dropped)
{
	struct hostile_run r;

	run((const char *[]){ "caps", NULL }, 10000, &r);
	CHECK_STR_CONTAINS(r.out, "caps: 0000000000000000\n");
	hostile_free(&r);
}

TEST(socket_inet_is_refused_by_seccomp)
{
	struct hostile_run r;

	run((const char *[]){ "socket_inet", NULL }, 10000, &r);
	CHECK_STR_CONTAINS(r.out, "socket_inet: errno=EPERM\n");
	hostile_free(&r);
}

TEST_MAIN(T(capabilities_are_all_dropped), T(socket_inet_is_refused_by_seccomp))

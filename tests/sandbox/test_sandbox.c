/* test_sandbox.c: hostile planners against the sandbox's walls: files, environment, processes, limits, system calls. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sbx_run.h"
#include "test.h"

/*
 * Each case runs tests/sandbox/hostile, which tries one way out and prints
 * what happened; the case checks that line, what the host saw, and the
 * journal (sandbox_start and sandbox_stop for every sandbox).
 */
static void run_with(const struct sbx_policy *pol, const char *const *args, int timeout_ms,
		     struct hostile_run *r)
{
	hostile_check(pol, args, timeout_ms, r);
}

static void run(const char *const *args, int timeout_ms, struct hostile_run *r)
{
	run_with(NULL, args, timeout_ms, r);
}

/* One hostile case whose whole output must be expect. */
static void expect(const char *const *args, const char *want)
{
	struct hostile_run r;

	run(args, 10000, &r);
	CHECK_MSG(strcmp(r.out, want) == 0, "%s said '%s', expected '%s'", args[0], r.out, want);
	hostile_free(&r);
}

static double stop_num(const struct hostile_run *r, const char *key)
{
	const cJSON *d = hostile_event(r, "sandbox_stop", 0);
	const cJSON *v = d ? cJSON_GetObjectItemCaseSensitive(d, key) : NULL;

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

TEST(capabilities_are_all_dropped)
{
	expect((const char *[]){ "caps", NULL }, "caps: 0000000000000000\n");
}

TEST(socket_inet_is_refused_by_seccomp)
{
	expect((const char *[]){ "socket_inet", NULL }, "socket_inet: errno=EPERM\n");
}

TEST(ptrace_is_refused)
{
	expect((const char *[]){ "ptrace", NULL }, "ptrace: errno=EPERM\n");
}

TEST(io_uring_is_refused)
{
	expect((const char *[]){ "io_uring", NULL }, "io_uring: errno=EPERM\n");
}

TEST(terminal_injection_is_refused)
{
	expect((const char *[]){ "tiocsti", NULL }, "tiocsti: errno=EPERM\n");
}

TEST(a_new_user_namespace_is_refused)
{
	expect((const char *[]){ "unshare", NULL }, "unshare: errno=EPERM\n");
}

TEST(etc_shadow_is_not_there)
{
	struct stat st;

	/* The host has one: the sandbox's /etc is not the host's. */
	CHECK(stat("/etc/shadow", &st) == 0);
	expect((const char *[]){ "read", "/etc/shadow", NULL }, "read: errno=ENOENT\n");
}

TEST(the_host_environment_is_not_visible)
{
	struct hostile_run r;

	setenv("BRUSHLOOP_TEST_SECRET", "s3cr3t-token", 1);
	run((const char *[]){ "env", NULL }, 10000, &r);
	CHECK(strstr(r.out, "s3cr3t-token") == NULL);
	CHECK_STR_CONTAINS(r.out, "env: PATH=/usr/bin:/bin\n");
	CHECK_STR_CONTAINS(r.out, "env: HOME=/tmp\n");
	CHECK_STR_CONTAINS(r.out, "env: end\n");
	hostile_free(&r);
}

TEST(machine_file_approvals_and_home_are_not_visible)
{
	char approvals[PATH_MAX], machine[PATH_MAX];
	const char *home = getenv("HOME");

	snprintf(machine, sizeof(machine), "%s", test_write_file("machine.json", "{}\n"));
	snprintf(approvals, sizeof(approvals), "%s/approvals", test_tmpdir());
	CHECK(mkdir(approvals, 0755) == 0 || errno == EEXIST);
	CHECK(access(machine, R_OK) == 0);
	expect((const char *[]){ "read", machine, NULL }, "read: errno=ENOENT\n");
	expect((const char *[]){ "read", approvals, NULL }, "read: errno=ENOENT\n");
	CHECK(home && access(home, R_OK) == 0);
	expect((const char *[]){ "read", home ? home : "/root", NULL }, "read: errno=ENOENT\n");
}

TEST(an_approval_answer_cannot_be_forged)
{
	char approvals[PATH_MAX], answer[PATH_MAX + 32];

	snprintf(approvals, sizeof(approvals), "%s/approvals", test_tmpdir());
	CHECK(mkdir(approvals, 0777) == 0 || errno == EEXIST);
	snprintf(answer, sizeof(answer), "%s/0001.answer.json", approvals);
	expect((const char *[]){ "write", answer, NULL }, "write: errno=ENOENT\n");
	CHECK(access(answer, F_OK) != 0);
}

TEST(writing_outside_tmp_fails)
{
	expect((const char *[]){ "write", "/usr/planted", NULL }, "write: errno=EROFS\n");
	expect((const char *[]){ "write", "/planted", NULL }, "write: errno=EROFS\n");
	expect((const char *[]){ "write", "/dev/planted", NULL }, "write: errno=EROFS\n");
	expect((const char *[]){ "write", "/tmp/allowed", NULL }, "write: written\n");
}

TEST(in_dir_files_are_there_read_only)
{
	char in[PATH_MAX];
	struct sbx_policy pol = { 0 };
	struct hostile_run r;
	FILE *f;

	/* A run directory may be root's and 0700: its files still reach the planner. */
	snprintf(in, sizeof(in), "%s/in", test_tmpdir());
	CHECK(mkdir(in, 0700) == 0 || errno == EEXIST);
	snprintf(in + strlen(in), sizeof(in) - strlen(in), "/target.txt");
	CHECK((f = fopen(in, "w")) != NULL);
	fputs("twelve bytes", f);
	fclose(f);
	CHECK(chmod(in, 0600) == 0);
	*strrchr(in, '/') = '\0';
	pol.in_dir = in;
	run_with(&pol, (const char *[]){ "read", "/in/target.txt", NULL }, 10000, &r);
	CHECK_MSG(strcmp(r.out, "read: read 12 bytes\n") == 0, "said '%s'", r.out);
	hostile_free(&r);
	run_with(&pol, (const char *[]){ "write", "/in/target.txt", NULL }, 10000, &r);
	CHECK_MSG(strcmp(r.out, "write: errno=EROFS\n") == 0, "said '%s'", r.out);
	hostile_free(&r);
}

/* The hostile planner copied to path (a planner kept in a folder of the host's). */
static void copy_planner(const char *path)
{
	int in = open(getenv("BRUSHLOOP_HOSTILE"), O_RDONLY), out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	char buf[65536];
	ssize_t n;

	CHECK(in >= 0 && out >= 0);
	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		CHECK(write(out, buf, (size_t)n) == n);
	close(in);
	close(out);
}

/* A host listener on a Unix socket at path; what reached it, after the planner ran, into got. */
static int unix_listen(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	CHECK(fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(fd, 4) == 0);
	CHECK(chmod(path, 0777) == 0);
	return fd;
}

/*
 * A planner kept in a folder of the host's, dir: a file and a run directory
 * beside it, a host listener's socket there. The sandbox holds its file, and
 * none of the rest.
 */
static void nothing_beside(const char *dir, const char *name)
{
	char exe[PATH_MAX], secret[PATH_MAX], run[PATH_MAX], sock[PATH_MAX], own[PATH_MAX + 32];
	const char *argv[] = { exe, NULL };
	struct sbx_policy pol = { .argv = argv };
	struct hostile_run r;
	int lfd, c;

	snprintf(exe, sizeof(exe), "%s/%s", dir, name);
	snprintf(secret, sizeof(secret), "%s/%s-secret.json", dir, name);
	snprintf(run, sizeof(run), "%s/%s-runs", dir, name);
	snprintf(sock, sizeof(sock), "%s/%s.sock", dir, name);
	copy_planner(exe);
	CHECK(mkdir(run, 0755) == 0 || errno == EEXIST);
	{
		FILE *f = fopen(secret, "w");

		CHECK(f != NULL);
		if (f) {
			fputs("{\"token\": \"the host's\"}\n", f);
			fclose(f);
		}
		chmod(secret, 0644);
		snprintf(own, sizeof(own), "%s/machine.json", run);
		if ((f = fopen(own, "w"))) {
			fputs("{\"limits\": {}}\n", f);
			fclose(f);
		}
	}
	lfd = unix_listen(sock);
	run_with(&pol, (const char *[]){ "read", secret, NULL }, 10000, &r);
	CHECK_MSG(strcmp(r.out, "read: errno=ENOENT\n") == 0, "%s: said '%s'", dir, r.out);
	hostile_free(&r);
	run_with(&pol, (const char *[]){ "read", own, NULL }, 10000, &r);
	CHECK_MSG(strcmp(r.out, "read: errno=ENOENT\n") == 0, "%s: said '%s'", dir, r.out);
	hostile_free(&r);
	run_with(&pol, (const char *[]){ "unix", sock, NULL }, 10000, &r);
	CHECK_MSG(strcmp(r.out, "unix: errno=ENOENT\n") == 0, "%s: said '%s'", dir, r.out);
	c = accept(lfd, NULL, NULL);
	CHECK_MSG(c < 0, "%s: the host's listener was reached", dir);
	if (c >= 0)
		close(c);
	hostile_free(&r);
	/* Its own file is there, read-only. */
	run_with(&pol, (const char *[]){ "read", exe, NULL }, 10000, &r);
	CHECK_MSG(strcmp(r.out, "read: read 4096 bytes\n") == 0, "%s: said '%s'", dir, r.out);
	hostile_free(&r);
	run_with(&pol, (const char *[]){ "write", exe, NULL }, 10000, &r);
	CHECK_MSG(strcmp(r.out, "write: errno=EROFS\n") == 0, "%s: said '%s'", dir, r.out);
	hostile_free(&r);
	close(lfd);
	unlink(sock);
	unlink(secret);
	unlink(own);
	rmdir(run);
	unlink(exe);
}

TEST(nothing_beside_the_planners_file_is_there)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s/lab", test_tmpdir());
	CHECK(mkdir(dir, 0755) == 0 || errno == EEXIST);
	nothing_beside(dir, "planner");
}

/* A planner kept in /tmp itself sees nothing else of the host's /tmp. */
TEST(a_planner_in_tmp_sees_nothing_of_tmp)
{
	char name[64];

	snprintf(name, sizeof(name), "brushloop-planner-%d", (int)getpid());
	nothing_beside("/tmp", name);
}

/* A root host's sandbox runs as nobody: a planner below a folder nobody can search is copied in all the same. */
TEST(a_planner_below_a_private_folder_still_runs)
{
	char dir[PATH_MAX], exe[PATH_MAX + 16];
	const char *argv[] = { exe, NULL };
	struct sbx_policy pol = { .argv = argv };
	struct hostile_run r;

	snprintf(dir, sizeof(dir), "%s/private", test_tmpdir());
	CHECK(mkdir(dir, 0700) == 0 || errno == EEXIST);
	CHECK(chmod(dir, 0700) == 0);
	snprintf(exe, sizeof(exe), "%s/planner", dir);
	copy_planner(exe);
	CHECK(chmod(exe, 0700) == 0);
	run_with(&pol, (const char *[]){ "read", exe, NULL }, 10000, &r);
	CHECK_MSG(strcmp(r.out, "read: read 4096 bytes\n") == 0, "said '%s'", r.out);
	hostile_free(&r);
}

/* What a planner may be given is a file: a folder, a socket, a missing file or a path the sandbox makes is refused, naming it. */
TEST(a_folder_a_socket_or_a_missing_file_is_refused)
{
	char dir[PATH_MAX], sock[PATH_MAX + 16], missing[PATH_MAX + 16];
	struct sbx_file f;
	bl_err err = { 0 };
	int lfd;

	snprintf(dir, sizeof(dir), "%s/lab2", test_tmpdir());
	CHECK(mkdir(dir, 0755) == 0 || errno == EEXIST);
	snprintf(sock, sizeof(sock), "%s/host.sock", dir);
	snprintf(missing, sizeof(missing), "%s/nothing.py", dir);
	lfd = unix_listen(sock);
	CHECK(sbx_file_open(dir, &f, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "is a folder");
	CHECK(sbx_file_open(sock, &f, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "is not a regular file");
	CHECK(sbx_file_open(missing, &f, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "No such file");
	CHECK(sbx_file_open("/proc/self/environ", &f, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "which the sandbox makes itself");
	CHECK(sbx_file_open("relative.py", &f, &err) == BL_EINVAL);
	CHECK(f.fd < 0);
	close(lfd);
}

TEST(tmp_over_its_cap_is_enospc)
{
	struct sbx_policy pol = { .tmpfs_mb = 4 };
	struct hostile_run r;

	run_with(&pol, (const char *[]){ "fill", "/tmp/big", NULL }, 10000, &r);
	CHECK_MSG(strcmp(r.out, "fill: after 4 MiB errno=ENOSPC\n") == 0, "said '%s'", r.out);
	hostile_free(&r);
}

TEST(each_sandbox_starts_fresh)
{
	expect((const char *[]){ "write", "/tmp/left-by-the-last-phase", NULL }, "write: written\n");
	expect((const char *[]){ "read", "/tmp/left-by-the-last-phase", NULL }, "read: errno=ENOENT\n");
}

TEST(a_fork_bomb_is_contained)
{
	struct sbx_policy pol = { .nproc = 16 };
	struct hostile_run r;
	int n = -1;
	pid_t p;

	run_with(&pol, (const char *[]){ "forkbomb", NULL }, 20000, &r);
	CHECK_MSG(sscanf(r.out, "forkbomb: fork failed after %d errno=EAGAIN", &n) == 1,
		  "said '%s'", r.out);
	CHECK_MSG(n >= 0 && n < 16, "forked %d", n);
	/* The host still forks. */
	p = fork();
	if (p == 0)
		_exit(0);
	CHECK(p > 0 && waitpid(p, NULL, 0) == p);
	hostile_free(&r);
}

TEST(a_memory_bomb_is_contained)
{
	struct sbx_policy pol = { .as_mb = 256 };
	struct hostile_run r;
	long mb = -1;

	run_with(&pol, (const char *[]){ "membomb", NULL }, 20000, &r);
	CHECK_MSG(sscanf(r.out, "membomb: malloc failed after %ld MiB", &mb) == 1, "said '%s'", r.out);
	CHECK_MSG(mb > 0 && mb < 256, "allocated %ld MiB", mb);
	hostile_free(&r);
}

TEST(a_cpu_spin_is_killed_at_its_limit)
{
	struct sbx_policy pol = { .cpu_s = 1 };
	struct hostile_run r;

	run_with(&pol, (const char *[]){ "spin", NULL }, 30000, &r);
	CHECK_STR_CONTAINS(r.out, "spin: spinning\n");
	CHECK(r.ended);
	/* bwrap passes on a signal death as 128 + the signal. */
	CHECK_MSG(WIFEXITED(r.status) && (WEXITSTATUS(r.status) == 128 + SIGXCPU ||
					  WEXITSTATUS(r.status) == 128 + SIGKILL),
		  "status %#x", r.status);
	CHECK(stop_num(&r, "exit") == 128 + SIGXCPU || stop_num(&r, "exit") == 128 + SIGKILL);
	/* What it used is journaled from the host's side, and which limit ended it. */
	CHECK_MSG(stop_num(&r, "cpu_user_ms") + stop_num(&r, "cpu_sys_ms") >= 900, "cpu %g + %g ms",
		  stop_num(&r, "cpu_user_ms"), stop_num(&r, "cpu_sys_ms"));
	CHECK(stop_num(&r, "max_rss_kb") > 0);
	{
		const cJSON *d = hostile_event(&r, "sandbox_stop", 0);

		CHECK(strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(d, "ended")), "by itself") == 0);
		CHECK(cJSON_GetStringValue(cJSON_GetObjectItem(d, "limit")) &&
		      strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(d, "limit")), "cpu_s") == 0);
	}
	hostile_free(&r);
}

TEST(a_gigabyte_of_stderr_is_capped)
{
	struct sbx_policy pol = { .stderr_max = 4096 };
	struct hostile_run r;
	struct rusage ru;

	run_with(&pol, (const char *[]){ "stderr", "1024", NULL }, 60000, &r);
	CHECK_MSG(strcmp(r.out, "stderr: wrote 1024 MiB\n") == 0, "said '%s'", r.out);
	CHECK(strlen(r.err) == 4096);
	CHECK(stop_num(&r, "stderr_bytes") == 1024.0 * 1024 * 1024);
	CHECK(stop_num(&r, "stderr_dropped") == 1024.0 * 1024 * 1024 - 4096);
	/* Nothing of it was kept on the host's side. */
	CHECK(getrusage(RUSAGE_SELF, &ru) == 0);
	CHECK_MSG(ru.ru_maxrss < 200 * 1024, "host peak RSS %ld KiB", ru.ru_maxrss);
	hostile_free(&r);
}

TEST(the_host_pid_is_not_visible)
{
	char pid[16];

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	expect((const char *[]){ "kill", pid, NULL }, "kill: errno=ESRCH\n");
}

/* Processes running the hostile binary (a copy of it in the sandbox: known by its name), seen from the host. */
static int hostile_processes(void)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d))) {
		char path[300], comm[64] = "";
		FILE *f;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", e->d_name);
		if ((f = fopen(path, "r"))) {
			n += fgets(comm, sizeof(comm), f) && strcmp(comm, "hostile\n") == 0;
			fclose(f);
		}
	}
	if (d)
		closedir(d);
	return n;
}

TEST(stopping_kills_every_process_of_the_sandbox)
{
	struct sbx_policy pol = { .nproc = 8 };
	struct hostile_run r;

	/* The fork bomb and its children wait to be killed: sbx_stop must take them all. */
	run_with(&pol, (const char *[]){ "forkbomb", "stay", NULL }, 3000, &r);
	CHECK_STR_CONTAINS(r.out, "forkbomb: fork failed after");
	CHECK(!r.ended);
	CHECK(strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(hostile_event(&r, "sandbox_stop", 0), "ended")),
		     "killed by the host") == 0);
	for (int i = 0; i < 100 && hostile_processes(); i++)
		usleep(20000);
	CHECK_MSG(hostile_processes() == 0, "%d hostile processes left", hostile_processes());
	hostile_free(&r);
}

TEST(a_sandbox_can_be_made_here)
{
	bl_err err = { 0 };
	int rc = sbx_probe(&err);

	CHECK_MSG(rc == 0, "%s", err.msg);
}

TEST(without_bwrap_nothing_runs_and_the_error_says_why)
{
	char marker[PATH_MAX], *path = strdup(getenv("PATH") ? getenv("PATH") : "");
	const char *argv[] = { getenv("BRUSHLOOP_HOSTILE"), "marker", marker, NULL };
	struct sbx_policy pol = { .argv = argv };
	struct sbx_proc p;
	bl_err err = { 0 };

	snprintf(marker, sizeof(marker), "%s/planner-ran", test_tmpdir());
	setenv("PATH", "/nonexistent", 1);
	CHECK(sbx_probe(&err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "bwrap not found on PATH");
	CHECK_STR_CONTAINS(err.msg, "never run unsandboxed");
	CHECK(sbx_start(&pol, &p, &err) == BL_EINVAL);
	CHECK_STR_CONTAINS(err.msg, "bubblewrap");
	CHECK(p.impl == NULL && p.fd < 0);
	CHECK(sbx_stop(&p, NULL, NULL) == 0);
	setenv("PATH", path, 1);
	free(path);
	CHECK(access(marker, F_OK) != 0);
}

TEST_MAIN(T(capabilities_are_all_dropped), T(socket_inet_is_refused_by_seccomp),
	  T(ptrace_is_refused), T(io_uring_is_refused), T(terminal_injection_is_refused),
	  T(a_new_user_namespace_is_refused), T(etc_shadow_is_not_there),
	  T(the_host_environment_is_not_visible), T(machine_file_approvals_and_home_are_not_visible),
	  T(an_approval_answer_cannot_be_forged), T(writing_outside_tmp_fails),
	  T(in_dir_files_are_there_read_only),
	  T(nothing_beside_the_planners_file_is_there), T(a_planner_in_tmp_sees_nothing_of_tmp),
	  T(a_planner_below_a_private_folder_still_runs), T(a_folder_a_socket_or_a_missing_file_is_refused), T(tmp_over_its_cap_is_enospc), T(each_sandbox_starts_fresh), T(a_fork_bomb_is_contained),
	  T(a_memory_bomb_is_contained), T(a_cpu_spin_is_killed_at_its_limit),
	  T(a_gigabyte_of_stderr_is_capped), T(the_host_pid_is_not_visible),
	  T(stopping_kills_every_process_of_the_sandbox), T(a_sandbox_can_be_made_here),
	  T(without_bwrap_nothing_runs_and_the_error_says_why))

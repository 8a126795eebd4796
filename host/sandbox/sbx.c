/* sbx.c: starting and stopping the planner's sandbox: bwrap's command line, the child's last steps before exec, reaping. */
#include "sandbox/sbx_int.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <grp.h>
#include <linux/close_range.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/strbuf.h"

#define SBX_MAX_ARGS 512
#define SBX_MAX_FILES 64
#define SBX_MAX_IN 64 /* files of in_dir */
#define SBX_MAX_KEEP (SBX_MAX_FILES + SBX_MAX_IN + 8)

/* Everything sbx_start prepares before fork: the child only dups, drops and execs. */
struct sbx_spawn {
	const char *args[SBX_MAX_ARGS];
	int nargs;
	char num[SBX_MAX_KEEP + 8][48]; /* fd numbers and limits as text */
	char in_dest[SBX_MAX_IN][300];  /* /in/NAME */
	int nnum;
	int keep[SBX_MAX_KEEP]; /* fds bwrap reads, passed open across exec */
	int nkeep;
	char bwrap[PATH_MAX];
	int planner_fd, err_fd, exec_fd;
	int drop_uid;
};

double sbx_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int add(struct sbx_spawn *sp, const char *a, bl_err *err)
{
	if (sp->nargs >= SBX_MAX_ARGS - 1)
		return bl_fail(err, BL_EINVAL, "sandbox: too many arguments for bwrap");
	sp->args[sp->nargs++] = a;
	sp->args[sp->nargs] = NULL;
	return 0;
}

/* A number as an argument (kept in sp, so it lives until exec). */
static int add_num(struct sbx_spawn *sp, long long v, bl_err *err)
{
	if (sp->nnum >= (int)(sizeof(sp->num) / sizeof(sp->num[0])))
		return bl_fail(err, BL_EINVAL, "sandbox: too many numeric arguments");
	snprintf(sp->num[sp->nnum], sizeof(sp->num[0]), "%lld", v);
	return add(sp, sp->num[sp->nnum++], err);
}

/* "--opt=soft:hard" for prlimit. */
static int add_limit(struct sbx_spawn *sp, const char *opt, long long soft, long long hard,
		     bl_err *err)
{
	if (sp->nnum >= (int)(sizeof(sp->num) / sizeof(sp->num[0])))
		return bl_fail(err, BL_EINVAL, "sandbox: too many numeric arguments");
	snprintf(sp->num[sp->nnum], sizeof(sp->num[0]), "--%s=%lld:%lld", opt, soft, hard);
	return add(sp, sp->num[sp->nnum++], err);
}

/* An fd bwrap reads: its number as the next argument, and kept open across exec (and closed by close_keep); on failure the caller still owns it. */
static int add_fd(struct sbx_spawn *sp, int fd, bl_err *err)
{
	if (sp->nkeep >= SBX_MAX_KEEP)
		return bl_fail(err, BL_EINVAL, "sandbox: too many descriptors for bwrap");
	BL_TRY(add_num(sp, fd, err));
	sp->keep[sp->nkeep++] = fd;
	return 0;
}

/* bwrap on the host's PATH, as an absolute path: the only program the host runs for the planner. */
static int find_bwrap(char *out, size_t n, bl_err *err)
{
	const char *path = getenv("PATH");
	const char *p = path ? path : "";

	while (*p) {
		const char *e = strchrnul(p, ':');
		int len = (int)(e - p);

		if (len > 0 && snprintf(out, n, "%.*s/bwrap", len, p) < (int)n &&
		    access(out, X_OK) == 0)
			return 0;
		p = *e ? e + 1 : e;
	}
	return bl_fail(err, BL_EINVAL,
		       "sandbox: bwrap not found on PATH (%s): install Debian's bubblewrap "
		       "(scripts/install-deps); the planner is never run unsandboxed",
		       path ? path : "unset");
}

/* A read-only file made of text (a synthetic /etc/passwd), from a memfd bwrap copies. */
static int add_data(struct sbx_spawn *sp, const char *text, const char *dest, bl_err *err)
{
	int fd = memfd_create("brushloop-sbx-data", MFD_CLOEXEC);
	size_t len = strlen(text);

	if (fd < 0)
		return bl_fail(err, BL_EIO, "sandbox: memfd_create: %s", strerror(errno));
	if (write(fd, text, len) != (ssize_t)len || lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return bl_fail(err, BL_EIO, "sandbox: writing %s: %s", dest, strerror(errno));
	}
	int rc = add(sp, "--ro-bind-data", err);
	if (rc == 0)
		rc = add_fd(sp, fd, err);
	if (rc < 0) {
		close(fd); /* not kept: close_keep would not see it */
		return rc;
	}
	return add(sp, dest, err);
}

/* Paths the sandbox makes itself: a file there would hide or replace what the host put. */
static const char *const sbx_own_paths[] = { "/proc", "/dev", "/sys", "/run", "/in", NULL };

int sbx_file_open(const char *path, struct sbx_file *out, bl_err *err)
{
	struct stat st;
	int fd;

	memset(out, 0, sizeof(*out));
	out->fd = -1;
	if (path[0] != '/' || !path[1] || snprintf(out->path, sizeof(out->path), "%s", path) >= (int)sizeof(out->path))
		return bl_fail(err, BL_EINVAL, "sandbox: %s is not an absolute path to a file", path);
	for (int i = 0; sbx_own_paths[i]; i++) {
		size_t n = strlen(sbx_own_paths[i]);

		if (!strncmp(path, sbx_own_paths[i], n) && (path[n] == '/' || !path[n]))
			return bl_fail(err, BL_EINVAL, "sandbox: %s is below %s, which the sandbox makes itself",
				       path, sbx_own_paths[i]);
	}
	/* A socket cannot be opened at all: said as what it is. O_NONBLOCK: a FIFO must not hang the host. */
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return bl_fail(err, BL_EINVAL, "sandbox: %s is not a regular file (a socket, a device or a pipe is "
			       "never given to a planner)", path);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 && errno == EISDIR)
		return bl_fail(err, BL_EINVAL, "sandbox: %s is a folder: a planner's sandbox holds the files it "
			       "names, one by one, never a folder (name each file it reads in planner.files)", path);
	if (fd < 0)
		return bl_fail(err, BL_EINVAL, "sandbox: %s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		int dir = S_ISDIR(st.st_mode);

		close(fd);
		if (dir)
			return bl_fail(err, BL_EINVAL, "sandbox: %s is a folder: a planner's sandbox holds the files "
				       "it names, one by one, never a folder (name each file it reads in planner.files)",
				       path);
		return bl_fail(err, BL_EINVAL, "sandbox: %s is not a regular file (a socket, a device or a pipe is "
			       "never given to a planner)", path);
	}
	if (st.st_size > SBX_FILE_MAX_BYTES) {
		close(fd);
		return bl_fail(err, BL_EINVAL, "sandbox: %s is %lld bytes, more than the %lld a planner's file may "
			       "have (each sandbox holds a copy)", path, (long long)st.st_size, SBX_FILE_MAX_BYTES);
	}
	out->fd = fd;
	out->exec = (st.st_mode & 0111) != 0;
	out->bytes = (long long)st.st_size;
	return 0;
}

void sbx_file_close(struct sbx_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
}

/* The host files, copied from descriptors: bwrap (nobody under a root host) never resolves their folders. */
static int add_files(struct sbx_spawn *sp, const struct sbx_policy *pol, bl_err *err)
{
	if (pol->n_files > SBX_MAX_FILES)
		return bl_fail(err, BL_EINVAL, "sandbox: more than %d files", SBX_MAX_FILES);
	for (int i = 0; i < pol->n_files; i++) {
		const struct sbx_file *f = &pol->files[i];
		int fd, rc;

		/* bwrap reads from the offset the descriptors share: each sandbox starts at the beginning. */
		if (f->fd < 0 || lseek(f->fd, 0, SEEK_SET) != 0 || (fd = fcntl(f->fd, F_DUPFD_CLOEXEC, 3)) < 0)
			return bl_fail(err, BL_EIO, "sandbox: %s: %s", f->path, strerror(errno));
		rc = add(sp, "--perms", err);
		if (rc == 0)
			rc = add(sp, f->exec ? "0555" : "0444", err);
		if (rc == 0)
			rc = add(sp, "--ro-bind-data", err);
		if (rc == 0)
			rc = add_fd(sp, fd, err);
		if (rc < 0) {
			close(fd);
			return rc;
		}
		BL_TRY(add(sp, f->path, err));
	}
	return 0;
}

/*
 * in_dir's regular files, copied to /in by bwrap from descriptors the host
 * opened: a run directory may be 0700 root's, where bwrap running as nobody
 * could not bind it (it resolves a bind's source by its path).
 */
static int add_in(struct sbx_spawn *sp, const char *dir, bl_err *err)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0, rc = 0;

	if (!d)
		return bl_fail(err, BL_EINVAL, "sandbox: in_dir %s: %s", dir, strerror(errno));
	BL_TRY(add(sp, "--dir", err));
	BL_TRY(add(sp, "/in", err));
	while (rc == 0 && (e = readdir(d))) {
		struct stat st;
		int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);

		if (fd < 0)
			continue; /* "." and "..", symlinks: not copied */
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || strlen(e->d_name) > 250) {
			close(fd);
			continue;
		}
		if (n == SBX_MAX_IN) {
			close(fd);
			rc = bl_fail(err, BL_EINVAL, "sandbox: in_dir %s has more than %d files", dir,
				     SBX_MAX_IN);
			break;
		}
		snprintf(sp->in_dest[n], sizeof(sp->in_dest[n]), "/in/%s", e->d_name);
		rc = add(sp, "--ro-bind-data", err);
		if (rc == 0)
			rc = add_fd(sp, fd, err);
		if (rc < 0)
			close(fd);
		else
			rc = add(sp, sp->in_dest[n++], err);
	}
	closedir(d);
	return rc;
}

static void close_keep(struct sbx_spawn *sp)
{
	for (int i = 0; i < sp->nkeep; i++)
		close(sp->keep[i]);
	sp->nkeep = 0;
}

/* The filesystem: /usr read-only, the /lib links, a minimal /etc, /proc, /dev, a capped /tmp; then / and /dev read-only. */
static int add_fs(struct sbx_spawn *sp, const struct sbx_policy *pol, struct sbx_impl *s,
		  bl_err *err)
{
	static const char *const ro_etc[] = { "/etc/ld.so.cache", "/etc/alternatives",
					      "/etc/ssl/certs", "/etc/localtime", NULL };
	static const char *const links[][2] = {
		{ "usr/lib", "/lib" }, { "usr/lib64", "/lib64" }, { "usr/bin", "/bin" },
		{ "usr/sbin", "/sbin" },
	};
	char passwd[128];

	BL_TRY(add(sp, "--ro-bind", err));
	BL_TRY(add(sp, "/usr", err));
	BL_TRY(add(sp, "/usr", err));
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		BL_TRY(add(sp, "--symlink", err));
		BL_TRY(add(sp, links[i][0], err));
		BL_TRY(add(sp, links[i][1], err));
	}
	/* No /etc of the host: no shadow, no resolver, no users but the planner's own. */
	for (int i = 0; ro_etc[i]; i++) {
		BL_TRY(add(sp, "--ro-bind-try", err));
		BL_TRY(add(sp, ro_etc[i], err));
		BL_TRY(add(sp, ro_etc[i], err));
	}
	unsigned uid = sp->drop_uid ? SBX_UID : (unsigned)getuid();
	unsigned gid = sp->drop_uid ? SBX_UID : (unsigned)getgid();
	snprintf(passwd, sizeof(passwd), "planner:x:%u:%u:planner:/tmp:/bin/sh\n", uid, gid);
	BL_TRY(add_data(sp, passwd, "/etc/passwd", err));
	snprintf(passwd, sizeof(passwd), "planner:x:%u:\n", gid);
	BL_TRY(add_data(sp, passwd, "/etc/group", err));

	BL_TRY(add(sp, "--proc", err));
	BL_TRY(add(sp, "/proc", err));
	BL_TRY(add(sp, "--dev", err));
	BL_TRY(add(sp, "/dev", err));
	BL_TRY(add(sp, "--size", err));
	BL_TRY(add_num(sp, (long long)(pol->tmpfs_mb > 0 ? pol->tmpfs_mb : 64) << 20, err));
	BL_TRY(add(sp, "--tmpfs", err));
	BL_TRY(add(sp, "/tmp", err));
	if (pol->in_dir)
		BL_TRY(add_in(sp, pol->in_dir, err));
	BL_TRY(add_files(sp, pol, err));
	if (s->has_egress) {
		BL_TRY(add(sp, "--ro-bind", err));
		BL_TRY(add(sp, s->sock_path, err));
		BL_TRY(add(sp, SBX_EGRESS_PATH, err));
	}
	/* bwrap's root and /dev are tmpfs the planner's uid owns: read-only, /tmp stays the one writable place. */
	BL_TRY(add(sp, "--remount-ro", err));
	BL_TRY(add(sp, "/dev", err));
	BL_TRY(add(sp, "--remount-ro", err));
	BL_TRY(add(sp, "/", err));
	return 0;
}

/* The whole bwrap command line: namespaces, environment, filesystem, seccomp, then prlimit and the planner. */
static int build(struct sbx_spawn *sp, const struct sbx_policy *pol, struct sbx_impl *s,
		 bl_err *err)
{
	/*
	 * --as-pid-1: the planner is the namespace's pid 1, reaped by bwrap's
	 * monitor, so the host's wait4 counts every process of the sandbox (with
	 * bwrap's own init the monitor exits on init's word and reaps nothing).
	 */
	static const char *const ns[] = { "--unshare-user", "--unshare-pid", "--as-pid-1", "--unshare-net",
		"--unshare-ipc", "--unshare-uts", "--unshare-cgroup", "--disable-userns",
		"--die-with-parent", "--new-session", "--clearenv", "--cap-drop", "ALL",
		"--hostname", "planner", "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "HOME", "/tmp",
		"--setenv", "LANG", "C.UTF-8", "--setenv", "TMPDIR", "/tmp", "--chdir", "/tmp", NULL };
	double cpu = pol->cpu_s > 0 ? pol->cpu_s : 60;
	long long cpu_s = cpu < 1 ? 1 : (long long)(cpu + 0.999);
	long long as = (long long)(pol->as_mb > 0 ? pol->as_mb : 2048) << 20;
	int fd;

	BL_TRY(add(sp, sp->bwrap, err));
	for (int i = 0; ns[i]; i++)
		BL_TRY(add(sp, ns[i], err));
	if (s->has_egress) {
		BL_TRY(add(sp, "--setenv", err));
		BL_TRY(add(sp, "BRUSHLOOP_EGRESS", err));
		BL_TRY(add(sp, SBX_EGRESS_PATH, err));
	}
	BL_TRY(add_fs(sp, pol, s, err));
	BL_TRY(sbx_seccomp_fd(&fd, err));
	int rc = add(sp, "--seccomp", err);
	if (rc == 0)
		rc = add_fd(sp, fd, err);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	BL_TRY(add(sp, "--", err));
	/* The limits are set inside the new user namespace: RLIMIT_NPROC then counts the sandbox's
	 * processes, not every process of the host's uid. */
	BL_TRY(add(sp, "/usr/bin/prlimit", err));
	BL_TRY(add_limit(sp, "cpu", cpu_s, cpu_s + 1, err));
	BL_TRY(add_limit(sp, "as", as, as, err));
	BL_TRY(add_limit(sp, "nproc", pol->nproc > 0 ? pol->nproc : 64,
			 pol->nproc > 0 ? pol->nproc : 64, err));
	BL_TRY(add_limit(sp, "nofile", pol->nofile > 0 ? pol->nofile : 64,
			 pol->nofile > 0 ? pol->nofile : 64, err));
	BL_TRY(add_limit(sp, "core", 0, 0, err));
	BL_TRY(add(sp, "--", err));
	for (int i = 0; pol->argv[i]; i++)
		BL_TRY(add(sp, pol->argv[i], err));
	return 0;
}

/* In the child between fork and exec: only async-signal-safe calls. */
static void __attribute__((noreturn)) child(const struct sbx_spawn *sp)
{
	static char *const envp[] = { NULL };
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t none;
	int e;

	/* Nothing of the host's passes but what bwrap is told about. */
	if (close_range(3, ~0u, CLOSE_RANGE_CLOEXEC) < 0)
		goto fail;
	for (int i = 0; i < sp->nkeep; i++)
		if (fcntl(sp->keep[i], F_SETFD, 0) < 0)
			goto fail;
	if (dup2(sp->planner_fd, 0) < 0 || dup2(sp->planner_fd, 1) < 0 || dup2(sp->err_fd, 2) < 0)
		goto fail;
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (sp->drop_uid && (setgroups(0, NULL) < 0 || setresgid(SBX_UID, SBX_UID, SBX_UID) < 0 ||
			     setresuid(SBX_UID, SBX_UID, SBX_UID) < 0))
		goto fail;
	execve(sp->bwrap, (char *const *)sp->args, envp);
fail:
	e = errno;
	if (write(sp->exec_fd, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

static void impl_free(struct sbx_impl *s)
{
	struct sbx_event *e, *next;

	for (e = s->q_head; e; e = next) {
		next = e->next;
		cJSON_Delete(e->data);
		free(e);
	}
	if (s->err_fd >= 0)
		close(s->err_fd);
	if (s->wake[0] >= 0)
		close(s->wake[0]);
	if (s->wake[1] >= 0)
		close(s->wake[1]);
	egress_close_all(s);
	pthread_mutex_destroy(&s->lock);
	free(s->q_times);
	free(s->err_buf);
	free(s);
}

static struct sbx_impl *impl_new(const struct sbx_policy *pol)
{
	struct sbx_impl *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->err_fd = s->wake[0] = s->wake[1] = s->listen_fd = -1;
	for (int i = 0; i < EGRESS_MAX_CONNS; i++)
		s->conns[i].in_fd = s->conns[i].out_fd = -1;
	pthread_mutex_init(&s->lock, NULL);
	s->log = pol->log;
	s->log_ctx = pol->log_ctx;
	s->err_max = pol->stderr_max ? pol->stderr_max : 64 << 10;
	s->err_buf = malloc(s->err_max + 1);
	if (!s->err_buf) {
		impl_free(s);
		return NULL;
	}
	if (pol->egress) {
		s->has_egress = 1;
		s->egress = *pol->egress;
		/* A policy filled by hand with zeros takes the reader's defaults. */
		if (s->egress.max_label_length <= 0)
			s->egress.max_label_length = 40;
		if (s->egress.rate_limit_per_minute <= 0)
			s->egress.rate_limit_per_minute = 30;
		s->q_times = calloc((size_t)s->egress.rate_limit_per_minute, sizeof(double));
		if (!s->q_times) {
			impl_free(s);
			return NULL;
		}
	}
	return s;
}

/* An fd at 3 or above, so the child's dup2 onto 0, 1 and 2 never clobbers one it still needs. */
static int above_stdio(int fd)
{
	int hi;

	if (fd >= 3)
		return fd;
	hi = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	close(fd);
	return hi;
}

/* Forks and execs bwrap; returns when exec happened (or failed, with its errno). */
static int spawn(struct sbx_spawn *sp, struct sbx_impl *s, bl_err *err)
{
	int ex[2], e = 0;
	ssize_t r;
	pid_t pid;

	if (pipe2(ex, O_CLOEXEC) < 0)
		return bl_fail(err, BL_EIO, "sandbox: pipe: %s", strerror(errno));
	sp->exec_fd = ex[1];
	pid = fork();
	if (pid < 0) {
		close(ex[0]);
		close(ex[1]);
		return bl_fail(err, BL_EIO, "sandbox: fork: %s", strerror(errno));
	}
	if (pid == 0)
		child(sp);
	close(ex[1]);
	do
		r = read(ex[0], &e, sizeof(e));
	while (r < 0 && errno == EINTR);
	close(ex[0]);
	s->pid = pid;
	if (r > 0) {
		waitpid(pid, &s->status, 0);
		s->reaped = 1;
		return bl_fail(err, BL_EINVAL, "sandbox: starting %s: %s", sp->bwrap, strerror(e));
	}
	return 0;
}

int sbx_start(const struct sbx_policy *pol, struct sbx_proc *out, bl_err *err)
{
	struct sbx_spawn *sp;
	struct sbx_impl *s;
	int sv[2], ep[2], rc;

	out->pid = -1;
	out->fd = -1;
	out->impl = NULL;
	if (!pol->argv || !pol->argv[0] || !pol->argv[0][0])
		return bl_fail(err, BL_EINVAL, "sandbox: no planner command");
	sp = calloc(1, sizeof(*sp));
	s = impl_new(pol);
	if (!sp || !s) {
		rc = bl_fail(err, BL_ENOMEM, "sandbox: out of memory");
		goto out_mem;
	}
	s->t_start_ms = sbx_now_ms();
	s->cpu_s = pol->cpu_s > 0 ? pol->cpu_s : 60;
	sp->drop_uid = geteuid() == 0;
	rc = find_bwrap(sp->bwrap, sizeof(sp->bwrap), err);
	if (rc < 0)
		goto out_mem;
	if (s->has_egress && (rc = egress_listen(s, sp->drop_uid, err)) < 0)
		goto out_mem;
	rc = build(sp, pol, s, err);
	if (rc < 0)
		goto out_keep;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 || pipe2(ep, O_CLOEXEC) < 0) {
		rc = bl_fail(err, BL_EIO, "sandbox: socketpair/pipe: %s", strerror(errno));
		goto out_keep;
	}
	sv[0] = above_stdio(sv[0]);
	sv[1] = above_stdio(sv[1]);
	ep[0] = above_stdio(ep[0]);
	ep[1] = above_stdio(ep[1]);
	sp->planner_fd = sv[1];
	sp->err_fd = ep[1];
	rc = spawn(sp, s, err);
	close(sv[1]);
	close(ep[1]);
	close_keep(sp);
	s->err_fd = ep[0];
	if (rc < 0) {
		close(sv[0]);
		goto out_mem;
	}
	if (pipe2(s->wake, O_CLOEXEC) < 0 || pthread_create(&s->thread, NULL, sbx_service, s)) {
		/* Without the thread nobody drains stderr or serves the broker: not a sandbox we run. */
		kill(s->pid, SIGKILL);
		waitpid(s->pid, &s->status, 0);
		close(sv[0]);
		rc = bl_fail(err, BL_EIO, "sandbox: starting its service thread failed");
		goto out_mem;
	}
	s->thread_on = 1;
	out->pid = s->pid;
	out->fd = sv[0];
	out->impl = s;
	cJSON *d = cJSON_CreateObject();
	cJSON_AddNumberToObject(d, "pid", s->pid);
	cJSON_AddStringToObject(d, "planner", pol->argv[0]);
	cJSON_AddBoolToObject(d, "egress", s->has_egress);
	cJSON_AddNumberToObject(d, "uid", sp->drop_uid ? SBX_UID : (double)getuid());
	{
		/* What of the host it holds: the files named, copied in (in_dir's are the run's own). */
		cJSON *fl = cJSON_AddArrayToObject(d, "files");

		for (int i = 0; i < pol->n_files; i++)
			cJSON_AddItemToArray(fl, cJSON_CreateString(pol->files[i].path));
	}
	cJSON_AddNumberToObject(d, "start_ms", sbx_now_ms() - s->t_start_ms);
	sbx_queue(s, "sandbox_start", d);
	free(sp);
	sbx_pump(out);
	return 0;
out_keep:
	close_keep(sp);
out_mem:
	if (s)
		impl_free(s);
	free(sp);
	return rc;
}

int sbx_pump(struct sbx_proc *p)
{
	struct sbx_impl *s = p ? p->impl : NULL;
	struct sbx_event *e, *next;
	int n = 0;

	if (!s)
		return 0;
	pthread_mutex_lock(&s->lock);
	e = s->q_head;
	s->q_head = s->q_tail = NULL;
	pthread_mutex_unlock(&s->lock);
	for (; e; e = next, n++) {
		next = e->next;
		if (s->log)
			s->log(s->log_ctx, e->name, e->data);
		else
			cJSON_Delete(e->data);
		free(e);
	}
	return n;
}

size_t sbx_stderr(struct sbx_proc *p, char *buf, size_t n)
{
	struct sbx_impl *s = p ? p->impl : NULL;
	size_t len = 0;

	if (!n)
		return 0;
	if (s) {
		pthread_mutex_lock(&s->lock);
		len = s->err_len < n - 1 ? s->err_len : n - 1;
		memcpy(buf, s->err_buf, len);
		pthread_mutex_unlock(&s->lock);
	}
	buf[len] = '\0';
	return len;
}

/* The kept stderr as a JSON string: bytes that are not printable ASCII become '?', so the journal stays text. */
static cJSON *stderr_json(struct sbx_impl *s)
{
	char *t = malloc(s->err_len + 1);
	cJSON *j;

	if (!t)
		return cJSON_CreateNull();
	for (size_t i = 0; i < s->err_len; i++) {
		unsigned char c = (unsigned char)s->err_buf[i];
		t[i] = (c >= 0x20 && c < 0x7f) || c == '\n' || c == '\t' ? (char)c : '?';
	}
	t[s->err_len] = '\0';
	j = cJSON_CreateString(t);
	free(t);
	return j;
}

/* pid 1 of the sandbox's pid namespace: bwrap's one child, or -1. */
static pid_t sandbox_init(pid_t bwrap)
{
	char path[64], buf[64];
	FILE *f;
	long child = -1;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)bwrap, (int)bwrap);
	if (!(f = fopen(path, "re")))
		return -1;
	if (!fgets(buf, sizeof(buf), f) || sscanf(buf, "%ld", &child) != 1)
		child = -1;
	fclose(f);
	return (pid_t)child;
}

/* Reaps bwrap within ms (-1: waits): 1 reaped, its status and the usage of all it reaped kept. */
static int reap(struct sbx_impl *s, int ms)
{
	double until = sbx_now_ms() + ms;

	while (!s->reaped) {
		pid_t r = wait4(s->pid, &s->status, ms < 0 ? 0 : WNOHANG, &s->ru);

		if (r == s->pid || (r < 0 && errno != EINTR)) {
			s->reaped = 1;
			break;
		}
		if (ms >= 0 && sbx_now_ms() >= until)
			return 0;
		if (ms >= 0)
			usleep(2000);
	}
	return 1;
}

/*
 * The sandbox's end: killed through its pid 1, so that bwrap reaps it and
 * every process below is counted in the usage wait4 gives; bwrap itself only
 * when that does not end it within a second.
 */
static void end_sandbox(struct sbx_impl *s)
{
	pid_t init = sandbox_init(s->pid);

	s->killed = 1;
	if (init > 0 && kill(init, SIGKILL) == 0 && reap(s, 1000))
		return;
	kill(s->pid, SIGKILL);
	reap(s, -1);
}

static double tv_ms(struct timeval tv)
{
	return tv.tv_sec * 1e3 + tv.tv_usec / 1e3;
}

/* What the sandbox's processes used, and how it ended, into sandbox_stop's data. */
static void usage_json(const struct sbx_impl *s, cJSON *d)
{
	double cpu_ms = tv_ms(s->ru.ru_utime) + tv_ms(s->ru.ru_stime);
	int sig = WIFSIGNALED(s->status) ? WTERMSIG(s->status)
		  : WIFEXITED(s->status) && WEXITSTATUS(s->status) > 128 ? WEXITSTATUS(s->status) - 128 : 0;

	cJSON_AddNumberToObject(d, "cpu_user_ms", round(tv_ms(s->ru.ru_utime)));
	cJSON_AddNumberToObject(d, "cpu_sys_ms", round(tv_ms(s->ru.ru_stime)));
	cJSON_AddNumberToObject(d, "max_rss_kb", (double)s->ru.ru_maxrss);
	cJSON_AddNumberToObject(d, "blocks_in", (double)s->ru.ru_inblock);
	cJSON_AddNumberToObject(d, "blocks_out", (double)s->ru.ru_oublock);
	cJSON_AddStringToObject(d, "ended", s->killed ? "killed by the host" : "by itself");
	/* A limit that ended it, as far as the host can tell from outside. */
	if (sig == SIGXCPU || (!s->killed && sig == SIGKILL && cpu_ms >= s->cpu_s * 1e3))
		cJSON_AddStringToObject(d, "limit", "cpu_s");
}

int sbx_stop(struct sbx_proc *p, int *wstatus, bl_err *err)
{
	struct sbx_impl *s = p ? p->impl : NULL;
	char c = 1;

	if (!s) {
		if (p && p->fd >= 0)
			close(p->fd);
		if (p)
			p->fd = -1;
		return 0;
	}
	if (!s->reaped)
		end_sandbox(s);
	if (s->thread_on) {
		if (write(s->wake[1], &c, 1) < 0)
			(void)0; /* the thread also ends at stderr's EOF, which the kill brought */
		pthread_join(s->thread, NULL);
		s->thread_on = 0;
	}
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	egress_close_all(s);
	cJSON *d = cJSON_CreateObject();
	if (WIFEXITED(s->status))
		cJSON_AddNumberToObject(d, "exit", WEXITSTATUS(s->status));
	else
		cJSON_AddNumberToObject(d, "signal", WTERMSIG(s->status));
	cJSON_AddNumberToObject(d, "stderr_bytes", (double)s->err_total);
	cJSON_AddNumberToObject(d, "stderr_dropped", (double)(s->err_total - s->err_len));
	cJSON_AddItemToObject(d, "stderr", stderr_json(s));
	cJSON_AddNumberToObject(d, "wall_ms", sbx_now_ms() - s->t_start_ms);
	usage_json(s, d);
	sbx_queue(s, "sandbox_stop", d);
	sbx_pump(p);
	if (wstatus)
		*wstatus = s->status;
	impl_free(s);
	p->impl = NULL;
	p->pid = -1;
	(void)err;
	return 0;
}

int sbx_wait(struct sbx_proc *p, int timeout_ms, int *wstatus)
{
	struct sbx_impl *s = p ? p->impl : NULL;

	if (!s)
		return -1;
	if (!reap(s, timeout_ms))
		return 0;
	if (wstatus)
		*wstatus = s->status;
	return 1;
}

int sbx_probe(bl_err *err)
{
	static const char *const argv[] = { "true", NULL };
	struct sbx_policy pol = { .argv = argv, .tmpfs_mb = 1, .cpu_s = 5 };
	struct sbx_proc p;
	char tail[512];
	int st = 0, rc;

	rc = sbx_start(&pol, &p, err);
	if (rc < 0)
		return bl_err_prefix(err, "no sandbox can be made here");
	if (sbx_wait(&p, 10000, &st) == 1 && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
		sbx_stop(&p, NULL, NULL);
		return 0;
	}
	sbx_stderr(&p, tail, sizeof(tail));
	sbx_stop(&p, &st, NULL);
	tail[strcspn(tail, "\n")] = '\0';
	return bl_fail(err, BL_EINVAL,
		       "no sandbox can be made here: bwrap failed (%s%s): user namespaces, "
		       "seccomp or mounts are refused on this machine; the planner is never run "
		       "unsandboxed (docs/sandbox.md)",
		       tail[0] ? tail : "no message",
		       WIFEXITED(st) ? "" : ", killed");
}

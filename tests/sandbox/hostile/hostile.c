/* hostile.c: a hostile planner for the sandbox's tests: each case tries one way out and prints what happened on stdout. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * Output is one line per case, "CASE: RESULT", where RESULT is "errno=NAME" for
 * a refused call or what got through; the test compares it with what a sandbox
 * must show.
 */
static const char *ename(int e)
{
	switch (e) {
	case 0: return "0";
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case ESRCH: return "ESRCH";
	case EACCES: return "EACCES";
	case EROFS: return "EROFS";
	case ENOSPC: return "ENOSPC";
	case EAGAIN: return "EAGAIN";
	case ENOMEM: return "ENOMEM";
	case ENOSYS: return "ENOSYS";
	case ECONNREFUSED: return "ECONNREFUSED";
	case ENETUNREACH: return "ENETUNREACH";
	case EAFNOSUPPORT: return "EAFNOSUPPORT";
	case EIO: return "EIO";
	case ENOTTY: return "ENOTTY";
	case EFBIG: return "EFBIG";
	default: return "other";
	}
}

static int say(const char *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int say(const char *c, const char *fmt, ...)
{
	va_list ap;

	printf("%s: ", c);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	return 0;
}

static int inet_connect(const char *c, int type, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((unsigned short)port) };
	int fd = socket(AF_INET, type, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return say(c, "socket errno=%s", ename(errno));
	if (type == SOCK_DGRAM) {
		/* A DNS query for example.org, as a resolver would send it. */
		static const unsigned char q[] = { 0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 7, 'e', 'x', 'a',
			'm', 'p', 'l', 'e', 3, 'o', 'r', 'g', 0, 0, 1, 0, 1 };
		if (sendto(fd, q, sizeof(q), 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			return say(c, "sendto errno=%s", ename(errno));
		return say(c, "sent");
	}
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return say(c, "connect errno=%s", ename(errno));
	return say(c, "connected");
}

/* CONNECT name:port through the broker; prints the status line and, when 200, what the far end answers to "ping". */
static int broker(const char *c, const char *name, const char *port, int quiet)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *path = getenv("BRUSHLOOP_EGRESS");
	char buf[512];
	ssize_t n;
	int fd;

	if (!path)
		return say(c, "no BRUSHLOOP_EGRESS"), 0;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return say(c, "broker errno=%s", ename(errno)), 0;
	n = snprintf(buf, sizeof(buf), "CONNECT %s:%s HTTP/1.1\r\nHost: %s:%s\r\n\r\n", name, port,
		     name, port);
	if (write(fd, buf, (size_t)n) != n)
		return say(c, "write errno=%s", ename(errno)), 0;
	n = read(fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	int ok = strncmp(buf, "HTTP/1.1 200", 12) == 0;
	if (ok && !quiet) {
		char far[128];
		if (write(fd, "ping\n", 5) != 5)
			return say(c, "relay write errno=%s", ename(errno)), 0;
		n = read(fd, far, sizeof(far) - 1);
		far[n > 0 ? n : 0] = '\0';
		far[strcspn(far, "\n")] = '\0';
		say(c, "%s / %s", buf, far);
	} else if (!quiet) {
		say(c, "%s", buf);
	}
	close(fd);
	return ok;
}

static int fill(const char *c, const char *path)
{
	static char block[1 << 16];
	long long total = 0;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	if (fd < 0)
		return say(c, "open errno=%s", ename(errno));
	for (;;) {
		ssize_t w = write(fd, block, sizeof(block));
		if (w < 0)
			return say(c, "after %lld MiB errno=%s", total >> 20, ename(errno));
		total += w;
	}
}

/* Forks until refused; with stay, then waits to be killed with its children. */
static int forkbomb(const char *c, int stay)
{
	int n = 0;

	for (;;) {
		pid_t p = fork();
		if (p < 0) {
			int e = errno;
			say(c, "fork failed after %d errno=%s", n, ename(e));
			while (stay)
				pause();
			return 0;
		}
		if (p == 0) {
			pause();
			_exit(0);
		}
		/* A sandbox without its limit must fail the test, not take the host down with it. */
		if (++n >= 1000)
			return say(c, "forked %d", n);
	}
}

static int membomb(const char *c)
{
	long mb = 0;

	/* At most 1 GiB: a sandbox without its limit fails the test without the host's OOM killer. */
	while (mb < 1024) {
		char *p = malloc(1 << 20);
		if (!p)
			return say(c, "malloc failed after %ld MiB", mb);
		memset(p, 1, 1 << 20);
		mb++;
	}
	return say(c, "allocated %ld MiB", mb);
}

static int tiocsti(const char *c)
{
	char ch = 'x';
	int m = posix_openpt(O_RDWR), s;

	if (m < 0 || grantpt(m) || unlockpt(m))
		return say(c, "ptmx errno=%s", ename(errno));
	/* A session leader without a terminal gets this one as its own, as a shell's would be. */
	setsid();
	s = open(ptsname(m), O_RDWR);
	if (s < 0)
		return say(c, "pts errno=%s", ename(errno));
	if (ioctl(s, TIOCSTI, &ch) < 0)
		return say(c, "errno=%s", ename(errno));
	return say(c, "injected");
}

static int do_ptrace(const char *c)
{
	pid_t p = fork();
	int st;

	if (p == 0) {
		pause();
		_exit(0);
	}
	long r = ptrace(PTRACE_ATTACH, p, 0, 0);
	int e = errno;
	kill(p, SIGKILL);
	waitpid(p, &st, 0);
	return r < 0 ? say(c, "errno=%s", ename(e)) : say(c, "attached");
}

static int abstract(const char *c, const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	size_t len = strlen(name);

	memcpy(sa.sun_path + 1, name, len);
	if (fd < 0)
		return say(c, "socket errno=%s", ename(errno));
	if (connect(fd, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len)) < 0)
		return say(c, "errno=%s", ename(errno));
	return say(c, "connected");
}

/* A connection to a Unix socket by its path (a host listener beside the planner's file). */
static int unix_path(const char *c, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0)
		return say(c, "socket errno=%s", ename(errno));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return say(c, "errno=%s", ename(errno));
	if (write(fd, "planner was here\n", 17) < 0)
		return say(c, "write errno=%s", ename(errno));
	return say(c, "connected");
}

static int readfile(const char *c, const char *path)
{
	char buf[4096];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return say(c, "errno=%s", ename(errno));
	n = read(fd, buf, sizeof(buf));
	return say(c, "read %zd bytes", n);
}

static int caps(const char *c)
{
	char line[256];
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "CapEff:", 7) == 0) {
			line[strcspn(line, "\n")] = '\0';
			return say(c, "%s", line + 8 + strspn(line + 8, "\t "));
		}
	return say(c, "no CapEff");
}

int main(int argc, char **argv)
{
	extern char **environ;
	const char *c = argc > 1 ? argv[1] : "";
	const char *a = argc > 2 ? argv[2] : "", *b = argc > 3 ? argv[3] : "";

	if (!strcmp(c, "tcp"))
		return inet_connect(c, SOCK_STREAM, atoi(a));
	if (!strcmp(c, "dns"))
		return inet_connect(c, SOCK_DGRAM, atoi(a));
	if (!strcmp(c, "socket_inet"))
		return socket(AF_INET, SOCK_STREAM, 0) < 0 ? say(c, "errno=%s", ename(errno)) : say(c, "made");
	if (!strcmp(c, "broker"))
		return broker(c, a, b, 0), 0;
	if (!strcmp(c, "flood")) {
		int ok = 0, n = atoi(argc > 4 ? argv[4] : "1");
		for (int i = 0; i < n; i++)
			ok += broker(c, a, b, 1);
		return say(c, "%d of %d allowed", ok, n);
	}
	if (!strcmp(c, "read"))
		return readfile(c, a);
	if (!strcmp(c, "env")) {
		for (char **e = environ; *e; e++)
			say(c, "%s", *e);
		return say(c, "end");
	}
	if (!strcmp(c, "write")) {
		int fd = open(a, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		return fd < 0 ? say(c, "errno=%s", ename(errno)) : say(c, "written");
	}
	if (!strcmp(c, "fill"))
		return fill(c, a);
	if (!strcmp(c, "forkbomb"))
		return forkbomb(c, !strcmp(a, "stay"));
	if (!strcmp(c, "membomb"))
		return membomb(c);
	if (!strcmp(c, "spin")) {
		say(c, "spinning");
		for (volatile unsigned long i = 0;; i++)
			;
	}
	if (!strcmp(c, "stderr")) {
		static char block[1 << 16];
		long long mb = atoll(a), total = 0;
		memset(block, 'E', sizeof(block));
		while (total < mb << 20) {
			ssize_t w = write(2, block, sizeof(block));
			if (w < 0)
				return say(c, "errno=%s", ename(errno));
			total += w;
		}
		return say(c, "wrote %lld MiB", total >> 20);
	}
	if (!strcmp(c, "kill"))
		return kill((pid_t)atoi(a), 0) < 0 ? say(c, "errno=%s", ename(errno)) : say(c, "signalled");
	if (!strcmp(c, "ptrace"))
		return do_ptrace(c);
	if (!strcmp(c, "io_uring")) {
		char params[120] = { 0 };
		long fd = syscall(SYS_io_uring_setup, 4, params);
		return fd < 0 ? say(c, "errno=%s", ename(errno)) : say(c, "ring made");
	}
	if (!strcmp(c, "abstract"))
		return abstract(c, a);
	if (!strcmp(c, "unix"))
		return unix_path(c, a);
	if (!strcmp(c, "tiocsti"))
		return tiocsti(c);
	if (!strcmp(c, "caps"))
		return caps(c);
	if (!strcmp(c, "netdev")) {
		char line[256];
		FILE *f = fopen("/proc/net/dev", "r");
		int n = 0;
		while (f && fgets(line, sizeof(line), f))
			if (strchr(line, ':') && ++n)
				say(c, "%.*s", (int)strcspn(line + strspn(line, " "), ":"), line + strspn(line, " "));
		return say(c, "%d interfaces", n);
	}
	if (!strcmp(c, "unshare"))
		return unshare(CLONE_NEWUSER) < 0 ? say(c, "errno=%s", ename(errno)) : say(c, "new user namespace");
	if (!strcmp(c, "marker")) {
		/* What an unsandboxed planner would leave behind on the host. */
		FILE *f = fopen(a, "w");
		return f ? (fclose(f), say(c, "written")) : say(c, "errno=%s", ename(errno));
	}
	if (!strcmp(c, "broker_on_cue")) {
		/* One CONNECT each time the host writes a line: the host changes grants in between. */
		char line[64];
		while (fgets(line, sizeof(line), stdin))
			broker(c, a, b, 0);
		return 0;
	}
	if (!strcmp(c, "echo")) {
		char line[4096];
		if (fgets(line, sizeof(line), stdin))
			fputs(line, stdout);
		return 0;
	}
	return say(c, "unknown case"), 2;
}

/* sp_pty_shim.c: LD_PRELOAD shim letting libserialport open a pseudo-terminal in tests: fakes the sysfs lookup and the modem-line ioctls a pty lacks. */
#undef _FILE_OFFSET_BITS
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

/*
 * libserialport finds a port's details under /sys/class/tty/NAME, which a
 * pty (/dev/pts/N) does not have, and reads the modem lines, which a pty
 * refuses with ENOTTY. Only those two things are faked, and only for pts.
 */
#define PTS_SYS "/sys/class/tty/pts/"

int __lxstat(int ver, const char *path, struct stat *st);
int __lxstat(int ver, const char *path, struct stat *st)
{
	static int (*real)(int, const char *, struct stat *);

	if (!strncmp(path, PTS_SYS, sizeof(PTS_SYS) - 1)) {
		memset(st, 0, sizeof(*st));
		st->st_mode = S_IFLNK | 0777;
		return 0;
	}
	if (!real)
		real = (int (*)(int, const char *, struct stat *))dlsym(RTLD_NEXT, "__lxstat");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	return real(ver, path, st);
}

ssize_t readlink(const char *path, char *buf, size_t n)
{
	static ssize_t (*real)(const char *, char *, size_t);

	if (!strncmp(path, PTS_SYS, sizeof(PTS_SYS) - 1)) {
		/* A native (neither USB nor Bluetooth) port. */
		int len = snprintf(buf, n, "../../devices/virtual/tty/pts%s", path + sizeof(PTS_SYS) - 1);

		return len < (int)n ? len : (ssize_t)n;
	}
	if (!real)
		real = (ssize_t (*)(const char *, char *, size_t))dlsym(RTLD_NEXT, "readlink");
	return real(path, buf, n);
}

int ioctl(int fd, unsigned long req, ...)
{
	static int (*real)(int, unsigned long, ...);
	void *arg;
	va_list ap;
	int rc;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (!real)
		real = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
	rc = real(fd, req, arg);
	if (rc < 0 && (errno == ENOTTY || errno == EINVAL) &&
	    (req == TIOCMGET || req == TIOCMSET || req == TIOCMBIS || req == TIOCMBIC)) {
		/* The lines of a cable with nothing on them: DSR and CTS up. */
		if (req == TIOCMGET && arg)
			*(int *)arg = TIOCM_DSR | TIOCM_CTS;
		return 0;
	}
	return rc;
}

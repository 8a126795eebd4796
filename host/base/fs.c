/* fs.c: whole-file reads with a size limit, atomic writes and durable appends. */
#include "base/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

int fs_read_file(const char *path, size_t max_bytes, char **out, size_t *len, bl_err *err)
{
	struct stat st;
	char *buf = NULL;
	size_t cap, used = 0;
	int fd, rc;

	*out = NULL;
	if (len)
		*len = 0;
	/* O_NONBLOCK: opening a FIFO with no writer would wait forever before the check below. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return bl_fail(err, BL_EINVAL, "%s: cannot open: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0) {
		rc = bl_fail(err, BL_EIO, "%s: cannot stat: %s", path, strerror(errno));
		goto out_close;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = bl_fail(err, BL_EINVAL, "%s: is a directory", path);
		goto out_close;
	}
	/* A FIFO, a device or a socket is no file of ours: it may never end, or never start. */
	if (!S_ISREG(st.st_mode)) {
		rc = bl_fail(err, BL_EINVAL, "%s: is not a regular file (%s)", path,
			     S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISCHR(st.st_mode) ? "a character device" :
			     S_ISBLK(st.st_mode) ? "a block device" : S_ISSOCK(st.st_mode) ? "a socket" :
			     "not a plain file");
		goto out_close;
	}
	if (S_ISREG(st.st_mode) && (unsigned long long)st.st_size > max_bytes) {
		rc = bl_fail(err, BL_EINVAL, "%s: file is %lld bytes, more than the limit of %zu",
			     path, (long long)st.st_size, max_bytes);
		goto out_close;
	}
	/* One allocation; a file that grows while it is read grows it up to the limit. */
	cap = (size_t)st.st_size + 1;
	buf = malloc(cap);
	if (!buf) {
		rc = bl_fail(err, BL_ENOMEM, "%s: out of memory", path);
		goto out_close;
	}
	for (;;) {
		ssize_t n;

		if (used + 1 >= cap) {
			char *nb;

			if (cap > max_bytes) {
				rc = bl_fail(err, BL_EINVAL, "%s: more than the limit of %zu bytes",
					     path, max_bytes);
				goto out_free;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				rc = bl_fail(err, BL_ENOMEM, "%s: out of memory", path);
				goto out_free;
			}
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + used, cap - 1 - used);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = bl_fail(err, BL_EIO, "%s: read failed: %s", path, strerror(errno));
			goto out_free;
		}
		if (n == 0)
			break;
		used += (size_t)n;
		if (used > max_bytes) {
			rc = bl_fail(err, BL_EINVAL, "%s: more than the limit of %zu bytes", path,
				     max_bytes);
			goto out_free;
		}
	}
	buf[used] = '\0';
	close(fd);
	*out = buf;
	if (len)
		*len = used;
	return 0;

out_free:
	free(buf);
out_close:
	close(fd);
	return rc;
}

int fs_write_code(int errnum)
{
	switch (errnum) {
	case ENOSPC:
	case EDQUOT:
	case EFBIG:
	case EROFS:
	case EIO:
		return BL_ESTORAGE;
	default:
		return BL_EIO;
	}
}

static int fsync_parent(const char *path, bl_err *err)
{
	char tmp[PATH_MAX];
	int fd;

	if (strlen(path) >= sizeof(tmp))
		return bl_fail(err, BL_EINVAL, "%s: path too long", path);
	strcpy(tmp, path);
	fd = open(dirname(tmp), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return bl_fail(err, BL_EIO, "%s: cannot open its directory: %s", path,
			       strerror(errno));
	if (fsync(fd) < 0 && errno != EINVAL) {
		close(fd);
		return bl_fail(err, BL_EIO, "%s: fsync of directory failed: %s", path,
			       strerror(errno));
	}
	close(fd);
	return 0;
}

int fs_write_fd(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A temp file renamed over path; durable: fsync'd, and its directory after the rename. */
static int write_renamed(const char *path, const void *data, size_t len, int durable, bl_err *err)
{
	char tmp[PATH_MAX];
	int fd, rc;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof(tmp))
		return bl_fail(err, BL_EINVAL, "%s: path too long", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return bl_fail(err, fs_write_code(errno), "%s: cannot create: %s", tmp, strerror(errno));
	if (fs_write_fd(fd, data, len) < 0 || (durable && fsync(fd) < 0)) {
		rc = bl_fail(err, BL_ESTORAGE, "%s: write failed: %s", tmp, strerror(errno));
		goto out_unlink;
	}
	if (close(fd) < 0) {
		fd = -1;
		rc = bl_fail(err, BL_ESTORAGE, "%s: close failed: %s", tmp, strerror(errno));
		goto out_unlink;
	}
	fd = -1;
	if (rename(tmp, path) < 0) {
		rc = bl_fail(err, fs_write_code(errno), "%s: rename failed: %s", path, strerror(errno));
		goto out_unlink;
	}
	return durable ? fsync_parent(path, err) : 0;

out_unlink:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return rc;
}

int fs_write_atomic(const char *path, const void *data, size_t len, bl_err *err)
{
	return write_renamed(path, data, len, 1, err);
}

int fs_write_replace(const char *path, const void *data, size_t len, bl_err *err)
{
	return write_renamed(path, data, len, 0, err);
}

int fs_append_line(const char *path, const char *line, bl_err *err)
{
	size_t n = strlen(line);
	int fd, rc = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return bl_fail(err, fs_write_code(errno), "%s: cannot open for append: %s", path,
			       strerror(errno));
	/* One write of line and newline together, so a crash tears at most the last line. */
	{
		char *buf = malloc(n + 1);

		if (!buf) {
			close(fd);
			return bl_fail(err, BL_ENOMEM, "%s: out of memory", path);
		}
		memcpy(buf, line, n);
		buf[n] = '\n';
		if (fs_write_fd(fd, buf, n + 1) < 0 || fdatasync(fd) < 0)
			rc = bl_fail(err, BL_ESTORAGE, "%s: append failed: %s", path, strerror(errno));
		free(buf);
	}
	if (close(fd) < 0 && rc == 0)
		rc = bl_fail(err, BL_ESTORAGE, "%s: close failed: %s", path, strerror(errno));
	return rc;
}

int fs_mkdirs(const char *path, bl_err *err)
{
	char tmp[PATH_MAX];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(tmp))
		return bl_fail(err, BL_EINVAL, "bad directory path '%s'", path);
	memcpy(tmp, path, n + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
			return bl_fail(err, BL_EIO, "%s: cannot create directory: %s", tmp,
				       strerror(errno));
		*p = '/';
	}
	if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
		return bl_fail(err, BL_EIO, "%s: cannot create directory: %s", tmp, strerror(errno));
	return 0;
}

int fs_touch(const char *path, bl_err *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	if (fd < 0)
		return bl_fail(err, fs_write_code(errno), "%s: cannot touch: %s", path, strerror(errno));
	if (futimens(fd, NULL) < 0) {
		close(fd);
		return bl_fail(err, BL_EIO, "%s: cannot set time: %s", path, strerror(errno));
	}
	close(fd);
	return 0;
}

int fs_join(char *out, size_t n, const char *dir, const char *name, bl_err *err)
{
	int w = snprintf(out, n, "%s/%s", dir, name);

	if (w < 0 || (size_t)w >= n)
		return bl_fail(err, BL_EINVAL, "path too long: %s/%s", dir, name);
	return 0;
}

/*
 * The pid a lock file names: the holder locks, then replaces the file with
 * its pid, so a file still empty, or still naming a holder gone before it
 * (a run that died), is read again for up to 200 ms (0 when it names no
 * living process by then).
 */
static long lock_holder(const char *path)
{
	for (int tries = 0; tries < 40; tries++) {
		char buf[32];
		int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		ssize_t n = fd >= 0 ? pread(fd, buf, sizeof(buf) - 1, 0) : -1;
		long pid = 0;

		if (fd >= 0)
			close(fd);
		if (n > 0 && buf[n - 1] == '\n') {
			buf[n] = '\0';
			pid = strtol(buf, NULL, 10);
		}
		if (pid > 0 && pid <= INT_MAX && (kill((pid_t)pid, 0) == 0 || errno == EPERM))
			return pid;
		usleep(5000);
	}
	return 0;
}

int fs_lock_owner(const char *dir, const char *name, int *fd, bl_err *err)
{
	char path[PATH_MAX], pid[32];
	int len, rc, d;

	*fd = -1;
	if ((rc = fs_join(path, sizeof(path), dir, name, err)))
		return rc;
	/*
	 * The lock is on the directory itself, held through a descriptor of it:
	 * deleting or replacing the file that names the holder unseats nobody.
	 */
	d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d < 0)
		return bl_fail(err, errno == ENOENT || errno == ENOTDIR ? BL_EINVAL : BL_EIO,
			       "%s: cannot open the directory to own it: %s", dir, strerror(errno));
	while (flock(d, LOCK_EX | LOCK_NB) < 0) {
		long holder;

		if (errno == EINTR)
			continue;
		rc = errno;
		close(d);
		if (rc != EWOULDBLOCK)
			return bl_fail(err, BL_EIO, "%s: cannot lock: %s", dir, strerror(rc));
		holder = lock_holder(path);
		if (holder > 0)
			return bl_fail(err, BL_EINVAL, "%s is in use by process %ld (it holds the "
				       "directory's lock; %s names it): one process drives a run "
				       "directory at a time", dir, holder, name);
		return bl_fail(err, BL_EINVAL, "%s is in use by another process (it holds the "
			       "directory's lock): one process drives a run directory at a time", dir);
	}
	/* For a person and for the refusal above: who holds it. */
	len = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if ((rc = fs_write_replace(path, pid, (size_t)len, err))) {
		close(d);
		return rc;
	}
	*fd = d;
	return 0;
}

int fs_lock_held(const char *dir, int fd, bl_err *err)
{
	struct stat now, held;

	if (fstat(fd, &held) < 0 || stat(dir, &now) < 0 || now.st_dev != held.st_dev ||
	    now.st_ino != held.st_ino)
		return bl_fail(err, BL_ESAFETY, "%s is no longer the directory this process owns (it "
			       "was moved, removed or replaced): nothing more is written or moved",
			       dir);
	return 0;
}

int fs_copy_atomic(const char *src, const char *dst, size_t max_bytes, bl_err *err)
{
	char *buf;
	size_t len;
	int rc = fs_read_file(src, max_bytes, &buf, &len, err);

	if (rc)
		return rc;
	rc = fs_write_atomic(dst, buf, len, err);
	free(buf);
	return rc;
}

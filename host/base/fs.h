/* fs.h: whole-file reads with a size limit, atomic writes and durable appends. */
#ifndef BL_BASE_FS_H
#define BL_BASE_FS_H

#include <stddef.h>

#include "base/err.h"

/*
 * Reads a whole regular file into a NUL-terminated buffer (freed by the
 * caller). Refuses files larger than max_bytes before reading them, and
 * anything but a regular file (a FIFO, /dev/zero, a socket) without waiting
 * on it, so an endless or silent source can neither exhaust memory nor hang.
 */
int fs_read_file(const char *path, size_t max_bytes, char **out, size_t *len, bl_err *err);

/*
 * The code for a failed write, creation or rename with errno errnum:
 * BL_ESTORAGE when the storage itself refuses (disk full, quota, file too
 * large for RLIMIT_FSIZE, read-only, a device error), else BL_EIO. The
 * writers here return BL_ESTORAGE for every failed write of data: nothing
 * but the storage makes a write of bytes already in memory fail.
 */
int fs_write_code(int errnum);

/*
 * Writes a file atomically: temp file in the same directory, fsync, rename,
 * fsync of the directory. After a crash the file holds either the old or the
 * new contents, never a mix.
 */
int fs_write_atomic(const char *path, const void *data, size_t len, bl_err *err);
/* src's bytes (at most max_bytes) written to dst as fs_write_atomic does. */
int fs_copy_atomic(const char *src, const char *dst, size_t max_bytes, bl_err *err);

/*
 * The same without the fsyncs: a reader sees the old file or the new one,
 * never a mix, but a power loss may leave either, or an empty file. For files
 * made again from others whenever they are missing (the report's pictures):
 * on a busy disk each fsync can take a second.
 */
int fs_write_replace(const char *path, const void *data, size_t len, bl_err *err);

/* Writes all of data to fd, through short writes and EINTR: 0, or -1 with errno set. */
int fs_write_fd(int fd, const void *data, size_t len);

/* Appends one line (a '\n' is added) and fsyncs, so a journal event survives power loss. */
int fs_append_line(const char *path, const char *line, bl_err *err);

/* Creates a directory and its parents (mode 0755); an existing directory is fine. */
int fs_mkdirs(const char *path, bl_err *err);

/* Sets a file's modification time to now, creating it if needed (a heartbeat). */
int fs_touch(const char *path, bl_err *err);

/*
 * Makes this process the one owner of directory dir: an exclusive flock on
 * the directory itself, through *fd (a descriptor of it), held while *fd
 * stays open (a process's life: the kernel releases it on any death, kill
 * -9 included). dir/name is written with the holder's pid, for people and
 * for the refusal: deleting or replacing it unseats nobody. A second owner
 * is refused (BL_EINVAL) naming the holder's pid; readers that only look
 * need no lock.
 */
int fs_lock_owner(const char *dir, const char *name, int *fd, bl_err *err);

/* Whether dir is still the directory fd (from fs_lock_owner) holds: 0, or BL_ESAFETY when it was moved or replaced. */
int fs_lock_held(const char *dir, int fd, bl_err *err);

/* Joins dir and name into out (size n); fails if it does not fit. */
int fs_join(char *out, size_t n, const char *dir, const char *name, bl_err *err);

#endif

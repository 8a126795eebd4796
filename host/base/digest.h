/* digest.h: SHA-256 of bytes and files, as hex, through libcrypto: what an approval approves, what a run started with. */
#ifndef BL_BASE_DIGEST_H
#define BL_BASE_DIGEST_H

#include <stddef.h>

#include "base/err.h"

#define BL_DIGEST_HEX 65 /* 64 hex digits and a NUL */

/* SHA-256 of n bytes as 64 lowercase hex digits. Returns 0, or BL_ENOMEM. */
int bl_digest_hex(const void *data, size_t n, char out[BL_DIGEST_HEX], bl_err *err);

/* SHA-256 of a whole regular file (at most max_bytes); an error names the file. */
int bl_digest_file(const char *path, size_t max_bytes, char out[BL_DIGEST_HEX], bl_err *err);

#endif

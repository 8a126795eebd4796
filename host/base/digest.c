/* digest.c: SHA-256 through libcrypto's EVP interface, printed as hex. */
#include <stdio.h>
#include <stdlib.h>

#include <openssl/evp.h>

#include "base/digest.h"
#include "base/fs.h"

int bl_digest_hex(const void *data, size_t n, char out[BL_DIGEST_HEX], bl_err *err)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int len = 0;

	if (!EVP_Digest(data, n, md, &len, EVP_sha256(), NULL) || len != 32)
		return bl_fail(err, BL_ENOMEM, "SHA-256 failed (out of memory)");
	/* By table: the journal hashes every line it writes and reads. */
	for (unsigned int i = 0; i < len; i++) {
		out[2 * i] = "0123456789abcdef"[md[i] >> 4];
		out[2 * i + 1] = "0123456789abcdef"[md[i] & 15];
	}
	out[2 * len] = '\0';
	return 0;
}

int bl_digest_file(const char *path, size_t max_bytes, char out[BL_DIGEST_HEX], bl_err *err)
{
	char *buf;
	size_t len;
	int rc = fs_read_file(path, max_bytes, &buf, &len, err);

	if (rc)
		return rc;
	rc = bl_digest_hex(buf, len, out, err);
	free(buf);
	return rc;
}

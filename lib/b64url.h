/*
 * Base64url without padding (RFC 4648 section 5), the encoding of JWT parts
 * and of purchase URL signatures. Decoding is strict: no padding, no
 * whitespace, no characters outside the URL-safe alphabet, no stray bits.
 */
#ifndef FS_B64URL_H
#define FS_B64URL_H

#include <stddef.h>

enum fs_b64url_status {
	FS_B64URL_OK = 0,
	FS_B64URL_TOO_BIG,	/* the output buffer cannot hold the result */
	FS_B64URL_MALFORMED,	/* not canonical unpadded base64url */
	FS_B64URL__MAX
};

/* Characters that n bytes encode to, without the terminating NUL. */
#define FS_B64URL_ENCODED_LEN(n) (((n) / 3) * 4 + ((n) % 3 * 4 + 2) / 3)

const char *fs_b64url_strerror(enum fs_b64url_status);

/*
 * Encodes binlen bytes into out (outmax bytes, NUL included) and stores the
 * length without the NUL in *outlen when outlen is not NULL.
 */
enum fs_b64url_status fs_b64url_encode(char *out, size_t outmax,
    const void *bin, size_t binlen, size_t *outlen);

/*
 * Decodes exactly inlen characters of in (no NUL needed) into out, at most
 * outmax bytes, and stores the decoded length in *outlen.
 */
enum fs_b64url_status fs_b64url_decode(void *out, size_t outmax,
    const char *in, size_t inlen, size_t *outlen)
    __attribute__((warn_unused_result));

#endif

#include "config.h"

#include <stdint.h>

#include <sodium.h>

#include "b64url.h"

static const char *const b64url_errors[FS_B64URL__MAX] = {
	[FS_B64URL_OK] = "ok",
	[FS_B64URL_TOO_BIG] = "output buffer too small",
	[FS_B64URL_MALFORMED] = "malformed base64url",
};

const char *
fs_b64url_strerror(enum fs_b64url_status st)
{
	if ((unsigned)st >= FS_B64URL__MAX)
		return "unknown base64url status";
	return b64url_errors[st];
}

enum fs_b64url_status
fs_b64url_encode(char *out, size_t outmax, const void *bin, size_t binlen,
    size_t *outlen)
{
	size_t need;

	/* libsodium aborts on a short buffer, so check first. */
	if (binlen / 3 > (SIZE_MAX - 4) / 4)
		return FS_B64URL_TOO_BIG;
	need = FS_B64URL_ENCODED_LEN(binlen);
	if (outmax < need + 1)
		return FS_B64URL_TOO_BIG;
	sodium_bin2base64(out, outmax, bin, binlen,
	    sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	if (outlen != NULL)
		*outlen = need;
	return FS_B64URL_OK;
}

/* Whether c is in the URL-safe alphabet. */
static int
b64url_char_ok(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '_';
}

enum fs_b64url_status
fs_b64url_decode(void *out, size_t outmax, const char *in, size_t inlen,
    size_t *outlen)
{
	size_t need, binlen, i;

	*outlen = 0;
	/* One character left over carries only 6 bits: never a whole byte. */
	if (inlen % 4 == 1)
		return FS_B64URL_MALFORMED;
	need = inlen / 4 * 3 + (inlen % 4 == 0 ? 0 : inlen % 4 - 1);
	if (need > outmax)
		return FS_B64URL_TOO_BIG;
	/*
	 * libsodium 1.0.18 decodes every byte from 0x80 up as '_' (found by
	 * tests/fuzz/fuzz_b64url), which would give one token or signature
	 * many spellings: the alphabet is checked here.
	 */
	for (i = 0; i < inlen; i++)
		if (!b64url_char_ok((unsigned char)in[i]))
			return FS_B64URL_MALFORMED;
	/*
	 * Without an ignore set and with b64_end NULL, libsodium refuses '='
	 * and whitespace, and non-zero trailing bits.
	 */
	if (sodium_base642bin(out, outmax, in, inlen, NULL, &binlen, NULL,
	    sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0)
		return FS_B64URL_MALFORMED;
	*outlen = binlen;
	return FS_B64URL_OK;
}

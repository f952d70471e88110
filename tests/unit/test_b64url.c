/* Unit test of lib/b64url: RFC 4648 vectors, strictness, bounds. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "b64url.h"
#include "expect.h"


/* Decodes from an unterminated heap copy, so ASan sees any overread. */
static enum fs_b64url_status
decode(const char *in, size_t inlen, unsigned char *out, size_t outmax,
    size_t *outlen)
{
	char *copy = malloc(inlen > 0 ? inlen : 1);
	enum fs_b64url_status st;

	if (copy == NULL)
		abort();
	memcpy(copy, in, inlen);
	st = fs_b64url_decode(out, outmax, copy, inlen, outlen);
	free(copy);
	return st;
}

static void
check_vector(const char *bin, const char *txt)
{
	char enc[64], what[128];
	unsigned char dec[64];
	size_t len;

	snprintf(what, sizeof(what), "encode \"%s\" -> \"%s\"", bin, txt);
	check(fs_b64url_encode(enc, sizeof(enc), bin, strlen(bin), &len) ==
	    FS_B64URL_OK && len == strlen(txt) && strcmp(enc, txt) == 0 &&
	    FS_B64URL_ENCODED_LEN(strlen(bin)) == len, what);
	snprintf(what, sizeof(what), "decode \"%s\" -> \"%s\"", txt, bin);
	check(decode(txt, strlen(txt), dec, sizeof(dec), &len) ==
	    FS_B64URL_OK && len == strlen(bin) && memcmp(dec, bin, len) == 0,
	    what);
}

static void
check_rejected(const char *txt, size_t len, const char *what)
{
	unsigned char dec[64];
	size_t outlen;

	check(decode(txt, len, dec, sizeof(dec), &outlen) ==
	    FS_B64URL_MALFORMED && outlen == 0, what);
}

int
main(void)
{
	static const unsigned char urlsafe[] = { 0xfb, 0xff };
	unsigned char bin[100], dec[100];
	char enc[200];
	size_t n, len, declen;
	int roundtrip = 1;

	/* RFC 4648 section 10, without the padding. */
	check_vector("", "");
	check_vector("f", "Zg");
	check_vector("fo", "Zm8");
	check_vector("foo", "Zm9v");
	check_vector("foob", "Zm9vYg");
	check_vector("fooba", "Zm9vYmE");
	check_vector("foobar", "Zm9vYmFy");

	check(fs_b64url_encode(enc, sizeof(enc), urlsafe, sizeof(urlsafe),
	    NULL) == FS_B64URL_OK && strcmp(enc, "-_8") == 0,
	    "encode uses - and _ (RFC 4648 section 5)");

	for (n = 0; n < sizeof(bin); n++) {
		for (size_t i = 0; i < n; i++)
			bin[i] = (unsigned char)(i * 37 + n);
		if (fs_b64url_encode(enc, sizeof(enc), bin, n, &len) !=
		    FS_B64URL_OK || len != FS_B64URL_ENCODED_LEN(n) ||
		    decode(enc, len, dec, n, &declen) != FS_B64URL_OK ||
		    declen != n || memcmp(bin, dec, n) != 0)
			roundtrip = 0;
	}
	check(roundtrip, "round trip of 0 to 99 bytes into exact buffers");

	check_rejected("Zg==", 4, "decode refuses padding");
	check_rejected("Zm8=", 4, "decode refuses a single pad");
	check_rejected("Zm 9v", 5, "decode refuses a space");
	check_rejected("Zm9v\n", 5, "decode refuses a newline");
	check_rejected("Zm+v", 4, "decode refuses + (standard alphabet)");
	check_rejected("Zm/v", 4, "decode refuses / (standard alphabet)");
	check_rejected("Zm\0v", 4, "decode refuses an embedded NUL");
	check_rejected("Zm9vY", 5, "decode refuses a length of 4n+1");
	check_rejected("Zh", 2, "decode refuses non-zero trailing bits");
	check_rejected("Zm9\xc3\xa9", 5, "decode refuses non-ASCII");
	/* libsodium 1.0.18 alone reads every byte from 0x80 up as '_'. */
	check_rejected("Zm9\xff", 4, "decode refuses a byte from 0x80 up");
	check_rejected("\xd3" "A", 2, "decode refuses a first byte from 0x80 up");

	check(decode("Zm9v", 4, dec, 2, &len) == FS_B64URL_TOO_BIG,
	    "decode into a short buffer is TOO_BIG");
	check(decode("Zm9v", 4, dec, 3, &len) == FS_B64URL_OK && len == 3,
	    "decode into an exact buffer");
	check(fs_b64url_encode(enc, 4, "foo", 3, NULL) == FS_B64URL_TOO_BIG,
	    "encode without room for the NUL is TOO_BIG");
	check(fs_b64url_encode(enc, 5, "foo", 3, NULL) == FS_B64URL_OK,
	    "encode into an exact buffer");

	check(strcmp(fs_b64url_strerror(FS_B64URL_TOO_BIG),
	    "output buffer too small") == 0 &&
	    fs_b64url_strerror(FS_B64URL__MAX) != NULL,
	    "strerror names every status");
	return failures == 0 ? 0 : 1;
}

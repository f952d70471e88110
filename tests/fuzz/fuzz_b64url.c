/*
 * libFuzzer harness of lib/b64url. The first byte caps the output buffer
 * (its value; 255: no cap), the rest is decoded into a buffer of exactly
 * that size and, as bytes, encoded into one of exactly the size needed.
 * Decoding is strict, so whatever decodes must encode back to the same
 * text; whatever is encoded must decode back to the same bytes.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "b64url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* malloc that never returns NULL, nor for 0 bytes. */
static void *
xmalloc(size_t n)
{
	void *p = malloc(n > 0 ? n : 1);

	if (p == NULL)
		abort();
	return p;
}

/* Decodes text into a buffer of exactly outmax bytes; checks the answer. */
static void
decode(const char *text, size_t len, size_t outmax)
{
	/* The decoded length follows from the length of the text alone. */
	size_t need = len / 4 * 3 + (len % 4 == 0 ? 0 : len % 4 - 1);
	unsigned char *bin = xmalloc(outmax);
	char *back;
	size_t n = 1, backlen;

	switch (fs_b64url_decode(bin, outmax, text, len, &n)) {
	case FS_B64URL_OK:
		if (len % 4 == 1 || n != need || n > outmax)
			abort();
		back = xmalloc(FS_B64URL_ENCODED_LEN(n) + 1);
		if (fs_b64url_encode(back, FS_B64URL_ENCODED_LEN(n) + 1, bin, n, &backlen) !=
		    FS_B64URL_OK || backlen != len || memcmp(back, text, len) != 0)
			abort();
		free(back);
		break;
	case FS_B64URL_TOO_BIG:
		if (n != 0 || len % 4 == 1 || need <= outmax)
			abort();
		break;
	case FS_B64URL_MALFORMED:
		if (n != 0)
			abort();
		break;
	default:
		abort();
	}
	free(bin);
}

/* Encodes bytes into a buffer of exactly the size needed, and back. */
static void
encode(const uint8_t *bin, size_t len)
{
	size_t max = FS_B64URL_ENCODED_LEN(len) + 1, n = 0, m = 0;
	char *text = xmalloc(max);
	unsigned char *back = xmalloc(len);

	/* One byte short must be refused, not overrun. */
	if (fs_b64url_encode(text, max - 1, bin, len, &n) != FS_B64URL_TOO_BIG)
		abort();
	if (fs_b64url_encode(text, max, bin, len, &n) != FS_B64URL_OK || n != max - 1 ||
	    text[n] != '\0' || strlen(text) != n)
		abort();
	if (fs_b64url_decode(back, len, text, n, &m) != FS_B64URL_OK || m != len ||
	    memcmp(back, bin, len) != 0)
		abort();
	free(back);
	free(text);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t cap;

	if (size == 0)
		return 0;
	cap = data[0] == 255 ? SIZE_MAX : data[0];
	data++;
	size--;
	decode((const char *)data, size, cap < size ? cap : size);
	encode(data, size);
	return 0;
}

/*
 * libFuzzer harness of lib/provider's webhook side: the input is a
 * Provider-Signature header, a newline, and a body. The header is checked
 * against the body with a fixed secret at a fixed time (any verdict, no
 * crash); the body is parsed as an event, and an event that parses must
 * write back and parse again to the same event. The body signed at the
 * fixed time must verify, and with one bit of the body flipped must not.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "provider.h"

#define FUZZ_NOW 1700000000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char secret[] = "whsec_fuzz_0123456789abcdef";

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char header[FS_PROVIDER_SIG_MAX + 2], sig[FS_PROVIDER_SIG_MAX], doc[FS_PROVIDER_EVENT_MAX + 512];
	struct fs_provider_event ev, again;
	const uint8_t *nl = memchr(data, '\n', size);
	const char *body;
	char why[128];
	size_t hlen, blen;
	char *copy;
	int n;

	if (nl == NULL)
		return 0;
	hlen = (size_t)(nl - data);
	if (hlen > FS_PROVIDER_SIG_MAX + 1)
		hlen = FS_PROVIDER_SIG_MAX + 1;
	memcpy(header, data, hlen);
	header[hlen] = '\0';
	body = (const char *)nl + 1;
	blen = size - (size_t)(nl - data) - 1;
	(void)fs_provider_verify(secret, strlen(secret), header, body, blen, FUZZ_NOW);

	if (fs_provider_parse_event(body, blen, &ev, why, sizeof(why)) == 0) {
		n = fs_provider_event_json(&ev, doc, sizeof(doc));
		if (n < 0 || fs_provider_parse_event(doc, (size_t)n, &again, why, sizeof(why)) != 0 ||
		    memcmp(&ev, &again, sizeof(ev)) != 0)
			abort();
	}
	if (fs_provider_sign(secret, strlen(secret), FUZZ_NOW, body, blen, sig, sizeof(sig)) < 0 ||
	    fs_provider_verify(secret, strlen(secret), sig, body, blen, FUZZ_NOW) != FS_PROVIDER_SIG_OK)
		abort();
	if (blen > 0 && (copy = malloc(blen)) != NULL) {
		memcpy(copy, body, blen);
		copy[0] ^= 1;
		if (fs_provider_verify(secret, strlen(secret), sig, copy, blen, FUZZ_NOW) != FS_PROVIDER_SIG_BAD)
			abort();
		free(copy);
	}
	return 0;
}

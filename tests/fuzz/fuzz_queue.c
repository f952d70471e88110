/*
 * libFuzzer harness of lib/queue's parsers of untrusted input, with a fixed
 * queue.key, for sale 7 at a fixed time. The first byte picks what the rest
 * is (its value modulo 4, so that seeds can start with a digit):
 *   0: a pass (the Flashsale-Pass header); one that checks must be the
 *      very bytes minted again from what the check read (one spelling);
 *   1: a ticket (the pass request's body), the same;
 *   2: a proof of work: a subject, a NUL, a nonce; the difficulty from the
 *      subject's length; a pass at some difficulty passes at every lower;
 *   3: a sale file's "queue" member; settings read must write back as
 *      canonical JSON that reads back to the same settings.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "jsonread.h"
#include "queue.h"

#define FUZZ_SALE	7
#define FUZZ_NOW	1700000000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static fs_queue_keys *keys;

/* A pass (pass != 0) or ticket that checks must be minted again byte for byte. */
static void
token(const char *tok, size_t len, int pass)
{
	char sub[FS_QUEUE_TOKEN_MAX], again[FS_QUEUE_TOKEN_MAX];
	int64_t exp = 0;
	enum fs_queue_status st;

	st = pass ? fs_queue_pass_check(keys, tok, len, FUZZ_SALE, FUZZ_NOW, sub, sizeof(sub), &exp) :
		    fs_queue_ticket_check(keys, tok, len, FUZZ_SALE, sub, sizeof(sub));
	if (fs_queue_strerror(st) == NULL)
		abort();
	if (st != FS_QUEUE_OK)
		return;
	if ((pass ? fs_queue_pass_mint(keys, FUZZ_SALE, sub, exp, again, sizeof(again)) :
		    fs_queue_ticket_mint(keys, FUZZ_SALE, sub, again, sizeof(again))) != 0 ||
	    strlen(again) != len || memcmp(again, tok, len) != 0)
		abort();
}

/* "sub\0nonce": checked at a difficulty; a solution also solves every easier one. */
static void
proof(const char *p, size_t len)
{
	char sub[80];
	const char *nul = memchr(p, '\0', len);
	unsigned bits;

	if (nul == NULL || (size_t)(nul - p) >= sizeof(sub))
		return;
	memcpy(sub, p, (size_t)(nul - p) + 1);
	bits = (unsigned)(nul - p) % (FS_QUEUE_POW_BITS_MAX + 2);
	if (fs_queue_pow_check(FUZZ_SALE, sub, nul + 1, len - (size_t)(nul - p) - 1, bits) ==
		FS_QUEUE_OK &&
	    bits > 0 &&
	    fs_queue_pow_check(FUZZ_SALE, sub, nul + 1, len - (size_t)(nul - p) - 1, bits - 1) !=
		FS_QUEUE_OK)
		abort();
}

/* Settings that read must write back canonically and read back the same. */
static void
settings(const char *p, size_t len)
{
	struct fs_queue_settings s, back;
	char err[256], json[FS_QUEUE_SETTINGS_JSON_MAX];
	json_object *o = fs_jsonread_object(p, len, 4, err, sizeof(err)), *o2;
	int n;

	if (o == NULL)
		return;
	if (fs_queue_settings_parse(o, &s, err, sizeof(err)) == 0) {
		if ((n = fs_queue_settings_json(&s, json, sizeof(json))) <= 0 ||
		    (o2 = fs_jsonread_object(json, (size_t)n, 4, err, sizeof(err))) == NULL)
			abort();
		if (fs_queue_settings_parse(o2, &back, err, sizeof(err)) != 0 ||
		    memcmp(&s, &back, sizeof(s)) != 0)
			abort();
		json_object_put(o2);
	}
	json_object_put(o);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char raw[FS_QUEUE_KEYBYTES];
	const char *rest = (const char *)data + 1;

	if (keys == NULL) {
		for (size_t i = 0; i < sizeof(raw); i++)
			raw[i] = (unsigned char)(0x40 + i);
		if ((keys = fs_queue_keys_new()) == NULL)
			abort();
		fs_queue_keys_set(keys, raw);
	}
	if (size == 0)
		return 0;
	switch (data[0] % 4) {
	case 0:
	case 1:
		token(rest, size - 1, data[0] % 4 == 0);
		break;
	case 2:
		proof(rest, size - 1);
		break;
	default:
		settings(rest, size - 1);
		break;
	}
	return 0;
}

/*
 * libFuzzer harness of lib/urlsig: fs_urlsig_check with a fixed key, at a
 * fixed time. The first byte picks what the rest is (its value modulo 2,
 * so that seeds can start with a digit):
 *   0: a purchase query string, checked for item 42 (the item of the
 *      seeds; a signature made for another item cannot match);
 *   1: item, sale, start, end and now, 8 bytes each (little-endian): the
 *      harness signs the window (for a waiting room when the first byte's
 *      second bit is set) and checks that fs_urlsig_check gives the answer
 *      the window calls for, the sale and the flag that were signed, and
 *      that the URL with the flag taken away or added is refused.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "urlsig.h"

#define FUZZ_NOW	1700000000
#define FUZZ_ITEM	42

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static fs_urlsig_key *key;

static uint64_t
le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* The query with its waiting room flag taken away (queue) or added. */
static void
toggle_queue(const char *query, int queue, char *out, size_t outmax)
{
	const char *sig = strstr(query, "&sig=");
	int head;

	if (sig == NULL)
		abort();
	head = (int)(sig - query);
	if (queue)
		snprintf(out, outmax, "%.*s%s", head - 4, query, sig); /* without "&q=1" */
	else
		snprintf(out, outmax, "%.*s&q=1%s", head, query, sig);
}

/* Signs a window and checks it back at some time; aborts on a wrong answer. */
static void
round_trip(const uint8_t *p, int queue)
{
	char query[FS_URLSIG_SIGNED_MAX], other[2 * FS_URLSIG_SIGNED_MAX];
	uint64_t item = le64(p), sale = le64(p + 8), got = 0;
	time_t start = (time_t)le64(p + 16), end = (time_t)le64(p + 24);
	time_t now = (time_t)le64(p + 32);
	enum fs_urlsig_status want, st;
	time_t t = now < 0 ? 0 : now;	/* as fs_urlsig_check reads a clock before 1970 */
	int q = -1;

	if (fs_urlsig_sign(key, item, sale, start, end, queue, query, sizeof(query)) != 0) {
		/* Only an empty or negative window may be refused. */
		if (start >= 0 && end > start)
			abort();
		return;
	}
	if (start < 0 || end <= start)
		abort();
	if (t >= end)
		want = FS_URLSIG_EXPIRED;
	else
		want = t < start ? FS_URLSIG_NOT_STARTED : FS_URLSIG_OK;
	st = fs_urlsig_check(key, item, query, strlen(query), now, &got, NULL, &q);
	if (st != want || (st == FS_URLSIG_OK && (got != sale || q != queue)))
		abort();
	/* The same URL names no other item, and its flag cannot be changed. */
	if (fs_urlsig_check(key, item + 1, query, strlen(query), now, &got, NULL, &q) !=
	    FS_URLSIG_BAD_SIGNATURE)
		abort();
	toggle_queue(query, queue, other, sizeof(other));
	if (fs_urlsig_check(key, item, other, strlen(other), now, &got, NULL, &q) !=
	    FS_URLSIG_BAD_SIGNATURE)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char raw[FS_URLSIG_KEYBYTES];
	uint64_t sale = 0;
	enum fs_urlsig_status st;
	int queue;

	if (key == NULL) {
		for (size_t i = 0; i < sizeof(raw); i++)
			raw[i] = (unsigned char)(0x80 + i);
		if ((key = fs_urlsig_key_new()) == NULL)
			abort();
		fs_urlsig_key_set(key, raw);
	}
	if (size == 0)
		return 0;
	if (data[0] % 2 == 1) {
		if (size >= 1 + 5 * 8)
			round_trip(data + 1, (data[0] >> 1) & 1);
		return 0;
	}
	st = fs_urlsig_check(key, FUZZ_ITEM, (const char *)data + 1, size - 1, FUZZ_NOW, &sale, NULL,
	    &queue);
	if (fs_urlsig_strerror(st) == NULL)
		abort();
	return 0;
}

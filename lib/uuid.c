#include "config.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "uuid.h"

/*
 * The last (millisecond << 12 | counter) handed out, RFC 9562 section 6.2
 * method 1. When the counter runs over, the carry moves the timestamp one
 * millisecond ahead, which the RFC allows; when the clock steps back, ids
 * keep counting from the last one.
 */
static _Atomic uint64_t uuid_last;

static const char uuid_hex[] = "0123456789abcdef";

/* Whether a dash, not a hex digit, belongs at position i of the string. */
static int
uuid_dash_at(size_t i)
{
	return i == 8 || i == 13 || i == 18 || i == 23;
}

int
fs_uuid_v7(char out[FS_UUID_STRLEN + 1])
{
	unsigned char b[FS_UUID_BYTES], rnd[10];
	uint64_t ms, last, next, ts;
	unsigned counter;
	struct timespec now;
	size_t i, j;

	if (sodium_init() < 0 ||
	    clock_gettime(CLOCK_REALTIME, &now) == -1 || now.tv_sec < 0)
		return -1;
	ms = (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
	randombytes_buf(rnd, sizeof(rnd));

	/*
	 * A new millisecond starts the counter at a random value below 2048,
	 * which leaves at least 2048 ids before the carry.
	 */
	last = atomic_load(&uuid_last);
	do {
		if (ms > last >> 12)
			next = ms << 12 | (((unsigned)rnd[0] << 8 | rnd[1]) & 0x7ff);
		else
			next = last + 1;
	} while (!atomic_compare_exchange_weak(&uuid_last, &last, next));

	ts = next >> 12;
	counter = next & 0xfff;
	for (i = 0; i < 6; i++)
		b[i] = (unsigned char)(ts >> (40 - 8 * i));
	b[6] = (unsigned char)(0x70 | (counter >> 8));	/* version 7 */
	b[7] = (unsigned char)counter;
	b[8] = (unsigned char)(0x80 | (rnd[2] & 0x3f));	/* variant 10 */
	for (i = 9; i < FS_UUID_BYTES; i++)
		b[i] = rnd[i - 6];

	for (i = 0, j = 0; i < FS_UUID_STRLEN; i++) {
		if (uuid_dash_at(i)) {
			out[i] = '-';
			continue;
		}
		out[i] = uuid_hex[j % 2 == 0 ? b[j / 2] >> 4 : b[j / 2] & 0xf];
		j++;
	}
	out[FS_UUID_STRLEN] = '\0';
	return 0;
}

int
fs_uuid_parse(const char *s, size_t len, unsigned char *out)
{
	unsigned char b[FS_UUID_BYTES];
	size_t i, j;
	int v;

	if (s == NULL || len != FS_UUID_STRLEN)
		return -1;
	for (i = 0, j = 0; i < FS_UUID_STRLEN; i++) {
		if (uuid_dash_at(i)) {
			if (s[i] != '-')
				return -1;
			continue;
		}
		if (s[i] >= '0' && s[i] <= '9')
			v = s[i] - '0';
		else if (s[i] >= 'a' && s[i] <= 'f')
			v = s[i] - 'a' + 10;
		else
			return -1;
		if (j % 2 == 0)
			b[j / 2] = (unsigned char)(v << 4);
		else
			b[j / 2] |= (unsigned char)v;
		j++;
	}
	if (out != NULL)
		memcpy(out, b, sizeof(b));
	return 0;
}

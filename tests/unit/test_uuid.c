/* Unit test of lib/uuid: UUIDv7 layout, uniqueness, order, parsing. */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "uuid.h"
#include "expect.h"

#define COUNT 100000


static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Parses from an unterminated heap copy, so ASan sees any overread. */
static int
parse(const char *s, size_t len, unsigned char *out)
{
	char *copy = malloc(len > 0 ? len : 1);
	int rc;

	if (copy == NULL)
		abort();
	memcpy(copy, s, len);
	rc = fs_uuid_parse(copy, len, out);
	free(copy);
	return rc;
}

static int
accepted(const char *s)
{
	return parse(s, strlen(s), NULL) == 0;
}

/* The timestamp of a canonical id. */
static uint64_t
id_ms(const char *id)
{
	unsigned char bin[FS_UUID_BYTES];
	uint64_t ms = 0;

	if (parse(id, FS_UUID_STRLEN, bin) == -1)
		return 0;
	for (int i = 0; i < 6; i++)
		ms = ms << 8 | bin[i];
	return ms;
}

static int
cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

int
main(void)
{
	static char ids[COUNT][FS_UUID_STRLEN + 1], sorted[COUNT][FS_UUID_STRLEN + 1];
	static const unsigned char example_bin[FS_UUID_BYTES] = {
		0xf8, 0x1d, 0x4f, 0xae, 0x7d, 0xec, 0x11, 0xd0,
		0xa7, 0x65, 0x00, 0xa0, 0xc9, 0x1e, 0x6b, 0xf6,
	};
	unsigned char bin[FS_UUID_BYTES];
	uint64_t before, after;
	int layout = 1, ordered = 1, unique = 1, gen = 1;
	size_t i;

	before = now_ms();
	for (i = 0; i < COUNT; i++)
		if (fs_uuid_v7(ids[i]) != 0)
			gen = 0;
	after = now_ms();
	check(gen, "fs_uuid_v7 succeeds 100000 times");

	for (i = 0; i < COUNT; i++) {
		const char *id = ids[i];

		if (strlen(id) != FS_UUID_STRLEN || parse(id, FS_UUID_STRLEN, bin) ||
		    (bin[6] >> 4) != 7 || (bin[8] >> 6) != 2 || id[14] != '7' ||
		    strchr("89ab", id[19]) == NULL)
			layout = 0;
		if (i > 0 && strcmp(ids[i - 1], id) >= 0)
			ordered = 0;
	}
	check(layout, "every id is canonical, version 7, variant 10");
	check(ordered, "ids made one after another sort in that order");

	memcpy(sorted, ids, sizeof(ids));
	qsort(sorted, COUNT, sizeof(sorted[0]), cmp);
	for (i = 1; i < COUNT; i++)
		if (strcmp(sorted[i - 1], sorted[i]) == 0)
			unique = 0;
	check(unique, "100000 ids are distinct");

	/*
	 * The counter carries into the time after 2048 ids in one ms at
	 * worst, so 100000 ids run at most 49 ms ahead, never behind.
	 */
	check(id_ms(ids[0]) >= before && id_ms(ids[COUNT - 1]) <= after + 49,
	    "the first 48 bits are the Unix time in ms");

	check(parse("f81d4fae-7dec-11d0-a765-00a0c91e6bf6", 36, bin) == 0 &&
	    memcmp(bin, example_bin, sizeof(bin)) == 0,
	    "parse decodes the RFC 9562 example (version 1)");
	check(accepted("00000000-0000-0000-0000-000000000000"),
	    "parse accepts the nil UUID");
	check(accepted("ffffffff-ffff-ffff-ffff-ffffffffffff"),
	    "parse accepts the max UUID");
	check(accepted("017f22e2-79b0-7cc3-98c4-dc0c0c07398f"),
	    "parse accepts the RFC 9562 UUIDv7 example");
	check(!accepted("017F22E2-79B0-7CC3-98C4-DC0C0C07398F"),
	    "parse refuses uppercase");
	check(!accepted("017f22e279b07cc398c4dc0c0c07398f"),
	    "parse refuses the form without dashes");
	check(!accepted("017f22e2-79b07-cc3-98c4-dc0c0c07398f"),
	    "parse refuses a misplaced dash");
	check(!accepted("017f22e2-79b0-7cc3-98c4-dc0c0c07398"),
	    "parse refuses 35 characters");
	check(!accepted("017f22e2-79b0-7cc3-98c4-dc0c0c07398f0"),
	    "parse refuses 37 characters");
	check(!accepted("017f22e2-79b0-7cc3-98c4-dc0c0c07398g"),
	    "parse refuses a non-hex digit");
	check(!accepted("{17f22e2-79b0-7cc3-98c4-dc0c0c07398}"),
	    "parse refuses braces");
	check(!accepted("017f22e2-79b0-7cc3-98c4-dc0c0c07398\n"),
	    "parse refuses a trailing newline");
	check(!accepted("017f22e2-79b0-7cc3-98c4+dc0c0c07398f"),
	    "parse refuses another separator");
	check(!accepted(""), "parse refuses the empty string");
	check(parse("017f22e2-79b0-7cc3-98c4-dc0c0c07398f", 35, NULL) == -1,
	    "parse reads only len bytes");
	check(fs_uuid_parse(NULL, 36, NULL) == -1, "parse refuses NULL");
	return failures == 0 ? 0 : 1;
}

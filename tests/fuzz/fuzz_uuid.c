/*
 * libFuzzer harness of lib/uuid: fs_uuid_parse on any bytes. What it
 * accepts must be the canonical spelling of the 16 bytes it stores, so that
 * one order id has one spelling in Redis, Kafka and PostgreSQL.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "uuid.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char b[FS_UUID_BYTES];
	char text[FS_UUID_STRLEN];
	size_t i, j;
	int ok;

	ok = fs_uuid_parse((const char *)data, size, b) == 0;
	if (ok != (fs_uuid_parse((const char *)data, size, NULL) == 0))
		abort();
	if (!ok)
		return 0;
	for (i = 0, j = 0; i < FS_UUID_STRLEN; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			text[i] = '-';
			continue;
		}
		text[i] = hex[j % 2 == 0 ? b[j / 2] >> 4 : b[j / 2] & 0xf];
		j++;
	}
	if (size != FS_UUID_STRLEN || memcmp(text, data, size) != 0)
		abort();
	return 0;
}

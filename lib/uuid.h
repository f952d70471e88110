/*
 * UUIDv7 (RFC 9562): order ids. The 48-bit Unix millisecond time comes
 * first, so ids sort by creation time; a 12-bit counter keeps ids made in
 * the same millisecond by one process in order; the rest is random.
 */
#ifndef FS_UUID_H
#define FS_UUID_H

#include <stddef.h>

#define FS_UUID_BYTES	16
#define FS_UUID_STRLEN	36	/* 8-4-4-4-12 hex digits, without the NUL */

/*
 * Writes a new UUIDv7 as 36 lowercase characters and a NUL into out.
 * Returns 0, or -1 when libsodium or the clock fails. Thread-safe.
 */
int fs_uuid_v7(char out[FS_UUID_STRLEN + 1]) __attribute__((warn_unused_result));

/*
 * Checks that the len bytes at s (no NUL needed) are a UUID of any version
 * in canonical form: 36 characters, lowercase hex, dashes at 8, 13, 18 and
 * 23. Uppercase is refused so that one id has one spelling in Redis, Kafka
 * and PostgreSQL. Stores the 16 bytes in out when out is not NULL.
 * Returns 0 or -1.
 */
int fs_uuid_parse(const char *s, size_t len, unsigned char *out)
    __attribute__((warn_unused_result));

#endif

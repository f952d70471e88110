/*
 * The project's one JSON reader, over json-c: one whole object of bounded
 * depth, members of the expected type within bounds, strings compared
 * exactly. Untrusted input from the network (tokens, JWK Sets) is read
 * with fs_jsonread_object_strict.
 */
#ifndef FS_JSONREAD_H
#define FS_JSONREAD_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

/*
 * The len bytes at text as one JSON object nested at most depth deep, with
 * nothing after it; the caller frees it with json_object_put. NULL with
 * the reason written into err otherwise.
 */
json_object *fs_jsonread_object(const char *text, size_t len, int depth, char *err,
    size_t errlen);
/*
 * The same, strictly as RFC 8259 says: json-c's strict mode (no single
 * quotes, comments or bare words), UTF-8 checked, no NUL byte, only white
 * space after the object.
 */
json_object *fs_jsonread_object_strict(const char *text, size_t len, int depth, char *err,
    size_t errlen);
/* An integer member within [min, max]; 0 or -1. */
int fs_jsonread_int(json_object *, const char *name, int64_t min, int64_t max, int64_t *out);
/* A string member of 1 to max bytes, or NULL. */
const char *fs_jsonread_string(json_object *, const char *name, size_t max);
/* Whether v (NULL: no) is a string equal to s, byte for byte (an embedded NUL differs). */
int fs_jsonread_is(json_object *v, const char *s);
/* Whether member name is a string equal to s, byte for byte (an embedded NUL differs). */
int fs_jsonread_string_is(json_object *, const char *name, const char *s);

#endif

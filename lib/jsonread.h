/*
 * JSON input read strictly with json-c: one whole object of bounded depth,
 * members of the expected type within bounds.
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
/* An integer member within [min, max]; 0 or -1. */
int fs_jsonread_int(json_object *, const char *name, int64_t min, int64_t max, int64_t *out);
/* A string member of 1 to max bytes, or NULL. */
const char *fs_jsonread_string(json_object *, const char *name, size_t max);
/* Whether member name is a string equal to s, byte for byte (an embedded NUL differs). */
int fs_jsonread_string_is(json_object *, const char *name, const char *s);

#endif

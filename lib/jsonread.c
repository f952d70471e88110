#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "jsonread.h"

/*
 * The one reader behind fs_jsonread_object and _strict: len bytes as one
 * object of at most depth levels; strict, as RFC 8259 (json-c's strict
 * mode, UTF-8 checked, no NUL byte) with only white space after it.
 */
static json_object *
jsonread(const char *text, size_t len, int depth, int strict, char *err, size_t errlen)
{
	json_tokener *tok = NULL;
	json_object *doc = NULL;
	const char *why = NULL;
	size_t end;

	if (len > INT_MAX) {
		why = "too big";
		goto fail;
	}
	/* json-c stops at a NUL; strict JSON has no place for one outside a string escape. */
	if (strict && memchr(text, '\0', len) != NULL) {
		why = "a NUL byte";
		goto fail;
	}
	if ((tok = json_tokener_new_ex(depth)) == NULL) {
		why = "out of memory";
		goto fail;
	}
	if (strict)
		json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_ALLOW_TRAILING_CHARS |
		    JSON_TOKENER_VALIDATE_UTF8);
	doc = json_tokener_parse_ex(tok, text, (int)len);
	end = json_tokener_get_parse_end(tok);
	while (strict && end < len && strchr(" \t\r\n", text[end]) != NULL)
		end++;
	if (doc == NULL || json_tokener_get_error(tok) != json_tokener_success)
		why = doc == NULL && json_tokener_get_error(tok) == json_tokener_success ?
		    "not JSON" : json_tokener_error_desc(json_tokener_get_error(tok));
	else if (end != len)
		why = "trailing characters";
	else if (!json_object_is_type(doc, json_type_object))
		why = "not a JSON object";
fail:
	if (tok != NULL)
		json_tokener_free(tok);
	if (why != NULL) {
		snprintf(err, errlen, "%s", why);
		json_object_put(doc);
		return NULL;
	}
	return doc;
}

json_object *
fs_jsonread_object(const char *text, size_t len, int depth, char *err, size_t errlen)
{
	return jsonread(text, len, depth, 0, err, errlen);
}

json_object *
fs_jsonread_object_strict(const char *text, size_t len, int depth, char *err, size_t errlen)
{
	return jsonread(text, len, depth, 1, err, errlen);
}

int
fs_jsonread_int(json_object *o, const char *name, int64_t min, int64_t max, int64_t *out)
{
	json_object *v;
	int64_t n;

	if (!json_object_object_get_ex(o, name, &v) || !json_object_is_type(v, json_type_int))
		return -1;
	errno = 0;
	n = json_object_get_int64(v);
	if (errno != 0 || n < min || n > max)
		return -1;
	*out = n;
	return 0;
}

const char *
fs_jsonread_string(json_object *o, const char *name, size_t max)
{
	json_object *v;
	const char *s;

	if (!json_object_object_get_ex(o, name, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	s = json_object_get_string(v);
	return (*s != '\0' && strlen(s) <= max) ? s : NULL;
}

int
fs_jsonread_is(json_object *v, const char *s)
{
	size_t len = strlen(s);

	return json_object_is_type(v, json_type_string) &&
	    (size_t)json_object_get_string_len(v) == len &&
	    memcmp(json_object_get_string(v), s, len) == 0;
}

int
fs_jsonread_string_is(json_object *o, const char *name, const char *s)
{
	json_object *v;

	return json_object_object_get_ex(o, name, &v) && fs_jsonread_is(v, s);
}

#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "jsonread.h"

json_object *
fs_jsonread_object(const char *text, size_t len, int depth, char *err, size_t errlen)
{
	json_tokener *tok = NULL;
	json_object *doc = NULL;
	const char *why = NULL;

	if (len > INT_MAX) {
		why = "too big";
		goto fail;
	}
	if ((tok = json_tokener_new_ex(depth)) == NULL) {
		why = "out of memory";
		goto fail;
	}
	doc = json_tokener_parse_ex(tok, text, (int)len);
	if (json_tokener_get_error(tok) != json_tokener_success)
		why = json_tokener_error_desc(json_tokener_get_error(tok));
	else if (json_tokener_get_parse_end(tok) != len)
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
fs_jsonread_string_is(json_object *o, const char *name, const char *s)
{
	json_object *v;
	size_t len = strlen(s);

	return json_object_object_get_ex(o, name, &v) && json_object_is_type(v, json_type_string) &&
	    (size_t)json_object_get_string_len(v) == len &&
	    memcmp(json_object_get_string(v), s, len) == 0;
}

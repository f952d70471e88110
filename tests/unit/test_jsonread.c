/* Unit test of lib/jsonread: whole objects, bounded members. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "jsonread.h"
#include "expect.h"

/* True when text is refused as an object. */
static int
refused(const char *text, int depth)
{
	char why[64] = "";
	json_object *o = fs_jsonread_object(text, strlen(text), depth, why, sizeof(why));

	json_object_put(o);
	return o == NULL && why[0] != '\0';
}

int
main(void)
{
	static const char nul[] = "{\"s\":\"abc\\u0000x\"}";
	static const char doc[] = "{\"n\":7,\"big\":9223372036854775807,\"s\":\"abc\",\"e\":\"\",\"f\":1.5}";
	char why[64] = "";
	json_object *o = fs_jsonread_object(doc, strlen(doc), 4, why, sizeof(why));
	int64_t v = 0;

	check(o != NULL && why[0] == '\0', "an object is read whole");
	check(refused("{\"a\":1} x", 4), "trailing characters are refused");
	check(refused("[1]", 4) && refused("null", 4) && refused("7", 4), "only an object will do");
	check(refused("{\"a\":", 4), "a cut document is refused");
	check(refused("{\"a\":{\"b\":{\"c\":1}}}", 2), "too deep is refused");
	check(!refused("{\"a\":1}  ", 4), "trailing white space is fine");
	check(fs_jsonread_int(o, "n", 1, 10, &v) == 0 && v == 7, "an integer within bounds");
	check(fs_jsonread_int(o, "n", 8, 10, &v) == -1, "an integer below min is refused");
	check(fs_jsonread_int(o, "n", 1, 6, &v) == -1, "an integer above max is refused");
	check(fs_jsonread_int(o, "big", 0, INT64_MAX, &v) == 0 && v == INT64_MAX, "up to INT64_MAX");
	check(fs_jsonread_int(o, "f", 0, 10, &v) == -1 && fs_jsonread_int(o, "s", 0, 10, &v) == -1,
	    "a float or a string is not an integer");
	check(fs_jsonread_int(o, "missing", 0, 10, &v) == -1, "a missing integer is refused");
	check(fs_jsonread_string(o, "s", 3) != NULL && strcmp(fs_jsonread_string(o, "s", 3), "abc") == 0,
	    "a string within bounds");
	check(fs_jsonread_string(o, "s", 2) == NULL, "a string too long is refused");
	check(fs_jsonread_string(o, "e", 10) == NULL, "an empty string is refused");
	check(fs_jsonread_string(o, "n", 10) == NULL, "a number is not a string");
	check(fs_jsonread_string_is(o, "s", "abc") && !fs_jsonread_string_is(o, "s", "ab") &&
	    !fs_jsonread_string_is(o, "s", "abcd") && !fs_jsonread_string_is(o, "n", "7") &&
	    !fs_jsonread_string_is(o, "missing", "abc"), "a string member equal to a text, exactly");
	json_object_put(o);
	o = fs_jsonread_object(nul, strlen(nul), 4, why, sizeof(why));
	check(o != NULL && !fs_jsonread_string_is(o, "s", "abc"),
	    "a string with an embedded NUL is not the text before it");
	json_object_put(o);
	return failures == 0 ? 0 : 1;
}

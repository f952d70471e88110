/* Unit test of lib/http: status and error tables, error bodies. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "http.h"
#include "expect.h"

int
main(void)
{
	char body[512], tiny[16];
	json_object *o, *v;
	int n;

	check(fs_http_status_code(FS_HTTP_ACCEPTED) == 202, "202 Accepted");
	check(fs_http_status_code(FS_HTTP_TOO_EARLY) == 425, "425 Too Early");
	check(fs_http_error_status(FS_ERR_SOLD_OUT) == FS_HTTP_GONE, "SOLD_OUT travels as 410");
	check(fs_http_error_status(FS_ERR_TRY_AGAIN) == FS_HTTP_SERVICE_UNAVAILABLE,
	    "TRY_AGAIN travels as 503");
	for (int e = 0; e < FS_ERR__MAX; e++) {
		n = fs_http_error_body((enum fs_http_error)e, NULL, body, sizeof(body));
		o = n > 0 ? json_tokener_parse(body) : NULL;
		check(o != NULL && json_object_object_get_ex(o, "error", &v) &&
			strcmp(json_object_get_string(v), fs_http_error_code((enum fs_http_error)e)) == 0 &&
			json_object_object_get_ex(o, "message", NULL),
		    "every error body is JSON with error and message");
		json_object_put(o);
	}
	for (int s = 0; s < FS_HTTP__MAX; s++)
		check(fs_http_status_code((enum fs_http_status)s) >= 200 &&
			fs_http_status_text((enum fs_http_status)s) != NULL,
		    "every status has a code and a text");
	n = fs_http_error_body(FS_ERR_ALREADY_PURCHASED, "\"orderId\":\"x\"", body, sizeof(body));
	o = json_tokener_parse(body);
	check(n > 0 && o != NULL && json_object_object_get_ex(o, "orderId", &v) &&
		strcmp(json_object_get_string(v), "x") == 0,
	    "extra members join the body");
	json_object_put(o);
	check(fs_http_error_body(FS_ERR_SOLD_OUT, NULL, tiny, sizeof(tiny)) == -1,
	    "a small buffer is refused, not overrun");
	check(fs_http_error_status((enum fs_http_error)999) == FS_HTTP_INTERNAL_ERROR,
	    "an unknown error is a 500");
	return failures == 0 ? 0 : 1;
}

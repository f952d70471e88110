/*
 * A one-shot HTTP client for the operator's tools (driver): one request,
 * one answer, on a new TCP connection to a numeric IPv4 address, every wait
 * bounded by one deadline and every part of the answer by a size. HTTP/1.0,
 * so the server closes the connection after its answer and never chunks it.
 */
#ifndef FS_HTTPC_H
#define FS_HTTPC_H

#include <stddef.h>

#define FS_HTTPC_URL_MAX	512		/* bytes in a URL */
#define FS_HTTPC_HEAD_MAX	8192		/* bytes in the answer's status line and headers */
#define FS_HTTPC_BODY_MAX	(4 * 1024 * 1024) /* bytes in the answer's body */

struct fs_httpc_answer {
	int status;
	char head[FS_HTTPC_HEAD_MAX + 1];	/* status line and headers, NUL-terminated */
	char *body;				/* NUL-terminated; free with fs_httpc_answer_free */
	size_t len;
};

/*
 * Sends METHOD url ("http://A.B.C.D:PORT/path") without a body and reads the
 * whole answer within timeout_ms. 0 with a filled (the caller frees it), or
 * -1 with err set: a malformed URL, no connection, a timeout, an answer
 * that is not HTTP or larger than the limits.
 */
int fs_httpc_request(const char *method, const char *url, int timeout_ms,
    struct fs_httpc_answer *a, char *err, size_t errlen);
void fs_httpc_answer_free(struct fs_httpc_answer *);
/* The value of header name (case-insensitive) into out; 1 found, 0 not. */
int fs_httpc_header(const struct fs_httpc_answer *, const char *name, char *out, size_t outlen);

#endif

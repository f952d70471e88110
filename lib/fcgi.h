/*
 * FastCGI driver: accepts requests on the socket that spawn-fcgi hands over
 * (fd 0), reads parameters and bounded bodies, writes JSON answers, and
 * stops accepting on SIGTERM/SIGINT so the request in hand can finish.
 */
#ifndef FS_FCGI_H
#define FS_FCGI_H

#include <stddef.h>

#include "http.h"

/* The largest request body any endpoint reads. */
#define FS_FCGI_BODY_MAX 4096

typedef struct fs_fcgi fs_fcgi;

enum fs_fcgi_body { FS_FCGI_BODY_OK, FS_FCGI_BODY_TOO_BIG, FS_FCGI_BODY_ERROR };

/* Sets up libfcgi and the stop signals. Free with fs_fcgi_free. */
fs_fcgi *fs_fcgi_new(void);
void fs_fcgi_free(fs_fcgi *);
/* Waits for the next request; 0 when one arrived, -1 when stopping. */
int fs_fcgi_accept(fs_fcgi *);
/* True once SIGTERM or SIGINT arrived. */
int fs_fcgi_stopping(void);
/* A FastCGI parameter of the current request, or NULL. */
const char *fs_fcgi_param(fs_fcgi *, const char *name);
/* True when the method is the given one ("POST"). */
int fs_fcgi_method_is(fs_fcgi *, const char *method);
/* Reads the whole body (at most FS_FCGI_BODY_MAX bytes) into *body, NUL-terminated. */
enum fs_fcgi_body fs_fcgi_read_body(fs_fcgi *, const char **body, size_t *len);
/*
 * Answers with a JSON body. headers, when not NULL, are extra header lines,
 * each ending in "\r\n".
 */
void fs_fcgi_answer(fs_fcgi *, enum fs_http_status, const char *headers, const char *json, size_t len);
/* Answers {"error":...}; extra as in fs_http_error_body. */
void fs_fcgi_error(fs_fcgi *, enum fs_http_error, const char *extra, const char *headers);
/* Ends the current request (flushes it to the web server). */
void fs_fcgi_finish(fs_fcgi *);

#endif

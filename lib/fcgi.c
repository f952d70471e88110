#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <fcgiapp.h>

#include "fcgi.h"

struct fs_fcgi {
	FCGX_Request req;
	int in_request;
	char body[FS_FCGI_BODY_MAX + 1];
};

static volatile sig_atomic_t fcgi_stop;

/*
 * libfcgi retries an interrupted accept unless told that a shutdown is
 * pending; FCGX_ShutdownPending only sets its flag, so it is safe here.
 */
static void
on_stop(int sig)
{
	(void)sig;
	fcgi_stop = 1;
	FCGX_ShutdownPending();
}

fs_fcgi *
fs_fcgi_new(void)
{
	struct sigaction sa;
	fs_fcgi *f = NULL;

	if (FCGX_Init() != 0)
		goto fail;
	if ((f = calloc(1, sizeof(*f))) == NULL)
		goto fail;
	if (FCGX_InitRequest(&f->req, 0, 0) != 0)
		goto fail;
	/* No SA_RESTART: a stop signal must interrupt the blocking accept. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	return f;
fail:
	free(f);
	return NULL;
}

void
fs_fcgi_free(fs_fcgi *f)
{
	if (f == NULL)
		return;
	if (f->in_request)
		FCGX_Finish_r(&f->req);
	FCGX_Free(&f->req, 1);
	free(f);
}

int
fs_fcgi_stopping(void)
{
	return fcgi_stop != 0;
}

int
fs_fcgi_accept(fs_fcgi *f)
{
	if (f->in_request) {
		FCGX_Finish_r(&f->req);
		f->in_request = 0;
	}
	while (!fcgi_stop) {
		if (FCGX_Accept_r(&f->req) == 0) {
			f->in_request = 1;
			return 0;
		}
		/* An interrupted accept returns -1; loop to re-check the flag. */
	}
	return -1;
}

const char *
fs_fcgi_param(fs_fcgi *f, const char *name)
{
	return FCGX_GetParam(name, f->req.envp);
}

int
fs_fcgi_method_is(fs_fcgi *f, const char *method)
{
	const char *m = FCGX_GetParam("REQUEST_METHOD", f->req.envp);

	return m != NULL && strcmp(m, method) == 0;
}

enum fs_fcgi_body
fs_fcgi_read_body(fs_fcgi *f, const char **body, size_t *len)
{
	const char *cl = FCGX_GetParam("CONTENT_LENGTH", f->req.envp);
	size_t have = 0;
	int n;

	*body = f->body;
	*len = 0;
	f->body[0] = '\0';
	if (cl != NULL && strlen(cl) > 6)
		return FS_FCGI_BODY_TOO_BIG;
	/* Read one byte past the limit to tell "exactly full" from "too big". */
	while (have <= FS_FCGI_BODY_MAX) {
		n = FCGX_GetStr(f->body + have, (int)(FS_FCGI_BODY_MAX + 1 - have), f->req.in);
		if (n <= 0)
			break;
		have += (size_t)n;
	}
	if (have > FS_FCGI_BODY_MAX)
		return FS_FCGI_BODY_TOO_BIG;
	if (FCGX_GetError(f->req.in) != 0)
		return FS_FCGI_BODY_ERROR;
	f->body[have] = '\0';
	*len = have;
	return FS_FCGI_BODY_OK;
}

/* API answers are not cached unless the caller says how. */
static int
has_cache_control(const char *headers)
{
	if (headers == NULL)
		return 0;
	return strncasecmp(headers, "Cache-Control:", 14) == 0 ||
	    strstr(headers, "\r\nCache-Control:") != NULL;
}

void
fs_fcgi_answer(fs_fcgi *f, enum fs_http_status status, const char *headers, const char *json,
    size_t len)
{
	/* libfcgi's own printf knows no %zu. */
	FCGX_FPrintF(f->req.out,
	    "Status: %d %s\r\n"
	    "Content-Type: application/json; charset=utf-8\r\n"
	    "Content-Length: %lu\r\n"
	    "%s%s"
	    "\r\n",
	    fs_http_status_code(status), fs_http_status_text(status), (unsigned long)len,
	    has_cache_control(headers) ? "" : "Cache-Control: no-store\r\n",
	    headers != NULL ? headers : "");
	if (len > 0)
		FCGX_PutStr(json, (int)len, f->req.out);
}

void
fs_fcgi_error(fs_fcgi *f, enum fs_http_error e, const char *extra, const char *headers)
{
	char body[512];
	int n = fs_http_error_body(e, extra, body, sizeof(body));

	if (n < 0) {
		e = FS_ERR_INTERNAL;
		n = fs_http_error_body(e, NULL, body, sizeof(body));
	}
	fs_fcgi_answer(f, fs_http_error_status(e), headers, body, (size_t)n);
}

void
fs_fcgi_finish(fs_fcgi *f)
{
	if (f->in_request) {
		FCGX_Finish_r(&f->req);
		f->in_request = 0;
	}
}

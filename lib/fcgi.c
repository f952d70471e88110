#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <sys/socket.h>
#include <sys/time.h>

#include <fcgiapp.h>

#include "fcgi.h"
#include "log.h"
#include "metrics.h"

/* nginx's $request_id is 32 hex digits; anything else is not repeated. */
#define REQUEST_ID_MAX 64

struct fs_fcgi {
	FCGX_Request req;
	int uncounted; /* a health probe: kept out of the request metrics */
	const char *request_id; /* valid hex from nginx, or NULL */
	char body[FS_FCGI_BODY_MAX + 1];
};

/*
 * How long a worker blocks in accept before it looks at the stop flag: the
 * listening socket's receive timeout, so that a stop needs no signal to
 * reach the threads (a signal could cut a request's reads short).
 */
#define ACCEPT_WAKE_MS 500

/* One worker thread: it accepts its own requests, no hand-off. */
struct worker {
	fs_fcgi fcgi;
	pthread_t tid;
	void *ctx;
	const struct fs_fcgi_service *svc;
};

static atomic_int fcgi_stop;

int
fs_fcgi_stopping(void)
{
	return atomic_load(&fcgi_stop) != 0;
}

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The REQUEST_ID parameter when it is 1-64 hex digits, else NULL. */
static const char *
request_id(fs_fcgi *f)
{
	const char *id = FCGX_GetParam("REQUEST_ID", f->req.envp);
	size_t n;

	if (id == NULL || (n = strspn(id, "0123456789abcdef")) == 0 || n > REQUEST_ID_MAX ||
	    id[n] != '\0')
		return NULL;
	return id;
}

/* Keeps text that goes into a JSON string to printable ASCII without quotes. */
static void
json_safe(char *s)
{
	for (; *s != '\0'; s++)
		if (*s < 0x20 || *s > 0x7e || *s == '"' || *s == '\\')
			*s = '?';
}

/* Answers GET /healthz and /readyz of this program; 1 when it was one. */
static int
answer_probe(struct worker *w)
{
	const char *uri = FCGX_GetParam("DOCUMENT_URI", w->fcgi.req.envp);
	char why[200], extra[240];

	if (uri == NULL || (strcmp(uri, "/healthz") != 0 && strcmp(uri, "/readyz") != 0))
		return 0;
	w->fcgi.uncounted = 1;
	if (strcmp(uri, "/healthz") == 0) {
		fs_fcgi_answer(&w->fcgi, FS_HTTP_OK, NULL, "{\"status\":\"alive\"}", 18);
		return 1;
	}
	why[0] = '\0';
	if (w->svc->ready == NULL || w->svc->ready(w->ctx, why, sizeof(why)) == 0) {
		fs_fcgi_answer(&w->fcgi, FS_HTTP_OK, NULL, "{\"status\":\"ready\"}", 18);
		return 1;
	}
	json_safe(why);
	snprintf(extra, sizeof(extra), "\"detail\":\"%s\"", why);
	fs_log_warn("not ready: %s", why);
	fs_fcgi_error(&w->fcgi, FS_ERR_NOT_READY, extra, FS_HTTP_RETRY_SOON);
	return 1;
}

/*
 * Each worker accepts on the shared socket itself (the kernel wakes one
 * waiter per connection), answers, and accepts again; it leaves once the
 * stop flag is up and its request in hand is answered.
 */
/* Answers the request that libfcgi has just read (its parameters) and finishes it. */
static void
serve_request(struct worker *w)
{
	uint64_t start = mono_ns();

	fs_metrics_gauge_add(FS_M_WORKERS_BUSY, 1);
	w->fcgi.uncounted = 0;
	w->fcgi.request_id = request_id(&w->fcgi);
	fs_log_request_id(w->fcgi.request_id);
	if (!answer_probe(w))
		w->svc->handle(&w->fcgi, w->ctx);
	fs_log_request_id(NULL);
	FCGX_Finish_r(&w->fcgi.req);
	fs_metrics_gauge_add(FS_M_WORKERS_BUSY, -1);
	if (!w->fcgi.uncounted)
		fs_metrics_request_done(mono_ns() - start);
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	int rc;

	while (!fs_fcgi_stopping()) {
		if ((rc = FCGX_Accept_r(&w->fcgi.req)) != 0) {
			/* A timeout (to look at the flag) or a failed connection. */
			if (rc != -EAGAIN && rc != -EWOULDBLOCK && rc != -EINTR) {
				struct timespec ts = { 0, 10 * 1000 * 1000 };

				nanosleep(&ts, NULL);
			}
			continue;
		}
		serve_request(w);
	}
	return NULL;
}

int
fs_fcgi_serve_connection(const struct fs_fcgi_service *svc, void *ctx, int fd)
{
	struct worker *w;
	int n = 0;

	if (FCGX_Init() != 0 || (w = calloc(1, sizeof(*w))) == NULL) {
		close(fd);
		return -1;
	}
	w->svc = svc;
	w->ctx = ctx;
	if (FCGX_InitRequest(&w->fcgi.req, -1, 0) != 0) {
		free(w);
		close(fd);
		return -1;
	}
	/*
	 * libfcgi reads a connection it holds instead of accepting one, and
	 * keeps it until a request that does not ask for FCGI_KEEP_CONN is
	 * finished (then ipcFd is -1) or the stream ends.
	 */
	w->fcgi.req.ipcFd = fd;
	w->fcgi.req.keepConnection = 1;
	while (w->fcgi.req.ipcFd >= 0 && FCGX_Accept_r(&w->fcgi.req) == 0) {
		serve_request(w);
		n++;
	}
	FCGX_Free(&w->fcgi.req, 1);
	free(w);
	return n;
}

/* Starts n workers; returns how many started, each counted in *w. */
static int
workers_start(const struct fs_fcgi_service *svc, struct worker *w, void *app, int n)
{
	int started;

	for (started = 0; started < n; started++) {
		w[started].svc = svc;
		w[started].ctx = svc->thread_new != NULL ? svc->thread_new(app) : app;
		if (w[started].ctx == NULL)
			break;
		if (FCGX_InitRequest(&w[started].fcgi.req, 0, FCGI_FAIL_ACCEPT_ON_INTR) != 0 ||
		    pthread_create(&w[started].tid, NULL, worker_main, &w[started]) != 0) {
			if (svc->thread_free != NULL)
				svc->thread_free(w[started].ctx);
			break;
		}
	}
	return started;
}

/* Waits for the started workers to leave (the stop flag is up), then frees them. */
static void
workers_stop(const struct fs_fcgi_service *svc, struct worker *w, int n)
{
	for (int i = 0; i < n; i++) {
		pthread_join(w[i].tid, NULL);
		FCGX_Free(&w[i].fcgi.req, 1);
		if (svc->thread_free != NULL)
			svc->thread_free(w[i].ctx);
	}
}

int
fs_fcgi_serve(const struct fs_fcgi_service *svc, void *app)
{
	struct timeval wake = { 0, ACCEPT_WAKE_MS * 1000 };
	struct worker *w = NULL;
	struct sigaction sa;
	sigset_t stops;
	int n, started = 0, sig, rc = 1;

	fs_log_init(svc->name);
	fs_metrics_open(svc->name);
	/* No thread takes the stop signals: this one waits for them below. */
	sigemptyset(&stops);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGINT);
	pthread_sigmask(SIG_BLOCK, &stops, NULL);
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	if (FCGX_Init() != 0 || FCGX_IsCGI()) {
		fs_log_error("fastcgi: standard input is not a FastCGI socket (run under spawn-fcgi)");
		goto out;
	}
	if (setsockopt(0, SOL_SOCKET, SO_RCVTIMEO, &wake, sizeof(wake)) != 0) {
		fs_log_error("fastcgi: cannot set the accept timeout: %s", strerror(errno));
		goto out;
	}
	if ((n = svc->setup(app)) < 1)
		goto out;
	if ((w = calloc((size_t)n, sizeof(*w))) == NULL ||
	    (started = workers_start(svc, w, app, n)) != n) {
		fs_log_error("fastcgi: started %d of %d workers", started, n);
		atomic_store(&fcgi_stop, 1);
		goto out;
	}
	fs_metrics_gauge_set(FS_M_WORKERS, n);
	while (sigwait(&stops, &sig) != 0)
		;
	atomic_store(&fcgi_stop, 1);
	FCGX_ShutdownPending();
	fs_log_info("stopping: finishing the requests in hand");
	rc = 0;
out:
	if (w != NULL)
		workers_stop(svc, w, started);
	free(w);
	svc->teardown(app);
	return rc;
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

int
fs_fcgi_body_or_answer(fs_fcgi *f, const char **body, size_t *len)
{
	switch (fs_fcgi_read_body(f, body, len)) {
	case FS_FCGI_BODY_OK:
		return 0;
	case FS_FCGI_BODY_TOO_BIG:
		fs_fcgi_error(f, FS_ERR_PAYLOAD_TOO_LARGE, NULL, NULL);
		return -1;
	default:
		fs_fcgi_error(f, FS_ERR_BAD_REQUEST, NULL, NULL);
		return -1;
	}
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

static void
answer(fs_fcgi *f, enum fs_http_status status, const char *content_type, const char *headers,
    const char *body, size_t len)
{
	if (!f->uncounted)
		fs_metrics_answer(fs_http_status_code(status));
	/* libfcgi's own printf knows no %zu. */
	FCGX_FPrintF(f->req.out,
	    "Status: %d %s\r\n"
	    "Content-Type: %s\r\n"
	    "Content-Length: %lu\r\n"
	    "%s%s"
	    "\r\n",
	    fs_http_status_code(status), fs_http_status_text(status), content_type,
	    (unsigned long)len, has_cache_control(headers) ? "" : "Cache-Control: no-store\r\n",
	    headers != NULL ? headers : "");
	if (len > 0)
		FCGX_PutStr(body, (int)len, f->req.out);
}

void
fs_fcgi_answer(fs_fcgi *f, enum fs_http_status status, const char *headers, const char *json,
    size_t len)
{
	answer(f, status, "application/json; charset=utf-8", headers, json, len);
}

void
fs_fcgi_answer_typed(fs_fcgi *f, enum fs_http_status status, const char *content_type,
    const char *body, size_t len)
{
	answer(f, status, content_type, NULL, body, len);
}

void
fs_fcgi_error(fs_fcgi *f, enum fs_http_error e, const char *extra, const char *headers)
{
	char body[512], members[320];
	int n;

	if (f->request_id != NULL) {
		n = snprintf(members, sizeof(members), "%s%s\"requestId\":\"%s\"",
		    extra != NULL ? extra : "", extra != NULL ? "," : "", f->request_id);
		if (n > 0 && (size_t)n < sizeof(members))
			extra = members;
	}
	n = fs_http_error_body(e, extra, body, sizeof(body));

	if (n < 0) {
		e = FS_ERR_INTERNAL;
		n = fs_http_error_body(e, NULL, body, sizeof(body));
	}
	fs_fcgi_answer(f, fs_http_error_status(e), headers, body, (size_t)n);
}

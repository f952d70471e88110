/*
 * lib/fcgi: serving (the stop signals, the workers of either kind) and the
 * request API that handlers call (parameters, the body, answers), the same
 * for both kinds of worker: lib/fcgi_thread.c (threads, one request at a
 * time each) and lib/fcgi_loop.c (event loops). The protocol's bytes are
 * lib/fcgiproto's.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <sys/socket.h>
#include <sys/time.h>

#include "cfg.h"
#include "clock.h"
#include "fcgi_int.h"
#include "log.h"
#include "metrics.h"

/* nginx's $request_id is 32 hex digits; anything else is not repeated. */
#define REQUEST_ID_MAX 64
/* An answer's CGI header lines, at most. */
#define HEAD_MAX 1024

static atomic_int fcgi_stop;
static _Atomic int64_t fcgi_stop_at;
static struct fs_fcgi_limits fcgi_limits = { FS_CFG_FCGI_READ_TIMEOUT_MS_DEFAULT,
	FS_CFG_FCGI_IDLE_TIMEOUT_MS_DEFAULT };

int
fs_fcgi_stopping(void)
{
	return atomic_load(&fcgi_stop) != 0;
}

int64_t
fs_fcgi_stop_ms(void)
{
	return atomic_load(&fcgi_stop_at);
}

/* Stops serving: the workers see the flag within FS_FCGI_WAKE_MS. */
static void
stop_now(void)
{
	atomic_store(&fcgi_stop_at, fs_clock_mono_ms());
	atomic_store(&fcgi_stop, 1);
}

const struct fs_fcgi_limits *
fs_fcgi_limits(void)
{
	return &fcgi_limits;
}

int64_t
fs_fcgi_conn_deadline(int quiet, int64_t since)
{
	int64_t stop = fs_fcgi_stop_ms(),
		at = since + (quiet ? fcgi_limits.idle_ms : fcgi_limits.read_ms);

	/* nginx may be sending a request on a quiet one right now: served in the grace too. */
	if (stop != 0 && stop + FS_FCGI_STOP_GRACE_MS < at)
		at = stop + FS_FCGI_STOP_GRACE_MS;
	return at;
}

/* The limits from the settings (checked there); -1 with the reason logged. */
static int
limits_load(void)
{
	static struct fs_cfg cfg;

	if (fs_cfg_load(&cfg, 0) != 0) {
		fs_log_error("%s", cfg.errstr);
		return -1;
	}
	fcgi_limits.read_ms = (int)fs_cfg_long(&cfg, FS_CFG_FCGI_READ_TIMEOUT_MS);
	fcgi_limits.idle_ms = (int)fs_cfg_long(&cfg, FS_CFG_FCGI_IDLE_TIMEOUT_MS);
	return 0;
}

/* The REQUEST_ID parameter when it is 1-64 hex digits, else NULL. */
static const char *
request_id(fs_fcgi *f)
{
	const char *id = fs_fcgi_param(f, "REQUEST_ID");
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
answer_probe(struct fs_fcgi_worker *w, fs_fcgi *f)
{
	const char *uri = fs_fcgi_param(f, "DOCUMENT_URI");
	char why[200], extra[240];

	if (uri == NULL || (strcmp(uri, "/healthz") != 0 && strcmp(uri, "/readyz") != 0))
		return 0;
	f->uncounted = 1;
	if (strcmp(uri, "/healthz") == 0) {
		fs_fcgi_answer(f, FS_HTTP_OK, NULL, "{\"status\":\"alive\"}", 18);
		return 1;
	}
	why[0] = '\0';
	if (w->svc->ready == NULL || w->svc->ready(w->ctx, why, sizeof(why)) == 0) {
		fs_fcgi_answer(f, FS_HTTP_OK, NULL, "{\"status\":\"ready\"}", 18);
		return 1;
	}
	json_safe(why);
	snprintf(extra, sizeof(extra), "\"detail\":\"%s\"", why);
	fs_log_warn("not ready: %s", why);
	fs_fcgi_error(f, FS_ERR_NOT_READY, extra, FS_HTTP_RETRY_SOON);
	return 1;
}

/* A request has arrived: counted busy, tagged, answered now or left open. */
void
fs_fcgi_request_begin(struct fs_fcgi_worker *w, fs_fcgi *f)
{
	f->start_ns = fs_clock_mono_ns();
	f->uncounted = 0;
	f->answered = 0;
	fs_metrics_gauge_add(FS_M_WORKERS_BUSY, 1);
	f->request_id = request_id(f);
	fs_log_request_id(f->request_id);
	if (answer_probe(w, f))
		;
	else if (f->req->params_truncated)
		/* Left-out parameters could be the ones handle asks for: refused whole. */
		fs_fcgi_error(f, FS_ERR_HEADERS_TOO_LARGE, NULL, NULL);
	else
		w->svc->handle(f, w->ctx);
	fs_log_request_id(NULL);
}

/* The request is answered: its duration counted. */
void
fs_fcgi_request_end(fs_fcgi *f)
{
	fs_metrics_gauge_add(FS_M_WORKERS_BUSY, -1);
	if (!f->uncounted)
		fs_metrics_request_done(fs_clock_mono_ns() - f->start_ns);
}

void
fs_fcgi_log_tag(fs_fcgi *f)
{
	fs_log_request_id(f != NULL ? f->request_id : NULL);
}

/* --- serving ------------------------------------------------------------- */

/* Starts n workers; returns how many started, each counted in *w. */
static int
workers_start(const struct fs_fcgi_service *svc, struct fs_fcgi_worker *w, void *app, int n)
{
	int started;

	for (started = 0; started < n; started++) {
		w[started].svc = svc;
		w[started].ctx = svc->thread_new != NULL ? svc->thread_new(app) : app;
		if (w[started].ctx == NULL)
			break;
		if (svc->event_loop ? (w[started].loop = fs_fcgi_loop_new(&w[started])) == NULL ||
			pthread_create(&w[started].tid, NULL, fs_fcgi_loop_main, &w[started]) != 0 :
				      pthread_create(&w[started].tid, NULL, fs_fcgi_thread_main, &w[started]) != 0) {
			fs_fcgi_loop_free(w[started].loop);
			if (svc->thread_free != NULL)
				svc->thread_free(w[started].ctx);
			break;
		}
	}
	return started;
}

/* Waits for the started workers to leave (the stop flag is up), then frees them. */
static void
workers_stop(const struct fs_fcgi_service *svc, struct fs_fcgi_worker *w, int n)
{
	for (int i = 0; i < n; i++)
		if (w[i].loop != NULL)
			fs_fcgi_loop_wake(w[i].loop);
	for (int i = 0; i < n; i++) {
		pthread_join(w[i].tid, NULL);
		fs_fcgi_loop_free(w[i].loop);
		if (svc->thread_free != NULL)
			svc->thread_free(w[i].ctx);
	}
}

int
fs_fcgi_serve(const struct fs_fcgi_service *svc, void *app)
{
	struct timeval wake = { 0, FS_FCGI_WAKE_MS * 1000 };
	struct fs_fcgi_worker *w = NULL;
	int listening = 0;
	socklen_t optlen = sizeof(listening);
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
	if (limits_load() != 0)
		goto out;
	if (getsockopt(0, SOL_SOCKET, SO_ACCEPTCONN, &listening, &optlen) != 0 || !listening) {
		fs_log_error("fastcgi: standard input is not a FastCGI socket (run under spawn-fcgi)");
		goto out;
	}
	/* Loops accept only when told a connection waits, and never block in it. */
	if (svc->event_loop ? fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK) != 0 :
			      setsockopt(0, SOL_SOCKET, SO_RCVTIMEO, &wake, sizeof(wake)) != 0) {
		fs_log_error("fastcgi: cannot set up the listening socket: %s", strerror(errno));
		goto out;
	}
	if ((n = svc->setup(app)) < 1)
		goto out;
	if ((w = calloc((size_t)n, sizeof(*w))) == NULL ||
	    (started = workers_start(svc, w, app, n)) != n) {
		fs_log_error("fastcgi: started %d of %d workers", started, n);
		stop_now();
		goto out;
	}
	fs_metrics_gauge_set(FS_M_WORKERS, n);
	while (sigwait(&stops, &sig) != 0)
		;
	stop_now();
	fs_log_info("stopping: finishing the requests in hand");
	rc = 0;
out:
	if (w != NULL)
		workers_stop(svc, w, started);
	free(w);
	svc->teardown(app);
	return rc;
}

/* --- one request --------------------------------------------------------- */

const char *
fs_fcgi_param(fs_fcgi *f, const char *name)
{
	return fs_fcgiproto_param(f->req, name);
}

int
fs_fcgi_method_is(fs_fcgi *f, const char *method)
{
	const char *m = fs_fcgi_param(f, "REQUEST_METHOD");

	return m != NULL && strcmp(m, method) == 0;
}

/* The parser has the whole body already, cut at the limit. */
enum fs_fcgi_body
fs_fcgi_read_body(fs_fcgi *f, const char **body, size_t *len)
{
	const char *cl = fs_fcgi_param(f, "CONTENT_LENGTH");

	*body = "";
	*len = 0;
	if ((cl != NULL && strlen(cl) > 6) || f->req->body_too_big)
		return FS_FCGI_BODY_TOO_BIG;
	*body = f->req->body;
	*len = f->req->body_len;
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
	char head[HEAD_MAX];
	int n;

	if (f->answered) {
		fs_log_error("fastcgi: a second answer to one request was dropped");
		return;
	}
	f->answered = 1;
	n = snprintf(head, sizeof(head),
	    "Status: %d %s\r\n"
	    "Content-Type: %s\r\n"
	    "Content-Length: %zu\r\n"
	    "%s%s"
	    "\r\n",
	    fs_http_status_code(status), fs_http_status_text(status), content_type, len,
	    has_cache_control(headers) ? "" : "Cache-Control: no-store\r\n",
	    headers != NULL ? headers : "");
	if (n < 0 || (size_t)n >= sizeof(head)) {
		/* Only our own header lines can be this long: a bug, answered 500. */
		status = FS_HTTP_INTERNAL_ERROR;
		n = snprintf(head, sizeof(head), "Status: 500 %s\r\nContent-Length: 0\r\n\r\n",
		    fs_http_status_text(status));
		len = 0;
	}
	if (!f->uncounted)
		fs_metrics_answer(fs_http_status_code(status));
	f->send(f, head, (size_t)n, body, len);
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

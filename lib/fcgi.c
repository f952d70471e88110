#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <fcgiapp.h>

#include "fcgi.h"
#include "log.h"

struct fs_fcgi {
	FCGX_Request req;
	char body[FS_FCGI_BODY_MAX + 1];
};

/* One worker thread: its request, its wake-up, its context. */
struct worker {
	fs_fcgi fcgi;
	pthread_t tid;
	sem_t go;
	int quit;
	int index;
	void *ctx;
	struct pool *pool;
};

/* The workers, and a stack of the idle ones that the acceptor hands work to. */
struct pool {
	const struct fs_fcgi_service *svc;
	struct worker *w;
	int n;
	pthread_mutex_t mu;
	sem_t idle_count;
	int *idle;
	int nidle;
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

int
fs_fcgi_stopping(void)
{
	return fcgi_stop != 0;
}

/* sem_wait that a signal does not cut short. */
static void
sem_take(sem_t *s)
{
	while (sem_wait(s) != 0 && errno == EINTR)
		;
}

static void
pool_put_idle(struct pool *p, int index)
{
	pthread_mutex_lock(&p->mu);
	p->idle[p->nidle++] = index;
	pthread_mutex_unlock(&p->mu);
	sem_post(&p->idle_count);
}

static void *
worker_main(void *arg)
{
	struct worker *w = arg;

	for (;;) {
		sem_take(&w->go);
		if (w->quit)
			break;
		w->pool->svc->handle(&w->fcgi, w->ctx);
		FCGX_Finish_r(&w->fcgi.req);
		pool_put_idle(w->pool, w->index);
	}
	return NULL;
}

/* Starts n workers; returns how many started. */
static int
pool_start(struct pool *p, void *app, int n)
{
	int started = 0;

	if ((p->w = calloc((size_t)n, sizeof(*p->w))) == NULL ||
	    (p->idle = calloc((size_t)n, sizeof(*p->idle))) == NULL)
		return 0;
	pthread_mutex_init(&p->mu, NULL);
	sem_init(&p->idle_count, 0, 0);
	for (; started < n; started++) {
		struct worker *w = &p->w[started];

		w->index = started;
		w->pool = p;
		w->ctx = p->svc->thread_new != NULL ? p->svc->thread_new(app) : app;
		if (w->ctx == NULL)
			break;
		sem_init(&w->go, 0, 0);
		if (FCGX_InitRequest(&w->fcgi.req, 0, 0) != 0 ||
		    pthread_create(&w->tid, NULL, worker_main, w) != 0) {
			/* Not counted in p->n, so pool_stop would not free it. */
			sem_destroy(&w->go);
			if (p->svc->thread_free != NULL)
				p->svc->thread_free(w->ctx);
			break;
		}
		pool_put_idle(p, started);
	}
	p->n = started;
	return started;
}

/* Waits until every worker is idle, then ends them all. */
static void
pool_stop(struct pool *p)
{
	for (int i = 0; i < p->n; i++)
		sem_take(&p->idle_count);
	for (int i = 0; i < p->n; i++) {
		p->w[i].quit = 1;
		sem_post(&p->w[i].go);
	}
	for (int i = 0; i < p->n; i++) {
		pthread_join(p->w[i].tid, NULL);
		sem_destroy(&p->w[i].go);
		FCGX_Free(&p->w[i].fcgi.req, 1);
		if (p->svc->thread_free != NULL && p->w[i].ctx != NULL)
			p->svc->thread_free(p->w[i].ctx);
	}
}

int
fs_fcgi_serve(const struct fs_fcgi_service *svc, void *app)
{
	struct pool pool = { .svc = svc };
	struct sigaction sa;
	sigset_t stops;
	int n, i, rc = 1;

	fs_log_init(svc->name);
	/* Only this thread takes the stop signals: block them before any thread exists. */
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
	if ((n = svc->setup(app)) < 1)
		goto out;
	if (pool_start(&pool, app, n) != n) {
		fs_log_error("fastcgi: started %d of %d workers", pool.n, n);
		goto stop;
	}
	/* No SA_RESTART: a stop signal must interrupt the blocking accept. */
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	pthread_sigmask(SIG_UNBLOCK, &stops, NULL);
	while (!fcgi_stop) {
		if (sem_wait(&pool.idle_count) != 0)
			continue;
		pthread_mutex_lock(&pool.mu);
		i = pool.idle[--pool.nidle];
		pthread_mutex_unlock(&pool.mu);
		if (fcgi_stop || FCGX_Accept_r(&pool.w[i].fcgi.req) != 0) {
			pool_put_idle(&pool, i);
			continue;
		}
		sem_post(&pool.w[i].go);
	}
	fs_log_info("stopping: finishing the requests in hand");
	rc = 0;
stop:
	pool_stop(&pool);
	free(pool.w);
	free(pool.idle);
out:
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

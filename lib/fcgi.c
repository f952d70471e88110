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
#include <time.h>
#include <unistd.h>

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <fcgiapp.h>

#include "clock.h"
#include "fcgi.h"
#include "fcgiproto.h"
#include "log.h"
#include "metrics.h"

/* nginx's $request_id is 32 hex digits; anything else is not repeated. */
#define REQUEST_ID_MAX 64
/* An answer's CGI header lines, at most. */
#define HEAD_MAX 1024

struct conn;

/* One request, from either kind of worker. */
struct fs_fcgi {
	FCGX_Request *fcgx;	/* a thread's (libfcgi), or NULL */
	struct conn *conn;	/* an event loop's connection, or NULL */
	int uncounted;		/* a health probe: kept out of the request metrics */
	int answered;
	const char *request_id; /* valid hex from nginx, or NULL */
	uint64_t start_ns;
	char *body;		/* libfcgi's reads land here: its thread's buffer */
};

/*
 * How long a worker blocks in accept before it looks at the stop flag: the
 * listening socket's receive timeout, so that a stop needs no signal to
 * reach the threads (a signal could cut a request's reads short). An event
 * loop wakes as often to look at it, and at once when told (its wake fd).
 */
#define ACCEPT_WAKE_MS 500

struct loop;

/* One worker: a thread that accepts its own requests, no hand-off. */
struct worker {
	FCGX_Request req;
	fs_fcgi fcgi;
	char body[FS_FCGI_BODY_MAX + 1]; /* libfcgi's reads of the request in hand */
	pthread_t tid;
	void *ctx;
	const struct fs_fcgi_service *svc;
	struct loop *loop;	/* an event loop's state, or NULL */
};

static atomic_int fcgi_stop;

int
fs_fcgi_stopping(void)
{
	return atomic_load(&fcgi_stop) != 0;
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
answer_probe(struct worker *w, fs_fcgi *f)
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
static void
request_begin(struct worker *w, fs_fcgi *f)
{
	f->start_ns = fs_clock_mono_ns();
	f->uncounted = 0;
	f->answered = 0;
	fs_metrics_gauge_add(FS_M_WORKERS_BUSY, 1);
	f->request_id = request_id(f);
	fs_log_request_id(f->request_id);
	if (!answer_probe(w, f))
		w->svc->handle(f, w->ctx);
	fs_log_request_id(NULL);
}

/* The request is answered: its duration counted. */
static void
request_end(fs_fcgi *f)
{
	fs_metrics_gauge_add(FS_M_WORKERS_BUSY, -1);
	if (!f->uncounted)
		fs_metrics_request_done(fs_clock_mono_ns() - f->start_ns);
}

/* --- threads (libfcgi) ---------------------------------------------------- */

/* Answers the request that libfcgi has just read (its parameters) and finishes it. */
static void
serve_request(struct worker *w)
{
	w->fcgi.fcgx = &w->req;
	w->fcgi.conn = NULL;
	w->fcgi.body = w->body;
	request_begin(w, &w->fcgi);
	FCGX_Finish_r(&w->req);
	request_end(&w->fcgi);
}

/*
 * Each worker accepts on the shared socket itself (the kernel wakes one
 * waiter per connection), answers, and accepts again; it leaves once the
 * stop flag is up and its request in hand is answered.
 */
static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	int rc;

	while (!fs_fcgi_stopping()) {
		if ((rc = FCGX_Accept_r(&w->req)) != 0) {
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
	if (FCGX_InitRequest(&w->req, -1, 0) != 0) {
		free(w);
		close(fd);
		return -1;
	}
	/*
	 * libfcgi reads a connection it holds instead of accepting one, and
	 * keeps it until a request that does not ask for FCGI_KEEP_CONN is
	 * finished (then ipcFd is -1) or the stream ends.
	 */
	w->req.ipcFd = fd;
	w->req.keepConnection = 1;
	while (w->req.ipcFd >= 0 && FCGX_Accept_r(&w->req) == 0) {
		serve_request(w);
		n++;
	}
	FCGX_Free(&w->req, 1);
	free(w);
	return n;
}

/* --- event loops (lib/fcgiproto) ------------------------------------------ */

/* Bytes read from a connection at once, and the most answers waiting for it. */
#define READ_CHUNK 16384
#define OUT_MAX (1024 * 1024)
/* Events taken per wake, and reads of one connection per wake (fairness). */
#define EVENTS_MAX 64
#define READS_MAX 8
/* The most connections one loop holds; beyond, the kernel's backlog waits. */
#define CONNS_MAX 4096
/* How long a stopping loop still serves the connections nginx keeps open. */
#define STOP_GRACE_MS 1000

/* One FastCGI connection of a loop; multiplexing is off: one request at a time. */
struct conn {
	int fd;			/* -1 once closed */
	struct loop *loop;
	struct conn *prev, *next; /* the loop's open connections */
	int busy;		/* its request was handed over and is not answered yet */
	int close_after;	/* close once the answer is written */
	char *out;		/* records not written yet */
	size_t out_off, out_len, out_cap;
	int writing;		/* EPOLLOUT is asked for */
	fs_fcgi fcgi;
	struct fs_fcgiproto proto;
};

struct loop {
	struct worker *w;
	int epfd;
	int wakefd;		/* an eventfd: tasks posted, or stop */
	int listening;
	uint64_t stop_ns;	/* when it stopped listening */
	size_t busy;		/* requests in hand */
	struct conn *conns;
	struct conn *dead;	/* closed, freed once the events in hand are handled */
	size_t nconns;
	int full;		/* CONNS_MAX reached: not listening for now */
	pthread_mutex_t mu;	/* guards the tasks */
	struct fs_fcgi_task *tasks, **tail;
	struct watch {		/* the worker's own descriptors (fs_fcgi_watch) */
		int fd;		/* -1: a free slot; -2: unwatched this round (freed by loop_bury) */
		int64_t deadline_ms; /* monotonic; 0: none */
		void (*ready)(void *ctx);
		void *ctx;
	} watch[FS_FCGI_WATCH_MAX];
};

/* epoll's tags for the two descriptors that are not connections. */
static char listen_tag, wake_tag;

/* The event loop of this thread, if it runs one. */
static __thread struct loop *this_loop;

/* Watches the listening socket (one waiter woken per connection), or stops. */
static void
loop_listen(struct loop *l, int on)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLEXCLUSIVE, .data.ptr = &listen_tag };

	if (on ? epoll_ctl(l->epfd, EPOLL_CTL_ADD, 0, &ev) != 0 :
		 epoll_ctl(l->epfd, EPOLL_CTL_DEL, 0, NULL) != 0)
		fs_log_warn("fastcgi: epoll_ctl (listening): %s", strerror(errno));
}

static void
conn_watch(struct conn *c, int op, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = c };

	if (epoll_ctl(c->loop->epfd, op, c->fd, &ev) != 0 && op != EPOLL_CTL_DEL)
		fs_log_warn("fastcgi: epoll_ctl: %s", strerror(errno));
}

/*
 * A closed connection that no request refers to any more is freed after
 * the events in hand are handled: one of them may still name it.
 */
static void
conn_free_if_done(struct conn *c)
{
	if (c->fd >= 0 || c->busy)
		return;
	c->next = c->loop->dead;
	c->loop->dead = c;
}

static void
loop_bury(struct loop *l)
{
	struct conn *c;

	while ((c = l->dead) != NULL) {
		l->dead = c->next;
		free(c->out);
		free(c);
	}
	/* An event of this round may still name an unwatched slot: reused from now on. */
	for (int i = 0; i < FS_FCGI_WATCH_MAX; i++)
		if (l->watch[i].fd == -2)
			l->watch[i].fd = -1;
}

/* Closes the socket; a request in hand keeps the memory until it is answered. */
static void
conn_close(struct conn *c)
{
	struct loop *l = c->loop;

	if (c->fd < 0)
		return;
	conn_watch(c, EPOLL_CTL_DEL, 0);
	close(c->fd);
	c->fd = -1;
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		l->conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
	l->nconns--;
	if (l->full) {
		/* Only a listening loop is ever full (a stop clears it). */
		loop_listen(l, 1);
		l->full = 0;
	}
	conn_free_if_done(c);
}

/* Writes what it can; 0, or -1 when the connection was closed. */
static int
conn_flush(struct conn *c)
{
	ssize_t n;

	while (c->out_off < c->out_len) {
		n = write(c->fd, c->out + c->out_off, c->out_len - c->out_off);
		if (n > 0) {
			c->out_off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (!c->writing)
				conn_watch(c, EPOLL_CTL_MOD, EPOLLIN | EPOLLOUT);
			c->writing = 1;
			return 0;
		}
		conn_close(c);
		return -1;
	}
	c->out_off = c->out_len = 0;
	if (c->writing)
		conn_watch(c, EPOLL_CTL_MOD, EPOLLIN);
	c->writing = 0;
	if (c->close_after && !c->busy) {
		conn_close(c);
		return -1;
	}
	return 0;
}

/* Room for n more bytes of answers; NULL when the connection holds too much. */
static char *
conn_room(struct conn *c, size_t n)
{
	size_t cap;
	char *p;

	if (n > OUT_MAX - c->out_len)
		return NULL;
	if (c->out_len + n > c->out_cap) {
		for (cap = c->out_cap > 0 ? c->out_cap : 4096; cap < c->out_len + n; cap *= 2)
			;
		if ((p = realloc(c->out, cap)) == NULL)
			return NULL;
		c->out = p;
		c->out_cap = cap;
	}
	return c->out + c->out_len;
}

/* Sends an answer's CGI head and body as the records of the request in hand. */
static void
conn_answer(struct conn *c, const char *head, size_t hlen, const char *body, size_t blen)
{
	char small[4096], *data = small, *room;
	size_t len = hlen + blen;
	struct loop *l = c->loop;
	ssize_t n;

	if (c->fd >= 0) {
		if (len > sizeof(small) && (data = malloc(len)) == NULL) {
			c->close_after = 1;
		} else {
			memcpy(data, head, hlen);
			if (blen > 0)
				memcpy(data + hlen, body, blen);
			if ((room = conn_room(c, fs_fcgiproto_answer_size(len))) == NULL ||
			    (n = fs_fcgiproto_answer(c->proto.req.id, data, len, room,
				 fs_fcgiproto_answer_size(len))) < 0)
				c->close_after = 1;
			else
				c->out_len += (size_t)n;
			if (data != small)
				free(data);
		}
		if (!c->proto.req.keep_conn)
			c->close_after = 1;
	}
	fs_fcgiproto_done(&c->proto);
	c->busy = 0;
	l->busy--;
	request_end(&c->fcgi);
	if (c->fd < 0)
		conn_free_if_done(c);
	else
		conn_flush(c);
}

/* Ends a request that was aborted before it was handed over; -1 when it cannot. */
static int
conn_end_unserved(struct conn *c)
{
	char *room;
	ssize_t n;

	if ((room = conn_room(c, fs_fcgiproto_answer_size(0))) == NULL ||
	    (n = fs_fcgiproto_answer(c->proto.req.id, "", 0, room, fs_fcgiproto_answer_size(0))) < 0)
		return -1;
	c->out_len += (size_t)n;
	if (!c->proto.req.keep_conn)
		c->close_after = 1;
	fs_fcgiproto_done(&c->proto);
	return 0;
}

/* Parses what came; 0, or -1 when the connection must close. */
static int
conn_feed(struct conn *c, const char *buf, size_t len)
{
	size_t off = 0, used;
	char *room;

	while (off < len && c->fd >= 0 && !c->close_after) {
		switch (fs_fcgiproto_feed(&c->proto, buf + off, len - off, &used)) {
		case FS_FCGIPROTO_MORE:
			break;
		case FS_FCGIPROTO_REQUEST:
			c->busy = 1;
			c->loop->busy++;
			memset(&c->fcgi, 0, sizeof(c->fcgi));
			c->fcgi.conn = c;
			request_begin(c->loop->w, &c->fcgi);
			break;
		case FS_FCGIPROTO_ABORT:
			/*
			 * Handed over, the work may be half done (a unit taken): its
			 * answer follows. Not yet: it ends here, with no output.
			 */
			if (!c->busy && conn_end_unserved(c) != 0)
				return -1;
			break;
		case FS_FCGIPROTO_REPLY:
			if ((room = conn_room(c, c->proto.reply_len)) == NULL)
				return -1;
			memcpy(room, c->proto.reply, c->proto.reply_len);
			c->out_len += c->proto.reply_len;
			break;
		default:
			fs_log_warn("fastcgi: %s; closing the connection", c->proto.why);
			return -1;
		}
		off += used;
	}
	return 0;
}

static void
conn_readable(struct conn *c)
{
	char buf[READ_CHUNK];
	ssize_t n;

	for (int i = 0; i < READS_MAX && c->fd >= 0 && !c->close_after; i++) {
		n = read(c->fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (n <= 0 || conn_feed(c, buf, (size_t)n) != 0) {
			conn_close(c);
			return;
		}
		if ((size_t)n < sizeof(buf))
			break;
	}
	if (c->fd >= 0 && c->out_len > c->out_off && !c->writing)
		conn_flush(c);
}

static void
loop_accept(struct loop *l)
{
	struct conn *c;
	int fd;

	for (int i = 0; i < EVENTS_MAX; i++) {
		if (l->nconns >= CONNS_MAX) {
			fs_log_warn("fastcgi: %d connections: accepting again when one closes", CONNS_MAX);
			loop_listen(l, 0);
			l->full = 1;
			return;
		}
		if ((fd = accept4(0, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
			    errno != ECONNABORTED)
				fs_log_warn("fastcgi: accept: %s", strerror(errno));
			return;
		}
		if ((c = calloc(1, sizeof(*c))) == NULL) {
			close(fd);
			return;
		}
		c->fd = fd;
		c->loop = l;
		fs_fcgiproto_init(&c->proto);
		if ((c->next = l->conns) != NULL)
			l->conns->prev = c;
		l->conns = c;
		l->nconns++;
		conn_watch(c, EPOLL_CTL_ADD, EPOLLIN);
	}
}

void
fs_fcgi_log_tag(fs_fcgi *f)
{
	fs_log_request_id(f != NULL ? f->request_id : NULL);
}

void
fs_fcgi_post(fs_fcgi *f, struct fs_fcgi_task *t)
{
	struct loop *l = f->conn->loop;
	uint64_t one = 1;
	int wake;

	t->fcgi = f;
	t->next = NULL;
	pthread_mutex_lock(&l->mu);
	wake = l->tasks == NULL;
	*l->tail = t;
	l->tail = &t->next;
	pthread_mutex_unlock(&l->mu);
	if (wake && write(l->wakefd, &one, sizeof(one)) < 0)
		fs_log_error("fastcgi: cannot wake a loop: %s", strerror(errno));
}

static struct watch *
watch_of(struct loop *l, void *tag)
{
	char *p = tag, *first = (char *)l->watch;

	if (p < first || p >= (char *)(l->watch + FS_FCGI_WATCH_MAX))
		return NULL;
	return &l->watch[(size_t)(p - first) / sizeof(l->watch[0])];
}

int
fs_fcgi_watch(int fd, int64_t deadline_ms, void (*ready)(void *ctx), void *ctx)
{
	struct loop *l = this_loop;
	/* One loop woken, when several watch one descriptor. */
	struct epoll_event ev = { .events = EPOLLIN | EPOLLEXCLUSIVE };

	if (l == NULL || fd < 0)
		return -1;
	for (int i = 0; i < FS_FCGI_WATCH_MAX; i++) {
		if (l->watch[i].fd != -1)
			continue;
		ev.data.ptr = &l->watch[i];
		if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
			fs_log_warn("fastcgi: epoll_ctl (watch): %s", strerror(errno));
			return -1;
		}
		l->watch[i] = (struct watch){ .fd = fd, .deadline_ms = deadline_ms, .ready = ready,
			.ctx = ctx };
		return 0;
	}
	return -1;
}

void
fs_fcgi_unwatch(int fd)
{
	struct loop *l = this_loop;

	if (l == NULL || fd < 0)
		return;
	for (int i = 0; i < FS_FCGI_WATCH_MAX; i++) {
		if (l->watch[i].fd != fd)
			continue;
		/* Closed meanwhile: epoll dropped it already. */
		(void)epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
		l->watch[i].fd = -2;
	}
}

/* How long the loop may sleep: until its next look at the stop flag, or a watch's deadline. */
static int
loop_timeout(const struct loop *l)
{
	int64_t now = 0, left, timeout = ACCEPT_WAKE_MS;

	for (int i = 0; i < FS_FCGI_WATCH_MAX; i++) {
		if (l->watch[i].fd < 0 || l->watch[i].deadline_ms == 0)
			continue;
		if (now == 0)
			now = fs_clock_mono_ms();
		left = l->watch[i].deadline_ms - now;
		if (left < timeout)
			timeout = left < 0 ? 0 : left;
	}
	return (int)timeout;
}

/* The watches whose deadline passed with their descriptor still silent. */
static void
loop_deadlines(struct loop *l)
{
	int64_t now = 0;

	for (int i = 0; i < FS_FCGI_WATCH_MAX; i++) {
		struct watch *wt = &l->watch[i];

		if (wt->fd < 0 || wt->deadline_ms == 0)
			continue;
		if (now == 0)
			now = fs_clock_mono_ms();
		if (now >= wt->deadline_ms)
			wt->ready(wt->ctx); /* may unwatch any of them */
	}
}

/* Runs the tasks posted so far, each with its request's log tag. */
static void
loop_tasks(struct loop *l)
{
	struct fs_fcgi_task *t, *next;
	uint64_t n;

	if (read(l->wakefd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		fs_log_warn("fastcgi: wake fd: %s", strerror(errno));
	pthread_mutex_lock(&l->mu);
	t = l->tasks;
	l->tasks = NULL;
	l->tail = &l->tasks;
	pthread_mutex_unlock(&l->mu);
	for (; t != NULL; t = next) {
		next = t->next; /* run may free t */
		fs_log_request_id(t->fcgi->request_id);
		t->run(t->arg);
		fs_log_request_id(NULL);
	}
}

/*
 * Stopping: no new connections. The open ones are still served, since
 * nginx may be sending a request on one right now, until nginx closes them
 * (it closes an idle one after 400 ms) or STOP_GRACE_MS passed with no
 * request in hand.
 */
static void
loop_stop_accepting(struct loop *l)
{
	if (!l->full)
		loop_listen(l, 0); /* full: already not watched */
	l->full = 0;
	l->listening = 0;
	l->stop_ns = fs_clock_mono_ns();
}

/* True while the loop still has work: it listens, holds requests, or lets nginx finish. */
static int
loop_running(struct loop *l)
{
	if (l->listening || l->busy > 0)
		return 1;
	return l->conns != NULL && fs_clock_mono_ns() - l->stop_ns < (uint64_t)STOP_GRACE_MS * 1000000u;
}

static void *
loop_main(void *arg)
{
	struct worker *w = arg;
	struct loop *l = w->loop;
	struct epoll_event ev[EVENTS_MAX];
	struct watch *wt;
	int n;

	this_loop = l;
	while (loop_running(l)) {
		if (l->listening && fs_fcgi_stopping())
			loop_stop_accepting(l);
		if ((n = epoll_wait(l->epfd, ev, EVENTS_MAX, loop_timeout(l))) < 0 && errno != EINTR) {
			fs_log_error("fastcgi: epoll_wait: %s", strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++) {
			if (ev[i].data.ptr == &listen_tag) {
				loop_accept(l);
			} else if (ev[i].data.ptr == &wake_tag) {
				loop_tasks(l);
			} else if ((wt = watch_of(l, ev[i].data.ptr)) != NULL) {
				/* Unwatched by an earlier callback of this round: not any more. */
				if (wt->fd >= 0)
					wt->ready(wt->ctx);
			} else {
				struct conn *c = ev[i].data.ptr;

				if (c->fd >= 0 && (ev[i].events & EPOLLOUT))
					conn_flush(c);
				if (c->fd >= 0 && (ev[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
					conn_readable(c);
			}
		}
		loop_deadlines(l);
		if (w->svc->round_end != NULL)
			w->svc->round_end(w->ctx);
		loop_bury(l);
	}
	while (l->conns != NULL)
		conn_close(l->conns);
	loop_bury(l);
	return NULL;
}

static void
loop_free(struct loop *l)
{
	if (l == NULL)
		return;
	if (l->epfd >= 0)
		close(l->epfd);
	if (l->wakefd >= 0)
		close(l->wakefd);
	pthread_mutex_destroy(&l->mu);
	free(l);
}

/* A loop that watches the listening socket (one waiter woken per connection) and its wake fd. */
static struct loop *
loop_new(struct worker *w)
{
	struct epoll_event wev = { .events = EPOLLIN, .data.ptr = &wake_tag };
	struct loop *l;

	if ((l = calloc(1, sizeof(*l))) == NULL)
		return NULL;
	l->w = w;
	l->tail = &l->tasks;
	l->listening = 1;
	for (int i = 0; i < FS_FCGI_WATCH_MAX; i++)
		l->watch[i].fd = -1;
	pthread_mutex_init(&l->mu, NULL);
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	l->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (l->epfd < 0 || l->wakefd < 0 || epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->wakefd, &wev) != 0) {
		fs_log_error("fastcgi: event loop: %s", strerror(errno));
		loop_free(l);
		return NULL;
	}
	loop_listen(l, 1);
	return l;
}

/* Wakes a loop so that it sees the stop flag now. */
static void
loop_wake(struct loop *l)
{
	uint64_t one = 1;

	if (write(l->wakefd, &one, sizeof(one)) < 0)
		fs_log_warn("fastcgi: cannot wake a loop: %s", strerror(errno));
}

/* --- serving ------------------------------------------------------------- */

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
		if (svc->event_loop ? (w[started].loop = loop_new(&w[started])) == NULL ||
			pthread_create(&w[started].tid, NULL, loop_main, &w[started]) != 0 :
				      FCGX_InitRequest(&w[started].req, 0, FCGI_FAIL_ACCEPT_ON_INTR) != 0 ||
			pthread_create(&w[started].tid, NULL, worker_main, &w[started]) != 0) {
			loop_free(w[started].loop);
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
	for (int i = 0; i < n; i++)
		if (w[i].loop != NULL)
			loop_wake(w[i].loop);
	for (int i = 0; i < n; i++) {
		pthread_join(w[i].tid, NULL);
		if (w[i].loop != NULL)
			loop_free(w[i].loop);
		else
			FCGX_Free(&w[i].req, 1);
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

/* --- one request --------------------------------------------------------- */

const char *
fs_fcgi_param(fs_fcgi *f, const char *name)
{
	if (f->conn != NULL)
		return fs_fcgiproto_param(&f->conn->proto.req, name);
	return FCGX_GetParam(name, f->fcgx->envp);
}

int
fs_fcgi_method_is(fs_fcgi *f, const char *method)
{
	const char *m = fs_fcgi_param(f, "REQUEST_METHOD");

	return m != NULL && strcmp(m, method) == 0;
}

/* libfcgi's body: read one byte past the limit to tell "exactly full" from "too big". */
static enum fs_fcgi_body
read_fcgx_body(fs_fcgi *f, const char **body, size_t *len)
{
	size_t have = 0;
	int n;

	while (have <= FS_FCGI_BODY_MAX) {
		n = FCGX_GetStr(f->body + have, (int)(FS_FCGI_BODY_MAX + 1 - have), f->fcgx->in);
		if (n <= 0)
			break;
		have += (size_t)n;
	}
	if (have > FS_FCGI_BODY_MAX)
		return FS_FCGI_BODY_TOO_BIG;
	if (FCGX_GetError(f->fcgx->in) != 0)
		return FS_FCGI_BODY_ERROR;
	f->body[have] = '\0';
	*body = f->body;
	*len = have;
	return FS_FCGI_BODY_OK;
}

enum fs_fcgi_body
fs_fcgi_read_body(fs_fcgi *f, const char **body, size_t *len)
{
	const char *cl = fs_fcgi_param(f, "CONTENT_LENGTH");

	*body = "";
	*len = 0;
	if (cl != NULL && strlen(cl) > 6)
		return FS_FCGI_BODY_TOO_BIG;
	if (f->conn == NULL)
		return read_fcgx_body(f, body, len);
	/* An event loop has the whole body already, cut at the limit. */
	if (f->conn->proto.req.body_too_big)
		return FS_FCGI_BODY_TOO_BIG;
	*body = f->conn->proto.req.body;
	*len = f->conn->proto.req.body_len;
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
	if (f->conn != NULL) {
		conn_answer(f->conn, head, (size_t)n, body, len);
		return;
	}
	FCGX_PutStr(head, n, f->fcgx->out);
	if (len > 0)
		FCGX_PutStr(body, (int)len, f->fcgx->out);
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

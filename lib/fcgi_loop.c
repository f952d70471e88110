/*
 * lib/fcgi's event loops: each worker is a thread that runs epoll over its
 * own connections, the listening socket (one waiter woken per connection)
 * and an eventfd for the tasks other threads post; any number of requests
 * are in hand at once, each answered when its work is done (the purchase
 * handler's). The bytes go through lib/fcgiproto. Every SWEEP_MS a loop
 * closes the connections past their limits (fs_fcgi_conn_deadline): a
 * request not whole in time, an answer not taken, idle too long; those
 * whose request is in the service's hands wait for its answer.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include "clock.h"
#include "fcgi_int.h"
#include "log.h"

/* The most answers waiting for a connection. */
#define OUT_MAX (1024 * 1024)
/* Events taken per wake, and reads of one connection per wake (fairness). */
#define EVENTS_MAX 64
#define READS_MAX 8
/* The most connections one loop holds; beyond, the kernel's backlog waits. */
#define CONNS_MAX 4096
/* How often a loop looks for connections past their limits. */
#define SWEEP_MS 100

/* One FastCGI connection of a loop; multiplexing is off: one request at a time. */
struct conn {
	int fd;			/* -1 once closed */
	struct fs_fcgi_loop *loop;
	struct conn *prev, *next; /* the loop's open connections */
	int busy;		/* its request was handed over and is not answered yet */
	int close_after;	/* close once the answer is written */
	char *out;		/* records not written yet */
	size_t out_off, out_len, out_cap;
	int writing;		/* EPOLLOUT is asked for */
	int phase;		/* PHASE_*: what its clock counts */
	int64_t since_ms;	/* when it entered that phase (fs_clock_mono_ms) */
	fs_fcgi fcgi;		/* the request in hand */
	struct fs_fcgiproto proto;
};

/* A connection is quiet (nothing of a request on it), receiving or writing, or its request is handed over. */
enum { PHASE_QUIET, PHASE_MOVING, PHASE_HANDED };

struct fs_fcgi_loop {
	struct fs_fcgi_worker *w;
	int64_t now_ms;		/* read once per round */
	int64_t next_sweep_ms;
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
static __thread struct fs_fcgi_loop *this_loop;

/* Watches the listening socket (one waiter woken per connection), or stops. */
static void
loop_listen(struct fs_fcgi_loop *l, int on)
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
loop_bury(struct fs_fcgi_loop *l)
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
	struct fs_fcgi_loop *l = c->loop;

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

/* Starts the connection's clock again when its phase changed. */
static void
conn_mark(struct conn *c)
{
	int phase;

	if (c->fd < 0)
		return;
	if (c->busy)
		phase = PHASE_HANDED;
	else if (c->out_off < c->out_len || !fs_fcgiproto_quiet(&c->proto))
		phase = PHASE_MOVING;
	else
		phase = PHASE_QUIET;
	if (phase != c->phase) {
		c->phase = phase;
		c->since_ms = c->loop->now_ms;
	}
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
	conn_mark(c);
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

/* Sends an answer's CGI head and body as the records of the request in hand (its send). */
static void
conn_send(fs_fcgi *f, const char *head, size_t hlen, const char *body, size_t blen)
{
	struct conn *c = f->conn;
	char small[4096], *data = small, *room;
	size_t len = hlen + blen;
	struct fs_fcgi_loop *l = c->loop;
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
	fs_fcgi_request_end(&c->fcgi);
	if (c->fd < 0)
		conn_free_if_done(c);
	else if (conn_flush(c) == 0)
		conn_mark(c);
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
			c->fcgi.req = &c->proto.req;
			c->fcgi.send = conn_send;
			c->fcgi.conn = c;
			fs_fcgi_request_begin(c->loop->w, &c->fcgi);
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
	char buf[FS_FCGI_READ_CHUNK];
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
	conn_mark(c);
}

static void
loop_accept(struct fs_fcgi_loop *l)
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
		c->phase = PHASE_QUIET;
		c->since_ms = l->now_ms;
		fs_fcgiproto_init(&c->proto);
		if ((c->next = l->conns) != NULL)
			l->conns->prev = c;
		l->conns = c;
		l->nconns++;
		conn_watch(c, EPOLL_CTL_ADD, EPOLLIN);
	}
}

void
fs_fcgi_post(fs_fcgi *f, struct fs_fcgi_task *t)
{
	struct conn *c = f->conn;
	struct fs_fcgi_loop *l = c->loop;
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
watch_of(struct fs_fcgi_loop *l, void *tag)
{
	char *p = tag, *first = (char *)l->watch;

	if (p < first || p >= (char *)(l->watch + FS_FCGI_WATCH_MAX))
		return NULL;
	return &l->watch[(size_t)(p - first) / sizeof(l->watch[0])];
}

int
fs_fcgi_watch(int fd, int64_t deadline_ms, void (*ready)(void *ctx), void *ctx)
{
	struct fs_fcgi_loop *l = this_loop;
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
	struct fs_fcgi_loop *l = this_loop;

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
loop_timeout(const struct fs_fcgi_loop *l)
{
	int64_t now = 0, left, timeout = FS_FCGI_WAKE_MS;

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
loop_deadlines(struct fs_fcgi_loop *l)
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
loop_tasks(struct fs_fcgi_loop *l)
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

/* Closes the connections past their limits; those whose request is handed over wait for it. */
static void
loop_sweep(struct fs_fcgi_loop *l)
{
	struct conn *c, *next;

	if (l->now_ms < l->next_sweep_ms)
		return;
	l->next_sweep_ms = l->now_ms + SWEEP_MS;
	for (c = l->conns; c != NULL; c = next) {
		next = c->next; /* conn_close unlinks c */
		if (c->phase == PHASE_HANDED ||
		    l->now_ms < fs_fcgi_conn_deadline(c->phase == PHASE_QUIET, c->since_ms))
			continue;
		if (c->phase == PHASE_MOVING && l->listening)
			fs_log_warn("fastcgi: a request not whole, or an answer not taken, after %d ms; "
			    "closing the connection", fs_fcgi_limits()->read_ms);
		conn_close(c);
	}
}

/*
 * Stopping: no new connections. The open ones are still served, since
 * nginx may be sending a request on one right now, until nginx closes them
 * (it closes an idle one after 400 ms) or FS_FCGI_STOP_GRACE_MS passed
 * with no request in hand; one still receiving a request is closed then
 * even while other requests are in hand (loop_sweep).
 */
static void
loop_stop_accepting(struct fs_fcgi_loop *l)
{
	if (!l->full)
		loop_listen(l, 0); /* full: already not watched */
	l->full = 0;
	l->listening = 0;
	l->stop_ns = fs_clock_mono_ns();
}

/* True while the loop still has work: it listens, holds requests, or lets nginx finish. */
static int
loop_running(struct fs_fcgi_loop *l)
{
	if (l->listening || l->busy > 0)
		return 1;
	return l->conns != NULL &&
	    fs_clock_mono_ns() - l->stop_ns < (uint64_t)FS_FCGI_STOP_GRACE_MS * 1000000u;
}

void *
fs_fcgi_loop_main(void *arg)
{
	struct fs_fcgi_worker *w = arg;
	struct fs_fcgi_loop *l = w->loop;
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
		l->now_ms = fs_clock_mono_ms();
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
		loop_sweep(l);
		if (w->svc->round_end != NULL)
			w->svc->round_end(w->ctx);
		loop_bury(l);
	}
	while (l->conns != NULL)
		conn_close(l->conns);
	loop_bury(l);
	return NULL;
}

void
fs_fcgi_loop_free(struct fs_fcgi_loop *l)
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
struct fs_fcgi_loop *
fs_fcgi_loop_new(struct fs_fcgi_worker *w)
{
	struct epoll_event wev = { .events = EPOLLIN, .data.ptr = &wake_tag };
	struct fs_fcgi_loop *l;

	if ((l = calloc(1, sizeof(*l))) == NULL)
		return NULL;
	l->w = w;
	l->now_ms = fs_clock_mono_ms();
	l->tail = &l->tasks;
	l->listening = 1;
	for (int i = 0; i < FS_FCGI_WATCH_MAX; i++)
		l->watch[i].fd = -1;
	pthread_mutex_init(&l->mu, NULL);
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	l->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (l->epfd < 0 || l->wakefd < 0 || epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->wakefd, &wev) != 0) {
		fs_log_error("fastcgi: event loop: %s", strerror(errno));
		fs_fcgi_loop_free(l);
		return NULL;
	}
	loop_listen(l, 1);
	return l;
}

/* Wakes a loop so that it sees the stop flag now. */
void
fs_fcgi_loop_wake(struct fs_fcgi_loop *l)
{
	uint64_t one = 1;

	if (write(l->wakefd, &one, sizeof(one)) < 0)
		fs_log_warn("fastcgi: cannot wake a loop: %s", strerror(errno));
}

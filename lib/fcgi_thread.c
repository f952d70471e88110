/*
 * lib/fcgi's worker threads: each accepts on the shared socket itself (the
 * kernel wakes one waiter per connection), reads a request whole through
 * lib/fcgiproto, hands it to the service, whose handle answers before it
 * returns, writes the answer's records, and goes on with the connection
 * until it ends or a request does not keep it. One request at a time per
 * thread: for handlers that block on PostgreSQL or a provider. A peer
 * cannot hold the thread: the socket's timeouts wake it every
 * FS_FCGI_WAKE_MS, and a connection past its limit (fs_fcgi_conn_deadline:
 * a request not whole in time, an answer not taken, idle too long, or a
 * stop) is closed.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/socket.h>
#include <sys/time.h>

#include "clock.h"
#include "fcgi_int.h"
#include "log.h"

/* A thread's connection: the socket and its parser. */
struct tconn {
	int fd;
	int failed;		/* a write failed: the connection is done for */
	fs_fcgi fcgi;		/* the request in hand */
	struct fs_fcgiproto proto;
};

/*
 * Writes all of buf to the socket, whose send timeout wakes it every
 * FS_FCGI_WAKE_MS; 0, or -1 when the connection failed or the peer has
 * not taken the answer by its deadline (fs_fcgi_conn_deadline).
 */
static int
write_all(int fd, const char *buf, size_t len)
{
	int64_t deadline = fs_fcgi_conn_deadline(0, fs_clock_mono_ms());
	ssize_t n;

	for (size_t off = 0; off < len;) {
		n = write(fd, buf + off, len - off);
		if (n < 0 && (errno == EINTR ||
			((errno == EAGAIN || errno == EWOULDBLOCK) && fs_clock_mono_ms() < deadline)))
			continue;
		if (n <= 0) {
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				fs_log_warn("fastcgi: the peer took no answer for %d ms; closing the connection",
				    fs_fcgi_limits()->read_ms);
			return -1;
		}
		off += (size_t)n;
	}
	return 0;
}

/* Writes an answer's CGI head and body as the records of the parser's current request. */
static void
tconn_write(struct tconn *t, const char *head, size_t hlen, const char *body, size_t blen)
{
	size_t len = hlen + blen, size = fs_fcgiproto_answer_size(len);
	char *data = malloc(len + size);
	ssize_t n;

	if (data == NULL) {
		t->failed = 1;
		return;
	}
	memcpy(data, head, hlen);
	if (blen > 0)
		memcpy(data + hlen, body, blen);
	n = fs_fcgiproto_answer(t->proto.req.id, data, len, data + len, size);
	if (n < 0 || write_all(t->fd, data + len, (size_t)n) != 0)
		t->failed = 1;
	free(data);
}

/* A request's send: its answer as records. */
static void
tconn_send(fs_fcgi *f, const char *head, size_t hlen, const char *body, size_t blen)
{
	tconn_write(f->conn, head, hlen, body, blen);
}

/* Hands the request that arrived to the service; one the service left unanswered ends empty. */
static void
tconn_request(struct fs_fcgi_worker *w, struct tconn *t)
{
	memset(&t->fcgi, 0, sizeof(t->fcgi));
	t->fcgi.req = &t->proto.req;
	t->fcgi.send = tconn_send;
	t->fcgi.conn = t;
	fs_fcgi_request_begin(w, &t->fcgi);
	if (!t->fcgi.answered) {
		fs_log_error("fastcgi: a request left unanswered by a thread's service ends empty");
		tconn_write(t, "", 0, NULL, 0);
	}
	fs_fcgi_request_end(&t->fcgi);
	fs_fcgiproto_done(&t->proto);
}

/*
 * What the parser said of the bytes at buf: 0 to go on, 1 when the
 * connection ends here (a request that does not keep it, or a failure).
 */
static int
tconn_event(struct fs_fcgi_worker *w, struct tconn *t, enum fs_fcgiproto_event ev, int *served)
{
	switch (ev) {
	case FS_FCGIPROTO_MORE:
		return 0;
	case FS_FCGIPROTO_REQUEST:
		tconn_request(w, t);
		++*served;
		return t->failed || !t->proto.req.keep_conn;
	case FS_FCGIPROTO_ABORT:
		/* A thread answers before it reads on: only a request not yet whole is aborted. */
		tconn_write(t, "", 0, NULL, 0);
		fs_fcgiproto_done(&t->proto);
		return t->failed || !t->proto.req.keep_conn;
	case FS_FCGIPROTO_REPLY:
		return write_all(t->fd, t->proto.reply, t->proto.reply_len) != 0;
	default:
		fs_log_warn("fastcgi: %s; closing the connection", t->proto.why);
		return 1;
	}
}

/* True when the connection is past its deadline; a request left unwhole is logged. */
static int
tconn_expired(int quiet, int64_t since)
{
	if (fs_clock_mono_ms() < fs_fcgi_conn_deadline(quiet, since))
		return 0;
	if (!quiet)
		fs_log_warn("fastcgi: a request not whole after %d ms%s; closing the connection",
		    fs_fcgi_limits()->read_ms, fs_fcgi_stopping() ? " or the stop's grace" : "");
	return 1;
}

/*
 * Serves the connection on t->fd until it ends, fails, a request does not
 * keep it, or it passes its deadline (a read times out every
 * FS_FCGI_WAKE_MS to look); closes it and returns how many requests were
 * answered.
 */
static int
tconn_serve(struct fs_fcgi_worker *w, struct tconn *t)
{
	char buf[FS_FCGI_READ_CHUNK];
	size_t off = 0, len = 0, used;
	enum fs_fcgiproto_event ev;
	int served = 0, quiet = 1, now_quiet;
	int64_t since = fs_clock_mono_ms(); /* when it went quiet, or began receiving */
	ssize_t n;

	fs_fcgiproto_init(&t->proto);
	t->failed = 0;
	for (;;) {
		if (off == len) {
			if (tconn_expired(quiet, since))
				break;
			n = read(t->fd, buf, sizeof(buf));
			if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
				continue;
			if (n <= 0)
				break;
			off = 0;
			len = (size_t)n;
		}
		ev = fs_fcgiproto_feed(&t->proto, buf + off, len - off, &used);
		if (tconn_event(w, t, ev, &served) != 0)
			break;
		off += used;
		now_quiet = off == len && fs_fcgiproto_quiet(&t->proto);
		if (now_quiet != quiet || ev == FS_FCGIPROTO_REQUEST) {
			/* A request answered starts the next one's clock. */
			quiet = now_quiet;
			since = fs_clock_mono_ms();
		}
	}
	close(t->fd);
	return served;
}

void *
fs_fcgi_thread_main(void *arg)
{
	struct fs_fcgi_worker *w = arg;
	struct timeval wake = { 0, FS_FCGI_WAKE_MS * 1000 };
	struct timespec pause = { 0, 10 * 1000 * 1000 };
	struct tconn *t = calloc(1, sizeof(*t));

	if (t == NULL) {
		fs_log_error("fastcgi: a worker thread has no memory for its connection");
		return NULL;
	}
	while (!fs_fcgi_stopping()) {
		/* The listening socket's receive timeout bounds the wait (fs_fcgi_serve). */
		if ((t->fd = accept4(0, NULL, NULL, SOCK_CLOEXEC)) < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
			    errno != ECONNABORTED)
				nanosleep(&pause, NULL); /* out of descriptors: no busy loop */
			continue;
		}
		if (setsockopt(t->fd, SOL_SOCKET, SO_RCVTIMEO, &wake, sizeof(wake)) != 0 ||
		    setsockopt(t->fd, SOL_SOCKET, SO_SNDTIMEO, &wake, sizeof(wake)) != 0)
			fs_log_warn("fastcgi: cannot bound a connection's reads and writes: %s",
			    strerror(errno));
		tconn_serve(w, t);
	}
	free(t);
	return NULL;
}

int
fs_fcgi_serve_connection(const struct fs_fcgi_service *svc, void *ctx, int fd)
{
	struct fs_fcgi_worker w = { .svc = svc, .ctx = ctx };
	struct tconn *t = calloc(1, sizeof(*t));

	if (t == NULL) {
		close(fd);
		return -1;
	}
	t->fd = fd;
	fd = tconn_serve(&w, t);
	free(t);
	return fd;
}

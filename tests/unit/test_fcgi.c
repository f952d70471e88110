/*
 * lib/fcgi's event loops, served on a real listening socket (as spawn-fcgi
 * hands it over on fd 0) to a client that speaks FastCGI as nginx does:
 * answers now, at the end of the loop's round and later (posted from
 * another thread), several
 * requests on one kept connection, a request written a byte at a time, a
 * connection that goes away while its request is in hand, a request left
 * open until a descriptor the loop watches reads (or its deadline), a
 * loop's batch (sent at the round's end or when full, answered when its
 * replies read, at its deadline, or in place where no loop runs), the
 * probes, a second answer dropped, and a stop (SIGTERM) that still answers the
 * request in hand before serve returns. And the worker threads' path, in a
 * process of its own as a handler runs: a name-value pair whose declared
 * lengths sum past INT_MAX and a management record of an unknown type
 * (libfcgi 2.4.2 aborted on the first, leaked on the second) leave it
 * serving the next request and stopping cleanly.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "cases.h"
#include "fcgi_client.h"
#include "clock.h"
#include "fcgi.h"

/* The deadline test's bound: the loop's own wake is 500 ms later. */
#define ACCEPT_WAKE_BOUND_MS 450

/* --- the service under test ----------------------------------------------- */

/* A request that /later leaves open, answered by the deferrer thread. */
static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	fs_fcgi *held[8];
	int nheld;
} later = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, { 0 }, 0 };

static struct fs_fcgi_task tasks[64];
static int ntasks, served_setup, torn_down;

static int
setup(void *app)
{
	(void)app;
	served_setup = 1;
	return 2;
}

static void
teardown(void *app)
{
	(void)app;
	torn_down = 1;
}

static void
answer_later(void *arg)
{
	fs_fcgi *f = arg;

	fs_fcgi_answer(f, FS_HTTP_ACCEPTED, NULL, "{\"later\":true}", 14);
}

/* What /batch and /overdue leave: their loop's batch (below), which each round ends. */
static __thread struct fs_fcgi_batch tbatch;

/* What /round leaves for the end of its loop's round (each loop is a thread). */
static __thread fs_fcgi *round_held[64];
static __thread int round_n;

static void
round_end(void *ctx)
{
	char out[64];
	int n;

	(void)ctx;
	fs_fcgi_batch_round(&tbatch);
	for (int i = 0; i < round_n; i++) {
		n = snprintf(out, sizeof(out), "{\"round\":%d}", round_n);
		fs_fcgi_answer(round_held[i], FS_HTTP_OK, NULL, out, (size_t)n);
	}
	round_n = 0;
}

/* What /watch and /deadline leave open: answered when a pipe reads, or at a deadline. */
static int watch_pipe[2] = { -1, -1 };	/* the loop's */
static _Atomic int watch_wfd = -1;		/* its write end, for the test */
static _Atomic int watch_calls;

static void
watch_ready(void *ctx)
{
	fs_fcgi *f = ctx;
	char b[8];
	ssize_t n = read(watch_pipe[0], b, sizeof(b));

	watch_calls++;
	fs_fcgi_unwatch(watch_pipe[0]);
	watch_wfd = -1;
	close(watch_pipe[0]);
	close(watch_pipe[1]);
	watch_pipe[0] = watch_pipe[1] = -1;
	if (n > 0)
		fs_fcgi_answer(f, FS_HTTP_OK, NULL, "{\"watch\":\"readable\"}", 21);
	else
		fs_fcgi_answer(f, FS_HTTP_OK, NULL, "{\"watch\":\"deadline\"}", 21);
}

/* What /batch and /overdue leave in their loop's batch: "sent" to a pipe, answered by recv. */
static __thread int tbatch_pipe[2] = { -1, -1 };
static __thread int64_t tbatch_deadline;
static _Atomic int batch_wfd = -1;

static int
tbatch_send(void *ctx, void *const *items, size_t n, int *fds, int maxfds, int64_t *deadline_ms)
{
	(void)ctx;
	(void)items;
	(void)n;
	if (maxfds < 1 || pipe2(tbatch_pipe, O_NONBLOCK | O_CLOEXEC) != 0)
		return 0;
	fds[0] = tbatch_pipe[0];
	*deadline_ms = tbatch_deadline;
	batch_wfd = tbatch_pipe[1];
	return 1;
}

static void
tbatch_recv(void *ctx, void *const *items, size_t n)
{
	char b[8], out[64];
	int len, readable = tbatch_pipe[0] >= 0 && read(tbatch_pipe[0], b, sizeof(b)) > 0;

	(void)ctx;
	batch_wfd = -1;
	if (tbatch_pipe[0] >= 0) {
		close(tbatch_pipe[0]);
		close(tbatch_pipe[1]);
		tbatch_pipe[0] = tbatch_pipe[1] = -1;
	}
	len = snprintf(out, sizeof(out), "{\"batch\":%zu,\"by\":\"%s\"}", n,
	    readable ? "readable" : "deadline");
	for (size_t i = 0; i < n; i++)
		fs_fcgi_answer(items[i], FS_HTTP_OK, NULL, out, (size_t)len);
}

static void
handle(fs_fcgi *f, void *ctx)
{
	const char *uri = fs_fcgi_param(f, "DOCUMENT_URI"), *body;
	char out[5000];
	size_t len;
	int n;

	(void)ctx;
	if (uri != NULL && strcmp(uri, "/later") == 0) {
		pthread_mutex_lock(&later.mu);
		later.held[later.nheld++] = f;
		pthread_cond_signal(&later.cv);
		pthread_mutex_unlock(&later.mu);
		return; /* left open */
	}
	if (uri != NULL && strcmp(uri, "/round") == 0 && round_n < 64) {
		round_held[round_n++] = f;
		return; /* answered by round_end */
	}
	if (uri != NULL && (strcmp(uri, "/watch") == 0 || strcmp(uri, "/deadline") == 0)) {
		int64_t deadline = strcmp(uri, "/deadline") == 0 ? fs_clock_mono_ms() + 50 : 0;

		if (pipe2(watch_pipe, O_NONBLOCK | O_CLOEXEC) != 0 ||
		    fs_fcgi_watch(watch_pipe[0], deadline, watch_ready, f) != 0)
			fs_fcgi_answer(f, FS_HTTP_INTERNAL_ERROR, NULL, "{}", 2);
		else
			watch_wfd = watch_pipe[1];
		return; /* answered by watch_ready */
	}
	if (uri != NULL && (strcmp(uri, "/batch") == 0 || strcmp(uri, "/overdue") == 0)) {
		tbatch.send = tbatch_send;
		tbatch.recv = tbatch_recv;
		tbatch_deadline = strcmp(uri, "/overdue") == 0 ? fs_clock_mono_ms() + 50 : 0;
		fs_fcgi_batch_add(&tbatch, f);
		return; /* answered by tbatch_recv */
	}
	if (uri != NULL && strcmp(uri, "/twice") == 0) {
		fs_fcgi_answer(f, FS_HTTP_OK, NULL, "{\"n\":1}", 7);
		fs_fcgi_answer(f, FS_HTTP_OK, NULL, "{\"n\":2}", 7);
		return;
	}
	if (fs_fcgi_body_or_answer(f, &body, &len) != 0)
		return;
	n = snprintf(out, sizeof(out), "{\"uri\":\"%s\",\"x\":\"%s\",\"len\":%zu}", uri ? uri : "",
	    fs_fcgi_param(f, "HTTP_X") ? fs_fcgi_param(f, "HTTP_X") : "", len);
	fs_fcgi_answer(f, FS_HTTP_OK, NULL, out, (size_t)n);
}

/* Takes the next request /later left open and posts its answer to its loop. */
static void
post_one_later(void)
{
	fs_fcgi *f;

	pthread_mutex_lock(&later.mu);
	while (later.nheld == 0)
		pthread_cond_wait(&later.cv, &later.mu);
	f = later.held[0];
	memmove(later.held, later.held + 1, (size_t)--later.nheld * sizeof(later.held[0]));
	pthread_mutex_unlock(&later.mu);
	tasks[ntasks].run = answer_later;
	tasks[ntasks].arg = f;
	fs_fcgi_post(f, &tasks[ntasks++]);
}

static const struct fs_fcgi_service service = { "test-fcgi", setup, teardown, NULL, NULL, handle,
	NULL, 1, round_end };

static const struct fs_fcgi_service thread_service = { "test-fcgi-threads", setup, teardown, NULL,
	NULL, handle, NULL, 0, NULL };

static int serve_rc = -1;

static void *
serve(void *arg)
{
	(void)arg;
	static int app;

	serve_rc = fs_fcgi_serve(&service, &app);
	return NULL;
}

/* --- a FastCGI client ------------------------------------------------------ */

static char sock_path[108], thread_path[108];

static int
dial(void)
{
	return test_fcgi_dial(sock_path);
}

static size_t
record(unsigned char *out, int type, int id, const void *content, size_t len, size_t pad)
{
	out[0] = 1;
	out[1] = (unsigned char)type;
	out[2] = (unsigned char)(id >> 8);
	out[3] = (unsigned char)id;
	out[4] = (unsigned char)(len >> 8);
	out[5] = (unsigned char)len;
	out[6] = (unsigned char)pad;
	out[7] = 0;
	memcpy(out + 8, content, len);
	memset(out + 8 + len, 0, pad);
	return 8 + len + pad;
}

static size_t
pair(unsigned char *out, const char *name, const char *value)
{
	size_t n = strlen(name), v = strlen(value), o = 0;

	out[o++] = (unsigned char)n;
	out[o++] = (unsigned char)v;
	memcpy(out + o, name, n);
	memcpy(out + o + n, value, v);
	return o + n + v;
}

/* One nginx-shaped request: BEGIN (keep_conn), params in two records, body. */
static size_t
request(unsigned char *out, int id, int keep, const char *uri, const char *x, const char *body)
{
	unsigned char begin[8] = { 0, 1, (unsigned char)(keep ? 1 : 0), 0, 0, 0, 0, 0 }, p[512];
	size_t o = 0, n = 0, half;

	o += record(out + o, 1, id, begin, 8, 0);
	n += pair(p + n, "DOCUMENT_URI", uri);
	n += pair(p + n, "REQUEST_METHOD", "POST");
	n += pair(p + n, "HTTP_X", x);
	n += pair(p + n, "REQUEST_ID", "00ff");
	half = n / 2;
	o += record(out + o, 4, id, p, half, 3);
	o += record(out + o, 4, id, p + half, n - half, 0);
	o += record(out + o, 4, id, "", 0, 0);
	if (body[0] != '\0')
		o += record(out + o, 5, id, body, strlen(body), 5);
	o += record(out + o, 5, id, "", 0, 0);
	return o;
}

static void
send_all(int fd, const void *buf, size_t len, int bytewise)
{
	const unsigned char *p = buf;

	for (size_t off = 0; off < len;) {
		ssize_t n = write(fd, p + off, bytewise ? 1 : len - off);

		if (n <= 0) {
			perror("write");
			exit(2);
		}
		off += (size_t)n;
	}
}

static int
read_full(int fd, unsigned char *buf, size_t len)
{
	for (size_t off = 0; off < len;) {
		ssize_t n = read(fd, buf + off, len - off);

		if (n <= 0)
			return -1;
		off += (size_t)n;
	}
	return 0;
}

/*
 * Reads one answer: the STDOUT content into out (NUL-terminated) until
 * END_REQUEST; 0, or -1 when the stream ends first or the records are wrong.
 */
static int
answer_of(int fd, int id, char *out, size_t outlen)
{
	unsigned char h[8], c[65536 + 256];
	size_t have = 0, len, pad;

	for (;;) {
		if (read_full(fd, h, 8) != 0 || h[0] != 1)
			return -1;
		len = (size_t)h[4] << 8 | h[5];
		pad = h[6];
		if (read_full(fd, c, len + pad) != 0 || ((int)h[2] << 8 | h[3]) != id)
			return -1;
		if (h[1] == 3) /* END_REQUEST */
			break;
		if (h[1] != 6 || have + len >= outlen)
			return -1;
		memcpy(out + have, c, len);
		have += len;
	}
	out[have] = '\0';
	return 0;
}

static int
contains(const char *s, const char *part)
{
	return strstr(s, part) != NULL;
}

/* A listening socket at path; -1 when it cannot. */
static int
listen_at(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 64) != 0)
		return -1;
	return fd;
}

/* Reads until the other side closes; 0 when it did. */
static int
until_closed(int fd)
{
	char b[512];
	ssize_t n;

	while ((n = read(fd, b, sizeof(b))) > 0)
		;
	return n == 0 ? 0 : -1;
}

/* A process that serves thread_service on a new socket at thread_path, as spawn-fcgi starts one. */
static pid_t
threads_process(void)
{
	static int app;
	pid_t pid;
	int lfd;

	snprintf(thread_path, sizeof(thread_path), "/tmp/test-fcgi-threads.%ld.sock", (long)getpid());
	if ((lfd = listen_at(thread_path)) < 0) {
		perror("listen");
		exit(2);
	}
	if ((pid = fork()) == 0) {
		if (dup2(lfd, 0) != 0)
			_exit(2);
		close(lfd);
		exit(fs_fcgi_serve(&thread_service, &app));
	}
	close(lfd);
	return pid;
}

/*
 * The worker threads' path in a process of its own, as spawn-fcgi starts a
 * handler: hostile records on one connection, then a request on the next.
 */
static void
thread_workers(void)
{
	/* name and value lengths 0x7ffffff0 each: their sum is past INT_MAX */
	static const unsigned char huge[] = { 0xff, 0xff, 0xff, 0xf0, 0xff, 0xff, 0xff, 0xf0, 'N' };
	unsigned char begin[8] = { 0, 1, 0, 0, 0, 0, 0, 0 }, req[4096], head[16];
	char ans[8192];
	int fd, status;
	pid_t pid;
	size_t n;

	pid = threads_process();
	check(pid > 0, "a handler process with worker threads started");

	/* The process's first request is aborted before it is whole (a fuzz finding). */
	fd = test_fcgi_dial(thread_path);
	n = record(req, 1, 4, begin, 8, 0);
	n += record(req + n, 2, 4, "", 0, 0);
	send_all(fd, req, n, 0);
	check(answer_of(fd, 4, ans, sizeof(ans)) == 0 && ans[0] == '\0' && until_closed(fd) == 0,
	    "threads: a first request aborted before it was whole ends with no output");
	close(fd);

	fd = test_fcgi_dial(thread_path);
	n = record(req, 1, 1, begin, 8, 0);
	n += record(req + n, 4, 1, huge, sizeof(huge), 0);
	send_all(fd, req, n, 0);
	shutdown(fd, SHUT_WR);
	check(until_closed(fd) == 0 && waitpid(pid, &status, WNOHANG) == 0,
	    "threads: a pair whose lengths sum past INT_MAX closes its connection, not the process");
	close(fd);

	fd = test_fcgi_dial(thread_path);
	n = record(req, 11, 0, "", 0, 0); /* type 11: no such management record */
	send_all(fd, req, n, 0);
	check(read_full(fd, head, 16) == 0 && head[1] == 11 && head[2] == 0 && head[3] == 0 &&
		head[5] == 8 && head[8] == 11,
	    "threads: an unknown management record is answered FCGI_UNKNOWN_TYPE");
	n = request(req, 3, 1, "/now", "next", "body");
	send_all(fd, req, n, 0);
	check(answer_of(fd, 3, ans, sizeof(ans)) == 0 && contains(ans, "Status: 200 OK\r\n") &&
		contains(ans, "{\"uri\":\"/now\",\"x\":\"next\",\"len\":4}"),
	    "threads: the next request is answered");
	n = request(req, 6, 0, "/now", "kept", "");
	send_all(fd, req, n, 1);
	check(answer_of(fd, 6, ans, sizeof(ans)) == 0 && contains(ans, "\"x\":\"kept\""),
	    "threads: a second request on the kept connection, written a byte at a time");
	check(until_closed(fd) == 0, "threads: a request without FCGI_KEEP_CONN closes its connection");
	close(fd);

	/* More parameters than the parser keeps (nginx passes every header as one). */
	fd = test_fcgi_dial(thread_path);
	n = record(req, 1, 5, begin, 8, 0);
	for (int i = 0; i < 70; i++) {
		char name[16];
		unsigned char p[64];
		size_t len;

		snprintf(name, sizeof(name), "HTTP_X_%d", i);
		len = pair(p, i == 0 ? "REQUEST_METHOD" : name, i == 0 ? "POST" : "v");
		n += record(req + n, 4, 5, p, len, 0);
	}
	n += record(req + n, 4, 5, "", 0, 0);
	n += record(req + n, 5, 5, "", 0, 0);
	send_all(fd, req, n, 0);
	check(answer_of(fd, 5, ans, sizeof(ans)) == 0 &&
		contains(ans, "Status: 431 Request Header Fields Too Large\r\n") &&
		contains(ans, "\"HEADERS_TOO_LARGE\""),
	    "threads: parameters past the parser's limits: 431, not a request with some left out");
	close(fd);

	kill(pid, SIGTERM);
	check(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "threads: the process stops with 0 on SIGTERM (no abort, no leak reported)");
	unlink(thread_path);
}

/* A batch outside any loop: what its send and recv were given. */
struct direct {
	struct fs_fcgi_batch *b;
	int sends, recvs, give_fds, reenter, same;
	void *sent[FS_FCGI_BATCH_MAX];
	size_t nsent;
};

static int
direct_send(void *ctx, void *const *items, size_t n, int *fds, int maxfds, int64_t *deadline_ms)
{
	struct direct *d = ctx;

	(void)maxfds;
	d->sends++;
	d->nsent = n;
	memcpy(d->sent, items, n * sizeof(items[0]));
	*deadline_ms = 0;
	fds[0] = 0;
	return d->give_fds;
}

static void
direct_recv(void *ctx, void *const *items, size_t n)
{
	struct direct *d = ctx;

	d->recvs++;
	d->same = n == d->nsent && memcmp(items, d->sent, n * sizeof(items[0])) == 0;
	if (d->reenter)
		fs_fcgi_batch_end(d->b); /* an answer that uses the store again */
}

/* When a batch goes, and that it is answered in place where no loop can watch its replies. */
static void
check_batch_direct(void)
{
	static char items[FS_FCGI_BATCH_MAX];
	struct direct d = { .give_fds = 1 };
	struct fs_fcgi_batch b = { .send = direct_send, .recv = direct_recv, .ctx = &d };

	d.b = &b;
	fs_fcgi_batch_add(&b, &items[0]);
	fs_fcgi_batch_add(&b, &items[1]);
	check(d.sends == 0 && b.nqueued == 2, "a batch: what is taken waits for the round's end");
	fs_fcgi_batch_round(&b);
	check(d.sends == 1 && d.nsent == 2 && d.sent[0] == &items[0] && d.recvs == 1 && d.same &&
		b.nflight == 0 && b.nfds == 0,
	    "at the round's end it goes together; no loop to watch its replies: answered in place");
	d.give_fds = 0;
	for (int i = 0; i < FS_FCGI_BATCH_MAX; i++)
		fs_fcgi_batch_add(&b, &items[i]);
	check(d.sends == 2 && d.nsent == FS_FCGI_BATCH_MAX && d.recvs == 2 && d.same &&
		b.nqueued == 0,
	    "a full batch goes at once; nothing to wait for: answered at once");
	fs_fcgi_batch_round(&b);
	fs_fcgi_batch_end(&b);
	check(d.sends == 2 && d.recvs == 2, "an empty round sends nothing, an idle end answers nothing");
	d.reenter = 1;
	d.give_fds = 1;
	fs_fcgi_batch_add(&b, &items[2]);
	fs_fcgi_batch_round(&b);
	check(d.sends == 3 && d.recvs == 3 && d.same,
	    "a recv that ends the batch again (an answer using the store) runs once");
}

/* --- the cases ------------------------------------------------------------- */

static pthread_t server;
static int server_started, server_stopped;

/*
 * A new connection to the event loops, which start at the first one (the
 * worker threads' case forks, so it runs before any thread of this
 * process: it is the first case).
 */
static int
loop_dial(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int lfd;

	if (!server_started) {
		snprintf(sock_path, sizeof(sock_path), "/tmp/test-fcgi.%ld.sock", (long)getpid());
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock_path);
		unlink(sock_path);
		if ((lfd = socket(AF_UNIX, SOCK_STREAM, 0)) < 0 ||
		    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(lfd, 64) != 0 ||
		    dup2(lfd, 0) != 0) {
			perror("listen");
			exit(2);
		}
		close(lfd);
		pthread_create(&server, NULL, serve, NULL);
		server_started = 1;
	}
	return dial();
}

/* SIGTERM to the loops and their return (the server thread joined). */
static void
stop_server(void)
{
	if (!server_started || server_stopped)
		return;
	kill(getpid(), SIGTERM);
	pthread_join(server, NULL);
	server_stopped = 1;
	unlink(sock_path);
}

static void
test_thread_workers(void)
{
	thread_workers();
}

/* Two requests on one kept connection, the second written a byte at a time. */
static void
test_kept_connection(void)
{
	unsigned char req[16384];
	char ans[70000];
	int a = loop_dial();
	size_t n;

	n = request(req, 1, 1, "/now", "first", "hello");
	send_all(a, req, n, 0);
	check(answer_of(a, 1, ans, sizeof(ans)) == 0 && contains(ans, "Status: 200 OK\r\n") &&
		contains(ans, "Cache-Control: no-store\r\n") &&
		contains(ans, "{\"uri\":\"/now\",\"x\":\"first\",\"len\":5}"),
	    "an answer now: status, headers, params and body as sent");
	n = request(req, 2, 1, "/now", "second", "");
	send_all(a, req, n, 1);
	check(answer_of(a, 2, ans, sizeof(ans)) == 0 &&
		contains(ans, "{\"uri\":\"/now\",\"x\":\"second\",\"len\":0}"),
	    "a second request on the kept connection, written a byte at a time");
	close(a);
}

/* Answered later, from another thread, while other requests go on. */
static void
test_answered_later(void)
{
	unsigned char req[16384];
	char ans[70000];
	int a = loop_dial(), b = loop_dial();
	size_t n;

	n = request(req, 7, 1, "/later", "", "");
	send_all(b, req, n, 0);
	n = request(req, 3, 1, "/now", "meanwhile", "");
	send_all(a, req, n, 0);
	check(answer_of(a, 3, ans, sizeof(ans)) == 0 && contains(ans, "\"x\":\"meanwhile\""),
	    "a request left open holds no other");
	post_one_later();
	check(answer_of(b, 7, ans, sizeof(ans)) == 0 && contains(ans, "Status: 202 Accepted\r\n") &&
		contains(ans, "{\"later\":true}"),
	    "the open request is answered by the task posted to its loop");
	close(a);
	close(b);
}

/* Left for the end of the loop's round, whole or a byte at a time. */
static void
test_round_end(void)
{
	unsigned char req[16384];
	char ans[70000];
	int a = loop_dial();
	size_t n;

	n = request(req, 8, 1, "/round", "", "");
	send_all(a, req, n, 0);
	check(answer_of(a, 8, ans, sizeof(ans)) == 0 && contains(ans, "Status: 200 OK\r\n") &&
		contains(ans, "{\"round\":1}"),
	    "a request left for the round's end is answered there");
	n = request(req, 9, 1, "/round", "", "");
	send_all(a, req, n, 1);
	check(answer_of(a, 9, ans, sizeof(ans)) == 0 && contains(ans, "{\"round\":1}"),
	    "... also when it came a byte at a time over many rounds");
	close(a);
}

/* Left open until a descriptor the worker watches reads, or its deadline. */
static void
test_watched_descriptor(void)
{
	unsigned char req[16384];
	char ans[70000];
	int a = loop_dial();
	struct pollfd pfd = { .fd = a, .events = POLLIN };
	int64_t t0;
	size_t n;

	check(fs_fcgi_watch(0, 0, watch_ready, NULL) == -1,
	    "a thread that runs no loop cannot watch a descriptor");
	n = request(req, 13, 1, "/watch", "", "");
	send_all(a, req, n, 0);
	while (watch_wfd < 0)
		sched_yield();
	check(poll(&pfd, 1, 100) == 0, "a watched request stays open while the pipe is silent");
	check(write(watch_wfd, "x", 1) == 1, "the pipe written");
	check(answer_of(a, 13, ans, sizeof(ans)) == 0 && contains(ans, "{\"watch\":\"readable\"}") &&
		watch_calls == 1,
	    "... and is answered by ready once the descriptor reads, called once");
	t0 = fs_clock_mono_ms();
	n = request(req, 14, 1, "/deadline", "", "");
	send_all(a, req, n, 0);
	check(answer_of(a, 14, ans, sizeof(ans)) == 0 && contains(ans, "{\"watch\":\"deadline\"}") &&
		fs_clock_mono_ms() - t0 >= 50 && fs_clock_mono_ms() - t0 < ACCEPT_WAKE_BOUND_MS &&
		watch_calls == 2,
	    "a silent descriptor's ready runs at its deadline, before the loop's own wake");
	close(a);
}

/* A loop's batch: open until its replies read, or its deadline. */
static void
test_batch(void)
{
	unsigned char req[16384];
	char ans[70000];
	int a = loop_dial();
	struct pollfd pfd = { .fd = a, .events = POLLIN };
	int64_t t0;
	size_t n;

	check_batch_direct();
	n = request(req, 15, 1, "/batch", "", "");
	send_all(a, req, n, 0);
	while (batch_wfd < 0)
		sched_yield();
	check(poll(&pfd, 1, 100) == 0, "a request in a batch out stays open while the store is silent");
	check(write(batch_wfd, "x", 1) == 1, "the batch's pipe written");
	check(answer_of(a, 15, ans, sizeof(ans)) == 0 &&
		contains(ans, "{\"batch\":1,\"by\":\"readable\"}"),
	    "... and is answered by the batch's recv once its replies read");
	t0 = fs_clock_mono_ms();
	n = request(req, 16, 1, "/overdue", "", "");
	send_all(a, req, n, 0);
	check(answer_of(a, 16, ans, sizeof(ans)) == 0 &&
		contains(ans, "{\"batch\":1,\"by\":\"deadline\"}") &&
		fs_clock_mono_ms() - t0 >= 50 && fs_clock_mono_ms() - t0 < ACCEPT_WAKE_BOUND_MS,
	    "a batch whose replies never come is answered at its deadline");
	close(a);
}

/* A second answer is dropped: one END_REQUEST, the first body. */
static void
test_second_answer(void)
{
	unsigned char req[16384];
	char ans[70000];
	int a = loop_dial();
	size_t n;

	n = request(req, 4, 1, "/twice", "", "");
	send_all(a, req, n, 0);
	check(answer_of(a, 4, ans, sizeof(ans)) == 0 && contains(ans, "{\"n\":1}") &&
		!contains(ans, "{\"n\":2}"),
	    "a second answer to one request is dropped");
	close(a);
}

/* The probe, and the error body that carries nginx's request id. */
static void
test_probe_and_limit(void)
{
	unsigned char req[16384];
	char ans[70000], big[FS_FCGI_BODY_MAX + 2];
	int a = loop_dial();
	size_t n;

	n = request(req, 5, 1, "/healthz", "", "");
	send_all(a, req, n, 0);
	check(answer_of(a, 5, ans, sizeof(ans)) == 0 && contains(ans, "{\"status\":\"alive\"}"),
	    "/healthz is answered by the driver");
	memset(big, 'b', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	n = request(req, 6, 1, "/now", "", big);
	send_all(a, req, n, 0);
	check(answer_of(a, 6, ans, sizeof(ans)) == 0 &&
		contains(ans, "Status: 413 ") && contains(ans, "\"requestId\":\"00ff\""),
	    "a body over the limit: 413 with the request id");
	close(a);
}

/* Aborted before it was whole: ended with no output, the connection kept. */
static void
test_aborted(void)
{
	unsigned char begin[8] = { 0, 1, 1, 0, 0, 0, 0, 0 };
	unsigned char req[16384];
	char ans[70000];
	int a = loop_dial();
	size_t n;

	n = record(req, 1, 12, begin, 8, 0);
	n += record(req + n, 2, 12, "", 0, 0);
	send_all(a, req, n, 0);
	check(answer_of(a, 12, ans, sizeof(ans)) == 0 && ans[0] == '\0',
	    "a request aborted before it was handed over ends with no output");
	n = request(req, 17, 1, "/now", "kept", "");
	send_all(a, req, n, 0);
	check(answer_of(a, 17, ans, sizeof(ans)) == 0 && contains(ans, "\"x\":\"kept\""),
	    "... and its connection serves the next request");
	close(a);
}

/* A connection that goes away while its request is in hand. */
static void
test_closed_connection(void)
{
	unsigned char req[16384];
	char ans[70000];
	int a = loop_dial(), c = loop_dial();
	size_t n;

	n = request(req, 9, 1, "/later", "", "");
	send_all(c, req, n, 0);
	close(c);
	post_one_later();
	n = request(req, 8, 0, "/now", "after", "");
	send_all(a, req, n, 0);
	check(answer_of(a, 8, ans, sizeof(ans)) == 0 && contains(ans, "\"x\":\"after\""),
	    "the loop goes on after an answer to a closed connection");
	check(read(a, ans, 1) == 0, "a request without FCGI_KEEP_CONN closes its connection");
	close(a);
}

/* Stopping: no new connection, the request in hand still answered. */
static void
test_stopping(void)
{
	unsigned char req[16384];
	char ans[70000];
	int b = loop_dial();
	size_t n;

	n = request(req, 11, 1, "/later", "", "");
	send_all(b, req, n, 0);
	pthread_mutex_lock(&later.mu);
	while (later.nheld == 0)
		pthread_cond_wait(&later.cv, &later.mu);
	pthread_mutex_unlock(&later.mu);
	kill(getpid(), SIGTERM);
	while (!fs_fcgi_stopping())
		sched_yield();
	post_one_later();
	check(answer_of(b, 11, ans, sizeof(ans)) == 0 && contains(ans, "{\"later\":true}"),
	    "a stopping loop answers the request in hand");
	close(b);
	pthread_join(server, NULL);
	server_stopped = 1;
	unlink(sock_path);
	check(serve_rc == 0 && served_setup && torn_down, "serve returns 0 after teardown");
}

int
main(int argc, char **argv)
{
	/* In this order: the worker threads' case forks before any thread starts, stopping is last. */
	static const struct fs_test_case cases[] = {
		{ "thread_workers", test_thread_workers },
		{ "kept_connection", test_kept_connection },
		{ "answered_later", test_answered_later },
		{ "round_end", test_round_end },
		{ "watched_descriptor", test_watched_descriptor },
		{ "batch", test_batch },
		{ "second_answer", test_second_answer },
		{ "probe_and_limit", test_probe_and_limit },
		{ "aborted", test_aborted },
		{ "closed_connection", test_closed_connection },
		{ "stopping", test_stopping },
		{ NULL, NULL },
	};
	sigset_t stops;
	int rc;

	/* The stop signal reaches only the server's sigwait. */
	sigemptyset(&stops);
	sigaddset(&stops, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stops, NULL);
	signal(SIGPIPE, SIG_IGN); /* a handler that died fails a write, not the test */
	rc = fs_test_cases(argc, argv, cases);
	stop_server();
	return rc;
}

/*
 * FastCGI driver: serves the socket that spawn-fcgi hands over (fd 0) with
 * workers that each accept their own connections (no hand-off from an
 * acceptor), reads parameters and bounded bodies, writes JSON answers, and
 * on SIGTERM/SIGINT stops accepting, lets every request in hand finish,
 * then returns. No peer holds a worker: a request begun must be whole,
 * and an answer taken, within the read timeout, and a connection with
 * nothing of a request on it closes after the idle timeout (struct
 * fs_fcgi_limits); a stop closes every connection that carries no request
 * in the service's hands within FS_FCGI_STOP_GRACE_MS. A worker is either a thread that answers one request at a
 * time, or an event loop that holds any number of requests at once and
 * answers each when its work is done: the purchase handler's, whose
 * requests wait for the broker without holding a thread. Both parse with
 * lib/fcgiproto.
 */
#ifndef FS_FCGI_H
#define FS_FCGI_H

#include <stddef.h>
#include <stdint.h>

#include "http.h"

/* The largest request body any endpoint reads. */
#define FS_FCGI_BODY_MAX 4096

/*
 * How long a peer may take, the same for both kinds of worker; from
 * FLASHSALE_FCGI_READ_TIMEOUT_MS and FLASHSALE_FCGI_IDLE_TIMEOUT_MS
 * (lib/cfg: their defaults, ranges, and why idle outlasts nginx's
 * keep-alive). A connection is closed at most FS_FCGI_WAKE_MS after its
 * limit passed.
 */
struct fs_fcgi_limits {
	int read_ms;	/* from a request's first byte until it is whole; an answer's writes */
	int idle_ms;	/* a connection with nothing of a request on it */
};
/*
 * A stop (SIGTERM) gives a connection that is still receiving a request
 * this long to finish it; then it is closed. So a stopping process ends
 * within FS_FCGI_STOP_GRACE_MS + FS_FCGI_WAKE_MS (lib/fcgi_int.h) plus the
 * time its service takes with the requests in hand, whatever its peers do.
 */
#define FS_FCGI_STOP_GRACE_MS 1000

typedef struct fs_fcgi fs_fcgi;

enum fs_fcgi_body { FS_FCGI_BODY_OK, FS_FCGI_BODY_TOO_BIG, FS_FCGI_BODY_ERROR };

/*
 * A FastCGI program. setup runs once with the stop signals blocked (threads
 * it starts inherit that) and returns how many worker threads to run, or -1.
 * thread_new gives each worker its context (NULL hook: the app itself);
 * handle answers one request in that context; teardown runs last. ready,
 * when not NULL, checks in a worker's context that what the program needs
 * answers (0), or writes why not (-1): it serves GET /readyz.
 *
 * The driver itself answers /healthz (200: the process serves) and /readyz
 * (200, or 503 NOT_READY naming what is missing), counts every answer and
 * its duration (lib/metrics), and tags the log lines of a request with
 * nginx's request id (the REQUEST_ID parameter).
 */
struct fs_fcgi_service {
	const char *name;
	int (*setup)(void *app);
	void (*teardown)(void *app);
	void *(*thread_new)(void *app);
	void (*thread_free)(void *ctx);
	void (*handle)(fs_fcgi *, void *ctx);
	int (*ready)(void *ctx, char *why, size_t whylen);
	/*
	 * Non-zero: each worker is an event loop on its own thread, and handle
	 * may return before it answers; the request stays open until it is
	 * answered, from a task that any thread posts to its loop
	 * (fs_fcgi_post). It must not block for long: a loop's other requests
	 * wait. Zero: worker threads, one request per thread at a time.
	 */
	int event_loop;
	/*
	 * An event loop's service, when not NULL: runs in the worker's context
	 * after each round of the loop (the requests that one epoll_wait found
	 * ready have been handed to handle), so that handle can leave work for
	 * the round's requests to be done together (the purchase handler's
	 * Redis pipeline).
	 */
	void (*round_end)(void *ctx);
};

/* Work for an event loop: run(arg) on the loop's thread. */
struct fs_fcgi_task {
	void (*run)(void *arg);
	void *arg;
	/* the loop's own */
	fs_fcgi *fcgi;
	struct fs_fcgi_task *next;
};

/*
 * From any thread: runs task on the thread of the event loop that holds
 * the request f (a request that handle left open), with f's request id on
 * its log lines. The task's memory is the caller's until run starts.
 */
void fs_fcgi_post(fs_fcgi *f, struct fs_fcgi_task *task);

/*
 * On an event loop's own thread (in handle, round_end, a task or a watch's
 * ready): calls ready(ctx) on this loop whenever fd is readable (an answer
 * that the worker waits for without blocking: the purchase handler's Redis
 * pipeline), and once deadline_ms (fs_clock_mono_ms; 0: none) passed,
 * until fs_fcgi_unwatch(fd). 0, or -1 when this thread runs no loop or it
 * watches FS_FCGI_WATCH_MAX already (the caller waits in place).
 */
#define FS_FCGI_WATCH_MAX 16
int fs_fcgi_watch(int fd, int64_t deadline_ms, void (*ready)(void *ctx), void *ctx);
void fs_fcgi_unwatch(int fd);

/*
 * An event loop's batch: the requests a loop took since its last batch
 * went out wait in `queued`, and go together (one Redis pipeline) when the
 * loop's round ends and no batch is out, or at once when FS_FCGI_BATCH_MAX
 * wait. send writes them to the store and gives the descriptors whose
 * replies it awaits (at most maxfds; 0: none, the replies are in hand) and
 * until when (fs_clock_mono_ms; 0: no deadline); the loop serves other
 * events until one of them is readable or the deadline passed; then recv
 * reads the replies and answers every item. One batch out at a time: a
 * use of the store's connection in between ends it first
 * (fs_fcgi_batch_end), so that the replies are read in their order. The
 * items are the handler's (its pending requests); a batch lives in its
 * worker's context and is used on its loop's thread only.
 */
#define FS_FCGI_BATCH_MAX 64
struct fs_fcgi_batch {
	/* the handler's */
	int (*send)(void *ctx, void *const *items, size_t n, int *fds, int maxfds,
	    int64_t *deadline_ms);
	void (*recv)(void *ctx, void *const *items, size_t n);
	void *ctx;
	/* lib/fcgi's */
	void *queued[FS_FCGI_BATCH_MAX];
	size_t nqueued;
	void *flight[FS_FCGI_BATCH_MAX];
	size_t nflight;
	int fds[FS_FCGI_WATCH_MAX];
	int nfds;
};
/* Takes item into the next batch; a full one goes out now. */
void fs_fcgi_batch_add(struct fs_fcgi_batch *, void *item);
/* In the service's round_end: what was taken goes out now, unless a batch is out. */
void fs_fcgi_batch_round(struct fs_fcgi_batch *);
/* The batch out, if any, ended now: its replies read and its items answered (recv). */
void fs_fcgi_batch_end(struct fs_fcgi_batch *);
/* Tags this thread's log lines with request f's id from now on (NULL: untagged). */
void fs_fcgi_log_tag(fs_fcgi *f);

/* Serves until SIGTERM/SIGINT; returns the process exit status. */
int fs_fcgi_serve(const struct fs_fcgi_service *, void *app);
/*
 * Answers, in this thread and with ctx as the worker's context, the
 * requests of one FastCGI connection that is already open on fd, until it
 * ends or a request does not keep it; fd is closed. Returns how many
 * requests were answered, or -1. The same path as a worker's: the fuzz
 * harness of the parameter and body reader feeds it any bytes.
 */
int fs_fcgi_serve_connection(const struct fs_fcgi_service *, void *ctx, int fd);
/* True once SIGTERM or SIGINT arrived. */
int fs_fcgi_stopping(void);
/* A FastCGI parameter of the current request, or NULL. */
const char *fs_fcgi_param(fs_fcgi *, const char *name);
/* True when the method is the given one ("POST"). */
int fs_fcgi_method_is(fs_fcgi *, const char *method);
/* Reads the whole body (at most FS_FCGI_BODY_MAX bytes) into *body, NUL-terminated. */
enum fs_fcgi_body fs_fcgi_read_body(fs_fcgi *, const char **body, size_t *len);
/*
 * The same, answering a body too big (413) or unreadable (400) itself:
 * 0 when the caller has the body and goes on, -1 when it is answered.
 */
int fs_fcgi_body_or_answer(fs_fcgi *, const char **body, size_t *len);
/*
 * Answers with a JSON body. headers, when not NULL, are extra header lines,
 * each ending in "\r\n".
 */
void fs_fcgi_answer(fs_fcgi *, enum fs_http_status, const char *headers, const char *json, size_t len);
/* Answers with another content type (text/plain; version=0.0.4 ...), not cached. */
void fs_fcgi_answer_typed(fs_fcgi *, enum fs_http_status, const char *content_type,
    const char *body, size_t len);
/*
 * Answers {"error":...,"requestId":...}; extra as in fs_http_error_body.
 * The request id is nginx's, so a shopper's report finds the log lines.
 */
void fs_fcgi_error(fs_fcgi *, enum fs_http_error, const char *extra, const char *headers);

#endif

/*
 * Private to the lib/fcgi family (fcgi.c: serving and the request API;
 * fcgi_thread.c: worker threads, one request at a time each;
 * fcgi_loop.c: event loops). Both kinds of worker speak FastCGI through
 * lib/fcgiproto, the one parser of the protocol.
 */
#ifndef FS_FCGI_INT_H
#define FS_FCGI_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "fcgi.h"
#include "fcgiproto.h"

_Static_assert(FS_FCGIPROTO_BODY_MAX == FS_FCGI_BODY_MAX,
    "the parser keeps exactly the bodies the request API hands over");

/* Bytes read from a connection at once. */
#define FS_FCGI_READ_CHUNK 16384
/*
 * How long a worker blocks in accept or in a read before it looks at the
 * stop flag: the sockets' receive timeout, so that a stop needs no signal to
 * reach the threads (a signal could cut a request's reads short). An event
 * loop wakes as often to look at it, and at once when told (its wake fd).
 */
#define FS_FCGI_WAKE_MS 500

/*
 * One request, from either kind of worker: the parsed request and how its
 * answer (the CGI head and the body) goes out as records.
 */
struct fs_fcgi {
	const struct fs_fcgiproto_req *req;
	void (*send)(fs_fcgi *, const char *head, size_t hlen, const char *body, size_t blen);
	void *conn;		/* the worker's connection that holds it */
	int uncounted;		/* a health probe: kept out of the request metrics */
	int answered;
	const char *request_id; /* valid hex from nginx, or NULL */
	uint64_t start_ns;
};

struct fs_fcgi_loop;

/* fcgi.c: the limits in force (the settings once fs_fcgi_serve read them, else the defaults). */
const struct fs_fcgi_limits *fs_fcgi_limits(void);
/* fcgi.c: when the stop came (fs_clock_mono_ms), 0 while serving. */
int64_t fs_fcgi_stop_ms(void);
/*
 * When a connection in this state must be closed (fs_clock_mono_ms):
 * quiet (nothing of a request on it) since `since`, or receiving a
 * request (or writing an answer) since `since`; a stop shortens both to
 * FS_FCGI_STOP_GRACE_MS after it.
 */
int64_t fs_fcgi_conn_deadline(int quiet, int64_t since);

/* One worker: a thread that accepts its own connections, no hand-off. */
struct fs_fcgi_worker {
	pthread_t tid;
	void *ctx;
	const struct fs_fcgi_service *svc;
	struct fs_fcgi_loop *loop;	/* an event loop's state, or NULL */
};

/* fcgi.c: a request has arrived (counted busy, tagged, handed to the service), or is answered. */
void fs_fcgi_request_begin(struct fs_fcgi_worker *, fs_fcgi *);
void fs_fcgi_request_end(fs_fcgi *);

/* fcgi_thread.c: a worker thread's body; arg is its struct fs_fcgi_worker. */
void *fs_fcgi_thread_main(void *arg);

/* fcgi_loop.c: an event loop for worker w, its thread's body, a wake to see the stop flag. */
struct fs_fcgi_loop *fs_fcgi_loop_new(struct fs_fcgi_worker *w);
void fs_fcgi_loop_free(struct fs_fcgi_loop *);
void *fs_fcgi_loop_main(void *arg);
void fs_fcgi_loop_wake(struct fs_fcgi_loop *);

#endif

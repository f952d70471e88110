/*
 * Push driver: publishes a small JSON document to an nchan publisher
 * location, <base URL>/<channel>, with HTTP/1.1 POST over a unix socket
 * (or a loopback TCP connection) that is kept alive between messages. Every wait is bounded;
 * a failure costs a message, never the caller: the shopper's page can
 * always ask for the order's status.
 */
#ifndef FS_PUSH_H
#define FS_PUSH_H

#include <stddef.h>

#define FS_PUSH_URL_MAX		256	/* bytes in the base URL */
#define FS_PUSH_CHANNEL_MAX	64	/* bytes in a channel id: [A-Za-z0-9-] */
#define FS_PUSH_BODY_MAX	1024	/* bytes in a published document */
#define FS_PUSH_REPLY_MAX	4096	/* bytes of the publisher's answer we read */
#define FS_PUSH_TIMEOUT_MS	200	/* per connect, write and read */

#define FS_PUSH_PIPELINE	32	/* requests in flight on the connection */
/*
 * Background senders, each on a connection of its own: nginx answers a
 * publish for a channel that another worker owns only after a round trip
 * between its workers, so one pipelined connection waits out each of them
 * in turn; several at once let the workers batch that traffic (measured:
 * about half the nginx CPU per message, twice the rate).
 */
#define FS_PUSH_LANES		4
#define FS_PUSH_TARGETS_MAX	8	/* publishers, one per origin host */

/* One message for fs_push_publish_many. */
struct fs_push_msg {
	const char *channel;
	const char *body;
	size_t len;
};

typedef struct fs_push {
	char host[64];
	int port;
	char sock[108];	/* a unix socket path, or "" for TCP to host:port */
	char path[FS_PUSH_URL_MAX];
	int fd;		/* the kept-alive connection, or -1 */
	int enabled;	/* 0: an empty base URL, publishing does nothing */
	char in[FS_PUSH_REPLY_MAX + 1];	/* answers read but not yet parsed */
	size_t inlen;
	char *out;	/* FS_PUSH_PIPELINE rendered requests */
	int err;
	char errstr[128];
	/* The background senders (fs_push_start), started on first use. */
	struct fs_push_bg *bg;
	struct fs_push *next;	/* the next origin host's publisher, or NULL */
} fs_push;

/*
 * base: "unix:SOCKET:/PATH" (SOCKET an absolute path without ':'),
 * "http://HOST:PORT/PATH" with a numeric IPv4 host (loopback), or "" to
 * publish nothing; several of them separated by spaces (one per origin
 * host: a shopper's event stream may be held by any) publish every message
 * to each. NULL when a URL is malformed or too long (errstr
 * of the caller's choosing: err, errlen).
 */
fs_push *fs_push_new(const char *base, char *err, size_t errlen);
void fs_push_free(fs_push *);
/*
 * POSTs body (len bytes, JSON) to <base>/<channel>. 0 when the publisher
 * answered 2xx (or publishing is off), -1 with err/errstr set otherwise.
 */
int fs_push_publish(fs_push *, const char *channel, const char *body, size_t len);
/*
 * Publishes n messages, FS_PUSH_PIPELINE requests at a time on the one
 * connection (HTTP/1.1 pipelining), so that a batch costs a few round
 * trips, to every publisher of the list. Returns how many failed at the
 * publisher that failed most (0: all published), errstr the last reason.
 */
size_t fs_push_publish_many(fs_push *, const struct fs_push_msg *msgs, size_t n);
/*
 * The same in the background (each publisher of the list with its own
 * lanes), one batch at a time: fs_push_start copies
 * the n messages, shares them among FS_PUSH_LANES sender threads of the
 * fs_push's own (each with its connection; all but the first lane's are
 * closed after each batch, so an idle publisher holds one) and returns at once;
 * fs_push_finish waits for that batch and returns how many failed (errstr
 * the last reason; 0 when none was started). fs_push_start finishes a
 * batch still in flight first. When the copy or the threads cannot be
 * had, fs_push_start publishes at once instead.
 */
void fs_push_start(fs_push *, const struct fs_push_msg *msgs, size_t n);
size_t fs_push_finish(fs_push *);

/*
 * How full a publisher's memory is: nchan_stub_status, which the push
 * server answers at FS_PUSH_STATUS_PATH beside its publisher location.
 */
#define FS_PUSH_STATUS_PATH	"/_fs/push-status"
struct fs_push_memory {
	long long used;		/* bytes of nchan's shared memory in use */
	long long limit;	/* its nchan_max_reserved_memory */
	long long stored;	/* messages kept (order statuses) */
};
/*
 * Asks p's publisher (the first of a list; the others are p->next), on a
 * connection of its own that is closed after: 0, or -1 with err/errstr
 * set (no answer within FS_PUSH_TIMEOUT_MS a step, or not a status).
 */
int fs_push_memory_of(fs_push *, struct fs_push_memory *);
/* Where p's publisher listens: its socket's path, or HOST:PORT (for a label). */
void fs_push_where(const fs_push *, char *out, size_t outlen);

#endif

/*
 * The FastCGI protocol (version 1) of a responder, as bytes and nothing
 * else: a parser that takes whatever a connection delivered, in pieces of
 * any size, and says when a whole request (its parameters and its body)
 * has arrived; and the records of an answer. No I/O and no allocation: the
 * workers of lib/fcgi (threads and event loops) read and write, and every
 * buffer here has a fixed limit. It is the only FastCGI parser of the
 * handlers (libfcgi 2.4.2 aborted the process on a name-value pair whose
 * lengths sum past INT_MAX: TRAPS.md). A lower layer than lib/fcgi: it
 * includes nothing of the project.
 *
 * What it accepts, per the specification (fastcgi-archives, "FastCGI
 * Specification", version 1.0): records of version 1 with any padding;
 * FCGI_BEGIN_REQUEST for the responder role (another role is refused with
 * FCGI_END_REQUEST / FCGI_UNKNOWN_ROLE), its FCGI_KEEP_CONN flag;
 * FCGI_PARAMS over any number of records, name-value pairs with 1- or
 * 4-byte lengths that may be split anywhere across records, ended by an
 * empty FCGI_PARAMS; FCGI_STDIN likewise, ended by an empty FCGI_STDIN;
 * FCGI_ABORT_REQUEST; FCGI_GET_VALUES (answered with FCGI_GET_VALUES_RESULT
 * for FCGI_MAX_CONNS, FCGI_MAX_REQS and FCGI_MPXS_CONNS = 0, other names
 * left out); any other management record (request id 0) is answered
 * FCGI_UNKNOWN_TYPE. Multiplexing is off: a FCGI_BEGIN_REQUEST while a
 * request is in progress on the connection is answered FCGI_END_REQUEST /
 * FCGI_CANT_MPX_CONN for its id and otherwise ignored, as are records of
 * any request id other than the current one.
 */
#ifndef FS_FCGIPROTO_H
#define FS_FCGIPROTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The largest request body kept (lib/fcgi's FS_FCGI_BODY_MAX, checked equal there). */
#define FS_FCGIPROTO_BODY_MAX 4096
/* The most parameters, and bytes of their names and values, per request. */
#define FS_FCGIPROTO_PARAMS_MAX 64
#define FS_FCGIPROTO_PARAM_BYTES 8192
/* The most management answers waiting to be written at once, in bytes. */
#define FS_FCGIPROTO_REPLY_MAX 512

enum fs_fcgiproto_event {
	FS_FCGIPROTO_MORE,	/* everything given was used; feed more */
	FS_FCGIPROTO_REQUEST,	/* a whole request arrived (fs_fcgiproto_req) */
	FS_FCGIPROTO_ABORT,	/* FCGI_ABORT_REQUEST for the request in progress */
	FS_FCGIPROTO_REPLY,	/* management answers to send (reply, reply_len) */
	FS_FCGIPROTO_ERROR	/* a protocol violation (why): close the connection */
};

/* One parameter: both NUL-terminated, inside the request's own storage. */
struct fs_fcgiproto_param {
	const char *name;
	const char *value;
};

/* The request that has arrived; valid until fs_fcgiproto_done. */
struct fs_fcgiproto_req {
	uint16_t id;
	int keep_conn;		/* FCGI_KEEP_CONN: the connection stays open after it */
	struct fs_fcgiproto_param params[FS_FCGIPROTO_PARAMS_MAX];
	size_t nparams;
	int params_truncated;	/* some did not fit (left out, not an error) */
	char body[FS_FCGIPROTO_BODY_MAX + 1];	/* NUL-terminated */
	size_t body_len;
	int body_too_big;	/* more than FS_FCGIPROTO_BODY_MAX came: body is the start */
};

/* private: a stream of name-value pairs being read, in pieces of any size */
struct fs_fcgiproto_pairs {
	unsigned char len[8];	/* the length bytes of the pair read so far */
	size_t len_have;
	uint32_t name_len, value_len;
	uint32_t left;		/* bytes of the name or value still to come */
	int phase;		/* lengths, name, value */
	int keep;		/* stored (name NUL value NUL at start), or skipped */
	size_t start, used;	/* where the pair begins in its storage; storage in use */
};

/*
 * A connection's parser. Its state is private to lib/fcgiproto.c; callers
 * read only req (after FS_FCGIPROTO_REQUEST), reply/reply_len (after
 * FS_FCGIPROTO_REPLY) and why (after FS_FCGIPROTO_ERROR).
 */
struct fs_fcgiproto {
	struct fs_fcgiproto_req req;
	char reply[FS_FCGIPROTO_REPLY_MAX];
	size_t reply_len;
	const char *why;
	/* private */
	int state;		/* reading a header, content, padding; or dead */
	unsigned char head[8];
	size_t head_len;
	unsigned type;		/* the current record's */
	uint16_t rec_id;
	int take;		/* what the current record's content is for */
	size_t content_left, padding_left;
	unsigned char body8[8];	/* a BEGIN_REQUEST's body being read */
	size_t body8_len;
	int in_request;		/* BEGIN_REQUEST accepted, request not yet done */
	int params_done, stdin_done, aborted;
	uint16_t ended[8];	/* ids of requests ended or refused lately (0: none) */
	size_t ended_next;
	struct fs_fcgiproto_pairs params;	/* the request's FCGI_PARAMS stream */
	char pbytes[FS_FCGIPROTO_PARAM_BYTES];	/* its names and values */
	struct fs_fcgiproto_pairs values;	/* a FCGI_GET_VALUES record's names */
	char vbytes[32];
	unsigned asked;		/* the variables that FCGI_GET_VALUES asked for */
};

void fs_fcgiproto_init(struct fs_fcgiproto *);
/*
 * Parses up to len bytes of buf; *used says how many it took (all of them
 * unless it stops at an event). Call again with the rest. After
 * FS_FCGIPROTO_REQUEST, further calls parse what comes next (an abort,
 * management records, a refused BEGIN_REQUEST) until fs_fcgiproto_done.
 * After FS_FCGIPROTO_REPLY the caller sends reply (reply_len bytes) before
 * it feeds again. After FS_FCGIPROTO_ERROR the parser is done for.
 */
enum fs_fcgiproto_event fs_fcgiproto_feed(struct fs_fcgiproto *, const void *buf, size_t len,
    size_t *used);
/*
 * True when nothing of a record or of a request is in progress: all that
 * came was whole, and every request it began is done (the connection is
 * idle, not waiting for the rest of something).
 */
int fs_fcgiproto_quiet(const struct fs_fcgiproto *);
/* The request is answered: the parser takes the next FCGI_BEGIN_REQUEST. */
void fs_fcgiproto_done(struct fs_fcgiproto *);
/* The value of a parameter of the request, or NULL. */
const char *fs_fcgiproto_param(const struct fs_fcgiproto_req *, const char *name);
/*
 * Writes into out the records that answer request id: data (the CGI
 * headers and the body) as FCGI_STDOUT records of at most 65535 bytes of
 * content each padded to a multiple of 8, an empty FCGI_STDOUT, and
 * FCGI_END_REQUEST (appStatus 0, FCGI_REQUEST_COMPLETE). The number of
 * bytes written, or -1 (nothing usable) when out is too small;
 * fs_fcgiproto_answer_size tells how much is needed.
 */
ssize_t fs_fcgiproto_answer(uint16_t id, const void *data, size_t len, void *out, size_t outlen);
size_t fs_fcgiproto_answer_size(size_t len);

#endif

/*
 * The FastCGI responder protocol as bytes (see fcgiproto.h). The parser is
 * a state machine over the record framing (header, content, padding); what
 * a record's content is for is decided once, from its header, and the
 * name-value pairs of FCGI_PARAMS are a second machine that carries over
 * from one record to the next, so any split of the input reads the same.
 *
 * Choices the specification leaves open:
 * - An event is returned as soon as the content of the record that causes
 *   it is read; its padding is skipped by the next call.
 * - Each management answer is returned on its own (FS_FCGIPROTO_REPLY),
 *   so none waits behind a request and the buffer always holds it.
 * - An aborted request is never delivered; the caller answers the abort
 *   (fs_fcgiproto_answer) and calls fs_fcgiproto_done.
 * - Between requests, PARAMS, STDIN or ABORT_REQUEST for an id never begun
 *   is an error (the specification would ignore it); for the ids of the
 *   last requests ended or refused it is ignored, as late records are.
 * - A FCGI_PARAMS stream that ends inside a name-value pair is an error; a
 *   FCGI_GET_VALUES record that does is answered for its whole pairs.
 */
#include "config.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "fcgiproto.h"

/* Record types and values of the specification (section 8). */
enum {
	FCGI_VERSION_1 = 1,
	FCGI_BEGIN_REQUEST = 1,
	FCGI_ABORT_REQUEST = 2,
	FCGI_END_REQUEST = 3,
	FCGI_PARAMS = 4,
	FCGI_STDIN = 5,
	FCGI_STDOUT = 6,
	FCGI_GET_VALUES = 9,
	FCGI_GET_VALUES_RESULT = 10,
	FCGI_UNKNOWN_TYPE = 11,
	FCGI_RESPONDER = 1,
	FCGI_KEEP_CONN = 1,
	FCGI_REQUEST_COMPLETE = 0,
	FCGI_CANT_MPX_CONN = 1,
	FCGI_UNKNOWN_ROLE = 3
};

#define HEADER_LEN	   8
#define CONTENT_MAX	   65535
#define END_REQUEST_LEN	   16

enum { ST_HEADER, ST_CONTENT, ST_PADDING, ST_DEAD };

/* What the current record's content is for. */
enum {
	TAKE_SKIP,	 /* nothing: another id's, or a type a responder ignores */
	TAKE_BEGIN,	 /* a BEGIN_REQUEST that may start a request */
	TAKE_REFUSE,	 /* a BEGIN_REQUEST while busy: FCGI_CANT_MPX_CONN */
	TAKE_PARAMS,	 /* FCGI_PARAMS of the request */
	TAKE_PARAMS_END, /* the empty FCGI_PARAMS */
	TAKE_STDIN,	 /* FCGI_STDIN of the request */
	TAKE_STDIN_END,	 /* the empty FCGI_STDIN */
	TAKE_ABORT,	 /* FCGI_ABORT_REQUEST of the request */
	TAKE_VALUES,	 /* FCGI_GET_VALUES */
	TAKE_UNKNOWN	 /* a management record of another type: FCGI_UNKNOWN_TYPE */
};

enum { PAIR_LENGTHS, PAIR_NAME, PAIR_VALUE };
enum pair_step { PAIR_MORE, PAIR_KEPT, PAIR_SKIPPED };

/* The variables FCGI_GET_VALUES may ask for, in the order they are answered. */
static const struct {
	const char *name, *value;
} variables[] = {
	{ "FCGI_MAX_CONNS", "1024" },
	{ "FCGI_MAX_REQS", "1024" },
	{ "FCGI_MPXS_CONNS", "0" },
};

/* The longest FCGI_GET_VALUES_RESULT: every variable once (57 bytes), padded. */
#define VALUES_RESULT_MAX 72
_Static_assert(FS_FCGIPROTO_REPLY_MAX >= VALUES_RESULT_MAX, "a reply fits an empty reply buffer");

static size_t
padding_of(size_t content_len)
{
	return (8 - content_len % 8) % 8;
}

static void
put_header(unsigned char *h, unsigned type, uint16_t id, size_t content_len, size_t padding_len)
{
	h[0] = FCGI_VERSION_1;
	h[1] = (unsigned char)type;
	h[2] = (unsigned char)(id >> 8);
	h[3] = (unsigned char)id;
	h[4] = (unsigned char)(content_len >> 8);
	h[5] = (unsigned char)content_len;
	h[6] = (unsigned char)padding_len;
	h[7] = 0;
}

/* A record with an 8-byte body: END_REQUEST and UNKNOWN_TYPE; 16 bytes. */
static size_t
put_record8(unsigned char *out, unsigned type, uint16_t id, const unsigned char body[8])
{
	put_header(out, type, id, 8, 0);
	memcpy(out + HEADER_LEN, body, 8);
	return HEADER_LEN + 8;
}

static size_t
put_end_request(unsigned char *out, uint16_t id, unsigned protocol_status)
{
	const unsigned char body[8] = { 0, 0, 0, 0, (unsigned char)protocol_status, 0, 0, 0 };

	return put_record8(out, FCGI_END_REQUEST, id, body);
}

/* Replies are sent as soon as a record asks for one, so one always fits. */
static enum fs_fcgiproto_event
reply_end_request(struct fs_fcgiproto *p, uint16_t id, unsigned protocol_status)
{
	p->reply_len = put_end_request((unsigned char *)p->reply, id, protocol_status);
	return FS_FCGIPROTO_REPLY;
}

static size_t
put_pair(unsigned char *out, const char *name, const char *value)
{
	size_t n = strlen(name), v = strlen(value);

	/* The variables' names and values are short: 1-byte lengths. */
	out[0] = (unsigned char)n;
	out[1] = (unsigned char)v;
	memcpy(out + 2, name, n);
	memcpy(out + 2 + n, value, v);
	return 2 + n + v;
}

static enum fs_fcgiproto_event
reply_values(struct fs_fcgiproto *p)
{
	unsigned char *out = (unsigned char *)p->reply;
	size_t len = 0, pad;

	for (size_t i = 0; i < sizeof(variables) / sizeof(variables[0]); i++)
		if (p->asked & 1u << i)
			len += put_pair(out + HEADER_LEN + len, variables[i].name,
			    variables[i].value);
	pad = padding_of(len);
	memset(out + HEADER_LEN + len, 0, pad);
	put_header(out, FCGI_GET_VALUES_RESULT, 0, len, pad);
	p->reply_len = HEADER_LEN + len + pad;
	return FS_FCGIPROTO_REPLY;
}

static enum fs_fcgiproto_event
reply_unknown_type(struct fs_fcgiproto *p)
{
	const unsigned char body[8] = { (unsigned char)p->type, 0, 0, 0, 0, 0, 0, 0 };

	p->reply_len = put_record8((unsigned char *)p->reply, FCGI_UNKNOWN_TYPE, 0, body);
	return FS_FCGIPROTO_REPLY;
}

/* A name-value length: 1 byte, or 4 with the top bit set (section 3.4). */
static size_t
length_size(const unsigned char *b)
{
	return b[0] & 0x80 ? 4 : 1;
}

static uint32_t
length_value(const unsigned char *b)
{
	if (!(b[0] & 0x80))
		return b[0];
	return (uint32_t)(b[0] & 0x7f) << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

/* True once both lengths of the pair have been read. */
static int
lengths_read(const struct fs_fcgiproto_pairs *pp)
{
	size_t n1;

	if (pp->len_have == 0)
		return 0;
	n1 = length_size(pp->len);
	return pp->len_have > n1 && pp->len_have == n1 + length_size(pp->len + n1);
}

static void
pairs_reset(struct fs_fcgiproto_pairs *pp)
{
	memset(pp, 0, sizeof(*pp));
}

/* True between two pairs: a stream may end there and nowhere else. */
static int
pairs_between(const struct fs_fcgiproto_pairs *pp)
{
	return pp->phase == PAIR_LENGTHS && pp->len_have == 0;
}

/*
 * Takes bytes of a pair stream until a pair is whole or the input is used
 * up (*took: how many). A pair is stored (name NUL value NUL from
 * store + start) when may_keep and it fits what is left of cap; otherwise
 * its bytes are skipped. The lengths are never added up, so any claim up
 * to 2^31 - 1 only costs skipping.
 */
static enum pair_step
pairs_take(struct fs_fcgiproto_pairs *pp, char *store, size_t cap, int may_keep,
    const unsigned char *in, size_t n, size_t *took)
{
	size_t i = 0, room, k;

	for (;;) {
		if (pp->phase == PAIR_NAME && pp->left == 0) {
			if (pp->keep)
				store[pp->used++] = '\0';
			pp->phase = PAIR_VALUE;
			pp->left = pp->value_len;
		}
		if (pp->phase == PAIR_VALUE && pp->left == 0) {
			if (pp->keep)
				store[pp->used++] = '\0';
			pp->phase = PAIR_LENGTHS;
			pp->len_have = 0;
			*took = i;
			return pp->keep ? PAIR_KEPT : PAIR_SKIPPED;
		}
		if (i == n) {
			*took = i;
			return PAIR_MORE;
		}
		if (pp->phase == PAIR_LENGTHS) {
			pp->len[pp->len_have++] = in[i++];
			if (!lengths_read(pp))
				continue;
			pp->name_len = length_value(pp->len);
			pp->value_len = length_value(pp->len + length_size(pp->len));
			room = cap - pp->used;
			pp->keep = may_keep && pp->name_len < room &&
			    pp->value_len < room - pp->name_len - 1;
			pp->start = pp->used;
			pp->phase = PAIR_NAME;
			pp->left = pp->name_len;
			continue;
		}
		k = n - i < pp->left ? n - i : pp->left;
		if (pp->keep) {
			memcpy(store + pp->used, in + i, k);
			pp->used += k;
		}
		i += k;
		pp->left -= (uint32_t)k;
	}
}

static void
take_params(struct fs_fcgiproto *p, const unsigned char *in, size_t n)
{
	struct fs_fcgiproto_req *r = &p->req;
	const char *name;
	size_t took;

	while (n > 0) {
		switch (pairs_take(&p->params, p->pbytes, sizeof(p->pbytes),
		    r->nparams < FS_FCGIPROTO_PARAMS_MAX, in, n, &took)) {
		case PAIR_KEPT:
			name = p->pbytes + p->params.start;
			r->params[r->nparams].name = name;
			r->params[r->nparams].value = name + p->params.name_len + 1;
			r->nparams++;
			break;
		case PAIR_SKIPPED:
			r->params_truncated = 1;
			break;
		case PAIR_MORE:
			return;
		}
		in += took;
		n -= took;
	}
}

/* Names longer than any variable's are skipped: they are not asked for. */
static void
take_values(struct fs_fcgiproto *p, const unsigned char *in, size_t n)
{
	size_t took;

	while (n > 0) {
		if (pairs_take(&p->values, p->vbytes, sizeof(p->vbytes), 1, in, n, &took) ==
		    PAIR_KEPT) {
			for (size_t i = 0; i < sizeof(variables) / sizeof(variables[0]); i++)
				if (strcmp(p->vbytes, variables[i].name) == 0)
					p->asked |= 1u << i;
			p->values.used = 0;
		}
		in += took;
		n -= took;
	}
}

static void
take_stdin(struct fs_fcgiproto *p, const unsigned char *in, size_t n)
{
	struct fs_fcgiproto_req *r = &p->req;
	size_t k = FS_FCGIPROTO_BODY_MAX - r->body_len;

	if (n > k)
		r->body_too_big = 1;
	else
		k = n;
	memcpy(r->body + r->body_len, in, k);
	r->body_len += k;
	r->body[r->body_len] = '\0';
}

static void
take_content(struct fs_fcgiproto *p, const unsigned char *in, size_t n)
{
	switch (p->take) {
	case TAKE_BEGIN:
		memcpy(p->body8 + p->body8_len, in, n);
		p->body8_len += n;
		break;
	case TAKE_PARAMS:
		take_params(p, in, n);
		break;
	case TAKE_STDIN:
		take_stdin(p, in, n);
		break;
	case TAKE_VALUES:
		take_values(p, in, n);
		break;
	default:
		break;
	}
}

static int
ended_lately(const struct fs_fcgiproto *p, uint16_t id)
{
	for (size_t i = 0; i < sizeof(p->ended) / sizeof(p->ended[0]); i++)
		if (p->ended[i] == id)
			return 1;
	return 0;
}

/*
 * Ids of requests ended or refused lately: their records still on the way
 * (an abort that crossed the answer, the body of a refused request) are
 * ignored, where a record of an id never begun is an error.
 */
static void
remember_ended(struct fs_fcgiproto *p, uint16_t id)
{
	if (ended_lately(p, id))
		return;
	p->ended[p->ended_next] = id;
	p->ended_next = (p->ended_next + 1) % (sizeof(p->ended) / sizeof(p->ended[0]));
}

/* What a record of the request in progress is for; NULL or why it is refused. */
static const char *
request_record(struct fs_fcgiproto *p, size_t content_len)
{
	if (p->aborted) {
		p->take = TAKE_SKIP;
		return NULL;
	}
	switch (p->type) {
	case FCGI_PARAMS:
		if (p->params_done)
			return "FCGI_PARAMS after the empty one";
		if (content_len > 0) {
			p->take = TAKE_PARAMS;
			return NULL;
		}
		if (!pairs_between(&p->params))
			return "FCGI_PARAMS end inside a name-value pair";
		p->take = TAKE_PARAMS_END;
		return NULL;
	case FCGI_STDIN:
		if (p->stdin_done)
			return "FCGI_STDIN after the empty one";
		p->take = content_len > 0 ? TAKE_STDIN : TAKE_STDIN_END;
		return NULL;
	default:
		p->take = TAKE_ABORT;
		return NULL;
	}
}

/* Reads a record's header: what its content is for; NULL or why the stream is refused. */
static const char *
start_record(struct fs_fcgiproto *p)
{
	const unsigned char *h = p->head;
	size_t content_len = (size_t)h[4] << 8 | h[5];

	if (h[0] != FCGI_VERSION_1)
		return "not FastCGI version 1";
	p->type = h[1];
	p->rec_id = (uint16_t)(h[2] << 8 | h[3]);
	p->content_left = content_len;
	p->padding_left = h[6];
	p->take = TAKE_SKIP;
	if (p->rec_id == 0) {
		if (p->type == FCGI_BEGIN_REQUEST)
			return "FCGI_BEGIN_REQUEST with request id 0";
		if (p->type == FCGI_GET_VALUES) {
			pairs_reset(&p->values);
			p->asked = 0;
			p->take = TAKE_VALUES;
		} else
			p->take = TAKE_UNKNOWN;
		return NULL;
	}
	switch (p->type) {
	case FCGI_BEGIN_REQUEST:
		if (content_len != 8)
			return "FCGI_BEGIN_REQUEST body not 8 bytes";
		if (p->in_request && p->rec_id == p->req.id)
			return "FCGI_BEGIN_REQUEST for the request in progress";
		p->body8_len = 0;
		p->take = p->in_request ? TAKE_REFUSE : TAKE_BEGIN;
		return NULL;
	case FCGI_PARAMS:
	case FCGI_STDIN:
	case FCGI_ABORT_REQUEST:
		if (p->in_request && p->rec_id == p->req.id)
			return request_record(p, content_len);
		if (!p->in_request && !ended_lately(p, p->rec_id))
			return "a request record before its FCGI_BEGIN_REQUEST";
		return NULL;
	default:
		return NULL;
	}
}

static void
begin_request(struct fs_fcgiproto *p)
{
	memset(&p->req, 0, sizeof(p->req));
	p->req.id = p->rec_id;
	p->req.keep_conn = (p->body8[2] & FCGI_KEEP_CONN) != 0;
	p->in_request = 1;
	p->params_done = p->stdin_done = p->aborted = 0;
	pairs_reset(&p->params);
}

/* The request is whole once both streams have ended. */
static enum fs_fcgiproto_event
stream_ended(struct fs_fcgiproto *p, int *done)
{
	*done = 1;
	return p->params_done && p->stdin_done ? FS_FCGIPROTO_REQUEST : FS_FCGIPROTO_MORE;
}

/* Acts on a record whose content has all been read: an event, or MORE. */
static enum fs_fcgiproto_event
end_record(struct fs_fcgiproto *p)
{
	switch (p->take) {
	case TAKE_BEGIN:
		if (((unsigned)p->body8[0] << 8 | p->body8[1]) != FCGI_RESPONDER) {
			remember_ended(p, p->rec_id);
			return reply_end_request(p, p->rec_id, FCGI_UNKNOWN_ROLE);
		}
		begin_request(p);
		return FS_FCGIPROTO_MORE;
	case TAKE_REFUSE:
		remember_ended(p, p->rec_id);
		return reply_end_request(p, p->rec_id, FCGI_CANT_MPX_CONN);
	case TAKE_PARAMS_END:
		return stream_ended(p, &p->params_done);
	case TAKE_STDIN_END:
		return stream_ended(p, &p->stdin_done);
	case TAKE_ABORT:
		p->aborted = 1;
		return FS_FCGIPROTO_ABORT;
	case TAKE_VALUES:
		return reply_values(p);
	case TAKE_UNKNOWN:
		return reply_unknown_type(p);
	default:
		return FS_FCGIPROTO_MORE;
	}
}

void
fs_fcgiproto_init(struct fs_fcgiproto *p)
{
	memset(p, 0, sizeof(*p));
	p->state = ST_HEADER;
	p->take = TAKE_SKIP;
}

enum fs_fcgiproto_event
fs_fcgiproto_feed(struct fs_fcgiproto *p, const void *buf, size_t len, size_t *used)
{
	const unsigned char *in = buf;
	enum fs_fcgiproto_event ev;
	size_t pos = 0, k;

	p->reply_len = 0;
	for (;;) {
		switch (p->state) {
		case ST_HEADER:
			if (pos == len)
				goto more;
			k = HEADER_LEN - p->head_len;
			if (k > len - pos)
				k = len - pos;
			memcpy(p->head + p->head_len, in + pos, k);
			p->head_len += k;
			pos += k;
			if (p->head_len < HEADER_LEN)
				goto more;
			p->head_len = 0;
			if ((p->why = start_record(p)) != NULL) {
				p->state = ST_DEAD;
				*used = pos;
				return FS_FCGIPROTO_ERROR;
			}
			p->state = ST_CONTENT;
			break;
		case ST_CONTENT:
			if (p->content_left > 0) {
				if (pos == len)
					goto more;
				k = len - pos < p->content_left ? len - pos : p->content_left;
				take_content(p, in + pos, k);
				p->content_left -= k;
				pos += k;
				if (p->content_left > 0)
					goto more;
			}
			p->state = ST_PADDING;
			if ((ev = end_record(p)) != FS_FCGIPROTO_MORE) {
				*used = pos;
				return ev;
			}
			break;
		case ST_PADDING:
			k = len - pos < p->padding_left ? len - pos : p->padding_left;
			p->padding_left -= k;
			pos += k;
			if (p->padding_left > 0)
				goto more;
			p->state = ST_HEADER;
			break;
		default:
			*used = 0;
			return FS_FCGIPROTO_ERROR;
		}
	}
more:
	*used = pos;
	return FS_FCGIPROTO_MORE;
}

int
fs_fcgiproto_quiet(const struct fs_fcgiproto *p)
{
	if (p->in_request)
		return 0;
	return (p->state == ST_HEADER && p->head_len == 0) ||
	    (p->state == ST_PADDING && p->padding_left == 0);
}

void
fs_fcgiproto_done(struct fs_fcgiproto *p)
{
	if (!p->in_request)
		return;
	remember_ended(p, p->req.id);
	p->in_request = 0;
	/* The rest of a record of this request is no longer its. */
	switch (p->take) {
	case TAKE_PARAMS:
	case TAKE_PARAMS_END:
	case TAKE_STDIN:
	case TAKE_STDIN_END:
	case TAKE_ABORT:
		p->take = TAKE_SKIP;
		break;
	default:
		break;
	}
}

const char *
fs_fcgiproto_param(const struct fs_fcgiproto_req *r, const char *name)
{
	for (size_t i = 0; i < r->nparams; i++)
		if (strcmp(r->params[i].name, name) == 0)
			return r->params[i].value;
	return NULL;
}

size_t
fs_fcgiproto_answer_size(size_t len)
{
	size_t rest = len % CONTENT_MAX;

	/* No buffer is that large; the sum below cannot overflow under it. */
	if (len > SIZE_MAX / 2)
		return SIZE_MAX;
	return len / CONTENT_MAX * (HEADER_LEN + CONTENT_MAX + padding_of(CONTENT_MAX)) +
	    (rest > 0 ? HEADER_LEN + rest + padding_of(rest) : 0) + HEADER_LEN + END_REQUEST_LEN;
}

ssize_t
fs_fcgiproto_answer(uint16_t id, const void *data, size_t len, void *out, size_t outlen)
{
	const unsigned char *d = data;
	unsigned char *o = out;
	size_t need = fs_fcgiproto_answer_size(len), off = 0, k, pad;

	if (need > outlen || need > (size_t)SSIZE_MAX)
		return -1;
	for (size_t sent = 0; sent < len; sent += k) {
		k = len - sent < CONTENT_MAX ? len - sent : CONTENT_MAX;
		pad = padding_of(k);
		put_header(o + off, FCGI_STDOUT, id, k, pad);
		memcpy(o + off + HEADER_LEN, d + sent, k);
		memset(o + off + HEADER_LEN + k, 0, pad);
		off += HEADER_LEN + k + pad;
	}
	put_header(o + off, FCGI_STDOUT, id, 0, 0);
	off += HEADER_LEN;
	off += put_end_request(o + off, id, FCGI_REQUEST_COMPLETE);
	return (ssize_t)off;
}

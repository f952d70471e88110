/*
 * libFuzzer harness of the FastCGI responder parser (lib/fcgiproto). The
 * input is three bytes of driving, then the byte stream a web server would
 * send on one connection. The stream is fed twice to fresh parsers: whole,
 * then in pieces whose sizes come from the first two bytes (0: one byte at
 * a time); the third says when done() is called (bit 0: after a request,
 * bit 1: after an abort). Every call's answer is checked against the
 * header's promises, and both feedings must say exactly the same things.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fcgiproto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct fs_fcgiproto parser;
static unsigned char answer[FS_FCGIPROTO_BODY_MAX + 64];

/* What a feeding said: its events and what came with them, folded (FNV-1a). */
struct said {
	uint64_t hash;
};

static void
fold(struct said *s, const void *bytes, size_t len)
{
	const unsigned char *b = bytes;

	for (size_t i = 0; i < len; i++)
		s->hash = (s->hash ^ b[i]) * UINT64_C(0x100000001b3);
}

/* True when str is a NUL-terminated string that lies inside the parser. */
static int
inside_parser(const char *str)
{
	const char *lo = (const char *)&parser, *hi = lo + sizeof(parser);

	return str != NULL && str >= lo && str < hi &&
	    memchr(str, '\0', (size_t)(hi - str)) != NULL;
}

static void
check_request(struct said *s)
{
	const struct fs_fcgiproto_req *r = &parser.req;

	if (r->body_len > FS_FCGIPROTO_BODY_MAX || r->body[r->body_len] != '\0' ||
	    r->nparams > FS_FCGIPROTO_PARAMS_MAX || r->id == 0)
		abort();
	fold(s, &r->id, sizeof(r->id));
	fold(s, &r->keep_conn, sizeof(r->keep_conn));
	fold(s, &r->params_truncated, sizeof(r->params_truncated));
	fold(s, &r->body_too_big, sizeof(r->body_too_big));
	for (size_t i = 0; i < r->nparams; i++) {
		if (!inside_parser(r->params[i].name) || !inside_parser(r->params[i].value) ||
		    fs_fcgiproto_param(r, r->params[i].name) == NULL)
			abort();
		fold(s, r->params[i].name, strlen(r->params[i].name) + 1);
		fold(s, r->params[i].value, strlen(r->params[i].value) + 1);
	}
	fold(s, r->body, r->body_len);
	if (fs_fcgiproto_answer(r->id, r->body, r->body_len, answer, sizeof(answer)) !=
	    (ssize_t)fs_fcgiproto_answer_size(r->body_len))
		abort();
}

/* A reply is whole records of version 1, each padded as it says. */
static void
check_reply(struct said *s)
{
	const unsigned char *b = (const unsigned char *)parser.reply;
	size_t off = 0;

	if (parser.reply_len == 0 || parser.reply_len > FS_FCGIPROTO_REPLY_MAX)
		abort();
	while (off < parser.reply_len) {
		if (parser.reply_len - off < 8 || b[off] != 1)
			abort();
		off += 8 + ((size_t)b[off + 4] << 8 | b[off + 5]) + b[off + 6];
	}
	if (off != parser.reply_len)
		abort();
	fold(s, b, parser.reply_len);
}

/*
 * Feeds one piece until it is used up; returns -1 once the parser refused
 * the stream.
 */
static int
feed_piece(const uint8_t *piece, size_t len, unsigned mode, struct said *s)
{
	enum fs_fcgiproto_event ev;
	size_t used;

	for (;;) {
		ev = fs_fcgiproto_feed(&parser, piece, len, &used);
		if (used > len || (ev == FS_FCGIPROTO_MORE && used != len) ||
		    (ev != FS_FCGIPROTO_MORE && ev != FS_FCGIPROTO_ERROR && used == 0) ||
		    (ev != FS_FCGIPROTO_REPLY && parser.reply_len != 0))
			abort();
		piece += used;
		len -= used;
		/* A piece may end in MORE anywhere: only the other events are said. */
		if (ev != FS_FCGIPROTO_MORE)
			fold(s, &ev, sizeof(ev));
		switch (ev) {
		case FS_FCGIPROTO_MORE:
			return 0;
		case FS_FCGIPROTO_REQUEST:
			check_request(s);
			if (mode & 1)
				fs_fcgiproto_done(&parser);
			break;
		case FS_FCGIPROTO_ABORT:
			if (mode & 2)
				fs_fcgiproto_done(&parser);
			break;
		case FS_FCGIPROTO_REPLY:
			check_reply(s);
			break;
		case FS_FCGIPROTO_ERROR:
			if (parser.why == NULL)
				abort();
			fold(s, parser.why, strlen(parser.why));
			return -1;
		}
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct said whole = { UINT64_C(0xcbf29ce484222325) }, pieces = whole;
	unsigned unit, mode;
	uint32_t state;

	if (size < 3)
		return -1;
	unit = data[0];
	state = data[1];
	mode = data[2];
	data += 3;
	size -= 3;

	fs_fcgiproto_init(&parser);
	feed_piece(data, size, mode, &whole);

	fs_fcgiproto_init(&parser);
	for (size_t off = 0, n; off < size; off += n) {
		state = state * 1103515245u + 12345u;
		n = unit == 0 ? 1 : 1 + (state >> 16) % unit;
		if (n > size - off)
			n = size - off;
		if (feed_piece(data + off, n, mode, &pieces) != 0)
			break;
	}
	if (whole.hash != pieces.hash)
		abort();
	return 0;
}

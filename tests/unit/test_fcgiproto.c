/*
 * Unit test of lib/fcgiproto: an nginx-shaped request read whole and in
 * pieces of every size, pairs and lengths split anywhere, padding, the
 * limits, management records, refusals, every protocol error, requests in
 * a row, and the answer's records decoded back.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fcgiproto.h"
#include "expect.h"

enum {
	BEGIN = 1,
	ABORT = 2,
	END = 3,
	PARAMS = 4,
	STDIN = 5,
	STDOUT = 6,
	DATA = 8,
	GET_VALUES = 9,
	VALUES_RESULT = 10,
	UNKNOWN = 11
};

/* A byte stream as a web server would send it. */
struct stream {
	unsigned char b[300000];
	size_t len;
};

static struct stream s, s2;
static struct fs_fcgiproto p;

static void
put(struct stream *st, const void *data, size_t len)
{
	if (st->len + len > sizeof(st->b))
		abort();
	if (len == 0)
		return;
	memcpy(st->b + st->len, data, len);
	st->len += len;
}

/* A record with padding bytes of 0xee, so reading them as content shows. */
static void
rec_padded(struct stream *st, unsigned type, unsigned id, const void *content, size_t len,
    size_t padding)
{
	unsigned char h[8] = { 1, (unsigned char)type, (unsigned char)(id >> 8), (unsigned char)id,
		(unsigned char)(len >> 8), (unsigned char)len, (unsigned char)padding, 0 };
	unsigned char pad[255];

	if (len > 65535 || padding > 255)
		abort();
	memset(pad, 0xee, sizeof(pad));
	put(st, h, sizeof(h));
	put(st, content, len);
	put(st, pad, padding);
}

/* Padded to a multiple of 8, as nginx does. */
static void
rec(struct stream *st, unsigned type, unsigned id, const void *content, size_t len)
{
	rec_padded(st, type, id, content, len, (8 - len % 8) % 8);
}

static void
begin(struct stream *st, unsigned id, unsigned role, unsigned flags)
{
	const unsigned char body[8] = { (unsigned char)(role >> 8), (unsigned char)role,
		(unsigned char)flags, 0, 0, 0, 0, 0 };

	rec(st, BEGIN, id, body, sizeof(body));
}

static size_t
put_length(unsigned char *out, size_t n, int four)
{
	if (!four && n < 128) {
		out[0] = (unsigned char)n;
		return 1;
	}
	out[0] = (unsigned char)(0x80 | n >> 24);
	out[1] = (unsigned char)(n >> 16);
	out[2] = (unsigned char)(n >> 8);
	out[3] = (unsigned char)n;
	return 4;
}

/* A name-value pair into out; four: 4-byte lengths even when short. */
static size_t
pair4(unsigned char *out, const char *name, const char *value, int four)
{
	size_t n = strlen(name), v = strlen(value), off;

	off = put_length(out, n, four);
	off += put_length(out + off, v, four);
	memcpy(out + off, name, n);
	memcpy(out + off + n, value, v);
	return off + n + v;
}

static size_t
pair(unsigned char *out, const char *name, const char *value)
{
	return pair4(out, name, value, 0);
}

/* The parameters of the nginx request, and its body. */
static const char *const nginx_params[][2] = {
	{ "QUERY_STRING", "sale=7&exp=1700000000&sig=abc" },
	{ "REQUEST_METHOD", "POST" },
	{ "CONTENT_TYPE", "application/json" },
	{ "CONTENT_LENGTH", "27" },
	{ "DOCUMENT_URI", "/api/flash-sales/items/5/purchase" },
	{ "REQUEST_ID", "0123456789abcdef0123456789abcdef" },
	{ "HTTP_AUTHORIZATION", "Bearer eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiI0MiJ9.c2ln" },
	{ "EMPTY", "" },
	{ "", "nameless" },
};
#define NGINX_NPARAMS (sizeof(nginx_params) / sizeof(nginx_params[0]))
static const char nginx_body[] = "{\"quantity\":1,\"note\":\"hi\"}";

static unsigned char blob[200000];

static size_t
nginx_param_blob(void)
{
	size_t n = 0;

	for (size_t i = 0; i < NGINX_NPARAMS; i++)
		n += pair(blob + n, nginx_params[i][0], nginx_params[i][1]);
	return n;
}

/*
 * nginx's shape: BEGIN_REQUEST with KEEP_CONN, the parameters over records
 * cut at cut1 and cut2 (inside pairs), the empty PARAMS, the body, the
 * empty STDIN; every record padded with padding bytes (-1: to 8).
 */
static void
nginx_request(struct stream *st, unsigned id, size_t cut1, size_t cut2, int padding)
{
	size_t n = nginx_param_blob();
	const size_t cuts[] = { 0, cut1, cut2, n };

	if (padding < 0)
		begin(st, id, 1, 1);
	else {
		const unsigned char body[8] = { 0, 1, 1, 0, 0, 0, 0, 0 };

		rec_padded(st, BEGIN, id, body, 8, (size_t)padding);
	}
	for (size_t i = 0; i + 1 < sizeof(cuts) / sizeof(cuts[0]); i++) {
		if (cuts[i + 1] == cuts[i])
			continue;
		if (padding < 0)
			rec(st, PARAMS, id, blob + cuts[i], cuts[i + 1] - cuts[i]);
		else
			rec_padded(st, PARAMS, id, blob + cuts[i], cuts[i + 1] - cuts[i],
			    (size_t)padding);
	}
	if (padding < 0) {
		rec(st, PARAMS, id, NULL, 0);
		rec(st, STDIN, id, nginx_body, strlen(nginx_body));
		rec(st, STDIN, id, NULL, 0);
	} else {
		rec_padded(st, PARAMS, id, NULL, 0, (size_t)padding);
		rec_padded(st, STDIN, id, nginx_body, strlen(nginx_body), (size_t)padding);
		rec_padded(st, STDIN, id, NULL, 0, (size_t)padding);
	}
}

/*
 * What the parser said, as text: every event with what came with it (a
 * request's fields, parameters and body; a reply's bytes; an error's why).
 * Two ways of feeding the same bytes must give the same text.
 */
struct transcript {
	char text[1 << 20];
	size_t len;
	int requests, replies, aborts, errors, bad_used;
};

static struct transcript t1, t2;

static void say(struct transcript *, const char *, ...) __attribute__((format(printf, 2, 3)));

static void
say(struct transcript *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(t->text + t->len, sizeof(t->text) - t->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(t->text) - t->len)
		abort();
	t->len += (size_t)n;
}

static void
describe(struct transcript *t, enum fs_fcgiproto_event ev)
{
	const struct fs_fcgiproto_req *r = &p.req;

	switch (ev) {
	case FS_FCGIPROTO_REQUEST:
		t->requests++;
		say(t, "REQUEST id=%u keep=%d n=%zu trunc=%d len=%zu big=%d\n", r->id, r->keep_conn,
		    r->nparams, r->params_truncated, r->body_len, r->body_too_big);
		for (size_t i = 0; i < r->nparams; i++)
			say(t, "%s=%s\n", r->params[i].name, r->params[i].value);
		/* The body may hold NUL bytes: all of it, in hex. */
		for (size_t i = 0; i < r->body_len; i++)
			say(t, "%02x", (unsigned char)r->body[i]);
		say(t, "\n");
		break;
	case FS_FCGIPROTO_REPLY:
		t->replies++;
		say(t, "REPLY");
		for (size_t i = 0; i < p.reply_len; i++)
			say(t, " %02x", (unsigned char)p.reply[i]);
		say(t, "\n");
		break;
	case FS_FCGIPROTO_ABORT:
		t->aborts++;
		say(t, "ABORT\n");
		break;
	case FS_FCGIPROTO_ERROR:
		t->errors++;
		say(t, "ERROR %s\n", p.why != NULL ? p.why : "(null)");
		break;
	default:
		break;
	}
}

/* Feeds st to p in pieces of step bytes (0: whole); done() after each request. */
static void
run(const struct stream *st, size_t step, struct transcript *t, int done_after_request)
{
	enum fs_fcgiproto_event ev;

	memset(t, 0, sizeof(*t));
	for (size_t off = 0; off < st->len;) {
		size_t n = step == 0 || st->len - off < step ? st->len - off : step, took = 0, u;

		do {
			ev = fs_fcgiproto_feed(&p, st->b + off + took, n - took, &u);
			if (u > n - took || (ev == FS_FCGIPROTO_MORE && u != n - took))
				t->bad_used++;
			took += u;
			describe(t, ev);
			if (ev == FS_FCGIPROTO_ERROR)
				return;
			if (ev == FS_FCGIPROTO_REQUEST && done_after_request)
				fs_fcgiproto_done(&p);
		} while (ev != FS_FCGIPROTO_MORE);
		off += n;
	}
}

static void
run_new(const struct stream *st, size_t step, struct transcript *t, int done_after_request)
{
	fs_fcgiproto_init(&p);
	run(st, step, t, done_after_request);
}

static int
same(const struct transcript *a, const struct transcript *b)
{
	return a->len == b->len && memcmp(a->text, b->text, a->len) == 0 && a->bad_used == 0 &&
	    b->bad_used == 0;
}

/* True when the request in p is the nginx request, field by field. */
static int
is_nginx_request(unsigned id)
{
	const struct fs_fcgiproto_req *r = &p.req;

	if (r->id != id || r->keep_conn != 1 || r->nparams != NGINX_NPARAMS ||
	    r->params_truncated != 0 || r->body_too_big != 0 || r->body_len != strlen(nginx_body) ||
	    strcmp(r->body, nginx_body) != 0)
		return 0;
	for (size_t i = 0; i < NGINX_NPARAMS; i++)
		if (strcmp(r->params[i].name, nginx_params[i][0]) != 0 ||
		    strcmp(r->params[i].value, nginx_params[i][1]) != 0)
			return 0;
	return 1;
}

/* Feeds st whole to a new parser: the one event and what it left in *used. */
static enum fs_fcgiproto_event
feed_new(const struct stream *st, size_t *used)
{
	fs_fcgiproto_init(&p);
	return fs_fcgiproto_feed(&p, st->b, st->len, used);
}

static void
test_nginx_request(void)
{
	size_t n = nginx_param_blob(), used;
	int steps_ok = 1, cuts_ok = 1, pads_ok = 1;
	enum fs_fcgiproto_event ev;

	s.len = 0;
	nginx_request(&s, 1, 40, 200, -1);
	ev = feed_new(&s, &used);
	check(ev == FS_FCGIPROTO_REQUEST && used == s.len && is_nginx_request(1),
	    "an nginx request fed whole arrives with every parameter and its body");
	check(strcmp(fs_fcgiproto_param(&p.req, "REQUEST_METHOD"), "POST") == 0 &&
		strcmp(fs_fcgiproto_param(&p.req, "EMPTY"), "") == 0 &&
		strcmp(fs_fcgiproto_param(&p.req, ""), "nameless") == 0 &&
		fs_fcgiproto_param(&p.req, "HTTP_COOKIE") == NULL &&
		fs_fcgiproto_param(&p.req, "REQUEST_METHO") == NULL,
	    "fs_fcgiproto_param finds a parameter, an empty one, and NULL for a missing one");
	check(fs_fcgiproto_feed(&p, s.b, 0, &used) == FS_FCGIPROTO_MORE && used == 0,
	    "nothing more to read after the request: MORE");

	run_new(&s, 0, &t1, 1);
	check(t1.requests == 1 && t1.replies == 0 && t1.errors == 0 && t1.bad_used == 0,
	    "the transcript of the whole stream: one request");
	for (size_t step = 1; step <= 64; step++) {
		run_new(&s, step, &t2, 1);
		if (!same(&t1, &t2))
			steps_ok = 0;
	}
	run_new(&s, 1, &t2, 1);
	check(same(&t1, &t2), "fed one byte at a time: the same request");
	check(steps_ok, "fed in pieces of 1 to 64 bytes: the same request each time");

	/* A pair split across two PARAMS records at every byte of the blob. */
	for (size_t cut = 1; cut < n; cut++) {
		s.len = 0;
		nginx_request(&s, 1, cut, cut, -1);
		run_new(&s, 0, &t2, 1);
		if (!same(&t1, &t2))
			cuts_ok = 0;
	}
	check(cuts_ok, "the parameters cut into two PARAMS records at every byte: the same");
	s.len = 0;
	nginx_request(&s, 1, 1, n - 1, -1);
	run_new(&s, 1, &t2, 1);
	check(same(&t1, &t2),
	    "three PARAMS records of 1, n-2 and 1 bytes, fed byte by byte: the same");

	for (int pad = 0; pad <= 255; pad++) {
		s.len = 0;
		nginx_request(&s, 1, 40, 200, pad);
		run_new(&s, 0, &t2, 1);
		if (!same(&t1, &t2))
			pads_ok = 0;
	}
	check(pads_ok, "every record padded with 0 to 255 bytes: the same");
	s.len = 0;
	nginx_request(&s, 1, 40, 200, 255);
	run_new(&s, 1, &t2, 1);
	check(same(&t1, &t2), "255 bytes of padding, fed byte by byte: the same");
}

static void
test_order_and_interleaving(void)
{
	unsigned char b[256];
	size_t n = nginx_param_blob(), used;
	char longvalue[301];
	static const char ask[] = "\16\0FCGI_MAX_CONNS";

	/* The body first, the parameters after. */
	s.len = 0;
	begin(&s, 1, 1, 1);
	rec(&s, STDIN, 1, nginx_body, strlen(nginx_body));
	rec(&s, STDIN, 1, NULL, 0);
	rec(&s, PARAMS, 1, blob, n);
	rec(&s, PARAMS, 1, NULL, 0);
	check(feed_new(&s, &used) == FS_FCGIPROTO_REQUEST && used == s.len && is_nginx_request(1),
	    "the empty STDIN before the empty PARAMS: the request arrives at the second");

	/* A management record and another id's record between the halves of a pair. */
	s.len = 0;
	begin(&s, 1, 1, 1);
	rec(&s, PARAMS, 1, blob, 20);
	rec(&s, GET_VALUES, 0, ask, sizeof(ask) - 1);
	rec(&s, PARAMS, 2, blob, 13);
	rec(&s, DATA, 1, "data", 4);
	rec(&s, PARAMS, 1, blob + 20, n - 20);
	rec(&s, PARAMS, 1, NULL, 0);
	rec(&s, STDIN, 1, nginx_body, strlen(nginx_body));
	rec(&s, STDIN, 1, NULL, 0);
	run_new(&s, 0, &t1, 0);
	run_new(&s, 1, &t2, 0);
	check(t1.replies == 1 && t1.requests == 1 && t1.errors == 0 && is_nginx_request(1) &&
		same(&t1, &t2),
	    "GET_VALUES, another id's PARAMS and a DATA record inside a split pair change nothing");

	/* 4-byte lengths, for short and long names and values. */
	memset(longvalue, 'v', 300);
	longvalue[300] = '\0';
	n = pair4(b, "ABC", "x", 1);
	check(n == 12 && b[0] == 0x80 && b[3] == 3 && b[4] == 0x80 && b[7] == 1,
	    "a pair with 4-byte lengths is 4 + 4 + 3 + 1 bytes");
	s.len = 0;
	begin(&s, 3, 1, 0);
	rec(&s, PARAMS, 3, b, n);
	n = pair(blob, "LONG", longvalue);
	check(n == 1 + 4 + 4 + 300 && blob[0] == 4 && blob[1] == 0x80 && blob[4] == 44,
	    "a value of 300 bytes takes a 4-byte length");
	rec(&s, PARAMS, 3, blob, n);
	rec(&s, PARAMS, 3, NULL, 0);
	rec(&s, STDIN, 3, NULL, 0);
	run_new(&s, 0, &t1, 0);
	check(t1.requests == 1 && p.req.id == 3 && p.req.keep_conn == 0 && p.req.nparams == 2 &&
		strcmp(fs_fcgiproto_param(&p.req, "ABC"), "x") == 0 &&
		strcmp(fs_fcgiproto_param(&p.req, "LONG"), longvalue) == 0 && p.req.body_len == 0 &&
		p.req.body[0] == '\0' && p.req.params_truncated == 0,
	    "4-byte lengths: both pairs read; no KEEP_CONN; an empty body");
	run_new(&s, 1, &t2, 0);
	check(same(&t1, &t2), "4-byte lengths fed byte by byte: the same");
}

/* A request whose parameters are count pairs NAMEi=value; the body is empty. */
static void
params_request(struct stream *st, unsigned id, size_t count, const char *value)
{
	size_t n = 0;
	char name[16];

	for (size_t i = 0; i < count; i++) {
		snprintf(name, sizeof(name), "NAME%zu", i);
		n += pair(blob + n, name, value);
	}
	begin(st, id, 1, 1);
	for (size_t off = 0; off < n; off += 65535)
		rec(st, PARAMS, id, blob + off, n - off < 65535 ? n - off : 65535);
	rec(st, PARAMS, id, NULL, 0);
	rec(st, STDIN, id, NULL, 0);
}

static void
test_param_limits(void)
{
	size_t used, n;
	char value[9000];
	int all = 1;

	s.len = 0;
	params_request(&s, 1, FS_FCGIPROTO_PARAMS_MAX, "v");
	check(feed_new(&s, &used) == FS_FCGIPROTO_REQUEST &&
		p.req.nparams == FS_FCGIPROTO_PARAMS_MAX && p.req.params_truncated == 0,
	    "FS_FCGIPROTO_PARAMS_MAX parameters: all of them, not truncated");
	s.len = 0;
	params_request(&s, 1, FS_FCGIPROTO_PARAMS_MAX + 5, "v");
	check(feed_new(&s, &used) == FS_FCGIPROTO_REQUEST && used == s.len &&
		p.req.nparams == FS_FCGIPROTO_PARAMS_MAX && p.req.params_truncated == 1 &&
		strcmp(fs_fcgiproto_param(&p.req, "NAME63"), "v") == 0 &&
		fs_fcgiproto_param(&p.req, "NAME64") == NULL,
	    "too many parameters: the first FS_FCGIPROTO_PARAMS_MAX, truncated, and a request");

	/*
	 * Storage: "NAMEi" NUL value NUL. 8 pairs NAME0..NAME7 of 5 + 1 + v + 1
	 * bytes fill FS_FCGIPROTO_PARAM_BYTES exactly when v = 1024 - 7.
	 */
	memset(value, 'x', 1017);
	value[1017] = '\0';
	s.len = 0;
	params_request(&s, 1, 8, value);
	check(feed_new(&s, &used) == FS_FCGIPROTO_REQUEST && p.req.nparams == 8 &&
		p.req.params_truncated == 0 && strlen(fs_fcgiproto_param(&p.req, "NAME7")) == 1017,
	    "names and values that fill FS_FCGIPROTO_PARAM_BYTES exactly: all kept");
	s.len = 0;
	params_request(&s, 1, 7, value);
	s.len -= 16; /* its empty PARAMS and STDIN: more pairs follow */
	value[1017] = 'x';
	value[1018] = '\0';
	n = pair(blob, "NAME7", value);
	n += pair(blob + n, "NEXT", "");
	rec(&s, PARAMS, 1, blob, n);
	rec(&s, PARAMS, 1, NULL, 0);
	rec(&s, STDIN, 1, NULL, 0);
	check(feed_new(&s, &used) == FS_FCGIPROTO_REQUEST && p.req.nparams == 8 &&
		p.req.params_truncated == 1 && fs_fcgiproto_param(&p.req, "NAME7") == NULL &&
		strcmp(p.req.params[7].name, "NEXT") == 0 && strcmp(p.req.params[7].value, "") == 0 &&
		strlen(fs_fcgiproto_param(&p.req, "NAME6")) == 1017,
	    "a pair one byte over what is left is left out; a smaller one after it is kept");

	/* A pair larger than the whole storage is skipped; the next one is kept. */
	memset(value, 'y', 8999);
	value[8999] = '\0';
	n = pair(blob, "A", "1");
	n += pair(blob + n, "BIG", value);
	n += pair(blob + n, "C", "3");
	s.len = 0;
	begin(&s, 1, 1, 1);
	rec(&s, PARAMS, 1, blob, n);
	rec(&s, PARAMS, 1, NULL, 0);
	rec(&s, STDIN, 1, NULL, 0);
	run_new(&s, 0, &t1, 0);
	check(t1.requests == 1 && p.req.nparams == 2 && p.req.params_truncated == 1 &&
		strcmp(fs_fcgiproto_param(&p.req, "A"), "1") == 0 &&
		fs_fcgiproto_param(&p.req, "BIG") == NULL &&
		strcmp(fs_fcgiproto_param(&p.req, "C"), "3") == 0,
	    "a pair of 9000 bytes is skipped, the pairs around it kept, truncated");
	run_new(&s, 1, &t2, 0);
	check(same(&t1, &t2), "the oversized pair fed byte by byte: the same");

	/* Lengths that claim 2^31 - 1 bytes: skipped as far as they go, never trusted. */
	static const char huge[] = "\377\377\377\377\377\377\377\377ab";
	s.len = 0;
	begin(&s, 1, 1, 1);
	rec(&s, PARAMS, 1, huge, sizeof(huge) - 1);
	rec(&s, STDIN, 1, NULL, 0);
	check(feed_new(&s, &used) == FS_FCGIPROTO_MORE && used == s.len,
	    "a pair claiming 2^31 - 1 bytes of name and of value: the bytes that came are skipped");
	rec(&s, PARAMS, 1, NULL, 0);
	check(feed_new(&s, &used) == FS_FCGIPROTO_ERROR &&
		strcmp(p.why, "FCGI_PARAMS end inside a name-value pair") == 0,
	    "...and the empty PARAMS inside that pair is an error");

	/* The byte after the empty PARAMS: each split of the lengths is a pair cut short. */
	for (size_t cut = 1; cut < 4; cut++) {
		s.len = 0;
		begin(&s, 1, 1, 1);
		rec(&s, PARAMS, 1, huge, cut);
		rec(&s, PARAMS, 1, NULL, 0);
		if (feed_new(&s, &used) != FS_FCGIPROTO_ERROR)
			all = 0;
	}
	check(all, "PARAMS ending inside a 4-byte length: an error");
}

/* A request with a body of len bytes (a counting pattern) in records of at most chunk. */
static void
body_request(struct stream *st, unsigned id, size_t len, size_t chunk)
{
	begin(st, id, 1, 1);
	rec(st, PARAMS, id, NULL, 0);
	for (size_t i = 0; i < len; i++)
		blob[i] = (unsigned char)('a' + i % 26);
	for (size_t off = 0; off < len; off += chunk)
		rec(st, STDIN, id, blob + off, len - off < chunk ? len - off : chunk);
	rec(st, STDIN, id, NULL, 0);
}

static void
test_body_limits(void)
{
	size_t used;

	s.len = 0;
	body_request(&s, 1, FS_FCGIPROTO_BODY_MAX, 1000);
	check(feed_new(&s, &used) == FS_FCGIPROTO_REQUEST && p.req.body_len == FS_FCGIPROTO_BODY_MAX &&
		p.req.body_too_big == 0 && memcmp(p.req.body, blob, FS_FCGIPROTO_BODY_MAX) == 0 &&
		p.req.body[FS_FCGIPROTO_BODY_MAX] == '\0',
	    "a body of exactly FS_FCGIPROTO_BODY_MAX bytes: whole, not too big");
	run_new(&s, 0, &t1, 0);
	run_new(&s, 1, &t2, 0);
	check(same(&t1, &t2), "...fed byte by byte: the same");
	s.len = 0;
	body_request(&s, 1, FS_FCGIPROTO_BODY_MAX + 1, 1000);
	check(feed_new(&s, &used) == FS_FCGIPROTO_REQUEST && used == s.len &&
		p.req.body_len == FS_FCGIPROTO_BODY_MAX && p.req.body_too_big == 1 &&
		memcmp(p.req.body, blob, FS_FCGIPROTO_BODY_MAX) == 0 &&
		p.req.body[FS_FCGIPROTO_BODY_MAX] == '\0',
	    "one byte over: too big, the first FS_FCGIPROTO_BODY_MAX bytes, NUL-terminated, it arrives");
	s.len = 0;
	body_request(&s, 1, 3 * 65535, 65535);
	check(feed_new(&s, &used) == FS_FCGIPROTO_REQUEST && p.req.body_len == FS_FCGIPROTO_BODY_MAX &&
		p.req.body_too_big == 1 && memcmp(p.req.body, blob, FS_FCGIPROTO_BODY_MAX) == 0,
	    "three STDIN records of 65535 bytes: too big, the start kept");
	run_new(&s, 0, &t1, 0);
	run_new(&s, 7, &t2, 0);
	check(same(&t1, &t2), "...fed 7 bytes at a time: the same");
}

static void
test_abort(void)
{
	size_t used;

	/* An abort before the request is whole: no request, the next one is served. */
	s.len = 0;
	begin(&s, 1, 1, 1);
	rec(&s, PARAMS, 1, blob, pair(blob, "A", "1"));
	rec(&s, ABORT, 1, NULL, 0);
	rec(&s, PARAMS, 1, NULL, 0);
	rec(&s, STDIN, 1, NULL, 0);
	check(feed_new(&s, &used) == FS_FCGIPROTO_ABORT && used == 16 + 16 + 8,
	    "ABORT_REQUEST during the parameters: ABORT, right after its record");
	check(fs_fcgiproto_feed(&p, s.b + used, s.len - used, &used) == FS_FCGIPROTO_MORE &&
		used == 16,
	    "...the rest of the aborted request is not a request");
	fs_fcgiproto_done(&p);
	s.len = 0;
	nginx_request(&s, 1, 10, 20, -1);
	check(fs_fcgiproto_feed(&p, s.b, s.len, &used) == FS_FCGIPROTO_REQUEST && used == s.len &&
		is_nginx_request(1),
	    "...after done() the same id begins a new request");

	/* An abort after the request arrived, then another one is ignored. */
	s.len = 0;
	rec(&s, ABORT, 1, NULL, 0);
	rec(&s, ABORT, 1, NULL, 0);
	check(fs_fcgiproto_feed(&p, s.b, s.len, &used) == FS_FCGIPROTO_ABORT && used == 8 &&
		is_nginx_request(1),
	    "ABORT_REQUEST after the request arrived: ABORT, the request still readable");
	check(fs_fcgiproto_feed(&p, s.b + 8, 8, &used) == FS_FCGIPROTO_MORE && used == 8,
	    "...a second ABORT_REQUEST is ignored");
	fs_fcgiproto_done(&p);
	check(fs_fcgiproto_feed(&p, s.b, 8, &used) == FS_FCGIPROTO_MORE && used == 8,
	    "an ABORT_REQUEST that crossed the answer (after done) is ignored");

	/* An abort with content and padding, fed byte by byte. */
	s.len = 0;
	begin(&s, 9, 1, 1);
	rec_padded(&s, ABORT, 9, "xyz", 3, 200);
	run_new(&s, 1, &t1, 0);
	check(t1.aborts == 1 && t1.errors == 0 && t1.bad_used == 0,
	    "an ABORT_REQUEST with content and 200 bytes of padding, byte by byte: one ABORT");
}

/* True when the reply is exactly want. */
static int
reply_is(const char *want, size_t len)
{
	return p.reply_len == len && memcmp(p.reply, want, len) == 0;
}

static void
test_management(void)
{
	unsigned char b[256];
	size_t n = 0, used;
	/* The expected records, octal escapes: 57 = \71, 10 = \12, 11 = \13 ... */
	static const char values_all[] = "\1\12\0\0\0\71\7\0"
					 "\16\4FCGI_MAX_CONNS1024"
					 "\15\4FCGI_MAX_REQS1024"
					 "\17\1FCGI_MPXS_CONNS0"
					 "\0\0\0\0\0\0\0";
	static const char values_mpxs[] = "\1\12\0\0\0\22\6\0"
					  "\17\1FCGI_MPXS_CONNS0"
					  "\0\0\0\0\0\0";
	static const char values_none[] = "\1\12\0\0\0\0\0\0";
	static const char unknown_12[] = "\1\13\0\0\0\10\0\0"
					 "\14\0\0\0\0\0\0\0";
	static const char unknown_stdin[] = "\1\13\0\0\0\10\0\0"
					    "\5\0\0\0\0\0\0\0";
	static const char end_cant_mpx[] = "\1\3\0\2\0\10\0\0"
					   "\0\0\0\0\1\0\0\0";
	static const char end_unknown_role[] = "\1\3\0\1\0\10\0\0"
					       "\0\0\0\0\3\0\0\0";

	/* GET_VALUES: every variable (asked twice, among unknown names), in a fixed order. */
	n += pair(b + n, "FCGI_MPXS_CONNS", "");
	n += pair(b + n, "FCGI_MAX_CONNS", "");
	n += pair(b + n, "SOMETHING_ELSE", "");
	n += pair(b + n, "FCGI_MAX_REQS", "");
	n += pair(b + n, "FCGI_MAX_CONNS", "");
	n += pair(b + n, "FCGI_MAX_CONNS_AND_MORE_THAN_32_BYTES_OF_NAME", "");
	s.len = 0;
	rec(&s, GET_VALUES, 0, b, n);
	check(feed_new(&s, &used) == FS_FCGIPROTO_REPLY && used == s.len - 1 &&
		reply_is(values_all, sizeof(values_all) - 1),
	    "GET_VALUES: GET_VALUES_RESULT with the three variables once each, padded to 8, "
	    "returned before the request's padding");
	run_new(&s, 1, &t1, 0);
	run_new(&s, 0, &t2, 0);
	check(t1.replies == 1 && same(&t1, &t2), "...fed byte by byte: the same reply");
	n = pair4(b, "FCGI_MPXS_CONNS", "", 1);
	s.len = 0;
	rec(&s, GET_VALUES, 0, b, n);
	check(feed_new(&s, &used) == FS_FCGIPROTO_REPLY &&
		reply_is(values_mpxs, sizeof(values_mpxs) - 1),
	    "GET_VALUES for FCGI_MPXS_CONNS (4-byte lengths): only it, 0");
	s.len = 0;
	rec(&s, GET_VALUES, 0, b, 5);
	check(feed_new(&s, &used) == FS_FCGIPROTO_REPLY &&
		reply_is(values_none, sizeof(values_none) - 1),
	    "GET_VALUES with a pair cut short: an empty result");

	/* Other management records. */
	s.len = 0;
	rec_padded(&s, 12, 0, "hello", 5, 3);
	check(feed_new(&s, &used) == FS_FCGIPROTO_REPLY && used == 8 + 5 &&
		reply_is(unknown_12, sizeof(unknown_12) - 1),
	    "a management record of type 12: UNKNOWN_TYPE naming 12");
	s.len = 0;
	rec(&s, STDIN, 0, "x", 1);
	check(feed_new(&s, &used) == FS_FCGIPROTO_REPLY &&
		reply_is(unknown_stdin, sizeof(unknown_stdin) - 1),
	    "STDIN with request id 0: UNKNOWN_TYPE naming STDIN");

	/* Refusals: another BEGIN_REQUEST while busy, and a role other than responder. */
	s.len = 0;
	begin(&s, 1, 1, 1);
	rec(&s, PARAMS, 1, blob, nginx_param_blob());
	begin(&s, 2, 1, 1);
	rec(&s, PARAMS, 2, blob, 30);
	rec(&s, PARAMS, 1, NULL, 0);
	rec(&s, STDIN, 2, "body of 2", 9);
	rec(&s, STDIN, 1, nginx_body, strlen(nginx_body));
	rec(&s, STDIN, 1, NULL, 0);
	s2.len = s.len;
	memcpy(s2.b, s.b, s.len);
	rec(&s, PARAMS, 2, NULL, 0);
	rec(&s, STDIN, 2, NULL, 0);
	check(feed_new(&s, &used) == FS_FCGIPROTO_REPLY && reply_is(end_cant_mpx, 16),
	    "BEGIN_REQUEST for id 2 while 1 is in progress: END_REQUEST CANT_MPX_CONN for 2");
	n = used;
	check(fs_fcgiproto_feed(&p, s.b + n, s.len - n, &used) == FS_FCGIPROTO_REQUEST &&
		n + used == s2.len && is_nginx_request(1),
	    "...id 2's records are ignored, request 1 arrives whole");
	fs_fcgiproto_done(&p);
	n += used;
	check(fs_fcgiproto_feed(&p, s.b + n, s.len - n, &used) == FS_FCGIPROTO_MORE &&
		n + used == s.len,
	    "...id 2's late records after done() are ignored too");
	run_new(&s, 0, &t1, 1);
	run_new(&s, 1, &t2, 1);
	check(t1.replies == 1 && t1.requests == 1 && same(&t1, &t2),
	    "...fed byte by byte: the same reply and request");

	s.len = 0;
	begin(&s, 1, 2, 0);
	rec(&s, PARAMS, 1, blob, 10);
	rec(&s, PARAMS, 1, NULL, 0);
	rec(&s, STDIN, 1, NULL, 0);
	nginx_request(&s, 1, 5, 6, -1);
	check(feed_new(&s, &used) == FS_FCGIPROTO_REPLY && used == 16 &&
		reply_is(end_unknown_role, 16),
	    "the authorizer role: END_REQUEST UNKNOWN_ROLE");
	check(fs_fcgiproto_feed(&p, s.b + 16, s.len - 16, &used) == FS_FCGIPROTO_REQUEST &&
		used == s.len - 16 && is_nginx_request(1),
	    "...its records are ignored, and a responder BEGIN_REQUEST for the id is served");

	/* A management record while a request is answered. */
	s.len = 0;
	nginx_request(&s, 1, 5, 6, -1);
	check(feed_new(&s, &used) == FS_FCGIPROTO_REQUEST, "a request arrives");
	s.len = 0;
	rec(&s, 12, 0, NULL, 0);
	begin(&s, 2, 1, 0);
	check(fs_fcgiproto_feed(&p, s.b, s.len, &used) == FS_FCGIPROTO_REPLY && used == 8 &&
		reply_is(unknown_12, 16) &&
		fs_fcgiproto_feed(&p, s.b + 8, s.len - 8, &used) == FS_FCGIPROTO_REPLY &&
		used == 16 && reply_is(end_cant_mpx, 16) && is_nginx_request(1),
	    "after REQUEST and before done(): UNKNOWN_TYPE and CANT_MPX_CONN, the request intact");
}

/*
 * Feeds st whole (done() after a request, replies taken): it ends in ERROR
 * with exactly why, and ERROR again after; byte by byte, the same.
 */
static void
check_error(const char *why, const char *what)
{
	enum fs_fcgiproto_event ev;
	size_t off = 0, used;
	int ok;

	fs_fcgiproto_init(&p);
	do {
		ev = fs_fcgiproto_feed(&p, s.b + off, s.len - off, &used);
		off += used;
		if (ev == FS_FCGIPROTO_REQUEST)
			fs_fcgiproto_done(&p);
	} while (ev != FS_FCGIPROTO_ERROR && ev != FS_FCGIPROTO_MORE);
	ok = ev == FS_FCGIPROTO_ERROR && p.why != NULL && strcmp(p.why, why) == 0 &&
	    fs_fcgiproto_feed(&p, s.b, s.len, &used) == FS_FCGIPROTO_ERROR && used == 0;
	run_new(&s, 0, &t1, 1);
	run_new(&s, 1, &t2, 1);
	check(ok && t1.errors == 1 && same(&t1, &t2), what);
}

static void
test_errors(void)
{
	static const unsigned char head_v2[8] = { 2, BEGIN, 0, 1, 0, 8, 0, 0 };
	static const unsigned char body[9] = { 0, 1, 0, 0, 0, 0, 0, 0, 0 };

	s.len = 0;
	put(&s, head_v2, 8);
	put(&s, body, 8);
	check_error("not FastCGI version 1", "version 2: an error");
	s.len = 0;
	nginx_request(&s, 1, 5, 6, -1);
	s.b[s.len - 8] = 0;
	check_error("not FastCGI version 1", "version 0 in the last header: an error");
	s.len = 0;
	rec(&s, BEGIN, 1, body, 7);
	check_error("FCGI_BEGIN_REQUEST body not 8 bytes", "BEGIN_REQUEST of 7 bytes: an error");
	s.len = 0;
	rec(&s, BEGIN, 1, body, 9);
	check_error("FCGI_BEGIN_REQUEST body not 8 bytes", "BEGIN_REQUEST of 9 bytes: an error");
	s.len = 0;
	begin(&s, 1, 1, 0);
	rec(&s, BEGIN, 2, body, 0);
	check_error("FCGI_BEGIN_REQUEST body not 8 bytes",
	    "an empty BEGIN_REQUEST for another id while busy: an error");
	s.len = 0;
	begin(&s, 0, 1, 0);
	check_error("FCGI_BEGIN_REQUEST with request id 0", "BEGIN_REQUEST with id 0: an error");
	s.len = 0;
	rec(&s, PARAMS, 1, NULL, 0);
	check_error("a request record before its FCGI_BEGIN_REQUEST", "PARAMS first: an error");
	s.len = 0;
	rec(&s, STDIN, 1, "x", 1);
	check_error("a request record before its FCGI_BEGIN_REQUEST", "STDIN first: an error");
	s.len = 0;
	rec(&s, ABORT, 1, NULL, 0);
	check_error("a request record before its FCGI_BEGIN_REQUEST", "ABORT first: an error");
	s.len = 0;
	nginx_request(&s, 1, 5, 6, -1);
	rec(&s, PARAMS, 7, NULL, 0);
	check_error("a request record before its FCGI_BEGIN_REQUEST",
	    "after done(), PARAMS for an id never begun: an error");
	s.len = 0;
	begin(&s, 1, 1, 0);
	begin(&s, 1, 1, 0);
	check_error("FCGI_BEGIN_REQUEST for the request in progress",
	    "BEGIN_REQUEST again for the id in progress: an error");
	s.len = 0;
	begin(&s, 1, 2, 0);
	begin(&s, 0, 1, 0);
	check_error("FCGI_BEGIN_REQUEST with request id 0",
	    "an error after a refusal: the reply first, then the error");
	s.len = 0;
	begin(&s, 1, 1, 0);
	rec(&s, PARAMS, 1, NULL, 0);
	rec(&s, PARAMS, 1, NULL, 0);
	check_error("FCGI_PARAMS after the empty one", "PARAMS after the empty PARAMS: an error");
	s.len = 0;
	begin(&s, 1, 1, 0);
	rec(&s, STDIN, 1, NULL, 0);
	rec(&s, STDIN, 1, "late", 4);
	check_error("FCGI_STDIN after the empty one", "STDIN after the empty STDIN: an error");
	s.len = 0;
	begin(&s, 1, 1, 0);
	rec(&s, PARAMS, 1, blob, pair(blob, "NAME", "value") - 1);
	rec(&s, PARAMS, 1, NULL, 0);
	check_error("FCGI_PARAMS end inside a name-value pair",
	    "the empty PARAMS inside a value: an error");
}

static void
test_requests_in_a_row(void)
{
	size_t used, n;

	s.len = 0;
	params_request(&s, 1, FS_FCGIPROTO_PARAMS_MAX + 1, "v");
	n = s.len;
	body_request(&s, 2, FS_FCGIPROTO_BODY_MAX + 10, 100);
	nginx_request(&s, 1, 7, 70, -1);
	begin(&s, 5, 1, 0);
	rec(&s, STDIN, 5, NULL, 0);
	rec(&s, PARAMS, 5, NULL, 0);
	check(feed_new(&s, &used) == FS_FCGIPROTO_REQUEST && used == n && p.req.id == 1 &&
		p.req.params_truncated == 1,
	    "the first request of four on one connection");
	fs_fcgiproto_done(&p);
	n = used;
	check(fs_fcgiproto_feed(&p, s.b + n, s.len - n, &used) == FS_FCGIPROTO_REQUEST &&
		p.req.id == 2 && p.req.nparams == 0 && p.req.params_truncated == 0 &&
		p.req.body_too_big == 1 && p.req.body_len == FS_FCGIPROTO_BODY_MAX,
	    "the second: its own id, no parameters left over, its body too big");
	fs_fcgiproto_done(&p);
	n += used;
	check(fs_fcgiproto_feed(&p, s.b + n, s.len - n, &used) == FS_FCGIPROTO_REQUEST &&
		is_nginx_request(1),
	    "the third: id 1 again, exactly the nginx request (nothing of the first two)");
	fs_fcgiproto_done(&p);
	n += used;
	check(fs_fcgiproto_feed(&p, s.b + n, s.len - n, &used) == FS_FCGIPROTO_REQUEST &&
		n + used == s.len && p.req.id == 5 && p.req.keep_conn == 0 && p.req.nparams == 0 &&
		p.req.body_len == 0 && p.req.body[0] == '\0' && p.req.body_too_big == 0,
	    "the fourth: fully reset, no KEEP_CONN, empty body");
	fs_fcgiproto_done(&p);
	fs_fcgiproto_done(&p);
	check(fs_fcgiproto_feed(&p, s.b, 0, &used) == FS_FCGIPROTO_MORE && used == 0,
	    "done() twice is harmless");
	run_new(&s, 0, &t1, 1);
	run_new(&s, 1, &t2, 1);
	check(t1.requests == 4 && t1.errors == 0 && same(&t1, &t2),
	    "the four requests fed byte by byte: the same");
	run_new(&s, 0, &t1, 0);
	check(t1.requests == 1 && t1.replies == 1 && t1.errors == 1 &&
		strcmp(p.why, "FCGI_BEGIN_REQUEST for the request in progress") == 0,
	    "without done(): one request, id 2 refused, id 1 begun again is an error");
}

static unsigned char data[200000], out[200200];

/* Decodes an answer: the records, their padding, the data, the ends. */
static int
answer_decodes(uint16_t id, size_t len, size_t total)
{
	size_t off = 0, got = 0;

	for (;;) {
		const unsigned char *h = out + off;
		size_t clen, plen;

		if (total - off < 8 || h[0] != 1 || h[1] != STDOUT ||
		    (unsigned)(h[2] << 8 | h[3]) != id || h[7] != 0)
			return 0;
		clen = (size_t)h[4] << 8 | h[5];
		plen = h[6];
		if ((clen + plen) % 8 != 0 || plen > 7 || total - off - 8 < clen + plen)
			return 0;
		off += 8;
		if (clen == 0)
			break;
		if (got + clen > len || memcmp(out + off, data + got, clen) != 0)
			return 0;
		got += clen;
		off += clen;
		for (size_t i = 0; i < plen; i++)
			if (out[off++] != 0)
				return 0;
	}
	const unsigned char end[16] = { 1, END, (unsigned char)(id >> 8), (unsigned char)id, 0, 8,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	return got == len && total - off == 16 && memcmp(out + off, end, 16) == 0;
}

static void
test_answer(void)
{
	static const size_t lens[] = { 0, 8, 65535, 65536, 200000 };
	static const size_t sizes[] = { 24, 40, 65568, 65584, 200064 };
	static const size_t records[] = { 0, 1, 1, 2, 4 };
	char what[128];

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 7 + i / 251);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		size_t len = lens[i], need = fs_fcgiproto_answer_size(len), nrec = 0;
		ssize_t n;

		memset(out, 0xee, sizeof(out));
		n = fs_fcgiproto_answer(0x1234, data, len, out, need);
			for (size_t off = 0; n > 0 && off + 24 < (size_t)n;
		     off += 8 + ((size_t)out[off + 4] << 8 | out[off + 5]) + out[off + 6])
			nrec++;
		snprintf(what, sizeof(what),
		    "an answer of %zu bytes: %zu bytes, %zu STDOUT records, empty STDOUT, END",
		    len, sizes[i], records[i]);
		check(need == sizes[i] && n == (ssize_t)need && nrec == records[i] &&
			answer_decodes(0x1234, len, (size_t)n) && out[need] == 0xee,
		    what);
		snprintf(what, sizeof(what), "an answer of %zu bytes into %zu: -1", len, need - 1);
		check(fs_fcgiproto_answer(1, data, len, out, need - 1) == -1, what);
	}
	check(fs_fcgiproto_answer(1, NULL, 0, out, 0) == -1 &&
		fs_fcgiproto_answer_size((size_t)-1) == (size_t)-1 &&
		fs_fcgiproto_answer(1, data, (size_t)-1 / 2 + 1, out, sizeof(out)) == -1,
	    "no room, and a length no buffer holds: -1");
}

/*
 * fs_fcgiproto_quiet, the idle test of lib/fcgi's timeouts (issue 36):
 * true only between records with no request begun; any piece of a record,
 * or a request not yet answered, is not quiet.
 */
static void
test_quiet(void)
{
	enum fs_fcgiproto_event ev;
	size_t used;
	int quiet_inside = 0, request = 0;

	s.len = 0;
	nginx_request(&s, 1, 10, 30, 5);
	fs_fcgiproto_init(&p);
	check(fs_fcgiproto_quiet(&p), "quiet: a new parser is quiet");
	for (size_t i = 0; i < s.len; i++) {
		ev = fs_fcgiproto_feed(&p, s.b + i, 1, &used);
		if (ev == FS_FCGIPROTO_REQUEST) {
			request = 1;
			check(!fs_fcgiproto_quiet(&p), "quiet: not while the request is in hand");
			fs_fcgiproto_done(&p);
		}
		if (i + 1 < s.len && fs_fcgiproto_quiet(&p))
			quiet_inside++;
	}
	check(request && quiet_inside == 0,
	    "quiet: never inside a request's records or their padding, fed a byte at a time");
	check(fs_fcgiproto_quiet(&p), "quiet: again once the request is done and its padding read");
	s.len = 0;
	rec(&s, GET_VALUES, 0, NULL, 0);
	fs_fcgiproto_init(&p);
	ev = fs_fcgiproto_feed(&p, s.b, s.len - 1, &used);
	check(ev == FS_FCGIPROTO_MORE && !fs_fcgiproto_quiet(&p), "quiet: not inside a record's header");
	ev = fs_fcgiproto_feed(&p, s.b + s.len - 1, 1, &used);
	check(ev == FS_FCGIPROTO_REPLY && fs_fcgiproto_quiet(&p),
	    "quiet: after a whole management record");
}

int
main(void)
{
	test_quiet();
	test_nginx_request();
	test_order_and_interleaving();
	test_param_limits();
	test_body_limits();
	test_abort();
	test_management();
	test_errors();
	test_requests_in_a_row();
	test_answer();
	return failures == 0 ? 0 : 1;
}

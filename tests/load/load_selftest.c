/* flashsale-load: the self-test of the response parser and the queue's
 * helpers (--self-test). */
#include "load.h"

static const char *const ld_prs_names[LD_PRS__MAX] = {
	"more", "done", "error"
};

/*
 * Self-test of the parser: each case is fed whole, byte by byte, and cut
 * in two at every offset, and must give the same answer every time.
 */

struct ld_case {
	const char	*name;
	const char	*in;
	enum ld_prs	 want;
	int		 eof;		/* the server closes after in */
	int		 status;
	int		 keep_alive;
	int		 retry_after;
	size_t		 leftover;
};

/* Feeds in as pieces of step bytes (cut first after split bytes). */
static enum ld_prs
ld_case_run(struct ld_rsp *r, const char *in, size_t len, size_t split,
    size_t step, int eof, size_t *consumed)
{
	enum ld_prs rc = LD_PRS_MORE;
	size_t off = 0, n, used;

	ld_rsp_reset(r);
	while (off < len && rc == LD_PRS_MORE) {
		n = off == 0 && split > 0 ? split : step;
		if (n > len - off)
			n = len - off;
		rc = ld_rsp_feed(r, in + off, n, &used);
		off += used;
	}
	*consumed = off;
	if (rc == LD_PRS_MORE && eof)
		rc = ld_rsp_eof(r);
	return rc;
}

static int
ld_case_check(const struct ld_case *t, size_t len)
{
	struct ld_rsp *r = NULL;
	enum ld_prs rc;
	size_t mode, consumed;
	int ok = 0;

	if ((r = malloc(sizeof(*r))) == NULL)
		goto fail;
	/* Mode 0: whole; 1: byte by byte; 2 + k: cut after k bytes. */
	for (mode = 0; mode < len + 2; mode++) {
		rc = ld_case_run(r, t->in, len, mode >= 2 ? mode - 2 : 0,
		    mode == 1 ? 1 : len, t->eof, &consumed);
		if (rc != t->want || (rc == LD_PRS_DONE &&
		    (r->status != t->status ||
		    r->keep_alive != t->keep_alive ||
		    r->retry_after != t->retry_after ||
		    len - consumed != t->leftover))) {
			printf("# %s (mode %zu): %s status %d keep-alive %d "
			    "retry-after %d leftover %zu %s\n", t->name, mode,
			    ld_prs_names[rc], r->status, r->keep_alive,
			    r->retry_after, len - consumed, r->errstr);
			goto fail;
		}
	}
	ok = 1;
fail:
	free(r);
	return ok;
}

static void
ld_case_tap(const struct ld_case *t, size_t len, size_t *pass, size_t *fail)
{
	if (ld_case_check(t, len))
		printf("ok %zu - %s\n", ++*pass + *fail, t->name);
	else
		printf("not ok %zu - %s\n", *pass + ++*fail, t->name);
}

/* Answers as servers send them, good and bad, and what each must give. */
static const struct ld_case ld_cases[] = {
	{ "content-length",
	    "HTTP/1.1 410 Gone\r\nContent-Type: application/json\r\n"
	    "Content-Length: 20\r\n\r\n{\"error\":\"SOLD_OUT\"}",
	    LD_PRS_DONE, 0, 410, 1, -1, 0 },
	{ "chunked with extension and trailer",
	    "HTTP/1.1 202 Accepted\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n"
	    "5;name=val\r\nhello\r\n"
	    "1A\r\nabcdefghijklmnopqrstuvwxyz\r\n"
	    "0\r\nX-Trailer: 1\r\n\r\n",
	    LD_PRS_DONE, 0, 202, 1, -1, 0 },
	{ "chunked, bare LF",
	    "HTTP/1.1 202 Accepted\n"
	    "Transfer-Encoding: gzip, chunked\n\n"
	    "3\nabc\n0\n\n",
	    LD_PRS_DONE, 0, 202, 1, -1, 0 },
	{ "503 retry-after close",
	    "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 2\r\n"
	    "CONNECTION: Close\r\ncontent-length: 2\r\n\r\nno",
	    LD_PRS_DONE, 0, 503, 0, 2, 0 },
	{ "retry-after date and cap",
	    "HTTP/1.1 503 x\r\nRetry-After: Fri, 31 Dec 1999 23:59:59 "
	    "GMT\r\nContent-Length: 0\r\n\r\n",
	    LD_PRS_DONE, 0, 503, 1, -1, 0 },
	{ "retry-after capped",
	    "HTTP/1.1 503 x\r\nRetry-After: 86400\r\n"
	    "Content-Length: 0\r\n\r\n",
	    LD_PRS_DONE, 0, 503, 1, LD_RETRY_AFTER_MAX_S, 0 },
	{ "http/1.0 closes",
	    "HTTP/1.0 429 Too Many Requests\r\n"
	    "Content-Length: 1\r\n\r\nx",
	    LD_PRS_DONE, 0, 429, 0, -1, 0 },
	{ "http/1.0 keep-alive",
	    "HTTP/1.0 409 Conflict\r\nConnection: keep-alive\r\n"
	    "Content-Length: 1\r\n\r\nx",
	    LD_PRS_DONE, 0, 409, 1, -1, 0 },
	{ "body until close",
	    "HTTP/1.1 200 OK\r\n\r\nsome body", LD_PRS_DONE, 1, 200, 0,
	    -1, 0 },
	{ "body until close, cut off",
	    "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
	    LD_PRS_ERROR, 1, 0, 0, -1, 0 },
	{ "100 continue first",
	    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 409 Conflict\r\n"
	    "Content-Length: 0\r\n\r\n",
	    LD_PRS_DONE, 0, 409, 1, -1, 0 },
	{ "204 and leftover bytes",
	    "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nXYZ",
	    LD_PRS_DONE, 0, 204, 1, -1, 3 },
	{ "blank lines before the status line",
	    "\r\n\r\nHTTP/1.1 410 Gone\r\nContent-Length: 0\r\n\r\n",
	    LD_PRS_DONE, 0, 410, 1, -1, 0 },
	{ "status without reason",
	    "HTTP/1.1 410\r\nContent-Length: 0\r\n\r\n",
	    LD_PRS_DONE, 0, 410, 1, -1, 0 },
	{ "chunked and length: close after",
	    "HTTP/1.1 202 Accepted\r\nContent-Length: 3\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	    LD_PRS_DONE, 0, 202, 0, -1, 0 },
	{ "same length twice",
	    "HTTP/1.1 410 Gone\r\nContent-Length: 1\r\n"
	    "Content-Length: 1\r\n\r\nx",
	    LD_PRS_DONE, 0, 410, 1, -1, 0 },
	{ "http/2 status", "HTTP/2 200 OK\r\n\r\n", LD_PRS_ERROR, 0,
	    0, 0, -1, 0 },
	{ "two-digit status", "HTTP/1.1 20 OK\r\n\r\n", LD_PRS_ERROR,
	    0, 0, 0, -1, 0 },
	{ "not http", "SSH-2.0-OpenSSH\r\n\r\n", LD_PRS_ERROR, 0, 0, 0,
	    -1, 0 },
	{ "switching protocols",
	    "HTTP/1.1 101 Switching Protocols\r\n\r\n", LD_PRS_ERROR,
	    0, 0, 0, -1, 0 },
	{ "conflicting lengths",
	    "HTTP/1.1 410 Gone\r\nContent-Length: 1\r\n"
	    "Content-Length: 2\r\n\r\nxx",
	    LD_PRS_ERROR, 0, 0, 0, -1, 0 },
	{ "negative length",
	    "HTTP/1.1 410 Gone\r\nContent-Length: -1\r\n\r\n",
	    LD_PRS_ERROR, 0, 0, 0, -1, 0 },
	{ "huge length",
	    "HTTP/1.1 410 Gone\r\nContent-Length: "
	    "99999999999999999999999\r\n\r\n",
	    LD_PRS_ERROR, 0, 0, 0, -1, 0 },
	{ "folded header",
	    "HTTP/1.1 410 Gone\r\nX-A: 1\r\n  2\r\n\r\n", LD_PRS_ERROR,
	    0, 0, 0, -1, 0 },
	{ "space before colon",
	    "HTTP/1.1 410 Gone\r\nContent-Length : 0\r\n\r\n",
	    LD_PRS_ERROR, 0, 0, 0, -1, 0 },
	{ "bad chunk size",
	    "HTTP/1.1 202 A\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "zz\r\n",
	    LD_PRS_ERROR, 0, 0, 0, -1, 0 },
	{ "chunk size overflow",
	    "HTTP/1.1 202 A\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "FFFFFFFFFFFFFFFFF\r\n", LD_PRS_ERROR, 0, 0, 0, -1, 0 },
	{ "chunk longer than said",
	    "HTTP/1.1 202 A\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "3\r\nabcd\r\n0\r\n\r\n", LD_PRS_ERROR, 0, 0, 0, -1, 0 },
	{ "chunked cut off",
	    "HTTP/1.1 202 A\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "3\r\nab", LD_PRS_ERROR, 1, 0, 0, -1, 0 },
	{ "head cut off", "HTTP/1.1 410 Gone\r\nContent-Len",
	    LD_PRS_ERROR, 1, 0, 0, -1, 0 },
	{ "body too big",
	    "HTTP/1.1 200 OK\r\nContent-Length: 67108865\r\n\r\n",
	    LD_PRS_ERROR, 0, 0, 0, -1, 0 },
};

/*
 * A head one byte over the limit, built here (too long to list), then one
 * exactly at the limit, which is accepted.
 */
static void
ld_case_big(size_t *pass, size_t *fail)
{
	struct ld_case big = { "head too big", NULL, LD_PRS_ERROR, 0, 0, 0,
	    -1, 0 };
	size_t len = LD_HEAD_MAX + 1;
	char *in;

	if ((in = malloc(len + 1)) == NULL) {
		printf("not ok %zu - %s # out of memory\n", ++*fail + *pass,
		    big.name);
		printf("not ok %zu - head at the limit # out of memory\n",
		    ++*fail + *pass);
		return;
	}
	memset(in, 'a', len);
	memcpy(in, "HTTP/1.1 200 OK\r\nX: ", 20);
	memcpy(in + len - 4, "\r\n\r\n", 4);
	in[len] = '\0';
	big.in = in;
	ld_case_tap(&big, len, pass, fail);
	big.name = "head at the limit";
	big.want = LD_PRS_DONE;
	big.status = 200;
	big.keep_alive = 0;
	big.eof = 1;
	big.in = in + 1;
	memcpy(in + 1, "HTTP/1.1 200 OK\r\nX: ", 20);
	ld_case_tap(&big, len - 1, pass, fail);
	free(in);
}

/* One TAP line for a check of the queue's helpers. */
static void
ld_tap(int ok, const char *name, size_t *pass, size_t *fail)
{
	if (ok)
		printf("ok %zu - %s\n", ++*pass + *fail, name);
	else
		printf("not ok %zu - %s\n", *pass + ++*fail, name);
}

/* The members the journey reads out of the server's answers. */
static void
ld_json_cases(size_t *pass, size_t *fail)
{
	static const char doc[] = "{\"sale\":7,\"state\":\"open\","
	    "\"seed\":null,\"through\":-1,\"admitted\": 1500,"
	    "\"rate\":12.5,\"ticket\":\"dDF8N3xh.QUJD\",\"bad\":\"a\\\"b\","
	    "\"big\":99999999999999999999}";
	static const char iso[] = "{\"opensAt\":\"2026-12-03T07:06:19.009Z\"}",
	    ms[] = "{\"t\":1796281579009}", day[] = "{\"t\":\"2026-12-03\"}";
	char out[16];
	int64_t v = 0;

	ld_tap(ld_json_str(doc, sizeof(doc) - 1, "state", out, sizeof(out)) ==
	    0 && strcmp(out, "open") == 0, "json: a string member", pass, fail);
	ld_tap(ld_json_str(doc, sizeof(doc) - 1, "seed", out, sizeof(out)) ==
	    1, "json: null", pass, fail);
	ld_tap(ld_json_str(doc, sizeof(doc) - 1, "ticket", out, 8) == -1,
	    "json: a string longer than the room is refused", pass, fail);
	ld_tap(ld_json_str(doc, sizeof(doc) - 1, "bad", out, sizeof(out)) ==
	    -1, "json: an escaped string is refused", pass, fail);
	ld_tap(ld_json_str(doc, sizeof(doc) - 1, "open", out, sizeof(out)) ==
	    -1, "json: a value is not a key", pass, fail);
	ld_tap(ld_json_int(doc, sizeof(doc) - 1, "through", &v) == 0 &&
	    v == -1, "json: a negative integer", pass, fail);
	ld_tap(ld_json_int(doc, sizeof(doc) - 1, "admitted", &v) == 0 &&
	    v == 1500, "json: an integer after a space", pass, fail);
	ld_tap(ld_json_int(doc, sizeof(doc) - 1, "rate", &v) == 0 && v == 12,
	    "json: a fraction's integer part", pass, fail);
	ld_tap(ld_json_int(doc, sizeof(doc) - 1, "big", &v) == -1,
	    "json: an integer past int64 is refused", pass, fail);
	ld_tap(ld_json_time_ms(iso, sizeof(iso) - 1, "opensAt", &v) == 0 &&
	    v == 1796281579009LL && ld_json_time_ms(ms, sizeof(ms) - 1, "t",
	    &v) == 0 && v == 1796281579009LL && ld_json_time_ms(day,
	    sizeof(day) - 1, "t", &v) == -1,
	    "json: a time, ISO 8601 UTC or ms", pass, fail);
	ld_tap(ld_json_int(doc, sizeof(doc) - 1, "state", &v) == -1 &&
	    ld_json_int(doc, sizeof(doc) - 1, "absent", &v) == -1,
	    "json: a string or nothing is no integer", pass, fail);
}

/* The proof of work: the first nonce that passes, and only it before. */
static void
ld_pow_cases(size_t *pass, size_t *fail)
{
	uint32_t nonce = 0, x;
	int ok;

	ok = ld_pow_solve(42, "shopper-1", 10, &nonce) == 0 &&
	    ld_pow_ok(42, "shopper-1", nonce, 10);
	for (x = 0; ok && x < nonce; x++)
		ok = !ld_pow_ok(42, "shopper-1", x, 10);
	ld_tap(ok, "pow: the solution has 10 zero bits, no smaller one has",
	    pass, fail);
	ld_tap(ld_pow_ok(42, "shopper-1", 12345, 0),
	    "pow: 0 bits: any nonce", pass, fail);
	/* Bound to the account and the sale: a different message. */
	ld_tap(!ld_pow_ok(42, "shopper-2", nonce, 10) ||
	    !ld_pow_ok(43, "shopper-1", nonce, 10) ||
	    nonce == 0, "pow: another account's or sale's message differs",
	    pass, fail);
}

int
ld_self_test(void)
{
	size_t i, ncases = sizeof(ld_cases) / sizeof(ld_cases[0]);
	size_t pass = 0, fail = 0;

	/* TAP, for make check's driver, and a plain count at the end. */
	printf("1..%zu\n", ncases + 2 + 14);
	for (i = 0; i < ncases; i++)
		ld_case_tap(&ld_cases[i], strlen(ld_cases[i].in), &pass, &fail);
	ld_case_big(&pass, &fail);
	ld_json_cases(&pass, &fail);
	ld_pow_cases(&pass, &fail);
	printf("self-test: %zu passed, %zu failed\n", pass, fail);
	return fail == 0 ? 0 : 1;
}

/*
 * Unit test of lib/answer: each verdict of a purchase's admission and each
 * answer of an order, as the bytes a FastCGI client (nginx) receives:
 * status line, headers and body, exactly. Every request travels a real
 * FastCGI connection (a socket pair) through lib/fcgi's own serving path,
 * so the parameters it reads are those of the records written here.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/socket.h>

#include <sodium.h>

#include "answer.h"
#include "log.h"
#include "uuid.h"
#include "expect.h"
#include "fcgi_client.h"

#define NOW		1700000000
#define EXPIRES_MS	1700000900123LL
#define EXPIRES_AT	"2023-11-14T22:28:20.123Z"
#define REQUEST_ID	"5e1f00d2"
#define ORDER_ID	"01890a5d-ac96-774b-bcce-b302099a8057"

static fs_token_keys *keys;
static fs_urlsig_key *url;
static fs_queue_keys *qkeys;

/* The request being served: its parameters, and what the handler does with it. */
static struct {
	const char *method, *query, *authorization, *pass;
	void (*run)(fs_fcgi *);
	/* what fs_answer_purchase_admit said, and the order it filled in */
	int admitted;
	struct fs_order order;
	int64_t sale_end_ms;
} req;

static void
handle(fs_fcgi *f, void *ctx)
{
	(void)ctx;
	req.run(f);
}

static const struct fs_fcgi_service service = { "test-answer", NULL, NULL, NULL, NULL, handle,
	NULL, 0, NULL };

/* A FastCGI length: one byte under 128, else four with the high bit set. */
static size_t
length(unsigned char *out, size_t n)
{
	if (n < 128) {
		out[0] = (unsigned char)n;
		return 1;
	}
	out[0] = (unsigned char)(0x80 | n >> 24);
	out[1] = (unsigned char)(n >> 16);
	out[2] = (unsigned char)(n >> 8);
	out[3] = (unsigned char)n;
	return 4;
}

/* A name-value pair, or nothing for a NULL value. */
static size_t
pair(unsigned char *out, const char *name, const char *value)
{
	size_t n = strlen(name), v, o = 0;

	if (value == NULL)
		return 0;
	v = strlen(value);
	o += length(out + o, n);
	o += length(out + o, v);
	memcpy(out + o, name, n);
	memcpy(out + o + n, value, v);
	return o + n + v;
}

/*
 * Serves req on a new connection as nginx would send it (no keep-alive)
 * and writes what came back, the STDOUT stream, into out. 0, or -1 when
 * the records that came back are not one answer.
 */
static int
serve(char *out, size_t outlen)
{
	static const unsigned char begin[8] = { 0, 1, 0, 0, 0, 0, 0, 0 };
	unsigned char buf[2048], params[1024], h[8], c[65536];
	size_t o = 0, n = 0, have = 0;
	int sv[2];

	n += pair(params + n, "DOCUMENT_URI", "/api/items/11/purchase");
	n += pair(params + n, "REQUEST_METHOD", req.method);
	n += pair(params + n, "QUERY_STRING", req.query);
	n += pair(params + n, "HTTP_AUTHORIZATION", req.authorization);
	n += pair(params + n, "HTTP_FLASHSALE_PASS", req.pass);
	n += pair(params + n, "REQUEST_ID", REQUEST_ID);
	o += test_fcgi_record(buf + o, 1, 1, begin, sizeof(begin));
	o += test_fcgi_record(buf + o, 4, 1, params, n);
	o += test_fcgi_record(buf + o, 4, 1, "", 0);
	o += test_fcgi_record(buf + o, 5, 1, "", 0);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0 || write(sv[1], buf, o) != (ssize_t)o)
		exit(99);
	if (fs_fcgi_serve_connection(&service, NULL, sv[0]) != 1)
		return -1;
	for (;;) {
		size_t len;

		if (read(sv[1], h, 8) != 8)
			break;
		len = (size_t)h[4] << 8 | h[5];
		if (len + h[6] > 0 && read(sv[1], c, len + h[6]) != (ssize_t)(len + h[6]))
			break;
		if (h[1] == 3) { /* END_REQUEST */
			close(sv[1]);
			out[have] = '\0';
			return 0;
		}
		if (h[1] != 6 || have + len >= outlen)
			break;
		memcpy(out + have, c, len);
		have += len;
	}
	close(sv[1]);
	return -1;
}

/* The bytes of an answer: status line, the fixed headers, extra headers, body. */
static const char *
answer(const char *status, const char *headers, const char *body)
{
	static char out[2048];

	snprintf(out, sizeof(out),
	    "Status: %s\r\nContent-Type: application/json; charset=utf-8\r\n"
	    "Content-Length: %zu\r\nCache-Control: no-store\r\n%s\r\n%s",
	    status, strlen(body), headers, body);
	return out;
}

/* Serves req and checks the bytes that came back against want. */
static void
expect_answer(const char *want, const char *what)
{
	char got[4096];

	if (serve(got, sizeof(got)) != 0) {
		check(0, what);
		return;
	}
	if (strcmp(got, want) != 0)
		printf("# got:  %s\n# want: %s\n", got, want);
	check(strcmp(got, want) == 0, what);
}

/* Admits the request; an admitted one is answered 202 with its receipt. */
static void
run_admit(fs_fcgi *f)
{
	memset(&req.order, 0, sizeof(req.order));
	req.order.item = 11;
	req.sale_end_ms = 0;
	req.admitted = fs_answer_purchase_admit(f, keys, url, qkeys, (int64_t)NOW * 1000,
			   &req.order, &req.sale_end_ms) == 0;
	if (req.admitted) {
		req.order.status = FS_ORDER_PENDING;
		req.order.expires_ms = EXPIRES_MS;
		fs_answer_purchase_accepted(f, &req.order);
	}
}

/* A paid order of item 11, the shape the order answers take. */
static struct fs_order
paid_order(void)
{
	struct fs_order o;

	memset(&o, 0, sizeof(o));
	snprintf(o.id, sizeof(o.id), "%s", ORDER_ID);
	o.sale = 7;
	o.item = 11;
	o.status = FS_ORDER_PAID;
	o.expires_ms = EXPIRES_MS;
	return o;
}

static void
run_order(fs_fcgi *f)
{
	struct fs_order o = paid_order();

	fs_answer_order(f, &o);
}

static void
run_already(fs_fcgi *f)
{
	fs_answer_purchase_already(f, ORDER_ID);
}

static void
run_processing(fs_fcgi *f)
{
	struct fs_order o = paid_order();

	o.status = FS_ORDER_PENDING;
	fs_answer_order_conflict(f, FS_ERR_ORDER_PROCESSING, &o);
}

static void
run_not_pending(fs_fcgi *f)
{
	struct fs_order o = paid_order();

	fs_answer_order_conflict(f, FS_ERR_ORDER_NOT_PENDING, &o);
}

/* The purchase's verdicts, each answered once. */
static void
test_admit(const char *query, const char *early, const char *bearer)
{
	char want[512];

	req.run = run_admit;
	req.method = "POST";
	req.query = query;
	req.authorization = bearer;
	if (serve(want, sizeof(want)) != 0)
		exit(99);
	check(req.admitted && req.order.sale == 7 && strcmp(req.order.user, "ann") == 0 &&
		fs_uuid_parse(req.order.id, strlen(req.order.id), NULL) == 0 &&
		req.sale_end_ms == (int64_t)(NOW + 3600) * 1000,
	    "admitted: 0, with the sale, the shopper, a new order id and the sale's end");
	{
		char body[256];

		snprintf(body, sizeof(body),
		    "{\"orderId\":\"%s\",\"status\":\"PENDING\",\"expiresAt\":\"" EXPIRES_AT "\"}",
		    req.order.id);
		check(strcmp(want, answer("202 Accepted", "", body)) == 0,
		    "admitted and accepted: 202 with the receipt (id, status, expiresAt)");
	}

	req.method = "GET";
	expect_answer(answer("405 Method Not Allowed", "Allow: POST\r\n",
			  "{\"error\":\"METHOD_NOT_ALLOWED\",\"message\":\"This method is not "
			  "allowed here.\",\"requestId\":\"" REQUEST_ID "\"}"),
	    "not a POST: 405 with Allow: POST");
	check(!req.admitted, "not a POST: -1, the refusal answered");

	req.method = "POST";
	req.query = "sale=7&start=1&end=2&sig=AAAA";
	expect_answer(answer("403 Forbidden", "",
			  "{\"error\":\"BAD_PURCHASE_URL\",\"message\":\"The purchase link is "
			  "invalid or no longer valid.\",\"requestId\":\"" REQUEST_ID "\"}"),
	    "a forged URL: 403 BAD_PURCHASE_URL, no extra header");
	check(!req.admitted, "a forged URL: -1");

	req.query = early;
	expect_answer(answer("425 Too Early", "Retry-After: 1\r\n",
			  "{\"error\":\"SALE_NOT_STARTED\",\"message\":\"The sale has not started "
			  "yet.\",\"requestId\":\"" REQUEST_ID "\"}"),
	    "a signed URL before the start: 425 SALE_NOT_STARTED with Retry-After: 1");
	check(!req.admitted, "before the start: -1");

	req.query = query;
	req.authorization = NULL;
	expect_answer(answer("401 Unauthorized",
			  "WWW-Authenticate: Bearer realm=\"flashsale\", error=\"invalid_token\"\r\n",
			  "{\"error\":\"UNAUTHENTICATED\",\"message\":\"Sign in again: the token is "
			  "missing, invalid or expired.\",\"requestId\":\"" REQUEST_ID "\"}"),
	    "no token: 401 UNAUTHENTICATED with the Bearer challenge");
	check(!req.admitted, "no token: -1");
}

/* A waiting room's URL: 403 NOT_ADMITTED without a valid pass, the pass's shopper with one. */
static void
test_admit_queue(const char *query, const char *pass)
{
	char got[512];

	req.run = run_admit;
	req.method = "POST";
	req.query = query;
	req.authorization = NULL;
	req.pass = NULL;
	expect_answer(answer("403 Forbidden", "",
			  "{\"error\":\"NOT_ADMITTED\",\"message\":\"This sale has a waiting room: "
			  "buy with the pass it gives you when your turn comes.\",\"requestId\":\"" REQUEST_ID
			  "\"}"),
	    "a waiting room's URL without a pass: 403 NOT_ADMITTED, no extra header");
	check(!req.admitted, "without a pass: -1");
	req.pass = pass;
	if (serve(got, sizeof(got)) != 0)
		exit(99);
	check(req.admitted && req.order.sale == 7 && strcmp(req.order.user, "bea") == 0 &&
		strncmp(got, "Status: 202 Accepted\r\n", 22) == 0,
	    "the Flashsale-Pass header admits its shopper, with no Authorization: 202");
	req.pass = NULL;
}

/* The answers about an order. */
static void
test_orders(void)
{
	req.run = run_order;
	expect_answer(answer("200 OK", "",
			  "{\"orderId\":\"" ORDER_ID "\",\"itemId\":11,\"status\":\"PAID\","
			  "\"expiresAt\":\"" EXPIRES_AT "\"}"),
	    "an order: 200 with its status document");
	req.run = run_already;
	expect_answer(answer("409 Conflict", "",
			  "{\"error\":\"ALREADY_PURCHASED\",\"message\":\"You already hold an "
			  "order in this sale.\",\"orderId\":\"" ORDER_ID
			  "\",\"requestId\":\"" REQUEST_ID "\"}"),
	    "already purchased: 409 naming the live order");
	req.run = run_processing;
	expect_answer(answer("409 Conflict", "",
			  "{\"error\":\"ORDER_PROCESSING\",\"message\":\"The order is still being "
			  "recorded; try again in a moment.\",\"orderId\":\"" ORDER_ID
			  "\",\"status\":\"PENDING\",\"requestId\":\"" REQUEST_ID "\"}"),
	    "an order still being recorded: 409 ORDER_PROCESSING with its id and status");
	req.run = run_not_pending;
	expect_answer(answer("409 Conflict", "",
			  "{\"error\":\"ORDER_NOT_PENDING\",\"message\":\"The order is no longer "
			  "awaiting payment.\",\"orderId\":\"" ORDER_ID
			  "\",\"status\":\"PAID\",\"requestId\":\"" REQUEST_ID "\"}"),
	    "an order no longer pending: 409 ORDER_NOT_PENDING with its id and status");
}

int
main(void)
{
	unsigned char raw[FS_URLSIG_KEYBYTES] = { 9 }, hs[32] = { 7 };
	unsigned char qraw[FS_QUEUE_KEYBYTES] = { 5 };
	char query[FS_URLSIG_SIGNED_MAX], early[FS_URLSIG_SIGNED_MAX], tok[1024], bearer[1100];
	char queued[FS_URLSIG_SIGNED_MAX], pass[FS_QUEUE_TOKEN_MAX];

	fs_log_set_level(FS_LOG_ERROR);
	if (sodium_init() < 0 || (keys = fs_token_keys_new()) == NULL ||
	    (url = fs_urlsig_key_new()) == NULL || (qkeys = fs_queue_keys_new()) == NULL ||
	    fs_token_keys_set(keys, NULL, NULL, hs, 32) != 0)
		return 99;
	fs_urlsig_key_set(url, raw);
	fs_queue_keys_set(qkeys, qraw);
	if (fs_urlsig_sign(url, 11, 7, NOW - 10, NOW + 3600, 0, query, sizeof(query)) != 0 ||
	    fs_urlsig_sign(url, 11, 7, NOW + 10, NOW + 3600, 0, early, sizeof(early)) != 0 ||
	    fs_urlsig_sign(url, 11, 7, NOW - 10, NOW + 3600, 1, queued, sizeof(queued)) != 0 ||
	    fs_queue_pass_mint(qkeys, 7, "bea", NOW + 60, pass, sizeof(pass)) != 0 ||
	    fs_token_mint(keys, FS_TOKEN_ALG_HS256, "ann", NOW, 60, tok, sizeof(tok)) != FS_TOKEN_OK)
		return 99;
	snprintf(bearer, sizeof(bearer), "Bearer %s", tok);

	test_admit(query, early, bearer);
	test_admit_queue(queued, pass);
	test_orders();

	fs_queue_keys_free(qkeys);
	fs_urlsig_key_free(url);
	fs_token_keys_free(keys);
	return failures == 0 ? 0 : 1;
}

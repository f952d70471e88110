/* Unit test of lib/purchase: each check's verdict, cheapest first, and what an admission fills in. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "purchase.h"
#include "uuid.h"
#include "expect.h"

#define NOW 1700000000

static fs_token_keys *keys;
static fs_urlsig_key *url;
static fs_queue_keys *qkeys;

/* Admits req for item 11 at NOW; the verdict, the shopper in user (64 bytes). */
static enum fs_purchase_verdict
admit(const struct fs_purchase_request *req, const fs_queue_keys *with, char user[65])
{
	struct fs_order o;
	enum fs_purchase_verdict v;

	memset(&o, 0, sizeof(o));
	o.item = 11;
	v = fs_purchase_admit(req, keys, url, with, (int64_t)NOW * 1000, &o, NULL);
	snprintf(user, 65, "%s", v == FS_PURCHASE_ADMITTED && o.sale == 7 ? o.user : "");
	return v;
}

/*
 * A waiting room's URL (q=1): the pass names the shopper and no token is
 * read; any other URL reads the token and never the pass.
 */
static void
test_queue_gate(const char *plain, const char *bearer)
{
	unsigned char other_raw[FS_QUEUE_KEYBYTES] = { 3 };
	char query[FS_URLSIG_SIGNED_MAX], pass[FS_QUEUE_TOKEN_MAX], bad[FS_QUEUE_TOKEN_MAX],
	    user[65];
	struct fs_purchase_request req = { 1, query, NULL, NULL };
	fs_queue_keys *other = fs_queue_keys_new();

	if (other == NULL || fs_urlsig_sign(url, 11, 7, NOW - 10, NOW + 3600, 1, query,
				 sizeof(query)) != 0 ||
	    fs_queue_pass_mint(qkeys, 7, "bea", NOW + 60, pass, sizeof(pass)) != 0)
		exit(99);
	fs_queue_keys_set(other, other_raw);
	check(admit(&req, qkeys, user) == FS_PURCHASE_NOT_ADMITTED,
	    "queue URL without a pass: NOT_ADMITTED");
	req.authorization = bearer;
	check(admit(&req, qkeys, user) == FS_PURCHASE_NOT_ADMITTED,
	    "queue URL with a valid token but no pass: NOT_ADMITTED");
	req.authorization = NULL;
	req.pass = pass;
	check(admit(&req, qkeys, user) == FS_PURCHASE_ADMITTED && strcmp(user, "bea") == 0,
	    "queue URL with a valid pass and no Authorization: ADMITTED, the pass's shopper");
	req.authorization = bearer;
	check(admit(&req, qkeys, user) == FS_PURCHASE_ADMITTED && strcmp(user, "bea") == 0,
	    "queue URL: the order is the pass's shopper, not the token's");
	check(admit(&req, other, user) == FS_PURCHASE_NOT_ADMITTED &&
		admit(&req, NULL, user) == FS_PURCHASE_NOT_ADMITTED,
	    "a pass under another key, or no queue key: NOT_ADMITTED");
	if (fs_queue_pass_mint(qkeys, 8, "bea", NOW + 60, bad, sizeof(bad)) != 0)
		exit(99);
	req.pass = bad;
	check(admit(&req, qkeys, user) == FS_PURCHASE_NOT_ADMITTED,
	    "another sale's pass: NOT_ADMITTED");
	if (fs_queue_pass_mint(qkeys, 7, "bea", NOW, bad, sizeof(bad)) != 0)
		exit(99);
	check(admit(&req, qkeys, user) == FS_PURCHASE_NOT_ADMITTED,
	    "a pass expired this second: NOT_ADMITTED");
	snprintf(bad, sizeof(bad), "%s", pass);
	bad[strlen(bad) - 2] = bad[strlen(bad) - 2] == 'A' ? 'B' : 'A';
	check(admit(&req, qkeys, user) == FS_PURCHASE_NOT_ADMITTED,
	    "a forged pass: NOT_ADMITTED");
	if (fs_queue_ticket_mint(qkeys, 7, "bea", bad, sizeof(bad)) != 0)
		exit(99);
	check(admit(&req, qkeys, user) == FS_PURCHASE_NOT_ADMITTED,
	    "the join's ticket is no pass: NOT_ADMITTED");
	req.query = plain;
	req.pass = pass;
	req.authorization = NULL;
	check(admit(&req, qkeys, user) == FS_PURCHASE_UNAUTHENTICATED,
	    "a URL without q: a pass without a token is UNAUTHENTICATED");
	req.authorization = bearer;
	check(admit(&req, qkeys, user) == FS_PURCHASE_ADMITTED && strcmp(user, "ann") == 0,
	    "a URL without q: the token's shopper, the pass ignored");
	fs_queue_keys_free(other);
}

/*
 * Issue 36: a 409 is a promise. A hold met by a retry is promised only when
 * recorded or when the broker has its order; a "sent" one is published
 * again once its first attempt heard the broker, while the sweeper would
 * still count the new publication; otherwise the retry waits (503).
 */
static void
test_held(void)
{
	struct fs_purchase_held_bounds b;
	struct fs_stock_record rec = { .reserved_ms = 1000000, .broker = FS_STOCK_BROKER_SENT };
	int64_t t0 = rec.reserved_ms;

	/* Producer timeout 3 s, linger 5 ms, holds 120 s, margin 10 s. */
	fs_purchase_held_bounds_of(&b, 3000, 5, 120, 10000);
	check(b.in_flight_ms == 4005 && b.publish_ms == 120000 - 3005 - 10000,
	    "held: in flight 4,005 ms; published again until 106,995 ms");
	check(fs_purchase_held_verdict(&rec, 1, t0 + 10, &b) == FS_PURCHASE_HELD_PROMISED,
	    "held: recorded in PostgreSQL: promised at once");
	check(fs_purchase_held_verdict(&rec, 0, t0 + 10, &b) == FS_PURCHASE_HELD_WAIT &&
		fs_purchase_held_verdict(&rec, 0, t0 + 4004, &b) == FS_PURCHASE_HELD_WAIT,
	    "held: sent, its first attempt may still wait for the broker: wait");
	check(fs_purchase_held_verdict(&rec, 0, t0 + 4005, &b) == FS_PURCHASE_HELD_PUBLISH &&
		fs_purchase_held_verdict(&rec, 0, t0 + 106994, &b) == FS_PURCHASE_HELD_PUBLISH,
	    "held: sent, its first attempt over: published again");
	check(fs_purchase_held_verdict(&rec, 0, t0 + 106995, &b) == FS_PURCHASE_HELD_WAIT,
	    "held: too late for the sweeper to see a new publication: wait (it decides)");
	rec.broker = FS_STOCK_BROKER_HAS;
	check(fs_purchase_held_verdict(&rec, 0, t0 + 10, &b) == FS_PURCHASE_HELD_PROMISED,
	    "held: the broker has it: promised");
}

int
main(void)
{
	unsigned char raw[FS_URLSIG_KEYBYTES] = { 9 }, hs[32] = { 7 }, qraw[FS_QUEUE_KEYBYTES] = { 5 };
	char query[FS_URLSIG_SIGNED_MAX], other[FS_URLSIG_SIGNED_MAX], tok[1024], bearer[1100];
	struct fs_purchase_request req = { 1, query, bearer, NULL };
	struct fs_order o;
	int64_t end = 0;

	if (sodium_init() < 0 || (keys = fs_token_keys_new()) == NULL ||
	    (url = fs_urlsig_key_new()) == NULL || (qkeys = fs_queue_keys_new()) == NULL ||
	    fs_token_keys_set(keys, NULL, NULL, hs, 32) != 0)
		return 99;
	fs_urlsig_key_set(url, raw);
	fs_queue_keys_set(qkeys, qraw);
	if (fs_urlsig_sign(url, 11, 7, NOW - 10, NOW + 3600, 0, query, sizeof(query)) != 0 ||
	    fs_urlsig_sign(url, 11, 7, NOW + 10, NOW + 3600, 0, other, sizeof(other)) != 0 ||
	    fs_token_mint(keys, FS_TOKEN_ALG_HS256, "ann", NOW, 60, tok, sizeof(tok)) != FS_TOKEN_OK)
		return 99;
	snprintf(bearer, sizeof(bearer), "Bearer %s", tok);

	memset(&o, 0, sizeof(o));
	o.item = 11;
	check(fs_purchase_admit(&req, keys, url, qkeys, (int64_t)NOW * 1000, &o, &end) ==
		    FS_PURCHASE_ADMITTED &&
		o.sale == 7 && strcmp(o.user, "ann") == 0 &&
		fs_uuid_parse(o.id, strlen(o.id), NULL) == 0 && end == (int64_t)(NOW + 3600) * 1000,
	    "admitted: the sale, the shopper, a new order id and the sale's end");
	req.post = 0;
	check(fs_purchase_admit(&req, keys, url, qkeys, (int64_t)NOW * 1000, &o, NULL) ==
		FS_PURCHASE_BAD_METHOD,
	    "not a POST: refused first");
	req.post = 1;
	o.item = 12;
	check(fs_purchase_admit(&req, keys, url, qkeys, (int64_t)NOW * 1000, &o, NULL) ==
		FS_PURCHASE_BAD_URL,
	    "the URL of another item: BAD_URL");
	o.item = 11;
	req.query = other;
	check(fs_purchase_admit(&req, keys, url, qkeys, (int64_t)NOW * 1000, &o, NULL) ==
		FS_PURCHASE_NOT_STARTED,
	    "a signed URL before its start: NOT_STARTED");
	req.query = NULL;
	check(fs_purchase_admit(&req, keys, url, qkeys, (int64_t)NOW * 1000, &o, NULL) ==
		FS_PURCHASE_BAD_URL,
	    "no query: BAD_URL");
	req.query = query;
	req.authorization = NULL;
	check(fs_purchase_admit(&req, keys, url, qkeys, (int64_t)NOW * 1000, &o, NULL) ==
		FS_PURCHASE_UNAUTHENTICATED,
	    "no token: UNAUTHENTICATED");
	req.authorization = bearer;
	check(fs_purchase_admit(&req, keys, url, qkeys, (int64_t)(NOW + 600) * 1000, &o, NULL) ==
		FS_PURCHASE_UNAUTHENTICATED,
	    "an expired token: UNAUTHENTICATED");
	test_queue_gate(query, bearer);
	test_held();
	fs_queue_keys_free(qkeys);
	fs_urlsig_key_free(url);
	fs_token_keys_free(keys);
	return failures == 0 ? 0 : 1;
}

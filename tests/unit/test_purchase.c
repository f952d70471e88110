/* Unit test of lib/purchase: each check's verdict, cheapest first, and what an admission fills in. */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "purchase.h"
#include "uuid.h"
#include "expect.h"

#define NOW 1700000000

int
main(void)
{
	unsigned char raw[FS_URLSIG_KEYBYTES] = { 9 }, hs[32] = { 7 };
	char query[FS_URLSIG_SIGNED_MAX], other[FS_URLSIG_SIGNED_MAX], tok[1024], bearer[1100];
	struct fs_purchase_request req = { 1, query, bearer };
	struct fs_order o;
	fs_token_keys *keys;
	fs_urlsig_key *url;
	int64_t end = 0;

	if (sodium_init() < 0 || (keys = fs_token_keys_new()) == NULL ||
	    (url = fs_urlsig_key_new()) == NULL || fs_token_keys_set(keys, NULL, NULL, hs, 32) != 0)
		return 99;
	fs_urlsig_key_set(url, raw);
	if (fs_urlsig_sign(url, 11, 7, NOW - 10, NOW + 3600, query, sizeof(query)) != 0 ||
	    fs_urlsig_sign(url, 11, 7, NOW + 10, NOW + 3600, other, sizeof(other)) != 0 ||
	    fs_token_mint(keys, FS_TOKEN_ALG_HS256, "ann", NOW, 60, tok, sizeof(tok)) != FS_TOKEN_OK)
		return 99;
	snprintf(bearer, sizeof(bearer), "Bearer %s", tok);

	memset(&o, 0, sizeof(o));
	o.item = 11;
	check(fs_purchase_admit(&req, keys, url, (int64_t)NOW * 1000, &o, &end) ==
		    FS_PURCHASE_ADMITTED &&
		o.sale == 7 && strcmp(o.user, "ann") == 0 &&
		fs_uuid_parse(o.id, strlen(o.id), NULL) == 0 && end == (int64_t)(NOW + 3600) * 1000,
	    "admitted: the sale, the shopper, a new order id and the sale's end");
	req.post = 0;
	check(fs_purchase_admit(&req, keys, url, (int64_t)NOW * 1000, &o, NULL) ==
		FS_PURCHASE_BAD_METHOD,
	    "not a POST: refused first");
	req.post = 1;
	o.item = 12;
	check(fs_purchase_admit(&req, keys, url, (int64_t)NOW * 1000, &o, NULL) ==
		FS_PURCHASE_BAD_URL,
	    "the URL of another item: BAD_URL");
	o.item = 11;
	req.query = other;
	check(fs_purchase_admit(&req, keys, url, (int64_t)NOW * 1000, &o, NULL) ==
		FS_PURCHASE_NOT_STARTED,
	    "a signed URL before its start: NOT_STARTED");
	req.query = NULL;
	check(fs_purchase_admit(&req, keys, url, (int64_t)NOW * 1000, &o, NULL) ==
		FS_PURCHASE_BAD_URL,
	    "no query: BAD_URL");
	req.query = query;
	req.authorization = NULL;
	check(fs_purchase_admit(&req, keys, url, (int64_t)NOW * 1000, &o, NULL) ==
		FS_PURCHASE_UNAUTHENTICATED,
	    "no token: UNAUTHENTICATED");
	req.authorization = bearer;
	check(fs_purchase_admit(&req, keys, url, (int64_t)(NOW + 600) * 1000, &o, NULL) ==
		FS_PURCHASE_UNAUTHENTICATED,
	    "an expired token: UNAUTHENTICATED");
	fs_urlsig_key_free(url);
	fs_token_keys_free(keys);
	return failures == 0 ? 0 : 1;
}

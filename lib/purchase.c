#include "config.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "purchase.h"
#include "uuid.h"

_Static_assert(FS_ORDERS_USER_MAX >= FS_TOKEN_SUB_MAX,
    "a token's (and so a pass's) subject fits an order's user");

enum fs_purchase_verdict
fs_purchase_admit(const struct fs_purchase_request *req, const fs_token_keys *keys,
    const fs_urlsig_key *url_key, const fs_queue_keys *queue_keys, int64_t now_ms,
    struct fs_order *o, int64_t *sale_end_ms)
{
	const char *query = req->query != NULL ? req->query : "";
	const char *auth = req->authorization != NULL ? req->authorization : "";
	const char *pass = req->pass != NULL ? req->pass : "";
	enum fs_urlsig_status us;
	time_t now = (time_t)(now_ms / 1000), end;
	int queue;

	if (!req->post)
		return FS_PURCHASE_BAD_METHOD;
	us = fs_urlsig_check(url_key, o->item, query, strlen(query), now, &o->sale, &end, &queue);
	if (us == FS_URLSIG_NOT_STARTED)
		return FS_PURCHASE_NOT_STARTED;
	if (us != FS_URLSIG_OK)
		return FS_PURCHASE_BAD_URL;
	if (sale_end_ms != NULL)
		*sale_end_ms = (int64_t)end * 1000;
	/* A waiting room's pass names the shopper: one crypto_auth_verify, no token. */
	if (queue) {
		if (queue_keys == NULL ||
		    fs_queue_pass_check(queue_keys, pass, strlen(pass), o->sale, (int64_t)now,
			o->user, sizeof(o->user), NULL) != FS_QUEUE_OK)
			return FS_PURCHASE_NOT_ADMITTED;
	} else if (fs_token_verify_bearer(keys, auth, strlen(auth), now, o->user,
		       sizeof(o->user)) != FS_TOKEN_OK)
		return FS_PURCHASE_UNAUTHENTICATED;
	if (fs_uuid_v7(o->id) != 0)
		return FS_PURCHASE_NO_ORDER_ID;
	return FS_PURCHASE_ADMITTED;
}

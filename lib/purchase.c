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

/* The time a first attempt's verdict takes to reach its request after the producer's timeout. */
#define VERDICT_SLACK_MS 1000

void
fs_purchase_held_bounds_of(struct fs_purchase_held_bounds *b, long kafka_timeout_ms,
    long linger_ms, long hold_max_age_s, long margin_ms)
{
	int64_t delivery_ms = (int64_t)kafka_timeout_ms + linger_ms;

	b->in_flight_ms = delivery_ms + VERDICT_SLACK_MS;
	b->publish_ms = (int64_t)hold_max_age_s * 1000 - delivery_ms - margin_ms;
}

enum fs_purchase_held
fs_purchase_held_verdict(const struct fs_stock_record *rec, int recorded, int64_t now_ms,
    const struct fs_purchase_held_bounds *b)
{
	int64_t age_ms = now_ms - rec->reserved_ms;

	if (recorded || rec->broker == FS_STOCK_BROKER_HAS)
		return FS_PURCHASE_HELD_PROMISED;
	if (age_ms < b->in_flight_ms || age_ms >= b->publish_ms)
		return FS_PURCHASE_HELD_WAIT;
	return FS_PURCHASE_HELD_PUBLISH;
}

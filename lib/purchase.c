#include "config.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "purchase.h"
#include "uuid.h"

_Static_assert(FS_ORDERS_USER_MAX >= FS_TOKEN_SUB_MAX, "a token's subject fits an order's user");

int
fs_purchase_admit(fs_fcgi *fcgi, const fs_token_keys *keys, const fs_urlsig_key *url_key,
    int64_t now_ms, struct fs_order *o, int64_t *sale_end_ms)
{
	const char *query, *auth;
	enum fs_urlsig_status us;
	enum fs_token_status ts;
	time_t now = (time_t)(now_ms / 1000), end;

	if (!fs_fcgi_method_is(fcgi, "POST")) {
		fs_fcgi_error(fcgi, FS_ERR_METHOD_NOT_ALLOWED, NULL, "Allow: POST\r\n");
		return -1;
	}
	query = fs_fcgi_param(fcgi, "QUERY_STRING");
	if (query == NULL)
		query = "";
	us = fs_urlsig_check(url_key, o->item, query, strlen(query), now, &o->sale, &end);
	if (us == FS_URLSIG_NOT_STARTED) {
		fs_fcgi_error(fcgi, FS_ERR_SALE_NOT_STARTED, NULL, FS_HTTP_RETRY_SOON);
		return -1;
	}
	if (us != FS_URLSIG_OK) {
		fs_fcgi_error(fcgi, FS_ERR_BAD_PURCHASE_URL, NULL, NULL);
		return -1;
	}
	if (sale_end_ms != NULL)
		*sale_end_ms = (int64_t)end * 1000;
	auth = fs_fcgi_param(fcgi, "HTTP_AUTHORIZATION");
	ts = fs_token_verify_bearer(keys, auth != NULL ? auth : "", auth != NULL ? strlen(auth) : 0,
	    now, o->user, sizeof(o->user));
	if (ts != FS_TOKEN_OK) {
		fs_fcgi_error(fcgi, FS_ERR_UNAUTHENTICATED, NULL, FS_HTTP_BEARER_CHALLENGE);
		return -1;
	}
	if (fs_uuid_v7(o->id) != 0) {
		fs_fcgi_error(fcgi, FS_ERR_INTERNAL, NULL, NULL);
		return -1;
	}
	return 0;
}

void
fs_purchase_accepted(fs_fcgi *fcgi, const struct fs_order *o)
{
	char body[FS_ORDERS_DOC_MAX];
	int n = fs_orders_receipt(o, body, sizeof(body));

	if (n < 0) {
		fs_fcgi_error(fcgi, FS_ERR_INTERNAL, NULL, NULL);
		return;
	}
	fs_fcgi_answer(fcgi, FS_HTTP_ACCEPTED, NULL, body, (size_t)n);
}

void
fs_purchase_already(fs_fcgi *fcgi, const char *order_id)
{
	char extra[80];

	snprintf(extra, sizeof(extra), "\"orderId\":\"%s\"", order_id);
	fs_fcgi_error(fcgi, FS_ERR_ALREADY_PURCHASED, extra, NULL);
}

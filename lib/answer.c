#include "config.h"

#include <stdio.h>

#include "answer.h"

/* The answer of each refusal: error, extra header. */
static const struct {
	enum fs_http_error error;
	const char *header;
} refusals[FS_PURCHASE__MAX] = {
	[FS_PURCHASE_BAD_METHOD] = { FS_ERR_METHOD_NOT_ALLOWED, "Allow: POST\r\n" },
	[FS_PURCHASE_BAD_URL] = { FS_ERR_BAD_PURCHASE_URL, NULL },
	[FS_PURCHASE_NOT_STARTED] = { FS_ERR_SALE_NOT_STARTED, FS_HTTP_RETRY_SOON },
	[FS_PURCHASE_UNAUTHENTICATED] = { FS_ERR_UNAUTHENTICATED, FS_HTTP_BEARER_CHALLENGE },
	[FS_PURCHASE_NOT_ADMITTED] = { FS_ERR_NOT_ADMITTED, NULL },
	[FS_PURCHASE_NO_ORDER_ID] = { FS_ERR_INTERNAL, NULL },
};

int
fs_answer_purchase_admit(fs_fcgi *fcgi, const fs_token_keys *keys, const fs_urlsig_key *url_key,
    const fs_queue_keys *queue_keys, int64_t now_ms, struct fs_order *o, int64_t *sale_end_ms)
{
	struct fs_purchase_request req = {
		fs_fcgi_method_is(fcgi, "POST"),
		fs_fcgi_param(fcgi, "QUERY_STRING"),
		fs_fcgi_param(fcgi, "HTTP_AUTHORIZATION"),
		fs_fcgi_param(fcgi, "HTTP_FLASHSALE_PASS"),
	};
	enum fs_purchase_verdict v =
	    fs_purchase_admit(&req, keys, url_key, queue_keys, now_ms, o, sale_end_ms);

	if (v == FS_PURCHASE_ADMITTED)
		return 0;
	fs_fcgi_error(fcgi, refusals[v].error, NULL, refusals[v].header);
	return -1;
}

/* Answers a document of n bytes with status; 500 when it could not be written (n < 0). */
static void
answer_doc(fs_fcgi *fcgi, enum fs_http_status status, const char *body, int n)
{
	if (n < 0) {
		fs_fcgi_error(fcgi, FS_ERR_INTERNAL, NULL, NULL);
		return;
	}
	fs_fcgi_answer(fcgi, status, NULL, body, (size_t)n);
}

void
fs_answer_purchase_accepted(fs_fcgi *fcgi, const struct fs_order *o)
{
	char body[FS_ORDERS_DOC_MAX];

	answer_doc(fcgi, FS_HTTP_ACCEPTED, body, fs_orders_receipt(o, body, sizeof(body)));
}

void
fs_answer_order(fs_fcgi *fcgi, const struct fs_order *o)
{
	char body[FS_ORDERS_DOC_MAX];

	answer_doc(fcgi, FS_HTTP_OK, body, fs_orders_document(o, body, sizeof(body)));
}

void
fs_answer_purchase_already(fs_fcgi *fcgi, const char *order_id)
{
	char extra[80];

	snprintf(extra, sizeof(extra), "\"orderId\":\"%s\"", order_id);
	fs_fcgi_error(fcgi, FS_ERR_ALREADY_PURCHASED, extra, NULL);
}

void
fs_answer_order_conflict(fs_fcgi *fcgi, enum fs_http_error e, const struct fs_order *o)
{
	char extra[128];

	snprintf(extra, sizeof(extra), "\"orderId\":\"%s\",\"status\":\"%s\"", o->id,
	    fs_orders_status_name(o->status));
	fs_fcgi_error(fcgi, e, extra, NULL);
}

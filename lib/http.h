/*
 * HTTP answers: the statuses the API uses and its error codes, each with the
 * status it travels with and a human message, in parallel tables.
 */
#ifndef FS_HTTP_H
#define FS_HTTP_H

#include <stddef.h>

enum fs_http_status {
	FS_HTTP_OK,
	FS_HTTP_ACCEPTED,
	FS_HTTP_NO_CONTENT,
	FS_HTTP_BAD_REQUEST,
	FS_HTTP_UNAUTHORIZED,
	FS_HTTP_FORBIDDEN,
	FS_HTTP_NOT_FOUND,
	FS_HTTP_METHOD_NOT_ALLOWED,
	FS_HTTP_CONFLICT,
	FS_HTTP_GONE,
	FS_HTTP_PAYLOAD_TOO_LARGE,
	FS_HTTP_TOO_EARLY,
	FS_HTTP_TOO_MANY_REQUESTS,
	FS_HTTP_HEADERS_TOO_LARGE,
	FS_HTTP_INTERNAL_ERROR,
	FS_HTTP_SERVICE_UNAVAILABLE,
	FS_HTTP__MAX
};

enum fs_http_error {
	FS_ERR_BAD_REQUEST,
	FS_ERR_UNAUTHENTICATED,
	FS_ERR_BAD_PURCHASE_URL,
	FS_ERR_FORBIDDEN,
	FS_ERR_NOT_FOUND,
	FS_ERR_ITEM_NOT_FOUND,
	FS_ERR_SALE_NOT_FOUND,
	FS_ERR_ORDER_NOT_FOUND,
	FS_ERR_METHOD_NOT_ALLOWED,
	FS_ERR_ALREADY_PURCHASED,
	FS_ERR_ORDER_NOT_PENDING,
	FS_ERR_ORDER_PROCESSING,
	FS_ERR_SOLD_OUT,
	FS_ERR_PAYLOAD_TOO_LARGE,
	FS_ERR_SALE_NOT_STARTED,
	/* The waiting room's (docs/QUEUE.md). */
	FS_ERR_NO_QUEUE,
	FS_ERR_BAD_POW,
	FS_ERR_QUEUE_NOT_OPEN,
	FS_ERR_QUEUE_CLOSED,
	FS_ERR_BAD_TICKET,
	FS_ERR_NOT_IN_QUEUE,
	FS_ERR_NOT_YET,
	FS_ERR_QUEUE_SOLD_OUT,
	FS_ERR_PASS_LAPSED,
	FS_ERR_RATE_LIMITED,
	FS_ERR_HEADERS_TOO_LARGE,
	FS_ERR_INTERNAL,
	FS_ERR_TRY_AGAIN,
	FS_ERR_BAD_SIGNATURE,
	FS_ERR_BAD_EVENT,
	FS_ERR_UNKNOWN_ORDER,
	FS_ERR_AMOUNT_MISMATCH,
	FS_ERR_NOT_READY,
	FS_ERR_NO_ORDER,
	FS_ERR_NOT_ADMITTED,
	FS_ERR__MAX
};

/* Header lines that go with some answers. */
#define FS_HTTP_RETRY_SOON "Retry-After: 1\r\n"
#define FS_HTTP_BEARER_CHALLENGE \
	"WWW-Authenticate: Bearer realm=\"flashsale\", error=\"invalid_token\"\r\n"

/* 202, 404 ... */
int fs_http_status_code(enum fs_http_status);
/* "Accepted", "Not Found" ... */
const char *fs_http_status_text(enum fs_http_status);
enum fs_http_status fs_http_error_status(enum fs_http_error);
/* "SOLD_OUT" ... */
const char *fs_http_error_code(enum fs_http_error);
const char *fs_http_error_message(enum fs_http_error);

/*
 * Writes {"error":"CODE","message":"..."} into out; extra, when not NULL, is
 * a pre-encoded JSON member list appended inside the object ("\"orderId\":\"...\"").
 * Returns the length, or -1 when out is too small.
 */
int fs_http_error_body(enum fs_http_error, const char *extra, char *out, size_t outlen);

#endif

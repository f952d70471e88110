#include "config.h"

#include <stdio.h>

#include "http.h"

static const struct {
	int code;
	const char *text;
} status_table[FS_HTTP__MAX] = {
	[FS_HTTP_OK] = { 200, "OK" },
	[FS_HTTP_ACCEPTED] = { 202, "Accepted" },
	[FS_HTTP_NO_CONTENT] = { 204, "No Content" },
	[FS_HTTP_BAD_REQUEST] = { 400, "Bad Request" },
	[FS_HTTP_UNAUTHORIZED] = { 401, "Unauthorized" },
	[FS_HTTP_FORBIDDEN] = { 403, "Forbidden" },
	[FS_HTTP_NOT_FOUND] = { 404, "Not Found" },
	[FS_HTTP_METHOD_NOT_ALLOWED] = { 405, "Method Not Allowed" },
	[FS_HTTP_CONFLICT] = { 409, "Conflict" },
	[FS_HTTP_GONE] = { 410, "Gone" },
	[FS_HTTP_PAYLOAD_TOO_LARGE] = { 413, "Payload Too Large" },
	[FS_HTTP_TOO_EARLY] = { 425, "Too Early" },
	[FS_HTTP_TOO_MANY_REQUESTS] = { 429, "Too Many Requests" },
	[FS_HTTP_HEADERS_TOO_LARGE] = { 431, "Request Header Fields Too Large" },
	[FS_HTTP_INTERNAL_ERROR] = { 500, "Internal Server Error" },
	[FS_HTTP_SERVICE_UNAVAILABLE] = { 503, "Service Unavailable" },
};

static const struct {
	enum fs_http_status status;
	const char *code;
	const char *message;
} error_table[FS_ERR__MAX] = {
	[FS_ERR_BAD_REQUEST] = { FS_HTTP_BAD_REQUEST, "BAD_REQUEST", "The request is malformed." },
	[FS_ERR_UNAUTHENTICATED] = { FS_HTTP_UNAUTHORIZED, "UNAUTHENTICATED",
	    "Sign in again: the token is missing, invalid or expired." },
	[FS_ERR_BAD_PURCHASE_URL] = { FS_HTTP_FORBIDDEN, "BAD_PURCHASE_URL",
	    "The purchase link is invalid or no longer valid." },
	[FS_ERR_FORBIDDEN] = { FS_HTTP_FORBIDDEN, "FORBIDDEN", "Not allowed." },
	[FS_ERR_NOT_FOUND] = { FS_HTTP_NOT_FOUND, "NOT_FOUND", "No such resource." },
	[FS_ERR_ITEM_NOT_FOUND] = { FS_HTTP_NOT_FOUND, "ITEM_NOT_FOUND", "No such item in this sale." },
	[FS_ERR_SALE_NOT_FOUND] = { FS_HTTP_NOT_FOUND, "SALE_NOT_FOUND", "No such sale." },
	[FS_ERR_ORDER_NOT_FOUND] = { FS_HTTP_NOT_FOUND, "ORDER_NOT_FOUND", "No such order." },
	[FS_ERR_METHOD_NOT_ALLOWED] = { FS_HTTP_METHOD_NOT_ALLOWED, "METHOD_NOT_ALLOWED",
	    "This method is not allowed here." },
	[FS_ERR_ALREADY_PURCHASED] = { FS_HTTP_CONFLICT, "ALREADY_PURCHASED",
	    "You already hold an order in this sale." },
	[FS_ERR_ORDER_NOT_PENDING] = { FS_HTTP_CONFLICT, "ORDER_NOT_PENDING",
	    "The order is no longer awaiting payment." },
	[FS_ERR_ORDER_PROCESSING] = { FS_HTTP_CONFLICT, "ORDER_PROCESSING",
	    "The order is still being recorded; try again in a moment." },
	[FS_ERR_SOLD_OUT] = { FS_HTTP_GONE, "SOLD_OUT", "This item is sold out." },
	[FS_ERR_PAYLOAD_TOO_LARGE] = { FS_HTTP_PAYLOAD_TOO_LARGE, "PAYLOAD_TOO_LARGE",
	    "The request body is too large." },
	[FS_ERR_SALE_NOT_STARTED] = { FS_HTTP_TOO_EARLY, "SALE_NOT_STARTED",
	    "The sale has not started yet." },
	[FS_ERR_NO_QUEUE] = { FS_HTTP_NOT_FOUND, "NO_QUEUE", "This sale has no waiting room." },
	[FS_ERR_BAD_POW] = { FS_HTTP_BAD_REQUEST, "BAD_POW",
	    "The proof of work is missing, malformed or too weak." },
	[FS_ERR_QUEUE_NOT_OPEN] = { FS_HTTP_CONFLICT, "QUEUE_NOT_OPEN",
	    "The waiting room is not open yet." },
	[FS_ERR_QUEUE_CLOSED] = { FS_HTTP_FORBIDDEN, "QUEUE_CLOSED",
	    "The waiting room is closed: the sale ended or nothing is left to sell." },
	[FS_ERR_BAD_TICKET] = { FS_HTTP_FORBIDDEN, "BAD_TICKET",
	    "The waiting room ticket is invalid or of another sale." },
	[FS_ERR_NOT_IN_QUEUE] = { FS_HTTP_NOT_FOUND, "NOT_IN_QUEUE",
	    "You have no place in this waiting room." },
	[FS_ERR_NOT_YET] = { FS_HTTP_CONFLICT, "NOT_YET", "Your turn has not come yet." },
	[FS_ERR_QUEUE_SOLD_OUT] = { FS_HTTP_GONE, "SOLD_OUT", "Everything is sold out." },
	[FS_ERR_PASS_LAPSED] = { FS_HTTP_GONE, "PASS_LAPSED",
	    "Your pass has expired unused; your turn has passed." },
	[FS_ERR_RATE_LIMITED] = { FS_HTTP_TOO_MANY_REQUESTS, "RATE_LIMITED",
	    "Too many requests; slow down." },
	[FS_ERR_HEADERS_TOO_LARGE] = { FS_HTTP_HEADERS_TOO_LARGE, "HEADERS_TOO_LARGE",
	    "The request headers are too large." },
	[FS_ERR_INTERNAL] = { FS_HTTP_INTERNAL_ERROR, "INTERNAL", "Something went wrong on our side." },
	[FS_ERR_TRY_AGAIN] = { FS_HTTP_SERVICE_UNAVAILABLE, "TRY_AGAIN",
	    "We are busy; try again in a moment." },
	[FS_ERR_BAD_SIGNATURE] = { FS_HTTP_UNAUTHORIZED, "BAD_SIGNATURE",
	    "The webhook signature is missing, malformed, stale or wrong." },
	[FS_ERR_BAD_EVENT] = { FS_HTTP_BAD_REQUEST, "BAD_EVENT", "The event is not one we know." },
	[FS_ERR_UNKNOWN_ORDER] = { FS_HTTP_BAD_REQUEST, "UNKNOWN_ORDER",
	    "The event names an order we do not have." },
	[FS_ERR_AMOUNT_MISMATCH] = { FS_HTTP_BAD_REQUEST, "AMOUNT_MISMATCH",
	    "The amount or currency differ from the order's." },
	[FS_ERR_NOT_READY] = { FS_HTTP_SERVICE_UNAVAILABLE, "NOT_READY",
	    "A store this program needs does not answer." },
	[FS_ERR_NO_ORDER] = { FS_HTTP_NOT_FOUND, "NO_ORDER", "You hold no order in this sale." },
	[FS_ERR_NOT_ADMITTED] = { FS_HTTP_FORBIDDEN, "NOT_ADMITTED",
	    "This sale has a waiting room: buy with the pass it gives you when your turn comes." },
};

int
fs_http_status_code(enum fs_http_status s)
{
	return s < FS_HTTP__MAX ? status_table[s].code : 500;
}

const char *
fs_http_status_text(enum fs_http_status s)
{
	return s < FS_HTTP__MAX ? status_table[s].text : "Internal Server Error";
}

enum fs_http_status
fs_http_error_status(enum fs_http_error e)
{
	return e < FS_ERR__MAX ? error_table[e].status : FS_HTTP_INTERNAL_ERROR;
}

const char *
fs_http_error_code(enum fs_http_error e)
{
	return e < FS_ERR__MAX ? error_table[e].code : "INTERNAL";
}

const char *
fs_http_error_message(enum fs_http_error e)
{
	return e < FS_ERR__MAX ? error_table[e].message : "Something went wrong on our side.";
}

int
fs_http_error_body(enum fs_http_error e, const char *extra, char *out, size_t outlen)
{
	int n;

	if (e >= FS_ERR__MAX)
		e = FS_ERR_INTERNAL;
	/* Codes and messages are fixed ASCII without quotes: no escaping needed. */
	n = snprintf(out, outlen, "{\"error\":\"%s\",\"message\":\"%s\"%s%s}", error_table[e].code,
	    error_table[e].message, extra != NULL ? "," : "", extra != NULL ? extra : "");
	return (n < 0 || (size_t)n >= outlen) ? -1 : n;
}

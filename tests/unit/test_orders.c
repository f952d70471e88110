/* Unit test of lib/orders: the order message and the documents. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "orders.h"
#include "expect.h"

/* True when the message is refused. */
static int
refused(const char *msg)
{
	struct fs_order o;

	return fs_orders_parse_message(msg, strlen(msg), &o) == -1;
}

int
main(void)
{
	struct fs_order o = { .id = "01900000-0000-7000-8000-000000000001", .sale = 7, .item = 11,
		.user = "a/b", .reserved_ms = INT64_C(1767323045678) };
	struct fs_order back;
	char msg[FS_ORDERS_MESSAGE_MAX], big[FS_ORDERS_MESSAGE_MAX + 2], doc[FS_ORDERS_DOC_MAX];
	int n;

	n = fs_orders_message(&o, msg, sizeof(msg));
	check(n > 0 && strcmp(msg, "{\"orderId\":\"01900000-0000-7000-8000-000000000001\","
				"\"saleId\":7,\"itemId\":11,\"userId\":\"a\\/b\","
				"\"reservedAt\":1767323045678}") == 0,
	    "the order message");
	check(fs_orders_parse_message(msg, (size_t)n, &back) == 0 && strcmp(back.id, o.id) == 0 &&
		back.sale == 7 && back.item == 11 && strcmp(back.user, "a/b") == 0 &&
		back.reserved_ms == o.reserved_ms && back.status == FS_ORDER_PROCESSING,
	    "it reads back");
	check(fs_orders_message(&o, msg, 20) == -1, "a small buffer is refused");
	check(refused("{\"orderId\":\"not-a-uuid\",\"saleId\":7,\"itemId\":11,\"userId\":\"u\","
		       "\"reservedAt\":1}"),
	    "a bad order id is refused");
	check(refused("{\"orderId\":\"01900000-0000-7000-8000-000000000001\",\"saleId\":7,"
		       "\"itemId\":11,\"userId\":\"a b\",\"reservedAt\":1}"),
	    "a user id with a space is refused");
	check(refused("{\"orderId\":\"01900000-0000-7000-8000-000000000001\",\"saleId\":0,"
		       "\"itemId\":11,\"userId\":\"u\",\"reservedAt\":1}"),
	    "sale 0 is refused");
	check(refused("{\"orderId\":\"01900000-0000-7000-8000-000000000001\",\"saleId\":7,"
		       "\"itemId\":11,\"userId\":\"u\"}"),
	    "a missing member is refused");
	check(refused("[]") && refused("{") && refused(""), "not an object is refused");
	memset(big, ' ', sizeof(big) - 1);
	big[0] = '{';
	big[sizeof(big) - 2] = '}';
	big[sizeof(big) - 1] = '\0';
	check(refused(big), "a message over FS_ORDERS_MESSAGE_MAX is refused");

	o.status = FS_ORDER_PENDING;
	o.expires_ms = INT64_C(1767323045678);
	n = fs_orders_receipt(&o, doc, sizeof(doc));
	check(n > 0 && strcmp(doc, "{\"orderId\":\"01900000-0000-7000-8000-000000000001\","
				"\"status\":\"PENDING\",\"expiresAt\":\"2026-01-02T03:04:05.678Z\"}") == 0,
	    "the receipt of an accepted purchase");
	n = fs_orders_document(&o, doc, sizeof(doc));
	check(n > 0 && strcmp(doc, "{\"orderId\":\"01900000-0000-7000-8000-000000000001\","
				"\"itemId\":11,\"status\":\"PENDING\","
				"\"expiresAt\":\"2026-01-02T03:04:05.678Z\"}") == 0,
	    "the status document");
	check(fs_orders_document(&o, doc, 30) == -1, "a small buffer is refused");
	return failures == 0 ? 0 : 1;
}

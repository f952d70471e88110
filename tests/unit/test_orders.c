/* Unit test of lib/orders: the documents. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "orders.h"
#include "expect.h"

int
main(void)
{
	struct fs_order o = { .id = "01900000-0000-7000-8000-000000000001", .sale = 7, .item = 11,
		.user = "a/b", .reserved_ms = INT64_C(1767323045678) };
	char doc[FS_ORDERS_DOC_MAX];
	int n;

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

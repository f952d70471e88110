/* Unit test of lib/ordertopic: the order message and the topic names. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "ordertopic.h"
#include "expect.h"

/* True when the message is refused. */
static int
refused(const char *msg)
{
	struct fs_order o;

	return fs_ordertopic_decode(msg, strlen(msg), &o) == -1;
}

int
main(void)
{
	struct fs_order o = { .id = "01900000-0000-7000-8000-000000000001", .sale = 7, .item = 11,
		.user = "a/b", .reserved_ms = INT64_C(1767323045678) };
	struct fs_order back;
	char msg[FS_ORDERTOPIC_MESSAGE_MAX], big[FS_ORDERTOPIC_MESSAGE_MAX + 2], err[128];
	fs_ordertopic t;
	int n;

	n = fs_ordertopic_encode(&o, msg, sizeof(msg));
	check(n > 0 && strcmp(msg, "{\"orderId\":\"01900000-0000-7000-8000-000000000001\","
				"\"saleId\":7,\"itemId\":11,\"userId\":\"a\\/b\","
				"\"reservedAt\":1767323045678}") == 0,
	    "the order message");
	check(fs_ordertopic_decode(msg, (size_t)n, &back) == 0 && strcmp(back.id, o.id) == 0 &&
		back.sale == 7 && back.item == 11 && strcmp(back.user, "a/b") == 0 &&
		back.reserved_ms == o.reserved_ms && back.status == FS_ORDER_PROCESSING,
	    "it reads back");
	check(fs_ordertopic_encode(&o, msg, 20) == -1, "a small buffer is refused");
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
	check(refused(big), "a message over FS_ORDERTOPIC_MESSAGE_MAX is refused");

	check(fs_ordertopic_init(&t, "127.0.0.1:1", "orders", err, sizeof(err)) == 0 &&
		strcmp(t.topic, "orders") == 0 && strcmp(t.dlq, "orders.dlq") == 0 && t.producer == NULL,
	    "the dead letters are <topic>.dlq");
	memset(big, 'x', FS_ORDERTOPIC_NAME_MAX);
	big[FS_ORDERTOPIC_NAME_MAX] = '\0';
	check(fs_ordertopic_init(&t, "127.0.0.1:1", big, err, sizeof(err)) == -1 && err[0] != '\0',
	    "a topic name without room for .dlq is refused");
	check(fs_ordertopic_init(&t, "127.0.0.1:1", "", err, sizeof(err)) == -1,
	    "an empty topic name is refused");
	fs_ordertopic_close(&t);
	return failures == 0 ? 0 : 1;
}

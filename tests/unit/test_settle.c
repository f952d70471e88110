/*
 * Unit test of lib/settle against a real redis-server of its own: after the
 * database decided, live orders' holds are confirmed, the others released
 * once, a refused release is skipped, an unreachable Redis asks for a retry.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "settle.h"
#include "expect.h"
#include "redis_server.h"
#include "stock_load.h"

static const char *const ids[] = {
	"01900000-0000-7000-8000-000000000001",
	"01900000-0000-7000-8000-000000000002",
	"01900000-0000-7000-8000-000000000003",
};

int
main(void)
{
	static const struct fs_stock_warm_item items[] = { { 11, 5, 1 } };
	const char *top = getenv("top_srcdir");
	struct fs_settle_counts c = { 0, 0 };
	struct fs_stock_record recs[4];
	struct fs_order o[3];
	const struct fs_order *list[3] = { &o[0], &o[1], &o[2] };
	struct fs_stock_hold h;
	struct test_redis srv;
	struct fs_cfg cfg;
	uint64_t item = 11;
	long left;
	size_t n;
	char err[256];
	fs_stock *st;

	if (top == NULL || test_redis_start(&srv) != 0) {
		printf("Bail out! needs top_srcdir and redis-server\n");
		return 99;
	}
	if (test_redis_cfg(&srv, &cfg) != 0 || (st = fs_stock_new(&cfg, top, err, sizeof(err))) == NULL ||
	    stock_load(st, 7, items, 1) != 0)
		return 99;
	memset(o, 0, sizeof(o));
	for (int i = 0; i < 3; i++) {
		snprintf(o[i].id, sizeof(o[i].id), "%s", ids[i]);
		snprintf(o[i].user, sizeof(o[i].user), "u%d", i);
		o[i].sale = 7;
		o[i].item = 11;
		if (fs_stock_reserve(st, 7, 11, o[i].user, o[i].id, fs_clock_now_ms(), &h) !=
		    FS_STOCK_RESERVED)
			return 99;
	}
	o[0].status = FS_ORDER_PENDING;
	o[1].status = FS_ORDER_FAILED;
	o[2].status = FS_ORDER_EXPIRED;
	o[2].item = 12; /* a record of another item: Redis refuses, for good */
	check(fs_settle_holds(st, list, 3, &c) == 0 && c.confirmed == 1 && c.released == 1,
	    "one confirmed, one released, the refused one skipped");
	check(fs_stock_unconfirmed_before(st, 7, fs_clock_now_ms() + 1000, 0, recs, 4, &n) == 0 &&
		n == 1 && strcmp(recs[0].order_id, ids[2]) == 0,
	    "only the skipped hold is still unconfirmed");
	check(fs_stock_left(st, 7, &item, 1, &left) == 0 && left == 3, "one unit went back");
	c.confirmed = c.released = 0;
	check(fs_settle_holds(st, list, 2, &c) == 0 && c.released == 0 && c.confirmed == 1 &&
		fs_stock_left(st, 7, &item, 1, &left) == 0 && left == 3,
	    "settling again changes nothing");
	test_redis_stop(&srv);
	check(fs_settle_holds(st, list, 2, &c) == -1 && st->err == FS_STOCK_ERR_IO,
	    "Redis away: -1, to be retried");
	fs_stock_free(st);
	test_redis_finish(&srv);
	return failures == 0 ? 0 : 1;
}

/*
 * Unit test of lib/expiry against a real PostgreSQL and Redis
 * (tests/unit/sale_fixture.h): overdue orders expire and their units come
 * back once; the sweep closes old ghost holds only where the topic is
 * caught up, releases holds of orders the database closed, and clears a
 * sale that is over. Exact counts, statuses and units left throughout.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expiry.h"
#include "expect.h"
#include "sale_fixture.h"

#define HOLD_MAX_AGE_S 120

/*
 * A backlog read at read_ms with every partition's lag set to lag; holds
 * taken before read_ms - HOLD_MAX_AGE_S count as old.
 */
static void
backlog(struct fs_ordertopic_backlog *b, int64_t read_ms, long long lag)
{
	memset(b, 0, sizeof(*b));
	b->read_ms = read_ms;
	b->partitions = FS_ORDERTOPIC_PARTITIONS;
	for (int i = 0; i < b->partitions; i++)
		b->lag[i] = lag;
}

static int
counts_are(const struct fs_expiry_counts *c, const char *want)
{
	char json[256];

	if (fs_expiry_counts_json(c, json, sizeof(json)) < 0)
		return 0;
	if (strcmp(json, want) != 0)
		printf("# counts %s\n#   want %s\n", json, want);
	return strcmp(json, want) == 0;
}

static void
test_expire(struct fixture *f, fs_expiry *e, uint64_t sale, uint64_t item, struct fs_order *o)
{
	struct fs_expiry_counts c;
	char sid[24];

	snprintf(sid, sizeof(sid), "%" PRIu64, sale);
	/* Two orders reserved a minute ago (a 10 s window: overdue), one just now. */
	check(fixture_buy(f, sale, item, "u1", 60000, 1, &o[0]) == 0 &&
	    fixture_buy(f, sale, item, "u2", 60000, 1, &o[1]) == 0 &&
	    fixture_buy(f, sale, item, "u3", 0, 1, &o[2]) == 0 && fixture_left(f, sale, item) == 2 &&
	    fixture_long(f, "SELECT sold FROM items WHERE sale_id = $1", sid) == 3,
	    "expire: three orders recorded, two of them overdue; 2 units left");
	memset(&c, 0, sizeof(c));
	check(fs_expiry_expire(e, &c) == 0 && c.expired == 2 && c.released == 2,
	    "expire: the two overdue orders expire and both units come back");
	check(strcmp(fixture_status(f, o[0].id), "EXPIRED") == 0 &&
	    strcmp(fixture_status(f, o[1].id), "EXPIRED") == 0 &&
	    strcmp(fixture_status(f, o[2].id), "PENDING") == 0 &&
	    fixture_long(f, "SELECT sold FROM items WHERE sale_id = $1", sid) == 1 &&
	    fixture_left(f, sale, item) == 4,
	    "expire: EXPIRED, EXPIRED, PENDING; sold 1, 4 units left");
	memset(&c, 0, sizeof(c));
	check(fs_expiry_expire(e, &c) == 0 && counts_are(&c, "{\"expired\":0,\"released\":0,"
	    "\"ghosts\":0,\"confirmed\":0,\"repaired\":0,\"sales\":0,\"deferred\":0,\"cleared\":0}") &&
	    fixture_left(f, sale, item) == 4, "expire: a second run changes nothing");
}

static void
test_sweep(struct fixture *f, fs_expiry *e, uint64_t sale, uint64_t item, struct fs_order *o)
{
	struct fs_ordertopic_backlog b;
	struct fs_expiry_counts c;
	struct fs_order ghost, young, late;
	const char *params[1];
	int64_t cut;

	/*
	 * Two holds whose orders never came, taken at least 2 ms apart; the
	 * backlog is read as if HOLD_MAX_AGE_S after the first (cut), so that
	 * the first is old and the second young.
	 */
	check(fixture_buy(f, sale, item, "u4", 0, 0, &ghost) == 0, "sweep: a hold without an order");
	while (fs_clock_now_ms() < ghost.reserved_ms + 2)
		continue;
	check(fixture_buy(f, sale, item, "u5", 0, 0, &young) == 0 && fixture_left(f, sale, item) == 2 &&
	    young.reserved_ms >= ghost.reserved_ms + 2,
	    "sweep: and a younger one; 2 units left");
	cut = ghost.reserved_ms + 1 + HOLD_MAX_AGE_S * 1000;
	memset(&c, 0, sizeof(c));
	check(fs_expiry_sweep(e, NULL, &c) == 0 && c.ghosts == 0 && c.deferred == 1 && c.sales == 1 &&
	    fixture_left(f, sale, item) == 2 && strcmp(fixture_status(f, ghost.id), "") == 0,
	    "sweep: without the topic's backlog no ghost is closed (the sale is deferred)");
	backlog(&b, cut, 1);
	memset(&c, 0, sizeof(c));
	check(fs_expiry_sweep(e, &b, &c) == 0 && c.ghosts == 0 && c.deferred == 1 &&
	    fixture_left(f, sale, item) == 2,
	    "sweep: while the item's partition has orders to record the ghost waits");
	backlog(&b, cut, 0);
	memset(&c, 0, sizeof(c));
	check(fs_expiry_sweep(e, &b, &c) == 0 && counts_are(&c, "{\"expired\":0,\"released\":0,"
	    "\"ghosts\":1,\"confirmed\":0,\"repaired\":0,\"sales\":1,\"deferred\":0,\"cleared\":0}") &&
	    strcmp(fixture_status(f, ghost.id), "FAILED") == 0 &&
	    strcmp(fixture_status(f, young.id), "") == 0 && fixture_left(f, sale, item) == 3,
	    "sweep: caught up, the old ghost is closed FAILED and released, the young hold stays");
	memset(&c, 0, sizeof(c));
	check(fs_expiry_sweep(e, &b, &c) == 0 && c.ghosts == 0 && c.repaired == 0 &&
	    fixture_left(f, sale, item) == 3, "sweep: a second run changes nothing");

	/* An order the database closed whose release never happened. */
	params[0] = o[2].id;
	check(fs_pg_run(f->pg, "UPDATE orders SET status = 'CANCELLED' WHERE id = $1", 1,
	    params) == 0, "sweep: u3's order closed in the database behind Redis's back");
	memset(&c, 0, sizeof(c));
	check(fs_expiry_sweep(e, &b, &c) == 0 && c.repaired == 1 && fixture_left(f, sale, item) == 4,
	    "sweep: the hold of the closed order is released late, once");
	memset(&c, 0, sizeof(c));
	check(fs_expiry_sweep(e, &b, &c) == 0 && c.repaired == 0 && fixture_left(f, sale, item) == 4,
	    "sweep: and not again");

	/* Redis away: the order still expires in the database; the sweep repairs later. */
	check(fixture_buy(f, sale, item, "u6", 60000, 1, &late) == 0,
	    "redis away: one more overdue order");
	test_redis_stop(&f->redis_srv);
	memset(&c, 0, sizeof(c));
	check(fs_expiry_expire(e, &c) == 0 && c.expired == 1 && c.released == 0 &&
	    strcmp(fixture_status(f, late.id), "EXPIRED") == 0,
	    "redis away: the order expires, its release is left to the sweep");
	memset(&c, 0, sizeof(c));
	check(fs_expiry_sweep(e, &b, &c) == -1 && strncmp(e->errstr, "redis", 5) == 0,
	    "redis away: the sweep fails and says Redis");
}

/* A sale that has ended with no PENDING order loses its keys, once. */
static void
test_clear(struct fixture *f, fs_expiry *e)
{
	struct fs_ordertopic_backlog b;
	struct fs_expiry_counts c;
	uint64_t sale, item;

	if (fixture_sale(f, -3, 1, 10, 3, &sale, &item) != 0) {
		check(0, "clear: a sale that has ended");
		return;
	}
	backlog(&b, fs_clock_now_ms(), 0);
	memset(&c, 0, sizeof(c));
	check(fixture_left(f, sale, item) == 3 && fs_expiry_sweep(e, &b, &c) == 0 && c.cleared == 1 &&
	    fs_sales_cleared(f->pg, sale) && fixture_left(f, sale, item) == -1,
	    "clear: the ended sale's keys leave Redis and it is marked cleared");
	memset(&c, 0, sizeof(c));
	check(fs_expiry_sweep(e, &b, &c) == 0 && c.cleared == 0 && c.sales == 1,
	    "clear: the cleared sale is not swept again (only the open one is)");
}

int
main(void)
{
	static const struct fs_expiry_counts full = { 1, 2, 3, 4, 5, 6, 7, 8 };
	struct fixture f;
	struct fs_order o[3];
	fs_expiry e;
	uint64_t sale, item;
	char small[16];

	check(counts_are(&full, "{\"expired\":1,\"released\":2,\"ghosts\":3,\"confirmed\":4,"
	    "\"repaired\":5,\"sales\":6,\"deferred\":7,\"cleared\":8}") &&
	    fs_expiry_counts_json(&full, small, sizeof(small)) == -1,
	    "counts: one JSON object, every count by name; a small buffer is refused");
	if (fixture_start(&f, getenv("top_srcdir")) != 0 ||
	    fixture_sale(&f, -5, 3600, 10, 5, &sale, &item) != 0) {
		printf("Bail out! needs top_srcdir, PostgreSQL 15 and redis-server\n");
		fixture_finish(&f);
		return 1;
	}
	fs_expiry_init(&e, f.pg, f.stock, f.push, HOLD_MAX_AGE_S);
	test_expire(&f, &e, sale, item, o);
	test_clear(&f, &e);
	test_sweep(&f, &e, sale, item, o);
	fixture_finish(&f);
	return failures == 0 ? 0 : 1;
}

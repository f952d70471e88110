/*
 * Unit test of lib/reconcile against a real PostgreSQL and Redis
 * (tests/unit/sale_fixture.h): a sale at rest passes with exact figures;
 * each kind of damage, made on a sale of its own, is reported in exactly
 * one line that names it; an unknown sale is an error.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile.h"
#include "expect.h"
#include "sale_fixture.h"

struct lines {
	int n;
	char first[512];
};

static void
collect(void *arg, const char *line)
{
	struct lines *l = arg;

	if (l->n++ == 0)
		snprintf(l->first, sizeof(l->first), "%s", line);
	printf("#   %s\n", line);
}

/* A sale of 5 units: u1 and u2 recorded, u3 held and on its way. */
static int
three_buyers(struct fixture *f, uint64_t *sale, uint64_t *item, struct fs_order *o)
{
	return fixture_sale(f, -5, 3600, 600, 5, sale, item) == 0 &&
	    fixture_buy(f, *sale, *item, "u1", 0, 1, &o[0]) == 0 &&
	    fixture_buy(f, *sale, *item, "u2", 0, 1, &o[1]) == 0 &&
	    fixture_buy(f, *sale, *item, "u3", 0, 0, &o[2]) == 0 ? 0 : -1;
}

/* Reconciles the sale: the violations' count (-1: an error) and the first line in l. */
static int
violations(struct fixture *f, uint64_t sale, struct lines *l, struct fs_reconcile_summary *sum)
{
	char err[256];
	int n;

	memset(l, 0, sizeof(*l));
	n = fs_reconcile_sale(f->pg, f->stock, sale, collect, l, sum, err, sizeof(err));
	if (n < 0)
		snprintf(l->first, sizeof(l->first), "%s", err);
	return n;
}

int
main(void)
{
	struct fixture f;
	struct fs_reconcile_summary sum;
	struct fs_order o[4][3];
	struct lines l;
	uint64_t sale[4], item[4], all[8];
	char want[256], err[256], id[24];
	const char *params[1];
	int ok = 1;

	if (fixture_start(&f, getenv("top_srcdir")) != 0) {
		printf("Bail out! needs top_srcdir, PostgreSQL 15 and redis-server\n");
		fixture_finish(&f);
		return 1;
	}
	for (int i = 0; i < 4; i++)
		ok &= three_buyers(&f, &sale[i], &item[i], o[i]) == 0;
	check(ok, "four sales, each with two orders recorded and one on its way");

	check(violations(&f, sale[0], &l, &sum) == 0 && l.n == 0 && sum.items == 1 &&
	    sum.live == 2 && sum.holds == 3 && sum.unconfirmed == 1 && sum.in_redis == 1 &&
	    sum.cleared == 0, "at rest: no violation; 1 item, 2 live, 3 holds, 1 unconfirmed");

	/* A live order's unit given back (a double release would look the same). */
	snprintf(want, sizeof(want), "sale %" PRIu64 ": live order %s (user u1) has no hold in Redis",
	    sale[0], o[0][0].id);
	check(fs_stock_release(f.stock, sale[0], item[0], o[0][0].id) == 1 &&
	    violations(&f, sale[0], &l, &sum) == 1 && strcmp(l.first, want) == 0,
	    "a live order without its hold: one line naming the order");

	/* items.sold out of step with the live orders. */
	snprintf(id, sizeof(id), "%" PRIu64, item[1]);
	params[0] = id;
	snprintf(want, sizeof(want), "sale %" PRIu64 ": item %" PRIu64 ": sold 3 but 2 live orders",
	    sale[1], item[1]);
	check(fs_pg_run(f.pg, "UPDATE items SET sold = sold + 1 WHERE id = $1", 1, params) == 0 &&
	    violations(&f, sale[1], &l, &sum) == 1 && strcmp(l.first, want) == 0,
	    "sold above the live orders: one line with both figures");

	/* An order closed in the database whose hold stayed. */
	params[0] = o[2][1].id;
	snprintf(want, sizeof(want),
	    "sale %" PRIu64 ": hold %s belongs to a CANCELLED order: its unit should be back", sale[2],
	    o[2][1].id);
	check(fs_pg_run(f.pg, "UPDATE orders SET status = 'CANCELLED' WHERE id = $1", 1, params) == 0 &&
	    fs_pg_run(f.pg, "UPDATE items SET sold = sold - 1 WHERE id = (SELECT item_id FROM "
	    "orders WHERE id = $1)", 1, params) == 0 &&
	    violations(&f, sale[2], &l, &sum) == 1 && strcmp(l.first, want) == 0 && sum.live == 1,
	    "a closed order's hold still in Redis: one line naming it");

	/* A hold confirmed as recorded whose order the database does not have. */
	params[0] = o[3][2].id;
	snprintf(want, sizeof(want),
	    "sale %" PRIu64 ": hold %s has no order in the database and is not on its way", sale[3],
	    o[3][2].id);
	check(fs_stock_confirm(f.stock, sale[3], params, 1) == 0 &&
	    violations(&f, sale[3], &l, &sum) == 1 && strcmp(l.first, want) == 0 &&
	    sum.unconfirmed == 0, "a confirmed hold without an order: one line naming it");

	check(violations(&f, 999999, &l, &sum) == -1 && strcmp(l.first, "no sale 999999") == 0,
	    "an unknown sale is an error, not a pass");
	check(fs_reconcile_all_sales(f.pg, all, 8, err, sizeof(err)) == 4 && all[0] == sale[0] &&
	    all[1] == sale[1] && all[2] == sale[2] && all[3] == sale[3],
	    "every sale's id, in order");
	test_redis_stop(&f.redis_srv);
	check(violations(&f, sale[0], &l, &sum) == -1, "Redis away: an error, not a pass");
	fixture_finish(&f);
	return failures == 0 ? 0 : 1;
}

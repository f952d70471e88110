/*
 * The invariants of DESIGN.md, checked against the stores as they are:
 *  1. per item, live orders <= quantity and sold == live orders;
 *  2. no shopper with two live orders in a sale;
 *  4/5. per item, Redis units left + holds == quantity (a unit released
 *     twice shows here), and the holds are exactly the live orders plus
 *     the ones still on their way (unconfirmed, with no closed order).
 * Redis is read first, in one MULTI, then PostgreSQL: an order confirmed
 * in between is already in the database when it is looked for. Meant for
 * a stack at rest; under traffic a change between the reads can show as a
 * passing violation. And the rule of the repair after a Redis crash: every
 * sale rebuilt from PostgreSQL and the orders still on their way.
 */
#ifndef FS_RECONCILE_H
#define FS_RECONCILE_H

#include <stddef.h>
#include <stdint.h>

#include "orders.h"
#include "pg.h"
#include "sales.h"
#include "stock.h"

/* Called once per violation with a one-line description. */
typedef void fs_reconcile_report(void *arg, const char *line);

struct fs_reconcile_summary {
	long items;
	long live;		/* PENDING + PAID orders */
	long holds;		/* holds in Redis */
	long unconfirmed;	/* of them, not yet confirmed by the consumer */
	int in_redis;		/* the sale is loaded into Redis */
	int cleared;		/* the sale is over and its keys left Redis for good */
};

/*
 * Checks one sale; returns the number of violations (each reported), or -1
 * with err set when a store could not be read or the sale is unknown.
 */
int fs_reconcile_sale(fs_pg *, fs_stock *, uint64_t sale, fs_reconcile_report *, void *arg,
    struct fs_reconcile_summary *, char *err, size_t errlen);
/* The ids of every sale, in order, into sales (room for max): the count, or -1. */
int fs_reconcile_all_sales(fs_pg *, uint64_t *sales, int max, char *err, size_t errlen);

/*
 * Before a repair: a Redis that started less than inflight_ms ago may miss
 * holds of purchases still putting their orders on the topic, so waits
 * (telling waiting the uptime every 250 ms) until it has been up that
 * long; only then is the topic read. 0, or -1 with the stock's errstr.
 */
int fs_reconcile_repair_wait(fs_stock *, int64_t inflight_ms, void (*waiting)(void *arg, long up_s),
    void *arg);
/*
 * Rebuilds n sales (in id order) in Redis from PostgreSQL and the orders on
 * their way: pending (npending, of any sales; sorted here), read from the
 * topic after fs_reconcile_repair_wait. With all (every sale was asked
 * for), a sale that is over and cleared stays out. done is told each sale
 * rebuilt. 0, or -1 with err naming the sale.
 */
int fs_reconcile_repair(fs_pg *, fs_stock *, const uint64_t *sales, int n, int all,
    int64_t inflight_ms, struct fs_order *pending, size_t npending,
    void (*done)(void *arg, uint64_t sale, const struct fs_sales_warm_report *), void *arg,
    char *err, size_t errlen);

#endif

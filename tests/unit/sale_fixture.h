/*
 * For the unit tests of the rules over both stores (expiry, reconcile,
 * payments, salectl, dlq): a real PostgreSQL with the migrations
 * (pg_server.h) and a real Redis (redis_server.h), the driver handles on
 * them, a sale created and warmed the way `flashsale-admin sale create` and
 * `sale warm` do, and purchases the way the purchase handler and the
 * consumer make them (a hold in Redis, then the order in PostgreSQL).
 */
#ifndef FS_TEST_SALE_FIXTURE_H
#define FS_TEST_SALE_FIXTURE_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "orders.h"
#include "pg.h"
#include "push.h"
#include "sales.h"
#include "stock.h"
#include "uuid.h"
#include "pg_server.h"
#include "redis_server.h"

struct fixture {
	struct test_pg pg_srv;
	struct test_redis redis_srv;
	struct fs_cfg cfg;
	fs_pg *pg;
	fs_stock *stock;
	fs_push *push; /* publishes nothing */
};

/* Both servers and the handles on them; 0, or -1 (fixture_finish cleans up either way). */
static inline int
fixture_start(struct fixture *f, const char *top)
{
	char err[256];

	memset(f, 0, sizeof(*f));
	f->pg_srv.pid = f->redis_srv.pid = -1;
	if (top == NULL || test_pg_start(&f->pg_srv, top) != 0 ||
	    test_redis_start(&f->redis_srv) != 0 || test_redis_cfg(&f->redis_srv, &f->cfg) != 0)
		return -1;
	if ((f->pg = fs_pg_new(f->pg_srv.conninfo)) == NULL ||
	    (f->stock = fs_stock_new(&f->cfg, top, err, sizeof(err))) == NULL ||
	    (f->push = fs_push_new("", err, sizeof(err))) == NULL) {
		printf("# fixture: %s\n", err);
		return -1;
	}
	return 0;
}

static inline void
fixture_finish(struct fixture *f)
{
	fs_push_free(f->push);
	fs_stock_free(f->stock);
	fs_pg_free(f->pg);
	test_redis_finish(&f->redis_srv);
	test_pg_finish(&f->pg_srv);
}

/*
 * A sale of one item of qty units, from starts seconds from now (negative:
 * open already) for duration seconds, with a payment window of window
 * seconds, created and warmed. 0 with *sale and *item set, or -1.
 */
static inline int
fixture_sale(struct fixture *f, long starts, long duration, long window, long qty, uint64_t *sale,
    uint64_t *item)
{
	struct fs_sales_warm_opts opts;
	struct fs_sales_warm_report rep;
	char json[512], out[256], err[256];
	int n;

	n = snprintf(json, sizeof(json),
	    "{\"name\":\"unit sale\",\"startsInSeconds\":%ld,\"durationSeconds\":%ld,"
	    "\"paymentWindowSeconds\":%ld,\"items\":[{\"name\":\"Phone\",\"priceMinor\":1990000,"
	    "\"currency\":\"VND\",\"quantity\":%ld}]}", starts, duration, window, qty);
	memset(&opts, 0, sizeof(opts));
	if (fs_sales_create(f->pg, json, (size_t)n, out, sizeof(out), err, sizeof(err)) != 0 ||
	    sscanf(out, "{\"saleId\":%" SCNu64 ",\"itemIds\":[%" SCNu64 "]}", sale, item) != 2 ||
	    fs_sales_warm(f->pg, f->stock, *sale, &opts, &rep, err, sizeof(err)) != 0) {
		printf("# fixture_sale: %s\n", err);
		return -1;
	}
	return 0;
}

/*
 * A shopper's purchase: the hold in Redis, taken now (o->reserved_ms), and
 * when record the order in PostgreSQL as the consumer records it, as if
 * reserved age_ms earlier (an overdue order without waiting), then the hold
 * confirmed. o is filled in. 0, or -1.
 */
static inline int
fixture_buy(struct fixture *f, uint64_t sale, uint64_t item, const char *user, int64_t age_ms,
    int record, struct fs_order *o)
{
	struct fs_stock_hold h;
	const char *ids[1];
	enum fs_stock_result sr;
	enum fs_orders_result or;

	memset(o, 0, sizeof(*o));
	if (fs_uuid_v7(o->id) != 0)
		return -1;
	snprintf(o->user, sizeof(o->user), "%s", user);
	o->sale = sale;
	o->item = item;
	o->reserved_ms = fs_clock_now_ms();
	if ((sr = fs_stock_reserve(f->stock, sale, item, user, o->id, o->reserved_ms, &h)) !=
	    FS_STOCK_RESERVED) {
		printf("# fixture_buy %s: reserve answered %d (%s)\n", user, (int)sr,
		    f->stock->errstr);
		return -1;
	}
	if (!record)
		return 0;
	ids[0] = o->id;
	o->reserved_ms -= age_ms;
	if ((or = fs_orders_place_batch(f->pg, o, 1)) != FS_ORDERS_OK ||
	    o->status != FS_ORDER_PENDING || fs_stock_confirm(f->stock, sale, ids, 1) != 0) {
		printf("# fixture_buy %s: recorded %s as %s (%s)\n", user, fs_orders_strerror(or),
		    fs_orders_status_name(o->status), f->pg->errstr);
		return -1;
	}
	return 0;
}

/* The one value of a query with at most one parameter, as a long; -1 when none. */
static inline long
fixture_long(struct fixture *f, const char *sql, const char *param)
{
	const char *params[1] = { param };
	PGresult *r = fs_pg_exec(f->pg, sql, param != NULL ? 1 : 0, params);
	long v = -1;

	if (r != NULL && PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
		v = strtol(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return v;
}

/* The one value of a query with one parameter as text ("" when none; a static buffer). */
static inline const char *
fixture_text(struct fixture *f, const char *sql, const char *param)
{
	static char out[64];
	const char *params[1] = { param };
	PGresult *r = fs_pg_exec(f->pg, sql, 1, params);

	out[0] = '\0';
	if (r != NULL && PQntuples(r) == 1)
		snprintf(out, sizeof(out), "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	return out;
}

/* The status of an order in PostgreSQL ("" when it has no row). */
static inline const char *
fixture_status(struct fixture *f, const char *order_id)
{
	return fixture_text(f, "SELECT status FROM orders WHERE id = $1", order_id);
}

/* Units left of the item in Redis; -2 when Redis cannot say. */
static inline long
fixture_left(struct fixture *f, uint64_t sale, uint64_t item)
{
	long left;

	return fs_stock_left(f->stock, sale, &item, 1, &left) == 0 ? left : -2;
}

#endif

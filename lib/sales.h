/*
 * Sale rules: create a sale from its JSON description, load its stock into
 * Redis from PostgreSQL, read a sale for its public documents and the
 * figures of both stores side by side, and make and read the signed
 * purchase paths of its items.
 */
#ifndef FS_SALES_H
#define FS_SALES_H

#include <stddef.h>
#include <stdint.h>

#include "orders.h"
#include "pg.h"
#include "queue.h"
#include "stock.h"
#include "urlsig.h"

/* The largest sale description accepted, and the most items in one sale. */
#define FS_SALES_JSON_MAX (1024 * 1024)
#define FS_SALES_ITEMS_MAX 1000

/* The most bytes in a signed purchase path, NUL included. */
#define FS_SALES_PATH_MAX (FS_URLSIG_SIGNED_MAX + 64)

struct fs_sale_item {
	uint64_t id;
	char name[201];
	int64_t price_minor;
	char currency[4];
	long quantity;
	long sold; /* items.sold: live orders recorded in PostgreSQL */
	long left; /* units left in Redis; -1 when unknown */
};

/* A sale as its public documents show it. */
struct fs_sale {
	uint64_t id;
	int found; /* 0: no such sale */
	char name[201];
	int64_t starts_ms, ends_ms;
	long window_s;
	int nitems;
	struct fs_sale_item *items; /* the caller's, room for FS_SALES_ITEMS_MAX */
	int has_queue;		/* a waiting room (docs/QUEUE.md): the two below */
	struct fs_queue_settings queue;
	/* The draw's seed: secret until starts_ms, only its commitment before. */
	unsigned char seed[FS_QUEUE_SEEDBYTES];
};

struct fs_sales_figures {
	uint64_t item;
	char name[201];
	long quantity;
	long sold;       /* items.sold */
	long pending;    /* PENDING orders */
	long paid;       /* PAID orders */
	long redis_left; /* units left in Redis; -1 when the item is not loaded */
	long redis_holds; /* holds of this item in Redis */
};

/*
 * Validates the description and inserts the sale and its items in one
 * transaction, with a waiting room's settings and a freshly drawn seed
 * when it has "queue" (docs/QUEUE.md). Writes {"saleId":S,"itemIds":[...]}
 * into out.
 */
/* Only the checks of fs_sales_create: 0 when the description is valid, or -1 with err. */
int fs_sales_check_description(const char *json, size_t len, char *err, size_t errlen);
int fs_sales_create(fs_pg *, const char *json, size_t len, char *out, size_t outlen, char *err,
    size_t errlen);
/* How a warm treats the holds Redis has and the orders on their way. */
struct fs_sales_warm_opts {
	int force;		/* rebuild a sale that has holds in Redis */
	int repair;		/* hold the orders on their way too (implies force) */
	int ignore_pending;	/* warm although orders on their way exist: they get no hold */
	int64_t inflight_ms;	/* unconfirmed holds younger than this are kept: their
				   purchase may still be putting them on the topic */
	const struct fs_order *pending;	/* the sale's orders on the topic that the
					   consumer has not committed yet */
	size_t npending;
};

struct fs_sales_warm_report {
	long live;		/* holds of the live orders in PostgreSQL */
	long pending;		/* holds of orders on their way (topic or young holds) */
	long dropped;		/* orders on their way left without a hold: recorded and
				   closed, or their shopper holds another */
	long short_units;	/* units those holds lack; the consumer will refuse as many */
	int attempts;		/* 2 or more when purchases changed the sale meanwhile */
};

/*
 * Sets Redis to what PostgreSQL says, atomically against purchases: units
 * left per item, the payment window, the holds of the live orders, and the
 * holds of orders on their way (opts->pending with repair, and the young
 * unconfirmed holds Redis has) so that none of them loses its unit. Without
 * force or repair it refuses a sale that has holds; without repair or
 * ignore_pending, one whose orders are on their way. 0, or -1 with err set.
 */
int fs_sales_warm(fs_pg *, fs_stock *, uint64_t sale, const struct fs_sales_warm_opts *opts,
    struct fs_sales_warm_report *report, char *err, size_t errlen);
/*
 * The sales still in Redis (never cleared, or warmed since) with ids above
 * after, in id order, at most max: ids, and in over whether each has ended
 * with no PENDING order left (its keys may go). The count, or -1 with err.
 */
int fs_sales_in_redis(fs_pg *, uint64_t after, uint64_t *ids, int *over, int max, char *err,
    size_t errlen);
/* The item ids of a sale into items (room for FS_SALES_ITEMS_MAX): the count, or -1. */
int fs_sales_item_ids(fs_pg *, uint64_t sale, uint64_t *items, char *err, size_t errlen);
/* Records that the sale's keys have left Redis: 0, or -1 with err. */
int fs_sales_mark_cleared(fs_pg *, uint64_t sale, char *err, size_t errlen);
/* True when the sale's keys have left Redis for good (a closed, swept sale). */
int fs_sales_cleared(fs_pg *, uint64_t sale);
/*
 * Fills figs (room for max) with one row per item; returns the count, or -1
 * with err set (an unknown sale is an error).
 */
int fs_sales_figures(fs_pg *, fs_stock *, uint64_t sale, struct fs_sales_figures *figs, int max,
    char *err, size_t errlen);
/*
 * Reads the sale and its items from PostgreSQL into s (found = 0 for an
 * unknown sale) and, when r is not NULL, the units left from Redis; an
 * item's left stays -1 when Redis does not know it or cannot answer.
 * 0, or -1 with err set when PostgreSQL cannot answer, or when the sale has
 * a waiting room whose settings cannot be read (fail closed: its purchase
 * URLs must never be signed as a sale without one).
 */
int fs_sales_read(fs_pg *, fs_stock *, uint64_t sale, struct fs_sale *s, char *err,
    size_t errlen);
/*
 * Units left in Redis (the live count: units held count as taken) of
 * every item of s, in one round trip, into each item's left: -1 for an
 * item Redis does not know (a sale not warmed, or forgotten after its
 * end). 0, or -1 (every left -1) when Redis cannot answer.
 */
int fs_sales_read_left(fs_stock *, struct fs_sale *s);
/*
 * The units of an item that can still be bought, between 0 and its
 * quantity: Redis's count when known, else PostgreSQL's quantity - sold.
 */
long fs_sales_item_left(const struct fs_sale_item *);
/*
 * Calls each(arg, item, path) with the signed purchase path of every item
 * of the sale, "/api/flash-sales/items/I/purchase?sale=...": valid from the
 * whole second of the start to the whole second of the end, with q=1 in
 * the signature for a sale with a waiting room (its purchase needs a pass).
 * 0, or -1 when an item's URL cannot be signed.
 */
int fs_sales_purchase_paths(const fs_urlsig_key *, const struct fs_sale *,
    void (*each)(void *arg, uint64_t item, const char *path), void *arg);
/*
 * Looks for order o (id and user set) among the holds of the open sales
 * (the 64 newest around now): an order Redis holds but PostgreSQL has not
 * recorded yet is PROCESSING. 1 found (o filled in), 0 not the caller's or
 * none, -1 a store failed.
 */
int fs_sales_find_processing(fs_pg *, fs_stock *, struct fs_order *o);
/*
 * The order the shopper holds in sale o->sale (o->user set), as the
 * shopper's page must show it: the live order in PostgreSQL, else the
 * shopper's hold in Redis not recorded yet (PROCESSING). FS_ORDERS_OK (o
 * filled in, id included), FS_ORDERS_NOT_FOUND when the shopper holds none
 * (a closed order is none), FS_ORDERS_TRANSIENT (or another failure) when
 * a store failed. Costs one indexed query, plus two Redis reads when the
 * database has no live order.
 */
enum fs_orders_result fs_sales_find_mine(fs_pg *, fs_stock *, struct fs_order *o);

#endif

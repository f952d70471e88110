#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "expiry.h"
#include "log.h"
#include "orders.h"
#include "sales.h"
#include "settle.h"

#define SWEEP_BATCH	500	/* holds looked at per Redis round trip */
#define SWEEP_ROUNDS	100	/* batches per sale and run, at most */
#define SALES_PAGE	500	/* sales read from PostgreSQL at a time */

static void
set_err(fs_expiry *e, const char *what, const char *detail)
{
	e->err = 1;
	snprintf(e->errstr, sizeof(e->errstr), "%s: %s", what, detail);
}

/* A rule of lib/orders failed: its result, and what the database said. */
static void
orders_err(fs_expiry *e, const char *what, enum fs_orders_result r)
{
	e->err = 1;
	snprintf(e->errstr, sizeof(e->errstr), "%s: %s (%s)", what, fs_orders_strerror(r),
	    e->pg->errstr);
}

void
fs_expiry_init(fs_expiry *e, fs_pg *pg, fs_stock *stock, fs_push *push, long hold_max_age_s)
{
	memset(e, 0, sizeof(*e));
	e->pg = pg;
	e->stock = stock;
	e->push = push;
	e->hold_max_age_s = hold_max_age_s;
}

/* Tells the shoppers' pages; a failure only costs the push. */
static void
publish(fs_expiry *e, const struct fs_order *orders, size_t n)
{
	const struct fs_order *list[FS_EXPIRY_BATCH];
	size_t failed, k = 0;

	for (size_t i = 0; i < n && k < FS_EXPIRY_BATCH; i++)
		list[k++] = &orders[i];
	if ((failed = fs_orders_publish(e->push, list, k)) > 0)
		fs_log_warn("%zu status pushes failed (%s)", failed, e->push->errstr);
}

int
fs_expiry_expire(fs_expiry *e, struct fs_expiry_counts *c)
{
	struct fs_order batch[FS_EXPIRY_BATCH];
	const struct fs_order *list[FS_EXPIRY_BATCH];
	struct fs_settle_counts settled = { 0, 0 };
	enum fs_orders_result r;
	size_t n;

	for (;;) {
		if ((r = fs_orders_expire(e->pg, batch, FS_EXPIRY_BATCH, &n)) != FS_ORDERS_OK) {
			orders_err(e, "expire", r);
			return -1;
		}
		if (n == 0)
			return 0;
		c->expired += n;
		/* Committed: only now may the units go back. */
		for (size_t i = 0; i < n; i++)
			list[i] = &batch[i];
		settled.released = 0;
		if (fs_settle_holds(e->stock, list, n, &settled) != 0)
			fs_log_warn("%zu orders expired, releasing their holds failed (%s); the sweep "
				    "repairs it",
			    n, e->stock->errstr);
		c->released += settled.released;
		publish(e, batch, n);
	}
}

/* The order of a hold, for the database and the status push. */
static void
order_of_hold(struct fs_order *o, uint64_t sale, const struct fs_stock_record *h)
{
	memset(o, 0, sizeof(*o));
	snprintf(o->id, sizeof(o->id), "%s", h->order_id);
	snprintf(o->user, sizeof(o->user), "%s", h->user);
	o->sale = sale;
	o->item = h->item;
	o->reserved_ms = h->reserved_ms;
}

/* Settles one old unconfirmed hold; -1 when a store failed. */
static int
settle_ghost(fs_expiry *e, uint64_t sale, const struct fs_stock_record *h,
    struct fs_expiry_counts *c)
{
	const char *ids[1] = { h->order_id };
	struct fs_order o;
	const struct fs_order *op = &o;
	struct fs_settle_counts settled = { 0, 0 };
	enum fs_orders_result r;

	if (!h->exists) {
		/* No hold behind the entry: nothing to give back, only the entry to drop. */
		if (fs_stock_confirm(e->stock, sale, ids, 1) != 0) {
			set_err(e, "redis", e->stock->errstr);
			return -1;
		}
		return 0;
	}
	if (!h->readable) {
		fs_log_error("sale %" PRIu64 ": unreadable hold %.40s -> %.80s; left alone",
		    sale, h->order_id, h->raw);
		return 0;
	}
	order_of_hold(&o, sale, h);
	if ((r = fs_orders_close_ghost(e->pg, &o)) != FS_ORDERS_OK) {
		orders_err(e, "ghost", r);
		return -1;
	}
	if (fs_settle_holds(e->stock, &op, 1, &settled) != 0) {
		set_err(e, "settle", e->stock->errstr);
		return -1;
	}
	c->confirmed += settled.confirmed;
	if (settled.released == 1) {
		c->ghosts++;
		fs_log_info("ghost hold %s (sale %" PRIu64 " item %" PRIu64 ", user %s) released: %s",
		    o.id, sale, o.item, o.user, fs_orders_status_name(o.status));
		if (o.status != FS_ORDER_REJECTED)
			publish(e, &o, 1);
	}
	return 0;
}

/*
 * Closes the sale's unconfirmed holds reserved before the cut-off: the
 * backlog's read instant less the maximum age, so that each one's publish
 * had ended (delivered or failed) before the backlog was read. A hold
 * whose item's partition still had orders to record then waits, however
 * old (its order may be among them); the others go, whatever the other
 * partitions hold. *waited: how many waited.
 */
static int
sweep_ghosts(fs_expiry *e, uint64_t sale, const struct fs_ordertopic_backlog *b,
    struct fs_expiry_counts *c, size_t *waited)
{
	struct fs_stock_record *recs;
	int64_t before = b->read_ms - (int64_t)e->hold_max_age_s * 1000;
	size_t left = 0; /* holds looked at and left in place, skipped by the next batch */
	int rc = -1;

	*waited = 0;
	if ((recs = calloc(SWEEP_BATCH, sizeof(*recs))) == NULL) {
		set_err(e, "sweep", "out of memory");
		return -1;
	}
	for (int round = 0; round < SWEEP_ROUNDS; round++) {
		size_t n;

		if (fs_stock_unconfirmed_before(e->stock, sale, before, left, recs, SWEEP_BATCH, &n) !=
		    0) {
			set_err(e, "redis", e->stock->errstr);
			goto out;
		}
		for (size_t i = 0; i < n; i++) {
			if (recs[i].exists && recs[i].readable &&
			    !fs_ordertopic_caught_up(b, recs[i].item)) {
				(*waited)++;
				left++;
				continue;
			}
			if (recs[i].exists && !recs[i].readable)
				left++;
			if (settle_ghost(e, sale, &recs[i], c) != 0)
				goto out;
		}
		if (n < SWEEP_BATCH)
			break;
	}
	rc = 0;
out:
	free(recs);
	return rc;
}

/* Releases the sale's holds whose orders the database has closed. */
static int
repair_closed(fs_expiry *e, uint64_t sale, struct fs_expiry_counts *c)
{
	char cursor[32] = "0";
	const char **ids = NULL;
	size_t *closed = NULL;
	struct fs_stock_record *recs = NULL;
	int rc = -1;

	recs = calloc(SWEEP_BATCH, sizeof(*recs));
	ids = calloc(SWEEP_BATCH, sizeof(*ids));
	closed = calloc(SWEEP_BATCH, sizeof(*closed));
	if (recs == NULL || ids == NULL || closed == NULL) {
		set_err(e, "repair", "out of memory");
		goto out;
	}
	do {
		enum fs_orders_result r;
		size_t n, nclosed;

		if (fs_stock_scan_holds(e->stock, sale, cursor, recs, SWEEP_BATCH, &n) != 0) {
			set_err(e, "redis", e->stock->errstr);
			goto out;
		}
		for (size_t i = 0; i < n; i++)
			ids[i] = recs[i].order_id;
		if ((r = fs_orders_closed_among(e->pg, ids, n, closed, &nclosed)) != FS_ORDERS_OK) {
			orders_err(e, "closed orders", r);
			goto out;
		}
		for (size_t k = 0; k < nclosed; k++) {
			const struct fs_stock_record *h = &recs[closed[k]];
			int rel;

			if (!h->readable)
				continue;
			if ((rel = fs_stock_release(e->stock, sale, h->item, h->order_id)) < 0) {
				set_err(e, "release", e->stock->errstr);
				goto out;
			}
			if (rel == 1) {
				c->repaired++;
				fs_log_info("hold of closed order %s released late", h->order_id);
			}
		}
	} while (strcmp(cursor, "0") != 0);
	rc = 0;
out:
	free(closed);
	free(ids);
	free(recs);
	return rc;
}

/*
 * A sale that has ended with no PENDING order left loses its keys once no
 * hold is on its way (the partitions of its items have nothing left to
 * record, no unconfirmed hold is left); then it is marked cleared and
 * never swept again.
 */
static int
clear_over(fs_expiry *e, uint64_t sale, uint64_t *items, const struct fs_ordertopic_backlog *b,
    struct fs_expiry_counts *c)
{
	char err[256];
	int n, gone;

	if ((n = fs_sales_item_ids(e->pg, sale, items, err, sizeof(err))) < 0) {
		set_err(e, "items", err);
		return -1;
	}
	for (int i = 0; i < n; i++)
		if (!fs_ordertopic_caught_up(b, items[i]))
			return 0; /* an order of it may still be on its way */
	if ((gone = fs_stock_forget_sale(e->stock, sale, items, (size_t)n)) < 0) {
		set_err(e, "forget", e->stock->errstr);
		return -1;
	}
	if (gone == 0)
		return 0;
	if (fs_sales_mark_cleared(e->pg, sale, err, sizeof(err)) != 0) {
		set_err(e, "cleared", err);
		return -1;
	}
	c->cleared++;
	fs_log_info("sale %" PRIu64 " is over: its keys left Redis", sale);
	return 0;
}

int
fs_expiry_sweep(fs_expiry *e, const struct fs_ordertopic_backlog *b, struct fs_expiry_counts *c)
{
	uint64_t sales[SALES_PAGE], *items, after = 0;
	int over[SALES_PAGE], n, rc = -1;
	size_t waited;
	char err[256];

	if ((items = calloc(FS_SALES_ITEMS_MAX, sizeof(*items))) == NULL) {
		set_err(e, "sweep", "out of memory");
		return -1;
	}
	/* The sales still in Redis, page by page: past sales cost nothing. */
	do {
		if ((n = fs_sales_in_redis(e->pg, after, sales, over, SALES_PAGE, err, sizeof(err))) < 0) {
			set_err(e, "sales", err);
			goto out;
		}
		for (int i = 0; i < n; i++) {
			if (b == NULL)
				c->deferred++;
			else if (sweep_ghosts(e, sales[i], b, c, &waited) != 0)
				goto out;
			else if (waited > 0)
				c->deferred++;
			if (repair_closed(e, sales[i], c) != 0)
				goto out;
			if (over[i] && b != NULL && clear_over(e, sales[i], items, b, c) != 0)
				goto out;
			c->sales++;
		}
		if (n > 0)
			after = sales[n - 1];
	} while (n == SALES_PAGE);
	rc = 0;
out:
	free(items);
	return rc;
}

int
fs_expiry_counts_json(const struct fs_expiry_counts *c, char *out, size_t outlen)
{
	int n = snprintf(out, outlen,
	    "{\"expired\":%lu,\"released\":%lu,\"ghosts\":%lu,\"confirmed\":%lu,\"repaired\":%lu,"
	    "\"sales\":%lu,\"deferred\":%lu,\"cleared\":%lu}",
	    c->expired, c->released, c->ghosts, c->confirmed, c->repaired, c->sales, c->deferred,
	    c->cleared);

	return (n < 0 || (size_t)n >= outlen) ? -1 : n;
}

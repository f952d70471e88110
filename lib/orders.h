/*
 * Order rules in PostgreSQL (sql/002_orders.sql): record a batch of orders
 * from the topic exactly once, read, cancel and expire an order, and
 * close a ghost hold. Every change of `sold` happens in the same transaction
 * as the order's change; Redis is the caller's business, after the commit.
 */
#ifndef FS_ORDERS_H
#define FS_ORDERS_H

#include <stddef.h>
#include <stdint.h>

#include "pg.h"
#include "push.h"
#include "uuid.h"

#define FS_ORDERS_USER_MAX	64	/* bytes in a user id, as orders.user_id allows */
/* The live statuses (fs_orders_status_live) in SQL: "status IN " FS_ORDERS_LIVE_SQL. */
#define FS_ORDERS_LIVE_SQL	"('PENDING', 'PAID')"
#define FS_ORDERS_BATCH_MAX	2000	/* orders in one fs_orders_place_batch call */

enum fs_order_status {
	FS_ORDER_PROCESSING,	/* held in Redis, not yet in the database */
	FS_ORDER_PENDING,
	FS_ORDER_PAID,
	FS_ORDER_EXPIRED,
	FS_ORDER_CANCELLED,
	FS_ORDER_FAILED,
	FS_ORDER_REJECTED,	/* cannot be recorded at all (item not in the sale) */
	FS_ORDER_STATUS__MAX
};

/* What a shopper or a message says about one order. */
struct fs_order {
	char id[FS_UUID_STRLEN + 1];
	uint64_t sale;
	uint64_t item;
	char user[FS_ORDERS_USER_MAX + 1];
	int64_t reserved_ms;	/* when Redis took the unit */
	enum fs_order_status status;
	char failure[16];	/* NO_STOCK, LIVE_ORDER, GHOST_HOLD, UNKNOWN_ITEM or "" */
	int64_t expires_ms;	/* end of the payment window */
	int duplicate;		/* place: the order was recorded before this call */
	int changed;		/* cancel: this call made the change */
};

enum fs_orders_result {
	FS_ORDERS_OK = 0,
	FS_ORDERS_NOT_FOUND,	/* no such order of that shopper */
	FS_ORDERS_TRANSIENT,	/* the database is away or busy: retry later */
	FS_ORDERS_REFUSED,	/* the database refused the data: retrying cannot help */
	FS_ORDERS_TOO_BIG,	/* more orders than FS_ORDERS_BATCH_MAX */
	FS_ORDERS_SOLD_OUT,	/* buy: no unit left */
	FS_ORDERS_LIVE_ORDER,	/* buy: the shopper holds a live order in the sale */
	FS_ORDERS_NOMEM,	/* out of memory: retry later */
	FS_ORDERS_BAD_ANSWER,	/* the database answered what it never should: retry later */
	FS_ORDERS_RESULT__MAX
};

/* "PENDING" ... */
const char *fs_orders_status_name(enum fs_order_status);
/* FS_ORDER_STATUS__MAX when name is none of them. */
enum fs_order_status fs_orders_status_parse(const char *name);
/* PENDING and PAID hold a unit; everything else gives it back. */
int fs_orders_status_live(enum fs_order_status);
const char *fs_orders_strerror(enum fs_orders_result);

/*
 * The PostgreSQL-only purchase (flashsale-purchase-pg): takes a unit of
 * o->item and records o (id, sale, item, user) as PENDING in one
 * statement, hence one transaction, and fills in status and expires_ms.
 * FS_ORDERS_NOT_FOUND: the item is not in the sale; FS_ORDERS_LIVE_ORDER:
 * o->id is now the shopper's live order in the sale (FS_ORDERS_TRANSIENT
 * when it closed meanwhile). Not retried: a repeat could find its own
 * order.
 */
enum fs_orders_result fs_orders_buy(fs_pg *, struct fs_order *o);
/*
 * Records n orders (id, sale, item, user, reserved_ms filled in) in one
 * transaction and fills in status, failure, expires_ms and duplicate.
 * A REJECTED order has no row. On FS_ORDERS_TRANSIENT or _REFUSED nothing
 * was recorded; the result says what failed, pg->errstr what the database said.
 */
enum fs_orders_result fs_orders_place_batch(fs_pg *, struct fs_order *orders, size_t n);
/* Reads the shopper's order into o (o->id and o->user filled in). */
enum fs_orders_result fs_orders_get(fs_pg *, struct fs_order *o);
/*
 * The shopper's live order (PENDING, PAID) in a sale (o->sale and o->user
 * filled in) into o, id included; FS_ORDERS_NOT_FOUND when there is none.
 */
enum fs_orders_result fs_orders_get_mine(fs_pg *, struct fs_order *o);
/*
 * PENDING orders of a sale whose payment window ends within within_ms from
 * now (the units about to come back); the count, or -1.
 */
long fs_orders_count_expiring(fs_pg *, uint64_t sale, long within_ms);
/*
 * Cancels the shopper's order; o->status is its status afterwards and
 * o->changed says whether this call changed it. (An order is paid by the
 * payment provider only: lib/payments.)
 */
enum fs_orders_result fs_orders_cancel(fs_pg *, struct fs_order *o);
/*
 * How many PENDING orders are past their expiry, and by how many seconds
 * the oldest is (0 when none): an expiry that does not run shows here.
 */
enum fs_orders_result fs_orders_overdue(fs_pg *, long *count, double *oldest_s);
/*
 * Expires up to max overdue PENDING orders in one transaction; fills out
 * (id, sale, item, user) and sets *n to how many. The caller releases their
 * holds after this returns: the transaction is committed by then.
 */
enum fs_orders_result fs_orders_expire(fs_pg *, struct fs_order *out, size_t max, size_t *n);
/*
 * Closes the hold of an order that may never have reached the database
 * (o: id, sale, item, user, reserved_ms). o->status and o->expires_ms
 * become the order's afterwards: any status but PENDING and PAID means the
 * hold may go (REJECTED: the item is not in the sale, no order can exist).
 */
enum fs_orders_result fs_orders_close_ghost(fs_pg *, struct fs_order *o);
/*
 * Of the n order ids, writes into closed (room for n) those that the
 * database knows as EXPIRED, CANCELLED or FAILED; *nclosed is their count.
 */
enum fs_orders_result fs_orders_closed_among(fs_pg *, const char *const *ids, size_t n,
    size_t *closed, size_t *nclosed);

#define FS_ORDERS_DOC_MAX 192

/*
 * The answer to an accepted purchase, {"orderId","status","expiresAt"}.
 * Returns its length, or -1 when out is too small.
 */
int fs_orders_receipt(const struct fs_order *, char *out, size_t outlen);

/*
 * The order's status document, {"orderId","itemId","status","expiresAt"},
 * as the API answers it and the shopper's page is told. Returns its
 * length, or -1 when out is too small.
 */
int fs_orders_document(const struct fs_order *, char *out, size_t outlen);
/*
 * Tells the shopper's pages the status of n orders, on channel <orderId>
 * (best effort). Returns how many failed; push->errstr says why.
 */
size_t fs_orders_publish(fs_push *, const struct fs_order *const *orders, size_t n);
/*
 * The same in the push's background sender (fs_push_start): returns at
 * once, with how many failed already (documents that could not be
 * rendered); fs_push_finish says how many of the rest failed.
 */
size_t fs_orders_publish_start(fs_push *, const struct fs_order *const *orders, size_t n);
/*
 * Tells the shopper's page one order's status, as a handler does after a
 * change: a failure costs only the push, and is logged.
 */
void fs_orders_publish_one(fs_push *, const struct fs_order *);

#endif

/*
 * Payment rules (sql/003_payments.sql): an order is paid only by the
 * payment provider's signed word. A checkout opens one session per order
 * at the provider, for the item's price, expiring with the order's window;
 * each provider event is applied once; a payment that comes when the
 * order cannot take it (closed, past its window, paid already) is refunded
 * through the provider and recorded. Uses the provider driver for the
 * wire, PostgreSQL for the truth.
 */
#ifndef FS_PAYMENTS_H
#define FS_PAYMENTS_H

#include <stddef.h>
#include <stdint.h>

#include "orders.h"
#include "pg.h"
#include "provider.h"

enum fs_payments_result {
	FS_PAYMENTS_OK = 0,
	FS_PAYMENTS_NOT_FOUND,		/* no such order (of that shopper) */
	FS_PAYMENTS_NOT_PENDING,	/* checkout: paid, closed or past its window */
	FS_PAYMENTS_MISMATCH,		/* event: amount or currency differ from the order's */
	FS_PAYMENTS_TRANSIENT,		/* the database is away: retry later */
	FS_PAYMENTS_PROVIDER,		/* the provider failed or answered nonsense */
	FS_PAYMENTS_RESULT__MAX
};

/* What applying an event did. */
enum fs_payment_verdict {
	FS_PAYMENT_PAID,	/* PENDING -> PAID: tell the shopper */
	FS_PAYMENT_REFUND,	/* the money must go back: fs_payments_refund */
	FS_PAYMENT_DUPLICATE,	/* seen before; nothing changed */
	FS_PAYMENT_DECLINED,	/* payment.failed: the order stays as it was */
	FS_PAYMENT_VERDICT__MAX
};

const char *fs_payments_strerror(enum fs_payments_result);
const char *fs_payments_verdict_name(enum fs_payment_verdict);

/*
 * The shopper's checkout of order_id: the provider's hosted page for it,
 * opened once (a repeat answers the same URL). shop_url is where the
 * provider sends the shopper back (the page, "?sale=S&order=O" added).
 * redirect gets the URL; on FS_PAYMENTS_NOT_PENDING *status is the order's.
 * Errors go to pg->errstr or provider->errstr.
 */
enum fs_payments_result fs_payments_checkout(fs_pg *, fs_provider *, const char *order_id,
    const char *user, const char *shop_url, char redirect[FS_PROVIDER_URL_MAX + 1],
    enum fs_order_status *status);

/*
 * Applies a verified event once; order gets the order as it stands
 * (id, sale, item, user, status, expires_ms) for the status push.
 */
enum fs_payments_result fs_payments_apply(fs_pg *, const struct fs_provider_event *,
    enum fs_payment_verdict *, struct fs_order *order);

/* Refunds the event's payment through the provider and records the refund. */
enum fs_payments_result fs_payments_refund(fs_pg *, fs_provider *,
    const struct fs_provider_event *);

/*
 * Reports every payment rule broken (every PAID order has exactly one
 * succeeded payment; every payment that succeeded for an order that did
 * not take it is refunded) to report, one call each; *n gets the count.
 */
enum fs_payments_result fs_payments_check(fs_pg *,
    void (*report)(void *arg, const char *order_id, const char *problem), void *arg, size_t *n);

#endif

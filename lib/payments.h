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

/*
 * Refunds the event's payment through the provider and records the refund.
 * A refund the provider did not make (FS_PAYMENTS_PROVIDER) is recorded as
 * a failed try: fs_payments_retry_refunds tries it again.
 */
enum fs_payments_result fs_payments_refund(fs_pg *, fs_provider *,
    const struct fs_provider_event *);

#define FS_PAYMENTS_REFUND_BACKOFF_MAX_S 21600	/* the longest wait between two tries: 6 h */
#define FS_PAYMENTS_RETRY_MAX		 100	/* refunds tried per fs_payments_retry_refunds */
#define FS_PAYMENTS_REFUND_ERROR_MAX	 256	/* bytes kept of why a try failed */

/* One refund owed (a REFUND_PENDING payment) and how its tries went. */
struct fs_payments_owed {
	struct fs_provider_event ev;	/* payment, order, amount_minor, currency */
	long attempts;			/* tries that failed so far */
	double since_s;			/* since the money came (succeeded_at) */
	char error[FS_PAYMENTS_REFUND_ERROR_MAX + 1]; /* why the last try failed, or "" */
};

struct fs_payments_retry_counts {
	unsigned long tried;		/* refunds owed asked of the provider again */
	unsigned long refunded;		/* of them, made and recorded */
	unsigned long failed;		/* of them, refused or unanswered again */
	unsigned long alerting;		/* of the failed, those at alert_after failures or more */
};

/*
 * Asks the provider again for the refunds owed whose wait is over: a
 * refund that failed k times waits backoff_s * 2^(k-1) seconds (at most
 * FS_PAYMENTS_REFUND_BACKOFF_MAX_S) after its last try; one never tried is
 * due at once. At most FS_PAYMENTS_RETRY_MAX per call. Each failure is
 * logged, at error level from alert_after failures on. FS_PAYMENTS_OK
 * (counts filled in; refusals are counted, not errors), or
 * FS_PAYMENTS_TRANSIENT when the database cannot answer.
 */
enum fs_payments_result fs_payments_retry_refunds(fs_pg *, fs_provider *, long backoff_s,
    long alert_after, struct fs_payments_retry_counts *);
/*
 * The refunds owed for orders of one sale (0: of every sale), oldest
 * first: the first max of them into owed, their number into *n and how
 * many have failed alert_after times or more into *failing.
 */
enum fs_payments_result fs_payments_refunds_owed(fs_pg *, uint64_t sale, long alert_after,
    struct fs_payments_owed *owed, size_t max, long *n, long *failing);

/*
 * Reports every payment rule broken (every PAID order has exactly one
 * succeeded payment; every payment that succeeded for an order that did
 * not take it is refunded) to report, one call each; *n gets the count.
 */
enum fs_payments_result fs_payments_check(fs_pg *,
    void (*report)(void *arg, const char *order_id, const char *problem), void *arg, size_t *n);

#endif

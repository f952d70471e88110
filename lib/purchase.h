/*
 * The purchase request, as both purchase designs take it: admitted by the
 * checks that come before a unit may be taken, cheapest first. A rule:
 * it returns a verdict and knows no protocol; lib/answer turns verdicts
 * into HTTP answers. The purchase URL of a sale with a waiting room (q=1
 * inside its signature) is admitted by the shopper's pass instead of a
 * token (docs/QUEUE.md).
 */
#ifndef FS_PURCHASE_H
#define FS_PURCHASE_H

#include <stdint.h>

#include "orders.h"
#include "queue.h"
#include "stock.h"
#include "token.h"
#include "urlsig.h"

enum fs_purchase_verdict {
	FS_PURCHASE_ADMITTED = 0,
	FS_PURCHASE_BAD_METHOD,		/* not a POST */
	FS_PURCHASE_BAD_URL,		/* the signature or the item does not match */
	FS_PURCHASE_NOT_STARTED,	/* signed, but before the sale's start */
	FS_PURCHASE_UNAUTHENTICATED,	/* no valid bearer token */
	FS_PURCHASE_NOT_ADMITTED,	/* a waiting room's URL without a valid pass for its sale */
	FS_PURCHASE_NO_ORDER_ID,	/* the order id could not be made */
	FS_PURCHASE__MAX
};

/* What the checks read of a request; NULL strings count as empty. */
struct fs_purchase_request {
	int post;			/* the method is POST */
	const char *query;		/* the signed URL's query */
	const char *authorization;	/* the Authorization header */
	const char *pass;		/* the Flashsale-Pass header */
};

/*
 * Checks the method, the purchase URL's signature and window for o->item
 * at now_ms, then the shopper: for a waiting room's URL the pass (for the
 * URL's sale, unexpired, under queue_keys; NULL keys admit no pass) and
 * no token, for any other URL the bearer token and no pass; then gives
 * the order its id. FS_PURCHASE_ADMITTED with o->sale, o->user (the
 * token's or the pass's subject), o->id and *sale_end_ms (the signed end
 * of the sale, unless NULL) set; otherwise the refusal.
 */
enum fs_purchase_verdict fs_purchase_admit(const struct fs_purchase_request *,
    const fs_token_keys *, const fs_urlsig_key *, const fs_queue_keys *queue_keys,
    int64_t now_ms, struct fs_order *o, int64_t *sale_end_ms);

/*
 * A purchase met the shopper's hold in the sale (409 ALREADY_PURCHASED
 * names its order): a 409 is a promise that the order is on its way to
 * PostgreSQL, so it is answered only once the broker is known to have it.
 */
enum fs_purchase_held {
	FS_PURCHASE_HELD_PROMISED = 0,	/* recorded, or the broker has it: 409 */
	FS_PURCHASE_HELD_PUBLISH,	/* fate unknown: publish the same order again, 409 once acknowledged */
	FS_PURCHASE_HELD_WAIT,		/* not now (its first attempt may still wait, or too late to publish): 503 */
	FS_PURCHASE_HELD__MAX
};

/* The bounds of the rule below, from the configuration. */
struct fs_purchase_held_bounds {
	int64_t in_flight_ms;	/* a first attempt hears the broker's verdict within this after its hold */
	int64_t publish_ms;	/* a publication may start until this after the hold, and be counted by the sweeper */
};

/*
 * The bounds for a producer that gives up after kafka_timeout_ms (linger
 * included), a slack for the verdict to reach its request, and a sweeper
 * that fails holds older than hold_max_age_s whose partition is caught up
 * (margin_ms for clocks and lateness): a second publication acknowledged
 * before then is counted in its backlog.
 */
void fs_purchase_held_bounds_of(struct fs_purchase_held_bounds *, long kafka_timeout_ms,
    long linger_ms, long hold_max_age_s, long margin_ms);

/*
 * What to answer a purchase that met hold rec (recorded: PostgreSQL has
 * its order) at now_ms. A hold whose first attempt may still wait for the
 * broker waits (that attempt answers, and a publication now could race
 * its "not delivered" release); one whose fate is unknown after that is
 * published again (the same order, the consumer is idempotent by id) while
 * the sweeper would still see it; after that the sweeper decides.
 */
enum fs_purchase_held fs_purchase_held_verdict(const struct fs_stock_record *rec, int recorded,
    int64_t now_ms, const struct fs_purchase_held_bounds *);

#endif

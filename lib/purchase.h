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

#endif

/*
 * The purchase request, as both purchase designs take it: admitted by the
 * checks that come before a unit may be taken, cheapest first, and
 * answered the same way once decided. Each refusal is answered here.
 */
#ifndef FS_PURCHASE_H
#define FS_PURCHASE_H

#include <stdint.h>

#include "fcgi.h"
#include "orders.h"
#include "token.h"
#include "urlsig.h"

/*
 * Checks the method (POST), the purchase URL's signature and window for
 * o->item at now_ms, then the shopper's bearer token, and gives the order
 * its id. Returns 0 with o->sale, o->user, o->id and *sale_end_ms (the
 * signed end of the sale, unless NULL) set, or -1 once the refusal has been
 * answered (405, 403, 425, 401, 500).
 */
int fs_purchase_admit(fs_fcgi *, const fs_token_keys *, const fs_urlsig_key *, int64_t now_ms,
    struct fs_order *o, int64_t *sale_end_ms);
/* 202 with the order's receipt (id, status, expiresAt). */
void fs_purchase_accepted(fs_fcgi *, const struct fs_order *);
/* 409 ALREADY_PURCHASED naming the shopper's live order in the sale. */
void fs_purchase_already(fs_fcgi *, const char *order_id);

#endif

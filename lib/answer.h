/*
 * The HTTP side of the rules' verdicts (a wiring floor, between the
 * handlers and the rules, like keys and stores): reads what a rule needs
 * from a FastCGI request and turns its verdicts into answers, so that
 * every handler answers one verdict the same way.
 */
#ifndef FS_ANSWER_H
#define FS_ANSWER_H

#include <stdint.h>

#include "fcgi.h"
#include "orders.h"
#include "purchase.h"

/*
 * Admits a purchase request (fs_purchase_admit on the request's method,
 * query, Authorization and Flashsale-Pass); 0 when admitted, or -1 once
 * the refusal has been answered (405, 403, 425, 401, 500).
 */
int fs_answer_purchase_admit(fs_fcgi *, const fs_token_keys *, const fs_urlsig_key *,
    const fs_queue_keys *, int64_t now_ms, struct fs_order *o, int64_t *sale_end_ms);
/* 202 with the order's receipt (id, status, expiresAt). */
void fs_answer_purchase_accepted(fs_fcgi *, const struct fs_order *);
/* 200 with the order's status document. */
void fs_answer_order(fs_fcgi *, const struct fs_order *);
/* 409 ALREADY_PURCHASED naming the shopper's live order in the sale. */
void fs_answer_purchase_already(fs_fcgi *, const char *order_id);
/*
 * 409 e (ORDER_PROCESSING, ORDER_NOT_PENDING) with the order's id and
 * status, so that the page can show why.
 */
void fs_answer_order_conflict(fs_fcgi *, enum fs_http_error e, const struct fs_order *);

#endif

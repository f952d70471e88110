/*
 * Replaying dead letters (rules): after the cause of a refusal is fixed
 * (a constraint, a trigger, an item that was missing), the orders that the
 * consumer sent to <topic>.dlq go back on the order topic, each with its
 * unit taken again, so that every invariant holds as for a new purchase:
 *  - an order PostgreSQL has (FAILED or any other status) is decided and
 *    stays so: one order per 202 (invariant 3);
 *  - the unit is taken again through the reservation script, with the same
 *    order id: no unit is sold twice (1), the shopper holds one live order
 *    per sale (2), and the hold is there before the message (5);
 *  - its payment window starts again: reservedAt is the replay's instant.
 * Idempotent: a second replay finds the order recorded (or its hold taken
 * by the same order, and the message on its way: the consumer records an
 * order id once), and dead letters repeated in the topic count once.
 * A letter whose MAC does not check under the order keys (no MAC, an
 * unknown or removed key id, a bad MAC: the consumer's unauthenticated
 * letters, or a letter written to the dead-letter topic by anyone else)
 * is never replayed: replaying signs anew, so it would make an order that
 * no purchase handler made.
 */
#ifndef FS_DLQ_H
#define FS_DLQ_H

#include <stddef.h>
#include <stdint.h>

#include "ordertopic.h"
#include "orders.h"
#include "pg.h"
#include "stock.h"

#define FS_DLQ_LETTERS_MAX	100000	/* dead letters read in one replay */
#define FS_DLQ_READ_MS		30000	/* to read the dead-letter topic to its end */

enum fs_dlq_verdict {
	FS_DLQ_REPLAYED,	/* unit taken again, order back on the topic */
	FS_DLQ_RECORDED,	/* PostgreSQL has the order: its fate is decided */
	FS_DLQ_MALFORMED,	/* not an order message: nothing to replay */
	FS_DLQ_OTHER_SALE,	/* not of the sale asked for */
	FS_DLQ_REPEATED,	/* the same order came earlier in the dead letters */
	FS_DLQ_NOT_IN_SALE,	/* Redis does not know the item in that sale */
	FS_DLQ_SOLD_OUT,	/* no unit left to take again (or the sale has ended) */
	FS_DLQ_SHOPPER_HOLDS,	/* the shopper holds another order in the sale */
	FS_DLQ_NOT_DELIVERED,	/* the broker did not take it: try again later */
	FS_DLQ_UNAUTHENTICATED,	/* its MAC does not check: never an order */
	FS_DLQ__MAX
};

struct fs_dlq_entry {
	struct fs_order order;	/* as the dead letter says (id "" when malformed);
				   unauthenticated: what it claims, never trusted */
	char reason[32];	/* the consumer's reason header */
	enum fs_dlq_verdict verdict;
	char detail[64];	/* the recorded status, the shopper's other order, why
				   unauthenticated ... */
};

typedef void fs_dlq_report(void *arg, const struct fs_dlq_entry *);

struct fs_dlq_summary {
	long letters;		/* read from the topic */
	long count[FS_DLQ__MAX];
};

const char *fs_dlq_verdict_name(enum fs_dlq_verdict);
/*
 * Replays the dead letters of topic's .dlq (all sales when sale is 0) onto
 * topic with producer, reporting each (an unauthenticated letter by the
 * sale it claims). topic holds the order keys. 0 when every letter was judged
 * (replayed or not), -1 with err set when a store failed midway (what was
 * done stays done; run it again).
 */
int fs_dlq_replay(fs_pg *, fs_stock *, fs_ordertopic *, uint64_t sale, fs_dlq_report *report,
    void *arg, struct fs_dlq_summary *sum, char *err, size_t errlen);

#endif

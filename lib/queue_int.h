/*
 * Private to the queue family (lib/queue*.c): the names of the queue's
 * Redis keys fs:{S}:q:<name>, the passes of a sale counted by fate, which
 * the pacer paces by and `queue status` shows (queue_figures.c), and the
 * join journal's copy to PostgreSQL (queue_journal.c).
 */
#ifndef FS_QUEUE_INT_H
#define FS_QUEUE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "pg.h"
#include "queue.h"
#include "stock.h"

/* "fs:{<sale>}:q:<name>" into out. */
void fs_queue_key(char out[FS_QUEUE_KEY_LEN], uint64_t sale, const char *name);

/* The passes of a sale at an instant, by fate. */
struct fs_queue_tally {
	long live;		/* not expired */
	long unused;		/* not expired, shopper holds no unit */
	long idle;		/* of the unused: the page last asked for it before seen_since */
	long used;		/* shopper holds a unit, expired or not */
	long lapsed;		/* expired, shopper holds no unit */
	long all;		/* every pass issued */
	long after;		/* issued to the places ranked from..to-1 of the caller */
	long older;		/* of those, issued to the places ranked from..mid-1 */
};

/* The places and the pages a tally looks at beside the passes. */
struct fs_queue_span {
	long from, mid, to;	/* ranks: from < 0 none (after and older 0) */
	int64_t seen_since;	/* > 0: count the unused passes idle since (fs:{S}:q:seen) */
};

/*
 * 0, or -1 with the stock's err. span->from >= 0: also counts the passes
 * of the places ranked from..to-1 and from..mid-1 (one ZRANGE of those
 * places; the ranks of places admitted never move: later joins go behind).
 * span->seen_since > 0: also the unused passes whose page has not asked
 * for them since (one ZRANGEBYSCORE of fs:{S}:q:seen; a pass never seen
 * there, issued by an older pass script, is not idle). span NULL: neither.
 */
int fs_queue_passes_tally(fs_stock *, uint64_t sale, int64_t now_ms, const struct fs_queue_span *,
    struct fs_queue_tally *);

/*
 * The join journal's copy (queue_journal.c), as the pacer holding a sale's
 * lease runs it: its stores, its trim script (lua/queue_trim.lua), its
 * lease owner and FLASHSALE_REDIS_WAIT_MS (0: copy at once; else only
 * what a replica has).
 */
struct fs_queue_journal {
	fs_pg *pg;
	fs_stock *st;
	int trim;
	const char *owner;
	int wait_ms;
};

/*
 * Copies the sale's journal entries to queue_places and drops each from the
 * journal once PostgreSQL has it, a batch at a time (a bounded number in
 * one call). 1 the journal is empty, 0 more is left for the next call, -1
 * failed with err ("<what>: <reason>"; nothing is lost: an entry not
 * copied stays in the journal).
 */
int fs_queue_journal_copy(const struct fs_queue_journal *, uint64_t sale, char *err, size_t errlen);

#endif

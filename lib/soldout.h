/*
 * Sold-out knowledge, so that a sold-out item costs almost nothing: a flag
 * per item in this process, and a marker file per item that nginx checks
 * before it even calls a handler. A thread listens on the Redis channel
 * fs:restock and clears both the moment a unit comes back, on every process
 * and every host that runs it. A message can be lost while the listener's
 * connection stays healthy (Redis Cluster forwards pub/sub over its bus at
 * most once), so a second thread rechecks every remembered item against
 * Redis each FLASHSALE_SOLDOUT_RECHECK_MS: a unit that comes back is sold
 * again within that period plus one Redis round trip, whatever was lost.
 */
#ifndef FS_SOLDOUT_H
#define FS_SOLDOUT_H

#include <stddef.h>
#include <stdint.h>

#include "cfg.h"

struct fs_stock;

/* Most sold-out items of live sales remembered; more go to Redis each time. */
#define FS_SOLDOUT_MAX (1 << 20)
/*
 * The restock listener's subscribed connection, once it has said nothing
 * for FS_SOLDOUT_PING_EVERY_MS, is sent a PING; without an answer within
 * FS_SOLDOUT_PING_DEADLINE_MS it is taken for dead (a remote Redis that
 * went away without a FIN, a frozen server, a dropped NAT entry), dialled
 * again, subscribed again, and every flag is dropped, since restocks may
 * have been missed: the next purchases ask Redis. The deadline is long
 * enough that a busy machine's scheduling delay is not taken for a dead
 * Redis: a false verdict sends every sold-out purchase to Redis until the
 * flags are set again.
 */
#define FS_SOLDOUT_PING_EVERY_MS 1000
#define FS_SOLDOUT_PING_DEADLINE_MS 3000

typedef struct fs_soldout fs_soldout;

/*
 * marker_dir may be empty (no marker files). The Redis of cfg (address and
 * credentials) is where fs:restock is published; the listener runs on its
 * own connection (TCP keepalive on), PINGs it when it is quiet for
 * FS_SOLDOUT_PING_EVERY_MS, and dials again when it fails or a PING goes
 * unanswered for FS_SOLDOUT_PING_DEADLINE_MS; each (re)subscription drops
 * every flag and marker (fs_soldout_forget_all), since restocks may have
 * gone by unheard. The recheck thread, on a stock of its own, runs
 * fs_soldout_recheck every FLASHSALE_SOLDOUT_RECHECK_MS of cfg (a pass
 * starts that long after the previous one started, or at its end when it
 * took longer). NULL with err set.
 */
fs_soldout *fs_soldout_new(const char *marker_dir, const struct fs_cfg *cfg, char *err,
    size_t errlen);
/* The same without the listener and the recheck (tests, tools): nothing clears it by itself. */
fs_soldout *fs_soldout_new_offline(const char *marker_dir);
/* Stops the listener and frees. */
void fs_soldout_free(fs_soldout *);
/* True when the item is known to be sold out. One lookup, whatever the count. */
int fs_soldout_known(fs_soldout *, uint64_t item);
/* Call before asking Redis; pass the value to fs_soldout_mark. */
unsigned fs_soldout_generation(fs_soldout *, uint64_t item);
/*
 * Records that Redis said "sold out" for the item of a sale that ends at
 * sale_end_ms, unless a unit came back since gen was read (then the answer
 * is already stale). The entry and its marker go once the sale has ended.
 * The sale is where fs_soldout_recheck asks for the item's units left.
 * A table with the recheck thread marks the item (flag and marker) only
 * after that thread has read the sale's doubts in Redis (a Redis round
 * trip later; woken at once): a hold in doubt whose message this process
 * never heard (lost, or told before it started) puts the item in doubt
 * instead. Until then the item is not known sold out here, so its next
 * purchases still ask Redis, and the holder of a unit in doubt is never
 * told sold out by this process's flag or marker. At most 256 answers
 * wait; one more is dropped (its item asks Redis again). A table without
 * the thread marks at once.
 */
void fs_soldout_mark(fs_soldout *, uint64_t sale, uint64_t item, int64_t sale_end_ms,
    unsigned gen);
/* How many sold-out answers wait to be marked, or are being marked (0: all settled). */
size_t fs_soldout_marks_waiting(fs_soldout *);
/* Forgets the item's sold-out state here (a unit came back). */
void fs_soldout_clear(fs_soldout *, uint64_t item);
/*
 * Forgets every item and removes every marker; an answer read before it
 * (its gen older) is then ignored by fs_soldout_mark.
 */
void fs_soldout_forget_all(fs_soldout *);
/*
 * Drops the items of sales ended by now_ms, and their markers, and shrinks
 * the table to what is left; the listener does it every second. Returns how
 * many went.
 */
size_t fs_soldout_sweep(fs_soldout *, int64_t now_ms);
/*
 * One recheck pass. First the doubts: for each sale of a remembered item
 * or of an item in doubt here, asks st which of its items have a hold in
 * doubt not settled yet (fs_stock_doubts: the doubt recorded in Redis, not
 * only told on fs:restock) and puts each in doubt here until
 * FS_SOLDOUT_DOUBT_LEASE recheck periods from now_ms (a longer doubt
 * stays): a doubt whose message was lost, or that outlived its message's
 * end (the consumer lagging past FLASHSALE_HOLD_MAX_AGE), holds here within
 * a period, and lasts until its hold is settled. Then asks st the units
 * left of every remembered item of a
 * live sale (fs_stock_left, one request per sale and place for up to
 * FS_SOLDOUT_RECHECK_BATCH items, and the sale's end), and forgets each item
 * that has a unit again while its sale has not ended by now_ms, with its
 * marker: its restock went by unheard. An item Redis cannot tell about (an
 * error, not loaded) stays. Returns how many it forgot; the recheck thread
 * counts them in flashsale_soldout_healed_total. One caller at a time: the
 * recheck thread, or the owner of a table made without it (whose period
 * counts as 1000 ms).
 */
#define FS_SOLDOUT_RECHECK_BATCH 512
/* Recheck periods a doubt found in Redis lasts here unless a pass finds it again. */
#define FS_SOLDOUT_DOUBT_LEASE 3
/* Items in doubt of one sale that one pass takes from Redis (a sale has at most 1000). */
#define FS_SOLDOUT_DOUBT_SALE_MAX 1024
size_t fs_soldout_recheck(fs_soldout *, struct fs_stock *st, int64_t now_ms);
/*
 * The listener's life: how many times it subscribed (every reconnection
 * adds one), and how many connections it dropped because Redis left a PING
 * unanswered past the deadline (a silent remote Redis).
 */
void fs_soldout_listener_stats(fs_soldout *, unsigned *subscriptions, unsigned *silences);
/*
 * Doubt: a hold of the item was kept while its order may or may not be in
 * the broker's log (a delivery report "maybe delivered"), and its shopper
 * was told 503. Until that order is settled (the consumer records it or
 * the sweeper releases the hold, however long the consumer lags), a retry
 * of that shopper must reach Redis, which finds the hold (409 or 503):
 * never a sold-out answer from memory. So while an item is in doubt it is
 * not known sold out here (fs_soldout_known false, no marker: entering
 * doubt drops both, and fs_soldout_mark sets neither), and the purchase
 * handler tells the edge not to keep its 410 (fs_soldout_in_doubt). The
 * purchase handler records the doubt in Redis (fs_stock_doubt_record),
 * then tells every process and host on fs:restock as
 * "doubt <item> <until, ms since the epoch> <sale>"
 * (fs_soldout_doubt_format), until now + FLASHSALE_HOLD_MAX_AGE; the
 * listener applies it (a restock does not end it, nor does a new
 * subscription). A message can be lost, and a hold can stay unsettled
 * past its message's end (the consumer lagging): the recheck reads the
 * doubts recorded in Redis (fs_soldout_recheck) and keeps the item in doubt
 * while a hold of it is. At most FS_SOLDOUT_DOUBT_MAX items are in doubt
 * at once (more are logged, once, and keep no doubt); the listener's
 * sweep drops the doubts that ended.
 */
#define FS_SOLDOUT_DOUBT_MAX (1 << 16)
#define FS_SOLDOUT_DOUBT_WORD "doubt"
/* A doubt worth telling the others: new, or longer by at least this. */
#define FS_SOLDOUT_DOUBT_NEWS_MS 1000
/*
 * Puts the item of the sale in doubt until until_ms (a doubt already
 * longer stays); its flag and marker go at once. 1 when the doubt is new
 * or longer by FS_SOLDOUT_DOUBT_NEWS_MS or more (worth publishing), else 0.
 */
int fs_soldout_doubt(fs_soldout *, uint64_t sale, uint64_t item, int64_t until_ms);
/* True while the item is in doubt. */
int fs_soldout_in_doubt(fs_soldout *, uint64_t item);
/* Reads "doubt <item> <until_ms> <sale>" strictly (digits, no leading zero, single spaces); 0 or -1. */
int fs_soldout_doubt_parse(const char *msg, uint64_t *sale, uint64_t *item, int64_t *until_ms);
/* Writes the message of a doubt; its length, or -1 when it does not fit. */
int fs_soldout_doubt_format(char *out, size_t outlen, uint64_t sale, uint64_t item,
    int64_t until_ms);

/* How many items are remembered and the bytes their table takes. */
void fs_soldout_stats(fs_soldout *, size_t *items, size_t *bytes);

#endif

/*
 * The Redis layout of a sale, and its one owner: every key, command,
 * script and record format of the stock lives in the stock family
 * (stock*.c, lib/README) and the scripts it loads (lua/reserve.lua,
 * release.lua, forget.lua, guard.lua, layout.lua, mark.lua). Nobody else
 * sends Redis a command about a sale.
 *
 * A sale lives in one or more places; a place is a hash tag, and so one
 * Redis Cluster slot that one script sees whole. The first place's tag is
 * the sale's id "S"; an item given "shards": K in the sale file spreads its
 * units over K places "S", "S.1" ... "S.K-1" (the sale has as many places
 * as its most sharded item); on a cluster, warm names place p "S.p.n"
 * instead when that puts it on a master no other place of the sale uses.
 * At every place T:
 *
 *   fs:{T}:stock:<item>  units left of that shard (absent: no shard there)
 *   fs:{T}:holders       shopper -> order id: the guards of the shoppers
 *                        whose home is T (one unit per shopper per sale)
 *   fs:{T}:orders        order id -> hold record "<shopper> <item> <reservedAtMs>"
 *                        of the units taken at T, and " sent" after it while
 *                        the broker is not known to have the order (see
 *                        enum fs_stock_broker)
 *   fs:{T}:unconfirmed   order ids of T not yet recorded in PostgreSQL, by reservedAtMs
 *   fs:{T}:sale          sale settings ("window": payment window in seconds,
 *                        "ends": end of the sale in ms, after which nothing sells);
 *                        the first place's also the layout: "places" (the other
 *                        places' tags) and "sharded" ("<item>:<K> ...", K above 1)
 *   fs:{S}:doubt         order id -> item: the holds kept while the broker may
 *                        or may not have their orders (lib/soldout.h), at the
 *                        first place only; an entry goes once its order is
 *                        settled (fs_stock_doubts), the key with the sale
 *   fs:restock           channel: "<sale> <item>" each time a unit comes back,
 *                        and "doubt <item> <untilMs> <sale>" (lib/soldout.h)
 *
 * Why a home place per shopper: a shopper's home is FNV-1a(shopper) mod
 * the number of places, and the guard lives there only, so "one unit per
 * shopper per sale" is one HGET in one slot whatever the item. The common
 * path is one script at home: check the guard, take a unit of the home
 * shard, set the guard. A home shard that ran dry (or an item with no
 * shard at home) sends the shopper to the other shards in turn: take a
 * unit there (record at that place, so its units left + holds stay exact
 * in one slot), then claim the guard at home; a shopper whose guard another
 * order claimed meanwhile gives that unit back. So two concurrent purchases
 * of one shopper get one unit, no shard keeps units while others sell out,
 * and the item is sold out when every shard said so. A crash between the
 * two steps leaves an unconfirmed hold without a guard, which the ghost
 * sweeper releases like any other; the database's one-live-order index is
 * the backstop. Release drops a guard kept elsewhere before it returns
 * the unit, so a failure in between leaves the record for the next release.
 * (Routing by the database alone would let a shopper hold several units
 * until the consumer refuses all but one: units unsold for seconds at the
 * peak, and FAILED orders after a 202.)
 *
 * A fs_stock owns its Redis connection (one per thread: hiredis contexts
 * are not shared); it connects when first used and reconnects by itself.
 * It remembers a sale's layout for a second (a sale's layout changes only
 * when it is warmed again, before it opens).
 */
#ifndef FS_STOCK_H
#define FS_STOCK_H

#include <stddef.h>
#include <stdint.h>

#include "cfg.h"
#include "uuid.h"

#define FS_STOCK_USER_MAX	64	/* bytes in a shopper id of a hold record */
#define FS_STOCK_RECORD_MAX	128	/* bytes in a hold record, NUL included */
#define FS_STOCK_RESTOCK_CHANNEL "fs:restock"
#define FS_STOCK_WINDOW_DEFAULT	600	/* payment window (s) of a sale without one */
#define FS_STOCK_SHARDS_MAX	16	/* stock keys (places) one item may be spread over */
#define FS_STOCK_SHARDED_ITEMS_MAX 64	/* items of one sale given shards */
#define FS_STOCK_TAG_MAX	32	/* bytes in a place's hash tag, NUL included */

enum fs_stock_result {
	FS_STOCK_RESERVED,
	FS_STOCK_ALREADY,
	FS_STOCK_SOLD_OUT,
	FS_STOCK_UNKNOWN_ITEM,
	FS_STOCK_NOT_STARTED,	/* before the sale's start by Redis' clock: nothing taken */
	FS_STOCK_ERROR,
	FS_STOCK__MAX
};

/* What went wrong, in fs_stock.err (0 when nothing did). */
enum fs_stock_err {
	FS_STOCK_OK = 0,
	FS_STOCK_ERR_IO,	/* Redis unreachable: worth a retry */
	FS_STOCK_ERR_REPLY,	/* Redis refused or answered unexpectedly: a retry will not heal */
	FS_STOCK_ERR_NOMEM,
	FS_STOCK_ERR__MAX
};

struct fs_stock_hold {
	char order_id[FS_UUID_STRLEN + 1]; /* the new order, or the one already held */
	long window_s;                     /* payment window, when reserved */
	long left;                         /* units left after this one, when reserved */
};

/*
 * What a hold record says of its order and the broker. A purchase writes
 * its hold "sent" (its order message is on its way, or its fate unknown);
 * once the broker acknowledged the order (to the purchase, in one pipeline
 * per loop round with the round's others, or to a second publication for
 * a retry) the record drops it, as warm's records of orders that
 * PostgreSQL or the topic has: the broker has it.
 */
enum fs_stock_broker {
	FS_STOCK_BROKER_HAS = 0,	/* "<shopper> <item> <reservedAtMs>" */
	FS_STOCK_BROKER_SENT,		/* the same and " sent" */
	FS_STOCK_BROKER__MAX
};

/* One hold of a sale, as its record in fs:{S}:orders says. */
struct fs_stock_record {
	char order_id[FS_UUID_STRLEN + 1];
	char user[FS_STOCK_USER_MAX + 1];
	uint64_t item;
	int64_t reserved_ms;
	enum fs_stock_broker broker;
	int readable;		/* 0: order_id or the record is not of the format */
	int exists;		/* 0: an unconfirmed entry with no record behind it */
	char raw[81];		/* the record's start, for reports when unreadable */
};

/* One shopper -> order entry of fs:{S}:holders. */
struct fs_stock_holder {
	char user[FS_STOCK_USER_MAX + 1];
	char order_id[FS_UUID_STRLEN + 1];
};

/* Everything of one sale in Redis, read in one MULTI (see fs_stock_snapshot). */
struct fs_stock_snapshot {
	int loaded;			/* fs:{S}:sale exists */
	struct fs_stock_record *holds;	/* fs:{S}:orders */
	size_t nholds;
	struct fs_stock_holder *holders;
	size_t nholders;
	char (*unconfirmed)[FS_UUID_STRLEN + 1];
	size_t nunconfirmed;
	long *left;			/* per asked item; -1 when the key is absent */
	int *has_left;			/* 1 when the item's key exists */
	size_t nitems;
};

/*
 * What warm writes: one sale's state as PostgreSQL says it, plus the holds
 * of orders not recorded yet (on their way through Kafka).
 */
struct fs_stock_warm_item {
	uint64_t id;
	long left;
	int shards;	/* stock keys the units are spread over; 0 or 1: one */
};

struct fs_stock_warm {
	long window_s;
	int64_t ends_ms;	/* the sale's end: reserve refuses from then on */
	int64_t starts_ms;	/* the sale's start: reserve refuses before it (Redis' clock); 0 none */
	const struct fs_stock_warm_item *items;
	size_t nitems;
	const struct fs_stock_record *holds; /* of the live orders */
	size_t nholds;
	const struct fs_stock_record *pending; /* held, unconfirmed: not in PostgreSQL yet */
	size_t npending;
	int open;	/* 1: the sale is open (purchases may run while it is written) */
};

struct fs_stock_layout;

typedef struct fs_stock {
	struct fs_redis *redis; /* owned */
	struct fs_stock_layout *layouts; /* owned: the layouts read lately */
	void *batch;                     /* owned: fs_stock_reserve_many's room, made when first needed */
	struct fs_stock_ask *batch_asks; /* the batch of fs_stock_reserve_begin until its end */
	size_t batch_n;
	int reserve;
	int release;
	int forget;
	int guard;
	int layout;
	int mark;
	int err;		/* enum fs_stock_err */
	char errstr[128];
} fs_stock;

/*
 * A stock on the Redis of cfg (FLASHSALE_REDIS, as the user and password
 * of FLASHSALE_REDIS_USER/_PASSWORD_FILE), with the scripts of datadir/lua
 * loaded; datadir NULL for a reader that never reserves or releases. NULL
 * with err written when it cannot be made.
 */
fs_stock *fs_stock_new(const struct fs_cfg *cfg, const char *datadir, char *err, size_t errlen);
/* Closes the connection; NULL is fine. */
void fs_stock_free(fs_stock *);
const char *fs_stock_strerror(enum fs_stock_err);
/* PING: 0 when Redis answers, -1 with err set (GET /readyz). */
int fs_stock_ping(fs_stock *);

/* A shopper's home place among places: where its guard lives. */
int fs_stock_home(const char *user, int places);
/* The place of the unit of a hold warm writes: home, or a shard of the item's if none is there. */
int fs_stock_unit_place(int home, int shards);
/*
 * Takes a unit of the item for the shopper: from its home shard, or from
 * the others when that one is empty (see above). hold.left is the item's
 * units left over every shard when the one that served ran out.
 */
enum fs_stock_result fs_stock_reserve(fs_stock *, uint64_t sale, uint64_t item, const char *user,
    const char *order_id, int64_t now_ms, struct fs_stock_hold *out);
/* One reservation of fs_stock_reserve_many: its arguments, then its outcome. */
struct fs_stock_ask {
	uint64_t sale, item;
	const char *user, *order_id;
	int64_t now_ms;
	enum fs_stock_result result; /* out: as fs_stock_reserve returns it */
	struct fs_stock_hold hold;   /* out */
	char errstr[128];            /* out: why, when result is FS_STOCK_ERROR */
};
#define FS_STOCK_BATCH_MAX 64 /* reservations in one pipeline (more: several) */
/*
 * fs_stock_reserve for each of n reservations, with the first script of
 * each (the common path) pipelined: one Redis round trip per node for the
 * lot instead of one per reservation. The rest (another shard, a guard
 * elsewhere) runs after it, one at a time, as fs_stock_reserve runs it: the
 * outcomes are those of fs_stock_reserve called for each in turn.
 */
void fs_stock_reserve_many(fs_stock *, struct fs_stock_ask *asks, size_t n);
/*
 * fs_stock_reserve_many of at most FS_STOCK_BATCH_MAX in two halves, for an
 * event loop that does other work while Redis runs the pipeline: _begin
 * sends it (asks must stay valid until the end); _fds gives the
 * descriptors to wait on for readability (0: none, end at once), until
 * _deadline (monotonic ms; 0 once the replies are in); _end reads the
 * replies (past the deadline, those not in are lost at once) and
 * completes every ask. Any other call of this stock first receives the
 * pipeline's replies; _end completes the asks then. A second _begin ends
 * the first batch. _begin sends nothing but the pipeline: a sale's layout
 * (its places) that this stock has not read within the last second is
 * read in the pipeline too, the batch going by the layout read before
 * meanwhile; the reservations of a sale whose layout it never read wait
 * for that read, and _end sends their scripts in one more pipeline (Redis
 * has just answered) and waits for it.
 */
void fs_stock_reserve_begin(fs_stock *, struct fs_stock_ask *asks, size_t n);
int fs_stock_reserve_fds(const fs_stock *, int *fds, int max);
int64_t fs_stock_reserve_deadline(const fs_stock *);
void fs_stock_reserve_end(fs_stock *);
/*
 * fs_stock_broker_has_many's marks of n holds (at most FS_STOCK_MARK_MAX,
 * of sales of up to 4 places each; copied) sent with the next
 * fs_stock_reserve_begin's pipeline, at its end: no round trip of their
 * own. Ends the batch out first. 0, or -1 with err set (nothing given).
 * Once that batch ended, fs_stock_reserve_marked: 0 when every mark ran
 * (a hold that changed meanwhile keeps what it says), -1 with why in err
 * when one failed (those holds keep " sent").
 */
int fs_stock_reserve_marks(fs_stock *, const uint64_t *sales, const struct fs_stock_record *recs,
    size_t n);
int fs_stock_reserve_marked(const fs_stock *, char *err, size_t errlen);
/*
 * After a reservation: waits up to timeout_ms until a replica of each Redis
 * master it wrote to (its shard, the shopper's guard) has it too (WAIT 1),
 * so that a replica promoted after a master's death keeps every hold
 * answered 202. 0, or -1 with err set
 * (FS_STOCK_ERR_IO when no replica acknowledged in time).
 */
int fs_stock_replicate(fs_stock *, int timeout_ms);
/*
 * Gives an order's unit back, once, and announces it on the restock
 * channel. 1: the unit went back; 0: that order held nothing; -1: err set
 * (FS_STOCK_ERR_IO: Redis away; FS_STOCK_ERR_REPLY: the record is of another
 * item, which no retry heals).
 */
int fs_stock_release(fs_stock *, uint64_t sale, uint64_t item, const char *order_id);
/*
 * The hold of one order and whether PostgreSQL recorded it (*recorded: its
 * unconfirmed entry is gone, the consumer confirmed it): 1 found (rec
 * filled), 0 none or unreadable, -1 err set.
 */
int fs_stock_hold_standing(fs_stock *, uint64_t sale, const char *order_id,
    struct fs_stock_record *rec, int *recorded);
/*
 * Rewrites the hold rec (as read) to say that the broker has its order,
 * unless it changed or went meanwhile: 1 rewritten, 0 not, -1 err set.
 */
int fs_stock_broker_has(fs_stock *, uint64_t sale, const struct fs_stock_record *rec);
/*
 * fs_stock_broker_has for n holds of their sales (sales[i] for recs[i]),
 * pipelined: one round trip per node for the lot (a hold is looked for at
 * every place of its sale). 0, or -1 with err set when any call failed
 * (those holds keep " sent").
 */
#define FS_STOCK_MARK_MAX 64 /* holds in one fs_stock_broker_has_many */
int fs_stock_broker_has_many(fs_stock *, const uint64_t *sales, const struct fs_stock_record *recs,
    size_t n);
/*
 * Records that the hold of order_id (a unit of item) is in doubt: its
 * order may or may not be in the broker's log (fs:{S}:doubt). An entry
 * whose order is settled already is harmless: fs_stock_doubts drops it.
 * 0, or -1 with err set.
 */
int fs_stock_doubt_record(fs_stock *, uint64_t sale, uint64_t item, const char *order_id);
/*
 * The items of the sale with a hold in doubt that is not settled yet (its
 * unconfirmed entry is still there: PostgreSQL has not recorded its order
 * and nobody released it), distinct, at most max of them into items, *n
 * of them; the entries of settled holds are removed on the way. Reads at
 * most FS_STOCK_DOUBTS_SCAN entries (every hold of a sale of that many
 * units in doubt). 0, or -1 with err set (items found so far in *n).
 */
#define FS_STOCK_DOUBTS_SCAN (1 << 20)
int fs_stock_doubts(fs_stock *, uint64_t sale, uint64_t *items, size_t max, size_t *n);
/* Marks orders as recorded in PostgreSQL, so the ghost sweeper skips them; 0 or -1. */
int fs_stock_confirm(fs_stock *, uint64_t sale, const char *const *order_ids, size_t n);

/* Writes a hold record; its length, or -1 when it does not fit. */
int fs_stock_record_format(char *out, size_t outlen, const char *user, uint64_t item,
    int64_t reserved_ms, enum fs_stock_broker broker);
/* Reads a hold record into r (user, item, reserved_ms, broker); 0, or -1 when it is not one. */
int fs_stock_record_parse(const char *rec, struct fs_stock_record *r);
/* Reads a restock message "<sale> <item>"; 0 or -1. */
int fs_stock_restock_parse(const char *msg, uint64_t *sale, uint64_t *item);
/* Publishes msg on fs:restock (lib/soldout: a doubt); 0 or -1 with the error set. */
int fs_stock_restock_publish(fs_stock *, const char *msg);

/*
 * Units left of n items (one round trip) into left; -1 for an item that is
 * not loaded. 0, or -1 with err set.
 */
int fs_stock_left(fs_stock *, uint64_t sale, const uint64_t *items, size_t n, long *left);
/* Holds per item of n items into holds (zeroed first); 0 or -1. */
int fs_stock_count_holds(fs_stock *, uint64_t sale, const uint64_t *items, size_t n, long *holds);
/*
 * The hold of one order: 1 found (rec filled), 0 none or unreadable, -1
 * err set.
 */
int fs_stock_find_hold(fs_stock *, uint64_t sale, const char *order_id,
    struct fs_stock_record *rec);
/*
 * The live hold of one shopper in a sale (its guard at the shopper's home
 * place, then the order's record): 1 found (rec filled), 0 none, -1 err set.
 */
int fs_stock_find_holder(fs_stock *, uint64_t sale, const char *user,
    struct fs_stock_record *rec);
/*
 * Whether each of n shoppers holds a unit of the sale (a guard at its home
 * place: a live hold, recorded or on its way) into held (1 or 0), one
 * HMGET per place and 512 shoppers. 0, or -1 with err set.
 */
int fs_stock_holding(fs_stock *, uint64_t sale, const char *const *users, size_t n, int *held);
/* The sale's payment window in seconds, FS_STOCK_WINDOW_DEFAULT when unknown or unreadable. */
long fs_stock_window(fs_stock *, uint64_t sale);
/*
 * The sale's end in ms as Redis has it (reserve sells nothing from then on,
 * whatever a purchase URL says; sale close moves it), 0 when none is set,
 * -1 with err set.
 */
int64_t fs_stock_end(fs_stock *, uint64_t sale);
/*
 * Starts a warm that no purchase can slip into: WATCHes every key of the
 * sale (its holds, holders, unconfirmed entries and settings, and the stock
 * of the n items), then reads how many holds Redis has (*holds) and the
 * unconfirmed holds reserved at or after since_ms (at most max, into
 * young): orders that may still be on their way to Kafka. Read PostgreSQL
 * after this, then call fs_stock_warm or fs_stock_warm_abort. 0, or -1.
 */
int fs_stock_warm_begin(fs_stock *, uint64_t sale, const uint64_t *items, size_t n,
    int64_t since_ms, struct fs_stock_record *young, size_t max, size_t *nyoung, long *holds);
/*
 * Sets the sale to what w says in one MULTI, unless a key watched by
 * fs_stock_warm_begin changed since: clears its holds, sets units left,
 * the window, the live holds and the pending ones (unconfirmed, by their
 * reservation time), then announces every item on the restock channel.
 * 0 done, 1 something changed meanwhile (nothing written: begin again),
 * -1 err set. On a cluster each place (of either layout) takes a MULTI of
 * its own, guarded by its WATCH only while no other place shares its
 * master (one connection, whose first EXEC ends every WATCH): a warm of an
 * open sale (w->open) with places sharing a master is refused, nothing
 * written (-1, FS_STOCK_ERR_REPLY).
 */
int fs_stock_warm(fs_stock *, uint64_t sale, const struct fs_stock_warm *w);
/* Ends a warm begun but not written (UNWATCH). */
void fs_stock_warm_abort(fs_stock *);
/*
 * Removes every key of a sale that has ended and whose last order closed
 * (its items: the n ids of items), in one script, unless it still has
 * unconfirmed holds. 1 removed, 0 holds still on their way, -1 err set.
 */
int fs_stock_forget_sale(fs_stock *, uint64_t sale, const uint64_t *items, size_t n);
/* Where one shard of an item is. */
struct fs_stock_shard {
	char tag[FS_STOCK_TAG_MAX];	/* its hash tag */
	unsigned slot;			/* its Redis Cluster slot */
	char master[128];		/* the Redis that serves it ("?": unknown) */
};

/*
 * The stock keys of an item as Redis has them now: where each is (room for
 * max) and the number of shards (1 for an item not sharded); -1 with err set.
 */
int fs_stock_shards(fs_stock *, uint64_t sale, uint64_t item, struct fs_stock_shard *shards,
    int max);
/*
 * Seconds since the Redis server started (a cluster: its youngest master,
 * the one most likely to have missed purchases), or -1 with err set.
 */
long fs_stock_server_uptime(fs_stock *);
/*
 * Moves the sale's end, after which reserve answers sold out whatever the
 * signed URL says (closing a sale early, extending it). Writes only a sale
 * loaded into Redis: 1 written, 0 not loaded, -1 err set.
 */
int fs_stock_set_end(fs_stock *, uint64_t sale, int64_t ends_ms);
/*
 * At most max unconfirmed holds reserved before before_ms, oldest first,
 * after the first skip of them (those a caller leaves in place), with
 * their records (exists = 0 for an entry without one). 0, or -1.
 */
int fs_stock_unconfirmed_before(fs_stock *, uint64_t sale, int64_t before_ms, size_t skip,
    struct fs_stock_record *recs, size_t max, size_t *n);
/*
 * One step of a walk over the sale's holds: cursor starts as "0" and is
 * "0" again after the last step; each step fills at most max records with
 * well-formed order ids. 0, or -1.
 */
int fs_stock_scan_holds(fs_stock *, uint64_t sale, char cursor[32], struct fs_stock_record *recs,
    size_t max, size_t *n);
/*
 * Reads the whole sale in one MULTI (one consistent view): whether it is
 * loaded, its holds, holders, unconfirmed entries and the units left of
 * the n items. 0 (free with fs_stock_snapshot_free), or -1 with err set.
 */
int fs_stock_snapshot(fs_stock *, uint64_t sale, const uint64_t *items, size_t n,
    struct fs_stock_snapshot *snap);
void fs_stock_snapshot_free(struct fs_stock_snapshot *);

#endif

/*
 * What the files of the stock share, and nobody else uses (the public
 * interface is stock.h): stock.c (errors, keys, commands, records, the
 * layout cache), stock_reserve.c (one reservation; release, confirm),
 * stock_batch.c (reservations pipelined), stock_warm.c (warm, forget) and
 * stock_read.c (figures, scans, snapshots).
 */
#ifndef FS_STOCK_INT_H
#define FS_STOCK_INT_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "stock.h"

#define HSCAN_COUNT	"500"	/* holds looked at per HSCAN step */
#define LAYOUT_TTL_MS	1000	/* how long a process trusts the layout it read */
#define LAYOUT_CACHE	4	/* sales whose layout a stock remembers */
#define RECORD_SENT	" sent"	/* a hold record's end while the broker may not have its order */

/* Where a sale's keys are: its places' tags and its sharded items. */
struct fs_stock_layout {
	uint64_t sale;
	int64_t read_ms; /* 0: not cached (a free slot, or a sale not loaded) */
	int nplaces;     /* 1: the sale's own slot only */
	char tags[FS_STOCK_SHARDS_MAX][FS_STOCK_TAG_MAX];
	size_t nsharded;
	struct {
		uint64_t item;
		int shards;
	} sharded[FS_STOCK_SHARDED_ITEMS_MAX];
};

enum key_kind {
	KEY_STOCK,       /* fs:{S}:stock:<item> */
	KEY_HOLDERS,     /* fs:{S}:holders */
	KEY_ORDERS,      /* fs:{S}:orders */
	KEY_UNCONFIRMED, /* fs:{S}:unconfirmed */
	KEY_SALE,        /* fs:{S}:sale */
	KEY_DOUBT,       /* fs:{S}:doubt (the first place's only) */
	KEY__MAX
};

#define KEY_MAX (FS_STOCK_TAG_MAX + 48)

/* What one reserve.lua call at one place said. */
enum take {
	TAKE_RESERVED,
	TAKE_ALREADY,
	TAKE_ENDED,
	TAKE_DRY,	/* this place's stock key of the item is empty */
	TAKE_UNKNOWN,
	TAKE_NOT_STARTED, /* before the sale's start by Redis' clock */
	TAKE_ERROR
};

/* The arguments of a reservation that every step passes on. */
struct attempt {
	const char *user, *order_id;
	uint64_t item;
	int home, shards; /* the shopper's home place; the item's shards */
	char rec[FS_STOCK_RECORD_MAX], now[24], window[24], deadline[24];
};

/* The keys and arguments of one reserve.lua call, in one piece. */
struct take_call {
	char keys[KEY__MAX][KEY_MAX];
	const char *argv[KEY__MAX + 7];
};

/* stock.c: errors, keys, commands, records, layouts */
void fs_stock_key(char out[KEY_MAX], enum key_kind kind, const char *tag, uint64_t item);
void fs_stock_place_tag(char tag[FS_STOCK_TAG_MAX], uint64_t sale, int p);
int fs_stock_node_of(const fs_stock *s, const char *tag, unsigned *slot, char *addr,
    size_t addrlen);
void fs_stock_driver_err(fs_stock *s, const char *what, int err, const char *errstr);
void fs_stock_redis_err(fs_stock *s, const char *what);
void fs_stock_set_err(fs_stock *s, enum fs_stock_err e, const char *what);
redisReply *fs_stock_cmd(fs_stock *s, const char *what, int argc, const char **argv);
int fs_stock_cmd_do(fs_stock *s, const char *what, int argc, const char **argv);
int fs_stock_is_array(fs_stock *s, const char *what, const redisReply *r, size_t n);
int fs_stock_is_scan(fs_stock *s, const char *what, const redisReply *r, char cursor[32]);
void fs_stock_record_of(struct fs_stock_record *rec, const char *id, size_t idlen,
    const redisReply *val);
void fs_stock_layout_key(char k[KEY_MAX], uint64_t sale);
int fs_stock_layout_take(fs_stock *s, uint64_t sale, redisReply *r, struct fs_stock_layout *l);
int fs_stock_layout_read(fs_stock *s, uint64_t sale, struct fs_stock_layout *l);
struct fs_stock_layout *fs_stock_layout_cached(fs_stock *s, uint64_t sale, int64_t now, int *fresh);
const struct fs_stock_layout *fs_stock_layout_keep(fs_stock *s, const struct fs_stock_layout *l,
    int rc, int64_t now);
const struct fs_stock_layout *fs_stock_layout_get(fs_stock *s, uint64_t sale);
void fs_stock_layout_drop(fs_stock *s, uint64_t sale);
int fs_stock_shards_of(const struct fs_stock_layout *l, uint64_t item);
int fs_stock_place_of(const struct fs_stock_layout *l, const char *tag);

/* stock_reserve.c: the steps of one reservation, shared with the batch */
void fs_stock_take_args(struct take_call *tc, const char *tag, const struct attempt *a,
    const char *mode);
enum take fs_stock_take_reply(fs_stock *s, redisReply *r, struct fs_stock_hold *out);
int fs_stock_reserve_args(fs_stock *s, struct attempt *a, int64_t now_ms);
void fs_stock_reserve_place(struct attempt *a, const struct fs_stock_layout *l);
/* The shopper's guard at its home place: 1 held (its order in held), 0 none, -1 err set. */
int fs_stock_guard_held(fs_stock *s, const char *home_tag, const char *user,
    char held[FS_UUID_STRLEN + 1]);
int fs_stock_home_has_shard(const struct attempt *a);
enum fs_stock_result fs_stock_reserve_after_home(fs_stock *s, const struct fs_stock_layout *l,
    const struct attempt *a, enum take t, struct fs_stock_hold *out);
enum fs_stock_result fs_stock_reserve_from_afar(fs_stock *s, const struct fs_stock_layout *l,
    const struct attempt *a, struct fs_stock_hold *out);
struct fs_redis_call;

/*
 * One mark.lua call (fs_stock_broker_has_many's, or a batch's): the hold
 * as written and as it reads once the broker has its order, at one place.
 */
struct mark_call {
	char key[KEY_MAX], order_id[FS_UUID_STRLEN + 1];
	char was[FS_STOCK_RECORD_MAX], now[FS_STOCK_RECORD_MAX];
	const char *argv[4]; /* into the above only: a batch sends them later */
};
/*
 * The calls that mark n holds (a hold is looked for at every place of its
 * sale: one call each) into m and calls, at most max: their count, or -1
 * with err set (too many for max, a shopper id too long, a layout unread).
 */
long fs_stock_mark_calls(fs_stock *s, const uint64_t *sales, const struct fs_stock_record *recs,
    size_t n, struct mark_call *m, struct fs_redis_call *calls, size_t max);

/* stock_read.c: reads shared with the warm */
int fs_stock_unconfirmed_places(fs_stock *s, const struct fs_stock_layout *l, const char *min_s,
    const char *max_s, size_t skip, struct fs_stock_record *recs, size_t max, size_t *n);

#endif

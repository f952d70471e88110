/*
 * Stock rules in Redis: take one unit for a shopper, give it back once, and
 * name the keys. Every key of a sale carries the sale's hash tag "{S}", so a
 * Redis Cluster keeps a sale's stock and holders in one slot.
 */
#ifndef FS_STOCK_H
#define FS_STOCK_H

#include <stddef.h>
#include <stdint.h>

#include "redis.h"

#define FS_STOCK_KEY_MAX 64
#define FS_ORDER_ID_LEN 36

enum fs_stock_key_kind {
	FS_STOCK_KEY_STOCK,       /* fs:{S}:stock:<item> units left */
	FS_STOCK_KEY_HOLDERS,     /* fs:{S}:holders shopper -> order */
	FS_STOCK_KEY_ORDERS,      /* fs:{S}:orders order -> "shopper item reservedAtMs" */
	FS_STOCK_KEY_UNCONFIRMED, /* fs:{S}:unconfirmed order by reservedAtMs */
	FS_STOCK_KEY_SALE,        /* fs:{S}:sale settings */
	FS_STOCK_KEY__MAX
};

enum fs_stock_result {
	FS_STOCK_RESERVED,
	FS_STOCK_ALREADY,
	FS_STOCK_SOLD_OUT,
	FS_STOCK_UNKNOWN_ITEM,
	FS_STOCK_ERROR,
	FS_STOCK__MAX
};

struct fs_stock_hold {
	char order_id[FS_ORDER_ID_LEN + 1]; /* the new order, or the one already held */
	long window_s;                      /* payment window, when reserved */
	long left;                          /* units left after this one, when reserved */
};

typedef struct fs_stock {
	fs_redis *redis; /* borrowed */
	int reserve;
	int release;
	int err;
	char errstr[128];
} fs_stock;

/* Loads lua/reserve.lua and lua/release.lua from datadir. */
fs_stock *fs_stock_new(fs_redis *, const char *datadir);
void fs_stock_free(fs_stock *);
/* Writes a key's name; item is used by FS_STOCK_KEY_STOCK only. */
void fs_stock_key(char out[FS_STOCK_KEY_MAX], enum fs_stock_key_kind, uint64_t sale, uint64_t item);
enum fs_stock_result fs_stock_reserve(fs_stock *, uint64_t sale, uint64_t item, const char *user,
    const char *order_id, int64_t now_ms, struct fs_stock_hold *out);
/* 1: the unit went back; 0: that order held nothing; -1: Redis failed. */
int fs_stock_release(fs_stock *, uint64_t sale, uint64_t item, const char *order_id);
/* Marks orders as recorded in PostgreSQL, so the ghost sweeper skips them. */
int fs_stock_confirm(fs_stock *, uint64_t sale, const char *const *order_ids, size_t n);

#endif

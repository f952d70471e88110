/*
 * Sale rules for operators: create a sale from its JSON description, load
 * its stock into Redis from PostgreSQL, and read the figures of both side by
 * side.
 */
#ifndef FS_SALES_H
#define FS_SALES_H

#include <stddef.h>
#include <stdint.h>

#include "pg.h"
#include "redis.h"

/* The largest sale description accepted, and the most items in one sale. */
#define FS_SALES_JSON_MAX (1024 * 1024)
#define FS_SALES_ITEMS_MAX 1000

struct fs_sales_figures {
	uint64_t item;
	char name[201];
	long quantity;
	long sold;       /* items.sold */
	long pending;    /* PENDING orders */
	long paid;       /* PAID orders */
	long redis_left; /* units left in Redis; -1 when the item is not loaded */
	long redis_holds; /* holds of this item in Redis */
};

/*
 * Validates the description and inserts the sale and its items in one
 * transaction. Writes {"saleId":S,"itemIds":[...]} into out.
 */
int fs_sales_create(fs_pg *, const char *json, size_t len, char *out, size_t outlen, char *err,
    size_t errlen);
/*
 * Sets Redis to what PostgreSQL says: units left per item, the payment
 * window, and (with force) the holds of the live orders. Without force it
 * refuses a sale that already has holds in Redis.
 */
int fs_sales_warm(fs_pg *, fs_redis *, uint64_t sale, int force, char *err, size_t errlen);
/*
 * Fills figs (room for max) with one row per item; returns the count, or -1
 * with err set (an unknown sale is an error).
 */
int fs_sales_figures(fs_pg *, fs_redis *, uint64_t sale, struct fs_sales_figures *figs, int max,
    char *err, size_t errlen);
/* Parses a decimal id (1 .. 2^63-1); 0 or -1. */
int fs_sales_parse_id(const char *s, uint64_t *out);

#endif

/*
 * Sale rules: create a sale from its JSON description, load its stock into
 * Redis from PostgreSQL, read a sale for its public documents and the
 * figures of both stores side by side, and make and read the signed
 * purchase paths of its items.
 */
#ifndef FS_SALES_H
#define FS_SALES_H

#include <stddef.h>
#include <stdint.h>

#include "pg.h"
#include "stock.h"
#include "urlsig.h"

/* The largest sale description accepted, and the most items in one sale. */
#define FS_SALES_JSON_MAX (1024 * 1024)
#define FS_SALES_ITEMS_MAX 1000

/* Digits of the longest id: PostgreSQL's bigserial never gets near 10^18. */
#define FS_SALES_ID_DIGITS 18

/* The most bytes in a signed purchase path, NUL included. */
#define FS_SALES_PATH_MAX (FS_URLSIG_SIGNED_MAX + 64)

struct fs_sale_item {
	uint64_t id;
	char name[201];
	int64_t price_minor;
	char currency[4];
	long quantity;
	long sold; /* items.sold: live orders recorded in PostgreSQL */
	long left; /* units left in Redis; -1 when unknown */
};

/* A sale as its public documents show it. */
struct fs_sale {
	uint64_t id;
	int found; /* 0: no such sale */
	char name[201];
	int64_t starts_ms, ends_ms;
	long window_s;
	int nitems;
	struct fs_sale_item *items; /* the caller's, room for FS_SALES_ITEMS_MAX */
};

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
/* Only the checks of fs_sales_create: 0 when the description is valid, or -1 with err. */
int fs_sales_check_description(const char *json, size_t len, char *err, size_t errlen);
int fs_sales_create(fs_pg *, const char *json, size_t len, char *out, size_t outlen, char *err,
    size_t errlen);
/*
 * Sets Redis to what PostgreSQL says: units left per item, the payment
 * window, and (with force) the holds of the live orders. Without force it
 * refuses a sale that already has holds in Redis.
 */
int fs_sales_warm(fs_pg *, fs_stock *, uint64_t sale, int force, char *err, size_t errlen);
/*
 * Fills figs (room for max) with one row per item; returns the count, or -1
 * with err set (an unknown sale is an error).
 */
int fs_sales_figures(fs_pg *, fs_stock *, uint64_t sale, struct fs_sales_figures *figs, int max,
    char *err, size_t errlen);
/*
 * Reads the sale and its items from PostgreSQL into s (found = 0 for an
 * unknown sale) and, when r is not NULL, the units left from Redis; an
 * item's left stays -1 when Redis does not know it or cannot answer.
 * 0, or -1 with err set when PostgreSQL cannot answer.
 */
int fs_sales_read(fs_pg *, fs_stock *, uint64_t sale, struct fs_sale *s, char *err,
    size_t errlen);
/*
 * Calls each(arg, item, path) with the signed purchase path of every item
 * of the sale, "/api/flash-sales/items/I/purchase?sale=...": valid from the
 * whole second of the start to the whole second of the end. 0, or -1 when
 * an item's URL cannot be signed.
 */
int fs_sales_purchase_paths(const fs_urlsig_key *, const struct fs_sale *,
    void (*each)(void *arg, uint64_t item, const char *path), void *arg);
/*
 * Reads the id that follows prefix in path ("/api/flash-sales/sales/" in
 * "/api/flash-sales/sales/12/reveal"); returns the rest of the path
 * ("/reveal"), or NULL when path does not start with prefix and an id.
 */
const char *fs_sales_path_id(const char *path, const char *prefix, uint64_t *id);
/* The item id of a path /api/flash-sales/items/{itemId}/purchase; 0 or -1. */
int fs_sales_parse_purchase_path(const char *path, uint64_t *item);
/*
 * Parses an id in its one canonical form: decimal, no sign, no leading
 * zero, at most FS_SALES_ID_DIGITS digits (deploy/nginx.conf.in matches the
 * same form in its locations, so both refuse 007 with 404). 0 or -1.
 */
int fs_sales_parse_id(const char *s, uint64_t *out);

#endif

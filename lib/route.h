/*
 * The API's paths, read and written in one place (base: no project
 * dependencies but uuid): decimal ids in their one canonical spelling, the
 * purchase path of an item and the order paths. nginx's locations
 * (deploy/nginx.conf.in) match the same spellings.
 */
#ifndef FS_ROUTE_H
#define FS_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "uuid.h"

/* Digits of the longest id: PostgreSQL's bigserial never gets near 10^18. */
#define FS_ROUTE_ID_DIGITS 18

#define FS_ROUTE_PURCHASE_PREFIX "/api/flash-sales/items/"
#define FS_ROUTE_PURCHASE_SUFFIX "/purchase"
#define FS_ROUTE_ORDER_PREFIX	 "/api/flash-sales/orders/"
#define FS_ROUTE_SALE_PREFIX	 "/api/flash-sales/sales/"

/*
 * Parses a decimal id: 1 to FS_ROUTE_ID_DIGITS digits, no leading zero
 * (007 is not 7: deploy/nginx.conf.in matches the same form). 0 or -1.
 */
int fs_route_parse_id(const char *s, uint64_t *out);
/*
 * Reads the id that follows prefix in path ("/api/flash-sales/sales/" in
 * "/api/flash-sales/sales/12/reveal"); returns the rest of the path
 * ("/reveal"), or NULL when path does not start with prefix and an id.
 */
const char *fs_route_path_id(const char *path, const char *prefix, uint64_t *id);
/*
 * Reads the order id that follows prefix in path; returns the rest of the
 * path, or NULL when path does not start with prefix and a UUID.
 */
const char *fs_route_path_uuid(const char *path, const char *prefix,
    char id[FS_UUID_STRLEN + 1]);
/* The item id of a path /api/flash-sales/items/{itemId}/purchase; 0 or -1. */
int fs_route_purchase_item(const char *path, uint64_t *item);
/* Writes /api/flash-sales/items/{item}/purchase?query; its length, or -1 when it does not fit. */
int fs_route_purchase_path(char *out, size_t outlen, uint64_t item, const char *query);

#endif

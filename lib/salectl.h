/*
 * The life of a sale after its creation (rules): the list of sales with
 * their state, closing a sale before its end, extending it. The end lives
 * in two stores: PostgreSQL's sales.ends_at (the documents, the URLs signed
 * from now on) and Redis's copy that lua/reserve.lua checks, which stops a
 * sale at once whatever end the purchase URLs already handed out carry.
 * Both commands write Redis first: a failure between the two stores leaves
 * the sale selling no longer than PostgreSQL says, and running the command
 * again completes it.
 */
#ifndef FS_SALECTL_H
#define FS_SALECTL_H

#include <stddef.h>
#include <stdint.h>

#include "pg.h"
#include "stock.h"

#define FS_SALECTL_LIST_MAX	1000		/* sales listed: the latest ones */
#define FS_SALECTL_EXTEND_MAX	(30L * 86400)	/* seconds one extension may add */

enum fs_salectl_state {
	FS_SALECTL_SCHEDULED,	/* before its start */
	FS_SALECTL_OPEN,	/* between start and end */
	FS_SALECTL_ENDED,	/* at or after its end (closed early or not) */
	FS_SALECTL_STATE__MAX
};

enum fs_salectl_result {
	FS_SALECTL_OK = 0,
	FS_SALECTL_UNKNOWN,	/* no such sale */
	FS_SALECTL_NOT_STARTED,	/* close: a sale cannot end before it starts */
	FS_SALECTL_ALREADY_ENDED, /* close: nothing to do; extend: never reopened */
	FS_SALECTL_BAD_SECONDS,	/* extend: not 1 .. FS_SALECTL_EXTEND_MAX */
	FS_SALECTL_ERROR,	/* a store failed: err says which */
	FS_SALECTL__MAX
};

struct fs_salectl_sale {
	uint64_t id;
	char name[201];
	int64_t starts_ms, ends_ms;
	long window_s;
	long items, quantity, sold;	/* sums over the items */
};

const char *fs_salectl_state_name(enum fs_salectl_state);
enum fs_salectl_state fs_salectl_state_at(const struct fs_salectl_sale *, int64_t now_ms);
/*
 * The latest sales (at most max), oldest first, with their items' sums:
 * the count, or -1 with err set.
 */
int fs_salectl_list(fs_pg *, struct fs_salectl_sale *sales, int max, char *err, size_t errlen);
/* One sale; FS_SALECTL_OK, FS_SALECTL_UNKNOWN or FS_SALECTL_ERROR. */
enum fs_salectl_result fs_salectl_get(fs_pg *, uint64_t sale, struct fs_salectl_sale *s,
    char *err, size_t errlen);
/*
 * Ends an open sale at now_ms: nothing sells from then on. s is the sale
 * as it was (for ALREADY_ENDED and NOT_STARTED too); *ends_ms the new end.
 */
enum fs_salectl_result fs_salectl_close(fs_pg *, fs_stock *, uint64_t sale, int64_t now_ms,
    struct fs_salectl_sale *s, int64_t *ends_ms, char *err, size_t errlen);
/*
 * Moves the end of a sale that has not ended by seconds; *ends_ms the new
 * end. Purchase URLs handed out before keep their old end: the page's next
 * reveal document carries the new ones.
 */
enum fs_salectl_result fs_salectl_extend(fs_pg *, fs_stock *, uint64_t sale, long seconds,
    int64_t now_ms, struct fs_salectl_sale *s, int64_t *ends_ms, char *err, size_t errlen);

#endif

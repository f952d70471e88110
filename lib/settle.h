/*
 * The one rule that follows PostgreSQL's decision about an order, for the
 * consumer (orders just recorded) and the expiry (orders just expired,
 * ghosts just closed): a live order's hold is confirmed, so the ghost
 * sweeper leaves it alone; any other order's hold is released, and
 * release.lua frees a unit only while that order still holds it, so a
 * repeat is harmless. Call it only after the database committed.
 */
#ifndef FS_SETTLE_H
#define FS_SETTLE_H

#include <stddef.h>

#include "orders.h"
#include "stock.h"

struct fs_settle_counts {
	unsigned long released;		/* units that went back by this call */
	unsigned long confirmed;	/* live orders confirmed */
};

/*
 * Settles the holds of n orders whose status the database decided (the
 * live orders of one sale are confirmed in one command). Adds to counts.
 * 0, or -1 when Redis failed in a way a retry may heal (stock->errstr
 * says how): run it again. A release that Redis refuses (a record of
 * another item) cannot heal; it is logged and skipped.
 */
int fs_settle_holds(fs_stock *, const struct fs_order *const *orders, size_t n,
    struct fs_settle_counts *counts);

#endif

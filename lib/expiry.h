/*
 * Returning units that nobody will pay for: overdue PENDING orders expire
 * in PostgreSQL and only then lose their Redis holds; holds whose order
 * never reached the database (ghosts) and holds of orders that the
 * database already closed are released by the sweep. Every release goes
 * through release.lua, which frees a unit only while that order still
 * holds it, so any number of runs may race: each unit comes back once.
 */
#ifndef FS_EXPIRY_H
#define FS_EXPIRY_H

#include <stdint.h>

#include "ordertopic.h"
#include "pg.h"
#include "push.h"
#include "stock.h"

#define FS_EXPIRY_BATCH 100	/* orders expired per transaction */

struct fs_expiry_counts {
	unsigned long expired;		/* PENDING orders moved to EXPIRED by this run */
	unsigned long released;		/* their units back in Redis */
	unsigned long ghosts;		/* holds without an order, closed as FAILED and released */
	unsigned long confirmed;	/* old unconfirmed holds found recorded after all */
	unsigned long repaired;		/* holds of closed orders released late */
	unsigned long sales;		/* sales swept */
	unsigned long deferred;		/* sales whose old holds waited: their partition had orders on their way */
	unsigned long cleared;		/* sales over (ended, no order PENDING) whose keys left Redis */
};

typedef struct fs_expiry {
	fs_pg *pg;		/* borrowed */
	fs_stock *stock;	/* borrowed; its Redis connection too */
	fs_push *push;		/* borrowed */
	long hold_max_age_s;	/* an unconfirmed hold older than this is a ghost */
	int err;
	char errstr[256];
} fs_expiry;

/* Fills in the borrowed parts; nothing to free. */
void fs_expiry_init(fs_expiry *, fs_pg *, fs_stock *, fs_push *, long hold_max_age_s);
/*
 * Expires every overdue PENDING order, FS_EXPIRY_BATCH per transaction,
 * releasing each batch's holds after its commit. 0, or -1 with errstr set
 * (what was committed stays done; a hold whose release failed is left to
 * the sweep's repair).
 */
int fs_expiry_expire(fs_expiry *, struct fs_expiry_counts *);
/*
 * For every sale still in Redis (PostgreSQL knows which; a sale whose keys
 * went is never looked at again): releases the holds of closed orders;
 * closes the ghosts, holds reserved hold_max_age_s before the backlog was
 * read (b->read_ms) whose item's partition had nothing left to record
 * then, so their order cannot still be on its way; and removes every key
 * of a sale that has ended with no PENDING order and no unconfirmed hold
 * left (its PAID holds and shopper guards with it) once the partitions of
 * its items are caught up. b NULL (the backlog unknown): no ghost is
 * closed, no sale cleared. 0, or -1.
 */
int fs_expiry_sweep(fs_expiry *, const struct fs_ordertopic_backlog *b,
    struct fs_expiry_counts *);
/* Writes the counts as one JSON object; its length, or -1 when out is too small. */
int fs_expiry_counts_json(const struct fs_expiry_counts *, char *out, size_t outlen);

#endif

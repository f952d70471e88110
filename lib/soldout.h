/*
 * Sold-out knowledge, so that a sold-out item costs almost nothing: a flag
 * per item in this process, and a marker file per item that nginx checks
 * before it even calls a handler. A thread listens on the Redis channel
 * fs:restock and clears both the moment a unit comes back, on every process
 * and every host that runs it.
 */
#ifndef FS_SOLDOUT_H
#define FS_SOLDOUT_H

#include <stdint.h>

typedef struct fs_soldout fs_soldout;

/*
 * marker_dir may be empty (no marker files). redis_addr is where fs:restock
 * is published; the listener runs on its own connection and reconnects.
 */
fs_soldout *fs_soldout_new(const char *marker_dir, const char *redis_addr);
/* Stops the listener and frees. */
void fs_soldout_free(fs_soldout *);
/* True when the item is known to be sold out. */
int fs_soldout_known(fs_soldout *, uint64_t item);
/* Call before asking Redis; pass the value to fs_soldout_mark. */
unsigned fs_soldout_generation(fs_soldout *, uint64_t item);
/*
 * Records that Redis said "sold out" for the item, unless a unit came back
 * since gen was read (then the answer is already stale).
 */
void fs_soldout_mark(fs_soldout *, uint64_t item, unsigned gen);
/* Forgets the item's sold-out state here (a unit came back). */
void fs_soldout_clear(fs_soldout *, uint64_t item);

#endif

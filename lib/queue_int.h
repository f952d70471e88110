/*
 * Private to the queue family (lib/queue*.c): the names of the queue's
 * Redis keys fs:{S}:q:<name>, and the passes of a sale counted by fate,
 * which the pacer paces by and `queue status` shows (queue_figures.c).
 */
#ifndef FS_QUEUE_INT_H
#define FS_QUEUE_INT_H

#include <stdint.h>

#include "stock.h"

#define FS_QUEUE_KEY_LEN 64

/* "fs:{<sale>}:q:<name>" into out. */
void fs_queue_key(char out[FS_QUEUE_KEY_LEN], uint64_t sale, const char *name);

/* The passes of a sale at an instant, by fate. */
struct fs_queue_tally {
	long live;		/* not expired */
	long unused;		/* not expired, shopper holds no unit */
	long used;		/* shopper holds a unit, expired or not */
	long lapsed;		/* expired, shopper holds no unit */
	long all;		/* every pass issued */
};

/* 0, or -1 with the stock's err. */
int fs_queue_passes_tally(fs_stock *, uint64_t sale, int64_t now_ms, struct fs_queue_tally *);

#endif

/*
 * The stores of a program that settles orders, opened from the
 * configuration: PostgreSQL, Redis with the stock scripts, and the status
 * push.
 */
#ifndef FS_STORES_H
#define FS_STORES_H

#include <stddef.h>

#include "cfg.h"
#include "pg.h"
#include "push.h"
#include "stock.h"

struct fs_stores {
	fs_pg *pg;
	fs_stock *stock; /* Redis, with the stock scripts */
	fs_push *push;
};

/*
 * Opens all four; connections are made when first used. 0, or -1 with err
 * set; either way fs_stores_close closes what was opened.
 */
int fs_stores_open(struct fs_stores *, const struct fs_cfg *, char *err, size_t errlen);
/* 0 when PostgreSQL and Redis answer; -1 naming the first that does not (/readyz). */
int fs_stores_ready(struct fs_stores *, char *why, size_t whylen);
/* Closes what is open and zeroes the struct; a zeroed struct is fine. */
void fs_stores_close(struct fs_stores *);

#endif

/*
 * For the unit tests of lib/stock's users: loads a sale into Redis the way
 * `sale warm` does (fs_stock_warm_begin, then fs_stock_warm), with the given
 * items, no holds, and a 30 s payment window. 0 loaded, or what the two
 * calls answered otherwise.
 */
#ifndef FS_TEST_STOCK_LOAD_H
#define FS_TEST_STOCK_LOAD_H

#include <stdint.h>

#include "stock.h"

#define STOCK_LOAD_ITEMS_MAX 8

static inline int
stock_load(fs_stock *st, uint64_t sale, const struct fs_stock_warm_item *items, size_t n)
{
	struct fs_stock_warm w = { .window_s = 30, .items = items, .nitems = n };
	struct fs_stock_record young[4];
	uint64_t ids[STOCK_LOAD_ITEMS_MAX];
	size_t nyoung;
	long holds;

	if (n > STOCK_LOAD_ITEMS_MAX)
		return -1;
	for (size_t i = 0; i < n; i++)
		ids[i] = items[i].id;
	/* No young holds wanted: since_ms lies after every reservation. */
	if (fs_stock_warm_begin(st, sale, ids, n, INT64_MAX, young, 4, &nyoung, &holds) != 0)
		return -1;
	return fs_stock_warm(st, sale, &w);
}

#endif

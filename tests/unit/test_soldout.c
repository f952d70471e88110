/*
 * Unit test of lib/soldout: the table of sold-out items. 100,000 distinct
 * items of live sales are all remembered in one process, memory follows the
 * live sales (ended ones are dropped with their markers), a restock that
 * races an answer wins, and the markers nginx reads come and go with the
 * entries.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "expect.h"
#include "soldout.h"

#define ITEMS 100000
#define END_A INT64_C(1800000000000) /* ends of two sales, ms */
#define END_B INT64_C(1800000600000)

static int
marker_exists(const char *dir, uint64_t item)
{
	char path[600];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%" PRIu64, dir, item);
	return stat(path, &st) == 0;
}

/* Items 1..ITEMS; the odd ones belong to sale A, the even ones to sale B. */
static void
many_items(void)
{
	fs_soldout *s = fs_soldout_new_offline("");
	size_t known = 0, items, bytes, bytes_full;
	uint64_t i;

	for (i = 1; i <= ITEMS; i++)
		fs_soldout_mark(s, i * 7919, i % 2 ? END_A : END_B,
		    fs_soldout_generation(s, i * 7919));
	for (i = 1; i <= ITEMS; i++)
		known += (size_t)fs_soldout_known(s, i * 7919);
	check(known == ITEMS, "100,000 distinct sold-out items are all known");
	check(!fs_soldout_known(s, 7918) && !fs_soldout_known(s, 1), "an item never marked is not");
	fs_soldout_stats(s, &items, &bytes_full);
	check(items == ITEMS, "one entry per item");
	check(bytes_full <= 4 * ITEMS * 16, "the table is at most 4 slots of 16 bytes per item");

	check(fs_soldout_sweep(s, END_A - 1) == 0, "nothing is dropped while both sales run");
	check(fs_soldout_sweep(s, END_A) == ITEMS / 2, "sale A's items go when it ends");
	fs_soldout_stats(s, &items, &bytes);
	check(items == ITEMS / 2 && bytes < bytes_full, "and the table shrinks with them");
	check(!fs_soldout_known(s, 7919) && fs_soldout_known(s, 2 * 7919),
	    "A's items are forgotten, B's still known");
	check(fs_soldout_sweep(s, END_B) == ITEMS / 2, "sale B's items go when it ends");
	fs_soldout_stats(s, &items, &bytes);
	check(items == 0 && bytes <= 64 * 16, "an idle process keeps a minimal table");
	fs_soldout_free(s);
}

/* Restocks, races and markers on a few items. */
static void
restocks(void)
{
	char dir[] = "/tmp/fs-soldout-XXXXXX";
	fs_soldout *s;
	unsigned gen;
	int ok = 1;

	if (mkdtemp(dir) == NULL || (s = fs_soldout_new_offline(dir)) == NULL) {
		check(0, "temporary marker directory");
		return;
	}
	gen = fs_soldout_generation(s, 42);
	fs_soldout_mark(s, 42, END_A, gen);
	check(fs_soldout_known(s, 42) && marker_exists(dir, 42), "marked: known, marker written");
	fs_soldout_clear(s, 42);
	check(!fs_soldout_known(s, 42) && !marker_exists(dir, 42), "cleared: forgotten, marker gone");
	fs_soldout_mark(s, 42, END_A, gen);
	check(!fs_soldout_known(s, 42) && !marker_exists(dir, 42),
	    "a sold-out answer older than the restock is ignored");

	/* Removals in the middle of probe chains keep every other entry found. */
	for (uint64_t i = 1; i <= 2000; i++)
		fs_soldout_mark(s, i, END_A, fs_soldout_generation(s, i));
	for (uint64_t i = 1; i <= 2000; i += 3)
		fs_soldout_clear(s, i);
	for (uint64_t i = 1; i <= 2000; i++)
		ok &= fs_soldout_known(s, i) == ((i - 1) % 3 != 0);
	check(ok, "after clearing every third item exactly the others are known");
	fs_soldout_sweep(s, END_A);
	check(!marker_exists(dir, 2) && !marker_exists(dir, 1999), "markers of an ended sale go");
	fs_soldout_free(s);
	check(rmdir(dir) == 0, "no marker is left behind");
}

int
main(void)
{
	many_items();
	restocks();
	return failures == 0 ? 0 : 1;
}

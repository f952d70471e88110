/*
 * Unit test of lib/stock on a real private Redis Cluster (tests/unit/
 * redis_cluster.h) with the real scripts of lua/ (top_srcdir): sales whose
 * places land on every master are warmed (WATCH, MULTI ... EXEC on the
 * sale's node), reserved (and waited for on a replica), read back in a
 * snapshot, released and forgotten, each through the cluster client's
 * routing; a warm of an open sale whose places share a master refused;
 * and the uptime of the youngest master.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "redis.h"
#include "stock.h"
#include "expect.h"
#include "redis_cluster.h"
#include "stock_load.h"

#define SALES 9

/* Sale: item 11 with 3 units, item 12 with none. */
static int
warm(fs_stock *st, uint64_t sale)
{
	static const struct fs_stock_warm_item items[] = { { 11, 3, 1 }, { 12, 0, 1 } };

	return stock_load(st, sale, items, 2);
}

/* Begin and write a warm of sale (items 21 over 3 shards, 22 in one key), open or not. */
static int
warm_open(fs_stock *st, uint64_t sale, int shards, int open)
{
	const struct fs_stock_warm_item items[] = { { 21, 6, shards }, { 22, 2, 1 } };
	struct fs_stock_warm w = { .window_s = 30, .items = items, .nitems = 2, .open = open };
	const uint64_t ids[] = { 21, 22 };
	struct fs_stock_record young[4];
	size_t nyoung;
	long holds;
	int rc;

	if (fs_stock_warm_begin(st, sale, ids, 2, INT64_MAX, young, 4, &nyoung, &holds) != 0)
		return -1;
	if ((rc = fs_stock_warm(st, sale, &w)) != 0)
		fs_stock_warm_abort(st);
	return rc;
}

/*
 * A warm of an open sale with places sharing a master (4 places on 3
 * masters) is refused before anything is written; before the sale opens it
 * runs, and so does one whose places each have a master of their own.
 */
static void
check_warm_open(fs_stock *st)
{
	const uint64_t items[2] = { 21, 22 };
	struct fs_stock_shard sh[4];
	long left[2];

	check(warm_open(st, 40, 4, 1) == -1 && st->err == FS_STOCK_ERR_REPLY &&
		strstr(st->errstr, "is open and 4 of its places share a Redis master") != NULL &&
		fs_stock_left(st, 40, items, 2, left) == 0 && left[0] == -1 && left[1] == -1,
	    "an open sale over 4 places on 3 masters: the warm is refused, nothing written");
	check(warm_open(st, 40, 4, 0) == 0 && fs_stock_shards(st, 40, 21, sh, 4) == 4 &&
		fs_stock_left(st, 40, items, 2, left) == 0 && left[0] == 6 && left[1] == 2,
	    "the same sale before it opens: warmed over its 4 places");
	check(warm_open(st, 40, 1, 1) == -1 && fs_stock_shards(st, 40, 21, sh, 4) == 4 &&
		fs_stock_left(st, 40, items, 2, left) == 0 && left[0] == 6,
	    "open, going back to one place: 4 places still to clear, refused, the layout kept");
	check(warm_open(st, 41, 3, 1) == 0 && fs_stock_shards(st, 41, 21, sh, 4) == 3 &&
		fs_stock_left(st, 41, items, 2, left) == 0 && left[0] == 6 && left[1] == 2,
	    "an open sale whose 3 places each have a master: each place's WATCH holds, warmed");
	check(warm_open(st, 42, 1, 1) == 0 && fs_stock_left(st, 42, items, 2, left) == 0 &&
		left[0] == 6 && left[1] == 2,
	    "an open sale of one place: one MULTI, warmed");
}

int
main(void)
{
	const char *top = getenv("top_srcdir");
	struct test_cluster tc;
	char seeds[64], err[256], id[FS_UUID_STRLEN + 1], key[32];
	int owners[TEST_CLUSTER_NODES] = { 0 }, nused = 0, warmed = 1, reserved = 1, seen = 1;
	int released = 1, forgotten = 1, replicated = 1;
	uint64_t items[2] = { 11, 12 };
	struct fs_stock_snapshot snap;
	struct fs_stock_hold h;
	struct fs_cfg cfg;
	fs_stock *st;

	if (top == NULL || test_cluster_start(&tc, 60) != 0) {
		printf("Bail out! needs top_srcdir, redis-server and redis-cli\n");
		return 99;
	}
	snprintf(seeds, sizeof(seeds), "127.0.0.1:%d,127.0.0.1:%d", tc.port[0], tc.port[2]);
	if (setenv("FLASHSALE_REDIS", seeds, 1) != 0 || unsetenv("FLASHSALE_REDIS_USER") != 0 ||
	    unsetenv("FLASHSALE_REDIS_PASSWORD_FILE") != 0 ||
	    fs_cfg_load(&cfg, FS_CFG_NEED(FS_CFG_REDIS)) != 0 ||
	    (st = fs_stock_new(&cfg, top, err, sizeof(err))) == NULL) {
		printf("Bail out! a stock on the cluster\n");
		test_cluster_stop(&tc);
		return 99;
	}
	for (uint64_t sale = 1; sale <= SALES; sale++) {
		int owner;

		snprintf(id, sizeof(id), "01900000-0000-7000-8000-%012" PRIu64, sale);
		warmed &= warm(st, sale) == 0;
		reserved &= fs_stock_reserve(st, sale, 11, "ann", id, fs_clock_now_ms(), &h) ==
			FS_STOCK_RESERVED &&
		    h.left == 2 &&
		    fs_stock_reserve(st, sale, 12, "bob", "01900000-0000-7000-8000-0000000000bb",
			fs_clock_now_ms(), &h) == FS_STOCK_SOLD_OUT;
		replicated &= fs_stock_replicate(st, FS_REDIS_WAIT_MAX_MS) == 0;
		seen &= fs_stock_snapshot(st, sale, items, 2, &snap) == 0 && snap.loaded &&
		    snap.nholds == 1 && strcmp(snap.holds[0].order_id, id) == 0 &&
		    snap.nunconfirmed == 1 && snap.left[0] == 2 && snap.left[1] == 0;
		fs_stock_snapshot_free(&snap);
		released &= fs_stock_release(st, sale, 11, id) == 1;
		forgotten &= fs_stock_confirm(st, sale, (const char *const[]){ id }, 1) == 0 &&
		    fs_stock_forget_sale(st, sale, items, 2) == 1;
		snprintf(key, sizeof(key), "fs:{%" PRIu64 "}:sale", sale);
		if ((owner = test_cluster_owner(&tc, key)) >= 0 && owners[owner]++ == 0)
			nused++;
	}
	check(nused >= 2, "the sales' places spread over the masters");
	check(warmed, "warm (WATCH, MULTI ... EXEC) on each sale's master");
	check(reserved, "reserve on each sale's master: a unit, and sold out");
	check(replicated, "each reservation is on a replica of its master (WAIT 1)");
	check(seen, "the snapshot (one MULTI) shows each sale's hold");
	check(released, "release gives each unit back");
	check(forgotten, "forget removes each ended sale's keys");
	check_warm_open(st);
	check(fs_stock_server_uptime(st) >= 0 && st->redis->nmasters == 3,
	    "the uptime of the youngest of three masters");
	fs_stock_free(st);
	test_cluster_stop(&tc);
	return failures == 0 ? 0 : 1;
}

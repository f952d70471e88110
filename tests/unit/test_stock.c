/*
 * Unit test of lib/stock against a real redis-server of its own, with the
 * real scripts of lua/ (top_srcdir): the hold record, warm, reserve,
 * release, the scans and the snapshot; then an item spread over three
 * shards: the home place of a shopper, the guard across shards (also
 * under concurrent purchases of one shopper), no unit left in a dry shard;
 * reservations in one pipeline give what they give one by one.
 */
#include "config.h"

#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "redis.h"
#include "stock.h"
#include "expect.h"
#include "stock_load.h"
/* Its helpers for failover tests are not needed here. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "redis_cluster.h"
#pragma GCC diagnostic pop
#include "redis_server.h"
#include "relay.h"

#define ANN "01900000-0000-7000-8000-00000000000a"
#define BOB "01900000-0000-7000-8000-00000000000b"
#define CAT "01900000-0000-7000-8000-00000000000c"
#define DAN "01900000-0000-7000-8000-00000000000d"

static void
check_records(void)
{
	struct fs_stock_record r;
	char rec[FS_STOCK_RECORD_MAX], user[FS_STOCK_USER_MAX + 2];
	uint64_t sale = 0, item = 0;

	check(fs_stock_record_format(rec, sizeof(rec), "ann", 11, 1000, FS_STOCK_BROKER_HAS) > 0 &&
		strcmp(rec, "ann 11 1000") == 0,
	    "a hold record is \"<user> <item> <reservedAtMs>\"");
	check(fs_stock_record_parse(rec, &r) == 0 && strcmp(r.user, "ann") == 0 && r.item == 11 &&
		r.reserved_ms == 1000 && r.broker == FS_STOCK_BROKER_HAS,
	    "it reads back: the broker has its order");
	/* Issue 36: the record says whether the broker is known to have the order. */
	check(fs_stock_record_format(rec, sizeof(rec), "ann", 11, 1000, FS_STOCK_BROKER_SENT) > 0 &&
		strcmp(rec, "ann 11 1000 sent") == 0 && fs_stock_record_parse(rec, &r) == 0 &&
		r.broker == FS_STOCK_BROKER_SENT && r.reserved_ms == 1000,
	    "a hold whose order the broker may not have ends \" sent\", and reads back so");
	check(fs_stock_record_parse("ann 11 1000 sen", &r) == -1 &&
		fs_stock_record_parse("ann 11 1000 sent ", &r) == -1 &&
		fs_stock_record_parse("ann 11 1000sent", &r) == -1,
	    "no other ending is a hold record");
	check(fs_stock_record_parse("ann", &r) == -1 && fs_stock_record_parse(" 11 5", &r) == -1 &&
		fs_stock_record_parse("ann 0 5", &r) == -1 &&
		fs_stock_record_parse("ann x 5", &r) == -1 &&
		fs_stock_record_parse("ann 11 5x", &r) == -1 &&
		fs_stock_record_parse("ann -11 5", &r) == -1,
	    "anything else is not a hold record");
	memset(user, 'u', sizeof(user) - 1);
	user[sizeof(user) - 1] = '\0';
	snprintf(rec, sizeof(rec), "%s 11 5", user);
	check(fs_stock_record_parse(rec, &r) == -1, "a user over FS_STOCK_USER_MAX is refused");
	check(fs_stock_record_format(rec, 8, "ann", 11, 1000, FS_STOCK_BROKER_HAS) == -1,
	    "a small buffer is refused");
	check(fs_stock_restock_parse("7 11", &sale, &item) == 0 && sale == 7 && item == 11 &&
		fs_stock_restock_parse("7", &sale, &item) == -1,
	    "restock messages are \"<sale> <item>\"");
}

/* Sale 7: item 11 with 2 units left, item 12 sold out, ann holding one of 11. */
static int
warm(fs_stock *st, int force, long *holds)
{
	static const struct fs_stock_warm_item items[] = { { 11, 2, 1 }, { 12, 0, 1 } };
	static const struct fs_stock_record ann = { .order_id = ANN, .user = "ann", .item = 11,
		.reserved_ms = 1000 };
	static const uint64_t ids[] = { 11, 12 };
	struct fs_stock_warm w = { .window_s = 30, .items = items, .nitems = 2, .holds = &ann,
		.nholds = 1 };
	struct fs_stock_record young[4];
	size_t nyoung;

	/* No young holds wanted: since_ms lies after every reservation. */
	if (fs_stock_warm_begin(st, 7, ids, 2, INT64_MAX, young, 4, &nyoung, holds) != 0)
		return -1;
	if (*holds > 0 && !force) {
		fs_stock_warm_abort(st);
		return 1;
	}
	return fs_stock_warm(st, 7, &w);
}

static void
check_reserve(fs_stock *st)
{
	struct fs_stock_hold h;
	int64_t now = fs_clock_now_ms();

	check(fs_stock_reserve(st, 7, 11, "bob", BOB, now, &h) == FS_STOCK_RESERVED &&
		strcmp(h.order_id, BOB) == 0 && h.left == 1 && h.window_s == 30,
	    "reserve takes a unit and tells the window");
	check(fs_stock_reserve(st, 7, 11, "bob", CAT, now, &h) == FS_STOCK_ALREADY &&
		strcmp(h.order_id, BOB) == 0,
	    "a second reserve of the shopper names the first order");
	check(fs_stock_reserve(st, 7, 12, "cat", CAT, now, &h) == FS_STOCK_SOLD_OUT,
	    "no unit left: sold out");
	check(fs_stock_reserve(st, 7, 13, "cat", CAT, now, &h) == FS_STOCK_UNKNOWN_ITEM,
	    "an item not loaded is unknown");
}

/* Sale 17 (item 31, one unit) warmed to start at starts_ms; 0 or -1. */
static int
warm_start(fs_stock *st, int64_t starts_ms)
{
	static const struct fs_stock_warm_item items[] = { { 31, 1, 1 } };
	static const uint64_t ids[] = { 31 };
	struct fs_stock_warm w = { .window_s = 30, .items = items, .nitems = 1,
		.starts_ms = starts_ms };
	struct fs_stock_record young[1];
	size_t nyoung;
	long holds;

	if (fs_stock_warm_begin(st, 17, ids, 1, INT64_MAX, young, 1, &nyoung, &holds) != 0)
		return -1;
	return fs_stock_warm(st, 17, &w);
}

/*
 * Issue 35: the start by one clock. A purchase host whose clock ran 4 s
 * ahead passed the signed URL's start check and reserved before the sale
 * started: reserve.lua now compares the start warmed into the sale's
 * settings with Redis' TIME.
 */
static void
check_start(fs_stock *st)
{
	struct fs_stock_hold h;
	int64_t now = fs_clock_now_ms();
	uint64_t item = 31;
	long left = -1;

	check(warm_start(st, now + 60000) == 0 &&
		fs_stock_reserve(st, 17, 31, "dan", DAN, now + 4000, &h) == FS_STOCK_NOT_STARTED &&
		fs_stock_left(st, 17, &item, 1, &left) == 0 && left == 1,
	    "start: a reserve before the start by Redis' clock is refused, nothing taken "
	    "(whatever the caller's clock says)");
	check(warm_start(st, now - 1000) == 0 &&
		fs_stock_reserve(st, 17, 31, "dan", DAN, now, &h) == FS_STOCK_RESERVED && h.left == 0,
	    "start: from the start on, the unit is sold");
}

static void
check_reads(fs_stock *st)
{
	uint64_t items[3] = { 11, 12, 13 };
	long left[3], holds[3];
	struct fs_stock_record recs[8], rec;
	char cursor[32] = "0";
	size_t n, total = 0;

	check(fs_stock_left(st, 7, items, 3, left) == 0 && left[0] == 1 && left[1] == 0 &&
		left[2] == -1,
	    "units left, -1 for an item not loaded");
	check(fs_stock_count_holds(st, 7, items, 3, holds) == 0 && holds[0] == 2 && holds[1] == 0,
	    "holds per item");
	check(fs_stock_window(st, 7) == 30 && fs_stock_window(st, 8) == FS_STOCK_WINDOW_DEFAULT,
	    "the sale's window, the default for an unknown sale");
	check(fs_stock_find_hold(st, 7, ANN, &rec) == 1 && strcmp(rec.user, "ann") == 0 &&
		rec.item == 11 && rec.reserved_ms == 1000 &&
		fs_stock_find_hold(st, 7, CAT, &rec) == 0,
	    "find a hold by order id");
	check(fs_stock_unconfirmed_before(st, 7, fs_clock_now_ms() + 1000, 0, recs, 8, &n) == 0 &&
		n == 1 && strcmp(recs[0].order_id, BOB) == 0 && recs[0].exists &&
		recs[0].readable && strcmp(recs[0].user, "bob") == 0,
	    "a reserved hold is unconfirmed; a warmed one is not");
	check(fs_stock_unconfirmed_before(st, 7, 1, 0, recs, 8, &n) == 0 && n == 0,
	    "none reserved before the given instant");
	check(fs_stock_unconfirmed_before(st, 7, fs_clock_now_ms() + 1000, 1, recs, 8, &n) == 0 &&
		n == 0,
	    "those a caller leaves in place are skipped");
	do {
		if (fs_stock_scan_holds(st, 7, cursor, recs, 8, &n) != 0)
			break;
		total += n;
	} while (strcmp(cursor, "0") != 0);
	check(strcmp(cursor, "0") == 0 && total == 2, "a walk over the holds sees both");
}

static void
check_snapshot(fs_stock *st)
{
	uint64_t items[2] = { 11, 12 };
	struct fs_stock_snapshot snap;

	check(fs_stock_snapshot(st, 7, items, 2, &snap) == 0 && snap.loaded && snap.nholds == 2 &&
		snap.nholders == 2 && snap.nunconfirmed == 1 &&
		strcmp(snap.unconfirmed[0], BOB) == 0 && snap.nitems == 2 &&
		snap.has_left[0] && snap.left[0] == 1 && snap.has_left[1] && snap.left[1] == 0,
	    "a snapshot of the whole sale");
	fs_stock_snapshot_free(&snap);
	check(fs_stock_snapshot(st, 8, items, 2, &snap) == 0 && !snap.loaded && snap.nholds == 0 &&
		!snap.has_left[0],
	    "a sale not loaded shows as such");
	fs_stock_snapshot_free(&snap);
}

/* Sale 9: item 21 with 6 units over 3 shards, item 22 with 2 units in one key. */
static int
warm_sharded(fs_stock *st, uint64_t sale, long units)
{
	const struct fs_stock_warm_item items[] = { { 21, units, 3 }, { 22, 2, 1 } };

	return stock_load(st, sale, items, 2);
}

static void
order_id(char out[FS_UUID_STRLEN + 1], int n)
{
	snprintf(out, FS_UUID_STRLEN + 1, "01900000-0000-7000-8000-%012d", n);
}

/* The first shopper "<prefix>N" (from *next on) whose home among 3 places is home. */
static void
shopper_at(char out[32], const char *prefix, int *next, int home)
{
	do
		snprintf(out, 32, "%s%d", prefix, (*next)++);
	while (fs_stock_home(out, 3) != home);
}

static void
check_home(void)
{
	int per[3] = { 0 }, same = 1;
	char user[32];

	for (int i = 0; i < 3000; i++) {
		snprintf(user, sizeof(user), "user-%d", i);
		per[fs_stock_home(user, 3)]++;
		same &= fs_stock_home(user, 3) == fs_stock_home(user, 3);
	}
	check(same && per[0] > 900 && per[1] > 900 && per[2] > 900,
	    "a shopper's home is fixed and shoppers spread over the places");
	check(fs_stock_home("anyone", 1) == 0 && fs_stock_unit_place(2, 3) == 2 &&
		fs_stock_unit_place(4, 3) == 1 && fs_stock_unit_place(2, 1) == 0,
	    "one place: home 0; a hold's unit is at home, or at a shard of its item");
}

static void
check_sharded(fs_stock *st, int cluster)
{
	char id[FS_UUID_STRLEN + 1], first[FS_UUID_STRLEN + 1];
	struct fs_stock_shard sh[4];
	char user[32], cursor[32] = "0";
	uint64_t items[2] = { 21, 22 };
	long left[2], holds[2];
	struct fs_stock_hold h;
	struct fs_stock_record recs[16];
	struct fs_stock_snapshot snap;
	int64_t now = fs_clock_now_ms();
	int next = 0, n = 100, reserved = 0, sold_out = 0, last_left = -1;
	size_t got, total = 0;

	if (cluster)
		check(warm_sharded(st, 9, 6) == 0 && fs_stock_shards(st, 9, 21, sh, 4) == 3 &&
			strcmp(sh[0].tag, "9") == 0 && strncmp(sh[1].tag, "9.1", 3) == 0 &&
			strncmp(sh[2].tag, "9.2", 3) == 0 && strcmp(sh[0].master, sh[1].master) != 0 &&
			strcmp(sh[0].master, sh[2].master) != 0 &&
			strcmp(sh[1].master, sh[2].master) != 0 && sh[0].master[0] != '?' &&
			sh[1].master[0] != '?' && sh[2].master[0] != '?',
		    "on a cluster, warm puts the three shards on three masters");
	else
		check(warm_sharded(st, 9, 6) == 0 && fs_stock_shards(st, 9, 21, sh, 4) == 3 &&
			strcmp(sh[0].tag, "9") == 0 && strcmp(sh[1].tag, "9.1") == 0 &&
			strcmp(sh[2].tag, "9.2") == 0 && fs_stock_shards(st, 9, 22, sh, 4) == 1,
		    "warm spreads a sharded item over places 9, 9.1, 9.2");
	check(fs_stock_left(st, 9, items, 2, left) == 0 && left[0] == 6 && left[1] == 2,
	    "units left are the sum over the shards");
	/* Two shoppers at home 0 empty shard 0; the third is served by another shard. */
	for (int i = 0; i < 2; i++) {
		shopper_at(user, "a", &next, 0);
		order_id(id, n++);
		reserved += fs_stock_reserve(st, 9, 21, user, id, now, &h) == FS_STOCK_RESERVED;
	}
	shopper_at(user, "a", &next, 0);
	order_id(first, n++);
	check(reserved == 2 && fs_stock_reserve(st, 9, 21, user, first, now, &h) == FS_STOCK_RESERVED &&
		h.left > 0,
	    "a shopper whose home shard is dry gets a unit of another");
	order_id(id, n++);
	check(fs_stock_reserve(st, 9, 21, user, id, now, &h) == FS_STOCK_ALREADY &&
		strcmp(h.order_id, first) == 0 &&
		fs_stock_reserve(st, 9, 22, user, id, now, &h) == FS_STOCK_ALREADY,
	    "its guard stays at home: a second purchase, of any item, names the first order");
	for (int i = 0; i < 20; i++) {
		snprintf(user, sizeof(user), "b%d", i);
		order_id(id, n++);
		switch (fs_stock_reserve(st, 9, 21, user, id, now, &h)) {
		case FS_STOCK_RESERVED:
			reserved++;
			last_left = (int)h.left;
			break;
		case FS_STOCK_SOLD_OUT:
			sold_out++;
			break;
		default:
			break;
		}
	}
	check(reserved + 1 == 6 && sold_out == 17 && last_left == 0,
	    "exactly the units: sold out once every shard is empty, the last reserve says 0 left");
	check(fs_stock_snapshot(st, 9, items, 2, &snap) == 0 && snap.loaded && snap.nholds == 6 &&
		snap.nholders == 6 && snap.nunconfirmed == 6 && snap.left[0] == 0 &&
		snap.left[1] == 2,
	    "the snapshot gathers every place");
	fs_stock_snapshot_free(&snap);
	check(fs_stock_count_holds(st, 9, items, 2, holds) == 0 && holds[0] == 6 &&
		fs_stock_unconfirmed_before(st, 9, now + 1000, 0, recs, 16, &got) == 0 && got == 6,
	    "holds and unconfirmed entries over every place");
	check(fs_stock_unconfirmed_before(st, 9, now + 1000, 4, recs, 16, &got) == 0 && got == 2 &&
		fs_stock_unconfirmed_before(st, 9, now + 1000, 6, recs, 16, &got) == 0 && got == 0,
	    "those a caller leaves in place are skipped over every place");
	do {
		if (fs_stock_scan_holds(st, 9, cursor, recs, 16, &got) != 0)
			break;
		total += got;
	} while (strcmp(cursor, "0") != 0);
	check(total == 6, "a walk over the holds crosses the places");
	check(fs_stock_find_hold(st, 9, first, &recs[0]) == 1 &&
		fs_stock_release(st, 9, 21, first) == 1 && fs_stock_release(st, 9, 21, first) == 0 &&
		fs_stock_left(st, 9, items, 1, left) == 0 && left[0] == 1,
	    "release gives a unit taken elsewhere back to its shard, once");
	snprintf(user, sizeof(user), "a%d", next - 1);
	order_id(id, n++);
	check(fs_stock_reserve(st, 9, 21, user, id, now, &h) == FS_STOCK_RESERVED && h.left == 0,
	    "the release dropped the guard at home: the shopper may buy again");
	/* Item 22 has one key (place 0): a shopper homed elsewhere keeps its guard at home. */
	next = 0;
	shopper_at(user, "c", &next, 2);
	order_id(id, n++);
	check(fs_stock_reserve(st, 9, 22, user, id, now, &h) == FS_STOCK_RESERVED &&
		fs_stock_reserve(st, 9, 21, user, first, now, &h) == FS_STOCK_ALREADY &&
		strcmp(h.order_id, id) == 0,
	    "an unsharded item of a sharded sale: one unit per shopper per sale still");
	check(fs_stock_set_end(st, 9, 1) == 1 &&
		fs_stock_reserve(st, 9, 22, "late", first, now, &h) == FS_STOCK_SOLD_OUT,
	    "a sale closed early sells nothing at any place");
	check(fs_stock_forget_sale(st, 9, items, 2) == 0, "holds on their way keep the sale");
}

/* SCRIPT FLUSH on every master: the next EVALSHA there answers NOSCRIPT. */
static int
flush_scripts(fs_stock *st)
{
	const char *argv[] = { "SCRIPT", "FLUSH" };
	int masters = fs_redis_masters(st->redis);

	for (int i = 0; i < masters; i++) {
		redisReply *r = fs_redis_master_argv(st->redis, i, 2, argv, NULL);

		if (r == NULL)
			return -1;
		freeReplyObject(r);
	}
	return masters > 0 ? 0 : -1;
}

/*
 * fs_stock_reserve_many on sale 5 (item 21: 6 units over 3 shards, item
 * 22: 2 units): the outcomes of fs_stock_reserve one by one, whichever
 * step serves each, with the scripts gone from Redis before the first
 * batch and more reservations than one pipeline holds in the last.
 */
static void
check_batch(fs_stock *st)
{
	static char users[80][32], ids[80][FS_UUID_STRLEN + 1];
	struct fs_stock_ask asks[80];
	uint64_t items[2] = { 21, 22 };
	long left[2];
	int64_t now = fs_clock_now_ms();
	int reserved = 0, sold_out = 0, zero_left = 0, next = 0, distinct = 1;

	if (warm_sharded(st, 5, 6) != 0 || flush_scripts(st) != 0) {
		check(0, "sale 5 loaded and the scripts flushed");
		return;
	}
	/* Eight shoppers of item 21, all at home 0 (one shard of two units). */
	for (int i = 0; i < 8; i++) {
		shopper_at(users[i], "p", &next, 0);
		order_id(ids[i], 500 + i);
		asks[i] = (struct fs_stock_ask){ .sale = 5, .item = 21, .user = users[i],
			.order_id = ids[i], .now_ms = now };
	}
	/* One shopper twice for item 22, and an item the sale lacks. */
	snprintf(users[8], sizeof(users[8]), "q1");
	order_id(ids[8], 508);
	order_id(ids[9], 509);
	order_id(ids[10], 510);
	asks[8] = (struct fs_stock_ask){ .sale = 5, .item = 22, .user = users[8], .order_id = ids[8],
		.now_ms = now };
	asks[9] = asks[8];
	asks[9].order_id = ids[9];
	asks[10] = (struct fs_stock_ask){ .sale = 5, .item = 23, .user = "q2", .order_id = ids[10],
		.now_ms = now };
	fs_stock_reserve_many(st, asks, 11);
	for (int i = 0; i < 8; i++) {
		reserved += asks[i].result == FS_STOCK_RESERVED;
		sold_out += asks[i].result == FS_STOCK_SOLD_OUT;
		zero_left += asks[i].result == FS_STOCK_RESERVED && asks[i].hold.left == 0;
		for (int j = 0; j < i; j++)
			distinct &= asks[i].result != FS_STOCK_RESERVED ||
			    strcmp(asks[i].hold.order_id, asks[j].hold.order_id) != 0;
	}
	check(reserved == 6 && sold_out == 2 && zero_left == 1 && distinct &&
		fs_stock_left(st, 5, items, 2, left) == 0 && left[0] == 0,
	    "a batch sells exactly the units of a sharded item: the home shard's, then the others'");
	check(asks[8].result == FS_STOCK_RESERVED && asks[8].hold.left == 1 &&
		asks[8].hold.window_s == 30 && asks[9].result == FS_STOCK_ALREADY &&
		strcmp(asks[9].hold.order_id, ids[8]) == 0 && left[1] == 1,
	    "one shopper twice in a batch: the first holds, the second names it");
	check(asks[10].result == FS_STOCK_UNKNOWN_ITEM, "an item not loaded is unknown in a batch too");
	/* 70 new shoppers for the 1 unit left of item 22: two pipelines. */
	for (int i = 0; i < 70; i++) {
		snprintf(users[i], sizeof(users[i]), "r%d", i);
		order_id(ids[i], 600 + i);
		asks[i] = (struct fs_stock_ask){ .sale = 5, .item = 22, .user = users[i],
			.order_id = ids[i], .now_ms = now };
	}
	fs_stock_reserve_many(st, asks, 70);
	reserved = sold_out = 0;
	for (int i = 0; i < 70; i++) {
		reserved += asks[i].result == FS_STOCK_RESERVED;
		sold_out += asks[i].result == FS_STOCK_SOLD_OUT;
	}
	check(reserved == 1 && sold_out == 69 && asks[0].result == FS_STOCK_RESERVED &&
		asks[0].hold.left == 0 && fs_stock_left(st, 5, items, 2, left) == 0 && left[1] == 0,
	    "more than FS_STOCK_BATCH_MAX: exactly the unit left, to the first in line");
	check(fs_stock_set_end(st, 5, 1) == 1, "sale 5 ends");
}

/*
 * fs_stock_reserve_many in halves on sale 6 (item 22: 2 units): the
 * replies come while the caller waits on the descriptors the stock names;
 * another call of the stock between the halves takes them first, and the
 * end still completes every ask.
 */
static void
check_halves(fs_stock *st)
{
	static char ids[3][FS_UUID_STRLEN + 1];
	static const char *users[3] = { "half-a", "half-b", "half-c" };
	struct fs_stock_ask asks[3];
	struct pollfd pfd[16];
	int fds[16], nfds, ready = 0, recorded, sent = 1;
	int64_t now = fs_clock_now_ms();
	struct fs_stock_record recs[2], after;
	const uint64_t sales[2] = { 6, 6 };
	char err[128];

	if (warm_sharded(st, 6, 6) != 0) {
		check(0, "sale 6 loaded");
		return;
	}
	for (int i = 0; i < 3; i++) {
		order_id(ids[i], 900 + i);
		asks[i] = (struct fs_stock_ask){ .sale = 6, .item = 22, .user = users[i],
			.order_id = ids[i], .now_ms = now };
	}
	fs_stock_reserve_begin(st, asks, 2);
	nfds = fs_stock_reserve_fds(st, fds, 16);
	for (int i = 0; i < nfds; i++)
		pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	if (nfds > 0)
		ready = poll(pfd, (nfds_t)nfds, 5000) > 0;
	check(nfds >= 1 && ready && fs_stock_reserve_deadline(st) > fs_clock_mono_ms(),
	    "a batch begun: its replies come while the caller waits on the stock's descriptors");
	fs_stock_reserve_end(st);
	check(asks[0].result == FS_STOCK_RESERVED && asks[1].result == FS_STOCK_RESERVED &&
		asks[1].hold.left == 0 && strcmp(asks[1].hold.order_id, ids[1]) == 0,
	    "its end completes each ask as fs_stock_reserve would");
	asks[0].result = FS_STOCK_ERROR;
	fs_stock_reserve_end(st);
	check(asks[0].result == FS_STOCK_ERROR && fs_stock_reserve_fds(st, fds, 16) == 0,
	    "a second end is a no-op");
	/*
	 * The two holds' marks (the broker has their orders) ride in the next
	 * batch's pipeline: the second as read before a change, so not
	 * rewritten (a mark rewrites only the record it read).
	 */
	for (int i = 0; i < 2; i++)
		sent &= fs_stock_hold_standing(st, 6, ids[i], &recs[i], &recorded) == 1 &&
		    recs[i].broker == FS_STOCK_BROKER_SENT;
	recs[1].reserved_ms++;
	check(sent && fs_stock_reserve_marks(st, sales, recs, 2) == 0,
	    "two holds that say \" sent\": their marks given to the next batch");
	/* The caller's holds are gone by the time the batch goes: the marks are copies. */
	memset(recs, 'x', sizeof(recs));
	recs[0].order_id[0] = recs[1].order_id[0] = '\0';
	fs_stock_reserve_begin(st, &asks[2], 1);
	check(fs_stock_ping(st) == 0 && fs_stock_reserve_deadline(st) == 0,
	    "another call between the halves gets its own reply: the batch's came first");
	fs_stock_reserve_end(st);
	check(asks[2].result == FS_STOCK_SOLD_OUT, "the end then completes the batch's ask");
	check(fs_stock_reserve_marked(st, err, sizeof(err)) == 0 &&
		fs_stock_hold_standing(st, 6, ids[0], &after, &recorded) == 1 &&
		after.broker == FS_STOCK_BROKER_HAS &&
		fs_stock_hold_standing(st, 6, ids[1], &after, &recorded) == 1 &&
		after.broker == FS_STOCK_BROKER_SENT,
	    "the marks ran in the batch's pipeline: the hold as read says the broker has it, the changed one not");
	check(fs_stock_set_end(st, 6, 1) == 1, "sale 6 ends");
}

/* Milliseconds since t0 (monotonic). */
static long
ms_since(int64_t t0)
{
	return (long)(fs_clock_mono_ms() - t0);
}

/* Begins a batch of ask on far, timed: true when _begin took under 100 ms. */
static int
begun_at_once(fs_stock *far, struct fs_stock_ask *ask)
{
	int64_t t0 = fs_clock_mono_ms();

	fs_stock_reserve_begin(far, ask, 1);
	return ms_since(t0) < 100 && fs_stock_reserve_deadline(far) > 0;
}

/* Sleeps until the monotonic clock reads t_ms. */
static void
pause_until(int64_t t_ms)
{
	struct timespec pause = { 0, 20 * 1000 * 1000 };

	while (fs_clock_mono_ms() < t_ms)
		nanosleep(&pause, NULL);
}

/* Ends far's batch once its replies are readable (bounded: 5 s). */
static void
end_when_ready(fs_stock *far)
{
	struct pollfd pfd[16];
	int fds[16], nfds = fs_stock_reserve_fds(far, fds, 16);

	for (int i = 0; i < nfds; i++)
		pfd[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	if (nfds > 0)
		poll(pfd, (nfds_t)nfds, 5000);
	fs_stock_reserve_end(far);
}

/*
 * A sale's layout is read in the batch's pipeline, never before it: a
 * stock behind a frozen relay (a hung Redis) begins a batch at once for a
 * sale it never read (the reservation waits for the read, then goes on in
 * the end) and for one whose layout is a second old (the batch goes by
 * it, the read rides along); past the deadline a reservation that waited
 * for its layout fails at once, without a second wait. Sales 8, 11 and 12
 * (item 21: 6 units over 3 places, item 22: 2 units at the first) on the
 * Redis of sock.
 */
static void
check_layout_in_pipeline(fs_stock *st, const char *sock, const char *top)
{
	static char ids[3][FS_UUID_STRLEN + 1];
	static const char *users[3] = { "lay-a", "lay-b", "lay-c" };
	static char cold_users[4][32], cold_ids[4][FS_UUID_STRLEN + 1];
	static const uint64_t items[2] = { 21, 22 };
	struct test_relay relay = { -1, 0 };
	struct fs_stock_ask ask, cold[4];
	long left[2];
	int next = 0;
	struct fs_cfg cfg;
	char addr[64], err[256];
	fs_stock *far = NULL;
	int64_t read_at, t0;

	if (warm_sharded(st, 8, 6) != 0 || warm_sharded(st, 11, 6) != 0 ||
	    test_relay_start(&relay, sock) != 0) {
		check(0, "sales 8 and 11 loaded, a relay in front of Redis");
		return;
	}
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", relay.port);
	if (setenv("FLASHSALE_REDIS", addr, 1) != 0 || fs_cfg_load(&cfg, FS_CFG_NEED(FS_CFG_REDIS)) != 0 ||
	    (far = fs_stock_new(&cfg, top, err, sizeof(err))) == NULL || fs_stock_ping(far) != 0) {
		check(0, "a stock behind the relay");
		goto out;
	}
	for (int i = 0; i < 3; i++)
		order_id(ids[i], 950 + i);

	ask = (struct fs_stock_ask){ .sale = 8, .item = 22, .user = users[0], .order_id = ids[0],
		.now_ms = fs_clock_now_ms() };
	kill(relay.pid, SIGSTOP);
	check(begun_at_once(far, &ask), "a hung Redis: a batch of a sale never read begins at once");
	kill(relay.pid, SIGCONT);
	end_when_ready(far);
	read_at = fs_clock_mono_ms();
	check(ask.result == FS_STOCK_RESERVED && ask.hold.left == 1 && strcmp(ask.hold.order_id, ids[0]) == 0,
	    "once Redis answers, the end reads the layout's reply and reserves");

	/*
	 * Four of a sale never read, over its three places: two of item 21 (a
	 * shard at every place: home scripts, in the second pipeline), two of
	 * item 22 (one shard) whose homes hold none (guard at home, unit afar).
	 */
	if (warm_sharded(st, 12, 6) != 0) {
		check(0, "sale 12 loaded");
		goto out;
	}
	for (int i = 0; i < 4; i++) {
		shopper_at(cold_users[i], "cold", &next, i < 2 ? i : i - 1);
		order_id(cold_ids[i], 960 + i);
		cold[i] = (struct fs_stock_ask){ .sale = 12, .item = i < 2 ? 21 : 22,
			.user = cold_users[i], .order_id = cold_ids[i], .now_ms = fs_clock_now_ms() };
	}
	fs_stock_reserve_begin(far, cold, 4);
	end_when_ready(far);
	check(cold[0].result == FS_STOCK_RESERVED && cold[1].result == FS_STOCK_RESERVED &&
		cold[2].result == FS_STOCK_RESERVED && cold[3].result == FS_STOCK_RESERVED &&
		cold[3].hold.left == 0 && fs_stock_left(st, 12, items, 2, left) == 0 && left[0] == 4 &&
		left[1] == 0,
	    "a batch of a sale never read, at every place and afar: each reserved as fs_stock_reserve would");

	/* The layout this stock read is a second old, no more trusted as it is. */
	pause_until(read_at + 1000);
	ask = (struct fs_stock_ask){ .sale = 8, .item = 22, .user = users[1], .order_id = ids[1],
		.now_ms = fs_clock_now_ms() };
	kill(relay.pid, SIGSTOP);
	check(begun_at_once(far, &ask), "a hung Redis: a batch of a sale whose layout is a second old begins at once");
	kill(relay.pid, SIGCONT);
	end_when_ready(far);
	check(ask.result == FS_STOCK_RESERVED && ask.hold.left == 0, "the batch went by that layout and reserved");

	ask = (struct fs_stock_ask){ .sale = 11, .item = 22, .user = users[2], .order_id = ids[2],
		.now_ms = fs_clock_now_ms() };
	kill(relay.pid, SIGSTOP);
	check(begun_at_once(far, &ask), "a hung Redis: a batch of another sale never read begins at once");
	pause_until(fs_stock_reserve_deadline(far));
	t0 = fs_clock_mono_ms();
	fs_stock_reserve_end(far);
	check(ask.result == FS_STOCK_ERROR && ms_since(t0) < 500,
	    "past the deadline, the reservation that waited for its layout fails at once");
	kill(relay.pid, SIGCONT);
	check(fs_stock_reserve(far, 11, 22, users[2], ids[2], fs_clock_now_ms(), &ask.hold) ==
		FS_STOCK_RESERVED,
	    "the next call reconnects and reserves");
	check(fs_stock_set_end(st, 8, 1) == 1 && fs_stock_set_end(st, 11, 1) == 1 &&
		fs_stock_set_end(st, 12, 1) == 1,
	    "sales 8, 11 and 12 end");
out:
	fs_stock_free(far);
	test_relay_stop(&relay);
	setenv("FLASHSALE_REDIS", sock, 1);
}

/* Keys named fs:{9...} left on the Redis of sock, or on the nodes of ports; -1 unknown. */
static long
keys_of_sale_9(const char *sock, const int *ports, int nports)
{
	long n = 0;

	for (int i = 0; i < (sock != NULL ? 1 : nports); i++) {
		redisContext *c = sock != NULL ? redisConnectUnix(sock) :
						 redisConnect("127.0.0.1", ports[i]);
		redisReply *r = c != NULL && c->err == 0 ? redisCommand(c, "KEYS fs:{9*") : NULL;

		n = r != NULL && r->type == REDIS_REPLY_ARRAY && n >= 0 ? n + (long)r->elements : -1;
		if (r != NULL)
			freeReplyObject(r);
		if (c != NULL)
			redisFree(c);
	}
	return n;
}

/*
 * Holds of sale 9 in doubt (lib/soldout): fs_stock_doubts names each item
 * once whatever the place of its unit, and drops the entries of settled
 * holds; one of a hold settled since stays until then, and goes with the
 * sale.
 */
static void
check_sharded_doubts(fs_stock *st, const struct fs_stock_record *recs, size_t got,
    const char *const *ids)
{
	uint64_t found[4];
	size_t nf = 99, want = 0;
	int ok = 1;

	for (size_t i = 0; i < got; i++) {
		int seen = 0;

		for (size_t j = 0; j < i; j++)
			seen |= recs[j].item == recs[i].item;
		want += !seen;
		ok &= fs_stock_doubt_record(st, 9, recs[i].item, recs[i].order_id) == 0;
	}
	ok &= fs_stock_doubt_record(st, 9, 21, "01900000-0000-7000-8000-0000000000ff") == 0;
	check(ok && got > 0 && fs_stock_doubts(st, 9, found, 4, &nf) == 0 && nf == want &&
		(nf < 2 || found[0] != found[1]),
	    "every item with a hold in doubt, once, over every place (a settled entry: none)");
	check(fs_stock_confirm(st, 9, ids, 1) == 0 && fs_stock_doubts(st, 9, found, 4, &nf) == 0 &&
		nf == want, "a confirmed hold's entry goes, its item stays while another is unsettled");
	check(fs_stock_confirm(st, 9, ids, got) == 0 && fs_stock_doubts(st, 9, found, 4, &nf) == 0 &&
		nf == 0, "every hold confirmed: no item in doubt");
	check(fs_stock_doubt_record(st, 9, 22, ids[0]) == 0, "a late entry of a settled hold");
}

/* After sale 9's holds are confirmed, its keys go from every place. */
static void
check_sharded_forget(fs_stock *st, const char *sock, const int *ports, int nports)
{
	uint64_t items[2] = { 21, 22 };
	struct fs_stock_record recs[16];
	const char *ids[16];
	size_t got;

	if (fs_stock_unconfirmed_before(st, 9, INT64_MAX, 0, recs, 16, &got) != 0)
		got = 0;
	for (size_t i = 0; i < got; i++)
		ids[i] = recs[i].order_id;
	check_sharded_doubts(st, recs, got, ids);
	check(got == 7 && fs_stock_confirm(st, 9, ids, got) == 0 &&
		fs_stock_forget_sale(st, 9, items, 2) == 1,
	    "an ended sale with every hold confirmed is forgotten");
	check(keys_of_sale_9(sock, ports, nports) == 0, "no key of any of its places is left");
}

/*
 * Eight processes of one shopper, each its own connection, at once against
 * sale 10 (units over 3 shards) whose shopper's home shard was emptied
 * first: one unit, one order. *results counts RESERVED, ALREADY, SOLD_OUT.
 */
static void
race_one_shopper(fs_stock *st, const struct fs_cfg *cfg, const char *top, long units, int round,
    int results[3], long *left, long *holds)
{
	enum { KIDS = 8 };
	char user[32], id[FS_UUID_STRLEN + 1], err[256];
	uint64_t item = 21;
	struct fs_stock_hold h;
	pid_t kids[KIDS];
	int next = 0, pipes[2];

	*left = *holds = -1;
	if (warm_sharded(st, 10, units) != 0 || pipe(pipes) != 0)
		return;
	for (long i = 0; i < units / 3; i++) {
		shopper_at(user, "d", &next, 0);
		order_id(id, 900 + (int)i);
		fs_stock_reserve(st, 10, 21, user, id, fs_clock_now_ms(), &h);
	}
	snprintf(user, sizeof(user), "e%d", round);
	while (fs_stock_home(user, 3) != 0)
		snprintf(user + strlen(user), sizeof(user) - strlen(user), "x");
	for (int k = 0; k < KIDS; k++) {
		if ((kids[k] = fork()) == 0) {
			fs_stock *mine = fs_stock_new(cfg, top, err, sizeof(err));
			char c, mid[FS_UUID_STRLEN + 1];
			int rc;

			close(pipes[1]);
			if (read(pipes[0], &c, 1) < 0 || mine == NULL)
				_exit(3);
			order_id(mid, 1000 * (round + 1) + k);
			rc = fs_stock_reserve(mine, 10, 21, user, mid, fs_clock_now_ms(), &h);
			fs_stock_free(mine);
			_exit(rc == FS_STOCK_RESERVED ? 0 : rc == FS_STOCK_ALREADY ? 1 :
				rc == FS_STOCK_SOLD_OUT ? 2 : 3);
		}
	}
	close(pipes[0]);
	close(pipes[1]); /* every child reads EOF at once: go */
	for (int k = 0; k < KIDS; k++) {
		int status;

		waitpid(kids[k], &status, 0);
		if (WIFEXITED(status) && WEXITSTATUS(status) < 3)
			results[WEXITSTATUS(status)]++;
	}
	if (fs_stock_left(st, 10, &item, 1, left) != 0 ||
	    fs_stock_count_holds(st, 10, &item, 1, holds) != 0)
		*left = *holds = -1;
}

static void
check_concurrent(fs_stock *st, const struct fs_cfg *cfg, const char *top)
{
	int plenty[3] = { 0 }, scarce[3] = { 0 }, exact = 1;
	long left, holds;

	for (int round = 0; round < 5; round++) {
		race_one_shopper(st, cfg, top, 27, round, plenty, &left, &holds);
		exact &= left == 27 - 9 - 1 && holds == 10;
	}
	check(plenty[0] == 5 && plenty[1] == 5 * 7 && exact,
	    "concurrent purchases of one shopper across shards: one unit, the others 409");
	exact = 1;
	for (int round = 0; round < 5; round++) {
		race_one_shopper(st, cfg, top, 3, round, scarce, &left, &holds);
		exact &= left == 1 && holds == 2;
	}
	/* The losers hold units for a moment: with two left, a loser may see them all taken. */
	check(scarce[0] == 5 && scarce[1] + scarce[2] == 5 * 7 && exact,
	    "with as few units as racers: still one unit, the units the losers took come back");
}

/*
 * The sharded item on a private Redis Cluster of 3 masters + 3 replicas
 * (tests/unit/redis_cluster.h): the same checks, each shard on its master.
 */
static void
check_cluster(const char *top)
{
	struct test_cluster tc;
	struct fs_cfg cfg;
	char seeds[64], err[256];
	fs_stock *st = NULL;

	if (test_cluster_start(&tc, 80) != 0) { /* ports base+80..95: its own */
		check(0, "a private 3-master cluster starts (redis-server, redis-cli --cluster create)");
		return;
	}
	snprintf(seeds, sizeof(seeds), "127.0.0.1:%d,127.0.0.1:%d", tc.port[0], tc.port[1]);
	if (setenv("FLASHSALE_REDIS", seeds, 1) != 0 ||
	    fs_cfg_load(&cfg, FS_CFG_NEED(FS_CFG_REDIS)) != 0 ||
	    (st = fs_stock_new(&cfg, top, err, sizeof(err))) == NULL) {
		check(0, "a stock on the cluster");
		goto out;
	}
	check_sharded(st, 1);
	check_sharded_forget(st, NULL, tc.port, 3); /* the masters */
	check_batch(st);
	check_halves(st);
	check_concurrent(st, &cfg, top);
out:
	fs_stock_free(st);
	test_cluster_stop(&tc);
}

int
main(void)
{
	const char *top = getenv("top_srcdir");
	struct test_redis srv;
	struct fs_cfg cfg;
	char err[256];
	const char *ids[1] = { BOB };
	uint64_t item = 11;
	long holds = -1, left;
	size_t n;
	struct fs_stock_record recs[2];
	fs_stock *st;

	check_records();
	if (top == NULL || test_redis_start(&srv) != 0) {
		printf("Bail out! needs top_srcdir and redis-server\n");
		return 99;
	}
	if (test_redis_cfg(&srv, &cfg) != 0) {
		printf("Bail out! settings of the private Redis\n");
		return 99;
	}
	check(fs_stock_new(&cfg, "/nonexistent", err, sizeof(err)) == NULL && err[0] != '\0',
	    "missing scripts: NULL and a reason, never a live object with err set");
	if ((st = fs_stock_new(&cfg, top, err, sizeof(err))) == NULL) {
		printf("Bail out! %s\n", err);
		return 99;
	}
	check(warm(st, 0, &holds) == 0 && holds == 0, "warm loads a sale");
	check(warm(st, 0, &holds) == 1 && holds == 1, "warm_begin counts the sale's holds");
	check(warm(st, 1, &holds) == 0, "warm rewrites a sale that has holds");
	check_reserve(st);
	check_start(st);
	check_reads(st);
	check_snapshot(st);
	check_home();
	check_sharded(st, 0);
	check_sharded_forget(st, srv.sock, NULL, 0);
	check_batch(st);
	check_halves(st);
	check_layout_in_pipeline(st, srv.sock, top);
	check_concurrent(st, &cfg, top);
	check(fs_stock_confirm(st, 7, ids, 1) == 0 &&
		fs_stock_unconfirmed_before(st, 7, fs_clock_now_ms() + 1000, 0, recs, 2, &n) == 0 &&
		n == 0,
	    "a confirmed hold is no longer unconfirmed");
	check(fs_stock_release(st, 7, 11, BOB) == 1 && fs_stock_release(st, 7, 11, BOB) == 0 &&
		fs_stock_left(st, 7, &item, 1, &left) == 0 && left == 2,
	    "release gives the unit back once");
	check(fs_stock_release(st, 7, 12, ANN) == -1 && st->err == FS_STOCK_ERR_REPLY,
	    "releasing with the wrong item is refused for good (FS_STOCK_ERR_REPLY)");
	test_redis_stop(&srv);
	check(fs_stock_left(st, 7, &item, 1, &left) == -1 && st->err == FS_STOCK_ERR_IO,
	    "Redis away: FS_STOCK_ERR_IO, worth a retry");
	fs_stock_free(st);
	test_redis_finish(&srv);
	check_cluster(top);
	return failures == 0 ? 0 : 1;
}

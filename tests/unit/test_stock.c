/*
 * Unit test of lib/stock against a real redis-server of its own, with the
 * real scripts of lua/ (top_srcdir): the hold record, warm, reserve,
 * release, the scans and the snapshot.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "stock.h"
#include "expect.h"
#include "redis_server.h"

#define ANN "01900000-0000-7000-8000-00000000000a"
#define BOB "01900000-0000-7000-8000-00000000000b"
#define CAT "01900000-0000-7000-8000-00000000000c"

static void
check_records(void)
{
	struct fs_stock_record r;
	char rec[FS_STOCK_RECORD_MAX], user[FS_STOCK_USER_MAX + 2];
	uint64_t sale = 0, item = 0;

	check(fs_stock_record_format(rec, sizeof(rec), "ann", 11, 1000) > 0 &&
		strcmp(rec, "ann 11 1000") == 0,
	    "a hold record is \"<user> <item> <reservedAtMs>\"");
	check(fs_stock_record_parse(rec, &r) == 0 && strcmp(r.user, "ann") == 0 && r.item == 11 &&
		r.reserved_ms == 1000,
	    "it reads back");
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
	check(fs_stock_record_format(rec, 8, "ann", 11, 1000) == -1, "a small buffer is refused");
	check(fs_stock_restock_parse("7 11", &sale, &item) == 0 && sale == 7 && item == 11 &&
		fs_stock_restock_parse("7", &sale, &item) == -1,
	    "restock messages are \"<sale> <item>\"");
}

/* Sale 7: item 11 with 2 units left, item 12 sold out, ann holding one of 11. */
static int
warm(fs_stock *st, int force, long *holds)
{
	static const struct fs_stock_warm_item items[] = { { 11, 2 }, { 12, 0 } };
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
	check(fs_stock_unconfirmed_before(st, 7, fs_clock_now_ms() + 1000, recs, 8, &n) == 0 &&
		n == 1 && strcmp(recs[0].order_id, BOB) == 0 && recs[0].exists &&
		recs[0].readable && strcmp(recs[0].user, "bob") == 0,
	    "a reserved hold is unconfirmed; a warmed one is not");
	check(fs_stock_unconfirmed_before(st, 7, 1, recs, 8, &n) == 0 && n == 0,
	    "none reserved before the given instant");
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
	check_reads(st);
	check_snapshot(st);
	check(fs_stock_confirm(st, 7, ids, 1) == 0 &&
		fs_stock_unconfirmed_before(st, 7, fs_clock_now_ms() + 1000, recs, 2, &n) == 0 &&
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
	return failures == 0 ? 0 : 1;
}

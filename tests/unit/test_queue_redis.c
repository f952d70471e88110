/*
 * Unit test of lib/queue_redis.c against a real redis-server of its own,
 * with the real scripts of lua/ (top_srcdir): the join (one place per
 * account whatever the repeats, drawn scores before the opening, 2^52 + n
 * after, the journal, the window), the pass (every verdict, an expiry
 * that never changes, lapse), the status figures, the passes outstanding
 * (a pass whose account holds a unit is not), joins in one pipeline
 * (each answered as alone, a batch ended by any other call), and on a private Redis
 * Cluster: every key of a sale in one slot, and WAIT 1 acknowledged.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "queue.h"
#include "redis.h"
#include "stock.h"
#include "expect.h"
#include "stock_load.h"
/* Their failover and restart helpers are not needed here. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "redis_cluster.h"
#include "redis_server.h"
#pragma GCC diagnostic pop

#define SALE 7
#define LATE FS_QUEUE_LATE_BASE
#define PASS_MS 120000

/* Joining opens at 1 s, the sale at 2 s, ends at 1000 s (ms since the epoch: any clock). */
static const struct fs_queue_window win = { 1000, 2000, 1000000, PASS_MS / 1000, 15 };

static enum fs_queue_verdict
join(fs_queue_store *q, const char *sub, int64_t draw, int64_t now, struct fs_queue_place *p)
{
	return fs_queue_join(q, SALE, &win, sub, draw, now, p);
}

static long long
list_len(const struct test_redis *srv, const char *key)
{
	redisReply *r = test_redis_cmd(srv, "LLEN %s", key);
	long long n = r != NULL && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

	if (r != NULL)
		freeReplyObject(r);
	return n;
}

static void
check_join(fs_queue_store *q, const struct test_redis *srv)
{
	struct fs_queue_place p, again;
	redisReply *r;

	check(join(q, "ann", 12345, 999, &p) == FS_QUEUE_V_NOT_YET, "no join before preMs");
	check(join(q, "ann", 12345, 1000000, &p) == FS_QUEUE_V_ENDED, "no join from endsMs on");
	check(join(q, "ann", 12345, 1500, &p) == FS_QUEUE_V_OK && p.score == 12345 &&
		p.rank == -1 && p.added == 1,
	    "a join before the opening takes the draw as its score, and no rank");
	check(join(q, "ann", 777, 1600, &again) == FS_QUEUE_V_OK && again.score == 12345 &&
		again.added == 0,
	    "a repeat (another device, another draw argument) answers the same place");
	check(join(q, "bob", 99, 1700, &p) == FS_QUEUE_V_OK && p.score == 99, "bob draws 99");
	check(join(q, "cat", 5, 2000, &p) == FS_QUEUE_V_OK && p.score == LATE + 1 && p.rank == 2 &&
		p.added == 1,
	    "from the opening on: 2^52 + 1, behind every drawn place, with a rank");
	check(join(q, "dan", 5, 2100, &p) == FS_QUEUE_V_OK && p.score == LATE + 2 && p.rank == 3,
	    "then 2^52 + 2, in arrival order");
	check(join(q, "ann", 12345, 2200, &p) == FS_QUEUE_V_OK && p.score == 12345 && p.rank == 1 &&
		p.added == 0,
	    "ann's drawn place after the opening: the same score, rank after bob's 99");
	check(join(q, "gus", 5, 2050, &p) == FS_QUEUE_V_OK && p.score == LATE + 3,
	    "a late join whose handler read its clock before dan's script ran: 2^52 + 3 all the same");
	check(list_len(srv, "fs:{7}:q:journal") == 5, "the journal has one entry per new place");
	r = test_redis_cmd(srv, "LINDEX fs:{7}:q:journal 2");
	check(r != NULL && r->type == REDIS_REPLY_STRING &&
		strcmp(r->str, "cat 4503599627370497 2000") == 0,
	    "an entry is \"<sub> <score> <joinedAtMs>\", the score without an exponent");
	if (r != NULL)
		freeReplyObject(r);
	r = test_redis_cmd(srv, "LINDEX fs:{7}:q:journal 4");
	check(r != NULL && r->type == REDIS_REPLY_STRING &&
		strcmp(r->str, "gus 4503599627370499 2100") == 0,
	    "... dated at dan's 2100, not its own 2050: the dates keep the late numbers' order");
	if (r != NULL)
		freeReplyObject(r);
}

static enum fs_queue_verdict
pass(fs_queue_store *q, const char *sub, int64_t now, struct fs_queue_place *p)
{
	return fs_queue_pass(q, SALE, &win, sub, now, p);
}

static void
set_state(const struct test_redis *srv, const char *field, const char *value)
{
	redisReply *r = test_redis_cmd(srv, "HSET fs:{7}:q:state %s %s", field, value);

	if (r != NULL)
		freeReplyObject(r);
}

static void
check_pass(fs_queue_store *q, const struct test_redis *srv)
{
	struct fs_queue_place p;

	check(pass(q, "eve", 3000, &p) == FS_QUEUE_V_NOT_IN_QUEUE, "no place: NOT_IN_QUEUE");
	check(pass(q, "bob", 3000, &p) == FS_QUEUE_V_NOT_YET && p.rank == 0 && p.admitted == 0,
	    "nobody admitted yet: NOT_YET with the rank and admitted");
	set_state(srv, "admitted", "2");
	check(pass(q, "bob", 3000, &p) == FS_QUEUE_V_OK && p.expires_ms == 3000 + PASS_MS &&
		p.added == 1,
	    "admitted: a pass valid passSeconds from now");
	check(pass(q, "bob", 4000, &p) == FS_QUEUE_V_OK && p.expires_ms == 3000 + PASS_MS &&
		p.added == 0,
	    "a repeat answers the same expiry");
	check(pass(q, "ann", 3500, &p) == FS_QUEUE_V_OK && p.expires_ms == 3500 + PASS_MS,
	    "ann (rank 1) is admitted too");
	check(pass(q, "cat", 3500, &p) == FS_QUEUE_V_NOT_YET && p.rank == 2 && p.admitted == 2,
	    "cat (rank 2) is not");
	check(pass(q, "bob", 3000 + PASS_MS, &p) == FS_QUEUE_V_LAPSED,
	    "at its expiry the pass has lapsed: never issued again");
	set_state(srv, "admitted", "4");
	set_state(srv, "soldout", "1");
	check(pass(q, "cat", 4000, &p) == FS_QUEUE_V_SOLD_OUT,
	    "sold out: no pass for a place without one");
	check(pass(q, "ann", 4000, &p) == FS_QUEUE_V_OK && p.expires_ms == 3500 + PASS_MS,
	    "sold out: a pass issued before is still answered");
	check(pass(q, "ann", 1000000, &p) == FS_QUEUE_V_ENDED, "no pass from endsMs on");
}

static void
check_state(fs_queue_store *q, const struct test_redis *srv)
{
	struct fs_queue_state st;
	struct fs_queue_place p;

	set_state(srv, "through", "4503599627370497");
	set_state(srv, "rate", "2500");
	set_state(srv, "multiple", "1250");
	check(fs_queue_read_state(q, SALE, 4000, &st) == 0 && st.admitted == 4 &&
		st.through == LATE + 1 && st.rate_milli == 2500 && st.soldout == 1 &&
		st.joined == 5 && st.drawn == 2 && st.passes_out == 2 && st.mult_milli == 1250,
	    "the figures: admitted, through, rate, soldout, joined, drawn, passes not expired, "
	    "the pacer's multiple");
	check(fs_queue_read_state(q, SALE, 3000 + PASS_MS, &st) == 0 && st.passes_out == 1,
	    "a pass at its expiry is no longer out");
	check(fs_queue_read_state(q, 8, 4000, &st) == 0 && st.admitted == 0 && st.through == -1 &&
		st.joined == 0 && st.soldout == 0 && st.mult_milli == 0,
	    "a queue nobody joined: zeros, through -1");
	check(join(q, "fay", 1, 200000, &p) == FS_QUEUE_V_CLOSED,
	    "sold out with no pass out: a new place is refused (CLOSED)");
	check(join(q, "ann", 1, 200000, &p) == FS_QUEUE_V_OK && p.score == 12345,
	    "a place taken before is still answered");
	set_state(srv, "soldout", "0");
	check(join(q, "fay", 1, 200000, &p) == FS_QUEUE_V_OK && p.score == LATE + 4,
	    "units back: joining resumes");
}

/* A join ask of sale 9 (a sale of its own: the figures of SALE stay as they are). */
static struct fs_queue_join_ask
ask9(const char *sub, int64_t draw, int64_t now)
{
	return (struct fs_queue_join_ask){ .sale = 9, .window = win, .sub = sub, .draw = draw,
		.now_ms = now };
}

/* Joins in one pipeline: each answered as alone; another call ends the batch first. */
static void
check_batch(fs_queue_store *q)
{
	static struct fs_queue_join_ask many[FS_QUEUE_JOIN_BATCH_MAX + 1];
	static char subs[FS_QUEUE_JOIN_BATCH_MAX + 1][16];
	struct fs_queue_join_ask a[5] = { ask9("b1", 11, 1500), ask9("b2", 22, 1500),
		ask9("b1", 33, 1600), ask9("b3", 44, 999), ask9("b4", 5, 2500) };
	struct fs_queue_state st;
	int fds[4], ok = 1;

	fs_queue_join_begin(q, a, 5);
	check(fs_queue_join_fds(q, fds, 4) == 1 && fs_queue_join_deadline(q) > 0,
	    "a batch out: one connection's replies awaited, until a deadline");
	fs_queue_join_end(q);
	check(fs_queue_join_fds(q, fds, 4) == 0, "ended: nothing awaited");
	check(a[0].verdict == FS_QUEUE_V_OK && a[0].place.score == 11 && a[0].place.added == 1 &&
		a[1].verdict == FS_QUEUE_V_OK && a[1].place.score == 22 && a[1].place.added == 1,
	    "a batch's joins before the opening: each its draw, new");
	check(a[2].verdict == FS_QUEUE_V_OK && a[2].place.score == 11 && a[2].place.added == 0,
	    "the same account twice in one batch: the second answers the first's place");
	check(a[3].verdict == FS_QUEUE_V_NOT_YET, "one too early in a batch: NOT_YET, alone");
	check(a[4].verdict == FS_QUEUE_V_OK && a[4].place.score == LATE + 1 && a[4].place.rank == 2,
	    "a late join in a batch: 2^52 + 1, ranked behind the drawn places");

	a[0] = ask9("b5", 55, 1700);
	a[1] = ask9("b2", 66, 1700);
	fs_queue_join_begin(q, a, 2);
	check(fs_queue_read_state(q, 9, 3000, &st) == 0 && st.joined == 4 &&
		a[0].verdict == FS_QUEUE_V_OK && a[0].place.added == 1 &&
		a[1].verdict == FS_QUEUE_V_OK && a[1].place.score == 22,
	    "another call of the store ends the batch first: its joins answered, then counted");
	a[0].verdict = FS_QUEUE_V__MAX;
	fs_queue_join_end(q);
	check(a[0].verdict == FS_QUEUE_V__MAX, "ending an ended batch changes nothing");

	for (int i = 0; i <= FS_QUEUE_JOIN_BATCH_MAX; i++) {
		snprintf(subs[i], sizeof(subs[i]), "m%d", i);
		many[i] = ask9(subs[i], 100 + i, 1800);
	}
	fs_queue_join_begin(q, many, FS_QUEUE_JOIN_BATCH_MAX + 1);
	fs_queue_join_end(q);
	for (int i = 0; i < FS_QUEUE_JOIN_BATCH_MAX; i++)
		ok &= many[i].verdict == FS_QUEUE_V_OK && many[i].place.score == 100 + i;
	check(ok, "a full batch: every join placed");
	check(many[FS_QUEUE_JOIN_BATCH_MAX].verdict == FS_QUEUE_V_ERROR &&
		strstr(many[FS_QUEUE_JOIN_BATCH_MAX].errstr, "more than") != NULL,
	    "one more than a batch holds: refused with a reason, never sent");
	check(fs_queue_read_state(q, 9, 3000, &st) == 0 && st.joined == 4 + FS_QUEUE_JOIN_BATCH_MAX,
	    "and not placed");
}

/* ann holds a unit of the sale: her pass is no longer outstanding. */
static void
check_outstanding(const struct fs_cfg *cfg, const char *top)
{
	static const struct fs_stock_warm_item items[] = { { 11, 5, 1 } };
	struct fs_stock_hold hold;
	char err[256];
	fs_stock *st = fs_stock_new(cfg, top, err, sizeof(err));

	check(st != NULL && stock_load(st, SALE, items, 1) == 0, "the sale's stock is loaded");
	if (st == NULL)
		return;
	check(fs_queue_passes_outstanding(st, SALE, 4000) == 2,
	    "two passes not expired, no unit held: two outstanding");
	check(fs_stock_reserve(st, SALE, 11, "ann", "01900000-0000-7000-8000-00000000000a",
		  fs_clock_now_ms(),
		  &hold) == FS_STOCK_RESERVED,
	    "ann buys with her pass");
	check(fs_queue_passes_outstanding(st, SALE, 4000) == 1,
	    "a pass whose account holds a unit is not outstanding");
	check(fs_queue_passes_outstanding(st, SALE, 3000 + PASS_MS) == 0,
	    "nor one expired");
	fs_stock_free(st);
}

/* A reply's number (a string of one), -1 none; the reply freed. */
static long long
number_of(redisReply *r)
{
	long long v = -1;

	if (r != NULL && r->type == REDIS_REPLY_STRING)
		v = strtoll(r->str, NULL, 10);
	if (r != NULL)
		freeReplyObject(r);
	return v;
}

/* sub's score in the sale's zset fs:{7}:q:<key>; -1 none. */
static long long
zscore_of(const struct test_redis *srv, const char *key, const char *sub)
{
	return number_of(test_redis_cmd(srv, "ZSCORE fs:{7}:q:%s %s", key, sub));
}

/* How long after its admission sub asked for its pass (fs:{7}:q:claims); -1 none. */
static long long
claim_of(const struct test_redis *srv, const char *sub)
{
	return zscore_of(srv, "claims", sub);
}

/*
 * The claim window (issue 35): a place admitted more than claimSeconds ago
 * (15 s by default; its step in fs:{S}:q:steps) that never asked has let its
 * turn go: LAPSED, never a pass; within the window its pass is issued.
 * Without it a walk-away's turn held the line for passSeconds.
 */
static void
check_claim(fs_queue_store *q, const struct test_redis *srv)
{
	struct fs_queue_place p;
	redisReply *r;

	set_state(srv, "soldout", "0");
	set_state(srv, "admitted", "6");
	/* Ranks 2 and 3 (cat, dan) admitted at 3000, 4 and 5 (gus, fay) at 10000. */
	if ((r = test_redis_cmd(srv, "ZADD fs:{7}:q:steps 4 4:3000 6 6:10000")) != NULL)
		freeReplyObject(r);
	check(pass(q, "dan", 3000 + 15000 + 1, &p) == FS_QUEUE_V_LAPSED && p.rank == 3,
	    "claim: admitted at 3 s, asking 15.001 s later: its turn passed (LAPSED)");
	check(pass(q, "gus", 10000 + 15000, &p) == FS_QUEUE_V_OK && p.added == 1,
	    "claim: admitted at 10 s, asking 15 s later: its pass");
	check(pass(q, "dan", 60000, &p) == FS_QUEUE_V_LAPSED,
	    "claim: a turn that passed never comes back");
	check(pass(q, "fay", 200000, &p) == FS_QUEUE_V_LAPSED && p.rank == 5,
	    "claim: the window of the step that admitted the place, not of the last step");
	/*
	 * The pacer learns how long live pages take to ask (issue 35: a window
	 * of 5 s for every walk-away, where the rehearsal's pages asked within
	 * about 1.5 s): each pass issued dates the ask from its admission in
	 * fs:{S}:q:claims, and a lapsed ask or a repeat adds nothing.
	 */
	check(claim_of(srv, "gus") == 15000 && claim_of(srv, "dan") == -1 &&
		claim_of(srv, "fay") == -1,
	    "claim: the delay of the pass issued (15 s after its admission) recorded, no other");
}

/* The time a page last asked for sub's pass (fs:{7}:q:seen); -1 never. */
static long long
seen_at(const struct test_redis *srv, const char *sub)
{
	return zscore_of(srv, "seen", sub);
}

/*
 * A page holding an unused pass asks for it again every few seconds, and
 * each ask is dated in fs:{S}:q:seen (issue 35, the several-items case): the
 * pacer stops counting a pass whose page went quiet (its shopper left after
 * their item sold out) instead of holding a place for passSeconds.
 */
static void
check_seen(fs_queue_store *q, const struct test_redis *srv)
{
	struct fs_queue_place p;

	check(seen_at(srv, "gus") == 25000, "seen: a pass issued dates its page's ask");
	check(pass(q, "gus", 31000, &p) == FS_QUEUE_V_OK && p.added == 0 && seen_at(srv, "gus") == 31000,
	    "seen: the same pass asked again: the same pass, the page's ask dated again");
	check(claim_of(srv, "gus") == 15000, "claim: a repeat ask keeps the first delay");
	check(pass(q, "dan", 32000, &p) == FS_QUEUE_V_LAPSED && seen_at(srv, "dan") == -1,
	    "seen: a refusal dates nothing");
}

/*
 * The opening decided by one clock (issue 35): a handler passes no time
 * (FS_QUEUE_NOW_REDIS) and the script reads Redis' TIME. A handler whose
 * clock was 3 s slow (or read before a 3 s settings wait) would have said
 * "before the opening" for a join made 2 s after it, and given a drawn
 * place to an account chosen once the seed was published.
 */
static void
check_one_clock(fs_queue_store *q)
{
	int64_t real = fs_clock_now_ms();
	struct fs_queue_window opened = { real - 600000, real - 2000, real + 600000, 120, 15 };
	struct fs_queue_window soon = { real - 600000, real + 600000, real + 1200000, 120, 15 };
	struct fs_queue_place p;

	check(fs_queue_join(q, 12, &soon, "ivy", 4242, FS_QUEUE_NOW_REDIS, &p) == FS_QUEUE_V_OK &&
		p.score == 4242 && p.rank == -1,
	    "one clock: before the opening by Redis' clock: the draw, no rank yet");
	check(fs_queue_join(q, 13, &opened, "jon", 4242, FS_QUEUE_NOW_REDIS, &p) == FS_QUEUE_V_OK &&
		p.score == LATE + 1 && p.rank == 0,
	    "one clock: 2 s after the opening by Redis' clock: late, whatever the handler's clock");
}

/*
 * The rest of the waiting room on the same clock (issue 35): a handler
 * whose clock ran 3 s ahead showed the seed (status document) and ranks
 * (pass) while Redis' clock still drew joins, and dated passes on its own
 * clock, which the pacer's steps and claims are compared with.
 */
static void
check_one_clock_rest(fs_queue_store *q, const char *top)
{
	char path[1024];
	int clock;

	int64_t before = fs_clock_now_ms(), t = 0, after;
	struct fs_queue_window opened = { before - 600000, before - 2000, before + 600000, 120, 15 };
	struct fs_queue_window soon = { before - 600000, before + 600000, before + 1200000, 120, 15 };
	struct fs_queue_state st;
	struct fs_queue_place p;
	int rc;

	check(fs_queue_pass(q, 12, &soon, "ivy", FS_QUEUE_NOW_REDIS, &p) == FS_QUEUE_V_NOT_YET &&
		p.rank == -1 && p.admitted == 0,
	    "one clock: a pass asked before the opening by Redis' clock: NOT_YET, no rank");
	check(fs_queue_pass(q, 12, &soon, "ivy", soon.opens_ms - 1, &p) == FS_QUEUE_V_NOT_YET &&
		p.rank == -1,
	    "one clock: 1 ms before the opening by a test's clock: no rank");
	check(fs_queue_pass(q, 12, &soon, "ivy", soon.opens_ms, &p) == FS_QUEUE_V_NOT_YET &&
		p.rank == 0,
	    "one clock: at the opening: the rank");
	check(fs_queue_pass(q, 13, &opened, "jon", FS_QUEUE_NOW_REDIS, &p) == FS_QUEUE_V_NOT_YET &&
		p.rank == 0,
	    "one clock: after the opening by Redis' clock: the rank");
	snprintf(path, sizeof(path), "%s/lua/queue_clock.lua", top);
	clock = fs_redis_script_load(q->redis, path);
	rc = fs_queue_read_state(q, 13, FS_QUEUE_NOW_REDIS, &st);
	rc |= clock < 0 || fs_queue_redis_clock(q->redis, clock, 13, &t);
	after = fs_clock_now_ms();
	check(rc == 0 && st.clock_ms >= before && st.clock_ms <= t && t <= after + 1 &&
		st.joined == 1,
	    "one clock: the status figures and fs_queue_redis_clock read Redis' clock (this "
	    "machine's: between two readings of it)");
	check(fs_queue_read_state(q, 13, 4000, &st) == 0 && st.clock_ms == 4000,
	    "one clock: a test's clock is the figures' clock");
}

/* The state's "synced" field (the write a WAIT after a repeat covers), -1 none. */
static long long
synced(const struct test_redis *srv)
{
	return number_of(test_redis_cmd(srv, "HGET fs:{7}:q:state synced"));
}

/*
 * A WAIT that failed (issue 35): the join or pass was answered 503 and kept
 * on the master; its retry found it and answered 200 without a write, so
 * its WAIT (the caller's, on its own connection) covered nothing and a
 * replica promoted next could lack what was answered 200. With sync (set by
 * FLASHSALE_REDIS_WAIT_MS) a place or pass found again is written again.
 * Here no replica exists: every WAIT fails, as the first one did.
 */
static void
check_sync(fs_queue_store *q, const struct test_redis *srv)
{
	struct fs_queue_place p;

	q->sync = 1;
	check(join(q, "lea", 3, 1500, &p) == FS_QUEUE_V_OK && p.added == 1 &&
		fs_queue_replicate(q, 50) == -1,
	    "sync: a new place, its WAIT fails (no replica): the handler answers 503");
	check(join(q, "lea", 3, 1600, &p) == FS_QUEUE_V_OK && p.added == 0 && synced(srv) == 1600 &&
		fs_queue_replicate(q, 50) == -1,
	    "sync: its retry writes again, so its WAIT covers the place: it fails again (503)");
	check(pass(q, "gus", 30000, &p) == FS_QUEUE_V_OK && p.added == 0 && synced(srv) == 30000,
	    "sync: a pass found again is written again too");
	q->sync = 0;
	check(join(q, "lea", 3, 1700, &p) == FS_QUEUE_V_OK && p.added == 0 && synced(srv) == 30000,
	    "sync off (no FLASHSALE_REDIS_WAIT_MS): a repeat writes nothing");
}

/* On a cluster: sales in different slots, every script in one; WAIT 1 acknowledged. */
static void
check_cluster(const char *top)
{
	struct test_cluster tc;
	struct fs_queue_place p;
	struct fs_queue_state st;
	struct fs_cfg cfg;
	char seeds[64], err[256];
	fs_queue_store *q;

	if (test_cluster_start(&tc, 100) != 0) {
		check(0, "a private Redis Cluster starts");
		return;
	}
	snprintf(seeds, sizeof(seeds), "127.0.0.1:%d", tc.port[0]);
	if (setenv("FLASHSALE_REDIS", seeds, 1) != 0 ||
	    fs_cfg_load(&cfg, FS_CFG_NEED(FS_CFG_REDIS)) != 0 ||
	    (q = fs_queue_store_new(&cfg, top, err, sizeof(err))) == NULL) {
		check(0, "a store on the cluster");
		test_cluster_stop(&tc);
		return;
	}
	{
		struct fs_queue_join_ask a[6];
		int ok = 1;

		for (uint64_t sale = 1; sale <= 6; sale++)
			a[sale - 1] = (struct fs_queue_join_ask){ .sale = sale, .window = win,
				.sub = "bea", .draw = (int64_t)sale, .now_ms = 1500 };
		fs_queue_join_begin(q, a, 6);
		fs_queue_join_end(q);
		for (int i = 0; i < 6; i++)
			ok &= a[i].verdict == FS_QUEUE_V_OK && a[i].place.score == i + 1;
		check(ok, "on a cluster: one batch of joins to sales on several masters, each placed");
	}
	for (uint64_t sale = 1; sale <= 6; sale++) {
		int ok = fs_queue_join(q, sale, &win, "ann", 42, 1500, &p) == FS_QUEUE_V_OK &&
		    p.score == 42 && fs_queue_replicate(q, FS_REDIS_WAIT_MAX_MS) == 0 &&
		    fs_queue_pass(q, sale, &win, "ann", 3000, &p) == FS_QUEUE_V_NOT_YET &&
		    fs_queue_read_state(q, sale, 3000, &st) == 0 && st.joined == 2 && st.drawn == 2;

		if (!ok)
			printf("# sale %" PRIu64 ": %s\n", sale, q->errstr);
		check(ok, "on a cluster: join, WAIT 1, pass and state of a sale in its own slot");
	}
	fs_queue_store_free(q);
	test_cluster_stop(&tc);
}

int
main(void)
{
	const char *top = getenv("top_srcdir");
	struct test_redis srv;
	struct fs_cfg cfg;
	char err[256];
	fs_queue_store *q;

	if (top == NULL || test_redis_start(&srv) != 0 || test_redis_cfg(&srv, &cfg) != 0) {
		printf("Bail out! needs top_srcdir and redis-server\n");
		return 99;
	}
	check(fs_queue_store_new(&cfg, "/nonexistent", err, sizeof(err)) == NULL && err[0] != '\0',
	    "missing scripts: NULL and a reason");
	if ((q = fs_queue_store_new(&cfg, top, err, sizeof(err))) == NULL) {
		printf("Bail out! %s\n", err);
		test_redis_stop(&srv);
		return 99;
	}
	check_join(q, &srv);
	check_pass(q, &srv);
	check_state(q, &srv);
	check_batch(q);
	check_outstanding(&cfg, top);
	check_claim(q, &srv);
	check_seen(q, &srv);
	check_one_clock(q);
	check_one_clock_rest(q, top);
	check_sync(q, &srv);
	check(fs_queue_replicate(q, 50) == -1 && q->err == FS_REDIS_ERR_IO,
	    "no replica: WAIT 1 fails (the caller answers 503, the place is kept)");
	fs_queue_store_free(q);
	test_redis_stop(&srv);
	check_cluster(top);
	return failures == 0 ? 0 : 1;
}

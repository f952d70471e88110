/*
 * Unit test of lib/soldout: the table of sold-out items. 100,000 distinct
 * items of live sales are all remembered in one process, memory follows the
 * live sales (ended ones are dropped with their markers), a restock that
 * races an answer wins, and the markers nginx reads come and go with the
 * entries, also when every item is forgotten (a new subscription) while
 * one is being marked. The restock listener, on a TCP connection (keepalive on) to a
 * Redis behind a relay, notices within its deadline when that connection
 * falls silent (the relay frozen, or severed without a FIN), subscribes
 * again and drops the flags, so a restock it missed is not a sold-out
 * answer forever. A restock whose message never comes at all (the
 * listener's connection healthy) is healed by the recheck within its bound,
 * while items still sold out, or of a sale closed early, stay remembered.
 */
#include "config.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <time.h>

#include "clock.h"
#include "expect.h"
#include "redis_server.h"
#include "relay.h"
#include "soldout.h"
#include "stock.h"

#define ITEMS 100000
#define END_A INT64_C(1800000000000) /* ends of two sales, ms */
#define END_B INT64_C(1800000600000)
#define SALE_X 1 /* the sale of the items of the tests without Redis, or not loaded in it */

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
		fs_soldout_mark(s, SALE_X, i * 7919, i % 2 ? END_A : END_B,
		    fs_soldout_generation(s, i * 7919));
	for (i = 1; i <= ITEMS; i++)
		known += (size_t)fs_soldout_known(s, i * 7919);
	check(known == ITEMS, "100,000 distinct sold-out items are all known");
	check(!fs_soldout_known(s, 7918) && !fs_soldout_known(s, 1), "an item never marked is not");
	fs_soldout_stats(s, &items, &bytes_full);
	check(items == ITEMS, "one entry per item");
	check(bytes_full <= 4 * ITEMS * 24, "the table is at most 4 slots of 24 bytes per item");

	check(fs_soldout_sweep(s, END_A - 1) == 0, "nothing is dropped while both sales run");
	check(fs_soldout_sweep(s, END_A) == ITEMS / 2, "sale A's items go when it ends");
	fs_soldout_stats(s, &items, &bytes);
	check(items == ITEMS / 2 && bytes < bytes_full, "and the table shrinks with them");
	check(!fs_soldout_known(s, 7919) && fs_soldout_known(s, 2 * 7919),
	    "A's items are forgotten, B's still known");
	check(fs_soldout_sweep(s, END_B) == ITEMS / 2, "sale B's items go when it ends");
	fs_soldout_stats(s, &items, &bytes);
	check(items == 0 && bytes <= 64 * 24, "an idle process keeps a minimal table");
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
	fs_soldout_mark(s, SALE_X, 42, END_A, gen);
	check(fs_soldout_known(s, 42) && marker_exists(dir, 42), "marked: known, marker written");
	fs_soldout_clear(s, 42);
	check(!fs_soldout_known(s, 42) && !marker_exists(dir, 42), "cleared: forgotten, marker gone");
	fs_soldout_mark(s, SALE_X, 42, END_A, gen);
	check(!fs_soldout_known(s, 42) && !marker_exists(dir, 42),
	    "a sold-out answer older than the restock is ignored");

	/* Removals in the middle of probe chains keep every other entry found. */
	for (uint64_t i = 1; i <= 2000; i++)
		fs_soldout_mark(s, SALE_X, i, END_A, fs_soldout_generation(s, i));
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

/*
 * Doubt (a hold of the item kept while its order may or may not be in the
 * broker's log): while it lasts the item is never known sold out, so that
 * the holder's retry reaches Redis (its hold: 409 or 503), never a 410.
 * Guards the full-scale rehearsal's 144 shoppers told 410 who ended with a
 * live order.
 */
static void
doubts(void)
{
	char dir[] = "/tmp/fs-soldout-doubt-XXXXXX";
	int64_t now = fs_clock_now_ms(), until;
	struct timespec step = { 0, 10 * 1000000L };
	uint64_t item, sale;
	char msg[96];
	fs_soldout *s;
	unsigned gen;
	int ok = 1;

	if (mkdtemp(dir) == NULL || (s = fs_soldout_new_offline(dir)) == NULL) {
		check(0, "temporary marker directory");
		return;
	}
	fs_soldout_mark(s, SALE_X, 50, END_A, fs_soldout_generation(s, 50));
	gen = fs_soldout_generation(s, 50);
	check(fs_soldout_doubt(s, SALE_X, 50, now + 60000) == 1, "a new doubt is worth telling");
	check(!fs_soldout_known(s, 50) && !marker_exists(dir, 50) && fs_soldout_in_doubt(s, 50),
	    "entering doubt drops the flag and the marker at once");
	fs_soldout_mark(s, SALE_X, 50, END_A, gen);
	fs_soldout_mark(s, SALE_X, 50, END_A, fs_soldout_generation(s, 50));
	check(!fs_soldout_known(s, 50) && !marker_exists(dir, 50),
	    "in doubt, a sold-out answer (read before or after) sets neither flag nor marker");
	check(fs_soldout_doubt(s, SALE_X, 50, now + 60500) == 0 && fs_soldout_doubt(s, SALE_X, 50, now + 1000) == 0,
	    "a doubt longer by less than a second, or shorter, is no news");
	check(fs_soldout_doubt(s, SALE_X, 50, now + 61500) == 1, "one longer by a second is");
	check(fs_soldout_doubt(s, SALE_X, 51, now - 1) == 0 && !fs_soldout_in_doubt(s, 51),
	    "a doubt already over is none");
	fs_soldout_clear(s, 50);
	fs_soldout_forget_all(s);
	fs_soldout_mark(s, SALE_X, 50, END_A, fs_soldout_generation(s, 50));
	check(fs_soldout_in_doubt(s, 50) && !fs_soldout_known(s, 50),
	    "a restock or a new subscription does not end a doubt");

	/* A doubt ends with its time, and the item can be sold out again. */
	until = fs_clock_now_ms() + 200;
	fs_soldout_doubt(s, SALE_X, 52, until);
	fs_soldout_mark(s, SALE_X, 52, END_A, fs_soldout_generation(s, 52));
	check(!fs_soldout_known(s, 52), "item 52 in doubt for 200 ms is not sold out");
	while (fs_clock_now_ms() <= until && fs_clock_now_ms() < until + 5000)
		nanosleep(&step, NULL);
	check(!fs_soldout_in_doubt(s, 52), "its doubt is over when its time is");
	fs_soldout_mark(s, SALE_X, 52, END_A, fs_soldout_generation(s, 52));
	check(fs_soldout_known(s, 52) && marker_exists(dir, 52), "then it is marked sold out again");
	fs_soldout_sweep(s, until + 1);
	fs_soldout_doubt(s, SALE_X, 52, fs_clock_now_ms() + 60000);
	check(!fs_soldout_known(s, 52) && !marker_exists(dir, 52),
	    "after the sweep dropped the ended doubt, a new one clears the item again");

	/* Many doubts, then the sweep drops them all: others stay found meanwhile. */
	for (uint64_t i = 1000; i < 3000; i++)
		fs_soldout_doubt(s, SALE_X, i, now + 60000 + (int64_t)(i % 2) * 60000);
	fs_soldout_sweep(s, now + 60000);
	for (uint64_t i = 1000; i < 3000; i++)
		ok &= fs_soldout_in_doubt(s, i) == (int)(i % 2);
	check(ok, "the sweep drops exactly the doubts that ended");

	/* The message, both ways, and what is refused. */
	check(fs_soldout_doubt_format(msg, sizeof(msg), 18446744073709551615u, 18446744073709551615u,
		  INT64_MAX) > 0 &&
		  fs_soldout_doubt_parse(msg, &sale, &item, &until) == 0 &&
		  item == 18446744073709551615u && until == INT64_MAX && sale == 18446744073709551615u,
	    "a doubt message reads back (largest sale, item and time)");
	check(fs_soldout_doubt_format(msg, 11, 1, 1, 1) == -1, "a message that does not fit: -1");
	{
		static const char *const bad[] = { "", "doubt", "doubt ", "doubt 7", "doubt 7 ",
			"doubt 7 5", "doubt 7 5 ", "doubt 0 5 3", "doubt 07 5 3", "doubt 7 05 3",
			"doubt 7 5 03", "doubt 7 5 0", "doubt  7 5 3", "doubt 7  5 3", "doubt 7 5  3",
			"doubt 7 5 3 ", "doubt 7 5 3x", "doubt -7 5 3", "doubt 7 -5 3", "doubt 7 5 -3",
			"doubt +7 5 3", "Doubt 7 5 3", "doubts 7 5 3", " doubt 7 5 3", "1 7",
			"doubt 18446744073709551616 5 3", "doubt 7 9223372036854775808 3",
			"doubt 7 5 18446744073709551616", "doubt 7 5 3\n" };

		ok = 1;
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			ok &= fs_soldout_doubt_parse(bad[i], &sale, &item, &until) == -1;
		check(ok, "bad doubt messages are refused (empty, short, zero, leading zero, signs, "
			  "spaces, overflow, trailing bytes)");
	}
	check(fs_soldout_doubt_parse("doubt 7 5 3", &sale, &item, &until) == 0 && item == 7 &&
		  until == 5 && sale == 3,
	    "the shortest doubt message reads");
	fs_soldout_free(s);
	check(rmdir(dir) == 0, "no marker is left behind");
}

#define RACE_ROUNDS 20000
#define RACE_ITEM 77

struct race {
	fs_soldout *s;
	pthread_barrier_t start, done;
	unsigned forget_spin; /* this round's delay before the forget-all */
};

static void
spin(unsigned n)
{
	for (volatile unsigned i = 0; i < n; i++)
		;
}

static void *
forgetter(void *arg)
{
	struct race *r = arg;

	for (int i = 0; i < RACE_ROUNDS; i++) {
		pthread_barrier_wait(&r->start);
		spin(r->forget_spin);
		fs_soldout_forget_all(r->s);
		pthread_barrier_wait(&r->done);
	}
	return NULL;
}

/*
 * A forget-all (what the listener does on each new subscription) racing a
 * mark of one item, at shifting offsets, RACE_ROUNDS times: afterwards the
 * entry and its marker exist exactly when the mark's gen was read after
 * the forget-all began (an answer from before it may be stale), never one
 * without the other. An entry without its marker would keep nginx from
 * ever answering for the item.
 */
static void
forget_races_mark(void)
{
	char dir[] = "/tmp/fs-soldout-race-XXXXXX";
	struct race r;
	pthread_t t;
	unsigned seed = 12345, gen, mark_spin;
	int bad = 0, after = 0;

	if (mkdtemp(dir) == NULL || (r.s = fs_soldout_new_offline(dir)) == NULL) {
		check(0, "temporary marker directory");
		return;
	}
	pthread_barrier_init(&r.start, NULL, 2);
	pthread_barrier_init(&r.done, NULL, 2);
	if (pthread_create(&t, NULL, forgetter, &r) != 0) {
		check(0, "the forgetting thread");
		return;
	}
	for (int i = 0; i < RACE_ROUNDS; i++) {
		int known, marker, fresh;

		seed = seed * 1103515245u + 12345u;
		r.forget_spin = (seed >> 8) % 4000;
		mark_spin = (seed >> 20) % 8000;
		pthread_barrier_wait(&r.start);
		spin(mark_spin);
		gen = fs_soldout_generation(r.s, RACE_ITEM);
		fs_soldout_mark(r.s, SALE_X, RACE_ITEM, END_A, gen);
		pthread_barrier_wait(&r.done);
		fresh = gen == fs_soldout_generation(r.s, RACE_ITEM);
		known = fs_soldout_known(r.s, RACE_ITEM);
		marker = marker_exists(dir, RACE_ITEM);
		after += fresh;
		if (fresh ? !(known && marker) : (known || marker)) {
			if (bad++ < 3)
				printf("# round %d: gen %s, entry %d, marker %d\n", i,
				    fresh ? "read after the forget-all began" : "older", known, marker);
		}
		fs_soldout_clear(r.s, RACE_ITEM);
	}
	pthread_join(t, NULL);
	printf("# %d of %d marks read their gen after the forget-all began\n", after, RACE_ROUNDS);
	check(bad == 0, "a forget-all racing a mark: the entry and its marker both or neither, as "
			"fresh as the mark's gen, in every round");
	check(after > 0 && after < RACE_ROUNDS, "the rounds cover both orders");
	pthread_barrier_destroy(&r.start);
	pthread_barrier_destroy(&r.done);
	fs_soldout_free(r.s);
	check(rmdir(dir) == 0, "no marker is left behind");
}

/* Polls (every 20 ms, at most max_ms) until the listener subscribed want times; ms taken or -1. */
static int64_t
until_subscribed(fs_soldout *s, unsigned want, int64_t max_ms)
{
	struct timespec step = { 0, 20 * 1000000L };
	int64_t t0 = fs_clock_mono_ms();
	unsigned subs, silences;

	for (;;) {
		fs_soldout_listener_stats(s, &subs, &silences);
		if (subs >= want)
			return fs_clock_mono_ms() - t0;
		if (fs_clock_mono_ms() - t0 > max_ms)
			return -1;
		nanosleep(&step, NULL);
	}
}

/* True when a TCP socket of this process to the port has SO_KEEPALIVE on. */
static int
keepalive_to(int port)
{
	for (int fd = 3; fd < 1024; fd++) {
		struct sockaddr_in peer;
		socklen_t len = sizeof(peer);
		int on = 0;
		socklen_t olen = sizeof(on);

		if (getpeername(fd, (struct sockaddr *)&peer, &len) == 0 && peer.sin_family == AF_INET &&
		    ntohs(peer.sin_port) == port &&
		    getsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, &olen) == 0 && on)
			return 1;
	}
	return 0;
}

/* Publishes msg on fs:restock on the real server. */
static void
publish(struct test_redis *r, const char *msg)
{
	redisContext *c = redisConnectUnix(r->sock);
	redisReply *reply;

	if (c == NULL || c->err != 0) {
		check(0, "a direct connection to Redis");
		return;
	}
	reply = redisCommand(c, "PUBLISH %s %s", FS_STOCK_RESTOCK_CHANNEL, msg);
	if (reply != NULL)
		freeReplyObject(reply);
	redisFree(c);
}

/* Publishes a restock of item on the real server, as release.lua does. */
static void
publish_restock(struct test_redis *r, uint64_t item)
{
	char msg[48];

	snprintf(msg, sizeof(msg), "1 %" PRIu64, item);
	publish(r, msg);
}

/* Waits (bounded) until the table's sold-out answers are marked (or dropped); 1 when they were. */
static int
settled(fs_soldout *s)
{
	struct timespec step = { 0, 2 * 1000000L };
	int64_t t0 = fs_clock_mono_ms();

	while (fs_soldout_marks_waiting(s) > 0 && fs_clock_mono_ms() - t0 < 5000)
		nanosleep(&step, NULL);
	return fs_soldout_marks_waiting(s) == 0;
}

/* Waits (bounded) until item's flag is gone here; 1 when it went. */
static int
until_unknown(fs_soldout *s, uint64_t item, int64_t ms)
{
	struct timespec step = { 0, 20 * 1000000L };
	int64_t t0 = fs_clock_mono_ms();

	while (fs_soldout_known(s, item) && fs_clock_mono_ms() - t0 < ms)
		nanosleep(&step, NULL);
	return !fs_soldout_known(s, item);
}

/*
 * A doubt told on fs:restock, by another process of another host, reaches
 * this one's listener: the flag and marker go, a new sold-out answer sets
 * neither; a bad doubt message is ignored (the item it names stays).
 */
static void
doubt_heard(struct test_redis *r, fs_soldout *s, const char *dir)
{
	char msg[96];
	int64_t until = fs_clock_now_ms() + 60000;

	fs_soldout_mark(s, SALE_X, 45, END_A, fs_soldout_generation(s, 45));
	fs_soldout_mark(s, SALE_X, 46, END_A, fs_soldout_generation(s, 46));
	(void)settled(s);
	publish(r, "doubt 046 99999999999999 7"); /* a leading zero: not a doubt */
	publish(r, "doubt 46 99999999999999"); /* no sale */
	check(fs_soldout_doubt_format(msg, sizeof(msg), SALE_X, 45, until) > 0, "a doubt message is written");
	publish(r, msg);
	check(until_unknown(s, 45, 5000) && !marker_exists(dir, 45) && fs_soldout_in_doubt(s, 45),
	    "a doubt heard on fs:restock: item 45's flag and marker go, it is in doubt");
	check(fs_soldout_known(s, 46) && marker_exists(dir, 46) && !fs_soldout_in_doubt(s, 46),
	    "bad doubt messages change nothing: item 46 stays sold out");
	fs_soldout_mark(s, SALE_X, 45, END_A, fs_soldout_generation(s, 45));
	check(settled(s) && !fs_soldout_known(s, 45) && !marker_exists(dir, 45),
	    "a sold-out answer for item 45 in doubt sets neither flag nor marker");
}

static void
listener(void)
{
	char dir[] = "/tmp/fs-soldout-listen-XXXXXX", addr[32], err[256];
	struct timespec step = { 0, 20 * 1000000L };
	struct test_redis redis;
	struct test_relay relay = { -1, 0 };
	struct fs_cfg cfg;
	unsigned subs, silences;
	fs_soldout *s = NULL;
	int64_t t0, waited;

	if (test_redis_start(&redis) != 0 || test_relay_start(&relay, redis.sock) != 0 ||
	    mkdtemp(dir) == NULL) {
		check(0, "a redis-server, the relay in front of it and a marker directory");
		goto out;
	}
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", relay.port);
	if (test_redis_cfg(&redis, &cfg) != 0 || setenv("FLASHSALE_REDIS", addr, 1) != 0 ||
	    fs_cfg_load(&cfg, FS_CFG_NEED(FS_CFG_REDIS)) != 0 ||
	    (s = fs_soldout_new(dir, &cfg, err, sizeof(err))) == NULL) {
		check(0, "the sold-out table with its listener through the relay");
		goto out;
	}
	check(until_subscribed(s, 1, 5000) >= 0, "the listener subscribes through the relay");
	check(keepalive_to(relay.port), "its TCP connection has keepalive on");

	/* Frozen: the connection stays open and says nothing. */
	fs_soldout_mark(s, SALE_X, 42, END_A, fs_soldout_generation(s, 42));
	check(settled(s) && fs_soldout_known(s, 42), "item 42 is sold out here");
	kill(relay.pid, SIGSTOP);
	t0 = fs_clock_mono_ms();
	do {
		nanosleep(&step, NULL);
		fs_soldout_listener_stats(s, &subs, &silences);
	} while (silences == 0 && fs_clock_mono_ms() - t0 < 10000);
	waited = fs_clock_mono_ms() - t0;
	check(silences == 1 && waited <= FS_SOLDOUT_PING_EVERY_MS + FS_SOLDOUT_PING_DEADLINE_MS + 1500,
	    "a frozen connection is noticed within the PING deadline (quiet time + time to answer)");
	printf("# noticed after %" PRId64 " ms\n", waited);
	publish_restock(&redis, 42); /* waits in the frozen relay */
	kill(relay.pid, SIGCONT);
	check(until_subscribed(s, 2, 5000) >= 0, "after SIGCONT it subscribes again");
	check(!fs_soldout_known(s, 42) && !marker_exists(dir, 42),
	    "and the flag and marker of item 42 are gone: the next purchase asks Redis");

	/* Severed: Redis drops the subscriber, the listener hears nothing ever again. */
	fs_soldout_mark(s, SALE_X, 43, END_A, fs_soldout_generation(s, 43));
	check(settled(s) && fs_soldout_known(s, 43) && marker_exists(dir, 43),
	    "item 43 is sold out here");
	kill(relay.pid, SIGUSR1);
	nanosleep(&step, NULL);
	publish_restock(&redis, 43); /* nobody subscribed on Redis's side: lost */
	t0 = fs_clock_mono_ms();
	while ((fs_soldout_known(s, 43) || marker_exists(dir, 43)) && fs_clock_mono_ms() - t0 < 10000)
		nanosleep(&step, NULL);
	waited = fs_clock_mono_ms() - t0;
	check(!fs_soldout_known(s, 43) && !marker_exists(dir, 43) &&
		  waited <= FS_SOLDOUT_PING_EVERY_MS + FS_SOLDOUT_PING_DEADLINE_MS + 1500,
	    "a connection severed without a word is replaced within the deadline; the missed "
	    "restock's flag and marker go");
	printf("# item 43 open again after %" PRId64 " ms\n", waited);
	fs_soldout_listener_stats(s, &subs, &silences);
	check(subs == 3 && silences == 2, "three subscriptions, two silences");
	doubt_heard(&redis, s, dir);
out:
	fs_soldout_free(s);
	test_relay_stop(&relay);
	test_redis_finish(&redis);
	rmdir(dir);
}

#define RECHECK_MS 300 /* FLASHSALE_SOLDOUT_RECHECK_MS of the test */
#define ANN "01900000-0000-7000-8000-0000000000a1"
#define BOB "01900000-0000-7000-8000-0000000000b1"

/* Sale 7: item 70 (1 unit), item 71 (none); sale 8: item 80 (1 unit). Ending in an hour. */
static int
warm_sales(fs_stock *st)
{
	static const struct fs_stock_warm_item seven[] = { { 70, 1, 1 }, { 71, 0, 1 } };
	static const struct fs_stock_warm_item eight[] = { { 80, 1, 1 } };
	static const uint64_t ids7[] = { 70, 71 }, ids8[] = { 80 };
	struct fs_stock_warm w = { .window_s = 30, .ends_ms = fs_clock_now_ms() + 3600000 };
	struct fs_stock_record young[1];
	size_t nyoung;
	long holds;

	w.items = seven;
	w.nitems = 2;
	if (fs_stock_warm_begin(st, 7, ids7, 2, INT64_MAX, young, 1, &nyoung, &holds) != 0 ||
	    fs_stock_warm(st, 7, &w) != 0)
		return -1;
	w.items = eight;
	w.nitems = 1;
	if (fs_stock_warm_begin(st, 8, ids8, 1, INT64_MAX, young, 1, &nyoung, &holds) != 0 ||
	    fs_stock_warm(st, 8, &w) != 0)
		return -1;
	return 0;
}

/* A purchase as the handler makes it: asks Redis unless known, marks a sold-out answer. */
static enum fs_stock_result
purchase(fs_soldout *s, fs_stock *st, uint64_t sale, uint64_t item, const char *user,
    const char *order)
{
	struct fs_stock_hold h;
	unsigned gen;
	enum fs_stock_result rc;

	if (fs_soldout_known(s, item))
		return FS_STOCK_SOLD_OUT;
	gen = fs_soldout_generation(s, item);
	rc = fs_stock_reserve(st, sale, item, user, order, fs_clock_now_ms(), &h);
	if (rc == FS_STOCK_SOLD_OUT || (rc == FS_STOCK_RESERVED && h.left == 0)) {
		fs_soldout_mark(s, sale, item, fs_clock_now_ms() + 3600000, gen);
		if (!settled(s))
			return FS_STOCK_ERROR;
	}
	return rc;
}

/* One command to the server itself, not through the stock: its reply (free it), or NULL. */
static redisReply *
direct(struct test_redis *r, const char *command)
{
	redisContext *c = redisConnectUnix(r->sock);
	redisReply *reply = c != NULL && c->err == 0 ? redisCommand(c, command) : NULL;

	if (c != NULL)
		redisFree(c);
	return reply;
}

/* MGET calls Redis has served so far (INFO commandstats), or -1. */
static long
mget_calls(struct test_redis *r)
{
	redisReply *reply = direct(r, "INFO commandstats");
	const char *at;
	long n = -1;

	if (reply != NULL && reply->type == REDIS_REPLY_STRING)
		n = (at = strstr(reply->str, "cmdstat_mget:calls=")) != NULL ?
		    strtol(at + strlen("cmdstat_mget:calls="), NULL, 10) : 0;
	if (reply != NULL)
		freeReplyObject(reply);
	return n;
}

/* A Redis with sales 7 and 8 warmed, a stock on it and a table with its listener and recheck. */
struct warmed {
	char dir[64];
	struct test_redis redis;
	struct fs_cfg cfg;
	fs_stock *st;
	fs_soldout *s;
};

/* Starts w (its marker directory named after what); 0, or -1 after a failed check. */
static int
warmed_start(struct warmed *w, const char *what)
{
	const char *top = getenv("top_srcdir");
	char err[256];

	memset(w, 0, sizeof(*w));
	snprintf(w->dir, sizeof(w->dir), "/tmp/fs-soldout-%s-XXXXXX", what);
	if (top == NULL || test_redis_start(&w->redis) != 0 || mkdtemp(w->dir) == NULL) {
		check(0, "top_srcdir, a redis-server and a marker directory");
		return -1;
	}
	if (setenv("FLASHSALE_SOLDOUT_RECHECK_MS", "300", 1) != 0 ||
	    test_redis_cfg(&w->redis, &w->cfg) != 0 ||
	    (w->st = fs_stock_new(&w->cfg, top, err, sizeof(err))) == NULL || warm_sales(w->st) != 0 ||
	    (w->s = fs_soldout_new(w->dir, &w->cfg, err, sizeof(err))) == NULL) {
		check(0, "two sales warmed, the sold-out table with its listener and recheck");
		return -1;
	}
	check(until_subscribed(w->s, 1, 5000) >= 0, "the listener subscribes");
	check(purchase(w->s, w->st, 7, 70, "ann", ANN) == FS_STOCK_RESERVED &&
		fs_soldout_known(w->s, 70) && marker_exists(w->dir, 70),
	    "ann takes item 70's last unit: it is remembered sold out, marker written");
	return 0;
}

/* Stops what warmed_start started, markers and directory included. */
static void
warmed_finish(struct warmed *w)
{
	unsetenv("FLASHSALE_SOLDOUT_RECHECK_MS");
	fs_soldout_free(w->s);
	fs_stock_free(w->st);
	test_redis_finish(&w->redis);
	for (uint64_t i = 70; i <= 80; i++) {
		char path[600];

		snprintf(path, sizeof(path), "%s/%" PRIu64, w->dir, i);
		unlink(path);
	}
	rmdir(w->dir);
}

/*
 * Item 70 sells its last unit and is remembered sold out; the unit then
 * comes back in Redis with no restock message at all (put back directly,
 * nothing published) while the listener's connection stays healthy, as
 * when the cluster bus drops the message. Within RECHECK_MS plus a round
 * trip its flag and marker are gone and the next purchase takes the unit.
 * Item 71 (still none left) and item 80 (its sale closed early, a unit
 * left) stay remembered through several passes: no flapping, so no
 * shoppers let through to Redis. The recheck costs one MGET per sale and
 * pass, never one per shopper.
 */
static void
lost_restock(void)
{
	struct timespec step = { 0, 10 * 1000000L };
	struct warmed w;
	struct test_redis *redis = &w.redis;
	const char *dir = w.dir;
	fs_soldout *s;
	fs_stock *st;
	redisReply *reply;
	int64_t t0, waited;
	long calls;

	if (warmed_start(&w, "lost") != 0)
		goto out;
	s = w.s;
	st = w.st;
	check(purchase(s, st, 7, 71, "bob", BOB) == FS_STOCK_SOLD_OUT && fs_soldout_known(s, 71),
	    "item 71 has none: remembered sold out");
	check(fs_stock_set_end(st, 8, fs_clock_now_ms() - 1) == 1 &&
		purchase(s, st, 8, 80, "bob", BOB) == FS_STOCK_SOLD_OUT && fs_soldout_known(s, 80),
	    "sale 8 closed early: item 80 answers sold out with a unit left, remembered");

	/* The unit comes back, and no message says so. */
	reply = direct(redis, "INCR fs:{7}:stock:70");
	check(reply != NULL && reply->type == REDIS_REPLY_INTEGER && reply->integer == 1,
	    "item 70's unit is back in Redis, unannounced");
	if (reply != NULL)
		freeReplyObject(reply);
	t0 = fs_clock_mono_ms();
	while ((fs_soldout_known(s, 70) || marker_exists(dir, 70)) && fs_clock_mono_ms() - t0 < 5000)
		nanosleep(&step, NULL);
	waited = fs_clock_mono_ms() - t0;
	printf("# item 70 forgotten %" PRId64 " ms after its unit came back\n", waited);
	check(!fs_soldout_known(s, 70) && !marker_exists(dir, 70) && waited <= RECHECK_MS + 500,
	    "within the recheck period (+ a round trip, scheduling): item 70's flag and marker are gone");
	check(purchase(s, st, 7, 70, "bob", BOB) == FS_STOCK_RESERVED,
	    "the next purchase reaches Redis and takes the unit");

	/* Several passes: what is sold out stays so, at one MGET per sale and pass. */
	calls = mget_calls(redis);
	t0 = fs_clock_mono_ms();
	while (fs_clock_mono_ms() - t0 < 5 * RECHECK_MS)
		nanosleep(&step, NULL);
	calls = mget_calls(redis) - calls;
	printf("# %ld MGET in %d passes\n", calls, 5);
	check(fs_soldout_known(s, 71) && marker_exists(dir, 71) && fs_soldout_known(s, 70),
	    "items with no unit left stay remembered sold out, markers kept");
	check(fs_soldout_known(s, 80) && marker_exists(dir, 80),
	    "an item of a sale closed early stays remembered, though Redis has a unit");
	check(calls >= 4 && calls <= 6, "one MGET per pass for sale 7 (none for the closed sale 8)");
out:
	warmed_finish(&w);
}

/* Waits (bounded by ms) until item's doubt here is want; the time it took, or -1. */
static int64_t
until_doubt(fs_soldout *s, uint64_t item, int want, int64_t ms)
{
	struct timespec step = { 0, 10 * 1000000L };
	int64_t t0 = fs_clock_mono_ms();

	while (fs_soldout_in_doubt(s, item) != want && fs_clock_mono_ms() - t0 < ms)
		nanosleep(&step, NULL);
	return fs_soldout_in_doubt(s, item) == want ? fs_clock_mono_ms() - t0 : -1;
}

/* How many entries fs:{7}:doubt has, or -1. */
static long long
doubts_recorded(struct test_redis *r)
{
	redisReply *reply = direct(r, "HLEN fs:{7}:doubt");
	long long n = reply != NULL && reply->type == REDIS_REPLY_INTEGER ? reply->integer : -1;

	if (reply != NULL)
		freeReplyObject(reply);
	return n;
}

/*
 * A process started after ann's doubt was told (or whose listener lost the
 * message) never remembered item 70: its first sold-out answer from Redis
 * (bob's) must not mark the item before it read the sale's doubts, or its
 * flag and marker would tell ann, the holder in doubt, "sold out" until
 * its next recheck. Guards the mark made at once on a table with a recheck.
 */
static void
late_process(struct warmed *w)
{
	char dir[64] = "/tmp/fs-soldout-late-XXXXXX", err[256];
	fs_soldout *late = NULL;

	if (mkdtemp(dir) == NULL || (late = fs_soldout_new(dir, &w->cfg, err, sizeof(err))) == NULL) {
		check(0, "a second sold-out table, as of a process started later");
		goto out;
	}
	check(until_subscribed(late, 1, 5000) >= 0 && !fs_soldout_in_doubt(late, 70) &&
		!fs_soldout_known(late, 70),
	    "a process started later (subscribed) knows nothing of item 70");
	check(purchase(late, w->st, 7, 70, "bob", BOB) == FS_STOCK_SOLD_OUT &&
		!fs_soldout_known(late, 70) && !marker_exists(dir, 70) && fs_soldout_in_doubt(late, 70),
	    "its first sold-out answer for item 70 marks nothing: the sale's doubts read first, "
	    "item 70 is in doubt there");
	check(purchase(late, w->st, 7, 71, "bob", BOB) == FS_STOCK_SOLD_OUT &&
		fs_soldout_known(late, 71) && marker_exists(dir, 71),
	    "item 71 of the same sale, with no hold in doubt, is marked sold out");
out:
	fs_soldout_free(late);
	if (late != NULL) {
		char path[600];

		snprintf(path, sizeof(path), "%s/71", dir);
		unlink(path);
		rmdir(dir);
	}
}

/*
 * A doubt recorded in Redis and never told (its message lost, or this
 * process started after it): ann holds item 70's last unit, which is
 * remembered sold out here; her hold's doubt is recorded with no message.
 * Within the recheck period (+ slack) the item is in doubt here, its flag
 * and marker gone, and a sold-out answer sets neither. A doubt told with
 * a short end (as one that outlived FLASHSALE_HOLD_MAX_AGE) lasts while
 * the hold is unsettled: still in doubt after several lease periods. Once
 * the consumer recorded the order (confirm), the doubt ends within the
 * lease (+ a period) and its entry leaves Redis; then the item is marked
 * again. Guards the lost doubt message and the doubt that ended before
 * its hold was settled (the consumer lagging past HOLD_MAX_AGE).
 */
static void
recorded_doubt(void)
{
	const char *ann[1] = { ANN };
	struct timespec step = { 0, 10 * 1000000L };
	struct warmed w;
	struct test_redis *redis = &w.redis;
	const char *dir = w.dir;
	fs_soldout *s;
	fs_stock *st;
	int64_t t0, took;

	if (warmed_start(&w, "doubt") != 0)
		goto out;
	s = w.s;
	st = w.st;
	check(fs_stock_doubt_record(st, 7, 70, ANN) == 0 && doubts_recorded(redis) == 1,
	    "her hold's doubt is recorded in Redis, and told nobody");
	took = until_doubt(s, 70, 1, 5000);
	printf("# item 70 in doubt %" PRId64 " ms after its doubt was recorded\n", took);
	check(took >= 0 && took <= RECHECK_MS + 500 && !fs_soldout_known(s, 70) &&
		!marker_exists(dir, 70),
	    "within the recheck period (+ slack) item 70 is in doubt here: flag and marker gone");
	check(purchase(s, st, 7, 70, "bob", BOB) == FS_STOCK_SOLD_OUT && !fs_soldout_known(s, 70) &&
		!marker_exists(dir, 70),
	    "bob is told sold out by Redis; in doubt, it sets neither flag nor marker");
	late_process(&w);
	fs_soldout_doubt(s, 7, 70, fs_clock_now_ms() + 100);
	t0 = fs_clock_mono_ms();
	while (fs_clock_mono_ms() - t0 < (FS_SOLDOUT_DOUBT_LEASE + 2) * RECHECK_MS) {
		nanosleep(&step, NULL);
		if (!fs_soldout_in_doubt(s, 70))
			break;
	}
	check(fs_soldout_in_doubt(s, 70) && doubts_recorded(redis) == 1,
	    "a doubt told with a short end lasts while the hold is unsettled (lease periods + 2)");

	/* The consumer records ann's order: the doubt ends, its entry goes. */
	check(fs_stock_confirm(st, 7, ann, 1) == 0, "ann's order is recorded (confirmed)");
	took = until_doubt(s, 70, 0, (FS_SOLDOUT_DOUBT_LEASE + 3) * RECHECK_MS);
	printf("# item 70's doubt over %" PRId64 " ms after its order was recorded\n", took);
	check(took >= 0 && took <= (FS_SOLDOUT_DOUBT_LEASE + 1) * RECHECK_MS + 500,
	    "its doubt ends within the lease (+ a period, slack) once the hold is settled");
	check(doubts_recorded(redis) == 0, "the recheck removed the settled hold's entry");
	check(purchase(s, st, 7, 70, "bob", BOB) == FS_STOCK_SOLD_OUT && fs_soldout_known(s, 70) &&
		marker_exists(dir, 70),
	    "then a sold-out answer marks item 70 again");
out:
	warmed_finish(&w);
}

int
main(void)
{
	many_items();
	restocks();
	doubts();
	forget_races_mark();
	listener();
	lost_restock();
	recorded_doubt();
	return failures == 0 ? 0 : 1;
}

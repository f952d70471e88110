/*
 * Unit test of the waiting room's pacer (lib/queue_pacer.c) against a real
 * PostgreSQL and Redis (tests/unit/sale_fixture.h): the journal copied
 * exactly, places admitted in order and paced to the units left x the
 * multiple minus the passes outstanding, the capacity, the soldout flag and
 * the resumption when a unit returns, two pacers never both admitting, a
 * place not yet copied to PostgreSQL left for the next step, and a pacer
 * that died between PostgreSQL and Redis resumed without a place lost or
 * counted twice. Joins are made as lua/queue_join.lua makes them
 * (ZADD NX to the places, the entry appended to the journal); the clock is
 * the test's (each step is given its instant).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "queue.h"
#include "expect.h"
#include "sale_fixture.h"

#define JOINERS 40

static struct fixture f;
static int64_t t0;

/* A sale of qty units opened 10 s ago with a queue (capacity cap per second); 0 or -1. */
static int
queue_sale(long qty, int cap, uint64_t *sale, uint64_t *item)
{
	char sale_s[24], q[256];
	const char *p[2] = { sale_s, q };

	if (fixture_sale(&f, -10, 3600, 600, qty, sale, item) != 0)
		return -1;
	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, *sale);
	snprintf(q, sizeof(q), "{\"preQueueSeconds\":900,\"passSeconds\":120,\"powBits\":0,"
	    "\"admitMultiple\":1.5,\"capacityPerSecond\":%d}", cap);
	return fs_pg_run(f.pg, "UPDATE sales SET queue = $2::jsonb, "
	    "queue_seed = decode(repeat('ab', 32), 'hex') WHERE id = $1", 2, p);
}

static long
redis_long(const char *fmt, uint64_t sale, const char *arg)
{
	redisReply *r = test_redis_cmd(&f.redis_srv, fmt, sale, arg);
	long v = -2;

	if (r != NULL && r->type == REDIS_REPLY_INTEGER)
		v = (long)r->integer;
	else if (r != NULL && r->type == REDIS_REPLY_STRING)
		v = strtol(r->str, NULL, 10);
	else if (r != NULL && r->type == REDIS_REPLY_NIL)
		v = -1;
	if (r != NULL)
		freeReplyObject(r);
	return v;
}

/* A field of the sale's queue state; -1 absent. */
static long
state(uint64_t sale, const char *field)
{
	return redis_long("HGET fs:{%" PRIu64 "}:q:state %s", sale, field);
}

static long
sql_long(const char *sql, uint64_t sale)
{
	char id[24];

	snprintf(id, sizeof(id), "%" PRIu64, sale);
	return fixture_long(&f, sql, id);
}

/* The place of a join, without its journal entry yet. */
static void
join_place(uint64_t sale, const char *sub, long long score)
{
	redisReply *r = test_redis_cmd(&f.redis_srv, "ZADD fs:{%" PRIu64 "}:q:places NX %lld %s", sale,
	    score, sub);

	if (r != NULL)
		freeReplyObject(r);
}

/* The journal entry of a join. */
static void
join_entry(uint64_t sale, const char *sub, long long score, int64_t ms)
{
	redisReply *r;
	char entry[160];

	snprintf(entry, sizeof(entry), "%s %lld %lld", sub, score, (long long)ms);
	if ((r = test_redis_cmd(&f.redis_srv, "RPUSH fs:{%" PRIu64 "}:q:journal %s", sale, entry)) !=
	    NULL)
		freeReplyObject(r);
}

/* A join as queue_join.lua makes it: the place, and the journal entry. */
static void
join(uint64_t sale, const char *sub, long long score, int64_t ms)
{
	join_place(sale, sub, score);
	join_entry(sale, sub, score, ms);
}

/* A pass for sub expiring at ms. */
static void
pass(uint64_t sale, const char *sub, int64_t ms)
{
	redisReply *r = test_redis_cmd(&f.redis_srv, "ZADD fs:{%" PRIu64 "}:q:passes %lld %s", sale,
	    (long long)ms, sub);

	if (r != NULL)
		freeReplyObject(r);
}

/* The n-th place's sub in line (n >= 1) into out. */
static void
nth_sub(uint64_t sale, long n, char out[80])
{
	redisReply *r = test_redis_cmd(&f.redis_srv, "ZRANGE fs:{%" PRIu64 "}:q:places %ld %ld", sale,
	    n - 1, n - 1);

	out[0] = '\0';
	if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 1)
		snprintf(out, 80, "%s", r->element[0]->str);
	if (r != NULL)
		freeReplyObject(r);
}

/* The n-th place's score in line, as PostgreSQL orders queue_places. */
static long long
nth_score_pg(uint64_t sale, long n)
{
	char id[24], n_s[24];
	const char *p[2] = { id, n_s };
	PGresult *r;
	long long v = -1;

	snprintf(id, sizeof(id), "%" PRIu64, sale);
	snprintf(n_s, sizeof(n_s), "%ld", n - 1);
	r = fs_pg_exec(f.pg, "SELECT score FROM queue_places WHERE sale_id = $1 "
	    "ORDER BY score, user_id COLLATE \"C\" OFFSET $2 LIMIT 1", 2, p);
	if (r != NULL && PQntuples(r) == 1)
		v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
	PQclear(r);
	return v;
}

/* JOINERS drawn places (random scores) and two late ones, as subs "u<i>". */
static void
fill(uint64_t sale)
{
	char sub[32];

	for (int i = 0; i < JOINERS; i++) {
		snprintf(sub, sizeof(sub), "u%d", i);
		join(sale, sub, (long long)(randombytes_random() % 1000000), t0 - 60000 + i);
	}
	join(sale, "late1", FS_QUEUE_LATE_BASE + 1, t0 - 5000);
	join(sale, "late2", FS_QUEUE_LATE_BASE + 2, t0 - 4000);
}

/* Every place of Redis has its row in queue_places with the same score. */
static int
places_match(uint64_t sale)
{
	char sub[32], sql[256];
	int same = 0;

	for (int i = 0; i < JOINERS; i++) {
		snprintf(sub, sizeof(sub), "u%d", i);
		snprintf(sql, sizeof(sql), "SELECT score FROM queue_places WHERE sale_id = $1 AND "
		    "user_id = '%s' AND drawn", sub);
		same += sql_long(sql, sale) == redis_long("ZSCORE fs:{%" PRIu64 "}:q:places %s", sale,
		    sub);
	}
	return same == JOINERS;
}

static void
test_journal(fs_queue_pacer *p, uint64_t sale)
{
	char sql[256];

	join(sale, "q\"uo\\te", 77, t0 - 70000);
	check(fs_queue_pacer_step(p, t0) >= 1, "journal: the pacer leads its sale");
	check(sql_long("SELECT count(*) FROM queue_places WHERE sale_id = $1", sale) == JOINERS + 3 &&
		redis_long("LLEN fs:{%" PRIu64 "}:q:journal%s", sale, "") == 0,
	    "journal: every entry copied to queue_places and dropped from Redis");
	check(places_match(sale), "journal: each drawn place with its score");
	check(sql_long("SELECT count(*) FROM queue_places WHERE sale_id = $1 AND NOT drawn AND "
		       "score IN (4503599627370497, 4503599627370498)", sale) == 2,
	    "journal: the late places, not drawn, with their scores");
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM queue_places WHERE sale_id = $1 AND "
	    "user_id = 'q\"uo\\te' AND score = 77 AND drawn AND "
	    "(extract(epoch FROM joined_at) * 1000)::bigint = %lld", (long long)(t0 - 70000));
	check(sql_long(sql, sale) == 1,
	    "journal: an id with a quote and a backslash, and its time, kept exactly");
}

/* The admission state as "admitted through soldout" and PostgreSQL's steps, checked together. */
static int
admitted_is(uint64_t sale, long admitted, long steps)
{
	long long through = admitted > 0 ? nth_score_pg(sale, admitted) : -1;
	char sql[200];

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM queue_admissions WHERE sale_id = $1 AND "
	    "step = %ld AND admitted = %ld AND through = %lld", steps, admitted, through);
	return state(sale, "admitted") == admitted && state(sale, "through") == through &&
	    sql_long("SELECT count(*) FROM queue_admissions WHERE sale_id = $1", sale) == steps &&
	    (steps == 0 || sql_long(sql, sale) == 1);
}

/* The first n places in line get a pass expiring at ms. */
static void
passes(uint64_t sale, long from, long to, int64_t ms)
{
	char sub[80];

	for (long i = from; i <= to; i++) {
		nth_sub(sale, i, sub);
		pass(sale, sub, ms);
	}
}

static void
test_paced(fs_queue_pacer *p, uint64_t sale, uint64_t item)
{
	struct fs_order o[6];
	char sub[80], who[16];
	int64_t t1 = t0 + 121000, t2 = t1 + 121000;
	int bought = 0;

	check(admitted_is(sale, 10, 1) && state(sale, "soldout") == 0 &&
		state(sale, "multiple") == 1000,
	    "paced: 10 units, no turn ended yet: multiple 1, the first 10 places, recorded as step 1");
	fs_queue_pacer_step(p, t0 + 100);
	check(admitted_is(sale, 10, 1),
	    "paced: places just admitted that have not asked for a pass yet count: nobody more");
	passes(sale, 1, 10, t0 + 120000);
	fs_queue_pacer_step(p, t0 + 250);
	check(admitted_is(sale, 10, 1), "paced: 10 passes outstanding: nobody more");
	for (long i = 1; i <= 5; i++) {
		nth_sub(sale, i, sub);
		bought += fixture_buy(&f, sale, item, sub, 0, 1, &o[0]) == 0;
	}
	fs_queue_pacer_step(p, t0 + 500);
	check(bought == 5 && admitted_is(sale, 10, 1),
	    "paced: 5 bought: 5 left x 1 = 5 passes outstanding: nobody more");
	fs_queue_pacer_step(p, t1);
	check(admitted_is(sale, 15, 2) && state(sale, "multiple") == 1000,
	    "paced: 5 passes lapsed (10 turns ended, fewer than 20: multiple 1): 5 more, in order");
	for (int i = 0; i < 5; i++) {
		snprintf(who, sizeof(who), "buyer%d", i);
		bought += fixture_buy(&f, sale, item, who, 0, 1, &o[i]) == 0;
	}
	fs_queue_pacer_step(p, t1 + 250);
	check(bought == 10 && admitted_is(sale, 15, 2) && state(sale, "soldout") == 1,
	    "soldout: no unit left: the flag set, nobody admitted");
	check(fs_stock_release(f.stock, sale, item, o[0].id) == 1, "soldout: a unit comes back");
	fs_queue_pacer_step(p, t1 + 500);
	check(admitted_is(sale, 15, 2) && state(sale, "soldout") == 0,
	    "soldout: cleared; the 5 admitted, not asking yet, are more than 1 unit x 1");
	fs_queue_pacer_step(p, t2);
	check(admitted_is(sale, 16, 3) && state(sale, "soldout") == 0,
	    "soldout: once their time to ask passed, admission resumes at the next place in line");
}

/* The effective multiple, as a function: 1 until 20 turns ended, then resolved / used, capped. */
static void
test_multiple_rule(void)
{
	check(fs_queue_pacer_multiple(1500, 0, 0) == 1000 &&
		fs_queue_pacer_multiple(1500, 5, 19) == 1000,
	    "multiple: 1 until 20 turns ended, whatever they were");
	check(fs_queue_pacer_multiple(1500, 20, 20) == 1000 &&
		fs_queue_pacer_multiple(1500, 24, 30) == 1250,
	    "multiple: every pass used: 1; 24 used of 30 ended: 1.25");
	check(fs_queue_pacer_multiple(1500, 12, 30) == 1500 &&
		fs_queue_pacer_multiple(1500, 0, 30) == 1500 &&
		fs_queue_pacer_multiple(1000, 1, 30) == 1000,
	    "multiple: capped at admitMultiple (none used: the cap; admitMultiple 1: always 1)");
}

/* n places "w<i>" in line, drawn before the opening, in order of i. */
static void
fill_n(uint64_t sale, int n)
{
	char sub[32];

	for (int i = 0; i < n; i++) {
		snprintf(sub, sizeof(sub), "w%03d", i);
		join(sale, sub, 1000 + i, t0 - 60000 + i);
	}
}

/* Places from..to in line (1-based) buy a unit each; how many bought. */
static int
buy_range(uint64_t sale, uint64_t item, long from, long to)
{
	struct fs_order o;
	char sub[80];
	int bought = 0;

	for (long i = from; i <= to; i++) {
		nth_sub(sale, i, sub);
		bought += fixture_buy(&f, sale, item, sub, 0, 1, &o) == 0;
	}
	return bought;
}

/*
 * The places for the units no pass covers, as a function (issue 35): with a
 * tenth walking away the rehearsal's replacements, ceil(multiple x units),
 * brought one shopper short about half the time, and the last unit waited
 * a window and another round (1.64x the time with nobody walking away).
 */
static void
test_places_rule(void)
{
	check(fs_queue_pacer_places(1000, 1500, 100) == 100 &&
		fs_queue_pacer_places(1000, 1500, 1) == 1,
	    "places: multiple 1 (everyone buys): exactly the units");
	check(fs_queue_pacer_places(1250, 1500, 100) == 134 &&
		fs_queue_pacer_places(1111, 1500, 50) == 60 &&
		fs_queue_pacer_places(1250, 1500, 1000) == 1279,
	    "places: a fifth walking away, 100 units: 134 (95 % odds), not 125 (55 %); a tenth, 50: "
	    "60, not 56; 1000 units: 1279");
	check(fs_queue_pacer_places(1250, 1500, 1) == 2 && fs_queue_pacer_places(1250, 1500, 3) == 5 &&
		fs_queue_pacer_places(1250, 1250, 100) == 125 &&
		fs_queue_pacer_places(1500, 1500, 10) == 15,
	    "places: never over admitMultiple x the units (the cap, queue verify's bound)");
	check(fs_queue_pacer_places(1250, 1500, 0) == 0 && fs_queue_pacer_places(1250, 1500, -4) == -4,
	    "places: no unit uncovered: none (more passes than units: less than none)");
}

/* Every admitted shopper buys: never more places admitted than units left + units used. */
static void
test_all_used(fs_queue_pacer *p, uint64_t sale, uint64_t item, int64_t t)
{
	int bought;

	fill_n(sale, 80);
	fs_queue_pacer_step(p, t);
	check(admitted_is(sale, 30, 1) && state(sale, "multiple") == 1000,
	    "all used: 30 units: 30 admitted (admitMultiple 1.5 would admit 45)");
	passes(sale, 1, 30, t + 120000);
	bought = buy_range(sale, item, 1, 20);
	fs_queue_pacer_step(p, t + 250);
	check(bought == 20 && admitted_is(sale, 30, 1) && state(sale, "multiple") == 1000,
	    "all used: 20 of 20 ended used: multiple 1; 10 left, 10 passes out: nobody more");
	bought += buy_range(sale, item, 21, 30);
	fs_queue_pacer_step(p, t + 500);
	check(bought == 30 && admitted_is(sale, 30, 1) && state(sale, "soldout") == 1,
	    "all used: every unit sold to the 30 admitted, nobody else admitted");
}

/* Passes lapse: the multiple rises with the turns lost, capped at admitMultiple. */
static void
test_lapses(fs_queue_pacer *p, uint64_t sale, uint64_t item, uint64_t sale2, uint64_t item2,
    int64_t t)
{
	int bought;

	fill_n(sale, 80);
	fill_n(sale2, 80);
	fs_queue_pacer_step(p, t);
	check(admitted_is(sale, 30, 1) && admitted_is(sale2, 30, 1), "lapses: 30 units: 30 admitted");
	passes(sale, 1, 30, t + 120000);
	passes(sale2, 1, 30, t + 120000);
	bought = buy_range(sale, item, 1, 24) + buy_range(sale2, item2, 1, 12);
	fs_queue_pacer_step(p, t + 121000);
	check(bought == 36 && admitted_is(sale, 39, 2) && state(sale, "multiple") == 1250,
	    "lapses: 24 used, 6 lapsed: multiple 30/24 = 1.25: 6 left, 9 more (the odds that 6 of "
	    "8 come are 80 %, of 9 91 %; at most 6 x admitMultiple 1.5)");
	check(admitted_is(sale2, 57, 2) && state(sale2, "multiple") == 1500,
	    "lapses: 12 used, 18 lapsed: 2.5 capped at admitMultiple 1.5: 18 left x 1.5 = 27 more");
}

/*
 * People who walk away (issue 35): 2 of the 10 places admitted never ask
 * for their pass. A live page asks within FS_QUEUE_PACER_EXPECT_MS (5 s):
 * past that the 2 are presumed gone and the next places admitted in their
 * stead, not after claimSeconds (15 s: every generation of walk-aways cost
 * a claim window, and with a fifth of the people walking away the last unit
 * sold 2-5x later than with none) nor passSeconds (120 s); and the places
 * admitted in their stead count as outstanding though the earlier places'
 * passes are live (counted as "admitted in the window less every pass
 * live", they looked covered, and every step admitted the budget again).
 */
static void
test_walkaway(fs_queue_pacer *p, uint64_t sale, uint64_t item, int64_t t)
{
	char sub[80];
	int bought;

	fill_n(sale, 80);
	fs_queue_pacer_step(p, t);
	check(admitted_is(sale, 10, 1), "walk-away: 10 units: 10 admitted");
	check(sql_long("SELECT count(*) FROM queue_admissions WHERE sale_id = $1 AND "
		       "abs(extract(epoch FROM moved_at - now())) < 60", sale) == 1,
	    "one clock: the step dated by Redis' clock of its move (moved_at), for queue verify");
	passes(sale, 1, 8, t + 120000);
	fs_queue_pacer_step(p, t + 250);
	check(admitted_is(sale, 10, 1), "walk-away: 8 passes out, 2 places yet to ask: nobody more");
	fs_queue_pacer_step(p, t + 4000);
	check(admitted_is(sale, 10, 1), "walk-away: within the 5 s a live page takes to ask: nobody more");
	fs_queue_pacer_step(p, t + 5500);
	check(admitted_is(sale, 12, 2),
	    "walk-away: 5 s on, the 2 who never asked are presumed gone: the next 2 admitted at once");
	fs_queue_pacer_step(p, t + 5750);
	check(admitted_is(sale, 12, 2),
	    "walk-away: the 2 just admitted count though the 8 earlier passes are live");
	nth_sub(sale, 11, sub);
	pass(sale, sub, t + 125500);
	fs_queue_pacer_step(p, t + 6000);
	check(admitted_is(sale, 12, 2), "walk-away: 9 passes out, 1 place yet to ask: nobody more");
	bought = buy_range(sale, item, 1, 8);
	fs_queue_pacer_step(p, t + 6500);
	check(bought == 8 && admitted_is(sale, 12, 2) && state(sale, "multiple") == 1000,
	    "walk-away: 8 bought, 2 left, 1 pass and 1 place out: nobody more, never over the units");
	fs_queue_pacer_step(p, t + 11000);
	check(admitted_is(sale, 13, 3), "walk-away: the 12th silent 5 s too: the 13th in its stead");
	nth_sub(sale, 9, sub);
	pass(sale, sub, t + 132000);
	fs_queue_pacer_step(p, t + 12000);
	check(admitted_is(sale, 13, 3),
	    "walk-away: a slow page (the 9th) asks within claimSeconds after all: counted again, "
	    "nobody more");
}

/*
 * The n-th place asked for its pass ms after its admission (fs:{S}:q:claims,
 * as lua/queue_pass.lua records it).
 */
static void
claimed(uint64_t sale, long n, int64_t ms)
{
	char sub[80];
	redisReply *r;

	nth_sub(sale, n, sub);
	if ((r = test_redis_cmd(&f.redis_srv, "ZADD fs:{%" PRIu64 "}:q:claims %lld %s", sale,
		 (long long)ms, sub)) != NULL)
		freeReplyObject(r);
}

/* The window step n of the sale recorded (queue_admissions.expect_ms); -1 none. */
static long
step_window(uint64_t sale, long n)
{
	char sql[160];

	snprintf(sql, sizeof(sql), "SELECT coalesce(expect_ms, -1) FROM queue_admissions WHERE "
	    "sale_id = $1 AND step = %ld", n);
	return sql_long(sql, sale);
}

/* The window after which a silent place is presumed gone, as a function. */
static void
test_expect_rule(void)
{
	check(fs_queue_pacer_expect(0, -1, 15) == 5000 &&
		fs_queue_pacer_expect(19, 300, 15) == 5000,
	    "window: 5 s until 20 places have asked, whatever they took");
	check(fs_queue_pacer_expect(20, 1800, 15) == 3600 &&
		fs_queue_pacer_expect(500, 2200, 15) == 4400,
	    "window: twice the 90th percentile of the delays of the places that asked");
	check(fs_queue_pacer_expect(20, 300, 15) == 2000 &&
		fs_queue_pacer_expect(20, 2600, 15) == 5200 &&
		fs_queue_pacer_expect(20, 6000, 15) == 12000,
	    "window: never under 2 s, and over 5 s when the pages that asked took longer (a slow system)");
	check(fs_queue_pacer_expect(20, 9000, 15) == 15000 &&
		fs_queue_pacer_expect(20, 90000, 120) == 120000 &&
		fs_queue_pacer_expect(20, INT64_MAX, 15) == 15000,
	    "window: never over claimSeconds");
}

/*
 * The window learned (issue 35): with the presumed-gone window fixed at
 * 5 s, every generation of walk-aways cost 5 s, where the rehearsal's pages
 * asked within about 1.5 s of their admission (2.4 of the 5 s the rehearsal
 * took longer with a fifth walking away than with none: the replacements
 * came 5 s after the first admission). Here 25 of 30 places ask within
 * 0.8 s: 2 x 0.8 s, at least 2 s, and the 5 silent ones are presumed gone
 * at 2 s, the step recording the window it used for `queue verify`.
 */
static void
test_learned_window(fs_queue_pacer *p, uint64_t sale, int64_t t)
{
	fill_n(sale, 80);
	fs_queue_pacer_step(p, t);
	check(admitted_is(sale, 30, 1) && step_window(sale, 1) == 5000,
	    "learned window: 30 admitted, nobody has asked yet: the window is 5 s, recorded");
	passes(sale, 1, 25, t + 120000);
	for (long i = 1; i <= 25; i++)
		claimed(sale, i, 300 + 20 * i);
	fs_queue_pacer_step(p, t + 1900);
	check(admitted_is(sale, 30, 1),
	    "learned window: 25 asked within 0.8 s (90th percentile 0.78 s); 1.9 s on, nobody more");
	fs_queue_pacer_step(p, t + 2100);
	check(admitted_is(sale, 35, 2) && step_window(sale, 2) == 2000,
	    "learned window: 2.1 s on, the 5 silent places presumed gone, 5 admitted in their stead, "
	    "the step recording its 2 s window");
	fs_queue_pacer_step(p, t + 2350);
	check(admitted_is(sale, 35, 2), "learned window: the 5 just admitted count: nobody more");
}

/* A page asked for sub's pass at ms (fs:{S}:q:seen, as lua/queue_pass.lua dates it). */
static void
seen(uint64_t sale, const char *sub, int64_t ms)
{
	redisReply *r = test_redis_cmd(&f.redis_srv, "ZADD fs:{%" PRIu64 "}:q:seen %lld %s", sale,
	    (long long)ms, sub);

	if (r != NULL)
		freeReplyObject(r);
}

/*
 * The several-items case (issue 35): a shopper whose item sold out and who
 * leaves with an unused pass must not hold a place of the line for
 * passSeconds (120 s). A page holding an unused pass asks for it again every
 * 5 s; a pass whose page has been quiet for 15 s counts as given up and
 * the next place is admitted in its stead.
 */
static void
test_idle_pass(fs_queue_pacer *p, uint64_t sale, uint64_t item, int64_t t)
{
	char sub[80];
	int bought;

	fill_n(sale, 80);
	fs_queue_pacer_step(p, t);
	check(admitted_is(sale, 10, 1), "idle pass: 10 units: 10 admitted");
	for (long i = 1; i <= 10; i++) {
		nth_sub(sale, i, sub);
		pass(sale, sub, t + 120500);
		seen(sale, sub, t + 500);
	}
	bought = buy_range(sale, item, 1, 6);
	fs_queue_pacer_step(p, t + 1000);
	check(bought == 6 && admitted_is(sale, 10, 1), "idle pass: 6 bought, 4 passes out: nobody more");
	for (long i = 7; i <= 8; i++) {
		nth_sub(sale, i, sub);
		seen(sale, sub, t + 10500);
	}
	fs_queue_pacer_step(p, t + 15000);
	check(admitted_is(sale, 10, 1),
	    "idle pass: 2 pages quiet for 14.5 s (left after their item sold out): still counted");
	fs_queue_pacer_step(p, t + 16000);
	check(admitted_is(sale, 12, 2),
	    "idle pass: quiet for 15.5 s: their passes count as given up, the next 2 admitted "
	    "(not after passSeconds)");
	fs_queue_pacer_step(p, t + 16250);
	check(admitted_is(sale, 12, 2), "idle pass: the pages that still ask hold their places");
}

/*
 * A rush of late joins (issue 35): the journal's copy gives up after 10
 * batches of 1000 while joins keep coming, and admission waited for a copy
 * that emptied the journal: during a rush nobody was admitted. Here 12,000
 * late places are journalled at once: a step copies 10,000 of them and
 * admits from those (they are the first of the line), not nobody.
 */
static void
test_rush(fs_queue_pacer *p, uint64_t sale, int64_t t)
{
	redisReply *r = test_redis_cmd(&f.redis_srv,
	    "EVAL %s 2 fs:{%" PRIu64 "}:q:places fs:{%" PRIu64 "}:q:journal %lld %lld",
	    "for i = 1, 12000 do local s = string.format('%.0f', ARGV[1] + i) "
	    "redis.call('ZADD', KEYS[1], s, 'r' .. i) "
	    "redis.call('RPUSH', KEYS[2], 'r' .. i .. ' ' .. s .. ' ' .. ARGV[2]) end",
	    sale, sale, (long long)FS_QUEUE_LATE_BASE, (long long)t);

	if (r != NULL)
		freeReplyObject(r);
	fs_queue_pacer_step(p, t);
	check(redis_long("LLEN fs:{%" PRIu64 "}:q:journal%s", sale, "") == 2000 &&
		sql_long("SELECT count(*) FROM queue_places WHERE sale_id = $1", sale) == 10000,
	    "rush: a step copies 10 batches of 1000 and leaves the rest");
	check(admitted_is(sale, 10, 1),
	    "rush: the journal not emptied, admission goes on from the places copied");
	fs_queue_pacer_step(p, t + 250);
	check(redis_long("LLEN fs:{%" PRIu64 "}:q:journal%s", sale, "") == 0 &&
		admitted_is(sale, 10, 1), "rush: the rest copied at the next step");
}

/* queue_admit.lua run by hand with owner and expected count; the reply's text ("" none). */
static void
admit_by_hand(uint64_t sale, const char *owner, long expected, char out[64])
{
	static char script[4096];
	char path[512];
	redisReply *r;
	FILE *fp;
	size_t n;

	snprintf(path, sizeof(path), "%s/lua/queue_admit.lua", getenv("top_srcdir"));
	if (script[0] == '\0' && (fp = fopen(path, "r")) != NULL) {
		n = fread(script, 1, sizeof(script) - 1, fp);
		script[n] = '\0';
		fclose(fp);
	}
	r = test_redis_cmd(&f.redis_srv,
	    "EVAL %s 3 fs:{%" PRIu64 "}:q:state fs:{%" PRIu64 "}:q:places fs:{%" PRIu64 "}:q:lease "
	    "%s %ld 1 1 0 0 3000", script, sale, sale, sale, owner, expected);
	snprintf(out, 64, "%s", r != NULL && r->type == REDIS_REPLY_ERROR ? r->str : "");
	if (r != NULL)
		freeReplyObject(r);
}

/* Capacity 4 per second: one place per 250 ms step, never a burst after a pause. */
static void
test_capacity(fs_queue_pacer *p2, fs_queue_pacer *p1, uint64_t sale)
{
	char owner[64], out[64];

	fill(sale);
	fs_queue_pacer_step(p2, t0);
	check(admitted_is(sale, 1, 1), "capacity: 4/s: one place in the first 250 ms step");
	fs_queue_pacer_step(p2, t0 + 250);
	fs_queue_pacer_step(p2, t0 + 300);
	check(admitted_is(sale, 2, 2), "capacity: one more 250 ms later, none 50 ms after that");
	fs_queue_pacer_step(p2, t0 + 5000);
	check(admitted_is(sale, 3, 3), "capacity: after a 4.7 s pause one step's worth only");
	fs_queue_pacer_step(p1, t0 + 5250);
	check(admitted_is(sale, 3, 3), "two pacers: the one without the lease admits nobody");
	snprintf(owner, sizeof(owner), "%s", fs_queue_pacer_owner(p2));
	admit_by_hand(sale, fs_queue_pacer_owner(p1), 3, out);
	check(strncmp(out, "LEASE ", 6) == 0 && admitted_is(sale, 3, 3),
	    "two pacers: queue_admit.lua refuses an owner without the lease");
	admit_by_hand(sale, owner, 2, out);
	check(strcmp(out, "STALE 3") == 0 && admitted_is(sale, 3, 3),
	    "two pacers: and a count that moved since it was read");
}

/*
 * A pacer that recorded a step in PostgreSQL and died before Redis moved
 * (its lease lapsed): the next one makes that step as recorded, then goes on.
 */
static void
test_resume(fs_queue_pacer *p3, uint64_t sale)
{
	char sql[24];
	redisReply *r;
	long ends;

	snprintf(sql, sizeof(sql), "%" PRIu64, sale);
	fs_pg_run(f.pg, "INSERT INTO queue_admissions (sale_id, step, admitted, through) "
	    "SELECT $1, 4, 5, (SELECT score FROM queue_places WHERE sale_id = $1 "
	    "ORDER BY score, user_id COLLATE \"C\" OFFSET 4 LIMIT 1)", 1, (const char *[]){ sql });
	if ((r = test_redis_cmd(&f.redis_srv, "DEL fs:{%" PRIu64 "}:q:lease", sale)) != NULL)
		freeReplyObject(r);
	join(sale, "late3", FS_QUEUE_LATE_BASE + 3, t0);
	fs_pg_run(f.pg, "INSERT INTO queue_places VALUES ($1, 'late3', 4503599627370499, false, now())",
	    1, (const char *[]){ sql });
	fs_queue_pacer_step(p3, t0 + 6000);
	check(admitted_is(sale, 5, 4),
	    "resume: the step recorded before its pacer died made as recorded, no new step");
	check(sql_long("SELECT count(*) FROM queue_places WHERE sale_id = $1 AND user_id = 'late3'",
		  sale) == 1 && redis_long("LLEN fs:{%" PRIu64 "}:q:journal%s", sale, "") == 0,
	    "resume: a journal entry copied before a crash, not dropped, is copied once");
	fs_queue_pacer_step(p3, t0 + 6250);
	check(admitted_is(sale, 6, 5), "resume: then pacing goes on from Redis' state");
	ends = sql_long("SELECT floor(extract(epoch FROM ends_at) * 1000)::bigint FROM sales "
			"WHERE id = $1", sale);
	check(redis_long("PTTL fs:{%" PRIu64 "}:q:places%s", sale, "") == -1,
	    "end: the keys of a sale not ended do not expire");
	fs_queue_pacer_step(p3, ends + 1000);
	check(admitted_is(sale, 6, 5) && redis_long("PTTL fs:{%" PRIu64 "}:q:places%s", sale, "") >
		23 * 3600 * 1000L, "end: after it nobody admitted, the keys expire a day after it");
	/*
	 * `sale extend` by 3 days at the end (issue 35): the keys, given their
	 * expiry a day after the old end, must follow the new end, not expire
	 * while the sale runs (its places, passes and state lost).
	 */
	fs_pg_run(f.pg, "UPDATE sales SET ends_at = ends_at + interval '3 days' WHERE id = $1", 1,
	    (const char *[]){ sql });
	fs_queue_pacer_step(p3, ends + 1000 + FS_QUEUE_PACER_SCAN_MS);
	check(redis_long("PTTL fs:{%" PRIu64 "}:q:places%s", sale, "") > 3 * 86400 * 1000L &&
		redis_long("PTTL fs:{%" PRIu64 "}:q:state%s", sale, "") > 3 * 86400 * 1000L &&
		redis_long("PTTL fs:{%" PRIu64 "}:q:steps%s", sale, "") > 3 * 86400 * 1000L,
	    "extend: the keys' expiry follows the new end (places, state, steps)");
}

/*
 * A place that joined between the journal's copy and the admission step
 * (in Redis, its entry not yet in PostgreSQL) waits for the next step:
 * admitted before its copy, then lost with its master, it would leave a
 * step recorded through a place PostgreSQL never had.
 */
static void
test_copied_only(fs_queue_pacer *p, uint64_t sale, int64_t t)
{
	fill_n(sale, 3);
	fs_queue_pacer_step(p, t);
	check(admitted_is(sale, 3, 1), "copied only: the 3 places in line admitted");
	join_place(sale, "late", FS_QUEUE_LATE_BASE + 1);
	fs_queue_pacer_step(p, t + 250);
	check(admitted_is(sale, 3, 1) && state(sale, "through") == 1002,
	    "copied only: a place in Redis, not yet copied to PostgreSQL, is not admitted");
	join_entry(sale, "late", FS_QUEUE_LATE_BASE + 1, t);
	fs_queue_pacer_step(p, t + 500);
	check(admitted_is(sale, 4, 2) && state(sale, "through") == FS_QUEUE_LATE_BASE + 1,
	    "copied only: copied by the next step, then admitted");
}

/*
 * A pacer told to wait for a replica (FLASHSALE_REDIS_WAIT_MS) on a Redis
 * that has none copies nothing: PostgreSQL never holds a place that a
 * promoted replica could lack, and nothing is admitted.
 */
static void
test_journal_waits(fs_queue_pacer *p, uint64_t sale)
{
	join(sale, "w1", 7, t0);
	join(sale, "w2", 8, t0);
	fs_queue_pacer_step(p, fs_clock_now_ms());
	check(sql_long("SELECT count(*) FROM queue_places WHERE sale_id = $1", sale) == 0 &&
		redis_long("LLEN fs:{%" PRIu64 "}:q:journal%s", sale, "") == 2 &&
		state(sale, "admitted") == -1,
	    "WAIT set, no replica: the journal stays in Redis, nothing copied, nobody admitted");
}

int
main(void)
{
	fs_queue_pacer *p1 = NULL, *p2 = NULL, *p3 = NULL, *p4 = NULL, *p5 = NULL, *p6 = NULL,
		       *p7 = NULL, *p8 = NULL;
	struct fs_cfg waiting;
	uint64_t sale, item, sale2, item2, sale3, item3;
	const char *top = getenv("top_srcdir");
	char err[256];

	if (sodium_init() < 0 || fixture_start(&f, top) != 0 ||
	    setenv("FLASHSALE_PG", f.pg_srv.conninfo, 1) != 0 ||
	    fs_cfg_load(&f.cfg, FS_CFG_NEED(FS_CFG_REDIS) | FS_CFG_NEED(FS_CFG_PG)) != 0 ||
	    queue_sale(10, 2000, &sale, &item) != 0 ||
	    (p1 = fs_queue_pacer_new(&f.cfg, top, 250, err, sizeof(err))) == NULL ||
	    (p2 = fs_queue_pacer_new(&f.cfg, top, 250, err, sizeof(err))) == NULL ||
	    (p3 = fs_queue_pacer_new(&f.cfg, top, 250, err, sizeof(err))) == NULL) {
		printf("Bail out! needs top_srcdir, PostgreSQL 15 and redis-server\n");
		fixture_finish(&f);
		return 1;
	}
	t0 = fs_clock_now_ms();
	fill(sale);
	test_journal(p1, sale);
	test_paced(p1, sale, item);
	/* Made now: p1 listed the live sales before, so it leaves this one to p2. */
	if (queue_sale(1000, 4, &sale2, &item2) != 0) {
		printf("Bail out! a second sale\n");
		return 1;
	}
	test_capacity(p2, p1, sale2);
	test_resume(p3, sale2);
	test_multiple_rule();
	test_places_rule();
	if (queue_sale(30, 2000, &sale, &item) != 0 || queue_sale(30, 2000, &sale2, &item2) != 0 ||
	    queue_sale(30, 2000, &sale3, &item3) != 0 ||
	    (p4 = fs_queue_pacer_new(&f.cfg, top, 250, err, sizeof(err))) == NULL) {
		printf("Bail out! the sales of the multiple\n");
		return 1;
	}
	t0 = fs_clock_now_ms();
	test_all_used(p4, sale, item, t0);
	test_lapses(p4, sale2, item2, sale3, item3, t0 + 1000);
	if (queue_sale(10, 2000, &sale, &item) != 0 ||
	    (p6 = fs_queue_pacer_new(&f.cfg, top, 250, err, sizeof(err))) == NULL) {
		printf("Bail out! the sale of the late place\n");
		return 1;
	}
	test_copied_only(p6, sale, fs_clock_now_ms());
	if (queue_sale(10, 2000, &sale, &item) != 0 ||
	    (p7 = fs_queue_pacer_new(&f.cfg, top, 250, err, sizeof(err))) == NULL) {
		printf("Bail out! the sale of the walk-aways\n");
		return 1;
	}
	test_walkaway(p7, sale, item, fs_clock_now_ms());
	test_expect_rule();
	if (queue_sale(30, 2000, &sale, &item) != 0) {
		printf("Bail out! the sale of the learned window\n");
		return 1;
	}
	test_learned_window(p7, sale, fs_clock_now_ms());
	if (queue_sale(10, 2000, &sale, &item) != 0) {
		printf("Bail out! the sale of the idle passes\n");
		return 1;
	}
	test_idle_pass(p7, sale, item, fs_clock_now_ms());
	if (queue_sale(10, 2000, &sale, &item) != 0 ||
	    (p8 = fs_queue_pacer_new(&f.cfg, top, 250, err, sizeof(err))) == NULL) {
		printf("Bail out! the sale of the rush\n");
		return 1;
	}
	test_rush(p8, sale, fs_clock_now_ms());
	waiting = f.cfg;
	snprintf(waiting.value[FS_CFG_REDIS_WAIT_MS], sizeof(waiting.value[0]), "100");
	if (queue_sale(10, 2000, &sale, &item) != 0 ||
	    (p5 = fs_queue_pacer_new(&waiting, top, 250, err, sizeof(err))) == NULL) {
		printf("Bail out! the sale of the waiting pacer\n");
		return 1;
	}
	test_journal_waits(p5, sale);
	fs_queue_pacer_free(p8);
	fs_queue_pacer_free(p7);
	fs_queue_pacer_free(p6);
	fs_queue_pacer_free(p5);
	fs_queue_pacer_free(p4);
	fs_queue_pacer_free(p1);
	fs_queue_pacer_free(p2);
	fs_queue_pacer_free(p3);
	fixture_finish(&f);
	return failures == 0 ? 0 : 1;
}

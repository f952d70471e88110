/*
 * Unit test of the waiting room's check (lib/queue_verify.c) against a real
 * PostgreSQL (and Redis for the orders, tests/unit/sale_fixture.h): a clean
 * queue passes with its exact figures; each kind of violation planted in
 * PostgreSQL (a drawn score that is not the draw, late places out of turn,
 * a step through the wrong place or admitting fewer, an order before its
 * place was admitted, never admitted, or without a place) is found, named,
 * and the rows put back pass again.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "queue.h"
#include "expect.h"
#include "sale_fixture.h"

#define DRAWN 10

static struct fixture f;
static uint64_t sale, item;
static char sale_s[24];
static unsigned char seed[FS_QUEUE_SEEDBYTES];
static int found[FS_QUEUE_WRONG__MAX];
static char last_text[512];
static long late_issued = -1;	/* Redis' count of late numbers given, as the caller says */

static void
count(void *arg, enum fs_queue_violation kind, const char *text)
{
	(void)arg;
	found[kind]++;
	snprintf(last_text, sizeof(last_text), "%s", text);
}

/* Runs the check: its violations (found[] by kind), -1 when it failed. */
static long
verify(struct fs_queue_verify_report *rep)
{
	char err[256];

	memset(found, 0, sizeof(found));
	last_text[0] = '\0';
	if (fs_queue_verify(f.pg, sale, late_issued, count, NULL, rep, err, sizeof(err)) != 0) {
		printf("# verify: %s\n", err);
		return -1;
	}
	return rep->violations;
}

/* One statement with the sale as $1; 0 or -1. */
static int
sql(const char *text)
{
	const char *p[1] = { sale_s };

	return fs_pg_run(f.pg, text, 1, p);
}

/* A place: score, drawn or not, joined at the opening + offset ms. */
static int
place(const char *user, int64_t score, long offset)
{
	char text[512];

	snprintf(text, sizeof(text), "INSERT INTO queue_places VALUES ($1, '%s', %lld, %s, "
	    "(SELECT starts_at FROM sales WHERE id = $1) + interval '%ld milliseconds')", user,
	    (long long)score, score < FS_QUEUE_LATE_BASE ? "true" : "false", offset);
	return sql(text);
}

/* The user at rank n (1-based) in line. */
static const char *
nth(long n)
{
	static char out[64];
	char text[200];

	snprintf(text, sizeof(text), "SELECT user_id FROM queue_places WHERE sale_id = $1 "
	    "ORDER BY score, user_id COLLATE \"C\" OFFSET %ld LIMIT 1", n - 1);
	snprintf(out, sizeof(out), "%s", fixture_text(&f, text, sale_s));
	return out;
}

/*
 * The clean queue: DRAWN drawn places joined before the opening, three
 * late ones after it in turn, steps admitting 4 then 8, the first three in
 * line ordering now (after both steps).
 */
static int
setup(void)
{
	struct fs_order o;
	char user[16];

	memset(seed, 0xab, sizeof(seed));
	if (fixture_sale(&f, -10, 3600, 600, 100, &sale, &item) != 0)
		return -1;
	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, sale);
	if (sql("UPDATE sales SET queue = '{}', queue_seed = decode(repeat('ab', 32), 'hex') "
		"WHERE id = $1") != 0)
		return -1;
	for (int i = 0; i < DRAWN; i++) {
		snprintf(user, sizeof(user), "a%d", i);
		if (place(user, fs_queue_draw(seed, user, strlen(user)), -60000 + i) != 0)
			return -1;
	}
	if (place("late1", FS_QUEUE_LATE_BASE + 1, 100) != 0 ||
	    place("late2", FS_QUEUE_LATE_BASE + 2, 200) != 0 ||
	    place("late3", FS_QUEUE_LATE_BASE + 3, 300) != 0)
		return -1;
	if (sql("INSERT INTO queue_admissions SELECT $1, n, n * 4, (SELECT score FROM queue_places "
		"WHERE sale_id = $1 ORDER BY score, user_id COLLATE \"C\" OFFSET n * 4 - 1 LIMIT 1), "
		"(SELECT starts_at FROM sales WHERE id = $1) + n * interval '1 second' "
		"FROM generate_series(1, 2) AS n") != 0)
		return -1;
	for (long i = 1; i <= 3; i++)
		if (fixture_buy(&f, sale, item, nth(i), 0, 1, &o) != 0)
			return -1;
	return 0;
}

static void
test_clean(void)
{
	struct fs_queue_verify_report rep;

	check(verify(&rep) == 0 && rep.places == DRAWN + 3 && rep.drawn == DRAWN && rep.steps == 2 &&
		rep.admitted == 8 && rep.orders == 3,
	    "clean: no violation; 13 places, 10 drawn, 2 steps, 8 admitted, 3 orders");
}

/* Plants a change, expects kind found (and nothing else when alone), puts it back. */
static void
planted(const char *change, const char *undo, enum fs_queue_violation kind, int alone,
    const char *prefix, const char *what)
{
	struct fs_queue_verify_report rep;
	long v;
	int others = 0;

	if (sql(change) != 0) {
		check(0, what);
		return;
	}
	v = verify(&rep);
	for (int k = 0; k < FS_QUEUE_WRONG__MAX; k++)
		others += k != (int)kind ? found[k] : 0;
	if (!(v > 0 && found[kind] > 0 && (!alone || others == 0)))
		printf("# %ld violations, %d others; the last: %s\n", v, others, last_text);
	check(v > 0 && found[kind] > 0 && (!alone || others == 0) &&
		strncmp(last_text, prefix, strlen(prefix)) == 0, what);
	check(sql(undo) == 0 && verify(&rep) == 0, "and put back, clean again");
}

static void
test_planted(void)
{
	char change[300], undo[300], first[64], ninth[64];

	planted("UPDATE queue_places SET score = score + 1 WHERE sale_id = $1 AND user_id = 'a3'",
	    "UPDATE queue_places SET score = score - 1 WHERE sale_id = $1 AND user_id = 'a3'",
	    FS_QUEUE_WRONG_SCORE, 0, "", "score: a drawn place that is not the draw of its account");
	planted("UPDATE queue_places SET score = CASE user_id WHEN 'late1' THEN 4503599627370499 "
		"ELSE 4503599627370497 END WHERE sale_id = $1 AND user_id IN ('late1', 'late3')",
	    "UPDATE queue_places SET score = CASE user_id WHEN 'late1' THEN 4503599627370497 "
	    "ELSE 4503599627370499 END WHERE sale_id = $1 AND user_id IN ('late1', 'late3')",
	    FS_QUEUE_WRONG_LATE, 1, "late: ", "late: late places out of the order they joined");
	planted("UPDATE queue_places SET joined_at = joined_at + interval '1 hour' WHERE sale_id = $1 "
		"AND user_id = 'a1'",
	    "UPDATE queue_places SET joined_at = joined_at - interval '1 hour' WHERE sale_id = $1 "
	    "AND user_id = 'a1'",
	    FS_QUEUE_WRONG_LATE, 1, "late: ", "late: a drawn place joined after the opening");
	planted("UPDATE queue_admissions SET through = through + 1 WHERE sale_id = $1 AND step = 2",
	    "UPDATE queue_admissions SET through = through - 1 WHERE sale_id = $1 AND step = 2",
	    FS_QUEUE_WRONG_STEP, 1, "step: ", "step: a step's through is not its last place's score");
	planted("UPDATE queue_admissions SET admitted = 3 WHERE sale_id = $1 AND step = 2",
	    "UPDATE queue_admissions SET admitted = 8 WHERE sale_id = $1 AND step = 2",
	    FS_QUEUE_WRONG_STEP, 0, "", "step: a step admitting fewer than the one before");
	planted("UPDATE orders SET reserved_at = (SELECT starts_at FROM sales WHERE id = $1) "
		"WHERE sale_id = $1",
	    "UPDATE orders SET reserved_at = now() WHERE sale_id = $1",
	    FS_QUEUE_WRONG_ORDER, 1, "out of order: user ", "order: ordered before its place was admitted");
	snprintf(first, sizeof(first), "%s", nth(1));
	snprintf(ninth, sizeof(ninth), "%s", nth(9));
	snprintf(change, sizeof(change), "UPDATE orders SET user_id = '%s' WHERE sale_id = $1 AND "
	    "user_id = '%s'", ninth, first);
	snprintf(undo, sizeof(undo), "UPDATE orders SET user_id = '%s' WHERE sale_id = $1 AND "
	    "user_id = '%s'", first, ninth);
	planted(change, undo, FS_QUEUE_WRONG_ORDER, 1, "out of order: user ",
	    "order: the order of an account never admitted");
	planted("UPDATE orders SET user_id = 'stranger' WHERE sale_id = $1 AND "
		"user_id IN (SELECT user_id FROM orders WHERE sale_id = $1 LIMIT 1)",
	    "UPDATE orders SET user_id = (SELECT user_id FROM queue_places q WHERE q.sale_id = $1 AND "
	    "NOT EXISTS (SELECT 1 FROM orders o WHERE o.sale_id = $1 AND o.user_id = q.user_id) "
	    "ORDER BY score, user_id COLLATE \"C\" LIMIT 1) WHERE sale_id = $1 AND user_id = 'stranger'",
	    FS_QUEUE_WRONG_ORDER, 1, "out of order: user stranger", "order: an order without a place");
	/*
	 * Issue 35: a step the pacer recorded from Redis' count (Redis ahead of
	 * PostgreSQL: a lost row, or a count set by hand) was taken for a paced
	 * one; it is now marked and reported.
	 */
	/* Issue 35: steps were not checked against the capacity (1 a second here). */
	planted("UPDATE sales SET queue = '{\"capacityPerSecond\": 1}' WHERE id = $1",
	    "UPDATE sales SET queue = '{}' WHERE id = $1",
	    FS_QUEUE_WRONG_STEP, 1, "step: step 2 admits 4 places in 1000 ms, over capacityPerSecond 1",
	    "step: a step admitting more than the capacity allows");
	planted("UPDATE queue_admissions SET from_redis = true WHERE sale_id = $1 AND step = 2",
	    "UPDATE queue_admissions SET from_redis = false WHERE sale_id = $1 AND step = 2",
	    FS_QUEUE_WRONG_STEP, 1, "step: step 2 (8 admitted) was recorded from Redis' count",
	    "step: a step recorded from Redis' count, not paced");
}

/*
 * Issue 35: an operator's `queue pass` was indistinguishable from
 * tampering. Recorded (who, when, why) before the order, the order of an
 * account without a place is the operator's, not a violation; the same
 * order without the record still is one.
 */
static void
test_operator(void)
{
	struct fs_queue_verify_report rep;
	const char *swap = "UPDATE orders SET user_id = 'helped' WHERE sale_id = $1 AND "
			   "user_id IN (SELECT user_id FROM orders WHERE sale_id = $1 LIMIT 1)";

	check(sql(swap) == 0 && verify(&rep) == 1 && found[FS_QUEUE_WRONG_ORDER] == 1,
	    "operator: an order of an account without a place, no pass recorded: a violation");
	check(sql("INSERT INTO queue_operator_passes (sale_id, user_id, issued_by, issued_at, "
		  "expires_at, reason) VALUES ($1, 'helped', 'support-ann', "
		  "(SELECT starts_at FROM sales WHERE id = $1), now() + interval '2 minutes', "
		  "'ticket 4711: the page failed for her')") == 0 &&
		verify(&rep) == 0 && rep.by_operator == 1 && rep.orders == 3,
	    "operator: with its pass recorded before the order: clean, counted as the operator's");
	check(sql("UPDATE queue_operator_passes SET issued_at = now() + interval '1 hour' "
		  "WHERE sale_id = $1") == 0 && verify(&rep) == 1 && rep.by_operator == 0,
	    "operator: a pass recorded after the order does not cover it");
	sql("DELETE FROM queue_operator_passes WHERE sale_id = $1");
	sql("UPDATE orders SET user_id = (SELECT user_id FROM queue_places q WHERE q.sale_id = $1 AND "
	    "NOT EXISTS (SELECT 1 FROM orders o WHERE o.sale_id = $1 AND o.user_id = q.user_id) "
	    "ORDER BY score, user_id COLLATE \"C\" LIMIT 1) WHERE sale_id = $1 AND user_id = 'helped'");
	check(verify(&rep) == 0, "operator: put back, clean again");
}

/*
 * Issue 35: orders were compared with steps dated by the pacer's clock. A
 * pacer an hour fast made every order look earlier than its admission;
 * with the move dated by Redis (moved_at), and the pacer stepping at
 * Redis' clock, the steps are on one clock (orders on their purchase
 * handlers': docs/QUEUE.md, "One clock").
 */
static void
test_one_clock(void)
{
	struct fs_queue_verify_report rep;

	check(sql("UPDATE queue_admissions SET at = at + interval '1 day', moved_at = "
		  "(SELECT starts_at FROM sales WHERE id = $1) + step * interval '1 second' "
		  "WHERE sale_id = $1") == 0 && verify(&rep) == 0,
	    "one clock: the pacer's clock a day fast, the moves by Redis' clock before the orders: clean");
	check(sql("UPDATE queue_admissions SET moved_at = now() + interval '1 hour' WHERE "
		  "sale_id = $1") == 0 && verify(&rep) == 3 && found[FS_QUEUE_WRONG_ORDER] == 3 &&
		strstr(last_text, "by Redis' clock") != NULL,
	    "one clock: moves after the orders by Redis' clock: each order out of order");
	check(sql("UPDATE queue_admissions SET at = at - interval '1 day', moved_at = NULL WHERE "
		  "sale_id = $1") == 0 && verify(&rep) == 0, "one clock: put back, clean again");
	/*
	 * A pacer whose host ran 3 s ahead admitted before the opening by
	 * Redis' clock, while joins were still drawn; its own clock dated the
	 * step after the opening.
	 */
	check(sql("UPDATE queue_admissions SET moved_at = (SELECT starts_at FROM sales WHERE id = "
		  "$1) - interval '3 seconds' WHERE sale_id = $1 AND step = 1") == 0 &&
		verify(&rep) == 1 && found[FS_QUEUE_WRONG_STEP] == 1 &&
		strstr(last_text, "step: step 1 admitted at ") != NULL &&
		strstr(last_text, " by Redis' clock, before the opening at ") != NULL,
	    "one clock: a step moved 3 s before the opening by Redis' clock is found");
	check(sql("UPDATE queue_admissions SET moved_at = NULL WHERE sale_id = $1") == 0 &&
		verify(&rep) == 0, "one clock: put back, clean again");
}

/*
 * Issue 35: steps were checked against the capacity only, not against the
 * units and the budget: a step may admit at most ceil(admitMultiple x
 * units left) less the places admitted before it and still outstanding.
 * Here steps of 4 and 4 places, one second apart, the orders after both.
 */
static void
test_budget(void)
{
	struct fs_queue_verify_report rep;

	check(sql("UPDATE items SET quantity = 6 WHERE sale_id = $1") == 0 && verify(&rep) == 0,
	    "budget: 6 units: 4 places, then 4 more for 6 x 1.5 less the 4 outstanding: clean");
	planted("UPDATE queue_admissions SET admitted = 13, through = (SELECT score FROM "
		"queue_places WHERE sale_id = $1 ORDER BY score, user_id COLLATE \"C\" OFFSET 12 "
		"LIMIT 1) WHERE sale_id = $1 AND step = 2",
	    "UPDATE queue_admissions SET admitted = 8, through = (SELECT score FROM "
	    "queue_places WHERE sale_id = $1 ORDER BY score, user_id COLLATE \"C\" OFFSET 7 "
	    "LIMIT 1) WHERE sale_id = $1 AND step = 2",
	    FS_QUEUE_WRONG_STEP, 1, "step: step 2 admits 9 places, over its budget of 5 (6 units "
	    "left at most x admitMultiple 1.500, less 4 admitted places outstanding)",
	    "budget: a step tampered to admit 9 where 5 were allowed is found");
	planted("UPDATE items SET quantity = 4 WHERE sale_id = $1",
	    "UPDATE items SET quantity = 6 WHERE sale_id = $1",
	    FS_QUEUE_WRONG_STEP, 1, "step: step 2 admits 4 places, over its budget of 2 (4 units "
	    "left at most x admitMultiple 1.500, less 4 admitted places outstanding)",
	    "budget: 4 units: the second step admits again while the first 4 are outstanding");
	planted("UPDATE sales SET queue = '{\"admitMultiple\": 1.0}' WHERE id = $1",
	    "UPDATE sales SET queue = '{}' WHERE id = $1",
	    FS_QUEUE_WRONG_STEP, 1, "step: step 2 admits 4 places, over its budget of 2 (6 units "
	    "left at most x admitMultiple 1.000",
	    "budget: admitMultiple 1: 6 units, 4 outstanding, 4 more is 2 too many");
	check(sql("UPDATE items SET quantity = 100 WHERE sale_id = $1") == 0 && verify(&rep) == 0,
	    "budget: 100 units again: clean");
}

/*
 * Issue 35: the pacer's window for places presumed gone is learned (2 to
 * 5 s) and recorded with each step (queue_admissions.expect_ms): a step
 * counts as outstanding only the places admitted within its own window.
 * Here step 2 comes 3 s after step 1 with 4 units: with the 5 s of a step
 * recorded before (NULL) step 1's 4 places were outstanding and 4 more is
 * over the budget; with a 2 s window they were presumed gone and it is
 * within; a window outside 2 s..claimSeconds is reported.
 */
static void
test_window(void)
{
	struct fs_queue_verify_report rep;

	check(sql("UPDATE queue_admissions SET at = at + interval '2 seconds' WHERE sale_id = $1 "
		  "AND step = 2") == 0 && verify(&rep) == 0,
	    "window: step 2 three seconds after step 1, 100 units: clean");
	planted("UPDATE items SET quantity = 4 WHERE sale_id = $1",
	    "UPDATE items SET quantity = 100 WHERE sale_id = $1",
	    FS_QUEUE_WRONG_STEP, 1, "step: step 2 admits 4 places, over its budget of 2 (4 units "
	    "left at most x admitMultiple 1.500, less 4 admitted places outstanding)",
	    "window: no window recorded (a pacer from before): 5 s, step 1's 4 places outstanding");
	check(sql("UPDATE queue_admissions SET expect_ms = 2000 WHERE sale_id = $1") == 0 &&
		sql("UPDATE items SET quantity = 4 WHERE sale_id = $1") == 0 && verify(&rep) == 0,
	    "window: the 2 s each step recorded: step 1's silent places presumed gone, 4 more clean");
	planted("UPDATE queue_admissions SET expect_ms = 1999 WHERE sale_id = $1 AND step = 2",
	    "UPDATE queue_admissions SET expect_ms = 2000 WHERE sale_id = $1 AND step = 2",
	    FS_QUEUE_WRONG_STEP, 0, "step: step 2 admits 4 places, over its budget of 2",
	    "window: a window under 2 s recorded: reported, and the budget checked with 5 s");
	planted("UPDATE queue_admissions SET expect_ms = 15001 WHERE sale_id = $1 AND step = 1",
	    "UPDATE queue_admissions SET expect_ms = 2000 WHERE sale_id = $1 AND step = 1",
	    FS_QUEUE_WRONG_STEP, 1, "step: step 1 presumed silent places gone after 15001 ms, "
	    "outside 2000 ms..claimSeconds",
	    "window: a window over claimSeconds (15 s) recorded: reported");
	check(sql("UPDATE queue_admissions SET expect_ms = 15000 WHERE sale_id = $1 AND step = 1") == 0 &&
		sql("UPDATE items SET quantity = 100 WHERE sale_id = $1") == 0 && verify(&rep) == 0 &&
		sql("UPDATE queue_admissions SET expect_ms = 2000 WHERE sale_id = $1 AND step = 1") == 0,
	    "window: a window of claimSeconds (a slow system's pages) recorded: clean");
	check(sql("UPDATE items SET quantity = 100 WHERE sale_id = $1") == 0 &&
		sql("UPDATE queue_admissions SET expect_ms = NULL, at = at - interval '2 seconds' "
		    "WHERE sale_id = $1 AND step = 2") == 0 &&
		sql("UPDATE queue_admissions SET expect_ms = NULL WHERE sale_id = $1") == 0 &&
		verify(&rep) == 0,
	    "window: put back, clean again");
}

/*
 * Issue 35: the last late place deleted left the numbering 2^52+1, 2 intact:
 * only Redis' count of late numbers given (fs_queue_late_issued) tells.
 */
static void
test_late_deleted(void)
{
	struct fs_queue_verify_report rep;

	late_issued = 3;
	check(verify(&rep) == 0, "late count: Redis gave 3 late places, PostgreSQL has 3: clean");
	check(sql("DELETE FROM queue_places WHERE sale_id = $1 AND user_id = 'late3'") == 0 &&
		verify(&rep) == 1 && found[FS_QUEUE_WRONG_LATE] == 1 &&
		strstr(last_text, "Redis gave 3 late places, PostgreSQL has 2") != NULL,
	    "late count: the last late place deleted is found");
	late_issued = -1;
	check(verify(&rep) == 0, "late count: unknown (Redis forgot the sale): not checked");
	check(place("late3", FS_QUEUE_LATE_BASE + 3, 300) == 0 && verify(&rep) == 0,
	    "late count: put back, clean again");
}

int
main(void)
{
	struct fs_queue_verify_report rep;
	char err[256];

	if (sodium_init() < 0 || fixture_start(&f, getenv("top_srcdir")) != 0 || setup() != 0) {
		printf("Bail out! needs top_srcdir, PostgreSQL 15 and redis-server\n");
		fixture_finish(&f);
		return 1;
	}
	test_clean();
	test_planted();
	test_operator();
	test_late_deleted();
	test_one_clock();
	test_budget();
	test_window();
	check(fs_queue_verify(f.pg, sale + 1000, -1, NULL, NULL, &rep, err, sizeof(err)) == -1 &&
		strstr(err, "no sale") != NULL,
	    "an unknown sale is an error, not a clean queue");
	check(sql("UPDATE sales SET queue = NULL, queue_seed = NULL WHERE id = $1") == 0 &&
		fs_queue_verify(f.pg, sale, -1, NULL, NULL, &rep, err, sizeof(err)) == -1 &&
		strstr(err, "no waiting room") != NULL,
	    "so is a sale without a waiting room");
	fixture_finish(&f);
	return failures == 0 ? 0 : 1;
}

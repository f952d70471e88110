/*
 * The check of a sale's waiting room from PostgreSQL alone (flashsale-admin
 * queue verify): every drawn place's score is the draw of its account from
 * the seed; the late places are 2^52 + 1, 2, ... in the order they joined;
 * the pacer's steps are numbered in turn, admit more each time, and each
 * one's `through` is the score of the last place it admitted in the order
 * (score, then account bytewise), none recorded from Redis' count, none
 * admitting more than the capacity or the budget (the units left at most,
 * times admitMultiple, less the places admitted just before and still
 * outstanding) allows; every
 * order of the sale belongs to an account whose place was admitted at or
 * before the order was reserved, or that an operator gave a recorded pass;
 * one place per account.
 */
#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include <json-c/json.h>

#include "clock.h"
#include "jsonread.h"
#include "pg.h"
#include "queue.h"

/* A place as PostgreSQL has it, in line order. */
struct place {
	const char *user;	/* into the result */
	int64_t score, joined_ms;
	int64_t ordered_ms;	/* its account's first order of the sale, INT64_MAX none */
	int drawn;
};

/* An admission step. */
struct step {
	long step, admitted;
	int64_t through, at_ms;
	int from_redis;		/* recorded from Redis' count, not paced */
	int64_t moved_ms;	/* Redis' time of its move (the orders' clock), -1 unknown */
	int expect_ms;		/* its window for places presumed gone (queue.h) */
};

struct verify {
	fs_pg *pg;
	uint64_t sale;
	char sale_s[24];
	unsigned char seed[FS_QUEUE_SEEDBYTES];
	int64_t opens_ms;
	struct fs_queue_settings set;
	int set_known;		/* the settings parsed (this build reads them) */
	long units;		/* the sale's units (every item's quantity) */
	int64_t *live_ms;	/* reservation times of the orders live now, in order */
	long nlive;
	struct place *places;	/* line order */
	long nplaces;
	struct place **by_user;	/* sorted by account */
	struct step *steps;
	long nsteps;
	fs_queue_violation_fn each;
	void *arg;
	struct fs_queue_verify_report *rep;
	long late_issued;	/* Redis' count of late numbers, -1 unknown */
};

/* Reports one violation. */
static void __attribute__((format(printf, 3, 4)))
violation(struct verify *v, enum fs_queue_violation kind, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	v->rep->violations++;
	if (v->each != NULL)
		v->each(v->arg, kind, text);
}

static const char *const violation_names[FS_QUEUE_WRONG__MAX] = {
	[FS_QUEUE_WRONG_SCORE] = "score",
	[FS_QUEUE_WRONG_LATE] = "late",
	[FS_QUEUE_WRONG_STEP] = "step",
	[FS_QUEUE_WRONG_ORDER] = "order",
	[FS_QUEUE_WRONG_PLACE] = "place",
};

const char *
fs_queue_violation_name(enum fs_queue_violation kind)
{
	return kind < FS_QUEUE_WRONG__MAX ? violation_names[kind] : "?";
}

/* The sale's seed and opening; 0, or -1 with err (no such sale, or no waiting room). */
static int
read_sale(struct verify *v, char *err, size_t errlen)
{
	const char *p[1] = { v->sale_s };
	PGresult *res;
	int rc = -1;

	res = fs_pg_exec(v->pg, "SELECT encode(queue_seed, 'hex'), "
				"floor(extract(epoch FROM starts_at) * 1000)::bigint, queue::text, "
				"(SELECT coalesce(sum(quantity), 0) FROM items WHERE sale_id = s.id) "
				"FROM sales s WHERE id = $1",
	    1, p);
	if (res == NULL) {
		snprintf(err, errlen, "database: %s", v->pg->errstr);
		return -1;
	}
	if (PQntuples(res) != 1)
		snprintf(err, errlen, "no sale %s", v->sale_s);
	else if (PQgetisnull(res, 0, 0))
		snprintf(err, errlen, "sale %s has no waiting room", v->sale_s);
	else if (sodium_hex2bin(v->seed, sizeof(v->seed), PQgetvalue(res, 0, 0),
		     (size_t)PQgetlength(res, 0, 0), NULL, NULL, NULL) != 0)
		snprintf(err, errlen, "sale %s: its seed is not 32 bytes", v->sale_s);
	else {
		struct fs_queue_settings set;
		char why[128];
		json_object *o = fs_jsonread_object(PQgetvalue(res, 0, 2),
		    (size_t)PQgetlength(res, 0, 2), 2, why, sizeof(why));

		v->opens_ms = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
		v->units = strtol(PQgetvalue(res, 0, 3), NULL, 10);
		/* Settings this build cannot read: the capacity and the budget are not checked. */
		if (o != NULL && fs_queue_settings_parse(o, &set, why, sizeof(why)) == 0) {
			v->set = set;
			v->set_known = 1;
		}
		json_object_put(o);
		rc = 0;
	}
	PQclear(res);
	return rc;
}

static int
cmp_user(const void *a, const void *b)
{
	return strcmp((*(struct place *const *)a)->user, (*(struct place *const *)b)->user);
}

/* The places in line order into v (their texts stay in *res); 0, or -1 with err. */
static int
read_places(struct verify *v, PGresult **res, char *err, size_t errlen)
{
	const char *p[1] = { v->sale_s };

	*res = fs_pg_exec(v->pg,
	    "SELECT user_id, score, drawn, floor(extract(epoch FROM joined_at) * 1000)::bigint "
	    "FROM queue_places WHERE sale_id = $1 ORDER BY score, user_id COLLATE \"C\"",
	    1, p);
	if (*res == NULL) {
		snprintf(err, errlen, "database: %s", v->pg->errstr);
		return -1;
	}
	v->nplaces = PQntuples(*res);
	v->places = calloc((size_t)v->nplaces + 1, sizeof(*v->places));
	v->by_user = calloc((size_t)v->nplaces + 1, sizeof(*v->by_user));
	if (v->places == NULL || v->by_user == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (long i = 0; i < v->nplaces; i++) {
		struct place *pl = &v->places[i];

		pl->user = PQgetvalue(*res, (int)i, 0);
		pl->score = strtoll(PQgetvalue(*res, (int)i, 1), NULL, 10);
		pl->drawn = strcmp(PQgetvalue(*res, (int)i, 2), "t") == 0;
		pl->joined_ms = strtoll(PQgetvalue(*res, (int)i, 3), NULL, 10);
		pl->ordered_ms = INT64_MAX;
		v->by_user[i] = pl;
	}
	qsort(v->by_user, (size_t)v->nplaces, sizeof(*v->by_user), cmp_user);
	return 0;
}

/* The admission steps in order into v (copied); 0, or -1 with err. */
static int
read_steps(struct verify *v, char *err, size_t errlen)
{
	const char *p[1] = { v->sale_s };
	PGresult *res;

	res = fs_pg_exec(v->pg,
	    "SELECT step, admitted, through, floor(extract(epoch FROM at) * 1000)::bigint, "
	    "from_redis, floor(extract(epoch FROM moved_at) * 1000)::bigint, expect_ms "
	    "FROM queue_admissions WHERE sale_id = $1 ORDER BY step",
	    1, p);
	if (res == NULL) {
		snprintf(err, errlen, "database: %s", v->pg->errstr);
		return -1;
	}
	v->nsteps = PQntuples(res);
	if ((v->steps = calloc((size_t)v->nsteps + 1, sizeof(*v->steps))) == NULL) {
		PQclear(res);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (long i = 0; i < v->nsteps; i++) {
		v->steps[i].step = strtol(PQgetvalue(res, (int)i, 0), NULL, 10);
		v->steps[i].admitted = strtol(PQgetvalue(res, (int)i, 1), NULL, 10);
		v->steps[i].through = strtoll(PQgetvalue(res, (int)i, 2), NULL, 10);
		v->steps[i].at_ms = strtoll(PQgetvalue(res, (int)i, 3), NULL, 10);
		v->steps[i].from_redis = strcmp(PQgetvalue(res, (int)i, 4), "t") == 0;
		v->steps[i].moved_ms = PQgetisnull(res, (int)i, 5) ? -1 :
		    strtoll(PQgetvalue(res, (int)i, 5), NULL, 10);
		/* A step of a pacer from before the learned window: it always waited the longest. */
		v->steps[i].expect_ms = PQgetisnull(res, (int)i, 6) ? FS_QUEUE_PACER_EXPECT_MS :
		    (int)strtol(PQgetvalue(res, (int)i, 6), NULL, 10);
	}
	PQclear(res);
	return 0;
}

/* Each drawn place's score against the draw, and which side of the opening each joined. */
static void
check_draws(struct verify *v)
{
	char at[FS_CLOCK_TIME_LEN];

	for (long i = 0; i < v->nplaces; i++) {
		const struct place *pl = &v->places[i];
		int64_t draw;

		fs_clock_format(pl->joined_ms, at);
		if (!pl->drawn) {
			if (pl->joined_ms < v->opens_ms)
				violation(v, FS_QUEUE_WRONG_LATE, "late: user %s joined at %s, before the "
				    "opening, but has a late place (%" PRId64 ")", pl->user, at, pl->score);
			continue;
		}
		v->rep->drawn++;
		draw = fs_queue_draw(v->seed, pl->user, strlen(pl->user));
		if (draw != pl->score)
			violation(v, FS_QUEUE_WRONG_SCORE, "score: user %s has place %" PRId64 ", the draw "
			    "from the seed says %" PRId64, pl->user, pl->score, draw);
		if (pl->joined_ms >= v->opens_ms)
			violation(v, FS_QUEUE_WRONG_LATE, "late: user %s joined at %s, after the opening, "
			    "but has a drawn place", pl->user, at);
	}
}

/* The late places, in line order: 2^52 + 1, 2, ... and in the order they joined. */
static void
check_late(struct verify *v)
{
	const struct place *prev = NULL;
	int64_t n = 0;
	char at[FS_CLOCK_TIME_LEN], at2[FS_CLOCK_TIME_LEN];

	for (long i = 0; i < v->nplaces; i++) {
		const struct place *pl = &v->places[i];

		if (pl->drawn)
			continue;
		n++;
		if (pl->score != FS_QUEUE_LATE_BASE + n)
			violation(v, FS_QUEUE_WRONG_LATE, "late: user %s has place %" PRId64 ", the %" PRId64
			    "th late place is 2^52+%" PRId64, pl->user, pl->score, n, n);
		if (prev != NULL && pl->joined_ms < prev->joined_ms) {
			fs_clock_format(pl->joined_ms, at);
			fs_clock_format(prev->joined_ms, at2);
			violation(v, FS_QUEUE_WRONG_LATE, "late: user %s joined at %s, before user %s (%s), "
			    "but is behind", pl->user, at, prev->user, at2);
		}
		prev = pl;
	}
	if (v->late_issued >= 0 && n != v->late_issued)
		violation(v, FS_QUEUE_WRONG_LATE, "late: Redis gave %ld late places, PostgreSQL has "
		    "%" PRId64 " (the last ones deleted, or added by hand)", v->late_issued, n);
}

/* The steps: numbered in turn, each admitting more, each through the score of its last place. */
static void
check_steps(struct verify *v)
{
	for (long i = 0; i < v->nsteps; i++) {
		const struct step *s = &v->steps[i], *prev = i > 0 ? &v->steps[i - 1] : NULL;

		if (s->from_redis)
			violation(v, FS_QUEUE_WRONG_STEP, "step: step %ld (%ld admitted) was recorded from "
			    "Redis' count, not paced: Redis was ahead of PostgreSQL (a lost row, or a "
			    "count changed by hand)", s->step, s->admitted);
		if (s->step != i + 1)
			violation(v, FS_QUEUE_WRONG_STEP, "step: step %ld comes where step %ld should",
			    s->step, i + 1);
		if (prev != NULL && s->admitted <= prev->admitted)
			violation(v, FS_QUEUE_WRONG_STEP, "step: step %ld admits %ld in all, not more than "
			    "step %ld (%ld)", s->step, s->admitted, prev->step, prev->admitted);
		if (prev != NULL && s->at_ms < prev->at_ms)
			violation(v, FS_QUEUE_WRONG_STEP, "step: step %ld is dated before step %ld", s->step,
			    prev->step);
		/*
		 * Admission from the opening on, by the clock that ended the draw
		 * (Redis': the move's time when recorded, else the step's): a step
		 * before it admitted while joins were still drawn.
		 */
		if ((s->moved_ms >= 0 ? s->moved_ms : s->at_ms) < v->opens_ms) {
			char at[FS_CLOCK_TIME_LEN], opens[FS_CLOCK_TIME_LEN];

			fs_clock_format(s->moved_ms >= 0 ? s->moved_ms : s->at_ms, at);
			fs_clock_format(v->opens_ms, opens);
			violation(v, FS_QUEUE_WRONG_STEP, "step: step %ld admitted at %s%s, before the "
			    "opening at %s (joins were still drawn)", s->step, at,
			    s->moved_ms >= 0 ? " by Redis' clock" : "", opens);
		}
		if (s->expect_ms < FS_QUEUE_PACER_EXPECT_MIN_MS ||
		    (v->set_known && s->expect_ms > v->set.claim_s * 1000))
			violation(v, FS_QUEUE_WRONG_STEP, "step: step %ld presumed silent places gone after "
			    "%d ms, outside %d ms..claimSeconds", s->step, s->expect_ms,
			    FS_QUEUE_PACER_EXPECT_MIN_MS);
		/*
		 * The capacity: capacityPerSecond over the time since the step
		 * before, with a second's slack (the credit a step keeps, the
		 * first step's, a step recorded then made by the next pacer).
		 */
		if (v->set_known) {
			int64_t dt = prev != NULL && s->at_ms > prev->at_ms ? s->at_ms - prev->at_ms : 0;
			long inc = s->admitted - (prev != NULL ? prev->admitted : 0);
			int64_t allowed = (int64_t)v->set.cap_per_s * (dt + 1000) / 1000 + 1;

			if (inc > allowed)
				violation(v, FS_QUEUE_WRONG_STEP, "step: step %ld admits %ld places in %"
				    PRId64 " ms, over capacityPerSecond %d (at most %" PRId64 ")",
				    s->step, inc, dt, v->set.cap_per_s, allowed);
		}
		if (s->admitted > v->nplaces)
			violation(v, FS_QUEUE_WRONG_STEP, "step: step %ld admits %ld places, PostgreSQL has "
			    "%ld", s->step, s->admitted, v->nplaces);
		else if (s->through != v->places[s->admitted - 1].score)
			violation(v, FS_QUEUE_WRONG_STEP, "step: step %ld goes through %" PRId64 ", but place "
			    "%ld in line (user %s) is %" PRId64, s->step, s->through, s->admitted,
			    v->places[s->admitted - 1].user, v->places[s->admitted - 1].score);
	}
	v->rep->steps = v->nsteps;
	v->rep->admitted = v->nsteps > 0 ? v->steps[v->nsteps - 1].admitted : 0;
}

/*
 * Orders reserved within this long of a step count as the step saw them or
 * not, whichever is laxer: steps are dated when the pacer began them (by
 * the sale's Redis clock, which its thread steps the sale at), orders by
 * their purchase handler's clock when reserved (docs/QUEUE.md, "One clock").
 */
#define BUDGET_SLACK_MS 1000
/* The orders live now reserved before ms: each held a unit then (a live order was never released). */
static long
live_before(const struct verify *v, int64_t ms)
{
	long lo = 0, hi = v->nlive;

	while (lo < hi) {
		long mid = lo + (hi - lo) / 2;

		if (v->live_ms[mid] < ms)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Each paced step against the units and the budget (docs/QUEUE.md, "Admission:
 * the pacer"): a step admits at most ceil(multiple x units left) less the
 * places outstanding, the multiple at most admitMultiple. From PostgreSQL
 * alone, bounds that an honest step always meets: the units left were at
 * most the sale's units less the orders live now that were reserved a
 * second or more before the step; the places outstanding were at least
 * those admitted by the steps within the step's window (expect_ms, 2 s
 * to claimSeconds: a live page asks for its pass within a few seconds of
 * its admission, and the pacer presumes a place silent for longer gone and
 * admits in its stead, the window learned from the delays of the places
 * that asked; at most claimSeconds and passSeconds), less a second, whose
 * account had not
 * ordered by a second after the step (each still had its pass to ask for,
 * or one unused, not expired, whose page had just asked for it). A
 * step over that admitted more than the pacer ever may; one recorded from
 * Redis' count is reported by check_steps.
 */
static void
check_budget(struct verify *v)
{
	int64_t longest;

	if (!v->set_known)
		return;
	longest = (int64_t)(v->set.claim_s < v->set.pass_s ? v->set.claim_s : v->set.pass_s) * 1000;
	for (long i = 0; i < v->nsteps; i++) {
		const struct step *s = &v->steps[i];
		long before = i > 0 ? v->steps[i - 1].admitted : 0, inc = s->admitted - before;
		long out = 0, left, lo = i;
		int64_t budget, window_ms = longest;

		if (s->from_redis || inc <= 0 || s->admitted > v->nplaces)
			continue; /* reported as such by check_steps */
		/* The step's own window (a bad one is reported by check_steps: the longest then). */
		if (s->expect_ms >= FS_QUEUE_PACER_EXPECT_MIN_MS && s->expect_ms < window_ms)
			window_ms = s->expect_ms;
		window_ms -= BUDGET_SLACK_MS;
		while (lo > 0 && s->at_ms - v->steps[lo - 1].at_ms <= window_ms)
			lo--;
		for (long r = lo > 0 ? v->steps[lo - 1].admitted : 0; r >= 0 && r < before; r++)
			out += v->places[r].ordered_ms > s->at_ms + BUDGET_SLACK_MS;
		left = v->units - live_before(v, s->at_ms - BUDGET_SLACK_MS);
		if (left < 0)
			left = 0;
		budget = ((int64_t)v->set.mult_milli * left + 999) / 1000 - out;
		if (inc > budget)
			violation(v, FS_QUEUE_WRONG_STEP, "step: step %ld admits %ld places, over its "
			    "budget of %" PRId64 " (%ld units left at most x admitMultiple %d.%03d, "
			    "less %ld admitted places outstanding)", s->step, inc,
			    budget < 0 ? 0 : budget, left, v->set.mult_milli / 1000,
			    v->set.mult_milli % 1000, out);
	}
}

/* One place per account (the primary key's promise, checked all the same). */
static void
check_one_place(struct verify *v)
{
	for (long i = 1; i < v->nplaces; i++)
		if (strcmp(v->by_user[i]->user, v->by_user[i - 1]->user) == 0)
			violation(v, FS_QUEUE_WRONG_PLACE, "place: user %s has more than one place",
			    v->by_user[i]->user);
}

/*
 * The orders' reservation times: each place's account's first
 * (ordered_ms), and those of the orders live now, in order (live_ms); 0,
 * or -1 with err.
 */
static int
read_orders(struct verify *v, char *err, size_t errlen)
{
	const char *p[1] = { v->sale_s };
	PGresult *res = fs_pg_exec(v->pg, "SELECT user_id, "
					  "floor(extract(epoch FROM reserved_at) * 1000)::bigint, "
					  "status IN ('PENDING', 'PAID') "
					  "FROM orders WHERE sale_id = $1 ORDER BY reserved_at, id",
	    1, p);

	if (res == NULL) {
		snprintf(err, errlen, "database: %s", v->pg->errstr);
		return -1;
	}
	if ((v->live_ms = calloc((size_t)PQntuples(res) + 1, sizeof(*v->live_ms))) == NULL) {
		PQclear(res);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (int i = 0; i < PQntuples(res); i++) {
		struct place key = { .user = PQgetvalue(res, i, 0) }, *kp = &key, **found;
		int64_t ms = strtoll(PQgetvalue(res, i, 1), NULL, 10);

		found = bsearch(&kp, v->by_user, (size_t)v->nplaces, sizeof(*v->by_user), cmp_user);
		if (found != NULL && ms < (*found)->ordered_ms)
			(*found)->ordered_ms = ms;
		if (strcmp(PQgetvalue(res, i, 2), "t") == 0)
			v->live_ms[v->nlive++] = ms;
	}
	PQclear(res);
	return 0;
}

/* The first step that admitted the place at rank (0-based) in line; NULL none. */
static const struct step *
step_admitting(const struct verify *v, long rank)
{
	long lo = 0, hi = v->nsteps;

	while (lo < hi) {
		long mid = lo + (hi - lo) / 2;

		if (v->steps[mid].admitted > rank)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo < v->nsteps ? &v->steps[lo] : NULL;
}

/*
 * Each order of the sale: its account's place admitted at or before the
 * order was reserved, or else a pass an operator minted for it (recorded by
 * `flashsale-admin queue pass`: who, when, why) before the order.
 */
static int
check_orders(struct verify *v, char *err, size_t errlen)
{
	const char *p[1] = { v->sale_s };
	char at[FS_CLOCK_TIME_LEN], when[FS_CLOCK_TIME_LEN];
	PGresult *res = fs_pg_exec(v->pg, "SELECT o.id, o.user_id, "
					  "floor(extract(epoch FROM o.reserved_at) * 1000)::bigint, "
					  "EXISTS (SELECT 1 FROM queue_operator_passes q WHERE "
					  "q.sale_id = o.sale_id AND q.user_id = o.user_id AND "
					  "q.issued_at <= o.reserved_at) "
					  "FROM orders o WHERE o.sale_id = $1 ORDER BY o.reserved_at, o.id",
	    1, p);

	if (res == NULL) {
		snprintf(err, errlen, "database: %s", v->pg->errstr);
		return -1;
	}
	v->rep->orders = PQntuples(res);
	for (int i = 0; i < PQntuples(res); i++) {
		struct place key = { .user = PQgetvalue(res, i, 1) }, *kp = &key, **found;
		int64_t reserved = strtoll(PQgetvalue(res, i, 2), NULL, 10);
		const struct step *s;
		long rank;

		fs_clock_format(reserved, when);
		if (strcmp(PQgetvalue(res, i, 3), "t") == 0) {
			/* Let in by an operator, on the record: not the line's doing. */
			v->rep->by_operator++;
			continue;
		}
		found = bsearch(&kp, v->by_user, (size_t)v->nplaces, sizeof(*v->by_user), cmp_user);
		if (found == NULL) {
			violation(v, FS_QUEUE_WRONG_ORDER, "out of order: user %s ordered at %s (order %s) "
			    "with no place in the queue", key.user, when, PQgetvalue(res, i, 0));
			continue;
		}
		rank = (long)(*found - v->places);
		if ((s = step_admitting(v, rank)) == NULL) {
			violation(v, FS_QUEUE_WRONG_ORDER, "out of order: user %s place %ld ordered at %s "
			    "(order %s), never admitted", key.user, rank + 1, when, PQgetvalue(res, i, 0));
			continue;
		}
		/*
		 * The move's time by Redis when the pacer wrote it, else the
		 * step's (the pacer steps at Redis' clock too); the order is
		 * dated by its purchase handler's clock (docs/QUEUE.md, "One
		 * clock": the purchase path is not on Redis' yet).
		 */
		fs_clock_format(s->moved_ms >= 0 ? s->moved_ms : s->at_ms, at);
		if ((s->moved_ms >= 0 ? s->moved_ms : s->at_ms) > reserved)
			violation(v, FS_QUEUE_WRONG_ORDER, "out of order: user %s place %ld admitted at %s "
			    "(step %ld%s) after its order at %s (order %s)", key.user, rank + 1, at,
			    s->step, s->moved_ms >= 0 ? ", by Redis' clock" : "", when,
			    PQgetvalue(res, i, 0));
	}
	PQclear(res);
	return 0;
}

int
fs_queue_verify(fs_pg *pg, uint64_t sale, long late_issued, fs_queue_violation_fn each,
    void *arg, struct fs_queue_verify_report *rep, char *err, size_t errlen)
{
	struct verify v = { .pg = pg, .sale = sale, .each = each, .arg = arg, .rep = rep,
		.late_issued = late_issued };
	PGresult *places = NULL;
	int rc = -1;

	memset(rep, 0, sizeof(*rep));
	snprintf(v.sale_s, sizeof(v.sale_s), "%" PRIu64, sale);
	if (read_sale(&v, err, errlen) != 0 || read_places(&v, &places, err, errlen) != 0 ||
	    read_steps(&v, err, errlen) != 0 || read_orders(&v, err, errlen) != 0)
		goto out;
	rep->places = v.nplaces;
	check_draws(&v);
	check_late(&v);
	check_one_place(&v);
	check_steps(&v);
	check_budget(&v);
	if (check_orders(&v, err, errlen) != 0)
		goto out;
	rc = 0;
out:
	sodium_memzero(v.seed, sizeof(v.seed));
	free(v.places);
	free(v.by_user);
	free(v.steps);
	free(v.live_ms);
	PQclear(places);
	return rc;
}

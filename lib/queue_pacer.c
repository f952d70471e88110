/*
 * The pacer of the waiting room (docs/QUEUE.md, "Admission: the pacer"):
 * for every live queue sale whose lease it holds, it copies the join
 * journal to PostgreSQL and, from the opening to the end, admits the next
 * places in line, paced to the units left, the passes outstanding and the
 * capacity. Each admission step is recorded in queue_admissions before
 * Redis' threshold moves (lua/queue_admit.lua, guarded by the lease and the
 * count the pacer read), so a pacer that dies anywhere leaves a state the
 * next one finishes: a step recorded and not made is made; one made is
 * never made twice.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>
#include <sodium.h>

#include "cfg.h"
#include "clock.h"
#include "jsonread.h"
#include "log.h"
#include "pg.h"
#include "queue.h"
#include "queue_int.h"
#include "redis.h"
#include "stock.h"

/* The journal is still copied this long after the end (the last joins). */
#define AFTER_END_MS 60000
/* A sale's queue keys stay in Redis this long after its end, then expire. */
#define KEEP_AFTER_END_MS INT64_C(86400000)
/* Steps remembered for the admission rate (at least a second's worth). */
#define RECENT 64
/* A warning repeats at most this often. */
#define QUIET_MS 5000
/* Items of a sale at most (as lib/sales accepts them). */
#define ITEMS_MAX 1000
/* This host's clock further than this from Redis' is worth a warning. */
#define CLOCK_OFF_MS 1000

/* One live queue sale and what the pacer remembers of it between steps. */
struct paced {
	uint64_t id;
	int64_t opens_ms, ends_ms, pre_ms;
	struct fs_queue_settings set;
	uint64_t *items;
	int nitems;
	int64_t credit;		/* admissions the capacity allows now, x1000 */
	int64_t last_ms;	/* the previous admission step, 0 none */
	struct {
		int64_t at;
		long n;
	} recent[RECENT];	/* admission steps, a ring */
	int next;
	int expiring;		/* its keys were given their expiry */
	int64_t expiry_for;	/* the end that expiry followed */
	int mult_milli;		/* the effective multiple of the last step x1000, 0 none */
};

struct fs_queue_pacer {
	fs_pg *pg;
	fs_stock *st;
	int admit;		/* the admission script */
	int clock;		/* lua/queue_clock.lua: a sale's Redis clock */
	int step_ms;
	char owner[48];
	struct fs_queue_journal journal;	/* the journal's copy, with the pacer's stores */
	struct paced sales[FS_QUEUE_PACER_SALES_MAX];
	int nsales;
	int64_t scanned_ms;
	int64_t quiet_until;
	int redis_clock;	/* the thread's: each sale stepped at its Redis node's clock */
	int64_t test_offset_ms;	/* FLASHSALE_TEST_CLOCK_OFFSET_MS: this host's clock set off (tests) */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int running, stopping;
};

/* What one admission step reads before it decides. */
struct figures {
	long left;		/* units left over every item, -1 unknown */
	long out;		/* outstanding: unused + young */
	long unused;		/* passes not used nor expired whose page is still there */
	long young;		/* places admitted within expect_ms yet to ask */
	int expect_ms;		/* the window after which a silent place is presumed gone */
	long used;		/* turns that ended in a purchase (passes whose shopper holds a unit) */
	long resolved;		/* turns ended: used, or lapsed (pass expired, or never asked for) */
	int counted;		/* out, used and resolved were read (units left and places waiting) */
	long admitted;		/* Redis' count of places admitted */
	long total;		/* places in Redis up to the highest one in PostgreSQL */
	long recorded;		/* PostgreSQL's count after its last step, 0 none */
};

/* A warning, at most once per QUIET_MS: a store away must not flood the log. */
static void __attribute__((format(printf, 3, 4)))
pacer_warn(fs_queue_pacer *p, int64_t now, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (now < p->quiet_until)
		return;
	p->quiet_until = now + QUIET_MS;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fs_log_warn("queue pacer: %s", msg);
}

fs_queue_pacer *
fs_queue_pacer_new(const struct fs_cfg *cfg, const char *datadir, int step_ms, char *err,
    size_t errlen)
{
	fs_queue_pacer *p;
	unsigned char id[8];
	char path[1024];

	if ((p = calloc(1, sizeof(*p))) == NULL) {
		snprintf(err, errlen, "queue pacer: out of memory");
		return NULL;
	}
	p->step_ms = step_ms > 0 ? step_ms : FS_QUEUE_PACER_STEP_MS;
	p->test_offset_ms = fs_cfg_test_clock_offset_ms(cfg);
	randombytes_buf(id, sizeof(id));
	snprintf(p->owner, sizeof(p->owner), "%ld-", (long)getpid());
	sodium_bin2hex(p->owner + strlen(p->owner), sizeof(p->owner) - strlen(p->owner), id,
	    sizeof(id));
	if ((p->pg = fs_pg_new(fs_cfg_get(cfg, FS_CFG_PG))) == NULL) {
		snprintf(err, errlen, "queue pacer: FLASHSALE_PG is too long");
		goto fail;
	}
	if ((p->st = fs_stock_new(cfg, NULL, err, errlen)) == NULL)
		goto fail;
	snprintf(path, sizeof(path), "%s/lua/queue_admit.lua", datadir);
	if ((p->admit = fs_redis_script_load(p->st->redis, path)) < 0)
		goto fail_script;
	snprintf(path, sizeof(path), "%s/lua/queue_clock.lua", datadir);
	if ((p->clock = fs_redis_script_load(p->st->redis, path)) < 0)
		goto fail_script;
	snprintf(path, sizeof(path), "%s/lua/queue_trim.lua", datadir);
	if ((p->journal.trim = fs_redis_script_load(p->st->redis, path)) < 0)
		goto fail_script;
	p->journal.pg = p->pg;
	p->journal.st = p->st;
	p->journal.owner = p->owner;
	p->journal.wait_ms = (int)fs_cfg_long(cfg, FS_CFG_REDIS_WAIT_MS);
	return p;
fail_script:
	snprintf(err, errlen, "queue pacer scripts: %s", p->st->redis->errstr);
fail:
	fs_queue_pacer_free(p);
	return NULL;
}

static void
forget_sales(fs_queue_pacer *p)
{
	for (int i = 0; i < p->nsales; i++)
		free(p->sales[i].items);
	p->nsales = 0;
}

void
fs_queue_pacer_free(fs_queue_pacer *p)
{
	if (p == NULL)
		return;
	forget_sales(p);
	fs_stock_free(p->st);
	fs_pg_free(p->pg);
	free(p);
}

const char *
fs_queue_pacer_owner(const fs_queue_pacer *p)
{
	return p->owner;
}

/* ---- the live queue sales ---- */

/* The settings of a sale, from the canonical JSON of sales.queue; 0 or -1. */
static int
settings_of(const char *text, struct fs_queue_settings *set, char *err, size_t errlen)
{
	char why[64];
	json_object *o = fs_jsonread_object(text, strlen(text), 2, why, sizeof(why));
	int rc;

	if (o == NULL) {
		snprintf(err, errlen, "not JSON");
		return -1;
	}
	rc = fs_queue_settings_parse(o, set, err, errlen);
	json_object_put(o);
	return rc;
}

/* The entry of sale id among those already paced, or a fresh one; NULL when full. */
static struct paced *
paced_slot(fs_queue_pacer *p, uint64_t id, struct paced *old, int nold)
{
	struct paced *s = &p->sales[p->nsales];

	for (int i = 0; i < nold; i++)
		if (old[i].id == id) {
			*s = old[i];
			old[i].items = NULL;
			return s;
		}
	memset(s, 0, sizeof(*s));
	s->id = id;
	return s;
}

/*
 * The item ids of a sale (at most ITEMS_MAX), from the family's one reader
 * of a queue sale (fs_queue_conf_read): the count, or -1 with err.
 */
static int
item_ids(fs_pg *pg, uint64_t sale, uint64_t *items, char *err, size_t errlen)
{
	struct fs_queue_conf c = { 0 };
	int n = -1;

	if (fs_queue_conf_read(pg, sale, &c, err, errlen) != 0)
		goto out;
	n = c.nitems < ITEMS_MAX ? c.nitems : ITEMS_MAX;
	if (n > 0)
		memcpy(items, c.items, (size_t)n * sizeof(*items));
out:
	fs_queue_conf_clear(&c);
	return n;
}

/* Row i of the scan into the paced sales (kept: its memory of earlier steps). */
static void
scan_row(fs_queue_pacer *p, PGresult *res, int i, struct paced *old, int nold, int64_t now)
{
	struct fs_queue_settings set;
	struct paced *s;
	uint64_t id = strtoull(PQgetvalue(res, i, 0), NULL, 10);
	char err[256];
	int n;

	if (settings_of(PQgetvalue(res, i, 1), &set, err, sizeof(err)) != 0) {
		pacer_warn(p, now, "sale %" PRIu64 ": its queue settings: %s", id, err);
		return;
	}
	s = paced_slot(p, id, old, nold);
	s->set = set;
	s->opens_ms = strtoll(PQgetvalue(res, i, 2), NULL, 10);
	s->ends_ms = strtoll(PQgetvalue(res, i, 3), NULL, 10);
	s->pre_ms = (int64_t)set.pre_s * 1000;
	if (now < s->opens_ms - s->pre_ms)
		goto skip;
	if (s->items == NULL && (s->items = calloc(ITEMS_MAX, sizeof(*s->items))) == NULL)
		goto skip;
	if ((n = item_ids(p->pg, id, s->items, err, sizeof(err))) < 0) {
		pacer_warn(p, now, "sale %" PRIu64 ": %s", id, err);
		goto skip;
	}
	s->nitems = n;
	p->nsales++;
	return;
skip:
	free(s->items);
	s->items = NULL;
}

/* Re-reads the live queue sales from PostgreSQL; 0, or -1 (the old list kept). */
static int
scan(fs_queue_pacer *p, int64_t now)
{
	static const char sql[] =
	    "SELECT id, queue::text, floor(extract(epoch FROM starts_at) * 1000)::bigint, "
	    "floor(extract(epoch FROM ends_at) * 1000)::bigint FROM sales "
	    "WHERE queue IS NOT NULL AND ends_at > to_timestamp($1::bigint / 1000.0) "
	    "AND starts_at <= to_timestamp($1::bigint / 1000.0) + interval '1 day' "
	    "ORDER BY id DESC LIMIT $2";
	char now_s[24], max_s[24];
	const char *params[2] = { now_s, max_s };
	struct paced *old;
	PGresult *res;
	int nold = p->nsales;

	snprintf(now_s, sizeof(now_s), "%" PRId64, now - AFTER_END_MS);
	snprintf(max_s, sizeof(max_s), "%d", FS_QUEUE_PACER_SALES_MAX);
	if ((res = fs_pg_exec(p->pg, sql, 2, params)) == NULL) {
		pacer_warn(p, now, "live queue sales: %s", p->pg->errstr);
		return -1;
	}
	if ((old = malloc(sizeof(p->sales))) == NULL) {
		PQclear(res);
		return -1;
	}
	memcpy(old, p->sales, sizeof(p->sales));
	p->nsales = 0;
	for (int i = 0; i < PQntuples(res) && p->nsales < FS_QUEUE_PACER_SALES_MAX; i++)
		scan_row(p, res, i, old, nold, now);
	for (int i = 0; i < nold; i++)
		free(old[i].items);
	free(old);
	PQclear(res);
	p->scanned_ms = now;
	return 0;
}

/* ---- the lease ---- */

/* 1 when this pacer holds the sale's lease (taken or renewed), 0 another does, -1 Redis failed. */
static int
lease_take(fs_queue_pacer *p, uint64_t sale)
{
	char k[FS_QUEUE_KEY_LEN], ms[24];
	redisReply *r;
	int rc = -1;

	fs_queue_key(k, sale, "lease");
	snprintf(ms, sizeof(ms), "%d", FS_QUEUE_LEASE_MS);
	r = fs_redis_argv(p->st->redis, 6,
	    (const char *[]){ "SET", k, p->owner, "NX", "PX", ms }, NULL);
	if (r == NULL)
		return -1;
	if (r->type == REDIS_REPLY_STATUS) {
		freeReplyObject(r);
		return 1;
	}
	freeReplyObject(r);
	if ((r = fs_redis_argv(p->st->redis, 2, (const char *[]){ "GET", k }, NULL)) == NULL)
		return -1;
	rc = r->type == REDIS_REPLY_STRING && strcmp(r->str, p->owner) == 0;
	freeReplyObject(r);
	if (rc == 1 && (r = fs_redis_argv(p->st->redis, 3, (const char *[]){ "PEXPIRE", k, ms },
			    NULL)) != NULL)
		freeReplyObject(r);
	return rc;
}

/* ---- admission ---- */

/* An integer reply (or a string of one; nil: 0); -1 with Redis' error when neither. */
static long
redis_long(fs_queue_pacer *p, int argc, const char **argv)
{
	redisReply *r = fs_redis_argv(p->st->redis, argc, argv, NULL);
	long v = -1;

	if (r == NULL)
		return -1;
	if (r->type == REDIS_REPLY_INTEGER)
		v = (long)r->integer;
	else if (r->type == REDIS_REPLY_NIL)
		v = 0;
	else if (r->type == REDIS_REPLY_STRING)
		v = strtol(r->str, NULL, 10);
	freeReplyObject(r);
	return v;
}

/* Units left over every item of the sale: -1 when Redis cannot say or does not know one. */
static long
units_left(fs_queue_pacer *p, const struct paced *s)
{
	long left[ITEMS_MAX], sum = 0;

	if (s->nitems == 0 || fs_stock_left(p->st, s->id, s->items, (size_t)s->nitems, left) != 0)
		return -1;
	for (int i = 0; i < s->nitems; i++) {
		if (left[i] < 0)
			return -1;
		sum += left[i];
	}
	return sum;
}

/*
 * PostgreSQL's count of places admitted after its last step (0 none) and
 * the highest score copied to queue_places ("" none); 0, or -1 when it
 * cannot say.
 */
static int
recorded(fs_queue_pacer *p, uint64_t sale, long *admitted, char high[24])
{
	char sale_s[24];
	const char *params[1] = { sale_s };
	PGresult *res;

	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, sale);
	if ((res = fs_pg_exec(p->pg, "SELECT (SELECT admitted FROM queue_admissions "
				     "WHERE sale_id = $1 ORDER BY step DESC LIMIT 1), "
				     "(SELECT max(score) FROM queue_places WHERE sale_id = $1)",
		 1, params)) == NULL)
		return -1;
	*admitted = PQntuples(res) == 1 ? strtol(PQgetvalue(res, 0, 0), NULL, 10) : 0;
	snprintf(high, 24, "%s", PQntuples(res) == 1 ? PQgetvalue(res, 0, 1) : "");
	PQclear(res);
	return 0;
}

/* PostgreSQL's count of places admitted at since_ms (0 none then); -1 when it cannot say. */
static long
admitted_at(fs_queue_pacer *p, uint64_t sale, int64_t since_ms)
{
	char sale_s[24], since_s[24];
	const char *params[2] = { sale_s, since_s };
	PGresult *res;
	long then = 0;

	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, sale);
	snprintf(since_s, sizeof(since_s), "%" PRId64, since_ms);
	if ((res = fs_pg_exec(p->pg, "SELECT admitted FROM queue_admissions WHERE sale_id = $1 "
				     "AND at <= to_timestamp($2::bigint / 1000.0) "
				     "ORDER BY step DESC LIMIT 1", 2, params)) == NULL)
		return -1;
	if (PQntuples(res) == 1)
		then = strtol(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return then;
}

int
fs_queue_pacer_expect(long n, int64_t p90_ms, int claim_s)
{
	int64_t w = FS_QUEUE_PACER_EXPECT_MS, claim_ms = (int64_t)claim_s * 1000;

	if (n >= FS_QUEUE_PACER_CLAIMS_MIN && p90_ms >= 0)
		w = p90_ms < INT32_MAX / 2 ? 2 * p90_ms : INT32_MAX;
	if (w < FS_QUEUE_PACER_EXPECT_MIN_MS)
		w = FS_QUEUE_PACER_EXPECT_MIN_MS;
	if (claim_ms > 0 && w > claim_ms)
		w = claim_ms;
	return (int)w;
}

/*
 * The window of this step (fs_queue_pacer_expect) from the claim delays
 * the pass script recorded (fs:{S}:q:claims: one ZCARD, one ZRANGE of the
 * 90th percentile); the longest when Redis cannot say.
 */
static int
expect_window(fs_queue_pacer *p, const struct paced *s)
{
	char k[FS_QUEUE_KEY_LEN], idx[24];
	redisReply *r;
	long n;
	int64_t p90 = -1;

	fs_queue_key(k, s->id, "claims");
	if ((n = redis_long(p, 2, (const char *[]){ "ZCARD", k })) < FS_QUEUE_PACER_CLAIMS_MIN)
		return fs_queue_pacer_expect(0, -1, s->set.claim_s);
	/* The nearest rank: the ceil(0.9 n)-th delay, 0-based. */
	snprintf(idx, sizeof(idx), "%ld", (n * 9 + 9) / 10 - 1);
	r = fs_redis_argv(p->st->redis, 5, (const char *[]){ "ZRANGE", k, idx, idx, "WITHSCORES" },
	    NULL);
	if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	    r->element[1]->type == REDIS_REPLY_STRING)
		p90 = (int64_t)strtod(r->element[1]->str, NULL);
	if (r != NULL)
		freeReplyObject(r);
	return fs_queue_pacer_expect(p90 >= 0 ? n : 0, p90, s->set.claim_s);
}

/*
 * What is outstanding: the passes not used nor expired whose page still
 * asks for them (a page holding an unused pass asks again every
 * FS_QUEUE_PASS_PING_MS; one quiet for max(claimSeconds,
 * FS_QUEUE_PASS_IDLE_MS) has left, its item sold out or not), and the
 * places admitted within the learned window (expect_window) that have not
 * asked for theirs yet (admitted then, fewer the passes issued to those
 * very places, found by their ranks: a pass of a place admitted earlier
 * says nothing of them). A live page asks within that time (queue.h); a
 * place admitted earlier that has not asked is presumed gone and counted
 * as a turn ended, though it may still ask until claimSeconds (then the
 * pass script refuses it one, lua/queue_pass.lua, and its turn has
 * passed for good). So a turn nobody takes holds the line for the window
 * (twice what nine in ten live pages took), not passSeconds.
 */
static int
outstanding(fs_queue_pacer *p, const struct paced *s, int64_t now, struct figures *f)
{
	struct fs_queue_tally t;
	struct fs_queue_span span;
	int64_t claim_ms = (int64_t)s->set.claim_s * 1000, idle_ms = claim_ms, expect_ms;
	long then, mid, older, younger, before;

	if (idle_ms < FS_QUEUE_PASS_IDLE_MS)
		idle_ms = FS_QUEUE_PASS_IDLE_MS;
	f->expect_ms = expect_window(p, s);
	expect_ms = f->expect_ms;
	if ((then = admitted_at(p, s->id, now - claim_ms)) < 0 ||
	    (mid = admitted_at(p, s->id, now - expect_ms)) < 0) {
		pacer_warn(p, now, "sale %" PRIu64 ": recent admissions: %s", s->id, p->pg->errstr);
		return -1;
	}
	if (mid < then)
		mid = then;
	if (mid > f->recorded)
		mid = f->recorded;
	span.from = then;
	span.mid = mid;
	span.to = f->recorded > then ? f->recorded : then;
	span.seen_since = now - idle_ms;
	if (fs_queue_passes_tally(p->st, s->id, now, &span, &t) != 0) {
		pacer_warn(p, now, "sale %" PRIu64 ": passes outstanding: %s", s->id, p->st->errstr);
		return -1;
	}
	/* Not yet asked: admitted then..mid (presumed gone), mid..recorded (on their way). */
	older = mid - then > t.older ? mid - then - t.older : 0;
	younger = span.to - mid > t.after - t.older ? span.to - mid - (t.after - t.older) : 0;
	f->unused = t.unused - t.idle;
	f->young = younger;
	f->out = f->unused + f->young;
	/*
	 * Turns ended: passes used, passes lapsed or left idle, the places
	 * presumed gone, and the places admitted before the claim window that
	 * never asked for a pass (admitted then, fewer the passes of those
	 * places).
	 */
	before = t.all - t.after;
	f->used = t.used;
	f->resolved = t.used + t.lapsed + t.idle + older + (then > before ? then - before : 0);
	f->counted = 1;
	return 0;
}

/*
 * What a step decides from; 0, or -1 (logged) when a store cannot say, or
 * (quietly) when the journal was not emptied and PostgreSQL's places are
 * not yet a prefix of the line (emptied 0 and no late place copied).
 */
static int
read_figures(fs_queue_pacer *p, const struct paced *s, int64_t now, int emptied,
    struct figures *f)
{
	char state[FS_QUEUE_KEY_LEN], places[FS_QUEUE_KEY_LEN], high[24];

	fs_queue_key(state, s->id, "state");
	fs_queue_key(places, s->id, "places");
	memset(f, 0, sizeof(*f));
	f->expect_ms = fs_queue_pacer_expect(0, -1, s->set.claim_s);
	if ((f->admitted = redis_long(p, 3, (const char *[]){ "HGET", state, "admitted" })) < 0) {
		pacer_warn(p, now, "sale %" PRIu64 ": queue state: %s", s->id, p->st->redis->errstr);
		return -1;
	}
	if (recorded(p, s->id, &f->recorded, high) != 0) {
		pacer_warn(p, now, "sale %" PRIu64 ": admissions: %s", s->id, p->pg->errstr);
		return -1;
	}
	/*
	 * A journal not emptied (a rush of late joins outruns a step's copy):
	 * the places PostgreSQL has are still the first of the line once it
	 * has a late one (the journal is copied in order, and every drawn
	 * place was journalled before the first late one: one clock decides,
	 * queue_join.lua), so admission goes on from them instead of stalling
	 * until the rush ends. Before any late place, a drawn one not yet
	 * copied could rank below the highest copied: wait.
	 */
	if (!emptied && (high[0] == '\0' || strtoll(high, NULL, 10) < FS_QUEUE_LATE_BASE))
		return -1;
	/*
	 * The places waiting stop at the highest one PostgreSQL has (late
	 * places are copied in the order of their numbers): one that joined
	 * after the journal's copy waits for the next step, so no step admits
	 * a place PostgreSQL lacks (nor, with FLASHSALE_REDIS_WAIT_MS, one no
	 * replica had: the copy waits for one).
	 */
	if (high[0] != '\0' &&
	    (f->total = redis_long(p, 4, (const char *[]){ "ZCOUNT", places, "-inf", high })) < 0) {
		pacer_warn(p, now, "sale %" PRIu64 ": places: %s", s->id, p->st->redis->errstr);
		return -1;
	}
	if ((f->left = units_left(p, s)) < 0) {
		pacer_warn(p, now, "sale %" PRIu64 ": units left unknown (not warmed?) %s", s->id,
		    p->st->errstr);
		return -1;
	}
	/* Nothing to sell or nobody waiting: what is outstanding changes nothing. */
	if (f->left == 0 || f->total <= f->admitted)
		return 0;
	if (outstanding(p, s, now, f) != 0)
		return -1;
	/*
	 * The units left again, after the passes: a purchase made between the
	 * two reads is then subtracted twice (a pass unused, a unit gone), never
	 * counted twice (a unit left and a pass used), which would over-admit.
	 */
	if ((f->left = units_left(p, s)) < 0) {
		pacer_warn(p, now, "sale %" PRIu64 ": units left unknown %s", s->id, p->st->errstr);
		return -1;
	}
	return 0;
}

int
fs_queue_pacer_multiple(int mult_milli, long used, long resolved)
{
	int64_t m;

	if (resolved < FS_QUEUE_PACER_RESOLVED_MIN)
		return 1000;
	m = used > 0 ? (int64_t)resolved * 1000 / used : mult_milli;
	if (m > mult_milli)
		m = mult_milli;
	return m < 1000 ? 1000 : (int)m;
}

/* z^2 of the odds fs_queue_pacer_places sizes for: 1.645^2, about 95 %. */
#define TAIL_Z2 2.706

long
fs_queue_pacer_places(int mult_milli, int cap_milli, long need)
{
	int64_t lo = ((int64_t)mult_milli * need + 999) / 1000, hi;
	double p, q;

	if (cap_milli < mult_milli)
		cap_milli = mult_milli;
	hi = ((int64_t)cap_milli * need + 999) / 1000;
	if (need <= 0 || mult_milli <= 1000)
		return (long)lo;
	p = 1000.0 / mult_milli;
	q = 1.0 - p;
	/* The odds grow with n from lo on (p x lo >= need): the first n whose are enough. */
	while (lo < hi) {
		int64_t n = lo + (hi - lo) / 2;
		double d = p * (double)n - (double)need + 0.5;

		if (d >= 0 && d * d >= TAIL_Z2 * (double)n * p * q)
			hi = n;
		else
			lo = n + 1;
	}
	return (long)lo;
}

/*
 * Places to admit now: the budget (the effective multiple x units left -
 * passes outstanding), the capacity's credit (capacityPerSecond, earned per
 * millisecond, at most a step's worth kept) and the places waiting.
 */
static long
pace(const fs_queue_pacer *p, struct paced *s, const struct figures *f, int64_t now)
{
	int64_t cap = (int64_t)s->set.cap_per_s * p->step_ms, k, budget;

	/* Read only while units are left and places wait: otherwise the last one stands. */
	if (f->counted || s->mult_milli == 0)
		s->mult_milli = fs_queue_pacer_multiple(s->set.mult_milli, f->used, f->resolved);
	/*
	 * The multiple applies to the units not already covered by a pass in
	 * hand: a shopper who asked for a pass and is still there buys (or
	 * takes another item); of the places yet to ask and those admitted
	 * now, about 1 in the multiple walks away. So the places outstanding
	 * never exceed admitMultiple x the units left, and the shoppers
	 * expected to buy exceed the units left by a few at most.
	 * Sized for the odds (fs_queue_pacer_places): with people walking away
	 * (a multiple above 1) ceil(1.25 x 100) = 125 places bring 100 shoppers
	 * only about half the time, and each time they bring one short the
	 * last unit waits a window and another step (issue 35: a tenth walking
	 * away took 1.64x as long as none, a third admission round after the
	 * replacements). At most admitMultiple x the units (queue verify's
	 * bound), and exactly the units with a multiple of 1.
	 */
	budget = fs_queue_pacer_places(s->mult_milli, s->set.mult_milli, f->left - f->unused) -
	    f->young;

	if (cap < 1000)
		cap = 1000;
	if (s->last_ms == 0)
		s->credit = cap;
	else if (now > s->last_ms)
		s->credit += (int64_t)s->set.cap_per_s * (now - s->last_ms);
	if (s->credit > cap)
		s->credit = cap;
	s->last_ms = now;
	k = s->credit / 1000;
	if (budget < k)
		k = budget;
	if (f->total - f->admitted < k)
		k = f->total - f->admitted;
	if (k <= 0)
		return 0;
	s->credit -= k * 1000;
	return (long)k;
}

/* The score of the n-th place in line (n >= 1) into out; 0, or -1 when Redis has none. */
static int
place_score(fs_queue_pacer *p, uint64_t sale, long n, char out[24])
{
	char places[FS_QUEUE_KEY_LEN], idx[24];
	redisReply *r;
	int rc = -1;

	fs_queue_key(places, sale, "places");
	snprintf(idx, sizeof(idx), "%ld", n - 1);
	r = fs_redis_argv(p->st->redis, 5,
	    (const char *[]){ "ZRANGE", places, idx, idx, "WITHSCORES" }, NULL);
	if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
	    r->element[1]->type == REDIS_REPLY_STRING) {
		snprintf(out, 24, "%.0f", strtod(r->element[1]->str, NULL));
		rc = 0;
	}
	if (r != NULL)
		freeReplyObject(r);
	return rc;
}

/*
 * Records a step in queue_admissions: admitted places in all after it, the
 * last one's score, at now, the window it presumed silent places gone after
 * (`queue verify` checks its budget with it); only while PostgreSQL's last step says
 * expected (and a step number taken twice fails its primary key), so of
 * two pacers at most one records. 1 recorded, 0 refused, -1 failed.
 */
static int
record_step(fs_queue_pacer *p, uint64_t sale, long expected, long admitted, const char *through,
    int64_t now, int from_redis, int expect_ms)
{
	char sale_s[24], exp_s[24], adm_s[24], now_s[24], win_s[24];
	const char *params[7] = { sale_s, adm_s, through, exp_s, now_s, from_redis ? "t" : "f",
		win_s };
	PGresult *res;
	int rc;

	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, sale);
	snprintf(exp_s, sizeof(exp_s), "%ld", expected);
	snprintf(adm_s, sizeof(adm_s), "%ld", admitted);
	snprintf(now_s, sizeof(now_s), "%" PRId64, now);
	snprintf(win_s, sizeof(win_s), "%d", expect_ms);
	res = fs_pg_exec(p->pg,
	    "INSERT INTO queue_admissions (sale_id, step, admitted, through, at, from_redis, "
	    "expect_ms) "
	    "SELECT $1, coalesce(max(step), 0) + 1, $2, $3, to_timestamp($5::bigint / 1000.0), "
	    "$6::boolean, $7::integer "
	    "FROM queue_admissions WHERE sale_id = $1 "
	    "HAVING coalesce((array_agg(admitted ORDER BY step DESC))[1], 0) = $4::bigint "
	    "RETURNING step",
	    7, params);
	if (res == NULL)
		return -1;
	rc = PQntuples(res) == 1;
	PQclear(res);
	return rc;
}

/*
 * Moves Redis' threshold by k places from expected (lua/queue_admit.lua),
 * sets the soldout flag and the rate, renews the lease. The count admitted
 * after it, or -1 (refused: the lease is another's or the count moved);
 * *moved_ms Redis' time of the move when it admitted, else 0.
 */
static long
move(fs_queue_pacer *p, struct paced *s, long expected, long k, int soldout, int64_t now,
    int64_t *moved_ms)
{
	char state[FS_QUEUE_KEY_LEN], places[FS_QUEUE_KEY_LEN], lease[FS_QUEUE_KEY_LEN],
	    steps[FS_QUEUE_KEY_LEN], exp_s[24], k_s[24], now_s[24], rate_s[24], ms[24], mult_s[24];
	const char *argv[12] = { state, places, lease, steps, p->owner, exp_s, k_s, now_s,
		soldout ? "1" : "0", rate_s, ms, mult_s };
	long rate = k, got = -1;
	redisReply *r;

	for (int i = 0; i < RECENT; i++)
		if (s->recent[i].at > now - 1000 && s->recent[i].at <= now)
			rate += s->recent[i].n;
	fs_queue_key(state, s->id, "state");
	fs_queue_key(places, s->id, "places");
	fs_queue_key(lease, s->id, "lease");
	fs_queue_key(steps, s->id, "steps");
	snprintf(exp_s, sizeof(exp_s), "%ld", expected);
	snprintf(k_s, sizeof(k_s), "%ld", k);
	snprintf(now_s, sizeof(now_s), "%" PRId64, now);
	snprintf(rate_s, sizeof(rate_s), "%ld", rate * 1000);
	snprintf(ms, sizeof(ms), "%d", FS_QUEUE_LEASE_MS);
	snprintf(mult_s, sizeof(mult_s), "%d", s->mult_milli > 0 ? s->mult_milli : 1000);
	if ((r = fs_redis_eval(p->st->redis, p->admit, 4, 12, argv)) == NULL) {
		fs_log_info("queue pacer: sale %" PRIu64 ": admission not made: %s", s->id,
		    p->st->redis->errstr);
		return -1;
	}
	*moved_ms = 0;
	if (r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
	    r->element[0]->type == REDIS_REPLY_INTEGER)
		got = (long)r->element[0]->integer;
	if (r->type == REDIS_REPLY_ARRAY && r->elements >= 3 &&
	    r->element[2]->type == REDIS_REPLY_INTEGER)
		*moved_ms = r->element[2]->integer;
	freeReplyObject(r);
	s->recent[s->next].at = now;
	s->recent[s->next].n = k;
	s->next = (s->next + 1) % RECENT;
	return got;
}

/*
 * Dates the step that admitted `admitted` by Redis' clock of its move
 * (queue_admissions.moved_at): `queue verify` compares orders, dated by
 * Redis, with it. A failure is only logged: `at` stands in.
 */
static void
record_moved(fs_queue_pacer *p, uint64_t sale, long admitted, int64_t moved_ms, int64_t now)
{
	char sale_s[24], adm_s[24], ms_s[24];
	const char *params[3] = { sale_s, adm_s, ms_s };

	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, sale);
	snprintf(adm_s, sizeof(adm_s), "%ld", admitted);
	snprintf(ms_s, sizeof(ms_s), "%" PRId64, moved_ms);
	if (fs_pg_run(p->pg, "UPDATE queue_admissions SET moved_at = to_timestamp($3::bigint / 1000.0) "
			     "WHERE sale_id = $1 AND admitted = $2 AND moved_at IS NULL", 3, params) != 0)
		pacer_warn(p, now, "sale %" PRIu64 ": the move's time: %s", sale, p->pg->errstr);
}

/*
 * One admission step of a sale. A step PostgreSQL recorded that Redis has
 * not made (its pacer died in between) is made first, as it was recorded;
 * Redis ahead of PostgreSQL (a lost row, or a count changed by hand) is
 * recorded as it is, marked from_redis: `queue verify` reports it. Otherwise
 * the places paced now are recorded, then admitted.
 */
static void
admit_step(fs_queue_pacer *p, struct paced *s, int64_t now, int emptied)
{
	struct figures f;
	char through[24];
	int64_t moved;
	long k = 0, got;
	int soldout;

	if (read_figures(p, s, now, emptied, &f) != 0)
		return;
	soldout = f.left == 0;
	if (f.recorded > f.admitted) {
		k = f.recorded - f.admitted;
		fs_log_info("queue pacer: sale %" PRIu64 ": making the step recorded before "
			    "(%ld admitted, %ld in Redis)", s->id, f.recorded, f.admitted);
	} else if (f.recorded < f.admitted) {
		fs_log_error("queue pacer: sale %" PRIu64 ": Redis admitted %ld, PostgreSQL recorded "
			     "%ld: recording Redis' count", s->id, f.admitted, f.recorded);
		if (place_score(p, s->id, f.admitted, through) != 0 ||
		    record_step(p, s->id, f.recorded, f.admitted, through, now, 1,
			f.expect_ms) != 1)
			return;
	} else if ((k = pace(p, s, &f, now)) > 0) {
		if (place_score(p, s->id, f.admitted + k, through) != 0) {
			pacer_warn(p, now, "sale %" PRIu64 ": place %ld: %s", s->id, f.admitted + k,
			    p->st->redis->errstr);
			return;
		}
		/* Recorded first: a pacer that dies now leaves a step the next one makes. */
		if (record_step(p, s->id, f.admitted, f.admitted + k, through, now, 0,
			f.expect_ms) != 1) {
			pacer_warn(p, now, "sale %" PRIu64 ": step not recorded (another pacer?) %s",
			    s->id, p->pg->errstr);
			return;
		}
	}
	if ((got = move(p, s, f.admitted, k, soldout, now, &moved)) > f.admitted && moved > 0)
		record_moved(p, s->id, got, moved, now);
}

/*
 * After the end, once the journal is all in PostgreSQL (which keeps the
 * waiting room for good), the sale's queue keys expire a day after the end.
 */
static void
expire_keys(fs_queue_pacer *p, struct paced *s)
{
	static const char *const names[] = { "conf", "places", "late", "journal", "state", "passes",
		"steps", "seen", "claims", NULL };
	char k[FS_QUEUE_KEY_LEN], at[24];
	redisReply *r;

	snprintf(at, sizeof(at), "%" PRId64, s->ends_ms + KEEP_AFTER_END_MS);
	for (int i = 0; names[i] != NULL; i++) {
		fs_queue_key(k, s->id, names[i]);
		if ((r = fs_redis_argv(p->st->redis, 3, (const char *[]){ "PEXPIREAT", k, at }, NULL)) ==
		    NULL)
			return;
		freeReplyObject(r);
	}
	s->expiring = 1;
	s->expiry_for = s->ends_ms;
}

/* One step of a live sale: its lease, its journal, its admission from the opening to the end. */
static int
step_sale(fs_queue_pacer *p, struct paced *s, int64_t now)
{
	int lease = lease_take(p, s->id), copied;
	char err[300];

	if (lease < 0)
		pacer_warn(p, now, "sale %" PRIu64 ": lease: %s", s->id, p->st->redis->errstr);
	if (lease != 1)
		return 0;
	if ((copied = fs_queue_journal_copy(&p->journal, s->id, err, sizeof(err))) < 0) {
		pacer_warn(p, now, "sale %" PRIu64 ": %s", s->id, err);
		return 1;
	}
	/* Admission reads the places PostgreSQL has (read_figures). */
	if (copied >= 0 && now >= s->opens_ms + FS_QUEUE_PACER_GRACE_MS && now < s->ends_ms)
		admit_step(p, s, now, copied == 1);
	if (now >= s->ends_ms && copied == 1 && !s->expiring)
		expire_keys(p, s);
	/*
	 * The end moved since (`sale extend`; the expiry may even have followed
	 * an end read before the extension): the keys follow the new end, or a
	 * sale extended by more than a day would lose its places and passes.
	 */
	else if (s->expiring && s->expiry_for != s->ends_ms)
		expire_keys(p, s);
	return 1;
}

/*
 * The clock of sale s's Redis node (TIME, ms), the one its joins are
 * decided drawn or late by and its passes dated by: 0, or -1 (Redis
 * failed). A host whose own clock is off would otherwise admit before the
 * opening (while joins are still drawn) or count its passes wrongly.
 */
static int
sale_clock(fs_queue_pacer *p, const struct paced *s, int64_t local, int64_t *ms)
{
	if (fs_queue_redis_clock(p->st->redis, p->clock, s->id, ms) != 0) {
		pacer_warn(p, local, "sale %" PRIu64 ": Redis' clock: %s", s->id,
		    p->st->redis->errstr);
		return -1;
	}
	if (*ms - local > CLOCK_OFF_MS || local - *ms > CLOCK_OFF_MS)
		pacer_warn(p, *ms, "sale %" PRIu64 ": this host's clock is %" PRId64
		    " ms off Redis' (the pacer follows Redis')", s->id, local - *ms);
	return 0;
}

int
fs_queue_pacer_step(fs_queue_pacer *p, int64_t now)
{
	int led = 0;

	if ((p->scanned_ms == 0 || now - p->scanned_ms >= FS_QUEUE_PACER_SCAN_MS ||
		now < p->scanned_ms) &&
	    scan(p, now) != 0 && p->scanned_ms == 0)
		return -1;
	for (int i = 0; i < p->nsales; i++) {
		struct paced *s = &p->sales[i];
		int64_t t = now;

		if (p->redis_clock && sale_clock(p, s, now, &t) != 0)
			continue;
		if (t >= s->opens_ms - s->pre_ms && t < s->ends_ms + AFTER_END_MS)
			led += step_sale(p, s, t);
	}
	return led;
}

/* ---- the thread ---- */

static void *
pacer_main(void *arg)
{
	fs_queue_pacer *p = arg;
	int64_t next = fs_clock_now_ms();

	pthread_mutex_lock(&p->mu);
	while (!p->stopping) {
		int64_t now = fs_clock_now_ms(), wait;
		struct timespec ts;

		if (now >= next) {
			pthread_mutex_unlock(&p->mu);
			(void)fs_queue_pacer_step(p, now + p->test_offset_ms);
			pthread_mutex_lock(&p->mu);
			next += p->step_ms;
			/* Late by more than a step (a store was slow): start afresh. */
			if (next <= now)
				next = now + p->step_ms;
			continue;
		}
		wait = next - now;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (time_t)(wait / 1000);
		ts.tv_nsec += (long)(wait % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&p->cv, &p->mu, &ts);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

fs_queue_pacer *
fs_queue_pacer_start(const struct fs_cfg *cfg, const char *datadir, int step_ms, char *err,
    size_t errlen)
{
	fs_queue_pacer *p = fs_queue_pacer_new(cfg, datadir, step_ms, err, errlen);

	if (p == NULL)
		return NULL;
	p->redis_clock = 1;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	if (pthread_create(&p->thread, NULL, pacer_main, p) != 0) {
		snprintf(err, errlen, "queue pacer: cannot start its thread");
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
		fs_queue_pacer_free(p);
		return NULL;
	}
	p->running = 1;
	fs_log_info("queue pacer %s: stepping every %d ms", p->owner, p->step_ms);
	return p;
}

void
fs_queue_pacer_stop(fs_queue_pacer *p)
{
	if (p == NULL)
		return;
	if (p->running) {
		pthread_mutex_lock(&p->mu);
		p->stopping = 1;
		pthread_cond_signal(&p->cv);
		pthread_mutex_unlock(&p->mu);
		pthread_join(p->thread, NULL);
		pthread_cond_destroy(&p->cv);
		pthread_mutex_destroy(&p->mu);
	}
	fs_queue_pacer_free(p);
}

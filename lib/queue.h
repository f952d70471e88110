/*
 * The waiting room of a sale (docs/QUEUE.md): places drawn from a committed
 * seed, passes and tickets bound to a shopper and a sale, the join's proof
 * of work, the queue's Redis layout and the pacer that admits places.
 * A family behind this header: lib/README lists its files and their jobs.
 */
#ifndef FS_QUEUE_H
#define FS_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#define FS_QUEUE_KEY_FILE	"queue.key"
#define FS_QUEUE_KEYBYTES	32
#define FS_QUEUE_SEEDBYTES	32
/* Scores: below FS_QUEUE_LATE_BASE a drawn place, from it the late ones. */
#define FS_QUEUE_LATE_BASE	4503599627370496LL	/* 2^52 */
#define FS_QUEUE_SCORE_END	9007199254740992LL	/* 2^53: exact in a double */
#define FS_QUEUE_TOKEN_MAX	256	/* a pass or a ticket, NUL included */
#define FS_QUEUE_NONCE_MAX	32	/* a proof of work's nonce, characters */
#define FS_QUEUE_POW_BITS_MAX	28
#define FS_QUEUE_CLAIM_S	15	/* claimSeconds by default */
#define FS_QUEUE_SETTINGS_JSON_MAX	160	/* fs_queue_settings_json's output, NUL included */

struct json_object;

/* ---- no store (queue.c) ---- */

/* The pass and ticket keys, derived from queue.key; wiped when freed. */
typedef struct fs_queue_keys fs_queue_keys;

enum fs_queue_status {
	FS_QUEUE_OK = 0,
	FS_QUEUE_MALFORMED,	/* not a pass/ticket/nonce of this format, or too long */
	FS_QUEUE_BAD_TAG,	/* forged, or made under another key */
	FS_QUEUE_EXPIRED,	/* genuine pass, at or after its expiry */
	FS_QUEUE_OTHER_SALE,	/* genuine, for another sale */
	FS_QUEUE_WEAK,		/* a proof of work with too few zero bits */
	FS_QUEUE__MAX
};

const char *fs_queue_strerror(enum fs_queue_status);

fs_queue_keys *fs_queue_keys_new(void);
void fs_queue_keys_free(fs_queue_keys *);
/* Reads dir/queue.key (exactly FS_QUEUE_KEYBYTES raw bytes); 0, or -1 with err. */
int fs_queue_keys_load_dir(fs_queue_keys *, const char *dir, char *err, size_t errlen)
    __attribute__((warn_unused_result));
void fs_queue_keys_set(fs_queue_keys *, const unsigned char raw[FS_QUEUE_KEYBYTES]);

/* The draw of an account: the first 52 bits of HMAC-SHA256(seed, sub). */
int64_t fs_queue_draw(const unsigned char seed[FS_QUEUE_SEEDBYTES], const char *sub,
    size_t sublen);
/* hex SHA-256 of the seed, 64 characters and a NUL. */
void fs_queue_seed_commit(const unsigned char seed[FS_QUEUE_SEEDBYTES], char hex[65]);

/* A pass for sub in sale until expires_s (unix seconds); 0, or -1 when out is short. */
int fs_queue_pass_mint(const fs_queue_keys *, uint64_t sale, const char *sub,
    int64_t expires_s, char *out, size_t outmax) __attribute__((warn_unused_result));
/*
 * Checks a pass (len bytes, no NUL needed) for sale at now_s; FS_QUEUE_OK
 * with the shopper in sub (submax bytes) and the expiry in *expires_s
 * (either may be NULL).
 */
enum fs_queue_status fs_queue_pass_check(const fs_queue_keys *, const char *pass, size_t len,
    uint64_t sale, int64_t now_s, char *sub, size_t submax, int64_t *expires_s);

/* The join's ticket for sub in sale; 0, or -1 when out is short. */
int fs_queue_ticket_mint(const fs_queue_keys *, uint64_t sale, const char *sub, char *out,
    size_t outmax) __attribute__((warn_unused_result));
enum fs_queue_status fs_queue_ticket_check(const fs_queue_keys *, const char *ticket,
    size_t len, uint64_t sale, char *sub, size_t submax);

/* SHA-256("fsq1|<sale>|<sub>|<nonce>") starts with bits zero bits (0: always OK). */
enum fs_queue_status fs_queue_pow_check(uint64_t sale, const char *sub, const char *nonce,
    size_t len, unsigned bits);

/* A sale's waiting room settings ("queue" of the sale file). */
struct fs_queue_settings {
	int pre_s;		/* preQueueSeconds, 60..86400, 900 */
	int pass_s;		/* passSeconds, 30..1800, 120 */
	int pow_bits;		/* powBits, 0..28, 14: about 1 s in a phone's browser */
	int mult_milli;		/* admitMultiple x 1000, 1000..10000, 1500 */
	int cap_per_s;		/* capacityPerSecond, 1..100000, 2000 */
	int claim_s;		/* claimSeconds, 5..120, 15: an admitted place asks for its pass
				 * within this long, or its turn passes to the next place */
};

void fs_queue_settings_default(struct fs_queue_settings *);
/*
 * Reads the "queue" member of a sale file (a JSON object; every member
 * optional, the rest from the defaults) into *s. 0, or -1 with err naming
 * the unknown member, the wrong type or the value out of range (for the
 * caller to prefix: "\"powBits\" must be an integer from 0 to 28"); *s is
 * then unchanged.
 */
int fs_queue_settings_parse(const struct json_object *queue, struct fs_queue_settings *s,
    char *err, size_t errlen) __attribute__((warn_unused_result));
/*
 * The settings as one canonical JSON object with every member (what
 * sales.queue stores) into out; its length, or -1 when out is too small
 * (FS_QUEUE_SETTINGS_JSON_MAX always suffices).
 */
int fs_queue_settings_json(const struct fs_queue_settings *, char *out, size_t outmax);

/* ---- Redis (queue_redis.c) ---- */

/*
 * The waiting room's keys of a sale (fs:{S}:q:*, docs/QUEUE.md), every one
 * in the sale's first place tag, and the scripts lua/queue_join.lua,
 * queue_pass.lua and queue_state.lua. A store owns its Redis connection
 * (one per thread, like a fs_stock), so that fs_queue_replicate waits for
 * the queue's own writes only.
 */
struct fs_cfg;
struct fs_redis;

struct fs_queue_join_ask;
struct fs_redis_call;

typedef struct fs_queue_store {
	struct fs_redis *redis;	/* owned */
	int join, pass, state;	/* script handles */
	int err;		/* enum fs_redis_err of the last failure, 0 none */
	char errstr[128];
	struct fs_redis_call *calls;	/* owned: a join batch's calls */
	struct fs_queue_join_ask *batch; /* the batch of fs_queue_join_begin until its end */
	size_t nbatch;
	/*
	 * 1 when replicas must have what is answered (FLASHSALE_REDIS_WAIT_MS):
	 * a place or pass found again is written again (one HSET of the state),
	 * so that the caller's WAIT covers it: the answer before may have been
	 * a 503 whose WAIT failed.
	 */
	int sync;
} fs_queue_store;

/*
 * A sale's queue window and pass length as the caller read them from
 * PostgreSQL (fs_queue_conf): the scripts take them as arguments, so
 * Redis holds no copy to keep in step (a sale extended or closed is seen
 * within the caller's cache time).
 */
struct fs_queue_window {
	int64_t pre_ms;		/* joining opens: startsAt - preQueueSeconds */
	int64_t opens_ms;	/* startsAt: the draw's end */
	int64_t ends_ms;	/* endsAt: no join, no pass from then on */
	int pass_s;		/* passSeconds */
	int claim_s;		/* claimSeconds */
};

enum fs_queue_verdict {
	FS_QUEUE_V_OK,		/* joined (or the same place again); pass issued (or again) */
	FS_QUEUE_V_NOT_YET,	/* join: before pre_ms; pass: rank >= admitted */
	FS_QUEUE_V_ENDED,	/* from ends_ms on */
	FS_QUEUE_V_CLOSED,	/* join: a new place while sold out with no pass outstanding */
	FS_QUEUE_V_NOT_IN_QUEUE,
	FS_QUEUE_V_SOLD_OUT,	/* sold out, and no pass was issued to this place */
	FS_QUEUE_V_LAPSED,	/* the pass issued has expired: never issued again */
	FS_QUEUE_V_ERROR,	/* store err set */
	FS_QUEUE_V__MAX
};

const char *fs_queue_verdict_name(enum fs_queue_verdict);

/* A place and what the store said about it. */
struct fs_queue_place {
	int64_t score;		/* join */
	int64_t rank;		/* 0-based; -1 before the opening (join) */
	int added;		/* 1: a new place (join), a pass issued now (pass) */
	int64_t admitted;	/* pass: places admitted so far */
	int64_t expires_ms;	/* pass: its expiry */
};

/* The status document's figures (one script, one round trip). */
struct fs_queue_state {
	int64_t admitted, through, rate_milli;
	int soldout;
	int64_t joined;		/* ZCARD places */
	int64_t drawn;		/* places taken before the opening */
	int64_t passes_out;	/* passes whose expiry is after now */
	int64_t mult_milli;	/* the pacer's effective multiple x1000, 0 not stepped yet */
	int64_t clock_ms;	/* the clock the figures were read at (Redis', or the
				 * caller's now_ms), 0 unknown (an older script) */
};

/* A store on the Redis of cfg with the scripts of datadir/lua; NULL with err. */
fs_queue_store *fs_queue_store_new(const struct fs_cfg *, const char *datadir, char *err,
    size_t errlen);
void fs_queue_store_free(fs_queue_store *);
/*
 * Joins sub to the sale's queue at now_ms: the place it has, or a new one
 * (draw before w->opens_ms, 2^52 + n after), journalled when new. now_ms
 * FS_QUEUE_NOW_REDIS (what the handler passes): Redis' clock (TIME in the
 * script) decides, the one clock every origin shares, so a handler whose
 * clock is slow, or read before a wait, never gives a drawn place after
 * the opening; another value is a test's clock.
 */
#define FS_QUEUE_NOW_REDIS 0
enum fs_queue_verdict fs_queue_join(fs_queue_store *, uint64_t sale,
    const struct fs_queue_window *w, const char *sub, int64_t draw, int64_t now_ms,
    struct fs_queue_place *out);

/* Bytes of a queue key "fs:{<sale>}:q:<name>" (lib/queue_int.h's fs_queue_key). */
#define FS_QUEUE_KEY_LEN 64
/* Joins in one pipeline: at most this many (an event loop's round). */
#define FS_QUEUE_JOIN_BATCH_MAX 64
#define FS_QUEUE_JOIN_ARGS 12

/* One join of a batch (fs_queue_join_begin), and what came of it. */
struct fs_queue_join_ask {
	uint64_t sale;
	struct fs_queue_window window;
	const char *sub;	/* the caller's until the batch ends */
	int64_t draw, now_ms;
	/* out: as fs_queue_join returns them; errstr for FS_QUEUE_V_ERROR */
	enum fs_queue_verdict verdict;
	struct fs_queue_place place;
	char errstr[160];
	/* the store's own: the script call's arguments */
	char keys[5][FS_QUEUE_KEY_LEN], nums[6][24];
	const char *argv[FS_QUEUE_JOIN_ARGS];
};
/*
 * fs_queue_join for n asks (at most FS_QUEUE_JOIN_BATCH_MAX) in one Redis
 * pipeline, in two halves for an event loop that serves other requests
 * while Redis runs them: _begin writes the calls (asks stay valid until
 * _end); _fds gives the descriptors whose replies are awaited (0: none,
 * call _end now); _deadline until when (monotonic ms); _end reads the
 * replies (and runs alone any call that did not run where it went, as
 * lib/redis's pipelines do) and fills each ask. Any other call of the
 * store ends the batch first; a second _begin too.
 */
void fs_queue_join_begin(fs_queue_store *, struct fs_queue_join_ask *asks, size_t n);
int fs_queue_join_fds(const fs_queue_store *, int *fds, int max);
int64_t fs_queue_join_deadline(const fs_queue_store *);
void fs_queue_join_end(fs_queue_store *);
/*
 * The pass of sub: issued now, or the one issued before (its expiry
 * unchanged), at now_ms (FS_QUEUE_NOW_REDIS, what the handler passes:
 * Redis' clock, which the pacer's steps are dated by too). out->rank is
 * -1 before w->opens_ms by that clock: the draw is secret until then.
 */
enum fs_queue_verdict fs_queue_pass(fs_queue_store *, uint64_t sale,
    const struct fs_queue_window *w, const char *sub, int64_t now_ms,
    struct fs_queue_place *out);
/*
 * The clock (ms) of the Redis node of sale's queue keys: the one that
 * decides a join drawn or late, dates passes and steps, and says when the
 * seed may be shown (every origin shares it, whatever its own clock says).
 * script: lua/queue_clock.lua as fs_redis_script_load loaded it on r. 0, or
 * -1 with r->errstr set.
 */
int fs_queue_redis_clock(struct fs_redis *r, int script, uint64_t sale, int64_t *ms);
/*
 * The status document's figures at now_ms (FS_QUEUE_NOW_REDIS: at Redis'
 * clock, which out->clock_ms gives); 0, or -1 with err set.
 */
int fs_queue_read_state(fs_queue_store *, uint64_t sale, int64_t now_ms,
    struct fs_queue_state *out);
/*
 * After a join or a pass that wrote: waits up to timeout_ms until a replica
 * of the sale's master has the store's writes (WAIT 1), so that a replica
 * promoted after a master's death keeps the places and passes answered.
 * 0, or -1 with err set (also when no replica acknowledged in time).
 */
int fs_queue_replicate(fs_queue_store *, int timeout_ms);

/* ---- a sale's queue read from PostgreSQL (queue_conf.c) ---- */

struct fs_pg;

/* What PostgreSQL says about a sale's waiting room and items. */
struct fs_queue_conf {
	uint64_t sale;
	int found;		/* 0: no such sale */
	int has_queue;		/* 0: a sale without "queue" */
	struct fs_queue_settings settings;
	unsigned char seed[FS_QUEUE_SEEDBYTES];
	char seed_commit[65];	/* hex SHA-256 of the seed */
	struct fs_queue_window window;
	int nitems;
	uint64_t *items;	/* the sale's item ids (owned) */
	long *pg_left;		/* per item quantity - sold, PostgreSQL's count (owned) */
};

/*
 * Reads the sale into c (zeroed, or read before: what it held is freed
 * first); 0 (found may be 0), or -1 with err (PostgreSQL away or bad data).
 */
int fs_queue_conf_read(struct fs_pg *, uint64_t sale, struct fs_queue_conf *, char *err,
    size_t errlen);
void fs_queue_conf_clear(struct fs_queue_conf *);

/*
 * A worker thread's cache of the sales it read lately, each kept
 * FS_QUEUE_CONF_CACHE_MS: PostgreSQL sees a query per sale per second and
 * thread at most, whatever the joins.
 */
#define FS_QUEUE_CONF_CACHE_MS	1000
#define FS_QUEUE_CONF_SLOTS	8
typedef struct fs_queue_conf_cache fs_queue_conf_cache;

fs_queue_conf_cache *fs_queue_conf_cache_new(void);
void fs_queue_conf_cache_free(fs_queue_conf_cache *);
/* The sale as read within the cache time, or read now; NULL with err when it cannot be. */
const struct fs_queue_conf *fs_queue_conf_get(fs_queue_conf_cache *, struct fs_pg *,
    uint64_t sale, int64_t now_ms, char *err, size_t errlen);

/* ---- the pacer (queue_pacer.c) ---- */

#define FS_QUEUE_PACER_STEP_MS	250	/* a step of every live queue sale */
#define FS_QUEUE_LEASE_MS	3000	/* a pacer's lease on a sale, renewed every step */
#define FS_QUEUE_PACER_SCAN_MS	2000	/* the live queue sales re-read from PostgreSQL */
/*
 * The first admission comes this long after the opening: a join sent just
 * before it (a drawn place) may still be on its way to Redis.
 */
#define FS_QUEUE_PACER_GRACE_MS	1000
/*
 * A live page asks for its pass within this long of its admission: it polls
 * the status document every 1 to 1.5 s (static/queue.js), which the edge
 * keeps up to 2 s (max-age 1 + grace 1), the pacer's step is 250 ms, and
 * the page's tick 250 ms. An admitted place silent for longer is presumed
 * gone: the pacer admits in its stead at once (within the effective
 * multiple), though the place may still ask until claimSeconds.
 * The window is learned (fs_queue_pacer_expect): twice the 90th percentile
 * of the delays with which the places that did ask asked (fs:{S}:q:claims),
 * at least FS_QUEUE_PACER_EXPECT_MIN_MS and at most claimSeconds, and
 * FS_QUEUE_PACER_EXPECT_MS until FS_QUEUE_PACER_CLAIMS_MIN places have
 * asked. Not capped at 5 s: when the whole system is slow (the full-scale
 * cluster rehearsal's pages took ~10 s from admission to their pass) a
 * 5 s window presumed live pages gone and admitted 13,428-15,719 places
 * for 10,000 units. Each step
 * records the window it used (queue_admissions.expect_ms), which `queue
 * verify` checks the step's budget with.
 */
#define FS_QUEUE_PACER_EXPECT_MS 5000
#define FS_QUEUE_PACER_EXPECT_MIN_MS 2000
#define FS_QUEUE_PACER_CLAIMS_MIN 20
/*
 * A page holding an unused pass asks for it again every
 * FS_QUEUE_PASS_PING_MS (static/queue.js); a pass whose page has not asked
 * for max(claimSeconds, FS_QUEUE_PASS_IDLE_MS) counts as gone (its shopper
 * left), not outstanding, though it stays valid until it expires.
 */
#define FS_QUEUE_PASS_PING_MS	5000
#define FS_QUEUE_PASS_IDLE_MS	15000
/* Turns ended (passes used or lapsed) before the multiple adapts to them. */
#define FS_QUEUE_PACER_RESOLVED_MIN 20
#define FS_QUEUE_PACER_SALES_MAX 64	/* live queue sales one pacer steps */

struct fs_cfg;
struct fs_stock;
typedef struct fs_queue_pacer fs_queue_pacer;

/*
 * A pacer on the stores of cfg (its own PostgreSQL and Redis connections,
 * made when first used, remade after a failure) with the scripts of
 * datadir/lua, stepping every step_ms; NULL with err written.
 */
fs_queue_pacer *fs_queue_pacer_new(const struct fs_cfg *, const char *datadir, int step_ms,
    char *err, size_t errlen);
void fs_queue_pacer_free(fs_queue_pacer *);
/* The owner id its leases carry (unique per pacer). */
const char *fs_queue_pacer_owner(const fs_queue_pacer *);
/*
 * One step at now_ms of every live queue sale (from preQueueAt to a minute
 * after the end; re-read every FS_QUEUE_PACER_SCAN_MS) whose lease it holds
 * or takes: the journal copied to queue_places, then, from the opening
 * (+ grace) to the end, one admission step (docs/QUEUE.md). Failures are
 * logged, never fatal; the count of sales it led, or -1 when PostgreSQL
 * could not list them.
 */
int fs_queue_pacer_step(fs_queue_pacer *, int64_t now_ms);
/*
 * fs_queue_pacer_new and a thread that steps it every step_ms; NULL with
 * err. The thread steps each sale at its Redis node's clock (TIME), not
 * this host's: the clock that decides a join drawn or late decides the
 * opening of admission, and dates the steps the passes are compared with.
 */
fs_queue_pacer *fs_queue_pacer_start(const struct fs_cfg *, const char *datadir, int step_ms,
    char *err, size_t errlen);
/* Stops the thread of fs_queue_pacer_start (within a step) and frees the pacer; NULL is fine. */
void fs_queue_pacer_stop(fs_queue_pacer *);
/*
 * Passes outstanding of a sale at now_ms: passes whose expiry is later and
 * whose shopper holds no unit (a pass used for a purchase is spent). The
 * count, or -1 with the stock's err set.
 */
long fs_queue_passes_outstanding(struct fs_stock *, uint64_t sale, int64_t now_ms);
/*
 * The effective multiple (x1000) the pacer admits with (docs/QUEUE.md):
 * min(admitMultiple, max(1, resolved / used)), where used turns ended in a
 * purchase and resolved turns ended (used or lapsed); 1 until
 * FS_QUEUE_PACER_RESOLVED_MIN turns ended. When everyone admitted buys, as
 * many places are admitted as units are left (bots win their share of
 * units); the more passes lapse, the more are admitted, up to admitMultiple.
 */
int fs_queue_pacer_multiple(int mult_milli, long used, long resolved);
/*
 * The places to have outstanding (those yet to ask, and those admitted
 * now) for need units no pass covers, with the effective multiple
 * mult_milli (x1000): of them about 1 in the multiple walks away, so
 * ceil(multiple x need) come for need units only half the time, and when
 * one short the last unit waits for a window and another step. So the
 * fewest places from which need come with odds of about 95 % (a binomial
 * of stay rate 1 / multiple, in its normal approximation with a
 * continuity correction), at least ceil(multiple x need) and at most
 * ceil(cap_milli x need), cap_milli being admitMultiple. With a multiple
 * of 1 (everyone admitted buys): need exactly.
 */
long fs_queue_pacer_places(int mult_milli, int cap_milli, long need);
/*
 * The window (ms) after which an admitted place that has not asked for its
 * pass is presumed gone: 2 x p90_ms, the 90th percentile (nearest rank) of
 * the claim delays of the n places that asked, at least
 * FS_QUEUE_PACER_EXPECT_MIN_MS and at most claim_s; FS_QUEUE_PACER_EXPECT_MS
 * (or claim_s) while n < FS_QUEUE_PACER_CLAIMS_MIN.
 */
int fs_queue_pacer_expect(long n, int64_t p90_ms, int claim_s);

struct fs_pg;

/* A waiting room as both stores have it (flashsale-admin queue status). */
struct fs_queue_figures {
	/* Redis */
	long joined;		/* places */
	long admitted;
	int64_t through;	/* -1 none */
	long rate_milli;	/* admissions/s x1000 */
	int64_t at_ms;		/* the last step, 0 none */
	int soldout;
	int mult_milli;		/* the pacer's effective multiple x1000, 0 not stepped yet */
	long journal;		/* entries not copied yet */
	long passes_out;
	char lease[48];		/* the pacer holding the lease, "" none */
	/* PostgreSQL */
	long pg_places, pg_drawn, pg_steps, pg_admitted;
};

/* Reads the figures of sale at now; 0, or -1 with err (no such sale, no waiting room, a store). */
int fs_queue_figures_read(struct fs_pg *, struct fs_stock *, uint64_t sale, int64_t now,
    struct fs_queue_figures *, char *err, size_t errlen);

/* ---- the check (queue_verify.c) ---- */

/* What `queue verify` finds wrong, by kind. */
enum fs_queue_violation {
	FS_QUEUE_WRONG_SCORE,	/* a drawn place's score is not the draw of its account */
	FS_QUEUE_WRONG_LATE,	/* late places not 2^52+1.. in the order they joined, or a
				   place on the wrong side of the opening */
	FS_QUEUE_WRONG_STEP,	/* admission steps not in turn, not growing, or through
				   not the score of their last place */
	FS_QUEUE_WRONG_ORDER,	/* an order of an account not admitted by its reservation */
	FS_QUEUE_WRONG_PLACE,	/* an account with more than one place */
	FS_QUEUE_WRONG__MAX
};

const char *fs_queue_violation_name(enum fs_queue_violation);

struct fs_queue_verify_report {
	long places, drawn;	/* rows of queue_places, of them drawn */
	long steps, admitted;	/* admission steps, places admitted after the last */
	long orders;		/* orders of the sale */
	long by_operator;	/* of them made with an operator's recorded pass */
	long violations;
};

/* Called with each violation, a line of text ("out of order: user U place P ..."). */
typedef void (*fs_queue_violation_fn)(void *arg, enum fs_queue_violation, const char *text);

/*
 * Checks the waiting room of sale from PostgreSQL alone (queue_places,
 * queue_admissions, the seed, the orders): each violation to each (may be
 * NULL), the figures into rep. 0 (rep->violations says whether it is
 * clean), or -1 with err (no such sale, no waiting room, the database).
 * late_issued >= 0 (fs_queue_late_issued: Redis' count of late numbers
 * given, its journal copied): PostgreSQL must have exactly that many late
 * places, or the last ones were deleted (the numbering alone cannot tell).
 */
int fs_queue_verify(struct fs_pg *, uint64_t sale, long late_issued, fs_queue_violation_fn each,
    void *arg, struct fs_queue_verify_report *rep, char *err, size_t errlen);
/*
 * Redis' count of the late numbers given in sale (fs:{S}:q:late) once its
 * journal is copied; -1 when Redis cannot say, has forgotten the sale, or
 * still has journal entries to copy.
 */
long fs_queue_late_issued(struct fs_stock *, uint64_t sale);

#endif

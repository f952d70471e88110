/*
 * One reservation (reserve.lua at the shopper's home place, then at the
 * other shards), the WAIT for a replica, and the end of a hold: release
 * and confirm.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "metrics.h"
#include "redis.h"
#include "stock_int.h"

/* What a purchase is told of one place's answer (a dry shard: when it was the last). */
static enum fs_stock_result
verdict(enum take t)
{
	switch (t) {
	case TAKE_RESERVED:
		return FS_STOCK_RESERVED;
	case TAKE_ALREADY:
		return FS_STOCK_ALREADY;
	case TAKE_ENDED:
	case TAKE_DRY:
		return FS_STOCK_SOLD_OUT;
	case TAKE_UNKNOWN:
		return FS_STOCK_UNKNOWN_ITEM;
	case TAKE_NOT_STARTED:
		return FS_STOCK_NOT_STARTED;
	default:
		return FS_STOCK_ERROR;
	}
}

/* Fills the call of reserve.lua at the place of tag (mode: see take). */
void
fs_stock_take_args(struct take_call *tc, const char *tag, const struct attempt *a, const char *mode)
{
	for (int k = 0; k < KEY__MAX; k++) {
		fs_stock_key(tc->keys[k], (enum key_kind)k, tag, a->item);
		tc->argv[k] = tc->keys[k];
	}
	tc->argv[KEY__MAX] = a->user;
	tc->argv[KEY__MAX + 1] = a->order_id;
	tc->argv[KEY__MAX + 2] = a->rec;
	tc->argv[KEY__MAX + 3] = a->now;
	tc->argv[KEY__MAX + 4] = a->window;
	tc->argv[KEY__MAX + 5] = a->deadline;
	tc->argv[KEY__MAX + 6] = mode;
}

/* Reads reserve.lua's reply (freed here) into out; TAKE_ERROR with err set when bad. */
enum take
fs_stock_take_reply(fs_stock *s, redisReply *r, struct fs_stock_hold *out)
{
	enum take t;
	long long code;

	if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
	    r->element[0]->type != REDIS_REPLY_INTEGER)
		goto bad;
	code = r->element[0]->integer;
	if (code == 1 || code == 2) {
		if (r->elements < 2 || r->element[1]->type != REDIS_REPLY_STRING ||
		    r->element[1]->len != FS_UUID_STRLEN)
			goto bad;
		memcpy(out->order_id, r->element[1]->str, FS_UUID_STRLEN + 1);
	}
	switch (code) {
	case 1:
		if (r->elements < 4 || r->element[2]->type != REDIS_REPLY_INTEGER ||
		    r->element[3]->type != REDIS_REPLY_INTEGER)
			goto bad;
		out->window_s = (long)r->element[2]->integer;
		out->left = (long)r->element[3]->integer;
		t = TAKE_RESERVED;
		break;
	case 2:
		t = TAKE_ALREADY;
		break;
	case 0:
		t = TAKE_ENDED;
		break;
	case 3:
		t = TAKE_DRY;
		break;
	case -1:
		t = TAKE_UNKNOWN;
		break;
	case -2:
		fs_stock_set_err(s, FS_STOCK_ERR_IO, "reserve ran past its deadline, nothing taken");
		t = TAKE_ERROR;
		break;
	case -3:
		t = TAKE_NOT_STARTED;
		break;
	default:
		goto bad;
	}
	freeReplyObject(r);
	return t;
bad:
	fs_stock_set_err(s, FS_STOCK_ERR_REPLY, "reserve");
	freeReplyObject(r);
	return TAKE_ERROR;
}

/*
 * One reserve.lua call at the place of tag: mode "guard" checks and sets
 * the shopper's guard there too (the place is the shopper's home), "take"
 * only takes the unit and records the hold.
 */
static enum take
take(fs_stock *s, const char *tag, const struct attempt *a, const char *mode,
    struct fs_stock_hold *out)
{
	struct take_call tc;
	redisReply *r;

	fs_stock_take_args(&tc, tag, a, mode);
	if ((r = fs_redis_eval(s->redis, s->reserve, KEY__MAX, KEY__MAX + 7, tc.argv)) == NULL) {
		fs_stock_redis_err(s, "reserve");
		return TAKE_ERROR;
	}
	return fs_stock_take_reply(s, r, out);
}

/*
 * guard.lua at the shopper's home place: "claim" makes order_id the
 * shopper's guard unless another order is (1, or 0 with its id in held),
 * "drop" removes the guard if it is order_id's (1 removed, 0 not). -1 err.
 */
static int
guard(fs_stock *s, const char *home_tag, const char *user, const char *order_id, const char *mode,
    const char *deadline, char held[FS_UUID_STRLEN + 1])
{
	char k[KEY_MAX];
	redisReply *r;
	int rc = -1;

	fs_stock_key(k, KEY_HOLDERS, home_tag, 0);
	if ((r = fs_redis_eval(s->redis, s->guard, 1, 5,
		 (const char *[]){ k, user, order_id, mode, deadline })) == NULL) {
		fs_stock_redis_err(s, "guard");
		return -1;
	}
	if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
	    r->element[0]->type != REDIS_REPLY_INTEGER) {
		fs_stock_set_err(s, FS_STOCK_ERR_REPLY, "guard");
	} else if (r->element[0]->integer == -2) {
		fs_stock_set_err(s, FS_STOCK_ERR_IO, "guard ran past its deadline, nothing claimed");
	} else if (r->element[0]->integer == 2) {
		if (r->elements < 2 || r->element[1]->type != REDIS_REPLY_STRING ||
		    r->element[1]->len != FS_UUID_STRLEN)
			fs_stock_set_err(s, FS_STOCK_ERR_REPLY, "guard");
		else {
			memcpy(held, r->element[1]->str, FS_UUID_STRLEN + 1);
			rc = 0;
		}
	} else {
		rc = r->element[0]->integer == 1;
	}
	freeReplyObject(r);
	return rc;
}

int
fs_stock_guard_held(fs_stock *s, const char *home_tag, const char *user, char held[FS_UUID_STRLEN + 1])
{
	char k[KEY_MAX];
	redisReply *r;
	int rc = 0;

	fs_stock_key(k, KEY_HOLDERS, home_tag, 0);
	if ((r = fs_stock_cmd(s, "guard", 3, (const char *[]){ "HGET", k, user })) == NULL)
		return -1;
	if (r->type == REDIS_REPLY_STRING && r->len == FS_UUID_STRLEN) {
		memcpy(held, r->str, FS_UUID_STRLEN + 1);
		rc = 1;
	}
	freeReplyObject(r);
	return rc;
}

/*
 * Units left of an item summed over its shards, for the sold-out gate
 * after one shard ran dry; 1 (not sold out, as far as known) when Redis
 * cannot tell.
 */
static long
left_over_shards(fs_stock *s, const struct fs_stock_layout *l, uint64_t item, int shards)
{
	char k[KEY_MAX];
	long sum = 0;

	for (int p = 0; p < shards; p++) {
		redisReply *r;

		fs_stock_key(k, KEY_STOCK, l->tags[p], item);
		if ((r = fs_stock_cmd(s, "units left", 2, (const char *[]){ "GET", k })) == NULL)
			return 1;
		if (r->type == REDIS_REPLY_STRING)
			sum += strtol(r->str, NULL, 10);
		freeReplyObject(r);
	}
	return sum;
}

static int release_at(fs_stock *, const char *tag, uint64_t sale, uint64_t item,
    const char *order_id);

/*
 * The second step of a reservation whose home place had nothing: take a
 * unit from the item's other shards in turn, then claim the shopper's guard
 * at home; a shopper whose guard another order won gives the unit back.
 */
static enum fs_stock_result
reserve_elsewhere(fs_stock *s, const struct fs_stock_layout *l, const struct attempt *a,
    struct fs_stock_hold *out)
{
	int home = a->home, shards = a->shards;
	char held[FS_UUID_STRLEN + 1];

	for (int j = home < shards ? 1 : 0; j < shards; j++) {
		int q = (home + j) % shards;

		enum take t = take(s, l->tags[q], a, "take", out);

		if (t == TAKE_DRY)
			continue;
		if (t != TAKE_RESERVED)
			return verdict(t);
		switch (guard(s, l->tags[home], a->user, a->order_id, "claim", a->deadline, held)) {
		case 1:
			fs_metrics_count(FS_M_RESERVED_ELSEWHERE);
			if (out->left == 0)
				out->left = left_over_shards(s, l, a->item, shards);
			return FS_STOCK_RESERVED;
		case 0:
			/* A concurrent purchase of the same shopper won: one unit each. */
			if (release_at(s, l->tags[q], l->sale, a->item, a->order_id) < 0)
				fs_log_warn("giving back %s failed (%s); the sweeper will", a->order_id,
				    s->errstr);
			memcpy(out->order_id, held, sizeof(held));
			return FS_STOCK_ALREADY;
		default:
			return FS_STOCK_ERROR;
		}
	}
	return FS_STOCK_SOLD_OUT;
}

/* The arguments of a reservation that do not depend on where it runs; -1 err set. */
int
fs_stock_reserve_args(fs_stock *s, struct attempt *a, int64_t now_ms)
{
	if (fs_stock_record_format(a->rec, sizeof(a->rec), a->user, a->item, now_ms,
		FS_STOCK_BROKER_SENT) < 0) {
		fs_stock_set_err(s, FS_STOCK_ERR_REPLY, "reserve: shopper id too long");
		return -1;
	}
	snprintf(a->now, sizeof(a->now), "%" PRId64, now_ms);
	snprintf(a->window, sizeof(a->window), "%d", FS_STOCK_WINDOW_DEFAULT);
	/*
	 * Half the driver's timeout: a caller who gave up (and released the
	 * order id) did so after the deadline even across a clock skew of up to
	 * that half, so a late script refuses instead of leaving a ghost. Every
	 * step of a reservation keeps the first step's deadline.
	 */
	snprintf(a->deadline, sizeof(a->deadline), "%" PRId64, now_ms + s->redis->timeout_ms / 2);
	return 0;
}

/* Where a reservation runs in the sale of layout l: the shopper's home place, the item's shards. */
void
fs_stock_reserve_place(struct attempt *a, const struct fs_stock_layout *l)
{
	a->home = fs_stock_home(a->user, l->nplaces);
	a->shards = fs_stock_shards_of(l, a->item);
}

/* True when the shopper's home place holds a shard of the item (the common path). */
int
fs_stock_home_has_shard(const struct attempt *a)
{
	return a->home < a->shards;
}

/*
 * The rest of a reservation after the home place answered t (the common
 * path: guard and unit in one script there).
 */
enum fs_stock_result
fs_stock_reserve_after_home(fs_stock *s, const struct fs_stock_layout *l, const struct attempt *a,
    enum take t, struct fs_stock_hold *out)
{
	if (t == TAKE_RESERVED && out->left == 0 && a->shards > 1)
		out->left = left_over_shards(s, l, a->item, a->shards);
	if (t != TAKE_DRY || a->shards == 1)
		return verdict(t);
	return reserve_elsewhere(s, l, a, out);
}

/* A reservation whose home place holds no shard of the item. */
enum fs_stock_result
fs_stock_reserve_from_afar(fs_stock *s, const struct fs_stock_layout *l, const struct attempt *a,
    struct fs_stock_hold *out)
{
	/* A shopper who holds one stops here. */
	switch (fs_stock_guard_held(s, l->tags[a->home], a->user, out->order_id)) {
	case 1:
		return FS_STOCK_ALREADY;
	case 0:
		return reserve_elsewhere(s, l, a, out);
	default:
		return FS_STOCK_ERROR;
	}
}

/* A reservation with its arguments in a, in the sale of layout l, one step after the other. */
static enum fs_stock_result
reserve_in(fs_stock *s, const struct fs_stock_layout *l, struct attempt *a, struct fs_stock_hold *out)
{
	fs_stock_reserve_place(a, l);
	if (!fs_stock_home_has_shard(a))
		return fs_stock_reserve_from_afar(s, l, a, out);
	return fs_stock_reserve_after_home(s, l, a, take(s, l->tags[a->home], a, "guard", out), out);
}

enum fs_stock_result
fs_stock_reserve(fs_stock *s, uint64_t sale, uint64_t item, const char *user, const char *order_id,
    int64_t now_ms, struct fs_stock_hold *out)
{
	const struct fs_stock_layout *l;
	struct attempt a = { .user = user, .order_id = order_id, .item = item };

	memset(out, 0, sizeof(*out));
	if (fs_stock_reserve_args(s, &a, now_ms) != 0 || (l = fs_stock_layout_get(s, sale)) == NULL)
		return FS_STOCK_ERROR;
	return reserve_in(s, l, &a, out);
}

int
fs_stock_replicate(fs_stock *s, int timeout_ms)
{
	long acked = fs_redis_wait(s->redis, 1, timeout_ms);

	if (acked < 0) {
		fs_stock_redis_err(s, "replicate");
		return -1;
	}
	if (acked < 1) {
		s->err = FS_STOCK_ERR_IO;
		snprintf(s->errstr, sizeof(s->errstr), "replicate: no replica had it within %d ms",
		    timeout_ms);
		return -1;
	}
	return 0;
}

/* release.lua at the place of tag; 1 the unit went back, 0 nothing held, -1 err. */
static int
release_at(fs_stock *s, const char *tag, uint64_t sale, uint64_t item, const char *order_id)
{
	char keys[4][KEY_MAX], sale_s[24], item_s[24];
	const char *argv[8];
	redisReply *r;
	int released;

	for (int k = 0; k < 4; k++) {
		fs_stock_key(keys[k], (enum key_kind)k, tag, item); /* stock, holders, orders, unconfirmed */
		argv[k] = keys[k];
	}
	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, sale);
	snprintf(item_s, sizeof(item_s), "%" PRIu64, item);
	argv[4] = order_id;
	argv[5] = sale_s;
	argv[6] = item_s;
	argv[7] = FS_STOCK_RESTOCK_CHANNEL;
	if ((r = fs_redis_eval(s->redis, s->release, 4, 8, argv)) == NULL) {
		fs_stock_redis_err(s, "release");
		return -1;
	}
	released = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
	freeReplyObject(r);
	if (released)
		fs_metrics_count(FS_M_UNITS_RELEASED);
	return released;
}

int
fs_stock_release(fs_stock *s, uint64_t sale, uint64_t item, const char *order_id)
{
	const struct fs_stock_layout *l;
	struct fs_stock_record rec;
	char k[KEY_MAX], tag[FS_STOCK_TAG_MAX], held[FS_UUID_STRLEN + 1];
	int shards;

	if ((l = fs_stock_layout_get(s, sale)) == NULL)
		return -1;
	if (l->nplaces == 1)
		return release_at(s, l->tags[0], sale, item, order_id);
	/*
	 * The unit's place holds the record; the guard may be at the shopper's
	 * home elsewhere. The guard goes first: a failure after it leaves the
	 * record, so the next release (expiry, sweeper) finds the unit again,
	 * while the other order would leave a guard that nothing clears.
	 */
	shards = fs_stock_shards_of(l, item);
	for (int q = 0; q < shards; q++) {
		redisReply *r;
		int found, home;

		fs_stock_key(k, KEY_ORDERS, l->tags[q], 0);
		if ((r = fs_stock_cmd(s, "release", 3, (const char *[]){ "HGET", k, order_id })) == NULL)
			return -1;
		found = r->type == REDIS_REPLY_STRING && fs_stock_record_parse(r->str, &rec) == 0;
		freeReplyObject(r);
		if (!found)
			continue;
		snprintf(tag, sizeof(tag), "%s", l->tags[q]);
		home = fs_stock_home(rec.user, l->nplaces);
		if (home != q &&
		    guard(s, l->tags[home], rec.user, order_id, "drop", "0", held) < 0)
			return -1;
		return release_at(s, tag, sale, item, order_id);
	}
	return 0;
}

int
fs_stock_hold_standing(fs_stock *s, uint64_t sale, const char *order_id,
    struct fs_stock_record *rec, int *recorded)
{
	const struct fs_stock_layout *l;
	char k[KEY_MAX];
	redisReply *r;

	*recorded = 0;
	memset(rec, 0, sizeof(*rec));
	if ((l = fs_stock_layout_get(s, sale)) == NULL)
		return -1;
	/* The record and its unconfirmed entry are at the place of its unit. */
	for (int p = 0; p < l->nplaces; p++) {
		fs_stock_key(k, KEY_ORDERS, l->tags[p], 0);
		if ((r = fs_stock_cmd(s, "hold", 3, (const char *[]){ "HGET", k, order_id })) == NULL)
			return -1;
		fs_stock_record_of(rec, order_id, strlen(order_id), r);
		freeReplyObject(r);
		if (!rec->exists)
			continue;
		if (!rec->readable)
			return 0;
		fs_stock_key(k, KEY_UNCONFIRMED, l->tags[p], 0);
		if ((r = fs_stock_cmd(s, "hold", 3, (const char *[]){ "ZSCORE", k, order_id })) == NULL)
			return -1;
		*recorded = r->type == REDIS_REPLY_NIL;
		freeReplyObject(r);
		return 1;
	}
	return 0;
}

/* A hold record as written (was) and as it reads once the broker has its order (now); 0 or -1. */
static int
mark_records(fs_stock *s, const struct fs_stock_record *rec, char was[FS_STOCK_RECORD_MAX],
    char now[FS_STOCK_RECORD_MAX])
{
	if (fs_stock_record_format(was, FS_STOCK_RECORD_MAX, rec->user, rec->item, rec->reserved_ms,
		rec->broker) < 0 ||
	    fs_stock_record_format(now, FS_STOCK_RECORD_MAX, rec->user, rec->item, rec->reserved_ms,
		FS_STOCK_BROKER_HAS) < 0) {
		fs_stock_set_err(s, FS_STOCK_ERR_REPLY, "mark: shopper id too long");
		return -1;
	}
	return 0;
}

int
fs_stock_broker_has(fs_stock *s, uint64_t sale, const struct fs_stock_record *rec)
{
	const struct fs_stock_layout *l;
	char k[KEY_MAX], was[FS_STOCK_RECORD_MAX], now[FS_STOCK_RECORD_MAX];
	redisReply *r;
	int done = 0;

	if (mark_records(s, rec, was, now) != 0 || (l = fs_stock_layout_get(s, sale)) == NULL)
		return -1;
	for (int p = 0; p < l->nplaces && !done; p++) {
		fs_stock_key(k, KEY_ORDERS, l->tags[p], 0);
		if ((r = fs_redis_eval(s->redis, s->mark, 1, 4,
			 (const char *[]){ k, rec->order_id, was, now })) == NULL) {
			fs_stock_redis_err(s, "mark");
			return -1;
		}
		done = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
		freeReplyObject(r);
	}
	return done;
}

long
fs_stock_mark_calls(fs_stock *s, const uint64_t *sales, const struct fs_stock_record *recs,
    size_t n, struct mark_call *m, struct fs_redis_call *calls, size_t max)
{
	size_t nc = 0;

	for (size_t i = 0; i < n; i++) {
		const struct fs_stock_layout *l = fs_stock_layout_get(s, sales[i]);

		if (l == NULL)
			return -1;
		if ((size_t)l->nplaces > max - nc) {
			fs_stock_set_err(s, FS_STOCK_ERR_REPLY, "mark: too many holds at once");
			return -1;
		}
		for (int p = 0; p < l->nplaces; p++, nc++) {
			if (mark_records(s, &recs[i], m[nc].was, m[nc].now) != 0)
				return -1;
			fs_stock_key(m[nc].key, KEY_ORDERS, l->tags[p], 0);
			memcpy(m[nc].order_id, recs[i].order_id, sizeof(m[nc].order_id));
			m[nc].argv[0] = m[nc].key;
			m[nc].argv[1] = m[nc].order_id;
			m[nc].argv[2] = m[nc].was;
			m[nc].argv[3] = m[nc].now;
			calls[nc] = (struct fs_redis_call){ .script = s->mark, .nkeys = 1, .argc = 4,
				.argv = m[nc].argv };
		}
	}
	return (long)nc;
}

int
fs_stock_broker_has_many(fs_stock *s, const uint64_t *sales, const struct fs_stock_record *recs,
    size_t n)
{
	struct mark_call *m = NULL;
	struct fs_redis_call *calls = NULL;
	size_t want = 0;
	long nc;
	int rc = -1;

	if (n > FS_STOCK_MARK_MAX) {
		fs_stock_set_err(s, FS_STOCK_ERR_REPLY, "mark: too many holds at once");
		return -1;
	}
	/* A hold is looked for at every place of its sale: one call each. */
	for (size_t i = 0; i < n; i++) {
		const struct fs_stock_layout *l = fs_stock_layout_get(s, sales[i]);

		if (l == NULL)
			return -1;
		want += (size_t)l->nplaces;
	}
	if ((m = calloc(want, sizeof(*m))) == NULL || (calls = calloc(want, sizeof(*calls))) == NULL) {
		fs_stock_set_err(s, FS_STOCK_ERR_NOMEM, "mark");
		goto out;
	}
	if ((nc = fs_stock_mark_calls(s, sales, recs, n, m, calls, want)) < 0)
		goto out;
	fs_redis_eval_many(s->redis, calls, (size_t)nc);
	rc = 0;
	for (long c = 0; c < nc; c++) {
		if (calls[c].reply == NULL) {
			fs_stock_driver_err(s, "mark", calls[c].err, calls[c].errstr);
			rc = -1;
		}
		freeReplyObject(calls[c].reply);
	}
out:
	free(calls);
	free(m);
	return rc;
}

int
fs_stock_doubt_record(fs_stock *s, uint64_t sale, uint64_t item, const char *order_id)
{
	char tag[FS_STOCK_TAG_MAX], k[KEY_MAX], num[24];

	fs_stock_place_tag(tag, sale, 0);
	fs_stock_key(k, KEY_DOUBT, tag, 0);
	snprintf(num, sizeof(num), "%" PRIu64, item);
	return fs_stock_cmd_do(s, "doubt", 4, (const char *[]){ "HSET", k, order_id, num });
}

int
fs_stock_confirm(fs_stock *s, uint64_t sale, const char *const *order_ids, size_t n)
{
	enum { BATCH = 256 };
	const struct fs_stock_layout *l;
	const char *argv[BATCH + 2];
	char k[KEY_MAX];

	if ((l = fs_stock_layout_get(s, sale)) == NULL)
		return -1;
	argv[0] = "ZREM";
	argv[1] = k;
	/* The entry is at the place of its unit, which only its record tells: try each. */
	for (int p = 0; p < l->nplaces; p++) {
		const char *const *ids = order_ids;
		size_t left = n;

		fs_stock_key(k, KEY_UNCONFIRMED, l->tags[p], 0);
		while (left > 0) {
			size_t take_n = left < BATCH ? left : BATCH;

			memcpy(argv + 2, ids, take_n * sizeof(*ids));
			if (fs_stock_cmd_do(s, "confirm", (int)take_n + 2, argv) != 0)
				return -1;
			ids += take_n;
			left -= take_n;
		}
	}
	return 0;
}

/*
 * Reading a sale: units left, holds counted and found, shards, window,
 * unconfirmed holds, the scan of every hold and the snapshot.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis.h"
#include "stock_int.h"

int
fs_stock_left(fs_stock *s, uint64_t sale, const uint64_t *items, size_t n, long *left)
{
	const struct fs_stock_layout *l;
	const char **argv = NULL;
	char(*keys)[KEY_MAX] = NULL;
	size_t *which = NULL;
	int rc = -1;

	for (size_t i = 0; i < n; i++)
		left[i] = -1;
	if (n == 0)
		return 0;
	if ((l = fs_stock_layout_get(s, sale)) == NULL)
		return -1;
	argv = calloc(n + 1, sizeof(*argv));
	keys = calloc(n, sizeof(*keys));
	which = calloc(n, sizeof(*which));
	if (argv == NULL || keys == NULL || which == NULL) {
		fs_stock_set_err(s, FS_STOCK_ERR_NOMEM, "units left");
		goto out;
	}
	argv[0] = "MGET";
	/* One MGET per place: its keys share a slot. An item's left is the sum of its shards. */
	for (int p = 0; p < l->nplaces; p++) {
		size_t m = 0;
		redisReply *r;

		for (size_t i = 0; i < n; i++) {
			if (fs_stock_shards_of(l, items[i]) <= p)
				continue;
			fs_stock_key(keys[m], KEY_STOCK, l->tags[p], items[i]);
			argv[m + 1] = keys[m];
			which[m++] = i;
		}
		if (m == 0)
			continue;
		if ((r = fs_stock_cmd(s, "units left", (int)m + 1, argv)) == NULL)
			goto out;
		if (!fs_stock_is_array(s, "units left", r, m)) {
			freeReplyObject(r);
			goto out;
		}
		for (size_t j = 0; j < m; j++)
			if (r->element[j]->type == REDIS_REPLY_STRING)
				left[which[j]] = (left[which[j]] < 0 ? 0 : left[which[j]]) +
				    strtol(r->element[j]->str, NULL, 10);
		freeReplyObject(r);
	}
	rc = 0;
out:
	free(which);
	free(keys);
	free(argv);
	return rc;
}

int
fs_stock_count_holds(fs_stock *s, uint64_t sale, const uint64_t *items, size_t n, long *holds)
{
	const struct fs_stock_layout *l;
	char k[KEY_MAX];
	struct fs_stock_record rec;

	memset(holds, 0, n * sizeof(*holds));
	if ((l = fs_stock_layout_get(s, sale)) == NULL)
		return -1;
	for (int p = 0; p < l->nplaces; p++) {
		redisReply *r;

		fs_stock_key(k, KEY_ORDERS, l->tags[p], 0);
		if ((r = fs_stock_cmd(s, "holds", 2, (const char *[]){ "HVALS", k })) == NULL)
			return -1;
		for (size_t j = 0; j < r->elements; j++) {
			if (r->element[j]->type != REDIS_REPLY_STRING ||
			    fs_stock_record_parse(r->element[j]->str, &rec) != 0)
				continue;
			for (size_t i = 0; i < n; i++)
				if (items[i] == rec.item)
					holds[i]++;
		}
		freeReplyObject(r);
	}
	return 0;
}

int
fs_stock_find_hold(fs_stock *s, uint64_t sale, const char *order_id, struct fs_stock_record *rec)
{
	const struct fs_stock_layout *l;
	char k[KEY_MAX];
	int found = 0;

	if ((l = fs_stock_layout_get(s, sale)) == NULL)
		return -1;
	for (int p = 0; p < l->nplaces && !found; p++) {
		redisReply *r;

		fs_stock_key(k, KEY_ORDERS, l->tags[p], 0);
		if ((r = fs_stock_cmd(s, "find hold", 3, (const char *[]){ "HGET", k, order_id })) == NULL)
			return -1;
		fs_stock_record_of(rec, order_id, strlen(order_id), r);
		found = rec->exists && rec->readable;
		freeReplyObject(r);
	}
	return found;
}

int
fs_stock_find_holder(fs_stock *s, uint64_t sale, const char *user, struct fs_stock_record *rec)
{
	const struct fs_stock_layout *l;
	char held[FS_UUID_STRLEN + 1];
	int found;

	memset(rec, 0, sizeof(*rec));
	if ((l = fs_stock_layout_get(s, sale)) == NULL)
		return -1;
	if ((found = fs_stock_guard_held(s, l->tags[fs_stock_home(user, l->nplaces)], user, held)) <= 0)
		return found;
	if ((found = fs_stock_find_hold(s, sale, held, rec)) <= 0)
		return found;
	/* A guard names its shopper's order only; anything else is not theirs. */
	return strcmp(rec->user, user) == 0;
}

int
fs_stock_shards(fs_stock *s, uint64_t sale, uint64_t item, struct fs_stock_shard *out, int max)
{
	struct fs_stock_layout l;
	int shards;

	if (fs_stock_layout_read(s, sale, &l) < 0)
		return -1;
	/* A fresh look at the cluster: which master serves each slot now. */
	if ((shards = fs_stock_shards_of(&l, item)) > 1 && fs_redis_masters(s->redis) < 0) {
		fs_stock_redis_err(s, "shards");
		return -1;
	}
	for (int p = 0; p < shards && p < max; p++) {
		fs_stock_node_of(s, l.tags[p], &out[p].slot, out[p].master, sizeof(out[p].master));
		snprintf(out[p].tag, sizeof(out[p].tag), "%s", l.tags[p]);
	}
	return shards;
}

long
fs_stock_window(fs_stock *s, uint64_t sale)
{
	char k[KEY_MAX], tag[FS_STOCK_TAG_MAX];
	redisReply *r;
	long window = FS_STOCK_WINDOW_DEFAULT;

	fs_stock_place_tag(tag, sale, 0);
	fs_stock_key(k, KEY_SALE, tag, 0);
	if ((r = fs_stock_cmd(s, "window", 3, (const char *[]){ "HGET", k, "window" })) == NULL)
		return window;
	if (r->type == REDIS_REPLY_STRING)
		window = strtol(r->str, NULL, 10);
	freeReplyObject(r);
	return window;
}

int64_t
fs_stock_end(fs_stock *s, uint64_t sale)
{
	char k[KEY_MAX], tag[FS_STOCK_TAG_MAX];
	redisReply *r;
	int64_t ends = 0;

	fs_stock_place_tag(tag, sale, 0);
	fs_stock_key(k, KEY_SALE, tag, 0);
	if ((r = fs_stock_cmd(s, "end", 3, (const char *[]){ "HGET", k, "ends" })) == NULL)
		return -1;
	if (r->type == REDIS_REPLY_STRING)
		ends = strtoll(r->str, NULL, 10);
	freeReplyObject(r);
	return ends;
}

/*
 * The unconfirmed holds of the place of tag with reservation times in
 * [min_s, max_s] (Redis score bounds), oldest first, after the first skip,
 * at most max, with their records.
 */
static int
unconfirmed_range(fs_stock *s, const char *tag, const char *min_s, const char *max_s, size_t skip,
    struct fs_stock_record *recs, size_t max, size_t *n)
{
	char zkey[KEY_MAX], hkey[KEY_MAX], offset[24], limit[24];
	const char **argv = NULL;
	redisReply *ids = NULL, *vals = NULL;
	int rc = -1;

	*n = 0;
	if (max == 0)
		return 0;
	fs_stock_key(zkey, KEY_UNCONFIRMED, tag, 0);
	fs_stock_key(hkey, KEY_ORDERS, tag, 0);
	snprintf(offset, sizeof(offset), "%zu", skip);
	snprintf(limit, sizeof(limit), "%zu", max);
	ids = fs_stock_cmd(s, "unconfirmed", 7,
	    (const char *[]){ "ZRANGEBYSCORE", zkey, min_s, max_s, "LIMIT", offset, limit });
	if (ids == NULL)
		goto out;
	if (ids->type != REDIS_REPLY_ARRAY || ids->elements == 0) {
		rc = 0;
		goto out;
	}
	if ((argv = calloc(ids->elements + 2, sizeof(*argv))) == NULL) {
		fs_stock_set_err(s, FS_STOCK_ERR_NOMEM, "unconfirmed");
		goto out;
	}
	argv[0] = "HMGET";
	argv[1] = hkey;
	for (size_t i = 0; i < ids->elements; i++)
		argv[i + 2] = ids->element[i]->type == REDIS_REPLY_STRING ? ids->element[i]->str : "";
	if ((vals = fs_stock_cmd(s, "unconfirmed", (int)ids->elements + 2, argv)) == NULL)
		goto out;
	if (vals->type != REDIS_REPLY_ARRAY || vals->elements != ids->elements) {
		fs_stock_set_err(s, FS_STOCK_ERR_REPLY, "unconfirmed");
		goto out;
	}
	for (size_t i = 0; i < ids->elements && i < max; i++)
		fs_stock_record_of(&recs[(*n)++], argv[i + 2], strlen(argv[i + 2]), vals->element[i]);
	rc = 0;
out:
	if (vals != NULL)
		freeReplyObject(vals);
	if (ids != NULL)
		freeReplyObject(ids);
	free(argv);
	return rc;
}

/*
 * unconfirmed_range over every place of a layout, place after place, after
 * the first skip of them all, at most max.
 */
int
fs_stock_unconfirmed_places(fs_stock *s, const struct fs_stock_layout *l, const char *min_s,
    const char *max_s, size_t skip, struct fs_stock_record *recs, size_t max, size_t *n)
{
	char zkey[KEY_MAX];

	*n = 0;
	for (int p = 0; p < l->nplaces; p++) {
		redisReply *r;
		size_t got;

		if (skip > 0) {
			/* A place the skipped ones fill is passed over whole. */
			fs_stock_key(zkey, KEY_UNCONFIRMED, l->tags[p], 0);
			if ((r = fs_stock_cmd(s, "unconfirmed", 4,
				 (const char *[]){ "ZCOUNT", zkey, min_s, max_s })) == NULL)
				return -1;
			got = r->type == REDIS_REPLY_INTEGER && r->integer > 0 ? (size_t)r->integer : 0;
			freeReplyObject(r);
			if (got <= skip) {
				skip -= got;
				continue;
			}
		}
		if (unconfirmed_range(s, l->tags[p], min_s, max_s, skip, recs + *n, max - *n, &got) !=
		    0)
			return -1;
		skip = 0;
		*n += got;
	}
	return 0;
}

int
fs_stock_unconfirmed_before(fs_stock *s, uint64_t sale, int64_t before_ms, size_t skip,
    struct fs_stock_record *recs, size_t max, size_t *n)
{
	const struct fs_stock_layout *l;
	char max_s[24];

	*n = 0;
	if ((l = fs_stock_layout_get(s, sale)) == NULL)
		return -1;
	snprintf(max_s, sizeof(max_s), "%" PRId64, before_ms);
	return fs_stock_unconfirmed_places(s, l, "-inf", max_s, skip, recs, max, n);
}

int
fs_stock_scan_holds(fs_stock *s, uint64_t sale, char cursor[32], struct fs_stock_record *recs,
    size_t max, size_t *n)
{
	const struct fs_stock_layout *l;
	char hkey[KEY_MAX], at[32];
	const redisReply *kv;
	redisReply *r;
	const char *slash = strchr(cursor, '/');
	/* A walk over several places: "p/c" is HSCAN cursor c at place p (p > 0). */
	int p = slash != NULL ? atoi(cursor) : 0;

	*n = 0;
	if ((l = fs_stock_layout_get(s, sale)) == NULL)
		return -1;
	if (p < 0 || p >= l->nplaces) {
		fs_stock_set_err(s, FS_STOCK_ERR_REPLY, "scan holds: cursor of another layout");
		return -1;
	}
	snprintf(at, sizeof(at), "%s", slash != NULL ? slash + 1 : cursor);
	fs_stock_key(hkey, KEY_ORDERS, l->tags[p], 0);
	if ((r = fs_stock_cmd(s, "scan holds", 5,
		 (const char *[]){ "HSCAN", hkey, at, "COUNT", HSCAN_COUNT })) == NULL)
		return -1;
	if (!fs_stock_is_scan(s, "scan holds", r, at)) {
		freeReplyObject(r);
		return -1;
	}
	if (strcmp(at, "0") != 0 && p > 0)
		snprintf(cursor, 32, "%d/%s", p, at);
	else if (strcmp(at, "0") != 0)
		snprintf(cursor, 32, "%s", at);
	else if (p + 1 < l->nplaces)
		snprintf(cursor, 32, "%d/0", p + 1);
	else
		snprintf(cursor, 32, "0");
	kv = r->element[1];
	for (size_t i = 0; i + 1 < kv->elements && *n < max; i += 2) {
		const redisReply *id = kv->element[i];

		if (id->type != REDIS_REPLY_STRING || fs_uuid_parse(id->str, id->len, NULL) != 0)
			continue;
		fs_stock_record_of(&recs[(*n)++], id->str, id->len, kv->element[i + 1]);
	}
	freeReplyObject(r);
	return 0;
}

void
fs_stock_snapshot_free(struct fs_stock_snapshot *snap)
{
	free(snap->holds);
	free(snap->holders);
	free(snap->unconfirmed);
	free(snap->left);
	free(snap->has_left);
	memset(snap, 0, sizeof(*snap));
}

/* Adds one place's part of the snapshot (its EXEC reply x) to snap. */
static void
snapshot_add(struct fs_stock_snapshot *snap, const redisReply *x, const struct fs_stock_layout *l,
    int p, const uint64_t *items)
{
	const redisReply *orders = x->element[1], *holders = x->element[2],
	    *unconf = x->element[3];

	if (p == 0)
		snap->loaded = x->element[0]->integer > 0;
	for (size_t i = 0; i + 1 < orders->elements; i += 2)
		if (orders->element[i]->type == REDIS_REPLY_STRING)
			fs_stock_record_of(&snap->holds[snap->nholds++], orders->element[i]->str,
			    orders->element[i]->len, orders->element[i + 1]);
	for (size_t i = 0; i + 1 < holders->elements; i += 2) {
		struct fs_stock_holder *h = &snap->holders[snap->nholders];

		if (holders->element[i]->type != REDIS_REPLY_STRING ||
		    holders->element[i + 1]->type != REDIS_REPLY_STRING)
			continue;
		snprintf(h->user, sizeof(h->user), "%s", holders->element[i]->str);
		snprintf(h->order_id, sizeof(h->order_id), "%s", holders->element[i + 1]->str);
		snap->nholders++;
	}
	for (size_t i = 0; i < unconf->elements; i++)
		if (unconf->element[i]->type == REDIS_REPLY_STRING)
			snprintf(snap->unconfirmed[snap->nunconfirmed++], FS_UUID_STRLEN + 1, "%s",
			    unconf->element[i]->str);
	for (size_t i = 0; i < snap->nitems; i++) {
		const redisReply *e = x->element[4 + i];

		if (e->type != REDIS_REPLY_STRING || fs_stock_shards_of(l, items[i]) <= p)
			continue;
		snap->left[i] = (snap->has_left[i] ? snap->left[i] : 0) + strtol(e->str, NULL, 10);
		snap->has_left[i] = 1;
	}
}

/* One place's part of a snapshot, in one MULTI: its EXEC reply, or NULL with err set. */
static redisReply *
snapshot_place(fs_stock *s, const char *tag, const uint64_t *items, size_t n)
{
	char keys[KEY__MAX][KEY_MAX], k[KEY_MAX];
	/* The order of the EXEC reply's elements: see snapshot_add. */
	const char *cmds[][4] = {
		{ "EXISTS", keys[KEY_SALE], NULL, NULL },
		{ "HGETALL", keys[KEY_ORDERS], NULL, NULL },
		{ "HGETALL", keys[KEY_HOLDERS], NULL, NULL },
		{ "ZRANGE", keys[KEY_UNCONFIRMED], "0", "-1" },
	};
	const int argcs[] = { 2, 2, 2, 4 };
	redisReply *x;
	int ok;

	for (int kk = 0; kk < KEY__MAX; kk++)
		fs_stock_key(keys[kk], (enum key_kind)kk, tag, 0);
	if (fs_stock_cmd_do(s, "snapshot", 1, (const char *[]){ "MULTI" }) != 0)
		return NULL;
	ok = 1;
	for (size_t c = 0; c < sizeof(argcs) / sizeof(argcs[0]) && ok; c++)
		ok = fs_stock_cmd_do(s, "snapshot", argcs[c], cmds[c]) == 0;
	for (size_t i = 0; i < n && ok; i++) {
		fs_stock_key(k, KEY_STOCK, tag, items[i]);
		ok = fs_stock_cmd_do(s, "snapshot", 2, (const char *[]){ "GET", k }) == 0;
	}
	if (!ok) {
		if ((x = fs_redis_argv(s->redis, 1, (const char *[]){ "DISCARD" }, NULL)) != NULL)
			freeReplyObject(x);
		return NULL;
	}
	if ((x = fs_stock_cmd(s, "snapshot", 1, (const char *[]){ "EXEC" })) == NULL)
		return NULL;
	if (x->type != REDIS_REPLY_ARRAY || x->elements != 4 + n ||
	    x->element[0]->type != REDIS_REPLY_INTEGER ||
	    x->element[1]->type != REDIS_REPLY_ARRAY || x->element[2]->type != REDIS_REPLY_ARRAY ||
	    x->element[3]->type != REDIS_REPLY_ARRAY) {
		fs_stock_set_err(s, FS_STOCK_ERR_REPLY, "snapshot");
		freeReplyObject(x);
		return NULL;
	}
	return x;
}

int
fs_stock_snapshot(fs_stock *s, uint64_t sale, const uint64_t *items, size_t n,
    struct fs_stock_snapshot *snap)
{
	struct fs_stock_layout l;
	redisReply *x[FS_STOCK_SHARDS_MAX] = { 0 };
	size_t nholds = 0, nholders = 0, nunconf = 0;
	int rc = -1;

	memset(snap, 0, sizeof(*snap));
	if (fs_stock_layout_read(s, sale, &l) < 0)
		return -1;
	/*
	 * One MULTI per place: each place is one consistent view. XXX Across
	 * places a reservation taken elsewhere may show its unit and not yet
	 * its guard; reconcile reads a sale at rest.
	 */
	for (int p = 0; p < l.nplaces; p++) {
		if ((x[p] = snapshot_place(s, l.tags[p], items, n)) == NULL)
			goto out;
		nholds += x[p]->element[1]->elements / 2;
		nholders += x[p]->element[2]->elements / 2;
		nunconf += x[p]->element[3]->elements;
	}
	snap->holds = calloc(nholds + 1, sizeof(*snap->holds));
	snap->holders = calloc(nholders + 1, sizeof(*snap->holders));
	snap->unconfirmed = calloc(nunconf + 1, sizeof(*snap->unconfirmed));
	snap->left = calloc(n + 1, sizeof(*snap->left));
	snap->has_left = calloc(n + 1, sizeof(*snap->has_left));
	if (snap->holds == NULL || snap->holders == NULL || snap->unconfirmed == NULL ||
	    snap->left == NULL || snap->has_left == NULL) {
		fs_stock_set_err(s, FS_STOCK_ERR_NOMEM, "snapshot");
		fs_stock_snapshot_free(snap);
		goto out;
	}
	snap->nitems = n;
	for (size_t i = 0; i < n; i++)
		snap->left[i] = -1;
	for (int p = 0; p < l.nplaces; p++)
		snapshot_add(snap, x[p], &l, p, items);
	rc = 0;
out:
	for (int p = 0; p < l.nplaces; p++)
		if (x[p] != NULL)
			freeReplyObject(x[p]);
	return rc;
}

/* Users asked about in one HMGET of a place's guards. */
#define HOLDING_CHUNK 512

/* One HMGET at place p of up to HOLDING_CHUNK users of that home, from *next on. */
static int
holding_chunk(fs_stock *s, const struct fs_stock_layout *l, int p, const char *const *users,
    size_t n, size_t *next, int *held)
{
	const char *argv[HOLDING_CHUNK + 2];
	size_t which[HOLDING_CHUNK], m = 0;
	char k[KEY_MAX];
	redisReply *r;

	fs_stock_key(k, KEY_HOLDERS, l->tags[p], 0);
	argv[0] = "HMGET";
	argv[1] = k;
	for (; *next < n && m < HOLDING_CHUNK; (*next)++)
		if (fs_stock_home(users[*next], l->nplaces) == p) {
			which[m] = *next;
			argv[2 + m++] = users[*next];
		}
	if (m == 0)
		return 0;
	if ((r = fs_stock_cmd(s, "holding", (int)m + 2, argv)) == NULL)
		return -1;
	if (!fs_stock_is_array(s, "holding", r, m)) {
		freeReplyObject(r);
		return -1;
	}
	for (size_t i = 0; i < m; i++)
		held[which[i]] = r->element[i]->type == REDIS_REPLY_STRING;
	freeReplyObject(r);
	return 0;
}

int
fs_stock_holding(fs_stock *s, uint64_t sale, const char *const *users, size_t n, int *held)
{
	const struct fs_stock_layout *l;

	for (size_t i = 0; i < n; i++)
		held[i] = 0;
	if (n == 0)
		return 0;
	if ((l = fs_stock_layout_get(s, sale)) == NULL)
		return -1;
	/* A shopper's guard lives at its home place only: one HMGET per place and chunk. */
	for (int p = 0; p < l->nplaces; p++)
		for (size_t next = 0; next < n;)
			if (holding_chunk(s, l, p, users, n, &next, held) != 0)
				return -1;
	return 0;
}

/* Whether an order still has its unconfirmed entry at a place of the sale: 1, 0 settled, -1 err. */
static int
unsettled(fs_stock *s, const struct fs_stock_layout *l, const char *order_id)
{
	char k[KEY_MAX];

	for (int p = 0; p < l->nplaces; p++) {
		redisReply *r;
		int there;

		fs_stock_key(k, KEY_UNCONFIRMED, l->tags[p], 0);
		if ((r = fs_stock_cmd(s, "doubts", 3, (const char *[]){ "ZSCORE", k, order_id })) == NULL)
			return -1;
		there = r->type == REDIS_REPLY_STRING;
		freeReplyObject(r);
		if (there)
			return 1;
	}
	return 0;
}

/* An item id as fs_stock_doubt_record writes it; 0 when it is not one. */
static uint64_t
doubt_item(const redisReply *v)
{
	char *end;
	uint64_t item;

	if (v->type != REDIS_REPLY_STRING || v->len == 0 || v->len > 20 || v->str[0] < '1' ||
	    v->str[0] > '9')
		return 0;
	item = strtoull(v->str, &end, 10);
	return *end == '\0' ? item : 0;
}

/*
 * One entry of fs:{S}:doubt: its item joins items when its hold is not
 * settled (an item already there costs nothing more); a settled or
 * unreadable entry goes. 0 or -1.
 */
static int
doubt_entry(fs_stock *s, const struct fs_stock_layout *l, const char *key,
    const redisReply *id, const redisReply *v, uint64_t *items, size_t max, size_t *n)
{
	uint64_t item = doubt_item(v);
	int rc;

	if (id->type != REDIS_REPLY_STRING)
		return 0;
	for (size_t i = 0; item != 0 && i < *n; i++)
		if (items[i] == item)
			return 0;
	if (item != 0 && (rc = unsettled(s, l, id->str)) != 0) {
		if (rc > 0 && *n < max)
			items[(*n)++] = item;
		return rc > 0 ? 0 : -1;
	}
	return fs_stock_cmd_do(s, "doubts", 3, (const char *[]){ "HDEL", key, id->str });
}

int
fs_stock_doubts(fs_stock *s, uint64_t sale, uint64_t *items, size_t max, size_t *n)
{
	const struct fs_stock_layout *l;
	char key[KEY_MAX], cursor[32] = "0";
	size_t seen = 0;
	redisReply *r;
	int rc = 0;

	*n = 0;
	if ((l = fs_stock_layout_get(s, sale)) == NULL)
		return -1;
	fs_stock_key(key, KEY_DOUBT, l->tags[0], 0);
	do {
		if ((r = fs_stock_cmd(s, "doubts", 5,
			 (const char *[]){ "HSCAN", key, cursor, "COUNT", HSCAN_COUNT })) == NULL)
			return -1;
		if (!fs_stock_is_scan(s, "doubts", r, cursor)) {
			freeReplyObject(r);
			return -1;
		}
		for (size_t i = 0; rc == 0 && i + 1 < r->element[1]->elements; i += 2, seen++)
			rc = doubt_entry(s, l, key, r->element[1]->element[i],
			    r->element[1]->element[i + 1], items, max, n);
		freeReplyObject(r);
	} while (rc == 0 && strcmp(cursor, "0") != 0 && seen < FS_STOCK_DOUBTS_SCAN);
	return rc;
}

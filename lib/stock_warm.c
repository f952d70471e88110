/*
 * Writing a sale into Redis from what PostgreSQL says (warm: a new layout,
 * guarded by WATCH), and removing an ended sale (forget).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redis.h"
#include "stock_int.h"

/* The units of a total of left that shard p of shards starts with. */
static long
share_of(long left, int shards, int p)
{
	return left / shards + (p < left % shards);
}

/* Queues, inside the open MULTI, the removal of what place p of the old layout holds. */
static int
warm_clear(fs_stock *s, const struct fs_stock_layout *old, int p, const struct fs_stock_warm *w)
{
	char k[4][KEY_MAX];

	fs_stock_key(k[0], KEY_HOLDERS, old->tags[p], 0);
	fs_stock_key(k[1], KEY_ORDERS, old->tags[p], 0);
	fs_stock_key(k[2], KEY_UNCONFIRMED, old->tags[p], 0);
	fs_stock_key(k[3], KEY_SALE, old->tags[p], 0);
	/* The first place's settings stay (an end moved early); the others go. */
	if (fs_stock_cmd_do(s, "warm", p == 0 ? 4 : 5, (const char *[]){ "DEL", k[0], k[1], k[2], k[3] }) != 0)
		return -1;
	if (p == 0)
		return fs_stock_cmd_do(s, "warm", 4, (const char *[]){ "HDEL", k[3], "places", "sharded" });
	for (size_t i = 0; i < w->nitems; i++) {
		fs_stock_key(k[0], KEY_STOCK, old->tags[p], w->items[i].id);
		if (fs_stock_cmd_do(s, "warm", 2, (const char *[]){ "DEL", k[0] }) != 0)
			return -1;
	}
	return 0;
}

/* Queues, inside the open MULTI, the settings and layout of place p of l; 0 or -1. */
static int
warm_settings(fs_stock *s, const struct fs_stock_layout *l, int p, const struct fs_stock_warm *w)
{
	char k[KEY_MAX], num[24];
	char places[FS_STOCK_SHARDS_MAX * FS_STOCK_TAG_MAX] = "";
	char sharded[FS_STOCK_SHARDED_ITEMS_MAX * 24] = "";

	fs_stock_key(k, KEY_SALE, l->tags[p], 0);
	snprintf(num, sizeof(num), "%ld", w->window_s);
	if (fs_stock_cmd_do(s, "warm", 4, (const char *[]){ "HSET", k, "window", num }) != 0)
		return -1;
	snprintf(num, sizeof(num), "%" PRId64, w->ends_ms);
	if (w->ends_ms > 0 && fs_stock_cmd_do(s, "warm", 4, (const char *[]){ "HSET", k, "ends", num }) != 0)
		return -1;
	/* Every place checks the start itself, by Redis' clock (reserve.lua). */
	snprintf(num, sizeof(num), "%" PRId64, w->starts_ms);
	if (w->starts_ms > 0 &&
	    fs_stock_cmd_do(s, "warm", 4, (const char *[]){ "HSET", k, "starts", num }) != 0)
		return -1;
	if (p > 0 || l->nplaces == 1)
		return 0;
	for (int q = 1; q < l->nplaces; q++)
		snprintf(places + strlen(places), sizeof(places) - strlen(places), "%s%s",
		    q > 1 ? " " : "", l->tags[q]);
	for (size_t i = 0; i < l->nsharded; i++)
		snprintf(sharded + strlen(sharded), sizeof(sharded) - strlen(sharded),
		    "%s%" PRIu64 ":%d", i > 0 ? " " : "", l->sharded[i].item, l->sharded[i].shards);
	return fs_stock_cmd_do(s, "warm", 6, (const char *[]){ "HSET", k, "places", places, "sharded", sharded });
}

/*
 * Queues, inside the open MULTI, what place p of the new layout l holds:
 * settings, its shard of each item, and the holds as a purchase would have
 * made them (guard at the shopper's home, record with its unit); 0 or -1.
 */
static int
warm_queue(fs_stock *s, const struct fs_stock_layout *l, int p, const struct fs_stock_warm *w)
{
	char k[KEY_MAX], num[24], rec[FS_STOCK_RECORD_MAX];

	if (warm_settings(s, l, p, w) != 0)
		return -1;
	for (size_t i = 0; i < w->nitems; i++) {
		int shards = fs_stock_shards_of(l, w->items[i].id);

		if (p >= shards)
			continue;
		fs_stock_key(k, KEY_STOCK, l->tags[p], w->items[i].id);
		snprintf(num, sizeof(num), "%ld", share_of(w->items[i].left, shards, p));
		if (fs_stock_cmd_do(s, "warm", 3, (const char *[]){ "SET", k, num }) != 0)
			return -1;
	}
	for (size_t i = 0; i < w->nholds + w->npending; i++) {
		const struct fs_stock_record *h =
		    i < w->nholds ? &w->holds[i] : &w->pending[i - w->nholds];
		int home = fs_stock_home(h->user, l->nplaces);
		int q = fs_stock_unit_place(home, fs_stock_shards_of(l, h->item));

		if (fs_stock_record_format(rec, sizeof(rec), h->user, h->item, h->reserved_ms,
			h->broker) < 0) {
			fs_stock_set_err(s, FS_STOCK_ERR_REPLY, "warm: shopper id too long");
			return -1;
		}
		fs_stock_key(k, KEY_HOLDERS, l->tags[p], 0);
		if (home == p &&
		    fs_stock_cmd_do(s, "warm", 4, (const char *[]){ "HSET", k, h->user, h->order_id }) != 0)
			return -1;
		if (q != p)
			continue;
		fs_stock_key(k, KEY_ORDERS, l->tags[p], 0);
		if (fs_stock_cmd_do(s, "warm", 4, (const char *[]){ "HSET", k, h->order_id, rec }) != 0)
			return -1;
		if (i < w->nholds)
			continue;
		fs_stock_key(k, KEY_UNCONFIRMED, l->tags[p], 0);
		snprintf(num, sizeof(num), "%" PRId64, h->reserved_ms);
		if (fs_stock_cmd_do(s, "warm", 4, (const char *[]){ "ZADD", k, num, h->order_id }) != 0)
			return -1;
	}
	return 0;
}

/*
 * Queues the writes of a warm at the place of tag: what the old layout had
 * there goes, what the new one puts there comes; 0 or -1.
 */
static int
warm_tag(fs_stock *s, const char *tag, const struct fs_stock_layout *old,
    const struct fs_stock_layout *now, const struct fs_stock_warm *w)
{
	int p_old = fs_stock_place_of(old, tag), p_now = fs_stock_place_of(now, tag);

	if (p_old >= 0 && warm_clear(s, old, p_old, w) != 0)
		return -1;
	return p_now >= 0 ? warm_queue(s, now, p_now, w) : 0;
}

int
fs_stock_warm_begin(fs_stock *s, uint64_t sale, const uint64_t *items, size_t n, int64_t since_ms,
    struct fs_stock_record *young, size_t max, size_t *nyoung, long *holds)
{
	struct fs_stock_layout l;
	char (*keys)[KEY_MAX] = NULL, since[24];
	const char **argv = NULL;
	size_t nkeys = 0;
	int rc = -1;

	*holds = 0;
	*nyoung = 0;
	/* Before the WATCH: a layout changed after this read fails the EXEC. */
	if (fs_stock_layout_read(s, sale, &l) < 0)
		return -1;
	keys = calloc((n + 4) * (size_t)l.nplaces, sizeof(*keys));
	argv = calloc(n + 5, sizeof(*argv));
	if (keys == NULL || argv == NULL) {
		fs_stock_set_err(s, FS_STOCK_ERR_NOMEM, "warm");
		goto out;
	}
	argv[0] = "WATCH";
	/* One WATCH per place: its keys share a slot (a cluster's node). */
	for (int p = 0; p < l.nplaces; p++) {
		size_t first = nkeys;

		fs_stock_key(keys[nkeys++], KEY_HOLDERS, l.tags[p], 0);
		fs_stock_key(keys[nkeys++], KEY_ORDERS, l.tags[p], 0);
		fs_stock_key(keys[nkeys++], KEY_UNCONFIRMED, l.tags[p], 0);
		fs_stock_key(keys[nkeys++], KEY_SALE, l.tags[p], 0);
		for (size_t i = 0; i < n; i++)
			fs_stock_key(keys[nkeys++], KEY_STOCK, l.tags[p], items[i]);
		for (size_t i = first; i < nkeys; i++)
			argv[i - first + 1] = keys[i];
		if (fs_stock_cmd_do(s, "warm", (int)(nkeys - first) + 1, argv) != 0)
			goto unwatch;
	}
	for (int p = 0; p < l.nplaces; p++) {
		redisReply *r;

		if ((r = fs_stock_cmd(s, "warm", 2, (const char *[]){ "HLEN", keys[p * (n + 4)] })) == NULL)
			goto unwatch;
		*holds += r->type == REDIS_REPLY_INTEGER ? (long)r->integer : 0;
		freeReplyObject(r);
	}
	snprintf(since, sizeof(since), "%" PRId64, since_ms);
	if (fs_stock_unconfirmed_places(s, &l, since, "+inf", 0, young, max, nyoung) != 0)
		goto unwatch;
	rc = 0;
	goto out;
unwatch:
	fs_stock_warm_abort(s);
out:
	free(keys);
	free(argv);
	return rc;
}

void
fs_stock_warm_abort(fs_stock *s)
{
	redisReply *r;
	/* A warm watches keys on every master its places are on. */
	int masters = fs_redis_is_cluster(s->redis) ? fs_redis_masters(s->redis) : 0;

	if ((r = fs_redis_argv(s->redis, 1, (const char *[]){ "UNWATCH" }, NULL)) != NULL)
		freeReplyObject(r);
	for (int m = 0; m < masters; m++)
		if ((r = fs_redis_master_argv(s->redis, m, 1, (const char *[]){ "UNWATCH" }, NULL)) !=
		    NULL)
			freeReplyObject(r);
}

/* Names tried per place before a place shares a master with another. */
#define TAG_TRIES 64

/*
 * The hash tags of a new layout's places: "S" for the first; for place p
 * the first of "S.p", "S.p.1", "S.p.2" ... whose slot a master serves that
 * no earlier place is on, while the cluster has masters left, so that
 * each shard of an item meets another master. A single Redis takes "S.p".
 */
static int
place_tags(fs_stock *s, struct fs_stock_layout *l)
{
	int masters = l->nplaces > 1 ? fs_redis_masters(s->redis) : 1, used[FS_STOCK_SHARDS_MAX];
	unsigned slot;

	if (masters < 0) {
		fs_stock_redis_err(s, "warm: the cluster's masters");
		return -1;
	}
	fs_stock_place_tag(l->tags[0], l->sale, 0);
	used[0] = fs_stock_node_of(s, l->tags[0], &slot, NULL, 0);
	for (int p = 1; p < l->nplaces; p++) {
		for (int n = 0; n < TAG_TRIES; n++) {
			int taken = 0;

			if (n == 0)
				fs_stock_place_tag(l->tags[p], l->sale, p);
			else
				snprintf(l->tags[p], FS_STOCK_TAG_MAX, "%" PRIu64 ".%d.%d", l->sale, p, n);
			used[p] = fs_stock_node_of(s, l->tags[p], &slot, NULL, 0);
			for (int q = 0; q < p; q++)
				taken |= used[q] == used[p];
			if (masters == 1 || p >= masters || (used[p] >= 0 && !taken))
				break;
		}
	}
	return 0;
}

/* The layout a warm of w writes: places for the most shards any item has. */
static int
layout_for(fs_stock *s, uint64_t sale, const struct fs_stock_warm *w, struct fs_stock_layout *l)
{
	memset(l, 0, sizeof(*l));
	l->sale = sale;
	l->nplaces = 1;
	for (size_t i = 0; i < w->nitems; i++) {
		int shards = w->items[i].shards > 1 ? w->items[i].shards : 1;

		if (shards == 1)
			continue;
		if (shards > FS_STOCK_SHARDS_MAX || l->nsharded == FS_STOCK_SHARDED_ITEMS_MAX) {
			fs_stock_set_err(s, FS_STOCK_ERR_REPLY, "warm: too many shards");
			return -1;
		}
		l->sharded[l->nsharded].item = w->items[i].id;
		l->sharded[l->nsharded++].shards = shards;
		if (shards > l->nplaces)
			l->nplaces = shards;
	}
	return place_tags(s, l);
}

/*
 * MULTI, the writes of the places in tags, EXEC: 0 written, 1 a watched
 * key changed (nothing written), -1 err set.
 */
static int
warm_exec(fs_stock *s, char (*tags)[FS_STOCK_TAG_MAX], int ntags,
    const struct fs_stock_layout *old, const struct fs_stock_layout *now,
    const struct fs_stock_warm *w)
{
	redisReply *r;
	int changed;

	if (fs_stock_cmd_do(s, "warm", 1, (const char *[]){ "MULTI" }) != 0)
		return -1;
	for (int t = 0; t < ntags; t++)
		if (warm_tag(s, tags[t], old, now, w) != 0) {
			if ((r = fs_redis_argv(s->redis, 1, (const char *[]){ "DISCARD" }, NULL)) != NULL)
				freeReplyObject(r);
			return -1;
		}
	if ((r = fs_stock_cmd(s, "warm", 1, (const char *[]){ "EXEC" })) == NULL)
		return -1;
	changed = r->type == REDIS_REPLY_NIL;
	freeReplyObject(r);
	return changed;
}

/*
 * 1 when two of the places in tags are on one master (or a place's master
 * is not known), 0 when each has a master (a connection) of its own.
 */
static int
places_share_master(const fs_stock *s, char (*tags)[FS_STOCK_TAG_MAX], int ntags)
{
	int node[2 * FS_STOCK_SHARDS_MAX];
	unsigned slot;

	for (int t = 0; t < ntags; t++) {
		if ((node[t] = fs_stock_node_of(s, tags[t], &slot, NULL, 0)) < 0)
			return 1;
		for (int u = 0; u < t; u++)
			if (node[u] == node[t])
				return 1;
	}
	return 0;
}

int
fs_stock_warm(fs_stock *s, uint64_t sale, const struct fs_stock_warm *w)
{
	struct fs_stock_layout old, now;
	char tags[2 * FS_STOCK_SHARDS_MAX][FS_STOCK_TAG_MAX], msg[48];
	int ntags = 0, rc = -1, cluster;

	if (layout_for(s, sale, w, &now) != 0 || fs_stock_layout_read(s, sale, &old) < 0)
		goto out;
	/* Every place of either layout, once. */
	for (int p = 0; p < old.nplaces + now.nplaces; p++) {
		const char *t = p < old.nplaces ? old.tags[p] : now.tags[p - old.nplaces];
		int seen = 0;

		for (int k = 0; k < ntags; k++)
			seen |= strcmp(tags[k], t) == 0;
		if (!seen)
			snprintf(tags[ntags++], FS_STOCK_TAG_MAX, "%s", t);
	}
	/*
	 * A single Redis writes every place in one MULTI. A cluster takes one
	 * MULTI per place (a transaction stays in one slot): a place whose
	 * watched keys changed is written again with all the others by the
	 * next attempt, and purchases meanwhile meet the places of one warm or
	 * the other. Places sharing a master share its connection, whose first
	 * EXEC ends the watch of the others: a purchase there before its EXEC
	 * would be overwritten. So such a warm runs only while no purchase
	 * can (before the sale opens, or after it ended); an open sale is
	 * refused before anything is written.
	 */
	cluster = fs_redis_is_cluster(s->redis);
	if (cluster && w->open && places_share_master(s, tags, ntags)) {
		s->err = FS_STOCK_ERR_REPLY;
		snprintf(s->errstr, sizeof(s->errstr),
		    "warm: sale %" PRIu64 " is open and %d of its places share a Redis master, "
		    "where one transaction cannot guard them all: warm it before it opens or once "
		    "it has ended", sale, ntags);
		goto out;
	}
	for (int t = 0; t < (cluster ? ntags : 1); t++) {
		rc = cluster ? warm_exec(s, &tags[t], 1, &old, &now, w) :
			       warm_exec(s, tags, ntags, &old, &now, w);
		if (rc != 0)
			break;
	}
	fs_stock_layout_drop(s, sale);
	if (rc != 0)
		goto out;
	/* Units may be back: let every host drop its sold-out markers. */
	for (size_t i = 0; i < w->nitems; i++) {
		snprintf(msg, sizeof(msg), "%" PRIu64 " %" PRIu64, sale, w->items[i].id);
		if (fs_stock_cmd_do(s, "restock", 3,
			(const char *[]){ "PUBLISH", FS_STOCK_RESTOCK_CHANNEL, msg }) != 0) {
			rc = -1;
			break;
		}
	}
out:
	if (rc != 0)
		fs_stock_warm_abort(s);
	return rc;
}

/* Stock keys per forget.lua call: the driver passes at most 16 arguments. */
#define FORGET_ITEMS 11

/* forget.lua over one place's keys, in calls of FORGET_ITEMS stock keys: 1 gone, 0 not, -1. */
static int
forget_place(fs_stock *s, const char *tag, const uint64_t *items, size_t n)
{
	char keys[FORGET_ITEMS + 5][KEY_MAX];
	const char *argv[FORGET_ITEMS + 5];
	redisReply *r;
	size_t done = 0;

	for (;;) {
		size_t take_n = n - done < FORGET_ITEMS ? n - done : FORGET_ITEMS, k = 0;
		int last = done + take_n == n, gone;

		fs_stock_key(keys[k++], KEY_UNCONFIRMED, tag, 0);
		for (size_t i = 0; i < take_n; i++)
			fs_stock_key(keys[k++], KEY_STOCK, tag, items[done + i]);
		/* The place's own keys go last: while they exist, the sale is not cleared. */
		if (last) {
			fs_stock_key(keys[k++], KEY_HOLDERS, tag, 0);
			fs_stock_key(keys[k++], KEY_ORDERS, tag, 0);
			fs_stock_key(keys[k++], KEY_SALE, tag, 0);
			fs_stock_key(keys[k++], KEY_DOUBT, tag, 0);
		}
		for (size_t i = 0; i < k; i++)
			argv[i] = keys[i];
		if ((r = fs_redis_eval(s->redis, s->forget, (int)k, (int)k, argv)) == NULL) {
			fs_stock_redis_err(s, "forget");
			return -1;
		}
		if (r->type != REDIS_REPLY_INTEGER) {
			freeReplyObject(r);
			fs_stock_set_err(s, FS_STOCK_ERR_REPLY, "forget");
			return -1;
		}
		gone = r->integer == 1;
		freeReplyObject(r);
		if (!gone)
			return 0;
		done += take_n;
		if (last)
			return 1;
	}
}

int
fs_stock_forget_sale(fs_stock *s, uint64_t sale, const uint64_t *items, size_t n)
{
	struct fs_stock_layout l;

	if (fs_stock_layout_read(s, sale, &l) < 0)
		return -1;
	fs_stock_layout_drop(s, sale);
	/* The first place last: its settings say where the others are. */
	for (int p = l.nplaces - 1; p >= 0; p--) {
		int gone = forget_place(s, l.tags[p], items, n);

		if (gone != 1)
			return gone;
	}
	return 1;
}

/*
 * The stock's common ground: errors, the Redis keys of a sale, commands,
 * hold records, shoppers' home places and the layout cache (where a sale's
 * places are). Reservations are in stock_reserve.c and stock_batch.c,
 * warm and forget in stock_warm.c, reads in stock_read.c.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "redis.h"
#include "stock_int.h"

static const char *const key_formats[KEY__MAX] = {
	[KEY_STOCK] = "fs:{%s}:stock:%" PRIu64,
	[KEY_HOLDERS] = "fs:{%s}:holders",
	[KEY_ORDERS] = "fs:{%s}:orders",
	[KEY_UNCONFIRMED] = "fs:{%s}:unconfirmed",
	[KEY_SALE] = "fs:{%s}:sale",
	[KEY_DOUBT] = "fs:{%s}:doubt",
};

static const char *const errstrs[FS_STOCK_ERR__MAX] = {
	[FS_STOCK_OK] = "no error",
	[FS_STOCK_ERR_IO] = "redis unreachable",
	[FS_STOCK_ERR_REPLY] = "redis refused or answered unexpectedly",
	[FS_STOCK_ERR_NOMEM] = "out of memory",
};

const char *
fs_stock_strerror(enum fs_stock_err e)
{
	return (unsigned)e < FS_STOCK_ERR__MAX ? errstrs[e] : "unknown error";
}

/* A key of the place whose hash tag is tag (see stock.h). */
void
fs_stock_key(char out[KEY_MAX], enum key_kind kind, const char *tag, uint64_t item)
{
	/* A tag of FS_STOCK_TAG_MAX, a 20-digit number and the fixed text fit in KEY_MAX. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	snprintf(out, KEY_MAX, key_formats[kind], tag, item);
#pragma GCC diagnostic pop
}

/* The hash tag of a sale's place p: "S" for the first, "S.p" for the others. */
void
fs_stock_place_tag(char tag[FS_STOCK_TAG_MAX], uint64_t sale, int p)
{
	if (p == 0)
		snprintf(tag, FS_STOCK_TAG_MAX, "%" PRIu64, sale);
	else
		snprintf(tag, FS_STOCK_TAG_MAX, "%" PRIu64 ".%d", sale, p);
}

/*
 * The driver's node that serves the place of tag: its index, or -1 when
 * unknown; its address in addr unless NULL.
 */
int
fs_stock_node_of(const fs_stock *s, const char *tag, unsigned *slot, char *addr, size_t addrlen)
{
	char k[KEY_MAX];

	fs_stock_key(k, KEY_SALE, tag, 0);
	*slot = fs_redis_key_slot(k, strlen(k));
	return fs_redis_node_of(s->redis, *slot, addr, addrlen);
}

/*
 * The driver failed with err (enum fs_redis_err): Redis away or silent (may
 * heal), or an error reply (will not).
 */
void
fs_stock_driver_err(fs_stock *s, const char *what, int err, const char *errstr)
{
	s->err = err == FS_REDIS_ERR_IO ? FS_STOCK_ERR_IO : FS_STOCK_ERR_REPLY;
	snprintf(s->errstr, sizeof(s->errstr), "%s: %s", what, errstr);
}

/* The driver's last command failed. */
void
fs_stock_redis_err(fs_stock *s, const char *what)
{
	fs_stock_driver_err(s, what, s->redis->err, s->redis->errstr);
}

void
fs_stock_set_err(fs_stock *s, enum fs_stock_err e, const char *what)
{
	s->err = e;
	snprintf(s->errstr, sizeof(s->errstr), "%s: %s", what, fs_stock_strerror(e));
}

/* Runs one command; the reply, or NULL with err set. */
redisReply *
fs_stock_cmd(fs_stock *s, const char *what, int argc, const char **argv)
{
	redisReply *r = fs_redis_argv(s->redis, argc, argv, NULL);

	if (r == NULL)
		fs_stock_redis_err(s, what);
	return r;
}

/* Runs one command and drops its reply; 0, or -1 with err set. */
int
fs_stock_cmd_do(fs_stock *s, const char *what, int argc, const char **argv)
{
	redisReply *r = fs_stock_cmd(s, what, argc, argv);

	if (r == NULL)
		return -1;
	freeReplyObject(r);
	return 0;
}

int
fs_stock_ping(fs_stock *s)
{
	const char *argv[] = { "PING" };

	return fs_stock_cmd_do(s, "ping", 1, argv);
}

/* A reply array of n elements or more; else err set. */
int
fs_stock_is_array(fs_stock *s, const char *what, const redisReply *r, size_t n)
{
	if (r->type == REDIS_REPLY_ARRAY && r->elements >= n)
		return 1;
	fs_stock_set_err(s, FS_STOCK_ERR_REPLY, what);
	return 0;
}

/* A reply of SCAN/HSCAN: {cursor, {elements}}; copies the cursor. */
int
fs_stock_is_scan(fs_stock *s, const char *what, const redisReply *r, char cursor[32])
{
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    r->element[0]->type != REDIS_REPLY_STRING ||
	    r->element[1]->type != REDIS_REPLY_ARRAY) {
		fs_stock_set_err(s, FS_STOCK_ERR_REPLY, what);
		return 0;
	}
	snprintf(cursor, 32, "%s", r->element[0]->str);
	return 1;
}

fs_stock *
fs_stock_new(const struct fs_cfg *cfg, const char *datadir, char *err, size_t errlen)
{
	char path[1024];
	fs_stock *s;

	if ((s = calloc(1, sizeof(*s))) == NULL) {
		snprintf(err, errlen, "stock: out of memory");
		return NULL;
	}
	s->reserve = s->release = s->forget = s->guard = s->layout = s->mark = -1;
	if ((s->layouts = calloc(LAYOUT_CACHE, sizeof(*s->layouts))) == NULL) {
		snprintf(err, errlen, "stock: out of memory");
		goto fail;
	}
	if ((s->redis = fs_redis_open(cfg, err, errlen)) == NULL)
		goto fail;
	if (datadir == NULL)
		return s;
	snprintf(path, sizeof(path), "%s/lua/reserve.lua", datadir);
	if ((s->reserve = fs_redis_script_load(s->redis, path)) < 0)
		goto fail_script;
	snprintf(path, sizeof(path), "%s/lua/release.lua", datadir);
	if ((s->release = fs_redis_script_load(s->redis, path)) < 0)
		goto fail_script;
	snprintf(path, sizeof(path), "%s/lua/forget.lua", datadir);
	if ((s->forget = fs_redis_script_load(s->redis, path)) < 0)
		goto fail_script;
	snprintf(path, sizeof(path), "%s/lua/guard.lua", datadir);
	if ((s->guard = fs_redis_script_load(s->redis, path)) < 0)
		goto fail_script;
	snprintf(path, sizeof(path), "%s/lua/layout.lua", datadir);
	if ((s->layout = fs_redis_script_load(s->redis, path)) < 0)
		goto fail_script;
	snprintf(path, sizeof(path), "%s/lua/mark.lua", datadir);
	if ((s->mark = fs_redis_script_load(s->redis, path)) < 0)
		goto fail_script;
	return s;
fail_script:
	snprintf(err, errlen, "stock scripts: %s", s->redis->errstr);
fail:
	fs_stock_free(s);
	return NULL;
}

void
fs_stock_free(fs_stock *s)
{
	if (s == NULL)
		return;
	fs_redis_free(s->redis);
	free(s->layouts);
	free(s->batch);
	free(s);
}

int
fs_stock_record_format(char *out, size_t outlen, const char *user, uint64_t item,
    int64_t reserved_ms, enum fs_stock_broker broker)
{
	int n = snprintf(out, outlen, "%s %" PRIu64 " %" PRId64 "%s", user, item, reserved_ms,
	    broker == FS_STOCK_BROKER_SENT ? RECORD_SENT : "");

	return (n < 0 || (size_t)n >= outlen) ? -1 : n;
}

int
fs_stock_record_parse(const char *rec, struct fs_stock_record *r)
{
	const char *sp = strchr(rec, ' ');
	char *end;

	if (sp == NULL || sp == rec || (size_t)(sp - rec) > FS_STOCK_USER_MAX)
		return -1;
	memcpy(r->user, rec, (size_t)(sp - rec));
	r->user[sp - rec] = '\0';
	if (sp[1] < '0' || sp[1] > '9')
		return -1;
	errno = 0;
	r->item = strtoull(sp + 1, &end, 10);
	if (errno != 0 || *end != ' ' || r->item == 0)
		return -1;
	r->reserved_ms = strtoll(end + 1, &end, 10);
	r->broker = FS_STOCK_BROKER_HAS;
	if (strcmp(end, RECORD_SENT) == 0) {
		r->broker = FS_STOCK_BROKER_SENT;
		end += strlen(RECORD_SENT);
	}
	return (errno == 0 && *end == '\0') ? 0 : -1;
}

int
fs_stock_restock_parse(const char *msg, uint64_t *sale, uint64_t *item)
{
	return sscanf(msg, "%" SCNu64 " %" SCNu64, sale, item) == 2 ? 0 : -1;
}

int
fs_stock_restock_publish(fs_stock *s, const char *msg)
{
	return fs_stock_cmd_do(s, "publish", 3,
	    (const char *[]){ "PUBLISH", FS_STOCK_RESTOCK_CHANNEL, msg });
}

/* Fills rec from an order id and its record reply (absent: exists = 0). */
void
fs_stock_record_of(struct fs_stock_record *rec, const char *id, size_t idlen, const redisReply *val)
{
	memset(rec, 0, sizeof(*rec));
	snprintf(rec->order_id, sizeof(rec->order_id), "%.*s", (int)idlen, id);
	if (val == NULL || val->type != REDIS_REPLY_STRING)
		return;
	rec->exists = 1;
	snprintf(rec->raw, sizeof(rec->raw), "%s", val->str);
	rec->readable = fs_uuid_parse(id, idlen, NULL) == 0 &&
	    fs_stock_record_parse(val->str, rec) == 0;
}

int
fs_stock_home(const char *user, int places)
{
	/* FNV-1a: cheap, and spreads shopper ids that differ in one digit. */
	uint32_t h = 2166136261u;

	for (const unsigned char *c = (const unsigned char *)user; *c != '\0'; c++)
		h = (h ^ *c) * 16777619u;
	return places > 1 ? (int)(h % (uint32_t)places) : 0;
}

int
fs_stock_unit_place(int home, int shards)
{
	return home < shards ? home : home % shards;
}

/* Reads a layout field "places" (the tags of places 1..) into l; 0 or -1. */
static int
layout_places(struct fs_stock_layout *l, const char *v)
{
	while (*v != '\0') {
		size_t n = strcspn(v, " ");

		if (n == 0 || n >= FS_STOCK_TAG_MAX || l->nplaces == FS_STOCK_SHARDS_MAX)
			return -1;
		snprintf(l->tags[l->nplaces++], FS_STOCK_TAG_MAX, "%.*s", (int)n, v);
		v += n + (v[n] == ' ');
	}
	return 0;
}

/* Reads a layout field "sharded" ("<item>:<shards> ...") into l; 0 or -1. */
static int
layout_sharded(struct fs_stock_layout *l, const char *v)
{
	while (*v != '\0') {
		char *end;
		uint64_t item = strtoull(v, &end, 10);
		long n;

		if (end == v || *end != ':' || l->nsharded == FS_STOCK_SHARDED_ITEMS_MAX)
			return -1;
		n = strtol(end + 1, &end, 10);
		if (n < 2 || n > l->nplaces || (*end != ' ' && *end != '\0'))
			return -1;
		l->sharded[l->nsharded].item = item;
		l->sharded[l->nsharded++].shards = (int)n;
		v = end + (*end == ' ');
	}
	return 0;
}

/* A layout before its settings are read: a sale of one place, no sharded item. */
static void
layout_init(struct fs_stock_layout *l, uint64_t sale)
{
	memset(l, 0, sizeof(*l));
	l->sale = sale;
	l->nplaces = 1;
	fs_stock_place_tag(l->tags[0], sale, 0);
}

/* The key that holds the layout of a sale: its first place's settings. */
void
fs_stock_layout_key(char k[KEY_MAX], uint64_t sale)
{
	char tag[FS_STOCK_TAG_MAX];

	fs_stock_place_tag(tag, sale, 0);
	fs_stock_key(k, KEY_SALE, tag, 0);
}

/*
 * Takes the reply (freed here) of HMGET <layout_key> window places sharded
 * into l: 1 loaded, 0 not loaded (l is then the layout of an unsharded
 * sale), -1 err set.
 */
int
fs_stock_layout_take(fs_stock *s, uint64_t sale, redisReply *r, struct fs_stock_layout *l)
{
	int rc = -1;

	layout_init(l, sale);
	if (!fs_stock_is_array(s, "layout", r, 3))
		goto out;
	if ((r->element[1]->type == REDIS_REPLY_STRING && layout_places(l, r->element[1]->str) != 0) ||
	    (r->element[2]->type == REDIS_REPLY_STRING && layout_sharded(l, r->element[2]->str) != 0)) {
		fs_stock_set_err(s, FS_STOCK_ERR_REPLY, "layout");
		goto out;
	}
	/* Every warm writes the window: without it the sale is not loaded. */
	rc = r->element[0]->type == REDIS_REPLY_STRING;
out:
	freeReplyObject(r);
	return rc;
}

/*
 * Reads the layout of a sale now, as layout_take: with HMGET, not
 * layout.lua, since a stock made without a datadir (flashsale-admin's) has
 * no scripts.
 */
int
fs_stock_layout_read(fs_stock *s, uint64_t sale, struct fs_stock_layout *l)
{
	char k[KEY_MAX];
	redisReply *r;

	fs_stock_layout_key(k, sale);
	if ((r = fs_stock_cmd(s, "layout", 5, (const char *[]){ "HMGET", k, "window", "places", "sharded" })) ==
	    NULL) {
		layout_init(l, sale);
		return -1;
	}
	return fs_stock_layout_take(s, sale, r, l);
}

/* The cached layout of a sale, of any age (NULL: none); *fresh: read within LAYOUT_TTL_MS. */
struct fs_stock_layout *
fs_stock_layout_cached(fs_stock *s, uint64_t sale, int64_t now, int *fresh)
{
	for (int i = 0; i < LAYOUT_CACHE; i++) {
		struct fs_stock_layout *l = &s->layouts[i];

		if (l->read_ms != 0 && l->sale == sale) {
			*fresh = now - l->read_ms < LAYOUT_TTL_MS;
			return l;
		}
	}
	return NULL;
}

/* The slot a layout of sale goes to: its own, else the one read longest ago. */
static struct fs_stock_layout *
layout_slot(fs_stock *s, uint64_t sale)
{
	struct fs_stock_layout *slot = &s->layouts[0];

	for (int i = 0; i < LAYOUT_CACHE; i++) {
		struct fs_stock_layout *l = &s->layouts[i];

		if (l->sale == sale)
			return l;
		if (l->read_ms < slot->read_ms)
			slot = l;
	}
	return slot;
}

/* Caches a layout just read (rc: layout_take's 1 or 0) at now. */
const struct fs_stock_layout *
fs_stock_layout_keep(fs_stock *s, const struct fs_stock_layout *l, int rc, int64_t now)
{
	struct fs_stock_layout *slot = layout_slot(s, l->sale);

	*slot = *l;
	/* A sale not loaded yet is asked again: its warm may be a moment away. */
	slot->read_ms = rc == 1 ? now : 0;
	return slot;
}

/*
 * The layout of a sale, from the cache when read less than LAYOUT_TTL_MS
 * ago (a sale's layout changes only when it is warmed again), else read
 * now; valid until the next call. NULL with err set.
 */
const struct fs_stock_layout *
fs_stock_layout_get(fs_stock *s, uint64_t sale)
{
	int64_t now = fs_clock_now_ms();
	struct fs_stock_layout *l, read;
	int fresh, rc;

	if ((l = fs_stock_layout_cached(s, sale, now, &fresh)) != NULL && fresh)
		return l;
	if ((rc = fs_stock_layout_read(s, sale, &read)) < 0)
		return NULL;
	return fs_stock_layout_keep(s, &read, rc, now);
}

/* Forgets a sale's cached layout: this process just changed it. */
void
fs_stock_layout_drop(fs_stock *s, uint64_t sale)
{
	for (int i = 0; i < LAYOUT_CACHE; i++)
		if (s->layouts[i].sale == sale)
			s->layouts[i].read_ms = 0;
}

/* The stock keys an item is spread over: 1 unless the sale file said shards. */
int
fs_stock_shards_of(const struct fs_stock_layout *l, uint64_t item)
{
	for (size_t i = 0; i < l->nsharded; i++)
		if (l->sharded[i].item == item)
			return l->sharded[i].shards;
	return 1;
}

/* The index of tag among a layout's places, or -1. */
int
fs_stock_place_of(const struct fs_stock_layout *l, const char *tag)
{
	for (int p = 0; p < l->nplaces; p++)
		if (strcmp(l->tags[p], tag) == 0)
			return p;
	return -1;
}

long
fs_stock_server_uptime(fs_stock *s)
{
	int masters = fs_redis_masters(s->redis);
	long youngest = -1;

	if (masters < 0) {
		fs_stock_redis_err(s, "uptime");
		return -1;
	}
	for (int i = 0; i < masters; i++) {
		redisReply *r = fs_redis_master_argv(s->redis, i, 2, (const char *[]){ "INFO", "server" },
		    NULL);
		const char *at;
		long up;

		if (r == NULL) {
			fs_stock_redis_err(s, "uptime");
			return -1;
		}
		if (r->type != REDIS_REPLY_STRING ||
		    (at = strstr(r->str, "uptime_in_seconds:")) == NULL) {
			fs_stock_set_err(s, FS_STOCK_ERR_REPLY, "uptime");
			freeReplyObject(r);
			return -1;
		}
		up = strtol(at + strlen("uptime_in_seconds:"), NULL, 10);
		freeReplyObject(r);
		if (youngest < 0 || up < youngest)
			youngest = up;
	}
	return youngest;
}

int
fs_stock_set_end(fs_stock *s, uint64_t sale, int64_t ends_ms)
{
	struct fs_stock_layout l;
	char k[KEY_MAX], num[24];
	int loaded;

	if ((loaded = fs_stock_layout_read(s, sale, &l)) <= 0)
		return loaded;
	snprintf(num, sizeof(num), "%" PRId64, ends_ms);
	/* Every place checks the end itself: reserve.lua sees its own slot only. */
	for (int p = 0; p < l.nplaces; p++) {
		fs_stock_key(k, KEY_SALE, l.tags[p], 0);
		if (fs_stock_cmd_do(s, "set end", 4, (const char *[]){ "HSET", k, "ends", num }) != 0)
			return -1;
	}
	return 1;
}

#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "metrics.h"
#include "redis.h"
#include "stock.h"

#define HSCAN_COUNT	"500"	/* holds looked at per HSCAN step */
#define LAYOUT_TTL_MS	1000	/* how long a process trusts the layout it read */
#define LAYOUT_CACHE	4	/* sales whose layout a stock remembers */

/* Where a sale's keys are: its places' tags and its sharded items. */
struct fs_stock_layout {
	uint64_t sale;
	int64_t read_ms; /* 0: not cached (a free slot, or a sale not loaded) */
	int nplaces;     /* 1: the sale's own slot only */
	char tags[FS_STOCK_SHARDS_MAX][FS_STOCK_TAG_MAX];
	size_t nsharded;
	struct {
		uint64_t item;
		int shards;
	} sharded[FS_STOCK_SHARDED_ITEMS_MAX];
};

enum key_kind {
	KEY_STOCK,       /* fs:{S}:stock:<item> */
	KEY_HOLDERS,     /* fs:{S}:holders */
	KEY_ORDERS,      /* fs:{S}:orders */
	KEY_UNCONFIRMED, /* fs:{S}:unconfirmed */
	KEY_SALE,        /* fs:{S}:sale */
	KEY__MAX
};

#define KEY_MAX (FS_STOCK_TAG_MAX + 48)

static const char *const key_formats[KEY__MAX] = {
	[KEY_STOCK] = "fs:{%s}:stock:%" PRIu64,
	[KEY_HOLDERS] = "fs:{%s}:holders",
	[KEY_ORDERS] = "fs:{%s}:orders",
	[KEY_UNCONFIRMED] = "fs:{%s}:unconfirmed",
	[KEY_SALE] = "fs:{%s}:sale",
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
static void
key(char out[KEY_MAX], enum key_kind kind, const char *tag, uint64_t item)
{
	/* A tag of FS_STOCK_TAG_MAX, a 20-digit number and the fixed text fit in KEY_MAX. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	snprintf(out, KEY_MAX, key_formats[kind], tag, item);
#pragma GCC diagnostic pop
}

/* The hash tag of a sale's place p: "S" for the first, "S.p" for the others. */
static void
place_tag(char tag[FS_STOCK_TAG_MAX], uint64_t sale, int p)
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
static int
node_of(const fs_stock *s, const char *tag, unsigned *slot, char *addr, size_t addrlen)
{
	char k[KEY_MAX];

	key(k, KEY_SALE, tag, 0);
	*slot = fs_redis_key_slot(k, strlen(k));
	return fs_redis_node_of(s->redis, *slot, addr, addrlen);
}

/*
 * The driver failed with err (enum fs_redis_err): Redis away or silent (may
 * heal), or an error reply (will not).
 */
static void
driver_err(fs_stock *s, const char *what, int err, const char *errstr)
{
	s->err = err == FS_REDIS_ERR_IO ? FS_STOCK_ERR_IO : FS_STOCK_ERR_REPLY;
	snprintf(s->errstr, sizeof(s->errstr), "%s: %s", what, errstr);
}

/* The driver's last command failed. */
static void
redis_err(fs_stock *s, const char *what)
{
	driver_err(s, what, s->redis->err, s->redis->errstr);
}

static void
set_err(fs_stock *s, enum fs_stock_err e, const char *what)
{
	s->err = e;
	snprintf(s->errstr, sizeof(s->errstr), "%s: %s", what, fs_stock_strerror(e));
}

/* Runs one command; the reply, or NULL with err set. */
static redisReply *
cmd(fs_stock *s, const char *what, int argc, const char **argv)
{
	redisReply *r = fs_redis_argv(s->redis, argc, argv, NULL);

	if (r == NULL)
		redis_err(s, what);
	return r;
}

/* Runs one command and drops its reply; 0, or -1 with err set. */
static int
cmd_do(fs_stock *s, const char *what, int argc, const char **argv)
{
	redisReply *r = cmd(s, what, argc, argv);

	if (r == NULL)
		return -1;
	freeReplyObject(r);
	return 0;
}

int
fs_stock_ping(fs_stock *s)
{
	const char *argv[] = { "PING" };

	return cmd_do(s, "ping", 1, argv);
}

/* A reply array of n elements or more; else err set. */
static int
is_array(fs_stock *s, const char *what, const redisReply *r, size_t n)
{
	if (r->type == REDIS_REPLY_ARRAY && r->elements >= n)
		return 1;
	set_err(s, FS_STOCK_ERR_REPLY, what);
	return 0;
}

/* A reply of SCAN/HSCAN: {cursor, {elements}}; copies the cursor. */
static int
is_scan(fs_stock *s, const char *what, const redisReply *r, char cursor[32])
{
	if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
	    r->element[0]->type != REDIS_REPLY_STRING ||
	    r->element[1]->type != REDIS_REPLY_ARRAY) {
		set_err(s, FS_STOCK_ERR_REPLY, what);
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
	s->reserve = s->release = s->forget = s->guard = s->layout = -1;
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
    int64_t reserved_ms)
{
	int n = snprintf(out, outlen, "%s %" PRIu64 " %" PRId64, user, item, reserved_ms);

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
	return (errno == 0 && *end == '\0') ? 0 : -1;
}

int
fs_stock_restock_parse(const char *msg, uint64_t *sale, uint64_t *item)
{
	return sscanf(msg, "%" SCNu64 " %" SCNu64, sale, item) == 2 ? 0 : -1;
}

/* Fills rec from an order id and its record reply (absent: exists = 0). */
static void
record_of(struct fs_stock_record *rec, const char *id, size_t idlen, const redisReply *val)
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
	place_tag(l->tags[0], sale, 0);
}

/* The key that holds the layout of a sale: its first place's settings. */
static void
layout_key(char k[KEY_MAX], uint64_t sale)
{
	char tag[FS_STOCK_TAG_MAX];

	place_tag(tag, sale, 0);
	key(k, KEY_SALE, tag, 0);
}

/*
 * Takes the reply (freed here) of HMGET <layout_key> window places sharded
 * into l: 1 loaded, 0 not loaded (l is then the layout of an unsharded
 * sale), -1 err set.
 */
static int
layout_take(fs_stock *s, uint64_t sale, redisReply *r, struct fs_stock_layout *l)
{
	int rc = -1;

	layout_init(l, sale);
	if (!is_array(s, "layout", r, 3))
		goto out;
	if ((r->element[1]->type == REDIS_REPLY_STRING && layout_places(l, r->element[1]->str) != 0) ||
	    (r->element[2]->type == REDIS_REPLY_STRING && layout_sharded(l, r->element[2]->str) != 0)) {
		set_err(s, FS_STOCK_ERR_REPLY, "layout");
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
static int
layout_read(fs_stock *s, uint64_t sale, struct fs_stock_layout *l)
{
	char k[KEY_MAX];
	redisReply *r;

	layout_key(k, sale);
	if ((r = cmd(s, "layout", 5, (const char *[]){ "HMGET", k, "window", "places", "sharded" })) ==
	    NULL) {
		layout_init(l, sale);
		return -1;
	}
	return layout_take(s, sale, r, l);
}

/* The cached layout of a sale, of any age (NULL: none); *fresh: read within LAYOUT_TTL_MS. */
static struct fs_stock_layout *
layout_cached(fs_stock *s, uint64_t sale, int64_t now, int *fresh)
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
static const struct fs_stock_layout *
layout_keep(fs_stock *s, const struct fs_stock_layout *l, int rc, int64_t now)
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
static const struct fs_stock_layout *
layout_get(fs_stock *s, uint64_t sale)
{
	int64_t now = fs_clock_now_ms();
	struct fs_stock_layout *l, read;
	int fresh, rc;

	if ((l = layout_cached(s, sale, now, &fresh)) != NULL && fresh)
		return l;
	if ((rc = layout_read(s, sale, &read)) < 0)
		return NULL;
	return layout_keep(s, &read, rc, now);
}

/* Forgets a sale's cached layout: this process just changed it. */
static void
layout_drop(fs_stock *s, uint64_t sale)
{
	for (int i = 0; i < LAYOUT_CACHE; i++)
		if (s->layouts[i].sale == sale)
			s->layouts[i].read_ms = 0;
}

/* The stock keys an item is spread over: 1 unless the sale file said shards. */
static int
shards_of(const struct fs_stock_layout *l, uint64_t item)
{
	for (size_t i = 0; i < l->nsharded; i++)
		if (l->sharded[i].item == item)
			return l->sharded[i].shards;
	return 1;
}

/* What one reserve.lua call at one place said. */
enum take {
	TAKE_RESERVED,
	TAKE_ALREADY,
	TAKE_ENDED,
	TAKE_DRY,	/* this place's stock key of the item is empty */
	TAKE_UNKNOWN,
	TAKE_ERROR
};

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
	default:
		return FS_STOCK_ERROR;
	}
}

/* The arguments of a reservation that every step passes on. */
struct attempt {
	const char *user, *order_id;
	uint64_t item;
	int home, shards; /* the shopper's home place; the item's shards */
	char rec[FS_STOCK_RECORD_MAX], now[24], window[24], deadline[24];
};

/* The keys and arguments of one reserve.lua call, in one piece. */
struct take_call {
	char keys[KEY__MAX][KEY_MAX];
	const char *argv[KEY__MAX + 7];
};

/* Fills the call of reserve.lua at the place of tag (mode: see take). */
static void
take_args(struct take_call *tc, const char *tag, const struct attempt *a, const char *mode)
{
	for (int k = 0; k < KEY__MAX; k++) {
		key(tc->keys[k], (enum key_kind)k, tag, a->item);
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
static enum take
take_reply(fs_stock *s, redisReply *r, struct fs_stock_hold *out)
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
		set_err(s, FS_STOCK_ERR_IO, "reserve ran past its deadline, nothing taken");
		t = TAKE_ERROR;
		break;
	default:
		goto bad;
	}
	freeReplyObject(r);
	return t;
bad:
	set_err(s, FS_STOCK_ERR_REPLY, "reserve");
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

	take_args(&tc, tag, a, mode);
	if ((r = fs_redis_eval(s->redis, s->reserve, KEY__MAX, KEY__MAX + 7, tc.argv)) == NULL) {
		redis_err(s, "reserve");
		return TAKE_ERROR;
	}
	return take_reply(s, r, out);
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

	key(k, KEY_HOLDERS, home_tag, 0);
	if ((r = fs_redis_eval(s->redis, s->guard, 1, 5,
		 (const char *[]){ k, user, order_id, mode, deadline })) == NULL) {
		redis_err(s, "guard");
		return -1;
	}
	if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
	    r->element[0]->type != REDIS_REPLY_INTEGER) {
		set_err(s, FS_STOCK_ERR_REPLY, "guard");
	} else if (r->element[0]->integer == -2) {
		set_err(s, FS_STOCK_ERR_IO, "guard ran past its deadline, nothing claimed");
	} else if (r->element[0]->integer == 2) {
		if (r->elements < 2 || r->element[1]->type != REDIS_REPLY_STRING ||
		    r->element[1]->len != FS_UUID_STRLEN)
			set_err(s, FS_STOCK_ERR_REPLY, "guard");
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

/* The shopper's guard at its home place: 1 held (its order in held), 0 none, -1 err set. */
static int
guard_held(fs_stock *s, const char *home_tag, const char *user, char held[FS_UUID_STRLEN + 1])
{
	char k[KEY_MAX];
	redisReply *r;
	int rc = 0;

	key(k, KEY_HOLDERS, home_tag, 0);
	if ((r = cmd(s, "guard", 3, (const char *[]){ "HGET", k, user })) == NULL)
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

		key(k, KEY_STOCK, l->tags[p], item);
		if ((r = cmd(s, "units left", 2, (const char *[]){ "GET", k })) == NULL)
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
static int
reserve_args(fs_stock *s, struct attempt *a, int64_t now_ms)
{
	if (fs_stock_record_format(a->rec, sizeof(a->rec), a->user, a->item, now_ms) < 0) {
		set_err(s, FS_STOCK_ERR_REPLY, "reserve: shopper id too long");
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
	snprintf(a->deadline, sizeof(a->deadline), "%" PRId64, now_ms + FS_REDIS_TIMEOUT_MS / 2);
	return 0;
}

/* Where a reservation runs in the sale of layout l: the shopper's home place, the item's shards. */
static void
reserve_place(struct attempt *a, const struct fs_stock_layout *l)
{
	a->home = fs_stock_home(a->user, l->nplaces);
	a->shards = shards_of(l, a->item);
}

/* True when the shopper's home place holds a shard of the item (the common path). */
static int
home_has_shard(const struct attempt *a)
{
	return a->home < a->shards;
}

/*
 * The rest of a reservation after the home place answered t (the common
 * path: guard and unit in one script there).
 */
static enum fs_stock_result
reserve_after_home(fs_stock *s, const struct fs_stock_layout *l, const struct attempt *a,
    enum take t, struct fs_stock_hold *out)
{
	if (t == TAKE_RESERVED && out->left == 0 && a->shards > 1)
		out->left = left_over_shards(s, l, a->item, a->shards);
	if (t != TAKE_DRY || a->shards == 1)
		return verdict(t);
	return reserve_elsewhere(s, l, a, out);
}

/* A reservation whose home place holds no shard of the item. */
static enum fs_stock_result
reserve_from_afar(fs_stock *s, const struct fs_stock_layout *l, const struct attempt *a,
    struct fs_stock_hold *out)
{
	/* A shopper who holds one stops here. */
	switch (guard_held(s, l->tags[a->home], a->user, out->order_id)) {
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
	reserve_place(a, l);
	if (!home_has_shard(a))
		return reserve_from_afar(s, l, a, out);
	return reserve_after_home(s, l, a, take(s, l->tags[a->home], a, "guard", out), out);
}

enum fs_stock_result
fs_stock_reserve(fs_stock *s, uint64_t sale, uint64_t item, const char *user, const char *order_id,
    int64_t now_ms, struct fs_stock_hold *out)
{
	const struct fs_stock_layout *l;
	struct attempt a = { .user = user, .order_id = order_id, .item = item };

	memset(out, 0, sizeof(*out));
	if (reserve_args(s, &a, now_ms) != 0 || (l = layout_get(s, sale)) == NULL)
		return FS_STOCK_ERROR;
	return reserve_in(s, l, &a, out);
}

/* Where one reservation of fs_stock_reserve_many stands while its batch runs. */
enum batch_state {
	BATCH_DONE,      /* its outcome is known (it failed before Redis) */
	BATCH_PIPELINED, /* its home place's script is in the pipeline */
	BATCH_AFAR,      /* its home place has no shard: after the pipeline */
	BATCH_LAYOUT,    /* its sale's layout is not known: read in the pipeline, then the rest */
	BATCH_LATE       /* its layout came in the pipeline: its home script in a second one */
};

/* What fs_stock_reserve_many keeps of one reservation while its batch runs. */
struct batch_entry {
	struct attempt a;
	struct take_call tc;
	enum batch_state state;
};

/*
 * A sale's layout read in a batch's pipeline (layout.lua): one that the
 * process has not cached, or read LAYOUT_TTL_MS ago or more. Until the
 * reply comes the batch uses the cached one, however old (a layout changes
 * only when its sale is warmed again); a reservation whose sale has none
 * waits for the reply.
 */
struct batch_read {
	uint64_t sale;
	char key[KEY_MAX];
	const char *argv[1];
	int rc;  /* layout_take's, once received */
	struct fs_stock_layout layout;
	int err; /* when rc < 0 */
	char errstr[128];
};

/* fs_stock_reserve_many's room: the reservations and calls of one batch. */
struct batch {
	struct batch_entry e[FS_STOCK_BATCH_MAX];
	struct batch_read reads[LAYOUT_CACHE];
	size_t nreads, ncalls;
	/* the reservations' scripts, then the layout reads */
	struct fs_redis_call calls[FS_STOCK_BATCH_MAX + LAYOUT_CACHE];
	/* the home scripts of those that waited for their layout */
	struct fs_redis_call late[FS_STOCK_BATCH_MAX];
};

/* The outcome of one reservation of a batch, with the stock's error when it failed. */
static void
ask_done(fs_stock *s, struct fs_stock_ask *ask, enum fs_stock_result res)
{
	ask->result = res;
	ask->errstr[0] = '\0';
	if (res == FS_STOCK_ERROR)
		snprintf(ask->errstr, sizeof(ask->errstr), "%s", s->errstr);
}

/* The layout read of sale in batch b, or NULL. */
static struct batch_read *
batch_read_of(struct batch *b, uint64_t sale)
{
	for (size_t i = 0; i < b->nreads; i++)
		if (b->reads[i].sale == sale)
			return &b->reads[i];
	return NULL;
}

/*
 * The layout a reservation of sale in batch b goes by when the batch is
 * sent: 1 with *l, the cached one (a read goes in the pipeline when it is
 * old); 0 when there is none (the read goes in the pipeline: the
 * reservation waits for it); -1 err set. With the batch's reads all taken
 * by other sales, an old layout is used as it is, and a missing one is
 * read now, as fs_stock_reserve reads it.
 */
static int
batch_layout(fs_stock *s, struct batch *b, uint64_t sale, int64_t now,
    const struct fs_stock_layout **l)
{
	struct batch_read *rd;
	int fresh;

	*l = layout_cached(s, sale, now, &fresh);
	if (*l != NULL && fresh)
		return 1;
	if (batch_read_of(b, sale) == NULL) {
		if (b->nreads == LAYOUT_CACHE && *l != NULL)
			return 1; /* read again by a later batch */
		if (b->nreads == LAYOUT_CACHE)
			return (*l = layout_get(s, sale)) != NULL ? 1 : -1;
		rd = &b->reads[b->nreads++];
		rd->sale = sale;
		layout_key(rd->key, sale);
		rd->argv[0] = rd->key;
	}
	return *l != NULL;
}

/*
 * The layout a reservation of sale goes on with once the batch's replies
 * are in: the batch's read of it (NULL with err set if that failed and the
 * reservation had none, want_read), else the cached one of any age, else
 * read now.
 */
static const struct fs_stock_layout *
batch_layout_after(fs_stock *s, struct batch *b, uint64_t sale, int want_read)
{
	struct batch_read *rd = batch_read_of(b, sale);
	const struct fs_stock_layout *l;
	int fresh;

	if (rd != NULL && rd->rc >= 0)
		return &rd->layout;
	if (want_read) {
		/* It waited for this batch's read (batch_layout), which failed. */
		if (rd == NULL) {
			set_err(s, FS_STOCK_ERR_IO, "layout");
		} else {
			s->err = rd->err;
			snprintf(s->errstr, sizeof(s->errstr), "%s", rd->errstr);
		}
		return NULL;
	}
	if ((l = layout_cached(s, sale, fs_clock_now_ms(), &fresh)) != NULL)
		return l;
	return layout_get(s, sale);
}

/*
 * A reservation of the batch whose layout l is known: afar when its home
 * place holds no shard of the item, else its home script appended to calls
 * and its state set to state.
 */
static void
batch_place(fs_stock *s, struct batch_entry *e, const struct fs_stock_layout *l,
    struct fs_redis_call *calls, size_t *ncalls, enum batch_state state)
{
	reserve_place(&e->a, l);
	if (!home_has_shard(&e->a)) {
		e->state = BATCH_AFAR;
		return;
	}
	take_args(&e->tc, l->tags[e->a.home], &e->a, "guard");
	calls[(*ncalls)++] = (struct fs_redis_call){ .script = s->reserve, .nkeys = KEY__MAX,
		.argc = KEY__MAX + 7, .argv = e->tc.argv };
	e->state = state;
}

void
fs_stock_reserve_begin(fs_stock *s, struct fs_stock_ask *asks, size_t n)
{
	struct batch *b;
	int64_t now = fs_clock_now_ms();

	fs_stock_reserve_end(s); /* one batch at a time */
	if (n > FS_STOCK_BATCH_MAX || (s->batch == NULL && (s->batch = calloc(1, sizeof(*b))) == NULL)) {
		/* Too many, or no room to pipeline: one at a time, now. */
		for (size_t i = 0; i < n; i++)
			ask_done(s, &asks[i], fs_stock_reserve(s, asks[i].sale, asks[i].item,
			    asks[i].user, asks[i].order_id, asks[i].now_ms, &asks[i].hold));
		return;
	}
	b = s->batch;
	b->nreads = b->ncalls = 0;
	/* The common path of each (its home place's script) goes in one pipeline. */
	for (size_t i = 0; i < n; i++) {
		struct batch_entry *e = &b->e[i];
		const struct fs_stock_layout *l;
		int known;

		memset(&asks[i].hold, 0, sizeof(asks[i].hold));
		e->a = (struct attempt){ .user = asks[i].user, .order_id = asks[i].order_id,
			.item = asks[i].item };
		if (reserve_args(s, &e->a, asks[i].now_ms) != 0 ||
		    (known = batch_layout(s, b, asks[i].sale, now, &l)) < 0) {
			e->state = BATCH_DONE;
			ask_done(s, &asks[i], FS_STOCK_ERROR);
			continue;
		}
		if (!known) {
			e->state = BATCH_LAYOUT;
			continue;
		}
		batch_place(s, e, l, b->calls, &b->ncalls, BATCH_PIPELINED);
	}
	for (size_t r = 0; r < b->nreads; r++)
		b->calls[b->ncalls++] = (struct fs_redis_call){ .script = s->layout, .nkeys = 1,
			.argc = 1, .argv = b->reads[r].argv };
	fs_redis_eval_send(s->redis, b->calls, b->ncalls);
	s->batch_asks = asks;
	s->batch_n = n;
}

int
fs_stock_reserve_fds(const fs_stock *s, int *fds, int max)
{
	return s->batch_asks != NULL ? fs_redis_eval_fds(s->redis, fds, max) : 0;
}

int64_t
fs_stock_reserve_deadline(const fs_stock *s)
{
	return fs_redis_eval_deadline(s->redis);
}

/* Takes the batch's layout reads, and caches those that succeeded. */
static void
batch_reads_take(fs_stock *s, struct batch *b)
{
	int64_t now = fs_clock_now_ms();

	for (size_t r = 0; r < b->nreads; r++) {
		struct batch_read *rd = &b->reads[r];
		struct fs_redis_call *call = &b->calls[b->ncalls - b->nreads + r];

		if (call->reply == NULL) {
			driver_err(s, "layout", call->err, call->errstr);
			rd->rc = -1;
		} else {
			rd->rc = layout_take(s, rd->sale, call->reply, &rd->layout);
		}
		if (rd->rc < 0) {
			rd->err = s->err;
			snprintf(rd->errstr, sizeof(rd->errstr), "%s", s->errstr);
		} else {
			layout_keep(s, &rd->layout, rd->rc, now);
		}
	}
}

/*
 * The reservations that waited for their sale's layout: failed with their
 * read, or their home scripts in one more pipeline, now (Redis has just
 * answered the first), in order.
 */
static void
batch_late(fs_stock *s, struct batch *b, struct fs_stock_ask *asks, size_t n)
{
	size_t nlate = 0;

	for (size_t i = 0; i < n; i++) {
		struct batch_entry *e = &b->e[i];
		const struct fs_stock_layout *l;

		if (e->state != BATCH_LAYOUT)
			continue;
		if ((l = batch_layout_after(s, b, asks[i].sale, 1)) == NULL) {
			e->state = BATCH_DONE;
			ask_done(s, &asks[i], FS_STOCK_ERROR);
			continue;
		}
		batch_place(s, e, l, b->late, &nlate, BATCH_LATE);
	}
	if (nlate > 0)
		fs_redis_eval_many(s->redis, b->late, nlate);
}

void
fs_stock_reserve_end(fs_stock *s)
{
	struct fs_stock_ask *asks = s->batch_asks;
	size_t n = s->batch_n, c = 0, k = 0;
	struct batch *b = s->batch;

	if (asks == NULL)
		return;
	s->batch_asks = NULL;
	fs_redis_eval_recv(s->redis);
	batch_reads_take(s, b);
	batch_late(s, b, asks, n);
	/* Then each goes on as fs_stock_reserve would, in order. */
	for (size_t i = 0; i < n; i++) {
		struct fs_stock_ask *ask = &asks[i];
		struct batch_entry *e = &b->e[i];
		struct fs_redis_call *call = e->state == BATCH_PIPELINED ? &b->calls[c++] :
		    e->state == BATCH_LATE ? &b->late[k++] : NULL;
		const struct fs_stock_layout *l;
		enum take t;

		if (e->state == BATCH_DONE)
			continue;
		if ((l = batch_layout_after(s, b, ask->sale, 0)) == NULL) {
			if (call != NULL && call->reply != NULL)
				freeReplyObject(call->reply);
			ask_done(s, ask, FS_STOCK_ERROR);
			continue;
		}
		if (call == NULL) {
			ask_done(s, ask, reserve_from_afar(s, l, &e->a, &ask->hold));
			continue;
		}
		if (call->reply == NULL) {
			driver_err(s, "reserve", call->err, call->errstr);
			t = TAKE_ERROR;
		} else {
			t = take_reply(s, call->reply, &ask->hold);
		}
		ask_done(s, ask, reserve_after_home(s, l, &e->a, t, &ask->hold));
	}
}

void
fs_stock_reserve_many(fs_stock *s, struct fs_stock_ask *asks, size_t n)
{
	while (n > 0) {
		size_t k = n < FS_STOCK_BATCH_MAX ? n : FS_STOCK_BATCH_MAX;

		fs_stock_reserve_begin(s, asks, k);
		fs_stock_reserve_end(s);
		asks += k;
		n -= k;
	}
}

int
fs_stock_replicate(fs_stock *s, int timeout_ms)
{
	long acked = fs_redis_wait(s->redis, 1, timeout_ms);

	if (acked < 0) {
		redis_err(s, "replicate");
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
		key(keys[k], (enum key_kind)k, tag, item); /* stock, holders, orders, unconfirmed */
		argv[k] = keys[k];
	}
	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, sale);
	snprintf(item_s, sizeof(item_s), "%" PRIu64, item);
	argv[4] = order_id;
	argv[5] = sale_s;
	argv[6] = item_s;
	argv[7] = FS_STOCK_RESTOCK_CHANNEL;
	if ((r = fs_redis_eval(s->redis, s->release, 4, 8, argv)) == NULL) {
		redis_err(s, "release");
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

	if ((l = layout_get(s, sale)) == NULL)
		return -1;
	if (l->nplaces == 1)
		return release_at(s, l->tags[0], sale, item, order_id);
	/*
	 * The unit's place holds the record; the guard may be at the shopper's
	 * home elsewhere. The guard goes first: a failure after it leaves the
	 * record, so the next release (expiry, sweeper) finds the unit again,
	 * while the other order would leave a guard that nothing clears.
	 */
	shards = shards_of(l, item);
	for (int q = 0; q < shards; q++) {
		redisReply *r;
		int found, home;

		key(k, KEY_ORDERS, l->tags[q], 0);
		if ((r = cmd(s, "release", 3, (const char *[]){ "HGET", k, order_id })) == NULL)
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
fs_stock_confirm(fs_stock *s, uint64_t sale, const char *const *order_ids, size_t n)
{
	enum { BATCH = 256 };
	const struct fs_stock_layout *l;
	const char *argv[BATCH + 2];
	char k[KEY_MAX];

	if ((l = layout_get(s, sale)) == NULL)
		return -1;
	argv[0] = "ZREM";
	argv[1] = k;
	/* The entry is at the place of its unit, which only its record tells: try each. */
	for (int p = 0; p < l->nplaces; p++) {
		const char *const *ids = order_ids;
		size_t left = n;

		key(k, KEY_UNCONFIRMED, l->tags[p], 0);
		while (left > 0) {
			size_t take_n = left < BATCH ? left : BATCH;

			memcpy(argv + 2, ids, take_n * sizeof(*ids));
			if (cmd_do(s, "confirm", (int)take_n + 2, argv) != 0)
				return -1;
			ids += take_n;
			left -= take_n;
		}
	}
	return 0;
}

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
	if ((l = layout_get(s, sale)) == NULL)
		return -1;
	argv = calloc(n + 1, sizeof(*argv));
	keys = calloc(n, sizeof(*keys));
	which = calloc(n, sizeof(*which));
	if (argv == NULL || keys == NULL || which == NULL) {
		set_err(s, FS_STOCK_ERR_NOMEM, "units left");
		goto out;
	}
	argv[0] = "MGET";
	/* One MGET per place: its keys share a slot. An item's left is the sum of its shards. */
	for (int p = 0; p < l->nplaces; p++) {
		size_t m = 0;
		redisReply *r;

		for (size_t i = 0; i < n; i++) {
			if (shards_of(l, items[i]) <= p)
				continue;
			key(keys[m], KEY_STOCK, l->tags[p], items[i]);
			argv[m + 1] = keys[m];
			which[m++] = i;
		}
		if (m == 0)
			continue;
		if ((r = cmd(s, "units left", (int)m + 1, argv)) == NULL)
			goto out;
		if (!is_array(s, "units left", r, m)) {
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
	if ((l = layout_get(s, sale)) == NULL)
		return -1;
	for (int p = 0; p < l->nplaces; p++) {
		redisReply *r;

		key(k, KEY_ORDERS, l->tags[p], 0);
		if ((r = cmd(s, "holds", 2, (const char *[]){ "HVALS", k })) == NULL)
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

	if ((l = layout_get(s, sale)) == NULL)
		return -1;
	for (int p = 0; p < l->nplaces && !found; p++) {
		redisReply *r;

		key(k, KEY_ORDERS, l->tags[p], 0);
		if ((r = cmd(s, "find hold", 3, (const char *[]){ "HGET", k, order_id })) == NULL)
			return -1;
		record_of(rec, order_id, strlen(order_id), r);
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
	if ((l = layout_get(s, sale)) == NULL)
		return -1;
	if ((found = guard_held(s, l->tags[fs_stock_home(user, l->nplaces)], user, held)) <= 0)
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

	if (layout_read(s, sale, &l) < 0)
		return -1;
	/* A fresh look at the cluster: which master serves each slot now. */
	if ((shards = shards_of(&l, item)) > 1 && fs_redis_masters(s->redis) < 0) {
		redis_err(s, "shards");
		return -1;
	}
	for (int p = 0; p < shards && p < max; p++) {
		node_of(s, l.tags[p], &out[p].slot, out[p].master, sizeof(out[p].master));
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

	place_tag(tag, sale, 0);
	key(k, KEY_SALE, tag, 0);
	if ((r = cmd(s, "window", 3, (const char *[]){ "HGET", k, "window" })) == NULL)
		return window;
	if (r->type == REDIS_REPLY_STRING)
		window = strtol(r->str, NULL, 10);
	freeReplyObject(r);
	return window;
}

int
fs_stock_set_end(fs_stock *s, uint64_t sale, int64_t ends_ms)
{
	struct fs_stock_layout l;
	char k[KEY_MAX], num[24];
	int loaded;

	if ((loaded = layout_read(s, sale, &l)) <= 0)
		return loaded;
	snprintf(num, sizeof(num), "%" PRId64, ends_ms);
	/* Every place checks the end itself: reserve.lua sees its own slot only. */
	for (int p = 0; p < l.nplaces; p++) {
		key(k, KEY_SALE, l.tags[p], 0);
		if (cmd_do(s, "set end", 4, (const char *[]){ "HSET", k, "ends", num }) != 0)
			return -1;
	}
	return 1;
}

/* The units of a total of left that shard p of shards starts with. */
static long
share_of(long left, int shards, int p)
{
	return left / shards + (p < left % shards);
}

/* The index of tag among a layout's places, or -1. */
static int
place_of(const struct fs_stock_layout *l, const char *tag)
{
	for (int p = 0; p < l->nplaces; p++)
		if (strcmp(l->tags[p], tag) == 0)
			return p;
	return -1;
}

/* Queues, inside the open MULTI, the removal of what place p of the old layout holds. */
static int
warm_clear(fs_stock *s, const struct fs_stock_layout *old, int p, const struct fs_stock_warm *w)
{
	char k[4][KEY_MAX];

	key(k[0], KEY_HOLDERS, old->tags[p], 0);
	key(k[1], KEY_ORDERS, old->tags[p], 0);
	key(k[2], KEY_UNCONFIRMED, old->tags[p], 0);
	key(k[3], KEY_SALE, old->tags[p], 0);
	/* The first place's settings stay (an end moved early); the others go. */
	if (cmd_do(s, "warm", p == 0 ? 4 : 5, (const char *[]){ "DEL", k[0], k[1], k[2], k[3] }) != 0)
		return -1;
	if (p == 0)
		return cmd_do(s, "warm", 4, (const char *[]){ "HDEL", k[3], "places", "sharded" });
	for (size_t i = 0; i < w->nitems; i++) {
		key(k[0], KEY_STOCK, old->tags[p], w->items[i].id);
		if (cmd_do(s, "warm", 2, (const char *[]){ "DEL", k[0] }) != 0)
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

	key(k, KEY_SALE, l->tags[p], 0);
	snprintf(num, sizeof(num), "%ld", w->window_s);
	if (cmd_do(s, "warm", 4, (const char *[]){ "HSET", k, "window", num }) != 0)
		return -1;
	snprintf(num, sizeof(num), "%" PRId64, w->ends_ms);
	if (w->ends_ms > 0 && cmd_do(s, "warm", 4, (const char *[]){ "HSET", k, "ends", num }) != 0)
		return -1;
	if (p > 0 || l->nplaces == 1)
		return 0;
	for (int q = 1; q < l->nplaces; q++)
		snprintf(places + strlen(places), sizeof(places) - strlen(places), "%s%s",
		    q > 1 ? " " : "", l->tags[q]);
	for (size_t i = 0; i < l->nsharded; i++)
		snprintf(sharded + strlen(sharded), sizeof(sharded) - strlen(sharded),
		    "%s%" PRIu64 ":%d", i > 0 ? " " : "", l->sharded[i].item, l->sharded[i].shards);
	return cmd_do(s, "warm", 6, (const char *[]){ "HSET", k, "places", places, "sharded", sharded });
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
		int shards = shards_of(l, w->items[i].id);

		if (p >= shards)
			continue;
		key(k, KEY_STOCK, l->tags[p], w->items[i].id);
		snprintf(num, sizeof(num), "%ld", share_of(w->items[i].left, shards, p));
		if (cmd_do(s, "warm", 3, (const char *[]){ "SET", k, num }) != 0)
			return -1;
	}
	for (size_t i = 0; i < w->nholds + w->npending; i++) {
		const struct fs_stock_record *h =
		    i < w->nholds ? &w->holds[i] : &w->pending[i - w->nholds];
		int home = fs_stock_home(h->user, l->nplaces);
		int q = fs_stock_unit_place(home, shards_of(l, h->item));

		if (fs_stock_record_format(rec, sizeof(rec), h->user, h->item, h->reserved_ms) < 0) {
			set_err(s, FS_STOCK_ERR_REPLY, "warm: shopper id too long");
			return -1;
		}
		key(k, KEY_HOLDERS, l->tags[p], 0);
		if (home == p &&
		    cmd_do(s, "warm", 4, (const char *[]){ "HSET", k, h->user, h->order_id }) != 0)
			return -1;
		if (q != p)
			continue;
		key(k, KEY_ORDERS, l->tags[p], 0);
		if (cmd_do(s, "warm", 4, (const char *[]){ "HSET", k, h->order_id, rec }) != 0)
			return -1;
		if (i < w->nholds)
			continue;
		key(k, KEY_UNCONFIRMED, l->tags[p], 0);
		snprintf(num, sizeof(num), "%" PRId64, h->reserved_ms);
		if (cmd_do(s, "warm", 4, (const char *[]){ "ZADD", k, num, h->order_id }) != 0)
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
	int p_old = place_of(old, tag), p_now = place_of(now, tag);

	if (p_old >= 0 && warm_clear(s, old, p_old, w) != 0)
		return -1;
	return p_now >= 0 ? warm_queue(s, now, p_now, w) : 0;
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
	key(zkey, KEY_UNCONFIRMED, tag, 0);
	key(hkey, KEY_ORDERS, tag, 0);
	snprintf(offset, sizeof(offset), "%zu", skip);
	snprintf(limit, sizeof(limit), "%zu", max);
	ids = cmd(s, "unconfirmed", 7,
	    (const char *[]){ "ZRANGEBYSCORE", zkey, min_s, max_s, "LIMIT", offset, limit });
	if (ids == NULL)
		goto out;
	if (ids->type != REDIS_REPLY_ARRAY || ids->elements == 0) {
		rc = 0;
		goto out;
	}
	if ((argv = calloc(ids->elements + 2, sizeof(*argv))) == NULL) {
		set_err(s, FS_STOCK_ERR_NOMEM, "unconfirmed");
		goto out;
	}
	argv[0] = "HMGET";
	argv[1] = hkey;
	for (size_t i = 0; i < ids->elements; i++)
		argv[i + 2] = ids->element[i]->type == REDIS_REPLY_STRING ? ids->element[i]->str : "";
	if ((vals = cmd(s, "unconfirmed", (int)ids->elements + 2, argv)) == NULL)
		goto out;
	if (vals->type != REDIS_REPLY_ARRAY || vals->elements != ids->elements) {
		set_err(s, FS_STOCK_ERR_REPLY, "unconfirmed");
		goto out;
	}
	for (size_t i = 0; i < ids->elements && i < max; i++)
		record_of(&recs[(*n)++], argv[i + 2], strlen(argv[i + 2]), vals->element[i]);
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
static int
unconfirmed_places(fs_stock *s, const struct fs_stock_layout *l, const char *min_s,
    const char *max_s, size_t skip, struct fs_stock_record *recs, size_t max, size_t *n)
{
	char zkey[KEY_MAX];

	*n = 0;
	for (int p = 0; p < l->nplaces; p++) {
		redisReply *r;
		size_t got;

		if (skip > 0) {
			/* A place the skipped ones fill is passed over whole. */
			key(zkey, KEY_UNCONFIRMED, l->tags[p], 0);
			if ((r = cmd(s, "unconfirmed", 4,
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
	if (layout_read(s, sale, &l) < 0)
		return -1;
	keys = calloc((n + 4) * (size_t)l.nplaces, sizeof(*keys));
	argv = calloc(n + 5, sizeof(*argv));
	if (keys == NULL || argv == NULL) {
		set_err(s, FS_STOCK_ERR_NOMEM, "warm");
		goto out;
	}
	argv[0] = "WATCH";
	/* One WATCH per place: its keys share a slot (a cluster's node). */
	for (int p = 0; p < l.nplaces; p++) {
		size_t first = nkeys;

		key(keys[nkeys++], KEY_HOLDERS, l.tags[p], 0);
		key(keys[nkeys++], KEY_ORDERS, l.tags[p], 0);
		key(keys[nkeys++], KEY_UNCONFIRMED, l.tags[p], 0);
		key(keys[nkeys++], KEY_SALE, l.tags[p], 0);
		for (size_t i = 0; i < n; i++)
			key(keys[nkeys++], KEY_STOCK, l.tags[p], items[i]);
		for (size_t i = first; i < nkeys; i++)
			argv[i - first + 1] = keys[i];
		if (cmd_do(s, "warm", (int)(nkeys - first) + 1, argv) != 0)
			goto unwatch;
	}
	for (int p = 0; p < l.nplaces; p++) {
		redisReply *r;

		if ((r = cmd(s, "warm", 2, (const char *[]){ "HLEN", keys[p * (n + 4)] })) == NULL)
			goto unwatch;
		*holds += r->type == REDIS_REPLY_INTEGER ? (long)r->integer : 0;
		freeReplyObject(r);
	}
	snprintf(since, sizeof(since), "%" PRId64, since_ms);
	if (unconfirmed_places(s, &l, since, "+inf", 0, young, max, nyoung) != 0)
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
		redis_err(s, "warm: the cluster's masters");
		return -1;
	}
	place_tag(l->tags[0], l->sale, 0);
	used[0] = node_of(s, l->tags[0], &slot, NULL, 0);
	for (int p = 1; p < l->nplaces; p++) {
		for (int n = 0; n < TAG_TRIES; n++) {
			int taken = 0;

			if (n == 0)
				place_tag(l->tags[p], l->sale, p);
			else
				snprintf(l->tags[p], FS_STOCK_TAG_MAX, "%" PRIu64 ".%d.%d", l->sale, p, n);
			used[p] = node_of(s, l->tags[p], &slot, NULL, 0);
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
			set_err(s, FS_STOCK_ERR_REPLY, "warm: too many shards");
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

	if (cmd_do(s, "warm", 1, (const char *[]){ "MULTI" }) != 0)
		return -1;
	for (int t = 0; t < ntags; t++)
		if (warm_tag(s, tags[t], old, now, w) != 0) {
			if ((r = fs_redis_argv(s->redis, 1, (const char *[]){ "DISCARD" }, NULL)) != NULL)
				freeReplyObject(r);
			return -1;
		}
	if ((r = cmd(s, "warm", 1, (const char *[]){ "EXEC" })) == NULL)
		return -1;
	changed = r->type == REDIS_REPLY_NIL;
	freeReplyObject(r);
	return changed;
}

int
fs_stock_warm(fs_stock *s, uint64_t sale, const struct fs_stock_warm *w)
{
	struct fs_stock_layout old, now;
	char tags[2 * FS_STOCK_SHARDS_MAX][FS_STOCK_TAG_MAX], msg[48];
	int ntags = 0, rc = -1, cluster;

	if (layout_for(s, sale, w, &now) != 0 || layout_read(s, sale, &old) < 0)
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
	 * the other. XXX Places sharing a master share its connection, whose
	 * first EXEC ends the watch of the others.
	 */
	cluster = fs_redis_is_cluster(s->redis);
	for (int t = 0; t < (cluster ? ntags : 1); t++) {
		rc = cluster ? warm_exec(s, &tags[t], 1, &old, &now, w) :
			       warm_exec(s, tags, ntags, &old, &now, w);
		if (rc != 0)
			break;
	}
	layout_drop(s, sale);
	if (rc != 0)
		goto out;
	/* Units may be back: let every host drop its sold-out markers. */
	for (size_t i = 0; i < w->nitems; i++) {
		snprintf(msg, sizeof(msg), "%" PRIu64 " %" PRIu64, sale, w->items[i].id);
		if (cmd_do(s, "restock", 3,
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
#define FORGET_ITEMS 12

/* forget.lua over one place's keys, in calls of FORGET_ITEMS stock keys: 1 gone, 0 not, -1. */
static int
forget_place(fs_stock *s, const char *tag, const uint64_t *items, size_t n)
{
	char keys[FORGET_ITEMS + 4][KEY_MAX];
	const char *argv[FORGET_ITEMS + 4];
	redisReply *r;
	size_t done = 0;

	for (;;) {
		size_t take_n = n - done < FORGET_ITEMS ? n - done : FORGET_ITEMS, k = 0;
		int last = done + take_n == n, gone;

		key(keys[k++], KEY_UNCONFIRMED, tag, 0);
		for (size_t i = 0; i < take_n; i++)
			key(keys[k++], KEY_STOCK, tag, items[done + i]);
		/* The place's own keys go last: while they exist, the sale is not cleared. */
		if (last) {
			key(keys[k++], KEY_HOLDERS, tag, 0);
			key(keys[k++], KEY_ORDERS, tag, 0);
			key(keys[k++], KEY_SALE, tag, 0);
		}
		for (size_t i = 0; i < k; i++)
			argv[i] = keys[i];
		if ((r = fs_redis_eval(s->redis, s->forget, (int)k, (int)k, argv)) == NULL) {
			redis_err(s, "forget");
			return -1;
		}
		if (r->type != REDIS_REPLY_INTEGER) {
			freeReplyObject(r);
			set_err(s, FS_STOCK_ERR_REPLY, "forget");
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

	if (layout_read(s, sale, &l) < 0)
		return -1;
	layout_drop(s, sale);
	/* The first place last: its settings say where the others are. */
	for (int p = l.nplaces - 1; p >= 0; p--) {
		int gone = forget_place(s, l.tags[p], items, n);

		if (gone != 1)
			return gone;
	}
	return 1;
}

long
fs_stock_server_uptime(fs_stock *s)
{
	int masters = fs_redis_masters(s->redis);
	long youngest = -1;

	if (masters < 0) {
		redis_err(s, "uptime");
		return -1;
	}
	for (int i = 0; i < masters; i++) {
		redisReply *r = fs_redis_master_argv(s->redis, i, 2, (const char *[]){ "INFO", "server" },
		    NULL);
		const char *at;
		long up;

		if (r == NULL) {
			redis_err(s, "uptime");
			return -1;
		}
		if (r->type != REDIS_REPLY_STRING ||
		    (at = strstr(r->str, "uptime_in_seconds:")) == NULL) {
			set_err(s, FS_STOCK_ERR_REPLY, "uptime");
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
fs_stock_unconfirmed_before(fs_stock *s, uint64_t sale, int64_t before_ms, size_t skip,
    struct fs_stock_record *recs, size_t max, size_t *n)
{
	const struct fs_stock_layout *l;
	char max_s[24];

	*n = 0;
	if ((l = layout_get(s, sale)) == NULL)
		return -1;
	snprintf(max_s, sizeof(max_s), "%" PRId64, before_ms);
	return unconfirmed_places(s, l, "-inf", max_s, skip, recs, max, n);
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
	if ((l = layout_get(s, sale)) == NULL)
		return -1;
	if (p < 0 || p >= l->nplaces) {
		set_err(s, FS_STOCK_ERR_REPLY, "scan holds: cursor of another layout");
		return -1;
	}
	snprintf(at, sizeof(at), "%s", slash != NULL ? slash + 1 : cursor);
	key(hkey, KEY_ORDERS, l->tags[p], 0);
	if ((r = cmd(s, "scan holds", 5,
		 (const char *[]){ "HSCAN", hkey, at, "COUNT", HSCAN_COUNT })) == NULL)
		return -1;
	if (!is_scan(s, "scan holds", r, at)) {
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
		record_of(&recs[(*n)++], id->str, id->len, kv->element[i + 1]);
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
			record_of(&snap->holds[snap->nholds++], orders->element[i]->str,
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

		if (e->type != REDIS_REPLY_STRING || shards_of(l, items[i]) <= p)
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
		key(keys[kk], (enum key_kind)kk, tag, 0);
	if (cmd_do(s, "snapshot", 1, (const char *[]){ "MULTI" }) != 0)
		return NULL;
	ok = 1;
	for (size_t c = 0; c < sizeof(argcs) / sizeof(argcs[0]) && ok; c++)
		ok = cmd_do(s, "snapshot", argcs[c], cmds[c]) == 0;
	for (size_t i = 0; i < n && ok; i++) {
		key(k, KEY_STOCK, tag, items[i]);
		ok = cmd_do(s, "snapshot", 2, (const char *[]){ "GET", k }) == 0;
	}
	if (!ok) {
		if ((x = fs_redis_argv(s->redis, 1, (const char *[]){ "DISCARD" }, NULL)) != NULL)
			freeReplyObject(x);
		return NULL;
	}
	if ((x = cmd(s, "snapshot", 1, (const char *[]){ "EXEC" })) == NULL)
		return NULL;
	if (x->type != REDIS_REPLY_ARRAY || x->elements != 4 + n ||
	    x->element[0]->type != REDIS_REPLY_INTEGER ||
	    x->element[1]->type != REDIS_REPLY_ARRAY || x->element[2]->type != REDIS_REPLY_ARRAY ||
	    x->element[3]->type != REDIS_REPLY_ARRAY) {
		set_err(s, FS_STOCK_ERR_REPLY, "snapshot");
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
	if (layout_read(s, sale, &l) < 0)
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
		set_err(s, FS_STOCK_ERR_NOMEM, "snapshot");
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

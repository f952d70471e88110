#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "redis.h"
#include "stock.h"

#define HSCAN_COUNT	"500"	/* holds looked at per HSCAN step */

enum key_kind {
	KEY_STOCK,       /* fs:{S}:stock:<item> */
	KEY_HOLDERS,     /* fs:{S}:holders */
	KEY_ORDERS,      /* fs:{S}:orders */
	KEY_UNCONFIRMED, /* fs:{S}:unconfirmed */
	KEY_SALE,        /* fs:{S}:sale */
	KEY__MAX
};

#define KEY_MAX 64

static const char *const key_formats[KEY__MAX] = {
	[KEY_STOCK] = "fs:{%" PRIu64 "}:stock:%" PRIu64,
	[KEY_HOLDERS] = "fs:{%" PRIu64 "}:holders",
	[KEY_ORDERS] = "fs:{%" PRIu64 "}:orders",
	[KEY_UNCONFIRMED] = "fs:{%" PRIu64 "}:unconfirmed",
	[KEY_SALE] = "fs:{%" PRIu64 "}:sale",
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

static void
key(char out[KEY_MAX], enum key_kind kind, uint64_t sale, uint64_t item)
{
	/* Two 20-digit numbers and the fixed text fit in KEY_MAX. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	snprintf(out, KEY_MAX, key_formats[kind], sale, item);
#pragma GCC diagnostic pop
}

/* The driver failed: an I/O failure drops its connection, an error reply does not. */
static void
redis_err(fs_stock *s, const char *what)
{
	s->err = s->redis->ctx == NULL ? FS_STOCK_ERR_IO : FS_STOCK_ERR_REPLY;
	snprintf(s->errstr, sizeof(s->errstr), "%s: %s", what, s->redis->errstr);
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
	s->reserve = s->release = s->forget = -1;
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

enum fs_stock_result
fs_stock_reserve(fs_stock *s, uint64_t sale, uint64_t item, const char *user, const char *order_id,
    int64_t now_ms, struct fs_stock_hold *out)
{
	char keys[KEY__MAX][KEY_MAX], now_s[24], rec[FS_STOCK_RECORD_MAX], window_s[24];
	char deadline_s[24];
	const char *argv[KEY__MAX + 6];
	enum fs_stock_result res = FS_STOCK_ERROR;
	redisReply *r;
	long long code;

	memset(out, 0, sizeof(*out));
	if (fs_stock_record_format(rec, sizeof(rec), user, item, now_ms) < 0) {
		set_err(s, FS_STOCK_ERR_REPLY, "reserve: shopper id too long");
		return FS_STOCK_ERROR;
	}
	for (int k = 0; k < KEY__MAX; k++) {
		key(keys[k], (enum key_kind)k, sale, item);
		argv[k] = keys[k];
	}
	snprintf(now_s, sizeof(now_s), "%" PRId64, now_ms);
	snprintf(window_s, sizeof(window_s), "%d", FS_STOCK_WINDOW_DEFAULT);
	argv[KEY__MAX] = user;
	argv[KEY__MAX + 1] = order_id;
	argv[KEY__MAX + 2] = rec;
	argv[KEY__MAX + 3] = now_s;
	argv[KEY__MAX + 4] = window_s;
	/*
	 * Half the driver's timeout: a caller who gave up (and released the
	 * order id) did so after the deadline even across a clock skew of up to
	 * that half, so a late script refuses instead of leaving a ghost.
	 */
	snprintf(deadline_s, sizeof(deadline_s), "%" PRId64, now_ms + FS_REDIS_TIMEOUT_MS / 2);
	argv[KEY__MAX + 5] = deadline_s;
	if ((r = fs_redis_eval(s->redis, s->reserve, KEY__MAX, KEY__MAX + 6, argv)) == NULL) {
		redis_err(s, "reserve");
		return FS_STOCK_ERROR;
	}
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
		res = FS_STOCK_RESERVED;
		break;
	case 2:
		res = FS_STOCK_ALREADY;
		break;
	case 0:
		res = FS_STOCK_SOLD_OUT;
		break;
	case -1:
		res = FS_STOCK_UNKNOWN_ITEM;
		break;
	case -2:
		set_err(s, FS_STOCK_ERR_IO, "reserve ran past its deadline, nothing taken");
		freeReplyObject(r);
		return FS_STOCK_ERROR;
	default:
		goto bad;
	}
	freeReplyObject(r);
	return res;
bad:
	set_err(s, FS_STOCK_ERR_REPLY, "reserve");
	freeReplyObject(r);
	return FS_STOCK_ERROR;
}

int
fs_stock_release(fs_stock *s, uint64_t sale, uint64_t item, const char *order_id)
{
	char keys[4][KEY_MAX], sale_s[24], item_s[24];
	const char *argv[8];
	redisReply *r;
	int released;

	for (int k = 0; k < 4; k++) {
		key(keys[k], (enum key_kind)k, sale, item); /* stock, holders, orders, unconfirmed */
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
fs_stock_confirm(fs_stock *s, uint64_t sale, const char *const *order_ids, size_t n)
{
	enum { BATCH = 256 };
	const char *argv[BATCH + 2];
	char k[KEY_MAX];

	key(k, KEY_UNCONFIRMED, sale, 0);
	argv[0] = "ZREM";
	argv[1] = k;
	while (n > 0) {
		size_t take = n < BATCH ? n : BATCH;

		memcpy(argv + 2, order_ids, take * sizeof(*order_ids));
		if (cmd_do(s, "confirm", (int)take + 2, argv) != 0)
			return -1;
		order_ids += take;
		n -= take;
	}
	return 0;
}

int
fs_stock_left(fs_stock *s, uint64_t sale, const uint64_t *items, size_t n, long *left)
{
	const char **argv = NULL;
	char(*keys)[KEY_MAX] = NULL;
	redisReply *r = NULL;
	int rc = -1;

	for (size_t i = 0; i < n; i++)
		left[i] = -1;
	if (n == 0)
		return 0;
	argv = calloc(n + 1, sizeof(*argv));
	keys = calloc(n, sizeof(*keys));
	if (argv == NULL || keys == NULL) {
		set_err(s, FS_STOCK_ERR_NOMEM, "units left");
		goto out;
	}
	argv[0] = "MGET";
	for (size_t i = 0; i < n; i++) {
		key(keys[i], KEY_STOCK, sale, items[i]);
		argv[i + 1] = keys[i];
	}
	if ((r = cmd(s, "units left", (int)n + 1, argv)) == NULL)
		goto out;
	if (!is_array(s, "units left", r, n))
		goto out;
	for (size_t i = 0; i < n; i++)
		if (r->element[i]->type == REDIS_REPLY_STRING)
			left[i] = strtol(r->element[i]->str, NULL, 10);
	rc = 0;
out:
	if (r != NULL)
		freeReplyObject(r);
	free(keys);
	free(argv);
	return rc;
}

int
fs_stock_count_holds(fs_stock *s, uint64_t sale, const uint64_t *items, size_t n, long *holds)
{
	char k[KEY_MAX];
	redisReply *r;
	struct fs_stock_record rec;

	memset(holds, 0, n * sizeof(*holds));
	key(k, KEY_ORDERS, sale, 0);
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
	return 0;
}

int
fs_stock_find_hold(fs_stock *s, uint64_t sale, const char *order_id, struct fs_stock_record *rec)
{
	char k[KEY_MAX];
	redisReply *r;
	int found;

	key(k, KEY_ORDERS, sale, 0);
	if ((r = cmd(s, "find hold", 3, (const char *[]){ "HGET", k, order_id })) == NULL)
		return -1;
	record_of(rec, order_id, strlen(order_id), r);
	found = rec->exists && rec->readable;
	freeReplyObject(r);
	return found;
}

long
fs_stock_window(fs_stock *s, uint64_t sale)
{
	char k[KEY_MAX];
	redisReply *r;
	long window = FS_STOCK_WINDOW_DEFAULT;

	key(k, KEY_SALE, sale, 0);
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
	char k[KEY_MAX], num[24];
	redisReply *r;
	int loaded;

	key(k, KEY_SALE, sale, 0);
	if ((r = cmd(s, "set end", 2, (const char *[]){ "EXISTS", k })) == NULL)
		return -1;
	loaded = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
	freeReplyObject(r);
	if (!loaded)
		return 0;
	snprintf(num, sizeof(num), "%" PRId64, ends_ms);
	if (cmd_do(s, "set end", 4, (const char *[]){ "HSET", k, "ends", num }) != 0)
		return -1;
	return 1;
}

/* Queues the writes of warm inside the open MULTI; 0 or -1. */
static int
warm_queue(fs_stock *s, uint64_t sale, const struct fs_stock_warm *w,
    char keys[KEY__MAX][KEY_MAX])
{
	char k[KEY_MAX], num[24], rec[FS_STOCK_RECORD_MAX];

	if (cmd_do(s, "warm", 4, (const char *[]){ "DEL", keys[KEY_HOLDERS], keys[KEY_ORDERS],
				     keys[KEY_UNCONFIRMED] }) != 0)
		return -1;
	snprintf(num, sizeof(num), "%ld", w->window_s);
	if (cmd_do(s, "warm", 4, (const char *[]){ "HSET", keys[KEY_SALE], "window", num }) != 0)
		return -1;
	snprintf(num, sizeof(num), "%" PRId64, w->ends_ms);
	if (w->ends_ms > 0 &&
	    cmd_do(s, "warm", 4, (const char *[]){ "HSET", keys[KEY_SALE], "ends", num }) != 0)
		return -1;
	for (size_t i = 0; i < w->nitems; i++) {
		key(k, KEY_STOCK, sale, w->items[i].id);
		snprintf(num, sizeof(num), "%ld", w->items[i].left);
		if (cmd_do(s, "warm", 3, (const char *[]){ "SET", k, num }) != 0)
			return -1;
	}
	for (size_t i = 0; i < w->nholds + w->npending; i++) {
		const struct fs_stock_record *h =
		    i < w->nholds ? &w->holds[i] : &w->pending[i - w->nholds];

		if (fs_stock_record_format(rec, sizeof(rec), h->user, h->item, h->reserved_ms) < 0) {
			set_err(s, FS_STOCK_ERR_REPLY, "warm: shopper id too long");
			return -1;
		}
		if (cmd_do(s, "warm", 4,
			(const char *[]){ "HSET", keys[KEY_HOLDERS], h->user, h->order_id }) != 0 ||
		    cmd_do(s, "warm", 4, (const char *[]){ "HSET", keys[KEY_ORDERS], h->order_id, rec }) !=
			0)
			return -1;
	}
	return 0;
}

/*
 * The unconfirmed holds with reservation times in [min_s, max_s] (Redis
 * score bounds), oldest first, at most max, with their records.
 */
static int
unconfirmed_range(fs_stock *s, uint64_t sale, const char *min_s, const char *max_s,
    struct fs_stock_record *recs, size_t max, size_t *n)
{
	char zkey[KEY_MAX], hkey[KEY_MAX], limit[24];
	const char **argv = NULL;
	redisReply *ids = NULL, *vals = NULL;
	int rc = -1;

	*n = 0;
	key(zkey, KEY_UNCONFIRMED, sale, 0);
	key(hkey, KEY_ORDERS, sale, 0);
	snprintf(limit, sizeof(limit), "%zu", max);
	ids = cmd(s, "unconfirmed", 7,
	    (const char *[]){ "ZRANGEBYSCORE", zkey, min_s, max_s, "LIMIT", "0", limit });
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

int
fs_stock_warm_begin(fs_stock *s, uint64_t sale, const uint64_t *items, size_t n, int64_t since_ms,
    struct fs_stock_record *young, size_t max, size_t *nyoung, long *holds)
{
	char (*keys)[KEY_MAX] = NULL, since[24];
	const char **argv = NULL;
	redisReply *r;
	int rc = -1;

	*holds = 0;
	*nyoung = 0;
	keys = calloc(n + 4, sizeof(*keys));
	argv = calloc(n + 5, sizeof(*argv));
	if (keys == NULL || argv == NULL) {
		set_err(s, FS_STOCK_ERR_NOMEM, "warm");
		goto out;
	}
	argv[0] = "WATCH";
	key(keys[0], KEY_HOLDERS, sale, 0);
	key(keys[1], KEY_ORDERS, sale, 0);
	key(keys[2], KEY_UNCONFIRMED, sale, 0);
	key(keys[3], KEY_SALE, sale, 0);
	for (size_t i = 0; i < n; i++)
		key(keys[i + 4], KEY_STOCK, sale, items[i]);
	for (size_t i = 0; i < n + 4; i++)
		argv[i + 1] = keys[i];
	if (cmd_do(s, "warm", (int)n + 5, argv) != 0)
		goto out;
	if ((r = cmd(s, "warm", 2, (const char *[]){ "HLEN", keys[0] })) == NULL)
		goto unwatch;
	*holds = r->type == REDIS_REPLY_INTEGER ? (long)r->integer : 0;
	freeReplyObject(r);
	snprintf(since, sizeof(since), "%" PRId64, since_ms);
	if (unconfirmed_range(s, sale, since, "+inf", young, max, nyoung) != 0)
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
	redisReply *r = fs_redis_argv(s->redis, 1, (const char *[]){ "UNWATCH" }, NULL);

	if (r != NULL)
		freeReplyObject(r);
}

int
fs_stock_warm(fs_stock *s, uint64_t sale, const struct fs_stock_warm *w)
{
	char keys[KEY__MAX][KEY_MAX], msg[48], score[24];
	redisReply *r;
	int in_multi = 0, rc = -1;

	for (int k = 0; k < KEY__MAX; k++)
		key(keys[k], (enum key_kind)k, sale, 0);
	/* All keys share the sale's hash tag: one MULTI works on a cluster too. */
	if (cmd_do(s, "warm", 1, (const char *[]){ "MULTI" }) != 0)
		goto out;
	in_multi = 1;
	if (warm_queue(s, sale, w, keys) != 0)
		goto out;
	for (size_t i = 0; i < w->npending; i++) {
		snprintf(score, sizeof(score), "%" PRId64, w->pending[i].reserved_ms);
		if (cmd_do(s, "warm", 4, (const char *[]){ "ZADD", keys[KEY_UNCONFIRMED], score,
					     w->pending[i].order_id }) != 0)
			goto out;
	}
	if ((r = cmd(s, "warm", 1, (const char *[]){ "EXEC" })) == NULL)
		goto out;
	in_multi = 0;
	/* A watched key changed since fs_stock_warm_begin: EXEC did nothing. */
	if (r->type == REDIS_REPLY_NIL) {
		freeReplyObject(r);
		return 1;
	}
	freeReplyObject(r);
	/* Units may be back: let every host drop its sold-out markers. */
	for (size_t i = 0; i < w->nitems; i++) {
		snprintf(msg, sizeof(msg), "%" PRIu64 " %" PRIu64, sale, w->items[i].id);
		if (cmd_do(s, "restock", 3,
			(const char *[]){ "PUBLISH", FS_STOCK_RESTOCK_CHANNEL, msg }) != 0)
			goto out;
	}
	rc = 0;
out:
	if (in_multi && (r = fs_redis_argv(s->redis, 1, (const char *[]){ "DISCARD" }, NULL)) != NULL)
		freeReplyObject(r);
	else if (rc != 0)
		fs_stock_warm_abort(s);
	return rc;
}

/* Stock keys per forget.lua call: the driver passes at most 16 arguments. */
#define FORGET_ITEMS 12

int
fs_stock_forget_sale(fs_stock *s, uint64_t sale, const uint64_t *items, size_t n)
{
	char keys[FORGET_ITEMS + 4][KEY_MAX];
	const char *argv[FORGET_ITEMS + 4];
	redisReply *r;
	size_t done = 0;

	for (;;) {
		size_t take = n - done < FORGET_ITEMS ? n - done : FORGET_ITEMS, k = 0;
		int last = done + take == n, gone;

		key(keys[k++], KEY_UNCONFIRMED, sale, 0);
		for (size_t i = 0; i < take; i++)
			key(keys[k++], KEY_STOCK, sale, items[done + i]);
		/* The sale's own keys go last: while they exist, the sale is not cleared. */
		if (last) {
			key(keys[k++], KEY_HOLDERS, sale, 0);
			key(keys[k++], KEY_ORDERS, sale, 0);
			key(keys[k++], KEY_SALE, sale, 0);
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
		done += take;
		if (last)
			return 1;
	}
}

long
fs_stock_server_uptime(fs_stock *s)
{
	redisReply *r = cmd(s, "uptime", 2, (const char *[]){ "INFO", "server" });
	const char *at;
	long up = -1;

	if (r == NULL)
		return -1;
	if (r->type == REDIS_REPLY_STRING && (at = strstr(r->str, "uptime_in_seconds:")) != NULL)
		up = strtol(at + strlen("uptime_in_seconds:"), NULL, 10);
	else
		set_err(s, FS_STOCK_ERR_REPLY, "uptime");
	freeReplyObject(r);
	return up;
}

int
fs_stock_unconfirmed_before(fs_stock *s, uint64_t sale, int64_t before_ms,
    struct fs_stock_record *recs, size_t max, size_t *n)
{
	char max_s[24];

	snprintf(max_s, sizeof(max_s), "%" PRId64, before_ms);
	return unconfirmed_range(s, sale, "-inf", max_s, recs, max, n);
}

int
fs_stock_scan_holds(fs_stock *s, uint64_t sale, char cursor[32], struct fs_stock_record *recs,
    size_t max, size_t *n)
{
	char hkey[KEY_MAX];
	const redisReply *kv;
	redisReply *r;

	*n = 0;
	key(hkey, KEY_ORDERS, sale, 0);
	if ((r = cmd(s, "scan holds", 5,
		 (const char *[]){ "HSCAN", hkey, cursor, "COUNT", HSCAN_COUNT })) == NULL)
		return -1;
	if (!is_scan(s, "scan holds", r, cursor)) {
		freeReplyObject(r);
		return -1;
	}
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

/* Copies the snapshot's parts out of the EXEC reply; 0 or -1 (out of memory). */
static int
snapshot_fill(struct fs_stock_snapshot *snap, const redisReply *x, size_t nitems)
{
	const redisReply *orders = x->element[1], *holders = x->element[2],
	    *unconf = x->element[3];

	snap->loaded = x->element[0]->integer > 0;
	snap->holds = calloc(orders->elements / 2 + 1, sizeof(*snap->holds));
	snap->holders = calloc(holders->elements / 2 + 1, sizeof(*snap->holders));
	snap->unconfirmed = calloc(unconf->elements + 1, sizeof(*snap->unconfirmed));
	snap->left = calloc(nitems + 1, sizeof(*snap->left));
	snap->has_left = calloc(nitems + 1, sizeof(*snap->has_left));
	if (snap->holds == NULL || snap->holders == NULL || snap->unconfirmed == NULL ||
	    snap->left == NULL || snap->has_left == NULL)
		return -1;
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
	snap->nitems = nitems;
	for (size_t i = 0; i < nitems; i++) {
		const redisReply *e = x->element[4 + i];

		snap->has_left[i] = e->type == REDIS_REPLY_STRING;
		snap->left[i] = snap->has_left[i] ? strtol(e->str, NULL, 10) : -1;
	}
	return 0;
}

int
fs_stock_snapshot(fs_stock *s, uint64_t sale, const uint64_t *items, size_t n,
    struct fs_stock_snapshot *snap)
{
	char keys[KEY__MAX][KEY_MAX], k[KEY_MAX];
	/* The order of the EXEC reply's elements: see snapshot_fill. */
	const char *cmds[][4] = {
		{ "EXISTS", keys[KEY_SALE], NULL, NULL },
		{ "HGETALL", keys[KEY_ORDERS], NULL, NULL },
		{ "HGETALL", keys[KEY_HOLDERS], NULL, NULL },
		{ "ZRANGE", keys[KEY_UNCONFIRMED], "0", "-1" },
	};
	const int argcs[] = { 2, 2, 2, 4 };
	redisReply *x = NULL;
	int ok, rc = -1;

	memset(snap, 0, sizeof(*snap));
	for (int kk = 0; kk < KEY__MAX; kk++)
		key(keys[kk], (enum key_kind)kk, sale, 0);
	if (cmd_do(s, "snapshot", 1, (const char *[]){ "MULTI" }) != 0)
		return -1;
	ok = 1;
	for (size_t c = 0; c < sizeof(argcs) / sizeof(argcs[0]) && ok; c++)
		ok = cmd_do(s, "snapshot", argcs[c], cmds[c]) == 0;
	for (size_t i = 0; i < n && ok; i++) {
		key(k, KEY_STOCK, sale, items[i]);
		ok = cmd_do(s, "snapshot", 2, (const char *[]){ "GET", k }) == 0;
	}
	if (!ok) {
		if ((x = fs_redis_argv(s->redis, 1, (const char *[]){ "DISCARD" }, NULL)) != NULL)
			freeReplyObject(x);
		return -1;
	}
	if ((x = cmd(s, "snapshot", 1, (const char *[]){ "EXEC" })) == NULL)
		return -1;
	if (x->type != REDIS_REPLY_ARRAY || x->elements != 4 + n ||
	    x->element[0]->type != REDIS_REPLY_INTEGER ||
	    x->element[1]->type != REDIS_REPLY_ARRAY || x->element[2]->type != REDIS_REPLY_ARRAY ||
	    x->element[3]->type != REDIS_REPLY_ARRAY) {
		set_err(s, FS_STOCK_ERR_REPLY, "snapshot");
		goto out;
	}
	if (snapshot_fill(snap, x, n) != 0) {
		set_err(s, FS_STOCK_ERR_NOMEM, "snapshot");
		fs_stock_snapshot_free(snap);
		goto out;
	}
	rc = 0;
out:
	freeReplyObject(x);
	return rc;
}

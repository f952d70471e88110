#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stock.h"

static const char *const key_formats[FS_STOCK_KEY__MAX] = {
	[FS_STOCK_KEY_STOCK] = "fs:{%" PRIu64 "}:stock:%" PRIu64,
	[FS_STOCK_KEY_HOLDERS] = "fs:{%" PRIu64 "}:holders",
	[FS_STOCK_KEY_ORDERS] = "fs:{%" PRIu64 "}:orders",
	[FS_STOCK_KEY_UNCONFIRMED] = "fs:{%" PRIu64 "}:unconfirmed",
	[FS_STOCK_KEY_SALE] = "fs:{%" PRIu64 "}:sale",
};

static void
set_err(fs_stock *s, const char *what)
{
	s->err = 1;
	snprintf(s->errstr, sizeof(s->errstr), "%s: %s", what, s->redis->errstr);
}

void
fs_stock_key(char out[FS_STOCK_KEY_MAX], enum fs_stock_key_kind kind, uint64_t sale, uint64_t item)
{
	/* Two 20-digit numbers and the fixed text fit in FS_STOCK_KEY_MAX. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	snprintf(out, FS_STOCK_KEY_MAX, key_formats[kind], sale, item);
#pragma GCC diagnostic pop
}

fs_stock *
fs_stock_new(fs_redis *redis, const char *datadir)
{
	char path[1024];
	fs_stock *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->redis = redis;
	snprintf(path, sizeof(path), "%s/lua/reserve.lua", datadir);
	s->reserve = fs_redis_script_load(redis, path);
	snprintf(path, sizeof(path), "%s/lua/release.lua", datadir);
	s->release = fs_redis_script_load(redis, path);
	if (s->reserve < 0 || s->release < 0) {
		set_err(s, "stock scripts");
		return s;
	}
	return s;
}

void
fs_stock_free(fs_stock *s)
{
	free(s);
}

enum fs_stock_result
fs_stock_reserve(fs_stock *s, uint64_t sale, uint64_t item, const char *user, const char *order_id,
    int64_t now_ms, struct fs_stock_hold *out)
{
	char keys[5][FS_STOCK_KEY_MAX], item_s[24], now_s[24];
	const char *argv[9];
	enum fs_stock_result res = FS_STOCK_ERROR;
	redisReply *r;
	long long code;

	memset(out, 0, sizeof(*out));
	for (int k = 0; k < 5; k++)
		fs_stock_key(keys[k], (enum fs_stock_key_kind)k, sale, item);
	snprintf(item_s, sizeof(item_s), "%" PRIu64, item);
	snprintf(now_s, sizeof(now_s), "%" PRId64, now_ms);
	for (int k = 0; k < 5; k++)
		argv[k] = keys[k];
	argv[5] = user;
	argv[6] = order_id;
	argv[7] = item_s;
	argv[8] = now_s;
	if ((r = fs_redis_eval(s->redis, s->reserve, 5, 9, argv)) == NULL) {
		set_err(s, "reserve");
		return FS_STOCK_ERROR;
	}
	if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
	    r->element[0]->type != REDIS_REPLY_INTEGER)
		goto bad;
	code = r->element[0]->integer;
	if (code == 1 || code == 2) {
		if (r->elements < 2 || r->element[1]->type != REDIS_REPLY_STRING ||
		    r->element[1]->len != FS_ORDER_ID_LEN)
			goto bad;
		memcpy(out->order_id, r->element[1]->str, FS_ORDER_ID_LEN + 1);
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
	default:
		goto bad;
	}
	freeReplyObject(r);
	return res;
bad:
	s->err = 1;
	snprintf(s->errstr, sizeof(s->errstr), "reserve: unexpected reply");
	freeReplyObject(r);
	return FS_STOCK_ERROR;
}

int
fs_stock_release(fs_stock *s, uint64_t sale, uint64_t item, const char *order_id)
{
	char keys[4][FS_STOCK_KEY_MAX], sale_s[24], item_s[24];
	const char *argv[7];
	redisReply *r;
	int released;

	fs_stock_key(keys[0], FS_STOCK_KEY_STOCK, sale, item);
	fs_stock_key(keys[1], FS_STOCK_KEY_HOLDERS, sale, item);
	fs_stock_key(keys[2], FS_STOCK_KEY_ORDERS, sale, item);
	fs_stock_key(keys[3], FS_STOCK_KEY_UNCONFIRMED, sale, item);
	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, sale);
	snprintf(item_s, sizeof(item_s), "%" PRIu64, item);
	for (int k = 0; k < 4; k++)
		argv[k] = keys[k];
	argv[4] = order_id;
	argv[5] = sale_s;
	argv[6] = item_s;
	if ((r = fs_redis_eval(s->redis, s->release, 4, 7, argv)) == NULL) {
		set_err(s, "release");
		return -1;
	}
	released = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
	freeReplyObject(r);
	return released;
}

int
fs_stock_confirm(fs_stock *s, uint64_t sale, const char *const *order_ids, size_t n)
{
	enum { BATCH = 256 };
	const char *argv[BATCH + 2];
	char key[FS_STOCK_KEY_MAX];
	redisReply *r;

	fs_stock_key(key, FS_STOCK_KEY_UNCONFIRMED, sale, 0);
	argv[0] = "ZREM";
	argv[1] = key;
	while (n > 0) {
		size_t take = n < BATCH ? n : BATCH;

		memcpy(argv + 2, order_ids, take * sizeof(*order_ids));
		if ((r = fs_redis_argv(s->redis, (int)take + 2, argv, NULL)) == NULL) {
			set_err(s, "confirm");
			return -1;
		}
		freeReplyObject(r);
		order_ids += take;
		n -= take;
	}
	return 0;
}

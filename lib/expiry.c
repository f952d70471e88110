#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "expiry.h"
#include "log.h"
#include "orders.h"
#include "uuid.h"

#define SWEEP_BATCH	500	/* holds looked at per Redis round trip */
#define SWEEP_ROUNDS	100	/* batches per sale and run, at most */
#define SALES_MAX	10000	/* sales swept per run, at most */

static void
set_err(fs_expiry *e, const char *what, const char *detail)
{
	e->err = 1;
	snprintf(e->errstr, sizeof(e->errstr), "%s: %s", what, detail);
}

void
fs_expiry_init(fs_expiry *e, fs_pg *pg, fs_stock *stock, fs_push *push, long hold_max_age_s)
{
	memset(e, 0, sizeof(*e));
	e->pg = pg;
	e->stock = stock;
	e->push = push;
	e->hold_max_age_s = hold_max_age_s;
}

/* Tells the shoppers' pages; a failure only costs the push. */
static void
publish(fs_expiry *e, const struct fs_order *orders, size_t n)
{
	const struct fs_order *list[FS_EXPIRY_BATCH];
	size_t failed, k = 0;

	for (size_t i = 0; i < n && k < FS_EXPIRY_BATCH; i++)
		list[k++] = &orders[i];
	if ((failed = fs_orders_publish(e->push, list, k)) > 0)
		fs_log_warn("%zu status pushes failed (%s)", failed, e->push->errstr);
}

int
fs_expiry_expire(fs_expiry *e, struct fs_expiry_counts *c)
{
	struct fs_order batch[FS_EXPIRY_BATCH];
	enum fs_orders_result r;
	size_t n;

	for (;;) {
		if ((r = fs_orders_expire(e->pg, batch, FS_EXPIRY_BATCH, &n)) != FS_ORDERS_OK) {
			set_err(e, "expire", e->pg->errstr);
			return -1;
		}
		if (n == 0)
			return 0;
		c->expired += n;
		/* Committed: only now may the units go back. */
		for (size_t i = 0; i < n; i++) {
			int rel = fs_stock_release(e->stock, batch[i].sale, batch[i].item,
			    batch[i].id);

			if (rel == 1)
				c->released++;
			else if (rel < 0)
				fs_log_warn("order %s expired, its release failed (%s); the sweep repairs it",
				    batch[i].id, e->stock->errstr);
		}
		publish(e, batch, n);
	}
}

/*
 * Reads a hold record "<user> <item> <reservedAtMs>" into o; -1 when it is
 * not one.
 */
static int
parse_hold(const char *rec, struct fs_order *o)
{
	const char *sp = strchr(rec, ' ');
	char *end;

	if (sp == NULL || sp == rec || (size_t)(sp - rec) > FS_ORDERS_USER_MAX)
		return -1;
	memcpy(o->user, rec, (size_t)(sp - rec));
	o->user[sp - rec] = '\0';
	o->item = strtoull(sp + 1, &end, 10);
	if (end == sp + 1 || *end != ' ' || o->item == 0)
		return -1;
	o->reserved_ms = strtoll(end + 1, &end, 10);
	return *end == '\0' ? 0 : -1;
}

/* Runs one Redis command given as arguments; the reply, or NULL with errstr set. */
static redisReply *
redis_argv(fs_expiry *e, int argc, const char **argv)
{
	redisReply *r = fs_redis_argv(e->stock->redis, argc, argv, NULL);

	if (r == NULL)
		set_err(e, "redis", e->stock->redis->errstr);
	return r;
}

/* Settles one old unconfirmed hold; -1 when a store failed. */
static int
settle_ghost(fs_expiry *e, uint64_t sale, const char *id, const redisReply *rec,
    struct fs_expiry_counts *c)
{
	char key[FS_STOCK_KEY_MAX];
	const char *ids[1] = { id };
	redisReply *r;
	struct fs_order o;
	int rel;

	if (rec->type != REDIS_REPLY_STRING) {
		/* No hold behind the entry: nothing to give back. */
		fs_stock_key(key, FS_STOCK_KEY_UNCONFIRMED, sale, 0);
		if ((r = redis_argv(e, 3, (const char *[]){ "ZREM", key, id })) == NULL)
			return -1;
		freeReplyObject(r);
		return 0;
	}
	memset(&o, 0, sizeof(o));
	snprintf(o.id, sizeof(o.id), "%s", id);
	o.sale = sale;
	if (fs_uuid_parse(id, strlen(id), NULL) != 0 || parse_hold(rec->str, &o) != 0) {
		fs_log_error("sale %" PRIu64 ": unreadable hold %.40s -> %.100s; left alone",
		    sale, id, rec->str);
		return 0;
	}
	if (fs_orders_close_ghost(e->pg, &o) != FS_ORDERS_OK) {
		set_err(e, "ghost", e->pg->errstr);
		return -1;
	}
	if (fs_orders_status_live(o.status)) {
		if (fs_stock_confirm(e->stock, sale, ids, 1) != 0) {
			set_err(e, "confirm", e->stock->errstr);
			return -1;
		}
		c->confirmed++;
		return 0;
	}
	if ((rel = fs_stock_release(e->stock, sale, o.item, id)) < 0) {
		set_err(e, "release", e->stock->errstr);
		return -1;
	}
	if (rel == 1) {
		c->ghosts++;
		fs_log_info("ghost hold %s (sale %" PRIu64 " item %" PRIu64 ", user %s) released: %s",
		    id, sale, o.item, o.user, fs_orders_status_name(o.status));
		if (o.status != FS_ORDER_REJECTED)
			publish(e, &o, 1);
	}
	return 0;
}

/* Closes the sale's unconfirmed holds older than the maximum age. */
static int
sweep_ghosts(fs_expiry *e, uint64_t sale, struct fs_expiry_counts *c)
{
	char zkey[FS_STOCK_KEY_MAX], hkey[FS_STOCK_KEY_MAX], max[24];
	const char *argv[SWEEP_BATCH + 2];
	redisReply *ids = NULL, *recs = NULL;
	int rc = -1;

	fs_stock_key(zkey, FS_STOCK_KEY_UNCONFIRMED, sale, 0);
	fs_stock_key(hkey, FS_STOCK_KEY_ORDERS, sale, 0);
	snprintf(max, sizeof(max), "%" PRId64,
	    fs_clock_now_ms() - (int64_t)e->hold_max_age_s * 1000);
	for (int round = 0; round < SWEEP_ROUNDS; round++) {
		size_t n;

		ids = redis_argv(e, 7,
		    (const char *[]){ "ZRANGEBYSCORE", zkey, "-inf", max, "LIMIT", "0", "500" });
		if (ids == NULL)
			goto out;
		if (ids->type != REDIS_REPLY_ARRAY || ids->elements == 0)
			break;
		n = ids->elements;
		argv[0] = "HMGET";
		argv[1] = hkey;
		for (size_t i = 0; i < n; i++) {
			const redisReply *id = ids->element[i];

			argv[i + 2] = id->type == REDIS_REPLY_STRING ? id->str : "";
		}
		if ((recs = redis_argv(e, (int)n + 2, argv)) == NULL)
			goto out;
		if (recs->type != REDIS_REPLY_ARRAY || recs->elements != n) {
			set_err(e, "redis", "unexpected HMGET reply");
			goto out;
		}
		for (size_t i = 0; i < n; i++)
			if (settle_ghost(e, sale, argv[i + 2], recs->element[i], c) != 0)
				goto out;
		freeReplyObject(recs);
		recs = NULL;
		freeReplyObject(ids);
		ids = NULL;
		if (n < SWEEP_BATCH)
			break;
	}
	rc = 0;
out:
	if (recs != NULL)
		freeReplyObject(recs);
	if (ids != NULL)
		freeReplyObject(ids);
	return rc;
}

/* Releases the sale's holds whose orders the database has closed. */
static int
repair_closed(fs_expiry *e, uint64_t sale, struct fs_expiry_counts *c)
{
	char hkey[FS_STOCK_KEY_MAX], cursor[32] = "0";
	const char *ids[SWEEP_BATCH], *recs[SWEEP_BATCH];
	size_t closed[SWEEP_BATCH];
	redisReply *r = NULL;
	int rc = -1;

	fs_stock_key(hkey, FS_STOCK_KEY_ORDERS, sale, 0);
	do {
		size_t n = 0, nclosed;

		r = redis_argv(e, 5, (const char *[]){ "HSCAN", hkey, cursor, "COUNT", "500" });
		if (r == NULL)
			goto out;
		if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
		    r->element[0]->type != REDIS_REPLY_STRING ||
		    r->element[1]->type != REDIS_REPLY_ARRAY) {
			set_err(e, "redis", "unexpected HSCAN reply");
			goto out;
		}
		snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
		for (size_t i = 0; i + 1 < r->element[1]->elements && n < SWEEP_BATCH; i += 2) {
			const redisReply *id = r->element[1]->element[i],
			    *rec = r->element[1]->element[i + 1];

			if (id->type != REDIS_REPLY_STRING || rec->type != REDIS_REPLY_STRING ||
			    fs_uuid_parse(id->str, id->len, NULL) != 0)
				continue;
			ids[n] = id->str;
			recs[n] = rec->str;
			n++;
		}
		if (fs_orders_closed_among(e->pg, ids, n, closed, &nclosed) != FS_ORDERS_OK) {
			set_err(e, "closed orders", e->pg->errstr);
			goto out;
		}
		for (size_t k = 0; k < nclosed; k++) {
			struct fs_order o;
			int rel;

			memset(&o, 0, sizeof(o));
			if (parse_hold(recs[closed[k]], &o) != 0)
				continue;
			if ((rel = fs_stock_release(e->stock, sale, o.item, ids[closed[k]])) < 0) {
				set_err(e, "release", e->stock->errstr);
				goto out;
			}
			if (rel == 1) {
				c->repaired++;
				fs_log_info("hold of closed order %s released late",
				    ids[closed[k]]);
			}
		}
		freeReplyObject(r);
		r = NULL;
	} while (strcmp(cursor, "0") != 0);
	rc = 0;
out:
	if (r != NULL)
		freeReplyObject(r);
	return rc;
}

/* The sale of a key "fs:{S}:orders"; 0 when it is not one. */
static uint64_t
sale_of_key(const char *key)
{
	char *end;
	uint64_t sale;

	if (strncmp(key, "fs:{", 4) != 0)
		return 0;
	sale = strtoull(key + 4, &end, 10);
	return (end != key + 4 && strcmp(end, "}:orders") == 0) ? sale : 0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Every sale with holds, from the keys fs:{S}:orders. SCAN walks one node:
 * on a Redis Cluster each master would be walked (XXX not done here).
 */
static int
sales_with_holds(fs_expiry *e, uint64_t *sales, size_t max, size_t *n)
{
	char cursor[32] = "0";
	redisReply *r;

	*n = 0;
	do {
		r = redis_argv(e, 6, (const char *[]){ "SCAN", cursor, "MATCH", "fs:{*}:orders",
		    "COUNT", "1000" });
		if (r == NULL)
			return -1;
		if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
		    r->element[0]->type != REDIS_REPLY_STRING ||
		    r->element[1]->type != REDIS_REPLY_ARRAY) {
			freeReplyObject(r);
			set_err(e, "redis", "unexpected SCAN reply");
			return -1;
		}
		snprintf(cursor, sizeof(cursor), "%s", r->element[0]->str);
		for (size_t i = 0; i < r->element[1]->elements && *n < max; i++) {
			const redisReply *k = r->element[1]->element[i];
			uint64_t sale = k->type == REDIS_REPLY_STRING ? sale_of_key(k->str) : 0;

			if (sale != 0)
				sales[(*n)++] = sale;
		}
		freeReplyObject(r);
	} while (strcmp(cursor, "0") != 0 && *n < max);
	/* SCAN may name a key twice. */
	qsort(sales, *n, sizeof(*sales), cmp_u64);
	{
		size_t k = 0;

		for (size_t i = 0; i < *n; i++)
			if (k == 0 || sales[k - 1] != sales[i])
				sales[k++] = sales[i];
		*n = k;
	}
	return 0;
}

int
fs_expiry_sweep(fs_expiry *e, int backlog_empty, struct fs_expiry_counts *c)
{
	uint64_t *sales;
	size_t n;
	int rc = -1;

	if ((sales = calloc(SALES_MAX, sizeof(*sales))) == NULL) {
		set_err(e, "sweep", "out of memory");
		return -1;
	}
	if (sales_with_holds(e, sales, SALES_MAX, &n) != 0)
		goto out;
	for (size_t i = 0; i < n; i++) {
		if (!backlog_empty)
			c->deferred++;
		else if (sweep_ghosts(e, sales[i], c) != 0)
			goto out;
		if (repair_closed(e, sales[i], c) != 0)
			goto out;
		c->sales++;
	}
	rc = 0;
out:
	free(sales);
	return rc;
}

int
fs_expiry_counts_json(const struct fs_expiry_counts *c, char *out, size_t outlen)
{
	int n = snprintf(out, outlen,
	    "{\"expired\":%lu,\"released\":%lu,\"ghosts\":%lu,\"confirmed\":%lu,\"repaired\":%lu,"
	    "\"sales\":%lu,\"deferred\":%lu}",
	    c->expired, c->released, c->ghosts, c->confirmed, c->repaired, c->sales, c->deferred);

	return (n < 0 || (size_t)n >= outlen) ? -1 : n;
}

#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconcile.h"
#include "sales.h"
#include "stock.h"

#define ERR(...) snprintf(err, errlen, __VA_ARGS__)

/* A sorted (key, value) table for lookups by order id or user id. */
struct entry {
	const char *key;
	const char *val;
};

static int
cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->key, ((const struct entry *)b)->key);
}

static const struct entry *
find(const struct entry *t, size_t n, const char *key)
{
	struct entry probe = { key, NULL };

	return n == 0 ? NULL : bsearch(&probe, t, n, sizeof(*t), cmp_entry);
}

/* Builds a table from a HGETALL reply (field, value, field, value ...). */
static struct entry *
table_of_hash(const redisReply *r, size_t *n)
{
	struct entry *t;

	*n = 0;
	if ((t = calloc(r->elements / 2 + 1, sizeof(*t))) == NULL)
		return NULL;
	for (size_t i = 0; i + 1 < r->elements; i += 2) {
		if (r->element[i]->type != REDIS_REPLY_STRING ||
		    r->element[i + 1]->type != REDIS_REPLY_STRING)
			continue;
		t[*n].key = r->element[i]->str;
		t[*n].val = r->element[i + 1]->str;
		(*n)++;
	}
	qsort(t, *n, sizeof(*t), cmp_entry);
	return t;
}

/* Builds a table of the first column (key) and second column (value) of a result. */
static struct entry *
table_of_result(PGresult *res, size_t *n)
{
	struct entry *t;

	*n = (size_t)PQntuples(res);
	if ((t = calloc(*n + 1, sizeof(*t))) == NULL)
		return NULL;
	for (size_t i = 0; i < *n; i++) {
		t[i].key = PQgetvalue(res, (int)i, 0);
		t[i].val = PQgetvalue(res, (int)i, 1);
	}
	qsort(t, *n, sizeof(*t), cmp_entry);
	return t;
}

struct reporter {
	fs_reconcile_report *fn;
	void *arg;
	uint64_t sale;
	int count;
};

static void say(struct reporter *, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
say(struct reporter *rp, const char *fmt, ...)
{
	char line[512];
	int n;
	va_list ap;

	n = snprintf(line, sizeof(line), "sale %" PRIu64 ": ", rp->sale);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	rp->count++;
	rp->fn(rp->arg, line);
}

/* The user and item of a hold record "<user> <item> <reservedAtMs>". */
static int
hold_parts(const char *rec, char *user, size_t userlen, uint64_t *item)
{
	const char *sp = strchr(rec, ' ');

	if (sp == NULL || (size_t)(sp - rec) >= userlen)
		return -1;
	memcpy(user, rec, (size_t)(sp - rec));
	user[sp - rec] = '\0';
	*item = strtoull(sp + 1, NULL, 10);
	return 0;
}

/* Runs MULTI, the queued commands, EXEC: one consistent view of the sale in Redis. */
static redisReply *
redis_snapshot(fs_redis *r, uint64_t sale, PGresult *items, char *err, size_t errlen)
{
	char keys[FS_STOCK_KEY__MAX][FS_STOCK_KEY_MAX], stock[FS_STOCK_KEY_MAX];
	/* The order of the EXEC reply's elements: see check_redis. */
	const char *cmds[][4] = {
		{ "EXISTS", keys[FS_STOCK_KEY_SALE], NULL, NULL },
		{ "HGETALL", keys[FS_STOCK_KEY_ORDERS], NULL, NULL },
		{ "HGETALL", keys[FS_STOCK_KEY_HOLDERS], NULL, NULL },
		{ "ZRANGE", keys[FS_STOCK_KEY_UNCONFIRMED], "0", "-1" },
	};
	const int argcs[] = { 2, 2, 2, 4 };
	redisReply *reply;
	int ok = 1;

	for (int k = 0; k < FS_STOCK_KEY__MAX; k++)
		fs_stock_key(keys[k], (enum fs_stock_key_kind)k, sale, 0);

	if ((reply = fs_redis_argv(r, 1, (const char *[]){ "MULTI" }, NULL)) == NULL)
		goto fail;
	freeReplyObject(reply);
	for (size_t c = 0; c < sizeof(argcs) / sizeof(argcs[0]) && ok; c++) {
		reply = fs_redis_argv(r, argcs[c], cmds[c], NULL);
		ok = reply != NULL;
		if (reply != NULL)
			freeReplyObject(reply);
	}
	for (int i = 0; i < PQntuples(items) && ok; i++) {
		fs_stock_key(stock, FS_STOCK_KEY_STOCK, sale,
		    strtoull(PQgetvalue(items, i, 0), NULL, 10));
		reply = fs_redis_argv(r, 2, (const char *[]){ "GET", stock }, NULL);
		ok = reply != NULL;
		if (reply != NULL)
			freeReplyObject(reply);
	}
	if (!ok) {
		if ((reply = fs_redis_argv(r, 1, (const char *[]){ "DISCARD" }, NULL)) != NULL)
			freeReplyObject(reply);
		goto fail;
	}
	if ((reply = fs_redis_argv(r, 1, (const char *[]){ "EXEC" }, NULL)) == NULL)
		goto fail;
	if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 4 + (size_t)PQntuples(items) ||
	    reply->element[0]->type != REDIS_REPLY_INTEGER ||
	    reply->element[1]->type != REDIS_REPLY_ARRAY ||
	    reply->element[2]->type != REDIS_REPLY_ARRAY ||
	    reply->element[3]->type != REDIS_REPLY_ARRAY) {
		freeReplyObject(reply);
		ERR("redis: unexpected EXEC reply");
		return NULL;
	}
	return reply;
fail:
	ERR("redis: %s", r->errstr);
	return NULL;
}

/* Checks the Redis side against the database's live orders and statuses. */
static void
check_redis(struct reporter *rp, const redisReply *snap, PGresult *items, PGresult *live,
    PGresult *statuses, struct fs_reconcile_summary *sum)
{
	const redisReply *orders = snap->element[1], *holders = snap->element[2],
	    *unconf = snap->element[3];
	struct entry *otab = NULL, *htab = NULL, *utab = NULL, *ltab = NULL, *stab = NULL;
	size_t on, hn, un = 0, ln, sn;
	long *held = NULL;
	char user[128];
	uint64_t item;

	otab = table_of_hash(orders, &on);
	htab = table_of_hash(holders, &hn);
	ltab = table_of_result(live, &ln);
	stab = table_of_result(statuses, &sn);
	if ((utab = calloc(unconf->elements + 1, sizeof(*utab))) != NULL) {
		for (size_t i = 0; i < unconf->elements; i++)
			if (unconf->element[i]->type == REDIS_REPLY_STRING)
				utab[un++].key = unconf->element[i]->str;
		qsort(utab, un, sizeof(*utab), cmp_entry);
	}
	if (otab == NULL || htab == NULL || utab == NULL || ltab == NULL || stab == NULL) {
		say(rp, "out of memory while checking Redis");
		goto out;
	}
	sum->holds = (long)on;
	sum->unconfirmed = (long)un;

	/* Holds per item (items come in id order), then left + holds == quantity. */
	if ((held = calloc((size_t)PQntuples(items) + 1, sizeof(*held))) == NULL) {
		say(rp, "out of memory while checking Redis");
		goto out;
	}
	for (size_t k = 0; k < on; k++) {
		int lo = 0, hi = PQntuples(items) - 1;

		if (hold_parts(otab[k].val, user, sizeof(user), &item) != 0)
			continue;
		while (lo <= hi) {
			int mid = (lo + hi) / 2;
			uint64_t id = strtoull(PQgetvalue(items, mid, 0), NULL, 10);

			if (id == item) {
				held[mid]++;
				break;
			}
			if (id < item)
				lo = mid + 1;
			else
				hi = mid - 1;
		}
		if (lo > hi)
			say(rp, "hold %s is for item %" PRIu64 ", not in the sale", otab[k].key,
			    item);
	}
	for (int i = 0; i < PQntuples(items); i++) {
		const redisReply *left = snap->element[4 + i];
		uint64_t id = strtoull(PQgetvalue(items, i, 0), NULL, 10);
		long quantity = strtol(PQgetvalue(items, i, 1), NULL, 10), units;

		if (left->type != REDIS_REPLY_STRING) {
			say(rp, "item %" PRIu64 ": no units-left key in Redis", id);
			continue;
		}
		units = strtol(left->str, NULL, 10);
		if (units < 0)
			say(rp, "item %" PRIu64 ": Redis units left %ld < 0", id, units);
		if (units + held[i] != quantity)
			say(rp, "item %" PRIu64 ": Redis units left %ld + holds %ld != quantity %ld", id,
			    units, held[i], quantity);
	}
	/* holders (user -> order) and orders (order -> user) agree. */
	for (size_t k = 0; k < hn; k++) {
		const struct entry *o = find(otab, on, htab[k].val);

		if (o == NULL || hold_parts(o->val, user, sizeof(user), &item) != 0 ||
		    strcmp(user, htab[k].key) != 0)
			say(rp, "holder %s -> order %s has no matching hold record", htab[k].key,
			    htab[k].val);
	}
	for (size_t k = 0; k < on; k++) {
		const struct entry *h;

		if (hold_parts(otab[k].val, user, sizeof(user), &item) != 0) {
			say(rp, "hold %s has an unreadable record \"%.80s\"", otab[k].key,
			    otab[k].val);
			continue;
		}
		h = find(htab, hn, user);
		if (h == NULL || strcmp(h->val, otab[k].key) != 0)
			say(rp, "hold %s of user %s is not that user's holder entry", otab[k].key,
			    user);
	}
	/* Every live order holds its unit. */
	for (size_t k = 0; k < ln; k++) {
		const struct entry *o = find(otab, on, ltab[k].key);

		if (o == NULL)
			say(rp, "live order %s (user %s) has no hold in Redis", ltab[k].key,
			    ltab[k].val);
		else if (hold_parts(o->val, user, sizeof(user), &item) != 0 ||
		    strcmp(user, ltab[k].val) != 0)
			say(rp, "live order %s of user %s is held for \"%.80s\"", ltab[k].key,
			    ltab[k].val, o->val);
	}
	/* Every hold is a live order, or one on its way. */
	for (size_t k = 0; k < on; k++) {
		const struct entry *s;

		if (find(ltab, ln, otab[k].key) != NULL)
			continue;
		if ((s = find(stab, sn, otab[k].key)) != NULL)
			say(rp, "hold %s belongs to a %s order: its unit should be back",
			    otab[k].key, s->val);
		else if (find(utab, un, otab[k].key) == NULL)
			say(rp, "hold %s has no order in the database and is not on its way",
			    otab[k].key);
	}
	for (size_t k = 0; k < un; k++)
		if (find(otab, on, utab[k].key) == NULL)
			say(rp, "unconfirmed entry %s holds nothing", utab[k].key);
out:
	free(held);
	free(otab);
	free(htab);
	free(utab);
	free(ltab);
	free(stab);
}

/* The Redis holds' ids as a PostgreSQL uuid[] literal (malloc'd), or NULL. */
static char *
hold_ids_literal(const redisReply *orders)
{
	size_t len = 2 + orders->elements / 2 * 38 + 1, used = 0;
	char *s = malloc(len);

	if (s == NULL)
		return NULL;
	s[used++] = '{';
	for (size_t i = 0; i + 1 < orders->elements; i += 2) {
		const redisReply *id = orders->element[i];

		/* Only well-formed ids: anything else fails the check elsewhere. */
		if (id->type != REDIS_REPLY_STRING || id->len != 36 ||
		    strspn(id->str, "0123456789abcdef-") != 36)
			continue;
		if (used > 1)
			s[used++] = ',';
		memcpy(s + used, id->str, 36);
		used += 36;
	}
	s[used++] = '}';
	s[used] = '\0';
	return s;
}

int
fs_reconcile_sale(fs_pg *pg, fs_redis *r, uint64_t sale, fs_reconcile_report *fn, void *arg,
    struct fs_reconcile_summary *sum, char *err, size_t errlen)
{
	struct reporter rp = { fn, arg, sale, 0 };
	char sale_s[24], *ids = NULL;
	const char *p1[1] = { sale_s }, *p2[2] = { sale_s, NULL };
	PGresult *items = NULL, *figs = NULL, *twice = NULL, *live = NULL, *statuses = NULL;
	redisReply *snap = NULL;
	int rc = -1, in_tx = 0;

	memset(sum, 0, sizeof(*sum));
	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, sale);
	if ((items = fs_pg_exec(pg,
	    "SELECT i.id, i.quantity FROM sales s LEFT JOIN items i ON i.sale_id = s.id "
				    "WHERE s.id = $1 AND i.id IS NOT NULL ORDER BY i.id",
		 1, p1)) == NULL)
		goto dberr;
	if (PQntuples(items) == 0) {
		PQclear(items);
		if ((items = fs_pg_exec(pg, "SELECT 1 FROM sales WHERE id = $1", 1, p1)) == NULL)
			goto dberr;
		if (PQntuples(items) == 0) {
			ERR("no sale %s", sale_s);
			goto out;
		}
		rc = 0;
		goto out;
	}
	sum->items = PQntuples(items);
	/* Redis first: see the header. */
	if ((snap = redis_snapshot(r, sale, items, err, errlen)) == NULL)
		goto out;
	sum->in_redis = snap->element[0]->integer > 0;
	if ((ids = hold_ids_literal(snap->element[1])) == NULL) {
		ERR("out of memory");
		goto out;
	}
	p2[1] = ids;
	if (fs_pg_run(pg, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL) != 0)
		goto dberr;
	in_tx = 1;
	/* One snapshot: sold, the live orders and their statuses agree. */
	if ((figs = fs_pg_exec(pg,
		 "SELECT i.id, i.quantity, i.sold, "
		 "count(o.id) FILTER (WHERE o.status IN ('PENDING', 'PAID')) "
		 "FROM items i LEFT JOIN orders o ON o.item_id = i.id AND o.sale_id = i.sale_id "
		 "WHERE i.sale_id = $1 GROUP BY i.id ORDER BY i.id",
		 1, p1)) == NULL)
		goto dberr;
	if ((twice = fs_pg_exec(pg,
		 "SELECT user_id, count(*) FROM orders WHERE sale_id = $1 "
		 "AND status IN ('PENDING', 'PAID') GROUP BY user_id HAVING count(*) > 1",
		 1, p1)) == NULL)
		goto dberr;
	if ((live = fs_pg_exec(pg,
		 "SELECT id::text, user_id FROM orders WHERE sale_id = $1 "
		 "AND status IN ('PENDING', 'PAID')",
		 1, p1)) == NULL)
		goto dberr;
	statuses = fs_pg_exec(pg,
	    "SELECT id::text, status FROM orders WHERE sale_id = $1 "
	    "AND id = ANY ($2::uuid[]) AND status NOT IN ('PENDING', 'PAID')",
	    2, p2);
	if (statuses == NULL)
		goto dberr;
	fs_pg_run(pg, "COMMIT", 0, NULL);
	in_tx = 0;

	for (int i = 0; i < PQntuples(figs); i++) {
		long quantity = strtol(PQgetvalue(figs, i, 1), NULL, 10);
		long sold = strtol(PQgetvalue(figs, i, 2), NULL, 10);
		long nlive = strtol(PQgetvalue(figs, i, 3), NULL, 10);

		sum->live += nlive;
		if (nlive > quantity)
			say(&rp, "item %s: %ld live orders > quantity %ld", PQgetvalue(figs, i, 0),
			    nlive, quantity);
		if (sold != nlive)
			say(&rp, "item %s: sold %ld but %ld live orders", PQgetvalue(figs, i, 0),
			    sold, nlive);
	}
	for (int i = 0; i < PQntuples(twice); i++)
		say(&rp, "user %s has %s live orders", PQgetvalue(twice, i, 0),
		    PQgetvalue(twice, i, 1));
	if (sum->in_redis)
		check_redis(&rp, snap, items, live, statuses, sum);
	else if (sum->live > 0 || snap->element[1]->elements > 0)
		say(&rp, "not loaded into Redis, yet %ld live orders and %zu holds", sum->live,
		    snap->element[1]->elements / 2);
	rc = rp.count;
	goto out;
dberr:
	ERR("database: %s", pg->errstr);
out:
	if (in_tx)
		fs_pg_run(pg, "ROLLBACK", 0, NULL);
	if (snap != NULL)
		freeReplyObject(snap);
	free(ids);
	PQclear(items);
	PQclear(figs);
	PQclear(twice);
	PQclear(live);
	PQclear(statuses);
	return rc;
}

int
fs_reconcile_all_sales(fs_pg *pg, uint64_t *sales, int max, char *err, size_t errlen)
{
	PGresult *res = fs_pg_exec(pg, "SELECT id FROM sales ORDER BY id", 0, NULL);
	int n = 0;

	if (res == NULL) {
		ERR("database: %s", pg->errstr);
		return -1;
	}
	for (int i = 0; i < PQntuples(res) && n < max; i++)
		if (fs_sales_parse_id(PQgetvalue(res, i, 0), &sales[n]) == 0)
			n++;
	PQclear(res);
	return n;
}

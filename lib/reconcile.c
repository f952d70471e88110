#include "config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "orders.h"
#include "reconcile.h"
#include "route.h"
#include "sales.h"
#include "stock.h"
#include "uuid.h"

#define ERR(...) snprintf(err, errlen, __VA_ARGS__)

/* A sorted (key, value) table for lookups by order id or user id. */
struct entry {
	const char *key;
	const char *val;
	const struct fs_stock_record *hold; /* in the table of holds */
};

static int
cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->key, ((const struct entry *)b)->key);
}

static const struct entry *
find(const struct entry *t, size_t n, const char *key)
{
	struct entry probe = { key, NULL, NULL };

	return n == 0 ? NULL : bsearch(&probe, t, n, sizeof(*t), cmp_entry);
}

/* The holds (order id -> the hold) as a sorted table. */
static struct entry *
table_of_holds(const struct fs_stock_snapshot *snap)
{
	struct entry *t;

	if ((t = calloc(snap->nholds + 1, sizeof(*t))) == NULL)
		return NULL;
	for (size_t i = 0; i < snap->nholds; i++) {
		t[i].key = snap->holds[i].order_id;
		t[i].hold = &snap->holds[i];
	}
	qsort(t, snap->nholds, sizeof(*t), cmp_entry);
	return t;
}

/* The holders (user -> order id) as a sorted table. */
static struct entry *
table_of_holders(const struct fs_stock_snapshot *snap)
{
	struct entry *t;

	if ((t = calloc(snap->nholders + 1, sizeof(*t))) == NULL)
		return NULL;
	for (size_t i = 0; i < snap->nholders; i++) {
		t[i].key = snap->holders[i].user;
		t[i].val = snap->holders[i].order_id;
	}
	qsort(t, snap->nholders, sizeof(*t), cmp_entry);
	return t;
}

/* The unconfirmed ids as a sorted table. */
static struct entry *
table_of_unconfirmed(const struct fs_stock_snapshot *snap)
{
	struct entry *t;

	if ((t = calloc(snap->nunconfirmed + 1, sizeof(*t))) == NULL)
		return NULL;
	for (size_t i = 0; i < snap->nunconfirmed; i++)
		t[i].key = snap->unconfirmed[i];
	qsort(t, snap->nunconfirmed, sizeof(*t), cmp_entry);
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

/* The tables check_redis compares. */
struct tables {
	struct entry *holds, *holders, *unconf, *live, *statuses;
	size_t nholds, nholders, nunconf, nlive, nstatuses;
};

static void
tables_free(struct tables *t)
{
	free(t->holds);
	free(t->holders);
	free(t->unconf);
	free(t->live);
	free(t->statuses);
}

/* 0, or -1 when out of memory. */
static int
tables_make(struct tables *t, const struct fs_stock_snapshot *snap, PGresult *live,
    PGresult *statuses)
{
	memset(t, 0, sizeof(*t));
	t->holds = table_of_holds(snap);
	t->nholds = snap->nholds;
	t->holders = table_of_holders(snap);
	t->nholders = snap->nholders;
	t->unconf = table_of_unconfirmed(snap);
	t->nunconf = snap->nunconfirmed;
	t->live = table_of_result(live, &t->nlive);
	t->statuses = table_of_result(statuses, &t->nstatuses);
	return (t->holds == NULL || t->holders == NULL || t->unconf == NULL || t->live == NULL ||
		   t->statuses == NULL) ? -1 : 0;
}

/* Redis units left + holds == quantity, per item (items come in id order). */
static void
check_units(struct reporter *rp, const struct fs_stock_snapshot *snap, PGresult *items)
{
	int nitems = PQntuples(items);
	long *held;

	if ((held = calloc((size_t)nitems + 1, sizeof(*held))) == NULL) {
		say(rp, "out of memory while checking Redis");
		return;
	}
	for (size_t k = 0; k < snap->nholds; k++) {
		const struct fs_stock_record *h = &snap->holds[k];
		int lo = 0, hi = nitems - 1;

		if (!h->readable)
			continue;
		while (lo <= hi) {
			int mid = (lo + hi) / 2;
			uint64_t id = strtoull(PQgetvalue(items, mid, 0), NULL, 10);

			if (id == h->item) {
				held[mid]++;
				break;
			}
			if (id < h->item)
				lo = mid + 1;
			else
				hi = mid - 1;
		}
		if (lo > hi)
			say(rp, "hold %s is for item %" PRIu64 ", not in the sale", h->order_id,
			    h->item);
	}
	for (int i = 0; i < nitems; i++) {
		uint64_t id = strtoull(PQgetvalue(items, i, 0), NULL, 10);
		long quantity = strtol(PQgetvalue(items, i, 1), NULL, 10), units = snap->left[i];

		if (!snap->has_left[i]) {
			say(rp, "item %" PRIu64 ": no units-left key in Redis", id);
			continue;
		}
		if (units < 0)
			say(rp, "item %" PRIu64 ": Redis units left %ld < 0", id, units);
		if (units + held[i] != quantity)
			say(rp, "item %" PRIu64 ": Redis units left %ld + holds %ld != quantity %ld", id,
			    units, held[i], quantity);
	}
	free(held);
}

/* holders (user -> order) and holds (order -> user) agree. */
static void
check_holders(struct reporter *rp, const struct tables *t)
{
	for (size_t k = 0; k < t->nholders; k++) {
		const struct entry *o = find(t->holds, t->nholds, t->holders[k].val);

		if (o == NULL || !o->hold->readable || strcmp(o->hold->user, t->holders[k].key) != 0)
			say(rp, "holder %s -> order %s has no matching hold record",
			    t->holders[k].key, t->holders[k].val);
	}
	for (size_t k = 0; k < t->nholds; k++) {
		const struct fs_stock_record *h = t->holds[k].hold;
		const struct entry *u;

		if (!h->readable) {
			say(rp, "hold %s has an unreadable record \"%.80s\"", h->order_id, h->raw);
			continue;
		}
		u = find(t->holders, t->nholders, h->user);
		if (u == NULL || strcmp(u->val, h->order_id) != 0)
			say(rp, "hold %s of user %s is not that user's holder entry", h->order_id,
			    h->user);
	}
}

/* Every live order holds its unit; every hold is a live order or one on its way. */
static void
check_orders(struct reporter *rp, const struct tables *t)
{
	for (size_t k = 0; k < t->nlive; k++) {
		const struct entry *o = find(t->holds, t->nholds, t->live[k].key);

		if (o == NULL)
			say(rp, "live order %s (user %s) has no hold in Redis", t->live[k].key,
			    t->live[k].val);
		else if (!o->hold->readable || strcmp(o->hold->user, t->live[k].val) != 0)
			say(rp, "live order %s of user %s is held for \"%.80s\"", t->live[k].key,
			    t->live[k].val, o->hold->raw);
	}
	for (size_t k = 0; k < t->nholds; k++) {
		const char *id = t->holds[k].key;
		const struct entry *st;

		if (find(t->live, t->nlive, id) != NULL)
			continue;
		if ((st = find(t->statuses, t->nstatuses, id)) != NULL)
			say(rp, "hold %s belongs to a %s order: its unit should be back", id,
			    st->val);
		else if (find(t->unconf, t->nunconf, id) == NULL)
			say(rp, "hold %s has no order in the database and is not on its way", id);
	}
	for (size_t k = 0; k < t->nunconf; k++)
		if (find(t->holds, t->nholds, t->unconf[k].key) == NULL)
			say(rp, "unconfirmed entry %s holds nothing", t->unconf[k].key);
}

/* Checks the Redis side against the database's live orders and statuses. */
static void
check_redis(struct reporter *rp, const struct fs_stock_snapshot *snap, PGresult *items,
    PGresult *live, PGresult *statuses, struct fs_reconcile_summary *sum)
{
	struct tables t;

	sum->holds = (long)snap->nholds;
	sum->unconfirmed = (long)snap->nunconfirmed;
	if (tables_make(&t, snap, live, statuses) != 0) {
		say(rp, "out of memory while checking Redis");
		goto out;
	}
	check_units(rp, snap, items);
	check_holders(rp, &t);
	check_orders(rp, &t);
out:
	tables_free(&t);
}

/* The holds' well-formed ids as a PostgreSQL uuid[] literal (malloc'd), or NULL. */
static char *
hold_ids_literal(const struct fs_stock_snapshot *snap)
{
	size_t len = 2 + snap->nholds * (FS_UUID_STRLEN + 1) + 1, used = 0;
	char *s = malloc(len);

	if (s == NULL)
		return NULL;
	s[used++] = '{';
	for (size_t i = 0; i < snap->nholds; i++) {
		const char *id = snap->holds[i].order_id;

		/* Only well-formed ids: anything else fails the check elsewhere. */
		if (fs_uuid_parse(id, strlen(id), NULL) != 0)
			continue;
		if (used > 1)
			s[used++] = ',';
		memcpy(s + used, id, FS_UUID_STRLEN);
		used += FS_UUID_STRLEN;
	}
	s[used++] = '}';
	s[used] = '\0';
	return s;
}

/* What the database says of a sale, read in one snapshot. */
struct db_view {
	PGresult *figs;		/* per item: id, quantity, sold, live orders */
	PGresult *twice;	/* users with more than one live order */
	PGresult *live;		/* live orders: id, user */
	PGresult *statuses;	/* of the Redis holds, those closed: id, status */
};

static void
db_view_free(struct db_view *v)
{
	PQclear(v->figs);
	PQclear(v->twice);
	PQclear(v->live);
	PQclear(v->statuses);
}

/*
 * Reads the database's side in one snapshot, so sold, the live orders and
 * their statuses agree; hold_ids is the uuid[] literal of the Redis holds.
 * 0, or -1 with err set.
 */
static int
read_db(fs_pg *pg, const char *sale_s, const char *hold_ids, struct db_view *v, char *err,
    size_t errlen)
{
	const char *p1[1] = { sale_s }, *p2[2] = { sale_s, hold_ids };
	int rc = -1;

	if (fs_pg_run(pg, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL) != 0) {
		ERR("database: %s", pg->errstr);
		return -1;
	}
	if ((v->figs = fs_pg_exec(pg,
		 "SELECT i.id, i.quantity, i.sold, "
		 "count(o.id) FILTER (WHERE o.status IN " FS_ORDERS_LIVE_SQL ") "
		 "FROM items i LEFT JOIN orders o ON o.item_id = i.id AND o.sale_id = i.sale_id "
		 "WHERE i.sale_id = $1 GROUP BY i.id ORDER BY i.id",
		 1, p1)) == NULL ||
	    (v->twice = fs_pg_exec(pg,
		 "SELECT user_id, count(*) FROM orders WHERE sale_id = $1 "
		 "AND status IN " FS_ORDERS_LIVE_SQL " GROUP BY user_id HAVING count(*) > 1",
		 1, p1)) == NULL ||
	    (v->live = fs_pg_exec(pg,
		 "SELECT id::text, user_id FROM orders WHERE sale_id = $1 "
		 "AND status IN " FS_ORDERS_LIVE_SQL,
		 1, p1)) == NULL ||
	    (v->statuses = fs_pg_exec(pg,
		 "SELECT id::text, status FROM orders WHERE sale_id = $1 "
		 "AND id = ANY ($2::uuid[]) AND status NOT IN " FS_ORDERS_LIVE_SQL,
		 2, p2)) == NULL) {
		ERR("database: %s", pg->errstr);
		goto out;
	}
	rc = 0;
out:
	fs_pg_run(pg, rc == 0 ? "COMMIT" : "ROLLBACK", 0, NULL);
	return rc;
}

/* Invariants 1 and 2: live orders <= quantity, sold == live orders, one per shopper. */
static void
check_db(struct reporter *rp, const struct db_view *v, struct fs_reconcile_summary *sum)
{
	for (int i = 0; i < PQntuples(v->figs); i++) {
		long quantity = strtol(PQgetvalue(v->figs, i, 1), NULL, 10);
		long sold = strtol(PQgetvalue(v->figs, i, 2), NULL, 10);
		long nlive = strtol(PQgetvalue(v->figs, i, 3), NULL, 10);

		sum->live += nlive;
		if (nlive > quantity)
			say(rp, "item %s: %ld live orders > quantity %ld", PQgetvalue(v->figs, i, 0),
			    nlive, quantity);
		if (sold != nlive)
			say(rp, "item %s: sold %ld but %ld live orders", PQgetvalue(v->figs, i, 0),
			    sold, nlive);
	}
	for (int i = 0; i < PQntuples(v->twice); i++)
		say(rp, "user %s has %s live orders", PQgetvalue(v->twice, i, 0),
		    PQgetvalue(v->twice, i, 1));
}

/*
 * The sale's items (id, quantity, in id order) into *items; 0 with *items
 * NULL for a sale without items, -1 with err set for an unknown sale or a
 * database failure.
 */
static int
read_items(fs_pg *pg, const char *sale_s, PGresult **items, char *err, size_t errlen)
{
	const char *p1[1] = { sale_s };
	PGresult *res;

	*items = fs_pg_exec(pg,
	    "SELECT i.id, i.quantity FROM sales s LEFT JOIN items i ON i.sale_id = s.id "
	    "WHERE s.id = $1 AND i.id IS NOT NULL ORDER BY i.id",
	    1, p1);
	if (*items == NULL)
		goto dberr;
	if (PQntuples(*items) > 0)
		return 0;
	PQclear(*items);
	*items = NULL;
	if ((res = fs_pg_exec(pg, "SELECT 1 FROM sales WHERE id = $1", 1, p1)) == NULL)
		goto dberr;
	if (PQntuples(res) == 0) {
		PQclear(res);
		ERR("no sale %s", sale_s);
		return -1;
	}
	PQclear(res);
	return 0;
dberr:
	ERR("database: %s", pg->errstr);
	return -1;
}

/* Reads the Redis side of the sale's items into snap; 0, or -1 with err set. */
static int
read_redis(fs_stock *st, uint64_t sale, PGresult *items, struct fs_stock_snapshot *snap,
    char *err, size_t errlen)
{
	size_t n = (size_t)PQntuples(items);
	uint64_t *ids;
	int rc = -1;

	if ((ids = calloc(n + 1, sizeof(*ids))) == NULL) {
		ERR("out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		ids[i] = strtoull(PQgetvalue(items, (int)i, 0), NULL, 10);
	if (fs_stock_snapshot(st, sale, ids, n, snap) != 0)
		ERR("%s", st->errstr);
	else
		rc = 0;
	free(ids);
	return rc;
}

int
fs_reconcile_sale(fs_pg *pg, fs_stock *st, uint64_t sale, fs_reconcile_report *fn, void *arg,
    struct fs_reconcile_summary *sum, char *err, size_t errlen)
{
	struct reporter rp = { fn, arg, sale, 0 };
	char sale_s[24], *ids = NULL;
	PGresult *items = NULL;
	struct fs_stock_snapshot snap;
	struct db_view db;
	int rc = -1;

	memset(sum, 0, sizeof(*sum));
	memset(&snap, 0, sizeof(snap));
	memset(&db, 0, sizeof(db));
	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, sale);
	if (read_items(pg, sale_s, &items, err, errlen) != 0)
		goto out;
	if (items == NULL) {
		rc = 0;
		goto out;
	}
	sum->items = PQntuples(items);
	/* Redis first: see the header. */
	if (read_redis(st, sale, items, &snap, err, errlen) != 0)
		goto out;
	sum->in_redis = snap.loaded;
	sum->cleared = fs_sales_cleared(pg, sale);
	if ((ids = hold_ids_literal(&snap)) == NULL) {
		ERR("out of memory");
		goto out;
	}
	if (read_db(pg, sale_s, ids, &db, err, errlen) != 0)
		goto out;
	check_db(&rp, &db, sum);
	if (sum->cleared && (sum->in_redis || snap.nholds > 0 || snap.nholders > 0))
		say(&rp, "over and cleared, yet Redis has its keys (%zu holds)", snap.nholds);
	else if (sum->cleared)
		;
	else if (sum->in_redis)
		check_redis(&rp, &snap, items, db.live, db.statuses, sum);
	else if (sum->live > 0 || snap.nholds > 0)
		say(&rp, "not loaded into Redis, yet %ld live orders and %zu holds", sum->live,
		    snap.nholds);
	rc = rp.count;
out:
	fs_stock_snapshot_free(&snap);
	db_view_free(&db);
	free(ids);
	PQclear(items);
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
		if (fs_route_parse_id(PQgetvalue(res, i, 0), &sales[n]) == 0)
			n++;
	PQclear(res);
	return n;
}

int
fs_reconcile_repair_wait(fs_stock *r, int64_t inflight_ms, void (*waiting)(void *, long), void *arg)
{
	struct timespec pause = { 0, 250000000L };
	long up;

	while ((up = fs_stock_server_uptime(r)) >= 0 && up * 1000 < inflight_ms) {
		waiting(arg, up);
		nanosleep(&pause, NULL);
	}
	return up < 0 ? -1 : 0;
}

static int
cmp_order_sale(const void *a, const void *b)
{
	uint64_t x = ((const struct fs_order *)a)->sale, y = ((const struct fs_order *)b)->sale;

	return x < y ? -1 : x > y;
}

int
fs_reconcile_repair(fs_pg *pg, fs_stock *r, const uint64_t *sales, int n, int all,
    int64_t inflight_ms, struct fs_order *pending, size_t npending,
    void (*done)(void *, uint64_t, const struct fs_sales_warm_report *), void *arg, char *err,
    size_t errlen)
{
	struct fs_sales_warm_opts opts;
	struct fs_sales_warm_report rep;
	char why[512];
	size_t at = 0;

	memset(&opts, 0, sizeof(opts));
	opts.repair = 1;
	opts.inflight_ms = inflight_ms;
	if (npending > 0)
		qsort(pending, npending, sizeof(*pending), cmp_order_sale);
	for (int i = 0; i < n; i++) {
		while (at < npending && pending[at].sale < sales[i])
			at++;
		/* A sale that is over stays out of Redis (unless warmed by name). */
		if (all && fs_sales_cleared(pg, sales[i]))
			continue;
		opts.pending = pending + at;
		for (opts.npending = 0; at + opts.npending < npending &&
		     pending[at + opts.npending].sale == sales[i];)
			opts.npending++;
		if (fs_sales_warm(pg, r, sales[i], &opts, &rep, why, sizeof(why)) != 0) {
			snprintf(err, errlen, "sale %" PRIu64 ": %s", sales[i], why);
			return -1;
		}
		done(arg, sales[i], &rep);
	}
	return 0;
}

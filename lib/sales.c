#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "clock.h"
#include "jsonread.h"
#include "log.h"
#include "orders.h"
#include "queue.h"
#include "route.h"
#include "sales.h"
#include "stock.h"

#define ERR(...) snprintf(err, errlen, __VA_ARGS__)
/* The database failed: its text, in the caller's err. */
#define DB_ERR() ERR("database: %s", pg->errstr)

#define STR_(x) #x
#define STR(x) STR_(x)

int
fs_sales_purchase_paths(const fs_urlsig_key *key, const struct fs_sale *s,
    void (*each)(void *arg, uint64_t item, const char *path), void *arg)
{
	char query[FS_URLSIG_SIGNED_MAX], path[FS_SALES_PATH_MAX];
	time_t start = (time_t)(s->starts_ms / 1000), end = (time_t)(s->ends_ms / 1000);

	for (int i = 0; i < s->nitems; i++) {
		uint64_t item = s->items[i].id;

		/* A waiting room's URL signs q=1: its purchase needs a pass (docs/QUEUE.md). */
		if (fs_urlsig_sign(key, item, s->id, start, end, s->has_queue, query, sizeof(query)) !=
		    0)
			return -1;
		if (fs_route_purchase_path(path, sizeof(path), item, query) < 0)
			return -1;
		each(arg, item, path);
	}
	return 0;
}

int
fs_sales_read_left(fs_stock *st, struct fs_sale *s)
{
	uint64_t *ids = NULL;
	long *left = NULL;
	int rc = -1;

	for (int i = 0; i < s->nitems; i++)
		s->items[i].left = -1;
	if (s->nitems == 0)
		return 0;
	ids = calloc((size_t)s->nitems, sizeof(*ids));
	left = calloc((size_t)s->nitems, sizeof(*left));
	if (ids == NULL || left == NULL) {
		fs_log_error("units left of sale %" PRIu64 ": out of memory", s->id);
		goto out;
	}
	for (int i = 0; i < s->nitems; i++)
		ids[i] = s->items[i].id;
	if (fs_stock_left(st, s->id, ids, (size_t)s->nitems, left) != 0) {
		fs_log_warn("redis stock of sale %" PRIu64 ": %s", s->id, st->errstr);
		goto out;
	}
	for (int i = 0; i < s->nitems; i++)
		s->items[i].left = left[i];
	rc = 0;
out:
	free(left);
	free(ids);
	return rc;
}

long
fs_sales_item_left(const struct fs_sale_item *it)
{
	long left = it->left >= 0 ? it->left : it->quantity - it->sold;

	if (left < 0)
		return 0;
	return left > it->quantity ? it->quantity : left;
}

/*
 * The waiting room of a sale row (columns 10, 11): 1 read into s, 0 none,
 * -1 with err when the row has one that cannot be read (a member this build
 * does not know, a hand edit, no seed). The caller must then fail closed: a
 * sale read as if it had no room would be sold without passes (issue 35).
 */
static int
read_queue(const PGresult *res, struct fs_sale *s, char *err, size_t errlen)
{
	const char *text = PQgetvalue(res, 0, 10);
	json_object *o;
	char why[128];
	size_t seedlen = 0;
	int ok;

	if (PQgetisnull(res, 0, 10))
		return 0;
	if ((o = fs_jsonread_object(text, strlen(text), 2, why, sizeof(why))) == NULL) {
		ERR("its waiting room's settings are not JSON (%s)", why);
		return -1;
	}
	ok = fs_queue_settings_parse(o, &s->queue, why, sizeof(why)) == 0;
	json_object_put(o);
	if (!ok) {
		ERR("its waiting room's settings cannot be read (%s)", why);
		return -1;
	}
	if (PQgetisnull(res, 0, 11) ||
	    sodium_hex2bin(s->seed, sizeof(s->seed), PQgetvalue(res, 0, 11),
		(size_t)PQgetlength(res, 0, 11), NULL, &seedlen, NULL) != 0 ||
	    seedlen != sizeof(s->seed)) {
		ERR("its waiting room has no readable seed");
		return -1;
	}
	return 1;
}

int
fs_sales_read(fs_pg *pg, fs_stock *r, uint64_t sale, struct fs_sale *s, char *err, size_t errlen)
{
	static const char sql[] =
	    "SELECT s.name, floor(extract(epoch FROM s.starts_at) * 1000)::bigint, "
	    "floor(extract(epoch FROM s.ends_at) * 1000)::bigint, s.payment_window_s, "
	    "i.id, i.name, i.price_minor, i.currency, i.quantity, i.sold, s.queue::text, "
	    "encode(s.queue_seed, 'hex') "
	    "FROM sales s LEFT JOIN items i ON i.sale_id = s.id WHERE s.id = $1 "
	    "ORDER BY i.id LIMIT " STR(FS_SALES_ITEMS_MAX);
	char sale_s[24];
	const char *params[1] = { sale_s };
	PGresult *res = NULL;
	int rows;

	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, sale);
	/* One retry: the first statement after a lost connection reconnects. */
	for (int attempt = 0; attempt < 2 && res == NULL; attempt++) {
		res = fs_pg_exec(pg, sql, 1, params);
		if (res == NULL && !fs_pg_lost(pg))
			break;
	}
	if (res == NULL) {
		ERR("database: %s", pg->errstr);
		return -1;
	}
	s->id = sale;
	s->nitems = 0;
	s->has_queue = 0;
	sodium_memzero(s->seed, sizeof(s->seed));
	rows = PQntuples(res);
	s->found = rows > 0;
	if (s->found) {
		snprintf(s->name, sizeof(s->name), "%s", PQgetvalue(res, 0, 0));
		s->starts_ms = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
		s->ends_ms = strtoll(PQgetvalue(res, 0, 2), NULL, 10);
		s->window_s = strtol(PQgetvalue(res, 0, 3), NULL, 10);
		if ((s->has_queue = read_queue(res, s, err, errlen)) < 0) {
			/* Never "no room": nothing of this sale is answered until it is fixed. */
			s->has_queue = 1;
			PQclear(res);
			return -1;
		}
	}
	for (int i = 0; i < rows && !PQgetisnull(res, i, 4); i++) {
		struct fs_sale_item *it = &s->items[s->nitems++];

		it->id = strtoull(PQgetvalue(res, i, 4), NULL, 10);
		snprintf(it->name, sizeof(it->name), "%s", PQgetvalue(res, i, 5));
		it->price_minor = strtoll(PQgetvalue(res, i, 6), NULL, 10);
		snprintf(it->currency, sizeof(it->currency), "%s", PQgetvalue(res, i, 7));
		it->quantity = strtol(PQgetvalue(res, i, 8), NULL, 10);
		it->sold = strtol(PQgetvalue(res, i, 9), NULL, 10);
		it->left = -1;
	}
	PQclear(res);
	/* Without Redis's figures the documents fall back to PostgreSQL's. */
	if (r != NULL)
		(void)fs_sales_read_left(r, s);
	return 0;
}

/* Most young holds a warm keeps; more means a burst is on: it asks to retry. */
#define WARM_YOUNG_MAX 20000
/* Warms begun before giving up on a sale that purchases keep changing. */
#define WARM_ATTEMPTS 50

static int
cmp_record_id(const void *a, const void *b)
{
	return strcmp(((const struct fs_stock_record *)a)->order_id,
	    ((const struct fs_stock_record *)b)->order_id);
}

static int
cmp_record_time(const void *a, const void *b)
{
	const struct fs_stock_record *x = a, *y = b;

	return x->reserved_ms < y->reserved_ms ? -1 : x->reserved_ms > y->reserved_ms;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * A sale counts as open (a warm on a cluster may be refused) from this
 * long before its start: a warm begun just before the opening may end
 * after it.
 */
#define WARM_OPEN_MARGIN "5 seconds"

/* The candidates' order ids as a PostgreSQL array literal; NULL when out of memory (free it). */
static char *
cand_ids(const struct fs_stock_record *cand, size_t ncand)
{
	char *ids = malloc(ncand * (FS_UUID_STRLEN + 1) + 3);
	size_t len = 0;

	if (ids == NULL)
		return NULL;
	ids[len++] = '{';
	for (size_t i = 0; i < ncand; i++)
		len += (size_t)sprintf(ids + len, "%s%s", i > 0 ? "," : "", cand[i].order_id);
	ids[len++] = '}';
	ids[len] = '\0';
	return ids;
}

/*
 * One snapshot of the sale's items, its live orders and which candidates
 * (p[1]) are recorded, so that they agree; 0, or -1 (the database said why).
 */
static int
read_snapshot(fs_pg *pg, const char *const p[2], PGresult **ires, PGresult **ores,
    PGresult **rres)
{
	if (fs_pg_run(pg, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL) != 0)
		return -1;
	*ires = fs_pg_exec(pg, "SELECT id, quantity - sold, shards FROM items WHERE sale_id = $1 ORDER BY id", 1, p);
	*ores = *ires == NULL ? NULL :
				fs_pg_exec(pg,
				    "SELECT id, item_id, user_id, "
				    "(extract(epoch FROM reserved_at) * 1000)::bigint "
				    "FROM orders WHERE sale_id = $1 AND status IN ('PENDING', 'PAID')",
				    1, p);
	*rres = *ores == NULL ? NULL :
				fs_pg_exec(pg, "SELECT id::text FROM orders WHERE sale_id = $1 "
					       "AND id = ANY ($2::uuid[])", 2, p);
	fs_pg_run(pg, "COMMIT", 0, NULL);
	return *ires == NULL || *ores == NULL || *rres == NULL ? -1 : 0;
}

/* What a warm writes, made from the snapshot (the arrays its own). */
struct warm_room {
	struct fs_stock_warm w;
	struct fs_stock_warm_item *items;
	struct fs_stock_record *holds, *pend;
	const char **users, **recorded;	/* sorted; their texts in the results */
	size_t nusers, nrecorded;
};

static void
room_free(struct warm_room *r)
{
	free(r->items);
	free(r->holds);
	free(r->pend);
	free(r->users);
	free(r->recorded);
}

/*
 * Fills the room from the sale's row (sres) and the snapshot: items with
 * their units left, the live orders' holds, the recorded candidates. 0, or
 * -1 out of memory.
 */
static int
room_fill(struct warm_room *r, const PGresult *sres, const PGresult *ires, const PGresult *ores,
    const PGresult *rres, size_t ncand)
{
	struct fs_stock_warm *w = &r->w;

	memset(r, 0, sizeof(*r));
	r->items = calloc((size_t)PQntuples(ires) + 1, sizeof(*r->items));
	r->holds = calloc((size_t)PQntuples(ores) + 1, sizeof(*r->holds));
	r->pend = calloc(ncand + 1, sizeof(*r->pend));
	r->users = calloc((size_t)PQntuples(ores) + ncand + 1, sizeof(*r->users));
	r->recorded = calloc((size_t)PQntuples(rres) + 1, sizeof(*r->recorded));
	if (r->items == NULL || r->holds == NULL || r->pend == NULL || r->users == NULL ||
	    r->recorded == NULL)
		return -1;
	w->window_s = strtol(PQgetvalue(sres, 0, 0), NULL, 10);
	w->ends_ms = strtoll(PQgetvalue(sres, 0, 1), NULL, 10);
	w->open = strcmp(PQgetvalue(sres, 0, 2), "t") == 0;
	w->starts_ms = strtoll(PQgetvalue(sres, 0, 3), NULL, 10);
	w->items = r->items;
	w->holds = r->holds;
	w->pending = r->pend;
	for (int i = 0; i < PQntuples(ires); i++) {
		r->items[w->nitems].id = strtoull(PQgetvalue(ires, i, 0), NULL, 10);
		r->items[w->nitems].left = strtol(PQgetvalue(ires, i, 1), NULL, 10);
		r->items[w->nitems++].shards = (int)strtol(PQgetvalue(ires, i, 2), NULL, 10);
	}
	for (int i = 0; i < PQntuples(ores); i++) {
		struct fs_stock_record *h = &r->holds[w->nholds++];

		snprintf(h->order_id, sizeof(h->order_id), "%s", PQgetvalue(ores, i, 0));
		h->item = strtoull(PQgetvalue(ores, i, 1), NULL, 10);
		snprintf(h->user, sizeof(h->user), "%s", PQgetvalue(ores, i, 2));
		h->reserved_ms = strtoll(PQgetvalue(ores, i, 3), NULL, 10);
		r->users[r->nusers++] = h->user;
	}
	for (int i = 0; i < PQntuples(rres); i++)
		r->recorded[r->nrecorded++] = PQgetvalue(rres, i, 0);
	qsort(r->recorded, r->nrecorded, sizeof(*r->recorded), cmp_str);
	qsort(r->users, r->nusers, sizeof(*r->users), cmp_str);
	return 0;
}

/*
 * The orders on their way, earliest first: each takes a unit of its item
 * unless PostgreSQL has it already (then the rows above count it, or it
 * closed) or its shopper holds a unit of the sale (the consumer will refuse
 * it as a second live order).
 */
static void
room_add_pending(struct warm_room *r, const struct fs_stock_record *cand, size_t ncand,
    struct fs_sales_warm_report *rep)
{
	struct fs_stock_warm *w = &r->w;

	for (size_t i = 0; i < ncand; i++) {
		const struct fs_stock_record *c = &cand[i];
		const char *u = c->user, *id = c->order_id;
		size_t k;

		for (k = 0; k < w->nitems && r->items[k].id != c->item; k++)
			;
		if (bsearch(&id, r->recorded, r->nrecorded, sizeof(*r->recorded), cmp_str) != NULL ||
		    bsearch(&u, r->users, r->nusers, sizeof(*r->users), cmp_str) != NULL ||
		    k == w->nitems) {
			rep->dropped++;
			continue;
		}
		for (size_t j = 0; j < w->npending; j++)
			if (strcmp(r->pend[j].user, u) == 0) {
				u = NULL;
				break;
			}
		if (u == NULL) {
			rep->dropped++;
			continue;
		}
		r->pend[w->npending++] = *c;
		if (r->items[k].left > 0)
			r->items[k].left--;
		else
			rep->short_units++;
	}
}

/*
 * One attempt: with the sale watched (young read), reads PostgreSQL and
 * writes; sres is the sale's row (window, end in ms, open).
 * 0 done, 1 the sale changed meanwhile, -1 err set.
 */
static int
warm_once(fs_pg *pg, fs_stock *st, uint64_t sale, const PGresult *sres,
    struct fs_stock_record *cand, size_t ncand, struct fs_sales_warm_report *rep, char *err,
    size_t errlen)
{
	char sale_s[24], *ids = NULL;
	const char *p[2] = { sale_s, NULL };
	PGresult *ires = NULL, *ores = NULL, *rres = NULL;
	struct warm_room r;
	int rc = -1;

	memset(&r, 0, sizeof(r));
	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, sale);
	/* The candidates' ids as a PostgreSQL array: which of them are recorded. */
	if ((ids = cand_ids(cand, ncand)) == NULL)
		goto nomem;
	p[1] = ids;
	if (read_snapshot(pg, p, &ires, &ores, &rres) != 0)
		goto dberr;
	if (room_fill(&r, sres, ires, ores, rres, ncand) != 0)
		goto nomem;
	rep->live = (long)r.w.nholds;
	rep->pending = rep->dropped = rep->short_units = 0;
	room_add_pending(&r, cand, ncand, rep);
	rep->pending = (long)r.w.npending;
	rc = fs_stock_warm(st, sale, &r.w);
	if (rc < 0)
		ERR("%s", st->errstr);
	goto out;
nomem:
	ERR("out of memory");
	goto out;
dberr:
	ERR("database: %s", pg->errstr);
out:
	if (rc < 0)
		fs_stock_warm_abort(st);
	free(ids);
	room_free(&r);
	PQclear(ires);
	PQclear(ores);
	PQclear(rres);
	return rc;
}

/*
 * The orders a warm must hold beside the live ones: the readable young
 * holds (cand[0..nyoung)) and, with repair, the orders on their way; one
 * per order (a young hold may be on the topic too), earliest first, in
 * place in cand. Their count.
 */
static size_t
gather_candidates(struct fs_stock_record *cand, size_t nyoung,
    const struct fs_sales_warm_opts *opts)
{
	size_t ncand = 0, k;

	for (size_t i = 0; i < nyoung; i++)
		if (cand[i].readable)
			cand[ncand++] = cand[i];
	for (size_t i = 0; opts->repair && i < opts->npending; i++) {
		struct fs_stock_record *c = &cand[ncand++];

		memset(c, 0, sizeof(*c));
		snprintf(c->order_id, sizeof(c->order_id), "%s", opts->pending[i].id);
		snprintf(c->user, sizeof(c->user), "%s", opts->pending[i].user);
		c->item = opts->pending[i].item;
		c->reserved_ms = opts->pending[i].reserved_ms;
		c->readable = c->exists = 1;
	}
	qsort(cand, ncand, sizeof(*cand), cmp_record_id);
	for (size_t i = k = 0; i < ncand; i++)
		if (k == 0 || strcmp(cand[k - 1].order_id, cand[i].order_id) != 0)
			cand[k++] = cand[i];
	qsort(cand, k, sizeof(*cand), cmp_record_time);
	return k;
}

int
fs_sales_warm(fs_pg *pg, fs_stock *st, uint64_t sale, const struct fs_sales_warm_opts *opts,
    struct fs_sales_warm_report *rep, char *err, size_t errlen)
{
	char sale_s[24];
	const char *p[1] = { sale_s };
	PGresult *sres = NULL, *ires = NULL;
	struct fs_stock_record *cand = NULL;
	uint64_t *ids = NULL;
	size_t nids = 0, ncand, nyoung;
	long held;
	int rc = -1, done = 1;

	memset(rep, 0, sizeof(*rep));
	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, sale);
	if ((sres = fs_pg_exec(pg,
		 "SELECT payment_window_s, floor(extract(epoch FROM ends_at) * 1000)::bigint, "
		 "now() >= starts_at - interval '" WARM_OPEN_MARGIN "' AND now() < ends_at, "
		 "floor(extract(epoch FROM starts_at) * 1000)::bigint "
		 "FROM sales WHERE id = $1",
		 1, p)) == NULL ||
	    (ires = fs_pg_exec(pg, "SELECT id FROM items WHERE sale_id = $1 ORDER BY id", 1, p)) == NULL)
		goto dberr;
	if (PQntuples(sres) != 1) {
		ERR("no sale %s", sale_s);
		goto fail;
	}
	if (opts->npending > 0 && !opts->repair && !opts->ignore_pending) {
		ERR("%zu orders of sale %s are on their way (on the topic, not recorded yet): wait for "
		    "the consumer, or rebuild with reconcile --repair (--ignore-lag warms without them)",
		    opts->npending, sale_s);
		goto fail;
	}
	ids = calloc((size_t)PQntuples(ires) + 1, sizeof(*ids));
	cand = calloc(WARM_YOUNG_MAX + (opts->repair ? opts->npending : 0) + 1, sizeof(*cand));
	if (ids == NULL || cand == NULL) {
		ERR("out of memory");
		goto fail;
	}
	for (int i = 0; i < PQntuples(ires); i++)
		ids[nids++] = strtoull(PQgetvalue(ires, i, 0), NULL, 10);
	/* In Redis again: the sweeper looks after it (and clears it when over). */
	if (fs_pg_run(pg, "UPDATE sales SET redis_cleared_at = NULL WHERE id = $1 "
			  "AND redis_cleared_at IS NOT NULL", 1, p) != 0)
		goto dberr;
	while (done == 1) {
		if (++rep->attempts > WARM_ATTEMPTS) {
			ERR("sale %s kept changing under %d attempts; retry", sale_s, WARM_ATTEMPTS);
			goto fail;
		}
		if (fs_stock_warm_begin(st, sale, ids, nids, fs_clock_now_ms() - opts->inflight_ms, cand,
			WARM_YOUNG_MAX, &nyoung, &held) != 0) {
			ERR("%s", st->errstr);
			goto fail;
		}
		if (held > 0 && !opts->force && !opts->repair) {
			fs_stock_warm_abort(st);
			ERR("sale %s already has %ld holds in Redis; use --force to rebuild from "
			    "PostgreSQL", sale_s, held);
			goto fail;
		}
		if (nyoung == WARM_YOUNG_MAX) {
			fs_stock_warm_abort(st);
			ERR("sale %s has %d holds or more on their way: a burst is on; retry", sale_s,
			    WARM_YOUNG_MAX);
			goto fail;
		}
		ncand = gather_candidates(cand, nyoung, opts);
		if ((done = warm_once(pg, st, sale, sres, cand, ncand, rep, err, errlen)) < 0)
			goto fail;
	}
	rc = 0;
	goto fail;
dberr:
	ERR("database: %s", pg->errstr);
fail:
	free(ids);
	free(cand);
	PQclear(sres);
	PQclear(ires);
	return rc;
}

int
fs_sales_in_redis(fs_pg *pg, uint64_t after, uint64_t *ids, int *over, int max, char *err,
    size_t errlen)
{
	char after_s[24], max_s[24];
	const char *p[2] = { after_s, max_s };
	PGresult *res;
	int n;

	snprintf(after_s, sizeof(after_s), "%" PRIu64, after);
	snprintf(max_s, sizeof(max_s), "%d", max);
	if ((res = fs_pg_exec(pg,
		 "SELECT s.id, s.ends_at < now() AND NOT EXISTS (SELECT 1 FROM orders o "
		 "WHERE o.sale_id = s.id AND o.status = 'PENDING') "
		 "FROM sales s WHERE s.redis_cleared_at IS NULL AND s.id > $1 ORDER BY s.id LIMIT $2",
		 2, p)) == NULL) {
		ERR("database: %s", pg->errstr);
		return -1;
	}
	n = PQntuples(res) < max ? PQntuples(res) : max;
	for (int i = 0; i < n; i++) {
		ids[i] = strtoull(PQgetvalue(res, i, 0), NULL, 10);
		over[i] = strcmp(PQgetvalue(res, i, 1), "t") == 0;
	}
	PQclear(res);
	return n;
}

int
fs_sales_item_ids(fs_pg *pg, uint64_t sale, uint64_t *items, char *err, size_t errlen)
{
	char sale_s[24];
	const char *p[1] = { sale_s };
	PGresult *res;
	int n;

	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, sale);
	if ((res = fs_pg_exec(pg, "SELECT id FROM items WHERE sale_id = $1 ORDER BY id LIMIT "
				  STR(FS_SALES_ITEMS_MAX), 1, p)) == NULL) {
		ERR("database: %s", pg->errstr);
		return -1;
	}
	n = PQntuples(res);
	for (int i = 0; i < n; i++)
		items[i] = strtoull(PQgetvalue(res, i, 0), NULL, 10);
	PQclear(res);
	return n;
}

int
fs_sales_mark_cleared(fs_pg *pg, uint64_t sale, char *err, size_t errlen)
{
	char sale_s[24];
	const char *p[1] = { sale_s };

	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, sale);
	if (fs_pg_run(pg, "UPDATE sales SET redis_cleared_at = now() WHERE id = $1", 1, p) != 0) {
		ERR("database: %s", pg->errstr);
		return -1;
	}
	return 0;
}

int
fs_sales_cleared(fs_pg *pg, uint64_t sale)
{
	char sale_s[24];
	const char *p[1] = { sale_s };
	PGresult *res;
	int cleared;

	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, sale);
	if ((res = fs_pg_exec(pg, "SELECT 1 FROM sales WHERE id = $1 AND redis_cleared_at IS NOT NULL",
		 1, p)) == NULL)
		return 0;
	cleared = PQntuples(res) == 1;
	PQclear(res);
	return cleared;
}

int
fs_sales_figures(fs_pg *pg, fs_stock *st, uint64_t sale, struct fs_sales_figures *figs, int max,
    char *err, size_t errlen)
{
	char sale_s[24];
	const char *p[1] = { sale_s };
	PGresult *res = NULL;
	uint64_t *ids = NULL;
	long *left = NULL, *held = NULL;
	int n = 0, rc = -1;

	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, sale);
	res = fs_pg_exec(pg,
	    "SELECT s.id, i.id, i.name, i.quantity, i.sold, "
	    "  count(o.id) FILTER (WHERE o.status = 'PENDING'), "
	    "  count(o.id) FILTER (WHERE o.status = 'PAID') "
	    "FROM sales s LEFT JOIN items i ON i.sale_id = s.id "
	    "LEFT JOIN orders o ON o.item_id = i.id "
	    "WHERE s.id = $1 GROUP BY s.id, i.id ORDER BY i.id",
	    1, p);
	if (res == NULL) {
		ERR("database: %s", pg->errstr);
		goto fail;
	}
	if (PQntuples(res) == 0) {
		ERR("no sale %s", sale_s);
		goto fail;
	}
	ids = calloc((size_t)max + 1, sizeof(*ids));
	left = calloc((size_t)max + 1, sizeof(*left));
	held = calloc((size_t)max + 1, sizeof(*held));
	if (ids == NULL || left == NULL || held == NULL) {
		ERR("out of memory");
		goto fail;
	}
	for (int i = 0; i < PQntuples(res) && n < max; i++) {
		struct fs_sales_figures *f = &figs[n];

		if (PQgetisnull(res, i, 1))
			continue;
		memset(f, 0, sizeof(*f));
		f->item = ids[n] = strtoull(PQgetvalue(res, i, 1), NULL, 10);
		snprintf(f->name, sizeof(f->name), "%s", PQgetvalue(res, i, 2));
		f->quantity = strtol(PQgetvalue(res, i, 3), NULL, 10);
		f->sold = strtol(PQgetvalue(res, i, 4), NULL, 10);
		f->pending = strtol(PQgetvalue(res, i, 5), NULL, 10);
		f->paid = strtol(PQgetvalue(res, i, 6), NULL, 10);
		n++;
	}
	if (fs_stock_left(st, sale, ids, (size_t)n, left) != 0 ||
	    fs_stock_count_holds(st, sale, ids, (size_t)n, held) != 0) {
		ERR("%s", st->errstr);
		goto fail;
	}
	for (int i = 0; i < n; i++) {
		figs[i].redis_left = left[i];
		figs[i].redis_holds = held[i];
	}
	rc = n;
fail:
	free(ids);
	free(left);
	free(held);
	PQclear(res);
	return rc;
}

int
fs_sales_find_processing(fs_pg *pg, fs_stock *st, struct fs_order *o)
{
	static const char open_sales_max[] = "64";
	struct fs_stock_record rec;
	PGresult *res;
	int found = 0;

	/* A hold lives from the purchase until the consumer records it. */
	res = fs_pg_exec(pg,
	    "SELECT id FROM sales WHERE starts_at <= now() + interval '1 minute' "
	    "AND ends_at > now() - interval '1 hour' ORDER BY id DESC LIMIT $1",
	    1, (const char *[]){ open_sales_max });
	if (res == NULL)
		return -1;
	for (int i = 0; i < PQntuples(res) && !found; i++) {
		uint64_t sale;

		if (fs_route_parse_id(PQgetvalue(res, i, 0), &sale) != 0)
			continue;
		if ((found = fs_stock_find_hold(st, sale, o->id, &rec)) < 0)
			break;
		/* The caller's hold only. */
		if (found && strcmp(rec.user, o->user) != 0)
			found = 0;
		if (!found)
			continue;
		o->sale = sale;
		o->item = rec.item;
		o->reserved_ms = rec.reserved_ms;
		o->status = FS_ORDER_PROCESSING;
		o->expires_ms = o->reserved_ms + (int64_t)fs_stock_window(st, sale) * 1000;
	}
	PQclear(res);
	return found;
}

/* Fills o (sale and user set) from the shopper's hold record: PROCESSING. */
static void
take_hold(fs_stock *st, struct fs_order *o, const struct fs_stock_record *rec)
{
	snprintf(o->id, sizeof(o->id), "%s", rec->order_id);
	o->item = rec->item;
	o->reserved_ms = rec->reserved_ms;
	o->status = FS_ORDER_PROCESSING;
	o->expires_ms = o->reserved_ms + (int64_t)fs_stock_window(st, o->sale) * 1000;
}

enum fs_orders_result
fs_sales_find_mine(fs_pg *pg, fs_stock *st, struct fs_order *o)
{
	struct fs_order held = *o;
	struct fs_stock_record rec;
	enum fs_orders_result r = fs_orders_get_mine(pg, o);
	int found;

	if (r != FS_ORDERS_NOT_FOUND)
		return r;
	/* Not in the database: a hold on its way there is the shopper's order. */
	if ((found = fs_stock_find_holder(st, o->sale, o->user, &rec)) < 0)
		return FS_ORDERS_TRANSIENT;
	if (found == 0)
		return FS_ORDERS_NOT_FOUND;
	take_hold(st, &held, &rec);
	/* Recorded since the first look, or closed while its hold is being released. */
	if ((r = fs_orders_get(pg, &held)) == FS_ORDERS_OK && !fs_orders_status_live(held.status))
		return FS_ORDERS_NOT_FOUND;
	if (r != FS_ORDERS_OK && r != FS_ORDERS_NOT_FOUND)
		return r;
	*o = held;
	return FS_ORDERS_OK;
}

#include "config.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "orders.h"

/* SQLSTATE of a unique violation: a shopper's second live order. */
#define SQLSTATE_UNIQUE "23505"

static const char *const status_names[FS_ORDER_STATUS__MAX] = {
	[FS_ORDER_PROCESSING] = "PROCESSING",
	[FS_ORDER_PENDING] = "PENDING",
	[FS_ORDER_PAID] = "PAID",
	[FS_ORDER_EXPIRED] = "EXPIRED",
	[FS_ORDER_CANCELLED] = "CANCELLED",
	[FS_ORDER_FAILED] = "FAILED",
	[FS_ORDER_REJECTED] = "REJECTED",
};

static const char *const result_texts[FS_ORDERS_RESULT__MAX] = {
	[FS_ORDERS_OK] = "ok",
	[FS_ORDERS_NOT_FOUND] = "no such order",
	[FS_ORDERS_TRANSIENT] = "database unavailable",
	[FS_ORDERS_REFUSED] = "database refused the data",
	[FS_ORDERS_TOO_BIG] = "batch too big",
	[FS_ORDERS_SOLD_OUT] = "sold out",
	[FS_ORDERS_LIVE_ORDER] = "the shopper holds a live order in the sale",
	[FS_ORDERS_NOMEM] = "out of memory",
	[FS_ORDERS_BAD_ANSWER] = "the database answered unexpectedly",
};

const char *
fs_orders_status_name(enum fs_order_status s)
{
	return s < FS_ORDER_STATUS__MAX ? status_names[s] : "UNKNOWN";
}

enum fs_order_status
fs_orders_status_parse(const char *name)
{
	for (int s = 0; s < FS_ORDER_STATUS__MAX; s++)
		if (strcmp(name, status_names[s]) == 0)
			return (enum fs_order_status)s;
	return FS_ORDER_STATUS__MAX;
}

int
fs_orders_status_live(enum fs_order_status s)
{
	return s == FS_ORDER_PENDING || s == FS_ORDER_PAID;
}

const char *
fs_orders_strerror(enum fs_orders_result r)
{
	return r < FS_ORDERS_RESULT__MAX ? result_texts[r] : "unknown result";
}

/*
 * Data the database refuses for what it is (class 22 data exception, 23
 * integrity violation) cannot succeed on a retry; anything else (a lost
 * connection, a shutdown, a deadlock, even a missing function before the
 * migration ran) may, and must not cost an order.
 */
static enum fs_orders_result
failure_kind(const fs_pg *pg)
{
	if (strncmp(pg->sqlstate, "22", 2) == 0 || strncmp(pg->sqlstate, "23", 2) == 0)
		return FS_ORDERS_REFUSED;
	return FS_ORDERS_TRANSIENT;
}

/*
 * Runs a statement, once more on a fresh connection when the old one
 * turned out to be dead (the server restarted since its last use). Every
 * statement here may run twice: a repeat finds the work done.
 */
static PGresult *
exec_once_more(fs_pg *pg, const char *sql, int nparams, const char *const *params)
{
	PGresult *res = fs_pg_exec(pg, sql, nparams, params);

	if (res == NULL && fs_pg_lost(pg))
		res = fs_pg_exec(pg, sql, nparams, params);
	return res;
}

/* A growing text buffer; its callers bound it (FS_ORDERS_BATCH_MAX orders). */
struct buf {
	char *s;
	size_t len, cap;
};

static int
buf_add(struct buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap == 0 ? 4096 : b->cap;
		char *ns;

		while (b->len + n + 1 > cap)
			cap *= 2;
		if ((ns = realloc(b->s, cap)) == NULL)
			return -1;
		b->s = ns;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
	return 0;
}

static int
buf_str(struct buf *b, const char *s)
{
	return buf_add(b, s, strlen(s));
}

/* Appends s as a double-quoted element of a PostgreSQL array literal. */
static int
buf_quoted(struct buf *b, const char *s)
{
	if (buf_add(b, "\"", 1) != 0)
		return -1;
	for (; *s != '\0'; s++) {
		if ((*s == '"' || *s == '\\') && buf_add(b, "\\", 1) != 0)
			return -1;
		if (buf_add(b, s, 1) != 0)
			return -1;
	}
	return buf_add(b, "\"", 1);
}

static int
buf_i64(struct buf *b, int64_t v)
{
	char num[24];

	snprintf(num, sizeof(num), "%" PRId64, v);
	return buf_str(b, num);
}

/* Copies a result's status and failure columns into o. */
static void
take_status(struct fs_order *o, PGresult *res, int row, int status_col, int failure_col)
{
	o->status = PQgetisnull(res, row, status_col) ?
			  FS_ORDER_REJECTED :
			  fs_orders_status_parse(PQgetvalue(res, row, status_col));
	if (o->status == FS_ORDER_STATUS__MAX)
		o->status = FS_ORDER_REJECTED;
	if (failure_col >= 0)
		snprintf(o->failure, sizeof(o->failure), "%s", PQgetvalue(res, row, failure_col));
}

enum fs_orders_result
fs_orders_place_batch(fs_pg *pg, struct fs_order *orders, size_t n)
{
	struct buf a[5] = { { NULL, 0, 0 } };
	const char *params[5];
	enum fs_orders_result rc = FS_ORDERS_TRANSIENT;
	PGresult *res = NULL;
	int bad = 0;

	if (n > FS_ORDERS_BATCH_MAX)
		return FS_ORDERS_TOO_BIG;
	if (n == 0)
		return FS_ORDERS_OK;
	for (int k = 0; k < 5; k++)
		bad |= buf_add(&a[k], "{", 1);
	for (size_t i = 0; i < n && !bad; i++) {
		const char *sep = i > 0 ? "," : "";
		const struct fs_order *o = &orders[i];

		for (int k = 0; k < 5; k++)
			bad |= buf_str(&a[k], sep);
		bad |= buf_str(&a[0], o->id);
		bad |= buf_i64(&a[1], (int64_t)o->sale);
		bad |= buf_i64(&a[2], (int64_t)o->item);
		bad |= buf_quoted(&a[3], o->user);
		bad |= buf_i64(&a[4], o->reserved_ms);
	}
	for (int k = 0; k < 5; k++) {
		bad |= buf_add(&a[k], "}", 1);
		params[k] = a[k].s;
	}
	if (bad) {
		rc = FS_ORDERS_NOMEM;
		goto out;
	}
	res = exec_once_more(pg,
	    "SELECT n, status, coalesce(failure, ''), expires_ms, duplicate "
	    "FROM fs_place_orders($1::uuid[], $2::bigint[], $3::bigint[], $4::text[], $5::bigint[])",
	    5, params);
	if (res == NULL) {
		rc = failure_kind(pg);
		goto out;
	}
	if ((size_t)PQntuples(res) != n) {
		rc = FS_ORDERS_BAD_ANSWER;
		goto out;
	}
	for (int r = 0; r < PQntuples(res); r++) {
		long pos = strtol(PQgetvalue(res, r, 0), NULL, 10);
		struct fs_order *o;

		if (pos < 1 || (size_t)pos > n) {
			rc = FS_ORDERS_BAD_ANSWER;
			goto out;
		}
		o = &orders[pos - 1];
		take_status(o, res, r, 1, 2);
		o->expires_ms =
		    PQgetisnull(res, r, 3) ? 0 : strtoll(PQgetvalue(res, r, 3), NULL, 10);
		o->duplicate = strcmp(PQgetvalue(res, r, 4), "t") == 0;
	}
	rc = FS_ORDERS_OK;
out:
	PQclear(res);
	for (int k = 0; k < 5; k++)
		free(a[k].s);
	return rc;
}

enum fs_orders_result
fs_orders_buy(fs_pg *pg, struct fs_order *o)
{
	/*
	 * The item row is always read, so that an item outside the sale is
	 * told from a sold-out one without a second round trip. A second live
	 * order of the shopper violates orders_one_live_per_user and undoes
	 * the UPDATE with it.
	 */
	static const char buy_sql[] =
	    "WITH item AS (SELECT id FROM items WHERE id = $1 AND sale_id = $2), "
	    "unit AS (UPDATE items SET sold = sold + 1 "
	    "WHERE id = $1 AND sale_id = $2 AND sold < quantity RETURNING id), "
	    "placed AS (INSERT INTO orders (id, sale_id, item_id, user_id, status, reserved_at, expires_at) "
	    "SELECT $3, $2, unit.id, $4, 'PENDING', now(), now() + make_interval(secs => s.payment_window_s) "
	    "FROM unit JOIN sales s ON s.id = $2 RETURNING expires_at) "
	    "SELECT (SELECT count(*) FROM item), "
	    "(SELECT floor(extract(epoch FROM expires_at) * 1000)::bigint FROM placed)";
	static const char live_sql[] = "SELECT id FROM orders WHERE sale_id = $1 AND user_id = $2 "
				       "AND status IN " FS_ORDERS_LIVE_SQL;
	char item_s[24], sale_s[24];
	const char *params[4] = { item_s, sale_s, o->id, o->user };
	enum fs_orders_result rc;
	PGresult *res;

	snprintf(item_s, sizeof(item_s), "%" PRIu64, o->item);
	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, o->sale);
	if ((res = fs_pg_exec(pg, buy_sql, 4, params)) == NULL) {
		if (strcmp(pg->sqlstate, SQLSTATE_UNIQUE) != 0)
			return FS_ORDERS_TRANSIENT;
		params[0] = sale_s;
		params[1] = o->user;
		if ((res = fs_pg_exec(pg, live_sql, 2, params)) == NULL || PQntuples(res) != 1) {
			PQclear(res);
			return FS_ORDERS_TRANSIENT;
		}
		snprintf(o->id, sizeof(o->id), "%s", PQgetvalue(res, 0, 0));
		PQclear(res);
		return FS_ORDERS_LIVE_ORDER;
	}
	if (PQntuples(res) != 1 || strcmp(PQgetvalue(res, 0, 0), "0") == 0) {
		rc = FS_ORDERS_NOT_FOUND;
	} else if (PQgetisnull(res, 0, 1)) {
		rc = FS_ORDERS_SOLD_OUT;
	} else {
		o->status = FS_ORDER_PENDING;
		o->expires_ms = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
		rc = FS_ORDERS_OK;
	}
	PQclear(res);
	return rc;
}

/* Fills o from a (status, sale_id, item_id, expires_ms[, changed]) row. */
static void
take_order(struct fs_order *o, PGresult *res, int has_changed)
{
	take_status(o, res, 0, 0, -1);
	o->sale = strtoull(PQgetvalue(res, 0, 1), NULL, 10);
	o->item = strtoull(PQgetvalue(res, 0, 2), NULL, 10);
	o->expires_ms = strtoll(PQgetvalue(res, 0, 3), NULL, 10);
	o->changed = has_changed && strcmp(PQgetvalue(res, 0, 4), "t") == 0;
}

/* Runs one of the shopper's order statements and reads its single row. */
static enum fs_orders_result
one_order(fs_pg *pg, const char *sql, struct fs_order *o, int has_changed)
{
	const char *params[2] = { o->id, o->user };
	PGresult *res;

	if ((res = exec_once_more(pg, sql, 2, params)) == NULL)
		return failure_kind(pg);
	if (PQntuples(res) != 1) {
		PQclear(res);
		return FS_ORDERS_NOT_FOUND;
	}
	take_order(o, res, has_changed);
	PQclear(res);
	return FS_ORDERS_OK;
}

enum fs_orders_result
fs_orders_get(fs_pg *pg, struct fs_order *o)
{
	return one_order(pg,
	    "SELECT status, sale_id, item_id, (extract(epoch FROM expires_at) * 1000)::bigint "
	    "FROM orders WHERE id = $1::uuid AND user_id = $2",
	    o, 0);
}

enum fs_orders_result
fs_orders_get_mine(fs_pg *pg, struct fs_order *o)
{
	char sale_s[24];
	const char *params[2] = { sale_s, o->user };
	PGresult *res;

	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, o->sale);
	/* One row of the one-live-order index (sql/001_schema.sql). */
	if ((res = exec_once_more(pg,
		 "SELECT status, sale_id, item_id, (extract(epoch FROM expires_at) * 1000)::bigint, id "
		 "FROM orders WHERE sale_id = $1 AND user_id = $2 AND status IN " FS_ORDERS_LIVE_SQL,
		 2, params)) == NULL)
		return failure_kind(pg);
	if (PQntuples(res) != 1) {
		PQclear(res);
		return FS_ORDERS_NOT_FOUND;
	}
	take_order(o, res, 0);
	snprintf(o->id, sizeof(o->id), "%s", PQgetvalue(res, 0, 4));
	PQclear(res);
	return FS_ORDERS_OK;
}

long
fs_orders_count_expiring(fs_pg *pg, uint64_t sale, long within_ms)
{
	char sale_s[24], within_s[24];
	const char *p[2] = { sale_s, within_s };
	PGresult *res;
	long n;

	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, sale);
	snprintf(within_s, sizeof(within_s), "%ld", within_ms);
	if ((res = fs_pg_exec(pg,
		 "SELECT count(*) FROM orders WHERE sale_id = $1 AND status = 'PENDING' AND "
		 "expires_at < now() + make_interval(secs => $2::bigint / 1000.0)",
		 2, p)) == NULL)
		return -1;
	n = strtol(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return n;
}

enum fs_orders_result
fs_orders_cancel(fs_pg *pg, struct fs_order *o)
{
	return one_order(pg,
	    "SELECT status, sale_id, item_id, expires_ms, changed FROM fs_cancel_order($1::uuid, $2)",
	    o, 1);
}

enum fs_orders_result
fs_orders_overdue(fs_pg *pg, long *count, double *oldest_s)
{
	PGresult *res = exec_once_more(pg,
	    "SELECT count(*), COALESCE(EXTRACT(EPOCH FROM now() - min(expires_at)), 0) "
	    "FROM orders WHERE status = 'PENDING' AND expires_at < now()",
	    0, NULL);

	if (res == NULL)
		return failure_kind(pg);
	*count = strtol(PQgetvalue(res, 0, 0), NULL, 10);
	*oldest_s = strtod(PQgetvalue(res, 0, 1), NULL);
	PQclear(res);
	return FS_ORDERS_OK;
}

enum fs_orders_result
fs_orders_expire(fs_pg *pg, struct fs_order *out, size_t max, size_t *n)
{
	char limit[24];
	const char *params[1] = { limit };
	PGresult *res;

	*n = 0;
	snprintf(limit, sizeof(limit), "%zu", max);
	if ((res = exec_once_more(pg,
		 "SELECT id, sale_id, item_id, user_id, expires_ms FROM fs_expire_orders($1::int)",
		 1, params)) == NULL)
		return failure_kind(pg);
	for (int r = 0; r < PQntuples(res) && (size_t)r < max; r++) {
		struct fs_order *o = &out[r];

		memset(o, 0, sizeof(*o));
		snprintf(o->id, sizeof(o->id), "%s", PQgetvalue(res, r, 0));
		o->sale = strtoull(PQgetvalue(res, r, 1), NULL, 10);
		o->item = strtoull(PQgetvalue(res, r, 2), NULL, 10);
		snprintf(o->user, sizeof(o->user), "%s", PQgetvalue(res, r, 3));
		o->expires_ms = strtoll(PQgetvalue(res, r, 4), NULL, 10);
		o->status = FS_ORDER_EXPIRED;
		(*n)++;
	}
	PQclear(res);
	return FS_ORDERS_OK;
}

enum fs_orders_result
fs_orders_close_ghost(fs_pg *pg, struct fs_order *o)
{
	char sale[24], item[24], ms[24];
	const char *params[5] = { o->id, sale, item, o->user, ms };
	PGresult *res;

	snprintf(sale, sizeof(sale), "%" PRIu64, o->sale);
	snprintf(item, sizeof(item), "%" PRIu64, o->item);
	snprintf(ms, sizeof(ms), "%" PRId64, o->reserved_ms);
	if ((res = exec_once_more(pg,
		 "SELECT status, expires_ms FROM fs_close_ghost($1::uuid, $2, $3, $4, $5)", 5,
		 params)) == NULL)
		return failure_kind(pg);
	take_status(o, res, 0, 0, -1);
	o->expires_ms = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
	PQclear(res);
	return FS_ORDERS_OK;
}

enum fs_orders_result
fs_orders_closed_among(fs_pg *pg, const char *const *ids, size_t n, size_t *closed, size_t *nclosed)
{
	struct buf b = { NULL, 0, 0 };
	const char *params[1];
	enum fs_orders_result rc = FS_ORDERS_TRANSIENT;
	PGresult *res = NULL;
	int bad;

	*nclosed = 0;
	if (n == 0)
		return FS_ORDERS_OK;
	bad = buf_add(&b, "{", 1);
	for (size_t i = 0; i < n && !bad; i++) {
		if (i > 0)
			bad |= buf_add(&b, ",", 1);
		bad |= buf_quoted(&b, ids[i]);
	}
	bad |= buf_add(&b, "}", 1);
	if (bad) {
		rc = FS_ORDERS_NOMEM;
		goto out;
	}
	params[0] = b.s;
	/* The position in the array comes back, so the caller needs no lookup. */
	res = exec_once_more(pg,
	    "SELECT q.n FROM unnest($1::uuid[]) WITH ORDINALITY AS q(id, n) "
	    "JOIN orders o ON o.id = q.id WHERE o.status IN ('EXPIRED', 'CANCELLED', 'FAILED')",
	    1, params);
	if (res == NULL) {
		rc = failure_kind(pg);
		goto out;
	}
	for (int r = 0; r < PQntuples(res); r++) {
		long pos = strtol(PQgetvalue(res, r, 0), NULL, 10);

		if (pos >= 1 && (size_t)pos <= n)
			closed[(*nclosed)++] = (size_t)pos - 1;
	}
	rc = FS_ORDERS_OK;
out:
	PQclear(res);
	free(b.s);
	return rc;
}

/* The order as the API shows it, with or without its item. */
static int
order_json(const struct fs_order *o, int with_item, char *out, size_t outlen)
{
	char expires[FS_CLOCK_TIME_LEN], item[40] = "";
	int n;

	if (with_item)
		snprintf(item, sizeof(item), "\"itemId\":%" PRIu64 ",", o->item);
	fs_clock_format(o->expires_ms, expires);
	n = snprintf(out, outlen, "{\"orderId\":\"%s\",%s\"status\":\"%s\",\"expiresAt\":\"%s\"}",
	    o->id, item, fs_orders_status_name(o->status), expires);
	return (n < 0 || (size_t)n >= outlen) ? -1 : n;
}

int
fs_orders_document(const struct fs_order *o, char *out, size_t outlen)
{
	return order_json(o, 1, out, outlen);
}

int
fs_orders_receipt(const struct fs_order *o, char *out, size_t outlen)
{
	return order_json(o, 0, out, outlen);
}

/* Publishes one order at a time; how many failed (push->errstr says why). */
static size_t
publish_each(fs_push *push, const struct fs_order *const *orders, size_t n)
{
	char doc[FS_ORDERS_DOC_MAX];
	size_t failed = 0;

	for (size_t i = 0; i < n; i++) {
		int len = fs_orders_document(orders[i], doc, sizeof(doc));

		if (len < 0 || fs_push_publish(push, orders[i]->id, doc, (size_t)len) != 0)
			failed++;
	}
	return failed;
}

/*
 * Publishes the n orders' documents, in the background or at once; how
 * many failed (in the background: those that could not be rendered).
 */
static size_t
publish(fs_push *push, const struct fs_order *const *orders, size_t n, int background)
{
	struct fs_push_msg *msgs = NULL;
	char *docs = NULL;
	size_t failed = 0, k = 0;

	if (n == 0 || !push->enabled)
		return 0;
	if ((msgs = calloc(n, sizeof(*msgs))) == NULL ||
	    (docs = malloc(n * FS_ORDERS_DOC_MAX)) == NULL) {
		/* No room for the pipelined batch: one at a time, from the stack. */
		failed = publish_each(push, orders, n);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		char *doc = docs + i * FS_ORDERS_DOC_MAX;
		int len = fs_orders_document(orders[i], doc, FS_ORDERS_DOC_MAX);

		if (len < 0) {
			failed++;
			continue;
		}
		msgs[k].channel = orders[i]->id;
		msgs[k].body = doc;
		msgs[k].len = (size_t)len;
		k++;
	}
	if (background)
		fs_push_start(push, msgs, k);
	else
		failed += fs_push_publish_many(push, msgs, k);
out:
	free(msgs);
	free(docs);
	return failed;
}

size_t
fs_orders_publish(fs_push *push, const struct fs_order *const *orders, size_t n)
{
	return publish(push, orders, n, 0);
}

size_t
fs_orders_publish_start(fs_push *push, const struct fs_order *const *orders, size_t n)
{
	return publish(push, orders, n, 1);
}

void
fs_orders_publish_one(fs_push *push, const struct fs_order *o)
{
	const struct fs_order *list[1] = { o };

	if (fs_orders_publish(push, list, 1) != 0)
		fs_log_warn("status push for %s failed: %s", o->id, push->errstr);
}

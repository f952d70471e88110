#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "metrics.h"
#include "payments.h"

static const char *const result_texts[FS_PAYMENTS_RESULT__MAX] = {
	[FS_PAYMENTS_OK] = "ok",
	[FS_PAYMENTS_NOT_FOUND] = "no such order",
	[FS_PAYMENTS_NOT_PENDING] = "the order cannot be paid",
	[FS_PAYMENTS_MISMATCH] = "amount or currency differ from the order's",
	[FS_PAYMENTS_TRANSIENT] = "database unavailable",
	[FS_PAYMENTS_PROVIDER] = "payment provider unavailable",
};

static const char *const verdict_names[FS_PAYMENT_VERDICT__MAX] = {
	[FS_PAYMENT_PAID] = "PAID",
	[FS_PAYMENT_REFUND] = "REFUND",
	[FS_PAYMENT_DUPLICATE] = "DUPLICATE",
	[FS_PAYMENT_DECLINED] = "FAILED",
};

const char *
fs_payments_strerror(enum fs_payments_result r)
{
	return r < FS_PAYMENTS_RESULT__MAX ? result_texts[r] : "unknown result";
}

const char *
fs_payments_verdict_name(enum fs_payment_verdict v)
{
	return v < FS_PAYMENT_VERDICT__MAX ? verdict_names[v] : "UNKNOWN";
}

/* Once more on a fresh connection when the old one died (a restart). */
static PGresult *
exec(fs_pg *pg, const char *sql, int nparams, const char *const *params)
{
	PGresult *res = fs_pg_exec(pg, sql, nparams, params);

	if (res == NULL && fs_pg_lost(pg))
		res = fs_pg_exec(pg, sql, nparams, params);
	return res;
}

enum fs_payments_result
fs_payments_checkout(fs_pg *pg, fs_provider *prov, const char *order_id, const char *user,
    const char *shop_url, char redirect[FS_PROVIDER_URL_MAX + 1], enum fs_order_status *status)
{
	char ret[FS_PROVIDER_URL_MAX + 1], amount[24], expires[24], currency[4];
	struct fs_provider_session s;
	enum fs_payments_result rc = FS_PAYMENTS_TRANSIENT;
	int64_t expires_ms, amount_minor;
	PGresult *res = NULL;
	int n;

	*redirect = '\0';
	res = exec(pg, "SELECT status, sale_id, expires_ms, amount_minor, currency, payment_id, "
		       "redirect_url, payment_expires_ms FROM fs_checkout_order($1::uuid, $2)",
	    2, (const char *[]){ order_id, user });
	if (res == NULL)
		goto out;
	if (PQntuples(res) != 1) {
		rc = FS_PAYMENTS_NOT_FOUND;
		goto out;
	}
	*status = fs_orders_status_parse(PQgetvalue(res, 0, 0));
	expires_ms = strtoll(PQgetvalue(res, 0, 2), NULL, 10);
	if (*status != FS_ORDER_PENDING || fs_clock_now_ms() >= expires_ms) {
		rc = FS_PAYMENTS_NOT_PENDING;
		goto out;
	}
	/* One session per order: the one opened before, as long as it is open. */
	if (!PQgetisnull(res, 0, 5)) {
		snprintf(redirect, FS_PROVIDER_URL_MAX + 1, "%s", PQgetvalue(res, 0, 6));
		rc = FS_PAYMENTS_OK;
		goto out;
	}
	amount_minor = strtoll(PQgetvalue(res, 0, 3), NULL, 10);
	snprintf(currency, sizeof(currency), "%s", PQgetvalue(res, 0, 4));
	n = snprintf(ret, sizeof(ret), "%s/?sale=%s&order=%s", shop_url, PQgetvalue(res, 0, 1),
	    order_id);
	if (n < 0 || (size_t)n >= sizeof(ret)) {
		snprintf(prov->errstr, sizeof(prov->errstr), "shop URL too long");
		rc = FS_PAYMENTS_PROVIDER;
		goto out;
	}
	/* The session ends with the window: no payment is taken after it. */
	if (fs_provider_open_session(prov, order_id, amount_minor, currency, expires_ms, ret, &s) != 0) {
		rc = FS_PAYMENTS_PROVIDER;
		goto out;
	}
	snprintf(amount, sizeof(amount), "%" PRId64, amount_minor);
	snprintf(expires, sizeof(expires), "%" PRId64, expires_ms);
	PQclear(res);
	res = exec(pg, "SELECT fs_open_payment($1, $2, $3::uuid, $4, $5, $6, $7)", 7,
	    (const char *[]){ s.payment, s.id, order_id, s.url, amount, currency, expires });
	if (res == NULL)
		goto out;
	snprintf(redirect, FS_PROVIDER_URL_MAX + 1, "%s", s.url);
	rc = FS_PAYMENTS_OK;
out:
	PQclear(res);
	return rc;
}

enum fs_payments_result
fs_payments_apply(fs_pg *pg, const struct fs_provider_event *ev, enum fs_payment_verdict *v,
    struct fs_order *o)
{
	char amount[24];
	const char *verdict;
	PGresult *res;
	enum fs_payments_result rc = FS_PAYMENTS_OK;

	memset(o, 0, sizeof(*o));
	snprintf(amount, sizeof(amount), "%" PRId64, ev->amount_minor);
	res = exec(pg, "SELECT verdict, status, sale_id, item_id, user_id, expires_ms "
		       "FROM fs_apply_payment_event($1, $2, $3, $4, $5::uuid, $6, $7)",
	    7, (const char *[]){ ev->id, fs_provider_event_type_name(ev->type), ev->payment,
		   ev->session, ev->order, amount, ev->currency });
	if (res == NULL)
		return FS_PAYMENTS_TRANSIENT;
	if (PQntuples(res) != 1) {
		PQclear(res);
		snprintf(pg->errstr, sizeof(pg->errstr), "fs_apply_payment_event gave no row");
		return FS_PAYMENTS_TRANSIENT;
	}
	verdict = PQgetvalue(res, 0, 0);
	if (strcmp(verdict, "UNKNOWN_ORDER") == 0) {
		rc = FS_PAYMENTS_NOT_FOUND;
	} else if (strcmp(verdict, "MISMATCH") == 0) {
		rc = FS_PAYMENTS_MISMATCH;
	} else {
		*v = FS_PAYMENT_DUPLICATE;
		for (int i = 0; i < FS_PAYMENT_VERDICT__MAX; i++)
			if (strcmp(verdict, verdict_names[i]) == 0)
				*v = (enum fs_payment_verdict)i;
		snprintf(o->id, sizeof(o->id), "%s", ev->order);
		o->status = fs_orders_status_parse(PQgetvalue(res, 0, 1));
		o->sale = strtoull(PQgetvalue(res, 0, 2), NULL, 10);
		o->item = strtoull(PQgetvalue(res, 0, 3), NULL, 10);
		snprintf(o->user, sizeof(o->user), "%s", PQgetvalue(res, 0, 4));
		o->expires_ms = strtoll(PQgetvalue(res, 0, 5), NULL, 10);
	}
	PQclear(res);
	return rc;
}

/* Records a try of the refund owed for payment that failed; its failures so far, or -1. */
static long
refund_failed(fs_pg *pg, const char *payment, const char *why)
{
	PGresult *res = exec(pg,
	    "UPDATE payments SET refund_attempts = refund_attempts + 1, refund_tried_at = now(), "
	    "refund_error = left($2, 256), updated_at = now() "
	    "WHERE payment_id = $1 AND state = 'REFUND_PENDING' RETURNING refund_attempts",
	    2, (const char *[]){ payment, why });
	long n = -1;

	fs_metrics_count(FS_M_REFUND_FAILURES);
	if (res != NULL && PQntuples(res) == 1)
		n = strtol(PQgetvalue(res, 0, 0), NULL, 10);
	PQclear(res);
	return n;
}

enum fs_payments_result
fs_payments_refund(fs_pg *pg, fs_provider *prov, const struct fs_provider_event *ev)
{
	char refund[FS_PROVIDER_ID_MAX + 1];
	PGresult *res;

	if (fs_provider_refund(prov, ev->payment, ev->amount_minor, ev->currency, refund) != 0) {
		refund_failed(pg, ev->payment, prov->errstr);
		return FS_PAYMENTS_PROVIDER;
	}
	if ((res = exec(pg, "SELECT fs_payment_refunded($1, $2)", 2,
		 (const char *[]){ ev->payment, refund })) == NULL)
		return FS_PAYMENTS_TRANSIENT;
	PQclear(res);
	return FS_PAYMENTS_OK;
}

/* Columns of a refund owed, as OWED_COLUMNS reads them, into o. */
#define OWED_COLUMNS                                                                       \
	"p.payment_id, p.order_id, p.amount_minor, p.currency, p.refund_attempts, "       \
	"EXTRACT(EPOCH FROM now() - p.succeeded_at), COALESCE(p.refund_error, '')"

static void
take_owed(struct fs_payments_owed *o, PGresult *res, int row)
{
	memset(o, 0, sizeof(*o));
	snprintf(o->ev.payment, sizeof(o->ev.payment), "%s", PQgetvalue(res, row, 0));
	snprintf(o->ev.order, sizeof(o->ev.order), "%s", PQgetvalue(res, row, 1));
	o->ev.amount_minor = strtoll(PQgetvalue(res, row, 2), NULL, 10);
	snprintf(o->ev.currency, sizeof(o->ev.currency), "%s", PQgetvalue(res, row, 3));
	o->attempts = strtol(PQgetvalue(res, row, 4), NULL, 10);
	o->since_s = strtod(PQgetvalue(res, row, 5), NULL);
	snprintf(o->error, sizeof(o->error), "%s", PQgetvalue(res, row, 6));
}

enum fs_payments_result
fs_payments_retry_refunds(fs_pg *pg, fs_provider *prov, long backoff_s, long alert_after,
    struct fs_payments_retry_counts *c)
{
	char backoff[24], cap[24], max[24];
	struct fs_payments_owed o;
	PGresult *res;

	memset(c, 0, sizeof(*c));
	snprintf(backoff, sizeof(backoff), "%ld", backoff_s);
	snprintf(cap, sizeof(cap), "%d", FS_PAYMENTS_REFUND_BACKOFF_MAX_S);
	snprintf(max, sizeof(max), "%d", FS_PAYMENTS_RETRY_MAX);
	if ((res = exec(pg,
		 "SELECT " OWED_COLUMNS " FROM payments p WHERE p.state = 'REFUND_PENDING' AND "
		 "(p.refund_tried_at IS NULL OR p.refund_tried_at + make_interval(secs => "
		 "least($1::float8 * power(2, least(greatest(p.refund_attempts - 1, 0), 30)), "
		 "$2::float8)) <= now()) ORDER BY p.updated_at LIMIT $3::int",
		 3, (const char *[]){ backoff, cap, max })) == NULL)
		return FS_PAYMENTS_TRANSIENT;
	for (int i = 0; i < PQntuples(res); i++) {
		enum fs_payments_result r;

		take_owed(&o, res, i);
		c->tried++;
		if ((r = fs_payments_refund(pg, prov, &o.ev)) == FS_PAYMENTS_OK) {
			c->refunded++;
			fs_log_info("refund of payment %s (order %s) made after %ld failed tries",
			    o.ev.payment, o.ev.order, o.attempts);
			continue;
		}
		c->failed++;
		if (r == FS_PAYMENTS_PROVIDER && o.attempts + 1 >= alert_after) {
			c->alerting++;
			fs_log_error("refund of payment %s (order %s, %" PRId64 " %s) failed %ld times: %s; "
				     "the money is still owed",
			    o.ev.payment, o.ev.order, o.ev.amount_minor, o.ev.currency, o.attempts + 1,
			    prov->errstr);
		} else {
			fs_log_warn("refund of payment %s (order %s) failed (%s): %s", o.ev.payment,
			    o.ev.order, fs_payments_strerror(r),
			    r == FS_PAYMENTS_PROVIDER ? prov->errstr : pg->errstr);
		}
	}
	PQclear(res);
	return FS_PAYMENTS_OK;
}

enum fs_payments_result
fs_payments_refunds_owed(fs_pg *pg, uint64_t sale, long alert_after, struct fs_payments_owed *owed,
    size_t max, long *n, long *failing)
{
	char sale_s[24], alert[24];
	PGresult *res;

	*n = *failing = 0;
	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, sale);
	snprintf(alert, sizeof(alert), "%ld", alert_after);
	if ((res = exec(pg,
		 "SELECT " OWED_COLUMNS ", p.refund_attempts >= $2::int FROM payments p "
		 "JOIN orders o ON o.id = p.order_id WHERE p.state = 'REFUND_PENDING' AND "
		 "($1::bigint = 0 OR o.sale_id = $1::bigint) ORDER BY p.succeeded_at, p.payment_id",
		 2, (const char *[]){ sale_s, alert })) == NULL)
		return FS_PAYMENTS_TRANSIENT;
	*n = PQntuples(res);
	for (int i = 0; i < PQntuples(res); i++) {
		if ((size_t)i < max)
			take_owed(&owed[i], res, i);
		*failing += strcmp(PQgetvalue(res, i, 7), "t") == 0;
	}
	PQclear(res);
	return FS_PAYMENTS_OK;
}

enum fs_payments_result
fs_payments_check(fs_pg *pg, void (*report)(void *, const char *, const char *), void *arg,
    size_t *n)
{
	PGresult *res = exec(pg, "SELECT order_id, problem FROM fs_payment_violations() "
				 "ORDER BY order_id",
	    0, NULL);

	*n = 0;
	if (res == NULL)
		return FS_PAYMENTS_TRANSIENT;
	for (int r = 0; r < PQntuples(res); r++) {
		report(arg, PQgetvalue(res, r, 0), PQgetvalue(res, r, 1));
		(*n)++;
	}
	PQclear(res);
	return FS_PAYMENTS_OK;
}

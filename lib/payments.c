#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
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

enum fs_payments_result
fs_payments_refund(fs_pg *pg, fs_provider *prov, const struct fs_provider_event *ev)
{
	char refund[FS_PROVIDER_ID_MAX + 1];
	PGresult *res;

	if (fs_provider_refund(prov, ev->payment, ev->amount_minor, ev->currency, refund) != 0)
		return FS_PAYMENTS_PROVIDER;
	if ((res = exec(pg, "SELECT fs_payment_refunded($1, $2)", 2,
		 (const char *[]){ ev->payment, refund })) == NULL)
		return FS_PAYMENTS_TRANSIENT;
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

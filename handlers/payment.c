/*
 * flashsale-payment: the payment provider's side of an order.
 *
 *   POST /api/flash-sales/orders/{orderId}/checkout   the shopper (bearer token):
 *        200 {"redirectUrl"}, the provider's hosted page for the order
 *   POST /api/flash-sales/payments/webhook            the provider (signed event):
 *        200 {"received":true,"verdict"}; 400/401 and nothing changed otherwise
 *
 * A checkout finds the order in PostgreSQL; one that Redis holds but the
 * consumer has not recorded yet answers 409 ORDER_PROCESSING (the page
 * tries again in a moment), as the order's other actions do.
 *
 * The webhook records first (one transaction applies the event once),
 * then acts: the status push for a PAID order, or the refund of a payment
 * the order could not take. A refund the provider did not make answers
 * 503, so that the provider's retry of the event tries it again.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "answer.h"
#include "cfg.h"
#include "clock.h"
#include "fcgi.h"
#include "keys.h"
#include "log.h"
#include "payments.h"
#include "provider.h"
#include "sales.h"
#include "stores.h"
#include "uuid.h"

#define ORDERS_PREFIX	"/api/flash-sales/orders/"
#define CHECKOUT_SUFFIX	"/checkout"
#define WEBHOOK_PATH	"/api/flash-sales/payments/webhook"

struct app {
	struct fs_cfg cfg;
	fs_token_keys *keys;
	struct fs_stores stores;	/* Redis only for a checkout the database does not know */
	fs_provider *provider;
	char secret[FS_PROVIDER_SECRET_MAX + 1];
	size_t secretlen;
};

/* The order id of /api/flash-sales/orders/{id}/checkout; -1 for any other path. */
static int
checkout_order(const char *path, char id[FS_UUID_STRLEN + 1])
{
	size_t plen = sizeof(ORDERS_PREFIX) - 1;

	if (path == NULL || strncmp(path, ORDERS_PREFIX, plen) != 0 ||
	    strlen(path) != plen + FS_UUID_STRLEN + sizeof(CHECKOUT_SUFFIX) - 1 ||
	    strcmp(path + plen + FS_UUID_STRLEN, CHECKOUT_SUFFIX) != 0 ||
	    fs_uuid_parse(path + plen, FS_UUID_STRLEN, NULL) != 0)
		return -1;
	memcpy(id, path + plen, FS_UUID_STRLEN);
	id[FS_UUID_STRLEN] = '\0';
	return 0;
}

static void
checkout(struct app *app, fs_fcgi *fcgi, const char *id)
{
	const char *auth = fs_fcgi_param(fcgi, "HTTP_AUTHORIZATION");
	char user[FS_TOKEN_SUB_MAX + 1], url[FS_PROVIDER_URL_MAX + 1], body[FS_PROVIDER_URL_MAX + 32];
	struct fs_order o = { .status = FS_ORDER_STATUS__MAX };
	enum fs_payments_result r;
	int n, held;

	if (auth == NULL || fs_token_verify_bearer(app->keys, auth, strlen(auth), time(NULL), user,
				sizeof(user)) != FS_TOKEN_OK) {
		fs_fcgi_error(fcgi, FS_ERR_UNAUTHENTICATED, NULL, FS_HTTP_BEARER_CHALLENGE);
		return;
	}
	r = fs_payments_checkout(app->stores.pg, app->provider, id, user,
	    fs_cfg_get(&app->cfg, FS_CFG_SHOP_URL), url, &o.status);
	switch (r) {
	case FS_PAYMENTS_OK:
		n = snprintf(body, sizeof(body), "{\"redirectUrl\":\"%s\"}", url);
		fs_fcgi_answer(fcgi, FS_HTTP_OK, NULL, body, (size_t)n);
		break;
	case FS_PAYMENTS_NOT_FOUND:
		/* Held in Redis, on its way to the database: not yet payable. */
		snprintf(o.id, sizeof(o.id), "%s", id);
		snprintf(o.user, sizeof(o.user), "%s", user);
		held = fs_sales_find_processing(app->stores.pg, app->stores.stock, &o);
		if (held > 0) {
			fs_answer_order_conflict(fcgi, FS_ERR_ORDER_PROCESSING, &o);
		} else if (held == 0) {
			fs_fcgi_error(fcgi, FS_ERR_ORDER_NOT_FOUND, NULL, NULL);
		} else {
			fs_log_warn("checkout of %s: order lookup failed (%s%s)", id,
			    app->stores.pg->errstr, app->stores.stock->errstr);
			fs_fcgi_error(fcgi, FS_ERR_TRY_AGAIN, NULL, FS_HTTP_RETRY_SOON);
		}
		break;
	case FS_PAYMENTS_NOT_PENDING:
		snprintf(o.id, sizeof(o.id), "%s", id);
		fs_answer_order_conflict(fcgi, FS_ERR_ORDER_NOT_PENDING, &o);
		break;
	default:
		fs_log_warn("checkout of %s: %s (%s%s)", id, fs_payments_strerror(r),
		    app->stores.pg->errstr, app->provider->errstr);
		fs_fcgi_error(fcgi, FS_ERR_TRY_AGAIN, NULL, FS_HTTP_RETRY_SOON);
	}
}

static void
webhook(struct app *app, fs_fcgi *fcgi)
{
	const char *sig = fs_fcgi_param(fcgi, "HTTP_PROVIDER_SIGNATURE"), *body;
	struct fs_provider_event ev;
	enum fs_provider_verdict sv;
	enum fs_payment_verdict v = FS_PAYMENT_DUPLICATE;
	enum fs_payments_result r;
	struct fs_order o;
	char answer[64], why[128];
	size_t len;
	int n;

	if (fs_fcgi_body_or_answer(fcgi, &body, &len) != 0)
		return;
	/* The signature first: nothing of an unsigned body is even parsed. */
	sv = fs_provider_verify(app->secret, app->secretlen, sig, body, len,
	    fs_clock_now_ms() / 1000);
	if (sv != FS_PROVIDER_SIG_OK) {
		fs_log_warn("webhook refused: %s", fs_provider_verdict_text(sv));
		fs_fcgi_error(fcgi, FS_ERR_BAD_SIGNATURE, NULL, NULL);
		return;
	}
	if (fs_provider_parse_event(body, len, &ev, why, sizeof(why)) != 0) {
		fs_log_warn("webhook refused: %s", why);
		fs_fcgi_error(fcgi, FS_ERR_BAD_EVENT, NULL, NULL);
		return;
	}
	r = fs_payments_apply(app->stores.pg, &ev, &v, &o);
	if (r == FS_PAYMENTS_OK && v == FS_PAYMENT_REFUND)
		r = fs_payments_refund(app->stores.pg, app->provider, &ev);
	switch (r) {
	case FS_PAYMENTS_OK:
		break;
	case FS_PAYMENTS_NOT_FOUND:
		fs_log_warn("webhook %s: unknown order %s", ev.id, ev.order);
		fs_fcgi_error(fcgi, FS_ERR_UNKNOWN_ORDER, NULL, NULL);
		return;
	case FS_PAYMENTS_MISMATCH:
		fs_log_warn("webhook %s: amount or currency differ for order %s", ev.id, ev.order);
		fs_fcgi_error(fcgi, FS_ERR_AMOUNT_MISMATCH, NULL, NULL);
		return;
	default:
		fs_log_warn("webhook %s (%s of %s): %s (%s%s)", ev.id, fs_payments_verdict_name(v),
		    ev.payment, fs_payments_strerror(r), app->stores.pg->errstr, app->provider->errstr);
		fs_fcgi_error(fcgi, FS_ERR_TRY_AGAIN, NULL, FS_HTTP_RETRY_SOON);
		return;
	}
	if (v != FS_PAYMENT_DUPLICATE)
		fs_log_info("webhook %s: %s of %s for order %s: %s", ev.id,
		    fs_provider_event_type_name(ev.type), ev.payment, ev.order,
		    v == FS_PAYMENT_REFUND ? "refunded" : fs_payments_verdict_name(v));
	n = snprintf(answer, sizeof(answer), "{\"received\":true,\"verdict\":\"%s\"}",
	    v == FS_PAYMENT_REFUND ? "REFUNDED" : fs_payments_verdict_name(v));
	fs_fcgi_answer(fcgi, FS_HTTP_OK, NULL, answer, (size_t)n);
	if (v == FS_PAYMENT_PAID)
		fs_orders_publish_one(app->stores.push, &o);
}

static void
handle(fs_fcgi *fcgi, void *arg)
{
	struct app *app = arg;
	const char *doc = fs_fcgi_param(fcgi, "DOCUMENT_URI");
	char id[FS_UUID_STRLEN + 1];
	int is_webhook = doc != NULL && strcmp(doc, WEBHOOK_PATH) == 0;

	if (!is_webhook && checkout_order(doc, id) != 0) {
		fs_fcgi_error(fcgi, FS_ERR_NOT_FOUND, NULL, NULL);
		return;
	}
	if (!fs_fcgi_method_is(fcgi, "POST")) {
		fs_fcgi_error(fcgi, FS_ERR_METHOD_NOT_ALLOWED, NULL, "Allow: POST\r\n");
		return;
	}
	if (is_webhook)
		webhook(app, fcgi);
	else
		checkout(app, fcgi, id);
}

static int
setup(void *arg)
{
	struct app *app = arg;
	const char *secret;
	char err[512];

	if (fs_cfg_load(&app->cfg, FS_CFG_NEED(FS_CFG_PG) | FS_CFG_NEED(FS_CFG_REDIS) |
		    FS_CFG_NEED(FS_CFG_KEYS_DIR) |
		    FS_CFG_NEED(FS_CFG_PAYMENT_URL) | FS_CFG_NEED(FS_CFG_PAYMENT_API_KEY) |
		    FS_CFG_NEED(FS_CFG_PAYMENT_WEBHOOK_SECRET) | FS_CFG_NEED(FS_CFG_SHOP_URL)) != 0) {
		fs_log_error("%s", app->cfg.errstr);
		return -1;
	}
	secret = fs_cfg_get(&app->cfg, FS_CFG_PAYMENT_WEBHOOK_SECRET);
	app->secretlen = strlen(secret);
	if (app->secretlen < FS_PROVIDER_SECRET_MIN || app->secretlen > FS_PROVIDER_SECRET_MAX) {
		fs_log_error("FLASHSALE_PAYMENT_WEBHOOK_SECRET must be %d to %d bytes",
		    FS_PROVIDER_SECRET_MIN, FS_PROVIDER_SECRET_MAX);
		return -1;
	}
	memcpy(app->secret, secret, app->secretlen);
	if (fs_keys_load(&app->cfg, &app->keys, NULL, err, sizeof(err)) != 0) {
		fs_log_error("keys: %s", err);
		return -1;
	}
	if (fs_stores_open(&app->stores, &app->cfg, err, sizeof(err)) != 0 ||
	    (app->provider = fs_provider_new(fs_cfg_get(&app->cfg, FS_CFG_PAYMENT_URL),
		 fs_cfg_get(&app->cfg, FS_CFG_PAYMENT_API_KEY), err, sizeof(err))) == NULL) {
		fs_log_error("%s", err);
		return -1;
	}
	/* The secrets live in app from here on, not in the configuration copy. */
	sodium_memzero(app->cfg.value[FS_CFG_PAYMENT_WEBHOOK_SECRET],
	    sizeof(app->cfg.value[FS_CFG_PAYMENT_WEBHOOK_SECRET]));
	sodium_memzero(app->cfg.value[FS_CFG_PAYMENT_API_KEY], sizeof(app->cfg.value[FS_CFG_PAYMENT_API_KEY]));
	/* One request at a time: the connections are the process's. */
	return 1;
}

static void
teardown(void *arg)
{
	struct app *app = arg;

	fs_provider_free(app->provider);
	fs_stores_close(&app->stores);
	fs_token_keys_free(app->keys);
	sodium_memzero(app->secret, sizeof(app->secret));
}

/*
 * GET /readyz: PostgreSQL answers. Not Redis: the webhook never needs it,
 * and a checkout without it answers 503 only for an order not yet recorded.
 */
static int
ready(void *arg, char *why, size_t whylen)
{
	struct app *app = arg;

	if (fs_pg_ping(app->stores.pg) != 0) {
		snprintf(why, whylen, "postgresql: %s", app->stores.pg->errstr);
		return -1;
	}
	return 0;
}

int
main(void)
{
	static const struct fs_fcgi_service service = {
		"flashsale-payment", setup, teardown, NULL, NULL, handle, ready, 0, NULL
	};
	static struct app app;

	return fs_fcgi_serve(&service, &app);
}

/*
 * flashsale-order: the shopper's view of one order.
 *
 *   GET  /api/flash-sales/orders/{orderId}          status
 *   POST /api/flash-sales/orders/{orderId}/cancel   PENDING -> CANCELLED, the unit goes back
 *   POST /api/flash-sales/orders/{orderId}/ticket   a short-lived ticket for the order's
 *                                                   status stream (lib/urlsig)
 *   GET  /api/flash-sales/sales/{saleId}/my-order   the caller's own order in a sale, for
 *                                                   a page told 503 that may hold one
 *                                                   anyway (never cached: no-store, private)
 *   /_fs/auth/order-events                          nchan's authorization of the SSE
 *                                                   subscriber (original URI in REQUEST_URI,
 *                                                   ?ticket=...): no token in any URL
 *
 * Only the order's shopper sees it: any other caller gets 404, as for an
 * order that does not exist. An order that Redis holds but PostgreSQL has
 * not recorded yet is PROCESSING. Payment is flashsale-payment's: only the
 * payment provider's signed word makes an order PAID.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "answer.h"
#include "cfg.h"
#include "clock.h"
#include "fcgi.h"
#include "keys.h"
#include "log.h"
#include "orders.h"
#include "route.h"
#include "sales.h"
#include "stores.h"
#include "urlsig.h"
#include "uuid.h"

#define AUTH_URI	"/_fs/auth/order-events"
#define MY_ORDER_SUFFIX	"/my-order"
/* Per shopper: neither the edge nor a shared cache may keep it. */
#define NO_STORE	"Cache-Control: no-store, private\r\n"
#define TICKET_TTL_S	120	/* a ticket opens the stream (and its reconnects) this long */

enum action { ACTION_STATUS, ACTION_CANCEL, ACTION_EVENTS, ACTION_TICKET, ACTION__MAX };

/*
 * The path after the order id, the method each action takes and, for
 * those that change the order, the change and the status it leads to.
 */
static const struct {
	const char *suffix;
	const char *method;
	const char *allow;
	enum fs_orders_result (*change)(fs_pg *, struct fs_order *);
	enum fs_order_status after;
	const char *done;
} actions[ACTION__MAX] = {
	[ACTION_STATUS] = { "", "GET", "Allow: GET, HEAD\r\n", NULL, FS_ORDER_STATUS__MAX, NULL },
	[ACTION_CANCEL] = { "/cancel", "POST", "Allow: POST\r\n", fs_orders_cancel,
	    FS_ORDER_CANCELLED, "cancelled" },
	[ACTION_EVENTS] = { "/events", "GET", "Allow: GET\r\n", NULL, FS_ORDER_STATUS__MAX, NULL },
	[ACTION_TICKET] = { "/ticket", "POST", "Allow: POST\r\n", NULL, FS_ORDER_STATUS__MAX, NULL },
};

struct app {
	struct fs_cfg cfg;
	fs_token_keys *keys;
	fs_urlsig_key *url_key; /* signs and checks the event tickets */
	struct fs_stores stores;
};

/*
 * Splits /api/flash-sales/orders/{id}[/cancel|/events][?query] into
 * the id and the action; -1 for any other path.
 */
static int
parse_path(const char *path, char id[FS_UUID_STRLEN + 1], enum action *action)
{
	size_t rest;

	if ((path = fs_route_path_uuid(path, FS_ROUTE_ORDER_PREFIX, id)) == NULL)
		return -1;
	rest = strcspn(path, "?");
	for (int a = 0; a < ACTION__MAX; a++)
		if (strlen(actions[a].suffix) == rest &&
		    strncmp(path, actions[a].suffix, rest) == 0) {
			*action = (enum action)a;
			return 0;
		}
	return -1;
}

/* The ticket query parameter of the subscriber's URI, or NULL. */
static const char *
query_ticket(const char *uri, size_t *len)
{
	const char *q = uri != NULL ? strchr(uri, '?') : NULL;

	while (q != NULL) {
		q++;
		if (strncmp(q, "ticket=", 7) == 0) {
			q += 7;
			*len = strcspn(q, "&");
			return q;
		}
		q = strchr(q, '&');
	}
	return NULL;
}

/* The caller's user id from the bearer token. */
static int
authenticate(struct app *app, fs_fcgi *fcgi, char user[FS_TOKEN_SUB_MAX + 1])
{
	const char *auth = fs_fcgi_param(fcgi, "HTTP_AUTHORIZATION");

	return auth != NULL && fs_token_verify_bearer(app->keys, auth, strlen(auth), time(NULL),
				   user, FS_TOKEN_SUB_MAX + 1) == FS_TOKEN_OK ?
	    0 :
	    -1;
}

/* The caller's order, from PostgreSQL or else Redis; FS_ORDERS_NOT_FOUND when neither. */
static enum fs_orders_result
find_order(struct app *app, struct fs_order *o)
{
	enum fs_orders_result r = fs_orders_get(app->stores.pg, o);
	int found;

	if (r != FS_ORDERS_NOT_FOUND)
		return r;
	if ((found = fs_sales_find_processing(app->stores.pg, app->stores.stock, o)) < 0)
		return FS_ORDERS_TRANSIENT;
	return found ? FS_ORDERS_OK : FS_ORDERS_NOT_FOUND;
}

static void
answer_failure(struct app *app, fs_fcgi *fcgi, enum fs_orders_result r)
{
	if (r == FS_ORDERS_NOT_FOUND) {
		fs_fcgi_error(fcgi, FS_ERR_ORDER_NOT_FOUND, NULL, NULL);
		return;
	}
	fs_log_warn("order lookup failed: %s (%s)", fs_orders_strerror(r), app->stores.pg->errstr);
	fs_fcgi_error(fcgi, FS_ERR_TRY_AGAIN, NULL, FS_HTTP_RETRY_SOON);
}

/*
 * Pays (PENDING -> PAID) or cancels (PENDING -> CANCELLED, then, once
 * committed, the unit goes back). Repeating either answers the same again.
 */
static void
change_order(struct app *app, fs_fcgi *fcgi, struct fs_order *o, enum action action)
{
	enum fs_orders_result r = actions[action].change(app->stores.pg, o);

	if (r == FS_ORDERS_NOT_FOUND) {
		r = find_order(app, o);
		if (r == FS_ORDERS_OK) {
			fs_answer_order_conflict(fcgi, FS_ERR_ORDER_PROCESSING, o);
			return;
		}
	}
	if (r != FS_ORDERS_OK) {
		answer_failure(app, fcgi, r);
		return;
	}
	if (o->status != actions[action].after) {
		/* No longer PENDING, or PENDING past its window. */
		fs_answer_order_conflict(fcgi, FS_ERR_ORDER_NOT_PENDING, o);
		return;
	}
	/*
	 * Also on a repeated cancel: release frees the unit only while this
	 * order holds it, so a release lost the first time happens now.
	 */
	if (o->status == FS_ORDER_CANCELLED &&
	    fs_stock_release(app->stores.stock, o->sale, o->item, o->id) < 0)
		fs_log_warn("order %s cancelled; release failed (%s): the sweep repairs it", o->id,
		    app->stores.stock->errstr);
	if (o->changed) {
		fs_log_info("order %s %s by %s", o->id, actions[action].done, o->user);
		fs_orders_publish_one(app->stores.push, o);
	}
	fs_answer_order(fcgi, o);
}

/*
 * nchan's subrequest: 204 lets the subscriber in, 403 refuses. The ticket
 * alone decides (it was given to the order's shopper only): no store is
 * asked, so a stream of subscribers costs one MAC check each.
 */
static void
authorize_events(struct app *app, fs_fcgi *fcgi)
{
	const char *uri = fs_fcgi_param(fcgi, "REQUEST_URI"), *ticket;
	char id[FS_UUID_STRLEN + 1];
	enum action action;
	size_t len;

	if (parse_path(uri, id, &action) != 0 || action != ACTION_EVENTS ||
	    (ticket = query_ticket(uri, &len)) == NULL ||
	    fs_urlsig_ticket_check(app->url_key, id, ticket, len, time(NULL)) != FS_URLSIG_OK) {
		fs_fcgi_answer(fcgi, FS_HTTP_FORBIDDEN, NULL, "", 0);
		return;
	}
	fs_fcgi_answer(fcgi, FS_HTTP_NO_CONTENT, NULL, "", 0);
}

/* 200 {"ticket","expiresAt"} for the caller's own order; 404 for any other. */
static void
answer_ticket(struct app *app, fs_fcgi *fcgi, const struct fs_order *o)
{
	char ticket[FS_URLSIG_TICKET_MAX + 1], expires[FS_CLOCK_TIME_LEN], body[192];
	time_t until = time(NULL) + TICKET_TTL_S;
	int n;

	if (fs_urlsig_ticket(app->url_key, o->id, until, ticket, sizeof(ticket)) != 0) {
		fs_fcgi_error(fcgi, FS_ERR_INTERNAL, NULL, NULL);
		return;
	}
	fs_clock_format((int64_t)until * 1000, expires);
	n = snprintf(body, sizeof(body), "{\"ticket\":\"%s\",\"expiresAt\":\"%s\"}", ticket,
	    expires);
	fs_fcgi_answer(fcgi, FS_HTTP_OK, NULL, body, (size_t)n);
}

/*
 * GET /api/flash-sales/sales/{saleId}/my-order: 200 with the caller's order
 * in the sale (PROCESSING while only Redis holds it), 404 NO_ORDER.
 */
static void
my_order(struct app *app, fs_fcgi *fcgi, const char *doc)
{
	struct fs_order o;
	enum fs_orders_result r;
	const char *rest;
	char body[FS_ORDERS_DOC_MAX];
	int n;

	memset(&o, 0, sizeof(o));
	if ((rest = fs_route_path_id(doc, FS_ROUTE_SALE_PREFIX, &o.sale)) == NULL ||
	    strcmp(rest, MY_ORDER_SUFFIX) != 0) {
		fs_fcgi_error(fcgi, FS_ERR_SALE_NOT_FOUND, NULL, NO_STORE);
		return;
	}
	if (!fs_fcgi_method_is(fcgi, "GET") && !fs_fcgi_method_is(fcgi, "HEAD")) {
		fs_fcgi_error(fcgi, FS_ERR_METHOD_NOT_ALLOWED, NULL, "Allow: GET, HEAD\r\n" NO_STORE);
		return;
	}
	if (authenticate(app, fcgi, o.user) != 0) {
		fs_fcgi_error(fcgi, FS_ERR_UNAUTHENTICATED, NULL, FS_HTTP_BEARER_CHALLENGE NO_STORE);
		return;
	}
	if ((r = fs_sales_find_mine(app->stores.pg, app->stores.stock, &o)) == FS_ORDERS_NOT_FOUND) {
		fs_fcgi_error(fcgi, FS_ERR_NO_ORDER, NULL, NO_STORE);
		return;
	}
	if (r != FS_ORDERS_OK) {
		fs_log_warn("my-order lookup failed: %s (%s; %s)", fs_orders_strerror(r),
		    app->stores.pg->errstr, app->stores.stock->errstr);
		fs_fcgi_error(fcgi, FS_ERR_TRY_AGAIN, NULL, FS_HTTP_RETRY_SOON NO_STORE);
		return;
	}
	if ((n = fs_orders_document(&o, body, sizeof(body))) < 0) {
		fs_fcgi_error(fcgi, FS_ERR_INTERNAL, NULL, NO_STORE);
		return;
	}
	fs_fcgi_answer(fcgi, FS_HTTP_OK, NO_STORE, body, (size_t)n);
}

static void
handle(fs_fcgi *fcgi, void *arg)
{
	struct app *app = arg;
	const char *doc = fs_fcgi_param(fcgi, "DOCUMENT_URI");
	struct fs_order o;
	enum action action;
	enum fs_orders_result r;

	if (doc != NULL && strcmp(doc, AUTH_URI) == 0) {
		authorize_events(app, fcgi);
		return;
	}
	if (doc != NULL && strncmp(doc, FS_ROUTE_SALE_PREFIX, strlen(FS_ROUTE_SALE_PREFIX)) == 0) {
		my_order(app, fcgi, doc);
		return;
	}
	memset(&o, 0, sizeof(o));
	if (parse_path(doc, o.id, &action) != 0 || action == ACTION_EVENTS) {
		fs_fcgi_error(fcgi, FS_ERR_ORDER_NOT_FOUND, NULL, NULL);
		return;
	}
	if (!fs_fcgi_method_is(fcgi, actions[action].method) &&
	    !(action == ACTION_STATUS && fs_fcgi_method_is(fcgi, "HEAD"))) {
		fs_fcgi_error(fcgi, FS_ERR_METHOD_NOT_ALLOWED, NULL, actions[action].allow);
		return;
	}
	if (authenticate(app, fcgi, o.user) != 0) {
		fs_fcgi_error(fcgi, FS_ERR_UNAUTHENTICATED, NULL, FS_HTTP_BEARER_CHALLENGE);
		return;
	}
	if (actions[action].change != NULL)
		change_order(app, fcgi, &o, action);
	else if ((r = find_order(app, &o)) != FS_ORDERS_OK)
		answer_failure(app, fcgi, r);
	else if (action == ACTION_TICKET)
		answer_ticket(app, fcgi, &o);
	else
		fs_answer_order(fcgi, &o);
}

/* GET /readyz: PostgreSQL and Redis answer. */
static int
ready(void *arg, char *why, size_t whylen)
{
	struct app *app = arg;

	return fs_stores_ready(&app->stores, why, whylen);
}

static int
setup(void *arg)
{
	struct app *app = arg;
	char err[512];

	if (fs_cfg_load(&app->cfg, FS_CFG_NEED(FS_CFG_REDIS) | FS_CFG_NEED(FS_CFG_PG) |
		    FS_CFG_NEED(FS_CFG_KEYS_DIR)) != 0) {
		fs_log_error("%s", app->cfg.errstr);
		return -1;
	}
	if (fs_keys_load(&app->cfg, &app->keys, &app->url_key, err, sizeof(err)) != 0) {
		fs_log_error("keys: %s", err);
		return -1;
	}
	if (fs_stores_open(&app->stores, &app->cfg, err, sizeof(err)) != 0) {
		fs_log_error("%s", err);
		return -1;
	}
	/* One request at a time: the connections are the process's. */
	return 1;
}

static void
teardown(void *arg)
{
	struct app *app = arg;

	fs_stores_close(&app->stores);
	fs_token_keys_free(app->keys);
	fs_urlsig_key_free(app->url_key);
}

int
main(void)
{
	static const struct fs_fcgi_service service = {
		"flashsale-order", setup, teardown, NULL, NULL, handle, ready, 0, NULL
	};
	static struct app app;

	return fs_fcgi_serve(&service, &app);
}

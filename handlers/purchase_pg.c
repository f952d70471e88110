/*
 * flashsale-purchase-pg: the PostgreSQL-only design, kept for comparison.
 *
 * The simple design that suits small sales: the same checks as
 * flashsale-purchase (URL signature, then the shopper's token), then one
 * statement, hence one transaction, that takes a unit with a conditional
 * UPDATE ... WHERE sold < quantity and records the PENDING order. No Redis,
 * no Kafka, no sold-out flag: every request is a database round trip, and
 * each item is one hot row that every buyer locks until its commit.
 * Nginx routes to it only from the bench server block (FLASHSALE_BENCH=1);
 * tests/load/rehearse runs it under the same burst as the real design.
 */
#include "config.h"

#include "answer.h"
#include "cfg.h"
#include "clock.h"
#include "fcgi.h"
#include "keys.h"
#include "log.h"
#include "orders.h"
#include "pg.h"
#include "route.h"

struct app {
	struct fs_cfg cfg;
	fs_token_keys *keys;
	fs_urlsig_key *url_key;
	fs_queue_keys *queue_keys; /* checks the passes of waiting rooms' purchase URLs */
	fs_pg *pg;
};

static void
handle(fs_fcgi *fcgi, void *arg)
{
	struct app *app = arg;
	struct fs_order o = { 0 };

	if (fs_route_purchase_item(fs_fcgi_param(fcgi, "DOCUMENT_URI"), &o.item) != 0) {
		fs_fcgi_error(fcgi, FS_ERR_ITEM_NOT_FOUND, NULL, NULL);
		return;
	}
	if (fs_answer_purchase_admit(fcgi, app->keys, app->url_key, app->queue_keys, fs_clock_now_ms(),
		&o, NULL) != 0)
		return;
	switch (fs_orders_buy(app->pg, &o)) {
	case FS_ORDERS_OK:
		fs_answer_purchase_accepted(fcgi, &o);
		return;
	case FS_ORDERS_LIVE_ORDER:
		fs_answer_purchase_already(fcgi, o.id);
		return;
	case FS_ORDERS_NOT_FOUND:
		fs_fcgi_error(fcgi, FS_ERR_ITEM_NOT_FOUND, NULL, NULL);
		return;
	case FS_ORDERS_SOLD_OUT:
		fs_fcgi_error(fcgi, FS_ERR_SOLD_OUT, NULL, NULL);
		return;
	default:
		fs_log_warn("purchase failed: %s", app->pg->errstr);
		fs_fcgi_error(fcgi, FS_ERR_TRY_AGAIN, NULL, FS_HTTP_RETRY_SOON);
		return;
	}
}

static int
setup(void *arg)
{
	struct app *app = arg;
	char err[256];

	if (fs_cfg_load(&app->cfg, FS_CFG_NEED(FS_CFG_PG) | FS_CFG_NEED(FS_CFG_KEYS_DIR)) != 0) {
		fs_log_error("%s", app->cfg.errstr);
		return -1;
	}
	if (fs_keys_load(&app->cfg, &app->keys, &app->url_key, err, sizeof(err)) != 0 ||
	    fs_keys_load_queue(&app->cfg, &app->queue_keys, err, sizeof(err)) != 0) {
		fs_log_error("keys: %s", err);
		return -1;
	}
	if ((app->pg = fs_pg_new(fs_cfg_get(&app->cfg, FS_CFG_PG))) == NULL) {
		fs_log_error("FLASHSALE_PG too long");
		return -1;
	}
	/* Connected before the first shopper; a failure here is retried per request. */
	if (fs_pg_connect(app->pg) != 0)
		fs_log_warn("database: %s", app->pg->errstr);
	/* One connection, one request at a time: the design compared. */
	return 1;
}

static void
teardown(void *arg)
{
	struct app *app = arg;

	fs_pg_free(app->pg);
	fs_token_keys_free(app->keys);
	fs_urlsig_key_free(app->url_key);
	fs_queue_keys_free(app->queue_keys);
}

int
main(void)
{
	static const struct fs_fcgi_service service = {
		"flashsale-purchase-pg", setup, teardown, NULL, NULL, handle, NULL, 0, NULL
	};
	static struct app app;

	return fs_fcgi_serve(&service, &app);
}

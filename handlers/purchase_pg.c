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

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "cfg.h"
#include "fcgi.h"
#include "log.h"
#include "pg.h"
#include "sales.h"
#include "token.h"
#include "urlsig.h"
#include "uuid.h"

#define PATH_PREFIX "/api/flash-sales/items/"
#define PATH_SUFFIX "/purchase"

/* SQLSTATE of a unique violation: here, the shopper's second live order. */
#define SQLSTATE_UNIQUE "23505"

/*
 * Takes a unit and records the order in one statement. The item row is
 * always read, so that an item outside the sale (404) is told from a sold
 * out one (410) without a second round trip. A second live order of the
 * shopper violates orders_one_live_per_user and undoes the UPDATE with it.
 */
static const char buy_sql[] =
    "WITH item AS (SELECT id FROM items WHERE id = $1 AND sale_id = $2), "
    "unit AS (UPDATE items SET sold = sold + 1 "
    "WHERE id = $1 AND sale_id = $2 AND sold < quantity RETURNING id), "
    "placed AS (INSERT INTO orders (id, sale_id, item_id, user_id, status, reserved_at, expires_at) "
    "SELECT $3, $2, unit.id, $4, 'PENDING', now(), now() + make_interval(secs => s.payment_window_s) "
    "FROM unit JOIN sales s ON s.id = $2 RETURNING expires_at) "
    "SELECT (SELECT count(*) FROM item), "
    "(SELECT to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') FROM placed)";

/* The live order that made the purchase a duplicate. */
static const char live_sql[] =
    "SELECT id FROM orders WHERE sale_id = $1 AND user_id = $2 AND status IN ('PENDING', 'PAID')";

struct app {
	struct fs_cfg cfg;
	fs_fcgi *fcgi;
	fs_token_keys *keys;
	fs_urlsig_key *url_key;
	fs_pg *pg;
};

static const char retry_header[] = "Retry-After: 1\r\n";
static const char bearer_header[] = "WWW-Authenticate: Bearer realm=\"flashsale\", error=\"invalid_token\"\r\n";

/* The item id in /api/flash-sales/items/{itemId}/purchase; 0 or -1. */
static int
parse_item(const char *path, uint64_t *item)
{
	char digits[24];
	size_t plen = sizeof(PATH_PREFIX) - 1, n;

	if (path == NULL || strncmp(path, PATH_PREFIX, plen) != 0)
		return -1;
	path += plen;
	n = strspn(path, "0123456789");
	if (n == 0 || n >= sizeof(digits) || strcmp(path + n, PATH_SUFFIX) != 0)
		return -1;
	memcpy(digits, path, n);
	digits[n] = '\0';
	return fs_sales_parse_id(digits, item);
}

/* Answers 409 with the shopper's live order, or 503 when it cannot be read. */
static void
answer_duplicate(struct app *app, const char *sale_s, const char *user)
{
	const char *params[2] = { sale_s, user };
	char extra[80];
	PGresult *res;

	res = fs_pg_exec(app->pg, live_sql, 2, params);
	if (res == NULL || PQntuples(res) != 1) {
		/* The other order was cancelled or expired meanwhile: retry. */
		PQclear(res);
		fs_fcgi_error(app->fcgi, FS_ERR_TRY_AGAIN, NULL, retry_header);
		return;
	}
	snprintf(extra, sizeof(extra), "\"orderId\":\"%s\"", PQgetvalue(res, 0, 0));
	PQclear(res);
	fs_fcgi_error(app->fcgi, FS_ERR_ALREADY_PURCHASED, extra, NULL);
}

static void
buy(struct app *app, uint64_t sale, uint64_t item, const char *user)
{
	char item_s[24], sale_s[24], order_id[FS_UUID_STRLEN + 1], body[160];
	const char *params[4] = { item_s, sale_s, order_id, user };
	PGresult *res;
	int n;

	if (fs_uuid_v7(order_id) != 0) {
		fs_fcgi_error(app->fcgi, FS_ERR_INTERNAL, NULL, NULL);
		return;
	}
	snprintf(item_s, sizeof(item_s), "%" PRIu64, item);
	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, sale);
	if ((res = fs_pg_exec(app->pg, buy_sql, 4, params)) == NULL) {
		if (strcmp(app->pg->sqlstate, SQLSTATE_UNIQUE) == 0) {
			answer_duplicate(app, sale_s, user);
			return;
		}
		fs_log_warn("purchase failed: %s", app->pg->errstr);
		fs_fcgi_error(app->fcgi, FS_ERR_TRY_AGAIN, NULL, retry_header);
		return;
	}
	if (PQntuples(res) != 1 || strcmp(PQgetvalue(res, 0, 0), "0") == 0) {
		PQclear(res);
		fs_fcgi_error(app->fcgi, FS_ERR_ITEM_NOT_FOUND, NULL, NULL);
		return;
	}
	if (PQgetisnull(res, 0, 1)) {
		PQclear(res);
		fs_fcgi_error(app->fcgi, FS_ERR_SOLD_OUT, NULL, NULL);
		return;
	}
	n = snprintf(body, sizeof(body), "{\"orderId\":\"%s\",\"status\":\"PENDING\",\"expiresAt\":\"%s\"}",
	    order_id, PQgetvalue(res, 0, 1));
	PQclear(res);
	if (n < 0 || (size_t)n >= sizeof(body)) {
		fs_fcgi_error(app->fcgi, FS_ERR_INTERNAL, NULL, NULL);
		return;
	}
	fs_fcgi_answer(app->fcgi, FS_HTTP_ACCEPTED, NULL, body, (size_t)n);
}

static void
answer(struct app *app)
{
	const char *auth, *query;
	char user[FS_TOKEN_SUB_MAX + 1];
	enum fs_token_status ts;
	enum fs_urlsig_status us;
	uint64_t item, sale;

	if (parse_item(fs_fcgi_param(app->fcgi, "DOCUMENT_URI"), &item) != 0) {
		fs_fcgi_error(app->fcgi, FS_ERR_ITEM_NOT_FOUND, NULL, NULL);
		return;
	}
	if (!fs_fcgi_method_is(app->fcgi, "POST")) {
		fs_fcgi_error(app->fcgi, FS_ERR_METHOD_NOT_ALLOWED, NULL, "Allow: POST\r\n");
		return;
	}
	query = fs_fcgi_param(app->fcgi, "QUERY_STRING");
	if (query == NULL)
		query = "";
	us = fs_urlsig_check(app->url_key, item, query, strlen(query), time(NULL), &sale);
	if (us == FS_URLSIG_NOT_STARTED) {
		fs_fcgi_error(app->fcgi, FS_ERR_SALE_NOT_STARTED, NULL, retry_header);
		return;
	}
	if (us != FS_URLSIG_OK) {
		fs_fcgi_error(app->fcgi, FS_ERR_BAD_PURCHASE_URL, NULL, NULL);
		return;
	}
	auth = fs_fcgi_param(app->fcgi, "HTTP_AUTHORIZATION");
	ts = fs_token_verify_bearer(app->keys, auth != NULL ? auth : "", auth != NULL ? strlen(auth) : 0,
	    time(NULL), user, sizeof(user));
	if (ts != FS_TOKEN_OK) {
		fs_fcgi_error(app->fcgi, FS_ERR_UNAUTHENTICATED, NULL, bearer_header);
		return;
	}
	buy(app, sale, item, user);
}

static int
setup_app(struct app *app)
{
	char err[256];

	if (fs_cfg_load(&app->cfg, FS_CFG_NEED(FS_CFG_PG) | FS_CFG_NEED(FS_CFG_KEYS_DIR)) != 0) {
		fs_log_error("%s", app->cfg.errstr);
		return -1;
	}
	if ((app->keys = fs_token_keys_new()) == NULL || (app->url_key = fs_urlsig_key_new()) == NULL ||
	    fs_token_keys_load_dir(app->keys, fs_cfg_get(&app->cfg, FS_CFG_KEYS_DIR), err, sizeof(err)) != 0 ||
	    fs_urlsig_key_load_dir(app->url_key, fs_cfg_get(&app->cfg, FS_CFG_KEYS_DIR), err, sizeof(err)) != 0) {
		fs_log_error("keys: %s", app->keys == NULL || app->url_key == NULL ? "out of memory" : err);
		return -1;
	}
	if (fs_token_keys_set_claims(app->keys, fs_cfg_get(&app->cfg, FS_CFG_JWT_ISSUER),
		fs_cfg_get(&app->cfg, FS_CFG_JWT_AUDIENCE)) != 0) {
		fs_log_error("FLASHSALE_JWT_ISSUER or FLASHSALE_JWT_AUDIENCE too long");
		return -1;
	}
	if ((app->pg = fs_pg_new(fs_cfg_get(&app->cfg, FS_CFG_PG))) == NULL) {
		fs_log_error("FLASHSALE_PG too long");
		return -1;
	}
	/* Connected before the first shopper; a failure here is retried per request. */
	if (fs_pg_connect(app->pg) != 0)
		fs_log_warn("database: %s", app->pg->errstr);
	return 0;
}

static void
teardown(void *arg)
{
	struct app *app = arg;

	fs_pg_free(app->pg);
	fs_token_keys_free(app->keys);
	fs_urlsig_key_free(app->url_key);
}

/* This program runs one worker thread: the request in hand is the app's. */
static void
handle(fs_fcgi *fcgi, void *arg)
{
	struct app *app = arg;

	app->fcgi = fcgi;
	answer(app);
}

static int
setup(void *arg)
{
	if (sodium_init() < 0) {
		fs_log_error("libsodium failed to start");
		return -1;
	}
	return setup_app(arg) == 0 ? 1 : -1;
}

int
main(void)
{
	static const struct fs_fcgi_service service = {
		"flashsale-purchase-pg", setup, teardown, NULL, NULL, handle
	};
	static struct app app;

	return fs_fcgi_serve(&service, &app);
}

/*
 * flashsale-purchase: POST /api/flash-sales/items/{itemId}/purchase
 *
 * The hot path. Checks run cheapest first: a sold-out item is answered from
 * memory; then the URL signature, the shopper's token, the Redis
 * reservation, and the broker's acknowledgement of the order message. 202
 * only once the broker has the order; when it certainly does not, the unit
 * goes back and the shopper is asked to retry.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>
#include <sodium.h>

#include "cfg.h"
#include "fcgi.h"
#include "kafka.h"
#include "log.h"
#include "redis.h"
#include "sales.h"
#include "soldout.h"
#include "stock.h"
#include "token.h"
#include "urlsig.h"
#include "uuid.h"

#define PATH_PREFIX "/api/flash-sales/items/"
#define PATH_SUFFIX "/purchase"

/* What every worker thread shares: read-only keys and thread-safe parts. */
struct app {
	struct fs_cfg cfg;
	fs_token_keys *keys;
	fs_urlsig_key *url_key;
	fs_kafka_producer *producer; /* librdkafka is thread-safe; concurrent orders batch */
	fs_soldout *soldout;
	int threads;
};

/* What one worker thread owns: hiredis connections are not shared. */
struct worker {
	struct app *app;
	fs_redis *redis;
	fs_stock *stock;
};

static const char retry_header[] = "Retry-After: 1\r\n";
static const char bearer_header[] = "WWW-Authenticate: Bearer realm=\"flashsale\", error=\"invalid_token\"\r\n";

/* The item id in /api/flash-sales/items/{itemId}/purchase; 0 or -1. */
static int
parse_item(const char *path, uint64_t *item)
{
	char digits[24];
	size_t plen = sizeof(PATH_PREFIX) - 1, slen = sizeof(PATH_SUFFIX) - 1, n;

	if (path == NULL || strncmp(path, PATH_PREFIX, plen) != 0)
		return -1;
	path += plen;
	n = strspn(path, "0123456789");
	if (n == 0 || n >= sizeof(digits) || strcmp(path + n, PATH_SUFFIX) != 0 || slen == 0)
		return -1;
	memcpy(digits, path, n);
	digits[n] = '\0';
	return fs_sales_parse_id(digits, item);
}

/* The precise clock: time(3) may lag a tick, and a URL is valid from its second. */
static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ISO 8601 UTC with milliseconds. */
static void
format_time(int64_t ms, char out[32])
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&s, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + 19, 32 - 19, ".%03dZ", (int)(ms % 1000));
}

/* Publishes the order and waits for the broker's answer. */
static enum fs_kafka_delivery
publish_order(struct app *app, uint64_t sale, uint64_t item, const char *user, const char *order_id,
    int64_t reserved_ms, char *err, size_t errlen)
{
	struct fs_kafka_msg msg_out = { 0 };
	char key[24];
	json_object *msg = json_object_new_object();
	enum fs_kafka_delivery d;
	const char *value;

	json_object_object_add(msg, "orderId", json_object_new_string(order_id));
	json_object_object_add(msg, "saleId", json_object_new_int64((int64_t)sale));
	json_object_object_add(msg, "itemId", json_object_new_int64((int64_t)item));
	json_object_object_add(msg, "userId", json_object_new_string(user));
	json_object_object_add(msg, "reservedAt", json_object_new_int64(reserved_ms));
	value = json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN);
	snprintf(key, sizeof(key), "%" PRIu64, item);
	msg_out.key = key;
	msg_out.keylen = strlen(key);
	msg_out.value = value;
	msg_out.len = strlen(value);
	d = fs_kafka_produce_all(app->producer, fs_cfg_get(&app->cfg, FS_CFG_KAFKA_TOPIC), &msg_out, 1,
	    err, errlen);
	json_object_put(msg);
	return d;
}

static void
answer_reserved(fs_fcgi *fcgi, const char *order_id, int64_t reserved_ms, long window_s)
{
	char body[160], expires[32];
	int n;

	format_time(reserved_ms + (int64_t)window_s * 1000, expires);
	n = snprintf(body, sizeof(body), "{\"orderId\":\"%s\",\"status\":\"PENDING\",\"expiresAt\":\"%s\"}",
	    order_id, expires);
	fs_fcgi_answer(fcgi, FS_HTTP_ACCEPTED, NULL, body, (size_t)n);
}

static void
handle(fs_fcgi *fcgi, void *ctx)
{
	struct worker *w = ctx;
	struct app *app = w->app;
	const char *auth, *query;
	char user[FS_TOKEN_SUB_MAX + 1], order_id[FS_UUID_STRLEN + 1], extra[80], err[256];
	struct fs_stock_hold hold;
	enum fs_token_status ts;
	enum fs_urlsig_status us;
	uint64_t item, sale;
	int64_t now, reserved_ms;
	unsigned gen;

	if (parse_item(fs_fcgi_param(fcgi, "DOCUMENT_URI"), &item) != 0) {
		fs_fcgi_error(fcgi, FS_ERR_ITEM_NOT_FOUND, NULL, NULL);
		return;
	}
	/* Sold out costs one memory read: no signature check, no Redis. */
	if (fs_soldout_known(app->soldout, item)) {
		fs_fcgi_error(fcgi, FS_ERR_SOLD_OUT, NULL, NULL);
		return;
	}
	if (!fs_fcgi_method_is(fcgi, "POST")) {
		fs_fcgi_error(fcgi, FS_ERR_METHOD_NOT_ALLOWED, NULL, "Allow: POST\r\n");
		return;
	}
	query = fs_fcgi_param(fcgi, "QUERY_STRING");
	if (query == NULL)
		query = "";
	now = now_ms();
	us = fs_urlsig_check(app->url_key, item, query, strlen(query), (time_t)(now / 1000), &sale);
	if (us == FS_URLSIG_NOT_STARTED) {
		fs_fcgi_error(fcgi, FS_ERR_SALE_NOT_STARTED, NULL, retry_header);
		return;
	}
	if (us != FS_URLSIG_OK) {
		fs_fcgi_error(fcgi, FS_ERR_BAD_PURCHASE_URL, NULL, NULL);
		return;
	}
	auth = fs_fcgi_param(fcgi, "HTTP_AUTHORIZATION");
	ts = fs_token_verify_bearer(app->keys, auth != NULL ? auth : "", auth != NULL ? strlen(auth) : 0,
	    (time_t)(now / 1000), user, sizeof(user));
	if (ts != FS_TOKEN_OK) {
		fs_fcgi_error(fcgi, FS_ERR_UNAUTHENTICATED, NULL, bearer_header);
		return;
	}

	if (fs_uuid_v7(order_id) != 0) {
		fs_fcgi_error(fcgi, FS_ERR_INTERNAL, NULL, NULL);
		return;
	}
	reserved_ms = now_ms();
	gen = fs_soldout_generation(app->soldout, item);
	switch (fs_stock_reserve(w->stock, sale, item, user, order_id, reserved_ms, &hold)) {
	case FS_STOCK_RESERVED:
		break;
	case FS_STOCK_ALREADY:
		snprintf(extra, sizeof(extra), "\"orderId\":\"%s\"", hold.order_id);
		fs_fcgi_error(fcgi, FS_ERR_ALREADY_PURCHASED, extra, NULL);
		return;
	case FS_STOCK_SOLD_OUT:
		fs_soldout_mark(app->soldout, item, gen);
		fs_fcgi_error(fcgi, FS_ERR_SOLD_OUT, NULL, NULL);
		return;
	case FS_STOCK_UNKNOWN_ITEM:
		fs_fcgi_error(fcgi, FS_ERR_ITEM_NOT_FOUND, NULL, NULL);
		return;
	default:
		fs_log_warn("reserve failed: %s", w->stock->errstr);
		fs_fcgi_error(fcgi, FS_ERR_TRY_AGAIN, NULL, retry_header);
		return;
	}
	if (hold.left == 0)
		fs_soldout_mark(app->soldout, item, gen);

	switch (publish_order(app, sale, item, user, order_id, reserved_ms, err, sizeof(err))) {
	case FS_KAFKA_DELIVERED:
		answer_reserved(fcgi, order_id, reserved_ms, hold.window_s);
		return;
	case FS_KAFKA_NOT_DELIVERED:
		/* The broker never had it: the unit goes back now. */
		fs_log_warn("order %s not delivered (%s); releasing", order_id, err);
		if (fs_stock_release(w->stock, sale, item, order_id) < 0)
			fs_log_error("release of %s failed (%s); the sweeper will release it", order_id,
			    w->stock->errstr);
		break;
	default:
		/*
		 * It may be in the log: keep the hold. The consumer confirms it,
		 * or the sweeper releases it; a retry answers 409 with its id.
		 */
		fs_log_warn("order %s maybe delivered (%s); hold kept", order_id, err);
		break;
	}
	fs_fcgi_error(fcgi, FS_ERR_TRY_AGAIN, NULL, retry_header);
}

static int
setup(void *arg)
{
	struct app *app = arg;
	char err[256];
	long timeout, linger;

	if (sodium_init() < 0) {
		fs_log_error("libsodium failed to start");
		return -1;
	}
	if (fs_cfg_load(&app->cfg, FS_CFG_NEED(FS_CFG_REDIS) | FS_CFG_NEED(FS_CFG_KAFKA_BROKERS) |
		    FS_CFG_NEED(FS_CFG_KEYS_DIR)) != 0) {
		fs_log_error("%s", app->cfg.errstr);
		return -1;
	}
	if ((app->keys = fs_token_keys_new()) == NULL || (app->url_key = fs_urlsig_key_new()) == NULL ||
	    fs_token_keys_load_dir(app->keys, fs_cfg_get(&app->cfg, FS_CFG_KEYS_DIR), err, sizeof(err)) != 0 ||
	    fs_urlsig_key_load_dir(app->url_key, fs_cfg_get(&app->cfg, FS_CFG_KEYS_DIR), err, sizeof(err)) != 0) {
		fs_log_error("keys: %s", err);
		return -1;
	}
	if (fs_token_keys_set_claims(app->keys, fs_cfg_get(&app->cfg, FS_CFG_JWT_ISSUER),
		fs_cfg_get(&app->cfg, FS_CFG_JWT_AUDIENCE)) != 0) {
		fs_log_error("FLASHSALE_JWT_ISSUER or FLASHSALE_JWT_AUDIENCE too long");
		return -1;
	}
	timeout = fs_cfg_long(&app->cfg, FS_CFG_KAFKA_TIMEOUT_MS);
	linger = fs_cfg_long(&app->cfg, FS_CFG_KAFKA_LINGER_MS);
	app->threads = (int)fs_cfg_long(&app->cfg, FS_CFG_PURCHASE_THREADS);
	if (timeout < 100 || linger < 0 || linger > 1000 || app->threads < 1 || app->threads > 256) {
		fs_log_error("FLASHSALE_KAFKA_TIMEOUT_MS (>= 100), FLASHSALE_KAFKA_LINGER_MS "
			     "(0-1000) or FLASHSALE_PURCHASE_THREADS (1-256) is out of range");
		return -1;
	}
	if ((app->producer = fs_kafka_producer_new(fs_cfg_get(&app->cfg, FS_CFG_KAFKA_BROKERS),
		 (int)timeout, (int)linger, err, sizeof(err))) == NULL) {
		fs_log_error("kafka: %s", err);
		return -1;
	}
	/* The first order should not pay for metadata and the producer id. */
	fs_kafka_producer_warm(app->producer, fs_cfg_get(&app->cfg, FS_CFG_KAFKA_TOPIC));
	if ((app->soldout = fs_soldout_new(fs_cfg_get(&app->cfg, FS_CFG_SOLDOUT_DIR),
		 fs_cfg_get(&app->cfg, FS_CFG_REDIS))) == NULL) {
		fs_log_error("soldout: cannot start");
		return -1;
	}
	return app->threads;
}

static void *
worker_new(void *arg)
{
	struct app *app = arg;
	struct worker *w;

	if ((w = calloc(1, sizeof(*w))) == NULL)
		return NULL;
	w->app = app;
	if ((w->redis = fs_redis_new(fs_cfg_get(&app->cfg, FS_CFG_REDIS))) == NULL ||
	    (w->stock = fs_stock_new(w->redis, fs_cfg_get(&app->cfg, FS_CFG_DATADIR))) == NULL ||
	    w->stock->err) {
		fs_log_error("stock: %s", w->stock != NULL ? w->stock->errstr : "out of memory");
		fs_stock_free(w->stock);
		fs_redis_free(w->redis);
		free(w);
		return NULL;
	}
	return w;
}

static void
worker_free(void *arg)
{
	struct worker *w = arg;

	fs_stock_free(w->stock);
	fs_redis_free(w->redis);
	free(w);
}

static void
teardown(void *arg)
{
	struct app *app = arg;

	fs_kafka_producer_free(app->producer);
	fs_soldout_free(app->soldout);
	fs_token_keys_free(app->keys);
	fs_urlsig_key_free(app->url_key);
}

int
main(void)
{
	static const struct fs_fcgi_service service = {
		"flashsale-purchase", setup, teardown, worker_new, worker_free, handle
	};
	static struct app app;

	return fs_fcgi_serve(&service, &app);
}

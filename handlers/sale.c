/*
 * flashsale-sale: the two public documents of a sale, made to be cached by
 * the edge.
 *
 *   GET /api/flash-sales/sales/{saleId}         the sale document: items,
 *       prices, states and the server's clock (public, max-age=1)
 *   GET /api/flash-sales/sales/{saleId}/reveal  the signed purchase URLs,
 *       from the start instant on (public, max-age=1); 425 before it
 *
 * Every edge asks about once a second whatever the number of shoppers, and
 * this process keeps what it read for a second too, so PostgreSQL sees a
 * query per sale per second at most. A reveal asked for in the last moment
 * before the start is held until the start instant and then answered: the
 * edge, which coalesces the shoppers waiting for it, hands the URLs to all
 * of them at once, and never has a "not started" answer cached past the
 * start.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>
#include <sodium.h>

#include "b64url.h"
#include "cfg.h"
#include "fcgi.h"
#include "log.h"
#include "pg.h"
#include "redis.h"
#include "sales.h"
#include "stock.h"
#include "urlsig.h"

#define PATH_PREFIX "/api/flash-sales/sales/"
#define REVEAL_SUFFIX "/reveal"
#define ITEM_PATH "/api/flash-sales/items/%" PRIu64 "/purchase?%s"

/* How long this process reuses what it read about a sale. */
#define CACHE_MS 1000
/* Sales kept in memory at once; the least recently read is replaced. */
#define CACHE_SLOTS 8
/*
 * A reveal asked for within this long before the start waits for it. The
 * edge keeps a "not started" answer for one second, so one given earlier
 * than this has expired before the start instant.
 */
#define REVEAL_HOLD_MS 1100
/* Bytes of BLAKE2b in an ETag. */
#define TAG_BYTES 16

#define STR_(x) #x
#define STR(x) STR_(x)

enum doc_kind { DOC_SALE, DOC_REVEAL, DOC__MAX };

enum item_state { ITEM_UPCOMING, ITEM_ON_SALE, ITEM_SOLD_OUT, ITEM_ENDED, ITEM_STATE__MAX };

static const char *const item_state_names[ITEM_STATE__MAX] = {
	[ITEM_UPCOMING] = "upcoming",
	[ITEM_ON_SALE] = "on_sale",
	[ITEM_SOLD_OUT] = "sold_out",
	[ITEM_ENDED] = "ended",
};

struct sale_item {
	uint64_t id;
	char name[201];
	int64_t price_minor;
	char currency[4];
	long quantity;
	long sold;	/* items.sold: live orders recorded in PostgreSQL */
	long left;	/* units left in Redis; -1 when unknown */
};

/* What one read of PostgreSQL (and Redis) said about a sale. */
struct sale_data {
	uint64_t id;
	int found;
	char name[201];
	int64_t starts_ms, ends_ms;
	long window_s;
	int nitems;
	struct sale_item *items;	/* FS_SALES_ITEMS_MAX of them */
	int64_t read_ms;		/* when; 0: the slot is empty */
};

struct app {
	struct fs_cfg cfg;
	fs_fcgi *fcgi;
	fs_urlsig_key *url_key;
	fs_pg *pg;
	fs_redis *redis;	/* NULL without FLASHSALE_REDIS */
	struct sale_data cache[CACHE_SLOTS];
};

static const char doc_headers[] = "Cache-Control: public, max-age=1, s-maxage=1\r\n";
static const char busy_headers[] = "Retry-After: 1\r\n";

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
sleep_ms(int64_t ms)
{
	struct timespec ts = { .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !fs_fcgi_stopping())
		;
}

/* ISO 8601 UTC with milliseconds, the form of every time in the API. */
static void
format_time(int64_t ms, char out[32])
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&s, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out + 19, 32 - 19, ".%03dZ", (int)(ms % 1000));
}

/* The sale id and document of /api/flash-sales/sales/{saleId}[/reveal]; 0 or -1. */
static int
parse_path(const char *path, uint64_t *sale, enum doc_kind *kind)
{
	char digits[24];
	size_t n;

	if (path == NULL || strncmp(path, PATH_PREFIX, sizeof(PATH_PREFIX) - 1) != 0)
		return -1;
	path += sizeof(PATH_PREFIX) - 1;
	n = strspn(path, "0123456789");
	if (n == 0 || n >= sizeof(digits))
		return -1;
	if (path[n] == '\0')
		*kind = DOC_SALE;
	else if (strcmp(path + n, REVEAL_SUFFIX) == 0)
		*kind = DOC_REVEAL;
	else
		return -1;
	memcpy(digits, path, n);
	digits[n] = '\0';
	return fs_sales_parse_id(digits, sale);
}

/*
 * Units left in Redis for every item, one MGET; left stays -1 for an item
 * Redis does not know (the sale is not warmed) or when Redis cannot answer,
 * so the document falls back on PostgreSQL's figures.
 */
static void
read_stock(struct app *app, struct sale_data *d)
{
	const char **argv = NULL;
	char(*keys)[FS_STOCK_KEY_MAX] = NULL;
	redisReply *r = NULL;

	if (app->redis == NULL || d->nitems == 0)
		return;
	argv = calloc((size_t)d->nitems + 1, sizeof(*argv));
	keys = calloc((size_t)d->nitems, sizeof(*keys));
	if (argv == NULL || keys == NULL)
		goto fail;
	argv[0] = "MGET";
	for (int i = 0; i < d->nitems; i++) {
		fs_stock_key(keys[i], FS_STOCK_KEY_STOCK, d->id, d->items[i].id);
		argv[i + 1] = keys[i];
	}
	r = fs_redis_argv(app->redis, d->nitems + 1, argv, NULL);
	if (r == NULL || r->type != REDIS_REPLY_ARRAY || r->elements != (size_t)d->nitems) {
		fs_log_warn("redis stock of sale %" PRIu64 ": %s", d->id,
		    r == NULL ? app->redis->errstr : "unexpected reply");
		goto fail;
	}
	for (int i = 0; i < d->nitems; i++) {
		redisReply *e = r->element[i];

		if (e->type == REDIS_REPLY_STRING)
			d->items[i].left = strtol(e->str, NULL, 10);
	}
fail:
	freeReplyObject(r);
	free(keys);
	free(argv);
}

/* Reads the sale and its items; 0, or -1 when PostgreSQL cannot answer. */
static int
read_sale(struct app *app, uint64_t sale, struct sale_data *d)
{
	static const char sql[] =
	    "SELECT s.name, floor(extract(epoch FROM s.starts_at) * 1000)::bigint, "
	    "floor(extract(epoch FROM s.ends_at) * 1000)::bigint, s.payment_window_s, "
	    "i.id, i.name, i.price_minor, i.currency, i.quantity, i.sold "
	    "FROM sales s LEFT JOIN items i ON i.sale_id = s.id WHERE s.id = $1 "
	    "ORDER BY i.id LIMIT " STR(FS_SALES_ITEMS_MAX);
	char sale_s[24];
	const char *params[1] = { sale_s };
	PGresult *res = NULL;
	int rows;

	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, sale);
	/* One retry: the first statement after a lost connection reconnects. */
	for (int attempt = 0; attempt < 2 && res == NULL; attempt++) {
		res = fs_pg_exec(app->pg, sql, 1, params);
		if (res == NULL && !fs_pg_lost(app->pg))
			break;
	}
	if (res == NULL) {
		fs_log_error("sale %s: %s", sale_s, app->pg->errstr);
		return -1;
	}
	d->id = sale;
	d->nitems = 0;
	rows = PQntuples(res);
	d->found = rows > 0;
	if (d->found) {
		snprintf(d->name, sizeof(d->name), "%s", PQgetvalue(res, 0, 0));
		d->starts_ms = strtoll(PQgetvalue(res, 0, 1), NULL, 10);
		d->ends_ms = strtoll(PQgetvalue(res, 0, 2), NULL, 10);
		d->window_s = strtol(PQgetvalue(res, 0, 3), NULL, 10);
	}
	for (int i = 0; i < rows && !PQgetisnull(res, i, 4); i++) {
		struct sale_item *it = &d->items[d->nitems++];

		it->id = strtoull(PQgetvalue(res, i, 4), NULL, 10);
		snprintf(it->name, sizeof(it->name), "%s", PQgetvalue(res, i, 5));
		it->price_minor = strtoll(PQgetvalue(res, i, 6), NULL, 10);
		snprintf(it->currency, sizeof(it->currency), "%s", PQgetvalue(res, i, 7));
		it->quantity = strtol(PQgetvalue(res, i, 8), NULL, 10);
		it->sold = strtol(PQgetvalue(res, i, 9), NULL, 10);
		it->left = -1;
	}
	PQclear(res);
	read_stock(app, d);
	return 0;
}

/*
 * The sale as read within the last CACHE_MS, or read now. NULL when it
 * cannot be read.
 */
static const struct sale_data *
get_sale(struct app *app, uint64_t sale, int64_t now)
{
	struct sale_data *slot = &app->cache[0];

	for (int i = 0; i < CACHE_SLOTS; i++) {
		struct sale_data *d = &app->cache[i];

		if (d->read_ms != 0 && d->id == sale) {
			if (now - d->read_ms < CACHE_MS && now >= d->read_ms)
				return d;
			slot = d;
			break;
		}
		if (d->read_ms < slot->read_ms)
			slot = d;
	}
	slot->read_ms = 0;
	if (read_sale(app, sale, slot) != 0)
		return NULL;
	slot->read_ms = now;
	return slot;
}

static enum item_state
item_state(const struct sale_data *d, const struct sale_item *it, int64_t now)
{
	if (now >= d->ends_ms)
		return ITEM_ENDED;
	if (it->sold >= it->quantity || it->left == 0)
		return ITEM_SOLD_OUT;
	if (now < d->starts_ms)
		return ITEM_UPCOMING;
	return ITEM_ON_SALE;
}

/*
 * Answers a document with its ETag, a hash of tag_source: weak when the
 * body holds more than the tag covers.
 */
static void
answer_json(struct app *app, json_object *doc, int weak, const char *tag_source)
{
	char headers[256], tag[FS_B64URL_ENCODED_LEN(TAG_BYTES) + 1];
	unsigned char h[TAG_BYTES];
	const char *body;

	crypto_generichash(h, sizeof(h), (const unsigned char *)tag_source, strlen(tag_source), NULL,
	    0);
	if (fs_b64url_encode(tag, sizeof(tag), h, sizeof(h), NULL) != FS_B64URL_OK)
		tag[0] = '\0';
	snprintf(headers, sizeof(headers), "%sETag: %s\"%s\"\r\n", doc_headers, weak ? "W/" : "", tag);
	body = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	fs_fcgi_answer(app->fcgi, FS_HTTP_OK, headers, body, strlen(body));
}

/*
 * The sale document. Its ETag is weak and leaves serverTime out: two
 * answers with the same tag differ only in the clock reading.
 */
static void
answer_sale(struct app *app, const struct sale_data *d, int64_t now)
{
	json_object *doc = json_object_new_object(), *items = json_object_new_array();
	char starts[32], ends[32];
	char *tag_source = NULL;

	format_time(d->starts_ms, starts);
	format_time(d->ends_ms, ends);
	json_object_object_add(doc, "saleId", json_object_new_int64((int64_t)d->id));
	json_object_object_add(doc, "name", json_object_new_string(d->name));
	json_object_object_add(doc, "startsAt", json_object_new_string(starts));
	json_object_object_add(doc, "endsAt", json_object_new_string(ends));
	json_object_object_add(doc, "paymentWindowSeconds", json_object_new_int64(d->window_s));
	for (int i = 0; i < d->nitems; i++) {
		const struct sale_item *it = &d->items[i];
		json_object *o = json_object_new_object();

		json_object_object_add(o, "itemId", json_object_new_int64((int64_t)it->id));
		json_object_object_add(o, "name", json_object_new_string(it->name));
		json_object_object_add(o, "priceMinor", json_object_new_int64(it->price_minor));
		json_object_object_add(o, "currency", json_object_new_string(it->currency));
		json_object_object_add(o, "quantity", json_object_new_int64(it->quantity));
		json_object_object_add(o, "state",
		    json_object_new_string(item_state_names[item_state(d, it, now)]));
		json_object_array_add(items, o);
	}
	json_object_object_add(doc, "items", items);
	tag_source = strdup(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN));
	json_object_object_add(doc, "serverTime", json_object_new_int64(now));
	if (tag_source == NULL)
		fs_fcgi_error(app->fcgi, FS_ERR_INTERNAL, NULL, NULL);
	else
		answer_json(app, doc, 1, tag_source);
	free(tag_source);
	json_object_put(doc);
}

/*
 * The reveal document: every item's signed purchase path. The URL is
 * valid from the whole second of the start (it cannot be had before the
 * start anyway) to the whole second before the end.
 */
static void
answer_reveal(struct app *app, const struct sale_data *d)
{
	json_object *doc = json_object_new_object(), *items = json_object_new_array();
	char query[FS_URLSIG_SIGNED_MAX], url[FS_URLSIG_SIGNED_MAX + 64];
	time_t start = (time_t)(d->starts_ms / 1000), end = (time_t)(d->ends_ms / 1000);

	json_object_object_add(doc, "saleId", json_object_new_int64((int64_t)d->id));
	for (int i = 0; i < d->nitems; i++) {
		json_object *o;

		if (fs_urlsig_sign(app->url_key, d->items[i].id, d->id, start, end, query,
			sizeof(query)) != 0) {
			fs_log_error("sale %" PRIu64 ": cannot sign the URL of item %" PRIu64, d->id,
			    d->items[i].id);
			fs_fcgi_error(app->fcgi, FS_ERR_INTERNAL, NULL, NULL);
			json_object_put(doc);
			json_object_put(items);
			return;
		}
		snprintf(url, sizeof(url), ITEM_PATH, d->items[i].id, query);
		o = json_object_new_object();
		json_object_object_add(o, "itemId", json_object_new_int64((int64_t)d->items[i].id));
		json_object_object_add(o, "purchaseUrl", json_object_new_string(url));
		json_object_array_add(items, o);
	}
	json_object_object_add(doc, "items", items);
	answer_json(app, doc, 0, json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN));
	json_object_put(doc);
}

static void
answer(struct app *app)
{
	const struct sale_data *d;
	enum doc_kind kind;
	uint64_t sale;
	int64_t now = now_ms();

	if (parse_path(fs_fcgi_param(app->fcgi, "DOCUMENT_URI"), &sale, &kind) != 0) {
		fs_fcgi_error(app->fcgi, FS_ERR_SALE_NOT_FOUND, NULL, doc_headers);
		return;
	}
	if (!fs_fcgi_method_is(app->fcgi, "GET") && !fs_fcgi_method_is(app->fcgi, "HEAD")) {
		fs_fcgi_error(app->fcgi, FS_ERR_METHOD_NOT_ALLOWED, NULL, "Allow: GET, HEAD\r\n");
		return;
	}
	if ((d = get_sale(app, sale, now)) == NULL) {
		fs_fcgi_error(app->fcgi, FS_ERR_TRY_AGAIN, NULL, busy_headers);
		return;
	}
	/* An unknown sale is cached for a second too: a typo cannot flood us. */
	if (!d->found) {
		fs_fcgi_error(app->fcgi, FS_ERR_SALE_NOT_FOUND, NULL, doc_headers);
		return;
	}
	if (kind == DOC_SALE) {
		answer_sale(app, d, now);
		return;
	}
	if (now < d->starts_ms - REVEAL_HOLD_MS) {
		/* Browsers must ask again; the edge keeps it for a second (TRAPS.md). */
		fs_fcgi_error(app->fcgi, FS_ERR_SALE_NOT_STARTED, NULL,
		    "Cache-Control: public, max-age=0, s-maxage=1\r\nRetry-After: 1\r\n");
		return;
	}
	if (now < d->starts_ms)
		sleep_ms(d->starts_ms - now);
	answer_reveal(app, d);
}

static int
setup_app(struct app *app)
{
	char err[256];
	const char *redis;

	if (fs_cfg_load(&app->cfg, FS_CFG_NEED(FS_CFG_PG) | FS_CFG_NEED(FS_CFG_KEYS_DIR)) != 0) {
		fs_log_error("%s", app->cfg.errstr);
		return -1;
	}
	if ((app->url_key = fs_urlsig_key_new()) == NULL ||
	    fs_urlsig_key_load_dir(app->url_key, fs_cfg_get(&app->cfg, FS_CFG_KEYS_DIR), err,
		sizeof(err)) != 0) {
		fs_log_error("url key: %s", app->url_key == NULL ? "out of memory" : err);
		return -1;
	}
	if ((app->pg = fs_pg_new(fs_cfg_get(&app->cfg, FS_CFG_PG))) == NULL) {
		fs_log_error("FLASHSALE_PG is too long");
		return -1;
	}
	/* Redis only sharpens "sold out"; the documents work without it. */
	redis = fs_cfg_get(&app->cfg, FS_CFG_REDIS);
	if (*redis != '\0' && (app->redis = fs_redis_new(redis)) == NULL) {
		fs_log_error("redis: out of memory");
		return -1;
	}
	for (int i = 0; i < CACHE_SLOTS; i++)
		if ((app->cache[i].items = calloc(FS_SALES_ITEMS_MAX, sizeof(struct sale_item))) == NULL) {
			fs_log_error("out of memory");
			return -1;
		}
	return 0;
}

static void
teardown(void *arg)
{
	struct app *app = arg;

	for (int i = 0; i < CACHE_SLOTS; i++)
		free(app->cache[i].items);
	fs_redis_free(app->redis);
	fs_pg_free(app->pg);
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
		"flashsale-sale", setup, teardown, NULL, NULL, handle
	};
	static struct app app;

	return fs_fcgi_serve(&service, &app);
}

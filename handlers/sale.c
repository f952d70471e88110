/*
 * flashsale-sale: the two public documents of a sale, made to be cached by
 * the edge.
 *
 *   GET /api/flash-sales/sales/{saleId}         the sale document: items,
 *       prices, states and the server's clock (public, max-age=1)
 *   GET /api/flash-sales/sales/{saleId}/reveal  the signed purchase URLs,
 *       from the start instant on (public, max-age=1); 425 before it
 *   GET /api/flash-sales/sales/{saleId}/stock   units left per item, read
 *       from Redis at every request (public, max-age=1)
 *
 * A sale with a waiting room (docs/QUEUE.md) has "queue" in its document:
 * the seed of its draw appears there from the opening on.
 *
 * Every edge asks about once a second whatever the number of shoppers, and
 * each worker thread keeps what it read for a second too, so PostgreSQL
 * sees a query per sale per second and thread at most. A reveal asked for
 * in the last moment before the start is held until the start instant and
 * then answered: the edge, which coalesces the shoppers waiting for it,
 * hands the URLs to all of them at once, and never has a "not started"
 * answer cached past the start. The units left are the one live figure:
 * the sale's items come from the thread's cache, their counts from one
 * Redis round trip per request, which the edge makes about once a second.
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
#include "clock.h"
#include "fcgi.h"
#include "keys.h"
#include "log.h"
#include "pg.h"
#include "queue.h"
#include "redis.h"
#include "route.h"
#include "sales.h"
#include "stock.h"

#define REVEAL_SUFFIX "/reveal"
#define STOCK_SUFFIX "/stock"

/* How long a worker thread reuses what it read about a sale. */
#define CACHE_MS 1000
/* Sales kept in memory at once; the least recently read is replaced. */
#define CACHE_SLOTS 8
/*
 * A reveal asked for within this long before the start waits for it. The
 * edge keeps a "not started" answer for one second, so one given earlier
 * than this has expired before the start instant.
 */
#define REVEAL_HOLD_MS 1100
/*
 * Requests in hand at once per process, each thread with its own
 * connections: a reveal held for the start instant keeps only its own.
 */
#define SALE_THREADS 4
/* Redis' clock is asked whether a queue sale opened from this long before
 * the opening by this host's clock (a host may run ahead or behind). */
#define SEED_ASK_MS 60000
/* Bytes of BLAKE2b in an ETag. */
#define TAG_BYTES 16

enum doc_kind { DOC_SALE, DOC_REVEAL, DOC_STOCK, DOC__MAX };

enum item_state { ITEM_UPCOMING, ITEM_ON_SALE, ITEM_SOLD_OUT, ITEM_ENDED, ITEM_STATE__MAX };

static const char *const item_state_names[ITEM_STATE__MAX] = {
	[ITEM_UPCOMING] = "upcoming",
	[ITEM_ON_SALE] = "on_sale",
	[ITEM_SOLD_OUT] = "sold_out",
	[ITEM_ENDED] = "ended",
};

/* What one read of PostgreSQL (and Redis) said about a sale, and when. */
struct cached_sale {
	struct fs_sale sale;
	int64_t read_ms;	/* 0: the slot is empty */
	int seed_out;		/* its Redis clock said the opening came (seed_shown) */
};

/* What every worker thread shares: read-only. */
struct app {
	struct fs_cfg cfg;
	fs_urlsig_key *url_key;
	int64_t clock_offset_ms; /* FLASHSALE_TEST_CLOCK_OFFSET_MS: tests only, 0 otherwise */
};

/*
 * What one worker thread owns: its connections and its cache, so that a
 * reveal waiting for the start instant holds up no other request.
 */
struct worker {
	struct app *app;
	fs_pg *pg;
	fs_stock *stock;	/* NULL without FLASHSALE_REDIS */
	int clock;		/* lua/queue_clock.lua on stock's Redis */
	struct cached_sale cache[CACHE_SLOTS];
};

/* GET /readyz: PostgreSQL answers, and Redis when configured. */
static int
ready(void *arg, char *why, size_t whylen)
{
	struct worker *w = arg;

	if (fs_pg_ping(w->pg) != 0) {
		snprintf(why, whylen, "postgresql: %s", w->pg->errstr);
		return -1;
	}
	if (w->stock != NULL && fs_stock_ping(w->stock) != 0) {
		snprintf(why, whylen, "redis %s", w->stock->errstr);
		return -1;
	}
	return 0;
}

static const char doc_headers[] = "Cache-Control: public, max-age=1, s-maxage=1\r\n";

static void
sleep_ms(int64_t ms)
{
	struct timespec ts = { .tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !fs_fcgi_stopping())
		;
}

/* The sale id and document of /api/flash-sales/sales/{saleId}[/reveal|/stock]; 0 or -1. */
static int
parse_path(const char *path, uint64_t *sale, enum doc_kind *kind)
{
	const char *rest = fs_route_path_id(path, FS_ROUTE_SALE_PREFIX, sale);

	if (rest == NULL)
		return -1;
	if (*rest == '\0')
		*kind = DOC_SALE;
	else if (strcmp(rest, REVEAL_SUFFIX) == 0)
		*kind = DOC_REVEAL;
	else if (strcmp(rest, STOCK_SUFFIX) == 0)
		*kind = DOC_STOCK;
	else
		return -1;
	return 0;
}

/*
 * The sale as read within the last CACHE_MS, or read now. NULL when it
 * cannot be read.
 */
static struct cached_sale *
get_sale(struct worker *w, uint64_t sale, int64_t now)
{
	struct cached_sale *slot = &w->cache[0];
	char err[300];

	for (int i = 0; i < CACHE_SLOTS; i++) {
		struct cached_sale *c = &w->cache[i];

		if (c->read_ms != 0 && c->sale.id == sale) {
			if (now - c->read_ms < CACHE_MS && now >= c->read_ms)
				return c;
			slot = c;
			break;
		}
		if (c->read_ms < slot->read_ms)
			slot = c;
	}
	/* The opening seen by Redis' clock stays seen for the same sale. */
	if (slot->read_ms == 0 || slot->sale.id != sale)
		slot->seed_out = 0;
	slot->read_ms = 0;
	if (fs_sales_read(w->pg, w->stock, sale, &slot->sale, err, sizeof(err)) != 0) {
		fs_log_error("sale %" PRIu64 ": %s", sale, err);
		return NULL;
	}
	slot->read_ms = now;
	return slot;
}

/*
 * Whether a queue sale's seed may be shown: from the opening by the clock
 * of its Redis node, the one that decides a join drawn or late
 * (fs_queue_redis_clock), never by this host's: a host running ahead would
 * show the seed while joins are still drawn, and an account could then
 * pick its draw. Asked from SEED_ASK_MS before the opening by this host's
 * clock until Redis says so, then remembered; Redis away: not yet (fail
 * closed). Without Redis (documents only), this host's clock.
 */
static int
seed_shown(struct worker *w, struct cached_sale *c, int64_t now)
{
	int64_t t;

	if (c->seed_out)
		return 1;
	if (w->stock == NULL)
		return now >= c->sale.starts_ms;
	if (now < c->sale.starts_ms - SEED_ASK_MS)
		return 0;
	if (fs_queue_redis_clock(w->stock->redis, w->clock, c->sale.id, &t) != 0) {
		fs_log_warn("sale %" PRIu64 ": Redis' clock: %s (the seed not shown yet)",
		    c->sale.id, w->stock->redis->errstr);
		return 0;
	}
	c->seed_out = t >= c->sale.starts_ms;
	return c->seed_out;
}

static enum item_state
item_state(const struct fs_sale *d, const struct fs_sale_item *it, int64_t now)
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
answer_json(fs_fcgi *fcgi, json_object *doc, int weak, const char *tag_source)
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
	fs_fcgi_answer(fcgi, FS_HTTP_OK, headers, body, strlen(body));
}

/*
 * Answers doc (and frees it) with the clock reading added as its last
 * member, name: time. Its ETag is weak and leaves the time out, so two
 * answers with the same tag differ only in the clock reading.
 */
static void
answer_timed(fs_fcgi *fcgi, json_object *doc, const char *name, json_object *time)
{
	char *tag_source = strdup(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN));

	json_object_object_add(doc, name, time);
	if (tag_source == NULL)
		fs_fcgi_error(fcgi, FS_ERR_INTERNAL, NULL, NULL);
	else
		answer_json(fcgi, doc, 1, tag_source);
	free(tag_source);
	json_object_put(doc);
}

/*
 * The waiting room of a queue sale as its document shows it: when joining
 * opens, the opening, the pass's life, the proof of work, the commitment
 * to the draw's seed, and the seed itself from the opening on (null before;
 * seed_shown decides).
 */
static json_object *
queue_doc(const struct fs_sale *d, int show_seed)
{
	json_object *q = json_object_new_object();
	char pre[FS_CLOCK_TIME_LEN], opens[FS_CLOCK_TIME_LEN], commit[65];
	char seed[2 * FS_QUEUE_SEEDBYTES + 1];

	fs_clock_format(d->starts_ms - (int64_t)d->queue.pre_s * 1000, pre);
	fs_clock_format(d->starts_ms, opens);
	fs_queue_seed_commit(d->seed, commit);
	json_object_object_add(q, "preQueueAt", json_object_new_string(pre));
	json_object_object_add(q, "opensAt", json_object_new_string(opens));
	json_object_object_add(q, "passSeconds", json_object_new_int(d->queue.pass_s));
	json_object_object_add(q, "powBits", json_object_new_int(d->queue.pow_bits));
	json_object_object_add(q, "seedCommit", json_object_new_string(commit));
	if (show_seed) {
		sodium_bin2hex(seed, sizeof(seed), d->seed, sizeof(d->seed));
		json_object_object_add(q, "seed", json_object_new_string(seed));
	} else {
		json_object_object_add(q, "seed", NULL);
	}
	return q;
}

/*
 * The sale document. Its ETag is weak and leaves serverTime out: two
 * answers with the same tag differ only in the clock reading.
 */
static void
answer_sale(fs_fcgi *fcgi, const struct fs_sale *d, int64_t now, int show_seed)
{
	json_object *doc = json_object_new_object(), *items = json_object_new_array();
	char starts[FS_CLOCK_TIME_LEN], ends[FS_CLOCK_TIME_LEN];

	fs_clock_format(d->starts_ms, starts);
	fs_clock_format(d->ends_ms, ends);
	json_object_object_add(doc, "saleId", json_object_new_int64((int64_t)d->id));
	json_object_object_add(doc, "name", json_object_new_string(d->name));
	json_object_object_add(doc, "startsAt", json_object_new_string(starts));
	json_object_object_add(doc, "endsAt", json_object_new_string(ends));
	json_object_object_add(doc, "paymentWindowSeconds", json_object_new_int64(d->window_s));
	for (int i = 0; i < d->nitems; i++) {
		const struct fs_sale_item *it = &d->items[i];
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
	/* A sale without a waiting room: the document as it always was. */
	if (d->has_queue)
		json_object_object_add(doc, "queue", queue_doc(d, show_seed));
	answer_timed(fcgi, doc, "serverTime", json_object_new_int64(now));
}

/*
 * The units left document: per item its quantity, the units that can
 * still be bought (held ones count as taken) and whether none can, and
 * when Redis said so. Redis away: 503,
 * never a figure that looks live but is not.
 */
static void
answer_stock(struct worker *w, fs_fcgi *fcgi, struct fs_sale *d, int64_t now)
{
	json_object *doc, *items;
	char at[FS_CLOCK_TIME_LEN];

	if (w->stock != NULL && fs_sales_read_left(w->stock, d) != 0) {
		fs_fcgi_error(fcgi, FS_ERR_TRY_AGAIN, NULL, FS_HTTP_RETRY_SOON);
		return;
	}
	doc = json_object_new_object();
	items = json_object_new_array();
	json_object_object_add(doc, "saleId", json_object_new_int64((int64_t)d->id));
	for (int i = 0; i < d->nitems; i++) {
		const struct fs_sale_item *it = &d->items[i];
		long left = fs_sales_item_left(it);
		json_object *o = json_object_new_object();

		json_object_object_add(o, "itemId", json_object_new_int64((int64_t)it->id));
		json_object_object_add(o, "quantity", json_object_new_int64(it->quantity));
		json_object_object_add(o, "left", json_object_new_int64(left));
		json_object_object_add(o, "soldOut", json_object_new_boolean(left == 0));
		json_object_array_add(items, o);
	}
	json_object_object_add(doc, "items", items);
	fs_clock_format(now, at);
	answer_timed(fcgi, doc, "at", json_object_new_string(at));
}

/* Adds an item's purchase path to the reveal document's items. */
static void
add_purchase_url(void *arg, uint64_t item, const char *path)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "itemId", json_object_new_int64((int64_t)item));
	json_object_object_add(o, "purchaseUrl", json_object_new_string(path));
	json_object_array_add(arg, o);
}

/*
 * The reveal document: every item's signed purchase path. The URL is
 * valid from the whole second of the start (it cannot be had before the
 * start anyway) to the whole second before the end.
 */
static void
answer_reveal(struct app *app, fs_fcgi *fcgi, const struct fs_sale *d)
{
	json_object *doc = json_object_new_object(), *items = json_object_new_array();

	json_object_object_add(doc, "saleId", json_object_new_int64((int64_t)d->id));
	json_object_object_add(doc, "items", items);
	if (fs_sales_purchase_paths(app->url_key, d, add_purchase_url, items) != 0) {
		fs_log_error("sale %" PRIu64 ": cannot sign its purchase URLs", d->id);
		fs_fcgi_error(fcgi, FS_ERR_INTERNAL, NULL, NULL);
	} else {
		answer_json(fcgi, doc, 0, json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN));
	}
	json_object_put(doc);
}

static void
handle(fs_fcgi *fcgi, void *ctx)
{
	struct worker *w = ctx;
	struct cached_sale *c;
	struct fs_sale *d;
	enum doc_kind kind;
	uint64_t sale;
	int64_t now = fs_clock_now_ms() + w->app->clock_offset_ms;

	if (parse_path(fs_fcgi_param(fcgi, "DOCUMENT_URI"), &sale, &kind) != 0) {
		fs_fcgi_error(fcgi, FS_ERR_SALE_NOT_FOUND, NULL, doc_headers);
		return;
	}
	if (!fs_fcgi_method_is(fcgi, "GET") && !fs_fcgi_method_is(fcgi, "HEAD")) {
		fs_fcgi_error(fcgi, FS_ERR_METHOD_NOT_ALLOWED, NULL, "Allow: GET, HEAD\r\n");
		return;
	}
	if ((c = get_sale(w, sale, now)) == NULL) {
		fs_fcgi_error(fcgi, FS_ERR_TRY_AGAIN, NULL, FS_HTTP_RETRY_SOON);
		return;
	}
	d = &c->sale;
	/* An unknown sale is cached for a second too: a typo cannot flood us. */
	if (!d->found) {
		fs_fcgi_error(fcgi, FS_ERR_SALE_NOT_FOUND, NULL, doc_headers);
		return;
	}
	if (kind == DOC_SALE) {
		answer_sale(fcgi, d, now, d->has_queue && seed_shown(w, c, now));
		return;
	}
	if (kind == DOC_STOCK) {
		answer_stock(w, fcgi, d, now);
		return;
	}
	if (now < d->starts_ms - REVEAL_HOLD_MS) {
		/* Browsers must ask again; the edge keeps it for a second (TRAPS.md). */
		fs_fcgi_error(fcgi, FS_ERR_SALE_NOT_STARTED, NULL,
		    "Cache-Control: public, max-age=0, s-maxage=1\r\nRetry-After: 1\r\n");
		return;
	}
	if (now < d->starts_ms)
		sleep_ms(d->starts_ms - now);
	answer_reveal(w->app, fcgi, d);
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
	if (fs_keys_load(&app->cfg, NULL, &app->url_key, err, sizeof(err)) != 0) {
		fs_log_error("url key: %s", err);
		return -1;
	}
	if ((app->clock_offset_ms = fs_cfg_test_clock_offset_ms(&app->cfg)) != 0)
		fs_log_warn("FLASHSALE_TEST_CLOCK_OFFSET_MS=%" PRId64 ": this handler's clock is set "
			    "off the real one (tests only)", app->clock_offset_ms);
	return SALE_THREADS;
}

static void
worker_free(void *arg)
{
	struct worker *w = arg;

	for (int i = 0; i < CACHE_SLOTS; i++)
		free(w->cache[i].sale.items);
	fs_stock_free(w->stock);
	fs_pg_free(w->pg);
	free(w);
}

static void *
worker_new(void *arg)
{
	struct app *app = arg;
	const char *redis = fs_cfg_get(&app->cfg, FS_CFG_REDIS);
	struct worker *w;
	char err[256];

	if ((w = calloc(1, sizeof(*w))) == NULL)
		return NULL;
	w->app = app;
	if ((w->pg = fs_pg_new(fs_cfg_get(&app->cfg, FS_CFG_PG))) == NULL) {
		fs_log_error("FLASHSALE_PG is too long");
		goto fail;
	}
	/*
	 * Redis only sharpens "sold out" and the units left; the documents
	 * work without it (the units left then as PostgreSQL counts them).
	 */
	if (*redis != '\0' && (w->stock = fs_stock_new(&app->cfg, NULL, err, sizeof(err))) == NULL) {
		fs_log_error("%s", err);
		goto fail;
	}
	if (w->stock != NULL) {
		char path[1024];

		if (fs_cfg_datapath(&app->cfg, "lua/queue_clock.lua", path, sizeof(path)) != 0 ||
		    (w->clock = fs_redis_script_load(w->stock->redis, path)) < 0) {
			fs_log_error("%s: %s", path, w->stock->redis->errstr);
			goto fail;
		}
	}
	for (int i = 0; i < CACHE_SLOTS; i++)
		if ((w->cache[i].sale.items =
			    calloc(FS_SALES_ITEMS_MAX, sizeof(*w->cache[i].sale.items))) == NULL) {
			fs_log_error("out of memory");
			goto fail;
		}
	return w;
fail:
	worker_free(w);
	return NULL;
}

static void
teardown(void *arg)
{
	struct app *app = arg;

	fs_urlsig_key_free(app->url_key);
}

int
main(void)
{
	static const struct fs_fcgi_service service = {
		"flashsale-sale", setup, teardown, worker_new, worker_free, handle, ready, 0, NULL
	};
	static struct app app;

	return fs_fcgi_serve(&service, &app);
}

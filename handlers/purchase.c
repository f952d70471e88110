/*
 * flashsale-purchase: POST /api/flash-sales/items/{itemId}/purchase
 *
 * The hot path. Checks run cheapest first: a sold-out item is answered from
 * memory; then the URL signature, the shopper's token, the Redis
 * reservation, and the broker's acknowledgement of the order message. 202
 * only once the broker has the order; when it certainly does not, the unit
 * goes back and the shopper is asked to retry. Its workers are event loops
 * (lib/fcgi): a request that waits for the broker holds no thread, one
 * loop answers the acknowledgements of many orders at a time, and the
 * purchases a loop admitted are reserved in one Redis pipeline when its
 * round ends; the loop serves other requests while Redis runs it, and
 * the purchases admitted meanwhile go in the next one. The loops serve
 * the producer's delivery reports themselves, woken by librdkafka.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "cfg.h"
#include "clock.h"
#include "fcgi.h"
#include "keys.h"
#include "log.h"
#include "metrics.h"
#include "orders.h"
#include "ordertopic.h"
#include "purchase.h"
#include "route.h"
#include "soldout.h"
#include "stock.h"

/* What every worker thread shares: read-only keys and thread-safe parts. */
struct app {
	struct fs_cfg cfg;
	fs_token_keys *keys;
	fs_urlsig_key *url_key;
	fs_queue_keys *queue_keys; /* checks the passes of waiting rooms' purchase URLs */
	fs_ordertopic topic; /* its producer is shared by the loops; concurrent orders batch */
	fs_soldout *soldout;
	int threads; /* event loops */
	int reports_fd; /* the producer's delivery reports wait (the loops serve them), or -1 */
	int redis_wait_ms; /* FLASHSALE_REDIS_WAIT_MS: 0, or WAIT 1 for each hold */
	struct fs_purchase_held_bounds held; /* when a retry's hold may be promised (lib/purchase) */
	int64_t hold_max_age_ms; /* FLASHSALE_HOLD_MAX_AGE: a doubt's length */
	int64_t clock_offset_ms; /* FLASHSALE_TEST_CLOCK_OFFSET_MS: tests only, 0 otherwise */
};

struct pending;

/*
 * What one event loop owns: hiredis connections are not shared; its batch
 * (lib/fcgi): the requests admitted since the last batch went to Redis go
 * together when the loop's round ends and no batch is out, and the loop
 * serves other events while Redis runs one; the asks of the batch out.
 */
struct worker {
	struct app *app;
	fs_stock *stock;
	struct fs_fcgi_batch batch;
	struct fs_stock_ask asks[FS_STOCK_BATCH_MAX];
	int reports_watched;
	int redis_ok; /* Redis answered the last batch or PING of this loop */
	/* the orders the broker acknowledged: their holds say so, then their 202s go */
	struct pending *acked[FS_STOCK_MARK_MAX];
	size_t nacked;
	/* those whose marks ride in the batch out: answered when its replies came */
	struct pending *riding[FS_STOCK_MARK_MAX];
	size_t nriding;
};

_Static_assert(FS_STOCK_BATCH_MAX >= FS_FCGI_BATCH_MAX, "a loop's batch fits one pipeline");

/* Gives an order's unit back; when Redis fails too, the sweeper will. */
static void
give_back(struct worker *w, const struct fs_order *o)
{
	fs_fcgi_batch_end(&w->batch); /* the connection answers the batch first */
	if (fs_stock_release(w->stock, o->sale, o->item, o->id) < 0)
		fs_log_error("release of %s failed (%s); the sweeper will release it", o->id,
		    w->stock->errstr);
}

/* One order on its way to the broker: its request waits for it, no thread does. */
struct pending {
	struct fs_fcgi_task task;
	fs_fcgi *fcgi;
	struct worker *w;
	struct fs_order o;
	int64_t sale_end_ms;
	unsigned gen; /* the item's sold-out generation when it was admitted */
	long window_s;
	enum fs_kafka_delivery verdict;
	char err[256];
	struct fs_stock_record held; /* the hold a retry met, as read (held) */
	/* when it was admitted, went to Redis, came back, was reported (monotonic ns) */
	uint64_t admitted_ns, sent_ns, reserved_ns, reported_ns;
};

/* Where a 202's time went (flashsale_purchase_stage_seconds_total). */
static void
stages_count(const struct pending *p)
{
	uint64_t now = fs_clock_mono_ns();

	fs_metrics_add(FS_M_PURCHASE_STAGE_QUEUED_US, (p->sent_ns - p->admitted_ns) / 1000);
	fs_metrics_add(FS_M_PURCHASE_STAGE_REDIS_US, (p->reserved_ns - p->sent_ns) / 1000);
	fs_metrics_add(FS_M_PURCHASE_STAGE_BROKER_US, (p->reported_ns - p->reserved_ns) / 1000);
	fs_metrics_add(FS_M_PURCHASE_STAGE_ANSWER_US, (now - p->reported_ns) / 1000);
	fs_metrics_count(FS_M_PURCHASE_STAGED);
}

/* The 202s of n acknowledged orders, whose holds say by now that the broker has them. */
static void
answer_accepted(struct pending *const *ps, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct pending *p = ps[i];

		fs_fcgi_log_tag(p->fcgi);
		fs_answer_purchase_accepted(p->fcgi, &p->o);
		fs_fcgi_log_tag(NULL);
		free(p);
	}
}

/* The holds of n acknowledged orders, as fs_stock_broker_has_many takes them. */
static void
acked_records(struct pending *const *ps, size_t n, uint64_t *sales, struct fs_stock_record *recs)
{
	for (size_t i = 0; i < n; i++) {
		const struct fs_order *o = &ps[i]->o;

		sales[i] = o->sale;
		recs[i] = (struct fs_stock_record){ .item = o->item, .reserved_ms = o->reserved_ms,
			.broker = FS_STOCK_BROKER_SENT };
		snprintf(recs[i].order_id, sizeof(recs[i].order_id), "%s", o->id);
		snprintf(recs[i].user, sizeof(recs[i].user), "%s", o->user);
	}
}

/*
 * The acknowledged orders with no batch to carry their marks: their holds
 * say that the broker has them (one pipeline for the lot), so that a retry
 * is answered 409 at once (held); then their 202s. A hold whose mark
 * failed keeps " sent": a retry then publishes its order again before its
 * 409.
 */
static void
accept_acked(struct worker *w)
{
	uint64_t sales[FS_STOCK_MARK_MAX];
	struct fs_stock_record recs[FS_STOCK_MARK_MAX];
	size_t n = w->nacked;

	if (n == 0)
		return;
	acked_records(w->acked, n, sales, recs);
	fs_fcgi_batch_end(&w->batch); /* the connection answers the batch first */
	if (fs_stock_broker_has_many(w->stock, sales, recs, n) != 0)
		fs_log_warn("%zu holds still say \"sent\" (%s); a retry publishes again", n,
		    w->stock->errstr);
	w->nacked = 0;
	answer_accepted(w->acked, n);
}

/*
 * The acknowledged orders' marks go with the batch about to be sent (at
 * its pipeline's end: no round trip of their own); their 202s once its
 * replies came (accept_riding). Those that cannot ride wait for the
 * round's end (accept_acked).
 */
static void
ride(struct worker *w)
{
	uint64_t sales[FS_STOCK_MARK_MAX];
	struct fs_stock_record recs[FS_STOCK_MARK_MAX];
	size_t n = w->nacked;

	if (n == 0)
		return;
	acked_records(w->acked, n, sales, recs);
	if (fs_stock_reserve_marks(w->stock, sales, recs, n) != 0)
		return;
	memcpy(w->riding, w->acked, n * sizeof(w->acked[0]));
	w->nriding = n;
	w->nacked = 0;
}

/* The batch whose pipeline carried the marks ended: their 202s. */
static void
accept_riding(struct worker *w)
{
	char err[128];

	if (w->nriding == 0)
		return;
	if (fs_stock_reserve_marked(w->stock, err, sizeof(err)) != 0)
		fs_log_warn("%zu holds still say \"sent\" (%s); a retry publishes again", w->nriding,
		    err);
	answer_accepted(w->riding, w->nriding);
	w->nriding = 0;
}

/*
 * The order's hold is kept while the broker may or may not have the order:
 * its item is in doubt (lib/soldout) until the consumer recorded it or
 * the sweeper released it, recorded in Redis (which every process's
 * recheck reads), here at once and on every host (fs:restock), so that
 * the shopper's retry reaches Redis (409 or 503), never a sold-out answer
 * from memory, a marker or the edge.
 */
static void
doubt(struct worker *w, const struct fs_order *o)
{
	int64_t until_ms = fs_clock_now_ms() + w->app->hold_max_age_ms;
	char msg[96];

	fs_fcgi_batch_end(&w->batch); /* the connection answers the batch first */
	if (fs_stock_doubt_record(w->stock, o->sale, o->item, o->id) != 0)
		fs_log_warn("doubt of order %s not recorded in Redis (%s); only told", o->id,
		    w->stock->errstr);
	if (fs_soldout_doubt(w->app->soldout, o->sale, o->item, until_ms) != 1 ||
	    fs_soldout_doubt_format(msg, sizeof(msg), o->sale, o->item, until_ms) < 0)
		return;
	if (fs_stock_restock_publish(w->stock, msg) != 0)
		fs_log_warn("doubt of item %" PRIu64 " not told to the other processes (%s)", o->item,
		    w->stock->errstr);
}

/* On the loop that holds the request: 202 once the broker has the order (accept_acked). */
static void
finish(void *arg)
{
	struct pending *p = arg;
	struct fs_order *o = &p->o;

	switch (p->verdict) {
	case FS_KAFKA_DELIVERED:
		stages_count(p);
		o->status = FS_ORDER_PENDING;
		o->expires_ms = o->reserved_ms + (int64_t)p->window_s * 1000;
		p->w->acked[p->w->nacked++] = p;
		if (p->w->nacked == FS_STOCK_MARK_MAX)
			accept_acked(p->w);
		return;
	case FS_KAFKA_NOT_DELIVERED:
		/* The broker never had it: the unit goes back now. */
		fs_log_warn("order %s not delivered (%s); releasing", o->id, p->err);
		give_back(p->w, o);
		break;
	default:
		/*
		 * It may be in the log: keep the hold ("sent"). The consumer
		 * confirms it, or the sweeper releases it; a retry publishes it
		 * again and answers 409 once the broker has it (held below).
		 */
		fs_log_warn("order %s maybe delivered (%s); hold kept", o->id, p->err);
		doubt(p->w, o);
		break;
	}
	fs_fcgi_error(p->fcgi, FS_ERR_TRY_AGAIN, NULL, FS_HTTP_RETRY_SOON);
	free(p);
}

/* Where the producer's reports are served (a loop): hands the verdict to the request's loop. */
static void
on_sent(void *arg, enum fs_kafka_delivery verdict, const char *err)
{
	struct pending *p = arg;

	p->verdict = verdict;
	p->reported_ns = fs_clock_mono_ns();
	snprintf(p->err, sizeof(p->err), "%s", err);
	fs_fcgi_post(p->fcgi, &p->task);
}

/* Sends a reserved order to the broker; finish answers once the broker has spoken. */
static void
send_order(struct pending *p)
{
	char err[256];

	p->task.run = finish;
	p->task.arg = p;
	if (fs_ordertopic_publish_async(&p->w->app->topic, &p->o, on_sent, p, err, sizeof(err)) != 0) {
		/* It never left: the unit goes back now. */
		fs_log_warn("order %s not sent (%s); releasing", p->o.id, err);
		give_back(p->w, &p->o);
		fs_fcgi_error(p->fcgi, FS_ERR_TRY_AGAIN, NULL, FS_HTTP_RETRY_SOON);
		free(p);
	}
}

/* On the request's loop: the hold's order published again; 409 once the broker has it. */
static void
finish_held(void *arg)
{
	struct pending *p = arg;
	struct fs_stock_record *rec = &p->held;

	if (p->verdict != FS_KAFKA_DELIVERED) {
		/* Never a release here: the first publication may be in the log. */
		fs_log_warn("order %s published again: %s (%s)", p->o.id,
		    p->verdict == FS_KAFKA_NOT_DELIVERED ? "not delivered" : "maybe delivered", p->err);
		doubt(p->w, &p->o);
		fs_fcgi_error(p->fcgi, FS_ERR_TRY_AGAIN, NULL, FS_HTTP_RETRY_SOON);
		free(p);
		return;
	}
	fs_metrics_count(FS_M_PURCHASE_REPUBLISHED);
	/* The record says so from now on: the next retry is answered at once. */
	fs_fcgi_batch_end(&p->w->batch);
	if (fs_stock_broker_has(p->w->stock, p->o.sale, rec) < 0)
		fs_log_warn("hold of %s: broker's acknowledgement not recorded (%s)", p->o.id,
		    p->w->stock->errstr);
	fs_answer_purchase_already(p->fcgi, p->o.id);
	free(p);
}

/*
 * The shopper holds a unit of the sale already (order held): 409 with its
 * id only once the broker is known to have that order; an order whose fate
 * is unknown is published again, the very message (lib/ordertopic builds
 * it from the hold), and the consumer takes it once by its id.
 */
static void
held(struct pending *p, const char *held_id)
{
	struct worker *w = p->w;
	struct fs_stock_record *rec = &p->held;
	char err[256];
	int recorded;

	fs_fcgi_batch_end(&w->batch); /* the connection answers the batch first */
	if (fs_stock_hold_standing(w->stock, p->o.sale, held_id, rec, &recorded) != 1 ||
	    strcmp(rec->user, p->o.user) != 0) {
		/* Released meanwhile (a retry buys anew), or Redis failed. */
		fs_fcgi_error(p->fcgi, FS_ERR_TRY_AGAIN, NULL, FS_HTTP_RETRY_SOON);
		free(p);
		return;
	}
	switch (fs_purchase_held_verdict(rec, recorded, fs_clock_now_ms(), &w->app->held)) {
	case FS_PURCHASE_HELD_PROMISED:
		fs_answer_purchase_already(p->fcgi, held_id);
		free(p);
		return;
	case FS_PURCHASE_HELD_PUBLISH:
		break;
	default:
		fs_fcgi_error(p->fcgi, FS_ERR_TRY_AGAIN, NULL, FS_HTTP_RETRY_SOON);
		free(p);
		return;
	}
	snprintf(p->o.id, sizeof(p->o.id), "%s", held_id);
	p->o.item = rec->item;
	p->o.reserved_ms = rec->reserved_ms;
	p->task.run = finish_held;
	p->task.arg = p;
	if (fs_ordertopic_publish_async(&w->app->topic, &p->o, on_sent, p, err, sizeof(err)) != 0) {
		fs_log_warn("order %s not published again (%s)", held_id, err);
		fs_fcgi_error(p->fcgi, FS_ERR_TRY_AGAIN, NULL, FS_HTTP_RETRY_SOON);
		free(p);
	}
}

/* What Redis said of one request's reservation: answered, or the order sent on. */
static void
reserved(struct pending *p, const struct fs_stock_ask *ask, int replicated)
{
	struct worker *w = p->w;
	struct app *app = w->app;
	struct fs_order *o = &p->o;

	switch (ask->result) {
	case FS_STOCK_RESERVED:
		break;
	case FS_STOCK_ALREADY:
		held(p, ask->hold.order_id);
		return;
	case FS_STOCK_SOLD_OUT:
		fs_metrics_count(FS_M_PURCHASE_SOLD_OUT_REDIS);
		fs_soldout_mark(app->soldout, o->sale, o->item, p->sale_end_ms, p->gen);
		/*
		 * Not known sold out here yet (its sale's doubts not read since,
		 * or in doubt): the edge must not keep it (deploy/nginx.conf.in:
		 * 0, not stored), since a holder in doubt may ask next.
		 */
		fs_fcgi_error(p->fcgi, FS_ERR_SOLD_OUT, NULL,
		    fs_soldout_known(app->soldout, o->item) ? NULL : "X-Accel-Expires: 0\r\n");
		free(p);
		return;
	case FS_STOCK_NOT_STARTED:
		/*
		 * This host's clock said started, Redis' (every host's) not yet:
		 * nothing was taken; the shopper asks again, as before the start.
		 */
		fs_fcgi_error(p->fcgi, FS_ERR_SALE_NOT_STARTED, NULL, FS_HTTP_RETRY_SOON);
		free(p);
		return;
	case FS_STOCK_UNKNOWN_ITEM:
		/*
		 * The URL is signed for this item of this sale and its window is
		 * open, so the sale exists: Redis lost it (a crash, before
		 * reconcile --repair). Try again, not "no such item".
		 */
		fs_metrics_count(FS_M_PURCHASE_SALE_MISSING);
		fs_log_warn("sale %" PRIu64 " is not in Redis: run flashsale-admin reconcile --all --repair",
		    o->sale);
		fs_fcgi_error(p->fcgi, FS_ERR_TRY_AGAIN, NULL, FS_HTTP_RETRY_SOON);
		free(p);
		return;
	default:
		/*
		 * The script may have run and its answer be lost (a timeout): give
		 * the order id's unit back. Release is idempotent, a no-op when
		 * nothing was taken, and the script refuses to run past its
		 * deadline, so no late reservation follows this release.
		 */
		fs_log_warn("reserve failed: %s; releasing order %s", ask->errstr, o->id);
		give_back(w, o);
		fs_fcgi_error(p->fcgi, FS_ERR_TRY_AGAIN, NULL, FS_HTTP_RETRY_SOON);
		free(p);
		return;
	}
	/* With replicas: a 202 only for a hold that a promoted replica would keep. */
	if (!replicated) {
		fs_log_warn("hold of %s not on a replica (%s); releasing", o->id, w->stock->errstr);
		give_back(w, o);
		fs_fcgi_error(p->fcgi, FS_ERR_TRY_AGAIN, NULL, FS_HTTP_RETRY_SOON);
		free(p);
		return;
	}
	if (ask->hold.left == 0)
		fs_soldout_mark(app->soldout, o->sale, o->item, p->sale_end_ms, p->gen);
	p->window_s = ask->hold.window_s;
	send_order(p);
}

/*
 * The batch's replies (its recv): each request is answered or its order
 * sent on; then one WAIT for all of them when replicas must have the holds.
 */
static void
reserved_all(void *ctx, void *const *items, size_t n)
{
	struct worker *w = ctx;
	int replicated = 1, any = 0;
	uint64_t now;

	fs_stock_reserve_end(w->stock);
	accept_riding(w);
	w->redis_ok = 0;
	for (size_t i = 0; i < n; i++) {
		any |= w->asks[i].result == FS_STOCK_RESERVED;
		w->redis_ok |= w->asks[i].result != FS_STOCK_ERROR;
	}
	if (any && w->app->redis_wait_ms > 0)
		replicated = fs_stock_replicate(w->stock, w->app->redis_wait_ms) == 0;
	/* The Redis stage ends here, a replica's acknowledgement included. */
	now = fs_clock_mono_ns();
	for (size_t i = 0; i < n; i++)
		((struct pending *)items[i])->reserved_ns = now;
	for (size_t i = 0; i < n; i++) {
		struct pending *p = items[i];

		fs_fcgi_log_tag(p->fcgi);
		reserved(p, &w->asks[i], replicated);
		fs_fcgi_log_tag(NULL);
	}
}

/*
 * The requests admitted so far (its send), reserved in one Redis pipeline
 * (one round trip per node): the descriptors of the replies.
 */
static int
reserve_all(void *ctx, void *const *items, size_t n, int *fds, int maxfds, int64_t *deadline_ms)
{
	struct worker *w = ctx;
	uint64_t now = fs_clock_mono_ns();

	fs_metrics_count(FS_M_PURCHASE_RESERVE_ROUNDS);
	for (size_t i = 0; i < n; i++) {
		struct pending *p = items[i];
		const struct fs_order *o = &p->o;

		p->sent_ns = now;
		w->asks[i] = (struct fs_stock_ask){ .sale = o->sale, .item = o->item,
			.user = o->user, .order_id = o->id, .now_ms = o->reserved_ms };
	}
	ride(w);
	fs_stock_reserve_begin(w->stock, w->asks, n);
	*deadline_ms = fs_stock_reserve_deadline(w->stock);
	return fs_stock_reserve_fds(w->stock, fds, maxfds);
}

/* The producer's delivery reports wait: served here, each answered on its request's loop. */
static void
reports_ready(void *ctx)
{
	struct app *app = ctx;

	fs_kafka_producer_serve(app->topic.producer);
}

/*
 * The end of a loop's round: what it admitted goes to Redis now, unless a
 * batch is out (it goes once that one ended: its replies came, or its
 * deadline passed, both told by the batch's watch), and the acknowledged
 * orders' marks with it (ride). With no batch out to carry them, they go
 * alone now; while one is out, they wait for the next (their 202s a round
 * trip later, the loop never blocked on a round trip of marks alone).
 */
static void
round_end(void *ctx)
{
	struct worker *w = ctx;

	if (!w->reports_watched && w->app->reports_fd >= 0)
		w->reports_watched = fs_fcgi_watch(w->app->reports_fd, 0, reports_ready, w->app) == 0;
	fs_fcgi_batch_round(&w->batch);
	if (w->batch.nflight == 0)
		accept_acked(w);
}

static void
handle(fs_fcgi *fcgi, void *ctx)
{
	struct worker *w = ctx;
	struct app *app = w->app;
	struct fs_order o = { 0 };
	struct pending *p;
	int64_t sale_end_ms;

	if (fs_route_purchase_item(fs_fcgi_param(fcgi, "DOCUMENT_URI"), &o.item) != 0) {
		fs_fcgi_error(fcgi, FS_ERR_ITEM_NOT_FOUND, NULL, NULL);
		return;
	}
	/* Sold out costs one memory read: no signature check, no Redis. */
	if (fs_soldout_known(app->soldout, o.item)) {
		fs_metrics_count(FS_M_PURCHASE_SOLD_OUT_MEMORY);
		fs_fcgi_error(fcgi, FS_ERR_SOLD_OUT, NULL, NULL);
		return;
	}
	/* This host's clock checks the URL's window; Redis' decides the start (reserve.lua). */
	if (fs_answer_purchase_admit(fcgi, app->keys, app->url_key, app->queue_keys,
		fs_clock_now_ms() + app->clock_offset_ms, &o, &sale_end_ms) != 0)
		return;
	if ((p = calloc(1, sizeof(*p))) == NULL) {
		fs_log_warn("out of memory; order %s not taken", o.id);
		fs_fcgi_error(fcgi, FS_ERR_TRY_AGAIN, NULL, FS_HTTP_RETRY_SOON);
		return;
	}
	o.reserved_ms = fs_clock_now_ms();
	p->admitted_ns = fs_clock_mono_ns();
	p->fcgi = fcgi;
	p->w = w;
	p->o = o;
	p->sale_end_ms = sale_end_ms;
	p->gen = fs_soldout_generation(app->soldout, o.item);
	/* Reserved with the round's others when the loop's round ends (round_end). */
	fs_fcgi_batch_add(&w->batch, p);
}

/*
 * GET /readyz: this worker's Redis and a Kafka broker answer. While a batch
 * is out the probe does not wait behind it (the loop would, up to Redis's
 * timeout, with every request it holds): Redis answers if it answered the
 * loop's last batch or PING. Otherwise a PING.
 */
static int
ready(void *arg, char *why, size_t whylen)
{
	struct worker *w = arg;

	if (w->batch.nflight == 0)
		w->redis_ok = fs_stock_ping(w->stock) == 0;
	if (!w->redis_ok) {
		snprintf(why, whylen, "redis %s", w->batch.nflight == 0 ? w->stock->errstr :
		    "did not answer the last batch");
		return -1;
	}
	return fs_kafka_producer_ready(w->app->topic.producer, w->app->topic.topic,
	    1000, why, whylen);
}

static int
setup(void *arg)
{
	struct app *app = arg;
	char err[256];
	long timeout, linger;

	if (fs_cfg_load(&app->cfg, FS_CFG_NEED(FS_CFG_REDIS) | FS_CFG_NEED(FS_CFG_KAFKA_BROKERS) |
		    FS_CFG_NEED(FS_CFG_KEYS_DIR)) != 0) {
		fs_log_error("%s", app->cfg.errstr);
		return -1;
	}
	if (fs_keys_load(&app->cfg, &app->keys, &app->url_key, err, sizeof(err)) != 0 ||
	    fs_keys_load_queue(&app->cfg, &app->queue_keys, err, sizeof(err)) != 0) {
		fs_log_error("keys: %s", err);
		return -1;
	}
	timeout = fs_cfg_long(&app->cfg, FS_CFG_KAFKA_TIMEOUT_MS);
	linger = fs_cfg_long(&app->cfg, FS_CFG_KAFKA_LINGER_MS);
	app->threads = (int)fs_cfg_long(&app->cfg, FS_CFG_PURCHASE_THREADS); /* ranges: lib/cfg */
	app->redis_wait_ms = (int)fs_cfg_long(&app->cfg, FS_CFG_REDIS_WAIT_MS);
	app->hold_max_age_ms = fs_cfg_long(&app->cfg, FS_CFG_HOLD_MAX_AGE) * 1000;
	if ((app->clock_offset_ms = fs_cfg_test_clock_offset_ms(&app->cfg)) != 0)
		fs_log_warn("FLASHSALE_TEST_CLOCK_OFFSET_MS=%" PRId64 ": this handler's clock is set "
			    "off the real one (tests only)", app->clock_offset_ms);
	fs_purchase_held_bounds_of(&app->held, timeout, linger,
	    fs_cfg_long(&app->cfg, FS_CFG_HOLD_MAX_AGE), FS_CFG_HOLD_MARGIN_MS);
	/* The first order should not pay for metadata and the producer id: opened now. */
	if (fs_ordertopic_init(&app->topic, fs_cfg_get(&app->cfg, FS_CFG_KAFKA_BROKERS),
		fs_cfg_get(&app->cfg, FS_CFG_KAFKA_TOPIC), err, sizeof(err)) != 0) {
		fs_log_error("kafka: %s", err);
		return -1;
	}
	/* Every order message carries a MAC under the first order key (lib/ordertopic). */
	if (fs_keys_load_orders(&app->cfg, &app->topic, err, sizeof(err)) != 0) {
		fs_log_error("order keys: %s", err);
		return -1;
	}
	if (fs_ordertopic_open_producer(&app->topic, (int)timeout, (int)linger, err, sizeof(err)) !=
	    0) {
		fs_log_error("kafka: %s", err);
		return -1;
	}
	/* The loops serve the delivery reports: no thread between the broker's answer and them. */
	if ((app->reports_fd = fs_kafka_producer_reports_fd(app->topic.producer, err, sizeof(err))) < 0)
		fs_log_warn("kafka: %s; its report thread serves the reports", err);
	if ((app->soldout = fs_soldout_new(fs_cfg_get(&app->cfg, FS_CFG_SOLDOUT_DIR), &app->cfg,
		 err, sizeof(err))) == NULL) {
		fs_log_error("soldout: %s", err);
		return -1;
	}
	return app->threads;
}

static void *
worker_new(void *arg)
{
	struct app *app = arg;
	struct worker *w;
	char err[256];

	if ((w = calloc(1, sizeof(*w))) == NULL)
		return NULL;
	w->app = app;
	w->batch.send = reserve_all;
	w->batch.recv = reserved_all;
	w->batch.ctx = w;
	w->redis_ok = 1; /* until a batch or a PING says otherwise */
	if ((w->stock = fs_stock_new(&app->cfg, fs_cfg_get(&app->cfg, FS_CFG_DATADIR), err,
		 sizeof(err))) == NULL) {
		fs_log_error("%s", err);
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
	free(w);
}

static void
teardown(void *arg)
{
	struct app *app = arg;

	fs_ordertopic_close(&app->topic);
	fs_soldout_free(app->soldout);
	fs_token_keys_free(app->keys);
	fs_urlsig_key_free(app->url_key);
	fs_queue_keys_free(app->queue_keys);
}

int
main(void)
{
	static const struct fs_fcgi_service service = {
		"flashsale-purchase", setup, teardown, worker_new, worker_free, handle, ready, 1,
		round_end
	};
	static struct app app;

	return fs_fcgi_serve(&service, &app);
}

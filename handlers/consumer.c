/*
 * flashsale-consumer: turns the order topic into rows in PostgreSQL.
 *
 *   flashsale-consumer            a group member that runs until SIGTERM
 *   flashsale-consumer --drain    reads until caught up, then exits (cron)
 *   flashsale-consumer --lag      prints how many messages the group has
 *                                 not committed yet (0: all recorded)
 *
 * Messages are taken in batches (up to BATCH_MAX, or what BATCH_WAIT_MS
 * brings) and recorded in one transaction. Only then do the batch's effects
 * follow: dead letters for orders that ended FAILED, hold releases for
 * them, confirmations for the rest, status pushes, and last the Kafka
 * offsets. Every step is idempotent, so a failure anywhere simply runs the
 * whole batch again (the database answers "duplicate" the second time):
 * nothing is skipped, nothing is recorded twice. The status pushes go out
 * in the background while the next batch is taken and recorded (nginx and
 * PostgreSQL work at once); a batch's offsets are committed once its
 * pushes are done, so a committed order has been recorded, settled and
 * pushed.
 */
#include "config.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cfg.h"
#include "clock.h"
#include "keys.h"
#include "log.h"
#include "metrics.h"
#include "orders.h"
#include "ordertopic.h"
#include "settle.h"
#include "stores.h"

#define BATCH_MAX	500	/* messages per transaction */
#define BATCH_WAIT_MS	50	/* how long a batch waits to fill up */
#define IDLE_POLL_MS	200	/* how long an empty poll waits */
#define PUSHING_POLL_MS	10	/* the same while a batch's pushes are out: its commit waits */
#define BACKOFF_MIN_MS	100
#define BACKOFF_MAX_MS	5000
#define ASSIGN_WAIT_S	60	/* --drain: how long to wait for partitions */

struct batch {
	rd_kafka_message_t *msg[BATCH_MAX];
	/* OK: an order (see its status); anything else is none: a dead letter */
	enum fs_ordertopic_verdict verdict[BATCH_MAX];
	struct fs_order order[BATCH_MAX];	/* verdict OK only */
	size_t n;
};

struct counts {
	unsigned long messages, pending, failed, rejected, duplicates, malformed, unauthenticated,
	    batches;
};

struct app {
	struct fs_cfg cfg;
	struct fs_stores stores;
	fs_ordertopic topic;	/* its producer sends the dead letters */
	fs_kafka_consumer *consumer;
	int drain;
	struct counts total;
	struct batch batch[2];	/* one being recorded, one being pushed */
	struct batch *pushing;	/* the batch whose pushes are out, or NULL */
	struct fs_order scratch[BATCH_MAX];
	int64_t last_ms;	/* when the last batch was committed */
};

static volatile sig_atomic_t stopping;

static void
on_stop(int sig)
{
	(void)sig;
	stopping = 1;
}

/* Sleeps ms milliseconds, waking early when a stop signal came. */
static void
pause_ms(long ms)
{
	while (ms > 0 && !stopping) {
		long step = ms < 50 ? ms : 50;
		struct timespec ts = { 0, step * 1000000L };

		nanosleep(&ts, NULL);
		ms -= step;
	}
}

/* Takes messages until the batch is full or BATCH_WAIT_MS after the first. */
static void
collect(struct app *app, struct batch *b)
{
	int64_t deadline = 0;

	b->n = 0;
	while (b->n < BATCH_MAX && !stopping) {
		int wait = app->pushing != NULL ? PUSHING_POLL_MS : IDLE_POLL_MS;
		rd_kafka_message_t *m;

		if (b->n > 0) {
			int64_t left = deadline - fs_clock_mono_ms();

			if (left <= 0)
				break;
			wait = (int)left;
		}
		m = fs_kafka_consumer_poll(app->consumer, wait);
		if (m == NULL) {
			if (app->consumer->err) {
				fs_metrics_count(FS_M_KAFKA_CONSUMER_ERRORS);
				fs_log_warn("%s", app->consumer->errstr);
				app->consumer->err = 0;
			}
			if (b->n == 0)
				break;
			continue;
		}
		if (b->n == 0)
			deadline = fs_clock_mono_ms() + BATCH_WAIT_MS;
		b->msg[b->n] = m;
		/* No order unless a holder of an order key made it (lib/ordertopic). */
		b->verdict[b->n] = fs_ordertopic_read(&app->topic, m, &b->order[b->n]);
		if (b->verdict[b->n] != FS_ORDERTOPIC_OK)
			fs_log_warn("%s message at %s [%" PRId32 "] offset %" PRId64
				    ": no order, to the dead letters",
			    fs_ordertopic_verdict_name(b->verdict[b->n]),
			    rd_kafka_topic_name(m->rkt), m->partition, m->offset);
		b->n++;
	}
}

static void
release_batch(struct batch *b)
{
	for (size_t i = 0; i < b->n; i++)
		rd_kafka_message_destroy(b->msg[i]);
	b->n = 0;
}

/*
 * Records the batch's orders. When the database refuses the batch for its
 * data, each order is tried alone so that one bad order cannot hold up the
 * others: the one that is refused alone is REJECTED. 0, or -1 to retry.
 */
static int
record(struct app *app, struct batch *b)
{
	enum fs_orders_result r;
	size_t map[BATCH_MAX], n = 0;

	for (size_t i = 0; i < b->n; i++)
		if (b->verdict[i] == FS_ORDERTOPIC_OK) {
			app->scratch[n] = b->order[i];
			map[n++] = i;
		}
	r = fs_orders_place_batch(app->stores.pg, app->scratch, n);
	if (r == FS_ORDERS_REFUSED) {
		fs_log_warn("batch refused (%s); recording its orders one by one",
		    app->stores.pg->errstr);
		for (size_t k = 0; k < n; k++) {
			r = fs_orders_place_batch(app->stores.pg, &app->scratch[k], 1);
			if (r == FS_ORDERS_REFUSED) {
				fs_log_error("order %s refused by the database: %s",
				    app->scratch[k].id, app->stores.pg->errstr);
				app->scratch[k].status = FS_ORDER_REJECTED;
				snprintf(app->scratch[k].failure, sizeof(app->scratch[k].failure),
				    "REFUSED");
				app->scratch[k].duplicate = 0;
			} else if (r != FS_ORDERS_OK) {
				break;
			}
		}
	}
	if (r != FS_ORDERS_OK && r != FS_ORDERS_REFUSED) {
		fs_log_warn("recording %zu orders failed (%s): %s; will retry", n,
		    fs_orders_strerror(r), app->stores.pg->errstr);
		return -1;
	}
	for (size_t k = 0; k < n; k++)
		b->order[map[k]] = app->scratch[k];
	return 0;
}

/* Why a message goes to the dead letters, or NULL when it does not. */
static const char *
dead_letter_reason(const struct batch *b, size_t i)
{
	const struct fs_order *o = &b->order[i];

	if (b->verdict[i] != FS_ORDERTOPIC_OK)
		return fs_ordertopic_verdict_name(b->verdict[i]);
	if (o->status == FS_ORDER_FAILED || o->status == FS_ORDER_REJECTED)
		return o->failure[0] != '\0' ? o->failure : "FAILED";
	return NULL;
}

/*
 * Sends every message that did not become a live order to the dead letters, at
 * least once (a redelivered batch sends its dead letters again). 0 or -1.
 */
static int
dead_letters(struct app *app, const struct batch *b)
{
	struct fs_kafka_msg dl[BATCH_MAX];
	size_t n = 0;
	enum fs_kafka_delivery d;
	char err[256];

	for (size_t i = 0; i < b->n; i++) {
		const char *reason = dead_letter_reason(b, i);

		if (reason == NULL)
			continue;
		/* The letter as it came, its headers (the MAC, if any) with it, and why. */
		memset(&dl[n], 0, sizeof(dl[n]));
		dl[n].key = b->msg[i]->key;
		dl[n].keylen = b->msg[i]->key_len;
		dl[n].value = b->msg[i]->payload;
		dl[n].len = b->msg[i]->len;
		dl[n].headers_of = b->msg[i];
		dl[n].header[0] = (struct fs_kafka_header){ "reason", reason };
		n++;
	}
	if ((d = fs_ordertopic_dead_letters(&app->topic, dl, n, err, sizeof(err))) !=
	    FS_KAFKA_DELIVERED) {
		fs_log_warn("dead letters not delivered (%s); will retry", err);
		return -1;
	}
	fs_metrics_add(FS_M_ORDERS_DEAD_LETTERED, n);
	return 0;
}

/* Tells Redis what the database decided (see settle.h). 0, or -1 to retry. */
static int
settle(struct app *app, const struct batch *b)
{
	const struct fs_order *orders[BATCH_MAX];
	struct fs_settle_counts counts = { 0, 0 };
	size_t n = 0;

	for (size_t i = 0; i < b->n; i++)
		if (b->verdict[i] == FS_ORDERTOPIC_OK)
			orders[n++] = &b->order[i];
	if (fs_settle_holds(app->stores.stock, orders, n, &counts) != 0) {
		fs_log_warn("%s; will retry", app->stores.stock->errstr);
		return -1;
	}
	return 0;
}

/*
 * Starts pushing the status of every order recorded by this batch, in the
 * background (best effort; finish_batch waits for it).
 */
static void
push_statuses(struct app *app, struct batch *b)
{
	const struct fs_order *recorded[BATCH_MAX];
	size_t n = 0, failed;

	for (size_t i = 0; i < b->n; i++) {
		const struct fs_order *o = &b->order[i];

		if (b->verdict[i] == FS_ORDERTOPIC_OK && !o->duplicate &&
		    o->status != FS_ORDER_REJECTED)
			recorded[n++] = o;
	}
	if ((failed = fs_orders_publish_start(app->stores.push, recorded, n)) > 0)
		fs_log_warn("%zu of %zu status pushes failed (%s)", failed, n,
		    app->stores.push->errstr);
	app->pushing = b;
}

/* The counter of each way a message fails to prove where it came from. */
static const enum fs_metric unauthenticated_metric[FS_ORDERTOPIC_VERDICT__MAX] = {
	[FS_ORDERTOPIC_NO_MAC] = FS_M_ORDERS_NO_MAC,
	[FS_ORDERTOPIC_UNKNOWN_KEY] = FS_M_ORDERS_UNKNOWN_KEY,
	[FS_ORDERTOPIC_BAD_MAC] = FS_M_ORDERS_BAD_MAC,
};

static void
count(struct app *app, const struct batch *b)
{
	struct counts *c = &app->total;

	c->batches++;
	fs_metrics_count(FS_M_CONSUMER_BATCHES);
	for (size_t i = 0; i < b->n; i++) {
		const struct fs_order *o = &b->order[i];
		enum fs_metric m;

		c->messages++;
		if (b->verdict[i] == FS_ORDERTOPIC_MALFORMED) {
			c->malformed++;
			m = FS_M_ORDERS_MALFORMED;
		} else if (b->verdict[i] != FS_ORDERTOPIC_OK) {
			c->unauthenticated++;
			m = unauthenticated_metric[b->verdict[i]];
		} else if (o->duplicate) {
			c->duplicates++;
			m = FS_M_ORDERS_DUPLICATE;
		} else if (o->status == FS_ORDER_PENDING) {
			c->pending++;
			m = FS_M_ORDERS_RECORDED;
		} else if (o->status == FS_ORDER_REJECTED) {
			c->rejected++;
			m = FS_M_ORDERS_REFUSED;
		} else {
			c->failed++;
			m = FS_M_ORDERS_FAILED;
		}
		fs_metrics_count(m);
	}
}

/*
 * One pass over the batch: record it (the orders, then the dead letters of
 * those that cannot be), settle the holds. 0 when every effect is done,
 * -1 to run it again.
 */
static int
process(struct app *app, struct batch *b)
{
	if (record(app, b) != 0 || dead_letters(app, b) != 0 || settle(app, b) != 0)
		return -1;
	return 0;
}

/*
 * Runs the batch until it is done, backing off between tries. Returns -1
 * when a stop signal came first: the batch is abandoned uncommitted, and
 * whoever reads the partitions next records it.
 */
static int
process_until_done(struct app *app, struct batch *b)
{
	long backoff = BACKOFF_MIN_MS;

	while (process(app, b) != 0) {
		if (stopping)
			return -1;
		fs_metrics_count(FS_M_CONSUMER_BATCH_RETRIES);
		pause_ms(backoff);
		backoff = backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff * 2;
	}
	return 0;
}

/*
 * Waits for the pushes of the batch that is out, then commits its offsets:
 * every effect of it is done.
 */
static void
finish_batch(struct app *app)
{
	struct batch *b = app->pushing;
	size_t failed;

	if (b == NULL)
		return;
	if ((failed = fs_push_finish(app->stores.push)) > 0)
		fs_log_warn("%zu status pushes failed (%s)", failed, app->stores.push->errstr);
	if (fs_kafka_consumer_commit(app->consumer, b->msg, b->n) != 0) {
		/* Harmless: whoever reads these again finds them recorded. */
		fs_metrics_count(FS_M_KAFKA_CONSUMER_ERRORS);
		fs_log_warn("%s", app->consumer->errstr);
	}
	count(app, b);
	release_batch(b);
	app->pushing = NULL;
	app->last_ms = fs_clock_mono_ms();
}

static int
run(struct app *app)
{
	int64_t started = fs_clock_mono_ms(), assign_deadline = fs_clock_mono_ms() + ASSIGN_WAIT_S * 1000;
	int64_t last_report = fs_clock_mono_ms(), first_ms = 0;

	while (!stopping) {
		/* The batch that is not out being pushed. */
		struct batch *b = app->pushing == &app->batch[0] ? &app->batch[1] : &app->batch[0];

		collect(app, b);
		if (b->n > 0 && first_ms == 0)
			first_ms = fs_clock_mono_ms();
		if (b->n == 0) {
			finish_batch(app);
			if (app->drain && fs_kafka_consumer_caught_up(app->consumer))
				break;
			if (app->drain && fs_clock_mono_ms() > assign_deadline && app->total.messages == 0 &&
			    !fs_kafka_consumer_caught_up(app->consumer)) {
				fs_log_error("--drain: no partitions read to their end within %d s",
				    ASSIGN_WAIT_S);
				return -1;
			}
			continue;
		}
		if (process_until_done(app, b) != 0) {
			release_batch(b);
			break;
		}
		finish_batch(app);
		push_statuses(app, b);
		if (fs_clock_mono_ms() - last_report >= 10000) {
			fs_log_info("%lu messages: %lu pending, %lu failed, %lu duplicates, %lu malformed, "
				    "%lu unauthenticated",
			    app->total.messages, app->total.pending, app->total.failed,
			    app->total.duplicates, app->total.malformed, app->total.unauthenticated);
			last_report = fs_clock_mono_ms();
		}
	}
	finish_batch(app);
	if (app->drain) {
		/* seconds: the whole run; busySeconds: first message to last commit. */
		printf("{\"messages\":%lu,\"pending\":%lu,\"failed\":%lu,\"rejected\":%lu,"
		       "\"duplicates\":%lu,\"malformed\":%lu,\"unauthenticated\":%lu,\"batches\":%lu,"
		       "\"seconds\":%.3f,\"busySeconds\":%.3f}\n",
		    app->total.messages, app->total.pending, app->total.failed, app->total.rejected,
		    app->total.duplicates, app->total.malformed, app->total.unauthenticated,
		    app->total.batches,
		    (double)(fs_clock_mono_ms() - started) / 1000.0,
		    (double)(app->last_ms - first_ms) / 1000.0);
	}
	return 0;
}

static int
setup(struct app *app)
{
	char err[512];

	if (fs_cfg_load(&app->cfg, FS_CFG_NEED(FS_CFG_REDIS) | FS_CFG_NEED(FS_CFG_PG) |
		    FS_CFG_NEED(FS_CFG_KAFKA_BROKERS)) != 0) {
		fs_log_error("%s", app->cfg.errstr);
		return -1;
	}
	if (fs_ordertopic_init(&app->topic, fs_cfg_get(&app->cfg, FS_CFG_KAFKA_BROKERS),
		fs_cfg_get(&app->cfg, FS_CFG_KAFKA_TOPIC), err, sizeof(err)) != 0) {
		fs_log_error("%s", err);
		return -1;
	}
	if (fs_keys_load_orders(&app->cfg, &app->topic, err, sizeof(err)) != 0) {
		fs_log_error("order keys: %s", err);
		return -1;
	}
	if (fs_stores_open(&app->stores, &app->cfg, err, sizeof(err)) != 0) {
		fs_log_error("%s", err);
		return -1;
	}
	if (fs_ordertopic_open_producer(&app->topic, 10000, 5, err, sizeof(err)) != 0) {
		fs_log_error("kafka producer: %s", err);
		return -1;
	}
	if ((app->consumer = fs_ordertopic_subscribe(&app->topic, app->drain, err, sizeof(err))) ==
	    NULL) {
		fs_log_error("kafka consumer: %s", err);
		return -1;
	}
	return 0;
}

static void
teardown(struct app *app)
{
	fs_kafka_consumer_free(app->consumer);
	fs_ordertopic_close(&app->topic);
	fs_stores_close(&app->stores);
}

/* --lag: the group's backlog, for operators and the tests' "at rest". */
static int
print_lag(void)
{
	struct fs_cfg cfg;
	fs_ordertopic topic;
	char err[512];
	long long lag;

	if (fs_cfg_load(&cfg, FS_CFG_NEED(FS_CFG_KAFKA_BROKERS)) != 0) {
		fs_log_error("%s", cfg.errstr);
		return 1;
	}
	if (fs_ordertopic_init(&topic, fs_cfg_get(&cfg, FS_CFG_KAFKA_BROKERS),
		fs_cfg_get(&cfg, FS_CFG_KAFKA_TOPIC), err, sizeof(err)) != 0 ||
	    (lag = fs_ordertopic_lag(&topic, 5000, err, sizeof(err))) < 0) {
		fs_log_error("%s", err);
		return 1;
	}
	printf("%lld\n", lag);
	return 0;
}

int
main(int argc, char **argv)
{
	static struct app app;
	struct sigaction sa;
	int rc = 1;

	fs_log_init("flashsale-consumer");
	if (argc == 2 && strcmp(argv[1], "--lag") == 0)
		return print_lag();
	if (argc == 2 && strcmp(argv[1], "--drain") == 0) {
		app.drain = 1;
	} else if (argc != 1) {
		fprintf(stderr, "usage: flashsale-consumer [--drain | --lag]\n");
		return 2;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);

	fs_metrics_open("flashsale-consumer");
	if (setup(&app) == 0) {
		fs_log_info("consuming %s as group %s%s", app.topic.topic, FS_ORDERTOPIC_GROUP,
		    app.drain ? " until caught up" : "");
		rc = run(&app) == 0 ? 0 : 1;
		fs_log_info("stopping after %lu messages", app.total.messages);
	}
	teardown(&app);
	return rc;
}

/*
 * flashsale-metrics: GET /metrics, for operators on the origin only.
 *
 * Sums the counters of every process of every program on this host (the
 * blocks in FLASHSALE_METRICS_DIR, see lib/metrics.h) and the answers
 * nginx gave without a handler, then asks the stores what no process
 * counts: the consumer group's backlog in Kafka, and in PostgreSQL the
 * PENDING orders past their expiry and the refunds owed (those that keep
 * failing too), and each push server how full its memory is. Prometheus
 * text format 0.0.4.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "cfg.h"
#include "fcgi.h"
#include "kafka.h"
#include "ordertopic.h"
#include "log.h"
#include "metrics.h"
#include "orders.h"
#include "payments.h"
#include "pg.h"
#include "push.h"

/* The text is a few tens of kilobytes; more means something is wrong. */
#define TEXT_MAX (1024 * 1024)
#define LAG_TIMEOUT_MS 2000

struct app {
	struct fs_cfg cfg;
	const char *dir; /* FLASHSALE_METRICS_DIR, read by lib/metrics too */
	fs_pg *pg;	 /* NULL without FLASHSALE_PG */
	fs_push *push;	 /* the push servers' publishers; NULL without FLASHSALE_NCHAN_PUB */
};

/*
 * How full each push server's memory is (its nchan_stub_status): a push
 * refused for want of memory is counted where it happens
 * (flashsale_push_messages_total{result="refused"}); this says how near
 * that is. A server that does not answer is left out, with a warning.
 */
static void
write_push_gauges(struct app *app, FILE *out)
{
	struct fs_push_memory m[FS_PUSH_TARGETS_MAX];
	char where[FS_PUSH_TARGETS_MAX][128];
	int n = 0, any = 0;

	for (fs_push *p = app->push; p != NULL && n < FS_PUSH_TARGETS_MAX; p = p->next, n++) {
		fs_push_where(p, where[n], sizeof(where[n]));
		if (fs_push_memory_of(p, &m[n]) != 0) {
			fs_log_warn("push server %s: %s", where[n], p->errstr);
			m[n].limit = -1;
			continue;
		}
		any = 1;
	}
	if (!any)
		return;
	fprintf(out, "# HELP flashsale_push_memory_bytes The push server's shared memory (nchan): used, "
		     "and its limit (nchan_max_reserved_memory).\n"
		     "# TYPE flashsale_push_memory_bytes gauge\n");
	for (int i = 0; i < n; i++)
		if (m[i].limit > 0)
			fprintf(out,
			    "flashsale_push_memory_bytes{publisher=\"%s\",kind=\"used\"} %lld\n"
			    "flashsale_push_memory_bytes{publisher=\"%s\",kind=\"limit\"} %lld\n",
			    where[i], m[i].used, where[i], m[i].limit);
	fprintf(out, "# HELP flashsale_push_stored_messages Order statuses the push server keeps.\n"
		     "# TYPE flashsale_push_stored_messages gauge\n");
	for (int i = 0; i < n; i++)
		if (m[i].limit > 0)
			fprintf(out, "flashsale_push_stored_messages{publisher=\"%s\"} %lld\n", where[i],
			    m[i].stored);
}

/* Gauges asked of the stores at scrape time; a store that does not answer is up 0. */
static void
write_store_gauges(struct app *app, FILE *out)
{
	const char *brokers = fs_cfg_get(&app->cfg, FS_CFG_KAFKA_BROKERS);
	char err[256];
	long long lag = -1;
	long overdue = 0, owed = 0, failing = 0;
	double oldest = 0;
	int pg_up = 0, sync;

	if (brokers[0] != '\0' &&
	    (lag = fs_kafka_group_lag(brokers, FS_ORDERTOPIC_GROUP, fs_cfg_get(&app->cfg, FS_CFG_KAFKA_TOPIC),
		 LAG_TIMEOUT_MS, err, sizeof(err))) < 0)
		fs_log_warn("consumer lag: %s", err);
	if (app->pg != NULL) {
		if (fs_orders_overdue(app->pg, &overdue, &oldest) == FS_ORDERS_OK &&
		    fs_payments_refunds_owed(app->pg, 0, fs_cfg_long(&app->cfg, FS_CFG_REFUND_ALERT_AFTER),
			NULL, 0, &owed, &failing) == FS_PAYMENTS_OK)
			pg_up = 1;
		else
			fs_log_warn("overdue orders, refunds owed: %s", app->pg->errstr);
	}
	fprintf(out, "# HELP flashsale_store_up Whether a store answered this scrape's question.\n"
		     "# TYPE flashsale_store_up gauge\n");
	if (brokers[0] != '\0')
		fprintf(out, "flashsale_store_up{store=\"kafka\"} %d\n", lag >= 0);
	if (app->pg != NULL)
		fprintf(out, "flashsale_store_up{store=\"postgresql\"} %d\n", pg_up);
	/* Several hosts: a primary and its standby, whose absence is news. */
	if (pg_up && fs_pg_hosts(app->pg) > 1 && (sync = fs_pg_synchronous(app->pg)) >= 0)
		fprintf(out,
		    "# HELP flashsale_pg_synchronous Whether PostgreSQL's commits wait for a synchronous standby (0: the primary is alone).\n"
		    "# TYPE flashsale_pg_synchronous gauge\n"
		    "flashsale_pg_synchronous %d\n",
		    sync);
	if (lag >= 0)
		fprintf(out,
		    "# HELP flashsale_consumer_lag_messages Order messages the consumer group has not committed.\n"
		    "# TYPE flashsale_consumer_lag_messages gauge\n"
		    "flashsale_consumer_lag_messages %lld\n",
		    lag);
	if (pg_up)
		fprintf(out,
		    "# HELP flashsale_orders_overdue PENDING orders past their expiry (the expiry has not run).\n"
		    "# TYPE flashsale_orders_overdue gauge\n"
		    "flashsale_orders_overdue %ld\n"
		    "# HELP flashsale_orders_overdue_seconds How long the oldest overdue PENDING order is past its expiry.\n"
		    "# TYPE flashsale_orders_overdue_seconds gauge\n"
		    "flashsale_orders_overdue_seconds %.3f\n"
		    "# HELP flashsale_refunds_owed Late payments whose refund the provider has not made yet.\n"
		    "# TYPE flashsale_refunds_owed gauge\n"
		    "flashsale_refunds_owed %ld\n"
		    "# HELP flashsale_refunds_failing Refunds owed that failed FLASHSALE_REFUND_ALERT_AFTER times or more.\n"
		    "# TYPE flashsale_refunds_failing gauge\n"
		    "flashsale_refunds_failing %ld\n",
		    overdue, oldest, owed, failing);
}

static void
handle(fs_fcgi *fcgi, void *arg)
{
	struct app *app = arg;
	char *text = NULL, err[256];
	size_t len = 0;
	FILE *out;
	int rc;

	if (!fs_fcgi_method_is(fcgi, "GET") && !fs_fcgi_method_is(fcgi, "HEAD")) {
		fs_fcgi_error(fcgi, FS_ERR_METHOD_NOT_ALLOWED, NULL, "Allow: GET, HEAD\r\n");
		return;
	}
	if ((out = open_memstream(&text, &len)) == NULL) {
		fs_fcgi_error(fcgi, FS_ERR_INTERNAL, NULL, NULL);
		return;
	}
	rc = fs_metrics_write(app->dir, out, err, sizeof(err));
	if (rc == 0) {
		write_store_gauges(app, out);
		write_push_gauges(app, out);
	}
	if (fclose(out) != 0 || rc != 0 || len > TEXT_MAX) {
		fs_log_error("metrics: %s", rc != 0 ? err : "text too long");
		fs_fcgi_error(fcgi, FS_ERR_INTERNAL, NULL, NULL);
	} else {
		fs_fcgi_answer_typed(fcgi, FS_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", text,
		    len);
	}
	free(text);
}

static int
setup(void *arg)
{
	struct app *app = arg;
	char err[256];

	if (fs_cfg_load(&app->cfg, 0) != 0) {
		fs_log_error("%s", app->cfg.errstr);
		return -1;
	}
	if ((app->dir = getenv("FLASHSALE_METRICS_DIR")) == NULL || app->dir[0] == '\0') {
		fs_log_error("FLASHSALE_METRICS_DIR is required: the directory of the counter blocks");
		return -1;
	}
	if (fs_cfg_get(&app->cfg, FS_CFG_PG)[0] != '\0' &&
	    (app->pg = fs_pg_new(fs_cfg_get(&app->cfg, FS_CFG_PG))) == NULL) {
		fs_log_error("FLASHSALE_PG too long");
		return -1;
	}
	if (fs_cfg_get(&app->cfg, FS_CFG_NCHAN_PUB)[0] != '\0' &&
	    (app->push = fs_push_new(fs_cfg_get(&app->cfg, FS_CFG_NCHAN_PUB), err, sizeof(err))) == NULL) {
		fs_log_error("FLASHSALE_NCHAN_PUB: %s", err);
		return -1;
	}
	return 1;
}

static void
teardown(void *arg)
{
	struct app *app = arg;

	fs_pg_free(app->pg);
	fs_push_free(app->push);
}

int
main(void)
{
	static const struct fs_fcgi_service service = {
		"flashsale-metrics", setup, teardown, NULL, NULL, handle, NULL, 0, NULL
	};
	static struct app app;

	return fs_fcgi_serve(&service, &app);
}

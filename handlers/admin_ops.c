/*
 * flashsale-admin's operations: kafka topics, config, reconcile (and its
 * --repair), dlq replay. The rules live in lib/ordertopic, lib/cfg,
 * lib/reconcile, lib/payments and lib/dlq.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin.h"
#include "dlq.h"
#include "keys.h"
#include "metrics.h"
#include "ordertopic.h"
#include "payments.h"
#include "reconcile.h"
#include "route.h"

/*
 * The environment's order topic handed to op (create its topics, grant
 * the principals' ACLs) into *topic: 0, or 1 once the failure is said.
 */
static int
kafka_op(fs_ordertopic *topic, int (*op)(const fs_ordertopic *, char *, size_t))
{
	struct fs_cfg cfg;
	char err[256];

	if (admin_load_cfg(&cfg, FS_CFG_NEED(FS_CFG_KAFKA_BROKERS)) != 0)
		return 1;
	if (fs_ordertopic_init(topic, fs_cfg_get(&cfg, FS_CFG_KAFKA_BROKERS),
		fs_cfg_get(&cfg, FS_CFG_KAFKA_TOPIC), err, sizeof(err)) != 0 ||
	    op(topic, err, sizeof(err)) != 0)
		return admin_fail("%s", err);
	return 0;
}

/* The order topic (8 partitions, keyed by item) and its dead letters (1). */
int
admin_kafka_topics(int argc, char **argv)
{
	fs_ordertopic topic;

	(void)argc;
	(void)argv;
	if (kafka_op(&topic, fs_ordertopic_create) != 0)
		return 1;
	printf("topics %s (%d partitions) and %s (%d) exist\n", topic.topic,
	    FS_ORDERTOPIC_PARTITIONS, topic.dlq, FS_ORDERTOPIC_DLQ_PARTITIONS);
	return 0;
}

/* Each job's principal its ACLs on the topics, the group and the cluster. */
int
admin_kafka_grants(int argc, char **argv)
{
	fs_ordertopic topic;

	(void)argc;
	(void)argv;
	if (kafka_op(&topic, fs_ordertopic_grant) != 0)
		return 1;
	printf("ACLs granted: %s, %s, %s, %s\n", FS_ORDERTOPIC_USER_PURCHASE,
	    FS_ORDERTOPIC_USER_CONSUMER, FS_ORDERTOPIC_USER_MONITOR, FS_ORDERTOPIC_USER_REPLAYER);
	return 0;
}

/* The table of settings; then the environment's values are checked (exit 1 when wrong). */
int
admin_config(int argc, char **argv)
{
	struct fs_cfg cfg;

	(void)argc;
	(void)argv;
	for (int k = 0; k < FS_CFG__MAX; k++)
		printf("%-28s %-22s %s\n", fs_cfg_name((enum fs_cfg_key)k),
		    fs_cfg_default((enum fs_cfg_key)k) == NULL ? "(required)" :
		    *fs_cfg_default((enum fs_cfg_key)k) == '\0' ? "(empty)" :
								 fs_cfg_default((enum fs_cfg_key)k),
		    fs_cfg_meaning((enum fs_cfg_key)k));
	return admin_load_cfg(&cfg, 0);
}

/* Tells the operator why the repair waits. */
static void
print_waiting(void *arg, long up)
{
	(void)arg;
	printf("Redis started %lds ago: waiting for the purchases it may have missed\n", up);
	fflush(stdout);
}

static void
print_repaired(void *arg, uint64_t sale, const struct fs_sales_warm_report *rep)
{
	(void)arg;
	admin_print_warm(sale, "repaired", rep);
}

/*
 * reconcile --repair: each sale rebuilt in Redis from PostgreSQL and the
 * orders on their way (the rule: lib/reconcile), after a Redis crash.
 */
static int
repair(const struct fs_cfg *cfg, fs_pg *pg, fs_stock *r, const uint64_t *sales, int n, int all)
{
	struct fs_order *pending = NULL;
	int64_t inflight = admin_inflight_ms(cfg);
	size_t npending = 0;
	char err[640];
	int rc = -1;

	if (fs_reconcile_repair_wait(r, inflight, print_waiting, NULL) != 0) {
		admin_fail("redis: %s", r->errstr);
		return -1;
	}
	if (admin_on_their_way(cfg, all ? 0 : sales[0], &pending, &npending) != 0)
		return -1;
	if (fs_reconcile_repair(pg, r, sales, n, all, inflight, pending, npending, print_repaired, NULL,
		err, sizeof(err)) != 0)
		admin_fail("%s", err);
	else
		rc = 0;
	free(pending);
	return rc;
}

/* Prints a violation found by the checker. */
static void
print_violation(void *arg, const char *line)
{
	(void)arg;
	printf("VIOLATION %s\n", line);
}

/* The payment rules (lib/payments) are checked over every order, whatever the sale. */
static void
print_payment_violation(void *arg, const char *order, const char *problem)
{
	(void)arg;
	printf("VIOLATION order %s: %s\n", order, problem);
}

int
admin_reconcile(int argc, char **argv)
{
	struct fs_reconcile_summary sum;
	struct admin_stores st;
	fs_pg *pg;
	fs_stock *r;
	uint64_t *sales = NULL;
	char err[512];
	int n = 0, check = argc == 2 && strcmp(argv[1], "--check") == 0, rc = 1, bad = 0;
	size_t npay = 0;
	int fix = argc == 2 && strcmp(argv[1], "--repair") == 0;

	if (argc < 1 || argc > 2 || (argc == 2 && !check && !fix))
		return admin_fail("%s", "usage: reconcile SALE_ID|--all [--check|--repair]");
	memset(&st, 0, sizeof(st));
	if ((sales = calloc(FS_SALES_ITEMS_MAX * 100, sizeof(*sales))) == NULL)
		return admin_fail("%s", "out of memory");
	if (strcmp(argv[0], "--all") != 0) {
		if (fs_route_parse_id(argv[0], &sales[0]) != 0) {
			admin_fail("%s", "expected a sale id (a positive integer) or --all");
			goto out;
		}
		n = 1;
	}
	if (admin_stores_open(&st, 0) != 0)
		goto out;
	pg = st.st.pg;
	r = st.st.stock;
	if (n == 0 && (n = fs_reconcile_all_sales(pg, sales, FS_SALES_ITEMS_MAX * 100, err, sizeof(err))) < 0) {
		admin_fail("%s", err);
		goto out;
	}
	if (fix && repair(&st.cfg, pg, r, sales, n, strcmp(argv[0], "--all") == 0) != 0)
		goto out;
	for (int i = 0; i < n; i++) {
		int v = fs_reconcile_sale(pg, r, sales[i], print_violation, NULL, &sum, err, sizeof(err));

		if (v < 0) {
			admin_fail("sale %" PRIu64 ": %s", sales[i], err);
			goto out;
		}
		bad += v;
		printf("sale %" PRIu64 ": %s (%ld items, %ld live orders, %ld holds, %ld unconfirmed%s)\n",
		    sales[i], v == 0 ? "ok" : "VIOLATED", sum.items, sum.live, sum.holds, sum.unconfirmed,
		    sum.cleared ? ", over: cleared from Redis" : sum.in_redis ? "" : ", not in Redis");
	}
	if (fs_payments_check(pg, print_payment_violation, NULL, &npay) != FS_PAYMENTS_OK) {
		admin_fail("payments: %s", pg->errstr);
		goto out;
	}
	printf("payments: %s (%zu violations)\n", npay == 0 ? "ok" : "VIOLATED", npay);
	bad += (int)npay;
	printf("%d sales checked, %d violations\n", n, bad);
	/* Counted for the alert on violations (GET /metrics). */
	fs_metrics_open("flashsale-admin");
	fs_metrics_count(FS_M_RECONCILE_RUNS);
	fs_metrics_add(FS_M_RECONCILE_VIOLATIONS, (uint64_t)bad);
	rc = (check || fix) && bad > 0 ? 1 : 0;
out:
	free(sales);
	admin_stores_close(&st);
	return rc;
}

static void
print_letter(void *arg, const struct fs_dlq_entry *e)
{
	const char *id = e->order.id[0] != '\0' ? e->order.id : "-";

	(void)arg;
	if (e->verdict == FS_DLQ_OTHER_SALE)
		return;
	if (e->detail[0] == '\0')
		printf("%-36s %-12s %s\n", id, e->reason, fs_dlq_verdict_name(e->verdict));
	else
		printf("%-36s %-12s %-13s %s\n", id, e->reason, fs_dlq_verdict_name(e->verdict),
		    e->detail);
}

int
admin_dlq_replay(int argc, char **argv)
{
	fs_ordertopic topic = { 0 };
	struct fs_dlq_summary sum;
	struct admin_stores st;
	uint64_t sale = 0;
	char err[512];
	int rc = 1;

	if (argc == 2 && strcmp(argv[0], "--sale") == 0) {
		if (fs_route_parse_id(argv[1], &sale) != 0)
			return admin_fail("%s", "--sale wants a sale id (a positive integer)");
	} else if (argc != 0) {
		return admin_fail("%s", "usage: flashsale-admin dlq replay [--sale SALE_ID]");
	}
	if (admin_stores_open(&st, FS_CFG_NEED(FS_CFG_KAFKA_BROKERS)) != 0)
		goto out;
	/* The order keys check each letter's MAC and sign what is replayed. */
	if (fs_ordertopic_init(&topic, fs_cfg_get(&st.cfg, FS_CFG_KAFKA_BROKERS),
		fs_cfg_get(&st.cfg, FS_CFG_KAFKA_TOPIC), err, sizeof(err)) != 0 ||
	    fs_keys_load_orders(&st.cfg, &topic, err, sizeof(err)) != 0 ||
	    fs_ordertopic_open_producer(&topic, 10000, 5, err, sizeof(err)) != 0) {
		admin_fail("%s", err);
		goto out;
	}
	if (fs_dlq_replay(st.st.pg, st.st.stock, &topic, sale, print_letter, NULL, &sum, err,
		sizeof(err)) != 0) {
		admin_fail("%s", err);
		goto out;
	}
	/* "dead letters: 3 (replayed 1, sold-out 2)", those of other sales left out. */
	printf("dead letters: %ld (", sum.letters - sum.count[FS_DLQ_OTHER_SALE]);
	for (int v = 0, first = 1; v < FS_DLQ__MAX; v++) {
		if (v == FS_DLQ_OTHER_SALE || sum.count[v] == 0)
			continue;
		printf("%s%s %ld", first ? "" : ", ", fs_dlq_verdict_name((enum fs_dlq_verdict)v),
		    sum.count[v]);
		first = 0;
	}
	printf(")\n");
	/* Something to try again: a script must notice. */
	rc = sum.count[FS_DLQ_NOT_DELIVERED] > 0;
out:
	fs_ordertopic_close(&topic);
	admin_stores_close(&st);
	return rc;
}

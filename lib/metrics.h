/*
 * Counters of what every program does, in one small shared-memory block per
 * process: $FLASHSALE_METRICS_DIR/<program>.<pid>.metrics, mapped into the
 * process and bumped with relaxed atomic adds (a few nanoseconds, no lock,
 * no system call). One reader (flashsale-metrics, GET /metrics) sums the
 * blocks of every process on the host per program and writes them in the
 * Prometheus text format. A process holds a shared flock on its block for
 * its life; the reader folds the blocks of dead processes into one
 * retired.<program>.metrics file per program, so counters survive restarts
 * and one-shot runs (cron) leave no trail of files. Without the directory
 * the counters live in process memory only.
 */
#ifndef FS_METRICS_H
#define FS_METRICS_H

#include <stdint.h>
#include <stdio.h>

/* Counters (monotonic) and gauges (the value now; live processes only). */
enum fs_metric {
	FS_M_PURCHASE_SOLD_OUT_MEMORY,
	FS_M_PURCHASE_SOLD_OUT_REDIS,
	FS_M_PURCHASE_SALE_MISSING,
	FS_M_PURCHASE_REPUBLISHED,
	FS_M_PURCHASE_RESERVE_ROUNDS,
	FS_M_PURCHASE_STAGE_QUEUED_US,
	FS_M_PURCHASE_STAGE_REDIS_US,
	FS_M_PURCHASE_STAGE_BROKER_US,
	FS_M_PURCHASE_STAGE_ANSWER_US,
	FS_M_PURCHASE_STAGED,
	FS_M_SOLDOUT_SUBSCRIPTIONS,
	FS_M_SOLDOUT_SILENCES,
	FS_M_SOLDOUT_HEALED,
	FS_M_REDIS_ERRORS,
	FS_M_REDIS_RECONNECTS,
	FS_M_KAFKA_DELIVERED,
	FS_M_KAFKA_NOT_DELIVERED,
	FS_M_KAFKA_MAYBE_DELIVERED,
	FS_M_KAFKA_PRODUCER_RESTARTS,
	FS_M_KAFKA_PRODUCE_REQUESTS,
	FS_M_KAFKA_QUEUE_WAIT_US,
	FS_M_KAFKA_QUEUE_WAITS,
	FS_M_KAFKA_BROKER_RTT_US,
	FS_M_KAFKA_BROKER_RTTS,
	FS_M_KAFKA_CONSUMER_ERRORS,
	FS_M_PG_ERRORS,
	FS_M_PG_RECONNECTS,
	FS_M_CONSUMER_BATCHES,
	FS_M_CONSUMER_BATCH_RETRIES,
	FS_M_ORDERS_RECORDED,
	FS_M_ORDERS_REFUSED,
	FS_M_ORDERS_FAILED,
	FS_M_ORDERS_DUPLICATE,
	FS_M_ORDERS_MALFORMED,
	FS_M_ORDERS_NO_MAC,
	FS_M_ORDERS_UNKNOWN_KEY,
	FS_M_ORDERS_BAD_MAC,
	FS_M_ORDERS_DEAD_LETTERED,
	FS_M_EXPIRY_RUNS,
	FS_M_EXPIRY_FAILURES,
	FS_M_ORDERS_EXPIRED,
	FS_M_UNITS_RELEASED,
	FS_M_RESERVED_ELSEWHERE,
	FS_M_GHOSTS_SWEPT,
	FS_M_PUSH_SENT,
	FS_M_PUSH_FAILED,
	FS_M_PUSH_REFUSED,
	FS_M_QUEUE_JOINS_NEW,
	FS_M_QUEUE_JOINS_AGAIN,
	FS_M_QUEUE_JOIN_ROUNDS,
	FS_M_QUEUE_PASSES_ISSUED,
	FS_M_QUEUE_PASSES_AGAIN,
	FS_M_QUEUE_REFUSED_UNAUTHENTICATED,
	FS_M_QUEUE_REFUSED_BAD_REQUEST,
	FS_M_QUEUE_REFUSED_BAD_POW,
	FS_M_QUEUE_REFUSED_NO_QUEUE,
	FS_M_QUEUE_REFUSED_NOT_OPEN,
	FS_M_QUEUE_REFUSED_CLOSED,
	FS_M_QUEUE_REFUSED_BAD_TICKET,
	FS_M_QUEUE_REFUSED_NOT_IN_QUEUE,
	FS_M_QUEUE_REFUSED_NOT_YET,
	FS_M_QUEUE_REFUSED_SOLD_OUT,
	FS_M_QUEUE_REFUSED_LAPSED,
	FS_M_QUEUE_SALE_READS,
	FS_M_RECONCILE_RUNS,
	FS_M_RECONCILE_VIOLATIONS,
	FS_M_REFUND_FAILURES,
	FS_M_REFUNDS_RETRIED,
	FS_M_REFUNDS_RETRIED_MADE,
	FS_M_GAUGE_FIRST_,
	FS_M_WORKERS_BUSY = FS_M_GAUGE_FIRST_,
	FS_M_WORKERS,
	FS_M__MAX
};

/* Upper bounds of the request duration histogram, in microseconds (+Inf follows). */
#define FS_METRICS_BUCKETS 15

/*
 * Maps this process's block (program names it; at most 31 characters of
 * [a-z0-9-]) in FLASHSALE_METRICS_DIR (read here, like FLASHSALE_LOG_LEVEL
 * by lib/log: every program counts, whatever it configures). Without it, or when the file cannot be
 * made, counting goes to process memory and this returns -1 (a warning is
 * logged): counting never fails.
 */
int fs_metrics_open(const char *program);
/* Adds 1 (or n) to a counter; sets a gauge. */
void fs_metrics_count(enum fs_metric);
void fs_metrics_add(enum fs_metric, uint64_t n);
void fs_metrics_gauge_add(enum fs_metric, int64_t delta);
void fs_metrics_gauge_set(enum fs_metric, int64_t value);
/* One answer with this HTTP status code (100-599) and how long it took. */
void fs_metrics_answer(int code);
void fs_metrics_request_done(uint64_t duration_ns);
/* A counter of this process (tests). */
uint64_t fs_metrics_value(enum fs_metric);

/*
 * Writes every program's sums found in dir, and the answers nginx and the
 * edge counted in dir/<by>-<answer>.ticks, in the Prometheus text format.
 * 0, or -1 with err set (dir unreadable).
 */
int fs_metrics_write(const char *dir, FILE *out, char *err, size_t errlen);

#endif

#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "metrics.h"

#define MAGIC "fsmet01"
#define PROGRAM_MAX 32
#define CODE_MIN 100
#define CODE_MAX 600
#define PROGRAMS_MAX 64
#define SUFFIX ".metrics"
#define TICKS ".ticks"
/* Bytes per line of a ticks file: one character and a newline. */
#define TICK_LINE 2

/* Changes whenever the block's shape does; blocks of another shape are skipped. */
#define LAYOUT ((uint32_t)FS_M__MAX << 16 | (uint32_t)FS_METRICS_BUCKETS << 8 | 1u)

struct block {
	char magic[8];
	uint32_t layout;
	uint32_t pad;
	char program[PROGRAM_MAX];
	uint64_t v[FS_M__MAX];
	uint64_t answers[CODE_MAX - CODE_MIN];
	uint64_t buckets[FS_METRICS_BUCKETS + 1];
	uint64_t duration_sum_us;
};

static const uint64_t bucket_us[FS_METRICS_BUCKETS] = { 100, 250, 500, 1000, 2500, 5000, 10000,
	25000, 50000, 100000, 250000, 500000, 1000000, 2500000, 5000000 };

/*
 * One series: its family's name, its labels, the family's help, whether
 * it counts microseconds that are shown in seconds (the unit Prometheus
 * expects), and the program that shows it at 0 too, even before any
 * process of that program ran (an alert on its increase must see the 0
 * before the first count: Prometheus's increase() of a series that
 * appears at 1 is 0, and flashsale-admin's first reconcile may be the one
 * that finds a violation).
 */
static const struct {
	const char *name;
	const char *labels;
	const char *help;
	int us_as_seconds;
	const char *shown_at_zero_by;
} metric_table[FS_M__MAX] = {
	[FS_M_PURCHASE_SOLD_OUT_MEMORY] = { "flashsale_purchase_sold_out_total", "from=\"memory\"",
	    "Purchases the handler answered 410 SOLD_OUT, from its in-memory flag or from Redis." },
	[FS_M_PURCHASE_SOLD_OUT_REDIS] = { "flashsale_purchase_sold_out_total", "from=\"redis\"", NULL },
	[FS_M_PURCHASE_SALE_MISSING] = { "flashsale_purchase_sale_missing_total", NULL,
	    "Purchases answered 503 because Redis does not know a sale that their signed URL vouches "
	    "for: Redis lost its data; flashsale-admin reconcile --all --repair rebuilds it." },
	[FS_M_PURCHASE_REPUBLISHED] = { "flashsale_purchase_republished_total", NULL,
	    "Orders published again for a retry that met its shopper's hold while the broker was "
	    "not known to have them, and acknowledged: its 409 ALREADY_PURCHASED followed." },
	[FS_M_PURCHASE_RESERVE_ROUNDS] = { "flashsale_purchase_reserve_rounds_total", NULL,
	    "Redis pipelines of the purchase handler (one per loop round that admitted purchases): "
	    "purchases reserved per pipeline is how well concurrent purchases share a round trip." },
	[FS_M_PURCHASE_STAGE_QUEUED_US] = { "flashsale_purchase_stage_seconds_total",
	    "stage=\"queued\"",
	    "Seconds the purchase handler's 202 answers spent in each stage, summed: queued "
	    "(admitted, waiting for their loop's Redis pipeline), redis (the pipeline's round "
	    "trip, and a replica's acknowledgement where replicas must have the holds), broker (from the produce call to the delivery report: the producer's linger "
	    "and the broker's acknowledgement), answer (from the report to the answer on the "
	    "request's loop). Divided by flashsale_purchase_staged_total, the mean of each.", 1 },
	[FS_M_PURCHASE_STAGE_REDIS_US] = { "flashsale_purchase_stage_seconds_total",
	    "stage=\"redis\"", NULL, 1 },
	[FS_M_PURCHASE_STAGE_BROKER_US] = { "flashsale_purchase_stage_seconds_total",
	    "stage=\"broker\"", NULL, 1 },
	[FS_M_PURCHASE_STAGE_ANSWER_US] = { "flashsale_purchase_stage_seconds_total",
	    "stage=\"answer\"", NULL, 1 },
	[FS_M_PURCHASE_STAGED] = { "flashsale_purchase_staged_total", NULL,
	    "202 answers counted in flashsale_purchase_stage_seconds_total." },
	[FS_M_SOLDOUT_SUBSCRIPTIONS] = { "flashsale_soldout_listener_subscriptions_total", NULL,
	    "Subscriptions of the purchase handlers' restock listeners (one per process at its "
	    "start): each clears every sold-out flag and marker of its process, since restocks "
	    "may have gone by unheard, so more than one per process is nginx's sold-out fast "
	    "path lost until the next Redis answer." },
	[FS_M_SOLDOUT_SILENCES] = { "flashsale_soldout_listener_silences_total", NULL,
	    "Times a restock listener heard nothing from Redis, not even its PING's answer, "
	    "within 3 s, and subscribed again." },
	[FS_M_SOLDOUT_HEALED] = { "flashsale_soldout_healed_total", NULL,
	    "Sold-out flags (and markers) that the purchase handlers' recheck dropped because "
	    "Redis had a unit of the item again and no restock message had cleared them: "
	    "restock messages lost (or a few ms late)." },
	[FS_M_REDIS_ERRORS] = { "flashsale_redis_errors_total", NULL,
	    "Redis commands that failed (connection, timeout or error reply)." },
	[FS_M_REDIS_RECONNECTS] = { "flashsale_redis_reconnects_total", NULL,
	    "Redis connections dialled again after one was lost." },
	[FS_M_KAFKA_DELIVERED] = { "flashsale_kafka_deliveries_total", "outcome=\"delivered\"",
	    "Messages produced, by what the broker said: delivered, not delivered, maybe delivered." },
	[FS_M_KAFKA_NOT_DELIVERED] = { "flashsale_kafka_deliveries_total", "outcome=\"not_delivered\"",
	    NULL },
	[FS_M_KAFKA_MAYBE_DELIVERED] = { "flashsale_kafka_deliveries_total", "outcome=\"maybe\"", NULL },
	[FS_M_KAFKA_PRODUCER_RESTARTS] = { "flashsale_kafka_producer_restarts_total", NULL,
	    "Idempotent producers replaced after a fatal error." },
	[FS_M_KAFKA_PRODUCE_REQUESTS] = { "flashsale_kafka_produce_requests_total", NULL,
	    "Produce requests the producers sent to the brokers (librdkafka's statistics, each "
	    "second): messages delivered per request is how well concurrent orders batch." },
	[FS_M_KAFKA_QUEUE_WAIT_US] = { "flashsale_kafka_queue_wait_seconds_total", NULL,
	    "Seconds the produced messages waited in the producers' queues before their "
	    "request left (the linger): divided by flashsale_kafka_queue_waits_total, the mean.", 1 },
	[FS_M_KAFKA_QUEUE_WAITS] = { "flashsale_kafka_queue_waits_total", NULL,
	    "Messages counted in flashsale_kafka_queue_wait_seconds_total." },
	[FS_M_KAFKA_BROKER_RTT_US] = { "flashsale_kafka_broker_rtt_seconds_total", NULL,
	    "Seconds the brokers took to answer the producers' requests (round trips): "
	    "divided by flashsale_kafka_broker_rtts_total, the mean.", 1 },
	[FS_M_KAFKA_BROKER_RTTS] = { "flashsale_kafka_broker_rtts_total", NULL,
	    "Requests counted in flashsale_kafka_broker_rtt_seconds_total." },
	[FS_M_KAFKA_CONSUMER_ERRORS] = { "flashsale_kafka_consumer_errors_total", NULL,
	    "Errors the Kafka consumer reported while polling or committing." },
	[FS_M_PG_ERRORS] = { "flashsale_pg_errors_total", NULL,
	    "PostgreSQL statements or connections that failed." },
	[FS_M_PG_RECONNECTS] = { "flashsale_pg_reconnects_total", NULL,
	    "PostgreSQL connections opened again after one was lost." },
	[FS_M_CONSUMER_BATCHES] = { "flashsale_consumer_batches_total", NULL,
	    "Batches of order messages the consumer recorded and committed." },
	[FS_M_CONSUMER_BATCH_RETRIES] = { "flashsale_consumer_batch_retries_total", NULL,
	    "Batches run again after a failure (database, Redis, dead-letter topic)." },
	[FS_M_ORDERS_RECORDED] = { "flashsale_consumer_orders_total", "result=\"recorded\"",
	    "Order messages by result: recorded PENDING, refused by the database, failed, "
	    "duplicate, malformed." },
	[FS_M_ORDERS_REFUSED] = { "flashsale_consumer_orders_total", "result=\"refused\"", NULL },
	[FS_M_ORDERS_FAILED] = { "flashsale_consumer_orders_total", "result=\"failed\"", NULL },
	[FS_M_ORDERS_DUPLICATE] = { "flashsale_consumer_orders_total", "result=\"duplicate\"", NULL },
	[FS_M_ORDERS_MALFORMED] = { "flashsale_consumer_orders_total", "result=\"malformed\"", NULL },
	[FS_M_ORDERS_NO_MAC] = { "flashsale_consumer_unauthenticated_total", "reason=\"no_mac\"",
	    "Messages of the order topic that no holder of an order key made, by reason: no MAC, "
	    "an unknown key id, a MAC that does not check. Never an order; each a dead letter.", 0,
	    "flashsale-consumer" },
	[FS_M_ORDERS_UNKNOWN_KEY] = { "flashsale_consumer_unauthenticated_total",
	    "reason=\"unknown_key\"", NULL, 0, "flashsale-consumer" },
	[FS_M_ORDERS_BAD_MAC] = { "flashsale_consumer_unauthenticated_total", "reason=\"bad_mac\"",
	    NULL, 0, "flashsale-consumer" },
	[FS_M_ORDERS_DEAD_LETTERED] = { "flashsale_consumer_dead_letters_total", NULL,
	    "Messages sent to the dead-letter topic." },
	[FS_M_EXPIRY_RUNS] = { "flashsale_expiry_runs_total", NULL,
	    "Expiry runs (expiry and ghost sweep), cron or endpoint." },
	[FS_M_EXPIRY_FAILURES] = { "flashsale_expiry_failures_total", NULL,
	    "Expiry runs that failed part way." },
	[FS_M_ORDERS_EXPIRED] = { "flashsale_orders_expired_total", NULL,
	    "PENDING orders moved to EXPIRED." },
	[FS_M_UNITS_RELEASED] = { "flashsale_units_released_total", NULL,
	    "Units given back to stock (expiry, cancel, failed or refused orders, ghosts)." },
	[FS_M_RESERVED_ELSEWHERE] = { "flashsale_reservations_other_shard_total", NULL,
	    "Reservations of a sharded item taken from another shard than the shopper's home." },
	[FS_M_GHOSTS_SWEPT] = { "flashsale_ghosts_swept_total", NULL,
	    "Holds whose order never reached the database, closed FAILED and released." },
	[FS_M_PUSH_SENT] = { "flashsale_push_messages_total", "result=\"sent\"",
	    "Order status pushes (Server-Sent Events): handed to nchan (sent), refused by it "
	    "(refused: its memory is full, 507 or 500) or not answered (failed)." },
	[FS_M_PUSH_FAILED] = { "flashsale_push_messages_total", "result=\"failed\"", NULL },
	[FS_M_PUSH_REFUSED] = { "flashsale_push_messages_total", "result=\"refused\"", NULL },
	[FS_M_QUEUE_JOINS_NEW] = { "flashsale_queue_joins_total", "result=\"new\"",
	    "Joins of a sale's waiting room answered 200: a new place, or the place the account "
	    "already had (a repeat, another device)." },
	[FS_M_QUEUE_JOINS_AGAIN] = { "flashsale_queue_joins_total", "result=\"again\"", NULL },
	[FS_M_QUEUE_JOIN_ROUNDS] = { "flashsale_queue_join_rounds_total", NULL,
	    "Redis pipelines of the queue handler's joins (one per loop round that took joins): "
	    "joins per pipeline is how well concurrent joins share a round trip." },
	[FS_M_QUEUE_PASSES_ISSUED] = { "flashsale_queue_passes_total", "result=\"issued\"",
	    "Passes answered 200: issued now, or the one issued before (a repeat)." },
	[FS_M_QUEUE_PASSES_AGAIN] = { "flashsale_queue_passes_total", "result=\"again\"", NULL },
	[FS_M_QUEUE_REFUSED_UNAUTHENTICATED] = { "flashsale_queue_refusals_total", "reason=\"unauthenticated\"",
	    "Joins and pass requests of the waiting room refused, by reason: unauthenticated, "
	    "bad_request, bad_pow, no_queue, not_open (before joining opens), closed (ended, "
	    "or sold out with no pass outstanding), bad_ticket, not_in_queue, not_yet (not "
	    "admitted yet), sold_out, lapsed (the pass expired unused)." },
	[FS_M_QUEUE_REFUSED_BAD_REQUEST] = { "flashsale_queue_refusals_total", "reason=\"bad_request\"", NULL },
	[FS_M_QUEUE_REFUSED_BAD_POW] = { "flashsale_queue_refusals_total", "reason=\"bad_pow\"", NULL },
	[FS_M_QUEUE_REFUSED_NO_QUEUE] = { "flashsale_queue_refusals_total", "reason=\"no_queue\"", NULL },
	[FS_M_QUEUE_REFUSED_NOT_OPEN] = { "flashsale_queue_refusals_total", "reason=\"not_open\"", NULL },
	[FS_M_QUEUE_REFUSED_CLOSED] = { "flashsale_queue_refusals_total", "reason=\"closed\"", NULL },
	[FS_M_QUEUE_REFUSED_BAD_TICKET] = { "flashsale_queue_refusals_total", "reason=\"bad_ticket\"", NULL },
	[FS_M_QUEUE_REFUSED_NOT_IN_QUEUE] = { "flashsale_queue_refusals_total", "reason=\"not_in_queue\"", NULL },
	[FS_M_QUEUE_REFUSED_NOT_YET] = { "flashsale_queue_refusals_total", "reason=\"not_yet\"", NULL },
	[FS_M_QUEUE_REFUSED_SOLD_OUT] = { "flashsale_queue_refusals_total", "reason=\"sold_out\"", NULL },
	[FS_M_QUEUE_REFUSED_LAPSED] = { "flashsale_queue_refusals_total", "reason=\"lapsed\"", NULL },
	[FS_M_QUEUE_SALE_READS] = { "flashsale_queue_sale_reads_total", NULL,
	    "Reads of a sale's waiting room from PostgreSQL by flashsale-queue: each worker "
	    "thread keeps what it read a second, so joins and status documents beyond these "
	    "cost PostgreSQL nothing." },
	[FS_M_RECONCILE_RUNS] = { "flashsale_reconcile_runs_total", NULL,
	    "Checks of the invariants (flashsale-admin reconcile)." },
	[FS_M_RECONCILE_VIOLATIONS] = { "flashsale_reconcile_violations_total", NULL,
	    "Invariant violations found by reconcile.", 0, "flashsale-admin" },
	[FS_M_REFUND_FAILURES] = { "flashsale_refund_failures_total", NULL,
	    "Refunds owed that the payment provider refused or did not answer (each try)." },
	[FS_M_REFUNDS_RETRIED] = { "flashsale_refunds_retried_total", NULL,
	    "Refunds owed that the expiry asked of the provider again." },
	[FS_M_REFUNDS_RETRIED_MADE] = { "flashsale_refunds_retried_made_total", NULL,
	    "Refunds owed that the expiry's retry made." },
	[FS_M_WORKERS_BUSY] = { "flashsale_workers_busy", NULL,
	    "Worker threads of live handler processes with a request in hand." },
	[FS_M_WORKERS] = { "flashsale_workers", NULL, "Worker threads of live handler processes." },
};

static struct block memory_block;
static struct block *self = &memory_block;

/* Program names become labels and file names: [a-z0-9-] only. */
static int
program_ok(const char *p)
{
	size_t n = strnlen(p, PROGRAM_MAX);

	if (n == 0 || n == PROGRAM_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= '0' && p[i] <= '9') || p[i] == '-'))
			return 0;
	return 1;
}

static int
block_ok(const struct block *b)
{
	return memcmp(b->magic, MAGIC, sizeof(MAGIC)) == 0 && b->layout == LAYOUT &&
	    program_ok(b->program);
}

static int
has_suffix(const char *name, const char *suffix)
{
	size_t n = strlen(name), s = strlen(suffix);

	return n > s && strcmp(name + n - s, suffix) == 0;
}

static uint64_t
load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/* Adds src's counters (not its gauges) to dst. */
static void
add_counters(struct block *dst, const struct block *src)
{
	for (int i = 0; i < FS_M_GAUGE_FIRST_; i++)
		dst->v[i] += load(&src->v[i]);
	for (int i = 0; i < CODE_MAX - CODE_MIN; i++)
		dst->answers[i] += load(&src->answers[i]);
	for (int i = 0; i <= FS_METRICS_BUCKETS; i++)
		dst->buckets[i] += load(&src->buckets[i]);
	dst->duration_sum_us += load(&src->duration_sum_us);
}

/* Takes the directory's lock (a file in it) for folding and reading; the fd, or -1. */
static int
lock_dir(int dfd)
{
	int fd = openat(dfd, ".lock", O_RDWR | O_CREAT | O_CLOEXEC, 0644);

	if (fd >= 0 && flock(fd, LOCK_EX) != 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Adds a dead process's block to retired.<program>.metrics. 0, or -1. */
static int
retire(int dfd, const struct block *dead)
{
	char name[PROGRAM_MAX + 32];
	struct block sum;
	int fd, rc = -1;

	snprintf(name, sizeof(name), "retired.%s%s", dead->program, SUFFIX);
	if ((fd = openat(dfd, name, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) < 0)
		return -1;
	if (pread(fd, &sum, sizeof(sum), 0) != (ssize_t)sizeof(sum) || !block_ok(&sum)) {
		memset(&sum, 0, sizeof(sum));
		memcpy(sum.magic, MAGIC, sizeof(MAGIC));
		sum.layout = LAYOUT;
		memcpy(sum.program, dead->program, sizeof(sum.program));
	}
	add_counters(&sum, dead);
	if (pwrite(fd, &sum, sizeof(sum), 0) == (ssize_t)sizeof(sum))
		rc = 0;
	close(fd);
	return rc;
}

/*
 * Folds the blocks of processes that ended (nobody holds their flock) into
 * the retired files and removes them. The caller holds the directory lock.
 * XXX a crash between the fold and the unlink counts that process twice.
 */
static void
fold_dead(int dfd)
{
	struct dirent *e;
	struct block b;
	DIR *d;
	int fd, dup_fd = dup(dfd);

	if (dup_fd < 0 || (d = fdopendir(dup_fd)) == NULL) {
		if (dup_fd >= 0)
			close(dup_fd);
		return;
	}
	while ((e = readdir(d)) != NULL) {
		if (!has_suffix(e->d_name, SUFFIX) || strncmp(e->d_name, "retired.", 8) == 0)
			continue;
		if ((fd = openat(dfd, e->d_name, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			if (pread(fd, &b, sizeof(b), 0) != (ssize_t)sizeof(b) || !block_ok(&b) ||
			    retire(dfd, &b) == 0)
				unlinkat(dfd, e->d_name, 0);
		}
		close(fd);
	}
	closedir(d);
}

int
fs_metrics_open(const char *program)
{
	const char *dir = getenv("FLASHSALE_METRICS_DIR");
	char name[PROGRAM_MAX + 48] = "";
	struct block *b = MAP_FAILED;
	int dfd = -1, lock = -1, fd = -1;

	if (dir == NULL || dir[0] == '\0')
		return -1;
	if (!program_ok(program)) {
		fs_log_warn("metrics: bad program name");
		return -1;
	}
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || (lock = lock_dir(dfd)) < 0)
		goto fail;
	/* A dead process's block under our PID is folded before we reuse its name. */
	fold_dead(dfd);
	snprintf(name, sizeof(name), "%s.%ld%s", program, (long)getpid(), SUFFIX);
	if ((fd = openat(dfd, name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0 ||
	    ftruncate(fd, sizeof(struct block)) != 0 || flock(fd, LOCK_SH) != 0)
		goto fail;
	b = mmap(NULL, sizeof(*b), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (b == MAP_FAILED)
		goto fail;
	/* Whatever was counted before the block existed moves into it. */
	if (self == &memory_block)
		add_counters(b, self);
	memcpy(b->program, program, strlen(program) + 1);
	b->layout = LAYOUT;
	memcpy(b->magic, MAGIC, sizeof(MAGIC));
	self = b;
	/* The fd stays open for the flock: it says "alive" to the reader. */
	close(lock);
	close(dfd);
	return 0;
fail:
	fs_log_warn("metrics: cannot use %s/%s: %s; counting in memory only", dir,
	    name[0] != '\0' ? name : "", strerror(errno));
	if (fd >= 0)
		close(fd);
	if (lock >= 0)
		close(lock);
	if (dfd >= 0)
		close(dfd);
	return -1;
}

void
fs_metrics_count(enum fs_metric m)
{
	__atomic_fetch_add(&self->v[m], 1, __ATOMIC_RELAXED);
}

void
fs_metrics_add(enum fs_metric m, uint64_t n)
{
	__atomic_fetch_add(&self->v[m], n, __ATOMIC_RELAXED);
}

void
fs_metrics_gauge_add(enum fs_metric m, int64_t delta)
{
	__atomic_fetch_add(&self->v[m], (uint64_t)delta, __ATOMIC_RELAXED);
}

void
fs_metrics_gauge_set(enum fs_metric m, int64_t value)
{
	__atomic_store_n(&self->v[m], (uint64_t)value, __ATOMIC_RELAXED);
}

void
fs_metrics_answer(int code)
{
	if (code >= CODE_MIN && code < CODE_MAX)
		__atomic_fetch_add(&self->answers[code - CODE_MIN], 1, __ATOMIC_RELAXED);
}

void
fs_metrics_request_done(uint64_t duration_ns)
{
	uint64_t us = duration_ns / 1000;
	int i = 0;

	while (i < FS_METRICS_BUCKETS && us > bucket_us[i])
		i++;
	__atomic_fetch_add(&self->buckets[i], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&self->duration_sum_us, us, __ATOMIC_RELAXED);
}

uint64_t
fs_metrics_value(enum fs_metric m)
{
	return load(&self->v[m]);
}

/* --- the reader ----------------------------------------------------------- */

struct program_sum {
	struct block sum;
	int processes;
};

struct sums {
	struct program_sum p[PROGRAMS_MAX];
	int n;
};

static struct program_sum *
sum_for(struct sums *s, const char *program)
{
	for (int i = 0; i < s->n; i++)
		if (strcmp(s->p[i].sum.program, program) == 0)
			return &s->p[i];
	if (s->n == PROGRAMS_MAX)
		return NULL;
	memset(&s->p[s->n], 0, sizeof(s->p[s->n]));
	memcpy(s->p[s->n].sum.program, program, strlen(program) + 1);
	return &s->p[s->n++];
}

/* Adds one block file to the sums: a live one with its gauges. */
static void
read_block(int dfd, const char *name, struct sums *s)
{
	int live = strncmp(name, "retired.", 8) != 0;
	struct program_sum *ps;
	struct block *b;
	struct stat st;
	int fd;

	if ((fd = openat(dfd, name, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(*b)) {
		close(fd);
		return;
	}
	b = mmap(NULL, sizeof(*b), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (b == MAP_FAILED)
		return;
	if (block_ok(b) && (ps = sum_for(s, b->program)) != NULL) {
		add_counters(&ps->sum, b);
		if (live) {
			ps->processes++;
			for (int i = FS_M_GAUGE_FIRST_; i < FS_M__MAX; i++)
				ps->sum.v[i] += load(&b->v[i]);
		}
	}
	munmap(b, sizeof(*b));
}

static void
family_header(FILE *out, const char *name, const char *help, const char *type)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
write_counters(FILE *out, const struct sums *s)
{
	for (int m = 0; m < FS_M__MAX; m++) {
		const char *labels = metric_table[m].labels;

		if (metric_table[m].help != NULL)
			family_header(out, metric_table[m].name, metric_table[m].help,
			    m >= FS_M_GAUGE_FIRST_ ? "gauge" : "counter");
		for (int i = 0; i < s->n; i++) {
			const struct block *b = &s->p[i].sum;

			/* A family shows the programs that ever counted it (and its owner's 0). */
			if (b->v[m] == 0 && (m < FS_M_GAUGE_FIRST_ || s->p[i].processes == 0) &&
			    (metric_table[m].shown_at_zero_by == NULL ||
				strcmp(metric_table[m].shown_at_zero_by, b->program) != 0))
				continue;
			fprintf(out, "%s{program=\"%s\"%s%s} ", metric_table[m].name, b->program,
			    labels != NULL ? "," : "", labels != NULL ? labels : "");
			if (m >= FS_M_GAUGE_FIRST_)
				fprintf(out, "%" PRId64 "\n", (int64_t)b->v[m]);
			else if (metric_table[m].us_as_seconds)
				fprintf(out, "%" PRIu64 ".%06" PRIu64 "\n", b->v[m] / 1000000,
				    b->v[m] % 1000000);
			else
				fprintf(out, "%" PRIu64 "\n", b->v[m]);
		}
	}
}

static void
write_requests(FILE *out, const struct sums *s)
{
	family_header(out, "flashsale_processes", "Live processes of each program.", "gauge");
	for (int i = 0; i < s->n; i++)
		fprintf(out, "flashsale_processes{program=\"%s\"} %d\n", s->p[i].sum.program,
		    s->p[i].processes);
	family_header(out, "flashsale_http_requests_total",
	    "Answers of the FastCGI handlers, by program and status code.", "counter");
	for (int i = 0; i < s->n; i++)
		for (int c = 0; c < CODE_MAX - CODE_MIN; c++)
			if (s->p[i].sum.answers[c] > 0)
				fprintf(out, "flashsale_http_requests_total{program=\"%s\",code=\"%d\"} %" PRIu64 "\n",
				    s->p[i].sum.program, c + CODE_MIN, s->p[i].sum.answers[c]);
	family_header(out, "flashsale_http_request_duration_seconds",
	    "Time a handler spent on a request, from accept to the last byte handed to nginx.",
	    "histogram");
	for (int i = 0; i < s->n; i++) {
		const struct block *b = &s->p[i].sum;
		uint64_t cum = 0;

		for (int k = 0; k <= FS_METRICS_BUCKETS; k++)
			cum += b->buckets[k];
		if (cum == 0)
			continue;
		cum = 0;
		for (int k = 0; k < FS_METRICS_BUCKETS; k++) {
			cum += b->buckets[k];
			fprintf(out, "flashsale_http_request_duration_seconds_bucket{program=\"%s\",le=\"%g\"} %" PRIu64 "\n",
			    b->program, (double)bucket_us[k] / 1e6, cum);
		}
		cum += b->buckets[FS_METRICS_BUCKETS];
		fprintf(out, "flashsale_http_request_duration_seconds_bucket{program=\"%s\",le=\"+Inf\"} %" PRIu64 "\n",
		    b->program, cum);
		fprintf(out, "flashsale_http_request_duration_seconds_sum{program=\"%s\"} %.6f\n",
		    b->program, (double)b->duration_sum_us / 1e6);
		fprintf(out, "flashsale_http_request_duration_seconds_count{program=\"%s\"} %" PRIu64 "\n",
		    b->program, cum);
	}
}

/* A ticks file name "<by>-<answer>.ticks": both [a-z_], split at the dash. */
static int
ticks_name(const char *name, char *by, char *answer, size_t len)
{
	const char *dash = strchr(name, '-');
	size_t n = strlen(name) - strlen(TICKS);

	if (dash == NULL || (size_t)(dash - name) >= len || n - (size_t)(dash - name) > len ||
	    dash == name || dash + 1 == name + n)
		return -1;
	for (const char *c = name; c < name + n; c++)
		if (c != dash && !((*c >= 'a' && *c <= 'z') || *c == '_'))
			return -1;
	memcpy(by, name, (size_t)(dash - name));
	by[dash - name] = '\0';
	memcpy(answer, dash + 1, n - (size_t)(dash - name) - 1);
	answer[n - (size_t)(dash - name) - 1] = '\0';
	return 0;
}

int
fs_metrics_write(const char *dir, FILE *out, char *err, size_t errlen)
{
	struct sums *s = NULL;
	struct dirent *e;
	DIR *d = NULL;
	int dfd = -1, lock = -1, rc = -1, headed = 0;

	if ((s = calloc(1, sizeof(*s))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || (lock = lock_dir(dfd)) < 0) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		goto out;
	}
	fold_dead(dfd);
	if ((d = opendir(dir)) == NULL) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		goto out;
	}
	while ((e = readdir(d)) != NULL)
		if (has_suffix(e->d_name, SUFFIX))
			read_block(dfd, e->d_name, s);
	/* The owners of the series shown at 0, though none of their processes ran yet. */
	for (int m = 0; m < FS_M__MAX; m++)
		if (metric_table[m].shown_at_zero_by != NULL)
			(void)sum_for(s, metric_table[m].shown_at_zero_by);
	write_requests(out, s);
	write_counters(out, s);
	rewinddir(d);
	while ((e = readdir(d)) != NULL) {
		char by[32], answer[32];
		struct stat st;

		if (!has_suffix(e->d_name, TICKS) || ticks_name(e->d_name, by, answer, sizeof(by)) != 0 ||
		    fstatat(dfd, e->d_name, &st, 0) != 0)
			continue;
		if (!headed++)
			family_header(out, "flashsale_answers_without_handler_total",
			    "Answers that nginx or the edge gave without a handler (one line each in "
			    "<by>-<answer>.ticks).",
			    "counter");
		fprintf(out, "flashsale_answers_without_handler_total{by=\"%s\",answer=\"%s\"} %lld\n", by,
		    answer, (long long)(st.st_size / TICK_LINE));
	}
	rc = 0;
out:
	if (d != NULL)
		closedir(d);
	if (lock >= 0)
		close(lock);
	if (dfd >= 0)
		close(dfd);
	free(s);
	return rc;
}

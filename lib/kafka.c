/*
 * lib/kafka: the one librdkafka client set-up of the family (the log hook,
 * the brokers, the brokers' security, the log level, then each client's
 * own settings), the
 * producer shared by threads, the partitioner and message headers. The
 * consumer-group member is lib/kafka_consumer.c, the operators' calls
 * (topics, lags, reading a topic) lib/kafka_admin.c.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "cfg.h"
#include "clock.h"
#include "jsonread.h"
#include "kafka_int.h"
#include "keyfile.h"
#include "lock.h"
#include "log.h"
#include "metrics.h"

/*
 * The producer's partitioner: a keyed message's partition is murmur2 of its
 * key, as Java clients pick it (fs_kafka_partition_of computes the same).
 */
#define PARTITIONER "murmur2_random"

/* A group of messages one caller waits for; the reports count it down. */
struct batch {
	pthread_cond_t done;
	size_t remaining;
};

/* What one message learns from its delivery report. */
struct delivery {
	struct batch *batch;	/* a caller waits for it, or NULL */
	fs_kafka_sent *sent;	/* or it is told, with arg (the delivery is then allocated) */
	void *arg;
	rd_kafka_resp_err_t err;
	rd_kafka_msg_status_t status;
};

/* The verdict on one message's report, counted. */
static enum fs_kafka_delivery
verdict(rd_kafka_resp_err_t err, rd_kafka_msg_status_t status)
{
	if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
		fs_metrics_count(FS_M_KAFKA_DELIVERED);
		return FS_KAFKA_DELIVERED;
	}
	if (status != RD_KAFKA_MSG_STATUS_NOT_PERSISTED) {
		fs_metrics_count(FS_M_KAFKA_MAYBE_DELIVERED);
		return FS_KAFKA_MAYBE_DELIVERED;
	}
	fs_metrics_count(FS_M_KAFKA_NOT_DELIVERED);
	return FS_KAFKA_NOT_DELIVERED;
}

/* Runs where the reports are served (or in a flush): wakes the caller of the batch. */
static void
on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	fs_kafka_producer *p = opaque;
	struct delivery *d = m->_private;

	(void)rk;
	if (d == NULL)
		return;
	if (d->sent != NULL) {
		d->sent(d->arg, verdict(m->err, rd_kafka_message_status(m)),
		    m->err != RD_KAFKA_RESP_ERR_NO_ERROR ? rd_kafka_err2str(m->err) : "");
		free(d);
		return;
	}
	pthread_mutex_lock(&p->mu);
	d->err = m->err;
	d->status = rd_kafka_message_status(m);
	if (--d->batch->remaining == 0)
		pthread_cond_signal(&d->batch->done);
	pthread_mutex_unlock(&p->mu);
}

/*
 * Adds one of a broker's latency windows (librdkafka's "sum" and "cnt" of
 * the microseconds seen since the last statistics) to two counters.
 */
static void
add_window(json_object *broker, const char *window, enum fs_metric sum, enum fs_metric count)
{
	json_object *w, *s, *c;
	int64_t vs, vc;

	if (!json_object_object_get_ex(broker, window, &w) || !json_object_object_get_ex(w, "sum", &s) ||
	    !json_object_object_get_ex(w, "cnt", &c))
		return;
	vs = json_object_get_int64(s);
	vc = json_object_get_int64(c);
	if (vs < 0 || vc <= 0)
		return;
	fs_metrics_add(sum, (uint64_t)vs);
	fs_metrics_add(count, (uint64_t)vc);
}

/*
 * librdkafka's statistics, every second, where the reports are served:
 * the Produce requests sent to every broker since rk was made, counted as
 * they grow (a replaced rk starts from 0 again); and the second's waits of
 * messages in the queue (the linger) and of requests for the brokers'
 * answers.
 */
static int
on_stats(rd_kafka_t *rk, char *json, size_t len, void *opaque)
{
	fs_kafka_producer *p = opaque;
	json_object *doc, *brokers, *req, *n;
	char why[64];
	long long sum = 0;

	(void)rk;
	doc = fs_jsonread_object(json, len, JSON_TOKENER_DEFAULT_DEPTH, why, sizeof(why));
	if (doc != NULL && json_object_object_get_ex(doc, "brokers", &brokers) &&
	    json_object_is_type(brokers, json_type_object)) {
		json_object_object_foreach(brokers, name, b) {
			(void)name;
			if (json_object_object_get_ex(b, "req", &req) &&
			    json_object_object_get_ex(req, "Produce", &n))
				sum += json_object_get_int64(n);
			add_window(b, "int_latency", FS_M_KAFKA_QUEUE_WAIT_US, FS_M_KAFKA_QUEUE_WAITS);
			add_window(b, "rtt", FS_M_KAFKA_BROKER_RTT_US, FS_M_KAFKA_BROKER_RTTS);
		}
		fs_metrics_add(FS_M_KAFKA_PRODUCE_REQUESTS,
		    (uint64_t)(sum >= p->produce_seen ? sum - p->produce_seen : sum));
		p->produce_seen = sum;
	}
	json_object_put(doc);
	return 0; /* librdkafka frees json */
}


/* librdkafka's own lines go through fs_log, in the one log format. */
static void
on_log(const rd_kafka_t *rk, int level, const char *facility, const char *text)
{
	(void)rk;
	fs_log(level <= 3 ? FS_LOG_ERROR : level == 4 ? FS_LOG_WARN : level <= 6 ? FS_LOG_INFO : FS_LOG_DEBUG,
	    "kafka %s: %s", facility, text);
}

/*
 * How every client of this process meets the brokers, read once from the
 * environment (lib/cfg): SASL_SSL with SCRAM-SHA-512 as FLASHSALE_KAFKA_USER,
 * its password from FLASHSALE_KAFKA_PASSWORD_FILE (kept for the clients
 * made later, never logged), the brokers' certificates checked against
 * FLASHSALE_KAFKA_CA_FILE and their names against the addresses dialled.
 * No user: PLAINTEXT, which only the unit tests' in-process mock broker
 * speaks (the brokers of the stack refuse it).
 */
static struct {
	char user[256];
	char password[256];
	char ca[512];
	char err[256];
} security;
static pthread_once_t security_once = PTHREAD_ONCE_INIT;

static void
security_load(void)
{
	struct fs_cfg *cfg = malloc(sizeof(*cfg));

	if (cfg == NULL) {
		snprintf(security.err, sizeof(security.err), "kafka security: out of memory");
		return;
	}
	if (fs_cfg_load(cfg, 0) != 0)
		snprintf(security.err, sizeof(security.err), "%s", cfg->errstr);
	else if (*fs_cfg_get(cfg, FS_CFG_KAFKA_USER) != '\0') {
		snprintf(security.user, sizeof(security.user), "%s", fs_cfg_get(cfg, FS_CFG_KAFKA_USER));
		snprintf(security.ca, sizeof(security.ca), "%s", fs_cfg_get(cfg, FS_CFG_KAFKA_CA_FILE));
		if (fs_keyfile_read_secret(fs_cfg_get(cfg, FS_CFG_KAFKA_PASSWORD_FILE), security.password,
			sizeof(security.password), security.err, sizeof(security.err)) != 0)
			security.user[0] = '\0';
	}
	free(cfg);
}

/* The security settings of every client onto conf: 0, or -1 with err set. */
static int
security_set(rd_kafka_conf_t *conf, char *err, size_t errlen)
{
	const struct fs_kafka_setting set[] = {
		{ "security.protocol", "SASL_SSL" },
		{ "sasl.mechanisms", "SCRAM-SHA-512" },
		{ "sasl.username", security.user },
		{ "sasl.password", security.password },
		{ "ssl.ca.location", security.ca },
		{ "ssl.endpoint.identification.algorithm", "https" },
		/*
		 * Over TLS a request leaves in several records: with Nagle's
		 * algorithm the second waits for the broker's delayed ACK (the
		 * purchase bench's d: p50 25 -> 90 ms, 4x the handler's CPU).
		 */
		{ "socket.nagle.disable", "true" },
	};

	pthread_once(&security_once, security_load);
	if (security.err[0] != '\0') {
		snprintf(err, errlen, "%s", security.err);
		return -1;
	}
	if (security.user[0] == '\0')
		return 0;
	for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++)
		if (rd_kafka_conf_set(conf, set[i].name, set[i].value, err, errlen) != RD_KAFKA_CONF_OK)
			return -1;
	return 0;
}

rd_kafka_t *
fs_kafka_client_new(rd_kafka_type_t type, const char *brokers, const struct fs_kafka_setting *set,
    size_t nset, void (*callbacks)(rd_kafka_conf_t *), void *opaque, char *err, size_t errlen)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_t *rk;

	rd_kafka_conf_set_log_cb(conf, on_log);
	if (rd_kafka_conf_set(conf, "bootstrap.servers", brokers, err, errlen) != RD_KAFKA_CONF_OK ||
	    security_set(conf, err, errlen) != 0 ||
	    rd_kafka_conf_set(conf, "log_level", "3", err, errlen) != RD_KAFKA_CONF_OK)
		goto fail;
	for (size_t i = 0; i < nset; i++)
		if (rd_kafka_conf_set(conf, set[i].name, set[i].value, err, errlen) != RD_KAFKA_CONF_OK)
			goto fail;
	if (callbacks != NULL)
		callbacks(conf);
	if (opaque != NULL)
		rd_kafka_conf_set_opaque(conf, opaque);
	/* rd_kafka_new owns conf once it succeeds. */
	if ((rk = rd_kafka_new(type, conf, err, errlen)) != NULL)
		return rk;
fail:
	rd_kafka_conf_destroy(conf);
	return NULL;
}

/* The producer's report and statistics hooks. */
static void
producer_callbacks(rd_kafka_conf_t *conf)
{
	rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
	rd_kafka_conf_set_stats_cb(conf, on_stats);
}

static rd_kafka_t *
producer_create(fs_kafka_producer *p, char *err, size_t errlen)
{
	char timeout[16], linger[16];
	const struct fs_kafka_setting set[] = {
		{ "acks", "all" },
		{ "enable.idempotence", "true" },
		/* Orders from concurrent purchases share one produce request. */
		{ "linger.ms", linger },
		{ "message.timeout.ms", timeout },
		/* The same item always lands on the same partition. */
		{ "partitioner", PARTITIONER },
		{ "socket.keepalive.enable", "true" },
		{ "reconnect.backoff.max.ms", "1000" },
		{ "statistics.interval.ms", "1000" },
	};

	snprintf(timeout, sizeof(timeout), "%d", p->timeout_ms);
	snprintf(linger, sizeof(linger), "%d", p->linger_ms);
	return fs_kafka_client_new(RD_KAFKA_PRODUCER, p->brokers, set, sizeof(set) / sizeof(set[0]),
	    producer_callbacks, p, err, errlen);
}

/* librdkafka writes to the reports' pipe when rk's reports queue was empty. */
static void
reports_wake_on(fs_kafka_producer *p, rd_kafka_t *rk)
{
	rd_kafka_queue_t *q;

	if (p->reports[1] < 0 || (q = rd_kafka_queue_get_main(rk)) == NULL)
		return;
	rd_kafka_queue_io_event_enable(q, p->reports[1], "1", 1);
	rd_kafka_queue_destroy(q);
}

/*
 * An idempotent producer that hit a fatal error refuses every later message:
 * replace it. Messages still queued on the old one are purged, so their
 * callers hear "not delivered" (or "maybe", when in flight) and retry.
 */
static void
recreate_if_fatal(fs_kafka_producer *p)
{
	char reason[256], err[256];
	rd_kafka_t *rk;

	if (rd_kafka_fatal_error(p->rk, reason, sizeof(reason)) == RD_KAFKA_RESP_ERR_NO_ERROR)
		return;
	if ((rk = producer_create(p, err, sizeof(err))) == NULL)
		return;
	reports_wake_on(p, rk);
	pthread_rwlock_wrlock(&p->swap);
	rd_kafka_purge(p->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
	while (rd_kafka_outq_len(p->rk) > 0)
		rd_kafka_poll(p->rk, 100);
	rd_kafka_destroy(p->rk);
	p->rk = rk;
	p->produce_seen = 0;
	pthread_rwlock_unlock(&p->swap);
	fs_metrics_count(FS_M_KAFKA_PRODUCER_RESTARTS);
}

/* Serves delivery reports as they come, so callers only wait on a condition. */
static void *
poll_reports(void *arg)
{
	fs_kafka_producer *p = arg;

	while (!atomic_load(&p->stop)) {
		rd_kafka_poll(p->rk, 100);
		recreate_if_fatal(p);
	}
	return NULL;
}

fs_kafka_producer *
fs_kafka_producer_new(const char *brokers, int timeout_ms, int linger_ms, char *err, size_t errlen)
{
	fs_kafka_producer *p;

	if (strlen(brokers) >= sizeof(((fs_kafka_producer *)0)->brokers)) {
		snprintf(err, errlen, "broker list too long");
		return NULL;
	}
	if ((p = calloc(1, sizeof(*p))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	strcpy(p->brokers, brokers);
	p->timeout_ms = timeout_ms;
	p->linger_ms = linger_ms;
	p->reports[0] = p->reports[1] = -1;
	pthread_mutex_init(&p->mu, NULL);
	pthread_mutex_init(&p->serve, NULL);
	/* Writer-first: the swap after a fatal error must not wait for a lull. */
	fs_lock_rw_init(&p->swap);
	if ((p->rk = producer_create(p, err, errlen)) == NULL)
		goto fail;
	if (pthread_create(&p->poller, NULL, poll_reports, p) != 0) {
		snprintf(err, errlen, "cannot start the delivery report thread");
		rd_kafka_destroy(p->rk);
		goto fail;
	}
	return p;
fail:
	pthread_rwlock_destroy(&p->swap);
	pthread_mutex_destroy(&p->serve);
	pthread_mutex_destroy(&p->mu);
	free(p);
	return NULL;
}

int
fs_kafka_producer_reports_fd(fs_kafka_producer *p, char *err, size_t errlen)
{
	if (p->reports[0] >= 0)
		return p->reports[0];
	if (pipe2(p->reports, O_NONBLOCK | O_CLOEXEC) != 0) {
		snprintf(err, errlen, "reports pipe: %s", strerror(errno));
		p->reports[0] = p->reports[1] = -1;
		return -1;
	}
	atomic_store(&p->stop, 1);
	pthread_join(p->poller, NULL);
	reports_wake_on(p, p->rk);
	/* What waits already would write nothing: served now, the next write wakes. */
	rd_kafka_poll(p->rk, 0);
	return p->reports[0];
}

void
fs_kafka_producer_serve(fs_kafka_producer *p)
{
	char buf[64];

	pthread_mutex_lock(&p->serve);
	/* Emptied first: a report that comes after the poll writes again. */
	while (read(p->reports[0], buf, sizeof(buf)) > 0)
		;
	rd_kafka_poll(p->rk, 0);
	recreate_if_fatal(p);
	pthread_mutex_unlock(&p->serve);
}

void
fs_kafka_producer_free(fs_kafka_producer *p)
{
	if (p == NULL)
		return;
	if (p->reports[0] < 0) { /* the poller still serves them */
		atomic_store(&p->stop, 1);
		pthread_join(p->poller, NULL);
	}
	/* Whatever is still queued gets its chance; flush serves the reports. */
	rd_kafka_flush(p->rk, 5000);
	rd_kafka_destroy(p->rk);
	for (int i = 0; i < 2; i++)
		if (p->reports[i] >= 0)
			close(p->reports[i]);
	pthread_rwlock_destroy(&p->swap);
	pthread_mutex_destroy(&p->serve);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

void
fs_kafka_producer_warm(fs_kafka_producer *p, const char *topic)
{
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_topic_t *rkt;

	pthread_rwlock_rdlock(&p->swap);
	if ((rkt = rd_kafka_topic_new(p->rk, topic, NULL)) != NULL) {
		if (rd_kafka_metadata(p->rk, 0, rkt, &md, p->timeout_ms) == RD_KAFKA_RESP_ERR_NO_ERROR)
			rd_kafka_metadata_destroy(md);
		rd_kafka_topic_destroy(rkt);
	}
	pthread_rwlock_unlock(&p->swap);
}

int
fs_kafka_producer_ready(fs_kafka_producer *p, const char *topic, int timeout_ms, char *err,
    size_t errlen)
{
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR__INVALID_ARG;
	rd_kafka_topic_t *rkt;

	pthread_rwlock_rdlock(&p->swap);
	if ((rkt = rd_kafka_topic_new(p->rk, topic, NULL)) != NULL) {
		if ((e = rd_kafka_metadata(p->rk, 0, rkt, &md, timeout_ms)) == RD_KAFKA_RESP_ERR_NO_ERROR) {
			if (md->topic_cnt != 1 || md->topics[0].err != RD_KAFKA_RESP_ERR_NO_ERROR)
				e = md->topic_cnt == 1 ? md->topics[0].err : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
			rd_kafka_metadata_destroy(md);
		}
		rd_kafka_topic_destroy(rkt);
	}
	pthread_rwlock_unlock(&p->swap);
	if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
		snprintf(err, errlen, "kafka: %s", rd_kafka_err2str(e));
		return -1;
	}
	return 0;
}

/* The headers a message travels with (see struct fs_kafka_msg), or NULL for none. */
static rd_kafka_headers_t *
msg_headers(const struct fs_kafka_msg *m)
{
	rd_kafka_headers_t *h = NULL, *orig = NULL;

	/* librdkafka parses the headers into the message: it is not const there. */
	if (m->headers_of != NULL &&
	    rd_kafka_message_headers((rd_kafka_message_t *)(uintptr_t)m->headers_of, &orig) ==
		RD_KAFKA_RESP_ERR_NO_ERROR)
		h = rd_kafka_headers_copy(orig);
	for (size_t i = 0; i < FS_KAFKA_HEADERS_MAX; i++) {
		if (m->header[i].name == NULL)
			continue;
		if (h == NULL)
			h = rd_kafka_headers_new(FS_KAFKA_HEADERS_MAX);
		rd_kafka_header_add(h, m->header[i].name, -1, m->header[i].value, -1);
	}
	return h;
}

enum fs_kafka_delivery
fs_kafka_produce_all(fs_kafka_producer *p, const char *topic, const struct fs_kafka_msg *msgs,
    size_t n, char *err, size_t errlen)
{
	enum fs_kafka_delivery worst = FS_KAFKA_DELIVERED;
	struct delivery one, *d = n == 1 ? &one : calloc(n, sizeof(*d));
	struct batch batch;

	if (n == 0)
		return FS_KAFKA_DELIVERED;
	if (d == NULL) {
		snprintf(err, errlen, "produce: out of memory");
		return FS_KAFKA_NOT_DELIVERED;
	}
	pthread_cond_init(&batch.done, NULL);
	batch.remaining = n;
	pthread_rwlock_rdlock(&p->swap);
	for (size_t i = 0; i < n; i++) {
		rd_kafka_headers_t *h = NULL;
		rd_kafka_resp_err_t e;

		d[i].batch = &batch;
		d[i].sent = NULL;
		d[i].arg = NULL;
		d[i].err = RD_KAFKA_RESP_ERR_NO_ERROR;
		d[i].status = RD_KAFKA_MSG_STATUS_NOT_PERSISTED;
		h = msg_headers(&msgs[i]);
		e = rd_kafka_producev(p->rk, RD_KAFKA_V_TOPIC(topic),
		    RD_KAFKA_V_KEY((void *)(uintptr_t)msgs[i].key, msgs[i].keylen),
		    RD_KAFKA_V_VALUE((void *)(uintptr_t)msgs[i].value, msgs[i].len),
		    RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
		    RD_KAFKA_V_OPAQUE(&d[i]), RD_KAFKA_V_END);
		if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
			/* The headers are ours again only when the produce failed. */
			if (h != NULL)
				rd_kafka_headers_destroy(h);
			pthread_mutex_lock(&p->mu);
			d[i].err = e;
			batch.remaining--;
			pthread_mutex_unlock(&p->mu);
		}
	}
	pthread_rwlock_unlock(&p->swap);
	/*
	 * librdkafka reports every message within message.timeout.ms, so the
	 * reports, not our clock, decide; d must outlive them.
	 */
	pthread_mutex_lock(&p->mu);
	while (batch.remaining > 0)
		pthread_cond_wait(&batch.done, &p->mu);
	pthread_mutex_unlock(&p->mu);
	pthread_cond_destroy(&batch.done);
	for (size_t i = 0; i < n; i++) {
		enum fs_kafka_delivery v = verdict(d[i].err, d[i].status);

		if (v == FS_KAFKA_DELIVERED)
			continue;
		snprintf(err, errlen, "delivery: %s", rd_kafka_err2str(d[i].err));
		if (v == FS_KAFKA_MAYBE_DELIVERED || worst == FS_KAFKA_DELIVERED)
			worst = v;
	}
	if (d != &one)
		free(d);
	return worst;
}

int
fs_kafka_produce_async(fs_kafka_producer *p, const char *topic, const struct fs_kafka_msg *msg,
    fs_kafka_sent *sent, void *arg, char *err, size_t errlen)
{
	struct delivery *d;
	rd_kafka_headers_t *h;
	rd_kafka_resp_err_t e;

	if ((d = calloc(1, sizeof(*d))) == NULL) {
		snprintf(err, errlen, "produce: out of memory");
		return -1;
	}
	d->sent = sent;
	d->arg = arg;
	h = msg_headers(msg);
	pthread_rwlock_rdlock(&p->swap);
	e = rd_kafka_producev(p->rk, RD_KAFKA_V_TOPIC(topic),
	    RD_KAFKA_V_KEY((void *)(uintptr_t)msg->key, msg->keylen),
	    RD_KAFKA_V_VALUE((void *)(uintptr_t)msg->value, msg->len), RD_KAFKA_V_HEADERS(h),
	    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_OPAQUE(d), RD_KAFKA_V_END);
	pthread_rwlock_unlock(&p->swap);
	if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
		/* The headers are ours again only when the produce failed. */
		if (h != NULL)
			rd_kafka_headers_destroy(h);
		free(d);
		fs_metrics_count(FS_M_KAFKA_NOT_DELIVERED);
		snprintf(err, errlen, "produce: %s", rd_kafka_err2str(e));
		return -1;
	}
	return 0;
}


int32_t
fs_kafka_partition_of(const void *key, size_t keylen, int32_t partitions)
{
	/* The producer's own partitioner (PARTITIONER), called as librdkafka calls it. */
	return rd_kafka_msg_partitioner_murmur2_random(NULL, key, keylen, partitions, NULL, NULL);
}


int
fs_kafka_msg_header(const rd_kafka_message_t *m, const char *name, char *out, size_t outlen)
{
	rd_kafka_headers_t *h = NULL;
	const void *v;
	size_t len;

	/* librdkafka parses the headers into the message: it is not const there. */
	if (rd_kafka_message_headers((rd_kafka_message_t *)(uintptr_t)m, &h) !=
		RD_KAFKA_RESP_ERR_NO_ERROR ||
	    rd_kafka_header_get_last(h, name, &v, &len) != RD_KAFKA_RESP_ERR_NO_ERROR || v == NULL)
		return 0;
	snprintf(out, outlen, "%.*s", (int)(len < outlen ? len : outlen - 1), (const char *)v);
	return 1;
}

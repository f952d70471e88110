#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka.h"

/* What one synchronous send learns from its delivery report. */
struct delivery {
	int done;
	rd_kafka_resp_err_t err;
	rd_kafka_msg_status_t status;
};

static void
on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	struct delivery *d = m->_private;

	(void)rk;
	(void)opaque;
	if (d == NULL)
		return;
	d->err = m->err;
	d->status = rd_kafka_message_status(m);
	d->done = 1;
}

static int
conf_set(rd_kafka_conf_t *conf, const char *name, const char *value, char *err, size_t errlen)
{
	return rd_kafka_conf_set(conf, name, value, err, errlen) == RD_KAFKA_CONF_OK ? 0 : -1;
}

static rd_kafka_t *
producer_create(const char *brokers, int timeout_ms, char *err, size_t errlen)
{
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	char timeout[16];
	rd_kafka_t *rk;

	snprintf(timeout, sizeof(timeout), "%d", timeout_ms);
	if (conf_set(conf, "bootstrap.servers", brokers, err, errlen) != 0 ||
	    conf_set(conf, "acks", "all", err, errlen) != 0 ||
	    conf_set(conf, "enable.idempotence", "true", err, errlen) != 0 ||
	    /* One purchase in hand per process: batching would only add delay. */
	    conf_set(conf, "linger.ms", "0", err, errlen) != 0 ||
	    conf_set(conf, "message.timeout.ms", timeout, err, errlen) != 0 ||
	    /* The same item always lands on the same partition, as Java clients do. */
	    conf_set(conf, "partitioner", "murmur2_random", err, errlen) != 0 ||
	    conf_set(conf, "socket.keepalive.enable", "true", err, errlen) != 0 ||
	    conf_set(conf, "reconnect.backoff.max.ms", "1000", err, errlen) != 0 ||
	    conf_set(conf, "log_level", "3", err, errlen) != 0) {
		rd_kafka_conf_destroy(conf);
		return NULL;
	}
	rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
	if ((rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, errlen)) == NULL)
		rd_kafka_conf_destroy(conf);
	return rk;
}

fs_kafka_producer *
fs_kafka_producer_new(const char *brokers, int timeout_ms, char *err, size_t errlen)
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
	if ((p->rk = producer_create(brokers, timeout_ms, err, errlen)) == NULL) {
		free(p);
		return NULL;
	}
	return p;
}

void
fs_kafka_producer_free(fs_kafka_producer *p)
{
	if (p == NULL)
		return;
	if (p->rk != NULL)
		rd_kafka_destroy(p->rk);
	free(p);
}

void
fs_kafka_producer_flush(fs_kafka_producer *p, int timeout_ms)
{
	rd_kafka_flush(p->rk, timeout_ms);
}

/*
 * An idempotent producer that hit a fatal error refuses every later message:
 * replace it (messages already acknowledged are safe in the broker).
 */
static void
recreate_if_fatal(fs_kafka_producer *p)
{
	char reason[256], err[256];
	rd_kafka_t *rk;

	if (rd_kafka_fatal_error(p->rk, reason, sizeof(reason)) == RD_KAFKA_RESP_ERR_NO_ERROR)
		return;
	if ((rk = producer_create(p->brokers, p->timeout_ms, err, sizeof(err))) == NULL)
		return;
	rd_kafka_destroy(p->rk);
	p->rk = rk;
}

enum fs_kafka_delivery
fs_kafka_produce_sync(fs_kafka_producer *p, const char *topic, const char *key, size_t keylen,
    const char *value, size_t len)
{
	struct delivery d = { 0, RD_KAFKA_RESP_ERR_NO_ERROR, RD_KAFKA_MSG_STATUS_NOT_PERSISTED };
	rd_kafka_resp_err_t err;

	recreate_if_fatal(p);
	err = rd_kafka_producev(p->rk, RD_KAFKA_V_TOPIC(topic),
	    RD_KAFKA_V_KEY((void *)(uintptr_t)key, keylen),
	    RD_KAFKA_V_VALUE((void *)(uintptr_t)value, len), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
	    RD_KAFKA_V_OPAQUE(&d), RD_KAFKA_V_END);
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
		p->err = 1;
		snprintf(p->errstr, sizeof(p->errstr), "produce: %s", rd_kafka_err2str(err));
		return FS_KAFKA_NOT_DELIVERED;
	}
	/*
	 * librdkafka reports every message within message.timeout.ms, so the
	 * report, not our clock, decides; d lives on this stack, so we must not
	 * return before it arrived.
	 */
	while (!d.done)
		rd_kafka_poll(p->rk, 50);
	if (d.err == RD_KAFKA_RESP_ERR_NO_ERROR) {
		p->err = 0;
		return FS_KAFKA_DELIVERED;
	}
	p->err = 1;
	snprintf(p->errstr, sizeof(p->errstr), "delivery: %s", rd_kafka_err2str(d.err));
	return d.status == RD_KAFKA_MSG_STATUS_NOT_PERSISTED ? FS_KAFKA_NOT_DELIVERED :
							       FS_KAFKA_MAYBE_DELIVERED;
}

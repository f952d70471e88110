/*
 * Kafka driver (librdkafka): an idempotent producer that waits for the
 * broker's acknowledgement of each message, and a consumer-group member.
 */
#ifndef FS_KAFKA_H
#define FS_KAFKA_H

#include <stddef.h>

#include <librdkafka/rdkafka.h>

enum fs_kafka_delivery {
	FS_KAFKA_DELIVERED,        /* the broker has it (acks=all) */
	FS_KAFKA_NOT_DELIVERED,    /* the broker certainly does not have it */
	FS_KAFKA_MAYBE_DELIVERED,  /* timed out in flight: it may be in the log */
	FS_KAFKA_DELIVERY__MAX
};

typedef struct fs_kafka_producer {
	rd_kafka_t *rk;
	char brokers[512];
	int timeout_ms;
	int err;
	char errstr[256];
} fs_kafka_producer;

/*
 * A producer with acks=all and enable.idempotence=true. timeout_ms bounds
 * how long a message may wait for its acknowledgement (message.timeout.ms).
 */
fs_kafka_producer *fs_kafka_producer_new(const char *brokers, int timeout_ms, char *err, size_t errlen);
void fs_kafka_producer_free(fs_kafka_producer *);
/*
 * Sends one message and waits for its delivery report, which librdkafka
 * gives within timeout_ms; the answer is final.
 */
enum fs_kafka_delivery fs_kafka_produce_sync(fs_kafka_producer *, const char *topic, const char *key,
    size_t keylen, const char *value, size_t len);
/* Waits up to timeout_ms for every queued message (on shutdown). */
void fs_kafka_producer_flush(fs_kafka_producer *, int timeout_ms);

#endif

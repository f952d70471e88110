/*
 * Private to the lib/kafka family (kafka.c: the client set-up and the
 * producer; kafka_consumer.c: the consumer-group member; kafka_admin.c:
 * topics, lags, reading a topic).
 */
#ifndef FS_KAFKA_INT_H
#define FS_KAFKA_INT_H

#include <stddef.h>

#include "kafka.h"

/* One librdkafka setting of a client. */
struct fs_kafka_setting {
	const char *name;
	const char *value;
};

/*
 * The one way the family makes a librdkafka client: librdkafka's log lines
 * through fs_log, the brokers, the brokers' security (SASL_SSL as
 * FLASHSALE_KAFKA_USER: see kafka.c), log level 3 (errors), then set[0..nset)
 * in order; callbacks, when not NULL, sets the client's own hooks on the
 * configuration, and opaque, when not NULL, is what they are given. The
 * client (rd_kafka_destroy frees it), or NULL with err set.
 */
rd_kafka_t *fs_kafka_client_new(rd_kafka_type_t type, const char *brokers,
    const struct fs_kafka_setting *set, size_t nset, void (*callbacks)(rd_kafka_conf_t *),
    void *opaque, char *err, size_t errlen);

#endif

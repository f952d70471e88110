#include "config.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "jsonread.h"
#include "ordertopic.h"
#include "uuid.h"

#define DLQ_SUFFIX ".dlq"

int
fs_ordertopic_init(fs_ordertopic *t, const char *brokers, const char *topic, char *err,
    size_t errlen)
{
	memset(t, 0, sizeof(*t));
	if (strlen(brokers) >= sizeof(t->brokers)) {
		snprintf(err, errlen, "FLASHSALE_KAFKA_BROKERS too long");
		return -1;
	}
	if (*topic == '\0' || strlen(topic) + strlen(DLQ_SUFFIX) >= sizeof(t->dlq)) {
		snprintf(err, errlen, "FLASHSALE_KAFKA_TOPIC empty or too long");
		return -1;
	}
	snprintf(t->brokers, sizeof(t->brokers), "%s", brokers);
	snprintf(t->topic, sizeof(t->topic), "%s", topic);
	snprintf(t->dlq, sizeof(t->dlq), "%s" DLQ_SUFFIX, topic);
	return 0;
}

int
fs_ordertopic_open_producer(fs_ordertopic *t, int timeout_ms, int linger_ms, char *err,
    size_t errlen)
{
	if ((t->producer = fs_kafka_producer_new(t->brokers, timeout_ms, linger_ms, err, errlen)) ==
	    NULL)
		return -1;
	fs_kafka_producer_warm(t->producer, t->topic);
	return 0;
}

void
fs_ordertopic_close(fs_ordertopic *t)
{
	fs_kafka_producer_free(t->producer);
	t->producer = NULL;
}

int
fs_ordertopic_encode(const struct fs_order *o, char *out, size_t outlen)
{
	json_object *msg = json_object_new_object();
	int n;

	json_object_object_add(msg, "orderId", json_object_new_string(o->id));
	json_object_object_add(msg, "saleId", json_object_new_int64((int64_t)o->sale));
	json_object_object_add(msg, "itemId", json_object_new_int64((int64_t)o->item));
	json_object_object_add(msg, "userId", json_object_new_string(o->user));
	json_object_object_add(msg, "reservedAt", json_object_new_int64(o->reserved_ms));
	n = snprintf(out, outlen, "%s",
	    json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN));
	json_object_put(msg);
	return (n < 0 || (size_t)n >= outlen) ? -1 : n;
}

/* A string member of 1..max bytes of printable ASCII (no quote, no backslash). */
static const char *
member_text(json_object *doc, const char *name, size_t max)
{
	const char *s = fs_jsonread_string(doc, name, max);

	for (size_t i = 0; s != NULL && s[i] != '\0'; i++)
		if (s[i] <= ' ' || s[i] > '~' || s[i] == '"' || s[i] == '\\')
			return NULL;
	return s;
}

int
fs_ordertopic_decode(const void *msg, size_t len, struct fs_order *o)
{
	json_object *doc;
	const char *id, *user;
	char why[64];
	int64_t sale, item, reserved;
	int rc = -1;

	memset(o, 0, sizeof(*o));
	if (msg == NULL || len == 0 || len > FS_ORDERTOPIC_MESSAGE_MAX)
		return -1;
	if ((doc = fs_jsonread_object(msg, len, 4, why, sizeof(why))) == NULL)
		return -1;
	if ((id = member_text(doc, "orderId", FS_UUID_STRLEN)) == NULL ||
	    fs_uuid_parse(id, strlen(id), NULL) != 0 ||
	    (user = member_text(doc, "userId", FS_ORDERS_USER_MAX)) == NULL ||
	    fs_jsonread_int(doc, "saleId", 1, INT64_MAX, &sale) != 0 ||
	    fs_jsonread_int(doc, "itemId", 1, INT64_MAX, &item) != 0 ||
	    /* Milliseconds since 1970, before the year 9999. */
	    fs_jsonread_int(doc, "reservedAt", 1, INT64_C(253402300799999), &reserved) != 0)
		goto out;
	memcpy(o->id, id, FS_UUID_STRLEN + 1);
	snprintf(o->user, sizeof(o->user), "%s", user);
	o->sale = (uint64_t)sale;
	o->item = (uint64_t)item;
	o->reserved_ms = reserved;
	rc = 0;
out:
	json_object_put(doc);
	return rc;
}

/* An order message's key: its item in decimal, so one item's orders stay in one partition, in order. */
static size_t
item_key(uint64_t item, char key[24])
{
	snprintf(key, 24, "%" PRIu64, item);
	return strlen(key);
}

/* The order's message, keyed by its item, in the caller's key and value; -1 when too long. */
static int
order_msg(const struct fs_order *o, struct fs_kafka_msg *msg, char key[24],
    char value[FS_ORDERTOPIC_MESSAGE_MAX], char *err, size_t errlen)
{
	int n;

	memset(msg, 0, sizeof(*msg));
	if ((n = fs_ordertopic_encode(o, value, FS_ORDERTOPIC_MESSAGE_MAX)) < 0) {
		snprintf(err, errlen, "order message too long");
		return -1;
	}
	msg->key = key;
	msg->keylen = item_key(o->item, key);
	msg->value = value;
	msg->len = (size_t)n;
	return 0;
}

enum fs_kafka_delivery
fs_ordertopic_publish(fs_ordertopic *t, const struct fs_order *o, char *err, size_t errlen)
{
	struct fs_kafka_msg msg;
	char key[24], value[FS_ORDERTOPIC_MESSAGE_MAX];

	if (order_msg(o, &msg, key, value, err, errlen) != 0)
		return FS_KAFKA_NOT_DELIVERED;
	return fs_kafka_produce_all(t->producer, t->topic, &msg, 1, err, errlen);
}

int
fs_ordertopic_publish_async(fs_ordertopic *t, const struct fs_order *o, fs_kafka_sent *sent,
    void *arg, char *err, size_t errlen)
{
	struct fs_kafka_msg msg;
	char key[24], value[FS_ORDERTOPIC_MESSAGE_MAX];

	if (order_msg(o, &msg, key, value, err, errlen) != 0)
		return -1;
	return fs_kafka_produce_async(t->producer, t->topic, &msg, sent, arg, err, errlen);
}

enum fs_kafka_delivery
fs_ordertopic_dead_letters(fs_ordertopic *t, const struct fs_kafka_msg *msgs, size_t n, char *err,
    size_t errlen)
{
	if (n == 0)
		return FS_KAFKA_DELIVERED;
	return fs_kafka_produce_all(t->producer, t->dlq, msgs, n, err, errlen);
}

int
fs_ordertopic_replicas(const char *brokers)
{
	int n = 1;

	for (; *brokers != '\0'; brokers++)
		if (*brokers == ',')
			n++;
	return n < FS_ORDERTOPIC_REPLICAS_MAX ? n : FS_ORDERTOPIC_REPLICAS_MAX;
}

int
fs_ordertopic_create(const fs_ordertopic *t, char *err, size_t errlen)
{
	int replicas = fs_ordertopic_replicas(t->brokers);
	int min_insync = replicas > 2 ? replicas - 1 : 1;

	if (fs_kafka_create_topic(t->brokers, t->topic, FS_ORDERTOPIC_PARTITIONS, replicas,
		min_insync, err, errlen) != 0 ||
	    fs_kafka_create_topic(t->brokers, t->dlq, FS_ORDERTOPIC_DLQ_PARTITIONS, replicas,
		min_insync, err, errlen) != 0)
		return -1;
	return 0;
}

int
fs_ordertopic_grant(const fs_ordertopic *t, char *err, size_t errlen)
{
#define P(u) "User:" u
	const rd_kafka_ResourceType_t T = RD_KAFKA_RESOURCE_TOPIC, G = RD_KAFKA_RESOURCE_GROUP,
				      C = RD_KAFKA_RESOURCE_BROKER;
	const char *cluster = "kafka-cluster";
	const struct fs_kafka_acl acls[] = {
		/* The purchase handlers: idempotent writes of orders. */
		{ C, cluster, P(FS_ORDERTOPIC_USER_PURCHASE), RD_KAFKA_ACL_OPERATION_IDEMPOTENT_WRITE },
		{ T, t->topic, P(FS_ORDERTOPIC_USER_PURCHASE), RD_KAFKA_ACL_OPERATION_WRITE },
		{ T, t->topic, P(FS_ORDERTOPIC_USER_PURCHASE), RD_KAFKA_ACL_OPERATION_DESCRIBE },
		/* The consumer: reads orders in its group, writes dead letters (idempotent). */
		{ T, t->topic, P(FS_ORDERTOPIC_USER_CONSUMER), RD_KAFKA_ACL_OPERATION_READ },
		{ T, t->topic, P(FS_ORDERTOPIC_USER_CONSUMER), RD_KAFKA_ACL_OPERATION_DESCRIBE },
		{ G, FS_ORDERTOPIC_GROUP, P(FS_ORDERTOPIC_USER_CONSUMER), RD_KAFKA_ACL_OPERATION_READ },
		{ C, cluster, P(FS_ORDERTOPIC_USER_CONSUMER), RD_KAFKA_ACL_OPERATION_IDEMPOTENT_WRITE },
		{ T, t->dlq, P(FS_ORDERTOPIC_USER_CONSUMER), RD_KAFKA_ACL_OPERATION_WRITE },
		{ T, t->dlq, P(FS_ORDERTOPIC_USER_CONSUMER), RD_KAFKA_ACL_OPERATION_DESCRIBE },
		/* The monitors (metrics, expiry): the group's committed offsets and the ends. */
		{ T, t->topic, P(FS_ORDERTOPIC_USER_MONITOR), RD_KAFKA_ACL_OPERATION_DESCRIBE },
		{ G, FS_ORDERTOPIC_GROUP, P(FS_ORDERTOPIC_USER_MONITOR), RD_KAFKA_ACL_OPERATION_DESCRIBE },
		/* The replayer: reads dead letters, writes orders again (idempotent). */
		{ T, t->dlq, P(FS_ORDERTOPIC_USER_REPLAYER), RD_KAFKA_ACL_OPERATION_READ },
		{ T, t->dlq, P(FS_ORDERTOPIC_USER_REPLAYER), RD_KAFKA_ACL_OPERATION_DESCRIBE },
		{ C, cluster, P(FS_ORDERTOPIC_USER_REPLAYER), RD_KAFKA_ACL_OPERATION_IDEMPOTENT_WRITE },
		{ T, t->topic, P(FS_ORDERTOPIC_USER_REPLAYER), RD_KAFKA_ACL_OPERATION_WRITE },
		{ T, t->topic, P(FS_ORDERTOPIC_USER_REPLAYER), RD_KAFKA_ACL_OPERATION_DESCRIBE },
	};
#undef P

	return fs_kafka_create_acls(t->brokers, acls, sizeof(acls) / sizeof(acls[0]), err, errlen);
}

fs_kafka_consumer *
fs_ordertopic_subscribe(const fs_ordertopic *t, int track_eof, char *err, size_t errlen)
{
	return fs_kafka_consumer_new(t->brokers, FS_ORDERTOPIC_GROUP, t->topic, track_eof, err,
	    errlen);
}

long long
fs_ordertopic_lag(const fs_ordertopic *t, int timeout_ms, char *err, size_t errlen)
{
	return fs_kafka_group_lag(t->brokers, FS_ORDERTOPIC_GROUP, t->topic, timeout_ms, err, errlen);
}

int
fs_ordertopic_backlog(const fs_ordertopic *t, int timeout_ms, struct fs_ordertopic_backlog *b,
    char *err, size_t errlen)
{
	/* Taken before the offsets: whatever was produced by then is counted. */
	b->read_ms = fs_clock_now_ms();
	b->partitions = fs_kafka_group_lags(t->brokers, FS_ORDERTOPIC_GROUP, t->topic, timeout_ms,
	    b->lag, FS_KAFKA_PARTITIONS_MAX, err, errlen);
	return b->partitions < 0 ? -1 : 0;
}

int
fs_ordertopic_caught_up(const struct fs_ordertopic_backlog *b, uint64_t item)
{
	char key[24];
	size_t len = item_key(item, key);

	if (b == NULL || b->partitions <= 0)
		return 0;
	return b->lag[fs_kafka_partition_of(key, len, b->partitions)] == 0;
}

long long
fs_ordertopic_backlog_total(const struct fs_ordertopic_backlog *b)
{
	long long sum = 0;

	for (int i = 0; b != NULL && i < b->partitions; i++)
		sum += b->lag[i];
	return b == NULL || b->partitions <= 0 ? -1 : sum;
}

struct on_their_way {
	uint64_t sale;
	struct fs_order *orders;
	size_t n, cap;
};

static int
collect_order(void *arg, const rd_kafka_message_t *m)
{
	struct on_their_way *w = arg;
	struct fs_order o, *grown;

	if (fs_ordertopic_decode(m->payload, m->len, &o) != 0 ||
	    (w->sale != 0 && o.sale != w->sale))
		return 0;
	if (w->n == w->cap) {
		size_t cap = w->cap == 0 ? 256 : w->cap * 2;

		if ((grown = realloc(w->orders, cap * sizeof(*grown))) == NULL)
			return -1;
		w->orders = grown;
		w->cap = cap;
	}
	w->orders[w->n++] = o;
	return 0;
}

int
fs_ordertopic_on_their_way(const fs_ordertopic *t, uint64_t sale, int timeout_ms,
    struct fs_order **orders, size_t *n, char *err, size_t errlen)
{
	struct on_their_way w = { sale, NULL, 0, 0 };

	*orders = NULL;
	*n = 0;
	if (fs_kafka_read_topic(t->brokers, t->topic, FS_ORDERTOPIC_GROUP, LONG_MAX, timeout_ms, collect_order,
		&w, err, errlen) < 0) {
		free(w.orders);
		return -1;
	}
	*orders = w.orders;
	*n = w.n;
	return 0;
}

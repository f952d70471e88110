#include "config.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "b64url.h"
#include "clock.h"
#include "jsonread.h"
#include "ordertopic.h"
#include "uuid.h"

#define DLQ_SUFFIX ".dlq"
#define MAC_LABEL "flashsale-order-v1"	/* the first bytes MACed: what the MAC is of */
#define MSG_KEY_MAX 64			/* bytes of a message key worth reading */
#define HDR_KID "fs-kid"
#define HDR_MAC "fs-mac"

static const char *const verdict_names[FS_ORDERTOPIC_VERDICT__MAX] = {
	[FS_ORDERTOPIC_OK] = "OK",
	[FS_ORDERTOPIC_MALFORMED] = "MALFORMED",
	[FS_ORDERTOPIC_NO_MAC] = "NO_MAC",
	[FS_ORDERTOPIC_UNKNOWN_KEY] = "UNKNOWN_KEY",
	[FS_ORDERTOPIC_BAD_MAC] = "BAD_MAC",
};

const char *
fs_ordertopic_verdict_name(enum fs_ordertopic_verdict v)
{
	return v >= 0 && v < FS_ORDERTOPIC_VERDICT__MAX ? verdict_names[v] : "?";
}

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
	sodium_memzero(t->keys, sizeof(t->keys));
	t->nkeys = 0;
}

/* A key id: 1 to FS_ORDERTOPIC_KID_MAX of [A-Za-z0-9._-]. */
static int
kid_ok(const char *s, size_t len)
{
	if (len == 0 || len > FS_ORDERTOPIC_KID_MAX)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", s[i]) ==
		    NULL || s[i] == '\0')
			return 0;
	return 1;
}

/* One line "kid:key" of a key ring into k; 0, or -1 with err saying why (never the key). */
static int
parse_key_line(const char *line, size_t len, int lineno, struct fs_ordertopic_key *k, char *err,
    size_t errlen)
{
	const char *colon = memchr(line, ':', len);
	size_t keylen = 0;

	if (colon == NULL || !kid_ok(line, (size_t)(colon - line))) {
		snprintf(err, errlen, "order keys line %d: want kid:key, the kid 1-%d of [A-Za-z0-9._-]",
		    lineno, FS_ORDERTOPIC_KID_MAX);
		return -1;
	}
	memcpy(k->kid, line, (size_t)(colon - line));
	k->kid[colon - line] = '\0';
	if (fs_b64url_decode(k->key, sizeof(k->key), colon + 1, len - (size_t)(colon - line) - 1,
		&keylen) != FS_B64URL_OK ||
	    keylen != sizeof(k->key)) {
		snprintf(err, errlen, "order keys line %d (%s): the key is not base64url of %d bytes",
		    lineno, k->kid, FS_ORDERTOPIC_KEY_BYTES);
		return -1;
	}
	return 0;
}

int
fs_ordertopic_set_keys(fs_ordertopic *t, const char *text, size_t len, char *err, size_t errlen)
{
	struct fs_ordertopic_key ring[FS_ORDERTOPIC_KEYS_MAX];
	const char *p = text, *end = text + len;
	int n = 0, lineno = 0;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t linelen = (size_t)((nl != NULL ? nl : end) - p);

		lineno++;
		if (linelen > 0 && p[linelen - 1] == '\r')
			linelen--;
		if (linelen > 0 && *p != '#') {
			if (n == FS_ORDERTOPIC_KEYS_MAX) {
				snprintf(err, errlen, "more than %d order keys", FS_ORDERTOPIC_KEYS_MAX);
				goto fail;
			}
			if (parse_key_line(p, linelen, lineno, &ring[n], err, errlen) != 0)
				goto fail;
			for (int i = 0; i < n; i++)
				if (strcmp(ring[i].kid, ring[n].kid) == 0) {
					snprintf(err, errlen, "order keys line %d: key id %s twice",
					    lineno, ring[n].kid);
					goto fail;
				}
			n++;
		}
		p += (nl != NULL ? (size_t)(nl - p) + 1 : linelen);
		if (nl == NULL)
			break;
	}
	if (n == 0) {
		snprintf(err, errlen, "no order key");
		goto fail;
	}
	sodium_memzero(t->keys, sizeof(t->keys));
	memcpy(t->keys, ring, (size_t)n * sizeof(ring[0]));
	t->nkeys = n;
	sodium_memzero(ring, sizeof(ring));
	return 0;
fail:
	sodium_memzero(ring, sizeof(ring));
	return -1;
}

/*
 * What the MAC is over, into buf (at least MAC_INPUT_MAX bytes): the label,
 * the key id, the message key and the value, each after its length (4
 * bytes, big-endian), so that no two messages share it. Its length, or 0
 * when the message is too long to be an order.
 */
#define MAC_INPUT_MAX (sizeof(MAC_LABEL) + 16 + FS_ORDERTOPIC_KID_MAX + MSG_KEY_MAX + \
    FS_ORDERTOPIC_MESSAGE_MAX)
static size_t
mac_input(unsigned char *buf, const char *kid, const void *key, size_t keylen, const void *value,
    size_t len)
{
	const void *part[4] = { MAC_LABEL, kid, key, value };
	size_t plen[4] = { sizeof(MAC_LABEL) - 1, strlen(kid), keylen, len }, n = 0;

	if (plen[1] > FS_ORDERTOPIC_KID_MAX || keylen > MSG_KEY_MAX || len > FS_ORDERTOPIC_MESSAGE_MAX)
		return 0;
	for (int i = 0; i < 4; i++) {
		buf[n++] = (unsigned char)(plen[i] >> 24);
		buf[n++] = (unsigned char)(plen[i] >> 16);
		buf[n++] = (unsigned char)(plen[i] >> 8);
		buf[n++] = (unsigned char)plen[i];
		if (plen[i] > 0)
			memcpy(buf + n, part[i], plen[i]);
		n += plen[i];
	}
	return n;
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

/* The MAC of a message under the first order key: its id into kid, the MAC (base64url) into mac. */
static int
sign(const fs_ordertopic *t, const void *key, size_t keylen, const void *value,
    size_t len, char kid[FS_ORDERTOPIC_KID_MAX + 1], char mac[FS_ORDERTOPIC_MAC_TEXT + 1],
    char *err, size_t errlen)
{
	unsigned char in[MAC_INPUT_MAX], bin[crypto_auth_BYTES];
	size_t inlen;

	if (t->nkeys == 0) {
		snprintf(err, errlen, "no order key to sign the order with");
		return -1;
	}
	snprintf(kid, FS_ORDERTOPIC_KID_MAX + 1, "%s", t->keys[0].kid);
	if ((inlen = mac_input(in, kid, key, keylen, value, len)) == 0) {
		snprintf(err, errlen, "order message too long");
		return -1;
	}
	crypto_auth(bin, in, inlen, t->keys[0].key);
	if (fs_b64url_encode(mac, FS_ORDERTOPIC_MAC_TEXT + 1, bin, sizeof(bin), NULL) !=
	    FS_B64URL_OK) {
		snprintf(err, errlen, "order MAC does not fit");
		return -1;
	}
	return 0;
}

/* Points m's Kafka form at its buffers; the key and value are there, kid and mac made. */
static void
wire(struct fs_ordertopic_msg *m, size_t keylen, size_t len)
{
	m->kafka.key = m->key;
	m->kafka.keylen = keylen;
	m->kafka.value = m->value;
	m->kafka.len = len;
	m->kafka.header[0] = (struct fs_kafka_header){ HDR_KID, m->kid };
	m->kafka.header[1] = (struct fs_kafka_header){ HDR_MAC, m->mac };
}

int
fs_ordertopic_message(const fs_ordertopic *t, const struct fs_order *o, struct fs_ordertopic_msg *m,
    char *err, size_t errlen)
{
	size_t keylen;
	int n;

	memset(m, 0, sizeof(*m));
	if ((n = fs_ordertopic_encode(o, m->value, sizeof(m->value))) < 0) {
		snprintf(err, errlen, "order message too long");
		return -1;
	}
	keylen = item_key(o->item, m->key);
	if (sign(t, m->key, keylen, m->value, (size_t)n, m->kid, m->mac, err, errlen) != 0)
		return -1;
	wire(m, keylen, (size_t)n);
	return 0;
}

int
fs_ordertopic_message_bytes(const fs_ordertopic *t, const void *key, size_t keylen,
    const void *value, size_t len, struct fs_ordertopic_msg *m, char *err, size_t errlen)
{
	memset(m, 0, sizeof(*m));
	if (keylen > sizeof(m->key) || len > sizeof(m->value)) {
		snprintf(err, errlen, "message key or value too long for an order message");
		return -1;
	}
	memcpy(m->key, key, keylen);
	memcpy(m->value, value, len);
	if (sign(t, m->key, keylen, m->value, len, m->kid, m->mac, err, errlen) != 0)
		return -1;
	wire(m, keylen, len);
	return 0;
}

enum fs_ordertopic_verdict
fs_ordertopic_read(const fs_ordertopic *t, const rd_kafka_message_t *m, struct fs_order *o)
{
	unsigned char in[MAC_INPUT_MAX], mac[crypto_auth_BYTES];
	char kid[FS_ORDERTOPIC_KID_MAX + 2], text[FS_ORDERTOPIC_MAC_TEXT + 2];
	const struct fs_ordertopic_key *k = NULL;
	size_t maclen = 0, inlen;

	memset(o, 0, sizeof(*o));
	if (!fs_kafka_msg_header(m, HDR_KID, kid, sizeof(kid)) ||
	    !fs_kafka_msg_header(m, HDR_MAC, text, sizeof(text)))
		return FS_ORDERTOPIC_NO_MAC;
	for (int i = 0; i < t->nkeys && kid_ok(kid, strlen(kid)); i++)
		if (strcmp(t->keys[i].kid, kid) == 0)
			k = &t->keys[i];
	if (k == NULL)
		return FS_ORDERTOPIC_UNKNOWN_KEY;
	if (fs_b64url_decode(mac, sizeof(mac), text, strlen(text), &maclen) != FS_B64URL_OK ||
	    maclen != sizeof(mac) ||
	    (inlen = mac_input(in, kid, m->key, m->key_len, m->payload, m->len)) == 0 ||
	    crypto_auth_verify(mac, in, inlen, k->key) != 0)
		return FS_ORDERTOPIC_BAD_MAC;
	if (m->payload == NULL || fs_ordertopic_decode(m->payload, m->len, o) != 0)
		return FS_ORDERTOPIC_MALFORMED;
	return FS_ORDERTOPIC_OK;
}

enum fs_kafka_delivery
fs_ordertopic_publish(fs_ordertopic *t, const struct fs_order *o, char *err, size_t errlen)
{
	struct fs_ordertopic_msg m;

	if (fs_ordertopic_message(t, o, &m, err, errlen) != 0)
		return FS_KAFKA_NOT_DELIVERED;
	return fs_kafka_produce_all(t->producer, t->topic, &m.kafka, 1, err, errlen);
}

int
fs_ordertopic_publish_async(fs_ordertopic *t, const struct fs_order *o, fs_kafka_sent *sent,
    void *arg, char *err, size_t errlen)
{
	struct fs_ordertopic_msg m;

	if (fs_ordertopic_message(t, o, &m, err, errlen) != 0)
		return -1;
	return fs_kafka_produce_async(t->producer, t->topic, &m.kafka, sent, arg, err, errlen);
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
		/*
		 * The replayer: reads dead letters (as fs_kafka_read_topic does: its
		 * reader group's coordinator, no offsets), writes orders again
		 * (idempotent).
		 */
		{ T, t->dlq, P(FS_ORDERTOPIC_USER_REPLAYER), RD_KAFKA_ACL_OPERATION_READ },
		{ T, t->dlq, P(FS_ORDERTOPIC_USER_REPLAYER), RD_KAFKA_ACL_OPERATION_DESCRIBE },
		{ G, FS_KAFKA_READER_GROUP, P(FS_ORDERTOPIC_USER_REPLAYER), RD_KAFKA_ACL_OPERATION_DESCRIBE },
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
	const fs_ordertopic *t;
	uint64_t sale;
	struct fs_order *orders;
	size_t n, cap;
};

static int
collect_order(void *arg, const rd_kafka_message_t *m)
{
	struct on_their_way *w = arg;
	struct fs_order o, *grown;

	if (fs_ordertopic_read(w->t, m, &o) != FS_ORDERTOPIC_OK ||
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
	struct on_their_way w = { t, sale, NULL, 0, 0 };

	*orders = NULL;
	*n = 0;
	if (t->nkeys == 0) {
		snprintf(err, errlen, "no order key: an order message cannot be checked");
		return -1;
	}
	if (fs_kafka_read_topic(t->brokers, t->topic, FS_ORDERTOPIC_GROUP, LONG_MAX, timeout_ms, collect_order,
		&w, err, errlen) < 0) {
		free(w.orders);
		return -1;
	}
	*orders = w.orders;
	*n = w.n;
	return 0;
}

/*
 * The order topic's contract, in one place: the topic and its dead-letter
 * topic "<topic>.dlq", their partitions, the consumer group that records
 * orders, the message key (the item id, so one item's orders keep their
 * order) and the message itself,
 *   {"orderId":"<uuidv7>","saleId":S,"itemId":I,"userId":"<sub>","reservedAt":<ms>}.
 * The Kafka driver (kafka.h) carries bytes; this module says what they are.
 *
 * Every order message proves that a purchase handler made it: two headers,
 * fs-kid (the order key's id) and fs-mac (base64url of crypto_auth,
 * HMAC-SHA512-256, under that key over "flashsale-order-v1", the key id,
 * the message key and the value, each with its length), so that a writer
 * that can reach the topic but holds no order key (whatever its broker
 * credentials) makes no order. The order keys are a key ring of lines
 * "kid:base64url(32 bytes)": the first line signs, every line verifies
 * (docs/SECURITY.md: rotating the order key).
 */
#ifndef FS_ORDERTOPIC_H
#define FS_ORDERTOPIC_H

#include <stddef.h>
#include <stdint.h>

#include "kafka.h"
#include "orders.h"

#define FS_ORDERTOPIC_NAME_MAX	249	/* Kafka's limit on a topic name */
#define FS_ORDERTOPIC_MESSAGE_MAX 1024	/* bytes in an order message */
#define FS_ORDERTOPIC_PARTITIONS 8
#define FS_ORDERTOPIC_DLQ_PARTITIONS 1
#define FS_ORDERTOPIC_REPLICAS_MAX 3	/* copies of each partition, at most */
#define FS_ORDERTOPIC_GROUP	"flashsale-consumer"
#define FS_ORDERTOPIC_KEYS_MAX	4	/* order keys in the ring (a rotation needs two) */
#define FS_ORDERTOPIC_KID_MAX	16	/* bytes of a key id: [A-Za-z0-9._-] */
#define FS_ORDERTOPIC_KEY_BYTES	32	/* crypto_auth_KEYBYTES */
#define FS_ORDERTOPIC_MAC_TEXT	43	/* base64url of the 32-byte MAC */
#define FS_ORDERTOPIC_KEYFILE_MAX 1024	/* bytes of a key ring file */

/* One order key: its id and its secret. */
struct fs_ordertopic_key {
	char kid[FS_ORDERTOPIC_KID_MAX + 1];
	unsigned char key[FS_ORDERTOPIC_KEY_BYTES];
};

/*
 * The Kafka principals (SCRAM users) of the jobs, each granted only what
 * its job needs (fs_ordertopic_grant). The brokers' own principal and the
 * operator's (topics and ACLs: the right to grant is the right to take
 * anything) are the brokers' super.users, granted nothing here.
 */
#define FS_ORDERTOPIC_USER_PURCHASE "flashsale-purchase" /* writes orders */
#define FS_ORDERTOPIC_USER_CONSUMER "flashsale-consumer" /* records them; writes dead letters */
#define FS_ORDERTOPIC_USER_MONITOR  "flashsale-monitor"	 /* reads the group's lag */
#define FS_ORDERTOPIC_USER_REPLAYER "flashsale-replayer" /* replays dead letters */

typedef struct fs_ordertopic {
	char brokers[512];
	char topic[FS_ORDERTOPIC_NAME_MAX + 1];
	char dlq[FS_ORDERTOPIC_NAME_MAX + 1];
	fs_kafka_producer *producer; /* owned; NULL until fs_ordertopic_open_producer */
	struct fs_ordertopic_key keys[FS_ORDERTOPIC_KEYS_MAX]; /* keys[0] signs, all verify */
	int nkeys; /* 0 until fs_ordertopic_set_keys: nothing signs, nothing verifies */
} fs_ordertopic;

/* What reading a message of the topic found: an order, or why it is none. */
enum fs_ordertopic_verdict {
	FS_ORDERTOPIC_OK = 0,		/* an order, made by a holder of an order key */
	FS_ORDERTOPIC_MALFORMED,	/* its MAC checks but it is no order message */
	FS_ORDERTOPIC_NO_MAC,		/* no fs-kid or no fs-mac header */
	FS_ORDERTOPIC_UNKNOWN_KEY,	/* fs-kid names no key of the ring */
	FS_ORDERTOPIC_BAD_MAC,		/* the MAC does not check: forged or altered */
	FS_ORDERTOPIC_VERDICT__MAX
};

/* A message built for the topic: its Kafka form points into the buffers beside it. */
struct fs_ordertopic_msg {
	struct fs_kafka_msg kafka;
	char key[24];
	char value[FS_ORDERTOPIC_MESSAGE_MAX];
	char kid[FS_ORDERTOPIC_KID_MAX + 1];
	char mac[FS_ORDERTOPIC_MAC_TEXT + 1];
};

/* Names the topics of brokers; 0, or -1 with err written (a name too long). */
int fs_ordertopic_init(fs_ordertopic *, const char *brokers, const char *topic, char *err,
    size_t errlen);
/*
 * Opens the idempotent producer (acks=all; timeout_ms per message,
 * linger_ms to gather company) and fetches the topic's metadata, so the
 * first order does not wait for it. 0, or -1 with err written.
 */
int fs_ordertopic_open_producer(fs_ordertopic *, int timeout_ms, int linger_ms, char *err,
    size_t errlen);
/* Flushes and closes the producer and wipes the keys; a zeroed or closed topic is fine. */
void fs_ordertopic_close(fs_ordertopic *);
/*
 * Sets the order keys from a key ring's text (len bytes): one line
 * "kid:base64url-key" per key, 1 to FS_ORDERTOPIC_KEYS_MAX of them, ids
 * distinct; blank lines and lines starting with # are skipped. 0, or -1
 * with err saying which line is wrong (never a key) and no key set.
 */
int fs_ordertopic_set_keys(fs_ordertopic *, const char *text, size_t len, char *err,
    size_t errlen) __attribute__((warn_unused_result));
/* The verdict's name, as dead letters carry it ("NO_MAC" ...). */
const char *fs_ordertopic_verdict_name(enum fs_ordertopic_verdict);

/* The order message of o (id, sale, item, user, reserved_ms): its length, or -1 when too big. */
int fs_ordertopic_encode(const struct fs_order *, char *out, size_t outlen);
/*
 * Reads an order message (len bytes) into o: id, sale, item, user and
 * reserved_ms, the rest zero. -1 for anything else, which can never
 * become an order.
 */
int fs_ordertopic_decode(const void *msg, size_t len, struct fs_order *o);
/*
 * The one way to make an order's message: encoded, keyed by its item and
 * signed with the first order key into m. 0, or -1 with err written (no
 * key, or too long).
 */
int fs_ordertopic_message(const fs_ordertopic *, const struct fs_order *,
    struct fs_ordertopic_msg *m, char *err, size_t errlen);
/*
 * The same for a message key and value given as bytes (a tool that writes
 * messages by hand): copied into m and signed. 0, or -1 with err written
 * (no key, or a key or value too long for an order message).
 */
int fs_ordertopic_message_bytes(const fs_ordertopic *, const void *key, size_t keylen,
    const void *value, size_t len, struct fs_ordertopic_msg *m, char *err, size_t errlen);
/*
 * The one way to read a message of the topic (or a dead letter): its MAC
 * checked in constant time under the key its fs-kid names, then its order
 * decoded into o. Anything but FS_ORDERTOPIC_OK leaves o zeroed and can
 * never become an order.
 */
enum fs_ordertopic_verdict fs_ordertopic_read(const fs_ordertopic *, const rd_kafka_message_t *,
    struct fs_order *o) __attribute__((warn_unused_result));

/* Publishes one order, keyed by its item, and waits for the broker's answer. Thread-safe. */
enum fs_kafka_delivery fs_ordertopic_publish(fs_ordertopic *, const struct fs_order *, char *err,
    size_t errlen);
/*
 * Publishes one order without waiting: 0 when it is on its way and sent
 * will be told its fate (fs_kafka_produce_async); -1 with err when it
 * never left.
 */
int fs_ordertopic_publish_async(fs_ordertopic *, const struct fs_order *, fs_kafka_sent *sent,
    void *arg, char *err, size_t errlen);
/*
 * Sends n messages of the topic (key and value as read, the headers of the
 * original and a reason) to the dead letters and waits for the broker's
 * answer.
 */
enum fs_kafka_delivery fs_ordertopic_dead_letters(fs_ordertopic *, const struct fs_kafka_msg *,
    size_t n, char *err, size_t errlen);
/*
 * The replication of both topics: one copy per broker of the list, at most
 * FS_ORDERTOPIC_REPLICAS_MAX; with three or more copies a write is
 * acknowledged once all but one have it (min.insync.replicas), so a broker
 * may die without losing an acknowledged order or refusing new ones.
 */
int fs_ordertopic_replicas(const char *brokers);
/* Creates the topic and its dead letters (idempotent); 0, or -1 with err written. */
int fs_ordertopic_create(const fs_ordertopic *, char *err, size_t errlen);
/*
 * Grants each job's principal its ACLs on the topics, the group and the
 * cluster (idempotent; needs the operator's principal); 0, or -1 with err.
 */
int fs_ordertopic_grant(const fs_ordertopic *, char *err, size_t errlen);
/* Joins the recording group on the topic (track_eof: see fs_kafka_consumer_new). */
fs_kafka_consumer *fs_ordertopic_subscribe(const fs_ordertopic *, int track_eof, char *err,
    size_t errlen);
/* The messages the recording group has not committed yet; -1 with err written. */
long long fs_ordertopic_lag(const fs_ordertopic *, int timeout_ms, char *err, size_t errlen);

/*
 * The recording group's backlog per partition, and when it was read: the
 * clock taken before the offsets, so every message produced before read_ms
 * is either counted in its partition's lag or recorded already.
 */
struct fs_ordertopic_backlog {
	int64_t read_ms;
	int partitions;
	long long lag[FS_KAFKA_PARTITIONS_MAX];
};
/* Reads it; 0, or -1 with err written. */
int fs_ordertopic_backlog(const fs_ordertopic *, int timeout_ms, struct fs_ordertopic_backlog *,
    char *err, size_t errlen);
/*
 * True when the partition of the item's orders had nothing left to record
 * at read_ms: an order of that item accepted before then is in PostgreSQL.
 * False for a NULL or unread backlog.
 */
int fs_ordertopic_caught_up(const struct fs_ordertopic_backlog *, uint64_t item);
/* The sum over the partitions, or -1 for a NULL or unread backlog. */
long long fs_ordertopic_backlog_total(const struct fs_ordertopic_backlog *);

/*
 * The orders on their way: the messages of the topic that the recording
 * group has not committed yet (accepted with a 202, not recorded for sure),
 * of one sale (0: every sale), in topic order per partition. *orders is the
 * caller's to free. 0, or -1 with err set; a message that is no order, or
 * whose MAC does not check, is skipped (it can never become one).
 */
int fs_ordertopic_on_their_way(const fs_ordertopic *, uint64_t sale, int timeout_ms,
    struct fs_order **orders, size_t *n, char *err, size_t errlen);
#endif

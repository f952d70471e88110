/*
 * Unit test of lib/ordertopic: the order message and the topic names; the
 * order keys' ring; and the MAC that proves a purchase handler made an
 * order message (issue 33), through librdkafka's mock cluster so that the
 * headers travel as on a broker: an honest message reads back, and none
 * without a MAC, under an unknown or removed key id, with a wrong MAC, or
 * with its value or message key altered becomes an order.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ordertopic.h"
#include "expect.h"
/* After rdkafka.h, which ordertopic.h includes. */
#include <librdkafka/rdkafka_mock.h>

/* Two order keys (base64url of 32 bytes) and a third under an id of the first. */
#define KEY_A "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"
#define KEY_B "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8"
#define KEY_C "QEFCQ0RFRkdISUpLTE1OT1BRUlNUVVZXWFlaW1xdXl8"

/* The process's CPU time in microseconds. */
static double
cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* The verdicts of the messages read from a topic, in order. */
struct verdicts {
	const fs_ordertopic *reader;
	int n;
	enum fs_ordertopic_verdict v[16];
	struct fs_order first;
};

static int
judge(void *arg, const rd_kafka_message_t *m)
{
	struct verdicts *r = arg;
	struct fs_order o;

	if (r->n < 16)
		r->v[r->n] = fs_ordertopic_read(r->reader, m, &o);
	if (r->n == 0)
		r->first = o;
	r->n++;
	return 0;
}

/* The verdicts reader gives the messages of topic; the count, or -1. */
static int
read_all(const char *brokers, const char *topic, const fs_ordertopic *reader, struct verdicts *r)
{
	char err[256];

	memset(r, 0, sizeof(*r));
	r->reader = reader;
	if (fs_kafka_read_topic(brokers, topic, NULL, 16, 10000, judge, r, err, sizeof(err)) < 0) {
		printf("# %s\n", err);
		return -1;
	}
	return r->n;
}

/* A ring from text, or a failed check. */
static int
ring(fs_ordertopic *t, const char *text)
{
	char err[256];

	return fs_ordertopic_set_keys(t, text, strlen(text), err, sizeof(err));
}

/* The key ring's parser: what it takes, what it refuses, and that it never says a key. */
static void
test_keys(void)
{
	fs_ordertopic t;
	char err[256];
	const char *bad[] = {
		"", "# only a comment\n\n", "k1\n", ":" KEY_A "\n", "k 1:" KEY_A "\n",
		"k1:" KEY_A "x\n", "k1:AAEC\n", "k1:" KEY_A "=\n",
		"k1:" KEY_A "\nk1:" KEY_B "\n", "k12345678901234567:" KEY_A "\n",
		"a:" KEY_A "\nb:" KEY_B "\nc:" KEY_C "\nd:" KEY_A "\ne:" KEY_B "\n",
		"k1:\xc3\xa9" "ECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8\n",
	};

	memset(&t, 0, sizeof(t));
	check(ring(&t, "# the order keys\nnew:" KEY_B "\r\n\nold:" KEY_A) == 0 && t.nkeys == 2 &&
		strcmp(t.keys[0].kid, "new") == 0 && strcmp(t.keys[1].kid, "old") == 0 &&
		t.keys[1].key[31] == 31,
	    "a ring of two keys (a comment, a blank line, CRLF, no final newline); the first signs");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char what[160];
		int refused = fs_ordertopic_set_keys(&t, bad[i], strlen(bad[i]), err, sizeof(err)) == -1;

		snprintf(what, sizeof(what), "bad ring %zu refused, the keys set before kept, the key "
					     "never in the error (%s)", i, err);
		check(refused && t.nkeys == 2 && strstr(err, KEY_A) == NULL &&
			strstr(err, KEY_B) == NULL && strstr(err, "AAEC") == NULL,
		    what);
	}
	fs_ordertopic_close(&t);
	check(t.nkeys == 0 && t.keys[1].key[31] == 0, "close wipes the keys");
}

/*
 * The MAC through a broker: forged, altered and rotated messages. Every
 * message goes to one partition, so they read back in the order written.
 */
static void
test_mac(void)
{
	struct fs_order o = { .id = "01900000-0000-7000-8000-000000000001", .sale = 7, .item = 11,
		.user = "alice", .reserved_ms = INT64_C(1767323045678) };
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_mock_cluster_t *mc;
	rd_kafka_t *rk = NULL;
	fs_ordertopic w, now, before, after, nokey;
	struct fs_ordertopic_msg m, other;
	struct fs_kafka_msg forged[8];
	struct verdicts r;
	const char *brokers;
	char err[256], altered[FS_ORDERTOPIC_MESSAGE_MAX], *at;
	int n = 0;

	memset(&w, 0, sizeof(w));
	memset(&nokey, 0, sizeof(nokey));
	if (rd_kafka_conf_set(conf, "test.mock.num.brokers", "1", err, sizeof(err)) !=
		RD_KAFKA_CONF_OK ||
	    rd_kafka_conf_set(conf, "log_level", "0", err, sizeof(err)) != RD_KAFKA_CONF_OK ||
	    (rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err))) == NULL ||
	    (mc = rd_kafka_handle_mock_cluster(rk)) == NULL ||
	    rd_kafka_mock_topic_create(mc, "orders", 1, 1) != RD_KAFKA_RESP_ERR_NO_ERROR ||
	    rd_kafka_mock_topic_create(mc, "rotated", 1, 1) != RD_KAFKA_RESP_ERR_NO_ERROR ||
	    (brokers = rd_kafka_mock_cluster_bootstraps(mc)) == NULL ||
	    fs_ordertopic_init(&w, brokers, "orders", err, sizeof(err)) != 0 ||
	    ring(&w, "k1:" KEY_A "\n") != 0 ||
	    fs_ordertopic_open_producer(&w, 5000, 1, err, sizeof(err)) != 0) {
		printf("Bail out! librdkafka's mock cluster: %s\n", err);
		exit(1);
	}
	check(fs_ordertopic_message(&nokey, &o, &m, err, sizeof(err)) == -1 && err[0] != '\0',
	    "without an order key no message is made");
	check(fs_ordertopic_message(&w, &o, &m, err, sizeof(err)) == 0 &&
		strcmp(m.kid, "k1") == 0 && strlen(m.mac) == FS_ORDERTOPIC_MAC_TEXT &&
		strcmp(m.kafka.header[0].name, "fs-kid") == 0 &&
		strcmp(m.kafka.header[1].name, "fs-mac") == 0 && m.kafka.keylen == 2 &&
		memcmp(m.kafka.key, "11", 2) == 0,
	    "the message: keyed by its item, fs-kid and fs-mac headers (base64url, 43 characters)");

	/* 0: honest. */
	check(fs_ordertopic_publish(&w, &o, err, sizeof(err)) == FS_KAFKA_DELIVERED, "an honest order");
	n++;
	/* 1: no MAC; 2: a key id without a MAC. */
	forged[0] = m.kafka;
	memset(forged[0].header, 0, sizeof(forged[0].header));
	forged[1] = forged[0];
	forged[1].header[0] = (struct fs_kafka_header){ "fs-kid", "k1" };
	/* 3: an unknown key id with the honest MAC. */
	forged[2] = m.kafka;
	forged[2].header[0] = (struct fs_kafka_header){ "fs-kid", "k9" };
	/* 4: a wrong MAC of the right form. */
	forged[3] = m.kafka;
	forged[3].header[1] = (struct fs_kafka_header){ "fs-mac", KEY_B };
	/* 5: the honest MAC over an altered value (another shopper). */
	snprintf(altered, sizeof(altered), "%.*s", (int)m.kafka.len, m.kafka.value);
	at = strstr(altered, "alice");
	memcpy(at, "mallo", 5);
	forged[4] = m.kafka;
	forged[4].value = altered;
	/* 6: the honest MAC under another message key (another partition's order). */
	forged[5] = m.kafka;
	forged[5].key = "12";
	/* 7: a MAC that is not base64url of 32 bytes. */
	forged[6] = m.kafka;
	forged[6].header[1] = (struct fs_kafka_header){ "fs-mac", "not a mac" };
	check(fs_kafka_produce_all(w.producer, "orders", forged, 7, err, sizeof(err)) ==
		FS_KAFKA_DELIVERED, "seven forged or altered messages written by a producer of the topic");
	n += 7;
	check(read_all(brokers, "orders", &w, &r) == n && r.v[0] == FS_ORDERTOPIC_OK &&
		strcmp(r.first.id, o.id) == 0 && strcmp(r.first.user, "alice") == 0 &&
		r.first.item == 11 && r.first.reserved_ms == o.reserved_ms,
	    "the honest order reads back whole");
	check(r.v[1] == FS_ORDERTOPIC_NO_MAC && r.v[2] == FS_ORDERTOPIC_NO_MAC,
	    "no MAC (and a key id without one): NO_MAC");
	check(r.v[3] == FS_ORDERTOPIC_UNKNOWN_KEY, "an unknown key id: UNKNOWN_KEY");
	check(r.v[4] == FS_ORDERTOPIC_BAD_MAC, "a wrong MAC: BAD_MAC");
	check(r.v[5] == FS_ORDERTOPIC_BAD_MAC, "a valid MAC over altered bytes: BAD_MAC");
	check(r.v[6] == FS_ORDERTOPIC_BAD_MAC, "a valid MAC under another message key: BAD_MAC");
	check(r.v[7] == FS_ORDERTOPIC_BAD_MAC, "a MAC that is no MAC: BAD_MAC");
	check(read_all(brokers, "orders", &nokey, &r) == n && r.v[0] == FS_ORDERTOPIC_UNKNOWN_KEY,
	    "a reader without keys takes nothing for an order");

	/* A rotation: k1 signs; then k2 signs and k1 still verifies; then k1 is removed. */
	memset(&now, 0, sizeof(now));
	memset(&before, 0, sizeof(before));
	memset(&after, 0, sizeof(after));
	check(ring(&before, "k1:" KEY_A "\n") == 0 && ring(&now, "k2:" KEY_B "\nk1:" KEY_A "\n") == 0 &&
		ring(&after, "k2:" KEY_B "\n") == 0, "the rings of a rotation");
	check(fs_ordertopic_message(&before, &o, &m, err, sizeof(err)) == 0 &&
		fs_ordertopic_message(&now, &o, &other, err, sizeof(err)) == 0 &&
		strcmp(other.kid, "k2") == 0, "k1 signs before, k2 during");
	forged[0] = m.kafka;
	forged[1] = other.kafka;
	check(fs_kafka_produce_all(w.producer, "rotated", forged, 2, err, sizeof(err)) ==
		FS_KAFKA_DELIVERED, "one message of each key");
	check(read_all(brokers, "rotated", &now, &r) == 2 && r.v[0] == FS_ORDERTOPIC_OK &&
		r.v[1] == FS_ORDERTOPIC_OK, "during the rotation both keys verify");
	check(read_all(brokers, "rotated", &before, &r) == 2 && r.v[0] == FS_ORDERTOPIC_OK &&
		r.v[1] == FS_ORDERTOPIC_UNKNOWN_KEY, "a reader not yet told of k2 refuses its orders");
	check(read_all(brokers, "rotated", &after, &r) == 2 && r.v[0] == FS_ORDERTOPIC_UNKNOWN_KEY &&
		r.v[1] == FS_ORDERTOPIC_OK, "after k1's removal its messages are refused: UNKNOWN_KEY");
	check(ring(&after, "k1:" KEY_C "\n") == 0 &&
		read_all(brokers, "rotated", &after, &r) == 2 && r.v[0] == FS_ORDERTOPIC_BAD_MAC,
	    "the id k1 on another key: BAD_MAC");
	/*
	 * What one signed message costs the purchase handler, and the MAC's
	 * share of it: CPU time, not the clock (the machine is shared).
	 */
	{
		int made = 0;
		double t0 = cpu_us();

		for (int i = 0; i < 20000; i++)
			made += fs_ordertopic_message(&now, &o, &m, err, sizeof(err)) == 0;
		double t1 = cpu_us();

		for (int i = 0; i < 20000; i++)
			made += fs_ordertopic_encode(&o, altered, sizeof(altered)) > 0;
		printf("# one order message, encoded and signed: %.2f us of CPU; encoded only: %.2f us\n",
		    (t1 - t0) / 20000, (cpu_us() - t1) / 20000);
		check(made == 40000, "20000 messages made and encoded in a row");
	}
	check(strcmp(fs_ordertopic_verdict_name(FS_ORDERTOPIC_BAD_MAC), "BAD_MAC") == 0 &&
		strcmp(fs_ordertopic_verdict_name(FS_ORDERTOPIC_VERDICT__MAX), "?") == 0,
	    "every verdict has a name");
	fs_ordertopic_close(&now);
	fs_ordertopic_close(&before);
	fs_ordertopic_close(&after);
	fs_ordertopic_close(&w);
	rd_kafka_destroy(rk);
}

/* True when the message is refused. */
static int
refused(const char *msg)
{
	struct fs_order o;

	return fs_ordertopic_decode(msg, strlen(msg), &o) == -1;
}

int
main(void)
{
	struct fs_order o = { .id = "01900000-0000-7000-8000-000000000001", .sale = 7, .item = 11,
		.user = "a/b", .reserved_ms = INT64_C(1767323045678) };
	struct fs_order back;
	char msg[FS_ORDERTOPIC_MESSAGE_MAX], big[FS_ORDERTOPIC_MESSAGE_MAX + 2], err[128];
	fs_ordertopic t;
	int n;

	n = fs_ordertopic_encode(&o, msg, sizeof(msg));
	check(n > 0 && strcmp(msg, "{\"orderId\":\"01900000-0000-7000-8000-000000000001\","
				"\"saleId\":7,\"itemId\":11,\"userId\":\"a\\/b\","
				"\"reservedAt\":1767323045678}") == 0,
	    "the order message");
	check(fs_ordertopic_decode(msg, (size_t)n, &back) == 0 && strcmp(back.id, o.id) == 0 &&
		back.sale == 7 && back.item == 11 && strcmp(back.user, "a/b") == 0 &&
		back.reserved_ms == o.reserved_ms && back.status == FS_ORDER_PROCESSING,
	    "it reads back");
	check(fs_ordertopic_encode(&o, msg, 20) == -1, "a small buffer is refused");
	check(refused("{\"orderId\":\"not-a-uuid\",\"saleId\":7,\"itemId\":11,\"userId\":\"u\","
		       "\"reservedAt\":1}"),
	    "a bad order id is refused");
	check(refused("{\"orderId\":\"01900000-0000-7000-8000-000000000001\",\"saleId\":7,"
		       "\"itemId\":11,\"userId\":\"a b\",\"reservedAt\":1}"),
	    "a user id with a space is refused");
	check(refused("{\"orderId\":\"01900000-0000-7000-8000-000000000001\",\"saleId\":0,"
		       "\"itemId\":11,\"userId\":\"u\",\"reservedAt\":1}"),
	    "sale 0 is refused");
	check(refused("{\"orderId\":\"01900000-0000-7000-8000-000000000001\",\"saleId\":7,"
		       "\"itemId\":11,\"userId\":\"u\"}"),
	    "a missing member is refused");
	check(refused("[]") && refused("{") && refused(""), "not an object is refused");
	memset(big, ' ', sizeof(big) - 1);
	big[0] = '{';
	big[sizeof(big) - 2] = '}';
	big[sizeof(big) - 1] = '\0';
	check(refused(big), "a message over FS_ORDERTOPIC_MESSAGE_MAX is refused");

	check(fs_ordertopic_init(&t, "127.0.0.1:1", "orders", err, sizeof(err)) == 0 &&
		strcmp(t.topic, "orders") == 0 && strcmp(t.dlq, "orders.dlq") == 0 && t.producer == NULL,
	    "the dead letters are <topic>.dlq");
	memset(big, 'x', FS_ORDERTOPIC_NAME_MAX);
	big[FS_ORDERTOPIC_NAME_MAX] = '\0';
	check(fs_ordertopic_init(&t, "127.0.0.1:1", big, err, sizeof(err)) == -1 && err[0] != '\0',
	    "a topic name without room for .dlq is refused");
	check(fs_ordertopic_init(&t, "127.0.0.1:1", "", err, sizeof(err)) == -1,
	    "an empty topic name is refused");
	fs_ordertopic_close(&t);
	test_keys();
	test_mac();
	return failures == 0 ? 0 : 1;
}

/*
 * Unit test of lib/dlq against a real PostgreSQL and Redis
 * (tests/unit/sale_fixture.h) and librdkafka's mock cluster for the topics:
 * each kind of dead letter gets its verdict, exactly one is replayed (its
 * unit taken again, its order back on the topic with a new reservedAt),
 * and a second replay takes no unit twice. A letter whose MAC does not
 * check (none, a bad one, junk) is never replayed, whatever reason it
 * claims (issue 33: replaying signs anew, so it would mint an order).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlq.h"
#include "kafka.h"
#include "ordertopic.h"
#include "expect.h"
#include "sale_fixture.h"
/* After rdkafka.h, which kafka.h includes. */
#include <librdkafka/rdkafka_mock.h>

/* The order key of the test (base64url of 32 bytes). */
#define ORDER_KEYS "k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8\n"

struct verdicts {
	int n;
	char line[8][128];
};

static void
note(void *arg, const struct fs_dlq_entry *e)
{
	struct verdicts *v = arg;

	if (v->n < 8)
		snprintf(v->line[v->n], sizeof(v->line[0]), "%s %s", e->order.id[0] != '\0' ?
		    e->order.id : "-", fs_dlq_verdict_name(e->verdict));
	v->n++;
	printf("#   %s %s (%s)\n", e->order.id, fs_dlq_verdict_name(e->verdict), e->detail);
}

/* Whether the report has "ID VERDICT". */
static int
said(const struct verdicts *v, const char *id, enum fs_dlq_verdict verdict)
{
	char want[128];

	snprintf(want, sizeof(want), "%s %s", id, fs_dlq_verdict_name(verdict));
	for (int i = 0; i < v->n && i < 8; i++)
		if (strcmp(v->line[i], want) == 0)
			return 1;
	return 0;
}

/* Counts the order messages of the topic and keeps the last one's order. */
struct on_topic {
	long n;
	struct fs_order last;
};

static const fs_ordertopic *reader;

static int
count_order(void *arg, const rd_kafka_message_t *m)
{
	struct on_topic *t = arg;

	if (fs_ordertopic_read(reader, m, &t->last) == FS_ORDERTOPIC_OK)
		t->n++;
	return 0;
}

/*
 * A dead letter of order o (sale, item, user, id, reserved_ms) as the
 * consumer sends it: the message a purchase handler made, with a reason.
 */
static struct fs_kafka_msg
letter(const fs_ordertopic *t, const struct fs_order *o, struct fs_ordertopic_msg *buf,
    const char *reason)
{
	char err[128];

	if (fs_ordertopic_message(t, o, buf, err, sizeof(err)) != 0)
		abort();
	buf->kafka.header[2] = (struct fs_kafka_header){ "reason", reason };
	return buf->kafka;
}

/* An order of the sale that never reached PostgreSQL, without a hold. */
static void
lost_order(struct fs_order *o, uint64_t sale, uint64_t item, const char *user)
{
	memset(o, 0, sizeof(*o));
	if (fs_uuid_v7(o->id) != 0)
		abort();
	o->sale = sale;
	o->item = item;
	snprintf(o->user, sizeof(o->user), "%s", user);
	o->reserved_ms = fs_clock_now_ms() - 3600 * 1000;
}

int
main(void)
{
	struct fixture f;
	struct fs_order lost, recorded, other, holder, forged;
	struct fs_kafka_msg msgs[8];
	struct fs_ordertopic_msg buf[8];
	struct fs_dlq_summary sum;
	struct verdicts v;
	struct on_topic ot;
	fs_ordertopic t;
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	rd_kafka_t *rk = NULL;
	rd_kafka_mock_cluster_t *mc;
	uint64_t sale, item;
	char err[256];
	const char *brokers;
	int64_t before;

	memset(&t, 0, sizeof(t));
	if (fixture_start(&f, getenv("top_srcdir")) != 0 ||
	    fixture_sale(&f, -5, 3600, 600, 3, &sale, &item) != 0) {
		printf("Bail out! needs top_srcdir, PostgreSQL 15 and redis-server\n");
		fixture_finish(&f);
		return 1;
	}
	if (rd_kafka_conf_set(conf, "test.mock.num.brokers", "1", err, sizeof(err)) !=
	    RD_KAFKA_CONF_OK || rd_kafka_conf_set(conf, "log_level", "0", err, sizeof(err)) !=
	    RD_KAFKA_CONF_OK || (rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err))) == NULL ||
	    (mc = rd_kafka_handle_mock_cluster(rk)) == NULL ||
	    rd_kafka_mock_topic_create(mc, "orders", FS_ORDERTOPIC_PARTITIONS, 1) !=
	    RD_KAFKA_RESP_ERR_NO_ERROR ||
	    rd_kafka_mock_topic_create(mc, "orders.dlq", 1, 1) != RD_KAFKA_RESP_ERR_NO_ERROR ||
	    (brokers = rd_kafka_mock_cluster_bootstraps(mc)) == NULL ||
	    fs_ordertopic_init(&t, brokers, "orders", err, sizeof(err)) != 0 ||
	    fs_ordertopic_set_keys(&t, ORDER_KEYS, strlen(ORDER_KEYS), err, sizeof(err)) != 0 ||
	    fs_ordertopic_open_producer(&t, 5000, 1, err, sizeof(err)) != 0) {
		printf("Bail out! librdkafka's mock cluster: %s\n", err);
		fixture_finish(&f);
		return 1;
	}

	/*
	 * Eight dead letters: one to replay, one of each reason not to, and
	 * three that no purchase handler made.
	 */
	reader = &t;
	lost_order(&lost, sale, item, "u1");
	lost_order(&forged, sale, item, "u4");
	lost_order(&other, sale + 1000, item, "u3");
	lost_order(&holder, sale, item, "u2");
	check(fixture_buy(&f, sale, item, "u2", 0, 1, &recorded) == 0 && fixture_left(&f, sale, item) == 2,
	    "u2's order is recorded (2 units left)");
	msgs[0] = letter(&t, &lost, &buf[0], "TRANSIENT");
	msgs[1] = letter(&t, &recorded, &buf[1], "TRANSIENT");
	msgs[2] = (struct fs_kafka_msg){ .key = "k", .keylen = 1, .value = "junk", .len = 4,
		.header = { { "reason", "MALFORMED" } } };
	msgs[3] = letter(&t, &lost, &buf[3], "TRANSIENT");
	msgs[4] = letter(&t, &other, &buf[4], "TRANSIENT");
	msgs[5] = letter(&t, &holder, &buf[5], "TRANSIENT");
	/* Written to the dead letters by a holder of no order key, with a reason that would replay. */
	msgs[6] = letter(&t, &forged, &buf[6], "TRANSIENT");
	memset(msgs[6].header, 0, sizeof(msgs[6].header));
	msgs[6].header[0] = (struct fs_kafka_header){ "reason", "TRANSIENT" };
	msgs[7] = letter(&t, &forged, &buf[7], "BAD_MAC");
	msgs[7].header[1] = (struct fs_kafka_header){ "fs-mac", "ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8" };
	check(fs_ordertopic_dead_letters(&t, msgs, 8, err, sizeof(err)) == FS_KAFKA_DELIVERED,
	    "eight dead letters on orders.dlq");

	memset(&v, 0, sizeof(v));
	before = fs_clock_now_ms();
	check(fs_dlq_replay(f.pg, f.stock, &t, sale, note, &v, &sum, err, sizeof(err)) == 0 &&
	    sum.letters == 8 && sum.count[FS_DLQ_REPLAYED] == 1 && sum.count[FS_DLQ_RECORDED] == 1 &&
	    sum.count[FS_DLQ_MALFORMED] == 0 && sum.count[FS_DLQ_REPEATED] == 1 &&
	    sum.count[FS_DLQ_OTHER_SALE] == 2 && sum.count[FS_DLQ_SHOPPER_HOLDS] == 1 &&
	    sum.count[FS_DLQ_SOLD_OUT] == 0 && sum.count[FS_DLQ_NOT_DELIVERED] == 0 &&
	    sum.count[FS_DLQ_UNAUTHENTICATED] == 2,
	    "replay of one sale: 8 letters; one replayed, one each recorded, repeated, of a "
	    "shopper holding another order, two not of the sale (one junk), two unauthenticated "
	    "that claim the sale (no MAC, a bad MAC)");
	check(said(&v, lost.id, FS_DLQ_REPLAYED) && said(&v, recorded.id, FS_DLQ_RECORDED) &&
	    said(&v, forged.id, FS_DLQ_UNAUTHENTICATED) && said(&v, lost.id, FS_DLQ_REPEATED) &&
	    said(&v, other.id, FS_DLQ_OTHER_SALE) && said(&v, holder.id, FS_DLQ_SHOPPER_HOLDS),
	    "replay of one sale: each letter reported with its own verdict");
	check(!said(&v, forged.id, FS_DLQ_REPLAYED) && strcmp(fixture_status(&f, forged.id), "") == 0,
	    "the letters whose MAC does not check are not replayed (u4 has no order)");
	memset(&ot, 0, sizeof(ot));
	check(fixture_left(&f, sale, item) == 1 &&
	    fs_kafka_read_topic(brokers, "orders", NULL, 100, 10000, count_order, &ot, err,
	    sizeof(err)) == 1 && ot.n == 1 && strcmp(ot.last.id, lost.id) == 0 &&
	    strcmp(ot.last.user, "u1") == 0 && ot.last.reserved_ms >= before,
	    "replay: its unit taken again (1 left) and its order back on the topic, reserved anew");
	check(strcmp(fixture_status(&f, lost.id), "") == 0,
	    "replay: PostgreSQL has no row yet (the consumer records it)");

	memset(&v, 0, sizeof(v));
	check(fs_dlq_replay(f.pg, f.stock, &t, 0, note, &v, &sum, err, sizeof(err)) == 0 &&
	    sum.letters == 8 && fixture_left(&f, sale, item) == 1 &&
	    sum.count[FS_DLQ_UNAUTHENTICATED] == 3 && said(&v, "-", FS_DLQ_UNAUTHENTICATED) &&
	    sum.count[FS_DLQ_NOT_IN_SALE] == 1 && said(&v, other.id, FS_DLQ_NOT_IN_SALE),
	    "replay of every sale, again: no unit taken twice, the unauthenticated letters (junk "
	    "too) still not replayed; the other sale's order is in no sale Redis knows");
	check(strcmp(fs_dlq_verdict_name(FS_DLQ_SOLD_OUT), "?") != 0 &&
	    strcmp(fs_dlq_verdict_name(FS_DLQ__MAX), "?") == 0, "every verdict has a name");

	fs_ordertopic_close(&t);
	rd_kafka_destroy(rk);
	fixture_finish(&f);
	return failures == 0 ? 0 : 1;
}

#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "dlq.h"

#define ERR(...) snprintf(err, errlen, __VA_ARGS__)

static const char *const verdict_names[FS_DLQ__MAX] = {
	[FS_DLQ_REPLAYED] = "replayed",
	[FS_DLQ_RECORDED] = "recorded",
	[FS_DLQ_MALFORMED] = "malformed",
	[FS_DLQ_OTHER_SALE] = "other-sale",
	[FS_DLQ_REPEATED] = "repeated",
	[FS_DLQ_NOT_IN_SALE] = "not-in-sale",
	[FS_DLQ_SOLD_OUT] = "sold-out",
	[FS_DLQ_SHOPPER_HOLDS] = "shopper-holds",
	[FS_DLQ_NOT_DELIVERED] = "not-delivered",
	[FS_DLQ_UNAUTHENTICATED] = "unauthenticated",
};

struct letters {
	const fs_ordertopic *t;	/* its order keys judge each letter */
	struct fs_dlq_entry *e;
	long n;
};

const char *
fs_dlq_verdict_name(enum fs_dlq_verdict v)
{
	return v >= 0 && v < FS_DLQ__MAX ? verdict_names[v] : "?";
}

/* Keeps one dead letter: its order (or why it is none) and its reason. */
static int
keep_letter(void *arg, const rd_kafka_message_t *m)
{
	struct letters *l = arg;
	struct fs_dlq_entry *e = &l->e[l->n++];
	enum fs_ordertopic_verdict v;

	memset(e, 0, sizeof(*e));
	e->verdict = FS_DLQ__MAX; /* not judged yet */
	if (!fs_kafka_msg_header(m, "reason", e->reason, sizeof(e->reason)))
		snprintf(e->reason, sizeof(e->reason), "-");
	switch ((v = fs_ordertopic_read(l->t, m, &e->order))) {
	case FS_ORDERTOPIC_OK:
		break;
	case FS_ORDERTOPIC_MALFORMED:
		e->verdict = FS_DLQ_MALFORMED;
		break;
	default:
		/* The order it claims, for the report and the sale filter only. */
		e->verdict = FS_DLQ_UNAUTHENTICATED;
		snprintf(e->detail, sizeof(e->detail), "%s", fs_ordertopic_verdict_name(v));
		if (m->payload == NULL || fs_ordertopic_decode(m->payload, m->len, &e->order) != 0)
			memset(&e->order, 0, sizeof(e->order));
		break;
	}
	return 0;
}

static int
by_id(const void *a, const void *b)
{
	const struct fs_dlq_entry *const *x = a, *const *y = b;
	int c = strcmp((*x)->order.id, (*y)->order.id);

	/* The same id: the earlier letter first, so the later one is the repeat. */
	return c != 0 ? c : (*x < *y ? -1 : *x > *y);
}

/* Marks every letter whose order came earlier in the topic; 0 or -1. */
static int
mark_repeats(struct letters *l)
{
	struct fs_dlq_entry **idx = calloc((size_t)l->n + 1, sizeof(*idx));
	long k = 0;

	if (idx == NULL)
		return -1;
	for (long i = 0; i < l->n; i++)
		if (l->e[i].verdict == FS_DLQ__MAX)
			idx[k++] = &l->e[i];
	qsort(idx, (size_t)k, sizeof(*idx), by_id);
	for (long i = 1; i < k; i++)
		if (strcmp(idx[i - 1]->order.id, idx[i]->order.id) == 0)
			idx[i]->verdict = FS_DLQ_REPEATED;
	free(idx);
	return 0;
}

/* Judges and, when it may, replays one letter; 0, or -1 when a store failed. */
static int
replay_one(fs_pg *pg, fs_stock *st, fs_ordertopic *t, struct fs_dlq_entry *e, char *err, size_t errlen)
{
	struct fs_order o = e->order;
	struct fs_stock_hold hold;
	enum fs_orders_result r;
	int took = 0;

	switch ((r = fs_orders_get(pg, &o))) {
	case FS_ORDERS_OK:
		e->verdict = FS_DLQ_RECORDED;
		snprintf(e->detail, sizeof(e->detail), "%s%s%s", fs_orders_status_name(o.status),
		    o.failure[0] != '\0' ? " " : "", o.failure);
		return 0;
	case FS_ORDERS_NOT_FOUND:
		break;
	default:
		ERR("database: %s", pg->errstr);
		return -1;
	}
	o = e->order;
	o.reserved_ms = fs_clock_now_ms();
	switch (fs_stock_reserve(st, o.sale, o.item, o.user, o.id, o.reserved_ms, &hold)) {
	case FS_STOCK_RESERVED:
		took = 1;
		break;
	case FS_STOCK_ALREADY:
		if (strcmp(hold.order_id, o.id) == 0)
			break; /* an earlier replay took it; its message may be on its way */
		e->verdict = FS_DLQ_SHOPPER_HOLDS;
		snprintf(e->detail, sizeof(e->detail), "%s", hold.order_id);
		return 0;
	case FS_STOCK_SOLD_OUT:
		e->verdict = FS_DLQ_SOLD_OUT;
		return 0;
	case FS_STOCK_UNKNOWN_ITEM:
		e->verdict = FS_DLQ_NOT_IN_SALE;
		return 0;
	case FS_STOCK_NOT_STARTED:
		ERR("sale %" PRIu64 " has not started by Redis' clock: replay it later", o.sale);
		return -1;
	default:
		ERR("redis: %s", st->errstr);
		return -1;
	}
	switch (fs_ordertopic_publish(t, &o, e->detail, sizeof(e->detail))) {
	case FS_KAFKA_DELIVERED:
		e->verdict = FS_DLQ_REPLAYED;
		e->order = o;
		return 0;
	case FS_KAFKA_NOT_DELIVERED:
		/* Only the unit this run took goes back; an earlier one may be in flight. */
		if (took && fs_stock_release(st, o.sale, o.item, o.id) < 0) {
			ERR("redis: %s (order %s holds a unit: the expiry sweeps it)", st->errstr,
			    o.id);
			return -1;
		}
		break;
	default:
		/* Maybe delivered: the hold stays; a ghost sweep frees it if not. */
		snprintf(e->detail, sizeof(e->detail), "maybe delivered");
		break;
	}
	e->verdict = FS_DLQ_NOT_DELIVERED;
	return 0;
}

int
fs_dlq_replay(fs_pg *pg, fs_stock *st, fs_ordertopic *t, uint64_t sale, fs_dlq_report *report,
    void *arg, struct fs_dlq_summary *sum, char *err, size_t errlen)
{
	struct letters l = { t, NULL, 0 };
	long n;
	int rc = -1;

	memset(sum, 0, sizeof(*sum));
	if (t->nkeys == 0) {
		ERR("no order key: a dead letter's MAC cannot be checked");
		return -1;
	}
	if ((l.e = calloc(FS_DLQ_LETTERS_MAX, sizeof(*l.e))) == NULL) {
		ERR("out of memory");
		return -1;
	}
	if ((n = fs_kafka_read_topic(t->brokers, t->dlq, NULL, FS_DLQ_LETTERS_MAX, FS_DLQ_READ_MS, keep_letter,
		 &l, err, errlen)) < 0)
		goto out;
	if (n >= FS_DLQ_LETTERS_MAX) {
		ERR("%s holds more than %d dead letters; replay one sale at a time", t->dlq,
		    FS_DLQ_LETTERS_MAX);
		goto out;
	}
	if (mark_repeats(&l) != 0) {
		ERR("out of memory");
		goto out;
	}
	sum->letters = l.n;
	for (long i = 0; i < l.n; i++) {
		struct fs_dlq_entry *e = &l.e[i];

		if (sale != 0 && (e->verdict == FS_DLQ_MALFORMED || e->order.sale != sale))
			e->verdict = FS_DLQ_OTHER_SALE;
		else if (e->verdict == FS_DLQ__MAX &&
		    replay_one(pg, st, t, e, err, errlen) != 0)
			goto out;
		sum->count[e->verdict]++;
		report(arg, e);
	}
	rc = 0;
out:
	free(l.e);
	return rc;
}

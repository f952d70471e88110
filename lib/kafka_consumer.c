/*
 * lib/kafka's consumer-group member: subscribes to one topic, polls,
 * commits only what the caller says is done, and tells when every assigned
 * partition was read to its end.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka_int.h"

/* A new assignment starts with no partition known to be read to its end. */
static void
on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts,
    void *opaque)
{
	fs_kafka_consumer *c = opaque;

	memset(c->at_eof, 0, sizeof(c->at_eof));
	if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS)
		rd_kafka_assign(rk, parts);
	else
		rd_kafka_assign(rk, NULL);
}

/* The consumer's rebalance hook. */
static void
consumer_callbacks(rd_kafka_conf_t *conf)
{
	rd_kafka_conf_set_rebalance_cb(conf, on_rebalance);
}

fs_kafka_consumer *
fs_kafka_consumer_new(const char *brokers, const char *group, const char *topic, int track_eof,
    char *err, size_t errlen)
{
	const struct fs_kafka_setting set[] = {
		{ "group.id", group },
		/* Offsets move only after the database commit (fs_kafka_consumer_commit). */
		{ "enable.auto.commit", "false" },
		{ "auto.offset.reset", "earliest" },
		{ "enable.partition.eof", track_eof ? "true" : "false" },
		/* A member that died is replaced within seconds, not the default 45. */
		{ "session.timeout.ms", "6000" },
		{ "heartbeat.interval.ms", "2000" },
		/*
		 * A fetch waits for 64 KB or 100 ms, not for the first byte: under
		 * a burst the broker answers ten fetches a second instead of one per
		 * produce request, and each batch of orders is that much bigger.
		 */
		{ "fetch.wait.max.ms", "100" },
		{ "fetch.min.bytes", "65536" },
		{ "socket.keepalive.enable", "true" },
		{ "reconnect.backoff.max.ms", "1000" },
	};
	rd_kafka_topic_partition_list_t *subs = NULL;
	fs_kafka_consumer *c;
	rd_kafka_resp_err_t e;

	if ((c = calloc(1, sizeof(*c))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	c->track_eof = track_eof;
	if ((c->rk = fs_kafka_client_new(RD_KAFKA_CONSUMER, brokers, set, sizeof(set) / sizeof(set[0]),
		 consumer_callbacks, c, err, errlen)) == NULL)
		goto fail;
	rd_kafka_poll_set_consumer(c->rk);
	subs = rd_kafka_topic_partition_list_new(1);
	rd_kafka_topic_partition_list_add(subs, topic, RD_KAFKA_PARTITION_UA);
	if ((e = rd_kafka_subscribe(c->rk, subs)) != RD_KAFKA_RESP_ERR_NO_ERROR) {
		snprintf(err, errlen, "subscribe %s: %s", topic, rd_kafka_err2str(e));
		goto fail;
	}
	rd_kafka_topic_partition_list_destroy(subs);
	return c;
fail:
	if (subs != NULL)
		rd_kafka_topic_partition_list_destroy(subs);
	if (c->rk != NULL)
		rd_kafka_destroy(c->rk);
	free(c);
	return NULL;
}

void
fs_kafka_consumer_free(fs_kafka_consumer *c)
{
	if (c == NULL)
		return;
	rd_kafka_consumer_close(c->rk);
	rd_kafka_destroy(c->rk);
	free(c);
}

rd_kafka_message_t *
fs_kafka_consumer_poll(fs_kafka_consumer *c, int timeout_ms)
{
	rd_kafka_message_t *m = rd_kafka_consumer_poll(c->rk, timeout_ms);
	int p;

	if (m == NULL)
		return NULL;
	p = m->partition;
	if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
		if (p >= 0 && p < FS_KAFKA_PARTITIONS_MAX)
			c->at_eof[p] = 1;
		rd_kafka_message_destroy(m);
		return NULL;
	}
	if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
		c->err = 1;
		snprintf(c->errstr, sizeof(c->errstr), "consume: %s", rd_kafka_message_errstr(m));
		rd_kafka_message_destroy(m);
		return NULL;
	}
	if (p >= 0 && p < FS_KAFKA_PARTITIONS_MAX)
		c->at_eof[p] = 0;
	return m;
}

int
fs_kafka_consumer_commit(fs_kafka_consumer *c, rd_kafka_message_t *const *msgs, size_t n)
{
	rd_kafka_topic_partition_list_t *list;
	rd_kafka_resp_err_t err;

	if (n == 0)
		return 0;
	list = rd_kafka_topic_partition_list_new(16);
	for (size_t i = 0; i < n; i++) {
		const char *topic = rd_kafka_topic_name(msgs[i]->rkt);
		rd_kafka_topic_partition_t *tp =
		    rd_kafka_topic_partition_list_find(list, topic, msgs[i]->partition);

		if (tp == NULL)
			tp = rd_kafka_topic_partition_list_add(list, topic, msgs[i]->partition);
		if (msgs[i]->offset + 1 > tp->offset)
			tp->offset = msgs[i]->offset + 1;
	}
	err = rd_kafka_commit(c->rk, list, 0);
	rd_kafka_topic_partition_list_destroy(list);
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
		c->err = 1;
		snprintf(c->errstr, sizeof(c->errstr), "commit: %s", rd_kafka_err2str(err));
		return -1;
	}
	return 0;
}

int
fs_kafka_consumer_caught_up(fs_kafka_consumer *c)
{
	rd_kafka_topic_partition_list_t *list = NULL;
	int done;

	if (rd_kafka_assignment(c->rk, &list) != RD_KAFKA_RESP_ERR_NO_ERROR || list == NULL)
		return 0;
	done = list->cnt > 0;
	for (int i = 0; i < list->cnt && done; i++) {
		int p = list->elems[i].partition;

		done = p >= 0 && p < FS_KAFKA_PARTITIONS_MAX && c->at_eof[p];
	}
	rd_kafka_topic_partition_list_destroy(list);
	return done;
}


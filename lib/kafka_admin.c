/*
 * lib/kafka's operators' calls, each with a short-lived client of the one
 * set-up: create a topic, grant the principals' ACLs, a consumer group's lag, read a topic from a
 * group's committed offsets to its end (dead letters, checks).
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "kafka_int.h"

int
fs_kafka_create_topic(const char *brokers, const char *topic, int partitions, int replicas,
    int min_insync, char *err, size_t errlen)
{
	char isr[16];
	rd_kafka_AdminOptions_t *opts = NULL;
	const rd_kafka_topic_result_t **res;
	rd_kafka_NewTopic_t *nt = NULL;
	rd_kafka_queue_t *q = NULL;
	rd_kafka_event_t *ev = NULL;
	rd_kafka_resp_err_t e;
	rd_kafka_t *rk = NULL;
	size_t n;
	int rc = -1;

	if ((rk = fs_kafka_client_new(RD_KAFKA_PRODUCER, brokers, NULL, 0, NULL, NULL, err,
		 errlen)) == NULL)
		return -1;
	if ((nt = rd_kafka_NewTopic_new(topic, partitions, replicas, err, errlen)) == NULL)
		goto out;
	snprintf(isr, sizeof(isr), "%d", min_insync);
	if ((e = rd_kafka_NewTopic_set_config(nt, "min.insync.replicas", isr)) !=
	    RD_KAFKA_RESP_ERR_NO_ERROR) {
		snprintf(err, errlen, "create topic %s: %s", topic, rd_kafka_err2str(e));
		goto out;
	}
	q = rd_kafka_queue_new(rk);
	opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
	if (rd_kafka_AdminOptions_set_operation_timeout(opts, 10000, err, errlen) != 0)
		goto out;
	rd_kafka_CreateTopics(rk, &nt, 1, opts, q);
	if ((ev = rd_kafka_queue_poll(q, 15000)) == NULL) {
		snprintf(err, errlen, "create topic %s: no answer from the broker", topic);
		goto out;
	}
	if ((e = rd_kafka_event_error(ev)) != RD_KAFKA_RESP_ERR_NO_ERROR) {
		snprintf(err, errlen, "create topic %s: %s", topic, rd_kafka_err2str(e));
		goto out;
	}
	res = rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
	e = n == 1 ? rd_kafka_topic_result_error(res[0]) : RD_KAFKA_RESP_ERR__FAIL;
	if (e != RD_KAFKA_RESP_ERR_NO_ERROR && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
		snprintf(err, errlen, "create topic %s: %s", topic, rd_kafka_err2str(e));
		goto out;
	}
	rc = 0;
out:
	if (ev != NULL)
		rd_kafka_event_destroy(ev);
	if (opts != NULL)
		rd_kafka_AdminOptions_destroy(opts);
	if (q != NULL)
		rd_kafka_queue_destroy(q);
	if (nt != NULL)
		rd_kafka_NewTopic_destroy(nt);
	rd_kafka_destroy(rk);
	return rc;
}

int
fs_kafka_create_acls(const char *brokers, const struct fs_kafka_acl *acls, size_t n, char *err,
    size_t errlen)
{
	rd_kafka_AclBinding_t **b = calloc(n > 0 ? n : 1, sizeof(*b));
	rd_kafka_AdminOptions_t *opts = NULL;
	const rd_kafka_acl_result_t **res;
	const rd_kafka_error_t *e;
	rd_kafka_queue_t *q = NULL;
	rd_kafka_event_t *ev = NULL;
	rd_kafka_t *rk = NULL;
	size_t nres, i;
	int rc = -1;

	if (b == NULL) {
		snprintf(err, errlen, "grants: out of memory");
		return -1;
	}
	if ((rk = fs_kafka_client_new(RD_KAFKA_PRODUCER, brokers, NULL, 0, NULL, NULL, err,
		 errlen)) == NULL)
		goto out;
	for (i = 0; i < n; i++)
		if ((b[i] = rd_kafka_AclBinding_new(acls[i].type, acls[i].name,
			 RD_KAFKA_RESOURCE_PATTERN_LITERAL, acls[i].principal, "*", acls[i].operation,
			 RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW, err, errlen)) == NULL)
			goto out;
	q = rd_kafka_queue_new(rk);
	opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_CREATEACLS);
	if (rd_kafka_AdminOptions_set_request_timeout(opts, 10000, err, errlen) != 0)
		goto out;
	rd_kafka_CreateAcls(rk, b, n, opts, q);
	if ((ev = rd_kafka_queue_poll(q, 15000)) == NULL) {
		snprintf(err, errlen, "grants: no answer from the broker");
		goto out;
	}
	if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR) {
		snprintf(err, errlen, "grants: %s", rd_kafka_event_error_string(ev));
		goto out;
	}
	res = rd_kafka_CreateAcls_result_acls(rd_kafka_event_CreateAcls_result(ev), &nres);
	for (i = 0; i < nres; i++)
		if ((e = rd_kafka_acl_result_error(res[i])) != NULL) {
			/* The code first: the broker's text may be longer than err. */
			snprintf(err, errlen, "grant %s on %s: %s: %s", i < n ? acls[i].principal : "?",
			    i < n ? acls[i].name : "?", rd_kafka_err2str(rd_kafka_error_code(e)),
			    rd_kafka_error_string(e));
			goto out;
		}
	rc = nres == n ? 0 : -1;
	if (rc != 0)
		snprintf(err, errlen, "grants: %zu answers to %zu grants", nres, n);
out:
	if (ev != NULL)
		rd_kafka_event_destroy(ev);
	if (opts != NULL)
		rd_kafka_AdminOptions_destroy(opts);
	if (q != NULL)
		rd_kafka_queue_destroy(q);
	for (i = 0; i < n; i++)
		if (b[i] != NULL)
			rd_kafka_AclBinding_destroy(b[i]);
	free(b);
	if (rk != NULL)
		rd_kafka_destroy(rk);
	return rc;
}

/*
 * The metadata of one existing topic (at most FS_KAFKA_PARTITIONS_MAX
 * partitions); 0 with *rkt and *md to free, or -1 with err set (what was
 * made is in *rkt and *md all the same).
 */
static int
topic_metadata(rd_kafka_t *rk, const char *topic, int timeout_ms, rd_kafka_topic_t **rkt,
    const struct rd_kafka_metadata **md, char *err, size_t errlen)
{
	rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;

	if ((*rkt = rd_kafka_topic_new(rk, topic, NULL)) == NULL ||
	    (e = rd_kafka_metadata(rk, 0, *rkt, md, timeout_ms)) != RD_KAFKA_RESP_ERR_NO_ERROR) {
		snprintf(err, errlen, "metadata of %s: %s", topic,
		    *rkt == NULL ? "cannot name the topic" : rd_kafka_err2str(e));
		return -1;
	}
	if ((*md)->topic_cnt != 1 || (*md)->topics[0].err != RD_KAFKA_RESP_ERR_NO_ERROR ||
	    (*md)->topics[0].partition_cnt > FS_KAFKA_PARTITIONS_MAX) {
		snprintf(err, errlen, "topic %s: %s", topic,
		    (*md)->topic_cnt == 1 && (*md)->topics[0].err != RD_KAFKA_RESP_ERR_NO_ERROR ?
			rd_kafka_err2str((*md)->topics[0].err) :
			"not found, or too many partitions");
		return -1;
	}
	return 0;
}

/* Frees what topic_metadata and a partition list made; NULLs are skipped. */
static void
topic_view_free(rd_kafka_topic_partition_list_t *list, const struct rd_kafka_metadata *md,
    rd_kafka_topic_t *rkt)
{
	if (list != NULL)
		rd_kafka_topic_partition_list_destroy(list);
	if (md != NULL)
		rd_kafka_metadata_destroy(md);
	if (rkt != NULL)
		rd_kafka_topic_destroy(rkt);
}

int
fs_kafka_group_lags(const char *brokers, const char *group, const char *topic, int timeout_ms,
    long long *lags, int max, char *err, size_t errlen)
{
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_topic_partition_list_t *list = NULL;
	const struct fs_kafka_setting set[] = {
		{ "group.id", group },
		{ "enable.auto.commit", "false" },
	};
	rd_kafka_topic_t *rkt = NULL;
	rd_kafka_resp_err_t e;
	rd_kafka_t *rk = NULL;
	int partitions = -1;

	if ((rk = fs_kafka_client_new(RD_KAFKA_CONSUMER, brokers, set, sizeof(set) / sizeof(set[0]),
		 NULL, NULL, err, errlen)) == NULL)
		return -1;
	if (topic_metadata(rk, topic, timeout_ms, &rkt, &md, err, errlen) != 0)
		goto out;
	if (md->topics[0].partition_cnt > max) {
		snprintf(err, errlen, "%s has %d partitions, more than %d", topic,
		    md->topics[0].partition_cnt, max);
		goto out;
	}
	list = rd_kafka_topic_partition_list_new(md->topics[0].partition_cnt);
	for (int i = 0; i < md->topics[0].partition_cnt; i++)
		rd_kafka_topic_partition_list_add(list, topic, md->topics[0].partitions[i].id);
	/* Asking for the group's offsets does not join the group. */
	if ((e = rd_kafka_committed(rk, list, timeout_ms)) != RD_KAFKA_RESP_ERR_NO_ERROR) {
		snprintf(err, errlen, "committed offsets of %s: %s", group, rd_kafka_err2str(e));
		goto out;
	}
	for (int i = 0; i < max; i++)
		lags[i] = 0;
	for (int i = 0; i < list->cnt; i++) {
		int32_t part = list->elems[i].partition;
		int64_t lo, hi;

		e = rd_kafka_query_watermark_offsets(rk, topic, list->elems[i].partition, &lo, &hi,
		    timeout_ms);
		if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
			snprintf(err, errlen, "watermarks of %s [%d]: %s", topic, list->elems[i].partition,
			    rd_kafka_err2str(e));
			goto out;
		}
		if (part < 0 || part >= max) {
			snprintf(err, errlen, "%s: partition %d out of range", topic, part);
			goto out;
		}
		lags[part] = hi - (list->elems[i].offset >= 0 ? list->elems[i].offset : lo);
	}
	partitions = list->cnt;
out:
	topic_view_free(list, md, rkt);
	rd_kafka_destroy(rk);
	return partitions;
}

long long
fs_kafka_group_lag(const char *brokers, const char *group, const char *topic, int timeout_ms,
    char *err, size_t errlen)
{
	long long lags[FS_KAFKA_PARTITIONS_MAX], sum = 0;
	int n = fs_kafka_group_lags(brokers, group, topic, timeout_ms, lags, FS_KAFKA_PARTITIONS_MAX,
	    err, errlen);

	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++)
		sum += lags[i];
	return sum;
}


/*
 * Where the configured group resumes in one partition: its committed
 * offset, or from when it has none (or one below from). -1 with err set.
 */
static int64_t
committed_from(rd_kafka_t *rk, const char *topic, int32_t part, int64_t from, int timeout_ms,
    char *err, size_t errlen)
{
	rd_kafka_topic_partition_list_t *one = rd_kafka_topic_partition_list_new(1);
	rd_kafka_resp_err_t e;
	int64_t at = from;

	rd_kafka_topic_partition_list_add(one, topic, part);
	if ((e = rd_kafka_committed(rk, one, timeout_ms)) != RD_KAFKA_RESP_ERR_NO_ERROR) {
		snprintf(err, errlen, "committed offset of %s [%d]: %s", topic, part,
		    rd_kafka_err2str(e));
		at = -1;
	} else if (one->elems[0].offset > from) {
		at = one->elems[0].offset;
	}
	rd_kafka_topic_partition_list_destroy(one);
	return at;
}

/*
 * What fs_kafka_read_topic reads: every partition from the group's committed
 * offset (or its start) to the end it has now (ends[i], -1 when nothing is
 * to be read there), added to list. How many partitions have something to
 * read, or -1 with err set.
 */
static int
read_plan(rd_kafka_t *rk, const char *topic, const char *group, int timeout_ms,
    const struct rd_kafka_metadata *md, rd_kafka_topic_partition_list_t *list, int64_t *ends,
    char *err, size_t errlen)
{
	rd_kafka_resp_err_t e;
	int left = 0;

	for (int i = 0; i < md->topics[0].partition_cnt; i++) {
		int32_t part = md->topics[0].partitions[i].id;
		int64_t lo, hi;

		ends[i] = -1;
		e = rd_kafka_query_watermark_offsets(rk, topic, part, &lo, &hi, timeout_ms);
		if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
			snprintf(err, errlen, "watermarks of %s [%d]: %s", topic, part,
			    rd_kafka_err2str(e));
			return -1;
		}
		if (group != NULL && (lo = committed_from(rk, topic, part, lo, timeout_ms, err,
					  errlen)) < 0)
			return -1;
		if (hi > lo) {
			rd_kafka_topic_partition_list_add(list, topic, part)->offset = lo;
			ends[i] = hi;
			left++;
		}
	}
	return left;
}

long
fs_kafka_read_topic(const char *brokers, const char *topic, const char *group, long max,
    int timeout_ms, fs_kafka_each_msg *each, void *arg, char *err, size_t errlen)
{
	/*
	 * assign() joins no group; the id satisfies the consumer, and names
	 * the group whose committed offsets we start from.
	 */
	const struct fs_kafka_setting set[] = {
		{ "group.id", group != NULL ? group : FS_KAFKA_READER_GROUP },
		{ "enable.auto.commit", "false" },
		{ "enable.partition.eof", "false" },
	};
	const struct rd_kafka_metadata *md = NULL;
	rd_kafka_topic_partition_list_t *list = NULL;
	rd_kafka_topic_t *rkt = NULL;
	rd_kafka_resp_err_t e;
	rd_kafka_t *rk;
	int64_t deadline = fs_clock_now_ms() + timeout_ms, ends[FS_KAFKA_PARTITIONS_MAX];
	long n = 0, rc = -1;
	int left = 0;

	if ((rk = fs_kafka_client_new(RD_KAFKA_CONSUMER, brokers, set, sizeof(set) / sizeof(set[0]),
		 NULL, NULL, err, errlen)) == NULL)
		return -1;
	rd_kafka_poll_set_consumer(rk);
	if (topic_metadata(rk, topic, timeout_ms, &rkt, &md, err, errlen) != 0)
		goto out;
	list = rd_kafka_topic_partition_list_new(md->topics[0].partition_cnt);
	if ((left = read_plan(rk, topic, group, timeout_ms, md, list, ends, err, errlen)) < 0)
		goto out;
	if (left > 0 && (e = rd_kafka_assign(rk, list)) != RD_KAFKA_RESP_ERR_NO_ERROR) {
		snprintf(err, errlen, "assign %s: %s", topic, rd_kafka_err2str(e));
		goto out;
	}
	while (left > 0 && n < max) {
		rd_kafka_message_t *m;
		int64_t wait = deadline - fs_clock_now_ms();

		if (wait <= 0) {
			snprintf(err, errlen, "%s: not read to its end within %d ms", topic, timeout_ms);
			goto out;
		}
		if ((m = rd_kafka_consumer_poll(rk, (int)(wait < 200 ? wait : 200))) == NULL)
			continue;
		if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
			snprintf(err, errlen, "%s: %s", topic, rd_kafka_message_errstr(m));
			rd_kafka_message_destroy(m);
			goto out;
		}
		for (int i = 0; i < md->topics[0].partition_cnt; i++)
			if (md->topics[0].partitions[i].id == m->partition && ends[i] >= 0 &&
			    m->offset + 1 >= ends[i]) {
				ends[i] = -1;
				left--;
			}
		n++;
		if (each(arg, m) != 0) {
			rd_kafka_message_destroy(m);
			break;
		}
		rd_kafka_message_destroy(m);
	}
	rc = n;
out:
	topic_view_free(list, md, rkt);
	rd_kafka_consumer_close(rk);
	rd_kafka_destroy(rk);
	return rc;
}

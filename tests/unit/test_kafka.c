/*
 * lib/kafka's producer against librdkafka's mock cluster (a real broker
 * cannot be told to fail one produce request on cue): a message waited
 * for and a message told, each delivered; a message refused at once is
 * not told; a produce request the broker refuses for good reaches the
 * teller exactly once, as not delivered, on the report thread; reports
 * handed over to an event loop are told when it serves them. And the
 * family's other clients, made by the same set-up: a topic read to its
 * end, a group's lag, a group member that reads and commits, and
 * librdkafka's own lines through fs_log (the reader once bypassed it).
 */
#include "config.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "expect.h"
#include "kafka.h"
#include "metrics.h"
/* After rdkafka.h, which kafka.h includes. */
#include <librdkafka/rdkafka_mock.h>

/* What the teller heard, for one message. */
struct told {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int times;
	enum fs_kafka_delivery verdict;
	char err[128];
	pthread_t thread;
};

static void
sent(void *arg, enum fs_kafka_delivery verdict, const char *err)
{
	struct told *t = arg;

	pthread_mutex_lock(&t->mu);
	t->times++;
	t->verdict = verdict;
	t->thread = pthread_self();
	snprintf(t->err, sizeof(t->err), "%s", err);
	pthread_cond_signal(&t->cv);
	pthread_mutex_unlock(&t->mu);
}

/* Waits (up to 10 s) until the teller heard of the message; its count. */
static int
wait_told(struct told *t)
{
	struct timespec until;
	int times;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&t->mu);
	while (t->times == 0 && pthread_cond_timedwait(&t->cv, &t->mu, &until) == 0)
		;
	times = t->times;
	pthread_mutex_unlock(&t->mu);
	return times;
}

static void
told_init(struct told *t)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv, NULL);
}

/* Serves p's reports whenever fd reads (each wait bounded: 10 s) until t was told. */
static void
serve_until_told(fs_kafka_producer *p, int fd, struct told *t)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	for (int i = 0; i < 20 && t->times == 0 && poll(&pfd, 1, 10000) == 1; i++)
		fs_kafka_producer_serve(p);
}

/*
 * Reports handed over to the caller's event loop: the descriptor reads
 * when a report waits, and the teller runs only when the caller serves,
 * on its thread (the report thread is gone).
 */
static void
handed_over(const char *brokers, const struct fs_kafka_msg *msg)
{
	struct pollfd pfd;
	fs_kafka_producer *p;
	struct told t4, t5;
	char err[256] = "";
	int fd, rc;

	if ((p = fs_kafka_producer_new(brokers, 3000, 5, err, sizeof(err))) == NULL) {
		check(0, "a second producer");
		return;
	}
	fd = fs_kafka_producer_reports_fd(p, err, sizeof(err));
	check(fd >= 0 && fs_kafka_producer_reports_fd(p, err, sizeof(err)) == fd,
	    "reports handed over: one descriptor, however often asked");
	told_init(&t4);
	rc = fs_kafka_produce_async(p, "orders", msg, sent, &t4, err, sizeof(err));
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	check(rc == 0 && poll(&pfd, 1, 10000) == 1 && t4.times == 0,
	    "the descriptor reads once something waits; nobody else tells");
	serve_until_told(p, fd, &t4);
	check(t4.times == 1 && t4.verdict == FS_KAFKA_DELIVERED && pthread_equal(t4.thread, pthread_self()),
	    "served: the message told once, delivered, on the serving thread");
	told_init(&t5);
	rc = fs_kafka_produce_async(p, "orders", msg, sent, &t5, err, sizeof(err));
	serve_until_told(p, fd, &t5);
	check(rc == 0 && t5.times == 1 && t5.verdict == FS_KAFKA_DELIVERED,
	    "the next report wakes the descriptor again");
	fs_kafka_producer_free(p);
	check(t4.times == 1 && t5.times == 1, "... and none is told again at the flush");
}

/* fs_kafka_read_topic's each: counts the messages whose key is "7". */
static int
count_sevens(void *arg, const rd_kafka_message_t *m)
{
	long *n = arg;

	if (m->key_len == 1 && ((const char *)m->key)[0] == '7')
		++*n;
	return 0;
}

/*
 * The reader, the lag and a group member on a topic of three messages:
 * every message read, lagging three, then none once the member committed.
 */
static void
group_clients(const char *brokers, fs_kafka_producer *p)
{
	struct fs_kafka_msg msgs[3] = { { .key = "7", .keylen = 1, .value = "{\"o\":1}", .len = 7 },
		{ .key = "7", .keylen = 1, .value = "{\"o\":2}", .len = 7 },
		{ .key = "7", .keylen = 1, .value = "{\"o\":3}", .len = 7 } };
	rd_kafka_message_t *got[3];
	fs_kafka_consumer *c;
	char err[256] = "";
	long seen = 0;
	size_t n = 0;

	check(fs_kafka_produce_all(p, "letters", msgs, 3, err, sizeof(err)) == FS_KAFKA_DELIVERED,
	    "three messages on a second topic");
	check(fs_kafka_read_topic(brokers, "letters", NULL, 100, 10000, count_sevens, &seen, err,
		  sizeof(err)) == 3 && seen == 3,
	    "the topic read to its end: its three messages");
	check(fs_kafka_group_lag(brokers, "g", "letters", 5000, err, sizeof(err)) == 3,
	    "a group that committed nothing lags by the three");
	c = fs_kafka_consumer_new(brokers, "g", "letters", 1, err, sizeof(err));
	check(c != NULL, "a group member joins");
	for (int i = 0; c != NULL && i < 100 && n < 3; i++) {
		rd_kafka_message_t *m = fs_kafka_consumer_poll(c, 100);

		if (m != NULL)
			got[n++] = m;
	}
	check(n == 3 && fs_kafka_consumer_commit(c, got, n) == 0, "... reads the three and commits them");
	check(fs_kafka_group_lag(brokers, "g", "letters", 5000, err, sizeof(err)) == 0,
	    "... and the group lags no more");
	while (n > 0)
		rd_kafka_message_destroy(got[--n]);
	fs_kafka_consumer_free(c);
}

/* A reader of a broker that is not there: its librdkafka lines come in fs_log's format. */
static void
reader_logs(void)
{
	char path[64], buf[8192], err[256] = "";
	long seen = 0;
	ssize_t len;
	int fd, saved;

	snprintf(path, sizeof(path), "/tmp/test-kafka.%ld.log", (long)getpid());
	fflush(stderr);
	if ((fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600)) < 0 || (saved = dup(2)) < 0 ||
	    dup2(fd, 2) != 2) {
		perror("log file");
		exit(2);
	}
	check(fs_kafka_read_topic("127.0.0.1:1", "letters", NULL, 1, 1500, count_sevens, &seen, err,
		  sizeof(err)) == -1,
	    "a reader of no broker fails within its time");
	dup2(saved, 2);
	close(saved);
	len = pread(fd, buf, sizeof(buf) - 1, 0);
	buf[len > 0 ? len : 0] = '\0';
	close(fd);
	unlink(path);
	check(strstr(buf, "msg=\"kafka ") != NULL && strstr(buf, "%3|") == NULL,
	    "its librdkafka lines go through fs_log, none in librdkafka's own format");
}

int
main(void)
{
	static char huge[2 * 1024 * 1024];
	struct fs_kafka_msg msg = { .key = "7", .keylen = 1, .value = "{\"o\":1}", .len = 7 };
	struct fs_kafka_msg big = { .key = "7", .keylen = 1, .value = huge, .len = sizeof(huge) };
	rd_kafka_mock_cluster_t *mc;
	fs_kafka_producer *p;
	struct told t1, t2, t3;
	char err[256] = "";
	rd_kafka_conf_t *conf;
	rd_kafka_t *rk;
	int rc, attempts;

	conf = rd_kafka_conf_new();
	if (rd_kafka_conf_set(conf, "log_level", "0", err, sizeof(err)) != RD_KAFKA_CONF_OK ||
	    (rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err))) == NULL ||
	    (mc = rd_kafka_mock_cluster_new(rk, 1)) == NULL ||
	    rd_kafka_mock_topic_create(mc, "orders", 1, 1) != RD_KAFKA_RESP_ERR_NO_ERROR ||
	    rd_kafka_mock_topic_create(mc, "letters", 2, 1) != RD_KAFKA_RESP_ERR_NO_ERROR) {
		fprintf(stderr, "mock cluster: %s\n", err);
		return 2;
	}
	if ((p = fs_kafka_producer_new(rd_kafka_mock_cluster_bootstraps(mc), 3000, 5, err,
		 sizeof(err))) == NULL) {
		fprintf(stderr, "producer: %s\n", err);
		return 2;
	}

	check(fs_kafka_produce_all(p, "orders", &msg, 1, err, sizeof(err)) == FS_KAFKA_DELIVERED,
	    "a message waited for is delivered");

	told_init(&t1);
	rc = fs_kafka_produce_async(p, "orders", &msg, sent, &t1, err, sizeof(err));
	check(rc == 0 && wait_told(&t1) == 1 && t1.verdict == FS_KAFKA_DELIVERED &&
		t1.err[0] == '\0' && !pthread_equal(t1.thread, pthread_self()),
	    "a message told is delivered, told once, on the report thread");

	told_init(&t2);
	err[0] = '\0';
	rc = fs_kafka_produce_async(p, "orders", &big, sent, &t2, err, sizeof(err));
	check(rc == -1 && err[0] != '\0' && t2.times == 0,
	    "a message refused at once is not sent, and its teller is not called");

	/* The broker refuses the next produce request for good. */
	rd_kafka_mock_push_request_errors(mc, 0 /* ApiKey Produce */, 1,
	    RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
	told_init(&t3);
	rc = fs_kafka_produce_async(p, "orders", &msg, sent, &t3, err, sizeof(err));
	check(rc == 0 && wait_told(&t3) == 1 && t3.verdict != FS_KAFKA_DELIVERED && t3.err[0] != '\0',
	    "a produce request refused by the broker: told once, not delivered");
	printf("# refused: verdict %d (%s)\n", (int)t3.verdict, t3.err);

	/*
	 * The idempotent producer may take the refusal as fatal: the report
	 * thread then replaces it, and until it has, messages are refused.
	 */
	for (attempts = 1; attempts <= 100; attempts++) {
		struct timespec pause = { 0, 50 * 1000 * 1000 };

		if (fs_kafka_produce_all(p, "orders", &msg, 1, err, sizeof(err)) == FS_KAFKA_DELIVERED)
			break;
		nanosleep(&pause, NULL);
	}
	check(attempts <= 100, "the producer goes on after a refusal");
	printf("# delivered again at attempt %d (%s)\n", attempts, err);
	/* The statistics come each second: the produce requests sent are counted. */
	for (attempts = 1; attempts <= 30 && fs_metrics_value(FS_M_KAFKA_PRODUCE_REQUESTS) < 3;
	     attempts++) {
		struct timespec pause = { 0, 100 * 1000 * 1000 };

		nanosleep(&pause, NULL);
	}
	check(fs_metrics_value(FS_M_KAFKA_PRODUCE_REQUESTS) >= 3,
	    "the produce requests are counted (at least the three answered)");
	printf("# produce requests counted: %llu\n",
	    (unsigned long long)fs_metrics_value(FS_M_KAFKA_PRODUCE_REQUESTS));
	/* With them, the messages' waits in the queue and the requests' round trips. */
	check(fs_metrics_value(FS_M_KAFKA_QUEUE_WAITS) >= 3 && fs_metrics_value(FS_M_KAFKA_BROKER_RTTS) >= 3 &&
		fs_metrics_value(FS_M_KAFKA_BROKER_RTT_US) > 0,
	    "the queue waits and the brokers' round trips are counted (at least the three answered)");
	printf("# queue waits %llu (%llu us), round trips %llu (%llu us)\n",
	    (unsigned long long)fs_metrics_value(FS_M_KAFKA_QUEUE_WAITS),
	    (unsigned long long)fs_metrics_value(FS_M_KAFKA_QUEUE_WAIT_US),
	    (unsigned long long)fs_metrics_value(FS_M_KAFKA_BROKER_RTTS),
	    (unsigned long long)fs_metrics_value(FS_M_KAFKA_BROKER_RTT_US));
	handed_over(rd_kafka_mock_cluster_bootstraps(mc), &msg);
	group_clients(rd_kafka_mock_cluster_bootstraps(mc), p);
	reader_logs();
	fs_kafka_producer_free(p);
	check(t1.times == 1 && t3.times == 1, "no teller is told twice, not even at the flush");
	rd_kafka_mock_cluster_destroy(mc);
	rd_kafka_destroy(rk);
	return failures == 0 ? 0 : 1;
}

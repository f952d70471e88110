/*
 * Kafka driver (librdkafka): an idempotent producer that any number of
 * threads share, each waiting for the broker's acknowledgement of its own
 * messages while concurrent messages travel in one batch; and a
 * consumer-group member.
 */
#ifndef FS_KAFKA_H
#define FS_KAFKA_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include <librdkafka/rdkafka.h>

enum fs_kafka_delivery {
	FS_KAFKA_DELIVERED,        /* the broker has it (acks=all) */
	FS_KAFKA_NOT_DELIVERED,    /* the broker certainly does not have it */
	FS_KAFKA_MAYBE_DELIVERED,  /* timed out in flight: it may be in the log */
	FS_KAFKA_DELIVERY__MAX
};

typedef struct fs_kafka_producer {
	rd_kafka_t *rk;
	pthread_rwlock_t swap; /* held to write while rk is replaced after a fatal error */
	pthread_mutex_t mu;    /* guards the delivery reports */
	pthread_t poller;      /* serves the delivery reports, until handed over (reports) */
	atomic_int stop;
	pthread_mutex_t serve; /* one server of the reports at a time, once handed over */
	int reports[2];        /* the pipe librdkafka writes to when reports wait, or -1 */
	char brokers[512];
	int timeout_ms;
	int linger_ms;
	long long produce_seen; /* Produce requests of rk counted so far (its statistics) */
} fs_kafka_producer;

#define FS_KAFKA_HEADERS_MAX 3	/* headers of our own on one message */

/* A message header whose value is text. */
struct fs_kafka_header {
	const char *name;	/* NULL: no header in this slot */
	const char *value;
};

/*
 * One message. Its headers: those of headers_of when not NULL (a dead
 * letter keeps its original's), then each of header whose name is set
 * (an order's key id and MAC, a dead letter's reason).
 */
struct fs_kafka_msg {
	const char *key;
	size_t keylen;
	const char *value;
	size_t len;
	const rd_kafka_message_t *headers_of;
	struct fs_kafka_header header[FS_KAFKA_HEADERS_MAX];
};

/*
 * A producer with acks=all and enable.idempotence=true. timeout_ms bounds
 * how long a message may wait for its acknowledgement (message.timeout.ms);
 * linger_ms how long it waits for company (linger.ms).
 */
fs_kafka_producer *fs_kafka_producer_new(const char *brokers, int timeout_ms, int linger_ms,
    char *err, size_t errlen);
/*
 * Hands the delivery reports over to an event loop: from now on the caller
 * serves them with fs_kafka_producer_serve whenever the returned
 * descriptor reads (librdkafka writes to it when reports wait), on any
 * thread, instead of the report thread, which stops (a wake of a thread
 * less on the way to every answer). -1 with err when it cannot.
 */
int fs_kafka_producer_reports_fd(fs_kafka_producer *, char *err, size_t errlen);
/* Serves the reports waiting, at once: their fs_kafka_sent run on this thread. */
void fs_kafka_producer_serve(fs_kafka_producer *);
/* Flushes what is queued (up to 5 s) and frees. */
void fs_kafka_producer_free(fs_kafka_producer *);
/* Fetches the topic's metadata now, so the first message does not wait for it. */
void fs_kafka_producer_warm(fs_kafka_producer *, const char *topic);
/* 0 when a broker answers a metadata request for topic within timeout_ms; -1 with err. */
int fs_kafka_producer_ready(fs_kafka_producer *, const char *topic, int timeout_ms, char *err,
    size_t errlen);
/*
 * Sends n messages and waits for every delivery report, which librdkafka
 * gives within timeout_ms: FS_KAFKA_DELIVERED only when the broker
 * acknowledged all of them. The answer is final; err says why it failed.
 * Thread-safe.
 */
enum fs_kafka_delivery fs_kafka_produce_all(fs_kafka_producer *, const char *topic,
    const struct fs_kafka_msg *msgs, size_t n, char *err, size_t errlen);

/*
 * Told once, on the producer's report thread (or the thread that serves
 * the reports, once handed over), what became of one message.
 */
typedef void fs_kafka_sent(void *arg, enum fs_kafka_delivery, const char *err);
/*
 * Sends one message without waiting: 0 when it is on its way, and then
 * sent(arg, ...) runs exactly once, where the reports are served, when
 * the broker answered or message.timeout.ms passed (the same verdicts as
 * fs_kafka_produce_all); -1 with err when it was refused at once (it never
 * left: not delivered, and sent does not run). Thread-safe.
 */
int fs_kafka_produce_async(fs_kafka_producer *, const char *topic, const struct fs_kafka_msg *,
    fs_kafka_sent *sent, void *arg, char *err, size_t errlen);

/*
 * Creates the topic with that many partitions, each on replicas brokers, a
 * write acknowledged (acks=all) once min_insync of them have it. 0 when it
 * was created or already exists, -1 with err set otherwise.
 */
int fs_kafka_create_topic(const char *brokers, const char *topic, int partitions, int replicas,
    int min_insync, char *err, size_t errlen);

#define FS_KAFKA_PARTITIONS_MAX 1024

/* One grant of the brokers' authorizer: principal may do operation on a resource. */
struct fs_kafka_acl {
	rd_kafka_ResourceType_t type;	/* TOPIC, GROUP or BROKER (the cluster) */
	const char *name;		/* the topic or group (literal); the cluster: "kafka-cluster" */
	const char *principal;		/* "User:NAME" */
	rd_kafka_AclOperation_t operation;
};

/*
 * Grants acls[0..n) (ALLOW, from any host); a grant that exists already is
 * left as it is. 0, or -1 with err naming the first refused.
 */
int fs_kafka_create_acls(const char *brokers, const struct fs_kafka_acl *acls, size_t n, char *err,
    size_t errlen);

/*
 * A consumer-group member that commits only when told to: auto commit is
 * off, a new group starts at the earliest offset, and a commit names the
 * exact offsets of the messages that the caller has finished with.
 */
typedef struct fs_kafka_consumer {
	rd_kafka_t *rk;
	int track_eof;	/* drain mode: partition EOF events are recorded */
	unsigned char at_eof[FS_KAFKA_PARTITIONS_MAX];
	int err;
	char errstr[256];
} fs_kafka_consumer;

/*
 * Joins group and subscribes to topic. With track_eof, the consumer knows
 * when it has read every assigned partition to its end (caught_up).
 */
fs_kafka_consumer *fs_kafka_consumer_new(const char *brokers, const char *group, const char *topic,
    int track_eof, char *err, size_t errlen);
/* Leaves the group (committing nothing) and frees. */
void fs_kafka_consumer_free(fs_kafka_consumer *);
/*
 * The next message within timeout_ms, or NULL (then err/errstr tell of a
 * consumer error, if any). Free it with rd_kafka_message_destroy.
 */
rd_kafka_message_t *fs_kafka_consumer_poll(fs_kafka_consumer *, int timeout_ms);
/*
 * Commits synchronously, per partition, the offset after the last of the n
 * messages: everything up to them is done. 0, or -1 with errstr set.
 */
int fs_kafka_consumer_commit(fs_kafka_consumer *, rd_kafka_message_t *const *msgs, size_t n);
/* With track_eof: 1 once partitions are assigned and each is read to its end. */
int fs_kafka_consumer_caught_up(fs_kafka_consumer *);
/*
 * How many messages of topic the group has not committed yet, over all
 * partitions (without joining the group); -1 with err set on failure.
 */
long long fs_kafka_group_lag(const char *brokers, const char *group, const char *topic,
    int timeout_ms, char *err, size_t errlen);
/* The most partitions a topic may have for fs_kafka_group_lag. */
#define FS_KAFKA_PARTITIONS_MAX 1024
/*
 * The same per partition: lags[p] for partition p (every slot of max is
 * written), each the committed offset read first, the end of the
 * partition after. Returns the number of partitions, or -1 with err set
 * (also when there are more than max).
 */
int fs_kafka_group_lags(const char *brokers, const char *group, const char *topic, int timeout_ms,
    long long *lags, int max, char *err, size_t errlen);
/* The partition of a message with this key among partitions, as the producer picks it. */
int32_t fs_kafka_partition_of(const void *key, size_t keylen, int32_t partitions);

/* Called per message by fs_kafka_read_topic; non-zero stops the reading. */
typedef int fs_kafka_each_msg(void *arg, const rd_kafka_message_t *m);

/*
 * Reads the messages of topic, each partition from its start (or, with a
 * group, from that group's committed offset: what the group has not
 * consumed yet) to the end it has now, joining no group and committing
 * nothing, and calls each per message; at most max messages, all within
 * timeout_ms. The number read, or -1 with err set. Without a group the
 * client still names FS_KAFKA_READER_GROUP and looks up its coordinator:
 * a principal that reads so needs Describe on that group.
 */
#define FS_KAFKA_READER_GROUP "flashsale-admin-reader"
long fs_kafka_read_topic(const char *brokers, const char *topic, const char *group, long max,
    int timeout_ms, fs_kafka_each_msg *each, void *arg, char *err, size_t errlen);
/* The value of a message's header name into out (truncated); 1 found, 0 not. */
int fs_kafka_msg_header(const rd_kafka_message_t *, const char *name, char *out, size_t outlen);

#endif

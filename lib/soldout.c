#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "clock.h"
#include "lock.h"
#include "log.h"
#include "metrics.h"
#include "redis.h"
#include "stock.h"
#include "soldout.h"

/*
 * The sold-out items of live sales, in an open-addressing table (linear
 * probing, power-of-two capacity, at most half full) under a
 * writer-preferring lock: a lookup is a few loads whatever the number of
 * items, and the rare writers (a sale selling out, a restock) are never
 * starved by the stream of readers. An entry carries its sale's end; the
 * listener drops the entries (and markers) of ended sales, so memory
 * follows the live sales, not the process's history. An entry, its marker
 * and the generations change together under the write lock: a restock or
 * a new subscription cannot fall between a mark's check and its marker, so
 * nothing leaves an entry without its marker (nginx would never answer for
 * the item) or a marker of an answer a restock made stale.
 */
#define CAP_MIN 64
#define GEN_STRIPES 256 /* restock generations, by item hash: no entry needed */
#define SWEEP_EVERY_MS 1000

struct entry {
	uint64_t item; /* 0: free */
	int64_t end_ms;
};

struct fs_soldout {
	pthread_rwlock_t lock;
	struct entry *tab;
	size_t cap, n;
	int full_logged;
	atomic_uint gen[GEN_STRIPES]; /* bumped by every restock of an item of the stripe */
	char dir[512];
	fs_redis *redis; /* never used for commands: where and as whom to subscribe */
	pthread_t listener;
	int listening;
	atomic_int stop;
	redisContext *sub; /* the listener's connection */
	atomic_uint subscriptions; /* times the listener subscribed */
	atomic_uint silences;      /* connections dropped for an unanswered PING */
};

static size_t
hash_of(uint64_t item)
{
	return (size_t)((item * 0x9E3779B97F4A7C15ull) >> 17);
}

static atomic_uint *
gen_of(fs_soldout *s, uint64_t item)
{
	return &s->gen[hash_of(item) % GEN_STRIPES];
}

/* The item's index in tab, or the free slot where it belongs. */
static size_t
probe(const struct entry *tab, size_t cap, uint64_t item)
{
	size_t i = hash_of(item) & (cap - 1);

	while (tab[i].item != 0 && tab[i].item != item)
		i = (i + 1) & (cap - 1);
	return i;
}

/* Moves every entry into a table of cap slots; -1 when out of memory. */
static int
rehash(fs_soldout *s, size_t cap)
{
	struct entry *tab = calloc(cap, sizeof(*tab));

	if (tab == NULL)
		return -1;
	for (size_t i = 0; i < s->cap; i++)
		if (s->tab[i].item != 0)
			tab[probe(tab, cap, s->tab[i].item)] = s->tab[i];
	free(s->tab);
	s->tab = tab;
	s->cap = cap;
	return 0;
}

/* Adds or refreshes the item's entry; the write lock is held. */
static int
put(fs_soldout *s, uint64_t item, int64_t end_ms)
{
	size_t i = probe(s->tab, s->cap, item);

	if (s->tab[i].item == item) {
		if (end_ms > s->tab[i].end_ms)
			s->tab[i].end_ms = end_ms;
		return 0;
	}
	if (s->n >= FS_SOLDOUT_MAX) {
		if (!s->full_logged)
			fs_log_warn("soldout: %d items of live sales are sold out; no fast path for more",
			    FS_SOLDOUT_MAX);
		s->full_logged = 1;
		return -1;
	}
	if (2 * (s->n + 1) > s->cap) {
		if (rehash(s, 2 * s->cap) != 0)
			return -1;
		i = probe(s->tab, s->cap, item);
	}
	s->tab[i].item = item;
	s->tab[i].end_ms = end_ms;
	s->n++;
	return 0;
}

/* Removes the item's entry, shifting its followers back; write lock held. */
static void
drop(fs_soldout *s, uint64_t item)
{
	size_t mask = s->cap - 1, i = probe(s->tab, s->cap, item), j, home;

	if (s->tab[i].item != item)
		return;
	s->n--;
	for (j = (i + 1) & mask; s->tab[j].item != 0; j = (j + 1) & mask) {
		home = hash_of(s->tab[j].item) & mask;
		/* The entry at j may fill the hole at i unless its home lies in (i, j]. */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			s->tab[i] = s->tab[j];
			i = j;
		}
	}
	s->tab[i].item = 0;
}

static void
marker_path(fs_soldout *s, uint64_t item, char *out, size_t outlen)
{
	snprintf(out, outlen, "%s/%" PRIu64, s->dir, item);
}

static void
marker_remove(fs_soldout *s, uint64_t item)
{
	char path[600];

	if (s->dir[0] == '\0')
		return;
	marker_path(s, item, path, sizeof(path));
	if (unlink(path) != 0 && errno != ENOENT)
		fs_log_warn("soldout: cannot remove %s: %s", path, strerror(errno));
}

void
fs_soldout_clear(fs_soldout *s, uint64_t item)
{
	pthread_rwlock_wrlock(&s->lock);
	atomic_fetch_add(gen_of(s, item), 1);
	drop(s, item);
	marker_remove(s, item);
	pthread_rwlock_unlock(&s->lock);
}

void
fs_soldout_forget_all(fs_soldout *s)
{
	struct dirent *de;
	DIR *d;

	pthread_rwlock_wrlock(&s->lock);
	for (size_t i = 0; i < GEN_STRIPES; i++)
		atomic_fetch_add(&s->gen[i], 1);
	memset(s->tab, 0, s->cap * sizeof(*s->tab));
	s->n = 0;
	if (s->dir[0] != '\0' && (d = opendir(s->dir)) != NULL) {
		while ((de = readdir(d)) != NULL)
			if (de->d_name[0] >= '0' && de->d_name[0] <= '9')
				unlinkat(dirfd(d), de->d_name, 0);
		closedir(d);
	}
	pthread_rwlock_unlock(&s->lock);
}

size_t
fs_soldout_sweep(fs_soldout *s, int64_t now_ms)
{
	struct entry *tab = NULL;
	uint64_t *ended = NULL;
	size_t cap, nended = 0, k = 0;

	/* The common case, nothing ended, costs readers nothing. */
	pthread_rwlock_rdlock(&s->lock);
	for (size_t i = 0; i < s->cap; i++)
		if (s->tab[i].item != 0 && s->tab[i].end_ms <= now_ms)
			nended++;
	pthread_rwlock_unlock(&s->lock);
	if (nended == 0)
		return 0;
	pthread_rwlock_wrlock(&s->lock);
	nended = 0;
	for (size_t i = 0; i < s->cap; i++)
		if (s->tab[i].item != 0 && s->tab[i].end_ms <= now_ms)
			nended++;
	/* Rebuilt at the size the live entries need, so memory shrinks too. */
	for (cap = CAP_MIN; cap < 2 * (s->n - nended); cap *= 2)
		;
	if (nended > 0 && (ended = malloc(nended * sizeof(*ended))) != NULL &&
	    (tab = calloc(cap, sizeof(*tab))) != NULL) {
		for (size_t i = 0; i < s->cap; i++) {
			if (s->tab[i].item == 0)
				continue;
			if (s->tab[i].end_ms > now_ms)
				tab[probe(tab, cap, s->tab[i].item)] = s->tab[i];
			else
				ended[k++] = s->tab[i].item;
		}
		free(s->tab);
		s->tab = tab;
		s->cap = cap;
		s->n -= k;
		s->full_logged = 0;
	}
	for (size_t i = 0; i < k; i++)
		marker_remove(s, ended[i]);
	pthread_rwlock_unlock(&s->lock);
	free(ended);
	return k;
}

void
fs_soldout_listener_stats(fs_soldout *s, unsigned *subscriptions, unsigned *silences)
{
	*subscriptions = atomic_load(&s->subscriptions);
	*silences = atomic_load(&s->silences);
}

void
fs_soldout_stats(fs_soldout *s, size_t *items, size_t *bytes)
{
	pthread_rwlock_rdlock(&s->lock);
	*items = s->n;
	*bytes = s->cap * sizeof(*s->tab);
	pthread_rwlock_unlock(&s->lock);
}

/* The listener's housekeeping: the sold-out items of ended sales go. */
static void
sweep_due(fs_soldout *s, int64_t *swept_ms)
{
	int64_t now_ms = fs_clock_now_ms();

	if (now_ms - *swept_ms < SWEEP_EVERY_MS)
		return;
	*swept_ms = now_ms;
	fs_soldout_sweep(s, now_ms);
}

/* A subscribed connection to Redis, keepalive on where it is TCP; NULL while Redis is away. */
static redisContext *
subscribe(fs_soldout *s)
{
	char err[128];
	redisReply *reply;
	redisContext *c;

	if ((c = fs_redis_dial(s->redis, err, sizeof(err))) == NULL)
		return NULL;
	/* The kernel's own probe too, for a peer that vanished while idle. */
	if (c->connection_type == REDIS_CONN_TCP && redisEnableKeepAlive(c) != REDIS_OK)
		fs_log_warn("restock listener: no TCP keepalive: %s", c->errstr);
	if ((reply = redisCommand(c, "SUBSCRIBE %s", FS_STOCK_RESTOCK_CHANNEL)) == NULL) {
		redisFree(c);
		return NULL;
	}
	freeReplyObject(reply);
	atomic_fetch_add(&s->subscriptions, 1);
	fs_metrics_count(FS_M_SOLDOUT_SUBSCRIPTIONS);
	return c;
}

/*
 * Reads restocks until the connection fails, falls silent past the PING
 * deadline, or the stop flag is up.
 */
static void
read_restocks(fs_soldout *s, int64_t *swept_ms)
{
	int64_t heard_ms = fs_clock_mono_ms(), ping_ms = 0, now;
	redisReply *reply;
	uint64_t sale, item;
	void *r;

	while (!atomic_load(&s->stop)) {
		sweep_due(s, swept_ms);
		now = fs_clock_mono_ms();
		if (ping_ms == 0 && now - heard_ms >= FS_SOLDOUT_PING_EVERY_MS) {
			/* Sent by the next read; in subscribed mode the answer is ["pong", ""]. */
			if (redisAppendCommand(s->sub, "PING") != REDIS_OK)
				return;
			ping_ms = now;
		} else if (ping_ms != 0 && now - ping_ms >= FS_SOLDOUT_PING_DEADLINE_MS) {
			atomic_fetch_add(&s->silences, 1);
			fs_metrics_count(FS_M_SOLDOUT_SILENCES);
			fs_log_warn("restock listener: no answer to PING within %d ms; subscribing again",
			    FS_SOLDOUT_PING_DEADLINE_MS);
			return;
		}
		if (redisGetReply(s->sub, &r) != REDIS_OK) {
			if (s->sub->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK)) {
				s->sub->err = 0;
				s->sub->errstr[0] = '\0';
				continue;
			}
			return;
		}
		heard_ms = fs_clock_mono_ms();
		ping_ms = 0;
		reply = r;
		if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 3 &&
		    reply->element[2]->type == REDIS_REPLY_STRING &&
		    fs_stock_restock_parse(reply->element[2]->str, &sale, &item) == 0)
			fs_soldout_clear(s, item);
		freeReplyObject(reply);
	}
}

static void *
listen_restocks(void *arg)
{
	fs_soldout *s = arg;
	struct timeval poll_tv = { 0, 200000 };
	int64_t swept_ms = 0;

	while (!atomic_load(&s->stop)) {
		sweep_due(s, &swept_ms);
		if ((s->sub = subscribe(s)) == NULL) {
			usleep(200000); /* Redis is away: retry soon, it is a pause not a wait. */
			continue;
		}
		/* Restocks may have gone by unheard until now: every flag goes. */
		fs_soldout_forget_all(s);
		/* Short read timeouts let the thread notice the stop flag and send its PING. */
		redisSetTimeout(s->sub, poll_tv);
		read_restocks(s, &swept_ms);
		redisFree(s->sub);
		s->sub = NULL;
	}
	return NULL;
}

/* The table and the marker directory, without a listener. */
static fs_soldout *
table_new(const char *marker_dir)
{
	fs_soldout *s;

	if (strlen(marker_dir) >= sizeof(s->dir) || (s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	if ((s->tab = calloc(CAP_MIN, sizeof(*s->tab))) == NULL) {
		free(s);
		return NULL;
	}
	s->cap = CAP_MIN;
	strcpy(s->dir, marker_dir);
	if (fs_lock_rw_init(&s->lock) != 0) {
		free(s->tab);
		free(s);
		return NULL;
	}
	return s;
}

fs_soldout *
fs_soldout_new_offline(const char *marker_dir)
{
	return table_new(marker_dir);
}

fs_soldout *
fs_soldout_new(const char *marker_dir, const struct fs_cfg *cfg, char *err, size_t errlen)
{
	fs_soldout *s;

	if ((s = table_new(marker_dir)) == NULL) {
		snprintf(err, errlen, "out of memory, or FLASHSALE_SOLDOUT_DIR too long");
		return NULL;
	}
	if ((s->redis = fs_redis_open(cfg, err, errlen)) == NULL) {
		fs_soldout_free(s);
		return NULL;
	}
	if (pthread_create(&s->listener, NULL, listen_restocks, s) != 0) {
		snprintf(err, errlen, "cannot start the restock listener");
		fs_soldout_free(s);
		return NULL;
	}
	s->listening = 1;
	return s;
}

void
fs_soldout_free(fs_soldout *s)
{
	if (s == NULL)
		return;
	atomic_store(&s->stop, 1);
	if (s->listening)
		pthread_join(s->listener, NULL);
	pthread_rwlock_destroy(&s->lock);
	fs_redis_free(s->redis);
	free(s->tab);
	free(s);
}

int
fs_soldout_known(fs_soldout *s, uint64_t item)
{
	int known;

	pthread_rwlock_rdlock(&s->lock);
	known = s->tab[probe(s->tab, s->cap, item)].item == item;
	pthread_rwlock_unlock(&s->lock);
	return known;
}

unsigned
fs_soldout_generation(fs_soldout *s, uint64_t item)
{
	return atomic_load(gen_of(s, item));
}

void
fs_soldout_mark(fs_soldout *s, uint64_t item, int64_t sale_end_ms, unsigned gen)
{
	char path[600];
	int fd;

	if (item == 0)
		return;
	pthread_rwlock_wrlock(&s->lock);
	/* A restock or a new subscription since gen was read: stale; the next request asks Redis. */
	if (atomic_load(gen_of(s, item)) == gen && put(s, item, sale_end_ms) == 0 && s->dir[0] != '\0') {
		marker_path(s, item, path, sizeof(path));
		if ((fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) >= 0)
			close(fd);
		else
			fs_log_warn("soldout: cannot create %s: %s", path, strerror(errno));
	}
	pthread_rwlock_unlock(&s->lock);
}

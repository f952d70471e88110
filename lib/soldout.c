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
#include <time.h>
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
	uint64_t sale; /* where the recheck asks for its units left */
	int64_t end_ms;
};

/*
 * The items in doubt: a hold of theirs was kept while its order may or may
 * not be in the broker's log (handlers/purchase.c). Their entries
 * are struct entry too, end_ms the end of the doubt, sale where the
 * recheck asks whether it still is (0: unknown); the sweep drops them
 * when it has passed.
 */
struct doubts {
	struct entry *tab;
	size_t cap, n;
	int full_logged;
};

/*
 * A sold-out answer waiting to be marked: a table with the recheck thread
 * marks an item only once it has read the item's sale's doubts in Redis
 * since the answer (settle_marks), so that a doubt whose message never
 * reached this process (lost, or told before it started) is never marked
 * over, by its flag, its marker or a kept 410, even for a period.
 */
#define MARKS_MAX 256

struct mark {
	uint64_t sale, item;
	int64_t end_ms;
	unsigned gen;
};

struct fs_soldout {
	pthread_rwlock_t lock;
	struct entry *tab;
	size_t cap, n;
	int full_logged;
	struct doubts doubt; /* under lock too */
	atomic_uint gen[GEN_STRIPES]; /* bumped by every restock of an item of the stripe */
	char dir[512];
	fs_redis *redis; /* never used for commands: where and as whom to subscribe */
	pthread_t listener;
	int listening;
	atomic_int stop;
	redisContext *sub; /* the listener's connection */
	atomic_uint subscriptions; /* times the listener subscribed */
	atomic_uint silences;      /* connections dropped for an unanswered PING */
	fs_stock *stock;           /* the recheck thread's own */
	pthread_t rechecker;
	int rechecking;
	int recheck_ms; /* FLASHSALE_SOLDOUT_RECHECK_MS */
	int recheck_failing; /* the last pass could not ask about every item */
	struct mark marks[MARKS_MAX]; /* under lock: sold-out answers to mark, */
	size_t nmarks, settling;      /* the first settling of them being marked */
	pthread_mutex_t wake_mu; /* wakes the recheck thread for marks */
	pthread_cond_t wake;
	int woken, wake_init;
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

/* Moves every entry of *tab into a table of cap slots; -1 when out of memory. */
static int
rehash(struct entry **tabp, size_t *capp, size_t cap)
{
	struct entry *tab = calloc(cap, sizeof(*tab));

	if (tab == NULL)
		return -1;
	for (size_t i = 0; i < *capp; i++)
		if ((*tabp)[i].item != 0)
			tab[probe(tab, cap, (*tabp)[i].item)] = (*tabp)[i];
	free(*tabp);
	*tabp = tab;
	*capp = cap;
	return 0;
}

/* Adds or refreshes the item's entry; the write lock is held. */
static int
put(fs_soldout *s, uint64_t sale, uint64_t item, int64_t end_ms)
{
	size_t i = probe(s->tab, s->cap, item);

	if (s->tab[i].item == item) {
		s->tab[i].sale = sale;
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
		if (rehash(&s->tab, &s->cap, 2 * s->cap) != 0)
			return -1;
		i = probe(s->tab, s->cap, item);
	}
	s->tab[i].item = item;
	s->tab[i].sale = sale;
	s->tab[i].end_ms = end_ms;
	s->n++;
	return 0;
}

/* Removes the item's entry from tab, shifting its followers back; write lock held. 1: it was there. */
static int
drop(struct entry *tab, size_t cap, size_t *n, uint64_t item)
{
	size_t mask = cap - 1, i = probe(tab, cap, item), j, home;

	if (tab[i].item != item)
		return 0;
	(*n)--;
	for (j = (i + 1) & mask; tab[j].item != 0; j = (j + 1) & mask) {
		home = hash_of(tab[j].item) & mask;
		/* The entry at j may fill the hole at i unless its home lies in (i, j]. */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			tab[i] = tab[j];
			i = j;
		}
	}
	tab[i].item = 0;
	return 1;
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

/* Forgets the item, its marker and the answers on their way; 1 when it was remembered. */
static int
forget(fs_soldout *s, uint64_t item)
{
	int was;

	pthread_rwlock_wrlock(&s->lock);
	atomic_fetch_add(gen_of(s, item), 1);
	was = drop(s->tab, s->cap, &s->n, item);
	marker_remove(s, item);
	pthread_rwlock_unlock(&s->lock);
	return was;
}

void
fs_soldout_clear(fs_soldout *s, uint64_t item)
{
	forget(s, item);
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

/* The end of the item's doubt, or 0 when it is not in doubt at now_ms; the lock held. */
static int64_t
doubt_until(const fs_soldout *s, uint64_t item, int64_t now_ms)
{
	const struct entry *e;

	if (s->doubt.n == 0)
		return 0;
	e = &s->doubt.tab[probe(s->doubt.tab, s->doubt.cap, item)];
	return e->item == item && e->end_ms > now_ms ? e->end_ms : 0;
}

int
fs_soldout_doubt(fs_soldout *s, uint64_t sale, uint64_t item, int64_t until_ms)
{
	struct doubts *d = &s->doubt;
	int64_t now_ms = fs_clock_now_ms(), was;
	size_t i;

	if (item == 0 || until_ms <= now_ms)
		return 0;
	pthread_rwlock_wrlock(&s->lock);
	was = doubt_until(s, item, now_ms);
	i = probe(d->tab, d->cap, item);
	if (d->tab[i].item == item) {
		if (until_ms > d->tab[i].end_ms)
			d->tab[i].end_ms = until_ms;
		if (sale != 0)
			d->tab[i].sale = sale;
	} else if (d->n >= FS_SOLDOUT_DOUBT_MAX ||
	    (2 * (d->n + 1) > d->cap && rehash(&d->tab, &d->cap, 2 * d->cap) != 0)) {
		if (!d->full_logged)
			fs_log_warn("soldout: %d items are in doubt; item %" PRIu64 " may be answered "
				    "sold out while a hold of it is in doubt",
			    FS_SOLDOUT_DOUBT_MAX, item);
		d->full_logged = 1;
	} else {
		d->tab[probe(d->tab, d->cap, item)] =
		    (struct entry){ .item = item, .sale = sale, .end_ms = until_ms };
		d->n++;
	}
	/* Not sold out here from now on, and no answer on its way makes it so (its gen is old). */
	atomic_fetch_add(gen_of(s, item), 1);
	drop(s->tab, s->cap, &s->n, item);
	marker_remove(s, item);
	pthread_rwlock_unlock(&s->lock);
	return until_ms >= was + FS_SOLDOUT_DOUBT_NEWS_MS;
}

int
fs_soldout_in_doubt(fs_soldout *s, uint64_t item)
{
	int in;

	pthread_rwlock_rdlock(&s->lock);
	in = s->doubt.n > 0 && doubt_until(s, item, fs_clock_now_ms()) != 0;
	pthread_rwlock_unlock(&s->lock);
	return in;
}

/* Reads a number [1-9][0-9]* of at most max at *p, moving *p past it; 0 or -1. */
static int
number(const char **p, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	const char *c = *p;

	if (*c < '1' || *c > '9')
		return -1;
	for (; *c >= '0' && *c <= '9'; c++) {
		if (v > (max - (uint64_t)(*c - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*c - '0');
	}
	*p = c;
	*out = v;
	return 0;
}

int
fs_soldout_doubt_parse(const char *msg, uint64_t *sale, uint64_t *item, int64_t *until_ms)
{
	const char *p = msg;
	uint64_t it, until, sl;

	if (strncmp(p, FS_SOLDOUT_DOUBT_WORD " ", sizeof(FS_SOLDOUT_DOUBT_WORD)) != 0)
		return -1;
	p += sizeof(FS_SOLDOUT_DOUBT_WORD);
	if (number(&p, UINT64_MAX, &it) != 0 || *p++ != ' ' ||
	    number(&p, (uint64_t)INT64_MAX, &until) != 0 || *p++ != ' ' ||
	    number(&p, UINT64_MAX, &sl) != 0 || *p != '\0')
		return -1;
	*sale = sl;
	*item = it;
	*until_ms = (int64_t)until;
	return 0;
}

int
fs_soldout_doubt_format(char *out, size_t outlen, uint64_t sale, uint64_t item, int64_t until_ms)
{
	int n = snprintf(out, outlen, FS_SOLDOUT_DOUBT_WORD " %" PRIu64 " %" PRId64 " %" PRIu64, item,
	    until_ms, sale);

	return n > 0 && (size_t)n < outlen ? n : -1;
}

/* How many entries of a table of cap slots end by now_ms; a lock held. */
static size_t
count_ended(const struct entry *tab, size_t cap, int64_t now_ms)
{
	size_t n = 0;

	for (size_t i = 0; i < cap; i++)
		n += tab[i].item != 0 && tab[i].end_ms <= now_ms;
	return n;
}

/*
 * Drops the entries of *tabp ended by now_ms (nended of its *np), the
 * table rebuilt at the size the live ones need, so memory shrinks too;
 * each dropped item goes to ended[] unless it is NULL. The write lock
 * held. How many went: 0 when out of memory (then nothing changed).
 */
static size_t
keep_live(struct entry **tabp, size_t *capp, size_t *np, size_t nended, int64_t now_ms,
    uint64_t *ended)
{
	struct entry *tab;
	size_t cap, k = 0;

	for (cap = CAP_MIN; cap < 2 * (*np - nended); cap *= 2)
		;
	if ((tab = calloc(cap, sizeof(*tab))) == NULL)
		return 0;
	for (size_t i = 0; i < *capp; i++) {
		if ((*tabp)[i].item == 0)
			continue;
		if ((*tabp)[i].end_ms > now_ms)
			tab[probe(tab, cap, (*tabp)[i].item)] = (*tabp)[i];
		else if (ended != NULL)
			ended[k++] = (*tabp)[i].item;
		else
			k++;
	}
	free(*tabp);
	*tabp = tab;
	*capp = cap;
	*np -= k;
	return k;
}

/* Drops the doubts ended by now_ms; the table shrinks to what is left. */
static void
doubts_sweep(fs_soldout *s, int64_t now_ms)
{
	struct doubts *d = &s->doubt;
	size_t nended;

	pthread_rwlock_rdlock(&s->lock);
	nended = count_ended(d->tab, d->cap, now_ms);
	pthread_rwlock_unlock(&s->lock);
	if (nended == 0)
		return;
	pthread_rwlock_wrlock(&s->lock);
	nended = count_ended(d->tab, d->cap, now_ms);
	if (nended > 0 && keep_live(&d->tab, &d->cap, &d->n, nended, now_ms, NULL) > 0)
		d->full_logged = 0;
	pthread_rwlock_unlock(&s->lock);
}

size_t
fs_soldout_sweep(fs_soldout *s, int64_t now_ms)
{
	uint64_t *ended = NULL;
	size_t nended, k = 0;

	doubts_sweep(s, now_ms);
	/* The common case, nothing ended, costs readers nothing. */
	pthread_rwlock_rdlock(&s->lock);
	nended = count_ended(s->tab, s->cap, now_ms);
	pthread_rwlock_unlock(&s->lock);
	if (nended == 0)
		return 0;
	pthread_rwlock_wrlock(&s->lock);
	nended = count_ended(s->tab, s->cap, now_ms);
	if (nended > 0 && (ended = malloc(nended * sizeof(*ended))) != NULL &&
	    (k = keep_live(&s->tab, &s->cap, &s->n, nended, now_ms, ended)) > 0)
		s->full_logged = 0;
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

/* One message of fs:restock: a restock, or a doubt; anything else is logged and ignored. */
static void
heard(fs_soldout *s, const char *msg)
{
	uint64_t sale, item;
	int64_t until_ms;

	if (fs_soldout_doubt_parse(msg, &sale, &item, &until_ms) == 0)
		fs_soldout_doubt(s, sale, item, until_ms);
	else if (fs_stock_restock_parse(msg, &sale, &item) == 0)
		fs_soldout_clear(s, item);
	else
		fs_log_warn("restock listener: ignored a message that is neither a restock nor a "
			    "doubt: \"%.64s\"",
		    msg);
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
		    reply->element[0]->type == REDIS_REPLY_STRING &&
		    strcmp(reply->element[0]->str, "message") == 0 &&
		    reply->element[2]->type == REDIS_REPLY_STRING)
			heard(s, reply->element[2]->str);
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

/* Orders entries by sale, then item: a sale's items are asked about together. */
static int
by_sale(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->sale != y->sale)
		return x->sale < y->sale ? -1 : 1;
	return (x->item > y->item) - (x->item < y->item);
}

/* A copy of the entries of sales live at now_ms, by sale, into *list (free it), *n of them; 0 or -1. */
static int
remembered(fs_soldout *s, int64_t now_ms, struct entry **list, size_t *n)
{
	size_t k = 0;

	*list = NULL;
	pthread_rwlock_rdlock(&s->lock);
	if (s->n > 0 && (*list = malloc(s->n * sizeof(**list))) != NULL)
		for (size_t i = 0; i < s->cap; i++)
			if (s->tab[i].item != 0 && s->tab[i].end_ms > now_ms)
				(*list)[k++] = s->tab[i];
	pthread_rwlock_unlock(&s->lock);
	if (k > 1)
		qsort(*list, k, sizeof(**list), by_sale);
	*n = k;
	return k > 0 || *list != NULL || s->n == 0 ? 0 : -1;
}

/*
 * Forgets those of n items of one sale (at most a batch) that can sell
 * again: a unit left and the sale not ended in Redis (a sale closed early
 * keeps its flags). How many went, or -1 when Redis could not tell.
 */
static int
recheck_sale(fs_soldout *s, fs_stock *st, const struct entry *e, size_t n, int64_t now_ms)
{
	uint64_t items[FS_SOLDOUT_RECHECK_BATCH];
	long left[FS_SOLDOUT_RECHECK_BATCH];
	int64_t ends;
	int healed = 0;

	if ((ends = fs_stock_end(st, e[0].sale)) < 0)
		return -1;
	if (ends > 0 && now_ms >= ends)
		return 0;
	for (size_t i = 0; i < n; i++)
		items[i] = e[i].item;
	if (fs_stock_left(st, e[0].sale, items, n, left) != 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (left[i] > 0)
			healed += forget(s, items[i]);
	return healed;
}

static int
by_number(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/*
 * The sales whose doubts the recheck asks Redis about: those of the n
 * remembered items in list and of the items in doubt here, distinct, into
 * *sales (free it), *nsales of them; 0 or -1 (out of memory).
 */
static int
doubt_sales(fs_soldout *s, const struct entry *list, size_t n, uint64_t **sales, size_t *nsales)
{
	size_t k = 0, u = 0, cap;

	pthread_rwlock_rdlock(&s->lock);
	cap = n + s->doubt.n;
	if ((*sales = malloc((cap > 0 ? cap : 1) * sizeof(**sales))) != NULL) {
		for (size_t i = 0; i < n; i++)
			(*sales)[k++] = list[i].sale;
		for (size_t i = 0; i < s->doubt.cap && k < cap; i++)
			if (s->doubt.tab[i].item != 0 && s->doubt.tab[i].sale != 0)
				(*sales)[k++] = s->doubt.tab[i].sale;
	}
	pthread_rwlock_unlock(&s->lock);
	if (*sales == NULL)
		return -1;
	qsort(*sales, k, sizeof(**sales), by_number);
	for (size_t i = 0; i < k; i++)
		if (u == 0 || (*sales)[u - 1] != (*sales)[i])
			(*sales)[u++] = (*sales)[i];
	*nsales = u;
	return 0;
}

/*
 * Puts in doubt here, for FS_SOLDOUT_DOUBT_LEASE passes more, each item of
 * the sale that Redis says has a hold in doubt not settled yet (its message
 * may have been lost, or its doubt outlived it). 0, or -1 when Redis could
 * not tell.
 */
static int
recheck_doubts(fs_soldout *s, fs_stock *st, uint64_t sale, int64_t now_ms)
{
	uint64_t items[FS_SOLDOUT_DOUBT_SALE_MAX];
	size_t n;
	int rc = fs_stock_doubts(st, sale, items, FS_SOLDOUT_DOUBT_SALE_MAX, &n);

	for (size_t i = 0; i < n; i++) {
		if (!fs_soldout_in_doubt(s, items[i]))
			fs_log_warn("soldout recheck: item %" PRIu64 " of sale %" PRIu64 " has a hold in "
				    "doubt in Redis that no message told here; in doubt now",
			    items[i], sale);
		fs_soldout_doubt(s, sale, items[i],
		    now_ms + (int64_t)FS_SOLDOUT_DOUBT_LEASE * s->recheck_ms);
	}
	return rc;
}

size_t
fs_soldout_recheck(fs_soldout *s, fs_stock *st, int64_t now_ms)
{
	size_t n, i = 0, j, healed = 0, nsales = 0;
	const char *why = NULL; /* why some items could not be asked about */
	struct entry *list;
	uint64_t *sales = NULL;
	int rc;

	if (remembered(s, now_ms, &list, &n) != 0 || doubt_sales(s, list, n, &sales, &nsales) != 0)
		why = "out of memory";
	for (size_t k = 0; k < nsales; k++)
		if (recheck_doubts(s, st, sales[k], now_ms) != 0)
			why = st->errstr;
	free(sales);
	for (; i < n; i = j) {
		for (j = i + 1; j < n && j - i < FS_SOLDOUT_RECHECK_BATCH && list[j].sale == list[i].sale;
		     j++)
			;
		if ((rc = recheck_sale(s, st, list + i, j - i, now_ms)) < 0)
			why = st->errstr;
		else
			healed += (size_t)rc;
	}
	free(list);
	/* One line when the recheck starts failing, one when it works again. */
	if (why != NULL && !s->recheck_failing)
		fs_log_warn("soldout recheck: %s; items it cannot ask about stay sold out here "
			    "until it can",
		    why);
	else if (why == NULL && s->recheck_failing)
		fs_log_info("soldout recheck: Redis answers again");
	s->recheck_failing = why != NULL;
	return healed;
}

static void mark_now(fs_soldout *, uint64_t sale, uint64_t item, int64_t sale_end_ms, unsigned gen);

/*
 * Marks the sold-out answers waiting (fs_soldout_mark) once their sales'
 * doubts are read: an item with a hold in doubt in Redis is put in doubt
 * instead (which makes its answer's gen stale). The answers of a sale
 * whose doubts Redis could not tell are dropped: their items ask Redis
 * again. 0, or -1 when some sale could not be read.
 */
static int
settle_marks(fs_soldout *s)
{
	struct mark m[MARKS_MAX];
	uint64_t sales[MARKS_MAX];
	int read[MARKS_MAX], rc = 0;
	size_t n, ns = 0, j;

	pthread_rwlock_wrlock(&s->lock);
	n = s->settling = s->nmarks;
	memcpy(m, s->marks, n * sizeof(*m));
	pthread_rwlock_unlock(&s->lock);
	for (size_t i = 0; i < n; i++) {
		for (j = 0; j < ns && sales[j] != m[i].sale; j++)
			;
		if (j == ns) {
			sales[ns] = m[i].sale;
			if ((read[ns++] = recheck_doubts(s, s->stock, m[i].sale, fs_clock_now_ms()) == 0) == 0)
				rc = -1;
		}
		if (read[j])
			mark_now(s, m[i].sale, m[i].item, m[i].end_ms, m[i].gen);
	}
	pthread_rwlock_wrlock(&s->lock);
	memmove(s->marks, s->marks + n, (s->nmarks - n) * sizeof(*m));
	s->nmarks -= n;
	s->settling = 0;
	pthread_rwlock_unlock(&s->lock);
	return rc;
}

/* Wakes the recheck thread (its nap ends at once). */
static void
wake(fs_soldout *s)
{
	pthread_mutex_lock(&s->wake_mu);
	s->woken = 1;
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->wake_mu);
}

/* Naps up to ms, or until woken (a mark waiting, the stop flag set by free). */
static void
nap(fs_soldout *s, int64_t ms)
{
	int64_t ns = (int64_t)fs_clock_mono_ns() + ms * 1000000LL;
	struct timespec until = { (time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL) };

	pthread_mutex_lock(&s->wake_mu);
	if (!s->woken)
		(void)pthread_cond_timedwait(&s->wake, &s->wake_mu, &until);
	s->woken = 0;
	pthread_mutex_unlock(&s->wake_mu);
}

/*
 * The recheck thread: settles the sold-out answers waiting to be marked as
 * they come (a period apart while Redis cannot tell their doubts), and a
 * pass every recheck_ms (start to start; at once when one took longer), so
 * that a restock message lost costs at most that long. Stops within a nap
 * of the stop flag.
 */
static void *
recheck_restocks(void *arg)
{
	fs_soldout *s = arg;
	int64_t due = fs_clock_mono_ms() + s->recheck_ms, now, marks_after = 0;
	size_t healed;

	while (!atomic_load(&s->stop)) {
		now = fs_clock_mono_ms();
		if (now >= marks_after && fs_soldout_marks_waiting(s) > 0) {
			if (settle_marks(s) != 0)
				marks_after = now + s->recheck_ms;
			continue;
		}
		if (now < due) {
			nap(s, due - now < 50 ? due - now : 50);
			continue;
		}
		due += s->recheck_ms;
		if (due < now)
			due = now;
		if ((healed = fs_soldout_recheck(s, s->stock, fs_clock_now_ms())) > 0) {
			fs_metrics_add(FS_M_SOLDOUT_HEALED, healed);
			fs_log_warn("soldout recheck: %zu sold-out item(s) had a unit again in Redis with "
				    "no restock heard; forgotten",
			    healed);
		}
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
	if ((s->doubt.tab = calloc(CAP_MIN, sizeof(*s->doubt.tab))) == NULL) {
		free(s->tab);
		free(s);
		return NULL;
	}
	s->cap = CAP_MIN;
	s->doubt.cap = CAP_MIN;
	s->recheck_ms = 1000; /* FLASHSALE_SOLDOUT_RECHECK_MS's default, for a table without the thread */
	strcpy(s->dir, marker_dir);
	if (fs_lock_rw_init(&s->lock) != 0) {
		free(s->doubt.tab);
		free(s->tab);
		free(s);
		return NULL;
	}
	return s;
}

/* The recheck thread's wake-up, on the monotonic clock its naps count by; 0 or -1. */
static int
wake_init(fs_soldout *s)
{
	pthread_condattr_t a;
	int rc = -1;

	if (pthread_condattr_init(&a) != 0)
		return -1;
	if (pthread_condattr_setclock(&a, CLOCK_MONOTONIC) == 0 && pthread_cond_init(&s->wake, &a) == 0) {
		if (pthread_mutex_init(&s->wake_mu, NULL) == 0) {
			s->wake_init = 1;
			rc = 0;
		} else {
			pthread_cond_destroy(&s->wake);
		}
	}
	pthread_condattr_destroy(&a);
	return rc;
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
	if ((s->stock = fs_stock_new(cfg, NULL, err, errlen)) == NULL) {
		fs_soldout_free(s);
		return NULL;
	}
	s->recheck_ms = (int)fs_cfg_long(cfg, FS_CFG_SOLDOUT_RECHECK_MS); /* range: lib/cfg */
	if (wake_init(s) != 0) {
		snprintf(err, errlen, "cannot make the sold-out recheck's wake-up");
		fs_soldout_free(s);
		return NULL;
	}
	if (pthread_create(&s->listener, NULL, listen_restocks, s) != 0) {
		snprintf(err, errlen, "cannot start the restock listener");
		fs_soldout_free(s);
		return NULL;
	}
	s->listening = 1;
	if (pthread_create(&s->rechecker, NULL, recheck_restocks, s) != 0) {
		snprintf(err, errlen, "cannot start the sold-out recheck");
		fs_soldout_free(s);
		return NULL;
	}
	s->rechecking = 1;
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
	if (s->rechecking) {
		wake(s);
		pthread_join(s->rechecker, NULL);
	}
	if (s->wake_init) {
		pthread_cond_destroy(&s->wake);
		pthread_mutex_destroy(&s->wake_mu);
	}
	pthread_rwlock_destroy(&s->lock);
	fs_stock_free(s->stock);
	fs_redis_free(s->redis);
	free(s->doubt.tab);
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

/* Marks the item sold out here at once, flag and marker, unless gen is stale or it is in doubt. */
static void
mark_now(fs_soldout *s, uint64_t sale, uint64_t item, int64_t sale_end_ms, unsigned gen)
{
	char path[600];
	int fd;

	pthread_rwlock_wrlock(&s->lock);
	/* A restock or a new subscription since gen was read: stale; the next request asks Redis. */
	/* An item in doubt is never taken for sold out: a shopper may hold a unit of it. */
	if (atomic_load(gen_of(s, item)) == gen && doubt_until(s, item, fs_clock_now_ms()) == 0 &&
	    put(s, sale, item, sale_end_ms) == 0 &&
	    s->dir[0] != '\0') {
		marker_path(s, item, path, sizeof(path));
		if ((fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) >= 0)
			close(fd);
		else
			fs_log_warn("soldout: cannot create %s: %s", path, strerror(errno));
	}
	pthread_rwlock_unlock(&s->lock);
}

void
fs_soldout_mark(fs_soldout *s, uint64_t sale, uint64_t item, int64_t sale_end_ms, unsigned gen)
{
	size_t i;
	int queued = 0;

	if (item == 0)
		return;
	if (!s->rechecking) {
		mark_now(s, sale, item, sale_end_ms, gen);
		return;
	}
	pthread_rwlock_wrlock(&s->lock);
	if (atomic_load(gen_of(s, item)) == gen && doubt_until(s, item, fs_clock_now_ms()) == 0) {
		/* The same item's answer not being marked yet is replaced by this newer one. */
		for (i = s->settling; i < s->nmarks && s->marks[i].item != item; i++)
			;
		/* Full: dropped, the item's next sold-out answer asks again. */
		if (i < MARKS_MAX) {
			s->marks[i] = (struct mark){ sale, item, sale_end_ms, gen };
			if (i == s->nmarks)
				s->nmarks++;
			queued = 1;
		}
	}
	pthread_rwlock_unlock(&s->lock);
	/* Only for an answer to mark: an item in doubt answers every purchase from Redis. */
	if (queued)
		wake(s);
}

size_t
fs_soldout_marks_waiting(fs_soldout *s)
{
	size_t n;

	pthread_rwlock_rdlock(&s->lock);
	n = s->nmarks;
	pthread_rwlock_unlock(&s->lock);
	return n;
}

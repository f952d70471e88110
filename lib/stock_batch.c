/*
 * Reservations in a batch: each one's home script pipelined with the
 * others (one round trip per node), sent and received apart for an event
 * loop; what a pipeline cannot settle runs as one reservation does. The
 * holds whose orders the broker acknowledged since the last batch ride in
 * the same pipeline (their marks), instead of a round trip of their own.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "redis.h"
#include "stock_int.h"

/* Where one reservation of fs_stock_reserve_many stands while its batch runs. */
enum batch_state {
	BATCH_DONE,      /* its outcome is known (it failed before Redis) */
	BATCH_PIPELINED, /* its home place's script is in the pipeline */
	BATCH_AFAR,      /* its home place has no shard: after the pipeline */
	BATCH_LAYOUT,    /* its sale's layout is not known: read in the pipeline, then the rest */
	BATCH_LATE       /* its layout came in the pipeline: its home script in a second one */
};

/* What fs_stock_reserve_many keeps of one reservation while its batch runs. */
struct batch_entry {
	struct attempt a;
	struct take_call tc;
	enum batch_state state;
};

/*
 * A sale's layout read in a batch's pipeline (layout.lua): one that the
 * process has not cached, or read LAYOUT_TTL_MS ago or more. Until the
 * reply comes the batch uses the cached one, however old (a layout changes
 * only when its sale is warmed again); a reservation whose sale has none
 * waits for the reply.
 */
struct batch_read {
	uint64_t sale;
	char key[KEY_MAX];
	const char *argv[1];
	int rc;  /* layout_take's, once received */
	struct fs_stock_layout layout;
	int err; /* when rc < 0 */
	char errstr[128];
};

/* Marks one batch carries: FS_STOCK_MARK_MAX holds of sales of up to 4 places each. */
#define BATCH_MARKS_MAX (FS_STOCK_MARK_MAX * 4)

/* fs_stock_reserve_many's room: the reservations and calls of one batch. */
struct batch {
	struct batch_entry e[FS_STOCK_BATCH_MAX];
	struct batch_read reads[LAYOUT_CACHE];
	size_t nreads, ncalls;
	/* the marks given to fs_stock_reserve_marks for the next batch, then in this one */
	struct mark_call marks[BATCH_MARKS_MAX];
	size_t nmarks;
	int marks_rc; /* once received: 0, or -1 when a mark failed (marks_errstr) */
	char marks_errstr[128];
	/* the reservations' scripts, then the layout reads, then the marks */
	struct fs_redis_call calls[FS_STOCK_BATCH_MAX + LAYOUT_CACHE + BATCH_MARKS_MAX];
	struct fs_redis_call mark_calls[BATCH_MARKS_MAX]; /* staged until the batch is sent */
	/* the home scripts of those that waited for their layout */
	struct fs_redis_call late[FS_STOCK_BATCH_MAX];
};

/* The outcome of one reservation of a batch, with the stock's error when it failed. */
static void
ask_done(fs_stock *s, struct fs_stock_ask *ask, enum fs_stock_result res)
{
	ask->result = res;
	ask->errstr[0] = '\0';
	if (res == FS_STOCK_ERROR)
		snprintf(ask->errstr, sizeof(ask->errstr), "%s", s->errstr);
}

/* The layout read of sale in batch b, or NULL. */
static struct batch_read *
batch_read_of(struct batch *b, uint64_t sale)
{
	for (size_t i = 0; i < b->nreads; i++)
		if (b->reads[i].sale == sale)
			return &b->reads[i];
	return NULL;
}

/*
 * The layout a reservation of sale in batch b goes by when the batch is
 * sent: 1 with *l, the cached one (a read goes in the pipeline when it is
 * old); 0 when there is none (the read goes in the pipeline: the
 * reservation waits for it); -1 err set. With the batch's reads all taken
 * by other sales, an old layout is used as it is, and a missing one is
 * read now, as fs_stock_reserve reads it.
 */
static int
batch_layout(fs_stock *s, struct batch *b, uint64_t sale, int64_t now,
    const struct fs_stock_layout **l)
{
	struct batch_read *rd;
	int fresh;

	*l = fs_stock_layout_cached(s, sale, now, &fresh);
	if (*l != NULL && fresh)
		return 1;
	if (batch_read_of(b, sale) == NULL) {
		if (b->nreads == LAYOUT_CACHE && *l != NULL)
			return 1; /* read again by a later batch */
		if (b->nreads == LAYOUT_CACHE)
			return (*l = fs_stock_layout_get(s, sale)) != NULL ? 1 : -1;
		rd = &b->reads[b->nreads++];
		rd->sale = sale;
		fs_stock_layout_key(rd->key, sale);
		rd->argv[0] = rd->key;
	}
	return *l != NULL;
}

/*
 * The layout a reservation of sale goes on with once the batch's replies
 * are in: the batch's read of it (NULL with err set if that failed and the
 * reservation had none, want_read), else the cached one of any age, else
 * read now.
 */
static const struct fs_stock_layout *
batch_layout_after(fs_stock *s, struct batch *b, uint64_t sale, int want_read)
{
	struct batch_read *rd = batch_read_of(b, sale);
	const struct fs_stock_layout *l;
	int fresh;

	if (rd != NULL && rd->rc >= 0)
		return &rd->layout;
	if (want_read) {
		/* It waited for this batch's read (batch_layout), which failed. */
		if (rd == NULL) {
			fs_stock_set_err(s, FS_STOCK_ERR_IO, "layout");
		} else {
			s->err = rd->err;
			snprintf(s->errstr, sizeof(s->errstr), "%s", rd->errstr);
		}
		return NULL;
	}
	if ((l = fs_stock_layout_cached(s, sale, fs_clock_now_ms(), &fresh)) != NULL)
		return l;
	return fs_stock_layout_get(s, sale);
}

/*
 * A reservation of the batch whose layout l is known: afar when its home
 * place holds no shard of the item, else its home script appended to calls
 * and its state set to state.
 */
static void
batch_place(fs_stock *s, struct batch_entry *e, const struct fs_stock_layout *l,
    struct fs_redis_call *calls, size_t *ncalls, enum batch_state state)
{
	fs_stock_reserve_place(&e->a, l);
	if (!fs_stock_home_has_shard(&e->a)) {
		e->state = BATCH_AFAR;
		return;
	}
	fs_stock_take_args(&e->tc, l->tags[e->a.home], &e->a, "guard");
	calls[(*ncalls)++] = (struct fs_redis_call){ .script = s->reserve, .nkeys = KEY__MAX,
		.argc = KEY__MAX + 7, .argv = e->tc.argv };
	e->state = state;
}

int
fs_stock_reserve_marks(fs_stock *s, const uint64_t *sales, const struct fs_stock_record *recs,
    size_t n)
{
	struct batch *b;
	long nc;

	fs_stock_reserve_end(s); /* the batch out, if any, has its marks already */
	if (n > FS_STOCK_MARK_MAX) {
		fs_stock_set_err(s, FS_STOCK_ERR_REPLY, "mark: too many holds at once");
		return -1;
	}
	if (s->batch == NULL && (s->batch = calloc(1, sizeof(*b))) == NULL) {
		fs_stock_set_err(s, FS_STOCK_ERR_NOMEM, "mark");
		return -1;
	}
	b = s->batch;
	b->nmarks = 0;
	if ((nc = fs_stock_mark_calls(s, sales, recs, n, b->marks, b->mark_calls, BATCH_MARKS_MAX)) < 0)
		return -1;
	b->nmarks = (size_t)nc;
	return 0;
}

int
fs_stock_reserve_marked(const fs_stock *s, char *err, size_t errlen)
{
	const struct batch *b = s->batch;

	if (b == NULL || b->marks_rc == 0)
		return 0;
	snprintf(err, errlen, "%s", b->marks_errstr);
	return -1;
}

/* The marks of a batch that is not pipelined: alone, now. */
static void
marks_alone(fs_stock *s, struct batch *b)
{
	b->marks_rc = 0;
	if (b->nmarks == 0)
		return;
	fs_redis_eval_many(s->redis, b->mark_calls, b->nmarks);
	for (size_t c = 0; c < b->nmarks; c++) {
		if (b->mark_calls[c].reply == NULL && b->marks_rc == 0) {
			fs_stock_driver_err(s, "mark", b->mark_calls[c].err, b->mark_calls[c].errstr);
			b->marks_rc = -1;
			snprintf(b->marks_errstr, sizeof(b->marks_errstr), "%s", s->errstr);
		}
		freeReplyObject(b->mark_calls[c].reply);
	}
	b->nmarks = 0;
}

void
fs_stock_reserve_begin(fs_stock *s, struct fs_stock_ask *asks, size_t n)
{
	struct batch *b;
	int64_t now = fs_clock_now_ms();

	fs_stock_reserve_end(s); /* one batch at a time */
	if (n > FS_STOCK_BATCH_MAX || (s->batch == NULL && (s->batch = calloc(1, sizeof(*b))) == NULL)) {
		/* Too many, or no room to pipeline: one at a time, now (marks first). */
		if (s->batch != NULL)
			marks_alone(s, s->batch);
		for (size_t i = 0; i < n; i++)
			ask_done(s, &asks[i], fs_stock_reserve(s, asks[i].sale, asks[i].item,
			    asks[i].user, asks[i].order_id, asks[i].now_ms, &asks[i].hold));
		return;
	}
	b = s->batch;
	b->nreads = b->ncalls = 0;
	b->marks_rc = 0;
	/* The common path of each (its home place's script) goes in one pipeline. */
	for (size_t i = 0; i < n; i++) {
		struct batch_entry *e = &b->e[i];
		const struct fs_stock_layout *l;
		int known;

		memset(&asks[i].hold, 0, sizeof(asks[i].hold));
		e->a = (struct attempt){ .user = asks[i].user, .order_id = asks[i].order_id,
			.item = asks[i].item };
		if (fs_stock_reserve_args(s, &e->a, asks[i].now_ms) != 0 ||
		    (known = batch_layout(s, b, asks[i].sale, now, &l)) < 0) {
			e->state = BATCH_DONE;
			ask_done(s, &asks[i], FS_STOCK_ERROR);
			continue;
		}
		if (!known) {
			e->state = BATCH_LAYOUT;
			continue;
		}
		batch_place(s, e, l, b->calls, &b->ncalls, BATCH_PIPELINED);
	}
	for (size_t r = 0; r < b->nreads; r++)
		b->calls[b->ncalls++] = (struct fs_redis_call){ .script = s->layout, .nkeys = 1,
			.argc = 1, .argv = b->reads[r].argv };
	/* The marks given for this batch ride at the end (replies read in _end). */
	memcpy(&b->calls[b->ncalls], b->mark_calls, b->nmarks * sizeof(b->mark_calls[0]));
	fs_redis_eval_send(s->redis, b->calls, b->ncalls + b->nmarks);
	s->batch_asks = asks;
	s->batch_n = n;
}

int
fs_stock_reserve_fds(const fs_stock *s, int *fds, int max)
{
	return s->batch_asks != NULL ? fs_redis_eval_fds(s->redis, fds, max) : 0;
}

int64_t
fs_stock_reserve_deadline(const fs_stock *s)
{
	return fs_redis_eval_deadline(s->redis);
}

/* Takes the batch's marks' replies: 1 rewritten, 0 changed meanwhile; only a failure counts. */
static void
batch_marks_take(fs_stock *s, struct batch *b)
{
	for (size_t c = 0; c < b->nmarks; c++) {
		struct fs_redis_call *call = &b->calls[b->ncalls + c];

		if (call->reply == NULL && b->marks_rc == 0) {
			fs_stock_driver_err(s, "mark", call->err, call->errstr);
			b->marks_rc = -1;
			snprintf(b->marks_errstr, sizeof(b->marks_errstr), "%s", s->errstr);
		}
		freeReplyObject(call->reply);
	}
	b->nmarks = 0;
}

/* Takes the batch's layout reads, and caches those that succeeded. */
static void
batch_reads_take(fs_stock *s, struct batch *b)
{
	int64_t now = fs_clock_now_ms();

	for (size_t r = 0; r < b->nreads; r++) {
		struct batch_read *rd = &b->reads[r];
		struct fs_redis_call *call = &b->calls[b->ncalls - b->nreads + r];

		if (call->reply == NULL) {
			fs_stock_driver_err(s, "layout", call->err, call->errstr);
			rd->rc = -1;
		} else {
			rd->rc = fs_stock_layout_take(s, rd->sale, call->reply, &rd->layout);
		}
		if (rd->rc < 0) {
			rd->err = s->err;
			snprintf(rd->errstr, sizeof(rd->errstr), "%s", s->errstr);
		} else {
			fs_stock_layout_keep(s, &rd->layout, rd->rc, now);
		}
	}
}

/*
 * The reservations that waited for their sale's layout: failed with their
 * read, or their home scripts in one more pipeline, now (Redis has just
 * answered the first), in order.
 */
static void
batch_late(fs_stock *s, struct batch *b, struct fs_stock_ask *asks, size_t n)
{
	size_t nlate = 0;

	for (size_t i = 0; i < n; i++) {
		struct batch_entry *e = &b->e[i];
		const struct fs_stock_layout *l;

		if (e->state != BATCH_LAYOUT)
			continue;
		if ((l = batch_layout_after(s, b, asks[i].sale, 1)) == NULL) {
			e->state = BATCH_DONE;
			ask_done(s, &asks[i], FS_STOCK_ERROR);
			continue;
		}
		batch_place(s, e, l, b->late, &nlate, BATCH_LATE);
	}
	if (nlate > 0)
		fs_redis_eval_many(s->redis, b->late, nlate);
}

void
fs_stock_reserve_end(fs_stock *s)
{
	struct fs_stock_ask *asks = s->batch_asks;
	size_t n = s->batch_n, c = 0, k = 0;
	struct batch *b = s->batch;

	if (asks == NULL)
		return;
	s->batch_asks = NULL;
	fs_redis_eval_recv(s->redis);
	batch_marks_take(s, b);
	batch_reads_take(s, b);
	batch_late(s, b, asks, n);
	/* Then each goes on as fs_stock_reserve would, in order. */
	for (size_t i = 0; i < n; i++) {
		struct fs_stock_ask *ask = &asks[i];
		struct batch_entry *e = &b->e[i];
		struct fs_redis_call *call = e->state == BATCH_PIPELINED ? &b->calls[c++] :
		    e->state == BATCH_LATE ? &b->late[k++] : NULL;
		const struct fs_stock_layout *l;
		enum take t;

		if (e->state == BATCH_DONE)
			continue;
		if ((l = batch_layout_after(s, b, ask->sale, 0)) == NULL) {
			if (call != NULL && call->reply != NULL)
				freeReplyObject(call->reply);
			ask_done(s, ask, FS_STOCK_ERROR);
			continue;
		}
		if (call == NULL) {
			ask_done(s, ask, fs_stock_reserve_from_afar(s, l, &e->a, &ask->hold));
			continue;
		}
		if (call->reply == NULL) {
			fs_stock_driver_err(s, "reserve", call->err, call->errstr);
			t = TAKE_ERROR;
		} else {
			t = fs_stock_take_reply(s, call->reply, &ask->hold);
		}
		ask_done(s, ask, fs_stock_reserve_after_home(s, l, &e->a, t, &ask->hold));
	}
}

void
fs_stock_reserve_many(fs_stock *s, struct fs_stock_ask *asks, size_t n)
{
	while (n > 0) {
		size_t k = n < FS_STOCK_BATCH_MAX ? n : FS_STOCK_BATCH_MAX;

		fs_stock_reserve_begin(s, asks, k);
		fs_stock_reserve_end(s);
		asks += k;
		n -= k;
	}
}

/*
 * The waiting room's Redis layout (docs/QUEUE.md): the keys fs:{S}:q:* of a
 * sale, all in its first place's tag, and the scripts that join, issue
 * passes and read the status document's figures. The pacer's script
 * (queue_admit.lua) is queue_pacer.c's; it writes the state hash read here.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "queue.h"
#include "queue_int.h"
#include "redis.h"

enum qkey { QKEY_PLACES, QKEY_LATE, QKEY_JOURNAL, QKEY_STATE, QKEY_PASSES, QKEY_STEPS, QKEY_SEEN,
	QKEY_CLAIMS, QKEY__MAX };

static const char *const qkey_names[QKEY__MAX] = {
	[QKEY_PLACES] = "places",
	[QKEY_LATE] = "late",
	[QKEY_JOURNAL] = "journal",
	[QKEY_STATE] = "state",
	[QKEY_PASSES] = "passes",
	[QKEY_STEPS] = "steps",
	[QKEY_SEEN] = "seen",
	[QKEY_CLAIMS] = "claims",
};

static const char *const verdict_names[FS_QUEUE_V__MAX] = {
	[FS_QUEUE_V_OK] = "OK",
	[FS_QUEUE_V_NOT_YET] = "NOT_YET",
	[FS_QUEUE_V_ENDED] = "ENDED",
	[FS_QUEUE_V_CLOSED] = "CLOSED",
	[FS_QUEUE_V_NOT_IN_QUEUE] = "NOT_IN_QUEUE",
	[FS_QUEUE_V_SOLD_OUT] = "SOLD_OUT",
	[FS_QUEUE_V_LAPSED] = "LAPSED",
	[FS_QUEUE_V_ERROR] = "ERROR",
};

const char *
fs_queue_verdict_name(enum fs_queue_verdict v)
{
	return (unsigned)v < FS_QUEUE_V__MAX ? verdict_names[v] : "?";
}

/* fs:{S}:q:<name>: the sale's first place tag is its id, as lib/stock's. */
static void
qkey(char out[FS_QUEUE_KEY_LEN], uint64_t sale, enum qkey k)
{
	fs_queue_key(out, sale, qkey_names[k]);
}

static void
store_err(fs_queue_store *q, const char *what)
{
	q->err = q->redis->err != 0 ? q->redis->err : FS_REDIS_ERR_REPLY;
	snprintf(q->errstr, sizeof(q->errstr), "%s: %s", what, q->redis->errstr);
}

static void
reply_err(fs_queue_store *q, const char *what)
{
	q->err = FS_REDIS_ERR_REPLY;
	snprintf(q->errstr, sizeof(q->errstr), "%s: unexpected reply", what);
}

fs_queue_store *
fs_queue_store_new(const struct fs_cfg *cfg, const char *datadir, char *err, size_t errlen)
{
	static const char *const files[] = { "queue_join.lua", "queue_pass.lua", "queue_state.lua" };
	fs_queue_store *q;
	char path[1024];
	int *handles[3];

	if ((q = calloc(1, sizeof(*q))) == NULL) {
		snprintf(err, errlen, "queue store: out of memory");
		return NULL;
	}
	handles[0] = &q->join;
	handles[1] = &q->pass;
	handles[2] = &q->state;
	if ((q->calls = calloc(FS_QUEUE_JOIN_BATCH_MAX, sizeof(*q->calls))) == NULL) {
		snprintf(err, errlen, "queue store: out of memory");
		goto fail;
	}
	q->sync = fs_cfg_long(cfg, FS_CFG_REDIS_WAIT_MS) > 0;
	if ((q->redis = fs_redis_open(cfg, err, errlen)) == NULL)
		goto fail;
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/lua/%s", datadir, files[i]);
		if ((*handles[i] = fs_redis_script_load(q->redis, path)) < 0) {
			snprintf(err, errlen, "queue scripts: %s", q->redis->errstr);
			goto fail;
		}
	}
	return q;
fail:
	fs_queue_store_free(q);
	return NULL;
}

void
fs_queue_store_free(fs_queue_store *q)
{
	if (q == NULL)
		return;
	if (q->redis != NULL)
		fs_queue_join_end(q);
	fs_redis_free(q->redis);
	free(q->calls);
	free(q);
}

/* The verdict a script's first element names; FS_QUEUE_V__MAX when none. */
static enum fs_queue_verdict
verdict_of(const redisReply *r)
{
	if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
	    r->element[0]->type != REDIS_REPLY_STRING)
		return FS_QUEUE_V__MAX;
	for (int v = 0; v < FS_QUEUE_V_ERROR; v++)
		if (strcmp(r->element[0]->str, verdict_names[v]) == 0)
			return (enum fs_queue_verdict)v;
	return FS_QUEUE_V__MAX;
}

/* Integer element i of an array reply, or -1 when absent or of another type. */
static int64_t
int_at(const redisReply *r, size_t i)
{
	if (i >= r->elements || r->element[i]->type != REDIS_REPLY_INTEGER)
		return -1;
	return r->element[i]->integer;
}

/*
 * A script's nowMs argument: now_ms, or empty for FS_QUEUE_NOW_REDIS (the
 * script then reads Redis' TIME, the one clock every origin shares).
 */
static void
now_arg(char out[24], int64_t now_ms)
{
	if (now_ms == FS_QUEUE_NOW_REDIS)
		out[0] = '\0';
	else
		snprintf(out, 24, "%" PRId64, now_ms);
}

/* Ask a's script call: its keys and arguments. */
static void
join_call(fs_queue_store *q, struct fs_queue_join_ask *a, struct fs_redis_call *call)
{
	const int64_t nums[5] = { a->now_ms, a->draw, a->window.pre_ms, a->window.opens_ms,
		a->window.ends_ms };
	static const enum qkey keys[5] = { QKEY_PLACES, QKEY_LATE, QKEY_JOURNAL, QKEY_STATE,
		QKEY_PASSES };

	for (int i = 0; i < 5; i++) {
		qkey(a->keys[i], a->sale, keys[i]);
		a->argv[i] = a->keys[i];
		snprintf(a->nums[i], sizeof(a->nums[i]), "%" PRId64, nums[i]);
	}
	a->argv[5] = a->sub;
	now_arg(a->nums[0], a->now_ms);
	snprintf(a->nums[5], sizeof(a->nums[5]), "%d", q->sync);
	for (int i = 0; i < 6; i++)
		a->argv[6 + i] = a->nums[i];
	*call = (struct fs_redis_call){ .script = q->join, .nkeys = 5, .argc = FS_QUEUE_JOIN_ARGS,
		.argv = a->argv };
}

/* What a join call came to, into its ask. */
static void
join_done(fs_queue_store *q, struct fs_queue_join_ask *a, struct fs_redis_call *call)
{
	redisReply *r = call->reply;
	enum fs_queue_verdict v;

	memset(&a->place, 0, sizeof(a->place));
	if (r == NULL) {
		q->err = call->err != 0 ? call->err : FS_REDIS_ERR_REPLY;
		snprintf(q->errstr, sizeof(q->errstr), "join: %s", call->errstr);
		snprintf(a->errstr, sizeof(a->errstr), "%s", q->errstr);
		a->verdict = FS_QUEUE_V_ERROR;
		return;
	}
	v = verdict_of(r);
	if (v == FS_QUEUE_V_OK && r->elements == 4) {
		a->place.score = int_at(r, 1);
		a->place.rank = int_at(r, 2);
		a->place.added = int_at(r, 3) == 1;
	} else if (v != FS_QUEUE_V_NOT_YET && v != FS_QUEUE_V_ENDED && v != FS_QUEUE_V_CLOSED) {
		reply_err(q, "join");
		snprintf(a->errstr, sizeof(a->errstr), "%s", q->errstr);
		v = FS_QUEUE_V_ERROR;
	}
	a->verdict = v;
	freeReplyObject(r);
	call->reply = NULL;
}

void
fs_queue_join_begin(fs_queue_store *q, struct fs_queue_join_ask *asks, size_t n)
{
	fs_queue_join_end(q); /* one batch at a time */
	for (size_t i = FS_QUEUE_JOIN_BATCH_MAX; i < n; i++) {
		memset(&asks[i].place, 0, sizeof(asks[i].place));
		asks[i].verdict = FS_QUEUE_V_ERROR;
		snprintf(asks[i].errstr, sizeof(asks[i].errstr), "join: more than %d in a batch",
		    FS_QUEUE_JOIN_BATCH_MAX);
	}
	if (n > FS_QUEUE_JOIN_BATCH_MAX)
		n = FS_QUEUE_JOIN_BATCH_MAX;
	for (size_t i = 0; i < n; i++)
		join_call(q, &asks[i], &q->calls[i]);
	fs_redis_eval_send(q->redis, q->calls, n);
	q->batch = asks;
	q->nbatch = n;
}

int
fs_queue_join_fds(const fs_queue_store *q, int *fds, int max)
{
	return q->batch != NULL ? fs_redis_eval_fds(q->redis, fds, max) : 0;
}

int64_t
fs_queue_join_deadline(const fs_queue_store *q)
{
	return fs_redis_eval_deadline(q->redis);
}

void
fs_queue_join_end(fs_queue_store *q)
{
	struct fs_queue_join_ask *asks = q->batch;

	if (asks == NULL)
		return;
	q->batch = NULL;
	fs_redis_eval_recv(q->redis);
	for (size_t i = 0; i < q->nbatch; i++)
		join_done(q, &asks[i], &q->calls[i]);
}

enum fs_queue_verdict
fs_queue_join(fs_queue_store *q, uint64_t sale, const struct fs_queue_window *w,
    const char *sub, int64_t draw, int64_t now_ms, struct fs_queue_place *out)
{
	struct fs_queue_join_ask a = { .sale = sale, .window = *w, .sub = sub, .draw = draw,
		.now_ms = now_ms };

	fs_queue_join_begin(q, &a, 1);
	fs_queue_join_end(q);
	*out = a.place;
	return a.verdict;
}

enum fs_queue_verdict
fs_queue_pass(fs_queue_store *q, uint64_t sale, const struct fs_queue_window *w,
    const char *sub, int64_t now_ms, struct fs_queue_place *out)
{
	char keys[6][FS_QUEUE_KEY_LEN], now_s[24], pass_s[24], ends_s[24], claim_s[24], opens_s[24];
	const char *argv[13] = { keys[0], keys[1], keys[2], keys[3], keys[4], keys[5], sub, now_s,
		pass_s, ends_s, claim_s, q->sync ? "1" : "0", opens_s };
	enum fs_queue_verdict v;
	redisReply *r;

	fs_queue_join_end(q); /* the connection answers the batch first */
	memset(out, 0, sizeof(*out));
	out->rank = -1;
	qkey(keys[0], sale, QKEY_PLACES);
	qkey(keys[1], sale, QKEY_STATE);
	qkey(keys[2], sale, QKEY_PASSES);
	qkey(keys[3], sale, QKEY_STEPS);
	qkey(keys[4], sale, QKEY_SEEN);
	qkey(keys[5], sale, QKEY_CLAIMS);
	now_arg(now_s, now_ms);
	snprintf(opens_s, sizeof(opens_s), "%" PRId64, w->opens_ms);
	snprintf(pass_s, sizeof(pass_s), "%" PRId64, (int64_t)w->pass_s * 1000);
	snprintf(ends_s, sizeof(ends_s), "%" PRId64, w->ends_ms);
	snprintf(claim_s, sizeof(claim_s), "%" PRId64,
	    (int64_t)(w->claim_s > 0 ? w->claim_s : FS_QUEUE_CLAIM_S) * 1000);
	if ((r = fs_redis_eval(q->redis, q->pass, 6, 13, argv)) == NULL) {
		store_err(q, "pass");
		return FS_QUEUE_V_ERROR;
	}
	if ((v = verdict_of(r)) == FS_QUEUE_V__MAX || (v == FS_QUEUE_V_OK && r->elements != 5)) {
		reply_err(q, "pass");
		v = FS_QUEUE_V_ERROR;
	} else if (r->elements >= 3) {
		out->rank = int_at(r, 1);
		out->admitted = int_at(r, 2);
		out->expires_ms = v == FS_QUEUE_V_OK ? int_at(r, 3) : 0;
		out->added = v == FS_QUEUE_V_OK && int_at(r, 4) == 1;
	}
	freeReplyObject(r);
	return v;
}

int
fs_queue_redis_clock(fs_redis *r, int script, uint64_t sale, int64_t *ms)
{
	char k[FS_QUEUE_KEY_LEN];
	const char *argv[1] = { k };
	redisReply *rep;
	int rc = -1;

	qkey(k, sale, QKEY_STATE);
	if ((rep = fs_redis_eval(r, script, 1, 1, argv)) == NULL)
		return -1;
	if (rep->type == REDIS_REPLY_INTEGER && rep->integer > 0) {
		*ms = rep->integer;
		rc = 0;
	} else {
		snprintf(r->errstr, sizeof(r->errstr), "queue_clock.lua: an unexpected reply");
	}
	freeReplyObject(rep);
	return rc;
}

int
fs_queue_read_state(fs_queue_store *q, uint64_t sale, int64_t now_ms, struct fs_queue_state *out)
{
	char keys[3][FS_QUEUE_KEY_LEN], now_s[24];
	const char *argv[4] = { keys[0], keys[1], keys[2], now_s };
	redisReply *r;
	int rc = 0;

	fs_queue_join_end(q); /* the connection answers the batch first */
	memset(out, 0, sizeof(*out));
	qkey(keys[0], sale, QKEY_STATE);
	qkey(keys[1], sale, QKEY_PLACES);
	qkey(keys[2], sale, QKEY_PASSES);
	now_arg(now_s, now_ms);
	if ((r = fs_redis_eval(q->redis, q->state, 3, 4, argv)) == NULL) {
		store_err(q, "state");
		return -1;
	}
	/* 7 from a queue_state.lua older than the multiple (a rolling upgrade). */
	if (r->type != REDIS_REPLY_ARRAY || r->elements < 7) {
		reply_err(q, "state");
		rc = -1;
	} else {
		out->admitted = int_at(r, 0);
		out->through = int_at(r, 1);
		out->rate_milli = int_at(r, 2);
		out->soldout = int_at(r, 3) == 1;
		out->joined = int_at(r, 4);
		out->drawn = int_at(r, 5);
		out->passes_out = int_at(r, 6);
		out->mult_milli = r->elements > 7 ? int_at(r, 7) : 0;
		out->clock_ms = r->elements > 8 ? int_at(r, 8) : 0;
	}
	freeReplyObject(r);
	return rc;
}

int
fs_queue_replicate(fs_queue_store *q, int timeout_ms)
{
	long acked;

	fs_queue_join_end(q); /* the connection answers the batch first */
	if ((acked = fs_redis_wait(q->redis, 1, timeout_ms)) < 0) {
		store_err(q, "replicate");
		return -1;
	}
	if (acked < 1) {
		q->err = FS_REDIS_ERR_IO;
		snprintf(q->errstr, sizeof(q->errstr), "replicate: no replica had it within %d ms",
		    timeout_ms);
		return -1;
	}
	return 0;
}

/*
 * The figures of a waiting room, read for the pacer and the operator: the
 * passes of a sale by fate (used, lapsed, outstanding), and what `flashsale-admin
 * queue status` shows from Redis and PostgreSQL; and the names of the
 * queue's Redis keys that the pacer and these readers share.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg.h"
#include "queue.h"
#include "queue_int.h"
#include "redis.h"
#include "stock.h"

void
fs_queue_key(char out[FS_QUEUE_KEY_LEN], uint64_t sale, const char *name)
{
	snprintf(out, FS_QUEUE_KEY_LEN, "fs:{%" PRIu64 "}:q:%s", sale, name);
}

/*
 * The passes of a sale at now_ms counted by fate (struct fs_queue_tally): one
 * ZRANGE of every pass with its expiry, then which shoppers hold a unit.
 * 0, or -1 with the stock's err.
 */
static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * How many of the n subs (sorted) hold the places ranked from..to-1 (one
 * ZRANGE of those places); -1 Redis failed.
 */
static long
passes_of_places(fs_stock *st, uint64_t sale, const char **sorted, size_t n, long from, long to)
{
	char k[FS_QUEUE_KEY_LEN], a[24], b[24];
	redisReply *r;
	long c = 0;

	if (n == 0 || to <= from)
		return 0;
	fs_queue_key(k, sale, "places");
	snprintf(a, sizeof(a), "%ld", from);
	snprintf(b, sizeof(b), "%ld", to - 1);
	r = fs_redis_argv(st->redis, 4, (const char *[]){ "ZRANGE", k, a, b }, NULL);
	if (r == NULL || r->type != REDIS_REPLY_ARRAY) {
		snprintf(st->errstr, sizeof(st->errstr), "places: %s", st->redis->errstr);
		if (r != NULL)
			freeReplyObject(r);
		return -1;
	}
	for (size_t i = 0; i < r->elements; i++) {
		const char *sub = r->element[i]->type == REDIS_REPLY_STRING ? r->element[i]->str : "";

		c += bsearch(&sub, sorted, n, sizeof(*sorted), cmp_str) != NULL;
	}
	freeReplyObject(r);
	return c;
}

/*
 * The subs of sale whose page last asked for its pass before since (sorted,
 * in *subs, an array the caller frees with its reply *r); the count, -1 Redis failed.
 */
static long
quiet_pages(fs_stock *st, uint64_t sale, int64_t since, redisReply **r, const char ***subs)
{
	char k[FS_QUEUE_KEY_LEN], to[24];

	fs_queue_key(k, sale, "seen");
	snprintf(to, sizeof(to), "(%" PRId64, since);
	*r = fs_redis_argv(st->redis, 4, (const char *[]){ "ZRANGEBYSCORE", k, "-inf", to }, NULL);
	if (*r == NULL || (*r)->type != REDIS_REPLY_ARRAY) {
		snprintf(st->errstr, sizeof(st->errstr), "pages seen: %s", st->redis->errstr);
		return -1;
	}
	if ((*subs = calloc((*r)->elements + 1, sizeof(**subs))) == NULL) {
		snprintf(st->errstr, sizeof(st->errstr), "pages seen: out of memory");
		return -1;
	}
	for (size_t i = 0; i < (*r)->elements; i++)
		(*subs)[i] = (*r)->element[i]->type == REDIS_REPLY_STRING ? (*r)->element[i]->str : "";
	qsort(*subs, (*r)->elements, sizeof(**subs), cmp_str);
	return (long)(*r)->elements;
}

int
fs_queue_passes_tally(fs_stock *st, uint64_t sale, int64_t now_ms, const struct fs_queue_span *span,
    struct fs_queue_tally *t)
{
	char k[FS_QUEUE_KEY_LEN];
	const char **subs = NULL, **sorted = NULL, **quiet = NULL;
	int *held = NULL, rc = -1;
	long nquiet = 0;
	size_t n = 0;
	redisReply *r, *rq = NULL;

	fs_queue_key(k, sale, "passes");
	if ((r = fs_redis_argv(st->redis, 5, (const char *[]){ "ZRANGE", k, "0", "-1", "WITHSCORES" },
		 NULL)) == NULL || r->type != REDIS_REPLY_ARRAY) {
		snprintf(st->errstr, sizeof(st->errstr), "passes: %s", st->redis->errstr);
		goto out;
	}
	n = r->elements / 2;
	subs = calloc(n + 1, sizeof(*subs));
	held = calloc(n + 1, sizeof(*held));
	if (subs == NULL || held == NULL) {
		snprintf(st->errstr, sizeof(st->errstr), "passes: out of memory");
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		subs[i] = r->element[2 * i]->type == REDIS_REPLY_STRING ? r->element[2 * i]->str : "";
	/* A pass whose shopper holds a unit was used: that unit counts in the units left. */
	if (fs_stock_holding(st, sale, subs, n, held) != 0)
		goto out;
	memset(t, 0, sizeof(*t));
	if (span != NULL && span->from >= 0) {
		if ((sorted = calloc(n + 1, sizeof(*sorted))) == NULL) {
			snprintf(st->errstr, sizeof(st->errstr), "passes: out of memory");
			goto out;
		}
		memcpy(sorted, subs, n * sizeof(*subs));
		qsort(sorted, n, sizeof(*sorted), cmp_str);
		if ((t->after = passes_of_places(st, sale, sorted, n, span->from, span->to)) < 0 ||
		    (t->older = passes_of_places(st, sale, sorted, n, span->from,
			 span->mid < span->to ? span->mid : span->to)) < 0)
			goto out;
	}
	if (span != NULL && span->seen_since > 0 &&
	    (nquiet = quiet_pages(st, sale, span->seen_since, &rq, &quiet)) < 0)
		goto out;
	t->all = (long)n;
	for (size_t i = 0; i < n; i++) {
		const redisReply *e = r->element[2 * i + 1];
		int live = e->type == REDIS_REPLY_STRING && strtod(e->str, NULL) > (double)now_ms;

		t->live += live;
		t->unused += live && !held[i];
		t->idle += live && !held[i] && nquiet > 0 &&
		    bsearch(&subs[i], quiet, (size_t)nquiet, sizeof(*quiet), cmp_str) != NULL;
		t->used += held[i] != 0;
		t->lapsed += !live && !held[i];
	}
	rc = 0;
out:
	free(quiet);
	free(sorted);
	free(subs);
	free(held);
	if (rq != NULL)
		freeReplyObject(rq);
	if (r != NULL)
		freeReplyObject(r);
	return rc;
}

long
fs_queue_passes_outstanding(fs_stock *st, uint64_t sale, int64_t now_ms)
{
	struct fs_queue_tally t;

	return fs_queue_passes_tally(st, sale, now_ms, NULL, &t) == 0 ? t.unused : -1;
}

long
fs_queue_late_issued(fs_stock *st, uint64_t sale)
{
	char late[FS_QUEUE_KEY_LEN], journal[FS_QUEUE_KEY_LEN], state[FS_QUEUE_KEY_LEN];
	redisReply *r;
	long n = -1;

	fs_queue_key(late, sale, "late");
	fs_queue_key(journal, sale, "journal");
	fs_queue_key(state, sale, "state");
	/* A sale Redis forgot (no state) or still copying says nothing. */
	if ((r = fs_redis_argv(st->redis, 2, (const char *[]){ "EXISTS", state }, NULL)) == NULL)
		return -1;
	n = r->type == REDIS_REPLY_INTEGER && r->integer == 1 ? 0 : -1;
	freeReplyObject(r);
	if (n < 0 || (r = fs_redis_argv(st->redis, 2, (const char *[]){ "LLEN", journal }, NULL)) ==
	    NULL)
		return -1;
	n = r->type == REDIS_REPLY_INTEGER && r->integer == 0 ? 0 : -1;
	freeReplyObject(r);
	if (n < 0 || (r = fs_redis_argv(st->redis, 2, (const char *[]){ "GET", late }, NULL)) == NULL)
		return -1;
	n = r->type == REDIS_REPLY_STRING ? strtol(r->str, NULL, 10) :
	    r->type == REDIS_REPLY_NIL ? 0 : -1;
	freeReplyObject(r);
	return n;
}

/* ---- the figures of a waiting room (queue status) ---- */

/* A field of a hash reply of HMGET: an integer, dflt when absent. */
static int64_t
field(const redisReply *r, size_t i, int64_t dflt)
{
	if (r == NULL || r->type != REDIS_REPLY_ARRAY || i >= r->elements ||
	    r->element[i]->type != REDIS_REPLY_STRING)
		return dflt;
	return (int64_t)strtod(r->element[i]->str, NULL);
}

/* Redis' half of the figures; 0, or -1 with the stock's err. */
static int
figures_redis(fs_stock *st, uint64_t sale, int64_t now, struct fs_queue_figures *q)
{
	char state[FS_QUEUE_KEY_LEN], places[FS_QUEUE_KEY_LEN], journal[FS_QUEUE_KEY_LEN], lease[FS_QUEUE_KEY_LEN];
	redisReply *r;

	fs_queue_key(state, sale, "state");
	fs_queue_key(places, sale, "places");
	fs_queue_key(journal, sale, "journal");
	fs_queue_key(lease, sale, "lease");
	if ((r = fs_redis_argv(st->redis, 8, (const char *[]){ "HMGET", state, "admitted", "through",
		 "rate", "at", "soldout", "multiple" }, NULL)) == NULL)
		goto fail;
	q->admitted = (long)field(r, 0, 0);
	q->through = field(r, 1, -1);
	q->rate_milli = (long)field(r, 2, 0);
	q->at_ms = field(r, 3, 0);
	q->soldout = (int)field(r, 4, 0);
	q->mult_milli = (int)field(r, 5, 0);
	freeReplyObject(r);
	if ((r = fs_redis_argv(st->redis, 2, (const char *[]){ "GET", lease }, NULL)) == NULL)
		goto fail;
	snprintf(q->lease, sizeof(q->lease), "%s", r->type == REDIS_REPLY_STRING ? r->str : "");
	freeReplyObject(r);
	if ((r = fs_redis_argv(st->redis, 2, (const char *[]){ "ZCARD", places }, NULL)) == NULL)
		goto fail;
	q->joined = r->type == REDIS_REPLY_INTEGER ? (long)r->integer : 0;
	freeReplyObject(r);
	if ((r = fs_redis_argv(st->redis, 2, (const char *[]){ "LLEN", journal }, NULL)) == NULL)
		goto fail;
	q->journal = r->type == REDIS_REPLY_INTEGER ? (long)r->integer : 0;
	freeReplyObject(r);
	if ((q->passes_out = fs_queue_passes_outstanding(st, sale, now)) < 0)
		return -1;
	return 0;
fail:
	snprintf(st->errstr, sizeof(st->errstr), "queue state: %s", st->redis->errstr);
	return -1;
}

/* PostgreSQL's half; 0, or -1 with err. */
static int
figures_pg(fs_pg *pg, uint64_t sale, struct fs_queue_figures *q, char *err, size_t errlen)
{
	char sale_s[24];
	const char *p[1] = { sale_s };
	PGresult *res;

	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, sale);
	res = fs_pg_exec(pg,
	    "SELECT s.queue IS NOT NULL, (SELECT count(*) FROM queue_places WHERE sale_id = s.id), "
	    "(SELECT count(*) FROM queue_places WHERE sale_id = s.id AND drawn), "
	    "(SELECT count(*) FROM queue_admissions WHERE sale_id = s.id), "
	    "coalesce((SELECT admitted FROM queue_admissions WHERE sale_id = s.id "
	    "ORDER BY step DESC LIMIT 1), 0) FROM sales s WHERE s.id = $1",
	    1, p);
	if (res == NULL) {
		snprintf(err, errlen, "database: %s", pg->errstr);
		return -1;
	}
	if (PQntuples(res) != 1 || strcmp(PQgetvalue(res, 0, 0), "t") != 0) {
		snprintf(err, errlen, PQntuples(res) != 1 ? "no sale %s" : "sale %s has no waiting room",
		    sale_s);
		PQclear(res);
		return -1;
	}
	q->pg_places = strtol(PQgetvalue(res, 0, 1), NULL, 10);
	q->pg_drawn = strtol(PQgetvalue(res, 0, 2), NULL, 10);
	q->pg_steps = strtol(PQgetvalue(res, 0, 3), NULL, 10);
	q->pg_admitted = strtol(PQgetvalue(res, 0, 4), NULL, 10);
	PQclear(res);
	return 0;
}

int
fs_queue_figures_read(fs_pg *pg, fs_stock *st, uint64_t sale, int64_t now,
    struct fs_queue_figures *q, char *err, size_t errlen)
{
	memset(q, 0, sizeof(*q));
	q->through = -1;
	if (figures_pg(pg, sale, q, err, errlen) != 0)
		return -1;
	if (figures_redis(st, sale, now, q) != 0) {
		snprintf(err, errlen, "redis: %s", st->errstr);
		return -1;
	}
	return 0;
}

/*
 * The join journal's copy to PostgreSQL (docs/QUEUE.md, "Admission: the
 * pacer"): every join appends "<sub> <score> <joinedAtMs>" to the sale's
 * fs:{S}:q:journal; the pacer holding the sale's lease copies the entries
 * to queue_places a batch at a time and drops an entry only once
 * PostgreSQL has it. Its own file so that the pacer (queue_pacer.c) is
 * the pacing alone.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "pg.h"
#include "queue.h"
#include "queue_int.h"
#include "redis.h"
#include "stock.h"

/* Journal entries copied per batch, and batches per step at most. */
#define JOURNAL_BATCH 1000
#define JOURNAL_BATCHES 10

/* One journal entry "<sub> <score> <joinedAtMs>" read; 0, or -1 when it is not one. */
static int
entry_parse(const char *e, size_t len, size_t *sublen, int64_t *score, int64_t *ms)
{
	const char *sp2 = memrchr(e, ' ', len), *sp1;
	char *end;
	double d;

	if (sp2 == NULL || (sp1 = memrchr(e, ' ', (size_t)(sp2 - e))) == NULL || sp1 == e ||
	    (size_t)(sp1 - e) > 64)
		return -1;
	*sublen = (size_t)(sp1 - e);
	/* An integer, or a Lua number an integer's value (2^52 + n: exact in a double). */
	d = strtod(sp1 + 1, &end);
	if (end != sp2 || d < 0 || d >= (double)FS_QUEUE_SCORE_END || d != (double)(int64_t)d)
		return -1;
	*score = (int64_t)d;
	*ms = strtoll(sp2 + 1, &end, 10);
	return end == e + len && *ms > 0 ? 0 : -1;
}

/* The arrays of one batch (subs, scores, times) as PostgreSQL array literals. */
struct batch {
	char *subs, *scores, *times;
	size_t nsubs, nscores, ntimes;
	int n, bad;
};

/* Adds one journal entry to the batch (a malformed one is counted in bad). */
static void
batch_add(struct batch *b, const redisReply *e)
{
	size_t sublen;
	int64_t score, ms;
	char sep = b->n == 0 ? '{' : ',';

	if (e->type != REDIS_REPLY_STRING || entry_parse(e->str, e->len, &sublen, &score, &ms) != 0) {
		b->bad++;
		return;
	}
	b->subs[b->nsubs++] = sep;
	b->subs[b->nsubs++] = '"';
	for (size_t i = 0; i < sublen; i++) {
		if (e->str[i] == '"' || e->str[i] == '\\')
			b->subs[b->nsubs++] = '\\';
		b->subs[b->nsubs++] = e->str[i];
	}
	b->subs[b->nsubs++] = '"';
	b->nscores += (size_t)sprintf(b->scores + b->nscores, "%c%" PRId64, sep, score);
	b->ntimes += (size_t)sprintf(b->times + b->ntimes, "%c%" PRId64, sep, ms);
	b->n++;
}

/* Inserts the batch into queue_places (a place copied before is left as it is); 0 or -1. */
static int
batch_insert(const struct fs_queue_journal *j, uint64_t sale, struct batch *b)
{
	char sale_s[24], late_s[24];
	const char *params[5] = { sale_s, b->subs, b->scores, b->times, late_s };

	if (b->n == 0)
		return 0;
	snprintf(sale_s, sizeof(sale_s), "%" PRIu64, sale);
	snprintf(late_s, sizeof(late_s), "%lld", (long long)FS_QUEUE_LATE_BASE);
	b->subs[b->nsubs++] = '}';
	b->subs[b->nsubs] = '\0';
	memcpy(b->scores + b->nscores, "}", 2);
	memcpy(b->times + b->ntimes, "}", 2);
	return fs_pg_run(j->pg,
	    "INSERT INTO queue_places (sale_id, user_id, score, drawn, joined_at) "
	    "SELECT $1, j.u, j.s, j.s < $5::bigint, to_timestamp(j.t / 1000.0) "
	    "FROM unnest($2::text[], $3::bigint[], $4::bigint[]) AS j(u, s, t) "
	    "ON CONFLICT DO NOTHING",
	    5, params);
}

/* Drops the first n journal entries, if the lease is still the pacer's; 0 or -1. */
static int
journal_trim(const struct fs_queue_journal *j, uint64_t sale, size_t n)
{
	char journal[FS_QUEUE_KEY_LEN], lease[FS_QUEUE_KEY_LEN], n_s[24], ms[24];
	const char *argv[5] = { journal, lease, j->owner, n_s, ms };
	redisReply *r;

	fs_queue_key(journal, sale, "journal");
	fs_queue_key(lease, sale, "lease");
	snprintf(n_s, sizeof(n_s), "%zu", n);
	snprintf(ms, sizeof(ms), "%d", FS_QUEUE_LEASE_MS);
	if ((r = fs_redis_eval(j->st->redis, j->trim, 2, 5, argv)) == NULL)
		return -1;
	freeReplyObject(r);
	return 0;
}

/*
 * With FLASHSALE_REDIS_WAIT_MS set, the journal entries just read go to
 * PostgreSQL only once a replica of the sale's master has them: a place
 * copied, then lost with its master, would set PostgreSQL's line and the
 * promoted replica's apart (a late number given twice, admissions by ranks
 * the two do not share). A write of the pacer's own after the read (the
 * trim script dropping nothing renews the lease) makes WAIT 1 cover every
 * entry read. 0, or -1 (err): nothing is copied this step.
 */
static int
journal_replicated(const struct fs_queue_journal *j, uint64_t sale, char *err, size_t errlen)
{
	if (j->wait_ms <= 0)
		return 0;
	if (journal_trim(j, sale, 0) == 0 && fs_redis_wait(j->st->redis, 1, j->wait_ms) >= 1)
		return 0;
	snprintf(err, errlen, "journal not copied: no replica had it within %d ms", j->wait_ms);
	return -1;
}

/* Sets err to "<what>: <reason>" and returns -1. */
static int
journal_fail(char *err, size_t errlen, const char *what, const char *reason)
{
	snprintf(err, errlen, "%s: %s", what, reason);
	return -1;
}

int
fs_queue_journal_copy(const struct fs_queue_journal *j, uint64_t sale, char *err, size_t errlen)
{
	struct batch b = { 0 };
	char k[FS_QUEUE_KEY_LEN], last[24];
	int rc = journal_fail(err, errlen, "journal", "out of memory");

	fs_queue_key(k, sale, "journal");
	snprintf(last, sizeof(last), "%d", JOURNAL_BATCH - 1);
	b.subs = malloc(JOURNAL_BATCH * (2 * FS_STOCK_USER_MAX + 4) + 2);
	b.scores = malloc(JOURNAL_BATCH * 24 + 2);
	b.times = malloc(JOURNAL_BATCH * 24 + 2);
	for (int round = 0; b.subs != NULL && b.scores != NULL && b.times != NULL; round++) {
		redisReply *r;
		size_t n;

		if (round == JOURNAL_BATCHES) {
			rc = 0;
			break;
		}
		if ((r = fs_redis_argv(j->st->redis, 4, (const char *[]){ "LRANGE", k, "0", last },
			 NULL)) == NULL || r->type != REDIS_REPLY_ARRAY) {
			rc = journal_fail(err, errlen, "journal", j->st->redis->errstr);
			if (r != NULL)
				freeReplyObject(r);
			break;
		}
		b.n = b.bad = 0;
		b.nsubs = b.nscores = b.ntimes = 0;
		for (size_t i = 0; i < r->elements; i++)
			batch_add(&b, r->element[i]);
		n = r->elements;
		freeReplyObject(r);
		if (n == 0) {
			rc = 1;
			break;
		}
		if ((rc = journal_replicated(j, sale, err, errlen)) != 0)
			break;
		if (b.bad > 0)
			fs_log_error("queue pacer: sale %" PRIu64 ": %d journal entries malformed, dropped",
			    sale, b.bad);
		if (batch_insert(j, sale, &b) != 0) {
			rc = journal_fail(err, errlen, "places", j->pg->errstr);
			break;
		}
		if (journal_trim(j, sale, n) != 0) {
			rc = journal_fail(err, errlen, "journal trim", j->st->redis->errstr);
			break;
		}
	}
	free(b.subs);
	free(b.scores);
	free(b.times);
	return rc;
}

/*
 * flashsale-load: the waiting room's journey (--queue, docs/QUEUE.md).
 *
 * Every shopper joins (a bot from several connections at once, each join
 * with the proof of work solved here beforehand), learns its place (the
 * join's answer, or the draw recomputed from the seed once the status
 * document publishes it), waits until the admitted threshold passes it,
 * asks for its pass and buys with it (a bot at once, a person after a
 * reaction time).  The waiting pages are sampled: the generator asks the
 * status document --poll-rate times a second, and each shopper sees the
 * latest answer at its own page's next poll, so the crowd's polling costs
 * what the edge would be asked, not one request per shopper.
 */
#include "load.h"

#include <math.h>
#include <sodium.h>

#include "queue.h"

#define LD_SAMPLES_MAX	(1 << 20)
#define LD_BOT_NOTICE_US 100000	/* a bot's page polls as fast as allowed */
#define LD_NOT_YET_US	1000000	/* asked for a pass too early: again in 1 s */

enum ld_qstate {
	LD_Q_NEW,
	LD_Q_JOINED,
	LD_Q_ADMITTED,		/* seen admitted; its pass is asked for */
	LD_Q_BUYING,		/* holds a pass */
	LD_Q_DONE
};

/* How a shopper's journey ended. */
enum ld_qend {
	LD_QE_NONE,
	LD_QE_BOUGHT,
	LD_QE_HOLDS,		/* 409: held a unit already */
	LD_QE_SOLD_OUT,		/* 410 to its pass or its purchase */
	LD_QE_WAITING,		/* still waiting when nothing was left */
	LD_QE_REFUSED,		/* 403 or another refusal of a step */
	LD_QE_FAILED,		/* no answer after its retries */
	LD_QE_JOINED,		/* --join-only: joined, nothing more */
	LD_QE_WALKED,		/* --walk-away-permille: admitted, never came back */
	LD_QE__MAX
};

static const char *const ld_qend_names[LD_QE__MAX] = {
	"unfinished", "bought", "holds", "sold-out", "waiting-at-sold-out",
	"refused", "failed", "joined", "walked-away"
};

static const char *const ld_kind_names[LD_K__MAX] = {
	"buy", "join", "pass", "poll"
};

/* One reading of the status document. */
struct ld_qsample {
	int64_t		 t_ms;		/* from the opening (negative before) */
	int64_t		 joined, admitted, through, units_left, passes_out;
	char		 state[12];
};

struct ld_queue {
	char		*file;		/* the lines, fields NUL-terminated */
	uint32_t	*sub, *tok, *path;	/* offsets into file */
	char		(*qtok)[LD_QTOKEN_MAX];	/* ticket, then pass */
	int64_t		*score;		/* -1: not known yet */
	uint32_t	*nonce;
	uint8_t		*state;
	uint8_t		*end;
	uint8_t		*joins_out;	/* a bot's joins not yet answered */
	int64_t		*seen_us;	/* when its admission showed */
	uint32_t	*order;		/* known places, best first */
	size_t		 norder, next;	/* next: the first not seen admitted */
	int		 seed_known;
	unsigned char	 seed[FS_QUEUE_SEEDBYTES];
	unsigned	 pow_bits;
	int64_t		 opens_ms, pre_ms;
	int64_t		 through;
	int		 soldout;	/* a poll said nothing is left */
	size_t		 active;	/* admitted, not finished */
	int64_t		 poll_period_us, next_poll_us;
	unsigned	 polls_inflight;
	struct ld_qsample *tl;
	size_t		 ntl, tl_cap;
	uint64_t	 st[LD_K__MAX][600];	/* answers by step and status */
	uint64_t	 ne[LD_K__MAX];		/* no answer, by step */
	uint64_t	 ends[LD_QE__MAX];
	uint64_t	 mismatch;	/* a repeat join named another place */
	uint64_t	 bad_answer;	/* a 200 without what it must carry */
	int64_t		 pow_cpu_us;
	int64_t		 last_202_us;	/* from the opening; -1 none */
	int64_t		 admit_wait_us;	/* sum, admission seen to 202 */
	int64_t		 join_first_us, join_last_us;	/* first sent, last answered */
	uint64_t	 admit_waits;
	/* --other-items: the file's distinct purchase paths (one an item),
	 * those a 410 answered, and the shoppers who moved to another. */
	uint32_t	 items[LD_ITEMS_MAX];
	uint8_t		 item_gone[LD_ITEMS_MAX];
	size_t		 nitems;
	uint64_t	 moved;
};

/*
 * The file: "<sub> <token> <purchase path>" a line, read whole and cut
 * in place.
 */

static int
ld_queue_alloc(struct ld_queue *q, size_t n)
{
	q->sub = malloc(n * sizeof(*q->sub));
	q->tok = malloc(n * sizeof(*q->tok));
	q->path = malloc(n * sizeof(*q->path));
	q->qtok = calloc(n, sizeof(*q->qtok));
	q->score = malloc(n * sizeof(*q->score));
	q->nonce = calloc(n, sizeof(*q->nonce));
	q->state = calloc(n, 1);
	q->end = calloc(n, 1);
	q->joins_out = calloc(n, 1);
	q->order = malloc(n * sizeof(*q->order));
	q->seen_us = calloc(n, sizeof(*q->seen_us));
	return q->seen_us == NULL || q->sub == NULL || q->tok == NULL || q->path == NULL ||
	    q->qtok == NULL || q->score == NULL || q->nonce == NULL ||
	    q->state == NULL || q->end == NULL || q->joins_out == NULL ||
	    q->order == NULL ? -1 : 0;
}

/* Cuts the next space-separated field at *p; its offset, or -1. */
static int64_t
ld_field(char *file, size_t *p, size_t eol, size_t max)
{
	size_t start;

	while (*p < eol && (file[*p] == ' ' || file[*p] == '\t'))
		(*p)++;
	start = *p;
	while (*p < eol && file[*p] != ' ' && file[*p] != '\t' &&
	    (unsigned char)file[*p] > 0x20 && (unsigned char)file[*p] < 0x7f)
		(*p)++;
	if (*p == start || *p - start > max ||
	    (*p < eol && file[*p] != ' ' && file[*p] != '\t'))
		return -1;
	if (*p < eol)
		file[(*p)++] = '\0';
	return (int64_t)start;
}

static int
ld_queue_read(struct ld_run *run, struct ld_queue *q, size_t *len)
{
	FILE *f;
	long n;

	if ((f = fopen(run->o.queue, "r")) == NULL || fseek(f, 0, SEEK_END) ||
	    (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
	    (size_t)n > LD_ARENA_MAX || (q->file = malloc((size_t)n + 1)) == NULL ||
	    fread(q->file, 1, (size_t)n, f) != (size_t)n) {
		ld_warn("%s: cannot read it whole (%s)", run->o.queue,
		    strerror(errno));
		if (f != NULL)
			fclose(f);
		return -1;
	}
	fclose(f);
	q->file[n] = '\0';
	*len = (size_t)n;
	return 0;
}

/* --other-items: the index of the item whose purchase path is PATH's, or -1. */
static long
ld_item_of(const struct ld_queue *q, uint32_t path)
{
	for (size_t i = 0; i < q->nitems; i++)
		if (strcmp(q->file + q->items[i], q->file + path) == 0)
			return (long)i;
	return -1;
}

/* --other-items: PATH among the sale's items (distinct paths); 0, or -1 past LD_ITEMS_MAX. */
static int
ld_item_add(struct ld_run *run, struct ld_queue *q, uint32_t path)
{
	if (ld_item_of(q, path) >= 0)
		return 0;
	if (q->nitems == LD_ITEMS_MAX) {
		ld_warn("%s: --other-items: more than %d distinct paths",
		    run->o.queue, LD_ITEMS_MAX);
		return -1;
	}
	q->items[q->nitems++] = path;
	return 0;
}

/*
 * --other-items: shopper s's item answered 410 to its pass. Marks that item
 * gone and points s at the next item not seen gone (as the sale page shows
 * what is left); 0, or -1 when every item is gone.
 */
static int
ld_item_next(struct ld_queue *q, uint32_t s)
{
	long of = ld_item_of(q, q->path[s]);
	size_t at = of >= 0 ? (size_t)of : 0;

	if (of >= 0)
		q->item_gone[at] = 1;
	for (size_t k = 1; k <= q->nitems; k++) {
		size_t i = (at + k) % q->nitems;

		if (!q->item_gone[i]) {
			q->path[s] = q->items[i];
			q->moved++;
			return 0;
		}
	}
	return -1;
}

int
ld_queue_load(struct ld_run *run)
{
	struct ld_queue *q;
	size_t len, p, eol, lines = 0, lineno = 0;
	int64_t a, b, c;

	if ((q = run->q = calloc(1, sizeof(*q))) == NULL ||
	    ld_queue_read(run, q, &len) == -1)
		return -1;
	for (p = 0; p < len; p++)
		lines += q->file[p] == '\n';
	if (lines + 1 > LD_SHOPPERS_MAX || ld_queue_alloc(q, lines + 1) == -1) {
		ld_warn("%s: too many lines, or out of memory", run->o.queue);
		return -1;
	}
	for (p = 0; p < len; p = eol + 1) {
		eol = p;
		while (eol < len && q->file[eol] != '\n')
			eol++;
		q->file[eol] = '\0';
		lineno++;
		if (eol > p && q->file[eol - 1] == '\r')
			q->file[eol - 1] = '\0';
		if (q->file[p] == '\0' || q->file[p] == '#')
			continue;
		if ((a = ld_field(q->file, &p, eol, LD_SUB_MAX - 1)) == -1 ||
		    (b = ld_field(q->file, &p, eol, 1200)) == -1 ||
		    (c = ld_field(q->file, &p, eol, 400)) == -1 ||
		    q->file[c] != '/') {
			ld_warn("%s:%zu: expected '<sub> <token> </path?query>'",
			    run->o.queue, lineno);
			return -1;
		}
		q->sub[run->nshoppers] = (uint32_t)a;
		q->tok[run->nshoppers] = (uint32_t)b;
		q->path[run->nshoppers] = (uint32_t)c;
		q->score[run->nshoppers] = -1;
		if (run->o.other_items && ld_item_add(run, q, (uint32_t)c) == -1)
			return -1;
		run->nshoppers++;
	}
	if (run->nshoppers == 0) {
		ld_warn("%s: no shoppers", run->o.queue);
		return -1;
	}
	q->last_202_us = -1;
	q->through = -1;
	return 0;
}

void
ld_queue_free(struct ld_queue *q)
{
	if (q == NULL)
		return;
	free(q->file);
	free(q->sub);
	free(q->tok);
	free(q->path);
	free(q->qtok);
	free(q->score);
	free(q->nonce);
	free(q->state);
	free(q->end);
	free(q->joins_out);
	free(q->order);
	free(q->seen_us);
	free(q->tl);
	free(q);
}

/*
 * The status document before the run, on a blocking connection of its
 * own: the opening, when joining opens and the proof of work's bits.
 */
static int
ld_fetch_status(struct ld_run *run, struct ld_rsp *r)
{
	char req[512], buf[4096];
	size_t used;
	ssize_t n;
	int fd, len, rc = -1;
	enum ld_prs prs = LD_PRS_MORE;

	len = snprintf(req, sizeof(req), "GET /api/flash-sales/sales/%" PRId64
	    "/queue HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n",
	    run->o.sale, run->hosthdr);
	if ((fd = socket(run->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) ==
	    -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&run->addr, run->addrlen) == -1 ||
	    send(fd, req, (size_t)len, MSG_NOSIGNAL) != len)
		goto done;
	ld_rsp_reset(r);
	while (prs == LD_PRS_MORE) {
		if ((n = recv(fd, buf, sizeof(buf), 0)) < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			prs = n == 0 ? ld_rsp_eof(r) : LD_PRS_ERROR;
			break;
		}
		prs = ld_rsp_feed(r, buf, (size_t)n, &used);
	}
	rc = prs == LD_PRS_DONE && r->status == 200 ? 0 : -1;
done:
	close(fd);
	return rc;
}

/* Solves every shopper's proof of work before the run; its CPU is kept. */
static int
ld_queue_solve(struct ld_run *run, struct ld_queue *q)
{
	struct rusage r0, r1;
	size_t i;

	getrusage(RUSAGE_SELF, &r0);
	for (i = 0; i < run->nshoppers && q->pow_bits > 0; i++)
		if (ld_pow_solve((uint64_t)run->o.sale, q->file + q->sub[i],
		    q->pow_bits, &q->nonce[i]) == -1) {
			ld_warn("no proof of work found for line %zu", i + 1);
			return -1;
		}
	getrusage(RUSAGE_SELF, &r1);
	q->pow_cpu_us = ld_cpu_us(&r1) - ld_cpu_us(&r0);
	return 0;
}

/*
 * After the warm-up: reads the status document, solves the proofs,
 * places the opening on the monotonic clock (t0), waits for joining to
 * open, then lets every shopper join: a bot from --bot-joins connections.
 */
int
ld_queue_start(struct ld_run *run)
{
	struct ld_queue *q = run->q;
	struct ld_rsp *r;
	int64_t v, wait_ms;
	size_t i, k, n;
	int tries;

	if ((r = malloc(sizeof(*r))) == NULL)
		return -1;
	for (tries = 0; ld_fetch_status(run, r) == -1; tries++) {
		if (tries == 50 || ld_stop_signal) {
			ld_warn("GET /api/flash-sales/sales/%" PRId64 "/queue: "
			    "no 200 (last status %d)", run->o.sale, r->status);
			free(r);
			return -1;
		}
		usleep(100000);
	}
	q->pow_bits = ld_json_int(r->kbody, r->kept, "powBits", &v) == 0 &&
	    v > 0 && v <= FS_QUEUE_POW_BITS_MAX ? (unsigned)v : 0;
	/* The document's opening, to the millisecond; --start-at overrides. */
	q->opens_ms = run->o.start_at;
	if (q->opens_ms == 0 && ld_json_time_ms(r->kbody, r->kept, "opensAt",
	    &q->opens_ms) != 0) {
		ld_warn("the status document gives no opensAt: give --start-at "
		    "(the opening, unix ms)");
		free(r);
		return -1;
	}
	if (ld_json_time_ms(r->kbody, r->kept, "preQueueAt", &q->pre_ms) != 0)
		q->pre_ms = 0;
	free(r);
	if (ld_queue_solve(run, q) == -1)
		return -1;
	wait_ms = q->pre_ms - ld_unix_us() / 1000;
	if (wait_ms > LD_START_AHEAD_MAX_MS) {
		ld_warn("joining opens more than a day ahead");
		return -1;
	}
	if (wait_ms > 0)
		usleep((useconds_t)(wait_ms * 1000));
	run->t0_unix_ms = q->opens_ms;
	run->t0_us = ld_now_us() + (q->opens_ms * 1000 - ld_unix_us());
	run->deadline_us = run->t0_us + run->o.duration_max * LD_SECOND_US;
	run->prev_us = ld_now_us();
	q->poll_period_us = LD_SECOND_US / run->o.poll_rate;
	/* --join-only measures the joins: no page polls. */
	q->next_poll_us = run->o.join_only ? INT64_MAX : ld_now_us();
	q->join_first_us = ld_now_us();
	for (i = 0; i < run->nshoppers; i++) {
		/* --join-rate: a rush of a set rate for as long as the file lasts. */
		int64_t due = run->o.join_rate > 0 ? q->join_first_us +
		    (int64_t)i * LD_SECOND_US / run->o.join_rate : 0;

		n = ld_is_bot(run, i) ? (size_t)run->o.bot_joins : 1;
		q->joins_out[i] = (uint8_t)n;
		for (k = 0; k < n; k++)
			ld_schedule(run, due, LD_JOB(i, LD_K_JOIN));
	}
	return 0;
}

/* One step's request into the connection's buffer. */
void
ld_queue_render(struct ld_run *run, struct ld_conn *c)
{
	struct ld_queue *q = run->q;
	uint32_t s = LD_JOB_SHOPPER(c->job);
	char body[LD_QTOKEN_MAX + 32];
	int n = 0, blen;

	switch (LD_JOB_KIND(c->job)) {
	case LD_K_POLL:
		n = snprintf(c->qbuf, LD_QREQ_MAX, "GET /api/flash-sales/sales/%"
		    PRId64 "/queue HTTP/1.1\r\nHost: %s\r\n\r\n", run->o.sale,
		    run->hosthdr);
		break;
	case LD_K_JOIN:
		blen = q->pow_bits > 0 ? snprintf(body, sizeof(body),
		    "{\"pow\":\"%" PRIu32 "\"}", q->nonce[s]) :
		    snprintf(body, sizeof(body), "{}");
		n = snprintf(c->qbuf, LD_QREQ_MAX, "POST /api/flash-sales/sales/%"
		    PRId64 "/queue HTTP/1.1\r\nHost: %s\r\nAuthorization: "
		    "Bearer %s\r\nContent-Type: application/json\r\n"
		    "Content-Length: %d\r\n\r\n%s", run->o.sale, run->hosthdr,
		    q->file + q->tok[s], blen, body);
		break;
	case LD_K_PASS:
		blen = snprintf(body, sizeof(body), "{\"ticket\":\"%s\"}",
		    q->qtok[s]);
		n = snprintf(c->qbuf, LD_QREQ_MAX, "POST /api/flash-sales/sales/%"
		    PRId64 "/queue/pass HTTP/1.1\r\nHost: %s\r\nContent-Type: "
		    "application/json\r\nContent-Length: %d\r\n\r\n%s",
		    run->o.sale, run->hosthdr, blen, body);
		break;
	case LD_K_BUY:
	default:
		n = snprintf(c->qbuf, LD_QREQ_MAX, "POST %s HTTP/1.1\r\nHost: %s"
		    "\r\nFlashsale-Pass: %s\r\nContent-Length: 0\r\n\r\n",
		    q->file + q->path[s], run->hosthdr, q->qtok[s]);
		break;
	}
	c->req = c->qbuf;
	/* The file's limits keep every request within the buffer. */
	c->req_len = n > 0 && n < LD_QREQ_MAX ? (size_t)n : 0;
}

/*
 * Places: ordered by score, then by account id bytewise (QUEUE.md).
 */

static int
ld_place_less(const struct ld_queue *q, uint32_t a, uint32_t b)
{
	if (q->score[a] != q->score[b])
		return q->score[a] < q->score[b];
	return strcmp(q->file + q->sub[a], q->file + q->sub[b]) < 0;
}

static const struct ld_queue *ld_sort_q;

static int
ld_place_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return ld_place_less(ld_sort_q, x, y) ? -1 :
	    ld_place_less(ld_sort_q, y, x);
}

/* The end of a shopper's journey; a finished sale may end the run. */
static void
ld_qend(struct ld_run *run, uint32_t s, enum ld_qend e, enum ld_cat cat)
{
	struct ld_queue *q = run->q;

	if (q->state[s] == LD_Q_DONE)
		return;
	if (q->state[s] >= LD_Q_ADMITTED)
		q->active--;
	q->state[s] = LD_Q_DONE;
	q->end[s] = (uint8_t)e;
	q->ends[e]++;
	run->outcome[s] = (uint8_t)(cat + 1);
	run->done++;
}

/* Nothing left to sell and nobody admitted still going: the rest waited. */
static void
ld_queue_maybe_end(struct ld_run *run)
{
	struct ld_queue *q = run->q;
	size_t i;

	if (!q->soldout || q->active > 0)
		return;
	for (i = 0; i < run->nshoppers; i++)
		if (q->state[i] != LD_Q_DONE)
			ld_qend(run, (uint32_t)i, LD_QE_WAITING, LD_CAT_410);
}

/* Seen admitted: a bot asks for its pass at once, a page at its next poll. */
static void
ld_notice(struct ld_run *run, uint32_t s, int64_t now)
{
	struct ld_queue *q = run->q;
	int64_t d;

	if (q->state[s] != LD_Q_JOINED)
		return;
	q->seen_us[s] = now;
	if (ld_walks_away(run, s)) {
		/* Its tab closed long ago: nobody asks for the pass. */
		ld_qend(run, s, LD_QE_WALKED, LD_CAT_OTHER);
		ld_queue_maybe_end(run);
		return;
	}
	q->state[s] = LD_Q_ADMITTED;
	q->active++;
	run->attempts[s] = 0;
	d = ld_is_bot(run, s) ? ld_rand_below(run, LD_BOT_NOTICE_US) :
	    ld_rand_below(run, run->o.page_poll_ms * 1000);
	ld_schedule(run, now + d, LD_JOB(s, LD_K_PASS));
}

/* A known place: behind the threshold it is admitted, else in line. */
static void
ld_place_add(struct ld_run *run, uint32_t s, int64_t now)
{
	struct ld_queue *q = run->q;
	size_t i;

	if (q->through >= 0 && q->score[s] <= q->through) {
		ld_notice(run, s, now);
		return;
	}
	for (i = q->norder; i > q->next && ld_place_less(q, s, q->order[i - 1]);
	    i--)
		q->order[i] = q->order[i - 1];
	q->order[i] = s;
	q->norder++;
}

/* The seed is out: every drawn place is recomputed, once, and sorted. */
static void
ld_queue_draw(struct ld_run *run)
{
	struct ld_queue *q = run->q;
	size_t i;

	q->norder = q->next = 0;
	for (i = 0; i < run->nshoppers; i++) {
		if (q->state[i] != LD_Q_JOINED)
			continue;
		if (q->score[i] < 0)
			q->score[i] = fs_queue_draw(q->seed, q->file + q->sub[i],
			    strlen(q->file + q->sub[i]));
		q->order[q->norder++] = (uint32_t)i;
	}
	ld_sort_q = q;
	qsort(q->order, q->norder, sizeof(*q->order), ld_place_cmp);
}

static int
ld_hex_seed(const char *hex, unsigned char seed[FS_QUEUE_SEEDBYTES])
{
	size_t bin_len;

	return strlen(hex) == 2 * FS_QUEUE_SEEDBYTES &&
	    sodium_hex2bin(seed, FS_QUEUE_SEEDBYTES, hex, strlen(hex), NULL,
	    &bin_len, NULL) == 0 && bin_len == FS_QUEUE_SEEDBYTES ? 0 : -1;
}

/* Keeps one reading for the timeline (--queue-csv). */
static void
ld_sample(struct ld_run *run, const struct ld_qsample *smp)
{
	struct ld_queue *q = run->q;
	size_t cap;
	void *p;

	if (q->ntl == q->tl_cap) {
		cap = q->tl_cap == 0 ? 1024 : q->tl_cap * 2;
		if (cap > LD_SAMPLES_MAX ||
		    (p = realloc(q->tl, cap * sizeof(*q->tl))) == NULL)
			return;
		q->tl = p;
		q->tl_cap = cap;
	}
	q->tl[q->ntl++] = *smp;
}

/*
 * A status document read: kept for the timeline; the seed, once out,
 * places every drawn shopper; a threshold that moved admits the places
 * behind it; nothing left ends the sale.
 */
static void
ld_queue_status(struct ld_run *run, const struct ld_rsp *r, int64_t now)
{
	struct ld_queue *q = run->q;
	struct ld_qsample smp;
	char hex[2 * FS_QUEUE_SEEDBYTES + 1];

	memset(&smp, 0, sizeof(smp));
	smp.t_ms = (now - run->t0_us) / 1000;
	if (ld_json_str(r->kbody, r->kept, "state", smp.state,
	    sizeof(smp.state)) != 0 ||
	    ld_json_int(r->kbody, r->kept, "through", &smp.through) != 0) {
		q->bad_answer++;
		return;
	}
	(void)ld_json_int(r->kbody, r->kept, "joined", &smp.joined);
	(void)ld_json_int(r->kbody, r->kept, "admitted", &smp.admitted);
	(void)ld_json_int(r->kbody, r->kept, "unitsLeft", &smp.units_left);
	(void)ld_json_int(r->kbody, r->kept, "passesOut", &smp.passes_out);
	ld_sample(run, &smp);
	if (!q->seed_known && ld_json_str(r->kbody, r->kept, "seed", hex,
	    sizeof(hex)) == 0 && ld_hex_seed(hex, q->seed) == 0) {
		q->seed_known = 1;
		ld_queue_draw(run);
	}
	if (smp.through > q->through)
		q->through = smp.through;
	while (q->next < q->norder &&
	    q->score[q->order[q->next]] <= q->through)
		ld_notice(run, q->order[q->next++], now);
	if (strcmp(smp.state, "soldout") == 0 || strcmp(smp.state, "ended") == 0)
		q->soldout = 1;
	ld_queue_maybe_end(run);
}

/* A 503 or no answer: the step again later, while its retries last. */
static int
ld_retry(struct ld_run *run, const struct ld_conn *c, int status, int64_t now)
{
	int64_t due;

	if (c->attempt > (unsigned)run->o.retries || ld_stop_signal)
		return 0;
	due = now + ld_retry_delay_us(run, c->attempt,
	    status == 503 ? c->rsp.retry_after : -1);
	if (due >= run->deadline_us) {
		run->late_retries++;
		return 0;
	}
	ld_schedule(run, due, c->job);
	return 1;
}

/* A join's answer: the ticket, and the place once it is public. */
static void
ld_join_done(struct ld_run *run, const struct ld_conn *c, int status,
    int64_t now)
{
	struct ld_queue *q = run->q;
	uint32_t s = LD_JOB_SHOPPER(c->job);
	char ticket[LD_QTOKEN_MAX];
	int64_t score = -1;
	int rc;

	if (q->state[s] == LD_Q_DONE)
		return;
	if (status != 200) {
		/* Joining not open yet (409): again in a second. */
		if (status == 409 && now < run->deadline_us) {
			ld_schedule(run, now + LD_NOT_YET_US, c->job);
			return;
		}
		if ((status == 503 || status == 0) && ld_retry(run, c, status, now))
			return;
		if (--q->joins_out[s] == 0 && q->state[s] == LD_Q_NEW)
			ld_qend(run, s, status == 0 || status == 503 ?
			    LD_QE_FAILED : LD_QE_REFUSED, ld_cat_of(status));
		return;
	}
	q->joins_out[s]--;
	rc = ld_json_int(c->rsp.kbody, c->rsp.kept, "score", &score);
	if (ld_json_str(c->rsp.kbody, c->rsp.kept, "ticket", ticket,
	    sizeof(ticket)) != 0 || rc == -1) {
		q->bad_answer++;
		return;
	}
	if (q->state[s] != LD_Q_NEW) {
		/* A repeat (a bot's other connection): the same place. */
		if (strcmp(ticket, q->qtok[s]) != 0 ||
		    (rc == 0 && q->score[s] >= 0 && score != q->score[s]))
			q->mismatch++;
		return;
	}
	memcpy(q->qtok[s], ticket, sizeof(ticket));
	q->state[s] = LD_Q_JOINED;
	q->join_last_us = now;
	if (run->o.join_only) {
		ld_qend(run, s, LD_QE_JOINED, LD_CAT_202);
		return;
	}
	if (rc == 0)
		q->score[s] = score;
	if (!q->seed_known)
		return;
	if (q->score[s] < 0)
		q->score[s] = fs_queue_draw(q->seed, q->file + q->sub[s],
		    strlen(q->file + q->sub[s]));
	ld_place_add(run, s, now);
}

/* A pass: a bot buys at once, a person after a reaction. */
static void
ld_pass_done(struct ld_run *run, const struct ld_conn *c, int status,
    int64_t now)
{
	struct ld_queue *q = run->q;
	uint32_t s = LD_JOB_SHOPPER(c->job);

	if (q->state[s] != LD_Q_ADMITTED)
		return;
	if (status == 200) {
		if (ld_json_str(c->rsp.kbody, c->rsp.kept, "pass", q->qtok[s],
		    sizeof(q->qtok[s])) != 0) {
			q->bad_answer++;
			ld_qend(run, s, LD_QE_REFUSED, LD_CAT_OTHER);
			return;
		}
		q->state[s] = LD_Q_BUYING;
		run->attempts[s] = 0;
		ld_schedule(run, now + (ld_is_bot(run, s) ? 0 : ld_react_us(run)),
		    LD_JOB(s, LD_K_BUY));
		return;
	}
	if (status == 409 && now < run->deadline_us) {
		ld_schedule(run, now + LD_NOT_YET_US, c->job);
		return;
	}
	if ((status == 503 || status == 0) && ld_retry(run, c, status, now))
		return;
	ld_qend(run, s, status == 410 ? LD_QE_SOLD_OUT : status == 0 ||
	    status == 503 ? LD_QE_FAILED : LD_QE_REFUSED, status == 410 ?
	    LD_CAT_410 : ld_cat_of(status));
	ld_queue_maybe_end(run);
}

/* A purchase with the pass: recorded like every purchase. */
static void
ld_buy_done(struct ld_run *run, const struct ld_conn *c, int status, int ne,
    int64_t now)
{
	struct ld_queue *q = run->q;
	uint32_t s = LD_JOB_SHOPPER(c->job);

	ld_record(run, c, status, ne, now);
	if (q->state[s] != LD_Q_BUYING)
		return;
	if ((status == 503 || status == 0) && ld_retry(run, c, status, now))
		return;
	if (status == 410 && run->o.other_items && ld_item_next(q, s) == 0) {
		/* Another item, after a person's look at the page. */
		run->attempts[s] = 0;
		ld_schedule(run, now + (ld_is_bot(run, s) ? 0 : ld_react_us(run)),
		    LD_JOB(s, LD_K_BUY));
		return;
	}
	if (status == 202) {
		q->last_202_us = now - run->t0_us;
		q->admit_wait_us += now - q->seen_us[s];
		q->admit_waits++;
	}
	ld_qend(run, s, status == 202 ? LD_QE_BOUGHT : status == 409 ?
	    LD_QE_HOLDS : status == 410 ? LD_QE_SOLD_OUT : status == 0 ||
	    status == 503 ? LD_QE_FAILED : LD_QE_REFUSED, ld_cat_of(status));
	ld_queue_maybe_end(run);
}

void
ld_queue_done(struct ld_run *run, struct ld_conn *c, int status, int ne,
    int64_t now)
{
	struct ld_queue *q = run->q;
	enum ld_kind k = LD_JOB_KIND(c->job);

	if (status > 0 && status < 600)
		q->st[k][status]++;
	else
		q->ne[k]++;
	switch (k) {
	case LD_K_POLL:
		q->polls_inflight--;
		if (status == 200)
			ld_queue_status(run, &c->rsp, now);
		break;
	case LD_K_JOIN:
		ld_join_done(run, c, status, now);
		break;
	case LD_K_PASS:
		ld_pass_done(run, c, status, now);
		break;
	default:
		ld_buy_done(run, c, status, ne, now);
		break;
	}
}

/* A status poll is being sent now. */
void
ld_queue_tick(struct ld_run *run, int64_t now)
{
	struct ld_queue *q = run->q;

	q->polls_inflight++;
	q->next_poll_us += q->poll_period_us;
	if (q->next_poll_us < now)
		q->next_poll_us = now + q->poll_period_us;
}

/* When the next status poll is due (never while enough are in flight). */
int64_t
ld_queue_next_us(const struct ld_run *run)
{
	const struct ld_queue *q = run->q;

	return q->polls_inflight >= LD_POLLS_INFLIGHT_MAX ? INT64_MAX :
	    q->next_poll_us;
}

int
ld_queue_csv_write(const struct ld_run *run)
{
	const struct ld_queue *q = run->q;
	const struct ld_qsample *t;
	FILE *f;
	size_t i;

	if ((f = fopen(run->o.queue_csv, "w")) == NULL) {
		ld_warn("%s: %s", run->o.queue_csv, strerror(errno));
		return -1;
	}
	fputs("t_ms,state,joined,admitted,through,units_left,passes_out\n", f);
	for (i = 0; i < q->ntl; i++) {
		t = &q->tl[i];
		fprintf(f, "%" PRId64 ",%s,%" PRId64 ",%" PRId64 ",%" PRId64
		    ",%" PRId64 ",%" PRId64 "\n", t->t_ms, t->state, t->joined,
		    t->admitted, t->through, t->units_left, t->passes_out);
	}
	if (ferror(f) | (fclose(f) != 0)) {
		ld_warn("%s: write error", run->o.queue_csv);
		return -1;
	}
	return 0;
}

/* The answers to one step, by status. */
static void
ld_queue_print_step(const struct ld_queue *q, enum ld_kind k)
{
	int code;

	printf("queue %s:", ld_kind_names[k]);
	for (code = 100; code < 600; code++)
		if (q->st[k][code] > 0)
			printf(" %d=%" PRIu64, code, q->st[k][code]);
	printf(" neterr=%" PRIu64 "\n", q->ne[k]);
}

/*
 * Who got which place, bots beside people: the accounts that never got a
 * place (their joins failed after every retry, or were refused), and those
 * with a late place (joined after the opening). The draw's share of bots
 * among the admitted is their share among the drawn places: a bot that
 * joins from several connections keeps a drawn place where a person whose
 * join failed has none, so these say how much of a fairness ratio is the
 * joins' doing rather than the draw's or the pacer's.
 */
static void
ld_queue_print_kinds(const struct ld_run *run)
{
	const struct ld_queue *q = run->q;
	uint64_t n[2] = { 0, 0 }, placed[2] = { 0, 0 }, failed[2] = { 0, 0 }, late[2] = { 0, 0 };
	uint64_t seen[2] = { 0, 0 }, stayed[2] = { 0, 0 }, bought[2] = { 0, 0 };
	double drawn, p, e, sd, rate[2];
	int b;

	for (size_t k = 0; k < run->nshoppers; k++) {
		b = ld_is_bot(run, k) ? 1 : 0;
		n[b]++;
		if (q->qtok[k][0] != '\0') {
			placed[b]++;
			late[b] += (uint64_t)(q->score[k] >= FS_QUEUE_LATE_BASE);
		} else if (q->state[k] == LD_Q_DONE && q->end[k] == LD_QE_FAILED) {
			failed[b]++;
		}
		if (q->seen_us[k] != 0) {
			seen[b]++;
			stayed[b] += (uint64_t)(q->end[k] != LD_QE_WALKED);
			bought[b] += (uint64_t)(q->end[k] == LD_QE_BOUGHT);
		}
	}
	printf("queue: places by kind: people %" PRIu64 " of %" PRIu64 " (failed to join %" PRIu64
	    ", late %" PRIu64 "), bots %" PRIu64 " of %" PRIu64 " (failed to join %" PRIu64
	    ", late %" PRIu64 "); bots %.2f%% of the drawn places\n", placed[0], n[0], failed[0],
	    late[0], placed[1], n[1], failed[1], late[1],
	    placed[0] + placed[1] - late[0] - late[1] > 0 ?
	    100.0 * (double)(placed[1] - late[1]) /
	    (double)(placed[0] + placed[1] - late[0] - late[1]) : 0.0);
	/*
	 * A fairness ratio is the draw's luck times the race after it. The
	 * draw: the bots among the admitted places beside what a fair lottery
	 * gives (hypergeometric: the admitted taken from all the places).
	 * The race: of the admitted who stayed, the share that bought, bots
	 * beside people (1 when pressing first buys nothing).
	 */
	drawn = (double)(placed[0] + placed[1]);
	if (drawn < 2 || seen[0] + seen[1] == 0)
		return;
	p = (double)placed[1] / drawn;
	e = (double)(seen[0] + seen[1]) * p;
	sd = sqrt(e * (1 - p) * (drawn - (double)(seen[0] + seen[1])) / (drawn - 1));
	rate[0] = stayed[0] > 0 ? (double)bought[0] / (double)stayed[0] : 0;
	rate[1] = stayed[1] > 0 ? (double)bought[1] / (double)stayed[1] : 0;
	printf("queue: the draw gave bots %" PRIu64 " of the %" PRIu64 " admitted places (a fair "
	    "lottery: %.1f +- %.1f, z %+.2f); the race: of the admitted who stayed, bots bought "
	    "%" PRIu64 "/%" PRIu64 ", people %" PRIu64 "/%" PRIu64 " (ratio %.3f)\n",
	    seen[1], seen[0] + seen[1], e, sd, sd > 0 ? ((double)seen[1] - e) / sd : 0.0,
	    bought[1], stayed[1], bought[0], stayed[0], rate[0] > 0 ? rate[1] / rate[0] : 0.0);
	printf("qfair admitted=%" PRIu64 " admitted_bots=%" PRIu64 " draw_expect=%.2f draw_sd=%.2f "
	    "draw_z=%.3f race_ratio=%.4f\n", seen[0] + seen[1], seen[1], e, sd,
	    sd > 0 ? ((double)seen[1] - e) / sd : 0.0, rate[0] > 0 ? rate[1] / rate[0] : 0.0);
}

void
ld_queue_summary(const struct ld_run *run)
{
	const struct ld_queue *q = run->q;
	uint64_t seen = 0, seen_bots = 0;
	size_t k;

	/* The draw's fairness apart from the race after it: bots among the
	 * places seen admitted. */
	for (k = 0; k < run->nshoppers; k++)
		if (q->seen_us[k] != 0) {
			seen++;
			seen_bots += (uint64_t)ld_is_bot(run, k);
		}

	printf("queue: sale %" PRId64 ", powBits %u (%zu proofs solved "
	    "beforehand in %.3f s of CPU), seed %s, %zu places known\n",
	    run->o.sale, q->pow_bits, run->nshoppers,
	    (double)q->pow_cpu_us / 1e6, q->seed_known ? "seen" : "never seen",
	    q->norder);
	for (k = LD_K_JOIN; k < LD_K__MAX; k++)
		ld_queue_print_step(q, (enum ld_kind)k);
	printf("queue: repeat joins that named another place %" PRIu64
	    ", answers without their members %" PRIu64 "\n", q->mismatch,
	    q->bad_answer);
	printf("queue: shoppers:");
	for (k = 0; k < LD_QE__MAX; k++)
		printf(" %s=%" PRIu64, ld_qend_names[k], k == LD_QE_NONE ?
		    (uint64_t)run->nshoppers - run->done : q->ends[k]);
	putchar('\n');
	printf("queue: admitted %" PRIu64 " places, bots %.1f%% of them\n", seen,
	    seen > 0 ? 100.0 * (double)seen_bots / (double)seen : 0.0);
	ld_queue_print_kinds(run);
	if (run->o.other_items)
		printf("queue: %" PRIu64 " moves to another item after a 410 "
		    "(%zu items)\n", q->moved, q->nitems);
	if (q->last_202_us >= 0)
		printf("queue: opening to the last unit sold %.3f ms; admission "
		    "seen to the 202 %.1f ms on average\n",
		    (double)q->last_202_us / 1000, (double)q->admit_wait_us /
		    1000 / (double)q->admit_waits);
	else
		printf("queue: no unit sold\n");
	printf("qsummary admitted_seen=%" PRIu64 " admitted_bots=%" PRIu64
	    " joins_200=%" PRIu64 " join_rps=%.1f polls_200=%" PRIu64
	    " passes_200=%" PRIu64 " passes_409=%" PRIu64 " mismatch=%" PRIu64
	    " bad_answer=%" PRIu64 " bought=%" PRIu64 " waiting=%" PRIu64
	    " t_last_unit_ms=%.3f pow_cpu_us=%" PRId64 "\n",
	    seen, seen_bots, q->st[LD_K_JOIN][200],
	    q->join_last_us > q->join_first_us ?
	    (double)q->st[LD_K_JOIN][200] * 1e6 /
	    (double)(q->join_last_us - q->join_first_us) : 0.0,
	    q->st[LD_K_POLL][200], q->st[LD_K_PASS][200],
	    q->st[LD_K_PASS][409], q->mismatch, q->bad_answer,
	    q->ends[LD_QE_BOUGHT], q->ends[LD_QE_WAITING],
	    (double)q->last_202_us / 1000, q->pow_cpu_us);
}

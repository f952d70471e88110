/*
 * flashsale-queue: the waiting room of a sale (docs/QUEUE.md).
 *
 *   GET  /api/flash-sales/sales/{saleId}/queue       the status document:
 *       the threshold of admission, the figures of the line, the draw's
 *       commitment and seed (public, max-age=1: the edge serves the crowd)
 *   POST /api/flash-sales/sales/{saleId}/queue       the join: a place for
 *       the token's account (Bearer JWT; body {} or {"pow":"nonce"})
 *   POST /api/flash-sales/sales/{saleId}/queue/pass  the pass of an admitted
 *       place (body {"ticket":"..."}, the join's ticket; never cached)
 *
 * Its workers are event loops (lib/fcgi), as the purchase handler's: nginx
 * keeps its FastCGI connections open (a join opens none), and a loop holds
 * any number of them without a thread each. The joins a loop took in one
 * round run their scripts in one Redis pipeline when the round ends, while
 * the loop serves other requests; the status document and the pass are one
 * Redis round trip each, answered in place. Each loop keeps what
 * PostgreSQL said about a sale for a second (lib/queue_conf.c), so a join
 * costs one Redis script and no PostgreSQL; the proof of work is checked
 * before Redis is touched. Writes that made
 * something new wait for a replica (WAIT 1) when FLASHSALE_REDIS_WAIT_MS
 * is set, as purchases do. The pacer that admits places runs in a thread
 * of this process too (lib/queue_pacer.c; FLASHSALE_QUEUE_PACER).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>
#include <sodium.h>

#include "cfg.h"
#include "clock.h"
#include "fcgi.h"
#include "jsonread.h"
#include "keys.h"
#include "log.h"
#include "metrics.h"
#include "pg.h"
#include "queue.h"
#include "route.h"
#include "stock.h"

#define QUEUE_SUFFIX "/queue"
#define PASS_SUFFIX "/queue/pass"
/* A join's body ({} or {"pow":"<32 characters>"}) and a pass request's. */
#define JOIN_BODY_MAX 256
#define PASS_BODY_MAX 512

static const char doc_headers[] = "Cache-Control: public, max-age=1, s-maxage=1\r\n";
static const char no_store[] = "Cache-Control: no-store, private\r\n";

enum action { ACTION_STATUS, ACTION_JOIN, ACTION_PASS };

struct app {
	struct fs_cfg cfg;
	fs_token_keys *tokens;
	fs_queue_keys *qkeys;
	int redis_wait_ms;	/* FLASHSALE_REDIS_WAIT_MS: 0, or WAIT 1 after a new place or pass */
	fs_queue_pacer *pacer;	/* NULL with FLASHSALE_QUEUE_PACER=0 */
	int64_t clock_offset_ms; /* FLASHSALE_TEST_CLOCK_OFFSET_MS: tests only, 0 otherwise */
};

struct joining;

/*
 * What one event loop owns: its connections and its cache; its batch
 * (lib/fcgi): the joins taken since the last batch went to Redis go
 * together when the loop's round ends and no batch is out, and the loop
 * serves other events while Redis runs one; the asks of the batch out.
 */
struct worker {
	struct app *app;
	fs_pg *pg;
	fs_stock *stock;		/* a reader: the units left */
	fs_queue_store *store;		/* the queue's keys and scripts */
	fs_queue_conf_cache *confs;
	struct fs_fcgi_batch batch;
	struct fs_queue_join_ask asks[FS_QUEUE_JOIN_BATCH_MAX];
};

_Static_assert(FS_QUEUE_JOIN_BATCH_MAX >= FS_FCGI_BATCH_MAX, "a loop's batch fits one pipeline");

/* A join on its way to Redis: its request waits for its loop's batch, no thread does. */
struct joining {
	fs_fcgi *fcgi;
	uint64_t sale;
	int64_t draw;
	struct fs_queue_window window;	/* the sale's, as read when it was taken */
	char sub[FS_TOKEN_SUB_MAX + 1];
};

/* What one request is about. */
struct request {
	fs_fcgi *fcgi;
	uint64_t sale;
	int64_t now;
	const struct fs_queue_conf *conf;
};

/* GET /readyz: PostgreSQL and Redis answer. */
static int
ready(void *arg, char *why, size_t whylen)
{
	struct worker *w = arg;

	if (fs_pg_ping(w->pg) != 0) {
		snprintf(why, whylen, "postgresql: %s", w->pg->errstr);
		return -1;
	}
	if (fs_stock_ping(w->stock) != 0) {
		snprintf(why, whylen, "redis %s", w->stock->errstr);
		return -1;
	}
	return 0;
}

/* /api/flash-sales/sales/{saleId}/queue[/pass]: the sale and the action; 0 or -1. */
static int
parse_path(fs_fcgi *fcgi, uint64_t *sale, enum action *action)
{
	const char *rest = fs_route_path_id(fs_fcgi_param(fcgi, "DOCUMENT_URI"),
	    FS_ROUTE_SALE_PREFIX, sale);
	int post = fs_fcgi_method_is(fcgi, "POST");

	if (rest == NULL)
		return -1;
	if (strcmp(rest, QUEUE_SUFFIX) == 0)
		*action = post ? ACTION_JOIN : ACTION_STATUS;
	else if (strcmp(rest, PASS_SUFFIX) == 0)
		*action = ACTION_PASS;
	else
		return -1;
	return 0;
}

/* Refuses with e, counted under metric m; headers as fs_fcgi_error's. */
static void
refuse(fs_fcgi *fcgi, enum fs_http_error e, enum fs_metric m, const char *extra,
    const char *headers)
{
	fs_metrics_count(m);
	fs_fcgi_error(fcgi, e, extra, headers != NULL ? headers : no_store);
}

/* Answers doc (and frees it) with 200 and headers. */
static void
answer_doc(fs_fcgi *fcgi, json_object *doc, const char *headers)
{
	const char *body = json_object_to_json_string_ext(doc,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

	fs_fcgi_answer(fcgi, FS_HTTP_OK, headers, body, strlen(body));
	json_object_put(doc);
}

/*
 * The sale's queue as read within the last second; NULL once answered
 * (503 when PostgreSQL cannot say, 404 NO_QUEUE for an unknown sale or
 * one without a waiting room: cached a second too, like any 404 of a sale).
 */
static const struct fs_queue_conf *
get_conf(struct worker *w, struct request *rq)
{
	const struct fs_queue_conf *c;
	char err[300];

	if ((c = fs_queue_conf_get(w->confs, w->pg, rq->sale, rq->now, err, sizeof(err))) == NULL) {
		fs_log_error("%s", err);
		fs_fcgi_error(rq->fcgi, FS_ERR_TRY_AGAIN, NULL, FS_HTTP_RETRY_SOON);
		return NULL;
	}
	if (!c->found || !c->has_queue) {
		refuse(rq->fcgi, FS_ERR_NO_QUEUE, FS_M_QUEUE_REFUSED_NO_QUEUE, NULL, doc_headers);
		return NULL;
	}
	return c;
}

/* Units left over every item: Redis's count, PostgreSQL's where Redis has none; -1 Redis away. */
static long
units_left(struct worker *w, const struct fs_queue_conf *c)
{
	long sum = 0, *left;

	if (c->nitems == 0)
		return 0;
	if ((left = calloc((size_t)c->nitems, sizeof(*left))) == NULL)
		return -1;
	if (fs_stock_left(w->stock, c->sale, c->items, (size_t)c->nitems, left) != 0) {
		fs_log_warn("queue %" PRIu64 ": units left: %s", c->sale, w->stock->errstr);
		free(left);
		return -1;
	}
	for (int i = 0; i < c->nitems; i++)
		sum += left[i] >= 0 ? left[i] : (c->pg_left[i] > 0 ? c->pg_left[i] : 0);
	free(left);
	return sum;
}

/* "before", "prequeue", "open", "soldout" or "ended". */
static const char *
state_name(const struct fs_queue_conf *c, const struct fs_queue_state *st, long left, int64_t now)
{
	if (now >= c->window.ends_ms)
		return "ended";
	if (now < c->window.pre_ms)
		return "before";
	if (now < c->window.opens_ms)
		return "prequeue";
	return st->soldout || left == 0 ? "soldout" : "open";
}

static void
add_time(json_object *doc, const char *name, int64_t ms)
{
	char t[FS_CLOCK_TIME_LEN];

	fs_clock_format(ms, t);
	json_object_object_add(doc, name, json_object_new_string(t));
}

/*
 * GET .../queue: the status document. Redis away: 503, never stale figures.
 * Its clock is Redis' (the one that decides a join drawn or late): a
 * handler whose clock runs ahead never shows the seed while a join can
 * still be drawn, which would let an account pick its draw.
 */
static void
answer_status(struct worker *w, struct request *rq)
{
	const struct fs_queue_conf *c = rq->conf;
	struct fs_queue_state st;
	char seed[2 * FS_QUEUE_SEEDBYTES + 1];
	json_object *doc;
	int64_t now;
	long left;

	fs_fcgi_batch_end(&w->batch); /* the store's connection answers the batch first */
	if (fs_queue_read_state(w->store, rq->sale, FS_QUEUE_NOW_REDIS, &st) != 0 ||
	    (left = units_left(w, c)) < 0) {
		fs_log_warn("queue %" PRIu64 ": %s", rq->sale, w->store->errstr);
		fs_fcgi_error(rq->fcgi, FS_ERR_TRY_AGAIN, NULL, FS_HTTP_RETRY_SOON);
		return;
	}
	/* Without Redis' clock (an older script) the seed waits: fail closed. */
	now = st.clock_ms > 0 ? st.clock_ms : rq->now;
	doc = json_object_new_object();
	json_object_object_add(doc, "sale", json_object_new_int64((int64_t)rq->sale));
	json_object_object_add(doc, "serverTime", json_object_new_int64(now));
	add_time(doc, "preQueueAt", c->window.pre_ms);
	add_time(doc, "opensAt", c->window.opens_ms);
	add_time(doc, "endsAt", c->window.ends_ms);
	json_object_object_add(doc, "state", json_object_new_string(state_name(c, &st, left, now)));
	json_object_object_add(doc, "seedCommit", json_object_new_string(c->seed_commit));
	if (st.clock_ms > 0 && now >= c->window.opens_ms) {
		sodium_bin2hex(seed, sizeof(seed), c->seed, sizeof(c->seed));
		json_object_object_add(doc, "seed", json_object_new_string(seed));
	} else {
		json_object_object_add(doc, "seed", NULL);
	}
	json_object_object_add(doc, "drawn", json_object_new_int64(st.drawn));
	json_object_object_add(doc, "joined", json_object_new_int64(st.joined));
	json_object_object_add(doc, "admitted", json_object_new_int64(st.admitted));
	json_object_object_add(doc, "through", json_object_new_int64(st.through));
	json_object_object_add(doc, "rate", json_object_new_double((double)st.rate_milli / 1000.0));
	json_object_object_add(doc, "unitsLeft", json_object_new_int64(left));
	json_object_object_add(doc, "passesOut", json_object_new_int64(st.passes_out));
	json_object_object_add(doc, "multiple", st.mult_milli > 0 ?
	    json_object_new_double((double)st.mult_milli / 1000.0) : NULL);
	json_object_object_add(doc, "passSeconds", json_object_new_int64(c->settings.pass_s));
	json_object_object_add(doc, "powBits", json_object_new_int64(c->settings.pow_bits));
	answer_doc(rq->fcgi, doc, doc_headers);
}

/*
 * The request's body as a JSON object of at most max bytes; NULL once
 * answered (413 too big, 400 unreadable or not an object).
 */
static json_object *
read_object(fs_fcgi *fcgi, size_t max)
{
	const char *body;
	size_t len;
	json_object *o;
	char err[128];

	if (fs_fcgi_body_or_answer(fcgi, &body, &len) != 0)
		return NULL;
	if (len > max) {
		refuse(fcgi, FS_ERR_PAYLOAD_TOO_LARGE, FS_M_QUEUE_REFUSED_BAD_REQUEST, NULL, NULL);
		return NULL;
	}
	if ((o = fs_jsonread_object(body, len, 2, err, sizeof(err))) == NULL)
		refuse(fcgi, FS_ERR_BAD_REQUEST, FS_M_QUEUE_REFUSED_BAD_REQUEST, NULL, NULL);
	return o;
}

/* True when o has no member but name (which may be absent). */
static int
only_member(json_object *o, const char *name)
{
	json_object_object_foreach(o, key, val) {
		(void)val;
		if (strcmp(key, name) != 0)
			return 0;
	}
	return 1;
}

/*
 * The join's body: {} or {"pow":"<nonce>"}; the nonce (or "") into nonce.
 * 0, or -1 once answered.
 */
static int
read_join(fs_fcgi *fcgi, char nonce[FS_QUEUE_NONCE_MAX + 1])
{
	json_object *o = read_object(fcgi, JOIN_BODY_MAX), *pow;
	int rc = -1;

	nonce[0] = '\0';
	if (o == NULL)
		return -1;
	if (!only_member(o, "pow")) {
		refuse(fcgi, FS_ERR_BAD_REQUEST, FS_M_QUEUE_REFUSED_BAD_REQUEST, NULL, NULL);
	} else if (json_object_object_get_ex(o, "pow", &pow) &&
	    (!json_object_is_type(pow, json_type_string) ||
		json_object_get_string_len(pow) < 1 ||
		json_object_get_string_len(pow) > FS_QUEUE_NONCE_MAX)) {
		refuse(fcgi, FS_ERR_BAD_POW, FS_M_QUEUE_REFUSED_BAD_POW, NULL, NULL);
	} else {
		if (json_object_object_get_ex(o, "pow", &pow))
			snprintf(nonce, FS_QUEUE_NONCE_MAX + 1, "%s", json_object_get_string(pow));
		rc = 0;
	}
	json_object_put(o);
	return rc;
}

/* The caller's account from the bearer token; 0, or -1 once answered 401. */
static int
authenticate(struct app *app, fs_fcgi *fcgi, char sub[FS_TOKEN_SUB_MAX + 1])
{
	const char *auth = fs_fcgi_param(fcgi, "HTTP_AUTHORIZATION");

	if (auth != NULL && fs_token_verify_bearer(app->tokens, auth, strlen(auth),
				(time_t)(fs_clock_now_ms() / 1000), sub,
				FS_TOKEN_SUB_MAX + 1) == FS_TOKEN_OK)
		return 0;
	fs_metrics_count(FS_M_QUEUE_REFUSED_UNAUTHENTICATED);
	fs_fcgi_error(fcgi, FS_ERR_UNAUTHENTICATED, NULL, FS_HTTP_BEARER_CHALLENGE);
	return -1;
}

/* After a write that made something new: a replica has it (WAIT 1); 0, or -1 once answered. */
static int
replicated(struct worker *w, struct request *rq, int wrote)
{
	if (!wrote || w->app->redis_wait_ms <= 0 ||
	    fs_queue_replicate(w->store, w->app->redis_wait_ms) == 0)
		return 0;
	/* Kept on the master; a retry answers the same place or pass. */
	fs_log_warn("queue %" PRIu64 ": %s", rq->sale, w->store->errstr);
	fs_fcgi_error(rq->fcgi, FS_ERR_TRY_AGAIN, NULL, FS_HTTP_RETRY_SOON);
	return -1;
}

/* The join's window as the cached sale says: 0 inside it, or -1 once answered. */
static int
join_window(const struct request *rq)
{
	if (rq->now < rq->conf->window.pre_ms) {
		refuse(rq->fcgi, FS_ERR_QUEUE_NOT_OPEN, FS_M_QUEUE_REFUSED_NOT_OPEN, NULL, NULL);
		return -1;
	}
	if (rq->now >= rq->conf->window.ends_ms) {
		refuse(rq->fcgi, FS_ERR_QUEUE_CLOSED, FS_M_QUEUE_REFUSED_CLOSED, NULL, NULL);
		return -1;
	}
	return 0;
}

/* 200 with the place: score and rank only from the opening on (the draw is secret before). */
static void
answer_place(struct worker *w, const struct joining *j, const struct fs_queue_place *p)
{
	char ticket[FS_QUEUE_TOKEN_MAX];
	/* The script's clock decides (rank -1 before the opening), not this handler's. */
	int opened = p->rank >= 0;
	json_object *doc;

	if (fs_queue_ticket_mint(w->app->qkeys, j->sale, j->sub, ticket, sizeof(ticket)) != 0) {
		fs_fcgi_error(j->fcgi, FS_ERR_INTERNAL, NULL, NULL);
		return;
	}
	fs_metrics_count(p->added ? FS_M_QUEUE_JOINS_NEW : FS_M_QUEUE_JOINS_AGAIN);
	doc = json_object_new_object();
	json_object_object_add(doc, "sale", json_object_new_int64((int64_t)j->sale));
	json_object_object_add(doc, "ticket", json_object_new_string(ticket));
	json_object_object_add(doc, "score", opened ? json_object_new_int64(p->score) : NULL);
	json_object_object_add(doc, "rank",
	    opened && p->rank >= 0 ? json_object_new_int64(p->rank) : NULL);
	json_object_object_add(doc, "drawn", json_object_new_boolean(p->score < FS_QUEUE_LATE_BASE));
	answer_doc(j->fcgi, doc, no_store);
}

/*
 * What Redis said of one join: answered. replicated is 0 when a replica
 * was to have the batch's new places and did not say so in time: a new
 * place is kept on the master and answered 503 (a retry answers it).
 */
static void
joined(struct worker *w, const struct joining *j, const struct fs_queue_join_ask *a,
    int replicated)
{
	switch (a->verdict) {
	case FS_QUEUE_V_OK:
		if (!replicated)
			fs_fcgi_error(j->fcgi, FS_ERR_TRY_AGAIN, NULL, FS_HTTP_RETRY_SOON);
		else
			answer_place(w, j, &a->place);
		break;
	case FS_QUEUE_V_NOT_YET:
		refuse(j->fcgi, FS_ERR_QUEUE_NOT_OPEN, FS_M_QUEUE_REFUSED_NOT_OPEN, NULL, NULL);
		break;
	case FS_QUEUE_V_ENDED:
	case FS_QUEUE_V_CLOSED:
		refuse(j->fcgi, FS_ERR_QUEUE_CLOSED, FS_M_QUEUE_REFUSED_CLOSED, NULL, NULL);
		break;
	default:
		fs_log_warn("queue %" PRIu64 ": %s", j->sale, a->errstr);
		fs_fcgi_error(j->fcgi, FS_ERR_TRY_AGAIN, NULL, FS_HTTP_RETRY_SOON);
	}
}

/*
 * The batch's replies (its recv): each join answered, after one WAIT for
 * all of them when replicas must have the new places
 * (FLASHSALE_REDIS_WAIT_MS).
 */
static void
joined_all(void *ctx, void *const *items, size_t n)
{
	struct worker *w = ctx;
	int replicated = 1, answered = 0;

	fs_queue_join_end(w->store);
	for (size_t i = 0; i < n; i++)
		answered |= w->asks[i].verdict == FS_QUEUE_V_OK; /* new or again: fs_queue_store.sync */
	if (answered && w->app->redis_wait_ms > 0 &&
	    fs_queue_replicate(w->store, w->app->redis_wait_ms) != 0) {
		fs_log_warn("queue: %s; new places answered 503", w->store->errstr);
		replicated = 0;
	}
	for (size_t i = 0; i < n; i++) {
		struct joining *j = items[i];

		fs_fcgi_log_tag(j->fcgi);
		joined(w, j, &w->asks[i], replicated);
		fs_fcgi_log_tag(NULL);
		free(j);
	}
}

/* The joins taken so far (its send), in one Redis pipeline: the descriptors of the replies. */
static int
join_all(void *ctx, void *const *items, size_t n, int *fds, int maxfds, int64_t *deadline_ms)
{
	struct worker *w = ctx;

	fs_metrics_count(FS_M_QUEUE_JOIN_ROUNDS);
	for (size_t i = 0; i < n; i++) {
		const struct joining *j = items[i];

		w->asks[i] = (struct fs_queue_join_ask){ .sale = j->sale, .window = j->window,
			.sub = j->sub, .draw = j->draw, .now_ms = FS_QUEUE_NOW_REDIS };
	}
	fs_queue_join_begin(w->store, w->asks, n);
	*deadline_ms = fs_queue_join_deadline(w->store);
	return fs_queue_join_fds(w->store, fds, maxfds);
}

/* The end of a loop's round: the joins it took go to Redis now, unless a batch is out. */
static void
round_end(void *ctx)
{
	struct worker *w = ctx;

	fs_fcgi_batch_round(&w->batch);
}

/*
 * POST .../queue: a place for the token's account, the same one for every
 * repeat. Checked here; the Redis script runs with the round's other joins.
 */
static void
join(struct worker *w, struct request *rq)
{
	char sub[FS_TOKEN_SUB_MAX + 1], nonce[FS_QUEUE_NONCE_MAX + 1];
	const struct fs_queue_conf *c;
	struct joining *j;

	if (authenticate(w->app, rq->fcgi, sub) != 0 || read_join(rq->fcgi, nonce) != 0)
		return;
	if ((c = rq->conf = get_conf(w, rq)) == NULL || join_window(rq) != 0)
		return;
	if (c->settings.pow_bits > 0 &&
	    fs_queue_pow_check(rq->sale, sub, nonce, strlen(nonce),
		(unsigned)c->settings.pow_bits) != FS_QUEUE_OK) {
		refuse(rq->fcgi, FS_ERR_BAD_POW, FS_M_QUEUE_REFUSED_BAD_POW, NULL, NULL);
		return;
	}
	if ((j = calloc(1, sizeof(*j))) == NULL) {
		fs_log_warn("queue %" PRIu64 ": out of memory", rq->sale);
		fs_fcgi_error(rq->fcgi, FS_ERR_TRY_AGAIN, NULL, FS_HTTP_RETRY_SOON);
		return;
	}
	*j = (struct joining){ .fcgi = rq->fcgi, .sale = rq->sale,
		.draw = fs_queue_draw(c->seed, sub, strlen(sub)), .window = c->window };
	memcpy(j->sub, sub, sizeof(j->sub));
	fs_fcgi_batch_add(&w->batch, j);
}

/*
 * The pass request's ticket, checked (one crypto_auth_verify): the account
 * into sub. 0, or -1 once answered.
 */
static int
read_ticket(struct worker *w, struct request *rq, char sub[FS_TOKEN_SUB_MAX + 1])
{
	json_object *o = read_object(rq->fcgi, PASS_BODY_MAX);
	const char *ticket;
	int rc = -1;

	if (o == NULL)
		return -1;
	if (!only_member(o, "ticket") ||
	    (ticket = fs_jsonread_string(o, "ticket", FS_QUEUE_TOKEN_MAX)) == NULL)
		refuse(rq->fcgi, FS_ERR_BAD_REQUEST, FS_M_QUEUE_REFUSED_BAD_REQUEST, NULL, NULL);
	else if (fs_queue_ticket_check(w->app->qkeys, ticket, strlen(ticket), rq->sale, sub,
		     FS_TOKEN_SUB_MAX + 1) != FS_QUEUE_OK)
		refuse(rq->fcgi, FS_ERR_BAD_TICKET, FS_M_QUEUE_REFUSED_BAD_TICKET, NULL, NULL);
	else
		rc = 0;
	json_object_put(o);
	return rc;
}

/* 200 {"pass","expiresAt"} (ms). */
static void
answer_pass(struct worker *w, struct request *rq, const char *sub, const struct fs_queue_place *p)
{
	char pass[FS_QUEUE_TOKEN_MAX];
	json_object *doc;

	if (fs_queue_pass_mint(w->app->qkeys, rq->sale, sub, p->expires_ms / 1000, pass,
		sizeof(pass)) != 0) {
		fs_fcgi_error(rq->fcgi, FS_ERR_INTERNAL, NULL, NULL);
		return;
	}
	fs_metrics_count(p->added ? FS_M_QUEUE_PASSES_ISSUED : FS_M_QUEUE_PASSES_AGAIN);
	doc = json_object_new_object();
	json_object_object_add(doc, "pass", json_object_new_string(pass));
	json_object_object_add(doc, "expiresAt", json_object_new_int64(p->expires_ms));
	answer_doc(rq->fcgi, doc, no_store);
}

/* POST .../queue/pass: the pass of an admitted place. */
static void
pass(struct worker *w, struct request *rq)
{
	char sub[FS_TOKEN_SUB_MAX + 1], extra[96];
	struct fs_queue_place p;
	enum fs_queue_verdict v;

	if (read_ticket(w, rq, sub) != 0 || (rq->conf = get_conf(w, rq)) == NULL)
		return;
	fs_fcgi_batch_end(&w->batch); /* the store's connection answers the batch first */
	v = fs_queue_pass(w->store, rq->sale, &rq->conf->window, sub, FS_QUEUE_NOW_REDIS, &p);
	/* Before the opening (Redis' clock: the script's -1) a rank would tell of the secret draw. */
	if (p.rank < 0)
		snprintf(extra, sizeof(extra), "\"rank\":null,\"admitted\":%" PRId64, p.admitted);
	else
		snprintf(extra, sizeof(extra), "\"rank\":%" PRId64 ",\"admitted\":%" PRId64,
		    p.rank, p.admitted);
	switch (v) {
	case FS_QUEUE_V_OK:
		if (replicated(w, rq, 1) == 0) /* issued now or again: see fs_queue_store.sync */
			answer_pass(w, rq, sub, &p);
		break;
	case FS_QUEUE_V_NOT_IN_QUEUE:
		refuse(rq->fcgi, FS_ERR_NOT_IN_QUEUE, FS_M_QUEUE_REFUSED_NOT_IN_QUEUE, NULL, NULL);
		break;
	case FS_QUEUE_V_NOT_YET:
		refuse(rq->fcgi, FS_ERR_NOT_YET, FS_M_QUEUE_REFUSED_NOT_YET, extra, NULL);
		break;
	case FS_QUEUE_V_SOLD_OUT:
		refuse(rq->fcgi, FS_ERR_QUEUE_SOLD_OUT, FS_M_QUEUE_REFUSED_SOLD_OUT, NULL, NULL);
		break;
	case FS_QUEUE_V_LAPSED:
		refuse(rq->fcgi, FS_ERR_PASS_LAPSED, FS_M_QUEUE_REFUSED_LAPSED, NULL, NULL);
		break;
	case FS_QUEUE_V_ENDED:
		refuse(rq->fcgi, FS_ERR_QUEUE_CLOSED, FS_M_QUEUE_REFUSED_CLOSED, NULL, NULL);
		break;
	default:
		fs_log_warn("queue %" PRIu64 ": %s", rq->sale, w->store->errstr);
		fs_fcgi_error(rq->fcgi, FS_ERR_TRY_AGAIN, NULL, FS_HTTP_RETRY_SOON);
	}
}

static void
handle(fs_fcgi *fcgi, void *ctx)
{
	struct worker *w = ctx;
	/* This handler's clock (a test may set it off: it decides no opening, Redis' does). */
	struct request rq = { .fcgi = fcgi, .now = fs_clock_now_ms() + w->app->clock_offset_ms };
	enum action action;

	if (parse_path(fcgi, &rq.sale, &action) != 0) {
		fs_fcgi_error(fcgi, FS_ERR_SALE_NOT_FOUND, NULL, doc_headers);
		return;
	}
	if (action == ACTION_PASS && !fs_fcgi_method_is(fcgi, "POST")) {
		fs_fcgi_error(fcgi, FS_ERR_METHOD_NOT_ALLOWED, NULL, "Allow: POST\r\n");
		return;
	}
	if (action == ACTION_STATUS && !fs_fcgi_method_is(fcgi, "GET") &&
	    !fs_fcgi_method_is(fcgi, "HEAD")) {
		fs_fcgi_error(fcgi, FS_ERR_METHOD_NOT_ALLOWED, NULL, "Allow: GET, HEAD, POST\r\n");
		return;
	}
	if (action == ACTION_JOIN)
		join(w, &rq);
	else if (action == ACTION_PASS)
		pass(w, &rq);
	else if ((rq.conf = get_conf(w, &rq)) != NULL)
		answer_status(w, &rq);
}

static int
setup(void *arg)
{
	struct app *app = arg;
	char err[256];

	if (fs_cfg_load(&app->cfg, FS_CFG_NEED(FS_CFG_PG) | FS_CFG_NEED(FS_CFG_REDIS) |
		FS_CFG_NEED(FS_CFG_KEYS_DIR)) != 0) {
		fs_log_error("%s", app->cfg.errstr);
		return -1;
	}
	if (fs_keys_load(&app->cfg, &app->tokens, NULL, err, sizeof(err)) != 0) {
		fs_log_error("token keys: %s", err);
		return -1;
	}
	if (fs_keys_load_queue(&app->cfg, &app->qkeys, err, sizeof(err)) != 0) {
		fs_log_error("queue key: %s", err);
		return -1;
	}
	app->redis_wait_ms = (int)fs_cfg_long(&app->cfg, FS_CFG_REDIS_WAIT_MS);
	if ((app->clock_offset_ms = fs_cfg_test_clock_offset_ms(&app->cfg)) != 0)
		fs_log_warn("FLASHSALE_TEST_CLOCK_OFFSET_MS=%" PRId64 ": this handler's clock is set "
			    "off the real one (tests only)", app->clock_offset_ms);
	/*
	 * The pacer's thread (FLASHSALE_QUEUE_PACER=1, the default): every
	 * process runs one, and each sale's lease makes one of them its leader.
	 * Started here, with the stop signals blocked as for the workers.
	 */
	if (fs_cfg_long(&app->cfg, FS_CFG_QUEUE_PACER) == 1 &&
	    (app->pacer = fs_queue_pacer_start(&app->cfg, fs_cfg_get(&app->cfg, FS_CFG_DATADIR),
		 (int)fs_cfg_long(&app->cfg, FS_CFG_QUEUE_STEP_MS), err, sizeof(err))) == NULL) {
		fs_log_error("pacer: %s", err);
		return -1;
	}
	/* FLASHSALE_QUEUE_THREADS (2): about one per core; fewer share more joins per pipeline. */
	return (int)fs_cfg_long(&app->cfg, FS_CFG_QUEUE_THREADS); /* ranges: lib/cfg */
}

static void
teardown(void *arg)
{
	struct app *app = arg;

	fs_queue_pacer_stop(app->pacer);
	fs_token_keys_free(app->tokens);
	fs_queue_keys_free(app->qkeys);
}

static void
worker_free(void *arg)
{
	struct worker *w = arg;

	/* A loop answers every request before it stops; whatever a batch still held is freed. */
	for (size_t i = 0; i < w->batch.nqueued; i++)
		free(w->batch.queued[i]);
	for (size_t i = 0; i < w->batch.nflight; i++)
		free(w->batch.flight[i]);
	fs_queue_conf_cache_free(w->confs);
	fs_queue_store_free(w->store);
	fs_stock_free(w->stock);
	fs_pg_free(w->pg);
	free(w);
}

static void *
worker_new(void *arg)
{
	struct app *app = arg;
	struct worker *w;
	char err[256];

	if ((w = calloc(1, sizeof(*w))) == NULL)
		return NULL;
	w->app = app;
	w->batch.send = join_all;
	w->batch.recv = joined_all;
	w->batch.ctx = w;
	if ((w->pg = fs_pg_new(fs_cfg_get(&app->cfg, FS_CFG_PG))) == NULL ||
	    (w->confs = fs_queue_conf_cache_new()) == NULL) {
		fs_log_error("out of memory, or FLASHSALE_PG is too long");
		goto fail;
	}
	if ((w->stock = fs_stock_new(&app->cfg, NULL, err, sizeof(err))) == NULL ||
	    (w->store = fs_queue_store_new(&app->cfg, fs_cfg_get(&app->cfg, FS_CFG_DATADIR), err,
		 sizeof(err))) == NULL) {
		fs_log_error("%s", err);
		goto fail;
	}
	return w;
fail:
	worker_free(w);
	return NULL;
}

int
main(void)
{
	static const struct fs_fcgi_service service = {
		"flashsale-queue", setup, teardown, worker_new, worker_free, handle, ready, 1,
		round_end
	};
	static struct app app;

	return fs_fcgi_serve(&service, &app);
}

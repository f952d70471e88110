/* flashsale-load: the connections, the retries and the run. */
#include "load.h"

/* xorshift64*: jitter only needs to be cheap and spread, not secret. */
uint64_t
ld_rand(struct ld_run *run)
{
	run->rng ^= run->rng >> 12;
	run->rng ^= run->rng << 25;
	run->rng ^= run->rng >> 27;
	return run->rng * 0x2545F4914F6CDD1DULL;
}

int64_t
ld_rand_below(struct ld_run *run, int64_t n)
{
	return n <= 0 ? 0 : (int64_t)(ld_rand(run) % (uint64_t)n);
}

/*
 * Retry heap.
 */

static void
ld_heap_push(struct ld_run *run, int64_t due_us, uint32_t shopper)
{
	struct ld_retry t = { due_us, shopper };
	size_t i = run->heap_len++, parent;

	while (i > 0) {
		parent = (i - 1) / 2;
		if (run->heap[parent].due_us <= due_us)
			break;
		run->heap[i] = run->heap[parent];
		i = parent;
	}
	run->heap[i] = t;
}

static uint32_t
ld_heap_pop(struct ld_run *run)
{
	struct ld_retry last;
	uint32_t top = run->heap[0].shopper;
	size_t i = 0, child, n;

	n = --run->heap_len;
	last = run->heap[n];
	while ((child = 2 * i + 1) < n) {
		if (child + 1 < n &&
		    run->heap[child + 1].due_us < run->heap[child].due_us)
			child++;
		if (last.due_us <= run->heap[child].due_us)
			break;
		run->heap[i] = run->heap[child];
		i = child;
	}
	if (n > 0)
		run->heap[i] = last;
	return top;
}

static void
ld_ready_push(struct ld_run *run, uint32_t job)
{
	run->ready[(run->ready_head + run->ready_len) % run->ready_cap] = job;
	run->ready_len++;
}

static uint32_t
ld_ready_pop(struct ld_run *run)
{
	uint32_t s = run->ready[run->ready_head];

	run->ready_head = (run->ready_head + 1) % run->ready_cap;
	run->ready_len--;
	return s;
}

/*
 * A job due at due_us (monotonic): a retry, a person's press after their
 * reaction, a queue step. Both queues hold every job at most once, so
 * their capacity (a few jobs a shopper) is never passed.
 */
void
ld_schedule(struct ld_run *run, int64_t due_us, uint32_t job)
{
	if (run->heap_len < run->heap_cap)
		ld_heap_push(run, due_us, job);
}

/*
 * Bots are a fixed share of the shoppers, picked by a hash of their line
 * number: the same lines are bots in every run over the same file, with
 * the waiting room or without it.
 */
int
ld_is_bot(const struct ld_run *run, size_t shopper)
{
	uint32_t h = (uint32_t)shopper * 2654435761U;

	h ^= h >> 16;
	return (int64_t)(h % 1000) < run->o.bots_permille;
}

/*
 * --walk-away-permille: a person (never a bot) who joins the waiting room
 * and never comes back: another hash of the line than the bots', so the
 * walkers are a share of the people.
 */
int
ld_walks_away(const struct ld_run *run, size_t shopper)
{
	uint32_t h = (uint32_t)shopper * 2246822519U;

	h ^= h >> 15;
	return !ld_is_bot(run, shopper) && (int64_t)(h % 1000) < run->o.walk_away_permille;
}

/* A person's reaction: from seeing the button live to pressing it. */
int64_t
ld_react_us(struct ld_run *run)
{
	int64_t lo = run->o.react_min_ms * 1000, hi = run->o.react_max_ms * 1000;

	return hi <= lo ? lo : lo + ld_rand_below(run, hi - lo + 1);
}

/*
 * Connections.
 */

static uint64_t
ld_conn_key(struct ld_run *run, const struct ld_conn *c)
{
	return (uint64_t)c->gen << 32 | (uint32_t)(c - run->conns);
}

/*
 * Many shoppers, many addresses: connection i speaks from 127.100.0.0 +
 * 1 + i mod --source-ips, so that a per-address limit sees a crowd, not
 * one client (every 127.0.0.0/8 address is loopback on Linux).
 */
static int
ld_conn_bind(struct ld_run *run, const struct ld_conn *c, int fd)
{
	struct sockaddr_in src;
	uint32_t i = (uint32_t)(c - run->conns) % (uint32_t)run->o.source_ips;

	if (run->addr.ss_family != AF_INET)
		return 0;
	memset(&src, 0, sizeof(src));
	src.sin_family = AF_INET;
	src.sin_addr.s_addr = htonl((127U << 24 | 100U << 16) + 1 + i);
	return bind(fd, (struct sockaddr *)&src, sizeof(src));
}

static int
ld_conn_open(struct ld_run *run, struct ld_conn *c)
{
	struct epoll_event ev;
	int fd = -1, one = 1;

	fd = socket(run->addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0);
	if (fd == -1)
		goto fail;
	/* One small write per request: never let Nagle hold it back. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (run->o.source_ips > 0 && ld_conn_bind(run, c, fd) == -1)
		goto fail;
	c->connecting = 0;
	if (connect(fd, (struct sockaddr *)&run->addr, run->addrlen) == -1) {
		if (errno != EINPROGRESS)
			goto fail;
		c->connecting = 1;
	}
	c->gen++;
	memset(&ev, 0, sizeof(ev));
	/* EPOLLOUT tells when the connect ends or the first write can go. */
	ev.events = EPOLLIN | EPOLLOUT;
	ev.data.u64 = ld_conn_key(run, c);
	if (epoll_ctl(run->ep, EPOLL_CTL_ADD, fd, &ev) == -1)
		goto fail;
	c->fd = fd;
	c->want_out = 1;
	run->connects++;
	return 0;
fail:
	run->last_errno = errno;
	if (fd != -1)
		close(fd);
	c->connecting = 0;
	return -1;
}

static void
ld_conn_close(struct ld_conn *c)
{
	if (c->fd == -1)
		return;
	close(c->fd);
	c->fd = -1;
	c->connecting = 0;
	c->want_out = 0;
}

static int
ld_conn_want_out(struct ld_run *run, struct ld_conn *c, int on)
{
	struct epoll_event ev;

	if (c->want_out == on)
		return 0;
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN | (on ? EPOLLOUT : 0);
	ev.data.u64 = ld_conn_key(run, c);
	if (epoll_ctl(run->ep, EPOLL_CTL_MOD, c->fd, &ev) == -1)
		return -1;
	c->want_out = on;
	return 0;
}

static void
ld_conn_free(struct ld_run *run, struct ld_conn *c)
{
	uint32_t ci = (uint32_t)(c - run->conns);

	c->shopper = -1;
	if (c->fd != -1)
		run->free_open[run->nfree_open++] = ci;
	else
		run->free_closed[run->nfree_closed++] = ci;
}

enum ld_cat
ld_cat_of(int status)
{
	switch (status) {
	case 0:
		return LD_CAT_NETERR;
	case 202:
		return LD_CAT_202;
	case 409:
		return LD_CAT_409;
	case 410:
		return LD_CAT_410;
	case 429:
		return LD_CAT_429;
	case 503:
		return LD_CAT_503;
	default:
		return LD_CAT_OTHER;
	}
}

/* After a Retry-After, its seconds plus jitter; else equal-jitter backoff. */
int64_t
ld_retry_delay_us(struct ld_run *run, unsigned attempt, int retry_after)
{
	int64_t base;

	if (retry_after >= 0)
		return (int64_t)retry_after * LD_SECOND_US +
		    ld_rand_below(run, LD_JITTER_US + 1);
	base = run->o.backoff_ms << (attempt - 1);
	if (base > LD_BACKOFF_CAP_MS)
		base = LD_BACKOFF_CAP_MS;
	base *= 1000;
	return base / 2 + ld_rand_below(run, base / 2 + 1);
}

/* Records one finished purchase (status 0: no answer) and counts it. */
void
ld_record(struct ld_run *run, const struct ld_conn *c, int status, int ne,
    int64_t now)
{
	struct ld_record *rec;
	int64_t start = c->write_us != 0 ? c->write_us : c->dispatch_us;
	enum ld_cat cat = ld_cat_of(status);

	if (run->nrecs < run->recs_cap) {
		rec = &run->recs[run->nrecs++];
		rec->t_us = now > run->t0_us ? (uint32_t)(now - run->t0_us) : 0;
		rec->latency_us = (uint32_t)(now - start);
		rec->status = (int16_t)status;
		rec->attempt = (uint8_t)c->attempt;
		rec->neterr = (uint8_t)ne;
	}
	run->cat[cat]++;
	if (status > 0)
		run->status[status]++;
	else
		run->neterr[ne]++;
}

/*
 * One finished request (status 0: no answer): a purchase is recorded and
 * its shopper may try again; a queue step goes to load_queue.c.  The
 * caller has closed the socket if needed.
 */
static void
ld_complete(struct ld_run *run, struct ld_conn *c, int status,
    enum ld_neterr ne, int64_t now)
{
	uint32_t s = (uint32_t)c->shopper;
	int64_t due;
	enum ld_cat cat = ld_cat_of(status);
	int retry;

	if (ne == LD_NE_PROTOCOL)
		snprintf(run->last_proto, sizeof(run->last_proto), "%s",
		    c->rsp.errstr);
	run->inflight--;
	if (run->q != NULL) {
		ld_queue_done(run, c, status, (int)ne, now);
		ld_conn_free(run, c);
		return;
	}
	ld_record(run, c, status, (int)ne, now);

	retry = (cat == LD_CAT_503 || cat == LD_CAT_NETERR) &&
	    c->attempt <= (unsigned)run->o.retries && !ld_stop_signal &&
	    run->sent < (uint64_t)run->o.requests_max;
	if (retry) {
		due = now + ld_retry_delay_us(run, c->attempt,
		    cat == LD_CAT_503 ? c->rsp.retry_after : -1);
		if (due < run->deadline_us)
			ld_schedule(run, due, s);
		else {
			run->late_retries++;
			retry = 0;
		}
	}
	if (!retry) {
		run->outcome[s] = (uint8_t)(cat + 1);
		run->done++;
	}
	ld_conn_free(run, c);
}

/* Writes what is left of the request; EPOLLOUT calls back when it can. */
static void
ld_conn_send(struct ld_run *run, struct ld_conn *c, int64_t now)
{
	const char *req = c->req;
	size_t len = c->req_len;
	ssize_t n;

	if (c->write_us == 0)
		c->write_us = now;
	while (c->sent < len) {
		n = send(c->fd, req + c->sent, len - c->sent, MSG_NOSIGNAL);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			if (ld_conn_want_out(run, c, 1) == -1)
				goto fail;
			return;
		}
		if (n == -1)
			goto fail;
		c->sent += (size_t)n;
	}
	if (ld_conn_want_out(run, c, 0) == -1)
		goto fail;
	return;
fail:
	run->last_errno = errno;
	ld_conn_close(c);
	ld_complete(run, c, 0, LD_NE_SEND, now);
}

static void
ld_conn_read(struct ld_run *run, struct ld_conn *c, char *buf, size_t bufsz)
{
	enum ld_neterr ne = LD_NE_NONE;
	enum ld_prs rc;
	ssize_t n;
	size_t used;
	int64_t now;

	n = recv(c->fd, buf, bufsz, 0);
	if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK ||
	    errno == EINTR))
		return;
	now = ld_now_us();
	if (c->shopper == -1) {
		/* The server closed an idle connection, or spoke unasked. */
		run->idle_closes++;
		ld_conn_close(c);
		return;
	}
	if (n == -1) {
		run->last_errno = errno;
		ne = LD_NE_RECV;
		goto fail;
	}
	if (n == 0) {
		if (ld_rsp_eof(&c->rsp) != LD_PRS_DONE) {
			ne = LD_NE_CLOSED;
			goto fail;
		}
		ld_conn_close(c);
		ld_complete(run, c, c->rsp.status, LD_NE_NONE, now);
		return;
	}
	rc = ld_rsp_feed(&c->rsp, buf, (size_t)n, &used);
	if (rc == LD_PRS_MORE)
		return;
	if (rc == LD_PRS_ERROR) {
		ne = LD_NE_PROTOCOL;
		goto fail;
	}
	/* No pipelining: extra bytes, or an early answer, break the stream. */
	if (!c->rsp.keep_alive || used != (size_t)n || c->sent < c->req_len)
		ld_conn_close(c);
	ld_complete(run, c, c->rsp.status, LD_NE_NONE, now);
	return;
fail:
	ld_conn_close(c);
	ld_complete(run, c, 0, ne, now);
}

static void
ld_conn_event(struct ld_run *run, const struct epoll_event *ev, char *buf,
    size_t bufsz)
{
	struct ld_conn *c;
	uint32_t ci = (uint32_t)ev->data.u64;
	socklen_t len = sizeof(int);
	int err = 0;

	if (ci >= run->nconns)
		return;
	c = &run->conns[ci];
	/* Closed, maybe reopened, earlier in this batch of events. */
	if (c->fd == -1 || c->gen != (uint32_t)(ev->data.u64 >> 32))
		return;
	if (c->connecting) {
		if ((ev->events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) == 0)
			return;
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
			err = errno;
		if (err != 0) {
			run->last_errno = err;
			ld_conn_close(c);
			if (c->shopper == -1)
				run->warm_fails++;
			else
				ld_complete(run, c, 0, LD_NE_CONNECT,
				    ld_now_us());
			return;
		}
		c->connecting = 0;
	}
	if (ev->events & EPOLLOUT) {
		if (c->shopper != -1 && c->sent < c->req_len)
			ld_conn_send(run, c, ld_now_us());
		else if (ld_conn_want_out(run, c, 0) == -1)
			ld_conn_close(c);
	}
	if (c->fd != -1 && (ev->events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
		ld_conn_read(run, c, buf, bufsz);
}

/*
 * The run.
 */

/* A free connection, one with a socket first; -1 when none is free. */
static int64_t
ld_conn_take(struct ld_run *run)
{
	if (run->nfree_open > 0)
		return run->free_open[--run->nfree_open];
	if (run->nfree_closed > 0)
		return run->free_closed[--run->nfree_closed];
	return -1;
}

/* Sends one job on connection ci, reconnecting it if needed. */
static void
ld_start(struct ld_run *run, uint32_t ci, uint32_t job, int64_t now)
{
	struct ld_conn *c = &run->conns[ci];
	uint32_t s = LD_JOB_SHOPPER(job);

	c->shopper = s;
	c->job = job;
	c->attempt = ++run->attempts[s];
	c->sent = 0;
	c->dispatch_us = now;
	c->write_us = 0;
	ld_rsp_reset(&c->rsp);
	if (run->q != NULL)
		ld_queue_render(run, c);
	else {
		c->req = run->arena + run->req_off[s];
		c->req_len = run->req_len[s];
	}
	run->sent++;
	run->inflight++;
	if (c->fd == -1 && ld_conn_open(run, c) == -1) {
		ld_complete(run, c, 0, LD_NE_CONNECT, now);
		return;
	}
	if (!c->connecting)
		ld_conn_send(run, c, now);
}

/*
 * Hands due jobs to free connections: the waiting pages' status polls
 * first (they never queue behind a crowd of joins), then the rest.
 */
static void
ld_dispatch(struct ld_run *run, int64_t now)
{
	int64_t ci;

	while (run->heap_len > 0 && run->heap[0].due_us <= now)
		ld_ready_push(run, ld_heap_pop(run));
	while (run->q != NULL && ld_queue_next_us(run) <= now &&
	    (ci = ld_conn_take(run)) != -1) {
		ld_queue_tick(run, now);
		ld_start(run, (uint32_t)ci, LD_JOB(0, LD_K_POLL), now);
	}
	while (run->ready_len > 0 &&
	    run->sent < (uint64_t)run->o.requests_max &&
	    (ci = ld_conn_take(run)) != -1)
		ld_start(run, (uint32_t)ci, ld_ready_pop(run), now);
}

static void
ld_sweep_timeouts(struct ld_run *run, int64_t now)
{
	int64_t limit = run->o.timeout_ms * 1000;
	size_t i;

	for (i = 0; i < run->nconns; i++) {
		if (run->conns[i].shopper == -1 ||
		    now - run->conns[i].dispatch_us < limit)
			continue;
		ld_conn_close(&run->conns[i]);
		ld_complete(run, &run->conns[i], 0, LD_NE_TIMEOUT, now);
	}
}

static int
ld_wait_events(struct ld_run *run, struct epoll_event *evs, char *buf,
    int64_t wait_us)
{
	int i, n, ms;

	ms = wait_us <= 0 ? 0 : (int)((wait_us + 999) / 1000);
	n = epoll_wait(run->ep, evs, LD_EVENTS_MAX, ms);
	if (n == -1 && errno == EINTR)
		return 0;
	if (n == -1) {
		ld_warn("epoll_wait: %s", strerror(errno));
		return -1;
	}
	for (i = 0; i < n; i++)
		ld_conn_event(run, &evs[i], buf, LD_RECV_BUF);
	return 0;
}

/*
 * Opens every connection before the opening, as the shoppers' browsers
 * are connected while the countdown runs, then waits for the instant.
 */
int
ld_warmup(struct ld_run *run, struct epoll_event *evs, char *buf)
{
	struct timespec ts;
	int64_t now, end, next_reconnect, left;
	size_t i, connecting;
	int err;
	/* With the queue, joining starts now: the opening is its business. */
	int64_t start_at = run->q != NULL ? 0 : run->o.start_at;

	for (i = 0; i < run->nconns; i++)
		if (ld_conn_open(run, &run->conns[i]) == -1)
			run->warm_fails++;
	now = ld_now_us();
	end = now + LD_WARMUP_MAX_US;
	if (start_at != 0) {
		left = start_at * 1000 - ld_unix_us();
		if (left > LD_START_AHEAD_MAX_MS * 1000) {
			ld_warn("--start-at is more than a day ahead");
			return -1;
		}
		if (left < 0)
			ld_warn("--start-at is %.3f s in the past: opening now",
			    (double)-left / 1e6);
		end = now + (left > 0 ? left : 0);
	}
	next_reconnect = now + LD_SECOND_US;
	for (;;) {
		now = ld_now_us();
		if (ld_stop_signal) {
			ld_warn("interrupted before the opening");
			return -1;
		}
		for (i = connecting = 0; i < run->nconns; i++)
			connecting += run->conns[i].connecting;
		if (start_at == 0 && connecting == 0)
			break;
		/* The last 2 ms are slept on the wall clock, to the instant. */
		left = end - now;
		if (left <= 2000)
			break;
		if (ld_wait_events(run, evs, buf,
		    left - 2000 < 100000 ? left - 2000 : 100000) == -1)
			return -1;
		/* A server may drop idle connections during a long wait. */
		if (start_at != 0 && now >= next_reconnect) {
			for (i = 0; i < run->nconns; i++)
				if (run->conns[i].fd == -1 &&
				    ld_conn_open(run, &run->conns[i]) == -1)
					run->warm_fails++;
			next_reconnect = now + LD_SECOND_US;
		}
	}
	if (start_at != 0) {
		ts.tv_sec = (time_t)(start_at / 1000);
		ts.tv_nsec = (long)(start_at % 1000) * 1000000;
		while ((err = clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME,
		    &ts, NULL)) == EINTR)
			if (ld_stop_signal) {
				ld_warn("interrupted before the opening");
				return -1;
			}
		if (err != 0) {
			ld_warn("clock_nanosleep: %s", strerror(err));
			return -1;
		}
	}
	run->t0_us = ld_now_us();
	run->t0_unix_ms = ld_unix_us() / 1000;
	run->deadline_us = run->t0_us + run->o.duration_max * LD_SECOND_US;
	run->prev_us = run->t0_us;
	getrusage(RUSAGE_SELF, &run->ru0);
	/* Reversed, so that connection 0 serves the first shopper. */
	for (i = run->nconns; i-- > 0;)
		ld_conn_free(run, &run->conns[i]);
	if (run->q != NULL)
		return ld_queue_start(run);
	/* People press after their reaction; bots are in the ready queue. */
	for (i = 0; i < run->nshoppers && run->o.react_max_ms > 0; i++)
		if (!ld_is_bot(run, i))
			ld_schedule(run, run->t0_us + ld_react_us(run),
			    (uint32_t)i);
	return 0;
}

int
ld_loop(struct ld_run *run, struct epoll_event *evs, char *buf)
{
	int64_t now, wait_us, next_progress, next_sweep;

	next_progress = run->t0_us + LD_SECOND_US;
	next_sweep = run->t0_us + LD_SWEEP_US;
	for (;;) {
		now = ld_now_us();
		ld_dispatch(run, now);
		if (ld_stop_signal)
			run->stop_reason = "signal";
		else if (now >= run->deadline_us)
			run->stop_reason = "duration-max";
		else if (run->done == run->nshoppers)
			run->stop_reason = "all-finished";
		else if (run->inflight == 0 &&
		    run->sent >= (uint64_t)run->o.requests_max)
			run->stop_reason = "requests-max";
		if (run->stop_reason != NULL)
			break;
		wait_us = run->deadline_us - now;
		if (run->o.progress && next_progress - now < wait_us)
			wait_us = next_progress - now;
		if (run->inflight > 0 && next_sweep - now < wait_us)
			wait_us = next_sweep - now;
		if (run->heap_len > 0 && run->heap[0].due_us - now < wait_us)
			wait_us = run->heap[0].due_us - now;
		if (run->q != NULL && ld_queue_next_us(run) - now < wait_us)
			wait_us = ld_queue_next_us(run) - now;
		if (ld_wait_events(run, evs, buf, wait_us) == -1)
			return -1;
		now = ld_now_us();
		if (now >= next_sweep) {
			ld_sweep_timeouts(run, now);
			next_sweep = now + LD_SWEEP_US;
		}
		if (run->o.progress && now >= next_progress) {
			ld_progress(run, now);
			while (next_progress <= now)
				next_progress += LD_SECOND_US;
		}
	}
	run->end_us = now;
	run->cut = run->inflight;
	return 0;
}

int
ld_run_setup(struct ld_run *run)
{
	size_t i;

	/* A shopper's jobs at once: a bot's joins, or one step. */
	size_t per = run->q != NULL ? (size_t)run->o.bot_joins + 1 : 1;

	/* Purchases are recorded; with the queue, its steps and polls count
	 * towards --requests-max too. */
	run->recs_cap = run->nshoppers * (size_t)(1 + run->o.retries);
	if (run->o.requests_max == 0 && run->q != NULL)
		run->o.requests_max = (int64_t)run->recs_cap *
		    (int64_t)(per + 2) + run->o.poll_rate *
		    (run->o.duration_max + LD_DURATION_MAX_S);
	else if (run->o.requests_max == 0)
		run->o.requests_max = (int64_t)run->recs_cap;
	if (run->q == NULL)
		run->recs_cap = (size_t)run->o.requests_max;
	run->nconns = (size_t)run->o.connections;
	run->ready_cap = run->heap_cap = run->nshoppers * per + 16;
	run->attempts = calloc(run->nshoppers, sizeof(*run->attempts));
	run->outcome = calloc(run->nshoppers, sizeof(*run->outcome));
	run->ready = malloc(run->ready_cap * sizeof(*run->ready));
	run->heap = malloc(run->heap_cap * sizeof(*run->heap));
	run->conns = calloc(run->nconns, sizeof(*run->conns));
	run->free_open = malloc(run->nconns * sizeof(*run->free_open));
	run->free_closed = malloc(run->nconns * sizeof(*run->free_closed));
	run->recs = malloc(run->recs_cap * sizeof(*run->recs));
	if (run->attempts == NULL || run->outcome == NULL ||
	    run->ready == NULL || run->heap == NULL || run->conns == NULL ||
	    run->free_open == NULL || run->free_closed == NULL ||
	    run->recs == NULL) {
		ld_warn("out of memory");
		return -1;
	}
	for (i = 0; i < run->nconns; i++) {
		run->conns[i].fd = -1;
		run->conns[i].shopper = -1;
		if (run->q != NULL &&
		    (run->conns[i].qbuf = malloc(LD_QREQ_MAX)) == NULL) {
			ld_warn("out of memory");
			return -1;
		}
	}
	/* Without the queue, the burst: everyone now, or bots now and people
	 * after their reaction (ld_warmup); the queue starts its own jobs. */
	for (i = 0; i < run->nshoppers && run->q == NULL; i++)
		if (run->o.react_max_ms == 0 || ld_is_bot(run, i))
			ld_ready_push(run, (uint32_t)i);
	if ((run->ep = epoll_create1(EPOLL_CLOEXEC)) == -1) {
		ld_warn("epoll_create1: %s", strerror(errno));
		return -1;
	}
	return 0;
}

void
ld_run_free(struct ld_run *run)
{
	size_t i;

	if (run == NULL)
		return;
	for (i = 0; run->conns != NULL && i < run->nconns; i++) {
		ld_conn_close(&run->conns[i]);
		free(run->conns[i].qbuf);
	}
	ld_queue_free(run->q);
	if (run->ep != -1)
		close(run->ep);
	free(run->arena);
	free(run->req_off);
	free(run->req_len);
	free(run->attempts);
	free(run->outcome);
	free(run->ready);
	free(run->heap);
	free(run->conns);
	free(run->free_open);
	free(run->free_closed);
	free(run->recs);
	free(run);
}

/*
 * The Redis driver's pipelines: many script calls written to each node at
 * once and their replies read in turn, in one call or in two halves for an
 * event loop; what did not run where it was sent runs alone.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "redis_int.h"

/* A pipeline's replies read after its deadline: only those already there. */
static const struct timeval late_timeout = { 0, 1000 };

/* A call of a pipeline ends with the driver's error (its reply NULL). */
static void
call_failed(fs_redis *r, struct fs_redis_call *call)
{
	call->reply = NULL;
	call->err = r->err != FS_REDIS_OK ? r->err : FS_REDIS_ERR_IO;
	snprintf(call->errstr, sizeof(call->errstr), "%s", r->errstr);
}

/* True for an error that says the command did not run there (it may be sent again). */
static int
did_not_run(const fs_redis *r, int n, const char *err)
{
	char addr[FS_REDIS_ADDR_MAX];
	unsigned slot;

	return strncmp(err, "NOSCRIPT", 8) == 0 || fs_redis_is_retryable(err) ||
	    fs_redis_redirect_of(r, n, err, &slot, addr, sizeof(addr)) != FS_REDIS_NO_REDIRECT;
}

/* The calls of node n that were not sent after all: alone, with their retries. */
static void
unsent_on(struct fs_redis_call *calls, size_t ncalls, int n)
{
	for (size_t i = 0; i < ncalls; i++)
		if (calls[i].node == n)
			calls[i].node = -1;
}

/*
 * The pipelined calls of node n, written there at once (their replies are
 * read by pipeline_recv); a call that could not be written gets node -1.
 */
static void
pipeline_send(fs_redis *r, int n, struct fs_redis_call *calls, size_t ncalls, int64_t deadline)
{
	redisContext *c;
	int done = 0;

	if ((c = fs_redis_node_ctx(r, n, deadline)) == NULL) {
		unsent_on(calls, ncalls, n);
		return;
	}
	r->last = n;
	fs_redis_touch(r, n);
	for (size_t i = 0; i < ncalls; i++) {
		if (calls[i].node == n &&
		    redisAppendFormattedCommand(c, calls[i].cmd, (size_t)calls[i].len) != REDIS_OK) {
			/* Out of memory: the context is spent, nothing was written yet. */
			unsent_on(calls, ncalls, n);
			fs_redis_node_drop(r, n);
			return;
		}
	}
	while (!done) {
		if (redisBufferWrite(c, &done) != REDIS_OK) {
			/* Part of it may have gone: each call fails as lost when received. */
			break;
		}
	}
}

/* The replies of node n's pipelined calls, read in turn. */
static void
pipeline_recv(fs_redis *r, int n, struct fs_redis_call *calls, size_t ncalls)
{
	redisContext *c = r->node[n].ctx;
	int lost = c == NULL;

	for (size_t i = 0; i < ncalls; i++) {
		void *reply = NULL;
		redisReply *x;

		if (calls[i].node != n)
			continue;
		if (lost || redisGetReply(c, &reply) != REDIS_OK || reply == NULL) {
			/* Sent, no answer: this call and the rest may have run. */
			if (!lost && c != NULL)
				fs_redis_answer_lost(r, n, c);
			else
				fs_redis_set_err(r, FS_REDIS_ERR_IO, "redis", "the connection of the pipeline is gone");
			lost = 1;
			call_failed(r, &calls[i]);
			calls[i].node = -2;
			continue;
		}
		x = reply;
		if (x->type != REDIS_REPLY_ERROR) {
			calls[i].reply = x;
			calls[i].node = -2;
		} else if (did_not_run(r, n, x->str)) {
			/* Not run there: alone it follows the redirect or loads the script. */
			freeReplyObject(x);
			calls[i].node = -1;
		} else {
			fs_redis_set_err(r, FS_REDIS_ERR_REPLY, "redis error", x->str);
			call_failed(r, &calls[i]);
			freeReplyObject(x);
			calls[i].node = -2;
		}
	}
}

/* Any command but the pipeline's own replies first: they come first on its connections. */
void
fs_redis_settle(fs_redis *r)
{
	if (r->sent.calls != NULL)
		fs_redis_eval_recv(r);
}

void
fs_redis_eval_send(fs_redis *r, struct fs_redis_call *calls, size_t n)
{
	int64_t deadline;
	/* Pipelined only where the route is known now; anything else runs alone. */
	int direct;
	uint64_t nodes = 0;

	fs_redis_settle(r);
	deadline = fs_clock_mono_ms() + r->timeout_ms;
	direct = r->cluster >= 0 && !r->stale && r->multi == 0;
	for (size_t i = 0; i < n; i++) {
		struct fs_redis_call *call = &calls[i];
		const char *args[EVAL_ARGS_MAX + 3];
		char nk[12];

		call->reply = NULL;
		call->err = FS_REDIS_OK;
		call->errstr[0] = '\0';
		call->cmd = NULL;
		call->node = -1;
		if (!direct || call->script < 0 || call->script >= r->nscripts ||
		    r->script[call->script].sha[0] == '\0' || call->argc > EVAL_ARGS_MAX ||
		    call->nkeys < 1 || call->nkeys > call->argc)
			continue;
		call->node = r->cluster == 1 ?
		    r->slot[fs_redis_key_slot(call->argv[0], strlen(call->argv[0]))] :
		    r->home;
		if (call->node == SLOT_UNKNOWN) {
			call->node = -1;
			continue;
		}
		fs_redis_evalsha_args(r, call->script, call->nkeys, call->argc, call->argv, args, nk);
		if ((call->len = redisFormatCommandArgv(&call->cmd, call->argc + 3, args, NULL)) < 0) {
			call->cmd = NULL;
			call->node = -1;
			continue;
		}
		nodes |= (uint64_t)1 << call->node;
	}
	for (int node = 0; node < r->nnodes; node++)
		if (nodes & ((uint64_t)1 << node))
			pipeline_send(r, node, calls, n, deadline);
	for (size_t i = 0; i < n; i++) {
		redisFreeCommand(calls[i].cmd);
		calls[i].cmd = NULL;
	}
	r->sent.calls = calls;
	r->sent.n = n;
	r->sent.nodes = nodes;
	r->sent.deadline = deadline;
}

int
fs_redis_eval_fds(const fs_redis *r, int *fds, int max)
{
	int k = 0;

	if (r->sent.calls == NULL)
		return 0;
	for (int node = 0; node < r->nnodes && k < max; node++)
		if ((r->sent.nodes & ((uint64_t)1 << node)) && r->node[node].ctx != NULL &&
		    r->node[node].ctx->err == 0)
			fds[k++] = r->node[node].ctx->fd;
	return k;
}

int64_t
fs_redis_eval_deadline(const fs_redis *r)
{
	return r->sent.calls != NULL ? r->sent.deadline : 0;
}

void
fs_redis_eval_recv(fs_redis *r)
{
	struct fs_redis_call *calls = r->sent.calls;
	size_t n = r->sent.n;
	uint64_t nodes = r->sent.nodes;

	if (calls == NULL)
		return;
	r->sent.calls = NULL; /* what follows may run commands of its own */
	for (int node = 0; node < r->nnodes; node++) {
		redisContext *c = r->node[node].ctx;
		/* Past the deadline, replies that are not in yet are lost: no second wait. */
		int late = c != NULL && fs_clock_mono_ms() >= r->sent.deadline;

		if ((nodes & ((uint64_t)1 << node)) == 0)
			continue;
		if (late)
			redisSetTimeout(c, late_timeout);
		pipeline_recv(r, node, calls, n);
		if (late && r->node[node].ctx == c)
			redisSetTimeout(c, fs_redis_timeval(r->timeout_ms));
	}
	for (size_t i = 0; i < n; i++) {
		struct fs_redis_call *call = &calls[i];

		if (call->node == -1 &&
		    (call->reply = fs_redis_eval(r, call->script, call->nkeys, call->argc, call->argv)) ==
			NULL)
			call_failed(r, call);
	}
}

void
fs_redis_eval_many(fs_redis *r, struct fs_redis_call *calls, size_t n)
{
	fs_redis_eval_send(r, calls, n);
	fs_redis_eval_recv(r);
}

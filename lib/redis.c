/*
 * The Redis driver's connections (dial, authenticate, reconnect, drop) and
 * its commands: one command or script run where it belongs, with its
 * retries; WAIT; every master. Slot routing and redirects are in
 * redis_cluster.c, pipelines in redis_pipeline.c.
 */
#include "config.h"

#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "clock.h"
#include "keyfile.h"
#include "metrics.h"
#include "redis_int.h"

struct timeval
fs_redis_timeval(int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	return tv;
}

void
fs_redis_set_err(fs_redis *r, enum fs_redis_err e, const char *what, const char *detail)
{
	fs_metrics_count(FS_M_REDIS_ERRORS);
	r->err = e;
	snprintf(r->errstr, sizeof(r->errstr), "%s: %s", what, detail);
}

fs_redis *
fs_redis_new(const char *addrs, const char *user, const char *password)
{
	const char *p = addrs;
	fs_redis *r;

	user = user != NULL ? user : "";
	password = password != NULL ? password : "";
	if (strlen(user) >= sizeof(r->user) || strlen(password) >= sizeof(r->password))
		return NULL;
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	strcpy(r->user, user);
	strcpy(r->password, password);
	/* The seeds are the first nodes. */
	for (;;) {
		size_t len = strcspn(p, ",");

		if (len == 0 || len >= FS_REDIS_ADDR_MAX || r->nnodes >= FS_REDIS_SEEDS_MAX)
			goto fail;
		memcpy(r->node[r->nnodes].addr, p, len);
		r->node[r->nnodes++].addr[len] = '\0';
		if (p[len] == '\0')
			break;
		p += len + 1;
	}
	r->nseeds = r->nnodes;
	/* One socket path: a Redis on this host, not a cluster (whose nodes are host:port). */
	r->cluster = r->nseeds == 1 && r->node[0].addr[0] == '/' ? 0 : -1;
	r->last = -1;
	r->timeout_ms = FS_REDIS_TIMEOUT_MS;
	return r;
fail:
	sodium_memzero(r->password, sizeof(r->password));
	free(r);
	return NULL;
}

fs_redis *
fs_redis_open(const struct fs_cfg *cfg, char *err, size_t errlen)
{
	const char *file = fs_cfg_get(cfg, FS_CFG_REDIS_PASSWORD_FILE);
	char password[FS_REDIS_PASSWORD_MAX] = "";
	fs_redis *r;

	if (*file != '\0' &&
	    fs_keyfile_read_secret(file, password, sizeof(password), err, errlen) != 0)
		return NULL;
	if (*file == '\0' && *fs_cfg_get(cfg, FS_CFG_REDIS_USER) != '\0') {
		snprintf(err, errlen, "FLASHSALE_REDIS_USER is set without FLASHSALE_REDIS_PASSWORD_FILE");
		return NULL;
	}
	r = fs_redis_new(fs_cfg_get(cfg, FS_CFG_REDIS), fs_cfg_get(cfg, FS_CFG_REDIS_USER), password);
	sodium_memzero(password, sizeof(password));
	if (r == NULL)
		snprintf(err, errlen, "redis: out of memory, or FLASHSALE_REDIS(_USER) too long or malformed");
	else
		fs_redis_set_timeout(r, (int)fs_cfg_long(cfg, FS_CFG_REDIS_TIMEOUT_MS)); /* ranged by lib/cfg */
	return r;
}

void
fs_redis_set_timeout(fs_redis *r, int timeout_ms)
{
	r->timeout_ms = timeout_ms > 0 ? timeout_ms : FS_REDIS_TIMEOUT_MS;
	for (int i = 0; i < r->nnodes; i++)
		if (r->node[i].ctx != NULL)
			redisSetTimeout(r->node[i].ctx, fs_redis_timeval(r->timeout_ms));
}

void
fs_redis_free(fs_redis *r)
{
	if (r == NULL)
		return;
	fs_redis_reset(r);
	for (int i = 0; i < r->nscripts; i++)
		free(r->script[i].body);
	free(r->slot);
	sodium_memzero(r->password, sizeof(r->password));
	free(r);
}

/* Drops one node's connection. */
void
fs_redis_node_drop(fs_redis *r, int n)
{
	if (r->node[n].ctx != NULL)
		redisFree(r->node[n].ctx);
	r->node[n].ctx = NULL;
}

void
fs_redis_reset(fs_redis *r)
{
	for (int i = 0; i < r->nnodes; i++)
		fs_redis_node_drop(r, i);
	r->multi = 0;
}

/*
 * True when the server closed the connection since its last answer (say,
 * it restarted): the socket reads as hung up or readable while idle. Seen
 * before a command is sent, so no command is ever lost or sent twice.
 */
static int
went_away(redisContext *c)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN | POLLRDHUP };

	return poll(&pfd, 1, 0) != 0;
}

/*
 * AUTH [user] password on a new connection. Redis's refusal names neither
 * (WRONGPASS ...); neither do we.
 */
static int
authenticate(const fs_redis *like, redisContext *c, char *err, size_t errlen)
{
	const char *argv[3] = { "AUTH" };
	int argc = 1;
	redisReply *reply;
	int rc = -1;

	if (like->password[0] == '\0')
		return 0;
	if (like->user[0] != '\0')
		argv[argc++] = like->user;
	argv[argc++] = like->password;
	if ((reply = redisCommandArgv(c, argc, argv, NULL)) == NULL)
		snprintf(err, errlen, "redis AUTH: %s", c->errstr);
	else if (reply->type == REDIS_REPLY_ERROR)
		snprintf(err, errlen, "redis AUTH as %s: %s",
		    like->user[0] != '\0' ? like->user : "default", reply->str);
	else
		rc = 0;
	freeReplyObject(reply);
	return rc;
}

/*
 * The one way to a node: connects to addr within wait_ms (at most the
 * driver's timeout), sets the driver's timeouts and authenticates.
 */
static redisContext *
dial_addr(const fs_redis *like, const char *addr, int64_t wait_ms, char *err, size_t errlen)
{
	struct timeval tv;
	char host[FS_REDIS_ADDR_MAX];
	const char *colon;
	redisContext *c;

	if (wait_ms > like->timeout_ms)
		wait_ms = like->timeout_ms;
	tv = fs_redis_timeval(wait_ms < 1 ? 1 : (int)wait_ms);
	if (addr[0] == '/') {
		c = redisConnectUnixWithTimeout(addr, tv);
	} else {
		if ((colon = strrchr(addr, ':')) == NULL || (size_t)(colon - addr) >= sizeof(host)) {
			snprintf(err, errlen, "redis address: expected host:port or a socket path");
			return NULL;
		}
		memcpy(host, addr, (size_t)(colon - addr));
		host[colon - addr] = '\0';
		c = redisConnectWithTimeout(host, (int)strtol(colon + 1, NULL, 10), tv);
	}
	if (c == NULL) {
		snprintf(err, errlen, "redis connect: out of memory");
		return NULL;
	}
	if (c->err != 0) {
		snprintf(err, errlen, "redis connect %s: %s", addr, c->errstr);
		redisFree(c);
		return NULL;
	}
	redisSetTimeout(c, fs_redis_timeval(like->timeout_ms));
	if (authenticate(like, c, err, errlen) != 0) {
		redisFree(c);
		return NULL;
	}
	return c;
}

redisContext *
fs_redis_dial(const fs_redis *like, char *err, size_t errlen)
{
	redisContext *c = NULL;

	for (int i = 0; i < like->nseeds && c == NULL; i++)
		c = dial_addr(like, like->node[i].addr, like->timeout_ms, err, errlen);
	return c;
}

/* Node n's connection, (re)made when needed; NULL with err set. */
redisContext *
fs_redis_node_ctx(fs_redis *r, int n, int64_t deadline)
{
	struct fs_redis_node *node = &r->node[n];

	if (node->ctx != NULL && node->ctx->err == 0 && !went_away(node->ctx))
		return node->ctx;
	if (node->ctx != NULL)
		fs_metrics_count(FS_M_REDIS_RECONNECTS);
	fs_redis_node_drop(r, n);
	if ((node->ctx = dial_addr(r, node->addr, deadline - fs_clock_mono_ms(), r->errstr,
		 sizeof(r->errstr))) == NULL) {
		r->err = FS_REDIS_ERR_IO;
		fs_metrics_count(FS_M_REDIS_ERRORS);
	} else {
		node->gen++;
	}
	return node->ctx;
}

/*
 * Commands go to node n's connection: the first since the last
 * fs_redis_wait names the connection whose writes a WAIT must count (a
 * WAIT on another one counts that one's writes, none of the first's).
 */
void
fs_redis_touch(fs_redis *r, int n)
{
	if ((r->touched & ((uint64_t)1 << n)) == 0) {
		r->touched |= (uint64_t)1 << n;
		r->node[n].wrote_gen = r->node[n].gen;
	}
}

/* Sends a formatted command (after ASKING when asking); its reply, or NULL on I/O failure. */
static redisReply *
send_cmd(redisContext *c, int asking, const char *cmd, size_t len)
{
	void *reply = NULL;

	if (asking && redisAppendCommand(c, "ASKING") != REDIS_OK)
		return NULL;
	if (redisAppendFormattedCommand(c, cmd, len) != REDIS_OK)
		return NULL;
	if (asking) {
		if (redisGetReply(c, &reply) != REDIS_OK)
			return NULL;
		freeReplyObject(reply);
	}
	if (redisGetReply(c, &reply) != REDIS_OK)
		return NULL;
	return reply;
}

/* A reply made here ("+OK"), freed by freeReplyObject like any other. */
static redisReply *
ok_reply(fs_redis *r)
{
	redisReader *rd = redisReaderCreate();
	void *reply = NULL;

	if (rd == NULL || redisReaderFeed(rd, "+OK\r\n", 5) != REDIS_OK ||
	    redisReaderGetReply(rd, &reply) != REDIS_OK || reply == NULL)
		fs_redis_set_err(r, FS_REDIS_ERR_REPLY, "redis", "out of memory");
	if (rd != NULL)
		redisReaderFree(rd);
	return reply;
}

/*
 * A command was sent to node n and no answer came: it may have run, so it
 * is never sent again. The connection goes; in a cluster the map gets a
 * fresh look.
 */
void
fs_redis_answer_lost(fs_redis *r, int n, redisContext *c)
{
	fs_redis_set_err(r, FS_REDIS_ERR_IO, "redis", c->err ? c->errstr : "no reply");
	fs_redis_node_drop(r, n);
	fs_metrics_count(FS_M_REDIS_RECONNECTS);
	r->stale = r->cluster == 1;
	r->last = r->cluster == 1 ? -1 : r->last;
}

/* Waits before the next try; the next pause doubles. -1 when past the deadline. */
static int
pause_before_retry(int64_t deadline, int *pause_ms)
{
	int64_t left = deadline - fs_clock_mono_ms();
	struct timespec ts;

	if (left <= 0)
		return -1;
	if (*pause_ms > left)
		*pause_ms = (int)left;
	ts.tv_sec = 0;
	ts.tv_nsec = (long)*pause_ms * 1000000L;
	nanosleep(&ts, NULL);
	*pause_ms = *pause_ms * 2 > PAUSE_MAX_MS ? PAUSE_MAX_MS : *pause_ms * 2;
	return 0;
}

/* Where run stands between its tries of one command. */
struct run_state {
	int64_t deadline;
	int ask;      /* the node an ASK named (-1: none) */
	int pause_ms; /* the next pause before a retry */
	int loaded;   /* the script was loaded on a NOSCRIPT once already */
};

/*
 * In a cluster, the MULTI held back until the first key named its node:
 * sent to node n (connection c) now. 0, or -1 with err set.
 */
static int
multi_now(fs_redis *r, int n, redisContext *c)
{
	redisReply *x;

	if ((x = redisCommand(c, "MULTI")) == NULL) {
		fs_redis_set_err(r, FS_REDIS_ERR_IO, "redis MULTI", c->errstr);
		fs_redis_node_drop(r, n);
		r->multi = 0;
		return -1;
	}
	if (x->type == REDIS_REPLY_ERROR) {
		fs_redis_set_err(r, FS_REDIS_ERR_REPLY, "redis MULTI", x->str);
		freeReplyObject(x);
		r->multi = 0;
		return -1;
	}
	freeReplyObject(x);
	r->multi = 2;
	return 0;
}

/*
 * The node a try of a command goes to and its connection: the map looked
 * at first when it must be. NULL when this try cannot be made: *again
 * says whether another may follow (err set either way).
 */
static redisContext *
try_node(fs_redis *r, struct run_state *st, const char *key, size_t keylen, int *n, int *again)
{
	/* One Redis at one address fails at once when away, as it always did. */
	int retry_away = r->cluster == 1 || r->nseeds > 1;
	redisContext *c;

	*again = 0;
	if ((r->cluster < 0 || r->stale) && r->multi != 2 &&
	    fs_redis_refresh(r, st->deadline) != 0 && r->cluster < 0) {
		*again = retry_away && pause_before_retry(st->deadline, &st->pause_ms) == 0;
		return NULL;
	}
	*n = st->ask >= 0 ? st->ask : fs_redis_route(r, key, keylen);
	if ((c = fs_redis_node_ctx(r, *n, st->deadline)) == NULL) {
		/* Not sent: the node may have died; another may own the slot soon. */
		if (!retry_away || r->multi == 2 || pause_before_retry(st->deadline, &st->pause_ms) != 0)
			return NULL;
		*again = 1;
		r->stale = 1;
		if (r->last == *n)
			r->last = -1; /* commands without a key go to a live master */
	}
	return c;
}

/*
 * An error reply from node n (connection c) to a command: what can be
 * healed is (a script the node lacks loaded, a redirect followed, a
 * passing state waited out) and the command is tried again (1); otherwise
 * the error stands (0, err set). The reply is freed.
 */
static int
after_error(fs_redis *r, struct run_state *st, int n, redisContext *c, redisReply *reply,
    enum cmd_kind kind, int script)
{
	char addr[FS_REDIS_ADDR_MAX];
	int was_ask = st->ask, m;
	unsigned slot;
	redisReply *x;

	st->ask = -1;
	if (r->multi == 2 || kind == CMD_ENDTX) {
		/* Inside a transaction nothing is followed: EXEC will refuse. */
	} else if (script >= 0 && !st->loaded && strncmp(reply->str, "NOSCRIPT", 8) == 0) {
		/* The node lacks the script (new, restarted, promoted): load it there. */
		freeReplyObject(reply);
		x = redisCommand(c, "SCRIPT LOAD %s", r->script[script].body);
		st->loaded = 1;
		if (x == NULL) {
			fs_redis_set_err(r, FS_REDIS_ERR_IO, "redis SCRIPT LOAD", c->errstr);
			fs_redis_node_drop(r, n);
			return 0;
		}
		freeReplyObject(x);
		st->ask = was_ask;
		return 1;
	} else {
		switch (fs_redis_redirect_of(r, n, reply->str, &slot, addr, sizeof(addr))) {
		case FS_REDIS_MOVED:
			if ((m = fs_redis_node_at(r, addr)) >= 0) {
				fs_redis_moved(r, slot, m);
				freeReplyObject(reply);
				return 1;
			}
			break;
		case FS_REDIS_ASK:
			if ((st->ask = fs_redis_node_at(r, addr)) >= 0) {
				freeReplyObject(reply);
				return 1;
			}
			break;
		default:
			if (fs_redis_is_retryable(reply->str)) {
				fs_redis_set_err(r, FS_REDIS_ERR_IO, "redis", reply->str);
				freeReplyObject(reply);
				if (pause_before_retry(st->deadline, &st->pause_ms) != 0)
					return 0;
				r->stale = r->cluster == 1;
				return 1;
			}
			break;
		}
	}
	fs_redis_set_err(r, FS_REDIS_ERR_REPLY, "redis error", reply->str);
	freeReplyObject(reply);
	return 0;
}

/*
 * Runs a formatted command where it belongs, following redirects and
 * retrying what never ran (see the header), within r->timeout_ms and
 * FS_REDIS_ATTEMPTS_MAX tries. script >= 0: the command is that script's
 * EVALSHA, loaded on the node on NOSCRIPT. The reply, or NULL with err set.
 */
static redisReply *
run(fs_redis *r, const char *cmd, size_t len, enum cmd_kind kind, const char *key, size_t keylen,
    int script)
{
	struct run_state st = { fs_clock_mono_ms() + r->timeout_ms, -1, PAUSE_FIRST_MS, 0 };

	fs_redis_settle(r);
	r->err = FS_REDIS_OK;
	r->errstr[0] = '\0';
	for (int attempt = 0; attempt < FS_REDIS_ATTEMPTS_MAX && fs_clock_mono_ms() < st.deadline;
	     attempt++) {
		redisContext *c;
		redisReply *reply;
		int n = -1, again;

		if ((c = try_node(r, &st, key, keylen, &n, &again)) == NULL) {
			if (again)
				continue;
			break;
		}
		if (r->multi == 1 && multi_now(r, n, c) != 0)
			return NULL;
		r->last = n;
		fs_redis_touch(r, n);
		if ((reply = send_cmd(c, st.ask >= 0, cmd, len)) == NULL) {
			fs_redis_answer_lost(r, n, c);
			r->multi = 0;
			return NULL;
		}
		if (kind == CMD_ENDTX)
			r->multi = 0;
		if (reply->type != REDIS_REPLY_ERROR) {
			if (kind == CMD_MULTI)
				r->multi = 2;
			r->err = FS_REDIS_OK;
			r->errstr[0] = '\0';
			return reply;
		}
		if (!after_error(r, &st, n, c, reply, kind, script))
			return NULL;
	}
	if (r->err == FS_REDIS_OK)
		fs_redis_set_err(r, FS_REDIS_ERR_IO, "redis", "no node took the command in time");
	r->err = FS_REDIS_ERR_IO;
	return NULL;
}

/* Runs a formatted command; the reply, or NULL with err set. */
static redisReply *
run_formatted(fs_redis *r, const char *cmd, size_t len, int script)
{
	const char *key;
	size_t keylen;
	enum cmd_kind kind = fs_redis_cmd_kind(cmd, len, &key, &keylen);

	if (kind == CMD_MULTI && r->multi == 0) {
		/* A cluster learns the transaction's node from its first key. */
		if (r->cluster < 0)
			fs_redis_refresh(r, fs_clock_mono_ms() + r->timeout_ms);
		if (r->cluster == 1) {
			r->multi = 1;
			return ok_reply(r);
		}
	}
	return run(r, cmd, len, kind, key, keylen, script);
}

/* Runs a command given as arguments (script >= 0: its EVALSHA); see run_formatted. */
static redisReply *
run_argv(fs_redis *r, int argc, const char **argv, const size_t *argvlen, int script)
{
	char *cmd = NULL;
	long long len = redisFormatCommandArgv(&cmd, argc, argv, argvlen);
	redisReply *reply;

	if (len < 0) {
		fs_redis_set_err(r, FS_REDIS_ERR_REPLY, "redis", "out of memory");
		return NULL;
	}
	reply = run_formatted(r, cmd, (size_t)len, script);
	redisFreeCommand(cmd);
	return reply;
}

redisReply *
fs_redis_argv(fs_redis *r, int argc, const char **argv, const size_t *argvlen)
{
	return run_argv(r, argc, argv, argvlen, -1);
}

redisReply *
fs_redis_command(fs_redis *r, const char *fmt, ...)
{
	char *cmd = NULL;
	redisReply *reply;
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = redisvFormatCommand(&cmd, fmt, ap);
	va_end(ap);
	if (len < 0) {
		fs_redis_set_err(r, FS_REDIS_ERR_REPLY, "redis", "bad format, or out of memory");
		return NULL;
	}
	reply = run_formatted(r, cmd, (size_t)len, -1);
	redisFreeCommand(cmd);
	return reply;
}

int
fs_redis_script_load(fs_redis *r, const char *path)
{
	FILE *fp = NULL;
	char *body = NULL;
	size_t n;
	int idx = -1;

	if (r->nscripts >= FS_REDIS_SCRIPTS_MAX) {
		fs_redis_set_err(r, FS_REDIS_ERR_REPLY, "redis script", "too many scripts");
		goto fail;
	}
	if ((fp = fopen(path, "r")) == NULL) {
		fs_redis_set_err(r, FS_REDIS_ERR_REPLY, "redis script: cannot open", path);
		goto fail;
	}
	if ((body = malloc(FS_REDIS_SCRIPT_MAX + 1)) == NULL) {
		fs_redis_set_err(r, FS_REDIS_ERR_REPLY, "redis script", "out of memory");
		goto fail;
	}
	n = fread(body, 1, FS_REDIS_SCRIPT_MAX + 1, fp);
	if (n > FS_REDIS_SCRIPT_MAX || ferror(fp)) {
		fs_redis_set_err(r, FS_REDIS_ERR_REPLY, "redis script: too big or unreadable", path);
		goto fail;
	}
	body[n] = '\0';
	r->script[r->nscripts].body = body;
	r->script[r->nscripts].sha[0] = '\0';
	body = NULL;
	idx = r->nscripts++;
fail:
	free(body);
	if (fp != NULL)
		fclose(fp);
	return idx;
}

/*
 * Sends the script text to the node of key (the script's first key, or
 * none); Redis answers with the SHA-1 that EVALSHA names.
 */
static int
script_send(fs_redis *r, int idx, const char *key)
{
	char *cmd = NULL;
	int len = redisFormatCommand(&cmd, "SCRIPT LOAD %s", r->script[idx].body);
	redisReply *reply;

	if (len < 0) {
		fs_redis_set_err(r, FS_REDIS_ERR_REPLY, "redis script", "out of memory");
		return -1;
	}
	reply = run(r, cmd, (size_t)len, key != NULL ? CMD_KEYED : CMD_KEYLESS, key,
	    key != NULL ? strlen(key) : 0, -1);
	redisFreeCommand(cmd);
	if (reply == NULL)
		return -1;
	if (reply->type != REDIS_REPLY_STRING || reply->len != 40) {
		fs_redis_set_err(r, FS_REDIS_ERR_REPLY, "redis script", "unexpected SCRIPT LOAD reply");
		freeReplyObject(reply);
		return -1;
	}
	memcpy(r->script[idx].sha, reply->str, 41);
	freeReplyObject(reply);
	return 0;
}

/* EVALSHA <sha> <nkeys> argv...: a loaded script's call, argc + 3 words in args. */
void
fs_redis_evalsha_args(const fs_redis *r, int idx, int nkeys, int argc, const char **argv,
    const char *args[EVAL_ARGS_MAX + 3], char nk[12])
{
	snprintf(nk, 12, "%d", nkeys);
	args[0] = "EVALSHA";
	args[1] = r->script[idx].sha;
	args[2] = nk;
	memcpy(args + 3, argv, sizeof(*argv) * (size_t)argc);
}

redisReply *
fs_redis_eval(fs_redis *r, int idx, int nkeys, int argc, const char **argv)
{
	const char *args[EVAL_ARGS_MAX + 3];
	char nk[12];

	if (idx < 0 || idx >= r->nscripts || argc > EVAL_ARGS_MAX || nkeys > argc || nkeys < 0) {
		fs_redis_set_err(r, FS_REDIS_ERR_REPLY, "redis eval", "bad arguments");
		return NULL;
	}
	if (r->script[idx].sha[0] == '\0' && script_send(r, idx, nkeys > 0 ? argv[0] : NULL) != 0)
		return NULL;
	fs_redis_evalsha_args(r, idx, nkeys, argc, argv, args, nk);
	return run_argv(r, argc + 3, args, NULL, idx);
}

/* WAIT on node n: how many replicas acknowledged, or -1 with err set. */
static long
wait_on(fs_redis *r, int n, int numreplicas, int timeout_ms)
{
	redisContext *c = r->node[n].ctx;
	redisReply *x;
	long acked = -1;

	/*
	 * A connection lost since the write: what it wrote may be lost too, and
	 * a WAIT on the connection that replaced it (its own write offset 0)
	 * would count none of it.
	 */
	if (c == NULL || c->err != 0 || r->node[n].gen != r->node[n].wrote_gen) {
		fs_redis_set_err(r, FS_REDIS_ERR_IO, "redis WAIT", "the connection of the write is gone");
		return -1;
	}
	if ((x = redisCommand(c, "WAIT %d %d", numreplicas, timeout_ms)) == NULL) {
		fs_redis_set_err(r, FS_REDIS_ERR_IO, "redis WAIT", c->errstr);
		fs_redis_node_drop(r, n);
		return -1;
	}
	if (x->type == REDIS_REPLY_INTEGER)
		acked = (long)x->integer;
	else
		fs_redis_set_err(r, FS_REDIS_ERR_REPLY, "redis WAIT",
		    x->type == REDIS_REPLY_ERROR ? x->str : "unexpected reply");
	freeReplyObject(x);
	return acked;
}

long
fs_redis_wait(fs_redis *r, int numreplicas, int timeout_ms)
{
	uint64_t touched;
	long fewest = -1;

	fs_redis_settle(r);
	touched = r->touched;
	/* The answer must come before the connection's own timeout. */
	if (timeout_ms > r->timeout_ms - FS_REDIS_WAIT_MARGIN_MS)
		timeout_ms = r->timeout_ms - FS_REDIS_WAIT_MARGIN_MS;
	r->touched = 0;
	for (int n = 0; n < r->nnodes; n++) {
		long acked;

		if ((touched & ((uint64_t)1 << n)) == 0)
			continue;
		if ((acked = wait_on(r, n, numreplicas, timeout_ms)) < 0)
			return -1;
		if (fewest < 0 || acked < fewest)
			fewest = acked;
	}
	if (fewest < 0)
		fs_redis_set_err(r, FS_REDIS_ERR_REPLY, "redis WAIT", "no command to wait for");
	return fewest;
}

int
fs_redis_masters(fs_redis *r)
{
	fs_redis_settle(r);
	/* One socket path is one Redis for good (a MOVED would say otherwise). */
	if ((r->cluster != 0 || r->nseeds > 1) &&
	    fs_redis_refresh(r, fs_clock_mono_ms() + r->timeout_ms) != 0 && r->cluster < 0)
		return -1;
	return r->cluster == 1 ? r->nmasters : 1;
}

redisReply *
fs_redis_master_argv(fs_redis *r, int master, int argc, const char **argv, const size_t *argvlen)
{
	int n;
	redisContext *c;
	redisReply *x;

	fs_redis_settle(r);
	n = r->cluster != 1 ? r->home : master < r->nmasters ? r->master[master] : -1;
	if (n < 0 || master < 0) {
		fs_redis_set_err(r, FS_REDIS_ERR_REPLY, "redis", "no such master");
		return NULL;
	}
	if ((c = fs_redis_node_ctx(r, n, fs_clock_mono_ms() + r->timeout_ms)) == NULL)
		return NULL;
	if ((x = redisCommandArgv(c, argc, argv, argvlen)) == NULL) {
		fs_redis_set_err(r, FS_REDIS_ERR_IO, "redis", c->errstr);
		fs_redis_node_drop(r, n);
		return NULL;
	}
	if (x->type == REDIS_REPLY_ERROR) {
		fs_redis_set_err(r, FS_REDIS_ERR_REPLY, "redis error", x->str);
		freeReplyObject(x);
		return NULL;
	}
	r->err = FS_REDIS_OK;
	r->errstr[0] = '\0';
	return x;
}

#include "config.h"

#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <sodium.h>

#include "clock.h"
#include "keyfile.h"
#include "metrics.h"
#include "redis.h"

/* Bounded waits: a stuck Redis must turn into a 503, not a hung handler. */
static const struct timeval redis_timeout = { FS_REDIS_TIMEOUT_MS / 1000,
	(FS_REDIS_TIMEOUT_MS % 1000) * 1000 };

/* A pipeline's replies read after its deadline: only those already there. */
static const struct timeval late_timeout = { 0, 1000 };

#define SLOT_UNKNOWN 0xff
#define PAUSE_FIRST_MS 5 /* the first pause before a retry (TRYAGAIN, unreachable) */
#define PAUSE_MAX_MS 100 /* pauses double up to this */

/* What a command is to the router (see the header's "Routing"). */
enum cmd_kind {
	CMD_KEYED,   /* its key decides the node */
	CMD_KEYLESS, /* the node of the previous command */
	CMD_MULTI,
	CMD_ENDTX,   /* EXEC, DISCARD */
};

static void settle(fs_redis *);

static void
set_err(fs_redis *r, enum fs_redis_err e, const char *what, const char *detail)
{
	fs_metrics_count(FS_M_REDIS_ERRORS);
	r->err = e;
	snprintf(r->errstr, sizeof(r->errstr), "%s: %s", what, detail);
}

uint16_t
fs_redis_crc16(const char *buf, size_t len)
{
	uint16_t crc = 0;

	/* CRC-16/XMODEM (polynomial 0x1021, initial 0), the one of cluster.c. */
	for (size_t i = 0; i < len; i++) {
		crc ^= (uint16_t)((unsigned char)buf[i] << 8);
		for (int b = 0; b < 8; b++)
			crc = (crc & 0x8000) ? (uint16_t)((crc << 1) ^ 0x1021) : (uint16_t)(crc << 1);
	}
	return crc;
}

unsigned
fs_redis_key_slot(const char *key, size_t len)
{
	const char *open = memchr(key, '{', len), *close;

	/* The first '{' and the first '}' after it, with something between. */
	if (open != NULL &&
	    (close = memchr(open + 1, '}', len - (size_t)(open + 1 - key))) != NULL &&
	    close > open + 1) {
		key = open + 1;
		len = (size_t)(close - key);
	}
	return fs_redis_crc16(key, len) & (FS_REDIS_SLOTS - 1);
}

enum fs_redis_redirect
fs_redis_parse_redirect(const char *err, unsigned *slot, char *addr, size_t addrlen)
{
	enum fs_redis_redirect kind;
	const char *p, *colon;
	char *end;
	unsigned long n;

	if (strncmp(err, "MOVED ", 6) == 0) {
		kind = FS_REDIS_MOVED;
		p = err + 6;
	} else if (strncmp(err, "ASK ", 4) == 0) {
		kind = FS_REDIS_ASK;
		p = err + 4;
	} else {
		return FS_REDIS_NO_REDIRECT;
	}
	if (*p < '0' || *p > '9')
		return FS_REDIS_NO_REDIRECT;
	n = strtoul(p, &end, 10);
	if (n >= FS_REDIS_SLOTS || *end != ' ')
		return FS_REDIS_NO_REDIRECT;
	p = end + 1;
	if ((colon = strrchr(p, ':')) == NULL || colon[1] < '0' || colon[1] > '9' ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1) || strlen(p) >= addrlen)
		return FS_REDIS_NO_REDIRECT;
	*slot = (unsigned)n;
	strcpy(addr, p);
	return kind;
}

/* The node of addr, added when new; -1 when the table is full. */
static int
node_of(fs_redis *r, const char *addr)
{
	for (int i = 0; i < r->nnodes; i++)
		if (strcmp(r->node[i].addr, addr) == 0)
			return i;
	if (r->nnodes >= FS_REDIS_NODES_MAX || strlen(addr) >= FS_REDIS_ADDR_MAX)
		return -1;
	snprintf(r->node[r->nnodes].addr, FS_REDIS_ADDR_MAX, "%s", addr);
	r->node[r->nnodes].ctx = NULL;
	return r->nnodes++;
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
	return r;
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
static void
node_drop(fs_redis *r, int n)
{
	if (r->node[n].ctx != NULL)
		redisFree(r->node[n].ctx);
	r->node[n].ctx = NULL;
}

void
fs_redis_reset(fs_redis *r)
{
	for (int i = 0; i < r->nnodes; i++)
		node_drop(r, i);
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
	struct timeval tv = redis_timeout;
	char host[FS_REDIS_ADDR_MAX];
	const char *colon;
	redisContext *c;

	if (wait_ms < FS_REDIS_TIMEOUT_MS) {
		wait_ms = wait_ms < 1 ? 1 : wait_ms;
		tv.tv_sec = wait_ms / 1000;
		tv.tv_usec = (wait_ms % 1000) * 1000;
	}
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
	redisSetTimeout(c, redis_timeout);
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
		c = dial_addr(like, like->node[i].addr, FS_REDIS_TIMEOUT_MS, err, errlen);
	return c;
}

/* Node n's connection, (re)made when needed; NULL with err set. */
static redisContext *
node_ctx(fs_redis *r, int n, int64_t deadline)
{
	struct fs_redis_node *node = &r->node[n];

	if (node->ctx != NULL && node->ctx->err == 0 && !went_away(node->ctx))
		return node->ctx;
	if (node->ctx != NULL)
		fs_metrics_count(FS_M_REDIS_RECONNECTS);
	node_drop(r, n);
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
static void
touch(fs_redis *r, int n)
{
	if ((r->touched & ((uint64_t)1 << n)) == 0) {
		r->touched |= (uint64_t)1 << n;
		r->node[n].wrote_gen = r->node[n].gen;
	}
}

/* "host:port" of a CLUSTER SLOTS node entry; an empty or "?" host is asked's. */
static int
slots_addr(const redisReply *e, const char *asked, char *out, size_t outlen)
{
	const char *host, *colon = strrchr(asked, ':');
	int n, hostlen;

	if (e->type != REDIS_REPLY_ARRAY || e->elements < 2 ||
	    e->element[0]->type != REDIS_REPLY_STRING || e->element[1]->type != REDIS_REPLY_INTEGER)
		return -1;
	host = e->element[0]->str;
	hostlen = (int)e->element[0]->len;
	if ((hostlen == 0 || strcmp(host, "?") == 0) && asked[0] != '/' && colon != NULL) {
		host = asked;
		hostlen = (int)(colon - asked);
	}
	n = snprintf(out, outlen, "%.*s:%lld", hostlen, host, e->element[1]->integer);
	return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

/* Marks node n as a master once. */
static void
add_master(fs_redis *r, int n)
{
	for (int i = 0; i < r->nmasters; i++)
		if (r->master[i] == n)
			return;
	r->master[r->nmasters++] = (unsigned char)n;
}

/* Turns the map into a cluster's: every slot unknown (or on node n), n a master. */
static int
become_cluster(fs_redis *r, int n)
{
	if (r->slot == NULL && (r->slot = malloc(FS_REDIS_SLOTS)) == NULL)
		return -1;
	memset(r->slot, n >= 0 ? n : SLOT_UNKNOWN, FS_REDIS_SLOTS);
	r->nmasters = 0;
	if (n >= 0)
		add_master(r, n);
	r->cluster = 1;
	return 0;
}

/* The slot map from one CLUSTER SLOTS reply of node asked; 0 or -1. */
static int
map_from(fs_redis *r, const redisReply *x, int asked)
{
	char addr[FS_REDIS_ADDR_MAX];

	if (become_cluster(r, -1) != 0)
		return -1;
	for (size_t i = 0; i < x->elements; i++) {
		const redisReply *e = x->element[i];
		long long lo, hi;
		int n;

		if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
		    e->element[0]->type != REDIS_REPLY_INTEGER ||
		    e->element[1]->type != REDIS_REPLY_INTEGER ||
		    slots_addr(e->element[2], r->node[asked].addr, addr, sizeof(addr)) != 0 ||
		    (n = node_of(r, addr)) < 0)
			continue;
		lo = e->element[0]->integer;
		hi = e->element[1]->integer;
		if (lo < 0 || hi >= FS_REDIS_SLOTS || lo > hi)
			continue;
		memset(r->slot + lo, n, (size_t)(hi - lo + 1));
		add_master(r, n);
	}
	return 0;
}

/*
 * Asks the nodes (connected ones first, then the others) for CLUSTER
 * SLOTS. An array is the map of a cluster; an error reply (cluster support
 * disabled, or no right to ask) from a server never seen as a cluster
 * makes it the one Redis. 0 once a node answered, -1 with err set.
 */
static int
refresh(fs_redis *r, int64_t deadline)
{
	const char *argv[] = { "CLUSTER", "SLOTS" };

	for (int pass = 0; pass < 2; pass++) {
		for (int n = 0; n < r->nnodes && fs_clock_mono_ms() < deadline; n++) {
			redisContext *c;
			redisReply *x;

			if ((pass == 0) != (r->node[n].ctx != NULL) || (c = node_ctx(r, n, deadline)) == NULL)
				continue;
			if ((x = redisCommandArgv(c, 2, argv, NULL)) == NULL) {
				node_drop(r, n);
				continue;
			}
			if (x->type == REDIS_REPLY_ARRAY && map_from(r, x, n) == 0) {
				freeReplyObject(x);
				r->stale = 0;
				return 0;
			}
			freeReplyObject(x);
			if (r->cluster == 1)
				continue; /* a node of the cluster that cannot tell: ask another */
			r->cluster = 0;
			r->home = n;
			r->stale = 0;
			return 0;
		}
	}
	if (r->cluster == 1)
		r->stale = 0; /* no node would tell: keep the map, MOVED mends it */
	if (r->err == FS_REDIS_OK)
		set_err(r, FS_REDIS_ERR_IO, "redis", "no node answered CLUSTER SLOTS");
	return -1;
}

/* Reads argument i of a command in the protocol's format; 0 or -1. */
static int
resp_arg(const char *cmd, size_t len, int i, const char **arg, size_t *arglen)
{
	const char *p = cmd, *end = cmd + len;
	char *e;
	long n = 0;

	if (len < 4 || *p != '*' || (n = strtol(p + 1, &e, 10)) <= i)
		return -1;
	p = e + 2;
	for (int k = 0; k <= i; k++) {
		long alen;

		if (p >= end || *p != '$' || (alen = strtol(p + 1, &e, 10)) < 0 ||
		    e + 2 + alen > end)
			return -1;
		*arg = e + 2;
		*arglen = (size_t)alen;
		p = e + 2 + alen + 2;
	}
	return 0;
}

static int
is_word(const char *arg, size_t len, const char *word)
{
	return len == strlen(word) && strncasecmp(arg, word, len) == 0;
}

/* Commands whose first argument is no key (their node: the previous one's). */
static const char *const keyless[] = { "PING", "INFO", "UNWATCH", "PUBLISH", "WAIT", "SCRIPT",
	"CLUSTER", "TIME", "DBSIZE", "FLUSHALL", "FLUSHDB", "CLIENT", "CONFIG", "KEYS", "SCAN",
	"SUBSCRIBE", "ECHO", "SELECT", "ROLE", "ASKING", "READONLY", "ACL", "COMMAND", "LASTSAVE",
	"BGSAVE", "SAVE", "SHUTDOWN", "DEBUG", "MEMORY", "SLOWLOG", "LATENCY" };

/* The kind of a formatted command and, for a keyed one, its key. */
static enum cmd_kind
cmd_kind_of(const char *cmd, size_t len, const char **key, size_t *keylen)
{
	const char *name, *nk;
	size_t namelen, nklen;

	*key = NULL;
	*keylen = 0;
	if (resp_arg(cmd, len, 0, &name, &namelen) != 0)
		return CMD_KEYLESS;
	if (is_word(name, namelen, "MULTI"))
		return CMD_MULTI;
	if (is_word(name, namelen, "EXEC") || is_word(name, namelen, "DISCARD"))
		return CMD_ENDTX;
	for (size_t i = 0; i < sizeof(keyless) / sizeof(keyless[0]); i++)
		if (is_word(name, namelen, keyless[i]))
			return CMD_KEYLESS;
	if (is_word(name, namelen, "EVALSHA") || is_word(name, namelen, "EVAL")) {
		if (resp_arg(cmd, len, 2, &nk, &nklen) != 0 || nklen == 0 || *nk == '0' ||
		    resp_arg(cmd, len, 3, key, keylen) != 0)
			return CMD_KEYLESS;
		return CMD_KEYED;
	}
	return resp_arg(cmd, len, 1, key, keylen) == 0 ? CMD_KEYED : CMD_KEYLESS;
}

/* The node a command goes to. */
static int
route(const fs_redis *r, const char *key, size_t keylen)
{
	int n;

	if (r->multi == 2 && r->last >= 0)
		return r->last;
	if (r->cluster != 1)
		return r->home;
	if (key != NULL && (n = r->slot[fs_redis_key_slot(key, keylen)]) != SLOT_UNKNOWN)
		return n;
	if (r->last >= 0)
		return r->last;
	return r->nmasters > 0 ? r->master[0] : 0;
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
		set_err(r, FS_REDIS_ERR_REPLY, "redis", "out of memory");
	if (rd != NULL)
		redisReaderFree(rd);
	return reply;
}

/*
 * A command was sent to node n and no answer came: it may have run, so it
 * is never sent again. The connection goes; in a cluster the map gets a
 * fresh look.
 */
static void
answer_lost(fs_redis *r, int n, redisContext *c)
{
	set_err(r, FS_REDIS_ERR_IO, "redis", c->err ? c->errstr : "no reply");
	node_drop(r, n);
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

static int
is_retryable(const char *err)
{
	return strncmp(err, "TRYAGAIN", 8) == 0 || strncmp(err, "CLUSTERDOWN", 11) == 0 ||
	    strncmp(err, "LOADING", 7) == 0;
}

/* A redirect from node n, its address made whole (":port" is on n's host). */
static enum fs_redis_redirect
redirect_of(const fs_redis *r, int n, const char *err, unsigned *slot, char *addr, size_t addrlen)
{
	enum fs_redis_redirect kind = fs_redis_parse_redirect(err, slot, addr, addrlen);
	const char *colon = strrchr(r->node[n].addr, ':');
	char port[16];

	if (kind == FS_REDIS_NO_REDIRECT || addr[0] != ':')
		return kind;
	snprintf(port, sizeof(port), "%s", addr);
	if (r->node[n].addr[0] == '/' || colon == NULL ||
	    (size_t)(colon - r->node[n].addr) + strlen(port) >= addrlen)
		return FS_REDIS_NO_REDIRECT;
	snprintf(addr, addrlen, "%.*s%s", (int)(colon - r->node[n].addr), r->node[n].addr, port);
	return kind;
}

/* A MOVED: the slot is on addr now, and the map needs a fresh look. */
static void
moved(fs_redis *r, unsigned slot, int n)
{
	if (r->cluster != 1 && become_cluster(r, r->home) != 0)
		return;
	r->slot[slot] = (unsigned char)n;
	add_master(r, n);
	r->stale = 1;
}

/*
 * Runs a formatted command where it belongs, following redirects and
 * retrying what never ran (see the header), within FS_REDIS_TIMEOUT_MS and
 * FS_REDIS_ATTEMPTS_MAX tries. script >= 0: the command is that script's
 * EVALSHA, loaded on the node on NOSCRIPT. The reply, or NULL with err set.
 */
static redisReply *
run(fs_redis *r, const char *cmd, size_t len, enum cmd_kind kind, const char *key, size_t keylen,
    int script)
{
	int64_t deadline = fs_clock_mono_ms() + FS_REDIS_TIMEOUT_MS;
	char addr[FS_REDIS_ADDR_MAX];
	int ask = -1, was_ask, pause_ms = PAUSE_FIRST_MS, loaded = 0;
	unsigned slot;

	settle(r);
	r->err = FS_REDIS_OK;
	r->errstr[0] = '\0';
	for (int attempt = 0; attempt < FS_REDIS_ATTEMPTS_MAX && fs_clock_mono_ms() < deadline;
	     attempt++) {
		/* One Redis at one address fails at once when away, as it always did. */
		int retry_away = r->cluster == 1 || r->nseeds > 1;
		redisContext *c;
		redisReply *reply, *x;
		int n;

		if ((r->cluster < 0 || r->stale) && r->multi != 2 && refresh(r, deadline) != 0 &&
		    r->cluster < 0) {
			if (!retry_away || pause_before_retry(deadline, &pause_ms) != 0)
				break;
			continue;
		}
		n = ask >= 0 ? ask : route(r, key, keylen);
		if ((c = node_ctx(r, n, deadline)) == NULL) {
			/* Not sent: the node may have died; another may own the slot soon. */
			if (!retry_away || r->multi == 2 || pause_before_retry(deadline, &pause_ms) != 0)
				break;
			r->stale = 1;
			if (r->last == n)
				r->last = -1; /* commands without a key go to a live master */
			continue;
		}
		if (r->multi == 1) {
			if ((x = redisCommand(c, "MULTI")) == NULL) {
				set_err(r, FS_REDIS_ERR_IO, "redis MULTI", c->errstr);
				node_drop(r, n);
				r->multi = 0;
				return NULL;
			}
			if (x->type == REDIS_REPLY_ERROR) {
				set_err(r, FS_REDIS_ERR_REPLY, "redis MULTI", x->str);
				freeReplyObject(x);
				r->multi = 0;
				return NULL;
			}
			freeReplyObject(x);
			r->multi = 2;
		}
		r->last = n;
		touch(r, n);
		if ((reply = send_cmd(c, ask >= 0, cmd, len)) == NULL) {
			answer_lost(r, n, c);
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
		was_ask = ask;
		ask = -1;
		if (r->multi == 2 || kind == CMD_ENDTX) {
			/* Inside a transaction nothing is followed: EXEC will refuse. */
		} else if (script >= 0 && !loaded && strncmp(reply->str, "NOSCRIPT", 8) == 0) {
			/* The node lacks the script (new, restarted, promoted): load it there. */
			freeReplyObject(reply);
			x = redisCommand(c, "SCRIPT LOAD %s", r->script[script].body);
			loaded = 1;
			if (x == NULL) {
				set_err(r, FS_REDIS_ERR_IO, "redis SCRIPT LOAD", c->errstr);
				node_drop(r, n);
				return NULL;
			}
			freeReplyObject(x);
			ask = was_ask;
			continue;
		} else {
			switch (redirect_of(r, n, reply->str, &slot, addr, sizeof(addr))) {
			case FS_REDIS_MOVED:
				if ((n = node_of(r, addr)) >= 0) {
					moved(r, slot, n);
					freeReplyObject(reply);
					continue;
				}
				break;
			case FS_REDIS_ASK:
				if ((ask = node_of(r, addr)) >= 0) {
					freeReplyObject(reply);
					continue;
				}
				break;
			default:
				if (is_retryable(reply->str)) {
					set_err(r, FS_REDIS_ERR_IO, "redis", reply->str);
					freeReplyObject(reply);
					if (pause_before_retry(deadline, &pause_ms) != 0)
						return NULL;
					r->stale = r->cluster == 1;
					continue;
				}
				break;
			}
		}
		set_err(r, FS_REDIS_ERR_REPLY, "redis error", reply->str);
		freeReplyObject(reply);
		return NULL;
	}
	if (r->err == FS_REDIS_OK)
		set_err(r, FS_REDIS_ERR_IO, "redis", "no node took the command in time");
	r->err = FS_REDIS_ERR_IO;
	return NULL;
}

/* Runs a formatted command; the reply, or NULL with err set. */
static redisReply *
run_formatted(fs_redis *r, const char *cmd, size_t len, int script)
{
	const char *key;
	size_t keylen;
	enum cmd_kind kind = cmd_kind_of(cmd, len, &key, &keylen);

	if (kind == CMD_MULTI && r->multi == 0) {
		/* A cluster learns the transaction's node from its first key. */
		if (r->cluster < 0)
			refresh(r, fs_clock_mono_ms() + FS_REDIS_TIMEOUT_MS);
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
		set_err(r, FS_REDIS_ERR_REPLY, "redis", "out of memory");
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
		set_err(r, FS_REDIS_ERR_REPLY, "redis", "bad format, or out of memory");
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
		set_err(r, FS_REDIS_ERR_REPLY, "redis script", "too many scripts");
		goto fail;
	}
	if ((fp = fopen(path, "r")) == NULL) {
		set_err(r, FS_REDIS_ERR_REPLY, "redis script: cannot open", path);
		goto fail;
	}
	if ((body = malloc(FS_REDIS_SCRIPT_MAX + 1)) == NULL) {
		set_err(r, FS_REDIS_ERR_REPLY, "redis script", "out of memory");
		goto fail;
	}
	n = fread(body, 1, FS_REDIS_SCRIPT_MAX + 1, fp);
	if (n > FS_REDIS_SCRIPT_MAX || ferror(fp)) {
		set_err(r, FS_REDIS_ERR_REPLY, "redis script: too big or unreadable", path);
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
		set_err(r, FS_REDIS_ERR_REPLY, "redis script", "out of memory");
		return -1;
	}
	reply = run(r, cmd, (size_t)len, key != NULL ? CMD_KEYED : CMD_KEYLESS, key,
	    key != NULL ? strlen(key) : 0, -1);
	redisFreeCommand(cmd);
	if (reply == NULL)
		return -1;
	if (reply->type != REDIS_REPLY_STRING || reply->len != 40) {
		set_err(r, FS_REDIS_ERR_REPLY, "redis script", "unexpected SCRIPT LOAD reply");
		freeReplyObject(reply);
		return -1;
	}
	memcpy(r->script[idx].sha, reply->str, 41);
	freeReplyObject(reply);
	return 0;
}

#define EVAL_ARGS_MAX 16

/* EVALSHA <sha> <nkeys> argv...: a loaded script's call, argc + 3 words in args. */
static void
evalsha_args(const fs_redis *r, int idx, int nkeys, int argc, const char **argv,
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
		set_err(r, FS_REDIS_ERR_REPLY, "redis eval", "bad arguments");
		return NULL;
	}
	if (r->script[idx].sha[0] == '\0' && script_send(r, idx, nkeys > 0 ? argv[0] : NULL) != 0)
		return NULL;
	evalsha_args(r, idx, nkeys, argc, argv, args, nk);
	return run_argv(r, argc + 3, args, NULL, idx);
}

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

	return strncmp(err, "NOSCRIPT", 8) == 0 || is_retryable(err) ||
	    redirect_of(r, n, err, &slot, addr, sizeof(addr)) != FS_REDIS_NO_REDIRECT;
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

	if ((c = node_ctx(r, n, deadline)) == NULL) {
		unsent_on(calls, ncalls, n);
		return;
	}
	r->last = n;
	touch(r, n);
	for (size_t i = 0; i < ncalls; i++) {
		if (calls[i].node == n &&
		    redisAppendFormattedCommand(c, calls[i].cmd, (size_t)calls[i].len) != REDIS_OK) {
			/* Out of memory: the context is spent, nothing was written yet. */
			unsent_on(calls, ncalls, n);
			node_drop(r, n);
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
				answer_lost(r, n, c);
			else
				set_err(r, FS_REDIS_ERR_IO, "redis", "the connection of the pipeline is gone");
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
			set_err(r, FS_REDIS_ERR_REPLY, "redis error", x->str);
			call_failed(r, &calls[i]);
			freeReplyObject(x);
			calls[i].node = -2;
		}
	}
}

/* Any command but the pipeline's own replies first: they come first on its connections. */
static void
settle(fs_redis *r)
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

	settle(r);
	deadline = fs_clock_mono_ms() + FS_REDIS_TIMEOUT_MS;
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
		evalsha_args(r, call->script, call->nkeys, call->argc, call->argv, args, nk);
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
			redisSetTimeout(c, redis_timeout);
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
		set_err(r, FS_REDIS_ERR_IO, "redis WAIT", "the connection of the write is gone");
		return -1;
	}
	if ((x = redisCommand(c, "WAIT %d %d", numreplicas, timeout_ms)) == NULL) {
		set_err(r, FS_REDIS_ERR_IO, "redis WAIT", c->errstr);
		node_drop(r, n);
		return -1;
	}
	if (x->type == REDIS_REPLY_INTEGER)
		acked = (long)x->integer;
	else
		set_err(r, FS_REDIS_ERR_REPLY, "redis WAIT",
		    x->type == REDIS_REPLY_ERROR ? x->str : "unexpected reply");
	freeReplyObject(x);
	return acked;
}

long
fs_redis_wait(fs_redis *r, int numreplicas, int timeout_ms)
{
	uint64_t touched;
	long fewest = -1;

	settle(r);
	touched = r->touched;
	/* The answer must come before the connection's own timeout. */
	if (timeout_ms > FS_REDIS_WAIT_MAX_MS)
		timeout_ms = FS_REDIS_WAIT_MAX_MS;
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
		set_err(r, FS_REDIS_ERR_REPLY, "redis WAIT", "no command to wait for");
	return fewest;
}

int
fs_redis_masters(fs_redis *r)
{
	settle(r);
	/* One socket path is one Redis for good (a MOVED would say otherwise). */
	if ((r->cluster != 0 || r->nseeds > 1) &&
	    refresh(r, fs_clock_mono_ms() + FS_REDIS_TIMEOUT_MS) != 0 && r->cluster < 0)
		return -1;
	return r->cluster == 1 ? r->nmasters : 1;
}

redisReply *
fs_redis_master_argv(fs_redis *r, int master, int argc, const char **argv, const size_t *argvlen)
{
	int n;
	redisContext *c;
	redisReply *x;

	settle(r);
	n = r->cluster != 1 ? r->home : master < r->nmasters ? r->master[master] : -1;
	if (n < 0 || master < 0) {
		set_err(r, FS_REDIS_ERR_REPLY, "redis", "no such master");
		return NULL;
	}
	if ((c = node_ctx(r, n, fs_clock_mono_ms() + FS_REDIS_TIMEOUT_MS)) == NULL)
		return NULL;
	if ((x = redisCommandArgv(c, argc, argv, argvlen)) == NULL) {
		set_err(r, FS_REDIS_ERR_IO, "redis", c->errstr);
		node_drop(r, n);
		return NULL;
	}
	if (x->type == REDIS_REPLY_ERROR) {
		set_err(r, FS_REDIS_ERR_REPLY, "redis error", x->str);
		freeReplyObject(x);
		return NULL;
	}
	r->err = FS_REDIS_OK;
	r->errstr[0] = '\0';
	return x;
}

int
fs_redis_is_cluster(const fs_redis *r)
{
	return r->cluster == 1;
}

int
fs_redis_node_of(const fs_redis *r, unsigned slot, char *addr, size_t addrlen)
{
	int n = -1;

	if (r->cluster != 1)
		n = r->home;
	else if (r->slot != NULL && slot < FS_REDIS_SLOTS && r->slot[slot] != SLOT_UNKNOWN)
		n = r->slot[slot];
	if (addr != NULL)
		snprintf(addr, addrlen, "%s", n >= 0 && n < r->nnodes ? r->node[n].addr : "?");
	return n >= 0 && n < r->nnodes ? n : -1;
}

/*
 * The Redis driver's cluster side: the key hashing of Redis Cluster, the
 * slot map (CLUSTER SLOTS), which node a command goes to, and redirects
 * (MOVED, ASK) and the errors worth a retry.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock.h"
#include "redis_int.h"

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
int
fs_redis_node_at(fs_redis *r, const char *addr)
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
		    (n = fs_redis_node_at(r, addr)) < 0)
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
int
fs_redis_refresh(fs_redis *r, int64_t deadline)
{
	const char *argv[] = { "CLUSTER", "SLOTS" };

	for (int pass = 0; pass < 2; pass++) {
		for (int n = 0; n < r->nnodes && fs_clock_mono_ms() < deadline; n++) {
			redisContext *c;
			redisReply *x;

			if ((pass == 0) != (r->node[n].ctx != NULL) || (c = fs_redis_node_ctx(r, n, deadline)) == NULL)
				continue;
			if ((x = redisCommandArgv(c, 2, argv, NULL)) == NULL) {
				fs_redis_node_drop(r, n);
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
		fs_redis_set_err(r, FS_REDIS_ERR_IO, "redis", "no node answered CLUSTER SLOTS");
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
enum cmd_kind
fs_redis_cmd_kind(const char *cmd, size_t len, const char **key, size_t *keylen)
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
int
fs_redis_route(const fs_redis *r, const char *key, size_t keylen)
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

int
fs_redis_is_retryable(const char *err)
{
	return strncmp(err, "TRYAGAIN", 8) == 0 || strncmp(err, "CLUSTERDOWN", 11) == 0 ||
	    strncmp(err, "LOADING", 7) == 0;
}

/* A redirect from node n, its address made whole (":port" is on n's host). */
enum fs_redis_redirect
fs_redis_redirect_of(const fs_redis *r, int n, const char *err, unsigned *slot, char *addr, size_t addrlen)
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
void
fs_redis_moved(fs_redis *r, unsigned slot, int n)
{
	if (r->cluster != 1 && become_cluster(r, r->home) != 0)
		return;
	r->slot[slot] = (unsigned char)n;
	add_master(r, n);
	r->stale = 1;
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

/*
 * Redis driver: a single Redis or a Redis Cluster behind one address list,
 * with connections that reconnect by themselves, authenticate as an ACL
 * user on every (re)connection, and Lua scripts loaded from files and run
 * by EVALSHA with a NOSCRIPT fallback.
 *
 * The address setting is a comma-separated list of seed nodes. One socket
 * path is one Redis on this host, taken as it is. Otherwise, on first use
 * the driver asks a seed for CLUSTER SLOTS: a cluster routes each
 * command by the CRC16 slot of its key (the {hash tag} rule of Redis) to
 * the slot's master; a server without cluster support (or a user without
 * the right to ask) is one Redis and takes every command. Redirects are
 * followed either way: MOVED updates the map (and refreshes it), ASK sends
 * ASKING and retries once on the named node, TRYAGAIN and CLUSTERDOWN are
 * retried after a short pause, and a node that cannot be reached makes the
 * driver refresh the map and try again (a single Redis at one address
 * fails at once, as it always did). Every retry happens within the
 * driver's timeout (timeout_ms: FLASHSALE_REDIS_TIMEOUT_MS, default
 * FS_REDIS_TIMEOUT_MS) of the call's start and FS_REDIS_ATTEMPTS_MAX tries,
 * and a command that was sent and got no answer is never sent again (it
 * may have run). A command's keys must share one slot (one {hash tag}).
 *
 * Routing: a command's key is its first argument (EVALSHA: its first key);
 * commands that name no key (PING, INFO, MULTI, EXEC, PUBLISH, WAIT ...)
 * go to the node of the previous command, so WATCH ... UNWATCH and a
 * MULTI whose commands share one slot stay on one node (in a cluster, MULTI
 * is sent just before the first command that names a key, and the node is
 * kept until EXEC or DISCARD).
 */
#ifndef FS_REDIS_H
#define FS_REDIS_H

#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

#include "cfg.h"

/*
 * How long a command (with its retries) may take before it fails, unless
 * FLASHSALE_REDIS_TIMEOUT_MS says otherwise (lib/cfg bounds it).
 */
#define FS_REDIS_TIMEOUT_MS 1000
/* A WAIT asks for at most the timeout less this: its answer comes within the timeout. */
#define FS_REDIS_WAIT_MARGIN_MS FS_CFG_REDIS_WAIT_MARGIN_MS
#define FS_REDIS_WAIT_MAX_MS (FS_REDIS_TIMEOUT_MS - FS_REDIS_WAIT_MARGIN_MS)
#define FS_REDIS_ATTEMPTS_MAX 8 /* tries of one command, redirects included */
#define FS_REDIS_SCRIPTS_MAX 8
#define FS_REDIS_SCRIPT_MAX (64 * 1024)
#define FS_REDIS_USER_MAX 64      /* bytes in an ACL user name, with the NUL */
#define FS_REDIS_PASSWORD_MAX 256 /* bytes in its password, with the NUL */
#define FS_REDIS_ADDR_MAX 128     /* bytes in one address, with the NUL */
#define FS_REDIS_SEEDS_MAX 16     /* addresses in the address list */
#define FS_REDIS_NODES_MAX 64     /* cluster nodes one driver knows */
#define FS_REDIS_SLOTS 16384

/* What went wrong, in fs_redis.err (0 when nothing did). */
enum fs_redis_err {
	FS_REDIS_OK = 0,
	FS_REDIS_ERR_IO,    /* unreachable, or no answer: worth a retry later */
	FS_REDIS_ERR_REPLY, /* an error reply or bad arguments: a retry will not heal */
	FS_REDIS_ERR__MAX
};

struct fs_redis_node {
	char addr[FS_REDIS_ADDR_MAX]; /* host:port, or a socket path */
	redisContext *ctx;            /* NULL until needed */
	uint64_t gen;       /* counts the connections made to the node: which one ctx is */
	uint64_t wrote_gen; /* the connection commands went to first since the last WAIT */
};

typedef struct fs_redis {
	char user[FS_REDIS_USER_MAX];         /* empty: AUTH with the password only */
	char password[FS_REDIS_PASSWORD_MAX]; /* empty: no AUTH */
	struct fs_redis_node node[FS_REDIS_NODES_MAX]; /* the seeds first, then as learnt */
	int nnodes;
	int nseeds;
	int cluster;            /* -1 not asked yet, 0 one Redis (node home), 1 a cluster */
	int home;               /* one Redis: the seed that answered */
	int stale;              /* the slot map needs a refresh before the next command */
	unsigned char *slot;    /* cluster: slot -> node index (0xff: unknown) */
	unsigned char master[FS_REDIS_NODES_MAX]; /* cluster: node indexes of the masters */
	int nmasters;
	int last;               /* node of the previous command (-1: none) */
	uint64_t touched;       /* nodes commands went to since the last fs_redis_wait */
	int multi;              /* 1 MULTI not sent yet, 2 sent to node last: pinned */
	struct {
		char *body;
		char sha[41];
	} script[FS_REDIS_SCRIPTS_MAX];
	int nscripts;
	int timeout_ms;         /* a command's bound, its connect and reads included */
	int err; /* enum fs_redis_err */
	char errstr[128];
	struct {                /* the pipeline of fs_redis_eval_send, until received */
		struct fs_redis_call *calls;
		size_t n;
		uint64_t nodes;
		int64_t deadline;
	} sent;
} fs_redis;

/*
 * addrs: a comma-separated list of seeds, each a unix socket path (starts
 * with '/') or host:port. user and password (either may be NULL or empty)
 * are sent with AUTH after every connect to any node. Connects lazily.
 * Its timeout is FS_REDIS_TIMEOUT_MS until fs_redis_set_timeout.
 * NULL when out of memory, a value is too long or the list malformed.
 */
fs_redis *fs_redis_new(const char *addrs, const char *user, const char *password);
/*
 * fs_redis_new from FLASHSALE_REDIS, FLASHSALE_REDIS_USER and the password
 * in FLASHSALE_REDIS_PASSWORD_FILE, with FLASHSALE_REDIS_TIMEOUT_MS. NULL
 * with err set (never the secret).
 */
fs_redis *fs_redis_open(const struct fs_cfg *, char *err, size_t errlen);
/* The bound of each command from now on (connections made later use it too), in ms > 0. */
void fs_redis_set_timeout(fs_redis *, int timeout_ms);
/* Closes every connection and wipes the password. */
void fs_redis_free(fs_redis *);
/*
 * A new hiredis connection to the first seed of like that answers,
 * authenticated as like's user, with the driver's timeouts, for a caller
 * that needs a context of its own (a subscriber: a cluster delivers every
 * PUBLISH on every node); NULL with err set. Free it with redisFree.
 */
redisContext *fs_redis_dial(const fs_redis *like, char *err, size_t errlen);
/* Drops every connection; the next command reconnects. */
void fs_redis_reset(fs_redis *);
/*
 * Reads a Lua script file; returns its handle (>= 0) for fs_redis_eval, or -1.
 * The script is sent to a node when first needed there. A script must
 * touch only keys of one slot (one hash tag).
 */
int fs_redis_script_load(fs_redis *, const char *path);
/*
 * Runs a loaded script on the node of its first key. Returns the reply,
 * which the caller frees with freeReplyObject, or NULL with err/errstr set
 * (a Redis error reply is returned as NULL too, its text in errstr).
 */
redisReply *fs_redis_eval(fs_redis *, int script, int nkeys, int argc, const char **argv);
/* One script call of fs_redis_eval_many, and what came of it. */
struct fs_redis_call {
	int script; /* the loaded script to run (fs_redis_script_load's index) */
	int nkeys, argc;
	const char **argv; /* argc arguments, the keys first (as fs_redis_eval) */
	/* out: the reply as fs_redis_eval returns it; when NULL, err and errstr */
	redisReply *reply;
	int err; /* enum fs_redis_err */
	char errstr[128];
	/* the driver's own */
	int node;
	char *cmd;
	long long len;
};
/*
 * Runs n calls of loaded scripts, pipelined: the calls bound for one
 * node are written to it at once and their replies read in turn, one round
 * trip per node instead of one per call. A call that did not run where it
 * was sent (MOVED, ASK, NOSCRIPT, TRYAGAIN, CLUSTERDOWN, LOADING), or that
 * could not be sent (the node unreachable, its slot not known yet, a
 * transaction open), is then run alone as fs_redis_eval runs it; a call
 * that was sent and got no answer fails with FS_REDIS_ERR_IO and is never
 * sent again (it may have run). Each call's keys share one slot.
 */
void fs_redis_eval_many(fs_redis *, struct fs_redis_call *calls, size_t n);
/*
 * fs_redis_eval_many in two halves, for a caller that does other work
 * while Redis runs the calls (an event loop): _send writes the pipelines
 * (calls must stay valid until received); _fds gives the descriptors whose
 * replies are awaited (up to max; 0: nothing to wait for); _recv reads the
 * replies and runs the calls that must run alone, as fs_redis_eval_many
 * does. Any other command of the driver receives the pipeline's replies
 * first (they come first on its connections); _deadline says until when
 * (monotonic ms) they are awaited, 0 when they are not (any more).
 */
void fs_redis_eval_send(fs_redis *, struct fs_redis_call *calls, size_t n);
int fs_redis_eval_fds(const fs_redis *, int *fds, int max);
int64_t fs_redis_eval_deadline(const fs_redis *);
void fs_redis_eval_recv(fs_redis *);
/* Runs one command (hiredis format); NULL on failure or error reply. */
redisReply *fs_redis_command(fs_redis *, const char *fmt, ...);
/* Runs one command given as arguments; NULL on failure or error reply. */
redisReply *fs_redis_argv(fs_redis *, int argc, const char **argv, const size_t *argvlen);
/*
 * WAIT numreplicas timeout_ms on every node that commands went to since
 * the previous fs_redis_wait (a node only read from answers at once): the
 * fewest replicas of those nodes that have every write this driver made
 * there, or -1 with err set (also when a connection that wrote is gone,
 * even if a later command reconnected: WAIT counts only its own
 * connection's writes, so each node's WAIT goes to the connection that
 * took the first command since the previous fs_redis_wait, or fails).
 */
long fs_redis_wait(fs_redis *, int numreplicas, int timeout_ms);
/*
 * For commands that must reach every master (server state, flushes): the
 * number of masters (1 for a single Redis) after a fresh look at the
 * cluster, or -1 with err set; then fs_redis_master_argv(r, i, ...) for
 * each i below it runs a command there, with no redirect followed.
 */
int fs_redis_masters(fs_redis *);
redisReply *fs_redis_master_argv(fs_redis *, int master, int argc, const char **argv,
    const size_t *argvlen);

/* 1 when the driver has found a cluster behind its seeds, 0 otherwise (so far). */
int fs_redis_is_cluster(const fs_redis *);
/*
 * The node that serves slot, as the driver knows it now (a single Redis
 * serves every slot): its index (stable while the driver lives), with its
 * host:port or socket path in addr (unless NULL); -1 (and "?") when the
 * slot's owner is not known yet.
 */
int fs_redis_node_of(const fs_redis *, unsigned slot, char *addr, size_t addrlen);

/* The cluster's key hashing, as Redis does it. */
uint16_t fs_redis_crc16(const char *buf, size_t len);
/* The slot of a key: CRC16 of its {hash tag} (or the whole key) mod 16384. */
unsigned fs_redis_key_slot(const char *key, size_t len);

enum fs_redis_redirect {
	FS_REDIS_NO_REDIRECT = 0,
	FS_REDIS_MOVED,
	FS_REDIS_ASK
};
/*
 * Reads an error reply "MOVED <slot> <host:port>" or "ASK <slot> <host:port>";
 * an empty host (":port") means the host of the node that answered.
 * Returns FS_REDIS_NO_REDIRECT for anything else or a malformed redirect.
 */
enum fs_redis_redirect fs_redis_parse_redirect(const char *err, unsigned *slot, char *addr,
    size_t addrlen);

#endif

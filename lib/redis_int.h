/*
 * What the files of the Redis driver share, and nobody else uses (the
 * public interface is redis.h): redis.c (connections, commands),
 * redis_cluster.c (slot routing, redirects) and redis_pipeline.c
 * (pipelines).
 */
#ifndef FS_REDIS_INT_H
#define FS_REDIS_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>

#include "redis.h"

#define SLOT_UNKNOWN 0xff
#define PAUSE_FIRST_MS 5 /* the first pause before a retry (TRYAGAIN, unreachable) */
#define PAUSE_MAX_MS 100 /* pauses double up to this */
#define EVAL_ARGS_MAX 16 /* arguments of a script call, its keys included */

/* What a command is to the router (see the header's "Routing"). */
enum cmd_kind {
	CMD_KEYED,   /* its key decides the node */
	CMD_KEYLESS, /* the node of the previous command */
	CMD_MULTI,
	CMD_ENDTX,   /* EXEC, DISCARD */
};

/* Bounded waits: a stuck Redis must turn into a 503, not a hung handler. */
struct timeval fs_redis_timeval(int ms);

/* redis.c: errors, connections, the commands' steps. */
void fs_redis_set_err(fs_redis *, enum fs_redis_err, const char *what, const char *detail);
void fs_redis_node_drop(fs_redis *, int n);
redisContext *fs_redis_node_ctx(fs_redis *, int n, int64_t deadline);
void fs_redis_touch(fs_redis *, int n);
void fs_redis_answer_lost(fs_redis *, int n, redisContext *c);
void fs_redis_evalsha_args(const fs_redis *, int idx, int nkeys, int argc, const char **argv,
    const char *args[EVAL_ARGS_MAX + 3], char nk[12]);

/* redis_cluster.c: the slot map, routing, redirects. */
int fs_redis_node_at(fs_redis *, const char *addr);
int fs_redis_refresh(fs_redis *, int64_t deadline);
int fs_redis_route(const fs_redis *, const char *key, size_t keylen);
enum cmd_kind fs_redis_cmd_kind(const char *cmd, size_t len, const char **key, size_t *keylen);
enum fs_redis_redirect fs_redis_redirect_of(const fs_redis *, int n, const char *err,
    unsigned *slot, char *addr, size_t addrlen);
void fs_redis_moved(fs_redis *, unsigned slot, int n);
int fs_redis_is_retryable(const char *err);

/* redis_pipeline.c: a pipeline's replies first, before any other command. */
void fs_redis_settle(fs_redis *);

#endif

/*
 * Redis driver: one connection that reconnects by itself, authenticates as
 * an ACL user on every (re)connection, and Lua scripts loaded from files
 * and run by EVALSHA with a NOSCRIPT fallback.
 */
#ifndef FS_REDIS_H
#define FS_REDIS_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "cfg.h"

/* How long a command may wait for its answer before it fails. */
#define FS_REDIS_TIMEOUT_MS 1000
#define FS_REDIS_SCRIPTS_MAX 4
#define FS_REDIS_SCRIPT_MAX (64 * 1024)
#define FS_REDIS_USER_MAX 64      /* bytes in an ACL user name, with the NUL */
#define FS_REDIS_PASSWORD_MAX 256 /* bytes in its password, with the NUL */

typedef struct fs_redis {
	redisContext *ctx;
	char addr[256];
	char user[FS_REDIS_USER_MAX];         /* empty: AUTH with the password only */
	char password[FS_REDIS_PASSWORD_MAX]; /* empty: no AUTH */
	struct {
		char *body;
		char sha[41];
	} script[FS_REDIS_SCRIPTS_MAX];
	int nscripts;
	int err;
	char errstr[128];
} fs_redis;

/*
 * addr: a unix socket path (starts with '/') or host:port. user and
 * password (either may be NULL or empty) are sent with AUTH after every
 * connect. Connects lazily. NULL when out of memory or a value is too long.
 */
fs_redis *fs_redis_new(const char *addr, const char *user, const char *password);
/*
 * fs_redis_new from FLASHSALE_REDIS, FLASHSALE_REDIS_USER and the password
 * in FLASHSALE_REDIS_PASSWORD_FILE. NULL with err set (never the secret).
 */
fs_redis *fs_redis_open(const struct fs_cfg *, char *err, size_t errlen);
/* Closes the connection and wipes the password. */
void fs_redis_free(fs_redis *);
/*
 * A new hiredis connection to like's server, authenticated as like's user,
 * with the driver's timeouts, for a caller that needs a context of its own
 * (a subscriber); NULL with err set. Free it with redisFree.
 */
redisContext *fs_redis_dial(const fs_redis *like, char *err, size_t errlen);
/* Drops the connection; the next command reconnects. */
void fs_redis_reset(fs_redis *);
/*
 * Reads a Lua script file; returns its handle (>= 0) for fs_redis_eval, or -1.
 * The script is sent to the server when first needed.
 */
int fs_redis_script_load(fs_redis *, const char *path);
/*
 * Runs a loaded script. Returns the reply, which the caller frees with
 * freeReplyObject, or NULL with err/errstr set (a Redis error reply is
 * returned as NULL too, its text in errstr).
 */
redisReply *fs_redis_eval(fs_redis *, int script, int nkeys, int argc, const char **argv);
/* Runs one command (hiredis format); NULL on failure or error reply. */
redisReply *fs_redis_command(fs_redis *, const char *fmt, ...);
/* Runs one command given as arguments; NULL on failure or error reply. */
redisReply *fs_redis_argv(fs_redis *, int argc, const char **argv, const size_t *argvlen);

#endif

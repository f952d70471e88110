#include "config.h"

#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "keyfile.h"
#include "metrics.h"
#include "redis.h"

/* Bounded waits: a stuck Redis must turn into a 503, not a hung handler. */
static const struct timeval redis_timeout = { FS_REDIS_TIMEOUT_MS / 1000,
	(FS_REDIS_TIMEOUT_MS % 1000) * 1000 };

static void
set_err(fs_redis *r, const char *what, const char *detail)
{
	fs_metrics_count(FS_M_REDIS_ERRORS);
	r->err = 1;
	snprintf(r->errstr, sizeof(r->errstr), "%s: %s", what, detail);
}

fs_redis *
fs_redis_new(const char *addr, const char *user, const char *password)
{
	fs_redis *r;

	user = user != NULL ? user : "";
	password = password != NULL ? password : "";
	if (strlen(addr) >= sizeof(r->addr) || strlen(user) >= sizeof(r->user) ||
	    strlen(password) >= sizeof(r->password))
		return NULL;
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	strcpy(r->addr, addr);
	strcpy(r->user, user);
	strcpy(r->password, password);
	return r;
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
		snprintf(err, errlen, "redis: out of memory, or FLASHSALE_REDIS(_USER) too long");
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
	sodium_memzero(r->password, sizeof(r->password));
	free(r);
}

void
fs_redis_reset(fs_redis *r)
{
	if (r->ctx != NULL)
		redisFree(r->ctx);
	r->ctx = NULL;
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

redisContext *
fs_redis_dial(const fs_redis *like, char *err, size_t errlen)
{
	const char *addr = like->addr;
	char host[256];
	const char *colon;
	redisContext *c;

	if (addr[0] == '/') {
		c = redisConnectUnixWithTimeout(addr, redis_timeout);
	} else {
		if ((colon = strrchr(addr, ':')) == NULL || (size_t)(colon - addr) >= sizeof(host)) {
			snprintf(err, errlen, "redis address: expected host:port or a socket path");
			return NULL;
		}
		memcpy(host, addr, (size_t)(colon - addr));
		host[colon - addr] = '\0';
		c = redisConnectWithTimeout(host, (int)strtol(colon + 1, NULL, 10), redis_timeout);
	}
	if (c == NULL) {
		snprintf(err, errlen, "redis connect: out of memory");
		return NULL;
	}
	if (c->err != 0) {
		snprintf(err, errlen, "redis connect: %s", c->errstr);
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

static int
connect_now(fs_redis *r)
{
	if (r->ctx != NULL && r->ctx->err == 0 && !went_away(r->ctx))
		return 0;
	if (r->ctx != NULL)
		fs_metrics_count(FS_M_REDIS_RECONNECTS);
	fs_redis_reset(r);
	if ((r->ctx = fs_redis_dial(r, r->errstr, sizeof(r->errstr))) == NULL) {
		r->err = 1;
		fs_metrics_count(FS_M_REDIS_ERRORS);
		return -1;
	}
	return 0;
}

/* Turns a hiredis reply into the driver's contract: NULL on any failure. */
static redisReply *
checked(fs_redis *r, redisReply *reply)
{
	if (reply == NULL) {
		set_err(r, "redis", r->ctx != NULL && r->ctx->err ? r->ctx->errstr : "no reply");
		/* The connection is unusable after an I/O error: drop it. */
		fs_redis_reset(r);
		fs_metrics_count(FS_M_REDIS_RECONNECTS);
		return NULL;
	}
	if (reply->type == REDIS_REPLY_ERROR) {
		set_err(r, "redis error", reply->str);
		freeReplyObject(reply);
		return NULL;
	}
	r->err = 0;
	r->errstr[0] = '\0';
	return reply;
}

redisReply *
fs_redis_argv(fs_redis *r, int argc, const char **argv, const size_t *argvlen)
{
	if (connect_now(r) != 0)
		return NULL;
	return checked(r, redisCommandArgv(r->ctx, argc, argv, argvlen));
}

redisReply *
fs_redis_command(fs_redis *r, const char *fmt, ...)
{
	redisReply *reply;
	va_list ap;

	if (connect_now(r) != 0)
		return NULL;
	va_start(ap, fmt);
	reply = redisvCommand(r->ctx, fmt, ap);
	va_end(ap);
	return checked(r, reply);
}

int
fs_redis_script_load(fs_redis *r, const char *path)
{
	FILE *fp = NULL;
	char *body = NULL;
	size_t n;
	int idx = -1;

	if (r->nscripts >= FS_REDIS_SCRIPTS_MAX) {
		set_err(r, "redis script", "too many scripts");
		goto fail;
	}
	if ((fp = fopen(path, "r")) == NULL) {
		set_err(r, "redis script: cannot open", path);
		goto fail;
	}
	if ((body = malloc(FS_REDIS_SCRIPT_MAX + 1)) == NULL) {
		set_err(r, "redis script", "out of memory");
		goto fail;
	}
	n = fread(body, 1, FS_REDIS_SCRIPT_MAX + 1, fp);
	if (n > FS_REDIS_SCRIPT_MAX || ferror(fp)) {
		set_err(r, "redis script: too big or unreadable", path);
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

/* Sends the script text; Redis answers with the SHA-1 that EVALSHA names. */
static int
script_send(fs_redis *r, int idx)
{
	redisReply *reply = fs_redis_command(r, "SCRIPT LOAD %s", r->script[idx].body);

	if (reply == NULL)
		return -1;
	if (reply->type != REDIS_REPLY_STRING || reply->len != 40) {
		set_err(r, "redis script", "unexpected SCRIPT LOAD reply");
		freeReplyObject(reply);
		return -1;
	}
	memcpy(r->script[idx].sha, reply->str, 41);
	freeReplyObject(reply);
	return 0;
}

#define EVAL_ARGS_MAX 16

redisReply *
fs_redis_eval(fs_redis *r, int idx, int nkeys, int argc, const char **argv)
{
	const char *args[EVAL_ARGS_MAX + 3];
	char nk[12];
	redisReply *reply;

	if (idx < 0 || idx >= r->nscripts || argc > EVAL_ARGS_MAX || nkeys > argc) {
		set_err(r, "redis eval", "bad arguments");
		return NULL;
	}
	snprintf(nk, sizeof(nk), "%d", nkeys);
	args[0] = "EVALSHA";
	args[2] = nk;
	memcpy(args + 3, argv, sizeof(*argv) * (size_t)argc);
	/* Twice at most: after a Redis restart the script cache is empty. */
	for (int attempt = 0; attempt < 2; attempt++) {
		if (r->script[idx].sha[0] == '\0' && script_send(r, idx) != 0)
			return NULL;
		args[1] = r->script[idx].sha;
		if (connect_now(r) != 0)
			return NULL;
		reply = redisCommandArgv(r->ctx, argc + 3, args, NULL);
		if (reply != NULL && reply->type == REDIS_REPLY_ERROR &&
		    strncmp(reply->str, "NOSCRIPT", 8) == 0) {
			freeReplyObject(reply);
			r->script[idx].sha[0] = '\0';
			continue;
		}
		return checked(r, reply);
	}
	set_err(r, "redis eval", "script vanished twice");
	return NULL;
}

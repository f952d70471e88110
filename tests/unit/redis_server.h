/*
 * A real redis-server for the unit tests of the Redis driver and the stock:
 * started on a unix socket in a fresh temporary directory (no TCP port, so
 * it never meets another checkout's servers), polled until it answers, and
 * stopped by its PID. redis-server comes from deploy/install-deps.
 */
#ifndef FS_TEST_REDIS_SERVER_H
#define FS_TEST_REDIS_SERVER_H

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "cfg.h"

struct test_redis {
	pid_t pid;
	char dir[64];
	char sock[128];
};

/* Stops the server by its PID and waits for it; the directory stays for a restart. */
static void
test_redis_stop(struct test_redis *r)
{
	if (r->pid > 0) {
		kill(r->pid, SIGTERM);
		waitpid(r->pid, NULL, 0);
	}
	r->pid = -1;
}

/* (Re)starts the server on r->sock; 0 once it answers PING (within 10 s), or -1. */
static int
test_redis_run(struct test_redis *r)
{
	struct timespec step = { 0, 10 * 1000000L };

	if ((r->pid = fork()) < 0)
		return -1;
	if (r->pid == 0) {
		/* A test that dies (an ASan abort) takes its server with it. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		execlp("redis-server", "redis-server", "--port", "0", "--unixsocket", r->sock,
		    "--save", "", "--appendonly", "no", "--dir", r->dir, "--loglevel", "warning",
		    (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 1000; i++) {
		redisContext *c = redisConnectUnix(r->sock);
		redisReply *reply = c != NULL && c->err == 0 ? redisCommand(c, "PING") : NULL;
		int up = reply != NULL && reply->type == REDIS_REPLY_STATUS;

		if (reply != NULL)
			freeReplyObject(reply);
		if (c != NULL)
			redisFree(c);
		if (up)
			return 0;
		if (waitpid(r->pid, NULL, WNOHANG) == r->pid)
			break; /* it exited: not installed, or refused the options */
		nanosleep(&step, NULL);
	}
	test_redis_stop(r);
	return -1;
}

/* A fresh directory and a server in it; 0 or -1. */
static int
test_redis_start(struct test_redis *r)
{
	memset(r, 0, sizeof(*r));
	r->pid = -1;
	snprintf(r->dir, sizeof(r->dir), "/tmp/fs-unit-redis-XXXXXX");
	if (mkdtemp(r->dir) == NULL)
		return -1;
	snprintf(r->sock, sizeof(r->sock), "%s/redis.sock", r->dir);
	return test_redis_run(r);
}

/*
 * The stores' settings of a stack that meets this server: FLASHSALE_REDIS
 * is its socket, and no Redis user or password (the private server has no
 * ACL, so the driver sends no AUTH). 0, or -1.
 */
static int
test_redis_cfg(const struct test_redis *r, struct fs_cfg *cfg)
{
	if (setenv("FLASHSALE_REDIS", r->sock, 1) != 0 || unsetenv("FLASHSALE_REDIS_USER") != 0 ||
	    unsetenv("FLASHSALE_REDIS_PASSWORD_FILE") != 0)
		return -1;
	return fs_cfg_load(cfg, FS_CFG_NEED(FS_CFG_REDIS));
}

/* One command to the server on a connection of its own; the reply (free it) or NULL. */
static inline redisReply *
test_redis_cmd(const struct test_redis *r, const char *fmt, ...)
{
	redisContext *c = redisConnectUnix(r->sock);
	redisReply *reply = NULL;
	va_list ap;

	if (c == NULL || c->err != 0) {
		redisFree(c);
		return NULL;
	}
	va_start(ap, fmt);
	reply = redisvCommand(c, fmt, ap);
	va_end(ap);
	redisFree(c);
	return reply;
}

/* Stops the server and removes its directory. */
static void
test_redis_finish(struct test_redis *r)
{
	char path[192];

	test_redis_stop(r);
	snprintf(path, sizeof(path), "%s/dump.rdb", r->dir);
	unlink(path);
	unlink(r->sock);
	rmdir(r->dir);
}

#endif

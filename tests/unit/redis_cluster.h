/*
 * A real private Redis Cluster for the unit tests: 3 masters and 3
 * replicas on loopback ports derived from FLASHSALE_TEST_PORT_BASE (base +
 * offset + 0..5, cluster bus on base + offset + 10..15, all below the
 * kernel's ephemeral ports; each test program its own offset, so two can
 * run at once), in a fresh temporary directory, created with
 * `redis-cli --cluster create`, ready once every node says cluster_state:ok,
 * every replica's link to its master is up and each master's replica
 * acknowledges a write, and stopped by PID. Each
 * node logs to node-<port>.log in the directory.
 */
#ifndef FS_TEST_REDIS_CLUSTER_H
#define FS_TEST_REDIS_CLUSTER_H

#include <fcntl.h>
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

#define TEST_CLUSTER_NODES 6

struct test_cluster {
	pid_t pid[TEST_CLUSTER_NODES];
	int port[TEST_CLUSTER_NODES];
	char dir[64];
};

/* A connection to the node on port, or NULL. */
static inline redisContext *
test_cluster_connect(int port)
{
	struct timeval tv = { 1, 0 };
	redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);

	if (c != NULL && c->err != 0) {
		redisFree(c);
		return NULL;
	}
	if (c != NULL)
		redisSetTimeout(c, tv);
	return c;
}

/* One command to the node on port; the reply (free it) or NULL. */
static inline redisReply *
test_cluster_cmd(int port, const char *fmt, ...)
{
	redisContext *c = test_cluster_connect(port);
	redisReply *reply = NULL;
	va_list ap;

	if (c == NULL)
		return NULL;
	va_start(ap, fmt);
	reply = redisvCommand(c, fmt, ap);
	va_end(ap);
	redisFree(c);
	return reply;
}

/* 1 when the node's reply to fmt is a string containing want. */
static inline int
test_cluster_says(int port, const char *want, const char *fmt, const char *arg)
{
	redisReply *x = test_cluster_cmd(port, fmt, arg);
	int yes = x != NULL && x->type == REDIS_REPLY_STRING && strstr(x->str, want) != NULL;

	if (x != NULL)
		freeReplyObject(x);
	return yes;
}

/* Waits (polling, at most ms) until every live node's CLUSTER INFO holds want. */
static inline int
test_cluster_wait(const struct test_cluster *tc, const char *want, int ms)
{
	struct timespec step = { 0, 20 * 1000000L };

	for (int waited = 0; waited < ms; waited += 20) {
		int all = 1;

		for (int i = 0; i < TEST_CLUSTER_NODES && all; i++)
			if (tc->pid[i] > 0)
				all = test_cluster_says(tc->port[i], want, "CLUSTER INFO", NULL);
		if (all)
			return 0;
		nanosleep(&step, NULL);
	}
	return -1;
}

/* Stops node i by SIGKILL (sig) or SIGTERM and waits for it. */
static inline void
test_cluster_kill(struct test_cluster *tc, int i, int sig)
{
	if (tc->pid[i] > 0) {
		kill(tc->pid[i], sig);
		waitpid(tc->pid[i], NULL, 0);
	}
	tc->pid[i] = -1;
}

static inline void
test_cluster_stop(struct test_cluster *tc)
{
	char path[128];

	for (int i = 0; i < TEST_CLUSTER_NODES; i++) {
		test_cluster_kill(tc, i, SIGTERM);
		snprintf(path, sizeof(path), "%s/nodes-%d.conf", tc->dir, tc->port[i]);
		unlink(path);
		snprintf(path, sizeof(path), "%s/node-%d.log", tc->dir, tc->port[i]);
		unlink(path);
	}
	/* A replica's full sync leaves the master's snapshot behind. */
	snprintf(path, sizeof(path), "%s/dump.rdb", tc->dir);
	unlink(path);
	rmdir(tc->dir);
}

/* Runs a program and waits for it; its exit status, or -1. */
static inline int
test_cluster_spawn(char *const argv[])
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		prctl(PR_SET_PDEATHSIG, SIGTERM);
		dup2(null, 1);
		dup2(null, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* The live node that serves key (answers GET without a redirect), or -1. */
static inline int
test_cluster_owner(const struct test_cluster *tc, const char *key)
{
	int owner = -1;

	for (int i = 0; i < TEST_CLUSTER_NODES; i++) {
		redisReply *x = tc->pid[i] > 0 ? test_cluster_cmd(tc->port[i], "GET %s", key) : NULL;

		if (x != NULL && x->type != REDIS_REPLY_ERROR)
			owner = i;
		if (x != NULL)
			freeReplyObject(x);
	}
	return owner;
}

/* A write on master m that its replica acknowledges within 10 s (WAIT 1); 0 or -1. */
static inline int
test_cluster_replicated(const struct test_cluster *tc, int m)
{
	redisContext *c = NULL;
	redisReply *x = NULL;
	struct timeval wait = { 11, 0 };
	char key[32];
	int rc = -1;

	for (int k = 0; k < 1000; k++) {
		snprintf(key, sizeof(key), "test-ready-%d", k);
		if (test_cluster_owner(tc, key) == m)
			break;
	}
	if ((c = test_cluster_connect(tc->port[m])) == NULL)
		return -1;
	redisSetTimeout(c, wait);
	if ((x = redisCommand(c, "SET %s 1", key)) != NULL && x->type == REDIS_REPLY_STATUS) {
		freeReplyObject(x);
		x = redisCommand(c, "WAIT 1 10000");
		rc = x != NULL && x->type == REDIS_REPLY_INTEGER && x->integer == 1 ? 0 : -1;
		if (x != NULL)
			freeReplyObject(x);
		x = redisCommand(c, "DEL %s", key); /* the tests count their own keys */
	}
	if (x != NULL)
		freeReplyObject(x);
	redisFree(c);
	return rc;
}

/*
 * Starts six nodes, makes them a cluster of 3 masters (the first three
 * ports) each with a replica, and waits until every node says
 * cluster_state:ok (within 30 s). 0, or -1 with the nodes stopped.
 */
static inline int
test_cluster_start(struct test_cluster *tc, int offset)
{
	const char *env = getenv("FLASHSALE_TEST_PORT_BASE");
	int base = env != NULL ? atoi(env) : 28080;
	char addrs[TEST_CLUSTER_NODES][32], *create[TEST_CLUSTER_NODES + 8];
	char cli[] = "redis-cli", cluster[] = "--cluster", verb[] = "create";
	char replicas[] = "--cluster-replicas", one[] = "1", yes[] = "--cluster-yes";
	struct timespec step = { 0, 10 * 1000000L };
	int k = 0;

	memset(tc, 0, sizeof(*tc));
	snprintf(tc->dir, sizeof(tc->dir), "/tmp/fs-unit-cluster-XXXXXX");
	if (mkdtemp(tc->dir) == NULL)
		return -1;
	for (int i = 0; i < TEST_CLUSTER_NODES; i++) {
		char port[16], bus[16], conf[96], log[96];

		tc->port[i] = base + offset + i;
		snprintf(port, sizeof(port), "%d", tc->port[i]);
		snprintf(bus, sizeof(bus), "%d", base + offset + 10 + i);
		snprintf(conf, sizeof(conf), "nodes-%d.conf", tc->port[i]);
		snprintf(log, sizeof(log), "node-%d.log", tc->port[i]);
		if ((tc->pid[i] = fork()) < 0)
			goto fail;
		if (tc->pid[i] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			execlp("redis-server", "redis-server", "--port", port, "--bind", "127.0.0.1",
			    "--cluster-enabled", "yes", "--cluster-port", bus, "--cluster-config-file",
			    conf, "--cluster-node-timeout", "2000", "--save", "", "--appendonly", "no",
			    "--dir", tc->dir, "--logfile", log, "--loglevel", "warning", (char *)NULL);
			_exit(127);
		}
	}
	for (int i = 0; i < TEST_CLUSTER_NODES; i++) {
		int up = 0;

		for (int t = 0; t < 1000 && !up; t++) {
			redisReply *x = test_cluster_cmd(tc->port[i], "PING");

			up = x != NULL && x->type == REDIS_REPLY_STATUS;
			if (x != NULL)
				freeReplyObject(x);
			if (!up) {
				if (waitpid(tc->pid[i], NULL, WNOHANG) == tc->pid[i]) {
					tc->pid[i] = -1;
					goto fail;
				}
				nanosleep(&step, NULL);
			}
		}
		if (!up)
			goto fail;
	}
	create[k++] = cli;
	create[k++] = cluster;
	create[k++] = verb;
	for (int i = 0; i < TEST_CLUSTER_NODES; i++) {
		snprintf(addrs[i], sizeof(addrs[i]), "127.0.0.1:%d", tc->port[i]);
		create[k++] = addrs[i];
	}
	create[k++] = replicas;
	create[k++] = one;
	create[k++] = yes;
	create[k] = NULL;
	if (test_cluster_spawn(create) != 0 || test_cluster_wait(tc, "cluster_state:ok", 30000) != 0)
		goto fail;
	/* Every replica in sync with its master, so WAIT and a failover mean something. */
	for (int i = 3; i < TEST_CLUSTER_NODES; i++)
		for (int t = 0; !test_cluster_says(tc->port[i], "master_link_status:up", "INFO %s",
				"replication"); t++) {
			if (t == 3000)
				goto fail;
			nanosleep(&step, NULL);
		}
	/*
	 * After a diskless sync a master streams to its replica only once the
	 * replica's first ACK came (up to a second later): a write that a
	 * replica acknowledges (WAIT) on each master says the stream flows.
	 */
	for (int i = 0; i < 3; i++)
		if (test_cluster_replicated(tc, i) != 0)
			goto fail;
	return 0;
fail:
	test_cluster_stop(tc);
	return -1;
}

/* The index of the node whose replica is node i (ROLE), or -1. */
static inline int
test_cluster_master_of(const struct test_cluster *tc, int i)
{
	redisReply *x = test_cluster_cmd(tc->port[i], "ROLE");
	int m = -1;

	if (x != NULL && x->type == REDIS_REPLY_ARRAY && x->elements >= 3 &&
	    x->element[2]->type == REDIS_REPLY_INTEGER)
		for (int k = 0; k < TEST_CLUSTER_NODES; k++)
			if (tc->port[k] == x->element[2]->integer)
				m = k;
	if (x != NULL)
		freeReplyObject(x);
	return m;
}

/* The node id of node i (CLUSTER MYID) into id; 0 or -1. */
static inline int
test_cluster_id(const struct test_cluster *tc, int i, char id[41])
{
	redisReply *x = test_cluster_cmd(tc->port[i], "CLUSTER MYID");
	int rc = x != NULL && x->type == REDIS_REPLY_STRING && x->len == 40 ? 0 : -1;

	if (rc == 0)
		memcpy(id, x->str, 41);
	if (x != NULL)
		freeReplyObject(x);
	return rc;
}

#endif

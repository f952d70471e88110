/*
 * Unit test of lib/redis: the cluster's key hashing and redirect parsing,
 * then a real redis-server of its own (tests/unit/redis_server.h), then a
 * real private Redis Cluster (tests/unit/redis_cluster.h).
 */
#include "config.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "redis.h"
#include "expect.h"
#include "redis_cluster.h"
#include "redis_server.h"
#include "relay.h"

/* A script file in the server's directory; its path in path. */
static int
write_script(const struct test_redis *srv, char *path, size_t len, const char *body)
{
	FILE *f;

	snprintf(path, len, "%s/script.lua", srv->dir);
	if ((f = fopen(path, "w")) == NULL)
		return -1;
	fputs(body, f);
	return fclose(f);
}

/* A GET of key on r: its integer value, or -1. */
static long
value_of(fs_redis *r, const char *key)
{
	redisReply *x = fs_redis_command(r, "GET %s", key);
	long v = x != NULL && x->type == REDIS_REPLY_STRING ? strtol(x->str, NULL, 10) : -1;

	if (x != NULL)
		freeReplyObject(x);
	return v;
}

/* Frees the replies of a pipeline. */
static void
calls_free(struct fs_redis_call *calls, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (calls[i].reply != NULL)
			freeReplyObject(calls[i].reply);
}

/* The value of a script call's reply, or -1. */
static long
reply_value(const struct fs_redis_call *call)
{
	return call->reply != NULL && call->reply->type == REDIS_REPLY_STRING ?
	    strtol(call->reply->str, NULL, 10) : -1;
}

/*
 * fs_redis_eval_many in halves on one Redis: the replies come while the
 * caller waits on the descriptors the driver names; another command
 * between the halves gets its own reply (the pipeline's are taken first).
 */
static void
halves(fs_redis *r, int script, struct fs_redis_call *calls)
{
	static const char *argv[2] = { "half", "ok" };
	struct pollfd pfd;
	int fd = -1, n;

	for (int i = 0; i < 3; i++)
		calls[i] = (struct fs_redis_call){ .script = script, .nkeys = 1, .argc = 2, .argv = argv };
	fs_redis_eval_send(r, calls, 3);
	n = fs_redis_eval_fds(r, &fd, 1);
	pfd = (struct pollfd){ .fd = fd, .events = POLLIN };
	check(n == 1 && fs_redis_eval_deadline(r) > 0 && poll(&pfd, 1, 5000) == 1,
	    "a pipeline sent: its replies come while the caller waits on the driver's descriptor");
	fs_redis_eval_recv(r);
	check(fs_redis_eval_deadline(r) == 0 && reply_value(&calls[0]) == 1 && reply_value(&calls[1]) == 2 &&
		reply_value(&calls[2]) == 3 && fs_redis_eval_fds(r, &fd, 1) == 0,
	    "then received: each reply to its call, in order");
	calls_free(calls, 3);
	fs_redis_eval_send(r, calls, 2);
	check(value_of(r, "half") == 5 && fs_redis_eval_deadline(r) == 0 && reply_value(&calls[0]) == 4 &&
		reply_value(&calls[1]) == 5,
	    "a command between the halves gets its own reply; the pipeline's were taken first");
	fs_redis_eval_recv(r);
	check(reply_value(&calls[0]) == 4 && reply_value(&calls[1]) == 5,
	    "the receiving half then has nothing left to do");
	calls_free(calls, 2);
}

/*
 * Behind a frozen relay, received after the deadline: the replies not in
 * yet are lost at once (no second wait), and the next call reconnects.
 */
static void
halves_late(fs_redis *far, int script, struct test_relay *relay, struct fs_redis_call *calls)
{
	static const char *argv[2] = { "late", "ok" };
	struct timespec t0, t1, pause = { 0, 20 * 1000 * 1000 };
	long ms;

	calls[0] = (struct fs_redis_call){ .script = script, .nkeys = 1, .argc = 2, .argv = argv };
	kill(relay->pid, SIGSTOP);
	fs_redis_eval_send(far, calls, 1);
	/* The caller's deadline passes (the event loop wakes for it). */
	while (fs_clock_mono_ms() < fs_redis_eval_deadline(far))
		nanosleep(&pause, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	fs_redis_eval_recv(far);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	check(calls[0].reply == NULL && calls[0].err == FS_REDIS_ERR_IO && ms < 500,
	    "received past its deadline with no reply in: lost at once, as I/O (it may have run)");
	kill(relay->pid, SIGCONT);
	fs_redis_eval_many(far, calls, 1);
	check(calls[0].reply != NULL, "the next pipeline reconnects");
	calls_free(calls, 1);
}

/* How long a command to the frozen relay takes to fail, in ms; -1 when it did not fail. */
static long
frozen_ms(fs_redis *far, struct test_relay *relay)
{
	struct timespec t0, t1;
	redisReply *x;

	kill(relay->pid, SIGSTOP);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	x = fs_redis_command(far, "PING");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	kill(relay->pid, SIGCONT);
	if (x != NULL) {
		freeReplyObject(x);
		return -1;
	}
	return (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
}

/*
 * The driver's timeout is a setting (FLASHSALE_REDIS_TIMEOUT_MS), not a
 * fixed second: a frozen server fails a command after the timeout set,
 * shorter or longer, and a pipeline's deadline is as far (issue 36, item
 * 6: single/redis_slow.sh needs a longer one on a loaded machine).
 */
static void
timeout_setting(fs_redis *far, struct test_relay *relay, struct fs_redis_call *calls, int script)
{
	static const char *argv[2] = { "timeout", "ok" };
	struct fs_cfg cfg;
	char err[128];
	fs_redis *opened;
	long ms;
	int64_t left;

	setenv("FLASHSALE_REDIS", "127.0.0.1:1", 1);
	setenv("FLASHSALE_REDIS_TIMEOUT_MS", "2500", 1);
	opened = fs_cfg_load(&cfg, 0) == 0 ? fs_redis_open(&cfg, err, sizeof(err)) : NULL;
	check(opened != NULL && opened->timeout_ms == 2500,
	    "FLASHSALE_REDIS_TIMEOUT_MS is the driver's timeout once opened");
	fs_redis_free(opened);
	unsetenv("FLASHSALE_REDIS_TIMEOUT_MS");

	freeReplyObject(fs_redis_command(far, "PING")); /* connected before it freezes */
	fs_redis_set_timeout(far, 300);
	ms = frozen_ms(far, relay);
	check(ms >= 250 && ms < 900, "a 300 ms timeout: a frozen server fails the command in about 300 ms");
	fs_redis_set_timeout(far, 1600);
	ms = frozen_ms(far, relay);
	check(ms >= 1500 && ms < 2600, "a 1,600 ms timeout: the command waits about 1,600 ms, not 1,000");
	calls[0] = (struct fs_redis_call){ .script = script, .nkeys = 1, .argc = 2, .argv = argv };
	fs_redis_eval_send(far, calls, 1);
	left = fs_redis_eval_deadline(far) - fs_clock_mono_ms();
	fs_redis_eval_recv(far);
	check(left > 1400 && left <= 1600 && calls[0].reply != NULL,
	    "a pipeline's deadline is the timeout set");
	calls_free(calls, 1);
	fs_redis_set_timeout(far, FS_REDIS_TIMEOUT_MS);
}

/* A pipeline of two scripts, interleaved: each call runs its own. */
static void
mixed(fs_redis *r, int script, const char *dir, struct fs_redis_call *calls)
{
	static const char *argv[2] = { "mixed", "ok" };
	char path[192];
	int other = -1, each = 1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/other.lua", dir);
	if ((f = fopen(path, "w")) == NULL || fputs("return 'other ' .. KEYS[1]", f) < 0 ||
	    fclose(f) != 0 || (other = fs_redis_script_load(r, path)) < 0) {
		check(0, "a second script");
		return;
	}
	for (int i = 0; i < 4; i++)
		calls[i] = (struct fs_redis_call){ .script = i % 2 ? other : script, .nkeys = 1,
			.argc = 2, .argv = argv };
	fs_redis_eval_many(r, calls, 4);
	for (int i = 0; i < 4; i++)
		each &= i % 2 ? calls[i].reply != NULL && calls[i].reply->type == REDIS_REPLY_STRING &&
			strcmp(calls[i].reply->str, "other mixed") == 0 :
				reply_value(&calls[i]) == i / 2 + 1;
	check(each && value_of(r, "mixed") == 2,
	    "a pipeline of two scripts, interleaved: each call runs its own, in order");
	calls_free(calls, 4);
}

/*
 * fs_redis_eval_many on one Redis: each reply to its call, in order, an
 * error reply to its call only, NOSCRIPT healed; behind a frozen relay,
 * every call written before the first reply is awaited (they all run once
 * the relay thaws) and none is sent again after the timeout.
 */
static void
pipeline_tests(struct test_redis *srv, fs_redis *r)
{
	static const char body[] = "redis.call('INCR', KEYS[1]) "
				   "if ARGV[1] == 'bad' then return redis.error_reply('ERR bad call') end "
				   "return redis.call('GET', KEYS[1])";
	const char *good[2] = { "pipe", "ok" }, *bad[2] = { "pipe", "bad" };
	struct fs_redis_call calls[5];
	struct test_relay relay = { -1, 0 };
	char path[192], addr[64];
	int script, far_script = -1, order = 1, ran = 0;
	fs_redis *far = NULL;
	struct timespec t0, t1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/pipe.lua", srv->dir);
	if ((f = fopen(path, "w")) == NULL || fputs(body, f) < 0 || fclose(f) != 0 ||
	    (script = fs_redis_script_load(r, path)) < 0) {
		check(0, "the pipeline's script");
		return;
	}
	for (int i = 0; i < 5; i++)
		calls[i] = (struct fs_redis_call){ .script = script, .nkeys = 1, .argc = 2, .argv = i == 2 ? bad : good };
	fs_redis_eval_many(r, calls, 5);
	for (int i = 0; i < 5; i++)
		order &= i == 2 ? calls[i].reply == NULL : calls[i].reply != NULL &&
		    calls[i].reply->type == REDIS_REPLY_STRING && strtol(calls[i].reply->str, NULL, 10) == i + 1;
	check(order && calls[2].err == FS_REDIS_ERR_REPLY && strstr(calls[2].errstr, "bad call") != NULL,
	    "a pipeline: each reply to its call in order; an error reply fails its call only");
	calls_free(calls, 5);
	freeReplyObject(fs_redis_command(r, "SCRIPT FLUSH"));
	calls[2].argv = good;
	fs_redis_eval_many(r, calls, 3);
	check(calls[0].reply != NULL && calls[1].reply != NULL && calls[2].reply != NULL &&
		value_of(r, "pipe") == 8,
	    "a pipeline after SCRIPT FLUSH: NOSCRIPT, so each runs again alone, once");
	calls_free(calls, 3);
	mixed(r, script, srv->dir, calls);
	halves(r, script, calls);

	/* Behind a relay that freezes once the script is known there. */
	if (test_relay_start(&relay, srv->sock) == 0)
		snprintf(addr, sizeof(addr), "127.0.0.1:%d", relay.port);
	if (relay.pid < 0 || (far = fs_redis_new(addr, NULL, NULL)) == NULL ||
	    (far_script = fs_redis_script_load(far, path)) < 0) {
		check(0, "a driver behind the relay");
		goto out;
	}
	for (int i = 0; i < 3; i++)
		calls[i] = (struct fs_redis_call){ .script = far_script, .nkeys = 1, .argc = 2, .argv = good };
	fs_redis_eval_many(far, calls, 1);
	calls_free(calls, 1);
	kill(relay.pid, SIGSTOP);
	fs_redis_eval_many(far, calls, 3);
	check(calls[0].reply == NULL && calls[0].err == FS_REDIS_ERR_IO &&
		calls[1].reply == NULL && calls[1].err == FS_REDIS_ERR_IO &&
		calls[2].reply == NULL && calls[2].err == FS_REDIS_ERR_IO,
	    "a silent server: every call of the pipeline fails as I/O (it may have run)");
	kill(relay.pid, SIGCONT);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		ran = value_of(r, "pipe") == 12;
		clock_gettime(CLOCK_MONOTONIC, &t1);
	} while (!ran && t1.tv_sec - t0.tv_sec < 5);
	check(ran, "the three were all written before a reply was awaited: they ran once the relay thawed");
	fs_redis_eval_many(far, calls, 1);
	check(calls[0].reply != NULL && value_of(r, "pipe") == 13,
	    "none was sent again; the next pipeline reconnects");
	calls_free(calls, 1);
	halves_late(far, far_script, &relay, calls);
	timeout_setting(far, &relay, calls, far_script);
out:
	fs_redis_free(far);
	test_relay_stop(&relay);
	unlink(path);
}

/* CRC16 and slots against the reference values of Redis's cluster spec and cluster.c. */
static void
hashing_tests(void)
{
	char addr[64];
	unsigned slot = 0;

	check(fs_redis_crc16("123456789", 9) == 0x31C3, "CRC16 of \"123456789\" is 0x31C3");
	check(fs_redis_key_slot("foo", 3) == 12182, "slot of foo is 12182");
	check(fs_redis_key_slot("bar", 3) == 5061, "slot of bar is 5061");
	check(fs_redis_key_slot("{user1000}.following", 20) ==
		fs_redis_key_slot("{user1000}.followers", 20) &&
		fs_redis_key_slot("{user1000}.following", 20) == fs_redis_key_slot("user1000", 8),
	    "{user1000}.following and .followers share the slot of user1000");
	check(fs_redis_key_slot("foo{}{bar}", 10) == (fs_redis_crc16("foo{}{bar}", 10) & 16383),
	    "foo{}{bar}: an empty first tag hashes the whole key");
	check(fs_redis_key_slot("foo{{bar}}zap", 13) == fs_redis_key_slot("{bar", 4) &&
		fs_redis_key_slot("{bar", 4) == (fs_redis_crc16("{bar", 4) & 16383),
	    "foo{{bar}}zap hashes \"{bar\"");
	check(fs_redis_key_slot("foo{bar}{zap}", 13) == fs_redis_key_slot("bar", 3),
	    "foo{bar}{zap}: the first tag only");
	check(fs_redis_key_slot("fs:{42}:stock:7", 15) == fs_redis_key_slot("fs:{42}:holders", 15) &&
		fs_redis_key_slot("fs:{42}:sale", 12) == fs_redis_key_slot("42", 2),
	    "a sale's keys share its tag's slot");
	check(fs_redis_key_slot("{", 1) == (fs_redis_crc16("{", 1) & 16383) &&
		fs_redis_key_slot("", 0) == 0,
	    "an open brace alone and the empty key hash as they are");

	check(fs_redis_parse_redirect("MOVED 3999 127.0.0.1:6381", &slot, addr, sizeof(addr)) ==
		    FS_REDIS_MOVED &&
		slot == 3999 && strcmp(addr, "127.0.0.1:6381") == 0,
	    "MOVED: slot and address");
	check(fs_redis_parse_redirect("ASK 16383 10.0.0.2:7000", &slot, addr, sizeof(addr)) ==
		    FS_REDIS_ASK &&
		slot == 16383 && strcmp(addr, "10.0.0.2:7000") == 0,
	    "ASK: slot and address");
	check(fs_redis_parse_redirect("MOVED 12 :7001", &slot, addr, sizeof(addr)) == FS_REDIS_MOVED &&
		strcmp(addr, ":7001") == 0,
	    "MOVED to an unknown host keeps the port (the host is the answering node's)");
	check(fs_redis_parse_redirect("MOVED 16384 h:1", &slot, addr, sizeof(addr)) == 0 &&
		fs_redis_parse_redirect("MOVED x h:1", &slot, addr, sizeof(addr)) == 0 &&
		fs_redis_parse_redirect("MOVED 1 nohostport", &slot, addr, sizeof(addr)) == 0 &&
		fs_redis_parse_redirect("MOVED 1 h:", &slot, addr, sizeof(addr)) == 0 &&
		fs_redis_parse_redirect("ASK 1 h:1x", &slot, addr, sizeof(addr)) == 0 &&
		fs_redis_parse_redirect("ERR wrong", &slot, addr, sizeof(addr)) == 0 &&
		fs_redis_parse_redirect("MOVED 1 a-very-long-host-name:1", &slot, addr, 8) == 0,
	    "malformed redirects, other errors and addresses too long are no redirect");
}

/* The driver's node index of the test cluster's node i, or -1. */
static int
drv_node(const fs_redis *r, const struct test_cluster *tc, int i)
{
	char addr[32];

	snprintf(addr, sizeof(addr), "127.0.0.1:%d", tc->port[i]);
	for (int n = 0; n < r->nnodes; n++)
		if (strcmp(r->node[n].addr, addr) == 0)
			return n;
	return -1;
}

/* 1 when the driver's GET key answers want. */
static int
get_is(fs_redis *r, const char *key, const char *want)
{
	redisReply *x = fs_redis_command(r, "GET %s", key);
	int yes = x != NULL && x->type == REDIS_REPLY_STRING && strcmp(x->str, want) == 0;

	if (x != NULL)
		freeReplyObject(x);
	return yes;
}

/* 1 when the reply is a status or string reply; frees it. */
static int
done(redisReply *x)
{
	int yes = x != NULL && (x->type == REDIS_REPLY_STATUS || x->type == REDIS_REPLY_STRING);

	if (x != NULL)
		freeReplyObject(x);
	return yes;
}

/* 1 once no client named name is connected to the server of srv (within 5 s). */
static int
client_gone(struct test_redis *srv, const char *name)
{
	char want[64];
	int gone = 0;

	snprintf(want, sizeof(want), "name=%s ", name);
	for (int i = 0; i < 500 && !gone; i++) {
		redisReply *x = test_redis_cmd(srv, "CLIENT LIST");
		struct timespec step = { 0, 10 * 1000000L };

		gone = x != NULL && x->type == REDIS_REPLY_STRING && strstr(x->str, want) == NULL;
		if (x != NULL)
			freeReplyObject(x);
		if (!gone)
			nanosleep(&step, NULL);
	}
	return gone;
}

/* CLIENT KILL ID id on the server of srv; 1 when killed. */
static int
client_kill(struct test_redis *srv, long long id)
{
	redisReply *x = test_redis_cmd(srv, "CLIENT KILL ID %lld", id);
	int killed = x != NULL && x->type == REDIS_REPLY_INTEGER && x->integer == 1;

	if (x != NULL)
		freeReplyObject(x);
	return killed;
}

/*
 * WAIT after the connection that wrote was cut and a later command of the
 * same batch reconnected: the new connection wrote nothing (its write
 * offset is 0), so a WAIT there would count none of the write. The driver
 * fails instead (-1, I/O), as when the connection is simply gone; whether
 * the server dropped it (seen before the next command) or it fell silent
 * behind the relay (the next command lost).
 */
static void
wait_after_reconnect(struct test_redis *srv)
{
	struct test_relay relay = { -1, 0 };
	char addr[64];
	fs_redis *far = NULL, *near = NULL;
	redisReply *x;
	long long id = -1;

	if (test_relay_start(&relay, srv->sock) == 0)
		snprintf(addr, sizeof(addr), "127.0.0.1:%d", relay.port);
	if (relay.pid < 0 || (far = fs_redis_new(addr, NULL, NULL)) == NULL ||
	    (near = fs_redis_new(srv->sock, NULL, NULL)) == NULL) {
		check(0, "drivers behind the relay and on the socket");
		goto out;
	}
	check(done(fs_redis_command(far, "SET %s %s", "held", "1")) &&
		done(fs_redis_command(far, "CLIENT SETNAME %s", "writer")),
	    "a write behind the relay, on the connection named writer");
	kill(relay.pid, SIGUSR1);
	check(client_gone(srv, "writer"), "the relay cut the writer's connection (the server saw it close)");
	x = fs_redis_command(far, "GET %s", "held");
	check(x == NULL && far->err == FS_REDIS_ERR_IO,
	    "the next command on the cut connection gets no answer: lost, the connection dropped");
	check(done(fs_redis_command(far, "GET %s", "held")), "a later command of the batch reconnects");
	check(fs_redis_wait(far, 1, 10) == -1 && far->err == FS_REDIS_ERR_IO &&
		strstr(far->errstr, "gone") != NULL,
	    "WAIT after the writer's connection was replaced: failed (I/O), never a count");
	check(fs_redis_wait(far, 1, 10) == -1 && far->err == FS_REDIS_ERR_REPLY,
	    "... and the batch is over: nothing left to wait for");

	x = fs_redis_command(near, "CLIENT ID");
	if (x != NULL && x->type == REDIS_REPLY_INTEGER)
		id = x->integer;
	if (x != NULL)
		freeReplyObject(x);
	check(id > 0 && done(fs_redis_command(near, "SET %s %s", "held", "2")) &&
		client_kill(srv, id),
	    "a write, then the server drops the writer's connection (CLIENT KILL)");
	check(done(fs_redis_command(near, "GET %s", "held")),
	    "the next command sees the hang-up and reconnects before it is sent");
	check(fs_redis_wait(near, 1, 10) == -1 && near->err == FS_REDIS_ERR_IO,
	    "WAIT after a silent reconnect: failed (I/O), never a count");
	check(done(fs_redis_command(near, "SET %s %s", "held", "3")) && fs_redis_wait(near, 1, 10) == 0,
	    "a write on the new connection: its WAIT counts again (no replica here: 0)");
out:
	fs_redis_free(far);
	fs_redis_free(near);
	test_relay_stop(&relay);
}

/* Runs CLUSTER SETSLOT slot what id on node i; 1 when it says OK. */
static int
setslot(const struct test_cluster *tc, int i, unsigned slot, const char *what, const char *id)
{
	return done(test_cluster_cmd(tc->port[i], "CLUSTER SETSLOT %u %s %s", slot, what, id));
}

/*
 * get.lua over fs:{1..12}:sale (spread over the masters) and extra, in one
 * pipeline: true when each reply is its key's value (extra's: want).
 */
static int
pipeline_of_sales(fs_redis *r, int script, const char *extra, const char *want)
{
	static char keys[13][32];
	const char *argv[13][1];
	struct fs_redis_call calls[13];
	int ok = 1;

	for (int i = 0; i < 13; i++) {
		if (i < 12)
			snprintf(keys[i], sizeof(keys[i]), "fs:{%d}:sale", i + 1);
		argv[i][0] = i < 12 ? keys[i] : extra;
		calls[i] = (struct fs_redis_call){ .script = script, .nkeys = 1, .argc = 1, .argv = argv[i] };
	}
	fs_redis_eval_many(r, calls, 13);
	for (int i = 0; i < 13; i++) {
		char v[16];

		snprintf(v, sizeof(v), "%d", i + 1);
		ok &= calls[i].reply != NULL && calls[i].reply->type == REDIS_REPLY_STRING &&
		    strcmp(calls[i].reply->str, i < 12 ? v : want) == 0;
	}
	calls_free(calls, 13);
	return ok;
}

/*
 * The driver against a private 3-master cluster: routing, scripts loaded
 * per node, a transaction on one node, every master, WAIT, a slot migrated
 * (ASK, then MOVED) and a master killed and replaced by its replica.
 */
static void
cluster_tests(void)
{
	struct test_cluster tc;
	char seeds[128], key[64], path[128], id_src[41], id_dst[41];
	int owners[TEST_CLUSTER_NODES] = { 0 }, routed = 1, slots_ok = 1, keys = 0, nused = 0;
	int script, src, dst, m, replica, recovered = 0, tries = 0, killed, reread = 0;
	const char *argv[1];
	long long total = 0;
	struct timespec t0, t1;
	unsigned slot;
	redisReply *x;
	fs_redis *r;
	FILE *f;

	if (test_cluster_start(&tc, 40) != 0) {
		check(0, "a private 3-master cluster starts (redis-server, redis-cli --cluster create)");
		return;
	}
	/* The first seed is a port nobody listens on. */
	snprintf(seeds, sizeof(seeds), "127.0.0.1:%d,127.0.0.1:%d", tc.port[0] + 9, tc.port[1]);
	r = fs_redis_new(seeds, NULL, NULL);
	check(r != NULL && r->nseeds == 2, "an address list of two seeds");
	if (r == NULL)
		goto out;
	check(done(fs_redis_command(r, "SET %s %s", "fs:{1}:k", "v1")) && r->cluster == 1 &&
		r->nmasters == 3,
	    "the cluster is found past a dead seed: three masters, a SET works");
	keys++;
	for (int sale = 1; sale <= 12; sale++) {
		int owner, n;

		snprintf(key, sizeof(key), "fs:{%d}:sale", sale);
		x = test_cluster_cmd(tc.port[0], "CLUSTER KEYSLOT %s", key);
		slots_ok &= x != NULL && x->type == REDIS_REPLY_INTEGER &&
		    (unsigned)x->integer == fs_redis_key_slot(key, strlen(key));
		if (x != NULL)
			freeReplyObject(x);
		routed &= done(fs_redis_command(r, "SET %s %d", key, sale));
		keys++;
		owner = test_cluster_owner(&tc, key);
		n = owner >= 0 ? drv_node(r, &tc, owner) : -1;
		routed &= n >= 0 && r->last == n;
		if (owner >= 0 && owners[owner]++ == 0)
			nused++;
	}
	check(slots_ok, "fs_redis_key_slot agrees with CLUSTER KEYSLOT");
	check(routed && nused == 3, "each key goes to its slot's master (12 sales over all three)");

	snprintf(path, sizeof(path), "%s/get.lua", tc.dir);
	if ((f = fopen(path, "w")) != NULL) {
		fputs("return redis.call('GET', KEYS[1])", f);
		fclose(f);
	}
	script = fs_redis_script_load(r, path);
	routed = script >= 0;
	for (int sale = 1; sale <= 12 && routed; sale++) {
		char want[8];

		snprintf(key, sizeof(key), "fs:{%d}:sale", sale);
		snprintf(want, sizeof(want), "%d", sale);
		argv[0] = key;
		x = fs_redis_eval(r, script, 1, 1, argv);
		routed = x != NULL && x->type == REDIS_REPLY_STRING && strcmp(x->str, want) == 0;
		if (x != NULL)
			freeReplyObject(x);
	}
	check(routed, "a script runs on each key's master, sent to each node when it lacks it");

	/* A transaction whose key is on another node than the previous command's. */
	for (int sale = 100; sale < 200; sale++) {
		snprintf(key, sizeof(key), "fs:{%d}:tx", sale);
		if (r->slot[fs_redis_key_slot(key, strlen(key))] != r->last)
			break;
	}
	routed = done(fs_redis_command(r, "MULTI"));
	routed &= done(fs_redis_command(r, "SET %s %s", key, "t"));
	routed &= done(fs_redis_command(r, "GET %s", key));
	x = fs_redis_command(r, "EXEC");
	check(routed && x != NULL && x->type == REDIS_REPLY_ARRAY && x->elements == 2 &&
		x->element[1]->type == REDIS_REPLY_STRING && strcmp(x->element[1]->str, "t") == 0 &&
		r->multi == 0,
	    "MULTI ... EXEC runs on the node of its first key");
	if (x != NULL)
		freeReplyObject(x);
	keys++;
	check(fs_redis_wait(r, 1, FS_REDIS_WAIT_MAX_MS) == 1, "WAIT: the replica of that node has the write");

	check(fs_redis_masters(r) == 3, "three masters to visit");
	for (int i = 0; i < 3; i++) {
		x = fs_redis_master_argv(r, i, 1, (const char *[]){ "DBSIZE" }, NULL);
		if (x != NULL && x->type == REDIS_REPLY_INTEGER)
			total += x->integer;
		if (x != NULL)
			freeReplyObject(x);
	}
	check(total == keys, "every master visited once: the DBSIZEs add up to the keys written");

	/* A slot on its way from src to dst: ASK while it moves, MOVED after. */
	snprintf(key, sizeof(key), "fs:{mig}:x");
	check(done(fs_redis_command(r, "SET %s %s", key, "m")), "a key to migrate");
	slot = fs_redis_key_slot(key, strlen(key));
	src = test_cluster_owner(&tc, key);
	dst = src == 0 ? 1 : 0;
	check(src >= 0 && src < 3 && test_cluster_id(&tc, src, id_src) == 0 &&
		test_cluster_id(&tc, dst, id_dst) == 0 &&
		setslot(&tc, dst, slot, "IMPORTING", id_src) &&
		setslot(&tc, src, slot, "MIGRATING", id_dst) &&
		done(test_cluster_cmd(tc.port[src], "MIGRATE 127.0.0.1 %d %s 0 5000", tc.port[dst], key)),
	    "the key's slot is migrating and the key moved");
	check(get_is(r, key, "m") && r->last == drv_node(r, &tc, dst) &&
		r->slot[slot] == drv_node(r, &tc, src),
	    "ASK: read on the importing node after ASKING; the map still says the old owner");
	check(script >= 0 && pipeline_of_sales(r, script, key, "m"),
	    "a pipeline over the three masters: each reply its key's; the migrating key's after ASK");
	for (int i = 0; i < 3; i++)
		setslot(&tc, i == 0 ? dst : i == dst ? 0 : i, slot, "NODE", id_dst);
	check(script >= 0 && pipeline_of_sales(r, script, key, "m") &&
		r->slot[slot] == drv_node(r, &tc, dst),
	    "... and after MOVED, which the driver's map then follows");
	check(get_is(r, key, "m") && r->slot[slot] == drv_node(r, &tc, dst),
	    "MOVED: once the slot moved the driver follows and its map says the new owner");

	/* A master killed, its replica promoted: the driver finds the new owner by itself. */
	m = test_cluster_owner(&tc, "fs:{1}:k");
	replica = -1;
	for (int i = 0; i < TEST_CLUSTER_NODES; i++)
		if (i != m && test_cluster_master_of(&tc, i) == m)
			replica = i;
	check(m >= 0 && replica >= 0 && done(fs_redis_command(r, "SET %s %s", "fs:{1}:k", "v2")) &&
		fs_redis_wait(r, 1, FS_REDIS_WAIT_MAX_MS) == 1,
	    "a write the replica of its master has (WAIT 1)");
	/* The server drops the writer's connection; a read of the batch reconnects. */
	killed = done(fs_redis_command(r, "SET %s %s", "fs:{1}:k", "v2"));
	x = test_cluster_cmd(tc.port[m], "CLIENT KILL TYPE normal");
	killed &= x != NULL && x->type == REDIS_REPLY_INTEGER && x->integer >= 1;
	if (x != NULL)
		freeReplyObject(x);
	for (int i = 0; i < 3 && !reread; i++)
		reread = get_is(r, "fs:{1}:k", "v2");
	check(killed && reread && fs_redis_wait(r, 1, FS_REDIS_WAIT_MAX_MS) == -1 &&
		r->err == FS_REDIS_ERR_IO,
	    "WAIT after the writer's connection was replaced: failed, not the replica count of the new one");
	test_cluster_kill(&tc, m, SIGKILL);
	check(done(test_cluster_cmd(tc.port[replica], "CLUSTER FAILOVER FORCE")),
	    "master killed (SIGKILL); its replica takes over (CLUSTER FAILOVER FORCE)");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	t1 = t0;
	/* PING first: a command without a key went to the dead master last. */
	while (!recovered && t1.tv_sec - t0.tv_sec < 15) {
		recovered = done(fs_redis_command(r, "PING")) && get_is(r, "fs:{1}:k", "v2");
		tries++;
		clock_gettime(CLOCK_MONOTONIC, &t1);
	}
	printf("# recovered after %d tries, %ld ms\n", tries,
	    (long)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000));
	if (!recovered)
		printf("# last error: %s\n", r->errstr);
	check(recovered && r->last == drv_node(r, &tc, replica),
	    "the driver recovers by itself within 15 s, on the promoted replica");
	argv[0] = "fs:{1}:k";
	x = script >= 0 ? fs_redis_eval(r, script, 1, 1, argv) : NULL;
	check(x != NULL && x->type == REDIS_REPLY_STRING && strcmp(x->str, "v2") == 0,
	    "the script runs on the promoted node");
	if (x != NULL)
		freeReplyObject(x);
	unlink(path);
out:
	fs_redis_free(r);
	test_cluster_stop(&tc);
}

int
main(void)
{
	struct test_redis srv;
	char path[192], err[128], big[300];
	const char *argv[3];
	size_t lens[3];
	struct fs_cfg cfg;
	fs_redis *r, *other;
	redisReply *reply;
	int script;

	hashing_tests();
	if (test_redis_start(&srv) != 0) {
		printf("Bail out! redis-server does not start (deploy/install-deps installs it)\n");
		return 99;
	}
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	check(fs_redis_new(big, NULL, NULL) == NULL,
	    "an address longer than the driver keeps is refused");
	r = fs_redis_new("no-port", NULL, NULL);
	err[0] = '\0';
	check(r != NULL && fs_redis_dial(r, err, sizeof(err)) == NULL && err[0] != '\0',
	    "a malformed address fails to dial, with a reason");
	fs_redis_free(r);
	r = fs_redis_new(srv.sock, "nobody", "wrong");
	err[0] = '\0';
	check(r != NULL && fs_redis_dial(r, err, sizeof(err)) == NULL && err[0] != '\0',
	    "a user and password the server does not know: AUTH fails, with a reason");
	fs_redis_free(r);
	/* The private server has no ACL: settings without a user or password send no AUTH. */
	r = test_redis_cfg(&srv, &cfg) == 0 ? fs_redis_open(&cfg, err, sizeof(err)) : NULL;
	check(r != NULL && r->node[0].ctx == NULL, "opens from the settings without credentials, lazily");

	argv[0] = "SET";
	argv[1] = "k";
	argv[2] = "a\0b";
	lens[0] = 3;
	lens[1] = 1;
	lens[2] = 3;
	reply = fs_redis_argv(r, 3, argv, lens);
	check(reply != NULL && reply->type == REDIS_REPLY_STATUS, "a command given as arguments");
	freeReplyObject(reply);
	reply = fs_redis_command(r, "GET %s", "k");
	check(reply != NULL && reply->type == REDIS_REPLY_STRING && reply->len == 3 &&
		memcmp(reply->str, "a\0b", 3) == 0,
	    "values are binary-safe");
	freeReplyObject(reply);
	check(r->cluster == 0 && fs_redis_masters(r) == 1 &&
		done(fs_redis_master_argv(r, 0, 1, (const char *[]){ "PING" }, NULL)),
	    "one socket path is one Redis: one master");
	snprintf(big, sizeof(big), "%s,%s", srv.sock, srv.sock);
	other = fs_redis_new(big, NULL, NULL);
	check(other != NULL && done(fs_redis_command(other, "PING")) && other->cluster == 0 &&
		fs_redis_masters(other) == 1,
	    "a seed list whose server has no cluster support (CLUSTER SLOTS refused): the one Redis");
	fs_redis_free(other);
	check(fs_redis_command(r, "INCR %s", "k") == NULL && r->err == FS_REDIS_ERR_REPLY &&
		r->node[0].ctx != NULL &&
		strstr(r->errstr, "ERR") != NULL,
	    "an error reply is NULL with its text; the connection stays");

	check(fs_redis_wait(r, 1, 10) == 0 && fs_redis_wait(r, 1, 10) == -1,
	    "WAIT on a Redis without replicas: none has the writes; then nothing to wait for");
	check(fs_redis_script_load(r, "/nonexistent/x.lua") == -1 && r->err,
	    "a missing script file is refused");
	script = write_script(&srv, path, sizeof(path), "return {KEYS[1], ARGV[1]}") == 0 ?
	    fs_redis_script_load(r, path) :
	    -1;
	argv[0] = "key";
	argv[1] = "arg";
	reply = script < 0 ? NULL : fs_redis_eval(r, script, 1, 2, argv);
	check(reply != NULL && reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 &&
		strcmp(reply->element[0]->str, "key") == 0 &&
		strcmp(reply->element[1]->str, "arg") == 0,
	    "a script runs with its keys and arguments");
	if (reply != NULL)
		freeReplyObject(reply);
	if ((reply = fs_redis_command(r, "SCRIPT FLUSH")) != NULL)
		freeReplyObject(reply);
	reply = script < 0 ? NULL : fs_redis_eval(r, script, 1, 2, argv);
	check(reply != NULL && reply->type == REDIS_REPLY_ARRAY,
	    "after SCRIPT FLUSH the script is sent again (NOSCRIPT)");
	if (reply != NULL)
		freeReplyObject(reply);

	pipeline_tests(&srv, r);
	wait_after_reconnect(&srv);

	test_redis_stop(&srv);
	check(fs_redis_command(r, "PING") == NULL && r->err == FS_REDIS_ERR_IO && r->node[0].ctx == NULL,
	    "server gone: NULL, and the connection is dropped");
	check(test_redis_run(&srv) == 0, "the server is back");
	reply = fs_redis_command(r, "PING");
	check(reply != NULL && r->err == 0, "the next command reconnects by itself");
	if (reply != NULL)
		freeReplyObject(reply);
	reply = script < 0 ? NULL : fs_redis_eval(r, script, 1, 2, argv);
	check(reply != NULL, "a script survives a restart of the server");
	if (reply != NULL)
		freeReplyObject(reply);

	fs_redis_free(r);
	fs_redis_free(NULL);
	unlink(path);
	test_redis_finish(&srv);
	cluster_tests();
	return failures == 0 ? 0 : 1;
}

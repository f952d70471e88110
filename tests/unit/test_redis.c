/* Unit test of lib/redis against a real redis-server of its own (tests/unit/redis_server.h). */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "redis.h"
#include "expect.h"
#include "redis_server.h"

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

int
main(void)
{
	struct test_redis srv;
	char path[192], err[128], big[300];
	const char *argv[3];
	size_t lens[3];
	struct fs_cfg cfg;
	fs_redis *r;
	redisReply *reply;
	int script;

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
	check(r != NULL && r->ctx == NULL, "opens from the settings without credentials, lazily");

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
	check(fs_redis_command(r, "INCR %s", "k") == NULL && r->err && r->ctx != NULL &&
		strstr(r->errstr, "ERR") != NULL,
	    "an error reply is NULL with its text; the connection stays");

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

	test_redis_stop(&srv);
	check(fs_redis_command(r, "PING") == NULL && r->err && r->ctx == NULL,
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
	return failures == 0 ? 0 : 1;
}

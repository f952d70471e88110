/*
 * A real PostgreSQL for the unit tests of the modules that keep their rules
 * in SQL: initdb in a fresh temporary directory, the server on a unix
 * socket there only (no TCP port, so it never meets another checkout's
 * servers), polled until it answers, the project's migrations (sql/ of
 * top_srcdir) applied to a database "flashsale", stopped by its PID. As
 * root the server runs as the postgres user (it refuses root). The
 * binaries come from deploy/install-deps (PostgreSQL 15).
 */
#ifndef FS_TEST_PG_SERVER_H
#define FS_TEST_PG_SERVER_H

#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <glob.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#define TEST_PG_BIN "/usr/lib/postgresql/15/bin"

struct test_pg {
	pid_t pid;
	char dir[64];
	char data[128];
	char conninfo[256];	/* the database "flashsale", as the superuser */
};

/* In a child: becomes the postgres user when root (PostgreSQL refuses root). */
static int
test_pg_drop_root(void)
{
	struct passwd *pw;

	if (geteuid() != 0)
		return 0;
	if ((pw = getpwnam("postgres")) == NULL || setgroups(0, NULL) != 0 ||
	    setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0)
		return -1;
	return 0;
}

/* Stops the server by its PID (a fast shutdown) and waits; the data stay for a restart. */
static void
test_pg_stop(struct test_pg *p)
{
	if (p->pid > 0) {
		kill(p->pid, SIGINT);
		waitpid(p->pid, NULL, 0);
	}
	p->pid = -1;
}

/* (Re)starts the server; 0 once it accepts connections (within 30 s), or -1. */
static int
test_pg_run(struct test_pg *p)
{
	struct timespec step = { 0, 20 * 1000000L };
	char ping[256];

	if ((p->pid = fork()) < 0)
		return -1;
	if (p->pid == 0) {
		if (test_pg_drop_root() != 0)
			_exit(126);
		/* A test that dies (an ASan abort) takes its server with it. */
		prctl(PR_SET_PDEATHSIG, SIGINT);
		execl(TEST_PG_BIN "/postgres", "postgres", "-D", p->data, "-k", p->dir, "-c",
		    "listen_addresses=", "-c", "fsync=off", "-c", "synchronous_commit=off", "-c",
		    "full_page_writes=off", "-c", "log_min_messages=panic", (char *)NULL);
		_exit(127);
	}
	snprintf(ping, sizeof(ping), "host=%s dbname=postgres user=postgres", p->dir);
	for (int i = 0; i < 1500; i++) {
		if (PQping(ping) == PQPING_OK)
			return 0;
		if (waitpid(p->pid, NULL, WNOHANG) == p->pid)
			break; /* it exited: not installed, or refused the data */
		nanosleep(&step, NULL);
	}
	test_pg_stop(p);
	return -1;
}

/* Runs sql (any number of statements) on database db; 0 or -1 (printed). */
static int
test_pg_sql(const struct test_pg *p, const char *db, const char *sql)
{
	char conninfo[256];
	PGconn *c;
	PGresult *r;
	int ok;

	snprintf(conninfo, sizeof(conninfo), "host=%s dbname=%s user=postgres", p->dir, db);
	c = PQconnectdb(conninfo);
	r = PQstatus(c) == CONNECTION_OK ? PQexec(c, sql) : NULL;
	ok = r != NULL && (PQresultStatus(r) == PGRES_COMMAND_OK ||
	    PQresultStatus(r) == PGRES_TUPLES_OK);
	if (!ok)
		printf("# test_pg_sql: %s", r != NULL ? PQresultErrorMessage(r) : PQerrorMessage(c));
	PQclear(r);
	PQfinish(c);
	return ok ? 0 : -1;
}

/* Applies top/sql/[0-9]*.sql in order to the database "flashsale"; 0 or -1. */
static int
test_pg_migrate(const struct test_pg *p, const char *top)
{
	char pattern[512], *text = NULL;
	glob_t g;
	int rc = -1;

	snprintf(pattern, sizeof(pattern), "%s/sql/[0-9]*.sql", top);
	if (glob(pattern, 0, NULL, &g) != 0)
		return -1;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		FILE *f = fopen(g.gl_pathv[i], "r");
		long len;

		if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 ||
		    fseek(f, 0, SEEK_SET) != 0 || (text = malloc((size_t)len + 1)) == NULL ||
		    fread(text, 1, (size_t)len, f) != (size_t)len) {
			if (f != NULL)
				fclose(f);
			goto fail;
		}
		fclose(f);
		text[len] = '\0';
		if (test_pg_sql(p, "flashsale", text) != 0) {
			printf("# in %s\n", g.gl_pathv[i]);
			goto fail;
		}
		free(text);
		text = NULL;
	}
	rc = 0;
fail:
	free(text);
	globfree(&g);
	return rc;
}

/*
 * A fresh directory, initdb, a server, and the database "flashsale" with
 * the migrations of top (top_srcdir). 0, or -1 (stopped and cleaned up by
 * test_pg_finish all the same).
 */
static int
test_pg_start(struct test_pg *p, const char *top)
{
	struct passwd *pw = geteuid() == 0 ? getpwnam("postgres") : NULL;
	pid_t pid;
	int status;

	memset(p, 0, sizeof(*p));
	p->pid = -1;
	/* The initdb child reopens stdout: what is buffered must not print twice. */
	fflush(stdout);
	snprintf(p->dir, sizeof(p->dir), "/tmp/fs-unit-pg-XXXXXX");
	if (mkdtemp(p->dir) == NULL || (geteuid() == 0 && (pw == NULL ||
	    chown(p->dir, pw->pw_uid, pw->pw_gid) != 0)))
		return -1;
	snprintf(p->data, sizeof(p->data), "%s/data", p->dir);
	snprintf(p->conninfo, sizeof(p->conninfo), "host=%s dbname=flashsale user=postgres",
	    p->dir);
	if ((pid = fork()) < 0)
		return -1;
	if (pid == 0) {
		if (test_pg_drop_root() != 0 || freopen("/dev/null", "w", stdout) == NULL)
			_exit(126);
		execl(TEST_PG_BIN "/initdb", "initdb", "-D", p->data, "-U", "postgres",
		    "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8", "-N", (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return -1;
	if (test_pg_run(p) != 0 || test_pg_sql(p, "postgres", "CREATE DATABASE flashsale") != 0)
		return -1;
	return test_pg_migrate(p, top);
}

/* Stops the server and removes its directory. */
static void
test_pg_finish(struct test_pg *p)
{
	pid_t pid;

	test_pg_stop(p);
	if (p->data[0] == '\0')
		return; /* mkdtemp failed: nothing to remove */
	if ((pid = fork()) == 0) {
		execlp("rm", "rm", "-rf", p->dir, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

#endif

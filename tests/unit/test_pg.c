/*
 * Unit test of lib/pg against a real PostgreSQL (tests/unit/pg_server.h):
 * parameterised statements and their exact results, errors with their
 * SQLSTATE, a lost server told apart from a bad statement, and the
 * reconnect after the server comes back.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg.h"
#include "pg_server.h"
#include "expect.h"

/* The one value of a one-row, one-column result as text, or "" (a static buffer). */
static const char *
value_of(fs_pg *pg, const char *sql, int n, const char *const *params)
{
	static char out[256];
	PGresult *r = fs_pg_exec(pg, sql, n, params);

	out[0] = '\0';
	if (r != NULL && PQntuples(r) == 1 && PQnfields(r) == 1)
		snprintf(out, sizeof(out), "%s", PQgetvalue(r, 0, 0));
	PQclear(r);
	return out;
}

static void
test_new(void)
{
	char longinfo[600];
	fs_pg *pg;

	memset(longinfo, 'a', sizeof(longinfo) - 1);
	longinfo[sizeof(longinfo) - 1] = '\0';
	check(fs_pg_new(longinfo) == NULL, "a conninfo longer than 511 bytes is refused");
	pg = fs_pg_new("host=/nonexistent/fs-unit-pg dbname=x connect_timeout=2");
	check(pg != NULL && pg->conn == NULL, "fs_pg_new connects lazily");
	check(fs_pg_connect(pg) == -1 && pg->err == 1 && strcmp(pg->sqlstate, "08000") == 0 &&
	    fs_pg_lost(pg) && strchr(pg->errstr, '\n') == NULL,
	    "no server: -1, SQLSTATE 08000, lost, a one-line error");
	check(fs_pg_exec(pg, "SELECT 1", 0, NULL) == NULL && fs_pg_ping(pg) == -1,
	    "no server: statements and ping fail");
	fs_pg_free(pg);
	fs_pg_free(NULL);
}

static void
test_statements(fs_pg *pg)
{
	const char *p1[] = { "41" }, *p3[3];
	const char *ins = "INSERT INTO pg_unit (name, n) VALUES ($1, $2::int)";
	char n[16];
	PGresult *r;
	int i, inserted = 0;

	check(fs_pg_ping(pg) == 0 && pg->err == 0, "ping answers");
	check(strcmp(value_of(pg, "SELECT $1::int + 1", 1, p1), "42") == 0,
	    "a parameter goes in as text and the result comes out exact");
	p1[0] = "Robert'); DROP TABLE sales; --";
	check(strcmp(value_of(pg, "SELECT $1::text", 1, p1), p1[0]) == 0 &&
	    strcmp(value_of(pg, "SELECT count(*) FROM sales", 0, NULL), "0") == 0,
	    "a parameter is data, never SQL");
	check(fs_pg_run(pg, "CREATE TABLE pg_unit (name text PRIMARY KEY, n int NOT NULL)", 0,
	    NULL) == 0, "a statement without a result runs");
	for (i = 1; i <= 3; i++) {
		snprintf(n, sizeof(n), "%d", i * 10);
		p3[0] = i == 1 ? "a" : i == 2 ? "b" : "c";
		p3[1] = n;
		inserted += fs_pg_run(pg, ins, 2, p3) == 0;
	}
	r = fs_pg_exec(pg, "SELECT name, n FROM pg_unit ORDER BY name", 0, NULL);
	check(inserted == 3 && r != NULL && PQntuples(r) == 3 &&
	    strcmp(PQgetvalue(r, 0, 0), "a") == 0 && strcmp(PQgetvalue(r, 2, 1), "30") == 0 &&
	    strcmp(value_of(pg, "SELECT sum(n) FROM pg_unit", 0, NULL), "60") == 0,
	    "three rows in, the same three rows out");
	PQclear(r);

	p3[0] = "a";
	p3[1] = "99";
	check(fs_pg_run(pg, ins, 2, p3) == -1 && strcmp(pg->sqlstate, "23505") == 0 &&
	    !fs_pg_lost(pg) && strstr(pg->errstr, "duplicate key") != NULL,
	    "a duplicate key: -1 with SQLSTATE 23505, not a lost server");
	check(strcmp(value_of(pg, "SELECT n FROM pg_unit WHERE name = 'a'", 0, NULL), "10") == 0 &&
	    pg->err == 0, "the refused row changed nothing, and the next statement clears err");
	check(fs_pg_run(pg, "SELEC 1", 0, NULL) == -1 && strcmp(pg->sqlstate, "42601") == 0 &&
	    !fs_pg_lost(pg), "a syntax error: SQLSTATE 42601");
	p3[1] = "x";
	check(fs_pg_run(pg, ins, 2, p3) == -1 && strcmp(pg->sqlstate, "22P02") == 0,
	    "a parameter of the wrong form: SQLSTATE 22P02");
}

/*
 * A server that turns read-only under a connection (a failover demoted it)
 * refuses the write with 25006: reported as a lost connection, dropped, and
 * the next statement connects again (where the primary now is).
 */
static void
test_read_only(fs_pg *pg)
{
	const char *p3[] = { "d", "40" };
	const char *ins = "INSERT INTO pg_unit (name, n) VALUES ($1, $2::int)";

	check(fs_pg_run(pg, "SET default_transaction_read_only = on", 0, NULL) == 0,
	    "the session turns read-only");
	check(fs_pg_run(pg, ins, 2, p3) == -1 && fs_pg_lost(pg) && pg->conn == NULL &&
	    strstr(pg->errstr, "read-only") != NULL,
	    "a write to a read-only server fails as a lost connection, and drops it");
	check(fs_pg_run(pg, ins, 2, p3) == 0 && pg->err == 0,
	    "the next statement connects again and writes");
	check(fs_pg_run(pg, "DELETE FROM pg_unit WHERE name = 'd'", 0, NULL) == 0, "(tidied)");
}

/* The connection string's hosts, and whether commits wait for a standby. */
static void
test_replication(fs_pg *pg)
{
	fs_pg *two = fs_pg_new("host=127.0.0.1,127.0.0.1 port=1,2 target_session_attrs=read-write");

	check(two != NULL && fs_pg_hosts(two) == 2 && fs_pg_hosts(pg) == 1,
	    "a multi-host string names 2 hosts, the test server's 1");
	fs_pg_free(two);
	check(fs_pg_synchronous(pg) == 0, "a server without a standby commits alone (0)");
}

static void
test_reconnect(fs_pg *pg, struct test_pg *server)
{
	test_pg_stop(server);
	check(fs_pg_exec(pg, "SELECT 1", 0, NULL) == NULL && fs_pg_lost(pg) && pg->conn == NULL,
	    "the server stopped: the statement fails as a lost connection");
	check(fs_pg_ping(pg) == -1 && fs_pg_lost(pg), "and so does the next, while it is down");
	check(test_pg_run(server) == 0, "the server restarts");
	check(strcmp(value_of(pg, "SELECT count(*) FROM pg_unit", 0, NULL), "3") == 0 &&
	    pg->err == 0, "the next statement reconnects and sees the rows written before");
}

int
main(void)
{
	const char *top = getenv("top_srcdir");
	struct test_pg server;
	fs_pg *pg;

	test_new();
	if (top == NULL || test_pg_start(&server, top) != 0) {
		printf("Bail out! needs top_srcdir and PostgreSQL 15 (deploy/install-deps)\n");
		test_pg_finish(&server);
		return 1;
	}
	if ((pg = fs_pg_new(server.conninfo)) == NULL)
		return 99;
	test_statements(pg);
	test_read_only(pg);
	test_replication(pg);
	test_reconnect(pg, &server);
	fs_pg_free(pg);
	test_pg_finish(&server);
	return failures == 0 ? 0 : 1;
}

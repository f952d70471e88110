#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "pg.h"

static void
set_err(fs_pg *pg, const char *sqlstate, const char *msg)
{
	size_t n;

	fs_metrics_count(FS_M_PG_ERRORS);
	pg->err = 1;
	snprintf(pg->sqlstate, sizeof(pg->sqlstate), "%s", sqlstate != NULL ? sqlstate : "");
	snprintf(pg->errstr, sizeof(pg->errstr), "%s", msg != NULL ? msg : "unknown error");
	/*
	 * libpq messages end in a newline and a failed connection's has several
	 * lines ("...failed: ...\n\tIs the server running..."); logs want one.
	 */
	n = strlen(pg->errstr);
	while (n > 0 && (pg->errstr[n - 1] == '\n' || pg->errstr[n - 1] == ' '))
		pg->errstr[--n] = '\0';
	for (char *c = pg->errstr; *c != '\0'; c++)
		if (*c == '\n' || *c == '\t' || *c == '\r')
			*c = ' ';
}

fs_pg *
fs_pg_new(const char *conninfo)
{
	fs_pg *pg;

	if (strlen(conninfo) >= sizeof(((fs_pg *)0)->conninfo))
		return NULL;
	if ((pg = calloc(1, sizeof(*pg))) == NULL)
		return NULL;
	strcpy(pg->conninfo, conninfo);
	return pg;
}

void
fs_pg_free(fs_pg *pg)
{
	if (pg == NULL)
		return;
	if (pg->conn != NULL)
		PQfinish(pg->conn);
	free(pg);
}

int
fs_pg_connect(fs_pg *pg)
{
	if (pg->conn != NULL && PQstatus(pg->conn) == CONNECTION_OK)
		return 0;
	if (pg->conn != NULL) {
		fs_metrics_count(FS_M_PG_RECONNECTS);
		PQfinish(pg->conn);
	}
	pg->conn = PQconnectdb(pg->conninfo);
	if (pg->conn == NULL) {
		set_err(pg, "08000", "out of memory");
		return -1;
	}
	if (PQstatus(pg->conn) != CONNECTION_OK) {
		set_err(pg, "08000", PQerrorMessage(pg->conn));
		PQfinish(pg->conn);
		pg->conn = NULL;
		return -1;
	}
	return 0;
}

/* 25006 read_only_sql_transaction: a write reached a read-only server. */
static int
is_read_only(const char *sqlstate)
{
	return sqlstate != NULL && strcmp(sqlstate, "25006") == 0;
}

int
fs_pg_lost(const fs_pg *pg)
{
	return pg->err && strncmp(pg->sqlstate, "08", 2) == 0;
}

PGresult *
fs_pg_exec(fs_pg *pg, const char *sql, int nparams, const char *const *params)
{
	ExecStatusType st;
	PGresult *res;

	if (fs_pg_connect(pg) != 0)
		return NULL;
	res = PQexecParams(pg->conn, sql, nparams, NULL, params, NULL, NULL, 0);
	st = res != NULL ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
		pg->err = 0;
		return res;
	}
	if (PQstatus(pg->conn) != CONNECTION_OK) {
		/* The server went away: report it as a connection failure. */
		set_err(pg, "08006", PQerrorMessage(pg->conn));
		fs_metrics_count(FS_M_PG_RECONNECTS);
		PQfinish(pg->conn);
		pg->conn = NULL;
	} else if (res != NULL && is_read_only(PQresultErrorField(res, PG_DIAG_SQLSTATE))) {
		/*
		 * The server became a standby under us (a failover demoted it):
		 * a connection failure too, so that the next statement connects
		 * again and libpq's target_session_attrs finds the new primary.
		 */
		set_err(pg, "08006", PQresultErrorMessage(res));
		fs_metrics_count(FS_M_PG_RECONNECTS);
		PQfinish(pg->conn);
		pg->conn = NULL;
	} else {
		set_err(pg, res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL,
		    res != NULL ? PQresultErrorMessage(res) : PQerrorMessage(pg->conn));
	}
	PQclear(res);
	return NULL;
}

int
fs_pg_run(fs_pg *pg, const char *sql, int nparams, const char *const *params)
{
	PGresult *res = fs_pg_exec(pg, sql, nparams, params);

	if (res == NULL)
		return -1;
	PQclear(res);
	return 0;
}

int
fs_pg_ping(fs_pg *pg)
{
	return fs_pg_run(pg, "SELECT 1", 0, NULL);
}

int
fs_pg_hosts(const fs_pg *pg)
{
	PQconninfoOption *opts, *o;
	int n = 1;

	if ((opts = PQconninfoParse(pg->conninfo, NULL)) == NULL)
		return 1;
	for (o = opts; o->keyword != NULL; o++)
		if (strcmp(o->keyword, "host") == 0 && o->val != NULL)
			for (const char *c = o->val; *c != '\0'; c++)
				n += *c == ',';
	PQconninfoFree(opts);
	return n;
}

int
fs_pg_synchronous(fs_pg *pg)
{
	PGresult *res = fs_pg_exec(pg, "SELECT current_setting('synchronous_standby_names') <> ''", 0,
	    NULL);
	int sync;

	if (res == NULL)
		return -1;
	sync = PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	return sync;
}

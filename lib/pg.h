/*
 * PostgreSQL driver (libpq): one connection that reconnects by itself, and
 * parameterised statements that return their result or an error text with
 * the SQLSTATE.
 */
#ifndef FS_PG_H
#define FS_PG_H

#include <libpq-fe.h>

typedef struct fs_pg {
	PGconn *conn;
	char conninfo[512];
	int err;
	char sqlstate[6];
	char errstr[256];
} fs_pg;

/* Connects lazily; NULL only when out of memory or conninfo is too long. */
fs_pg *fs_pg_new(const char *conninfo);
void fs_pg_free(fs_pg *);
/* Connects (or reconnects after a failure); 0 when usable. */
int fs_pg_connect(fs_pg *);
/*
 * Runs one statement with text parameters. Returns the result (the caller
 * frees it with PQclear) or NULL with err, sqlstate and errstr set.
 */
PGresult *fs_pg_exec(fs_pg *, const char *sql, int nparams, const char *const *params);
/* Runs a statement whose result is not needed; 0 or -1. */
int fs_pg_run(fs_pg *, const char *sql, int nparams, const char *const *params);
/*
 * True when the last failure was the connection, not the statement; a
 * write refused by a server that became read-only (a failover demoted it)
 * counts as one, and the next statement connects again.
 */
int fs_pg_lost(const fs_pg *);

/* SELECT 1: 0 when the server answers, -1 with errstr set. */
int fs_pg_ping(fs_pg *);

/* How many hosts the connection string names (1 without any). */
int fs_pg_hosts(const fs_pg *);
/*
 * Whether a commit waits for a synchronous standby (synchronous_standby_names
 * is set): 1, 0 when the server commits alone, -1 with errstr set.
 */
int fs_pg_synchronous(fs_pg *);

#endif

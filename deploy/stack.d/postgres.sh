# shellcheck shell=sh
# deploy/stack's part PostgreSQL: start (and migrate), ready, stop, status
# (sourced by deploy/stack).

as_postgres() {
	runuser -u postgres -- "$@"
}

# The libpq connection string of the application role; the password is in
# a passfile (libpq reads it, nothing prints it).
pg_conninfo() {
	echo "host=$PG_SOCKDIR port=$PORT_PG dbname=$1 user=$PG_ROLE passfile=$SECRETS/pgpass"
}

# psql on database DB as the application role (its passfile), stopping at
# the first error, without notices.
psql_db() {
	psql_db_name=$1
	shift
	PGOPTIONS='-c client_min_messages=warning' psql -X -q -v ON_ERROR_STOP=1 \
		"$(pg_conninfo "$psql_db_name")" "$@"
}

# psql as the superuser, which only the OS user postgres reaches (peer).
psql_super() {
	PGOPTIONS='-c client_min_messages=warning' as_postgres psql -X -q -h "$PG_SOCKDIR" \
		-p "$PORT_PG" -U postgres -d postgres -v ON_ERROR_STOP=1 "$@"
}

start_postgres() {
	if [ -n "$(part_pids postgres)" ]; then
		say postgres "already running (pid $(part_pids postgres))"
		migrate_postgres
		return 0
	fi
	as_postgres test -x "$STATE" ||
		die "user postgres cannot reach $STATE: make its parents searchable (chmod o+x)"
	if [ ! -f "$PGDATA/PG_VERSION" ]; then
		mkdir -p "$PGDATA"
		chown postgres:postgres "$PGDATA"
		chmod 700 "$PGDATA"
		# Who may connect is $CONF/pg_hba.conf (below), not initdb's file.
		as_postgres "$PGBIN/initdb" -D "$PGDATA" -U postgres --auth-local=peer \
			--auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 \
			>>"$LOG/postgres-initdb.log" 2>&1 ||
			die "initdb failed; see $LOG/postgres-initdb.log"
		# As postgres: root writes no file in a directory of another user's.
		echo "include_if_exists = '$CONF/postgresql.conf'" |
			as_postgres tee -a "$PGDATA/postgresql.conf" >/dev/null
	fi
	# The superuser by peer on the socket (this script, as the OS user
	# postgres); the application role with its scram-sha-256 password on
	# the socket and loopback; nobody else.
	cat >"$CONF/pg_hba.conf" <<EOF
local all postgres peer
local all $PG_ROLE scram-sha-256
host all $PG_ROLE 127.0.0.1/32 scram-sha-256
EOF
	# Durability stays at the defaults: this is the source of truth.
	cat >"$CONF/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $PORT_PG
unix_socket_directories = '$PG_SOCKDIR'
unix_socket_permissions = 0770
hba_file = '$CONF/pg_hba.conf'
password_encryption = scram-sha-256
max_connections = 200
shared_buffers = 256MB
log_line_prefix = '%m [%p] %q%u@%d '
EOF
	touch "$LOG/postgres.log"
	chown postgres:postgres "$LOG/postgres.log"
	as_postgres "$PGBIN/pg_ctl" -D "$PGDATA" -l "$LOG/postgres.log" -s -w -t 60 start ||
		die "postgres did not start; see $LOG/postgres.log"
	wait_for 60 ready_postgres || die "postgres is not ready; see $LOG/postgres.log"
	migrate_postgres
	say postgres "up (pid $(part_pids postgres), port $PORT_PG, socket dir $PG_SOCKDIR)"
}

# As the OS user postgres: its probe then authenticates (peer), and the
# server log stays free of refused connections.
ready_postgres() {
	as_postgres pg_isready -q -h "$PG_SOCKDIR" -p "$PORT_PG" -U postgres
}

# The application role with the password of $SECRETS/pg.password (set on
# every start, so a new password file takes effect), owner of the database
# and of everything in it (a state directory from before the role existed
# had them owned by postgres). The statement never reaches the server log.
ensure_pg_role() {
	psql_super -f - <<EOF || die "cannot set up the role $PG_ROLE"
SET log_min_error_statement = panic;
SET log_statement = none;
SELECT 'CREATE ROLE $PG_ROLE LOGIN CREATEDB'
WHERE NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '$PG_ROLE') \\gexec
ALTER ROLE $PG_ROLE LOGIN CREATEDB PASSWORD '$(cat "$SECRETS/pg.password")';
SELECT 'CREATE DATABASE flashsale OWNER $PG_ROLE'
WHERE NOT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'flashsale') \\gexec
ALTER DATABASE flashsale OWNER TO $PG_ROLE;
\\c flashsale
DO \$\$
DECLARE o record;
BEGIN
	FOR o IN SELECT format('ALTER TABLE %I OWNER TO $PG_ROLE', tablename) AS q
		FROM pg_tables WHERE schemaname = 'public' AND tableowner <> '$PG_ROLE'
	UNION ALL SELECT format('ALTER FUNCTION %s OWNER TO $PG_ROLE', p.oid::regprocedure)
		FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = 'public' AND pg_get_userbyid(p.proowner) <> '$PG_ROLE'
	LOOP
		EXECUTE o.q;
	END LOOP;
END
\$\$;
EOF
}

# Creates the role and database and applies every sql/NNN_*.sql not applied
# yet, each in one transaction with its schema_migrations row.
migrate_postgres() {
	ensure_pg_role
	psql_db flashsale -c 'CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())' ||
		die "cannot create schema_migrations"
	found=0
	for file in "$DATADIR"/sql/[0-9]*.sql; do
		[ -f "$file" ] || continue
		found=1
		name=$(basename "$file")
		case $name in
		*[!A-Za-z0-9_.-]*) die "$file: migration names are [A-Za-z0-9_.-]" ;;
		esac
		if [ -n "$(psql_db flashsale -tA -c "SELECT 1 FROM schema_migrations WHERE name = '$name'")" ]; then
			continue
		fi
		{
			cat "$file"
			printf "\nINSERT INTO schema_migrations (name) VALUES ('%s');\n" "$name"
		} | psql_db flashsale -1 -f - || die "migration $name failed"
		say postgres "applied $name"
	done
	if [ "$found" = 0 ]; then
		warn "no migrations in $DATADIR/sql"
	fi
}

stop_postgres() {
	pid=$(part_pids postgres)
	if [ -z "$pid" ]; then
		say postgres "not running"
		return 0
	fi
	if ! as_postgres "$PGBIN/pg_ctl" -D "$PGDATA" -s -m fast -w -t 30 stop; then
		kill_pids 5 "$pid"
	fi
	say postgres "stopped (pid $pid)"
}

status_postgres() {
	status_pidfile postgres ready_postgres
}

# shellcheck shell=sh
# shellcheck disable=SC2034 # PG_NODES, PG_PORTS: read by the other stack.d files
# PostgreSQL of the cluster topology, sourced by deploy/stack: two
# nodes with synchronous replication under pg_auto_failover (Debian's
# postgresql-15-auto-failover), whose monitor decides failovers.
#
#   pg-monitor   the monitor: a PostgreSQL of its own (base+50) that
#                health-checks the nodes every second and drives each
#                keeper's state machine
#   pg-1, pg-2   base+51, base+52: pg_autoctl (the keeper) and the
#                PostgreSQL it runs; one primary, one synchronous standby
#                (synchronous_standby_names 'ANY 1 (...)', commits wait
#                for the standby's flush)
#
# The programs reach the primary through libpq's multi-host connection
# string (target_session_attrs=read-write): no router to run or to fail,
# and a standby being promoted stays read-only until the monitor confirms
# the promotion, so nobody writes to two primaries.
#
# Tuned for a sale (docs/CLUSTER.md): the monitor calls a node dead after
# 3 s of failed checks and promotes the standby without waiting more than
# 5 s for the old primary to say it stepped down (a primary cut off from
# the monitor and the standby cannot commit meanwhile: its commits wait
# for the standby that is gone); a primary that reaches neither the
# monitor nor a standby steps down itself 5 s after its walsender gave the
# standby up (wal_sender_timeout, 15 s: see PG_WALSENDER_TIMEOUT below).
# cluster/pg_partition.sh cuts the primary off through the relay.
#
# When the standby dies the primary goes on alone (the monitor clears
# synchronous_standby_names: state wait_primary) and says so: `status`
# prints "ALONE", the metric flashsale_pg_synchronous drops to 0 and the
# alert FlashsaleDatabaseAlone fires.

PG_NODES="1 2"
PORT_PG_MONITOR=$((BASE + 50))
PG_PORTS="$((BASE + 51)) $((BASE + 52))"
# Everything of PostgreSQL's under one directory of the user postgres
# (pg_autoctl renames a standby's data directory when it rebuilds it):
# the data directories, pg_autoctl's configuration, state and pid files
# (its XDG directories) and the backups a standby is built from.
PGAF_HOME=$STATE/pgha
PG_MONITOR_DATA=$PGAF_HOME/pg-monitor
# The keepers reach their PostgreSQL through the default socket directory.
PGAF_SOCKDIR=/var/run/postgresql

pg_node_port() { echo $((BASE + 50 + $1)); }
pg_node_data() { echo "$PGAF_HOME/pg-$1"; }

# The peer links of node N go through flashsale-relay (cluster-relay.sh,
# labelled pg-N), so that a test can cut the node off from the monitor and
# the other node while the programs still reach it: the node registers
# 127.0.5.N as its hostname (the monitor's health checks and the other
# node's replication, pg_basebackup and pg_rewind dial it there) and its
# keeper reaches the monitor at 127.0.6.N. The programs and this script
# use 127.0.0.1, never the relay.
pg_peer_ip() { echo "127.0.5.$1"; }
pg_monitor_ip() { echo "127.0.6.$1"; }
# A keeper gives up on a monitor gone silent after 2 s: libpq's TCP
# keepalives (idle 1 s, one probe after 1 s) and tcp_user_timeout. Without
# them (pg_auto_failover 2.0 sets neither; later releases do) a report in
# flight when a partition starts waits for an answer that never comes,
# for as long as the kernel keeps the connection (hours idle, about 15
# minutes of retransmissions): the isolated primary's keeper never gets
# to its network-partition check and never shuts its PostgreSQL down.
# The relay resets a cut keeper's link after the same 2 s (its own socket
# answers for the monitor: deploy/relay/flashsale-relay.c).
PG_KEEPER_GIVES_UP_MS=2000
# The isolated primary's walsender outlasts the keeper's noticing the cut.
# pg_auto_failover 2.0 (service_keeper.c, is_network_healthy) counts a
# partition from the last check, made while the monitor is unreachable,
# that still saw a standby in pg_stat_replication; a keeper that has never
# made such a check (last_secondary_contact 0: every node that never lost
# its monitor) and whose first check finds the walsender already gone
# calls the network healthy for ever and never shuts its PostgreSQL down.
# That first check comes after the rest of the round the cut fell in and
# two connection attempts to the silent monitor (the notification
# connection, then the report: 2 s each, pg_autoctl's PGCONNECT_TIMEOUT),
# about 5 s on an idle host and more on a loaded one; the walsender gives
# a silent standby up after wal_sender_timeout (it was 5 s, and
# cluster/pg_partition.sh failed in loaded runs). 15 s: the keeper may be
# 10 s late. The cost: the isolated primary, which commits nothing
# meanwhile (its commits wait for the standby), stops about 20 s after the
# cut instead of 10 s. A standby that dies closes its connection and its
# walsender ends at once (cluster/pg_standby.sh).
PG_WALSENDER_TIMEOUT=15s
pg_monitor_uri() {
	echo "postgres://autoctl_node@$(pg_monitor_ip "$1"):$PORT_PG_MONITOR/pg_auto_failover?sslmode=verify-full&sslrootcert=$TLS_PUBLIC/ca.crt&keepalives=1&keepalives_idle=1&keepalives_interval=1&keepalives_count=1&tcp_user_timeout=$PG_KEEPER_GIVES_UP_MS"
}

# pg_auto_failover's own roles authenticate with scram-sha-256 (no trust:
# a local user could otherwise stream the database's WAL or drive the
# monitor). autoctl_node (the keepers and the monitor's own pg_autoctl, on
# the monitor) and pgautofailover_replicator (replication, pg_basebackup,
# pg_rewind) have random passwords in $SECRETS, set on every start; the
# keepers and the programs they run (pg_basebackup, pg_rewind, the
# standby's WAL receiver) read them from PGAF_PASSFILE, owned by postgres.
# pgautofailover_monitor (the monitor's health checks) is made by
# pg_autoctl with the password it hard-codes in every release
# ("pgautofailover_monitor"): we take it away (PASSWORD NULL), so nobody
# logs in as that role. The health checks never needed it: one counts a
# node healthy as soon as its server asks for a password, or answers any
# error but "starting up" (health_check_worker.c), and closes there.
PGAF_PASSFILE=$PGAF_HOME/pgpass
PGAF_SECRETS="pgaf-autoctl-node.password pgaf-replicator.password"

# pg_autoctl as the OS user postgres, with its files under $PGAF_HOME
# and libpq's TLS defaults (spawn_pgautoctl says why: a PostgreSQL that
# pg_autoctl create starts carries them too).
as_pgautoctl() {
	runuser -u postgres -- env XDG_CONFIG_HOME="$PGAF_HOME/config" \
		XDG_DATA_HOME="$PGAF_HOME/data" XDG_RUNTIME_DIR="$PGAF_HOME/run" \
		PGPASSFILE="$PGAF_PASSFILE" PGSSLMODE=verify-full PGSSLROOTCERT="$TLS_PUBLIC/ca.crt" "$@"
}

# The passwords of autoctl_node and pgautofailover_replicator (made once,
# like the stack's other secrets), and the keepers' passfile.
pg_af_secrets() {
	for paf_secret in $PGAF_SECRETS; do
		ensure_secret "$paf_secret"
	done
	(umask 077 && {
		printf '*:%s:pg_auto_failover:autoctl_node:%s\n' "$PORT_PG_MONITOR" \
			"$(cat "$SECRETS/pgaf-autoctl-node.password")"
		printf '*:*:*:pgautofailover_replicator:%s\n' "$(cat "$SECRETS/pgaf-replicator.password")"
	} >"$PGAF_PASSFILE.tmp" && chown postgres:postgres "$PGAF_PASSFILE.tmp" &&
		mv "$PGAF_PASSFILE.tmp" "$PGAF_PASSFILE")
}

# SQL (stdin) as the superuser on the socket of PORT, database DB, with
# the statements kept out of the server log and the commit local (a
# primary waiting for a standby that cannot authenticate yet would
# otherwise wait for ever).
pg_af_psql_secret() {
	{
		echo 'SET log_min_error_statement = panic;'
		echo 'SET log_statement = none;'
		echo 'SET synchronous_commit = local;'
		cat
	} | PGOPTIONS='-c client_min_messages=warning' as_postgres psql -X -q \
		-h "$PGAF_SOCKDIR" -p "$1" -U postgres -d "$2" -v ON_ERROR_STOP=1 -f - >/dev/null
}

# The password of autoctl_node on the monitor.
pg_af_monitor_password() {
	pg_af_psql_secret "$PORT_PG_MONITOR" pg_auto_failover <<EOF
ALTER ROLE autoctl_node PASSWORD '$(cat "$SECRETS/pgaf-autoctl-node.password")';
EOF
}

# The password of pgautofailover_replicator on node N if it is a primary
# (the standby gets it by replication), once pg_autoctl has made the role
# (after pgautofailover_monitor, whose well-known password goes).
pg_af_replicator_password() {
	[ "$(pg_node_q "$1" 'SELECT NOT pg_is_in_recovery() AND EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '"'pgautofailover_replicator'"')')" = t ] || return 1
	pg_af_psql_secret "$(pg_node_port "$1")" postgres <<EOF
ALTER ROLE pgautofailover_replicator PASSWORD '$(cat "$SECRETS/pgaf-replicator.password")';
ALTER ROLE pgautofailover_monitor PASSWORD NULL;
EOF
}
pg_af_replicator_password_any() {
	pg_af_replicator_password 1 2>/dev/null || pg_af_replicator_password 2 2>/dev/null
}

# The application's connection string: both nodes, the primary chosen by
# libpq (a node that refuses, or answers read-only, is skipped).
pg_conninfo() {
	echo "host=127.0.0.1,127.0.0.1 port=$(pg_node_port 1),$(pg_node_port 2) dbname=$1 user=$PG_ROLE passfile=$SECRETS/pgpass target_session_attrs=read-write connect_timeout=2 sslmode=verify-full sslrootcert=$TLS_PUBLIC/ca.crt"
}

# psql as the superuser (peer, on the socket) on the primary.
psql_super() {
	PGOPTIONS='-c client_min_messages=warning' as_postgres psql -X -q \
		"host=$PGAF_SOCKDIR,$PGAF_SOCKDIR port=$(pg_node_port 1),$(pg_node_port 2) user=postgres dbname=postgres target_session_attrs=read-write connect_timeout=2" \
		-v ON_ERROR_STOP=1 "$@"
}

# psql as the superuser on one node (N) or the monitor (monitor): one value.
pg_node_q() {
	if [ "$1" = monitor ]; then
		pnq_port=$PORT_PG_MONITOR pnq_db=pg_auto_failover
	else
		pnq_port=$(pg_node_port "$1") pnq_db=postgres
	fi
	as_postgres psql -X -q -A -t -h "$PGAF_SOCKDIR" -p "$pnq_port" -U postgres -d "$pnq_db" \
		-c "$2" 2>/dev/null
}

# The live PIDs of pg-N or pg-monitor: the pg_autoctl we started and every
# process under it (its services, the postmaster and its backends), so that
# kill takes the node whole, as a host that dies would.
pg_part_pids() {
	# shellcheck disable=SC2046 # one word per PID
	ppp_root=$(live_pids pg_autoctl $(pids_in "$RUN/$1.pid"))
	[ -n "$ppp_root" ] || return 0
	ps -e -o pid= -o ppid= | awk -v root="$ppp_root" '
		{ parent[$1] = $2 }
		END {
			keep[root] = 1
			do { grew = 0
				for (p in parent) if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; grew = 1 }
			} while (grew)
			for (p in keep) print p
		}'
}

pg_write_confs() {
	# Over TCP only with TLS (hostssl), the clients checking the server's
	# certificate (sslmode=verify-full); the sockets stay as they are.
	# Who may connect: the superuser by peer (this script and the keepers,
	# as the OS user postgres), the application role with its password,
	# and pg_auto_failover's own roles (replication, rewind, health checks,
	# the keepers' reports) from loopback only, all with passwords.
	cat >"$CONF/pg-node_hba.conf" <<EOF
local all postgres peer
local all $PG_ROLE scram-sha-256
hostssl all $PG_ROLE 127.0.0.1/32 scram-sha-256
hostssl replication pgautofailover_replicator 127.0.0.1/32 scram-sha-256
hostssl postgres pgautofailover_replicator 127.0.0.1/32 scram-sha-256
hostssl postgres pgautofailover_monitor 127.0.0.1/32 scram-sha-256
EOF
	# The monitor's own pg_autoctl reaches it on the socket.
	cat >"$CONF/pg-monitor_hba.conf" <<EOF
local all postgres peer
local pg_auto_failover autoctl_node scram-sha-256
hostssl pg_auto_failover autoctl_node 127.0.0.1/32 scram-sha-256
EOF
	# After pg_auto_failover's own settings (included before these): the
	# stack's sizes instead of its host-wide tuning, loopback only.
	cat >"$CONF/pg-node.conf" <<EOF
listen_addresses = '127.0.0.1'
hba_file = '$CONF/pg-node_hba.conf'
password_encryption = scram-sha-256
max_connections = 200
shared_buffers = 256MB
effective_cache_size = 1GB
maintenance_work_mem = 64MB
work_mem = 4MB
logging_collector = off
log_line_prefix = '%m [%p] %q%u@%d '
wal_sender_timeout = $PG_WALSENDER_TIMEOUT
wal_receiver_timeout = 5s
EOF
	# The monitor: checks every second, a node is dead after 3 s of
	# failed checks, the standby is promoted without waiting more than 5 s
	# for the old primary to step down (defaults: 20 s, 20 s and 30 s).
	cat >"$CONF/pg-monitor.conf" <<EOF
listen_addresses = '127.0.0.1'
hba_file = '$CONF/pg-monitor_hba.conf'
password_encryption = scram-sha-256
max_connections = 50
shared_buffers = 32MB
effective_cache_size = 256MB
maintenance_work_mem = 16MB
work_mem = 4MB
logging_collector = off
pgautofailover.health_check_period = 1000
pgautofailover.health_check_timeout = 1000
pgautofailover.health_check_max_retries = 1
pgautofailover.health_check_retry_delay = 500
pgautofailover.node_considered_unhealthy_timeout = 3000
pgautofailover.primary_demote_timeout = 5000
EOF
}

# Appends the include of CONF to DATA's postgresql.conf once (a standby's
# copy of the primary's file has it already).
pg_include_conf() {
	grep -q "^include_if_exists = '$2'" "$1/postgresql.conf" ||
		echo "include_if_exists = '$2'" | as_postgres tee -a "$1/postgresql.conf" >/dev/null
}

pg_prepare_dirs() {
	for pdir in "$PGAF_HOME" "$PGAF_HOME/run"; do
		mkdir -p "$pdir"
		chown postgres:postgres "$pdir"
		chmod 700 "$pdir"
	done
	mkdir -p "$PGAF_SOCKDIR"
	chown postgres:postgres "$PGAF_SOCKDIR"
	touch "$LOG/pg-monitor.log" "$LOG/pg-1.log" "$LOG/pg-2.log"
	chown postgres:postgres "$LOG/pg-monitor.log" "$LOG/pg-1.log" "$LOG/pg-2.log"
	pg_write_confs
	pg_af_secrets
	pg_tls
}

# The servers' certificate (the monitor's and the nodes'), from the stack's
# authority, with every address they are dialled at: 127.0.0.1 and the
# relay's 127.0.5.N (the nodes) and 127.0.6.N (the monitor).
PG_TLS=$PGAF_HOME/tls
pg_tls() {
	mkdir -p "$PG_TLS"
	chown postgres:postgres "$PG_TLS"
	chmod 700 "$PG_TLS"
	tls_cert "$TLS_CA" "$PG_TLS" pg \
		"IP:127.0.0.1,IP:$(pg_peer_ip 1),IP:$(pg_peer_ip 2),IP:$(pg_monitor_ip 1),IP:$(pg_monitor_ip 2)" \
		postgres:postgres || die "cannot make PostgreSQL's certificate in $PG_TLS"
}

# pg_autoctl create's TLS: that certificate; its clients verify-full against the authority.
pg_ssl_args() {
	echo "--ssl-mode verify-full --ssl-ca-file $TLS_PUBLIC/ca.crt --server-cert $PG_TLS/pg.crt --server-key $PG_TLS/pg.key"
}

# spawn_pgautoctl PART DATA: pg_autoctl run in the background. A pid file
# left by a pg_autoctl that was killed goes first: its PID may still be a
# zombie, which pg_autoctl would take for a live instance.
# PGSSLMODE and PGSSLROOTCERT: libpq's defaults for every connection made
# under it that names no sslmode, the one that matters being the monitor's
# health checks (its PostgreSQL inherits them; pg_auto_failover's
# connection string for them has no sslmode, so libpq's default prefer
# would take any certificate): they check the node's certificate and name
# against the stack's authority too.
spawn_pgautoctl() {
	sp_pidfile=$PGAF_HOME/run/pg_autoctl$2/pg_autoctl.pid
	if [ -f "$sp_pidfile" ] && ! pid_alive "$(head -n 1 "$sp_pidfile")"; then
		rm -f "$sp_pidfile"
	fi
	setsid runuser -u postgres -- env XDG_CONFIG_HOME="$PGAF_HOME/config" \
		XDG_DATA_HOME="$PGAF_HOME/data" XDG_RUNTIME_DIR="$PGAF_HOME/run" \
		PGPASSFILE="$PGAF_PASSFILE" PGSSLMODE=verify-full PGSSLROOTCERT="$TLS_PUBLIC/ca.crt" \
		pg_autoctl run --pgdata "$2" </dev/null >>"$LOG/$1.log" 2>&1 &
	echo $! >"$RUN/$1.pid"
}

ready_pg_monitor() {
	[ "$(pg_node_q monitor 'SELECT 1')" = 1 ]
}

start_pg_monitor() {
	if [ -n "$(pg_part_pids pg-monitor)" ]; then
		say pg-monitor "already running (pid $(cat "$RUN/pg-monitor.pid"))"
		return 0
	fi
	pg_prepare_dirs
	if [ ! -f "$PG_MONITOR_DATA/PG_VERSION" ]; then
		# shellcheck disable=SC2046 # pg_ssl_args prints several arguments, one word each
		as_pgautoctl pg_autoctl create monitor --pgdata "$PG_MONITOR_DATA" \
			--pgport "$PORT_PG_MONITOR" --hostname 127.0.0.1 --skip-pg-hba \
			$(pg_ssl_args) --pgctl "$PGBIN/pg_ctl" >>"$LOG/pg-monitor.log" 2>&1 ||
			die "pg_autoctl create monitor failed; see $LOG/pg-monitor.log"
		pg_include_conf "$PG_MONITOR_DATA" "$CONF/pg-monitor.conf"
	fi
	# On 127.0.0.1 only (pg_autoctl starts it with -h '*'), a monitor made
	# before the relay carried its links too: a wildcard bind would collide
	# with the relay's 127.0.6.N on the same port.
	as_pgautoctl pg_autoctl config set --pgdata "$PG_MONITOR_DATA" \
		postgresql.listen_addresses 127.0.0.1 >>"$LOG/pg-monitor.log" 2>&1
	spawn_pgautoctl pg-monitor "$PG_MONITOR_DATA"
	wait_for 60 ready_pg_monitor || die "the monitor does not answer; see $LOG/pg-monitor.log"
	pg_af_monitor_password || die "cannot set the password of autoctl_node on the monitor"
	say pg-monitor "up (pid $(cat "$RUN/pg-monitor.pid"), port $PORT_PG_MONITOR)"
}

# "STATE GOAL" of node pg-N as the monitor sees them (reported, assigned).
pg_node_states() {
	pg_node_q monitor "SELECT reportedstate || ' ' || goalstate FROM pgautofailover.node WHERE nodename = 'pg-$1'"
}

# True when the formation has a primary and a synchronous standby (as the
# monitor last heard, which may be from before a restart) and the primary
# takes writes now.
pg_formation_ok() {
	[ "$(pg_node_q monitor "SELECT count(*) FROM pgautofailover.node
		WHERE reportedstate = goalstate AND reportedstate IN ('primary', 'secondary')")" = 2 ] &&
		[ "$(psql_super -A -t -c 'SELECT 1' 2>/dev/null)" = 1 ]
}

# True when node N runs a PostgreSQL that accepts writes, or has become a
# replica of one (a node that starts alone does).
pg_node_settled() {
	[ "$(pg_node_q "$1" 'SELECT 1')" = 1 ] || return 1
	case $(pg_node_states "$1") in
	"single single" | "primary primary" | "wait_primary wait_primary" | "secondary secondary") return 0 ;;
	esac
	return 1
}

start_pg_node() {
	name=pg-$1
	data=$(pg_node_data "$1")
	if [ -n "$(pg_part_pids "$name")" ]; then
		say "$name" "already running (pid $(cat "$RUN/$name.pid"))"
		return 0
	fi
	ready_pg_monitor || die "$name needs the monitor: deploy/stack start pg-monitor"
	pg_prepare_dirs
	if [ ! -f "$data/PG_VERSION" ]; then
		# The second node starts as a standby of the first (pg_basebackup).
		# shellcheck disable=SC2046 # pg_ssl_args prints several arguments, one word each
		as_pgautoctl pg_autoctl create postgres --pgdata "$data" --pgport "$(pg_node_port "$1")" \
			--hostname "$(pg_peer_ip "$1")" --listen 127.0.0.1 --name "$name" --monitor "$(pg_monitor_uri "$1")" \
			--dbname postgres --skip-pg-hba $(pg_ssl_args) --pgctl "$PGBIN/pg_ctl" \
			>>"$LOG/$name.log" 2>&1 || die "pg_autoctl create postgres failed; see $LOG/$name.log"
		pg_include_conf "$data" "$CONF/pg-node.conf"
		# A primary that reaches neither the monitor nor a standby steps
		# down after 5 s (default 20 s).
		as_pgautoctl pg_autoctl config set --pgdata "$data" timeout.network_partition_timeout 5 \
			>>"$LOG/$name.log" 2>&1
	fi
	# The monitor's address with the keeper's timeouts (a state directory
	# made before them has the bare URI), set when it differs.
	if [ "$(as_pgautoctl pg_autoctl config get --pgdata "$data" pg_autoctl.monitor 2>/dev/null)" != \
		"$(pg_monitor_uri "$1")" ]; then
		as_pgautoctl pg_autoctl config set --pgdata "$data" pg_autoctl.monitor "$(pg_monitor_uri "$1")" \
			>>"$LOG/$name.log" 2>&1 || die "cannot set pg_autoctl.monitor of $name"
	fi
	# The replication password in the keeper's configuration too (its
	# standby's primary_conninfo), set when it differs (never logged).
	if [ "$(as_pgautoctl pg_autoctl config get --pgdata "$data" replication.password 2>/dev/null)" != \
		"$(cat "$SECRETS/pgaf-replicator.password")" ]; then
		as_pgautoctl pg_autoctl config set --pgdata "$data" replication.password \
			"$(cat "$SECRETS/pgaf-replicator.password")" >/dev/null 2>&1 ||
			die "cannot set replication.password of $name"
	fi
	spawn_pgautoctl "$name" "$data"
	if [ -z "${PG_NOWAIT:-}" ]; then
		wait_for 120 pg_node_settled "$1" || die "$name did not join; see $LOG/$name.log"
		# A new primary: its replicator's password, before a standby
		# takes a base backup from it.
		pg_af_replicator_password "$1" 2>/dev/null || true
	fi
	say "$name" "up (pid $(cat "$RUN/$name.pid"), 127.0.0.1:$(pg_node_port "$1"), $(pg_node_states "$1"))"
}

# The monitor, then the first node (primary when the formation is new),
# then the second; then the schema, on the primary.
start_pg_cluster() {
	start_pg_monitor
	# A formed pair starts together: a node waiting alone for its state
	# would have the monitor fail the other over meanwhile.
	if [ -f "$(pg_node_data 1)/PG_VERSION" ] && [ -f "$(pg_node_data 2)/PG_VERSION" ]; then
		PG_NOWAIT=1
	fi
	start_pg_node 1
	start_pg_node 2
	PG_NOWAIT=
	# The replicator's password on whichever node is the primary (a state
	# directory made before the passwords has the role without one).
	wait_for 120 pg_af_replicator_password_any ||
		die "no primary to set the password of pgautofailover_replicator on; see $LOG/pg-*.log"
	wait_for 120 pg_formation_ok || die "no primary with a synchronous standby; see $LOG/pg-*.log"
	migrate_postgres
	say postgres "primary with a synchronous standby (monitor 127.0.0.1:$PORT_PG_MONITOR)"
}

# stop_pg PART DATA: pg_autoctl stop (fast shutdown), then signals.
stop_pg() {
	sp_pids=$(pg_part_pids "$1")
	if [ -z "$sp_pids" ]; then
		say "$1" "not running"
		return 0
	fi
	as_pgautoctl pg_autoctl stop --pgdata "$2" >>"$LOG/$1.log" 2>&1 || true
	# shellcheck disable=SC2086 # one word per PID
	wait_for 30 all_dead $sp_pids || kill_pids 5 $sp_pids
	rm -f "$RUN/$1.pid"
	say "$1" "stopped (pid $(one_line "$sp_pids"))"
}
stop_pg_monitor() { stop_pg pg-monitor "$PG_MONITOR_DATA"; }
stop_pg_node() { stop_pg "pg-$1" "$(pg_node_data "$1")"; }

status_pg_monitor() {
	if [ -z "$(pg_part_pids pg-monitor)" ] || ! ready_pg_monitor; then
		say pg-monitor "down"
		return 1
	fi
	say pg-monitor "up (pid $(cat "$RUN/pg-monitor.pid"), port $PORT_PG_MONITOR, $(pg_node_q monitor \
		"SELECT string_agg(nodename || ' ' || reportedstate || CASE WHEN goalstate <> reportedstate THEN '->' || goalstate ELSE '' END, ', ' ORDER BY nodename) FROM pgautofailover.node"))"
}

# "up (pid, address, primary, synchronous standby pg-2, lag N bytes)",
# "primary ALONE ...", or "standby of pg-1, replay lag N bytes".
status_pg_node() {
	name=pg-$1
	if [ -z "$(pg_part_pids "$name")" ] || [ "$(pg_node_q "$1" 'SELECT 1')" != 1 ]; then
		say "$name" "down"
		return 1
	fi
	if [ "$(pg_node_q "$1" 'SELECT pg_is_in_recovery()')" = t ]; then
		role=$(pg_node_q "$1" "SELECT 'standby of ' || coalesce((SELECT 'pg-' || (sender_port - $BASE - 50)::text
			|| ', ' || status FROM pg_stat_wal_receiver), 'nobody (no WAL receiver)')
			|| ', replay lag ' || coalesce(pg_wal_lsn_diff(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn()), 0)::bigint || ' bytes'")
	else
		role=$(pg_node_q "$1" "SELECT CASE WHEN current_setting('synchronous_standby_names') = ''
			THEN 'primary ALONE (no synchronous standby: commits are on this node only)'
			ELSE 'primary, ' || coalesce((SELECT string_agg(sync_state || ' standby ' || replace(application_name, 'pgautofailover_standby_', 'node ')
				|| ' lag ' || pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn)::bigint || ' bytes', ', ')
				FROM pg_stat_replication), 'no standby connected: commits wait') END")
	fi
	say "$name" "up (pid $(cat "$RUN/$name.pid"), 127.0.0.1:$(pg_node_port "$1"), $role; monitor: $(pg_node_states "$1"))"
}

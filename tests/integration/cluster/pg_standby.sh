# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# The PostgreSQL standby is SIGKILLed mid-burst. The stated behaviour: the
# primary goes on alone, and says so. Its commits wait a few seconds for
# the standby that is gone, until the monitor releases them (wait_primary,
# synchronous_standby_names cleared); deploy/stack status prints "ALONE",
# /metrics flashsale_pg_synchronous 0 (the alert FlashsaleDatabaseAlone).
# Every 202 is recorded once. The standby, started again, catches up and
# commits wait for it again.

. "$top_srcdir/tests/integration/cluster_lib.sh"
. "$top_srcdir/tests/integration/pipeline_lib.sh"

g_primary() { echo $(($(psql_q 'SELECT inet_server_port()') - FLASHSALE_PORT_BASE - 50)); }
g_sync() { curl -s -m 10 "$FLASHSALE_ORIGIN_URL/metrics" | grep '^flashsale_pg_synchronous '; }

primary=$(g_primary)
standby=$((3 - primary))
p_until 60 1 sh -c "\"$stack\" status pg-$primary | grep -c 'primary, quorum standby'"
is "$p_out" "1" "pg-$primary is the primary, pg-$standby its synchronous standby"

# pg_auto_failover's roles need their passwords (no trust on loopback):
# without one, or with a wrong one, replication and the monitor refuse.
# (With TLS: libpq's default sslmode=prefer would try again without it and
# add pg_hba's refusal to the answer.)
g_refused() {
	PGPASSFILE=/dev/null PGPASSWORD=${3:-} PGCONNECT_TIMEOUT=5 psql -X -w -A -t \
		"host=127.0.0.1 port=$1 sslmode=require $2" -c 'SELECT 1' 2>&1 | sed -n 's/.*failed: //p'
}
g_port=$((FLASHSALE_PORT_BASE + 50 + primary))
is "$(g_refused "$g_port" "user=pgautofailover_replicator replication=true")" \
	"fe_sendauth: no password supplied" "replication as pgautofailover_replicator without a password is refused"
is "$(g_refused "$g_port" "user=pgautofailover_replicator dbname=postgres" wrong)" \
	'FATAL:  password authentication failed for user "pgautofailover_replicator"' "and with a wrong one"
is "$(g_refused $((FLASHSALE_PORT_BASE + 50)) "user=autoctl_node dbname=pg_auto_failover")" \
	"fe_sendauth: no password supplied" "the monitor refuses autoctl_node without a password"
# Over TCP only with TLS (issue 33): without it pg_hba refuses, whoever asks.
is "$(g_refused "$g_port" "user=flashsale dbname=flashsale sslmode=disable")" \
	'FATAL:  no pg_hba.conf entry for host "127.0.0.1", user "flashsale", database "flashsale", no encryption' \
	"a TCP connection without TLS is refused by pg_hba (the application role)"
is "$(g_refused "$g_port" "user=pgautofailover_replicator replication=true sslmode=disable")" \
	'FATAL:  no pg_hba.conf entry for replication connection from host "127.0.0.1", user "pgautofailover_replicator", no encryption' \
	"and replication without TLS"
is "$(g_refused $((FLASHSALE_PORT_BASE + 50)) "user=autoctl_node dbname=pg_auto_failover sslmode=disable")" \
	'FATAL:  no pg_hba.conf entry for host "127.0.0.1", user "autoctl_node", database "pg_auto_failover", no encryption' \
	"and the monitor without TLS"
is "$(PGCONNECT_TIMEOUT=5 psql -X -w -A -t "$FLASHSALE_PG" -c 'SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()')" "t" \
	"the programs' connection string (verify-full against the stack's authority) speaks TLS"
# verify-full checks the name and the authority: a name the certificate
# does not carry, or another authority's trust store, is refused before
# any password is sent.
g_ca=$FLASHSALE_STATE/tls/ca.crt
is "$(g_refused "$g_port" "user=flashsale dbname=flashsale sslmode=verify-full sslrootcert=$g_ca host=localhost hostaddr=127.0.0.1")" \
	'server certificate for "127.0.0.1" (and 5 other names) does not match host name "localhost"' \
	"verify-full refuses the node under a name its certificate does not carry"
is "$(g_refused "$g_port" "user=flashsale dbname=flashsale sslmode=verify-full sslrootcert=/etc/ssl/certs/ca-certificates.crt" |
	sed 's/^SSL error: //')" 'certificate verify failed' \
	"and a client that trusts only the public authorities"
# pgautofailover_monitor: pg_auto_failover makes it with a password every
# release prints (its own name); the stack takes it away, and the
# monitor's health checks, which never log in, still find both nodes.
is "$(g_refused "$g_port" "user=pgautofailover_monitor dbname=postgres" pgautofailover_monitor)" \
	'FATAL:  password authentication failed for user "pgautofailover_monitor"' \
	"pgautofailover_monitor's well-known password logs nobody in"
g_health() {
	runuser -u postgres -- psql -X -q -A -t -h /var/run/postgresql -p "$((FLASHSALE_PORT_BASE + 50))" -U postgres \
		-d pg_auto_failover -c "SELECT string_agg(nodename || ' ' || health, ', ' ORDER BY nodename) FROM pgautofailover.node" 2>/dev/null
}
p_until 30 "pg-1 1, pg-2 1" g_health
is "$p_out" "pg-1 1, pg-2 1" "the monitor's health checks find both nodes healthy"
# The monitor's health checks name no sslmode: its PostgreSQL (and the
# health-check worker it starts) carry libpq's defaults verify-full and
# the stack's authority, so they check each node's certificate too.
g_mon_pid=$(head -n 1 "$FLASHSALE_STATE/pgha/pg-monitor/postmaster.pid" 2>/dev/null)
is "$(tr '\0' '\n' <"/proc/$g_mon_pid/environ" 2>/dev/null | grep -E '^PGSSL(MODE|ROOTCERT)=' | sort | tr '\n' ' ')" \
	"PGSSLMODE=verify-full PGSSLROOTCERT=$g_ca " "the monitor's PostgreSQL runs its health checks with verify-full against the stack's authority"

units=300
set -- $(new_sale -5 $units)
sale=$1 item=$2
k_pids_of "pg-$standby"
k_burst ks "$sale" 1500 4
k_until_purchases 20
k_kill 2>/dev/null # backends listed a moment ago may have ended
killed_at=$(k_now_ms)
p_until 30 1 sh -c "\"$stack\" status pg-$primary | grep -c 'primary ALONE'"
is "$p_out" "1" "pg-$primary goes on alone and says so in deploy/stack status"
alone_ms=$(($(k_now_ms) - killed_at))
is "$(g_sync)" "flashsale_pg_synchronous 0" "and in /metrics (the alert FlashsaleDatabaseAlone)"
wait "$k_burst_pid"
requests=$(wc -l <"$k_out" | tr -d ' ')
is "$(awk '$1 != "202" && $1 != "410"' "$k_out" | wc -l | tr -d ' ')" "0" "every answer is 202 or 410"
if consumer_caught_up 60; then ok "the consumers record every order on the lone primary"; else
	not_ok "the consumers record every order on the lone primary" "lag: $("$FLASHSALE_BINDIR/flashsale-consumer" --lag 2>&1)"; fi
k_sweep "$sale" "$item" "$k_out"
is "$k_202 $k_live $k_failed" "$units $units 0" "$units 202s, $units live orders, none FAILED"
diag "standby killed: the primary went on alone ${alone_ms} ms after the kill (commits waited until then)"
k_report "standby killed" 1 "$requests"

check "pg-$standby starts again" "$stack" start "pg-$standby"
p_until 60 1 sh -c "\"$stack\" status pg-$primary | grep -c 'primary, quorum standby'"
is "$p_out" "1" "pg-$standby catches up and commits wait for it again"
is "$(g_sync)" "flashsale_pg_synchronous 1" "/metrics says so"
is "$(g_primary)" "$primary" "pg-$primary stayed the primary throughout"

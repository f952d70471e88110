# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# A network partition of the PostgreSQL primary, not a crash: mid-burst,
# the primary's host is cut off from the monitor and from its standby (the
# links flashsale-relay carries: the monitor's health checks, the keeper's
# reports, replication) while the handlers and the consumers still reach
# it. What pg_auto_failover 2.0 does, asserted:
#   - the isolated primary acknowledges nothing: its commits wait for the
#     synchronous standby that no longer answers (counted as they hang),
#     and the consumer commits no Kafka offset for them meanwhile;
#   - the monitor calls it unhealthy and promotes the standby once
#     primary_demote_timeout has passed;
#   - the isolated primary's keeper, reaching neither the monitor nor a
#     standby for network_partition_timeout, shuts its PostgreSQL down,
#     even when it notices the cut late: it is paused for the first
#     $keeper_late s (as a keeper on a loaded host may not run), so its
#     first failed report comes after the standby's replication link has
#     already gone silent for that long (pg_auto_failover 2.0 only starts
#     counting a partition from a check that saw the standby connected:
#     wal_sender_timeout must outlast the keeper's noticing,
#     deploy/stack.d/cluster-pg.sh);
#     each hung commit ends with its connection and PostgreSQL's "committed
#     locally" warning, never as done; the consumer records that batch
#     again on the new primary, which target_session_attrs=read-write finds;
#   - healed, the old primary is rewound (what only it had is thrown away)
#     and rejoins as a standby, never a second primary.
# Every 202 is an order once; reconcile finds nothing to repair.

. "$top_srcdir/tests/integration/cluster_lib.sh"

# g_primary: the node (1, 2) that takes writes, found the way the programs
# find it. g_node N SQL: one value from pg-N itself (its socket, not the
# relay), empty when its PostgreSQL does not answer. g_monitor: the
# monitor's view, "pg-1 REPORTED GOAL, pg-2 REPORTED GOAL".
g_primary() { echo $(($(psql_q 'SELECT inet_server_port()') - FLASHSALE_PORT_BASE - 50)); }
g_psql() {
	PGCONNECT_TIMEOUT=1 runuser -u postgres -- psql -X -q -A -t -h /var/run/postgresql \
		-p $((FLASHSALE_PORT_BASE + 50 + $1)) -U postgres -d "$2" -c "$3" 2>/dev/null
}
g_node() { g_psql "$1" postgres "$2"; }
g_monitor() {
	g_psql 0 pg_auto_failover "SELECT string_agg(nodename || ' ' || reportedstate || ' ' || goalstate, ', '
		ORDER BY nodename) FROM pgautofailover.node"
}
g_status() { "$stack" status "pg-$1" 2>/dev/null; }
# g_writable N: t when pg-N takes writes (a primary, not read-only).
g_writable() { g_node "$1" "SELECT NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off'"; }
# The commits waiting for a synchronous standby on pg-N: "PID XACT_START".
g_hung() { g_node "$1" "SELECT pid || ' ' || xact_start FROM pg_stat_activity WHERE wait_event = 'SyncRep'"; }
# g_log_count TEXT: lines of the programs' logs (libpq prints PostgreSQL's
# warnings there) that hold TEXT.
g_log_count() { cat "$FLASHSALE_STATE"/origin-[ab]/log/*.log 2>/dev/null | grep -c "$1"; }
# g_keeper N: the PID of pg-N's keeper loop (pg_autoctl's "node active"
# service), among the processes deploy/stack started for pg-N.
g_keeper() {
	for g_pid in $("$stack" pids "pg-$1"); do
		if [ "$(ps -o args= -p "$g_pid" 2>/dev/null)" = "pg_autoctl: node active" ]; then echo "$g_pid"; fi
	done
}
g_view() {
	if [ "$1" = 1 ]; then echo "pg-1 $2 $2, pg-2 $3 $3"; else echo "pg-1 $3 $3, pg-2 $2 $2"; fi
}

primary=$(g_primary)
standby=$((3 - primary))
case $(g_status "$primary") in
*"primary, quorum standby"*) ok "pg-$primary is the primary with a synchronous standby" ;;
*) not_ok "pg-$primary is the primary with a synchronous standby" "$(g_status "$primary")" ;;
esac
is "$(g_monitor)" "$(g_view "$primary" primary secondary)" "the monitor agrees"
locally_before=$(g_log_count 'has already committed locally')
cancelled_before=$(g_log_count 'canceling wait for synchronous replication due to user request')

units=600
set -- $(new_sale -5 $units)
sale=$1 item=$2
k_burst pp "$sale" 3000 4
k_until_purchases 20
keeper=$(g_keeper "$primary")
keeper_late=5
case $keeper in
'' | *[!0-9]*) not_ok "pg-$primary's keeper loop (pg_autoctl: node active) is found" "'$keeper'" ;;
*) ok "pg-$primary's keeper loop is pid $keeper: paused for $keeper_late s from the cut" ;;
esac
kill -STOP "$keeper" 2>/dev/null
cut_ms=$(k_now_ms)
check "the relay cuts pg-$primary off from the monitor and from pg-$standby" k_relay cut "pg-$primary"
# The pause is the fault's length, not a wait for a state: the keeper runs
# again after it whatever the test does meanwhile.
(sleep "$keeper_late" && kill -CONT "$keeper") 2>/dev/null &

# Until the standby takes writes and the old primary's PostgreSQL is down
# (bounded, 60 s): the commits hanging on the old primary, the consumer
# group's lag while one hangs, the monitor's view, who takes writes.
hung_file=$FLASHSALE_STATE/pp-hung
trace=$FLASHSALE_STATE/pp-trace
: >"$hung_file"
: >"$trace"
lag_file=$FLASHSALE_STATE/pp-lag
: >"$lag_file"
noticed_ms="" promoted_ms="" down_ms="" both_ms="" lag_pid=""
while [ -z "$promoted_ms" ] || [ -z "$down_ms" ]; do
	now_ms=$(k_now_ms)
	[ $((now_ms - cut_ms)) -gt 60000 ] && break
	hung_now=$(g_hung "$primary")
	[ -n "$hung_now" ] && echo "$hung_now" >>"$hung_file"
	# The group's lag is asked once, beside the loop: the question (a new
	# Kafka client) takes long enough to delay the samples otherwise.
	if [ -n "$hung_now" ] && [ -z "$lag_pid" ]; then
		"$FLASHSALE_BINDIR/flashsale-consumer" --lag >"$lag_file" 2>/dev/null &
		lag_pid=$!
	fi
	view=$(g_monitor)
	old_rw=$(g_writable "$primary")
	new_rw=$(g_writable "$standby")
	echo "$((now_ms - cut_ms)) ms: pg-$primary ${old_rw:-down}, pg-$standby ${new_rw:-down}; monitor: $view" >>"$trace"
	case $view in *"pg-$primary "*" demote_timeout"*) [ -z "$noticed_ms" ] && noticed_ms=$now_ms ;; esac
	[ -z "$promoted_ms" ] && [ "$new_rw" = t ] && promoted_ms=$now_ms
	[ -z "$both_ms" ] && [ "$old_rw" = t ] && [ "$new_rw" = t ] && both_ms=$now_ms
	[ -z "$down_ms" ] && [ -z "$old_rw" ] && down_ms=$now_ms
	sleep 0.1
done
[ -n "$lag_pid" ] && wait "$lag_pid"
lag_hung=$(cat "$lag_file")
since_cut() { if [ -n "$1" ]; then echo $(($1 - cut_ms)); else echo never; fi; }
hung=$(sort -u "$hung_file" | grep -c .)
is "${noticed_ms:+noticed}" noticed "the monitor calls pg-$primary unhealthy and asks it to step down (demote_timeout, $(since_cut "$noticed_ms") ms after the cut)"
is "$(g_monitor | grep -o "pg-$standby [a-z_]* [a-z_]*")" "pg-$standby wait_primary wait_primary" \
    "the monitor promotes pg-$standby (wait_primary: no standby left to wait for)"
is "${promoted_ms:+t}" t "pg-$standby takes writes $(since_cut "$promoted_ms") ms after the cut"
is "$(k_relay show | grep -c " pg-$primary")" 1 "pg-$primary is still cut off"
if [ -n "$down_ms" ]; then
	ok "pg-$primary's keeper, cut off from the monitor and the standby, shuts its PostgreSQL down ($(since_cut "$down_ms") ms after the cut)"
else
	# What the keeper did instead: its log since the cut, and the trace.
	not_ok "pg-$primary's keeper, cut off from the monitor and the standby, shuts its PostgreSQL down" \
	    "not within 60 s of the cut; the keeper's log since then:" \
	    "$(awk -v t="$(date -d "@$((cut_ms / 1000 - 1))" +%T)" '$1 >= t' "$FLASHSALE_STATE/log/pg-$primary.log" |
		grep -v '^ *$' | head -n 60)" "the trace:" "$(head -n 80 "$trace")"
fi
if [ "$hung" -gt 0 ]; then
	ok "pg-$primary acknowledged no commit after the cut: $hung hung waiting for the standby"
else
	not_ok "commits hung on pg-$primary after the cut" "none: was the consumer writing at the cut?"
fi
case $lag_hung in
'' | *[!0-9]*) not_ok "the consumer group's lag while a commit hangs" "'$lag_hung'" ;;
*) is "$([ "$lag_hung" -gt 0 ] && echo uncommitted)" uncommitted \
    "while its commit hangs the consumer commits no Kafka offset for it (lag $lag_hung)" ;;
esac
locally=$(($(g_log_count 'has already committed locally') - locally_before))
is "$locally" "$hung" \
    "each hung commit ended with its connection (PostgreSQL: 'committed locally, but might not have been replicated'), not as done"
is "$(($(g_log_count 'canceling wait for synchronous replication due to user request') - cancelled_before))" 0 \
    "no program cancelled a commit's wait (a cancel would report it done)"

wait "$k_burst_pid"
requests=$(wc -l <"$k_out" | tr -d ' ')
is "$(awk '$1 != "202" && $1 != "410"' "$k_out" | wc -l | tr -d ' ')" "0" \
    "purchases never wait for the database: every answer is 202 or 410"
if consumer_caught_up 60; then ok "the consumers write on pg-$standby and catch up"; else
	not_ok "the consumers write on pg-$standby and catch up" "lag: $("$FLASHSALE_BINDIR/flashsale-consumer" --lag 2>&1)"; fi
is "$(g_primary)" "$standby" "the programs' connection string finds pg-$standby"

# Heal: the old primary hears of the failover, is rewound and follows.
heal_ms=$(k_now_ms)
check "the relay heals the partition" k_relay heal
deadline=$(($(date +%s) + 60))
until g_status "$primary" | grep -q "standby of pg-$standby" || [ "$(date +%s)" -ge "$deadline" ]; do
	sleep 0.2
done
rejoin_ms=$(($(k_now_ms) - heal_ms))
case $(g_status "$primary") in
*"standby of pg-$standby"*) ok "after the heal pg-$primary rejoins as a standby of pg-$standby ($rejoin_ms ms)" ;;
*) not_ok "after the heal pg-$primary rejoins as a standby of pg-$standby" "$(g_status "$primary")" ;;
esac
deadline=$(($(date +%s) + 30))
until [ "$(g_monitor)" = "$(g_view "$standby" primary secondary)" ] || [ "$(date +%s)" -ge "$deadline" ]; do
	sleep 0.2
done
is "$(g_monitor)" "$(g_view "$standby" primary secondary)" "the monitor: pg-$standby primary, pg-$primary secondary"
case $(g_status "$standby") in
*"primary, quorum standby"*) ok "pg-$standby has a synchronous standby again" ;;
*) not_ok "pg-$standby has a synchronous standby again" "$(g_status "$standby")" ;;
esac
is "$(g_writable 1)$(g_writable 2)" "$(if [ "$standby" = 1 ]; then echo tf; else echo ft; fi)" \
    "one primary, never two: pg-$primary is read-only"

k_sweep "$sale" "$item" "$k_out"
is "$k_202 $k_live $k_failed" "$units $units 0" "$units 202s, $units live orders, none FAILED"
is "$(psql_q "SELECT count(*) - count(DISTINCT id) FROM orders WHERE sale_id = $sale")" "0" "no order id twice"
check "reconcile --check finds nothing to repair" admin reconcile "$sale" --check
# The orders of the hung commit: the consumer ran that batch again at once
# on the new primary, its first transaction there (one created_at).
during=$(psql_q "SELECT count(*) FROM orders WHERE sale_id = $sale
	AND reserved_at >= to_timestamp($cut_ms / 1000.0) AND reserved_at < to_timestamp($heal_ms / 1000.0)")
rewritten=$(psql_q "SELECT count(*) FROM orders WHERE sale_id = $sale AND created_at = (SELECT min(created_at)
	FROM orders WHERE sale_id = $sale AND created_at >= to_timestamp($cut_ms / 1000.0))")
diag "$(cat "$trace")"
# When the keeper first found the monitor gone, whether it still saw the
# standby then, and when it found the standby gone.
diag "pg-$primary since the cut: $(grep -h -e 'Checking for network partitions' -e 'still have a standby' \
	-e 'Failed to contact the monitor or standby' -e 'no standby connected in pg_stat_replication' \
	"$FLASHSALE_STATE/log/pg-$primary.log" | awk -v t="$(date -d "@$((cut_ms / 1000))" +%T)" '($1 ~ /^20/ ? $2 : $1) >= t' | head -n 8)"
diag "pg-$primary: $(grep -h 'servers diverged' "$FLASHSALE_STATE/log/pg-$primary.log" | tail -n 1 | sed 's/.*pg_rewind: //')"
diag "postgres partition: cut at 0 ms; monitor noticed at $(since_cut "$noticed_ms") ms, pg-$standby writable at $(since_cut "$promoted_ms") ms, pg-$primary's PostgreSQL down at $(since_cut "$down_ms") ms (both writable from $(since_cut "$both_ms") ms: pg-$primary could commit nothing), healed at $((heal_ms - cut_ms)) ms, rejoined $rejoin_ms ms later"
diag "postgres partition: orders reserved during the cut $during; commits that hung on pg-$primary $hung (the consumer's first batch on pg-$standby after it: $rewritten orders); Kafka lag while hung $lag_hung; lost $k_lost, duplicated $k_dup"
k_report "postgres primary partitioned" 1 "$requests"

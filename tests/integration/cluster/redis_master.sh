# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# A Redis master is SIGKILLed mid-burst. Its replica is promoted, and the
# handlers, never restarted, sell again once their client follows the new
# slot map. Writes the old master acknowledged but had not replicated may be
# lost: the database then refuses the excess (those orders end FAILED, no
# more of them than writes were lost), and `reconcile --repair` brings Redis
# back in line with PostgreSQL and the orders on their way.

. "$top_srcdir/tests/integration/cluster_lib.sh"

units=600
set -- $(new_sale -5 $units)
sale=$1 item=$2
master=$(k_master_port "fs:{$sale}:stock")
replica=$(k_replica_port "$master")
is "$(k_role "$master") $(k_role "$replica")" "master slave" \
    "the sale's slot: a master (redis-$(k_redis_node "$master")) and its replica (redis-$(k_redis_node "$replica"))"

# 3000 shoppers for 600 units, 4 requests in flight: the master dies after
# the first 20 purchases, while units are still selling.
k_burst_killing_master rm "$sale" "$master" "$replica"
is "$(k_role "$replica")" "master" "the replica is promoted ($k_promoted_ms ms after the kill)"
k_burst_answered
# What the promoted replica holds against what was answered: a hold that
# got its 202 but never reached the replica is a lost write.
set -- $(k_sale_item "$sale" "$item")
held=$3
writes_lost=$((won1 > held ? won1 - held : 0))
diag "the burst around the kill: $requests requests, $won1 answered 202, $refused1 503; the promoted replica holds $held: writes lost $writes_lost"
if [ "$refused1" -gt 0 ]; then
	ok "the master died mid-sale: $refused1 shoppers were refused (503) until the failover"
else
	not_ok "the master died mid-sale" "no shopper was refused"
fi

# The same handlers sell again: every shopper refused retries (bounded:
# three rounds).
k_retry_rounds "$sale" "$k_out" >/dev/null
is "$(k_unanswered "$k_out")" "0" \
    "after the failover every shopper gets an answer (202 or 410) from the same handlers"
# shellcheck disable=SC2086 # one word per PID
alive=$(k_alive $handlers)
# shellcheck disable=SC2086 # echo counts the PIDs as words
is "$(cat "$FLASHSALE_STATE"/origin-[ab]/run/flashsale-purchase.pid | tr '\n' ' ') $alive" \
    "$handlers $(echo $handlers | wc -w | tr -d ' ')" "no purchase handler was restarted: the same processes, all alive"
consumer_caught_up 60
out=$(admin reconcile --all --repair 2>&1)
case $out in
*" 0 violations"*) ok "reconcile --all --repair leaves no violation" ;;
*) not_ok "reconcile --all --repair leaves no violation" "$out" ;;
esac
k_sweep "$sale" "$item" "$k_out"
k_sell_rest rm "$sale"
k_figures "$sale" "$item" "$k_out"
if [ "$k_won_failed" -le "$writes_lost" ]; then
	ok "202s later FAILED ($k_won_failed) <= writes lost ($writes_lost)"
else
	not_ok "202s later FAILED ($k_won_failed) <= writes lost ($writes_lost)"
fi
is "$k_live" "$units" "the $units units are sold, to $units live orders"
check "reconcile --all --check passes" admin reconcile --all --check
k_report "redis master killed" 1 "$requests"
check "the killed node restarts and rejoins as a replica" "$stack" start "redis-$(k_redis_node "$master")"
is "$(k_role "$master")" "slave" "redis-$(k_redis_node "$master") is now a replica"

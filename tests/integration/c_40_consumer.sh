# A consumer is SIGKILLed mid-burst while the other runs: the group
# rebalances (session timeout 6 s) and the survivor records what the dead
# one had not committed. Every order is recorded exactly once.

. "$top_srcdir/tests/integration/cluster_lib.sh"

units=600
set -- $(new_sale -5 $units)
sale=$1 item=$2
k_pids_of consumer-1
k_burst kc "$sale" 3000 4
k_until_purchases 20
k_kill
wait "$k_burst_pid"
requests=$(wc -l <"$k_out" | tr -d ' ')
is "$(awk '$1 != "202" && $1 != "410"' "$k_out" | wc -l | tr -d ' ')" "0" \
    "the consumer's death costs the shoppers nothing: every answer is 202 or 410"
if consumer_caught_up 60; then ok "consumer-2 took over and caught up"; else
	not_ok "consumer-2 took over and caught up" "lag: $("$FLASHSALE_BINDIR/flashsale-consumer" --lag 2>&1)"; fi
k_sweep "$sale" "$item" "$k_out"
is "$k_202 $k_live $k_failed" "$units $units 0" "$units 202s, $units live orders, none FAILED"
is "$(psql_q "SELECT count(*) - count(DISTINCT id) FROM orders WHERE sale_id = $sale")" "0" \
    "no order id twice"
k_report "consumer killed" 1 "$requests"
check "consumer-1 starts again and joins the group" "$stack" start consumer-1

# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
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

# --- With every consumer stopped, an order is held but not recorded: the
# shopper's view of it reads the hold from Redis Cluster. Checkout and
# cancel answer 409 ORDER_PROCESSING (not 404), another shopper 404; once
# the consumers are back, the order is PENDING and payable.
set -- $(new_sale -5 5)
sale=$1
shopper=$(admin token mint --user "early-$sale")
other=$(admin token mint --user "other-$sale")
"$stack" stop consumer-1 >/dev/null
"$stack" stop consumer-2 >/dev/null
ans=$(http POST "$(purchase_path "$sale")" "$shopper")
is "${ans%% *}" "202" "a purchase with both consumers stopped answers 202"
oid=$(json_get "${ans#* }" orderId)
ans=$(http GET "/api/flash-sales/orders/$oid" "$shopper")
is "$(json_get "${ans#* }" status)" "PROCESSING" \
    "held, not recorded: GET answers PROCESSING"
ans=$(http POST "/api/flash-sales/orders/$oid/checkout" "$shopper")
is "${ans%% *} $(json_get "${ans#* }" error) $(json_get "${ans#* }" status)" "409 ORDER_PROCESSING PROCESSING" \
    "checkout of a PROCESSING order answers 409 ORDER_PROCESSING"
ans=$(http POST "/api/flash-sales/orders/$oid/checkout" "$other")
is "${ans%% *} $(json_get "${ans#* }" error)" "404 ORDER_NOT_FOUND" "another shopper's checkout of it answers 404"
ans=$(http POST "/api/flash-sales/orders/$oid/cancel" "$shopper")
is "${ans%% *} $(json_get "${ans#* }" error)" "409 ORDER_PROCESSING" "cancelling it answers 409 ORDER_PROCESSING"
check "consumer-1 starts again" "$stack" start consumer-1
check "consumer-2 starts again" "$stack" start consumer-2
if consumer_caught_up 60; then ok "the consumers record the waiting order"; else
	not_ok "the consumers record the waiting order" "lag: $("$FLASHSALE_BINDIR/flashsale-consumer" --lag 2>&1)"; fi
ans=$(http GET "/api/flash-sales/orders/$oid" "$shopper")
is "$(json_get "${ans#* }" status)" "PENDING" "then GET answers PENDING"
ans=$(http POST "/api/flash-sales/orders/$oid/checkout" "$shopper")
case "${ans%% *} $(json_get "${ans#* }" redirectUrl)" in
"200 http"*) ok "then its checkout answers 200 with the provider's page" ;;
*) not_ok "then its checkout answers 200 with the provider's page" "$ans" ;;
esac

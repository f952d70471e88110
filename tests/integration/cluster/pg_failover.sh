# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# The PostgreSQL primary is SIGKILLed mid-burst (its keeper, server and
# backends at once, as a host that dies). pg_auto_failover's monitor
# promotes the synchronous standby; the programs find it through their
# multi-host connection string, nothing restarted. Purchases never touch
# the database: every shopper still gets 202 or 410. The consumer waits
# and resumes from its committed offsets; checkout, cancel and the
# provider's webhook answer 503 + Retry-After during the failover and work
# after it; an expiry run during it fails and the next one succeeds. Every
# 202 is an order once; nothing oversold. Then the old primary comes back
# as a standby, never as a second primary.

. "$top_srcdir/tests/integration/cluster_lib.sh"
. "$top_srcdir/tests/integration/pipeline_lib.sh"

# g_primary: the node (1, 2) that takes writes, found the way the programs
# find it. g_status N: deploy/stack's status line of pg-N.
g_primary() { echo $(($(psql_q 'SELECT inet_server_port()') - FLASHSALE_PORT_BASE - 50)); }
g_status() { "$stack" status "pg-$1" 2>/dev/null; }
# g_sync: the line of /metrics that says whether commits wait for a standby.
g_sync() { curl -s -m 10 "$FLASHSALE_ORIGIN_URL/metrics" | grep '^flashsale_pg_synchronous '; }
# g_answer METHOD PATH TOKEN: "STATUS RETRY-AFTER" of a request.
g_answer() {
	curl -s -o /dev/null -D "$FLASHSALE_STATE/g.headers" -w '%{http_code}' -X "$1" \
	    -H "Authorization: Bearer $3" "$FLASHSALE_ORIGIN_URL$2" >"$FLASHSALE_STATE/g.status"
	printf '%s %s' "$(cat "$FLASHSALE_STATE/g.status")" \
	    "$(tr -d '\r' <"$FLASHSALE_STATE/g.headers" | awk -F': ' 'tolower($1) == "retry-after" { print $2 }')"
}

primary=$(g_primary)
standby=$((3 - primary))
case $(g_status "$primary") in
*"primary, quorum standby"*) ok "pg-$primary is the primary with a synchronous standby" ;;
*) not_ok "pg-$primary is the primary with a synchronous standby" "$(g_status "$primary")" ;;
esac
is "$(g_sync)" "flashsale_pg_synchronous 1" "/metrics: commits wait for the standby"

# Three shoppers of a sale of their own, each with a PENDING order: one to
# check out, one to cancel and one to pay during the failover.
set -- $(new_sale -5 10)
side=$1
for who in ck cn pay; do
	eval "tok_$who=\$(p_tok $who-$side)"
	eval "ans=\$(http POST \"\$(purchase_path $side)\" \"\$tok_$who\")"
	eval "oid_$who=\$(json_get \"\${ans#* }\" orderId)"
done
consumer_caught_up 30
ans=$(p_checkout "$oid_pay" "$tok_pay")
pay_url=$(json_get "${ans#* }" redirectUrl)
pay_id=$(p_payment_of "$oid_pay" | cut -d' ' -f1)
p_provider_mode '{}'
is "$(p_status "$oid_ck") $(p_status "$oid_cn") $(p_status "$oid_pay") ${ans%% *}" "PENDING PENDING PENDING 200" \
    "three PENDING orders, one checked out"

units=600
set -- $(new_sale -5 $units)
sale=$1 item=$2
k_pids_of "pg-$primary"
k_burst kp "$sale" 3000 4
k_until_purchases 20
k_kill 2>/dev/null # backends listed a moment ago may have ended
killed_at=$(k_now_ms)
# During the failover: the payment, checkout, cancel and an expiry run.
is "$(p_press "$pay_url" pay)" "303" "the shopper pays at the provider during the failover"
is "$(g_answer POST "/api/flash-sales/orders/$oid_ck/checkout" "$tok_ck")" "503 1" \
    "checkout during the failover: 503, Retry-After: 1"
is "$(g_answer POST "/api/flash-sales/orders/$oid_cn/cancel" "$tok_cn")" "503 1" \
    "cancel during the failover: 503, Retry-After: 1"
p_expire >/dev/null
is "$(($? != 0))" "1" "an expiry run during the failover fails (and changes nothing)"
# Until the standby takes writes: the failover time, and the orders the
# consumers could not record meanwhile at the worst moment.
waiting=0
until psql_q 'SELECT 1' >/dev/null 2>&1 || [ $(($(k_now_ms) - killed_at)) -gt 60000 ]; do
	lag=$("$FLASHSALE_BINDIR/flashsale-consumer" --lag 2>/dev/null || echo 0)
	[ "$lag" -gt "$waiting" ] 2>/dev/null && waiting=$lag
	sleep 0.1
done
failover_ms=$(($(k_now_ms) - killed_at))
is "$(g_primary)" "$standby" "pg-$standby is promoted"
case $(g_status "$standby") in
*"primary ALONE"*) ok "pg-$standby says it is alone: commits are on one node until pg-$primary is back" ;;
*) not_ok "pg-$standby says it is alone" "$(g_status "$standby")" ;;
esac
is "$(g_sync)" "flashsale_pg_synchronous 0" "and so does /metrics (the alert FlashsaleDatabaseAlone)"
wait "$k_burst_pid"
requests=$(wc -l <"$k_out" | tr -d ' ')
is "$(awk '$1 != "202" && $1 != "410"' "$k_out" | wc -l | tr -d ' ')" "0" \
    "purchases never wait for the database: every answer is 202 or 410"
if consumer_caught_up 90; then ok "the consumers resume on the new primary and catch up"; else
	not_ok "the consumers resume on the new primary and catch up" "lag: $("$FLASHSALE_BINDIR/flashsale-consumer" --lag 2>&1)"; fi
k_sweep "$sale" "$item" "$k_out"
is "$k_202 $k_live $k_failed" "$units $units 0" "$units 202s, $units live orders, none FAILED"
is "$(psql_q "SELECT count(*) - count(DISTINCT id) FROM orders WHERE sale_id = $sale")" "0" \
    "no order id twice"
admin reconcile "$sale" --check >/dev/null 2>&1
is "$?" "0" "reconcile --check finds nothing to repair"
admin sale watch "$sale" --once --origin "$FLASHSALE_ORIGIN_URL" >/dev/null 2>&1
is "$?" "0" "sale watch --once works on the new primary"
diag "PostgreSQL failover: writable again ${failover_ms} ms after the kill; orders waiting in Kafka at the worst moment $waiting; lost $k_lost, duplicated $k_dup, oversold $k_oversold"
k_report "primary killed" 1 "$requests"

# After it: the same requests work, the provider's retry made the payment
# PAID, the next expiry run succeeds.
is "$(g_answer POST "/api/flash-sales/orders/$oid_ck/checkout" "$tok_ck")" "200 " "checkout works after it"
is "$(g_answer POST "/api/flash-sales/orders/$oid_cn/cancel" "$tok_cn")" "200 " "cancel works after it"
p_until 30 PAID p_status "$oid_pay"
is "$p_out" "PAID" "the provider's retried webhook makes the payment PAID"
case $(p_at_provider "$pay_id" attempts) in
1 | "") not_ok "the webhook was refused during the failover and retried" ;;
*) ok "the webhook was refused during the failover and retried ($(p_at_provider "$pay_id" attempts) attempts)" ;;
esac
p_expire >/dev/null
is "$?" "0" "the next expiry run succeeds"

# The old primary comes back: pg_auto_failover rewinds it into a standby.
check "pg-$primary starts again" "$stack" start "pg-$primary"
p_until 60 "standby" sh -c "\"$stack\" status pg-$primary | grep -o 'standby of pg-$standby' | cut -d' ' -f1"
is "$p_out" "standby" "pg-$primary rejoins as a standby of pg-$standby"
is "$(g_primary)" "$standby" "writes still go to pg-$standby"
p_until 30 1 sh -c "\"$stack\" status pg-$standby | grep -c 'primary, quorum standby'"
is "$p_out" "1" "pg-$standby has a synchronous standby again"
is "$(g_sync)" "flashsale_pg_synchronous 1" "and /metrics says so"
is "$("$stack" status pg-1 | grep -c 'up (.*primary'; "$stack" status pg-2 | grep -c 'up (.*primary')" "$(printf '%s\n%s' \
    "$((standby == 1))" "$((standby == 2))")" "one primary, never two"

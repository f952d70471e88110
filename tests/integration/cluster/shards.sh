# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# A hot item spread over three shards on the cluster (lib/stock.c): sale
# warm puts each shard on its own master; a burst of distinct and repeated
# shoppers takes exactly the units, nobody twice. Then the master of one
# shard is SIGKILLed mid-burst: its replica takes over, the other shards
# keep selling, and after the retries, the sweep and reconcile --repair no
# unit is oversold, lost or stranded.

. "$top_srcdir/tests/integration/cluster_lib.sh"

# ks_new UNITS: a sale of one item with 3 shards; sets ks_sale, ks_item, ks_tags.
ks_new() {
	cat >"$FLASHSALE_STATE/sale-shards-c.json" <<JSON
{"name":"sharded","startsInSeconds":-5,"durationSeconds":3600,
 "items":[{"name":"Hot","priceMinor":100,"currency":"VND","quantity":$1,"shards":3}]}
JSON
	set -- $(sale_created "$FLASHSALE_STATE/sale-shards-c.json")
	ks_sale=$1 ks_item=$2
	ks_tags=$(admin sale warm "$ks_sale" | sed -n 's/^item [0-9]*: 3 shards: //p' | tr ',' '\n' |
		sed -n 's/^ *{\([^}]*\)}.*/\1/p')
}

# --- No fault: placement and the burst.
ks_new 300
ks_ports=$(for t in $ks_tags; do k_master_port "fs:{$t}:stock"; done)
# shellcheck disable=SC2086,SC2116 # the tags and ports as words, on one line
is "$(echo $ks_tags | wc -w | tr -d ' ') $(echo $ks_ports | tr ' ' '\n' | sort -u | wc -l | tr -d ' ')" \
    "3 3" "sale warm puts the three shards on three masters ($(echo $ks_tags))"
admin token mint --user "ks-$ks_sale" --count 3000 >"$FLASHSALE_STATE/ks-tokens"
{
	cat "$FLASHSALE_STATE/ks-tokens"
	head -n 1000 "$FLASHSALE_STATE/ks-tokens"
} | shuf >"$FLASHSALE_STATE/ks-burst"
fire_all "$(purchase_path "$ks_sale")" "$FLASHSALE_STATE/ks-burst" "$FLASHSALE_STATE/ks-out" 200
is "$(count_of 202 "$FLASHSALE_STATE/ks-out")" "300" "burst: exactly the 300 units get 202"
is "$(awk '$1 == "202" { print $2 }' "$FLASHSALE_STATE/ks-out" | sort -u | wc -l | tr -d ' ')" "300" \
    "for 300 distinct shoppers"
# A 409 is a promise (issue 36): a shopper's second request that meets its
# first still on its way to the broker is told 503 (try again) instead;
# the first gets the 202.
ks_early=$(awk 'NR == FNR { if ($1 == 202) won[$2] = 1; next } $1 == 503 && ($2 in won) { n++ }
	END { print n + 0 }' "$FLASHSALE_STATE/ks-out" "$FLASHSALE_STATE/ks-out")
is "$(($(k_unanswered "$FLASHSALE_STATE/ks-out") - ks_early))" \
    "0" "every other answer is 409 or 410, or 503 when it met its shopper's 202 on its way ($ks_early)"
consumer_caught_up 60
k_figures "$ks_sale" "$ks_item" "$FLASHSALE_STATE/ks-out"
is "$k_live $k_left $k_dup $k_oversold $k_stranded" "300 0 0 0 0" \
    "300 live orders, 0 left over the shards, none twice, oversold or stranded"

# --- The master of the second shard dies mid-burst.
units=600
ks_new $units
# shellcheck disable=SC2086 # the tags on one line
master=$(k_master_port "fs:{$(echo $ks_tags | cut -d' ' -f2)}:stock")
replica=$(k_replica_port "$master")
k_burst_killing_master ks "$ks_sale" "$master" "$replica"
is "$(k_role "$replica")" "master" "the shard's replica is promoted ($k_promoted_ms ms after the kill)"
k_burst_answered
k_retry_rounds "$ks_sale" "$k_out" >/dev/null
is "$(k_unanswered "$k_out")" "0" \
    "after the failover every shopper gets an answer (202, 409 or 410)"
# shellcheck disable=SC2086 # one word per PID
is "$(k_alive $handlers)" "$(echo $handlers | wc -w | tr -d ' ')" "no purchase handler was restarted"
consumer_caught_up 60
out=$(admin reconcile --all --repair 2>&1)
case $out in
*" 0 violations"*) ok "reconcile --all --repair leaves no violation" ;;
*) not_ok "reconcile --all --repair leaves no violation" "$out" ;;
esac
k_sweep "$ks_sale" "$ks_item" "$k_out"
k_sell_rest ks "$ks_sale"
k_figures "$ks_sale" "$ks_item" "$k_out"
diag "shard master killed: $requests requests, $won1 answered 202 and $refused1 503 (shoppers whose home shard was down) before the retries"
is "$k_live" "$units" "the $units units are sold, to $units live orders"
check "reconcile --all --check passes" admin reconcile --all --check
k_report "shard master killed" 1 "$requests"
check "the killed node restarts and rejoins" "$stack" start "redis-$(k_redis_node "$master")"

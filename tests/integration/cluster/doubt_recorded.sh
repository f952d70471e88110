# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# On the cluster, a doubt recorded in Redis (fs:{S}:doubt, in the sale's
# slot) and told on no channel, as when Redis Cluster's bus drops the
# message: both origin hosts' purchase processes find it within
# FLASHSALE_SOLDOUT_RECHECK_MS (+ slack) and drop the item's marker; once
# the hold in doubt is settled (its unconfirmed entry gone), the entry
# leaves Redis and both hosts answer the item from their markers again.
# The hold in doubt stands for one whose order the consumer has not
# recorded: an unconfirmed entry of an order with no record (the sweeper
# would only drop it).
#
# Guards (issue 36, doubt): a doubt message lost on the cluster's pub/sub
# let the other host answer 410 from its marker to a holder in doubt.

. "$top_srcdir/tests/integration/pipeline_lib.sh"
. "$top_srcdir/tests/integration/restock_lost_lib.sh"

url_b="http://127.0.0.3:$((FLASHSALE_PORT_BASE + 1))"
dir_a=$FLASHSALE_STATE/origin-a/soldout dir_b=$FLASHSALE_STATE/origin-b/soldout
set -- $(new_sale -5 2)
sale=$1 item=$2
rl_path=$(purchase_path "$sale")
late=$(admin token mint --user "dr-late-$sale")
ans=$(http POST "$rl_path" "$(admin token mint --user "dr-a-$sale")" "$FLASHSALE_ORIGIN_URL")
is "${ans%% *}" 202 "host a sells a unit"
ans=$(http POST "$rl_path" "$(admin token mint --user "dr-b-$sale")" "$url_b")
is "${ans%% *}" 202 "host b sells the last unit"
for host in "$FLASHSALE_ORIGIN_URL" "$url_b"; do
	rl_t0=$(rl_now_ms)
	rl_until "$host" "$rl_path" "$late" "410 nginx" 5000
	is "$rl_got" "410 nginx" "sold out: $host's nginx answers 410 from its marker"
done

# A hold in doubt, recorded, its message lost.
fake=$(p_uuid)
redis ZADD "fs:{$sale}:unconfirmed" "$(p_now_ms)" "$fake" >/dev/null
redis HSET "fs:{$sale}:doubt" "$fake" "$item" >/dev/null
t0=$(rl_now_ms)
for dir in "$dir_a" "$dir_b"; do
	until [ ! -e "$dir/$item" ] || [ $(($(rl_now_ms) - t0)) -gt 10000 ]; do
		sleep 0.02
	done
	ms=$(($(rl_now_ms) - t0))
	if [ ! -e "$dir/$item" ] && [ "$ms" -le $((rl_recheck_ms + 500)) ]; then
		ok "$dir: the marker goes within the recheck period (+ slack): $ms ms <= $rl_recheck_ms + 500"
	else
		not_ok "$dir: the marker goes within the recheck period (+ slack)" "after $ms ms (10000: never)"
	fi
done
for host in "$FLASHSALE_ORIGIN_URL" "$url_b"; do
	rl_t0=$(rl_now_ms)
	rl_until "$host" "$rl_path" "$late" "410" 3000
	is "$rl_got" "410" "$host: the handler answers 410 (Redis), nginx no more"
done
# Several recheck periods on, the doubt still holds on both hosts.
t0=$(rl_now_ms)
seen=""
while [ $(($(rl_now_ms) - t0)) -lt $((4 * rl_recheck_ms)) ]; do
	seen="$seen $(rl_answer "$FLASHSALE_ORIGIN_URL" "$rl_path" "$late")/$(rl_answer "$url_b" "$rl_path" "$late")"
	sleep 0.2
done
is "$(printf '%s' "$seen" | tr ' ' '\n' | sed '/^$/d' | sort -u | tr '\n' ' ')" "410/410 " \
	"through four recheck periods both hosts' handlers answer, no marker"

# The hold settled: the entry goes, the markers come back.
redis ZREM "fs:{$sale}:unconfirmed" "$fake" >/dev/null
p_until 15 0 redis HLEN "fs:{$sale}:doubt" || true
is "$p_out" 0 "the settled hold's doubt leaves Redis"
for host in "$FLASHSALE_ORIGIN_URL" "$url_b"; do
	rl_t0=$(rl_now_ms)
	rl_until "$host" "$rl_path" "$late" "410 nginx" $((4 * rl_recheck_ms + 3000))
	is "$rl_got" "410 nginx" "$host answers from its marker again ($rl_ms ms)"
done
consumer_caught_up 60 || not_ok "the consumer catches up"
check "flashsale-admin reconcile --check is clean" admin reconcile "$sale" --check

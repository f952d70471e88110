# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# A Redis that answers the reservation after the handler gave up on it
# (its 1 s timeout): the shopper gets 503 TRY_AGAIN, and no hold is left
# behind by a reservation that ran late, so the retry buys (not a 409 for
# an order that never was). Meanwhile the handler's loop serves other
# requests, the readiness probe among them: it does not wait with the
# reservation.

# rs_stalled PATH TOKEN ROUNDS: with Redis stalled, a purchase of PATH;
# once its reservation is out (the loop's pipeline counter past ROUNDS;
# bounded: 5 s) the same loop answers another request before it, and it
# gets 503 TRY_AGAIN once the handler gives up.
rs_stalled() {
	: >"$FLASHSALE_STATE/slow.status"
	curl -s -o "$FLASHSALE_STATE/slow.body" -w '%{http_code}' -X POST -H "Authorization: Bearer $2" \
	    "$FLASHSALE_ORIGIN_URL$1" >"$FLASHSALE_STATE/slow.status" &
	rs_curl=$!
	rs_t0=$(date +%s%N)
	n=0
	while [ "$(metric_total flashsale_purchase_reserve_rounds_total)" -le "$3" ] && [ $n -lt 50 ]; do
		n=$((n + 1))
		sleep 0.1
	done
	rs_t1=$(date +%s%N)
	rs_h=$(curl -s -o /dev/null -w '%{http_code}' "$FLASHSALE_ORIGIN_URL/healthz/flashsale-purchase")
	# The edge's probe: it does not wait behind the batch either (Redis
	# answered the loop's last batch, so the handler is ready).
	rs_r=$(curl -s -o /dev/null -w '%{http_code}' "$FLASHSALE_ORIGIN_URL/readyz/flashsale-purchase")
	diag "the round seen after $n polls, $(( (rs_t1 - rs_t0) / 1000000 )) ms; healthz and readyz answered by $(( ($(date +%s%N) - rs_t0) / 1000000 )) ms (the reservation's deadline: 1,000 ms)"
	is "$rs_h $rs_r" "200 200" \
	    "while a reservation waits on a stalled Redis, the same loop answers another request and the readiness probe"
	if [ ! -s "$FLASHSALE_STATE/slow.status" ]; then
		ok "... before the reservation itself is answered"
	else
		not_ok "... before the reservation itself is answered"
	fi
	wait "$rs_curl"
	is "$(cat "$FLASHSALE_STATE/slow.status") $(json_get "$(cat "$FLASHSALE_STATE/slow.body")" error)" \
	    "503 TRY_AGAIN" "a reservation Redis answers too late: 503"
}

set -- $(new_sale -5 5)
rs_sale=$1 rs_item=$2
rs_path=$(purchase_path "$rs_sale")
rs_tok=$(admin token mint --user "slow-$rs_sale")
# One purchase process with one thread, its script loaded by a first
# purchase: the stalled call is then the reservation itself.
FLASHSALE_PURCHASE_PROCS=1 FLASHSALE_PURCHASE_THREADS=1 "$stack" restart handlers >/dev/null
rs_first=$(admin token mint --user "slow-first-$rs_sale")
rs_pid=$(cat "$FLASHSALE_STATE/run/redis.pid")
rs_rounds=$(metric_total flashsale_purchase_reserve_rounds_total)
ans=$(http POST "$rs_path" "$rs_first")
# Redis stalls (SIGSTOP, as a frozen VM or a swapped-out server would) and
# comes back once the handler has given up: what it read meanwhile then
# runs.
kill -STOP "$rs_pid"
is "${ans%% *}" "202" "a first purchase loads the script"
rs_stalled "$rs_path" "$rs_tok" $((rs_rounds + 1))
kill -CONT "$rs_pid"
check "Redis answers again" redis PING
is "$(redis HLEN "fs:{$rs_sale}:holders") $(redis GET "fs:{$rs_sale}:stock:$rs_item")" "1 4" \
    "no hold is left behind and the unit is in stock"
is "$(redis HGET "fs:{$rs_sale}:holders" "slow-$rs_sale")" "" "the stalled shopper holds nothing"
ans=$(http POST "$rs_path" "$rs_tok")
is "${ans%% *} $(json_get "${ans#* }" status)" "202 PENDING" "the shopper's retry buys"
is "$(redis GET "fs:{$rs_sale}:stock:$rs_item")" "3" "one unit taken, once"
if grep -q "releasing order" "$FLASHSALE_STATE/log/flashsale-purchase.log"; then
	ok "the handler released the order id it could not confirm"
else
	not_ok "the handler released the order id it could not confirm"
fi
# A sale whose layout (its places) the loop never read: the layout's read
# goes out in the reservation's pipeline, so a stalled Redis holds up
# neither the loop nor, once it answers, the next purchase.
set -- $(new_sale -5 5)
rs_sale=$1 rs_item=$2
rs_path=$(purchase_path "$rs_sale")
rs_tok=$(admin token mint --user "slow-$rs_sale")
rs_rounds=$(metric_total flashsale_purchase_reserve_rounds_total)
kill -STOP "$rs_pid"
rs_stalled "$rs_path" "$rs_tok" "$rs_rounds"
kill -CONT "$rs_pid"
check "Redis answers again" redis PING
ans=$(http POST "$rs_path" "$rs_tok")
is "${ans%% *} $(json_get "${ans#* }" status)" "202 PENDING" "the shopper's retry buys the new sale's item"
is "$(redis HLEN "fs:{$rs_sale}:holders") $(redis GET "fs:{$rs_sale}:stock:$rs_item")" "1 4" \
    "one hold, one unit taken"
"$stack" restart handlers >/dev/null

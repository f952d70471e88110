# A Redis that answers the reservation after the handler gave up on it
# (its 1 s timeout): the shopper gets 503 TRY_AGAIN, and no hold is left
# behind by a reservation that ran late, so the retry buys (not a 409 for
# an order that never was). Meanwhile the handler's loop serves other
# requests: it does not wait with the reservation.

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
# runs. It stalls at once: the sale's layout that the first purchase read
# stays fresh for a second (a loop reads an older one again in place).
kill -STOP "$rs_pid"
is "${ans%% *}" "202" "a first purchase loads the script"
: >"$FLASHSALE_STATE/slow.status"
curl -s -o "$FLASHSALE_STATE/slow.body" -w '%{http_code}' -X POST -H "Authorization: Bearer $rs_tok" \
    "$FLASHSALE_ORIGIN_URL$rs_path" >"$FLASHSALE_STATE/slow.status" &
rs_curl=$!
# Its reservation is out (the loop's pipeline counter moved; bounded: 5 s).
n=0
while [ "$(metric_total flashsale_purchase_reserve_rounds_total)" -le $((rs_rounds + 1)) ] &&
	[ $n -lt 50 ]; do
	n=$((n + 1))
	sleep 0.1
done
# The loop does not wait with it: it answers the next request meanwhile.
is "$(curl -s -o /dev/null -w '%{http_code}' "$FLASHSALE_ORIGIN_URL/healthz/flashsale-purchase")" "200" \
    "while a reservation waits on a stalled Redis, the same loop answers another request"
[ ! -s "$FLASHSALE_STATE/slow.status" ] && ok "... before the reservation itself is answered" ||
	not_ok "... before the reservation itself is answered"
wait "$rs_curl"
is "$(cat "$FLASHSALE_STATE/slow.status") $(json_get "$(cat "$FLASHSALE_STATE/slow.body")" error)" \
    "503 TRY_AGAIN" "a reservation Redis answers too late: 503"
kill -CONT "$rs_pid"
check "Redis answers again" redis PING
is "$(redis HLEN "fs:{$rs_sale}:holders") $(redis GET "fs:{$rs_sale}:stock:$rs_item")" "1 4" \
    "no hold is left behind and the unit is in stock"
is "$(redis HGET "fs:{$rs_sale}:holders" "slow-$rs_sale")" "" "the stalled shopper holds nothing"
ans=$(http POST "$rs_path" "$rs_tok")
is "${ans%% *} $(json_get "${ans#* }" status)" "202 PENDING" "the shopper's retry buys"
is "$(redis GET "fs:{$rs_sale}:stock:$rs_item")" "3" "one unit taken, once"
grep -q "releasing order" "$FLASHSALE_STATE/log/flashsale-purchase.log" &&
	ok "the handler released the order id it could not confirm" ||
	not_ok "the handler released the order id it could not confirm"
"$stack" restart handlers >/dev/null

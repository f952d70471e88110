# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# The order pipeline: a 202 becomes exactly one row in PostgreSQL; the
# order's status, payment, cancellation, expiry and status push; the
# ghost sweep; dead letters for what the database refuses.

. "$top_srcdir/tests/integration/pipeline_lib.sh"

# --- PROCESSING, then PENDING: the shopper's view while the consumer works.
set -- $(new_sale -5 10)
sale=$1 item=$2
path=$(purchase_path "$sale")
alice=$(p_tok "alice-$sale")
mallory=$(p_tok "mallory-$sale")
"$stack" stop consumer >/dev/null
ans=$(http POST "$path" "$alice")
is "${ans%% *}" "202" "a purchase with the consumer stopped still answers 202"
oid=$(json_get "${ans#* }" orderId)
expires=$(json_get "${ans#* }" expiresAt)
ans=$(http GET "/api/flash-sales/orders/$oid" "$alice")
is "$ans" "200 {\"orderId\":\"$oid\",\"itemId\":$item,\"status\":\"PROCESSING\",\"expiresAt\":\"$expires\"}" \
    "held but not recorded: GET answers PROCESSING with the 202's expiresAt"
# Not payable until it is recorded (the page offers "Pay now" from PENDING
# on): 409 with the status, not 404, so that a page that asks early knows
# to wait; another shopper's still hears 404.
ans=$(p_checkout "$oid" "$alice")
is "${ans%% *} $(json_get "${ans#* }" error) $(json_get "${ans#* }" orderId) $(json_get "${ans#* }" status)" \
    "409 ORDER_PROCESSING $oid PROCESSING" "checkout of a PROCESSING order answers 409 ORDER_PROCESSING until it is recorded"
ans=$(p_checkout "$oid" "$mallory")
is "${ans%% *} $(json_get "${ans#* }" error)" "404 ORDER_NOT_FOUND" "checkout of another shopper's PROCESSING order answers 404"
ans=$(p_checkout "$(p_uuid)" "$alice")
is "${ans%% *} $(json_get "${ans#* }" error)" "404 ORDER_NOT_FOUND" "checkout of an unknown order answers 404"
ans=$(http POST "/api/flash-sales/orders/$oid/cancel" "$alice")
is "${ans%% *} $(json_get "${ans#* }" error)" "409 ORDER_PROCESSING" "cancelling a PROCESSING order answers 409 ORDER_PROCESSING"
is "$(p_count "id = '$oid'")" "0" "no row while the consumer is stopped"
# The cron form: reads until caught up, records, exits.
if out=$("$FLASHSALE_BINDIR/flashsale-consumer" --drain 2>>"$FLASHSALE_STATE/log/drain-tests.log"); then
	is "$(json_get "$out" messages) $(json_get "$out" pending)" "1 1" "flashsale-consumer --drain records the waiting order and exits 0"
else
	not_ok "flashsale-consumer --drain records the waiting order and exits 0" "$out"
fi
is "$("$FLASHSALE_BINDIR/flashsale-consumer" --lag)" "0" "--lag: nothing left to record"
"$stack" start consumer >/dev/null
consumer_caught_up
is "$(psql_q "SELECT status, user_id, item_id, sale_id, to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') FROM orders WHERE id = '$oid'")" \
    "PENDING|alice-$sale|$item|$sale|$expires" "the consumer records the order PENDING with the promised expiresAt"
is "$(p_sold "$item")" "1" "sold counts the order"
is "$(redis ZCARD "fs:{$sale}:unconfirmed")" "0" "the hold is confirmed after the commit"
ans=$(http GET "/api/flash-sales/orders/$oid" "$alice")
is "$ans" "200 {\"orderId\":\"$oid\",\"itemId\":$item,\"status\":\"PENDING\",\"expiresAt\":\"$expires\"}" \
    "GET answers PENDING once recorded"
is "$(http GET "/api/flash-sales/orders/$oid" "$mallory" | cut -c1-3)" "404" "another shopper's order is 404"
is "$(http GET "/api/flash-sales/orders/$(p_uuid)" "$alice" | cut -c1-3)" "404" "an unknown order is 404"
is "$(http GET "/api/flash-sales/orders/$oid" | cut -c1-3)" "401" "no token is 401"
is "$(http GET "/api/flash-sales/orders/$(echo "$oid" | tr a-f A-F)" "$alice" | cut -c1-3)" "404" \
    "an upper-case order id is 404"
is "$(http GET "/api/flash-sales/orders/not-an-order" "$alice" | cut -c1-3)" "404" "a malformed order id is 404"
is "$(http DELETE "/api/flash-sales/orders/$oid" "$alice" | cut -c1-3)" "405" "DELETE on an order is 405"
is "$(http GET "/api/flash-sales/orders/$oid/checkout" "$alice" | cut -c1-3)" "405" "GET on checkout is 405"
ans=$(http POST "/api/flash-sales/orders/$oid/pay" "$alice")
is "${ans%% *} $(json_get "${ans#* }" error)" "404 ORDER_NOT_FOUND" "the shopper's own /pay is gone (404)"

# --- Payment through the provider, and the status push: the shopper's page
# hears PAID at once; nobody else listens.
sse=$FLASHSALE_STATE/sse-$sale
ans=$(http POST "/api/flash-sales/orders/$oid/ticket" "$alice")
ticket=$(json_get "${ans#* }" ticket)
case "${ans%% *} $ticket" in
"200 "[0-9]*.*) ok "the shopper gets an event ticket for her order" ;;
*) not_ok "the shopper gets an event ticket for her order" "$ans" ;;
esac
is "$(http POST "/api/flash-sales/orders/$oid/ticket" "$mallory" | cut -c1-3)" "404" \
    "another shopper gets no ticket for it (404)"
curl -s -N -m 6 -H 'Accept: text/event-stream' \
    "$FLASHSALE_ORIGIN_URL/api/flash-sales/orders/$oid/events?ticket=$ticket" >"$sse" 2>/dev/null &
sse_pid=$!
sleep 1
ans=$(p_checkout "$oid" "$alice")
url=$(json_get "${ans#* }" redirectUrl)
case "${ans%% *} $url" in
"200 $FLASHSALE_PAYMENT_URL/checkout/cs_"*) ok "checkout answers the provider's hosted page" ;;
*) not_ok "checkout answers the provider's hosted page" "$ans" ;;
esac
is "$(p_checkout "$oid" "$alice")" "$ans" "a second checkout answers the same session"
is "$(p_checkout "$oid" "$mallory" | cut -c1-3)" "404" "another shopper cannot check it out (404)"
is "$(p_status "$oid")" "PENDING" "a checkout alone pays nothing"
is "$(p_press "$url" pay)" "303" "Pay on the hosted page sends the shopper back (303)"
p_until 15 PAID p_status "$oid"
is "$p_out" "PAID" "the provider's signed webhook makes the order PAID"
is "$(http GET "/api/flash-sales/orders/$oid" "$alice")" \
    "200 {\"orderId\":\"$oid\",\"itemId\":$item,\"status\":\"PAID\",\"expiresAt\":\"$expires\"}" "GET answers PAID"
ans=$(p_checkout "$oid" "$alice")
is "${ans%% *} $(json_get "${ans#* }" status)" "409 PAID" "checkout of a PAID order answers 409"
ans=$(http POST "/api/flash-sales/orders/$oid/cancel" "$alice")
is "${ans%% *} $(json_get "${ans#* }" status)" "409 PAID" "a PAID order cannot be cancelled (409)"
wait "$sse_pid"
# Each event is a "data: JSON" line: the order's statuses, in their order.
heard=$(sed -n 's/^data: *//p' "$sse" | fs_json -l -w .orderId="$oid" -w .itemId="$item" .status | tr '\n' ' ')
case "$heard" in
*"PENDING "*"PAID "*) ok "the subscriber heard PENDING, then PAID" ;;
*) not_ok "the subscriber heard PENDING, then PAID" "$(cat "$sse")" ;;
esac
sse_code() {
	curl -s -o /dev/null -m 3 -w '%{http_code}' -H 'Accept: text/event-stream' "$FLASHSALE_ORIGIN_URL$1"
}
other_oid=$(p_uuid)
is "$(sse_code "/api/flash-sales/orders/$other_oid/events?ticket=$ticket")" "403" \
    "a ticket opens no other order's stream (403)"
is "$(sse_code "/api/flash-sales/orders/$oid/events")" "403" "a subscription without a ticket is refused (403)"
is "$(sse_code "/api/flash-sales/orders/$oid/events?ticket=${ticket%%.*}1.${ticket#*.}")" "403" \
    "a ticket with a changed expiry is refused (403)"
is "$(sse_code "/api/flash-sales/orders/$oid/events?access_token=$alice")" "403" \
    "a bearer token in the URL opens nothing (403)"
is "$(sse_code "/api/flash-sales/orders/$oid/events?ticket=garbage")" "403" \
    "a subscription with a bad ticket is refused (403)"
is "$(p_stock "$sale" "$item") $(p_sold "$item")" "9 1" "a PAID order keeps its unit: 9 left, sold 1"

# --- Cancel: the unit goes back once, however often the shopper asks.
bob=$(p_tok "bob-$sale")
ans=$(http POST "$path" "$bob")
bob_oid=$(json_get "${ans#* }" orderId)
consumer_caught_up
is "$(p_stock "$sale" "$item") $(p_sold "$item")" "8 2" "bob's order takes a unit: 8 left, sold 2"
ans=$(http POST "/api/flash-sales/orders/$bob_oid/cancel" "$bob")
is "${ans%% *} $(json_get "${ans#* }" status)" "200 CANCELLED" "cancel of a PENDING order answers 200 CANCELLED"
is "$(p_stock "$sale" "$item") $(p_sold "$item") $(redis HEXISTS "fs:{$sale}:holders" "bob-$sale")" "9 1 0" \
    "cancel gives the unit back: 9 left, sold 1, no hold"
is "$(http POST "/api/flash-sales/orders/$bob_oid/cancel" "$bob" | cut -c1-3)" "200" "cancelling again answers 200"
is "$(p_stock "$sale" "$item") $(p_sold "$item")" "9 1" "a second cancel gives nothing back twice"
ans=$(p_checkout "$bob_oid" "$bob")
is "${ans%% *} $(json_get "${ans#* }" status)" "409 CANCELLED" "checkout of a cancelled order answers 409"

# --- Pay after the window, before the expiry ran: refused; then expiry.
carol=$(p_tok "carol-$sale")
ans=$(http POST "$path" "$carol")
carol_oid=$(json_get "${ans#* }" orderId)
consumer_caught_up
psql_q "UPDATE orders SET expires_at = now() - interval '1 second' WHERE id = '$carol_oid'" >/dev/null
ans=$(p_checkout "$carol_oid" "$carol")
is "${ans%% *} $(json_get "${ans#* }" error)" "409 ORDER_NOT_PENDING" "checkout after the window answers 409"
out=$(p_expire)
is "$(json_get "$out" expired) $(json_get "$out" released)" "1 1" "the cron expiry expires it and releases its unit"
is "$(p_status "$carol_oid") $(p_stock "$sale" "$item") $(p_sold "$item")" "EXPIRED 9 1" \
    "EXPIRED, the unit is back (9 left), sold 1"
ans=$(http GET "/api/flash-sales/orders/$carol_oid" "$carol")
is "$(json_get "${ans#* }" status)" "EXPIRED" "GET answers EXPIRED"
is "$(p_checkout "$carol_oid" "$carol" | cut -c1-3)" "409" "checkout of an expired order answers 409"

# --- Re-buy after expiry: the new order is recorded and live.
ans=$(http POST "$path" "$carol")
is "${ans%% *}" "202" "the shopper buys again after the expiry"
carol_oid2=$(json_get "${ans#* }" orderId)
consumer_caught_up
is "$(psql_q "SELECT string_agg(status, ',' ORDER BY created_at) FROM orders WHERE user_id = 'carol-$sale'")" \
    "EXPIRED,PENDING" "both orders are in the database: the old EXPIRED, the new PENDING"
is "$(p_status "$carol_oid2") $(p_stock "$sale" "$item") $(p_sold "$item")" "PENDING 8 2" \
    "the new order holds a unit: 8 left, sold 2"

# --- Redelivery: the same message twice gives one order and changes nothing.
msg=$(topic_messages | fs_json -l -w .orderId="$oid" . | head -n 1)
dl_before=$(p_dead_letters)
p_produce "$item" "$msg"
p_produce "$item" "$msg"
consumer_caught_up
is "$(p_count "id = '$oid'") $(p_status "$oid")" "1 PAID" "a PAID order delivered twice more: one row, still PAID"
is "$(p_stock "$sale" "$item") $(p_sold "$item")" "8 2" "redelivery took no unit and released none"
is "$(redis HGET "fs:{$sale}:holders" "alice-$sale")" "$oid" "the PAID order keeps its hold"
dup=$(p_uuid)
dave=dave-$sale
is "$(p_reserve "$sale" "$item" "$dave" "$dup" "$(p_now_ms)")" "1" "a hold taken through the Lua script"
dmsg=$(p_message "$dup" "$sale" "$item" "$dave" "$(p_now_ms)")
printf '%s\t%s\n%s\t%s\n' "$item" "$dmsg" "$item" "$dmsg" | p_send
consumer_caught_up
is "$(p_count "id = '$dup'") $(p_status "$dup")" "1 PENDING" "a message twice in one batch gives one PENDING order"
is "$(p_stock "$sale" "$item") $(p_sold "$item")" "7 3" "one unit for it: 7 left, sold 3"
is "$(p_dead_letters)" "$dl_before" "redeliveries of live orders send no dead letter"

# --- The database refuses for good: FAILED, dead letter, hold released.
set -- $(new_sale -5 2)
sale2=$1 item2=$2
path2=$(purchase_path "$sale2")
# Redis believes in one unit more than PostgreSQL has (as after a bad warm).
redis INCR "fs:{$sale2}:stock:$item2" >/dev/null
p_buy_all "$path2" "ns-$sale2" 3 "$FLASHSALE_STATE/ns-$sale2" >/dev/null
consumer_caught_up
is "$(psql_q "SELECT string_agg(status || coalesce(':' || failure, ''), ',' ORDER BY status) FROM orders WHERE sale_id = $sale2")" \
    "FAILED:NO_STOCK,PENDING,PENDING" "three 202s, two units: two PENDING, one FAILED NO_STOCK"
failed=$(psql_q "SELECT id FROM orders WHERE sale_id = $sale2 AND status = 'FAILED'")
is "$(p_stock "$sale2" "$item2") $(redis HEXISTS "fs:{$sale2}:orders" "$failed")" "1 0" \
    "the FAILED order's hold is released"
is "$(p_dead_letters NO_STOCK "$failed")" "1" \
    "the FAILED order's message is in the dead-letter topic, reason NO_STOCK"
fuser=$(psql_q "SELECT user_id FROM orders WHERE id = '$failed'")
ans=$(http GET "/api/flash-sales/orders/$failed" "$(p_token_of "$FLASHSALE_STATE/ns-$sale2" "$fuser")")
is "$(json_get "${ans#* }" status)" "FAILED" "its shopper sees FAILED"
redis DECR "fs:{$sale2}:stock:$item2" >/dev/null

# A second live order of one shopper (Redis lost the holder entry).
set -- $(new_sale -5 5)
sale3=$1 item3=$2
path3=$(purchase_path "$sale3")
erin=$(p_tok "erin-$sale3")
ans=$(http POST "$path3" "$erin")
first=$(json_get "${ans#* }" orderId)
consumer_caught_up
redis HDEL "fs:{$sale3}:holders" "erin-$sale3" >/dev/null
ans=$(http POST "$path3" "$erin")
is "${ans%% *}" "202" "with its holder entry lost, Redis lets the shopper buy twice"
second=$(json_get "${ans#* }" orderId)
consumer_caught_up
is "$(p_status "$first") $(psql_q "SELECT status || ':' || failure FROM orders WHERE id = '$second'")" \
    "PENDING FAILED:LIVE_ORDER" "the database keeps one live order: the second is FAILED LIVE_ORDER"
is "$(p_stock "$sale3" "$item3") $(p_sold "$item3")" "4 1" "the second unit went back: 4 left, sold 1"
is "$(p_dead_letters LIVE_ORDER "$second")" "1" \
    "the second order is a dead letter, reason LIVE_ORDER"
redis HSET "fs:{$sale3}:holders" "erin-$sale3" "$first" >/dev/null

# --- Malformed messages: dead letters, and the consumer carries on.
malformed_before=$(p_dead_letters MALFORMED)
p_produce "$item3" 'not json at all'
p_produce "$item3" "{\"orderId\":\"$(p_uuid)\",\"saleId\":$sale3}"
p_produce "$item3" "$(p_message "$(p_uuid)" "$sale3" "$item3" 'bad user' "$(p_now_ms)")"
frank=$(p_tok "frank-$sale3")
ans=$(http POST "$path3" "$frank")
frank_oid=$(json_get "${ans#* }" orderId)
consumer_caught_up
is "$(p_dead_letters MALFORMED)" "$((malformed_before + 3))" \
    "three malformed messages went to the dead letters"
is "$(p_status "$frank_oid")" "PENDING" "the order after them is recorded"

# --- Ghost holds: a hold whose order never reached Kafka is released.
ghost=$(p_uuid)
young=$(p_uuid)
old_ms=$(($(p_now_ms) - 600000))
is "$(p_reserve "$sale3" "$item3" "ghost-$sale3" "$ghost" "$old_ms")" "1" "an old hold taken through the Lua script"
is "$(p_reserve "$sale3" "$item3" "young-$sale3" "$young" "$(p_now_ms)")" "1" "a young one, too"
left=$(p_stock "$sale3" "$item3")
out=$(p_expire)
is "$(json_get "$out" ghosts)" "1" "the sweep releases one ghost"
is "$(p_stock "$sale3" "$item3")" "$((left + 1))" "its unit is back"
is "$(psql_q "SELECT status || ':' || failure FROM orders WHERE id = '$ghost'")" "FAILED:GHOST_HOLD" \
    "the ghost's order is recorded FAILED GHOST_HOLD"
is "$(redis HEXISTS "fs:{$sale3}:orders" "$young") $(redis ZRANK "fs:{$sale3}:unconfirmed" "$young" | grep -c .) $(p_count "id = '$young'")" \
    "1 1 0" "the young hold is left alone (it may be on its way)"
# The ghost's message arrives after all: nothing is taken or given twice.
p_produce "$item3" "$(p_message "$ghost" "$sale3" "$item3" "ghost-$sale3" "$old_ms")"
p_produce "$item3" "$(p_message "$young" "$sale3" "$item3" "young-$sale3" "$(p_now_ms)")"
consumer_caught_up
is "$(p_count "id = '$ghost'") $(p_status "$ghost") $(p_status "$young")" "1 FAILED PENDING" \
    "the late ghost message stays FAILED; the young hold's order is recorded"
is "$(p_stock "$sale3" "$item3")" "$((left + 1))" "the late message took and gave nothing"
is "$(p_dead_letters GHOST_HOLD "$ghost")" "1" \
    "the late ghost message is a dead letter"
# An old unconfirmed entry whose order is recorded is only confirmed.
redis ZADD "fs:{$sale3}:unconfirmed" "$old_ms" "$frank_oid" >/dev/null
out=$(p_expire)
is "$(json_get "$out" confirmed) $(json_get "$out" ghosts) $(p_status "$frank_oid")" "1 0 PENDING" \
    "an old entry whose order is recorded is confirmed, not released"
# A closed order whose release was lost (the handler died after the commit).
psql_q "WITH c AS (UPDATE orders SET status = 'CANCELLED', closed_at = now() WHERE id = '$frank_oid' RETURNING item_id)
	UPDATE items SET sold = sold - 1 FROM c WHERE items.id = c.item_id" >/dev/null
left=$(p_stock "$sale3" "$item3")
out=$(p_expire)
is "$(json_get "$out" repaired) $(p_stock "$sale3" "$item3")" "1 $((left + 1))" \
    "the sweep releases the hold of a closed order"

# --- The operator endpoint of the expiry.
st() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
is "$(st -X POST "$FLASHSALE_ORIGIN_URL/api/flash-sales/admin/expire")" "403" "expiry endpoint without token: 403"
is "$(st -X POST -H 'X-Expire-Token: wrong' "$FLASHSALE_ORIGIN_URL/api/flash-sales/admin/expire")" "403" \
    "expiry endpoint with a wrong token: 403"
is "$(st -X POST -H "X-Expire-Token: $FLASHSALE_EXPIRE_TOKEN" "$FLASHSALE_EDGE_URL/api/flash-sales/admin/expire")" \
    "403" "expiry endpoint through the edge: 403"
is "$(st -H "X-Expire-Token: $FLASHSALE_EXPIRE_TOKEN" "$FLASHSALE_ORIGIN_URL/api/flash-sales/admin/expire")" "405" \
    "expiry endpoint with GET: 405"
out=$(p_expire_http)
if [ -n "$(json_get "$out" expired)" ] && [ -n "$(json_get "$out" sales)" ]; then
	ok "expiry endpoint with the token runs: $out"
else
	not_ok "expiry endpoint with the token runs" "$out"
fi
check "reconcile --check passes for the sales of this file" admin reconcile "$sale" --check

# Ghosts are decided per partition of the order topic: while the consumer
# is down and one partition has an order on its way, an old hold of an item
# of that partition waits, and an old hold (a ghost) of an item whose
# partition is caught up is swept at once, instead of every ghost waiting
# until the whole topic's backlog is 0 (which never comes under sustained
# load).

. "$top_srcdir/tests/integration/pipeline_lib.sh"

f=$FLASHSALE_STATE/sale-parts-$$.json
{
	printf '{"name":"partitions","startsInSeconds":-5,"durationSeconds":3600,"items":['
	for i in 1 2 3 4 5 6 7 8; do
		[ "$i" = 1 ] || printf ','
		printf '{"name":"Item %s","priceMinor":1000,"currency":"VND","quantity":10}' "$i"
	done
	printf ']}'
} >"$f"
set -- $(sale_created "$f")
sale=$1
shift
items=$*
check "the sale of eight items is warmed" admin sale warm "$sale"
admin sale urls "$sale" >"$FLASHSALE_STATE/parts-urls-$sale"
url_of() { grep "/items/$1/purchase" "$FLASHSALE_STATE/parts-urls-$sale"; }

# One order per item, recorded: the topic tells each item's partition.
for item in $items; do
	ans=$(http POST "$(url_of "$item")" "$(p_tok "pa-$item-$sale")")
	[ "${ans%% *}" = 202 ] || not_ok "a first order of item $item is accepted" "$ans"
done
consumer_caught_up 30
fs_kcat -C -b "$FLASHSALE_KAFKA_BROKERS" -t "$FLASHSALE_KAFKA_TOPIC" -e -q -f '%k %p\n' 2>/dev/null |
	awk -v items=" $items " 'index(items, " " $1 " ") { print $1, $2 }' | sort -u >"$FLASHSALE_STATE/parts-$sale"
is "$(wc -l <"$FLASHSALE_STATE/parts-$sale" | tr -d ' ')" "8" "each item's orders are on one partition"
a=$(awk 'NR == 1 { print $1 }' "$FLASHSALE_STATE/parts-$sale")
pa=$(awk 'NR == 1 { print $2 }' "$FLASHSALE_STATE/parts-$sale")
b=$(awk -v p="$pa" '$2 != p { print $1; exit }' "$FLASHSALE_STATE/parts-$sale")
diag "item $a is on partition $pa, item $b on another"

# The consumer stops; a second order of item A waits on A's partition.
"$stack" stop consumer >/dev/null
ans=$(http POST "$(url_of "$a")" "$(p_tok "pa-late-$sale")")
is "${ans%% *}" "202" "with the consumer down an order of item A is accepted"
late=$(json_get "${ans#* }" orderId)

# Two ghosts ten minutes old: holds without an order, one per partition.
old_ms=$(($(p_now_ms) - 600000))
ghost_a=$(p_uuid)
ghost_b=$(p_uuid)
is "$(p_reserve "$sale" "$a" "ga-$sale" "$ghost_a" "$old_ms") $(p_reserve "$sale" "$b" "gb-$sale" "$ghost_b" "$old_ms")" \
    "1 1" "two old holds without orders, of items A and B"
left_a=$(p_stock "$sale" "$a")
left_b=$(p_stock "$sale" "$b")
out=$(p_expire)
is "$(json_get "$out" ghosts) $(json_get "$out" deferred)" "1 1" \
    "the sweep closes one ghost and defers the sale's other old hold ($out)"
is "$(psql_q "SELECT status || ':' || failure FROM orders WHERE id = '$ghost_b'") $(p_stock "$sale" "$b")" \
    "FAILED:GHOST_HOLD $((left_b + 1))" "the ghost of B, whose partition is caught up, is FAILED and its unit back"
is "$(p_count "id = '$ghost_a'") $(p_stock "$sale" "$a") $(redis HEXISTS "fs:{$sale}:orders" "$ghost_a")" \
    "0 $left_a 1" "the old hold of A, whose partition has an order on its way, is left alone"
is "$(p_count "id = '$late'")" "0" "the order on its way is not recorded yet"

"$stack" start consumer >/dev/null
consumer_caught_up 30
is "$(p_status "$late")" "PENDING" "once the consumer is back the order on its way is recorded"
out=$(p_expire)
is "$(json_get "$out" ghosts) $(json_get "$out" deferred) $(psql_q "SELECT status FROM orders WHERE id = '$ghost_a'")" \
    "1 0 FAILED" "with A's partition caught up its ghost goes too"
is "$(p_stock "$sale" "$a")" "$((left_a + 1))" "and its unit is back"

# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# Races of the order pipeline: the provider's payment webhook against the
# expiry of the same order, 200 times; three expiry runs at once over 500
# overdue orders. Each unit comes back at most once, a PAID order keeps its
# unit, and a payment that came too late is refunded exactly once.

. "$top_srcdir/tests/integration/pipeline_lib.sh"

# --- The payment webhook racing expiry, 200 rounds, one order each.
set -- $(new_sale -5 200)
sale=$1 item=$2
path=$(purchase_path "$sale")
dir=$FLASHSALE_STATE/race-$sale
is "$(p_buy_all "$path" "race-$sale" 200 "$dir")" "200" "200 shoppers hold an order each"
consumer_caught_up
is "$(p_count "sale_id = $sale AND status = 'PENDING'")" "200" "the 200 orders are PENDING"
psql_q "SELECT id || ' ' || user_id FROM orders WHERE sale_id = $sale ORDER BY id" >"$dir/orders"
# Every order checks out first: its provider session outlives the window
# that each round shortens, so the provider takes a late payment too.
: >"$dir/urls"
while read -r oid user <&3; do
	ans=$(p_checkout "$oid" "$(p_token_of "$dir" "$user")")
	echo "$oid $(json_get "${ans#* }" redirectUrl)" >>"$dir/urls"
done 3<"$dir/orders"
is "$(grep -c ' http://' "$dir/urls")" "200" "the 200 orders each have a checkout session"
# Both sides read a round's figures in one round trip each.
figures() {
	psql_q "SELECT o.status, i.sold, (SELECT count(*) FROM orders l WHERE l.sale_id = $sale
		AND l.status IN ('PENDING', 'PAID')), p.payment_id, p.state FROM orders o
		JOIN items i ON i.id = o.item_id JOIN payments p ON p.order_id = o.id
		WHERE o.id = '$1'" | tr '|' ' '
}
paid=0 expired=0 late=0 both=0 wrong=0 round=0
while read -r oid url <&3; do
	round=$((round + 1))
	# The window closes a few milliseconds from now, as Pay and the expiry start.
	psql_q "UPDATE orders SET expires_at = now() + interval '$(((round * 37) % 300)) milliseconds'
		WHERE id = '$oid'" >/dev/null
	p_press "$url" pay >"$dir/press" &
	if [ $((round % 10)) -eq 0 ]; then
		p_expire >"$dir/expire" &
	else
		p_expire_http >"$dir/expire" &
	fi
	wait
	set -- $(figures "$oid")
	pid=$4
	# The webhook was answered 2xx once (the provider counts it).
	p_until 10 1 p_at_provider "$pid" deliveries || diag "round $round: webhook of $pid not delivered"
	set -- $(figures "$oid")
	status=$1 state=$5
	held=$(redis HEXISTS "fs:{$sale}:orders" "$oid")
	refunds=$(p_at_provider "$pid" refunds)
	case "$status $state $refunds $held" in
	"PAID SUCCEEDED 0 1") paid=$((paid + 1)) ;;
	"EXPIRED REFUNDED 1 0") expired=$((expired + 1)) ;;
	"PENDING REFUNDED 1 1")
		# The payment came after the window, the expiry before it: the
		# next run expires it; the money went back already.
		late=$((late + 1))
		p_expire_http >/dev/null
		set -- $(figures "$oid")
		[ "$1 $(redis HEXISTS "fs:{$sale}:orders" "$oid")" = "EXPIRED 0" ] || both=$((both + 1))
		;;
	*)
		both=$((both + 1))
		diag "round $round: order $status, payment $state, $refunds refund(s), hold $held"
		;;
	esac
	# Stock and sold right after every round: live = PENDING + PAID.
	set -- $(figures "$oid")
	left=$(p_stock "$sale" "$item")
	if [ "$2" != "$3" ] || [ "$left" != $((200 - $3)) ]; then
		wrong=$((wrong + 1))
		diag "round $round: sold $2, live $3, Redis left $left"
	fi
done 3<"$dir/urls"
diag "200 rounds: $paid paid, $expired expired and refunded, $late expired after a late payment, refunded"
is "$round" "200" "200 rounds of a payment webhook racing expiry were run"
is "$both" "0" "never PAID and released both (or neither), late payments refunded once: 200 rounds"
is "$wrong" "0" "stock and sold right after every round"
is "$((paid + expired + late))" "200" "every round ended PAID or EXPIRED"
is "$(p_stock "$sale" "$item") $(p_sold "$item")" "$((200 - paid)) $paid" "in the end: units left = 200 - paid, sold = paid"
is "$(psql_q "SELECT count(*) FROM payments p JOIN orders o ON o.id = p.order_id WHERE o.sale_id = $sale
	AND p.state = 'REFUNDED' AND o.status = 'EXPIRED'")" "$((expired + late))" \
    "every expired order's payment is REFUNDED, with its refund id"
admin reconcile "$sale" --check >/dev/null 2>&1
is "$?" "0" "reconcile --check: the payment rules hold after the race"

# --- Three expiry runs at once over 500 overdue orders.
set -- $(new_sale -5 500)
sale=$1 item=$2
path=$(purchase_path "$sale")
dir=$FLASHSALE_STATE/expiry-$sale
is "$(p_buy_all "$path" "x3-$sale" 500 "$dir")" "500" "500 shoppers hold an order each"
consumer_caught_up 60
is "$(p_count "sale_id = $sale AND status = 'PENDING'") $(p_stock "$sale" "$item")" "500 0" \
    "500 PENDING orders, no unit left"
# Orders of earlier tests whose window closed meanwhile (the suite runs
# longer than a payment window on a busy machine) are expired first, so
# that the three runs count only this sale's.
p_expire >/dev/null
psql_q "UPDATE orders SET expires_at = now() - interval '1 second' WHERE sale_id = $sale" >/dev/null
p_expire >"$dir/run1" &
p_expire >"$dir/run2" &
p_expire_http >"$dir/run3" &
wait
diag "run 1: $(cat "$dir/run1")"
diag "run 2: $(cat "$dir/run2")"
diag "run 3: $(cat "$dir/run3")"
is "$(p_sum expired "$dir"/run?)" "500" "the three runs expired 500 orders between them"
is "$(($(p_sum released "$dir"/run?) + $(p_sum repaired "$dir"/run?)))" "500" "and released 500 units: each once"
is "$(p_count "sale_id = $sale AND status = 'EXPIRED'") $(p_sold "$item")" "500 0" "500 EXPIRED, sold 0"
is "$(p_stock "$sale" "$item") $(redis HLEN "fs:{$sale}:holders") $(redis HLEN "fs:{$sale}:orders")" "500 0 0" \
    "Redis: 500 units left, no hold"
ans=$(http POST "$path" "$(p_tok "after-$sale")")
is "${ans%% *}" "202" "the units are for sale again"

# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# GET /api/flash-sales/sales/{saleId}/my-order: the order a shopper holds
# in a sale, for a page told 503 (issue 28, finding 6). The broker is killed
# in the middle of a burst: shoppers told 503 may hold orders anyway, and
# every holder (PostgreSQL's live orders and Redis's holds) is told so,
# everyone else 404 NO_ORDER; never cached, by the origin or the edge.

. "$top_srcdir/tests/integration/pipeline_lib.sh"

# mo_get SALE TOKEN [BASE]: "STATUS BODY" of the shopper's my-order.
mo_get() { http GET "/api/flash-sales/sales/$1/my-order" "$2" "${3:-}"; }

# mo_header NAME SALE TOKEN [BASE]: one header of the answer (through the edge by default).
mo_header() {
	curl -s -o /dev/null -D - -H "Authorization: Bearer $3" \
	    "${4:-$FLASHSALE_EDGE_URL}/api/flash-sales/sales/$2/my-order" |
		tr -d '\r' | sed -n "s/^$1: //Ip" | head -n 1
}

# C order for sort and join alike.
mo_sort() { LC_ALL=C sort; }
mo_join() { LC_ALL=C join "$@"; }

# mo_held SALE N: prints ok once Redis holds N units of the sale or more.
mo_held() { [ "$(redis HLEN "fs:{$1}:holders")" -ge "$2" ] && echo ok; }

# mo_truth SALE: "USER ORDER STATUS" per holder, sorted: the live orders
# of PostgreSQL, then the holds of Redis that PostgreSQL has not recorded.
mo_truth() {
	{
		psql_q "SELECT user_id, id, status FROM orders WHERE sale_id = $1
			AND status IN ('PENDING', 'PAID')" | tr '|' ' '
		redis HGETALL "fs:{$1}:holders" | paste - - | while read -r u o; do
			[ "$(psql_q "SELECT count(*) FROM orders WHERE id = '$o'")" = 0 ] &&
				echo "$u $o PROCESSING"
		done
	} | mo_sort
}

# mo_told SALE TOKENS_FILE: "USER ORDER STATUS" per shopper the endpoint
# names as a holder, sorted; "USER -" for a 404 NO_ORDER; "USER ?" else.
mo_told() {
	while read -r u tk; do
		ans=$(mo_get "$1" "$tk")
		case "${ans%% *}" in
		200) echo "$u $(json_get "${ans#* }" orderId) $(json_get "${ans#* }" status)" ;;
		404) [ "$(json_get "${ans#* }" error)" = NO_ORDER ] && echo "$u -" || echo "$u ? $ans" ;;
		*) echo "$u ? $ans" ;;
		esac
	done <"$2" | mo_sort
}

# mo_expected TOKENS_FILE TRUTH: what mo_told must print.
mo_expected() {
	while read -r u tk; do
		line=$(grep "^$u " "$2")
		[ -n "$line" ] && echo "$line" || echo "$u -"
	done <"$1" | mo_sort
}

# --- Bad input: a clear 4xx, nothing changed.
set -- $(new_sale -5 10)
sale=$1 item=$2
path=$(purchase_path "$sale")
tok=$(admin token mint --user "mo-a-$sale")
ans=$(http GET "/api/flash-sales/sales/$sale/my-order")
is "${ans%% *} $(json_get "${ans#* }" error)" "401 UNAUTHENTICATED" "my-order: no token answers 401"
ans=$(mo_get "$sale" "not.a.token")
is "${ans%% *} $(json_get "${ans#* }" error)" "401 UNAUTHENTICATED" "my-order: a bad token answers 401"
for bad in 007/my-order 0/my-order abc/my-order 1234567890123456789/my-order \
    "$sale/my-order/x" "$sale/my-orders" "$sale/my-order%2F"; do
	ans=$(http GET "/api/flash-sales/sales/$bad" "$tok")
	is "${ans%% *} $(json_get "${ans#* }" error)" "404 SALE_NOT_FOUND" "my-order: path sales/$bad answers 404"
done
ans=$(http POST "/api/flash-sales/sales/$sale/my-order" "$tok")
is "${ans%% *} $(json_get "${ans#* }" error)" "405 METHOD_NOT_ALLOWED" "my-order: POST answers 405"
ans=$(mo_get 999999999999 "$tok")
is "${ans%% *} $(json_get "${ans#* }" error)" "404 NO_ORDER" "my-order: a sale that does not exist answers 404 NO_ORDER"
ans=$(mo_get "$sale" "$tok")
is "${ans%% *} $(json_get "${ans#* }" error)" "404 NO_ORDER" "my-order: nothing bought answers 404 NO_ORDER"
is "$(p_count "sale_id = $sale") $(redis HLEN "fs:{$sale}:holders") $(p_stock "$sale" "$item")" "0 0 10" \
    "my-order: the requests changed nothing"

# --- PROCESSING while only Redis holds it, then PENDING; never cached.
"$stack" stop consumer >/dev/null
ans=$(http POST "$path" "$tok")
oid=$(json_get "${ans#* }" orderId)
is "${ans%% *}" 202 "my-order: a purchase while the consumer is stopped"
ans=$(mo_get "$sale" "$tok")
is "${ans%% *} $(json_get "${ans#* }" orderId) $(json_get "${ans#* }" status) $(json_get "${ans#* }" itemId)" \
    "200 $oid PROCESSING $item" "my-order: a hold not yet in PostgreSQL is PROCESSING"
other=$(admin token mint --user "mo-b-$sale")
ans=$(mo_get "$sale" "$other" "$FLASHSALE_EDGE_URL")
is "${ans%% *} $(json_get "${ans#* }" error)" "404 NO_ORDER" "my-order: another shopper is told 404 (through the edge)"
"$stack" start consumer >/dev/null
consumer_caught_up 30
ans=$(mo_get "$sale" "$tok" "$FLASHSALE_EDGE_URL")
is "${ans%% *} $(json_get "${ans#* }" orderId) $(json_get "${ans#* }" status)" "200 $oid PENDING" \
    "my-order: once recorded it is PENDING (through the edge)"
is "$(mo_header Cache-Control "$sale" "$tok")" "no-store, private" "my-order: 200 is no-store, private at the edge"
is "$(mo_header Cache-Control "$sale" "$other")" "no-store, private" "my-order: 404 is no-store, private at the edge"
is "$(mo_header X-Cache "$sale" "$tok") $(mo_header X-Cache "$sale" "$tok")" "MISS MISS" \
    "my-order: the edge never answers it from its cache"
ans=$(http POST "/api/flash-sales/orders/$oid/cancel" "$tok")
ans=$(mo_get "$sale" "$tok")
is "${ans%% *} $(json_get "${ans#* }" error)" "404 NO_ORDER" "my-order: a cancelled order is no longer held"

# --- The broker killed in the middle of a burst. The first 60 shoppers
# are answered 202; then the broker freezes (SIGSTOP) and 60 more buy: their
# orders are sent but never acknowledged, so each is told 503 while its
# hold stays (it may be in the log); with those purchases in flight the
# broker is killed.
set -- $(new_sale -5 150)
sale=$1 item=$2
path=$(purchase_path "$sale")
dir=$FLASHSALE_STATE/mo-$sale
mkdir -p "$dir"
admin token mint --user "mo-$sale" --count 120 >"$dir/tokens"
head -n 60 "$dir/tokens" >"$dir/tokens1"
tail -n 60 "$dir/tokens" >"$dir/tokens2"
fire_all "$path" "$dir/tokens1" "$dir/statuses1" 20
is "$(count_of 202 "$dir/statuses1")" 60 "burst, first wave: 60 purchases answered 202"
kill -STOP $("$stack" pids kafka)
fire_all "$path" "$dir/tokens2" "$dir/statuses2" 20 &
burst=$!
if p_until 30 ok mo_held "$sale" 80; then
	ok "second wave: purchases wait on the frozen broker with their units held"
else
	not_ok "second wave: purchases wait on the frozen broker with their units held" "holds: $p_out"
fi
"$stack" kill kafka >/dev/null
wait "$burst"
cat "$dir/statuses1" "$dir/statuses2" >"$dir/statuses"
diag "second wave: 202=$(count_of 202 "$dir/statuses2") 503=$(count_of 503 "$dir/statuses2")"
is "$(count_of 503 "$dir/statuses2")" 60 "burst, second wave: the broker killed, all 60 purchases answered 503"

# While the broker is down nothing moves (no consumer progress, no sweep).
mo_truth "$sale" >"$dir/truth"
mo_told "$sale" "$dir/tokens" >"$dir/told"
mo_expected "$dir/tokens" "$dir/truth" >"$dir/expected"
is "$(diff "$dir/expected" "$dir/told" | head -n 5)" "" \
    "broker down: every holder ($(wc -l <"$dir/truth")) is told their order, everyone else 404"
awk '$1 ~ /^503$/ { print $2 }' "$dir/statuses" | mo_sort >"$dir/told503"
held503=$(mo_join "$dir/told503" "$dir/truth" | wc -l)
if [ "$held503" -gt 0 ]; then
	ok "some shoppers told 503 hold an order all the same ($held503)"
else
	not_ok "some shoppers told 503 hold an order all the same"
fi
is "$(mo_join "$dir/told503" "$dir/told" | awk '$2 != "-"' | wc -l)" "$held503" \
    "broker down: each of the $held503 shoppers told 503 who hold an order is told so"
awk '$1 == 202 { print $2 }' "$dir/statuses" | mo_sort >"$dir/told202"
is "$(mo_join "$dir/told202" "$dir/told" | awk '$2 == "-" || $2 == "?"' | wc -l)" 0 \
    "broker down: every shopper answered 202 is told their order"

# The broker back: the consumer records what the log kept.
"$stack" start kafka >/dev/null
consumer_caught_up 90 || not_ok "the consumer catches up after the broker came back"
mo_truth "$sale" >"$dir/truth2"
mo_told "$sale" "$dir/tokens" >"$dir/told2"
mo_expected "$dir/tokens" "$dir/truth2" >"$dir/expected2"
is "$(diff "$dir/expected2" "$dir/told2" | head -n 5)" "" \
    "broker back: every holder ($(wc -l <"$dir/truth2")) is told their order, everyone else 404"
late=$(mo_join "$dir/told503" "$dir/truth2" | awk '$3 != "PROCESSING"' | wc -l)
diag "shoppers told 503 whose order is now in PostgreSQL: $late"

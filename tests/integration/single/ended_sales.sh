# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# Redis keeps the sales that are not over, only: once a sale has ended and
# its last order has closed, the sweep removes every key of it (the holds of
# its PAID orders with them) and never looks at it again, so its work grows
# with the live sales, not with every sale there ever was, and no number of
# sales makes it skip one.

. "$top_srcdir/tests/integration/pipeline_lib.sh"

sale_keys() { # SALE ITEM: how many of the sale's keys exist
	redis EXISTS "fs:{$1}:stock:$2" "fs:{$1}:holders" "fs:{$1}:orders" "fs:{$1}:unconfirmed" \
	    "fs:{$1}:sale"
}

# A sale with a PAID order and a PENDING one, and a live sale next to it.
set -- $(new_sale -5 10)
sale=$1 item=$2
set -- $(new_sale -5 10)
live=$1 live_item=$2
path=$(purchase_path "$sale")
tok1=$(p_tok "es1-$sale")
paid=$(json_get "$(http POST "$path" "$tok1" | cut -d' ' -f2-)" orderId)
pending=$(json_get "$(http POST "$path" "$(p_tok "es2-$sale")" | cut -d' ' -f2-)" orderId)
ans=$(http POST "$(purchase_path "$live")" "$(p_tok "es3-$live")")
is "${ans%% *}" "202" "a purchase in the live sale"
consumer_caught_up 30
check "the first order is paid at the provider" p_pay "$paid" "$tok1"
psql_q "UPDATE sales SET ends_at = now() - interval '1 second' WHERE id = $sale" >/dev/null

p_expire >/dev/null
is "$(sale_keys "$sale" "$item") $(psql_q "SELECT redis_cleared_at IS NULL FROM sales WHERE id = $sale")" \
    "4 t" "an ended sale with a PENDING order keeps its keys"
psql_q "UPDATE orders SET expires_at = now() - interval '1 second' WHERE id = '$pending'" >/dev/null
out=$(p_expire)
is "$(json_get "$out" expired) $(p_status "$pending")" "1 EXPIRED" \
    "its last order expires; the sale is over, and cleared in the same run:"
is "$(sale_keys "$sale" "$item")" "0" "every key of the sale left Redis, the PAID hold with them"
is "$(p_status "$paid") $(psql_q "SELECT redis_cleared_at IS NOT NULL FROM sales WHERE id = $sale")" \
    "PAID t" "PostgreSQL keeps the PAID order and records the clearing"
is "$(sale_keys "$live" "$live_item")" "4" "the live sale keeps its keys"
out=$(admin reconcile "$sale" --check 2>&1)
case $out in
*"over: cleared from Redis"*) ok "reconcile --check accepts the cleared sale" ;;
*) not_ok "reconcile --check accepts the cleared sale" "$out" ;;
esac

# 10,200 sales that ended long ago, each with keys in Redis: more than the
# sweep's old cap of 10,000. One run clears them all.
first=$(psql_q "SELECT coalesce(max(id), 0) + 1 FROM sales")
ifirst=$(psql_q "SELECT coalesce(max(id), 0) + 1 FROM items")
psql_q "WITH s AS (
	INSERT INTO sales (id, name, starts_at, ends_at)
	SELECT g, 'ended ' || g, now() - interval '2 days', now() - interval '1 day'
	FROM generate_series($first, $first + 10199) g RETURNING id)
	INSERT INTO items (id, sale_id, name, price_minor, currency, quantity)
	SELECT s.id - $first + $ifirst, s.id, 'thing', 100, 'VND', 5 FROM s" >/dev/null
psql_q "SELECT setval(pg_get_serial_sequence('sales', 'id'), $first + 10199),
	setval(pg_get_serial_sequence('items', 'id'), $ifirst + 10199)" >/dev/null
awk -v a="$first" -v ia="$ifirst" 'BEGIN { for (k = 0; k < 10200; k++) {
	s = a + k; i = ia + k
	printf "*3\r\n$3\r\nSET\r\n$%d\r\nfs:{%d}:stock:%d\r\n$1\r\n5\r\n", length("fs:{" s "}:stock:" i), s, i
	printf "*4\r\n$4\r\nHSET\r\n$%d\r\nfs:{%d}:sale\r\n$6\r\nwindow\r\n$3\r\n600\r\n", length("fs:{" s "}:sale"), s
} }' | redis --pipe >/dev/null
last=$((first + 10199)) ilast=$((ifirst + 10199))
is "$(sale_keys "$last" "$ilast")" "2" "10,200 ended sales have keys in Redis"
other_over=$(psql_q "SELECT count(*) FROM sales s WHERE redis_cleared_at IS NULL AND id < $first
	AND ends_at < now() AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.sale_id = s.id AND o.status = 'PENDING')")
t0=$(date +%s%N)
out=$(p_expire)
diag "one run over 10,200 sales that are over: $((($(date +%s%N) - t0) / 1000000)) ms"
is "$(json_get "$out" cleared)" "$((10200 + other_over))" "one sweep clears all 10,200 (no cap, none skipped)"
is "$(sale_keys "$first" "$ifirst") $(sale_keys "$((first + 5100))" "$((ifirst + 5100))") $(sale_keys "$last" "$ilast")" \
    "0 0 0" "their keys are gone (first, middle, last)"
is "$(psql_q "SELECT count(*) FROM sales WHERE id >= $first AND redis_cleared_at IS NULL")" "0" \
    "and PostgreSQL records each as cleared"
uncleared=$(psql_q "SELECT count(*) FROM sales WHERE redis_cleared_at IS NULL")
t0=$(date +%s%N)
out=$(p_expire)
diag "the next run: $((($(date +%s%N) - t0) / 1000000)) ms"
is "$(json_get "$out" sales) $(json_get "$out" cleared)" "$uncleared 0" \
    "the next sweep looks at the $uncleared sales still in Redis only"
# The suite reconciles every sale after each file: these would only slow it.
psql_q "DELETE FROM items WHERE sale_id >= $first; DELETE FROM sales WHERE id >= $first" >/dev/null

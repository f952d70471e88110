# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# Issue 35, one clock for the start of a plain sale (no waiting room): a
# purchase host whose clock runs ahead must not sell before the start.
# flashsale-purchase is restarted 4 s fast (FLASHSALE_TEST_CLOCK_OFFSET_MS,
# a test-only setting); 3 s before the start its clock says the sale
# started a second ago and the signed URL's window lets the purchase
# through, but reserve.lua compares the start warmed into the sale's
# settings with Redis' TIME: 425 SALE_NOT_STARTED, nothing taken. From the
# start on, the same shopper buys. Before the fix the purchase was 202,
# 3 s early.

. "$top_srcdir/tests/integration/pipeline_lib.sh"

pc_now_ms() { date +%s%3N; }
# pc_restart OFFSET_MS: flashsale-purchase restarted with its clock OFFSET_MS off.
pc_restart() {
	pc_log=$FLASHSALE_STATE/log/flashsale-purchase.log
	pc_before=$(grep -c "FLASHSALE_TEST_CLOCK_OFFSET_MS=$1:" "$pc_log" 2>/dev/null)
	FLASHSALE_TEST_CLOCK_OFFSET_MS=$1 "$stack" restart flashsale-purchase \
	    >>"$FLASHSALE_STATE/purchase-clock-stack.log" 2>&1 ||
		not_ok "deploy/stack restart flashsale-purchase (offset $1 ms)" \
		    "$(tail -n 5 "$FLASHSALE_STATE/purchase-clock-stack.log")"
	if [ "$1" = 0 ] ||
	    [ "$(grep -c "FLASHSALE_TEST_CLOCK_OFFSET_MS=$1:" "$pc_log")" -gt "${pc_before:-0}" ]; then
		ok "flashsale-purchase restarted with its clock $1 ms off"
	else
		not_ok "flashsale-purchase restarted with its clock $1 ms off" "$(tail -n 3 "$pc_log")"
	fi
}

pc_restart 4000
set -- $(new_sale 8 3)
pc_sale=$1 pc_item=$2
pc_path=$(purchase_path "$pc_sale")
pc_starts=$(psql_q "SELECT floor(extract(epoch FROM starts_at) * 1000)::bigint FROM sales WHERE id = $pc_sale")
is "$(redis HGET "fs:{$pc_sale}:sale" starts)" "$pc_starts" \
    "sale warm writes the start into the sale's settings in Redis"
pc_tok=$(p_tok "pc1-$pc_sale")

# 3 s before the start (1 s after it by the purchase host's clock).
pc_at() { [ "$(pc_now_ms)" -ge $(($1)) ]; }
poll_until 0.05 20 pc_at "$pc_starts - 3000" || not_ok "the clock reaches the start - 3 s"
pc_a=$(http POST "$pc_path" "$pc_tok")
pc_done=$(pc_now_ms)
if [ "$pc_done" -lt "$pc_starts" ]; then
	ok "the early purchase was answered before the start ($((pc_starts - pc_done)) ms before)"
else
	not_ok "the early purchase was answered before the start" \
	    "$((pc_done - pc_starts)) ms after it: the machine was too slow; run again"
fi
is "$(printf '%s' "$pc_a" | cut -d' ' -f1) $(json_get "${pc_a#* }" error)" "425 SALE_NOT_STARTED" \
    "a purchase host 4 s fast, 3 s before the start: 425 SALE_NOT_STARTED (Redis' clock)"
is "$(p_stock "$pc_sale" "$pc_item") $(redis HLEN "fs:{$pc_sale}:holders")" "3 0" \
    "nothing taken: 3 units left, no holder"

# From the start on: the same shopper buys.
poll_until 0.05 20 pc_at "$pc_starts + 100" || not_ok "the clock reaches the start"
is "$(http POST "$pc_path" "$pc_tok" | cut -d' ' -f1)" 202 "from the start on, the shopper buys: 202"
is "$(p_stock "$pc_sale" "$pc_item")" 2 "one unit taken"

pc_restart 0

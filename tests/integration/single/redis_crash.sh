# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# Redis crashes mid-sale (SIGKILL, by PID) and comes back empty; the
# orders accepted so far are on the topic only (the consumer is stopped).
# `reconcile --repair` rebuilds the sale from PostgreSQL and the topic:
# every 202 keeps its unit and its shopper's guard, none ends FAILED.
# `sale warm` refuses while orders are on their way, and a forced warm
# during a burst loses no hold.

# 20 requests in flight, so that a burst lasts long enough to crash Redis in it.
crash_fire() { fire_all "$1" "$2" "$3" 20; }
purchase_requests() { grep -c "POST $1 " "$FLASHSALE_STATE/log/nginx-access.log"; }

# --- a crash mid-burst, with every accepted order still on the topic --------
# 2100 units for 2030 shoppers: never sold out, so every answer comes from Redis.
set -- $(new_sale -5 2100)
sale=$1 item=$2
path=$(purchase_path "$sale")
admin token mint --user "crash-$sale" --count 2030 >"$FLASHSALE_STATE/crash-all-$sale"
head -n 30 "$FLASHSALE_STATE/crash-all-$sale" >"$FLASHSALE_STATE/crash-first-$sale"
tail -n 2000 "$FLASHSALE_STATE/crash-all-$sale" >"$FLASHSALE_STATE/crash-burst-$sale"
"$stack" stop consumer >/dev/null

crash_fire "$path" "$FLASHSALE_STATE/crash-first-$sale" "$FLASHSALE_STATE/crash-out1-$sale"
is "$(count_of 202 "$FLASHSALE_STATE/crash-out1-$sale")" "30" "before the crash: 30 shoppers get 202"

# The second burst runs while Redis is killed under it.
before=$(purchase_requests "$path")
crash_fire "$path" "$FLASHSALE_STATE/crash-burst-$sale" "$FLASHSALE_STATE/crash-out2-$sale" &
burst=$!
deadline=$(($(date +%s) + 20))
until [ $(($(purchase_requests "$path") - before)) -ge 100 ] || [ "$(date +%s)" -ge "$deadline" ]; do
	sleep 0.05
done
"$stack" kill redis >/dev/null
wait "$burst"
won2=$(count_of 202 "$FLASHSALE_STATE/crash-out2-$sale")
refused2=$(count_of 503 "$FLASHSALE_STATE/crash-out2-$sale")
diag "the burst around the crash: $won2 answered 202, $refused2 answered 503"
is "$(($(wc -l <"$FLASHSALE_STATE/crash-out2-$sale") - won2 - refused2))" "0" \
    "during the crash every purchase is a 202 (before it) or a 503"
check "Redis starts again after the crash" "$stack" start redis
is "$(redis EXISTS "fs:{$sale}:stock:$item")" "0" "a crashed Redis comes back empty (no stale snapshot)"
refuse "sale warm refuses while the sale's orders are on the topic" admin sale warm "$sale" --force
# Before the repair the sale is live in PostgreSQL but unknown to Redis: a
# genuine purchase URL gets 503 and Retry-After (try again), never 404, and
# is counted.
missing() { metric_total flashsale_purchase_sale_missing_total; }
missing0=$(missing)
late=$(admin token mint --user "crash-late-$sale")
curl -s -D "$FLASHSALE_STATE/crash-late-$sale.h" -o "$FLASHSALE_STATE/crash-late-$sale.b" -X POST \
    -H "Authorization: Bearer $late" "$FLASHSALE_ORIGIN_URL$path" >/dev/null
is "$(sed -n '1s/^HTTP\/[0-9.]* \([0-9]*\).*/\1/p' "$FLASHSALE_STATE/crash-late-$sale.h" | tr -d '\r') $(json_get "$(cat "$FLASHSALE_STATE/crash-late-$sale.b")" error) $(grep -ci '^Retry-After: [0-9]' "$FLASHSALE_STATE/crash-late-$sale.h")" \
    "503 TRY_AGAIN 1" "before the repair a purchase of the sale Redis lost gets 503 TRY_AGAIN with Retry-After"
is "$(($(missing) - ${missing0:-0}))" "1" "and is counted in flashsale_purchase_sale_missing_total"
# The recovery as the README tells it: every sale, not only this one.
out=$(admin reconcile --all --repair 2>&1)
diag "$(printf '%s\n' "$out" | grep "^sale $sale: repaired")"
case $out in
*"sale $sale: repaired (0 live holds, $((30 + won2)) on their way, 0 dropped, 0 units short"*"sale $sale: ok"*" 0 violations"*)
	ok "reconcile --all --repair holds the $((30 + won2)) orders on the topic, and every sale checks" ;;
*) not_ok "reconcile --all --repair holds the $((30 + won2)) orders on the topic, and every sale checks" "$out" ;;
esac
is "$(redis GET "fs:{$sale}:stock:$item")" "$((2100 - 30 - won2))" "after the repair: units left = 2100 - 202s"
is "$(redis ZCARD "fs:{$sale}:unconfirmed")" "$((30 + won2))" "and those holds wait for the consumer"

# Everyone tries again: each winner meets its own hold (409), everyone else
# gets a unit.
crash_fire "$path" "$FLASHSALE_STATE/crash-all-$sale" "$FLASHSALE_STATE/crash-out3-$sale"
is "$(count_of 409 "$FLASHSALE_STATE/crash-out3-$sale")" "$((30 + won2))" \
    "after the repair every earlier winner is answered 409: the guard survived"
is "$(count_of 202 "$FLASHSALE_STATE/crash-out3-$sale")" "$((2000 - won2))" \
    "every other shopper gets a unit now"
"$stack" start consumer >/dev/null
consumer_caught_up 30
is "$(psql_q "SELECT count(*) FILTER (WHERE status = 'PENDING') || ' ' || count(*) FILTER (WHERE status = 'FAILED') || ' ' || count(DISTINCT user_id) FROM orders WHERE sale_id = $sale")" \
    "2030 0 2030" "2030 202s: 2030 PENDING orders of 2030 shoppers, none FAILED"
check "reconcile --check passes after the crash" admin reconcile "$sale" --check

# --- warms and repairs during a burst keep every hold on its way ------------
set -- $(new_sale -5 300)
sale=$1 item=$2
path=$(purchase_path "$sale")
admin token mint --user "warm-$sale" --count 600 >"$FLASHSALE_STATE/warm-all-$sale"
crash_fire "$path" "$FLASHSALE_STATE/warm-all-$sale" "$FLASHSALE_STATE/warm-out-$sale" &
burst=$!
warms=0 repairs=0 refused=0
while kill -0 "$burst" 2>/dev/null; do
	if admin sale warm "$sale" --force >/dev/null 2>>"$FLASHSALE_STATE/warm-errors-$sale"; then
		warms=$((warms + 1))
	else
		refused=$((refused + 1))
	fi
	case $(admin reconcile "$sale" --repair 2>>"$FLASHSALE_STATE/warm-errors-$sale") in
	*repaired*) repairs=$((repairs + 1)) ;;
	esac
done
wait "$burst"
diag "during the burst: $warms forced warms, $refused refused (orders on the topic), $repairs repairs"
is "$(count_of 202 "$FLASHSALE_STATE/warm-out-$sale")" "300" \
    "with warms and repairs under the burst: exactly 300 shoppers get 202"
consumer_caught_up 30
is "$(psql_q "SELECT count(*) FILTER (WHERE status = 'PENDING') || ' ' || count(*) FILTER (WHERE status = 'FAILED') FROM orders WHERE sale_id = $sale")" \
    "300 0" "the 300 orders are PENDING, none FAILED"
is "$(redis GET "fs:{$sale}:stock:$item")" "0" "and Redis shows 0 units left"

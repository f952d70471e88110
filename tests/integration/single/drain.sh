# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# A handler stopped by SIGTERM answers the request in hand, then exits
# (lib/fcgi.c: every worker thread accepts for itself and looks at the stop
# flag between requests). The request in hand: a reveal held by
# flashsale-sale until its sale's start instant.

run=$FLASHSALE_STATE/run
printf '{"name":"drain","startsInSeconds":3,"durationSeconds":600,"items":[{"name":"a","priceMinor":1,"currency":"VND","quantity":1}]}' \
	>"$FLASHSALE_STATE/drain.json"
set -- $(sale_created "$FLASHSALE_STATE/drain.json")
drain_sale=$1
start_ms=$(psql_q "SELECT floor(extract(epoch FROM starts_at) * 1000)::bigint FROM sales WHERE id = $drain_sale")
# Inside the hold window (the last 1.1 s before the start), a reveal waits.
while [ $(($(date +%s%N) / 1000000)) -lt $((start_ms - 900)) ]; do sleep 0.05; done
curl -s -o "$FLASHSALE_STATE/drain.body" -w '%{http_code}' \
	"$FLASHSALE_ORIGIN_URL/api/flash-sales/sales/$drain_sale/reveal" >"$FLASHSALE_STATE/drain.status" &
curl_pid=$!
# Ready when a handler holds the connection (bounded).
n=0
until [ "$(ss -xH state connected 2>/dev/null | grep -c "$run/flashsale-sale.sock")" -ge 1 ]; do
	n=$((n + 1))
	[ $n -lt 100 ] || break
	sleep 0.005
done
sale_pids=$(cat "$run/flashsale-sale.pid")
# shellcheck disable=SC2086 # one word per PID
kill -TERM $sale_pids
wait "$curl_pid"
is "$(cat "$FLASHSALE_STATE/drain.status")" 200 "SIGTERM during a held reveal: it is still answered (200)"
case "$(cat "$FLASHSALE_STATE/drain.body")" in
*"/api/flash-sales/items/"*"/purchase?sale=$drain_sale&"*) ok "the answer carries the purchase URL" ;;
*) not_ok "the answer carries the purchase URL" "$(cat "$FLASHSALE_STATE/drain.body")" ;;
esac
n=0
alive=$sale_pids
while [ -n "$alive" ] && [ $n -lt 50 ]; do
	alive=
	for p in $sale_pids; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
	[ -z "$alive" ] || sleep 0.1
	n=$((n + 1))
done
is "$alive" "" "then every flashsale-sale process exits (within 5 s)"
"$top_srcdir/deploy/stack" start handlers >/dev/null 2>&1
is "$(http GET "/api/flash-sales/sales/$drain_sale" | cut -d' ' -f1)" 200 "restarted, the sale document answers again"

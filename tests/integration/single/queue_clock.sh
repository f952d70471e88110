# shellcheck shell=sh disable=SC2154 # sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# Issue 35, finding 2: whether a join is drawn (ahead of everyone, picked
# from the seed) or late (behind, in arrival order) is decided by Redis'
# clock, the one clock every origin shares, never by the clock of the
# handler that took the join. flashsale-queue is restarted 2 s slow
# (FLASHSALE_TEST_CLOCK_OFFSET_MS=-2000, a test-only setting: no request
# reaches it); a shopper joins after the opening by the real clock while
# the handler's still says before it: the place is late (2^52 + 1, not
# drawn, in Redis and in PostgreSQL). Before the fix (the handler passed
# its own clock to the join script) that join was drawn: a place ahead of
# everyone, chosen after the seed was published. The handler is then
# restarted with its clock right.

qc_origin=$FLASHSALE_ORIGIN_URL
qc_late=4503599627370496

# qc_restart OFFSET_MS: flashsale-queue restarted with its clock set off by OFFSET_MS.
qc_restart() {
	FLASHSALE_TEST_CLOCK_OFFSET_MS=$1 "$stack" restart flashsale-queue \
	    >>"$FLASHSALE_STATE/queue-clock-stack.log" 2>&1 ||
		not_ok "deploy/stack restart flashsale-queue (offset $1 ms)" \
		    "$(tail -n 5 "$FLASHSALE_STATE/queue-clock-stack.log")"
}
# qc_join SALE TOKEN: "STATUS BODY" of a join to the origin.
qc_join() {
	curl -s -o "$FLASHSALE_STATE/qc-body" -w '%{http_code}' -X POST \
	    -H "Authorization: Bearer $2" -H 'Content-Type: application/json' --data-binary '{}' \
	    "$qc_origin/api/flash-sales/sales/$1/queue" >"$FLASHSALE_STATE/qc-status"
	printf '%s %s' "$(cat "$FLASHSALE_STATE/qc-status")" "$(cat "$FLASHSALE_STATE/qc-body")"
}
# qc_server_time SALE: the handler's clock (ms), as its status document says it.
qc_server_time() {
	json_get "$(curl -s "$qc_origin/api/flash-sales/sales/$1/queue")" serverTime
}
# qc_redis_ms: Redis' clock in ms.
qc_redis_ms() {
	redis TIME | tr '\n' ' ' | awk '{ printf "%.0f\n", $1 * 1000 + int($2 / 1000) }'
}

# --- The handler 2 s slow (its status document's serverTime says so).
qc_restart -2000
# A waiting room opening in 8 s (joining open for a minute already).
cat >"$FLASHSALE_STATE/qc-sale.json" <<JSON
{"name":"queue clock","startsInSeconds":8,"durationSeconds":600,
 "items":[{"name":"Phone","priceMinor":1990000,"currency":"VND","quantity":5}],
 "queue":{"preQueueSeconds":60,"powBits":0}}
JSON
qc=$(json_get "$(admin sale create "$FLASHSALE_STATE/qc-sale.json" --json)" saleId)
admin sale warm "$qc" >/dev/null || not_ok "the sale of the clock test warms"
qc_opens=$(psql_q "SELECT floor(extract(epoch FROM starts_at) * 1000)::bigint FROM sales WHERE id = $qc")
qc_st=$(qc_server_time "$qc")
qc_lag=$(($(date +%s%3N) - qc_st))
if [ "$qc_lag" -ge 2000 ] && [ "$qc_lag" -le 2800 ]; then
	ok "flashsale-queue restarted with FLASHSALE_TEST_CLOCK_OFFSET_MS=-2000: its clock 2 s slow"
else
	not_ok "flashsale-queue restarted 2 s slow" "its serverTime is $qc_lag ms behind the real clock"
fi

# --- Before the opening: a drawn place (the control).
qc_j1=$(qc_join "$qc" "$(admin token mint --user "qc1-$qc")")
is "${qc_j1%% *} $(json_get "${qc_j1#* }" drawn) $(json_get "${qc_j1#* }" score)" "200 true null" \
    "a join before the opening: drawn, its score not shown"

# --- After the opening by Redis' clock, before it by the handler's.
qc_t2=$(admin token mint --user "qc2-$qc")
qc_opened() { [ "$(qc_redis_ms)" -ge $((qc_opens + 200)) ]; }
poll_until 0.05 20 qc_opened || not_ok "Redis' clock passes the opening" "$(qc_redis_ms) < $qc_opens"
qc_j2=$(qc_join "$qc" "$qc_t2")
qc_handler=$(qc_server_time "$qc")
if [ "$qc_handler" -lt "$qc_opens" ]; then
	ok "the handler's clock still said before the opening after the join ($((qc_opens - qc_handler)) ms before)"
else
	not_ok "the join was made while the handler's clock said before the opening" \
	    "handler $qc_handler, opening $qc_opens: the machine was too slow for the 2 s; run again"
fi
is "${qc_j2%% *} $(json_get "${qc_j2#* }" drawn) $(json_get "${qc_j2#* }" score) $(json_get "${qc_j2#* }" rank)" \
    "200 false $((qc_late + 1)) 1" \
    "a join after the opening by Redis' clock, before it by the handler's: late (2^52+1, rank 1), not drawn"
is "$(redis ZSCORE "fs:{$qc}:q:places" "qc2-$qc")" "$((qc_late + 1))" "Redis: the place is 2^52+1"
qc_copied() { [ -n "$(psql_q "SELECT drawn FROM queue_places WHERE sale_id = $qc AND user_id = 'qc2-$qc'")" ]; }
poll_until 0.05 10 qc_copied
is "$(psql_q "SELECT drawn || ' ' || score || ' ' || (joined_at >= to_timestamp($qc_opens / 1000.0)) FROM queue_places WHERE sale_id = $qc AND user_id = 'qc2-$qc'")" \
    "false $((qc_late + 1)) true" "PostgreSQL: a late place, dated after the opening"
qc_v=$(admin queue verify "$qc" --json)
is "$? $(json_get "$qc_v" places) $(json_get "$qc_v" drawn) $(json_get "$qc_v" violations)" "0 2 1 0" \
    "queue verify: 2 places, 1 drawn, no violation"

# --- The handler's clock put right.
qc_restart 0
qc_st=$(qc_server_time "$qc")
qc_lag=$(($(date +%s%3N) - qc_st))
if [ "$qc_lag" -ge 0 ] && [ "$qc_lag" -le 800 ]; then
	ok "flashsale-queue restarted without the offset: its clock right again"
else
	not_ok "flashsale-queue restarted without the offset" "its serverTime is $qc_lag ms behind"
fi

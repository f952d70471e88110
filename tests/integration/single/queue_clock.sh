# shellcheck shell=sh disable=SC2154 # sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# Issue 35: the waiting room runs on one clock, Redis', whatever the
# clocks of the hosts that serve it.
#
# Finding 2: whether a join is drawn (ahead of everyone, picked from the
# seed) or late (behind, in arrival order) is decided by Redis' clock, never
# by the clock of the handler that took the join. flashsale-queue is
# restarted 2 s slow (FLASHSALE_TEST_CLOCK_OFFSET_MS=-2000, a test-only
# setting: no request reaches it); a shopper joins after the opening by the
# real clock while the handler's still says before it: the place is late
# (2^52 + 1, not drawn, in Redis and in PostgreSQL). Before the fix (the
# handler passed its own clock to the join script) that join was drawn: a
# place ahead of everyone, chosen after the seed was published.
#
# The other way round: flashsale-queue (and the pacer in it) and
# flashsale-sale restarted 4 s fast. Before the opening by Redis' clock,
# while joins are still drawn, neither document shows the seed (with it an
# account could pick its draw), a pass shows no rank, and the pacer admits
# nobody; after it, admission's steps and the passes are dated by Redis'
# clock (the claims and expiries the pacer counts compare the two). Before
# the fix each handler used its own clock: the seed was out 4 s early and
# the pacer admitted 3 s before the opening.

qc_origin=$FLASHSALE_ORIGIN_URL
qc_late=4503599627370496

# qc_restart OFFSET_MS PROGRAM...: each PROGRAM restarted with its clock set
# off by OFFSET_MS; ok when each logged the setting (or, for 0, nothing new).
qc_restart() {
	qc_off=$1
	shift
	for qc_prog; do
		qc_log=$FLASHSALE_STATE/log/$qc_prog.log
		qc_before=$(grep -c "FLASHSALE_TEST_CLOCK_OFFSET_MS=$qc_off:" "$qc_log" 2>/dev/null)
		FLASHSALE_TEST_CLOCK_OFFSET_MS=$qc_off "$stack" restart "$qc_prog" \
		    >>"$FLASHSALE_STATE/queue-clock-stack.log" 2>&1 ||
			not_ok "deploy/stack restart $qc_prog (offset $qc_off ms)" \
			    "$(tail -n 5 "$FLASHSALE_STATE/queue-clock-stack.log")"
		if [ "$qc_off" = 0 ] ||
		    [ "$(grep -c "FLASHSALE_TEST_CLOCK_OFFSET_MS=$qc_off:" "$qc_log")" -gt "${qc_before:-0}" ]; then
			ok "$qc_prog restarted with its clock $qc_off ms off"
		else
			not_ok "$qc_prog restarted with its clock $qc_off ms off" "$(tail -n 3 "$qc_log")"
		fi
	done
}
# qc_now_ms: the real clock (ms), the one Redis' runs on in this stack.
qc_now_ms() { date +%s%3N; }
# qc_join SALE TOKEN: "STATUS BODY" of a join to the origin.
qc_join() {
	curl -s -o "$FLASHSALE_STATE/qc-body" -w '%{http_code}' -X POST \
	    -H "Authorization: Bearer $2" -H 'Content-Type: application/json' --data-binary '{}' \
	    "$qc_origin/api/flash-sales/sales/$1/queue" >"$FLASHSALE_STATE/qc-status"
	printf '%s %s' "$(cat "$FLASHSALE_STATE/qc-status")" "$(cat "$FLASHSALE_STATE/qc-body")"
}
# qc_pass SALE TICKET: "STATUS BODY" of a pass asked at the origin.
qc_pass() {
	curl -s -o "$FLASHSALE_STATE/qc-body" -w '%{http_code}' -X POST \
	    -H 'Content-Type: application/json' --data-binary "{\"ticket\":\"$2\"}" \
	    "$qc_origin/api/flash-sales/sales/$1/queue/pass" >"$FLASHSALE_STATE/qc-status"
	printf '%s %s' "$(cat "$FLASHSALE_STATE/qc-status")" "$(cat "$FLASHSALE_STATE/qc-body")"
}
# qc_status SALE: the status document at the origin.
qc_status() { curl -s "$qc_origin/api/flash-sales/sales/$1/queue"; }
# qc_sale_seed SALE: the seed in the sale document at the origin ("null" before).
qc_sale_seed() { json_get "$(curl -s "$qc_origin/api/flash-sales/sales/$1")" .queue.seed; }
# qc_redis_ms: Redis' clock in ms.
qc_redis_ms() {
	redis TIME | tr '\n' ' ' | awk '{ printf "%.0f\n", $1 * 1000 + int($2 / 1000) }'
}

# --- The handler 2 s slow.
qc_restart -2000 flashsale-queue
# A waiting room opening in 8 s (joining open for a minute already).
cat >"$FLASHSALE_STATE/qc-sale.json" <<JSON
{"name":"queue clock","startsInSeconds":8,"durationSeconds":600,
 "items":[{"name":"Phone","priceMinor":1990000,"currency":"VND","quantity":5}],
 "queue":{"preQueueSeconds":60,"powBits":0}}
JSON
qc=$(json_get "$(admin sale create "$FLASHSALE_STATE/qc-sale.json" --json)" saleId)
admin sale warm "$qc" >/dev/null || not_ok "the sale of the clock test warms"
qc_opens=$(psql_q "SELECT floor(extract(epoch FROM starts_at) * 1000)::bigint FROM sales WHERE id = $qc")

# --- Before the opening: a drawn place (the control).
qc_j1=$(qc_join "$qc" "$(admin token mint --user "qc1-$qc")")
is "${qc_j1%% *} $(json_get "${qc_j1#* }" drawn) $(json_get "${qc_j1#* }" score)" "200 true null" \
    "a join before the opening: drawn, its score not shown"

# --- After the opening by Redis' clock, before it by the handler's.
qc_t2=$(admin token mint --user "qc2-$qc")
qc_opened() { [ "$(qc_redis_ms)" -ge $((qc_opens + 200)) ]; }
poll_until 0.05 20 qc_opened || not_ok "Redis' clock passes the opening" "$(qc_redis_ms) < $qc_opens"
qc_j2=$(qc_join "$qc" "$qc_t2")
qc_handler=$(($(qc_now_ms) - 2000))
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

# --- flashsale-queue (its pacer too) and flashsale-sale 4 s fast.
qc_restart 4000 flashsale-queue flashsale-sale
# A waiting room opening in 9 s, 5 units.
cat >"$FLASHSALE_STATE/qc-fast.json" <<JSON
{"name":"queue clock, fast hosts","startsInSeconds":9,"durationSeconds":600,
 "items":[{"name":"Phone","priceMinor":1990000,"currency":"VND","quantity":5}],
 "queue":{"preQueueSeconds":60,"powBits":0,"passSeconds":120}}
JSON
qf=$(json_get "$(admin sale create "$FLASHSALE_STATE/qc-fast.json" --json)" saleId)
admin sale warm "$qf" >/dev/null || not_ok "the sale of the fast hosts warms"
qf_opens=$(psql_q "SELECT floor(extract(epoch FROM starts_at) * 1000)::bigint FROM sales WHERE id = $qf")

# 3.5 s before the opening (the handlers' clocks say 0.5 s after it): a
# join is drawn, as Redis' clock decides.
qf_at() { [ "$(qc_now_ms)" -ge $(($1)) ]; }
poll_until 0.05 20 qf_at "$qf_opens - 3500" || not_ok "the clock reaches the opening - 3.5 s"
qf_j=$(qc_join "$qf" "$(admin token mint --user "qf1-$qf")")
qf_ticket=$(json_get "${qf_j#* }" ticket)
is "${qf_j%% *} $(json_get "${qf_j#* }" drawn)" "200 true" \
    "fast hosts: a join 3.5 s before the opening (0.5 s after by the handler's clock) is drawn"

# 2 s before the opening (the pacer's clock says 2 s after: it would have
# admitted a second ago), every answer still says "before".
poll_until 0.05 20 qf_at "$qf_opens - 2000" || not_ok "the clock reaches the opening - 2 s"
qf_st=$(qc_status "$qf")
qf_sale_seed=$(qc_sale_seed "$qf")
qf_p=$(qc_pass "$qf" "$qf_ticket")
qf_adm=$(redis HGET "fs:{$qf}:q:state" admitted)
qf_done=$(qc_now_ms)
if [ "$qf_done" -lt "$qf_opens" ]; then
	ok "fast hosts: the answers below were all given before the opening ($((qf_opens - qf_done)) ms before)"
else
	not_ok "fast hosts: the answers below were given before the opening" \
	    "done $((qf_done - qf_opens)) ms after it: the machine was too slow for the 2 s; run again"
fi
is "$(json_get "$qf_st" seed) $(json_get "$qf_st" state)" "null prequeue" \
    "fast hosts: the status document shows no seed, still the pre-queue (Redis' clock)"
qf_srv=$(json_get "$qf_st" serverTime)
if [ "$qf_srv" -lt "$qf_opens" ] && [ "$qf_srv" -le "$qf_done" ]; then
	ok "fast hosts: its serverTime is Redis' clock ($((qf_opens - qf_srv)) ms before the opening)"
else
	not_ok "fast hosts: its serverTime is Redis' clock" "serverTime $qf_srv, opening $qf_opens, now $qf_done"
fi
is "$qf_sale_seed" "null" "fast hosts: the sale document shows no seed either"
is "${qf_p%% *} $(json_get "${qf_p#* }" error) $(json_get "${qf_p#* }" rank)" "409 NOT_YET null" \
    "fast hosts: a pass before the opening: NOT_YET, no rank"
is "${qf_adm:-0}" 0 "fast hosts: the pacer has admitted nobody before the opening"

# After the opening: the seed, then admission by Redis' clock.
qf_seed() { [ "$(json_get "$(qc_status "$qf")" seed)" != null ]; }
poll_until 0.1 10 qf_seed || not_ok "the seed is shown after the opening"
qf_shown=$(qc_now_ms)
if [ "$qf_shown" -ge "$qf_opens" ]; then
	ok "fast hosts: the seed is shown from the opening ($((qf_shown - qf_opens)) ms after it)"
else
	not_ok "fast hosts: the seed is shown from the opening" "shown $((qf_opens - qf_shown)) ms before it"
fi
qf_sale_shown() { [ "$(qc_sale_seed "$qf")" != null ]; }
poll_until 0.1 10 qf_sale_shown
is "$(qc_sale_seed "$qf")" "$(json_get "$(qc_status "$qf")" seed)" \
    "fast hosts: the sale document shows the same seed after the opening"
qf_admitted() { [ "$(redis HGET "fs:{$qf}:q:state" admitted)" -ge 1 ] 2>/dev/null; }
poll_until 0.1 15 qf_admitted || not_ok "the pacer admits after the opening"
qf_step=$(psql_q "SELECT floor(extract(epoch FROM at) * 1000)::bigint || ' ' ||
    floor(extract(epoch FROM moved_at) * 1000)::bigint FROM queue_admissions
    WHERE sale_id = $qf ORDER BY step LIMIT 1")
qf_step_at=${qf_step%% *}
qf_moved=${qf_step#* }
if [ "$qf_step_at" -ge $((qf_opens + 1000)) ] && [ $((qf_step_at - qf_moved)) -le 500 ] &&
    [ $((qf_moved - qf_step_at)) -le 500 ]; then
	ok "fast hosts: the first step after the opening + 1 s grace, dated by Redis' clock (at $((qf_step_at - qf_opens)) ms, moved $((qf_moved - qf_opens)) ms after the opening)"
else
	not_ok "fast hosts: the first step after the opening + grace, dated by Redis' clock" \
	    "opening $qf_opens, at $qf_step_at, moved_at $qf_moved"
fi
qf_before=$(qc_now_ms)
qf_p=$(qc_pass "$qf" "$qf_ticket")
qf_after=$(qc_now_ms)
qf_exp=$(json_get "${qf_p#* }" expiresAt)
if [ "${qf_p%% *}" = 200 ] && [ "$qf_exp" -ge $((qf_before + 120000)) ] &&
    [ "$qf_exp" -le $((qf_after + 120000)) ]; then
	ok "fast hosts: the pass expires passSeconds after Redis' clock, not the handler's"
else
	not_ok "fast hosts: the pass expires passSeconds after Redis' clock" \
	    "${qf_p%% *}: expiresAt $qf_exp, Redis' clock $qf_before-$qf_after (+ 120000)"
fi
qf_claim=$(redis ZSCORE "fs:{$qf}:q:claims" "qf1-$qf")
if [ "${qf_claim:-x}" != x ] && [ "$qf_claim" -le $((qf_after - qf_step_at)) ]; then
	ok "fast hosts: the place's claim ($qf_claim ms) is its pass's time less its step's, one clock"
else
	not_ok "fast hosts: the place's claim is its pass's time less its step's" \
	    "claim '$qf_claim', at most $((qf_after - qf_step_at))"
fi
qf_v=$(admin queue verify "$qf" --json)
is "$? $(json_get "$qf_v" violations)" "0 0" "fast hosts: queue verify finds no violation"

# --- The clocks put right.
qc_restart 0 flashsale-queue flashsale-sale

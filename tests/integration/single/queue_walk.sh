# shellcheck shell=sh disable=SC2046 # set -- $(...) splits ids into words on purpose
# People who walk away from a waiting room (issue 35, docs/QUEUE.md), with
# the real pacer of flashsale-queue on the real clock: a sale of 2 units,
# admitMultiple 1, claimSeconds 20, and 5 accounts in line.
# - An admitted place that never asks for its pass is presumed gone 5 s
#   after its admission (a live page asks within that; the window learned
#   from the pages that asked is 5 s until 20 have): the next place is
#   admitted then, not after claimSeconds (20 s) as before, when every
#   generation of walk-aways cost a claim window.
# - A shopper who took a pass and left with it unused (their item sold
#   out) stops asking for it; 20 s (max(claimSeconds, 15 s)) after the
#   page's last ask the pass counts as given up and the next place is
#   admitted, not after passSeconds (120 s) as before. A page that keeps
#   asking every few seconds (static/queue.js) keeps its place counted.

# qw_pass TICKET: "STATUS BODY" of the sale's pass request (no token: the ticket names the shopper).
qw_pass() {
	curl -s -o "$FLASHSALE_STATE/qw-body" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
	    --data-binary "{\"ticket\":\"$1\"}" \
	    "$FLASHSALE_ORIGIN_URL/api/flash-sales/sales/$qw/queue/pass" >"$FLASHSALE_STATE/qw-status"
	printf '%s %s' "$(cat "$FLASHSALE_STATE/qw-status")" "$(cat "$FLASHSALE_STATE/qw-body")"
}
# qw_admitted: Redis' count of places admitted.
qw_admitted() { redis HGET "fs:{$qw}:q:state" admitted; }
# qw_until SECONDS N: polls (every 0.2 s, bounded) until N places are
# admitted; prints the seconds since qw_t1 when they were, or "never".
qw_until() {
	qu_end=$(($(date +%s) + $1))
	until [ "$(qw_admitted)" -ge "$2" ] 2>/dev/null; do
		[ "$(date +%s)" -ge "$qu_end" ] && echo never && return 1
		sleep 0.2
	done
	echo $(($(date +%s) - qw_t1))
}
# qw_ping TICKET SECONDS: asks for the pass again every 4 s for SECONDS, as
# the page does while it holds an unused pass (the wait is the page's
# interval, not a readiness check); in the background, its PID in qw_pings.
qw_pings=
qw_ping() {
	(
		qp_end=$(($(date +%s) + $2))
		while [ "$(date +%s)" -lt "$qp_end" ]; do
			curl -s -o /dev/null -X POST -H 'Content-Type: application/json' \
			    --data-binary "{\"ticket\":\"$1\"}" \
			    "$FLASHSALE_ORIGIN_URL/api/flash-sales/sales/$qw/queue/pass"
			sleep 4
		done
	) &
	qw_pings="$qw_pings $!"
}

set -- $(new_sale 600 2)
qw=$1
qw_seed=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')
psql_q "UPDATE sales SET queue = '{\"preQueueSeconds\":900,\"passSeconds\":120,\"powBits\":0,\"admitMultiple\":1.0,\"claimSeconds\":20}', queue_seed = decode('$qw_seed', 'hex') WHERE id = $qw" >/dev/null
qw_i=1
: >"$FLASHSALE_STATE/qw-tickets"
while [ $qw_i -le 5 ]; do
	curl -s -o "$FLASHSALE_STATE/qw-body" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
	    -H "Authorization: Bearer $(admin token mint --user "qw$qw_i-$qw")" --data-binary '{}' \
	    "$FLASHSALE_ORIGIN_URL/api/flash-sales/sales/$qw/queue" >"$FLASHSALE_STATE/qw-status"
	qw_ans="$(cat "$FLASHSALE_STATE/qw-status") $(cat "$FLASHSALE_STATE/qw-body")"
	[ "${qw_ans%% *}" = 200 ] || not_ok "account $qw_i joins" "$qw_ans"
	echo "qw$qw_i-$qw $(json_get "${qw_ans#* }" ticket)" >>"$FLASHSALE_STATE/qw-tickets"
	qw_i=$((qw_i + 1))
done
# The tickets in the order of the line (the draw decides it): qw_t N is the N-th place's.
redis ZRANGE "fs:{$qw}:q:places" 0 -1 | while read -r qw_sub; do
	awk -v s="$qw_sub" '$1 == s { print $2 }' "$FLASHSALE_STATE/qw-tickets"
done >"$FLASHSALE_STATE/qw-line"
qw_t() { sed -n "${1}p" "$FLASHSALE_STATE/qw-line"; }
is "$(grep -c . "$FLASHSALE_STATE/qw-line")" 5 "5 places in line"

# The opening: the pacer admits 2 places for 2 units.
psql_q "UPDATE sales SET starts_at = now() - interval '1 second' WHERE id = $qw" >/dev/null
qw_t1=$(date +%s)
qw_at=$(qw_until 30 2)
is "$(qw_admitted)" 2 "the opening: 2 units, 2 places admitted ($qw_at s)"
qw_t1=$(date +%s)

# The first asks for its pass (and keeps asking 10 s, then leaves); the second never asks.
is "$(qw_pass "$(qw_t 1)" | cut -c1-3)" 200 "the first place's pass"
# The pass script records how long after its admission the place asked
# (fs:{S}:q:claims), which the pacer learns its window from.
qw_claim=$(redis ZSCORE "fs:{$qw}:q:claims" "$(redis ZRANGE "fs:{$qw}:q:places" 0 0)")
case $qw_claim in
'' | *[!0-9]*) not_ok "the first's claim delay recorded" "got '$qw_claim'" ;;
*) is "$((qw_claim <= 30000))" 1 "the first's claim delay recorded ($qw_claim ms after its admission)" ;;
esac
qw_ping "$(qw_t 1)" 10
qw_at=$(qw_until 16 3)
if [ "$qw_at" != never ] && [ "$qw_at" -le 12 ]; then
	ok "the second never asked: presumed gone 5 s after its admission, the third admitted after $qw_at s (claimSeconds is 20)"
else
	not_ok "the second never asked: the third admitted within 12 s" "admitted $(qw_admitted) after $qw_at s"
fi
is "$(qw_pass "$(qw_t 3)" | cut -c1-3)" 200 "the third's pass"
qw_ping "$(qw_t 3)" 60
qw_t3=$(date +%s)

# 2 units, 2 passes in hand (the first's page asks until 10 s, the
# third's throughout): nobody more while the first's page still asks.
qw_at=$(qw_until 14 4)
if [ "$qw_at" = never ] || [ "$qw_at" -ge 26 ]; then
	ok "2 units, 2 passes whose pages ask: nobody more"
else
	not_ok "2 units, 2 passes whose pages ask: nobody more" "the fourth admitted after $qw_at s"
fi
# The first's page went quiet at about 10 s: 20 s later its pass counts as given up.
qw_at=$(qw_until $((45 - ($(date +%s) - qw_t1))) 4)
if [ "$qw_at" != never ] && [ "$qw_at" -ge 26 ] && [ "$qw_at" -le 40 ]; then
	ok "the first left with its pass unused: 20 s after its page's last ask the fourth is admitted ($qw_at s; passSeconds is 120)"
else
	not_ok "the first left with its pass unused: the fourth admitted 30 s on" "admitted $(qw_admitted) after $qw_at s"
fi
is "$(qw_pass "$(qw_t 4)" | cut -c1-3)" 200 "the fourth's pass"
qw_ping "$(qw_t 4)" 20
qw_at=$(qw_until 8 5)
is "$qw_at $(qw_admitted)" "never 4" "the third's and the fourth's pages still ask: the fifth waits"
is "$(($(date +%s) - qw_t3 < 60))" 1 "(the third's page asked throughout)"
# Fewer than 20 places asked: every step waited the longest window, and
# recorded it for queue verify, which finds the steps within their budget
# (its other findings are this test's doing: the opening moved by hand
# after the joins makes their drawn places look late).
is "$(psql_q "SELECT string_agg(DISTINCT coalesce(expect_ms, 0)::text, ',') FROM queue_admissions WHERE sale_id = $qw")" \
	5000 "each step recorded its window: 5 s (fewer than 20 places asked)"
is "$(admin queue verify "$qw" 2>&1 | grep -c '^step')" 0 "queue verify: every step within its budget and its window"
# shellcheck disable=SC2086 # one word per PID
kill $qw_pings 2>/dev/null
wait

# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits numbers into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# Issue 35, finding 1 (the suite's guard; the soak through HTTP at 5,000
# joins a second is tests/load/queue-rush): admission keeps stepping while
# a rush of late joins outruns the journal's copy to PostgreSQL. Late
# joins go to the real join script (lua/queue_join.lua, EVALSHA through
# redis-cli --pipe: the handler's own call, faster than its HTTP path can
# send them on this machine) of a sale with units and capacity to spare,
# without a pause for 10 s (chunks of 20,000 sent one after the other
# until 10 s have passed, 800,000 in all at most: a quiet machine sends
# about 90,000 a second, a loaded one far fewer). Every pacer step
# copies at most 10 batches of 1000 and finds more waiting: before the
# fix (6da8081) it admitted only after a copy that emptied the journal, so
# nobody was admitted until the rush was over; now each step admits the
# places copied. During the rush (from 1 s after its start) the pacer
# must record at least 4 admission steps, none more than a third of the
# rush (at least 2 s) after the one before: the step itself (a copy of
# 10,000 places) takes a second or two on a loaded machine. At the end
# every place is copied and admitted, and queue verify is clean.

qr_chunk=20000
qr_max=800000

qr_ms() { date +%s%3N; }

# --- A waiting room opening in 3 s: a million units, capacity to spare,
# the shortest claim window (the pacer looks up the places of the last
# claimSeconds at each step).
cat >"$FLASHSALE_STATE/qr-sale.json" <<JSON
{"name":"queue rush","startsInSeconds":3,"durationSeconds":600,
 "items":[{"name":"Phone","priceMinor":100,"currency":"VND","quantity":1000000}],
 "queue":{"preQueueSeconds":60,"powBits":0,"capacityPerSecond":100000,"claimSeconds":5}}
JSON
qr=$(json_get "$(admin sale create "$FLASHSALE_STATE/qr-sale.json" --json)" saleId)
admin sale warm "$qr" >/dev/null || not_ok "the sale of the rush warms"
set -- $(psql_q "SELECT floor(extract(epoch FROM starts_at - (queue->>'preQueueSeconds')::int * interval '1 second') * 1000)::bigint || ' ' || floor(extract(epoch FROM starts_at) * 1000)::bigint || ' ' || floor(extract(epoch FROM ends_at) * 1000)::bigint FROM sales WHERE id = $qr")
qr_pre=$1 qr_opens=$2 qr_ends=$3
qr_sha=$(redis SCRIPT LOAD "$(cat "$top_srcdir/lua/queue_join.lua")")

# qr_joins FROM TO: the joins of shoppers FROM..TO as the handler sends
# them (Redis' clock: nowMs empty; no sync), in Redis' protocol: late
# places, the opening long past.
qr_joins() {
	awk -v from="$1" -v to="$2" -v sha="$qr_sha" -v s="$qr" -v pre="$qr_pre" -v opens="$qr_opens" -v ends="$qr_ends" '
	function bulk(x) { printf "$%d\r\n%s\r\n", length(x), x }
	BEGIN {
		for (i = from; i <= to; i++) {
			printf "*15\r\n"
			bulk("EVALSHA"); bulk(sha); bulk("5")
			bulk("fs:{" s "}:q:places"); bulk("fs:{" s "}:q:late"); bulk("fs:{" s "}:q:journal")
			bulk("fs:{" s "}:q:state"); bulk("fs:{" s "}:q:passes")
			bulk("qr" i "-" s); bulk(""); bulk("1"); bulk(pre); bulk(opens); bulk(ends); bulk("0")
		}
	}'
}
# --- The rush: from 1.5 s after the opening (the first admission step is
# 1 s after it), chunk after chunk for 10 s (bounded in count too).
qr_opened() { [ "$(qr_ms)" -ge $((qr_opens + 1500)) ]; }
poll_until 0.2 20 qr_opened
qr_start=$(qr_ms)
qr_n=0
: >"$FLASHSALE_STATE/qr-pipe.out"
while [ $(($(qr_ms) - qr_start)) -lt 10000 ] && [ "$qr_n" -lt "$qr_max" ]; do
	qr_joins $((qr_n + 1)) $((qr_n + qr_chunk)) | redis --pipe >>"$FLASHSALE_STATE/qr-pipe.out" 2>&1
	qr_n=$((qr_n + qr_chunk))
done
qr_end=$(qr_ms)
qr_gap_max=$(((qr_end - qr_start) / 3))
[ "$qr_gap_max" -ge 2000 ] || qr_gap_max=2000
diag "rush: $qr_n late joins in $((qr_end - qr_start)) ms ($(grep -c 'errors: 0' "$FLASHSALE_STATE/qr-pipe.out") pipes without an error)"
is "$(redis ZCARD "fs:{$qr}:q:places") $(redis GET "fs:{$qr}:q:late")" "$qr_n $qr_n" \
    "the rush: $qr_n late places in Redis"
if [ $((qr_end - qr_start)) -ge 6000 ]; then
	ok "the rush lasted $((qr_end - qr_start)) ms without a pause: long enough to tell a stall from a step"
else
	not_ok "the rush lasts 6 s at least" "it lasted $((qr_end - qr_start)) ms"
fi

# --- Admission during the rush: the steps PostgreSQL recorded ("at_ms
# admitted"), the longest time without one from 1 s after the rush's
# start (its first joins copied at the next step) to its end.
qr_drained() { [ "$(redis LLEN "fs:{$qr}:q:journal")" = 0 ]; }
poll_until 0.2 180 qr_drained || not_ok "the journal is copied after the rush" "$(redis LLEN "fs:{$qr}:q:journal") left"
psql_q "SELECT floor(extract(epoch FROM at) * 1000)::bigint || ' ' || admitted FROM queue_admissions WHERE sale_id = $qr ORDER BY step" >"$FLASHSALE_STATE/qr-steps"
qr_gap=$(awk -v from=$((qr_start + 1000)) -v to="$qr_end" '
	BEGIN { prev = from; gap = 0 }
	$1 > from && $1 <= to { if ($1 - prev > gap) gap = $1 - prev; prev = $1 }
	END { if (to - prev > gap) gap = to - prev; print gap }' "$FLASHSALE_STATE/qr-steps")
qr_steps=$(awk -v from="$qr_start" -v to="$qr_end" '$1 > from && $1 <= to { n++ } END { print n + 0 }' "$FLASHSALE_STATE/qr-steps")
if [ "$qr_steps" -ge 4 ] && [ "$qr_gap" -le "$qr_gap_max" ]; then
	ok "admission kept stepping during the rush ($qr_steps steps; at most $qr_gap ms without one, bound $qr_gap_max)"
else
	not_ok "admission kept stepping during the rush" \
	    "$qr_gap ms without an admission step, bound $qr_gap_max ($qr_steps steps in $((qr_end - qr_start)) ms)"
fi

# --- After it: every place copied and admitted, queue verify clean.
qr_all() { [ "$(redis HGET "fs:{$qr}:q:state" admitted)" = "$qr_n" ]; }
poll_until 0.2 180 qr_all
is "$(psql_q "SELECT count(*) FROM queue_places WHERE sale_id = $qr AND NOT drawn") $(redis HGET "fs:{$qr}:q:state" admitted)" \
    "$qr_n $qr_n" "after the rush: every place copied to PostgreSQL and admitted"
qr_v=$(admin queue verify "$qr" --json)
is "$? $(json_get "$qr_v" places) $(json_get "$qr_v" admitted) $(json_get "$qr_v" violations)" \
    "0 $qr_n $qr_n 0" "queue verify: clean"

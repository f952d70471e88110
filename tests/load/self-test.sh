#!/bin/sh
# make check (TAP): the load generator's HTTP response parser, every case
# fed whole, byte by byte and cut in two at every offset, and the queue's
# helpers (flashsale-load --self-test); then the waiting room's journey
# against tests/load/fake-queue (no stack): 2,000 shoppers, one in ten a
# bot joining from three connections, for 150 units.
bin=${FLASHSALE_BINDIR:-.}/tests/load
out=$("$bin/flashsale-load" --self-test)
printf '%s\n' "$out" | grep -v '^1\.\.'
n=$(printf '%s\n' "$out" | grep -c '^ok \|^not ok ')

tmp=$(mktemp -d "${TMPDIR:-/tmp}/flashsale-load-test.XXXXXX") || exit 1
fake=
trap '[ -z "$fake" ] || kill "$fake" 2>/dev/null; rm -rf "$tmp"' EXIT

# is ACTUAL EXPECTED NAME: one TAP case.
is() {
	n=$((n + 1))
	if [ "$1" = "$2" ]; then
		echo "ok $n - $3"
	else
		echo "not ok $n - $3"
		echo "#   expected: $2"
		echo "#        got: $1"
	fi
}
# sum KEY: a value of the summary (or qsummary) line.
sum() {
	sed -n 's/^q\{0,1\}summary //p' "$tmp/out" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1
}

"$bin/fake-queue" "$tmp/port" 150 1500 40 &
fake=$!
i=0
while [ ! -s "$tmp/port" ] && [ $i -lt 50 ]; do
	sleep 0.1
	i=$((i + 1))
done
awk 'BEGIN { for (i = 1; i <= 2000; i++) printf "s%d s%d /buy\n", i, i }' >"$tmp/queue"
"$bin/flashsale-load" --queue "$tmp/queue" --sale 1 --port "$(cat "$tmp/port")" --connections 16 \
	--retries 2 --duration-max 20 --bots-permille 100 --bot-joins 3 --poll-rate 50 \
	--page-poll-ms 200 --react-min-ms 0 --react-max-ms 200 --queue-csv "$tmp/timeline.csv" \
	>"$tmp/out" 2>"$tmp/err"
is "$?" 0 "journey: flashsale-load --queue runs to its end"
bots=$(sum bots)
is "$(sum stop)" all-finished "journey: every shopper's journey ended"
is "$(sum joins_200)" "$((2000 + 2 * bots))" "journey: every join answered 200 (bots three times)"
is "$(sum mismatch)/$(sum bad_answer)" 0/0 "journey: every repeat join named the same place; every answer read"
is "$(sum final_202)/$(sum bought)" 150/150 "journey: the 150 units bought, each with a pass"
is "$(sum n_409)/$(sum n_other)" 0/0 "journey: no shopper bought twice, no purchase refused"
is "$(sum waiting)" "$((2000 - $(sum passes_200)))" "journey: everyone not admitted waited until sold out"
is "$(awk -F, 'NR > 1 && $2 == "soldout" { print "seen"; exit }' "$tmp/timeline.csv")" seen \
	"journey: the timeline ends sold out"
grep -q '^fairness: bots ' "$tmp/out"
is "$?" 0 "journey: the fairness line is printed"
echo "1..$n"

#!/bin/sh
# make check (TAP): the load generator's HTTP response parser, every case
# fed whole, byte by byte and cut in two at every offset, and the queue's
# helpers (flashsale-load --self-test); then the waiting room's journey
# against tests/load/fake-queue (no stack): 2,000 shoppers, one in ten a
# bot joining from three connections, for 150 units; and --other-items: a
# shopper whose item is sold out buys another.
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
# sum KEY [OUT]: a value of the summary (or qsummary) line.
sum() {
	sed -n 's/^q\{0,1\}summary //p' "${2:-$tmp/out}" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1
}

# start_fake PORTFILE ARGS...: a fake-queue ($fake), once its port is written.
start_fake() {
	[ -z "$fake" ] || { kill "$fake" 2>/dev/null; wait "$fake" 2>/dev/null; }
	"$bin/fake-queue" "$@" &
	fake=$!
	i=0
	while [ ! -s "$1" ] && [ $i -lt 50 ]; do
		sleep 0.1
		i=$((i + 1))
	done
}

start_fake "$tmp/port" 150 1500 40
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

# Two items of 50 units; 580 of the 600 shoppers want item 1, 20 item 2.
# With --other-items those told 410 by item 1 with a pass buy item 2, so
# all 100 sell (without it item 2 would sell 20).
start_fake "$tmp/port2" 100 1000 40 2
awk 'BEGIN { for (i = 1; i <= 600; i++) printf "t%d t%d /buy/%d\n", i, i, i % 30 == 0 ? 2 : 1 }' >"$tmp/queue2"
"$bin/flashsale-load" --queue "$tmp/queue2" --sale 1 --port "$(cat "$tmp/port2")" --connections 16 \
	--retries 2 --duration-max 20 --poll-rate 50 --page-poll-ms 200 --react-min-ms 0 --react-max-ms 50 \
	--other-items >"$tmp/out2" 2>"$tmp/err2"
is "$?" 0 "other items: flashsale-load --queue --other-items runs to its end"
is "$(sum final_202 "$tmp/out2")/$(sum bought "$tmp/out2")" 100/100 \
	"other items: both items' 100 units bought, though 580 of 600 shoppers wanted item 1"
moved=$(sed -n 's/^queue: \([0-9]*\) moves to another item after a 410 (2 items)$/\1/p' "$tmp/out2")
is "$([ "${moved:-0}" -ge 30 ] && echo "30 or more")" "30 or more" \
	"other items: the shoppers item 1 turned away moved to item 2 ($moved moves)"
is "$(sum n_409 "$tmp/out2")/$(sum n_other "$tmp/out2")" 0/0 "other items: no shopper bought twice, no purchase refused"
echo "1..$n"

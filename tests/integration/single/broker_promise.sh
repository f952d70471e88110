# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# A 409 ALREADY_PURCHASED is a promise: the order it names is on its way
# to PostgreSQL and ends as a live order. The broker is frozen and then
# killed in the middle of a burst, so that purchases in flight are told
# 503 with their holds kept ("maybe delivered": their messages may or may
# not be in the log); the broker comes back and every shopper told 503
# presses Buy again (after the Retry-After second) until told something
# else. A retry that meets its shopper's hold is answered 409 only once
# the broker is known to have that order: the order published again (the
# same message; the consumer takes it once by id), or recorded already.
#
# Guards issue 36.2: before, the retry was answered 409 at once with the
# hold's order, whose message the killed broker had lost, and the ghost
# sweeper then failed it (FAILED GHOST_HOLD): shoppers told "you have it"
# ended with nothing.

. "$top_srcdir/tests/integration/pipeline_lib.sh"

set -- $(new_sale -5 150)
sale=$1 item=$2
path=$(purchase_path "$sale")
dir=$FLASHSALE_STATE/bp-$sale
mkdir -p "$dir"
admin token mint --user "bp-$sale" --count 120 >"$dir/tokens"
head -n 60 "$dir/tokens" >"$dir/tokens1"
tail -n 60 "$dir/tokens" >"$dir/tokens2"
held() { [ "$(redis HLEN "fs:{$sale}:holders")" -ge "$1" ] && echo ok; }
republished0=$(metric_total flashsale_purchase_republished_total)

fire_all "$path" "$dir/tokens1" "$dir/answers1" 20
is "$(count_of 202 "$dir/answers1")" 60 "promise: first wave, 60 purchases answered 202"
# The second wave meets a frozen broker: its orders are sent and wait.
kill -STOP $("$stack" pids kafka)
burst_ms=$(p_now_ms)
fire_all "$path" "$dir/tokens2" "$dir/answers2" 20 &
burst=$!
if p_until 30 ok held 80; then
	ok "promise: second wave, the purchases wait on the frozen broker with their units held"
else
	not_ok "promise: second wave, the purchases wait on the frozen broker with their units held" "$p_out"
fi
"$stack" kill kafka >/dev/null
wait "$burst"
diag "second wave, the broker killed: $(count_of 503 "$dir/answers2") x 503, $(count_of 202 "$dir/answers2") x 202"
is "$(count_of 503 "$dir/answers2")" 60 "promise: every purchase of the second wave is told 503"
"$stack" start kafka >/dev/null

# Every shopper told 503 presses Buy again, a second later (Retry-After),
# until told something else (bounded: 60 rounds).
cat "$dir/answers1" "$dir/answers2" >"$dir/answers"
awk '$1 == 503 { print $2 }' "$dir/answers2" >"$dir/again"
round=0
while [ -s "$dir/again" ] && [ $round -lt 60 ]; do
	sleep 1
	awk 'NR == FNR { want[$1] = 1; next } $1 in want' "$dir/again" "$dir/tokens" >"$dir/again.tokens"
	fire_all "$path" "$dir/again.tokens" "$dir/again.answers" 20
	cat "$dir/again.answers" >>"$dir/answers"
	awk '$1 == 503 { print $2 }' "$dir/again.answers" >"$dir/again"
	round=$((round + 1))
done
diag "retries: $round rounds; answers over all: $(count_of 202 "$dir/answers") x 202, $(count_of 409 "$dir/answers") x 409, $(count_of 410 "$dir/answers") x 410, $(count_of 503 "$dir/answers") x 503"
is "$(wc -l <"$dir/again" | tr -d ' ')" 0 "promise: every shopper told 503 is told something else in the end"
republished=$(($(metric_total flashsale_purchase_republished_total) - republished0))
diag "orders published again for a retry that met its hold: $republished"

# The consumer records what the log has; then the sweeper fails every
# hold whose order never reached it (holds older than 15 s here).
consumer_caught_up 90 || not_ok "promise: the consumer catches up after the broker came back"
wait_ms=$((burst_ms + 16000 - $(p_now_ms)))
[ "$wait_ms" -gt 0 ] && sleep "$((wait_ms / 1000)).$(printf '%03d' $((wait_ms % 1000)))"
out=$(FLASHSALE_HOLD_MAX_AGE=15 "$FLASHSALE_BINDIR/flashsale-expire" 2>>"$FLASHSALE_STATE/log/expire-tests.log")
diag "sweep: $out"
consumer_caught_up 30

# Every shopper told 409 (or 202) has a live order; nobody told 409 ends
# FAILED.
psql_q "SELECT user_id, status FROM orders WHERE sale_id = $sale" | tr '|' ' ' >"$dir/orders"
awk '$1 == 409 || $1 == 202 { print $2 }' "$dir/answers" | sort -u >"$dir/promised"
awk '$1 == 409 { print $2 }' "$dir/answers" | sort -u >"$dir/told409"
broken=$(awk 'NR == FNR { if ($2 == "PENDING") live[$1] = 1; next } !($1 in live)' \
	"$dir/orders" "$dir/promised" | head -n 5)
is "$broken" "" "promise: every shopper told 202 or 409 ($(wc -l <"$dir/promised" | tr -d ' '), 409: $(wc -l <"$dir/told409" | tr -d ' ')) has a PENDING order"
failed409=$(awk 'NR == FNR { if ($2 == "FAILED") failed[$1] = 1; next } $1 in failed' \
	"$dir/orders" "$dir/told409" | wc -l | tr -d ' ')
is "$failed409" 0 "promise: no shopper told 409 ends with a FAILED order"
is "$(psql_q "SELECT count(*) FROM orders WHERE sale_id = $sale AND status = 'PENDING'") $(p_sold "$item")" \
	"$(wc -l <"$dir/promised" | tr -d ' ') $(wc -l <"$dir/promised" | tr -d ' ')" \
	"promise: the live orders are exactly the shoppers told 202 or 409, and sold counts them"
check "promise: flashsale-admin reconcile --check is clean" admin reconcile "$sale" --check

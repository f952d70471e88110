# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# A flood of unsigned payment webhooks from one address: nginx's webhook
# zone (FLASHSALE_RATE_WEBHOOK, FLASHSALE_BURST_WEBHOOK) answers it 429
# before it reaches the payment handler, whose one thread per process also
# serves the shoppers' checkouts. A shopper's checkout during the flood
# answers 200 within a bound set by a baseline measured in this run, and
# the provider's real signed webhook gets through (the simulator retries a
# 429 with backoff).

. "$top_srcdir/tests/integration/pipeline_lib.sh"

wf_stack=$top_srcdir/deploy/stack
wf_rate=5
wf_burst=20
wf_dir=$FLASHSALE_STATE/t72
mkdir -p "$wf_dir"
FLASHSALE_RATE_WEBHOOK=${wf_rate}r/s FLASHSALE_BURST_WEBHOOK=$wf_burst "$wf_stack" restart nginx >/dev/null ||
	diag "nginx did not restart with the webhook limit"

set -- $(new_sale -5 5)
wf_sale=$1
wf_path=$(purchase_path "$wf_sale")
p_provider_mode '{}'
wf_tok=$(p_tok "wf-$wf_sale")
wf_ans=$(http POST "$wf_path" "$wf_tok")
wf_oid=$(json_get "${wf_ans#* }" orderId)
consumer_caught_up
is "$(p_status "$wf_oid")" "PENDING" "the shopper holds a PENDING order"

# wf_checkout: one checkout through the edge, "STATUS SECONDS".
wf_checkout() {
	curl -s -o "$wf_dir/checkout.body" -w '%{http_code} %{time_total}\n' -m 10 -X POST \
	    -H "Authorization: Bearer $wf_tok" "$FLASHSALE_EDGE_URL/api/flash-sales/orders/$wf_oid/checkout"
}
# wf_median FILE: the median of the second column ("STATUS SECONDS" lines).
wf_median() { sort -n -k2 "$1" | awk '{ t[NR] = $2 } END { print t[int((NR + 1) / 2)] }'; }

# The baseline: seven checkouts, nothing else going on.
: >"$wf_dir/base"
for _ in 1 2 3 4 5 6 7; do
	wf_checkout >>"$wf_dir/base"
done
wf_url=$(json_get "$(cat "$wf_dir/checkout.body")" redirectUrl)
is "$(cut -d' ' -f1 "$wf_dir/base" | sort -u | tr '\n' ' ')" "200 " "seven checkouts answer 200 (baseline)"

# The flood: up to 20,000 unsigned events from one address through the
# edge, 16 at a time, each marked in its query for the access log; bounded
# by timeout (30 s), stopped by its PID once the checkouts and the payment
# are done.
wf_log=$FLASHSALE_STATE/log/nginx-access.log
wf_started=$(date +%s)
timeout 30 curl -s -Z --parallel-max 16 -m 5 -X POST -H 'Content-Type: application/json' \
    -H 'Provider-Signature: t=1,v1=00' --data-binary '{"id":"evt_flood","type":"payment.succeeded"}' \
    -o /dev/null "$FLASHSALE_EDGE_URL/api/flash-sales/payments/webhook?t72-flood-[1-20000]" \
    >/dev/null 2>&1 &
wf_flood=$!
p_until 10 yes sh -c "grep -q 't72-flood-' '$wf_log' && echo yes" || diag "the flood did not reach nginx"

# Under the flood: the shopper checks out seven times, then pays at the
# provider, whose webhook meets the limit of the flood's address.
: >"$wf_dir/flooded"
for _ in 1 2 3 4 5 6 7; do
	wf_checkout >>"$wf_dir/flooded"
done
is "$(p_press "$wf_url" pay)" "303" "the shopper pays at the provider during the flood"
wf_pay=$(p_payment_of "$wf_oid" | cut -d' ' -f1)
wf_attempted() { [ "$(p_at_provider "$wf_pay" attempts)" -ge 1 ] 2>/dev/null && echo yes; }
p_until 10 yes wf_attempted || diag "the provider sent no webhook within 10 s"
if kill -0 "$wf_flood" 2>/dev/null; then
	ok "the flood lasted through the checkouts and the payment"
else
	not_ok "the flood lasted through the checkouts and the payment" "it ended first"
fi
kill "$wf_flood" 2>/dev/null
wait "$wf_flood" 2>/dev/null
wf_elapsed=$(($(date +%s) - wf_started + 1))

is "$(cut -d' ' -f1 "$wf_dir/flooded" | sort -u | tr '\n' ' ')" "200 " "seven checkouts answer 200 during the flood"
wf_base=$(wf_median "$wf_dir/base")
wf_during=$(wf_median "$wf_dir/flooded")
diag "checkout median: ${wf_base}s alone, ${wf_during}s during the flood"
if awk -v b="$wf_base" -v d="$wf_during" 'BEGIN { exit !(d <= 4 * b) }'; then
	ok "a checkout during the flood takes at most 4 times the baseline's median"
else
	not_ok "a checkout during the flood takes at most 4 times the baseline's median" \
	    "alone: $(tr '\n' ' ' <"$wf_dir/base"); flooded: $(tr '\n' ' ' <"$wf_dir/flooded")"
fi

# nginx refused the flood: the handler saw at most the burst and the rate
# over the flood's seconds; everything else was 429. Counted in nginx's
# access log (curl's own output of a killed run is lost in its buffer).
grep 't72-flood-' "$wf_log" >"$wf_dir/flood"
wf_sent=$(grep -c . "$wf_dir/flood")
wf_429=$(grep -c '" 429 .* upstream=- ' "$wf_dir/flood")
wf_reached=$(grep -c 'upstream=unix:' "$wf_dir/flood")
wf_bound=$((wf_burst + wf_rate * wf_elapsed))
diag "flood: $wf_sent answered in ${wf_elapsed}s, $wf_429 of them 429, $wf_reached reached the handler (bound $wf_bound)"
if [ "$wf_reached" -le "$wf_bound" ] && [ "$wf_429" -ge $((wf_sent - wf_bound)) ] && [ "$wf_429" -gt 0 ]; then
	ok "the flood got 429 from nginx: at most burst + rate x seconds reached the handler"
else
	not_ok "the flood got 429 from nginx: at most burst + rate x seconds reached the handler" \
	    "$wf_reached reached (bound $wf_bound), $wf_429 of $wf_sent got 429"
fi
is "$(grep 'upstream=unix:' "$wf_dir/flood" | grep -v '" 4[0-9][0-9] ' | head -n 3)" "" \
    "the flood's requests that reached the handler were refused (4xx)"

# The provider's real signed webhook (retried after a 429) makes it PAID.
if p_until 40 PAID p_status "$wf_oid"; then
	ok "the provider's signed webhook gets through: the order is PAID"
else
	not_ok "the provider's signed webhook gets through: the order is PAID" "order is $p_out"
fi
diag "the provider's webhook took $(p_at_provider "$wf_pay" attempts) attempt(s)"

"$wf_stack" restart nginx >/dev/null || diag "nginx did not restart with the suite's limits"

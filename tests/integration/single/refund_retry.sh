# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# A refund the provider refused is retried by us (issue 28, finding 7):
# flashsale-expire asks again with backoff until the provider makes it,
# counts each failure, alerts after FLASHSALE_REFUND_ALERT_AFTER (5) of
# them (gauge, log line, sale watch) and records the refund once made.
# The provider simulator refuses the next 5 refund requests, then accepts.

. "$top_srcdir/tests/integration/pipeline_lib.sh"

provider_bin=$FLASHSALE_BINDIR/deploy/provider/flashsale-provider
expire_log=$FLASHSALE_STATE/log/expire-tests.log

# rr_send BODY: the signed event POSTed through the edge; "STATUS ERROR-or-verdict".
rr_send() {
	rr_sig=$(printf '%s' "$1" | "$provider_bin" sign)
	curl -s -o "$FLASHSALE_STATE/rr.body" -w '%{http_code}' -X POST \
	    -H 'Content-Type: application/json' -H "Provider-Signature: $rr_sig" --data-binary "$1" \
	    "$FLASHSALE_EDGE_URL/api/flash-sales/payments/webhook" >"$FLASHSALE_STATE/rr.status"
	rr_body=$(cat "$FLASHSALE_STATE/rr.body")
	printf '%s %s' "$(cat "$FLASHSALE_STATE/rr.status")" "$(json_get "$rr_body" error)$(json_get "$rr_body" verdict)"
}

# rr_state PAYMENT: "state attempts refund-id-set" in PostgreSQL.
rr_state() {
	psql_q "SELECT state || ' ' || refund_attempts || ' ' || (refund_id IS NOT NULL)
		FROM payments WHERE payment_id = '$1'"
}

# rr_age PAYMENT: the last try a day ago, so that its backoff is over.
rr_age() {
	psql_q "UPDATE payments SET refund_tried_at = refund_tried_at - interval '1 day'
		WHERE payment_id = '$1'" >/dev/null
}

# rr_expire: one expiry run; "tried made failed failing" of its refunds.
rr_expire() {
	rr_out=$(p_expire)
	printf '%s %s %s %s' "$(json_get "$rr_out" refundsTried)" "$(json_get "$rr_out" refundsMade)" \
	    "$(json_get "$rr_out" refundsFailed)" "$(json_get "$rr_out" refundsFailing)"
}

set -- $(new_sale -5 10)
sale=$1
path=$(purchase_path "$sale")
failures_before=$(metric_total flashsale_refund_failures_total)
retried_before=$(metric_total flashsale_refunds_retried_total)

# A payment that comes after the order expired; the provider's own webhook
# is dropped, so that every refund try below is one this test made.
tok=$(p_tok "rr-$sale")
ans=$(http POST "$path" "$tok")
oid=$(json_get "${ans#* }" orderId)
consumer_caught_up
ans=$(p_checkout "$oid" "$tok")
url=$(json_get "${ans#* }" redirectUrl)
pay=$(p_payment_of "$oid" | cut -d' ' -f1)
p_provider_mode '{"drop":true}'
is "$(p_press "$url" pay)" "303" "the shopper pays at the provider (its webhook dropped)"
psql_q "UPDATE orders SET expires_at = now() WHERE id = '$oid'" >/dev/null
p_expire >/dev/null
is "$(p_status "$oid")" "EXPIRED" "the order expired before the payment was heard of"

# The provider refuses the next 5 refunds.
p_provider_mode '{"drop":true,"refuseRefunds":5}'
event=$(printf '{"id":"evt_rr_%s","type":"payment.succeeded","created":%s,"data":{"paymentId":"%s","sessionId":"cs_rr","orderId":"%s","amountMinor":1990000,"currency":"VND"}}' \
    "$sale" "$(date +%s)" "$pay" "$oid")
is "$(rr_send "$event")" "503 TRY_AGAIN" "late payment: the webhook's refund is refused, 503"
is "$(rr_state "$pay") $(p_at_provider "$pay" refunds) $(p_at_provider "$pay" refundsRefused)" \
    "REFUND_PENDING 1 false 0 1" "the refund is owed, 1 failed try recorded, none made"
is "$(rr_expire)" "0 0 0 0" "expiry right after: the backoff is not over, no try"

# Four retries from the expiry, each after its backoff: refused again.
for n in 2 3 4 5; do
	rr_age "$pay"
	want="1 0 1 0"
	[ "$n" = 5 ] && want="1 0 1 1"
	is "$(rr_expire)" "$want" "expiry retry $((n - 1)): tried 1, refused (failing: $([ "$n" = 5 ] && echo yes || echo no))"
	is "$(rr_state "$pay") $(p_at_provider "$pay" refundsRefused)" "REFUND_PENDING $n false $n" \
	    "after retry $((n - 1)): $n failed tries at both ends"
done
if grep -q "refund of payment $pay (order $oid, 1990000 VND) failed 5 times" "$expire_log"; then
	ok "after 5 failures the expiry logs an error line naming the payment"
else
	not_ok "after 5 failures the expiry logs an error line naming the payment" "$(tail -n 3 "$expire_log")"
fi
is "$(metric_total flashsale_refunds_owed) $(metric_total flashsale_refunds_failing)" "1 1" \
    "GET /metrics: 1 refund owed, 1 failing (the alert's gauge)"
is "$(($(metric_total flashsale_refund_failures_total) - failures_before)) $(($(metric_total flashsale_refunds_retried_total) - retried_before))" \
    "5 4" "GET /metrics: 5 failed tries counted, 4 of them retries"
watch_out=$(admin sale watch "$sale" --once)
is "$(printf '%s\n' "$watch_out" | grep '^refunds owed:')" "refunds owed: 1 (1 failing: 5 failed tries or more)" \
    "sale watch: 1 refund owed, failing"
case $(printf '%s\n' "$watch_out" | grep -F "payment $pay") in
*"FAILING  payment $pay order $oid 1990000 VND, 5 failed tries, last: "*) ok "sale watch names the failing refund" ;;
*) not_ok "sale watch names the failing refund" "$watch_out" ;;
esac
is "$(rr_expire)" "0 0 0 0" "expiry right after: the doubled backoff is not over, no try"

# The provider accepts again: the next retry makes the refund, once.
rr_age "$pay"
is "$(rr_expire)" "1 1 0 0" "expiry retry 5: tried 1, made"
is "$(rr_state "$pay") $(p_at_provider "$pay" refunds) $(p_at_provider "$pay" refundsRefused)" \
    "REFUNDED 5 true 1 5" "the payment is REFUNDED with its refund id: 1 refund at the provider, 5 refused"
rr_age "$pay"
is "$(rr_expire)" "0 0 0 0" "a refund made is never asked again"
is "$(rr_send "$event")" "200 DUPLICATE" "the event again: nothing more to refund"
is "$(p_at_provider "$pay" refunds)" "1" "still exactly one refund at the provider"
is "$(metric_total flashsale_refunds_owed) $(metric_total flashsale_refunds_failing)" "0 0" \
    "GET /metrics: no refund owed, none failing"
is "$(admin sale watch "$sale" --once | grep '^refunds owed:')" "refunds owed: 0 (0 failing: 5 failed tries or more)" \
    "sale watch: no refund owed"
p_provider_mode '{}'

# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# Payment by the payment provider (deploy/provider simulates it): the
# signed webhook is the only way to PAID; bad webhooks change nothing;
# duplicates, reordering, declines, late payments (refunded once) and the
# provider's retries while the shop is down each end in one correct state.

. "$top_srcdir/tests/integration/pipeline_lib.sh"

provider_bin=$FLASHSALE_BINDIR/deploy/provider/flashsale-provider
# w_sign BODY [T] [SECRET]: the Provider-Signature value of BODY.
w_sign() {
	printf '%s' "$1" | FLASHSALE_PAYMENT_WEBHOOK_SECRET=${3:-$FLASHSALE_PAYMENT_WEBHOOK_SECRET} \
	    "$provider_bin" sign ${2:+"$2"}
}
# w_send BODY [SIGNATURE]: POSTs an event through the edge; "STATUS ERROR-or-verdict".
w_send() {
	curl -s -o "$FLASHSALE_STATE/hook.body" -w '%{http_code}' -X POST -H 'Content-Type: application/json' \
	    ${2:+-H "Provider-Signature: $2"} --data-binary "$1" \
	    "$FLASHSALE_EDGE_URL/api/flash-sales/payments/webhook" >"$FLASHSALE_STATE/hook.status"
	w_body=$(cat "$FLASHSALE_STATE/hook.body")
	printf '%s %s' "$(cat "$FLASHSALE_STATE/hook.status")" "$(json_get "$w_body" error)$(json_get "$w_body" verdict)"
}
# w_event ID TYPE PAYMENT ORDER AMOUNT CURRENCY: an event document.
w_event() {
	printf '{"id":"%s","type":"%s","created":%s,"data":{"paymentId":"%s","sessionId":"cs_test","orderId":"%s","amountMinor":%s,"currency":"%s"}}' \
	    "$1" "$2" "$(date +%s)" "$3" "$4" "$5" "$6"
}
# w_order USER: buys one unit of the sale for USER and checks out; sets
# w_oid, w_tok, w_url, w_pay (the provider's payment id).
w_order() {
	w_tok=$(p_tok "$1")
	w_ans=$(http POST "$path" "$w_tok")
	w_oid=$(json_get "${w_ans#* }" orderId)
	consumer_caught_up
	w_ans=$(p_checkout "$w_oid" "$w_tok")
	w_url=$(json_get "${w_ans#* }" redirectUrl)
	w_pay=$(p_payment_of "$w_oid" | cut -d' ' -f1)
}
# w_state ORDER: "order-status payment-state events-applied".
w_state() {
	psql_q "SELECT o.status || ' ' || p.state || ' ' || (SELECT count(*) FROM payment_events e
		WHERE e.payment_id = p.payment_id) FROM orders o JOIN payments p ON p.order_id = o.id
		WHERE o.id = '$1'"
}

set -- $(new_sale -5 10)
sale=$1 item=$2
path=$(purchase_path "$sale")
p_provider_mode '{}'

# --- Bad webhooks, table-driven: a clear 4xx each, and nothing changes.
w_order "alice-$sale"
is "$(w_state "$w_oid")" "PENDING OPEN 0" "checkout opened a session (payments row OPEN), order PENDING"
good=$(w_event "evt_t_$sale" payment.succeeded "$w_pay" "$w_oid" 1990000 VND)
now=$(date +%s)
big=$(printf '{"id":"evt_big","pad":"%s"}' "$(head -c 5000 /dev/zero | tr '\0' a)")
bad_case() { # WANT NAME BODY SIGNATURE
	is "$(w_send "$3" "$4")" "$1" "webhook refused: $2"
}
bad_case "401 BAD_SIGNATURE" "no signature" "$good" ""
bad_case "401 BAD_SIGNATURE" "another secret" "$good" "$(w_sign "$good" "" whsec_not_the_shared_secret)"
bad_case "401 BAD_SIGNATURE" "timestamp 6 minutes old" "$good" "$(w_sign "$good" $((now - 360)))"
bad_case "401 BAD_SIGNATURE" "timestamp 6 minutes ahead" "$good" "$(w_sign "$good" $((now + 360)))"
bad_case "401 BAD_SIGNATURE" "body changed after signing" \
    "$(w_event "evt_t_$sale" payment.succeeded "$w_pay" "$w_oid" 1990001 VND)" "$(w_sign "$good")"
bad_case "401 BAD_SIGNATURE" "malformed header" "$good" "t=abc,v1=zz"
body=$(w_event "evt_a_$sale" payment.succeeded "$w_pay" "$w_oid" 1990 VND)
bad_case "400 AMOUNT_MISMATCH" "wrong amount" "$body" "$(w_sign "$body")"
body=$(w_event "evt_c_$sale" payment.succeeded "$w_pay" "$w_oid" 1990000 USD)
bad_case "400 AMOUNT_MISMATCH" "wrong currency" "$body" "$(w_sign "$body")"
body=$(w_event "evt_u_$sale" payment.succeeded "$w_pay" "$(p_uuid)" 1990000 VND)
bad_case "400 UNKNOWN_ORDER" "unknown order" "$body" "$(w_sign "$body")"
bad_case "400 BAD_EVENT" "malformed JSON" '{"id":"evt_x",' "$(w_sign '{"id":"evt_x",')"
body=$(w_event "evt_r_$sale" payment.refunded "$w_pay" "$w_oid" 1990000 VND)
bad_case "400 BAD_EVENT" "unknown event type" "$body" "$(w_sign "$body")"
bad_case "413 PAYLOAD_TOO_LARGE" "oversized body" "$big" "$(w_sign "$big")"
is "$(http GET /api/flash-sales/payments/webhook | cut -c1-3)" "405" "webhook refused: GET (405)"
is "$(w_state "$w_oid") $(p_sold "$item")" "PENDING OPEN 0 1" "after 13 bad webhooks: PENDING, payment OPEN, no event, sold 1"

# --- A good signature makes it PAID; the same event again changes nothing.
is "$(w_send "$good" "$(w_sign "$good")")" "200 PAID" "a signed payment.succeeded answers 200 PAID"
is "$(w_state "$w_oid") $(p_sold "$item")" "PAID SUCCEEDED 1 1" "the order is PAID, its payment SUCCEEDED"
is "$(w_send "$good" "$(w_sign "$good")")" "200 DUPLICATE" "the same event replayed answers 200 DUPLICATE"
is "$(w_state "$w_oid") $(p_sold "$item")" "PAID SUCCEEDED 1 1" "and changes nothing"

# --- The provider sends the event 5 times: one payment, one PAID.
w_order "bob-$sale"
p_provider_mode '{"duplicate":4}'
is "$(p_press "$w_url" pay)" "303" "bob pays on the hosted page"
p_until 15 5 p_at_provider "$w_pay" deliveries
is "$p_out" "5" "the provider delivered payment.succeeded 5 times"
is "$(w_state "$w_oid") $(p_sold "$item") $(p_stock "$sale" "$item")" "PAID SUCCEEDED 1 2 8" \
    "5 deliveries: PAID once, one event applied, sold 2, 8 left"

# --- Declined, then paid, with the events reordered: succeeded arrives
# before failed, and the order stays PAID.
w_order "carol-$sale"
p_provider_mode '{"reorder":true}'
is "$(p_press "$w_url" decline) $(p_press "$w_url" pay)" "303 303" "carol's card is declined, then she pays"
p_until 15 2 p_at_provider "$w_pay" deliveries
is "$(psql_q "SELECT string_agg(type, ',' ORDER BY received_at) FROM payment_events WHERE payment_id = '$w_pay'")" \
    "payment.succeeded,payment.failed" "the provider delivered succeeded before failed"
is "$(w_state "$w_oid")" "PAID SUCCEEDED 2" "a later payment.failed does not undo the payment: PAID, SUCCEEDED"

# --- A decline alone leaves the order PENDING until its window closes.
w_order "dave-$sale"
p_provider_mode '{}'
is "$(p_press "$w_url" decline)" "303" "dave's card is declined"
p_until 15 1 p_at_provider "$w_pay" deliveries
is "$(w_state "$w_oid")" "PENDING FAILED 1" "payment.failed: the order stays PENDING (payment FAILED)"
psql_q "UPDATE orders SET expires_at = now() WHERE id = '$w_oid'" >/dev/null
p_expire >/dev/null
is "$(w_state "$w_oid") $(p_at_provider "$w_pay" refunds)" "EXPIRED FAILED 1 0" "then it expires; nothing to refund"

# --- A payment that arrives after the window: the order stays closed, the
# money goes back once however often the event comes.
w_order "erin-$sale"
before=$(p_stock "$sale" "$item")
p_provider_mode '{"delayMs":1500,"duplicate":2}'
is "$(p_press "$w_url" pay)" "303" "erin pays; the provider's webhook is slow"
psql_q "UPDATE orders SET expires_at = now() WHERE id = '$w_oid'" >/dev/null
p_expire >/dev/null
is "$(p_status "$w_oid")" "EXPIRED" "the window closed and the order expired before the webhook came"
p_until 20 3 p_at_provider "$w_pay" deliveries
is "$p_out" "3" "the late event was delivered 3 times"
is "$(w_state "$w_oid") $(p_at_provider "$w_pay" refunds)" "EXPIRED REFUNDED 1 1" \
    "late payment: order EXPIRED, payment REFUNDED, exactly one refund at the provider"
is "$(psql_q "SELECT refund_id IS NOT NULL AND refunded_at IS NOT NULL FROM payments WHERE payment_id = '$w_pay'")" \
    "t" "the refund is recorded with its id and time"
is "$(p_stock "$sale" "$item")" "$((before + 1))" "the unit went back to stock once and was not taken again"

# --- The shop is down when the webhook comes: the provider retries with
# backoff until it answers.
w_order "frank-$sale"
p_provider_mode '{}'
"$stack" stop flashsale-payment >/dev/null
is "$(p_press "$w_url" pay)" "303" "frank pays while flashsale-payment is down"
p_until 10 1 p_at_provider "$w_pay" attempts
"$stack" start flashsale-payment >/dev/null
p_until 20 PAID p_status "$w_oid"
is "$p_out $(p_at_provider "$w_pay" deliveries)" "PAID 1" "the provider's retry makes it PAID once the shop is back"
case $(p_at_provider "$w_pay" attempts) in
1 | "") not_ok "the first attempts failed and were retried" ;;
*) ok "the first attempts failed and were retried ($(p_at_provider "$w_pay" attempts) attempts)" ;;
esac

# --- A dropped webhook never arrives: the order waits for its window.
w_order "gina-$sale"
p_provider_mode '{"drop":true}'
is "$(p_press "$w_url" pay)" "303" "gina pays; the provider drops the webhook"
is "$(p_at_provider "$w_pay" status) $(p_at_provider "$w_pay" attempts) $(w_state "$w_oid")" \
    "succeeded 0 PENDING OPEN 0" "no webhook, no PAID: the order is still PENDING"
p_provider_mode '{}'
psql_q "UPDATE orders SET expires_at = now() WHERE id = '$w_oid'" >/dev/null
p_expire >/dev/null
admin reconcile "$sale" --check >/dev/null 2>&1
is "$?" "0" "reconcile --check holds: every PAID order has one succeeded payment, late ones refunded"

# shellcheck shell=sh disable=SC2154 # sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# Helpers of the order pipeline and payment tests (single/pipeline*.sh and
# the others that source it after lib.sh). Names start with p_: the
# helpers of a topic, apart from the test file's own names.

# p_until SECONDS EXPECTED CMD...: runs CMD every 0.2 s until it prints
# EXPECTED; fails after SECONDS. $p_out holds the last output.
p_until() {
	p_deadline=$(($(date +%s) + $1))
	p_expect=$2
	shift 2
	while :; do
		p_out=$("$@" 2>/dev/null)
		[ "$p_out" = "$p_expect" ] && return 0
		[ "$(date +%s)" -ge "$p_deadline" ] && return 1
		sleep 0.2
	done
}

p_consumer_pid() { cat "$FLASHSALE_STATE/run/flashsale-consumer.pid" 2>/dev/null; }

p_tok() { admin token mint --user "$1"; }

p_stock() { redis GET "fs:{$1}:stock:$2"; }

p_sold() { psql_q "SELECT sold FROM items WHERE id = $1"; }

p_status() { psql_q "SELECT status FROM orders WHERE id = '$1'"; }

# p_count SQL_WHERE: orders matching the condition.
p_count() { psql_q "SELECT count(*) FROM orders WHERE $1"; }

# p_dead_letters [REASON [ORDER]]: how many dead letters there are (with
# the header reason=REASON; of the order ORDER). fs_kcat -J wraps each in JSON,
# {"headers":..., "payload":"the message", ...}: the headers' values (the
# reason is the only one) are .headers[], whether kcat lists them as
# ["reason","CODE"] or {"reason":"CODE"}.
p_dead_letters() {
	fs_kcat -C -b "$FLASHSALE_KAFKA_BROKERS" -t "$FLASHSALE_KAFKA_TOPIC.dlq" -e -q -J 2>/dev/null |
		if [ -n "${1:-}" ]; then fs_json -l -w ".headers[]=$1" .payload; else fs_json -l .payload; fi |
		if [ -n "${2:-}" ]; then fs_json -l -w .orderId="$2" .; else cat; fi | wc -l | tr -d ' '
}

# p_produce KEY JSON: one message straight onto the order topic, signed
# with the order key as a purchase handler signs it (tests/tools/fs-order-send).
p_produce() {
	printf '%s\t%s\n' "$1" "$2" | p_send
}

# p_send: the lines KEY<TAB>VALUE of standard input onto the order topic, signed.
p_send() { "$FLASHSALE_BINDIR/tests/tools/fs-order-send"; }

# The order message the purchase handler would publish.
p_message() { # ORDER SALE ITEM USER RESERVED_MS
	printf '{"orderId":"%s","saleId":%s,"itemId":%s,"userId":"%s","reservedAt":%s}' "$1" "$2" "$3" "$4" "$5"
}

p_uuid() { cat /proc/sys/kernel/random/uuid; }

p_now_ms() { echo $(($(date +%s%N) / 1000000)); }

# p_reserve SALE ITEM USER ORDER MS: a hold taken through lua/reserve.lua
# directly, as if the purchase never reached Kafka. Prints the script's answer.
p_reserve() {
	redis EVAL "$(cat "$top_srcdir/lua/reserve.lua")" 5 "fs:{$1}:stock:$2" "fs:{$1}:holders" \
	    "fs:{$1}:orders" "fs:{$1}:unconfirmed" "fs:{$1}:sale" "$3" "$4" "$3 $2 $5" "$5" 600 \
	    "$(($(p_now_ms) + 60000))" | head -n 1
}

# A run of the expiry as cron starts it: prints its JSON counts.
p_expire() { "$FLASHSALE_BINDIR/flashsale-expire" 2>>"$FLASHSALE_STATE/log/expire-tests.log"; }

# A run of the expiry through the operator endpoint: prints its JSON counts.
p_expire_http() {
	curl -s -X POST -H "X-Expire-Token: $FLASHSALE_EXPIRE_TOKEN" \
	    "$FLASHSALE_ORIGIN_URL/api/flash-sales/admin/expire"
}

# p_sum MEMBER FILE...: the sum of a JSON number member over the files.
p_sum() {
	p_member=$1
	shift
	cat "$@" | fs_json ".$p_member" | awk '{ s += $1 } END { print s + 0 }'
}

# p_buy_all PATH USER_PREFIX N DIR: N shoppers buy at once (100 in flight).
# DIR gets tokens ("sub token" lines) and statuses (one per shopper).
p_buy_all() {
	mkdir -p "$4"
	admin token mint --user "$2" --count "$3" >"$4/tokens"
	: >"$4/curl.cfg"
	while read -r _sub _tok; do
		[ -s "$4/curl.cfg" ] && echo next >>"$4/curl.cfg"
		# Options after "next" are per transfer: every one names its own.
		printf 'url = "%s%s"\nrequest = "POST"\nheader = "Authorization: Bearer %s"\noutput = "/dev/null"\nsilent\nwrite-out = "%%{http_code}\\n"\n' \
		    "$FLASHSALE_ORIGIN_URL" "$1" "$_tok" >>"$4/curl.cfg"
	done <"$4/tokens"
	curl -s -Z --parallel-max 100 -K "$4/curl.cfg" >"$4/statuses" 2>/dev/null
	grep -c '^202$' "$4/statuses"
}

# The token of a shopper from a p_buy_all directory.
p_token_of() { awk -v u="$2" '$1 == u { print $2 }' "$1/tokens"; }

# --- payment through the provider simulator (deploy/provider) ----------

# p_provider METHOD PATH [JSON]: the simulator's API with its API key;
# prints "STATUS BODY".
p_provider() {
	curl -s -o "$FLASHSALE_STATE/provider.body" -w '%{http_code}' -X "$1" \
	    -H "Authorization: Bearer $FLASHSALE_PAYMENT_API_KEY" ${3:+--data-binary "$3"} \
	    "$FLASHSALE_PAYMENT_URL$2" >"$FLASHSALE_STATE/provider.status"
	printf '%s %s' "$(cat "$FLASHSALE_STATE/provider.status")" "$(cat "$FLASHSALE_STATE/provider.body")"
}

# p_provider_mode JSON: how the simulator sends the next webhooks.
p_provider_mode() { p_provider POST /v1/test/mode "$1" >/dev/null; }

# p_checkout ORDER TOKEN: prints "STATUS BODY" of POST .../checkout.
p_checkout() { http POST "/api/flash-sales/orders/$1/checkout" "$2"; }

# p_press URL pay|decline: presses a button of the hosted checkout page at
# URL; prints the HTTP status (303 back to the shop).
p_press() {
	curl -s -o /dev/null -w '%{http_code}' -X POST "$1/$2"
}

# p_pay ORDER TOKEN: checkout, Pay at the provider, and the webhook makes
# the order PAID (waits up to 15 s). Fails with a diagnostic otherwise.
p_pay() {
	p_ans=$(p_checkout "$1" "$2")
	p_url=$(json_get "${p_ans#* }" redirectUrl)
	{ [ "${p_ans%% *}" = 200 ] && [ -n "$p_url" ]; } || { diag "checkout of $1: $p_ans"; return 1; }
	[ "$(p_press "$p_url" pay)" = 303 ] || { diag "Pay at $p_url refused"; return 1; }
	p_until 15 PAID p_status "$1" || { diag "order $1 is $p_out, not PAID"; return 1; }
}

# p_payment_of ORDER: "payment_id state" of the order's payment.
p_payment_of() { psql_q "SELECT payment_id || ' ' || state FROM payments WHERE order_id = '$1'"; }

# p_at_provider PAYMENT FIELD: a member of the simulator's view of a payment.
p_at_provider() { json_get "$(p_provider GET "/v1/payments/$1" | cut -d' ' -f2-)" "$2"; }

# shellcheck shell=sh disable=SC2046 # set -- $(...) splits ids into words on purpose
# The purchase gate of a sale with a waiting room (docs/QUEUE.md): its
# signed URLs carry q=1 inside the signature, and a purchase needs the pass
# of its shopper for that sale (Flashsale-Pass), no token: without a valid
# one 403 NOT_ADMITTED, before any store. The order is the pass's shopper.
# Passes come from `flashsale-admin queue pass` here (the waiting room's
# own pass request is flashsale-queue's). A sale without a waiting room
# buys as before.

# The purchase handlers' Redis pipelines so far: every reservation is one
# (the pacer of a waiting room steps the same sale, so INFO commandstats
# cannot tell a purchase's commands from its).
qg_rounds() { metric_total flashsale_purchase_reserve_rounds_total; }

# qg_buy PATH [PASS] [TOKEN] [BASE]: "STATUS BODY" of a purchase (origin by
# default); a header not given is not sent (a harmless one in its place).
qg_buy() {
	qg_pass="X-Qg-None: 1" qg_auth="X-Qg-None: 2"
	[ -z "${2:-}" ] || qg_pass="Flashsale-Pass: $2"
	[ -z "${3:-}" ] || qg_auth="Authorization: Bearer $3"
	curl -s -o "$FLASHSALE_STATE/qg-body" -w '%{http_code}' -X POST -H "$qg_pass" \
		-H "$qg_auth" "${4:-$FLASHSALE_ORIGIN_URL}$1" >"$FLASHSALE_STATE/qg-status"
	printf '%s %s' "$(cat "$FLASHSALE_STATE/qg-status")" "$(cat "$FLASHSALE_STATE/qg-body")"
}

# qg_expect NAME STATUS CODE PATH [PASS] [TOKEN]
qg_expect() {
	qg_ans=$(qg_buy "$4" "${5:-}" "${6:-}")
	if [ "${qg_ans%% *}" = "$2" ] && [ "$(json_get "${qg_ans#* }" error)" = "$3" ]; then
		ok "$1: $2 $3"
	else
		not_ok "$1: $2 $3" "got: $qg_ans"
	fi
}

# The users of the sale's orders on the topic, sorted, one a line.
qg_buyers() {
	qg_msgs=$(sale_messages "$1")
	[ -z "$qg_msgs" ] || json_get "$qg_msgs" userId | sort
}

cat >"$FLASHSALE_STATE/qg-sale.json" <<JSON
{"name":"queue gate","startsInSeconds":-5,"durationSeconds":3600,
 "items":[{"name":"Phone","priceMinor":1990000,"currency":"VND","quantity":5}],
 "queue":{"passSeconds":120,"powBits":0}}
JSON
set -- $(sale_created "$FLASHSALE_STATE/qg-sale.json")
sale=$1 item=$2
admin sale warm "$sale" >/dev/null || not_ok "the queue sale warms"
path=$(purchase_path "$sale")
case "$path" in
"/api/flash-sales/items/$item/purchase?sale=$sale&start="*"&q=1&sig="*) ok "a waiting room's purchase URL carries q=1" ;;
*) not_ok "a waiting room's purchase URL carries q=1" "got: $path" ;;
esac
reveal=$(curl -s "$FLASHSALE_ORIGIN_URL/api/flash-sales/sales/$sale/reveal")
case "$reveal" in
*"&q=1&sig="*) ok "the reveal gives the q=1 URL" ;;
*) not_ok "the reveal gives the q=1 URL" "got: $reveal" ;;
esac

# --- Refused before any store: no pipeline, no unit, no message.
consumer_caught_up
rounds_before=$(qg_rounds)
stock_before=$(redis GET "fs:{$sale}:stock:$item")
tok=$(admin token mint --user "qg-tok-$sale")
mkdir -p "$FLASHSALE_STATE/qg-otherkeys"
admin keys generate "$FLASHSALE_STATE/qg-otherkeys" >/dev/null
pass=$(admin queue pass "$sale" "qg-bob-$sale")
# Its tag's letters rotated but the last (which carries the padding bits).
qg_tag=${pass#*.}
qg_head=${qg_tag%?}
forged="${pass%.*}.$(printf '%s' "$qg_head" | tr 'A-Za-z' 'B-ZAb-za')${qg_tag#"$qg_head"}"
expired=$(admin queue pass "$sale" "qg-bob-$sale" --seconds 60 --age 120)
other_sale=$(admin queue pass "$((sale + 1000000))" "qg-bob-$sale")
other_key=$(FLASHSALE_KEYS_DIR=$FLASHSALE_STATE/qg-otherkeys admin queue pass "$sale" "qg-bob-$sale")
ticket_like=$(printf '%s' "$pass" | sed 's/^cDF8/dDF8/')
qg_expect "no pass, no token" 403 NOT_ADMITTED "$path"
qg_expect "no pass, a valid token" 403 NOT_ADMITTED "$path" "" "$tok"
qg_expect "a forged pass" 403 NOT_ADMITTED "$path" "$forged"
qg_expect "an expired pass" 403 NOT_ADMITTED "$path" "$expired"
qg_expect "another sale's pass" 403 NOT_ADMITTED "$path" "$other_sale"
qg_expect "a pass under another queue.key" 403 NOT_ADMITTED "$path" "$other_key"
qg_expect "a pass whose kind was changed" 403 NOT_ADMITTED "$path" "$ticket_like"
qg_expect "a garbled pass" 403 NOT_ADMITTED "$path" "not-a-pass"
is "$(qg_rounds)" "$rounds_before" "the refusals sent Redis nothing (no purchase pipeline)"
is "$(redis GET "fs:{$sale}:stock:$item")" "$stock_before" "the refusals took no unit"
is "$(qg_buyers "$sale")" "" "the refusals published no order"

# q is inside the signature: neither stripped nor added.
stripped=$(printf '%s' "$path" | sed 's/&q=1//')
qg_expect "the queue URL without q=1, with a token" 403 BAD_PURCHASE_URL "$stripped" "" "$tok"
qg_expect "the queue URL without q=1, with the pass" 401 UNAUTHENTICATED "$stripped" "$pass"

# --- A valid pass buys, with no Authorization, for its shopper.
ans=$(qg_buy "$path" "$pass")
is "${ans%% *}" "202" "a valid pass, no token: 202"
oid=$(json_get "${ans#* }" orderId)
ans=$(qg_buy "$path" "$pass")
is "${ans%% *} $(json_get "${ans#* }" orderId)" "409 $oid" "the pass's shopper again: 409 with their order"
# Another account's pass, sent with a token of someone else: the order is the pass's.
carol=$(admin queue pass "$sale" "qg-carol-$sale")
dave_tok=$(admin token mint --user "qg-dave-$sale")
ans=$(qg_buy "$path" "$carol" "$dave_tok")
is "${ans%% *}" "202" "carol's pass with dave's token: 202"
# Through the edge: Varnish passes the header untouched and stores nothing of it.
erin=$(admin queue pass "$sale" "qg-erin-$sale")
ans=$(qg_buy "$path" "$erin" "" "$FLASHSALE_EDGE_URL")
is "${ans%% *}" "202" "a pass through the edge: 202"
ans=$(qg_buy "$path" "$erin" "" "$FLASHSALE_EDGE_URL")
is "${ans%% *} $(json_get "${ans#* }" error)" "409 ALREADY_PURCHASED" \
    "the same pass through the edge again: 409, not a stored answer"
qg_wait=$(($(date +%s) + 10))
while [ "$(qg_buyers "$sale" | wc -l)" -lt 3 ] && [ "$(date +%s)" -lt "$qg_wait" ]; do
	sleep 0.2
done
is "$(qg_buyers "$sale" | tr '\n' ' ')" "qg-bob-$sale qg-carol-$sale qg-erin-$sale " \
    "the orders are the passes' shoppers (bob, carol, erin), never the token's (dave)"
is "$(redis GET "fs:{$sale}:stock:$item")" "$((stock_before - 3))" "three units taken"

# --- A sale without a waiting room: unchanged.
set -- $(new_sale -5 5)
plain_sale=$1
plain=$(purchase_path "$plain_sale")
case "$plain" in
*"q=1"*) not_ok "a sale without a waiting room: no q in its URL" "got: $plain" ;;
*) ok "a sale without a waiting room: no q in its URL" ;;
esac
plain_pass=$(admin queue pass "$plain_sale" "qg-frank-$plain_sale")
qg_expect "no waiting room: a pass without a token" 401 UNAUTHENTICATED "$plain" "$plain_pass"
added=$(printf '%s' "$plain" | sed 's/&sig=/\&q=1\&sig=/')
qg_expect "no waiting room: q=1 added to its URL" 403 BAD_PURCHASE_URL "$added" "$plain_pass"
frank_tok=$(admin token mint --user "qg-frank-$plain_sale")
ans=$(qg_buy "$plain" "$plain_pass" "$frank_tok")
is "${ans%% *}" "202" "no waiting room: the token buys, the pass is ignored"

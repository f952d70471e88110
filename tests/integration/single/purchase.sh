# shellcheck shell=sh disable=SC2046 # set -- $(...) splits ids into words on purpose
# The purchase path through nginx: contention, the bad-input matrix, the
# sold-out fast path, and recovery when Kafka or Redis stop and return.


topic_count_for_sale() { sale_messages "$1" | wc -l | tr -d ' '; }

# The purchase handlers' Redis pipelines so far.
reserve_rounds() { metric_total flashsale_purchase_reserve_rounds_total; }

# --- Contention: 1,000 shoppers, 100 units, 4 handler processes.
rounds0=$(reserve_rounds)
set -- $(new_sale -5 100)
sale=$1 item=$2
path=$(purchase_path "$sale")
is "$(wc -l <"$FLASHSALE_STATE/run/flashsale-purchase.pid" | tr -d ' ')" "4" \
    "four purchase processes serve the item"
admin token mint --user "c$sale" --count 1000 >"$FLASHSALE_STATE/tokens-$sale"
fire_all "$path" "$FLASHSALE_STATE/tokens-$sale" "$FLASHSALE_STATE/out-$sale"
is "$(count_of 202 "$FLASHSALE_STATE/out-$sale")" "100" "contention: exactly 100 shoppers get 202"
is "$(count_of 410 "$FLASHSALE_STATE/out-$sale")" "900" "contention: the other 900 get 410"
is "$(redis GET "fs:{$sale}:stock:$item")" "0" "contention: Redis shows 0 units left"
rounds=$(($(reserve_rounds) - rounds0))
if [ "$rounds" -ge 1 ] && [ "$rounds" -le 1000 ]; then
	ok "contention: the reservations went to Redis in $rounds pipelines (1 to 1,000)"
else
	not_ok "contention: the reservations went to Redis in 1 to 1,000 pipelines" "counted: $rounds"
fi
msgs=$(sale_messages "$sale")
is "$(printf '%s\n' "$msgs" | grep -c .)" "100" "contention: the topic holds exactly 100 messages"
is "$(json_get "$msgs" userId | sort -u | wc -l | tr -d ' ')" \
    "100" "contention: for 100 distinct shoppers"
winner_msg=$(printf '%s\n' "$msgs" | head -n 1)
winner=$(json_get "$winner_msg" userId)
winner_tok=$(awk -v u="$winner" '$1 == u { print $2 }' "$FLASHSALE_STATE/tokens-$sale")
# The item is sold out now, so a repeat is answered 410 on the fast path;
# the 409 shows on an item that still has stock (next block).
ans=$(http POST "$path" "$winner_tok")
is "${ans%% *}" "410" "a winner's repeat on the sold-out item is answered 410 from the fast path"

set -- $(new_sale -5 5)
sale2=$1 item2=$2
path2=$(purchase_path "$sale2")
tok=$(admin token mint --user "repeat-$sale2")
first=$(http POST "$path2" "$tok")
is "${first%% *}" "202" "a purchase with stock answers 202"
oid=$(json_get "${first#* }" orderId)
if [ -n "$oid" ] && [ "$(json_get "${first#* }" status)" = PENDING ] &&
    [ -n "$(json_get "${first#* }" expiresAt)" ]; then
	ok "202 body carries orderId, PENDING and expiresAt"
else
	not_ok "202 body carries orderId, PENDING and expiresAt" "$first"
fi
second=$(http POST "$path2" "$tok")
is "${second%% *}" "409" "the same shopper again answers 409"
is "$(json_get "${second#* }" orderId)" "$oid" "409 carries the shopper's existing order id"
is "$(json_get "${second#* }" error)" "ALREADY_PURCHASED" "409 says ALREADY_PURCHASED"
case "$oid" in
????????-????-7???-[89ab]???-????????????) ok "the order id is a UUIDv7" ;;
*) not_ok "the order id is a UUIDv7" "$oid" ;;
esac

# --- Bad input: each answer exact, and nothing changes.
stock_before=$(redis GET "fs:{$sale2}:stock:$item2")
topic_before=$(topic_count_for_sale "$sale2")
keys=$FLASHSALE_STATE/keys
b64url() { base64 -w0 | tr '+/' '-_' | tr -d '='; }
now=$(date +%s)
claims=$(printf '{"sub":"mallory","iat":%s,"exp":%s}' "$now" $((now + 600)) | b64url)
none_tok="$(printf '{"alg":"none","typ":"JWT"}' | b64url).$claims."
# HS256 signed with the Ed25519 public key as its secret: the classic confusion.
hs_head=$(printf '{"alg":"HS256","typ":"JWT"}' | b64url)
conf_sig=$(printf '%s.%s' "$hs_head" "$claims" |
	openssl dgst -sha256 -mac HMAC -macopt hexkey:"$(xxd -p -c 256 "$keys/jwt-ed25519.pub")" -binary | b64url)
conf_tok="$hs_head.$claims.$conf_sig"
mkdir -p "$FLASHSALE_STATE/otherkeys"
admin keys generate "$FLASHSALE_STATE/otherkeys" >/dev/null
other_tok=$(FLASHSALE_KEYS_DIR=$FLASHSALE_STATE/otherkeys admin token mint --user mallory)
expired_tok=$(admin token mint --user mallory --age 600 --ttl 60)
good=$(admin token mint --user "bad-input-$sale2")
hs_tok=$(admin token mint --user "bad-input-$sale2" --alg HS256)
tampered_tok=$(printf '%s' "$good" | awk -F. -v c="$claims" '{ print $1 "." c "." $3 }')

expect() { # NAME STATUS CODE METHOD PATH [TOKEN]
	ans=$(http "$4" "$5" "${6:-}")
	if [ "${ans%% *}" = "$2" ] && [ "$(json_get "${ans#* }" error)" = "$3" ]; then
		ok "$1: $2 $3"
	else
		not_ok "$1: $2 $3" "got: $ans"
	fi
}
expect "no token" 401 UNAUTHENTICATED POST "$path2"
expect "garbled token" 401 UNAUTHENTICATED POST "$path2" "not.a.jwt"
expect "expired token" 401 UNAUTHENTICATED POST "$path2" "$expired_tok"
expect "token signed with another key" 401 UNAUTHENTICATED POST "$path2" "$other_tok"
expect "alg none" 401 UNAUTHENTICATED POST "$path2" "$none_tok"
expect "HS256 signed with the Ed25519 public key" 401 UNAUTHENTICATED POST "$path2" "$conf_tok"
expect "token with a swapped payload" 401 UNAUTHENTICATED POST "$path2" "$tampered_tok"
tampered_url=$(printf '%s' "$path2" | sed 's/end=\([0-9]*\)/end=\19/')
expect "tampered purchase URL" 403 BAD_PURCHASE_URL POST "$tampered_url" "$good"
set -- $(new_sale -5 5)
other_item_url=$(printf '%s' "$path2" | sed "s|/items/$item2/|/items/$2/|")
expect "URL signed for another item" 403 BAD_PURCHASE_URL POST "$other_item_url" "$good"
expect "URL without signature" 403 BAD_PURCHASE_URL POST "/api/flash-sales/items/$item2/purchase" "$good"
set -- $(new_sale -7200 5)
expect "expired purchase URL" 403 BAD_PURCHASE_URL POST "$(purchase_path "$1")" "$good"
set -- $(new_sale 3600 5)
expect "purchase URL before the start" 425 SALE_NOT_STARTED POST "$(purchase_path "$1")" "$good"
expect "non-numeric item id" 404 ITEM_NOT_FOUND POST "/api/flash-sales/items/abc/purchase" "$good"
expect "overflowing item id" 404 ITEM_NOT_FOUND POST \
    "/api/flash-sales/items/99999999999999999999999/purchase" "$good"
printf '{"name":"cold","startsInSeconds":-5,"durationSeconds":600,"items":[{"name":"a","priceMinor":1,"currency":"VND","quantity":3}]}' \
	>"$FLASHSALE_STATE/cold.json"
set -- $(sale_created "$FLASHSALE_STATE/cold.json")
cold_sale=$1
# Live in PostgreSQL, not in Redis (never warmed, or Redis lost it): the
# URL is genuine, so the shopper is told to try again, not "no such item".
expect "a live sale Redis does not know: 503 TRY_AGAIN" 503 TRY_AGAIN POST "$(purchase_path "$cold_sale")" "$good"
expect "wrong method" 405 METHOD_NOT_ALLOWED GET "$path2" "$good"
big=$(head -c 20000 /dev/zero | tr '\0' a)
st=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "X-Big: $big" -H "Authorization: Bearer $good" \
	"$FLASHSALE_ORIGIN_URL$path2")
case "$st" in 400 | 431 | 494) ok "oversized headers are refused ($st)" ;; *) not_ok "oversized headers are refused" "got $st" ;; esac
st=$(head -c 100000 /dev/zero | curl -s -o /dev/null -w '%{http_code}' -X POST --data-binary @- \
	-H "Authorization: Bearer $good" "$FLASHSALE_ORIGIN_URL$path2")
is "$st" "413" "an oversized body is refused with 413"
is "$(redis GET "fs:{$sale2}:stock:$item2")" "$stock_before" "bad input took no unit"
is "$(topic_count_for_sale "$sale2")" "$topic_before" "bad input published nothing"
ans=$(http POST "$path2" "$hs_tok")
is "${ans%% *}" "202" "an HS256 token from the configured secret is accepted"

# --- Sold-out fast path: after the sell-out, no Redis command, no FastCGI.
# The marker is seen by nginx within open_file_cache_valid (1 s): wait for it.
deadline=$(($(date +%s) + 10))
answered_by=""
while [ "$(date +%s)" -le "$deadline" ]; do
	answered_by=$(curl -s -o /dev/null -D - -X POST "$FLASHSALE_ORIGIN_URL$path" |
		tr -d '\r' | sed -n 's/^X-Flashsale-Answered-By: //Ip')
	[ "$answered_by" = nginx ] && break
done
is "$answered_by" "nginx" "after the sell-out nginx answers 410 itself"
# Every command's call count but INFO's own, PING (an operator's or the
# stack's /readyz PINGs Redis), AUTH (the probes'
# and redis-cli's connections) and the sold-out recheck's HGET, MGET,
# layout HMGET and doubts' HSCAN (each purchase process asks every second
# about its sold-out items and their sales' doubts, whatever the shoppers
# do: lib/soldout.c), one "name calls" line each. A purchase that reached
# Redis would run EVALSHA, counted here.
redis_calls() {
	redis INFO commandstats | tr -d '\r' | grep -v '^cmdstat_\(info\|ping\|auth\|hget\|mget\|hmget\|hscan\):' |
		sed -n 's/^cmdstat_\([^:]*\):calls=\([0-9]*\).*/\1 \2/p'
}
# The consumer confirms recorded orders in Redis: let it finish first.
consumer_caught_up
fcgi_count() { grep -c 'upstream=unix:.*flashsale-purchase' "$FLASHSALE_STATE/log/nginx-access.log"; }
calls_before=$(redis_calls)
fcgi_before=$(fcgi_count)
head -n 1 "$FLASHSALE_STATE/tokens-$sale" >"$FLASHSALE_STATE/one-token"
for _ in $(seq 1 10000); do cat "$FLASHSALE_STATE/one-token"; done >"$FLASHSALE_STATE/many-tokens"
fire_all "$path" "$FLASHSALE_STATE/many-tokens" "$FLASHSALE_STATE/out-soldout"
is "$(count_of 410 "$FLASHSALE_STATE/out-soldout")" "10000" "10,000 more purchases all answer 410"
calls_after=$(redis_calls)
if [ "$calls_after" = "$calls_before" ]; then
	ok "they caused no Redis command (INFO commandstats)"
else
	not_ok "they caused no Redis command (INFO commandstats)" \
	    "$(printf '%s\n' "$calls_before" >"$FLASHSALE_STATE/c1"; printf '%s\n' "$calls_after" |
		diff "$FLASHSALE_STATE/c1" - | tr '\n' ' ')"
fi
is "$(fcgi_count)" "$fcgi_before" "they caused no FastCGI request (nginx access log)"

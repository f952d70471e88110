# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# Issue 33: an order exists only if a purchase handler made it. Mid-sale, a
# writer that reaches the order topic with the purchase handlers' own broker
# credentials (kcat as the principal flashsale-purchase: it may write
# orders, but it holds no order key) writes well-formed order
# messages for shoppers who never pressed Buy: one without a MAC, one with
# a wrong MAC, one with an honest message's MAC over altered bytes, and
# one with a correct MAC under an order key that a rotation removed. None
# becomes an order or takes a unit; each is a dead letter with its reason,
# counted by flashsale_consumer_unauthenticated_total, the alert
# FlashsaleForgedOrders fires, the replayer refuses them, and every honest
# 202 ends PENDING. The rotation on the way (docs/SECURITY.md): the
# consumer accepts both keys at once, the purchase handlers switch to the
# new one, the old one is removed. Before the MAC the consumer recorded
# the forgeries: they took the sale's last units and honest shoppers who
# were told 202 saw their orders end FAILED.

. "$top_srcdir/tests/integration/pipeline_lib.sh"

keys=$FLASHSALE_ORDER_KEYS_FILE
old=$(head -n 1 "$keys")
old_kid=${old%%:*}
new_kid=r$$
new="$new_kid:$(head -c 32 /dev/urandom | basenc --base64url -w0 | tr -d =)"
work=$FLASHSALE_STATE/forged-$$
mkdir -p "$work"

# set_keys LINE...: the order key file, written whole by a rename (0600).
set_keys() {
	(umask 077 && printf '%s\n' "$@" >"$keys.new") && mv -f "$keys.new" "$keys"
}

# forge [kcat -H ...]: the lines KEY<TAB>VALUE of standard input onto the
# order topic as kcat writes them as the purchase handlers' principal, with
# the headers given and no others.
forge() {
	kcat -F "$FLASHSALE_STATE/secrets/kafka-purchase.kcat" -P -b "$FLASHSALE_KAFKA_BROKERS" \
	    -t "$FLASHSALE_KAFKA_TOPIC" -K '\t' "$@" 2>/dev/null
}

# unauth REASON: the consumer's count of unauthenticated messages (GET /metrics).
unauth() {
	curl -s -m 10 "$FLASHSALE_ORIGIN_URL/metrics" |
		awk -v r="reason=\"$1\"" 'index($1, "flashsale_consumer_unauthenticated_total{") == 1 &&
		    index($1, r) > 0 { n += $2 } END { print n + 0 }'
}

# headers_of ORDER: the fs-kid and fs-mac headers of ORDER's message on the
# topic, "KID MAC" (kcat's %h: name=value,name=value).
headers_of() {
	fs_kcat -C -b "$FLASHSALE_KAFKA_BROKERS" -t "$FLASHSALE_KAFKA_TOPIC" -e -q -f '%h\t%s\n' 2>/dev/null |
		grep -F "\"orderId\":\"$1\"" | head -n 1 | cut -f 1 | tr ',' '\n' |
		sed -n 's/^fs-kid=//p; s/^fs-mac=//p' | tr '\n' ' ' | sed 's/ $//'
}

# The order id of a shopper's order in the sale (PostgreSQL).
order_of() { psql_q "SELECT id FROM orders WHERE sale_id = $sale AND user_id = '$1'"; }

check "prometheus: deploy/stack start prometheus (ready)" "$stack" start prometheus
prom=http://127.0.0.1:$((FLASHSALE_PORT_BASE + 9))
# The alert's increase() counts from a sample: Prometheus must have scraped
# the consumer's counter (at its value before the forgeries) before the
# first forgery, or a counter first seen at 1 never counts as an increase.
prom_scraped() {
	curl -s -m 5 "$prom/api/v1/query?query=flashsale_consumer_unauthenticated_total" |
		fs_json -q '.data.result[0].metric.__name__'
}
check "prometheus: it has scraped the consumer's count of unauthenticated messages" \
    p_until 30 flashsale_consumer_unauthenticated_total prom_scraped

set -- $(new_sale -5 8)
sale=$1 item=$2
path=$(purchase_path "$sale")
no_mac0=$(unauth no_mac) bad_mac0=$(unauth bad_mac) unknown0=$(unauth unknown_key)

# --- Honest shoppers first: 3 of the 8 units.
is "$(p_buy_all "$path" "h1-$sale" 3 "$work/h1")" "3" "3 honest purchases answered 202"
check "the consumer records them" consumer_caught_up 60
honest=$(order_of "h1-$sale-1")
set -- $(headers_of "$honest")
is "$#:${1:-}" "2:$old_kid" "an honest message carries fs-kid (the stack's key) and fs-mac"
honest_mac=${2:-}

# --- Forgeries, each for a shopper who never pressed Buy.
f1=$(p_uuid) f2=$(p_uuid) f3=$(p_uuid) f4=$(p_uuid)
printf '%s\t%s\n' "$item" "$(p_message "$f1" "$sale" "$item" "forger-1-$sale" "$(p_now_ms)")" | forge
printf '%s\t%s\n' "$item" "$(p_message "$f2" "$sale" "$item" "forger-2-$sale" "$(p_now_ms)")" |
	forge -H "fs-kid=$old_kid" -H "fs-mac=$(head -c 32 /dev/urandom | basenc --base64url -w0 | tr -d =)"
# The honest message's bytes with another order and shopper, under its own MAC.
fs_kcat -C -b "$FLASHSALE_KAFKA_BROKERS" -t "$FLASHSALE_KAFKA_TOPIC" -e -q -f '%s\n' 2>/dev/null |
	grep -F "\"orderId\":\"$honest\"" | head -n 1 |
	sed "s/$honest/$f3/; s/\"userId\":\"h1-$sale-1\"/\"userId\":\"forger-3-$sale\"/" >"$work/altered"
is "$(fs_json .userId <"$work/altered") $(fs_json .orderId <"$work/altered")" "forger-3-$sale $f3" \
    "the altered message: the honest one's bytes, another order and shopper"
printf '%s\t%s\n' "$item" "$(cat "$work/altered")" | forge -H "fs-kid=$old_kid" -H "fs-mac=$honest_mac"

# --- The rotation. 1: the consumer learns the new key (the old one still signs).
set_keys "$old" "$new"
check "rotation 1: the consumer restarts with both keys" "$stack" restart consumer
"$stack" stop consumer >/dev/null
is "$(p_buy_all "$path" "h2-$sale" 1 "$work/h2")" "1" "a purchase signed with the old key (consumer stopped)"
# 2: the purchase handlers sign with the new key.
set_keys "$new" "$old"
check "rotation 2: the handlers restart, the new key first" "$stack" restart handlers
is "$(p_buy_all "$path" "h3-$sale" 2 "$work/h3")" "2" "two purchases signed with the new key"
"$stack" start consumer >/dev/null
check "the consumer records the orders of both keys" consumer_caught_up 60
is "$(p_count "sale_id = $sale AND status = 'PENDING'")" "6" \
    "during the rotation both keys are accepted: 6 honest orders PENDING"
is "$(headers_of "$(order_of "h2-$sale-1")" | cut -d' ' -f1) $(headers_of "$(order_of "h3-$sale-1")" | cut -d' ' -f1)" \
    "$old_kid $new_kid" "the orders carry the old key id, then the new one"
# 3: once every message of the old key is recorded, the old key goes.
set_keys "$new"
check "rotation 3: the consumer restarts without the old key" "$stack" restart consumer
(umask 077 && printf '%s\n' "$old" >"$work/old.keys")
printf '%s\t%s\n' "$item" "$(p_message "$f4" "$sale" "$item" "forger-4-$sale" "$(p_now_ms)")" |
	FLASHSALE_ORDER_KEYS_FILE=$work/old.keys FLASHSALE_KAFKA_USER=flashsale-purchase \
	    FLASHSALE_KAFKA_PASSWORD_FILE=$FLASHSALE_STATE/secrets/kafka-purchase.password p_send
is "$(p_buy_all "$path" "h4-$sale" 2 "$work/h4")" "2" "the last two units: honest purchases answered 202"
check "the consumer catches up" consumer_caught_up 60

# --- No forged order, every honest 202 live.
is "$(p_count "sale_id = $sale") $(p_count "sale_id = $sale AND status = 'PENDING'")" "8 8" \
    "the 8 honest 202s are the sale's 8 orders, all PENDING"
is "$(p_count "user_id LIKE 'forger-%'") $(p_count "id IN ('$f1', '$f2', '$f3', '$f4')")" "0 0" \
    "no forged message became an order"
is "$(p_sold "$item") $(p_stock "$sale" "$item") $(redis ZCARD "fs:{$sale}:unconfirmed")" "8 0 0" \
    "sold 8, no unit left in Redis, every hold confirmed"
is "$(p_dead_letters NO_MAC "$f1") $(p_dead_letters BAD_MAC "$f2") $(p_dead_letters BAD_MAC "$f3") $(p_dead_letters UNKNOWN_KEY "$f4")" \
    "1 1 1 1" "each forgery is a dead letter with its reason (NO_MAC, BAD_MAC, BAD_MAC, UNKNOWN_KEY)"
is "$(($(unauth no_mac) - no_mac0)) $(($(unauth bad_mac) - bad_mac0)) $(($(unauth unknown_key) - unknown0))" \
    "1 2 1" "flashsale_consumer_unauthenticated_total counts the 4 by reason"
replay=$(dlq_replay --sale "$sale")
is "$(printf '%s\n' "$replay" | tail -n 1)" "dead letters: 4 (unauthenticated 4)" \
    "dlq replay: the 4 forgeries are unauthenticated, none replayed"
is "$(p_count "sale_id = $sale") $(p_stock "$sale" "$item")" "8 0" "after the replay: still 8 orders, no unit taken"
check "reconcile --all --check holds" admin reconcile --all --check
# The state of the alert FlashsaleForgedOrders in Prometheus ("" when it is not active).
forged_alert() {
	curl -s -m 5 "$prom/api/v1/alerts" | fs_json -l '.data.alerts[]' |
		fs_json -l -w .labels.alertname=FlashsaleForgedOrders .state | head -n 1
}
check "prometheus: the alert FlashsaleForgedOrders fires" p_until 60 firing forged_alert
check "prometheus: deploy/stack stop prometheus" "$stack" stop prometheus
rm -rf "$work"

# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# Kafka or Redis stopped mid-sale: purchases answer 503 with Retry-After
# and keep no unit; once the part is back the same handler processes sell
# again, without a restart.

set -- $(new_sale -5 10)
sale=$1 item=$2
path=$(purchase_path "$sale")
pids_before=$(sort <"$FLASHSALE_STATE/run/flashsale-purchase.pid" | tr '\n' ' ')

# retry_until STATUS PATH TOKEN: asks up to 30 times, like a shopper would.
retry_until() {
	n=0
	while [ $n -lt 30 ]; do
		ans=$(http POST "$2" "$3")
		[ "${ans%% *}" = "$1" ] && { echo "$ans"; return 0; }
		n=$((n + 1))
	done
	echo "$ans"
	return 1
}

"$stack" stop kafka >/dev/null
tok=$(admin token mint --user "k-$sale")
hdr=$(curl -s -D - -o "$FLASHSALE_STATE/body" -X POST -H "Authorization: Bearer $tok" \
	"$FLASHSALE_ORIGIN_URL$path" | tr -d '\r')
is "$(printf '%s' "$hdr" | head -n 1 | cut -d' ' -f2)" "503" "Kafka down: the purchase answers 503"
is "$(printf '%s' "$hdr" | sed -n 's/^Retry-After: //Ip')" "1" "Kafka down: with Retry-After"
is "$(json_get "$(cat "$FLASHSALE_STATE/body")" error)" "TRY_AGAIN" "Kafka down: error TRY_AGAIN"
is "$(redis GET "fs:{$sale}:stock:$item")" "10" "Kafka down: the unit is back in Redis"
is "$(redis HLEN "fs:{$sale}:holders")" "0" "Kafka down: no hold is left"
"$stack" start kafka >/dev/null
ans=$(retry_until 202 "$path" "$tok")
is "${ans%% *}" "202" "Kafka back: the purchase succeeds"
is "$(redis GET "fs:{$sale}:stock:$item")" "9" "Kafka back: one unit taken"

"$stack" stop redis >/dev/null
tok2=$(admin token mint --user "r-$sale")
ans=$(http POST "$path" "$tok2")
is "${ans%% *}" "503" "Redis down: the purchase answers 503"
"$stack" start redis >/dev/null
is "$(redis GET "fs:{$sale}:stock:$item")" "9" "Redis back: its stock survived the restart"
ans=$(retry_until 202 "$path" "$tok2")
is "${ans%% *}" "202" "Redis back: the purchase succeeds"
is "$(redis GET "fs:{$sale}:stock:$item")" "8" "Redis back: one unit taken"
is "$(sort <"$FLASHSALE_STATE/run/flashsale-purchase.pid" | tr '\n' ' ')" "$pids_before" \
    "the same handler processes served throughout"

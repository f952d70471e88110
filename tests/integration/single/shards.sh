# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# A hot item spread over three stock keys ("shards": 3, lib/stock.c): a
# burst of thousands of distinct shoppers plus repeated ones takes exactly
# the units, no shopper twice, no unit left behind in a shard while others
# sold out; the sold-out gate closes once every shard is empty and reopens
# when a unit comes back; sale show and sale watch sum the shards.

sh_units=300
sh_file=$FLASHSALE_STATE/sale-shards-$$.json
cat >"$sh_file" <<JSON
{"name":"sharded sale","startsInSeconds":-5,"durationSeconds":3600,
 "items":[{"name":"Hotphone","priceMinor":1990000,"currency":"VND","quantity":$sh_units,"shards":3}]}
JSON
refuse "a sale file with 17 shards is refused" admin sale create /dev/stdin <<JSON
{"name":"too many","startsInSeconds":60,"durationSeconds":60,
 "items":[{"name":"X","priceMinor":1,"currency":"VND","quantity":5,"shards":17}]}
JSON
set -- $(sale_created "$sh_file")
sh_sale=$1 sh_item=$2
sh_warm=$(admin sale warm "$sh_sale")
case $(printf '%s\n' "$sh_warm" | grep "^item $sh_item: ") in
"item $sh_item: 3 shards: {$sh_sale} slot "*" on "*", {$sh_sale.1} slot "*" on "*", {$sh_sale.2} slot "*" on "*)
	ok "sale warm says where the three shards are (hash tag, slot, master)" ;;
*) not_ok "sale warm says where the three shards are (hash tag, slot, master)" "$sh_warm" ;;
esac
# shard_left: the units left of each shard, space-separated.
shard_left() {
	printf '%s %s %s' "$(redis GET "fs:{$sh_sale}:stock:$sh_item")" \
	    "$(redis GET "fs:{$sh_sale.1}:stock:$sh_item")" "$(redis GET "fs:{$sh_sale.2}:stock:$sh_item")"
}
is "$(shard_left)" "100 100 100" "warm splits the 300 units into three shards of 100"

# --- The burst: 3,000 distinct shoppers, 1,000 of them twice or three times.
sh_path=$(purchase_path "$sh_sale")
admin token mint --user "sh$sh_sale" --count 3000 >"$FLASHSALE_STATE/sh-tokens"
{
	cat "$FLASHSALE_STATE/sh-tokens"
	head -n 1000 "$FLASHSALE_STATE/sh-tokens"
	head -n 500 "$FLASHSALE_STATE/sh-tokens"
} | shuf >"$FLASHSALE_STATE/sh-burst"
fire_all "$sh_path" "$FLASHSALE_STATE/sh-burst" "$FLASHSALE_STATE/sh-out" 200
is "$(count_of 202 "$FLASHSALE_STATE/sh-out")" "$sh_units" "burst: exactly the 300 units get 202"
# A 409 is a promise (issue 36): a shopper's second request that meets its
# first still on its way to the broker is told 503 (try again) instead;
# the first gets the 202.
sh_early=$(awk 'NR == FNR { if ($1 == 202) won[$2] = 1; next } $1 == 503 && ($2 in won) { n++ }
	END { print n + 0 }' "$FLASHSALE_STATE/sh-out" "$FLASHSALE_STATE/sh-out")
diag "burst: $(count_of 503 "$FLASHSALE_STATE/sh-out") second requests met their first on its way to the broker (503)"
is "$(($(count_of 410 "$FLASHSALE_STATE/sh-out") + $(count_of 409 "$FLASHSALE_STATE/sh-out") + sh_early)) $(count_of 503 "$FLASHSALE_STATE/sh-out")" \
    "$((4500 - sh_units)) $sh_early" \
    "burst: every other request gets 410 or 409, or 503 when it met its shopper's 202 on its way"
is "$(shard_left)" "0 0 0" "no unit is left in any shard (undersell 0)"
sh_msgs=$(sale_messages "$sh_sale")
is "$(printf '%s\n' "$sh_msgs" | grep -c .)" "$sh_units" "the topic holds exactly 300 orders"
is "$(json_get "$sh_msgs" userId | sort -u | wc -l | tr -d ' ')" \
    "$sh_units" "for 300 distinct shoppers: nobody got a second unit"

# --- The gate: closed (nginx's marker) once every shard is empty.
sh_first=$(printf '%s\n' "$sh_msgs" | head -n 1)
sh_winner=$(json_get "$sh_first" userId)
sh_order=$(json_get "$sh_first" orderId)
sh_tok=$(awk -v u="$sh_winner" '$1 == u { print $2 }' "$FLASHSALE_STATE/sh-tokens")
sh_late=$(admin token mint --user "sh-late-$sh_sale")
sh_by=""
sh_deadline=$(($(date +%s) + 10))
while [ "$(date +%s)" -le "$sh_deadline" ]; do
	sh_by=$(curl -s -o /dev/null -D - -X POST -H "Authorization: Bearer $sh_late" \
	    "$FLASHSALE_ORIGIN_URL$sh_path" | tr -d '\r' | sed -n 's/^X-Flashsale-Answered-By: //Ip')
	[ "$sh_by" = nginx ] && break
done
is "$sh_by" "nginx" "sold out on every shard: nginx answers 410 from the marker"
consumer_caught_up
is "$(admin sale show "$sh_sale" | awk -v i="$sh_item" '$1 == i { print $3, $4, $7, $8 }')" \
    "300 300 0 300" "sale show: quantity 300, sold 300, Redis left 0 (all shards), holds 300"

# --- A cancel returns the unit to its shard and reopens the gate.
sh_ans=$(http POST "/api/flash-sales/orders/$sh_order/cancel" "$sh_tok")
is "$(json_get "${sh_ans#* }" status)" "CANCELLED" "a winner cancels"
is "$(shard_left | tr ' ' '\n' | awk '{ s += $1 } END { print s }')" "1" \
    "the unit is back in one shard"
buy_until "$sh_path" "$sh_late"
is "$bu_st" "202" "the gate reopens: a late shopper gets the returned unit"
is "$(shard_left)" "0 0 0" "and every shard is empty again"
sh_again=$(http POST "$sh_path" "$sh_tok" | cut -d' ' -f1)
is "$sh_again" "410" "the shopper who cancelled meets the closed gate again"
consumer_caught_up
sh_frame=$(admin sale watch "$sh_sale" --once --origin "$FLASHSALE_ORIGIN_URL")
is "$(printf '%s\n' "$sh_frame" | awk -v i="$sh_item" '$1 == i { print $1, $(NF - 5), $(NF - 4), $(NF - 3) }')" \
    "$sh_item 300 0 300" "sale watch: quantity 300, left 0 over the shards, held 300"

# --- A dry home shard sends its shoppers to the others, deterministically:
# three units, one a shard, and four shoppers whose home is place 0 (FNV-1a
# of the user id mod 3, as lib/stock.c computes it).
home_of() { # USER PLACES
	ho_h=2166136261
	for ho_b in $(printf '%s' "$1" | od -An -tu1); do
		ho_h=$((((ho_h ^ ho_b) * 16777619) & 4294967295))
	done
	echo $((ho_h % $2))
}
other_shard_total() { metric_total flashsale_reservations_other_shard_total; }
cat >"$sh_file" <<JSON
{"name":"dry shards","startsInSeconds":-5,"durationSeconds":3600,
 "items":[{"name":"Hotphone","priceMinor":1990000,"currency":"VND","quantity":3,"shards":3}]}
JSON
set -- $(sale_created "$sh_file")
sh_sale=$1 sh_item=$2
admin sale warm "$sh_sale" >/dev/null
sh_path=$(purchase_path "$sh_sale")
is "$(shard_left)" "1 1 1" "three units, one in each shard"
sh_home0=""
sh_i=0
while [ "$(printf '%s' "$sh_home0" | wc -w)" -lt 4 ] && [ "$sh_i" -lt 200 ]; do
	sh_i=$((sh_i + 1))
	[ "$(home_of "dry$sh_sale-$sh_i" 3)" = 0 ] && sh_home0="$sh_home0 dry$sh_sale-$sh_i"
done
sh_before=$(other_shard_total)
sh_st=""
sh_left=""
for sh_u in $sh_home0; do
	sh_st="$sh_st $(http POST "$sh_path" "$(admin token mint --user "$sh_u")" | cut -d' ' -f1)"
	sh_left="$sh_left/$(shard_left | tr ' ' ,)"
done
is "$sh_st" " 202 202 202 410" "four shoppers of one home shard: three 202s (two from the other shards), then 410"
is "$sh_left" "/0,1,1/0,0,1/0,0,0/0,0,0" "the first took its home shard's unit, the next two the others'"
is "$(($(other_shard_total) - sh_before))" "2" "two reservations counted as served by another shard"

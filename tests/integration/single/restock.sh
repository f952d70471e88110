# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# A unit that comes back (here: a cancel) clears the sold-out answers of
# nginx and of every purchase process at once: purchases resume within a
# second, with no restart and no operator.

set -- $(new_sale -5 2)
sale=$1 item=$2
path=$(purchase_path "$sale")
t1=$(admin token mint --user "rs1-$sale")
t2=$(admin token mint --user "rs2-$sale")
t3=$(admin token mint --user "rs3-$sale")
first=$(http POST "$path" "$t1")
is "${first%% *} $(http POST "$path" "$t2" | cut -d' ' -f1)" "202 202" "the two units sell"
oid=$(json_get "${first#* }" orderId)
deadline=$(($(date +%s) + 10))
by=""
while [ "$(date +%s)" -le "$deadline" ]; do
	by=$(curl -s -o /dev/null -D - -X POST -H "Authorization: Bearer $t3" "$FLASHSALE_ORIGIN_URL$path" |
		tr -d '\r' | sed -n 's/^X-Flashsale-Answered-By: //Ip')
	[ "$by" = nginx ] && break
done
is "$by" "nginx" "sold out: nginx answers 410 from the marker"
consumer_caught_up
ans=$(http POST "/api/flash-sales/orders/$oid/cancel" "$t1")
t0=$(date +%s%N)
is "$(json_get "${ans#* }" status)" "CANCELLED" "the first shopper cancels"
is "$(redis GET "fs:{$sale}:stock:$item")" "1" "the unit is back in Redis"
# A shopper presses Buy again and again (bounded): how long until a 202?
buy_until "$path" "$t3"
st=$bu_st n=$buy_tries
ms=$((($(date +%s%N) - t0) / 1000000))
is "$st" "202" "purchases resume after the cancel"
diag "a purchase succeeded $ms ms after the cancel answered ($n sold-out answers before it)"
if [ "$ms" -le 2500 ]; then ok "they resume within the marker cache's second (+ slack): $ms ms"; else
	not_ok "they resume within the marker cache's second (+ slack)" "took $ms ms"
fi
# shellcheck disable=SC2010 # the markers are named by item id
is "$(ls "$FLASHSALE_SOLDOUT_DIR" | grep -c "^$item\$")" "1" \
    "the last unit sold again: the marker is back"

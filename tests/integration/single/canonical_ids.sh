# shellcheck shell=sh disable=SC2046 # set -- $(...) splits ids into words on purpose
# One spelling per id. Leading zeros (007), encoded digits (%30%37) and ids
# of 19 digits are refused with 404 by nginx itself, before the sold-out
# marker, a rate limit or FastCGI could be consulted; the handlers' parser
# refuses the same forms, so no spelling reaches a unit another way.

fcgi_lines() { grep -c "upstream=unix:.*flashsale-$1" "$FLASHSALE_STATE/log/nginx-access.log"; }

set -- $(new_sale -5 1)
ci_sale=$1 ci_item=$2
ci_path=$(purchase_path "$ci_sale")
ci_query=${ci_path#*\?}
ci_tok=$(admin token mint --user "canon-$ci_sale")
ci_tok2=$(admin token mint --user "canon2-$ci_sale")
fcgi_before=$(fcgi_lines purchase)
ci_encoded=$(printf '%s' "$ci_item" | sed 's/./%3&/g')
for spelling in "0$ci_item" "00$ci_item" "%30$ci_item" "$ci_encoded" "1$(printf '%018d' "$ci_item")"; do
	ans=$(curl -s -D "$FLASHSALE_STATE/ci-head" -o "$FLASHSALE_STATE/ci-body" -w '%{http_code}' \
	    -X POST -H "Authorization: Bearer $ci_tok" \
	    "$FLASHSALE_ORIGIN_URL/api/flash-sales/items/$spelling/purchase?$ci_query")
	by=$(tr -d '\r' <"$FLASHSALE_STATE/ci-head" | sed -n 's/^X-Flashsale-Answered-By: //Ip')
	case "$spelling" in "$ci_encoded") # the canonical digits, percent-encoded: the item itself
		is "$ans $(json_get "$(cat "$FLASHSALE_STATE/ci-body")" status)" "202 PENDING" \
		    "the item's own digits percent-encoded are the item (nginx decodes first)"
		continue ;;
	esac
	is "$ans $(json_get "$(cat "$FLASHSALE_STATE/ci-body")" error) $by" "404 ITEM_NOT_FOUND nginx" \
	    "item id spelled $spelling: 404 from nginx itself"
done
is "$(fcgi_lines purchase)" "$((fcgi_before + 1))" "only the canonical purchase reached FastCGI"
is "$(redis GET "fs:{$ci_sale}:stock:$ci_item")" "0" "the one unit was taken once"
# Sold out now: the marker answers the canonical spelling, and no other
# spelling gets past it to the handler.
deadline=$(($(date +%s) + 10))
until [ "$(curl -s -o /dev/null -D - -X POST -H "Authorization: Bearer $ci_tok2" \
    "$FLASHSALE_ORIGIN_URL$ci_path" | tr -d '\r' | sed -n 's/^X-Flashsale-Answered-By: //Ip')" = nginx ]; do
	[ "$(date +%s)" -ge "$deadline" ] && break
done
fcgi_before=$(fcgi_lines purchase)
ans=$(http POST "/api/flash-sales/items/0$ci_item/purchase?$ci_query" "$ci_tok2")
is "${ans%% *} $(json_get "${ans#* }" error)" "404 ITEM_NOT_FOUND" "a sold-out item spelled 0$ci_item: 404"
ans=$(http POST "$ci_path" "$ci_tok2")
is "${ans%% *} $(json_get "${ans#* }" error)" "410 SOLD_OUT" "spelled canonically: 410"
is "$(fcgi_lines purchase)" "$fcgi_before" "neither reached the purchase handler"

fcgi_before=$(fcgi_lines sale)
ans=$(http GET "/api/flash-sales/sales/0$ci_sale")
is "${ans%% *} $(json_get "${ans#* }" error)" "404 SALE_NOT_FOUND" "sale id spelled 0$ci_sale: 404"
ans=$(http GET "/api/flash-sales/sales/0$ci_sale/reveal")
is "${ans%% *}" "404" "its reveal document too"
is "$(fcgi_lines sale)" "$fcgi_before" "neither reached the sale handler"
refuse "the admin tool refuses sale 0$ci_sale" admin sale show "0$ci_sale"

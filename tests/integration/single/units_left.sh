# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# The units left document of a sale, GET /api/flash-sales/sales/{id}/stock:
# the live count from Redis (held units count as taken), exact after every
# purchase, cancel and expiry; cached by the edge about a second, so a
# crowd polling it costs the origin about one request a second; bad input
# refused with a clear 4xx that changes nothing.

ul_origin=$FLASHSALE_ORIGIN_URL
ul_edge=$FLASHSALE_EDGE_URL
ul_alog=$FLASHSALE_STATE/log/nginx-access.log

# ul_doc SALE [BASE]: "STATUS BODY-WITHOUT-AT" of the document (origin by
# default); its "at" member goes to the file ul-at (ul_doc runs in $(...)).
ul_doc() {
	ul_ans=$(http GET "/api/flash-sales/sales/$1/stock" "" "${2:-$ul_origin}")
	ul_body=${ul_ans#* }
	json_get "$ul_body" at >"$FLASHSALE_STATE/ul-at"
	printf '%s %s' "${ul_ans%% *}" "${ul_body%,\"at\":*}"
}
# ul_expect SALE ITEM QUANTITY LEFT SOLDOUT: the exact document expected.
ul_expect() {
	printf '200 {"saleId":%s,"items":[{"itemId":%s,"quantity":%s,"left":%s,"soldOut":%s}]' \
	    "$1" "$2" "$3" "$4" "$5"
}
# ul_edge_left_is SALE LEFT: polls the edge (bounded: 5 s) until its
# document says LEFT; the milliseconds it took into ul_ms, 1 if never.
ul_edge_left_is() {
	ul_t0=$(date +%s%N)
	ul_deadline=$((ul_t0 / 1000000 + 5000))
	while :; do
		ul_ans=$(http GET "/api/flash-sales/sales/$1/stock" "" "$ul_edge")
		ul_ms=$((($(date +%s%N) - ul_t0) / 1000000))
		[ "$(json_get "${ul_ans#* }" '.items[0].left')" = "$2" ] && return 0
		[ $((ul_t0 / 1000000 + ul_ms)) -ge "$ul_deadline" ] && return 1
		sleep 0.1
	done
}
# ul_origin_count SALE FROM: origin requests for the document in the access log after line FROM.
ul_origin_count() {
	tail -n +"$(($2 + 1))" "$ul_alog" | grep -c "\"GET /api/flash-sales/sales/$1/stock HTTP"
}

# --- The document, exact, from the origin.
set -- $(new_sale -5 3)
ul_sale=$1 ul_item=$2
ul_path=$(purchase_path "$ul_sale")
is "$(ul_doc "$ul_sale")" "$(ul_expect "$ul_sale" "$ul_item" 3 3 false)" \
    "units left: quantity 3, 3 left, not sold out"
ul_now=$(date -u +%Y-%m-%dT%H:%M)
ul_at=$(cat "$FLASHSALE_STATE/ul-at")
case "$ul_at" in
"$ul_now"*Z | "$(date -u -d '-1 min' +%Y-%m-%dT%H:%M)"*Z) ok "units left: at is the server's time ($ul_at)" ;;
*) not_ok "units left: at is the server's time" "at $ul_at, now $ul_now" ;;
esac
ul_h=$(curl -s -o /dev/null -D - "$ul_origin/api/flash-sales/sales/$ul_sale/stock" | tr -d '\r')
is "$(printf '%s\n' "$ul_h" | sed -n 's/^Cache-Control: //Ip')" "public, max-age=1, s-maxage=1" \
    "units left: Cache-Control public, max-age=1"
case "$(printf '%s\n' "$ul_h" | sed -n 's/^Content-Type: //Ip')" in
application/json*) ok "units left: JSON" ;;
*) not_ok "units left: JSON" "$ul_h" ;;
esac

# --- Every purchase takes exactly one; a refused one takes none.
ul_t1=$(admin token mint --user "ul1-$ul_sale")
ul_t2=$(admin token mint --user "ul2-$ul_sale")
ul_t3=$(admin token mint --user "ul3-$ul_sale")
ul_t4=$(admin token mint --user "ul4-$ul_sale")
ul_first=$(http POST "$ul_path" "$ul_t1")
ul_oid1=$(json_get "${ul_first#* }" orderId)
is "${ul_first%% *} $(ul_doc "$ul_sale")" "202 $(ul_expect "$ul_sale" "$ul_item" 3 2 false)" \
    "one unit bought: 2 left (the hold counts as taken)"
ul_second=$(http POST "$ul_path" "$ul_t2")
ul_oid2=$(json_get "${ul_second#* }" orderId)
is "${ul_second%% *} $(ul_doc "$ul_sale")" "202 $(ul_expect "$ul_sale" "$ul_item" 3 1 false)" \
    "a second unit bought: 1 left"
is "$(http POST "$ul_path" "$ul_t1" | cut -d' ' -f1) $(ul_doc "$ul_sale")" \
    "409 $(ul_expect "$ul_sale" "$ul_item" 3 1 false)" "a second purchase of one shopper (409) takes none"
is "$(http POST "$ul_path" "$ul_t3" | cut -d' ' -f1) $(ul_doc "$ul_sale")" \
    "202 $(ul_expect "$ul_sale" "$ul_item" 3 0 true)" "the last unit bought: 0 left, sold out"
is "$(http POST "$ul_path" "$ul_t4" | cut -d' ' -f1) $(ul_doc "$ul_sale")" \
    "410 $(ul_expect "$ul_sale" "$ul_item" 3 0 true)" "a purchase after that (410) leaves it at 0"
is "$(redis GET "fs:{$ul_sale}:stock:$ul_item")" "0" "the document says what Redis has"

# --- Units that come back are counted again: a cancel, then an expiry.
consumer_caught_up
ul_ans=$(http POST "/api/flash-sales/orders/$ul_oid1/cancel" "$ul_t1")
is "$(json_get "${ul_ans#* }" status) $(ul_doc "$ul_sale")" \
    "CANCELLED $(ul_expect "$ul_sale" "$ul_item" 3 1 false)" "a cancel: 1 left again, not sold out"
psql_q "UPDATE orders SET expires_at = now() - interval '1 second' WHERE id = '$ul_oid2'" >/dev/null
"$FLASHSALE_BINDIR/flashsale-expire" >/dev/null 2>>"$FLASHSALE_STATE/log/expire-tests.log"
is "$(psql_q "SELECT status FROM orders WHERE id = '$ul_oid2'") $(ul_doc "$ul_sale")" \
    "EXPIRED $(ul_expect "$ul_sale" "$ul_item" 3 2 false)" "an expiry: 2 left"

# --- Through the edge: the same figures, at most about two seconds late.
ul_edge_left_is "$ul_sale" 2
is "$?" 0 "the edge's document says 2 left"
is "$(http POST "$ul_path" "$ul_t4" | cut -d' ' -f1)" 202 "another unit bought"
if ul_edge_left_is "$ul_sale" 1; then
	if [ "$ul_ms" -le 2500 ]; then ok "the edge shows it within 2.5 s ($ul_ms ms)"; else
		not_ok "the edge shows it within 2.5 s" "$ul_ms ms"
	fi
else
	not_ok "the edge shows 1 left after the purchase" "still: $ul_ans"
fi
ul_h=$(curl -s -o /dev/null -D - "$ul_edge/api/flash-sales/sales/$ul_sale/stock?bust=$$" | tr -d '\r')
is "$(printf '%s\n' "$ul_h" | sed -n 's/^X-Cache: //Ip')" "HIT" "a query string does not bust the edge's copy"

# --- A crowd polling through the edge: a bounded loopback burst (rounds
# of 200 requests, 50 at once, for 5 seconds, at most 100 rounds) costs the
# origin about one request a second.
# ul_burst_cfg COUNT: a curl config of COUNT GETs of the document through the edge.
ul_burst_cfg() {
	ul_i=0
	while [ $ul_i -lt "$1" ]; do
		[ $ul_i -gt 0 ] && echo next
		printf 'url = "%s/api/flash-sales/sales/%s/stock"\noutput = "/dev/null"\nwrite-out = "%%{http_code}\\n"\n' \
		    "$ul_edge" "$ul_sale"
		ul_i=$((ul_i + 1))
	done >"$FLASHSALE_STATE/ul-burst.cfg"
}
ul_burst_cfg 200
: >"$FLASHSALE_STATE/ul-burst.out"
ul_before=$(wc -l <"$ul_alog")
ul_t0=$(date +%s%N)
ul_rounds=0 ul_took=0
while [ "$ul_took" -lt 5000 ] && [ $ul_rounds -lt 100 ]; do
	curl -s -Z --parallel-max 50 -K "$FLASHSALE_STATE/ul-burst.cfg" >>"$FLASHSALE_STATE/ul-burst.out" 2>/dev/null
	ul_rounds=$((ul_rounds + 1))
	ul_took=$((($(date +%s%N) - ul_t0) / 1000000))
done
ul_n=$(ul_origin_count "$ul_sale" "$ul_before")
ul_total=$((ul_rounds * 200))
is "$(grep -c '^200$' "$FLASHSALE_STATE/ul-burst.out")" "$ul_total" "the burst's $ul_total requests all answer 200"
ul_milli=$((ul_n * 1000000 / ul_took))
diag "units left burst: $ul_total requests through the edge in $ul_took ms" \
    "($((ul_total * 1000 / ul_took)) per second): $ul_n origin requests," \
    "$((ul_milli / 1000)).$(printf '%03d' $((ul_milli % 1000))) per second"
if [ "$ul_n" -ge 1 ] && [ "$ul_n" -le $(((ul_took + 999) / 1000 + 2)) ]; then
	ok "the origin saw $ul_n request(s) in $ul_took ms: about one a second"
else
	not_ok "the origin sees about one request a second" "$ul_n requests in $ul_took ms"
fi
# And 200 within one instant cost at most a couple.
ul_before=$(wc -l <"$ul_alog")
ul_t0=$(date +%s%N)
curl -s -Z --parallel-max 200 -K "$FLASHSALE_STATE/ul-burst.cfg" >"$FLASHSALE_STATE/ul-burst.out" 2>/dev/null
ul_took=$((($(date +%s%N) - ul_t0) / 1000000))
ul_n=$(ul_origin_count "$ul_sale" "$ul_before")
is "$(grep -c '^200$' "$FLASHSALE_STATE/ul-burst.out")" 200 "200 requests at once all answer 200"
if [ "$ul_took" -lt 1000 ] && [ "$ul_n" -le 2 ]; then
	ok "200 requests within a second ($ul_took ms) cost the origin $ul_n"
elif [ "$ul_n" -le $(((ul_took + 999) / 1000 + 1)) ]; then
	ok "200 requests in $ul_took ms cost the origin $ul_n"
else
	not_ok "200 requests within a second cost the origin at most a couple" "$ul_n in $ul_took ms"
fi

# --- A sale not in Redis (not warmed yet) counts from PostgreSQL.
printf '{"name":"ul cold","startsInSeconds":60,"durationSeconds":600,"items":[{"name":"a","priceMinor":1,"currency":"VND","quantity":4}]}' \
    >"$FLASHSALE_STATE/ul-cold.json"
ul_ids=$(admin sale create "$FLASHSALE_STATE/ul-cold.json")
ul_cold=$(json_get "$ul_ids" saleId)
ul_ci=$(json_get "$ul_ids" '.itemIds[0]')
is "$(ul_doc "$ul_cold")" "$(ul_expect "$ul_cold" "$ul_ci" 4 4 false)" "a sale not yet in Redis: PostgreSQL's count"

# --- Sharded items add up their shards; an item of no units is sold out.
printf '{"name":"ul sharded","startsInSeconds":-5,"durationSeconds":600,"items":[{"name":"a","priceMinor":1,"currency":"VND","quantity":10,"shards":2},{"name":"b","priceMinor":1,"currency":"VND","quantity":0}]}' \
    >"$FLASHSALE_STATE/ul-sharded.json"
ul_ids=$(admin sale create "$FLASHSALE_STATE/ul-sharded.json")
ul_s2=$(json_get "$ul_ids" saleId)
ul_a=$(json_get "$ul_ids" '.itemIds[0]')
ul_b=$(json_get "$ul_ids" '.itemIds[1]')
ul_two="200 {\"saleId\":$ul_s2,\"items\":[{\"itemId\":$ul_a,\"quantity\":10,\"left\":%s,\"soldOut\":false},{\"itemId\":$ul_b,\"quantity\":0,\"left\":0,\"soldOut\":true}]"
admin sale warm "$ul_s2" >/dev/null
# shellcheck disable=SC2059 # ul_two is the format, the test's own
is "$(ul_doc "$ul_s2")" "$(printf "$ul_two" 10)" "an item spread over 2 shards: 10 left"
ul_p2=$(purchase_path "$ul_s2" "$ul_a")
ul_bought=0
for ul_u in a b c; do
	[ "$(http POST "$ul_p2" "$(admin token mint --user "ul-$ul_u-$ul_s2")" | cut -d' ' -f1)" = 202 ] &&
		ul_bought=$((ul_bought + 1))
done
# shellcheck disable=SC2059 # ul_two is the format, the test's own
is "$ul_bought $(ul_doc "$ul_s2")" "3 $(printf "$ul_two" 7)" \
    "an item spread over 2 shards: 3 bought, 7 left (the shards summed); 0 units: sold out"

# --- Bad input: a clear 4xx, through the origin and the edge, nothing changed.
ul_left_before=$(redis GET "fs:{$ul_sale}:stock:$ul_item")
for ul_base in "$ul_origin" "$ul_edge"; do
	for ul_bad in "/api/flash-sales/sales/abc/stock" "/api/flash-sales/sales/0/stock" \
	    "/api/flash-sales/sales/987654321/stock" "/api/flash-sales/sales/$ul_sale/stocks" \
	    "/api/flash-sales/sales/$ul_sale/stock/1" "/api/flash-sales/sales/-1/stock" \
	    "/api/flash-sales/sales/1234567890123456789012/stock"; do
		ul_ans=$(http GET "$ul_bad" "" "$ul_base")
		is "${ul_ans%% *} $(json_get "${ul_ans#* }" error)" "404 SALE_NOT_FOUND" "GET $ul_bad: 404 SALE_NOT_FOUND (${ul_base##*:})"
	done
	ul_ans=$(http POST "/api/flash-sales/sales/$ul_sale/stock" "" "$ul_base")
	is "${ul_ans%% *} $(json_get "${ul_ans#* }" error)" "405 METHOD_NOT_ALLOWED" "POST to the document: 405 (${ul_base##*:})"
done
is "$(redis GET "fs:{$ul_sale}:stock:$ul_item")" "$ul_left_before" "the refused requests changed nothing"

# --- The page in Chromium (tests/browser/shop.test.mjs, units): "10% sold",
# "13% sold" after its own purchase, "Only 16 left", then "100% sold" for the
# page that holds a unit and "Sold out" for one that holds none, live.
set -- $(new_sale -5 30)
ul_bsale=$1 ul_bitem=$2
ul_path=$(purchase_path "$ul_bsale")
for ul_u in 1 2 3; do
	http POST "$ul_path" "$(admin token mint --user "ul-pre$ul_u-$ul_bsale")" >/dev/null
done
is "$(ul_doc "$ul_bsale")" "$(ul_expect "$ul_bsale" "$ul_bitem" 30 27 false)" "the page's sale: 3 of 30 sold"
ul_toks=""
ul_i=0
while [ $ul_i -lt 26 ]; do
	ul_toks="$ul_toks $(admin token mint --user "ul-api$ul_i-$ul_bsale")"
	ul_i=$((ul_i + 1))
done
if ! command -v node >/dev/null 2>&1 || [ ! -x /usr/bin/chromium ]; then
	not_ok "units page: node and /usr/bin/chromium are installed (deploy/install-deps)"
elif [ ! -f "$top_srcdir/tests/browser/node_modules/playwright-core/package.json" ]; then
	ok "units page # SKIP playwright-core is not installed in tests/browser (deploy/install-deps)"
else
	FS_TEST_UNITS_SALE=$ul_bsale FS_TEST_UNITS_ITEM=$ul_bitem \
	    FS_TEST_UNITS_TOKEN=$(admin token mint --user "ul-page-$ul_bsale") FS_TEST_UNITS_TOKENS=$ul_toks \
	    timeout 120 node "$top_srcdir/tests/browser/shop.test.mjs" >"$FLASHSALE_STATE/units.tap" 2>&1
	ul_rc=$?
	while IFS= read -r ul_line; do
		case $ul_line in
		"ok - "*) ok "units page: ${ul_line#ok - }" ;;
		"not ok - "*) not_ok "units page: ${ul_line#not ok - }" ;;
		*) diag "  ${ul_line#\# }" ;;
		esac
	done <"$FLASHSALE_STATE/units.tap"
	if [ "$ul_rc" -ne 0 ] && ! grep -q '^not ok - ' "$FLASHSALE_STATE/units.tap"; then
		not_ok "units page: the browser program ended cleanly" "exit status $ul_rc"
	fi
	is "$(ul_doc "$ul_bsale")" "$(ul_expect "$ul_bsale" "$ul_bitem" 30 0 true)" "after the page's run: 0 of 30 left"
fi

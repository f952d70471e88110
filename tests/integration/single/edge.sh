# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# The edge (Varnish) and the sale's public documents: what the origin
# answers and how it may be cached, the reveal at the start instant, and
# the herd of page loads that costs the origin a handful of requests.

edge=$FLASHSALE_EDGE_URL
alog=$FLASHSALE_STATE/log/nginx-access.log

# headers PATH [CURL ARGS]: the response headers through the edge, one per line.
headers() {
	p=$1
	shift
	curl -s -o /dev/null -D - "$@" "$edge$p" | tr -d '\r'
}
# herd OUT COUNT PATH...: COUNT rounds of GETs of every PATH through the
# edge, up to 200 at once; OUT gets one status line per request.
herd() {
	out=$1 count=$2
	shift 2
	i=0
	while [ "$i" -lt "$count" ]; do
		for p in "$@"; do
			[ "$i$p" = "0$1" ] || echo next
			printf 'url = "%s%s"\noutput = "/dev/null"\nwrite-out = "%%{http_code}\\n"\n' "$edge" "$p"
		done
		i=$((i + 1))
	done >"$out.cfg"
	curl -s -Z --parallel-max 200 -K "$out.cfg" >"$out" 2>/dev/null
}
header_of() { printf '%s\n' "$1" | sed -n "s/^$2: //Ip" | head -n 1; }
status_of() { printf '%s\n' "$1" | head -n 1 | cut -d' ' -f2; }

# --- The sale document.
set -- $(new_sale -5 3)
sale=$1 item=$2
ans=$(http GET "/api/flash-sales/sales/$sale" "" "$edge")
body=${ans#* }
is "${ans%% *}" 200 "sale document: 200 through the edge"
members=$(for m in .saleId .startsAt .endsAt .paymentWindowSeconds '.items[].itemId' '.items[].priceMinor' \
    '.items[].currency' '.items[].quantity' '.items[].state' .serverTime; do
	json_get "$body" "$m" || echo "(no $m)"
done | tr '\n' ' ')
case "$members" in
"$sale "????-??-??T??:??:??*Z" "????-??-??T??:??:??*Z" 600 $item 1990000 VND 3 on_sale "[0-9]*" ")
	ok "sale document: sale, times, window, items with price and state, server time" ;;
*) not_ok "sale document: sale, times, window, items with price and state, server time" "$body" ;;
esac
server_ms=$(json_get "$body" serverTime)
now_ms=$(($(date +%s%N) / 1000000))
if [ $((now_ms - server_ms)) -ge 0 ] && [ $((now_ms - server_ms)) -lt 3000 ]; then
	ok "sale document: serverTime is the server's clock in ms"
else
	not_ok "sale document: serverTime is the server's clock in ms" "serverTime $server_ms, now $now_ms"
fi
h=$(headers "/api/flash-sales/sales/$sale")
is "$(header_of "$h" Cache-Control)" "public, max-age=1, s-maxage=1" "sale document: Cache-Control public, max-age=1"
etag=$(header_of "$h" ETag)
case "$etag" in
W/\"?*\") ok "sale document: a weak ETag (serverTime aside, the content)" ;;
*) not_ok "sale document: a weak ETag (serverTime aside, the content)" "$h" ;;
esac
h=$(headers "/api/flash-sales/sales/$sale" -H "If-None-Match: $etag")
is "$(status_of "$h")" 304 "sale document: If-None-Match gets 304 from the edge"

state_of() { # SALE: the state of the sale's one item in its document, from the origin
	curl -s "$FLASHSALE_ORIGIN_URL/api/flash-sales/sales/$1" | fs_json '.items[].state'
}
set -- $(new_sale 3600 3)
is "$(state_of "$1")" upcoming "sale document: an item before the start is upcoming"
future=$1
set -- $(new_sale -7200 3)
is "$(state_of "$1")" ended "sale document: an item after the end is ended"
set -- $(new_sale -5 0)
is "$(state_of "$1")" sold_out "sale document: an item with no units is sold out"
set -- $(new_sale -5 1)
sold_sale=$1
tok=$(admin token mint --user "edge-$sold_sale")
http POST "$(purchase_path "$sold_sale")" "$tok" >/dev/null
sleep 1.1
is "$(state_of "$sold_sale")" sold_out "sale document: sold out as soon as Redis has no unit left"
ans=$(http GET /api/flash-sales/sales/987654321 "" "$edge")
is "${ans%% *} $(json_get "${ans#* }" error)" "404 SALE_NOT_FOUND" "an unknown sale: 404 SALE_NOT_FOUND"

# --- The reveal document.
ans=$(http GET "/api/flash-sales/sales/$future/reveal" "" "$edge")
is "${ans%% *} $(json_get "${ans#* }" error)" "425 SALE_NOT_STARTED" "reveal before the start: 425 SALE_NOT_STARTED"
case "$ans" in
*purchase* | *sig=*) not_ok "reveal before the start carries no URL" "$ans" ;;
*) ok "reveal before the start carries no URL" ;;
esac
h=$(headers "/api/flash-sales/sales/$future/reveal")
case "$(header_of "$h" Cache-Control)" in
*max-age=0*) ok "reveal before the start: browsers do not keep it (max-age=0)" ;;
*) not_ok "reveal before the start: browsers do not keep it (max-age=0)" "$h" ;;
esac
ans=$(http GET "/api/flash-sales/sales/$sale/reveal" "" "$edge")
url=$(json_get "${ans#* }" '.items[]' | fs_json -l -w .itemId="$item" .purchaseUrl)
is "${ans%% *}" 200 "reveal after the start: 200"
case "$url" in
"/api/flash-sales/items/$item/purchase?sale=$sale&start="*"&end="*"&sig="*) ok "reveal: the item's signed purchase URL" ;;
*) not_ok "reveal: the item's signed purchase URL" "$ans" ;;
esac
h=$(headers "/api/flash-sales/sales/$sale/reveal")
is "$(header_of "$h" Cache-Control)" "public, max-age=1, s-maxage=1" "reveal: Cache-Control public, max-age=1, s-maxage=1"
case "$(header_of "$h" ETag)" in
\"?*\") ok "reveal: a strong ETag" ;;
*) not_ok "reveal: a strong ETag" "$h" ;;
esac
tok=$(admin token mint --user "edge-buyer-$sale")
ans=$(http POST "$url" "$tok" "$edge")
is "${ans%% *}" 202 "the revealed URL buys, POSTed through the edge"
ans=$(http POST "$url" "$tok" "$edge")
is "${ans%% *}" 409 "a second POST reaches the origin too (409): writes are never cached"
ans=$(http POST "/api/flash-sales/sales/$sale/reveal" "" "$edge")
is "${ans%% *}" 405 "reveal refuses POST"
ans=$(http GET /api/flash-sales/admin/expire "" "$edge")
is "${ans%% *}" 403 "the edge refuses the operator endpoints"

# --- The reveal is published at the start instant: 100 shoppers asking in
# the last half second all get the URLs at the start, not before and not
# a second late, and the origin answers about once.
printf '{"name":"instant","startsInSeconds":4,"durationSeconds":600,"items":[{"name":"a","priceMinor":1,"currency":"VND","quantity":1}]}' \
	>"$FLASHSALE_STATE/instant.json"
set -- $(sale_created "$FLASHSALE_STATE/instant.json")
instant=$1
start_ms=$(psql_q "SELECT floor(extract(epoch FROM starts_at) * 1000)::bigint FROM sales WHERE id = $instant")
before=$(wc -l <"$alog")
while [ $(($(date +%s%N) / 1000000)) -lt $((start_ms - 500)) ]; do sleep 0.05; done
herd "$FLASHSALE_STATE/instant.out" 100 "/api/flash-sales/sales/$instant/reveal"
done_ms=$(($(date +%s%N) / 1000000))
is "$(grep -c '^200$' "$FLASHSALE_STATE/instant.out")" 100 "100 reveal requests in the last half second all get the URLs"
late=$((done_ms - start_ms))
if [ "$late" -ge 0 ] && [ "$late" -lt 1000 ]; then
	ok "they got them at the start instant (all done ${late} ms after it)"
else
	not_ok "they got them at the start instant" "all done ${late} ms after the start"
fi
sleep 1.5
n=$(tail -n +"$((before + 1))" "$alog" | grep -c "GET /api/flash-sales/sales/$instant/reveal ")
if [ "$n" -ge 1 ] && [ "$n" -le 3 ]; then
	ok "the origin answered them $n time(s)"
else
	not_ok "the origin answered them at most 3 times" "$n origin requests"
fi

# --- 200 page loads and reveal fetches within a second cost the origin a
# handful of requests (counted in nginx's access log).
docs="/?sale=$sale /app.js /style.css /i18n.js /api/flash-sales/sales/$sale /api/flash-sales/sales/$sale/reveal"
before=$(wc -l <"$alog")
t0=$(date +%s%N)
# shellcheck disable=SC2086 # one word per document path
herd "$FLASHSALE_STATE/herd.out" 200 $docs
took=$((($(date +%s%N) - t0) / 1000000))
diag "1,200 requests (200 page loads with their files, sale and reveal documents) in $took ms"
is "$(grep -c '^200$' "$FLASHSALE_STATE/herd.out")" 1200 "the 1,200 edge requests all answer 200"
sleep 1.5 # nginx flushes its access log every second
tail -n +"$((before + 1))" "$alog" >"$FLASHSALE_STATE/herd.log"
origin_count() { grep -c "\"GET $1 HTTP" "$FLASHSALE_STATE/herd.log"; }
total=0
for d in / /app.js /style.css /i18n.js "/api/flash-sales/sales/$sale" "/api/flash-sales/sales/$sale/reveal"; do
	n=$(origin_count "$d")
	total=$((total + n))
	if [ "$n" -le 3 ]; then ok "200 loads of $d: $n origin request(s)"; else not_ok "200 loads of $d: at most 3 origin requests" "$n"; fi
done
if [ "$total" -le 10 ]; then ok "the whole herd: $total origin requests"; else not_ok "the whole herd: a handful of origin requests" "$total"; fi

# The same herd before the start: 200 reveal fetches, every one refused,
# and the origin asked about once.
before=$(wc -l <"$alog")
herd "$FLASHSALE_STATE/early.out" 200 "/api/flash-sales/sales/$future/reveal"
is "$(grep -c '^425$' "$FLASHSALE_STATE/early.out")" 200 "200 early reveal fetches are all refused with 425"
sleep 1.5
n=$(tail -n +"$((before + 1))" "$alog" | grep -c "GET /api/flash-sales/sales/$future/reveal ")
if [ "$n" -le 3 ]; then ok "the early herd: $n origin request(s)"; else not_ok "the early herd: at most 3 origin requests" "$n"; fi

# Static files: cacheable, with validators.
h=$(headers "/app.js")
case "$(header_of "$h" Cache-Control)" in
public*max-age=*) ok "static files: Cache-Control public with a max-age" ;;
*) not_ok "static files: Cache-Control public with a max-age" "$h" ;;
esac
etag=$(header_of "$h" ETag)
is "$(status_of "$(headers /app.js -H "If-None-Match: $etag")")" 304 "static files: ETag revalidates (304)"
# The page's ES modules: every module one of them imports is preloaded by
# the page, installed, and served by the edge as JavaScript (browsers refuse
# a module of another type) with the static files' caching.
page=$top_srcdir/static/index.html
# shellcheck disable=SC2013 # module names, one word each
for f in $(sed -n 's/.*from "\.\/\([a-z0-9_-]*\.js\)".*/\1/p' "$top_srcdir"/static/*.js | sort -u); do
	grep -q "rel=\"modulepreload\" href=\"/$f\"" "$page" || not_ok "static/index.html preloads the module $f"
	grep -q "static/$f" "$top_srcdir/Makefile.am" || not_ok "Makefile.am installs static/$f"
done
bad=""
for f in $(cd "$top_srcdir/static" && ls -- *.js); do
	h=$(headers "/$f")
	case "$(status_of "$h") $(header_of "$h" Content-Type | tr -d '\r') $(header_of "$h" Cache-Control | tr -d '\r')" in
	"200 application/javascript"*" public, max-age="*) ;;
	*) bad="$bad $f" ;;
	esac
done
is "${bad:-none}" none "every module under static/ comes through the edge as JavaScript, cacheable"
grep -q '<script type="module" src="/app.js">' "$page"
is $? 0 "the page loads app.js as an ES module"
case "$(curl -s "$edge/?sale=$sale")" in
*'id="countdown"'*'aria-live="polite"'*) ok "the page is served at / with its countdown and live region" ;;
*) not_ok "the page is served at / with its countdown and live region" ;;
esac

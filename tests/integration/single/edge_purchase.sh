# Purchases through the edge (its nginx, deploy/edge.conf.in): only an
# item's sold-out answer is remembered, for one to two seconds (nginx's
# cache counts whole seconds), so that the origin sees about one purchase
# per sold-out item per second or two however many shoppers press Buy;
# every other answer reaches the origin each time, and a unit that comes
# back sells again within about two seconds. Origin requests are counted
# in nginx's access log.

edge=$FLASHSALE_EDGE_URL
alog=$FLASHSALE_STATE/log/nginx-access.log

# origin_since LINE ITEM: purchases of ITEM that reached nginx after line LINE.
origin_since() {
	tail -n +"$(($1 + 1))" "$alog" | grep -c "\"POST /api/flash-sales/items/$2/purchase?"
}
# origin_reached LINE ITEM N: origin_since once it reaches N (or after 5 s).
# nginx writes a request's log line after it sent the answer: the shopper
# may have it before the line is there.
origin_reached() {
	or_deadline=$(($(date +%s) + 5))
	while [ "$(origin_since "$1" "$2")" -lt "$3" ] && [ "$(date +%s)" -lt "$or_deadline" ]; do
		sleep 0.1
	done
	origin_since "$1" "$2"
}
# edge_post PATH [TOKEN]: "STATUS X-Cache" of a purchase through the edge.
edge_post() {
	if [ -n "${2:-}" ]; then
		h=$(curl -s -o /dev/null -D - -X POST -H "Authorization: Bearer $2" "$edge$1")
	else
		h=$(curl -s -o /dev/null -D - -X POST "$edge$1")
	fi
	h=$(printf '%s\n' "$h" | tr -d '\r')
	printf '%s %s' "$(printf '%s\n' "$h" | head -n 1 | cut -d' ' -f2)" \
		"$(printf '%s\n' "$h" | sed -n 's/^X-Cache: //Ip')"
}

set -- $(new_sale -5 2)
sale=$1 item=$2
path=$(purchase_path "$sale")
t1=$(admin token mint --user "ep1-$sale")
t2=$(admin token mint --user "ep2-$sale")
t3=$(admin token mint --user "ep3-$sale")
forged=$(printf '%s' "$path" | sed 's/sig=\(.\)/sig=A\1/')

# --- Every answer but 410 goes to the origin each time.
before=$(wc -l <"$alog")
is "$(edge_post "$path")" "401 MISS" "edge: no token: 401 from the origin"
is "$(edge_post "$path")" "401 MISS" "edge: 401 again: not remembered"
is "$(edge_post "$forged" "$t1")" "403 MISS" "edge: a forged URL: 403 from the origin"
is "$(edge_post "$forged" "$t1")" "403 MISS" "edge: 403 again: not remembered"
is "$(edge_post "$path" "$t1")" "202 MISS" "edge: the first shopper buys (202)"
is "$(edge_post "$path" "$t1")" "409 MISS" "edge: the same shopper again: 409, not the 202"
is "$(edge_post "$path" "$t1")" "409 MISS" "edge: 409 again: not remembered"
is "$(edge_post "$path" "$t2")" "202 MISS" "edge: a second shopper buys the last unit: 202, not a 409"
is "$(origin_reached "$before" "$item" 8)" 8 "edge: the origin answered each of those 8 purchases"
set -- $(new_sale 3600 1)
early=$(purchase_path "$1")
before=$(wc -l <"$alog")
is "$(edge_post "$early" "$t1") $(edge_post "$early" "$t1")" "425 MISS 425 MISS" \
	"edge: before the start: 425 twice, both from the origin"
is "$(origin_reached "$before" "$2" 2)" 2 "edge: the origin answered both early purchases"

# --- Sold out: two herds of 1,000 shoppers, 2.1 s apart, once the edge
# has the item's 410. (Before that, purchases in flight when the item sold
# out each reach the origin, as they would without the edge.) The origin
# then sees one request per second at most (each time the remembered
# answer expires) and at least one (it is kept two seconds at most).
is "$(edge_post "$path" "$t3")" "410 MISS" "edge: sold out: the origin's 410"
tokfile=$FLASHSALE_STATE/edge-herd.tokens
yes "$t3 $path" | head -n 1000 >"$tokfile"
herd() {
	"$FLASHSALE_BINDIR/tests/load/flashsale-load" --tokens "$tokfile" --port "$FLASHSALE_PORT_BASE" \
		--connections 16 --duration-max 60 --retries 0 >"$FLASHSALE_STATE/edge-herd.out" 2>&1
	sed -n 's/^summary .* n_410=\([0-9]*\) .*/\1/p' "$FLASHSALE_STATE/edge-herd.out"
}
before=$(wc -l <"$alog")
t0=$(date +%s%N)
first410=$(herd)
sleep 2.1
second410=$(herd)
ms=$((($(date +%s%N) - t0) / 1000000))
is "$first410 $second410" "1000 1000" "edge: 2,000 purchases of the sold-out item all answer 410"
n=$(origin_reached "$before" "$item" 1)
# Once the answer has expired, one purchase goes to the origin while the
# others still get the answer (nginx: proxy_cache_use_stale updating).
most=$((ms / 1000 + 1))
diag "2,000 sold-out purchases through the edge in $ms ms: $n origin request(s)"
if [ "$n" -ge 1 ] && [ "$n" -le "$most" ]; then
	ok "edge: the origin saw $n of them (one per second at most: $most)"
else
	not_ok "edge: the origin sees one sold-out purchase per second at most, and at least one" "$n in $ms ms"
fi
h=$(curl -s -o "$FLASHSALE_STATE/edge-body" -D - -X POST -H "Authorization: Bearer $t3" "$edge$path" | tr -d '\r')
is "$(printf '%s\n' "$h" | sed -n 's/^Cache-Control: //Ip')" no-store "edge: the remembered 410 still tells browsers no-store"
is "$(json_get "$(cat "$FLASHSALE_STATE/edge-body")" error)" SOLD_OUT "edge: the remembered answer is the origin's SOLD_OUT"
is "$(printf '%s\n' "$h" | sed -n 's/^X-Cache: //Ip')" HIT "edge: the edge answered it from what it remembers"

# --- A unit comes back: through the edge it sells again within about two
# seconds (the edge's one to two, plus the origin's marker cache of one).
consumer_caught_up
first=$(psql_q "SELECT id FROM orders WHERE sale_id = $sale AND user_id = 'ep1-$sale'")
ans=$(http POST "/api/flash-sales/orders/$first/cancel" "$t1")
t0=$(date +%s%N)
is "$(json_get "${ans#* }" status)" CANCELLED "edge: the first shopper cancels"
n=0
st=""
while [ $n -lt 500 ]; do
	st=$(edge_post "$path" "$t3")
	[ "${st%% *}" = 202 ] && break
	n=$((n + 1))
	sleep 0.01
done
ms=$((($(date +%s%N) - t0) / 1000000))
is "${st%% *}" 202 "edge: the unit that came back sells through the edge"
diag "a purchase through the edge succeeded $ms ms after the cancel ($n sold-out answers before it)"
if [ "$ms" -le 4500 ]; then ok "edge: within the edge's two seconds and the marker's one (+ slack): $ms ms"; else
	not_ok "edge: sells again within about two seconds" "took $ms ms"
fi

# shellcheck shell=sh disable=SC2046,SC2086,SC2154 # set -- $(...) splits ids, and a list of PIDs splits, into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# Units that come back sell through the edge (its nginx,
# deploy/edge.conf.in), to the crowd, within the edge's bound whatever the
# origin's speed; and the edge's cache stays quiet in a burst.
#
# The bound (docs/API.md): the edge answers an item's 410 from memory only
# in the wall-clock second in which the origin gave it (the cache key holds
# the edge's second, and no expired answer is ever served), and a purchase
# waits at most 100 ms (proxy_cache_lock_timeout) for another purchase's
# answer to the same item, then goes to the origin itself. So a purchase
# sent in a later second than the origin's last 410 is never told "sold
# out" by the edge.
#
# Guards issue 36:
#  1. 10 units come back, 300 shoppers press Buy 1.5 s later through the
#     edge: exactly 10 x 202 (before: 4 x 202, the others got the remembered
#     410 while one purchase at a time went to the origin).
#  4. The origin is slow (its purchase handlers frozen): no 410 from the
#     edge past the bound (before: the remembered 410 for as long as the
#     one purchase sent on waited, 20 s and more).
#  6. No "[crit] cache file ... has too long header" in the edge's error log
#     after the bursts (before: an item's 410 replaced in its cache file by
#     one of another header length, the handler's then nginx's marker's,
#     while others read it).

edge=$FLASHSALE_EDGE_URL
elog=$FLASHSALE_STATE/log/nginx-edge-error.log
crit0=$(grep -c 'has too long header' "$elog")

# edge_load TOKENS OUT: the load generator's run of TOKENS through the edge.
edge_load() {
	"$FLASHSALE_BINDIR/tests/load/flashsale-load" --tokens "$1" --port "$FLASHSALE_PORT_BASE" \
		--connections 64 --duration-max 60 --retries 0 >"$2" 2>&1
}
# marker_gone ITEM: polls (bounded: 5 s) until the origin's sold-out marker
# of ITEM is gone; prints the second it was seen gone.
marker_gone() {
	mg_deadline=$(($(date +%s) + 5))
	while [ -e "$FLASHSALE_SOLDOUT_DIR/$1" ] && [ "$(date +%s)" -le "$mg_deadline" ]; do
		sleep 0.05
	done
	[ -e "$FLASHSALE_SOLDOUT_DIR/$1" ] || date +%s
}

# --- 1. Ten units come back; a crowd of 300 presses Buy 1.5 s later.
set -- $(new_sale -5 10)
sale=$1 item=$2
path=$(purchase_path "$sale")
admin token mint --user "er-buyer-$sale" --count 10 >"$FLASHSALE_STATE/er-buyers"
fire_all "$path" "$FLASHSALE_STATE/er-buyers" "$FLASHSALE_STATE/er-bought" 10 "$edge"
is "$(count_of 202 "$FLASHSALE_STATE/er-bought")" 10 "edge restock: 10 shoppers buy the 10 units through the edge"
# The item is hammered through the edge while it is sold out: the edge
# remembers its 410 (the handler's first, then nginx's marker's).
watcher=$(admin token mint --user "er-watch-$sale")
yes "$watcher $path" | head -n 20000 >"$FLASHSALE_STATE/er-hammer"
edge_load "$FLASHSALE_STATE/er-hammer" "$FLASHSALE_STATE/er-hammer.out"
is "$(load_sum "$FLASHSALE_STATE/er-hammer.out" n_410)" 20000 "edge restock: 20,000 purchases of the sold-out item: all 410"

consumer_caught_up
while read -r user tok; do
	oid=$(psql_q "SELECT id FROM orders WHERE sale_id = $sale AND user_id = '$user'")
	ans=$(http POST "/api/flash-sales/orders/$oid/cancel" "$tok")
	[ "${ans%% *}" = 200 ] || diag "cancel of $oid: ${ans%% *}"
done <"$FLASHSALE_STATE/er-buyers"
c1=$(date +%s%N)
is "$(redis GET "fs:{$sale}:stock:$item")" 10 "edge restock: the 10 units came back (cancelled)"
admin token mint --user "er-crowd-$sale" --count 300 |
	awk -v p="$path" '{ print $2, p }' >"$FLASHSALE_STATE/er-crowd"
# The scenario's 1.5 s after the units came back (not a readiness wait).
sleep "$(awk -v c="$c1" -v n="$(date +%s%N)" 'BEGIN { w = (c + 1500000000 - n) / 1e9; print (w > 0 ? w : 0) }')"
edge_load "$FLASHSALE_STATE/er-crowd" "$FLASHSALE_STATE/er-crowd.out"
diag "300 shoppers through the edge 1.5 s after 10 units came back: $(load_sum "$FLASHSALE_STATE/er-crowd.out" n_202) x 202, $(load_sum "$FLASHSALE_STATE/er-crowd.out" n_410) x 410"
is "$(load_sum "$FLASHSALE_STATE/er-crowd.out" n_202) $(load_sum "$FLASHSALE_STATE/er-crowd.out" n_410)" "10 290" \
	"edge restock: the crowd buys every unit that came back (10 x 202, 290 x 410)"
is "$(redis GET "fs:{$sale}:stock:$item")" 0 "edge restock: no unit left in Redis"

# --- 4. The origin is slow: the bound still holds.
set -- $(new_sale -5 1)
sale=$1 item=$2
path=$(purchase_path "$sale")
buyer=$(admin token mint --user "es-buyer-$sale")
watcher=$(admin token mint --user "es-watch-$sale")
is "$(http POST "$path" "$buyer" "$edge" | cut -d' ' -f1)" 202 "edge slow origin: the one unit sells"
is "$(http POST "$path" "$watcher" "$edge" | cut -d' ' -f1)" 410 "edge slow origin: sold out through the edge"
g=$(date +%s)
consumer_caught_up
oid=$(psql_q "SELECT id FROM orders WHERE sale_id = $sale AND user_id = 'es-buyer-$sale'")
is "$(http POST "/api/flash-sales/orders/$oid/cancel" "$buyer" | cut -d' ' -f1)" 200 "edge slow origin: the unit comes back"
gone=$(marker_gone "$item")
is "${gone:+gone}" gone "edge slow origin: the origin's sold-out marker goes"
# The origin's purchase handlers freeze (a stalled host): a purchase that
# reaches them waits. Thawed on any exit of this file.
frozen=$("$stack" pids flashsale-purchase)
thaw() { [ -n "$frozen" ] && kill -CONT $frozen 2>/dev/null; frozen=""; }
trap thaw EXIT
kill -STOP $frozen
# One shopper presses Buy through the edge again and again for 3 s, each
# press given up after 0.4 s.
probes=$FLASHSALE_STATE/es-probes
: >"$probes"
end=$(($(date +%s%N) + 3000000000))
while :; do
	s0=$(date +%s%N)
	[ "$s0" -ge "$end" ] && break
	st=$(curl -s -o /dev/null -m 0.4 -w '%{http_code}' -X POST -H "Authorization: Bearer $watcher" "$edge$path")
	echo "$s0 $st" >>"$probes"
done
thaw
# Past the second of the edge's last 410 and of the marker's going, none
# is answered 410 (they wait for the frozen origin instead).
set -- $(awk -v g="$g" -v gone="$gone" '
	{ s = int($1 / 1e9) }
	s > g && s > gone { after++; if ($2 == 410) late++ }
	END { printf "%d %d", after, late }' "$probes")
diag "purchases through the edge while the origin's handlers were frozen: $1 sent past the bound, $2 of them answered 410"
if [ "$1" -ge 3 ] && [ "$2" = 0 ]; then
	ok "edge slow origin: no 410 from the edge past its second ($1 purchases)"
else
	not_ok "edge slow origin: no 410 from the edge past its second" "$2 of $1 purchases answered 410"
fi

# --- 6. The bursts left no cache file read half-replaced.
crit=$(($(grep -c 'has too long header' "$elog") - crit0))
is "$crit" 0 "edge restock: no 'cache file has too long header' in the edge's error log"

# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# A doubt recorded in Redis holds in every purchase process, whether or
# not its message reached them, and lasts until its hold is settled,
# however long the consumer lags.
#
# The consumer is stopped (it lags). The holder buys the only unit (202);
# the item is sold out and nginx answers 410 from its marker. The hold is
# then put in doubt as doubt() leaves it (its record " sent", its entry in
# fs:{S}:doubt) with no message at all: what a message lost on Redis
# Cluster's bus, or a process started after it, sees. Within
# FLASHSALE_SOLDOUT_RECHECK_MS (+ slack) the marker is gone, and the
# edge keeps none of the item's 410s. The hold is made far older than
# FLASHSALE_HOLD_MAX_AGE (its record and unconfirmed entry ten minutes
# old): the holder is told 503 (too late to publish again, the sweeper
# decides), never 410, at the origin and through the edge; the sweeper
# fails nothing while the consumer lags (its partition has orders to
# record), and the item stays in doubt through several recheck periods.
# The consumer back, the order ends PENDING, the holder is told 409 with
# its id, the doubt's entry leaves Redis, and the item is answered from
# its marker again.
#
# Guards (issue 36, doubt): a doubt told only on fs:restock (lost, or
# never heard by a process started later), and a doubt that ended after
# FLASHSALE_HOLD_MAX_AGE while the consumer still lagged: either let a
# process, its marker or the edge answer 410 to the holder of a unit.

. "$top_srcdir/tests/integration/pipeline_lib.sh"

edge=$FLASHSALE_EDGE_URL
recheck_ms=${FLASHSALE_SOLDOUT_RECHECK_MS:-1000}
set -- $(new_sale -5 1)
sale=$1 item=$2
path=$(purchase_path "$sale")
th=$(p_tok "dr-holder-$sale")
to=$(p_tok "dr-other-$sale")

# answer URL TOKEN: "STATUS", or "410 nginx" when nginx answered from the marker.
answer() {
	curl -s -o /dev/null -D - -X POST -H "Authorization: Bearer $2" "$1$path" |
		tr -d '\r' | awk 'NR == 1 { code = $2 }
			tolower($0) ~ /^x-flashsale-answered-by: nginx/ { by = " nginx" } END { print code by }'
}
# edge_post TOKEN: "STATUS X-Cache" of a purchase through the edge.
edge_post() {
	ep_h=$(curl -s -o /dev/null -D - -X POST -H "Authorization: Bearer $1" "$edge$path" | tr -d '\r')
	printf '%s %s' "$(printf '%s\n' "$ep_h" | head -n 1 | cut -d' ' -f2)" \
		"$(printf '%s\n' "$ep_h" | sed -n 's/^X-Cache: //Ip')"
}
marker() { [ -e "$FLASHSALE_SOLDOUT_DIR/$item" ] && echo marker || echo none; }
# until_ms MAX_MS CMD...: runs CMD (at least once, every 20 ms) until it
# succeeds or MAX_MS passed; waited holds the time taken. 0 or 1.
until_ms() {
	um_t0=$(p_now_ms) um_max=$1
	shift
	until "$@"; do
		if [ $(($(p_now_ms) - um_t0)) -gt "$um_max" ]; then
			waited=$(($(p_now_ms) - um_t0))
			return 1
		fi
		sleep 0.02
	done
	waited=$(($(p_now_ms) - um_t0))
}
no_marker() { [ ! -e "$FLASHSALE_SOLDOUT_DIR/$item" ]; }
from_marker() { [ "$(answer "$FLASHSALE_ORIGIN_URL" "$to")" = "410 nginx" ]; }
edge_miss() { [ "$(edge_post "$to")" = "410 MISS" ]; }
no_doubt_entry() { [ "$(redis HLEN "fs:{$sale}:doubt")" = 0 ]; }

"$stack" stop consumer >/dev/null
ans=$(http POST "$path" "$th")
is "${ans%% *}" 202 "doubt recorded: the holder buys the only unit while the consumer is down"
order=$(json_get "${ans#* }" orderId)
until_ms 5000 from_marker
is "$(answer "$FLASHSALE_ORIGIN_URL" "$to")" "410 nginx" "sold out: nginx answers 410 from the marker"

# The hold in doubt as doubt() leaves it; no message tells anyone.
rec=$(redis HGET "fs:{$sale}:orders" "$order")
redis HSET "fs:{$sale}:orders" "$order" "$rec sent" >/dev/null
redis HSET "fs:{$sale}:doubt" "$order" "$item" >/dev/null
rec_ms=$(p_now_ms)
if until_ms 10000 no_marker && [ "$waited" -le $((recheck_ms + 500)) ]; then
	ok "the marker goes within the recheck period (+ slack): $waited ms <= $recheck_ms + 500"
else
	not_ok "the marker goes within the recheck period (+ slack)" "after $waited ms (10000: never)"
fi
# The marker went with the first process's recheck; every process that
# remembered the item (its flag) reads the record within its own period:
# that bound passed, none answers from memory. A process that never
# remembered the item reads the sale's doubts before it marks anything.
while [ $(($(p_now_ms) - rec_ms)) -le $((recheck_ms + 500)) ]; do sleep 0.05; done
# What the edge kept before (a second at most) goes; from then on it keeps nothing.
until_ms 3000 edge_miss
is "$(edge_post "$to") $(edge_post "$to")" "410 MISS 410 MISS" \
	"the other shopper's 410s through the edge are not kept"
is "$(answer "$FLASHSALE_ORIGIN_URL" "$to") $(marker)" "410 none" \
	"the other shopper is told 410 by the handler, which marks nothing"

# The consumer lags past FLASHSALE_HOLD_MAX_AGE: the hold ten minutes old.
old_ms=$(($(p_now_ms) - 600000))
redis HSET "fs:{$sale}:orders" "$order" "dr-holder-$sale $item $old_ms sent" >/dev/null
redis ZADD "fs:{$sale}:unconfirmed" XX "$old_ms" "$order" >/dev/null
is "$(answer "$FLASHSALE_ORIGIN_URL" "$th") $(edge_post "$th")" "503 503 MISS" \
	"the holder of the old hold in doubt is told 503 at the origin and through the edge"
out=$(p_expire)
deferred=$(json_get "$out" deferred)
if [ "$(json_get "$out" ghosts)" = 0 ] && [ "${deferred:-0}" -ge 1 ]; then
	ok "the sweeper fails nothing while the consumer lags ($deferred sales deferred)"
else
	not_ok "the sweeper fails nothing while the consumer lags" "$out"
fi
is "$(p_count "id = '$order'") $(p_stock "$sale" "$item")" "0 0" "no FAILED row, the unit still held"
# Several recheck periods on (past the doubt's lease in each process): still in doubt.
t0=$(p_now_ms)
seen=""
while [ $(($(p_now_ms) - t0)) -lt $((4 * recheck_ms)) ]; do
	seen="$seen $(answer "$FLASHSALE_ORIGIN_URL" "$th")/$(marker)"
	sleep 0.2
done
is "$(printf '%s' "$seen" | tr ' ' '\n' | sed '/^$/d' | sort -u | tr '\n' ' ')" "503/none " \
	"through four recheck periods the holder is told 503, never 410, and no marker comes"
is "$(edge_post "$th") $(edge_post "$to")" "503 MISS 410 MISS" \
	"through the edge: the holder 503, the other shopper 410, nothing kept"

# The consumer back: the order recorded, the doubt over.
"$stack" start consumer >/dev/null
consumer_caught_up 60 || not_ok "the consumer catches up"
p_until 30 PENDING p_status "$order" || true
is "$p_out" PENDING "the holder's order is recorded: PENDING"
ans=$(http POST "$path" "$th")
is "${ans%% *} $(json_get "${ans#* }" orderId)" "409 $order" "the holder is told 409 with the order's id"
if until_ms 10000 no_doubt_entry; then
	ok "the doubt's entry leaves Redis once its order is recorded ($waited ms)"
else
	not_ok "the doubt's entry leaves Redis once its order is recorded" "fs:{$sale}:doubt still has it"
fi
# In doubt for the lease's three periods at most, then nginx's open_file_cache (1 s).
if until_ms $((4 * recheck_ms + 1000 + 2000)) from_marker; then
	ok "the item is answered from its marker again ($waited ms)"
else
	not_ok "the item is answered from its marker again" "not within $waited ms"
fi
# The record as the purchase wrote it, so that reconcile compares like with like.
redis HSET "fs:{$sale}:orders" "$order" "$rec" >/dev/null
is "$(json_get "$(p_expire)" ghosts)" 0 "the sweep finds no ghost"
check "flashsale-admin reconcile --check is clean" admin reconcile "$sale" --check

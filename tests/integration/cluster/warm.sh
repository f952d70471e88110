# shellcheck shell=sh disable=SC2154 # sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# sale warm on the cluster (lib/stock_warm.c): a sale's places are written
# one MULTI each, and places on one master share its connection, whose
# first EXEC ends the WATCH of the others. So a warm whose places share a
# master is refused while the sale is open (nothing written), and runs
# before it opens; a sale whose places each have a master of their own is
# warmed while open. Self-contained: sources its helpers, sets its own names.

. "$top_srcdir/tests/integration/cluster_lib.sh"

# kw_create STARTS SHARDS: a sale of one item of 40 units over SHARDS stock
# keys, opening STARTS seconds from now; sets kw_sale (not warmed).
kw_create() {
	cat >"$FLASHSALE_STATE/sale-warm-c.json" <<JSON
{"name":"warm","startsInSeconds":$1,"durationSeconds":3600,
 "items":[{"name":"Hot","priceMinor":100,"currency":"VND","quantity":40,"shards":$2}]}
JSON
	kw_sale=$(json_get "$(admin sale create "$FLASHSALE_STATE/sale-warm-c.json")" saleId)
}

# kw_loaded SALE: 1 when the sale's first place is in Redis, else 0.
kw_loaded() { redis EXISTS "fs:{$1}:sale" | tr -d '\r'; }

# Four shards on three masters: two places share one.
kw_create -5 4
kw_out=$(admin sale warm "$kw_sale" 2>&1)
kw_rc=$?
case "$kw_rc $kw_out" in
"1 "*"is open and 4 of its places share a Redis master"*)
	ok "an open sale over 4 places on 3 masters: warm refused with the reason" ;;
*) not_ok "an open sale over 4 places on 3 masters: warm refused with the reason" \
	"exit $kw_rc: $kw_out" ;;
esac
is "$(kw_loaded "$kw_sale")" "0" "the refused warm wrote nothing"

kw_create 600 4
check "the same sale opening in 10 minutes is warmed" admin sale warm "$kw_sale"
is "$(kw_loaded "$kw_sale")" "1" "its places are in Redis"

kw_create -5 3
check "an open sale whose 3 places each have a master is warmed" admin sale warm "$kw_sale"
is "$(kw_loaded "$kw_sale")" "1" "its places are in Redis"

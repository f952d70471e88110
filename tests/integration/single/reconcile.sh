# shellcheck shell=sh disable=SC2046 # set -- $(...) splits ids into words on purpose
# Reconcile (lib/reconcile, `flashsale-admin reconcile --check`) names each
# kind of violation it promises and exits 1, then passes once the stores
# agree again. The invariants check after every file relies on it: this is
# where it is shown that it can fail.

set -- $(new_sale -5 10)
sale=$1 item=$2
ghost=00000000-0000-7000-8000-0000000000aa

# reconciled "NAME" "LINE": reconcile --check exits 1 with exactly one
# violation, which contains LINE.
reconciled() {
	rec_out=$(admin reconcile "$sale" --check 2>&1)
	rec_rc=$?
	rec_lines=$(printf '%s\n' "$rec_out" | grep -c '^VIOLATION ')
	case "$rec_rc $rec_lines $rec_out" in
	"1 1 "*"$2"*) ok "$1" ;;
	*) not_ok "$1" "expected exit 1, one violation: $2" "$rec_out" ;;
	esac
}

check "a fresh sale reconciles" admin reconcile "$sale" --check

redis INCR "fs:{$sale}:stock:$item" >/dev/null
reconciled "a unit too many in Redis is a violation" \
    "item $item: Redis units left 11 + holds 0 != quantity 10"
redis DECR "fs:{$sale}:stock:$item" >/dev/null

redis DECR "fs:{$sale}:stock:$item" >/dev/null
redis HSET "fs:{$sale}:orders" "$ghost" "zed $item 1000" >/dev/null
redis HSET "fs:{$sale}:holders" zed "$ghost" >/dev/null
reconciled "a hold that no order explains is a violation" \
    "hold $ghost has no order in the database and is not on its way"
redis ZADD "fs:{$sale}:unconfirmed" 1000 "$ghost" >/dev/null
check "the same hold on its way (unconfirmed) is not" admin reconcile "$sale" --check
redis HDEL "fs:{$sale}:orders" "$ghost" >/dev/null
redis HDEL "fs:{$sale}:holders" zed >/dev/null
redis ZREM "fs:{$sale}:unconfirmed" "$ghost" >/dev/null
redis INCR "fs:{$sale}:stock:$item" >/dev/null

psql_q "UPDATE items SET sold = 1 WHERE id = $item"
reconciled "sold without a live order is a violation" "item $item: sold 1 but 0 live orders"
psql_q "INSERT INTO orders (id, sale_id, item_id, user_id, status, reserved_at, expires_at)
	VALUES ('$ghost', $sale, $item, 'zed', 'PENDING', now(), now() + interval '10 minutes')"
reconciled "a live order without a hold in Redis is a violation" \
    "live order $ghost (user zed) has no hold in Redis"
psql_q "DELETE FROM orders WHERE id = '$ghost'"
psql_q "UPDATE items SET sold = 0 WHERE id = $item"

check "repaired: the sale reconciles again" admin reconcile "$sale" --check

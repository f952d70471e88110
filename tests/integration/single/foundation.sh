# Foundation: the stack is whole, the schema guards the invariants by itself,
# and the admin tool moves a sale from PostgreSQL into Redis faithfully.

check "deploy/stack status: every part up" "$stack" status
topics=$(fs_kcat -b "$FLASHSALE_KAFKA_BROKERS" -L 2>&1)
case "$topics" in
*'topic "flash-sale-orders" with 8 partitions'*) ok "kafka lists flash-sale-orders with 8 partitions" ;;
*) not_ok "kafka lists flash-sale-orders with 8 partitions" "$topics" ;;
esac
case "$topics" in
*'topic "flash-sale-orders.dlq"'*) ok "kafka lists the dead-letter topic" ;;
*) not_ok "kafka lists the dead-letter topic" "$topics" ;;
esac
check "kafka topics again keeps the existing topics" admin kafka topics
is "$(fs_kcat -b "$FLASHSALE_KAFKA_BROKERS" -L -t flash-sale-orders 2>&1 | grep -c 'partition [0-9]*,')" "8" \
    "the order topic still has its 8 partitions"
is "$(psql_q "SELECT string_agg(table_name, ',' ORDER BY table_name) FROM information_schema.tables
	WHERE table_schema = 'public' AND table_name IN ('sales', 'items', 'orders')")" \
    "items,orders,sales" "schema: sales, items, orders exist"

# Sale create, warm, show.
set -- $(new_sale -5 25)
sale=$1 item=$2
is "$(redis GET "fs:{$sale}:stock:$item")" "25" "warm: Redis holds the 25 units of PostgreSQL"
is "$(redis HGET "fs:{$sale}:sale" window)" "600" "warm: Redis holds the payment window"
show=$(admin sale show "$sale" | awk -v i="$item" '$1 == i { print $3, $4, $7, $8 }')
is "$show" "25 0 25 0" "sale show: quantity 25, sold 0, Redis left 25, holds 0"

# The database alone refuses what would break the invariants.
refuse "database refuses sold > quantity" psql_q "UPDATE items SET sold = 26 WHERE id = $item"
refuse "database refuses sold < 0" psql_q "UPDATE items SET sold = -1 WHERE id = $item"
ins() {
	psql_q "INSERT INTO orders (id, sale_id, item_id, user_id, status, reserved_at, expires_at)
		VALUES ('$1', $sale, $item, 'alice', '$2', now(), now() + interval '10 minutes')"
}
check "first live order of a shopper is accepted" ins 00000000-0000-7000-8000-000000000001 PENDING
refuse "a second live order of that shopper in the sale is refused" \
    ins 00000000-0000-7000-8000-000000000002 PENDING
refuse "a PAID second order is refused too" ins 00000000-0000-7000-8000-000000000003 PAID
check "the first order expires" psql_q \
    "UPDATE orders SET status = 'EXPIRED', closed_at = now() WHERE id = '00000000-0000-7000-8000-000000000001'"
check "after expiry the shopper's new order is accepted" ins 00000000-0000-7000-8000-000000000004 PENDING
is "$(psql_q "SELECT count(*) FROM orders WHERE sale_id = $sale AND user_id = 'alice'
	AND status IN ('PENDING', 'PAID')")" "1" "exactly one live order remains"
psql_q "DELETE FROM orders WHERE sale_id = $sale" >/dev/null

# An order names an item of its own sale. The rule is checked once per
# statement (sql/008_orders_item_check.sql), not by a per-row foreign key;
# it refuses what the key refused, with the key's SQLSTATE, 23503.
set -- $(new_sale -5 3)
sale2=$1 item2=$2
# fk_refused NAME SQL: passes when the statement fails with 23503.
fk_refused() {
	fr_out=$(psql -X -q -A -t -v ON_ERROR_STOP=1 -v VERBOSITY=verbose "$FLASHSALE_PG" -c "$2" 2>&1)
	case $fr_out in
	*"ERROR:  23503:"*) ok "$1" ;;
	*) not_ok "$1" "expected: ERROR:  23503: ..." "     got: $fr_out" ;;
	esac
}
# An order row: ID SALE ITEM USER, CANCELLED (no unit, no live order).
row() { printf "('%s', %s, %s, '%s', 'CANCELLED', now(), now())" "$@"; }
cols="INSERT INTO orders (id, sale_id, item_id, user_id, status, reserved_at, expires_at) VALUES"
o=00000000-0000-7000-8000-0000000001
fk_refused "an order naming another sale's item is refused" "$cols $(row ${o}01 "$sale" "$item2" bob)"
fk_refused "an order naming no item at all is refused" "$cols $(row ${o}02 "$sale" 999999999999 bob)"
fk_refused "a statement with one such order among good ones is refused" \
    "$cols $(row ${o}03 "$sale" "$item" carol), $(row ${o}04 "$sale2" "$item" dave), $(row ${o}05 "$sale2" "$item2" erin)"
is "$(psql_q "SELECT count(*) FROM orders WHERE id::text LIKE '${o}%'")" "0" "and none of its orders is written"
check "a statement whose orders all name items of their sales is accepted" \
    psql_q "$cols $(row ${o}06 "$sale" "$item" carol), $(row ${o}07 "$sale2" "$item2" dave), $(row ${o}08 "$sale2" "$item2" erin)"
is "$(psql_q "SELECT count(*) FROM orders WHERE id::text LIKE '${o}%'")" "3" "all three are written"
fk_refused "an order cannot be moved to another sale's item" "UPDATE orders SET item_id = $item2 WHERE id = '${o}06'"
check "an order can be moved to an item together with that item's sale" \
    psql_q "UPDATE orders SET item_id = $item2, sale_id = $sale2 WHERE id = '${o}06'"
is "$(psql_q "SELECT sale_id || ' ' || item_id FROM orders WHERE id = '${o}06'")" "$sale2 $item2" "and it is moved"
fk_refused "an item with orders cannot be deleted" "DELETE FROM items WHERE id = $item2"
fk_refused "nor moved to another sale" "UPDATE items SET sale_id = $sale WHERE id = $item2"
fk_refused "nor truncated away" "BEGIN; TRUNCATE items; ROLLBACK"
is "$(psql_q "SELECT count(*) FROM items WHERE id = $item2 AND sale_id = $sale2")" "1" "the item is still there"
psql_q "DELETE FROM orders WHERE id::text LIKE '${o}%'" >/dev/null
# (Undone: the sale stays whole for the invariant checks after this file.)
check "an item without orders can be moved to another sale" \
    psql_q "BEGIN; UPDATE items SET sale_id = $sale WHERE id = $item2; ROLLBACK"
check "and deleted" psql_q "BEGIN; DELETE FROM items WHERE id = $item2; ROLLBACK"

# A delete of an item waits for a transaction that is inserting an order
# of it (the insert locks the item FOR KEY SHARE, as the key did), then
# sees that order and is refused. Each side waits (bounded: 10 s) for the
# other to reach its point: the delete for the insert to be past its
# INSERT (at the wait that follows it), the insert's COMMIT for the delete
# to wait on a lock.
set -- $(new_sale -5 3)
sale3=$1 item3=$2
waiting_for() { # APP CONDITION: a DO block that polls pg_stat_activity
	printf "DO \$\$BEGIN FOR i IN 1..1000 LOOP EXIT WHEN EXISTS (SELECT 1 FROM pg_stat_activity
		WHERE application_name = '%s' AND %s); PERFORM pg_sleep(0.01); END LOOP; END\$\$;" "$1" "$2"
}
PGAPPNAME=fs-t10-insert psql -X -q -A -t -v VERBOSITY=verbose "$FLASHSALE_PG" >"$FLASHSALE_STATE/t10-insert.out" 2>&1 <<SQL &
BEGIN;
$cols $(row ${o}09 "$sale3" "$item3" gina);
$(waiting_for fs-t10-delete "wait_event_type = 'Lock'")
COMMIT;
SQL
ins_pid=$!
PGAPPNAME=fs-t10-delete psql -X -q -A -t -v VERBOSITY=verbose "$FLASHSALE_PG" >"$FLASHSALE_STATE/t10-delete.out" 2>&1 <<SQL &
$(waiting_for fs-t10-insert "query LIKE 'DO%'")
DELETE FROM items WHERE id = $item3;
SQL
del_pid=$!
wait "$ins_pid"
wait "$del_pid"
is "$(cat "$FLASHSALE_STATE/t10-insert.out")" "" "the inserting transaction commits"
case $(cat "$FLASHSALE_STATE/t10-delete.out") in
*"ERROR:  23503:"*) ok "the delete that waited for it is refused" ;;
*) not_ok "the delete that waited for it is refused" "$(cat "$FLASHSALE_STATE/t10-delete.out")" ;;
esac
is "$(psql_q "SELECT count(*) FROM orders o JOIN items i ON i.id = o.item_id AND i.sale_id = o.sale_id
	WHERE o.id = '${o}09'")" "1" "the order and its item are both there"
psql_q "DELETE FROM orders WHERE id = '${o}09'" >/dev/null

# Bad input changes nothing.
before=$(psql_q "SELECT count(*) FROM sales")
printf '{"name": "broken", "items": [' >"$FLASHSALE_STATE/bad.json"
refuse "sale create refuses malformed JSON" admin sale create "$FLASHSALE_STATE/bad.json"
printf '{"name":"x","startsInSeconds":1,"durationSeconds":60,"items":[{"name":"a","priceMinor":1,"currency":"vnd","quantity":1}]}' \
    >"$FLASHSALE_STATE/bad2.json"
refuse "sale create refuses a lower-case currency" admin sale create "$FLASHSALE_STATE/bad2.json"
printf '{"name":"x","startsInSeconds":1,"durationSeconds":60,"items":[{"name":"a","priceMinor":1,"currency":"VND","quantity":1}],"extra":1}' \
    >"$FLASHSALE_STATE/bad3.json"
refuse "sale create refuses an unknown member" admin sale create "$FLASHSALE_STATE/bad3.json"
refuse "sale create refuses a missing file" admin sale create "$FLASHSALE_STATE/nope.json"
is "$(psql_q "SELECT count(*) FROM sales")" "$before" "refused sale descriptions wrote nothing"
refuse "sale warm refuses an unknown sale" admin sale warm 999999
refuse "sale warm refuses a non-numeric id" admin sale warm 12abc
refuse "token mint refuses a missing key directory" env FLASHSALE_KEYS_DIR=/nonexistent \
    "$FLASHSALE_BINDIR/flashsale-admin" token mint --user bob
refuse "a program without FLASHSALE_PG refuses to start" env -u FLASHSALE_PG \
    "$FLASHSALE_BINDIR/flashsale-admin" sale show "$sale"
mkdir -p "$FLASHSALE_STATE/k2"
check "keys generate writes a key set" admin keys generate "$FLASHSALE_STATE/k2"
is "$(stat -c %a "$FLASHSALE_STATE/k2/url.key" "$FLASHSALE_STATE/k2/jwt-hs256.key" \
	"$FLASHSALE_STATE/k2/jwt-ed25519.key" | sort -u)" "600" "key files are mode 0600"
refuse "keys generate refuses to overwrite keys" admin keys generate "$FLASHSALE_STATE/k2"

# Warm refuses to overwrite holds unless forced.
redis HSET "fs:{$sale}:holders" carol 00000000-0000-7000-8000-00000000000a >/dev/null
refuse "sale warm refuses a sale that has holds" admin sale warm "$sale"
check "sale warm --force rebuilds from PostgreSQL" admin sale warm "$sale" --force
is "$(redis HLEN "fs:{$sale}:holders")" "0" "forced warm leaves only the database's live holds"

# The README's example sale description is accepted as it is.
ids=$(admin sale create "$top_srcdir/tests/data/sale.json")
case "$(json_get "$ids" saleId) $(json_get "$ids" '.itemIds[]' | wc -l)" in
[1-9]*" 2") ok "the example tests/data/sale.json creates a sale with its two items" ;;
*) not_ok "the example tests/data/sale.json creates a sale with its two items" "$ids" ;;
esac

# up twice is harmless (nothing restarts), and so is down where nothing runs.
pids_before=$(cat "$FLASHSALE_STATE"/run/*.pid 2>/dev/null | sort | tr '\n' ' ')
check "deploy/stack up again succeeds" "$stack" up
is "$(cat "$FLASHSALE_STATE"/run/*.pid 2>/dev/null | sort | tr '\n' ' ')" "$pids_before" \
    "a second up restarts nothing (same PIDs)"
empty=$(mktemp -d /tmp/flashsale-empty.XXXXXX)
check "deploy/stack down with nothing running succeeds" env FLASHSALE_STATE="$empty" "$stack" down
rm -rf "$empty"

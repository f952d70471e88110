# Foundation: the stack is whole, the schema guards the invariants by itself,
# and the admin tool moves a sale from PostgreSQL into Redis faithfully.

check "deploy/stack status: every part up" "$stack" status
topics=$(kcat -b "$FLASHSALE_KAFKA_BROKERS" -L 2>&1)
case "$topics" in
*'topic "flash-sale-orders" with 8 partitions'*) ok "kafka lists flash-sale-orders with 8 partitions" ;;
*) not_ok "kafka lists flash-sale-orders with 8 partitions" "$topics" ;;
esac
case "$topics" in
*'topic "flash-sale-orders.dlq"'*) ok "kafka lists the dead-letter topic" ;;
*) not_ok "kafka lists the dead-letter topic" "$topics" ;;
esac
check "kafka topics again keeps the existing topics" admin kafka topics
is "$(kcat -b "$FLASHSALE_KAFKA_BROKERS" -L -t flash-sale-orders 2>&1 | grep -c 'partition [0-9]*,')" "8" \
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
case "$ids" in
'{"saleId":'*'"itemIds":['*,*']}') ok "the example tests/data/sale.json creates a sale with its two items" ;;
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

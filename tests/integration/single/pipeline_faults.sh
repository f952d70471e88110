# shellcheck shell=sh disable=SC2046,SC2154 # set -- $(...) splits ids into words on purpose; sourced after lib.sh, whose variables it reads (sh -u stops on an unset one)
# The order pipeline under faults: the consumer killed in the middle of a
# batch (inside its transaction, and after its commit but before its
# offsets), and PostgreSQL stopped while orders arrive. Every 202 ends as
# exactly one order.

. "$top_srcdir/tests/integration/pipeline_lib.sh"

set -- $(new_sale -5 100)
sale=$1 item=$2
path=$(purchase_path "$sale")

# --- Killed inside the transaction: another session holds the item's row,
# so the consumer's batch waits in the middle of fs_place_orders.
"$stack" stop consumer >/dev/null
is "$(p_buy_all "$path" "k1-$sale" 30 "$FLASHSALE_STATE/k1-$sale")" "30" "30 purchases while the consumer is stopped"
psql -X -q -A -t "$FLASHSALE_PG" -c "BEGIN; SELECT 1 FROM items WHERE id = $item FOR UPDATE;
	SELECT pg_sleep(60) /* k1-$sale */; COMMIT;" >/dev/null 2>&1 &
locker=$!
p_until 10 1 psql_q "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(60) /* k1-$sale%' AND pid <> pg_backend_pid()"
"$stack" start consumer >/dev/null
if p_until 30 1 psql_q "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%fs_place_orders%'"; then
	ok "the consumer's batch waits inside its transaction"
else
	not_ok "the consumer's batch waits inside its transaction" "$p_out"
fi
kill -KILL "$(p_consumer_pid)"
# Its server process would not notice the dead client before it wrote the
# answer, after the commit: end it as a crash of the whole host would.
psql_q "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE wait_event_type = 'Lock'
	AND query LIKE '%fs_place_orders%' AND pid <> pg_backend_pid()" >/dev/null
psql_q "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(60) /* k1-$sale%' AND pid <> pg_backend_pid()" >/dev/null
wait "$locker" 2>/dev/null
is "$(p_count "sale_id = $sale")" "0" "the interrupted batch left nothing in the database"
"$stack" start consumer >/dev/null
consumer_caught_up 60
is "$(p_count "sale_id = $sale") $(p_count "sale_id = $sale AND status = 'PENDING'")" "30 30" \
    "after the restart every order is there exactly once (30 PENDING)"
is "$(p_sold "$item") $(p_stock "$sale" "$item") $(redis ZCARD "fs:{$sale}:unconfirmed")" "30 70 0" \
    "sold 30, 70 units left in Redis, every hold confirmed"

# --- Killed after its commit, before its offsets: Redis refuses writes for
# a while, so the consumer, its orders committed, cannot confirm the holds.
"$stack" stop consumer >/dev/null
is "$(p_buy_all "$path" "k2-$sale" 30 "$FLASHSALE_STATE/k2-$sale")" "30" "30 more purchases while the consumer is stopped"
redis CLIENT PAUSE 30000 WRITE >/dev/null
"$stack" start consumer >/dev/null
deadline=$(($(date +%s) + 30))
while [ "$(p_count "sale_id = $sale")" -le 30 ] && [ "$(date +%s)" -lt "$deadline" ]; do
	sleep 0.2
done
committed=$(p_count "sale_id = $sale")
sleep 1
if [ "$committed" -gt 30 ] && [ "$(redis ZCARD "fs:{$sale}:unconfirmed")" -gt 0 ]; then
	ok "the batch is committed ($((committed - 30)) rows) while its holds are unconfirmed"
else
	not_ok "the batch is committed while its holds are unconfirmed" "rows: $committed"
fi
kill -KILL "$(p_consumer_pid)"
redis CLIENT UNPAUSE >/dev/null
"$stack" start consumer >/dev/null
consumer_caught_up 60
is "$(p_count "sale_id = $sale") $(p_count "sale_id = $sale AND status = 'PENDING'")" "60 60" \
    "after the restart the redelivered batch is recorded once (60 PENDING)"
is "$(p_sold "$item") $(p_stock "$sale" "$item") $(redis ZCARD "fs:{$sale}:unconfirmed")" "60 40 0" \
    "sold 60, 40 units left, every hold confirmed"
is "$(psql_q "SELECT count(DISTINCT user_id) FROM orders WHERE sale_id = $sale")" "60" "60 distinct shoppers"

# --- PostgreSQL stopped while orders arrive: nothing lost.
set -- $(new_sale -5 50)
sale=$1 item=$2
path=$(purchase_path "$sale")
log_lines=$(wc -l <"$FLASHSALE_STATE/log/flashsale-consumer.log")
"$stack" stop postgres >/dev/null
is "$(p_buy_all "$path" "db-$sale" 20 "$FLASHSALE_STATE/db-$sale")" "20" \
    "with PostgreSQL stopped, purchases still answer 202"
tok=$(p_token_of "$FLASHSALE_STATE/db-$sale" "db-$sale-1")
sleep 2
ans=$(http GET "/api/flash-sales/orders/$(p_uuid)" "$tok")
is "${ans%% *} $(json_get "${ans#* }" error)" "503 TRY_AGAIN" "the order status answers 503 while the database is away"
if tail -n +"$((log_lines + 1))" "$FLASHSALE_STATE/log/flashsale-consumer.log" | grep -q 'will retry'; then
	ok "the consumer retries the batch while the database is away"
else
	not_ok "the consumer retries the batch while the database is away" \
	    "$(tail -n 5 "$FLASHSALE_STATE/log/flashsale-consumer.log")"
fi
"$stack" start postgres >/dev/null
consumer_caught_up 60
is "$(p_count "sale_id = $sale AND status = 'PENDING'") $(p_sold "$item")" "20 20" \
    "once it is back, all 20 orders are there, PENDING; sold 20"
is "$(redis ZCARD "fs:{$sale}:unconfirmed") $(p_stock "$sale" "$item")" "0 30" "every hold confirmed, 30 units left"
oid=$(psql_q "SELECT id FROM orders WHERE user_id = 'db-$sale-1'")
is "$(json_get "$(http GET "/api/flash-sales/orders/$oid" "$tok" | cut -d' ' -f2-)" status)" "PENDING" \
    "the order handler reconnects by itself"

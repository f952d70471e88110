# shellcheck shell=sh disable=SC2046 # set -- $(...) splits ids into words on purpose
# Running a sale with flashsale-admin: sale list, sale watch --once, sale
# close, sale extend and dlq replay, each with exact outputs and the rows
# they leave; each refusal changes nothing.

o_ms() { psql_q "SELECT floor(extract(epoch FROM $1) * 1000)::bigint FROM sales WHERE id = $2"; }
o_buy() { http POST "$1" "$(admin token mint --user "$2")" | cut -d' ' -f1; }

# sale list: the sale's line, its state and sums.
set -- $(new_sale -5 2 30)
o_sale=$1 o_item=$2
o_line=$(admin sale list | awk -v s="$o_sale" '$1 == s { $3 = ""; $4 = ""; print }')
is "$o_line" "$o_sale open   30 1 2 0 test sale" "sale list shows the open sale, its window and units"

# sale watch --once: the frame after two purchases sold the item out (the
# consumer has recorded both, the payment window of 30 s ends within the
# minute, nginx's marker closes the gate within its cache's second).
o_path=$(purchase_path "$o_sale")
is "$(o_buy "$o_path" "ow1-$o_sale") $(o_buy "$o_path" "ow2-$o_sale")" "202 202" "two shoppers buy the two units"
consumer_caught_up
o_deadline=$(($(date +%s) + 5))
until o_frame=$(admin sale watch "$o_sale" --once --origin "$FLASHSALE_ORIGIN_URL") &&
	case $o_frame in *"=sold-out"*) true ;; *) false ;; esac; do
	[ "$(date +%s)" -ge "$o_deadline" ] && break
	sleep 0.2
done
# The frame's lines by what they start with: the sale's line and the rates
# change from second to second, the rest is exact.
case $(printf '%s\n' "$o_frame" | grep '^sale ') in
"sale $o_sale \"test sale\"  open  ends "*) ok "watch: the sale's line" ;;
*) not_ok "watch: the sale's line" "$o_frame" ;;
esac
is "$(printf '%s\n' "$o_frame" | grep -v '^sale \|^purchases/s ')" "$(printf '%s\n' \
	"item     name                      quantity      left      held      sold   pending      paid" \
	"$(printf '%-8s %-24s %9s %9s %9s %9s %9s %9s' "$o_item" Phone 2 0 2 2 2 0)" \
	"expiring within 60 s: 2 orders" \
	"refunds owed: 0 (0 failing: 5 failed tries or more)" \
	"consumer lag: 0 messages" \
	"gate $FLASHSALE_ORIGIN_URL: $o_item=sold-out")" "watch --once: units, holds, orders, expiry, lag, gate"
case $(printf '%s\n' "$o_frame" | grep '^purchases/s ') in
"purchases/s $FLASHSALE_ORIGIN_URL: "*) ok "watch --once: the purchase answers per second of the origin" ;;
*) not_ok "watch --once: the purchase answers per second of the origin" "$o_frame" ;;
esac
refuse "watch refuses an unknown sale" admin sale watch 999999999 --once
refuse "watch refuses an origin that is not a URL" admin sale watch "$o_sale" --once --origin nowhere

# sale close: nothing sells after it, even with the URL handed out before.
set -- $(new_sale -5 10)
o_sale=$1 o_item=$2
o_path=$(purchase_path "$o_sale")
is "$(o_buy "$o_path" "oc1-$o_sale")" "202" "a shopper buys before the close"
o_out=$(admin sale close "$o_sale")
o_ends=$(o_ms ends_at "$o_sale")
case $o_out in
"sale $o_sale closed: it ends at "*) ok "sale close stops the sale" ;;
*) not_ok "sale close stops the sale" "$o_out" ;;
esac
is "$(redis HGET "fs:{$o_sale}:sale" ends)" "$o_ends" "Redis has the new end PostgreSQL has"
is "$(psql_q "SELECT ends_at <= now() FROM sales WHERE id = $o_sale")" "t" "the sale has ended"
is "$(o_buy "$o_path" "oc2-$o_sale")" "410" "a purchase with the earlier URL is sold out"
# The first order reaches PostgreSQL through the consumer: wait for it.
consumer_caught_up 20
is "$(redis GET "fs:{$o_sale}:stock:$o_item") $(psql_q "SELECT sold FROM items WHERE id = $o_item")" \
	"9 1" "nothing sold after the close"
case $(admin sale close "$o_sale") in
"sale $o_sale already ended at "*) ok "a second close says it ended, and succeeds" ;;
*) not_ok "a second close says it ended, and succeeds" ;;
esac
refuse "an ended sale is never extended" admin sale extend "$o_sale" 60
is "$(o_ms ends_at "$o_sale")" "$o_ends" "the refused extension changed nothing"

# A sale that has not started cannot be closed; an open one is extended.
set -- $(new_sale 300 5)
o_sale=$1
o_ends=$(o_ms ends_at "$o_sale")
refuse "a sale that has not started cannot be closed" admin sale close "$o_sale"
is "$(o_ms ends_at "$o_sale")" "$o_ends" "the refused close changed nothing"
o_out=$(admin sale extend "$o_sale" 120)
is "$(o_ms ends_at "$o_sale")" "$((o_ends + 120000))" "sale extend moves the end by 120 s"
is "$(redis HGET "fs:{$o_sale}:sale" ends)" "$((o_ends + 120000))" "in Redis too"
refuse "sale extend refuses 0 seconds" admin sale extend "$o_sale" 0
refuse "sale extend refuses a non-number" admin sale extend "$o_sale" 1x
is "$(o_ms ends_at "$o_sale")" "$((o_ends + 120000))" "the refused extensions changed nothing"

# dlq replay: PostgreSQL refuses three shoppers' orders (a trigger stands
# for a bug); each becomes a dead letter and its unit goes back. The bug is
# fixed, one of them buys again, and the replay re-takes a unit for each
# order that may have one: the first gets the last unit, the second holds
# an order already, the third finds none left. A second replay changes
# nothing.
set -- $(new_sale -5 2)
o_sale=$1 o_item=$2
o_path=$(purchase_path "$o_sale")
psql_q "CREATE FUNCTION o_refuse() RETURNS trigger LANGUAGE plpgsql AS \$\$ BEGIN
	IF NEW.user_id LIKE 'odlq-%' THEN
		RAISE EXCEPTION 'refused by the test' USING ERRCODE = 'check_violation';
	END IF; RETURN NEW; END \$\$;
	CREATE TRIGGER o_refuse BEFORE INSERT ON orders FOR EACH ROW EXECUTE FUNCTION o_refuse()" >/dev/null
o_ids=""
for o_who in a b c; do
	o_ans=$(http POST "$o_path" "$(admin token mint --user "odlq-$o_who-$o_sale")")
	o_ids="$o_ids $(json_get "${o_ans#* }" orderId)"
	consumer_caught_up
done
psql_q "DROP TRIGGER o_refuse ON orders; DROP FUNCTION o_refuse()" >/dev/null
# shellcheck disable=SC2086 # the three order ids, one word each
set -- $o_ids
o_a=$1 o_b=$2 o_c=$3
is "$(psql_q "SELECT count(*) FROM orders WHERE sale_id = $o_sale") $(redis GET "fs:{$o_sale}:stock:$o_item")" \
	"0 2" "the three refused orders are not recorded and their units are back"
o_ans=$(http POST "$o_path" "$(admin token mint --user "odlq-b-$o_sale")")
o_b2=$(json_get "${o_ans#* }" orderId)
consumer_caught_up
is "$(dlq_replay --sale "$o_sale")" "$(printf '%-36s %-12s %s\n' "$o_a" REFUSED replayed
	printf '%-36s %-12s %-13s %s\n' "$o_b" REFUSED shopper-holds "$o_b2"
	printf '%-36s %-12s %s\n' "$o_c" REFUSED sold-out
	echo "dead letters: 3 (replayed 1, sold-out 1, shopper-holds 1)")" \
	"dlq replay re-takes a unit for the one order that may have it"
consumer_caught_up
is "$(psql_q "SELECT status FROM orders WHERE id = '$o_a'") $(psql_q "SELECT sold FROM items WHERE id = $o_item") $(redis GET "fs:{$o_sale}:stock:$o_item")" \
	"PENDING 2 0" "the replayed order is recorded with its unit"
is "$(dlq_replay --sale "$o_sale" | grep '^dead letters: ')" "dead letters: 3 (recorded 1, sold-out 1, shopper-holds 1)" \
	"a second replay finds it recorded"
is "$(psql_q "SELECT count(*) FROM orders WHERE sale_id = $o_sale") $(psql_q "SELECT sold FROM items WHERE id = $o_item")" \
	"2 2" "and changes nothing"
refuse "dlq replay refuses a bad sale id" dlq_replay --sale x

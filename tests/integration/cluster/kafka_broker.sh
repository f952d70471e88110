# A Kafka broker is SIGKILLed mid-burst, then restarted. Both topics have
# three copies and min.insync.replicas=2, the producer acks=all with
# idempotence: every 202 is an order on two brokers at least, so none is
# missing from PostgreSQL afterwards, and none is recorded twice.
# First: no listener of any node (clients', controller's, replication's)
# answers PLAINTEXT, and the consumer's principal may not write an order
# (issue 33; single/kafka_auth.sh has the rest).

. "$top_srcdir/tests/integration/cluster_lib.sh"

plain_open=
for n in 1 2 3; do
	for port in $((FLASHSALE_PORT_BASE + 30 + n)) $((FLASHSALE_PORT_BASE + 33 + n)) \
		$((FLASHSALE_PORT_BASE + 40 + n)); do
		kb_out=$(kcat -b "127.0.0.1:$port" -L -m 3 2>&1) && plain_open="$plain_open $port"
		case $kb_out in
		*"Disconnected while requesting ApiVersion"*) ;;
		*) plain_open="$plain_open $port($kb_out)" ;;
		esac
	done
done
is "$plain_open" "" "no listener of the three Kafka nodes answers PLAINTEXT"
printf '1\t{"orderId":"forged-%s","saleId":1,"itemId":1,"userId":"mallory","reservedAt":1}\n' "$$" \
	>"$FLASHSALE_STATE/forged.tsv"
kb_out=$(kcat -F "$FLASHSALE_STATE/secrets/kafka-consumer.kcat" -b "$FLASHSALE_KAFKA_BROKERS" -P \
	-t "$FLASHSALE_KAFKA_TOPIC" -K '\t' -l "$FLASHSALE_STATE/forged.tsv" 2>&1)
case $kb_out in
*"Topic authorization failed"*) ok "the consumer's principal may not write an order to the cluster" ;;
*) not_ok "the consumer's principal may not write an order to the cluster" "$kb_out" ;;
esac
rm -f "$FLASHSALE_STATE/forged.tsv"

units=600
set -- $(new_sale -5 $units)
sale=$1 item=$2
# The leader of the order topic's partition 0 goes.
leader=$(fs_kcat -b "$FLASHSALE_KAFKA_BROKERS" -L -t "$FLASHSALE_KAFKA_TOPIC" 2>/dev/null |
	sed -n 's/^ *partition 0, leader \([0-9]*\),.*/\1/p')
case $leader in
[1-3]) ok "partition 0 of the order topic is led by kafka-$leader" ;;
*) not_ok "partition 0 of the order topic has a leader" "got: '$leader'" && leader=1 ;;
esac

k_pids_of "kafka-$leader"
k_burst kb "$sale" 3000 4
k_until_purchases 20
k_kill
wait "$k_burst_pid"
requests=$(wc -l <"$k_out" | tr -d ' ')
diag "during the kill: $requests requests, $(count_of 202 "$k_out") answered 202, $(count_of 503 "$k_out") 503"
check "kafka-$leader restarts" "$stack" start "kafka-$leader"
k_retry_rounds "$sale" "$k_out" >/dev/null
is "$(k_unanswered "$k_out")" "0" \
    "every shopper gets an answer (202 or 410), retrying a 503"
consumer_caught_up 60
k_sweep "$sale" "$item" "$k_out"
k_sell_rest kb "$sale"
k_figures "$sale" "$item" "$k_out"
is "$k_live $k_won_failed" "$units 0" "$units live orders; no order of a shopper told 202 FAILED"
k_topic "$sale" kb
k_report "kafka broker killed" 1 "$requests"
# Back to three copies of every partition (bounded wait).
deadline=$(($(date +%s) + 60))
until [ "$(fs_kcat -b "$FLASHSALE_KAFKA_BROKERS" -L -t "$FLASHSALE_KAFKA_TOPIC" 2>/dev/null |
	grep -c 'isrs: [1-3],[1-3],[1-3]$')" = 8 ] || [ "$(date +%s)" -ge "$deadline" ]; do
	sleep 0.5
done
is "$(fs_kcat -b "$FLASHSALE_KAFKA_BROKERS" -L -t "$FLASHSALE_KAFKA_TOPIC" 2>/dev/null | grep -c 'isrs: [1-3],[1-3],[1-3]$')" \
    "8" "kafka-$leader caught up: all 8 partitions have 3 replicas in sync"

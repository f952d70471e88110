# shellcheck shell=sh
# The cluster topology's three Kafka nodes: their addresses and start
# (the rest is stack.d/kafka.sh's, per node; sourced by deploy/stack).

# The peer links of Kafka node I to node J go through flashsale-relay:
# the controllers of node I are 127.0.3.IJ (its own, 127.0.0.1), the
# brokers replicate from node J's listener on 127.0.4.J (kafka_peer_ip I J).
kafka_peer_ip() {
	if [ "$1" = "$2" ]; then
		echo "127.0.4.$1"
	else
		echo "127.0.3.$1$2"
	fi
}
kafka_voters_of() {
	for j in $KAFKA_NODES; do
		if [ "$1" = "$j" ]; then
			printf '%s@127.0.0.1:%s,' "$j" $((BASE + 33 + j))
		else
			printf '%s@%s:%s,' "$j" "$(kafka_peer_ip "$1" "$j")" $((BASE + 33 + j))
		fi
	done | sed 's/,$//'
}

# Kafka node N (1-3): the variables of start_kafka_node and friends.
use_kafka() {
	use_stack
	KAFKA_NAME=kafka-$1
	KAFKA_NODE_ID=$1
	KAFKA_PORT=$((BASE + 30 + $1))
	KAFKA_CONTROLLER_PORT=$((BASE + 33 + $1))
	KAFKA_REPLICATION_PORT=$((BASE + 40 + $1))
	KAFKA_PEER_IP=$(kafka_peer_ip "$1" "$1")
	KAFKA_VOTERS=$(kafka_voters_of "$1")
	KAFKA_DIR=$STATE/kafka-$1
	KAFKA_DATA=$KAFKA_DIR/data
	KAFKA_CONF=$CONF/kafka-$1.properties
	# Its certificate names every address it is dialled at: 127.0.0.1 by
	# the clients, its replication address and, by each other node I, the
	# relay's address of its controller (kafka_peer_ip I N).
	KAFKA_SAN=IP:127.0.0.1,IP:$KAFKA_PEER_IP
	for i in $KAFKA_NODES; do
		[ "$i" = "$1" ] || KAFKA_SAN=$KAFKA_SAN,IP:$(kafka_peer_ip "$i" "$1")
	done
}

# All three brokers in the metadata.
kafka_cluster_ready() {
	kafka_kcat -b "$KAFKA_BROKERS" -L -m 3 2>/dev/null | grep -q '^ *3 brokers:'
}

start_kafka_cluster() {
	for n in $KAFKA_NODES; do
		use_kafka "$n"
		KAFKA_NOWAIT=1
		start_kafka_node
	done
	KAFKA_NOWAIT=
	use_stack
	wait_for 120 kafka_cluster_ready || die "the three Kafka brokers do not answer; see $LOG/kafka-*.log"
	create_topics
}

# shellcheck shell=sh
# deploy/stack's part Kafka (KRaft) and its topics: start, ready, stop, status
# (sourced by deploy/stack).

kafka_java() {
	java -Djava.io.tmpdir="$KAFKA_DIR/tmp" -Dkafka.logs.dir="$LOG" \
		-Dlog4j.configuration="file:$CONF/log4j.properties" -cp "$KAFKA_LIB/*" "$@"
}

# One Kafka node: KAFKA_NAME (its part name and files), KAFKA_CONF,
# KAFKA_DIR, KAFKA_PORT; stack.d/cluster-kafka.sh sets them for each node.
KAFKA_NAME=kafka
KAFKA_CONF=$CONF/server.properties

start_kafka() {
	start_kafka_node
	create_topics
}

start_kafka_node() {
	if [ -n "$(part_pids "$KAFKA_NAME")" ]; then
		say "$KAFKA_NAME" "already running (pid $(cat "$RUN/$KAFKA_NAME.pid"))"
		wait_for 90 ready_kafka_node || die "$KAFKA_NAME does not answer; see $LOG/$KAFKA_NAME.log"
		return 0
	fi
	[ -f "$KAFKA_LIB/kafka_2.13-3.9.1.jar" ] ||
		die "no Kafka jars in $KAFKA_LIB: run deploy/install-deps"
	mkdir -p "$KAFKA_DATA" "$KAFKA_DIR/tmp"
	# zstd and snappy unpack native code into java.io.tmpdir.
	printf '#!/bin/sh\nexit 0\n' >"$KAFKA_DIR/tmp/exec-check"
	chmod 755 "$KAFKA_DIR/tmp/exec-check"
	"$KAFKA_DIR/tmp/exec-check" ||
		die "$KAFKA_DIR/tmp is on a noexec mount: put FLASHSALE_STATE elsewhere"
	rm -f "$KAFKA_DIR/tmp/exec-check"
	render "$here/kafka/server.properties.in" "$KAFKA_CONF"
	cp "$here/kafka/log4j.properties" "$CONF/log4j.properties"
	# Format the log directory once, with the stack's cluster id (every
	# node of a cluster shares it).
	if [ ! -f "$KAFKA_DATA/meta.properties" ]; then
		if [ ! -s "$STATE/kafka-cluster.id" ]; then
			kafka_java kafka.tools.StorageTool random-uuid >"$STATE/kafka-cluster.id" \
				2>>"$LOG/$KAFKA_NAME.log" ||
				die "kafka StorageTool random-uuid failed; see $LOG/$KAFKA_NAME.log"
		fi
		kafka_java kafka.tools.StorageTool format -t "$(cat "$STATE/kafka-cluster.id")" \
			-c "$KAFKA_CONF" >>"$LOG/$KAFKA_NAME.log" 2>&1 ||
			die "kafka StorageTool format failed; see $LOG/$KAFKA_NAME.log"
	fi
	spawn "$RUN/$KAFKA_NAME.pid" "$LOG/$KAFKA_NAME.log" java -Xms256m -Xmx256m $KAFKA_JAVA_OPTS \
		-Djava.io.tmpdir="$KAFKA_DIR/tmp" -Dkafka.logs.dir="$LOG" \
		-Dlog4j.configuration="file:$CONF/log4j.properties" \
		-cp "$KAFKA_LIB/*" kafka.Kafka "$KAFKA_CONF"
	# A node of a cluster that is starting answers once the quorum has a
	# leader: the caller waits for all of them together (KAFKA_NOWAIT=1).
	if [ -z "${KAFKA_NOWAIT:-}" ]; then
		wait_for 90 ready_kafka_node || die "$KAFKA_NAME did not answer; see $LOG/$KAFKA_NAME.log"
	fi
	say "$KAFKA_NAME" "up (pid $(cat "$RUN/$KAFKA_NAME.pid"), 127.0.0.1:$KAFKA_PORT)"
}

ready_kafka_node() {
	[ -n "$(part_pids "$KAFKA_NAME")" ] &&
		kcat -b "127.0.0.1:$KAFKA_PORT" -L -m 2 >/dev/null 2>&1
}

ready_kafka() {
	ready_kafka_node
}

# True when TOPIC exists with PARTITIONS partitions (and, given, every
# partition with REPLICAS in sync).
topic_exists() {
	kcat -b "$KAFKA_BROKERS" -L -m 5 -t "$1" 2>/dev/null >"$CONF/topic.meta" || return 1
	grep -q "topic \"$1\" with $2 partitions" "$CONF/topic.meta" || return 1
	[ -z "${3:-}" ] && return 0
	[ "$(grep -c "partition .*isrs: " "$CONF/topic.meta")" = "$2" ] &&
		! grep "partition .*isrs: " "$CONF/topic.meta" |
			awk -v n="$3" '{ sub(/.*isrs: /, ""); if (split($0, a, ",") != n) bad = 1 } END { exit !bad }'
}

create_topics_once() {
	FLASHSALE_KAFKA_BROKERS=$KAFKA_BROKERS FLASHSALE_KAFKA_TOPIC=$TOPIC \
		"$BINDIR/flashsale-admin" kafka topics >>"$LOG/kafka-topics.log" 2>&1
}

# kcat cannot create topics: flashsale-admin does, with librdkafka's admin
# API (an existing topic is kept), replicated over the brokers it is given.
create_topics() {
	if topic_exists "$TOPIC" 8 && topic_exists "$TOPIC.dlq" 1; then
		return 0
	fi
	[ -x "$BINDIR/flashsale-admin" ] || die "$BINDIR/flashsale-admin not built: it creates the topics"
	# Brokers that have just joined may still refuse or time out (the
	# controller catching up, a busy machine): the command keeps what
	# exists, so it is tried again for a bounded time.
	wait_for 60 create_topics_once ||
		die "creating topics failed ($(tail -n 1 "$LOG/kafka-topics.log")); see $LOG/kafka-topics.log"
	wait_for 15 topic_exists "$TOPIC" 8 "$KAFKA_REPLICAS" &&
		wait_for 15 topic_exists "$TOPIC.dlq" 1 "$KAFKA_REPLICAS" ||
		die "topics $TOPIC (8 partitions) and $TOPIC.dlq (1) not as expected; see kcat -L"
	say kafka "topics $TOPIC (8 partitions), $TOPIC.dlq (1), replication $KAFKA_REPLICAS, min.insync.replicas $KAFKA_MIN_ISR"
}

stop_kafka() {
	# A controlled shutdown takes a few seconds.
	stop_pidfile "$KAFKA_NAME" "$RUN/$KAFKA_NAME.pid" 60
}

status_kafka() {
	status_pidfile "$KAFKA_NAME" ready_kafka_node
}

# shellcheck shell=sh
# deploy/stack's part Kafka (KRaft) and its topics: start, ready, stop, status
# (sourced by deploy/stack).

kafka_java() {
	java -Djava.io.tmpdir="$KAFKA_DIR/tmp" -Dkafka.logs.dir="$LOG" \
		-Dlog4j.configuration="file:$CONF/log4j.properties" -cp "$KAFKA_LIB/*" "$@"
}

# The Kafka principals (SCRAM users, "flashsale-NAME"): the brokers' own,
# the operator's (topics and ACLs), and one per job with only what it needs
# (flashsale-admin kafka grants; lib/ordertopic.h).
KAFKA_USERS="broker operator purchase consumer monitor replayer"

# The principals' passwords (made once, 0600), kcat's configuration for
# each (SASL_SSL as that principal: kafka_kcat and the tests use them),
# and the certificate authority, whose certificate the clients read.
ensure_kafka_secrets() {
	for kafka_user in $KAFKA_USERS; do
		ensure_secret "kafka-$kafka_user.password"
		(
			umask 077
			printf 'security.protocol=SASL_SSL\nsasl.mechanisms=SCRAM-SHA-512\nsasl.username=flashsale-%s\nsasl.password=%s\nssl.ca.location=%s\nssl.endpoint.identification.algorithm=https\n' \
				"$kafka_user" "$(cat "$SECRETS/kafka-$kafka_user.password")" "$TLS_PUBLIC/ca.crt" \
				>"$SECRETS/kafka-$kafka_user.kcat.tmp" &&
				mv "$SECRETS/kafka-$kafka_user.kcat.tmp" "$SECRETS/kafka-$kafka_user.kcat"
		) || die "cannot write $SECRETS/kafka-$kafka_user.kcat"
	done
	tls_ca "$TLS_CA" || die "cannot make the certificate authority in $TLS_CA"
	mkdir -p "$TLS_PUBLIC"
	chmod 755 "$TLS_PUBLIC"
	if ! cmp -s "$TLS_CA/ca.crt" "$TLS_PUBLIC/ca.crt"; then
		cp "$TLS_CA/ca.crt" "$TLS_PUBLIC/ca.crt.tmp" && chmod 644 "$TLS_PUBLIC/ca.crt.tmp" &&
			mv "$TLS_PUBLIC/ca.crt.tmp" "$TLS_PUBLIC/ca.crt" || die "cannot write $TLS_PUBLIC/ca.crt"
	fi
}

# kcat as the operator, over SASL_SSL.
kafka_kcat() {
	kcat -F "$SECRETS/kafka-operator.kcat" "$@"
}

# The node's certificate for KAFKA_SAN and its PEM key store (key, then
# certificate), with the authority's certificate beside them.
kafka_node_tls() {
	(umask 077 && mkdir -p "$KAFKA_DIR/tls") || return 1
	chmod 700 "$KAFKA_DIR/tls"
	tls_cert "$TLS_CA" "$KAFKA_DIR/tls" "$KAFKA_NAME" "$KAFKA_SAN" || return 1
	(
		umask 077
		cat "$KAFKA_DIR/tls/$KAFKA_NAME.key" "$KAFKA_DIR/tls/$KAFKA_NAME.crt" \
			>"$KAFKA_DIR/tls/$KAFKA_NAME.pem.tmp" &&
			mv "$KAFKA_DIR/tls/$KAFKA_NAME.pem.tmp" "$KAFKA_DIR/tls/$KAFKA_NAME.pem"
	) || return 1
	cp "$TLS_PUBLIC/ca.crt" "$KAFKA_DIR/tls/ca.crt"
}

# The JAAS lines of the node's listeners, with the brokers' password: the
# controllers' PLAIN (the one user, the brokers), the SCRAM listeners'
# (the broker's own login to its peers). Appended to the rendered
# configuration (0600) by the shell's printf: never on a command line.
kafka_jaas() {
	kafka_password=$(cat "$SECRETS/kafka-broker.password")
	printf 'listener.name.controller.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="flashsale-broker" password="%s" user_flashsale-broker="%s";\n' \
		"$kafka_password" "$kafka_password"
	for kafka_listener in client replication; do
		printf 'listener.name.%s.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="flashsale-broker" password="%s";\n' \
			"$kafka_listener" "$kafka_password"
	done
	kafka_password=
}

# StorageTool's arguments that format the node with the cluster's id and
# every principal's SCRAM credentials (KIP-900), one a line: java reads
# them from a file (java @FILE, 0600), so no password is on a command line.
kafka_format_args() {
	# The id is the last line of what random-uuid printed (log4j may speak first).
	printf '%s\n' kafka.tools.StorageTool format -t "$(tail -n 1 "$STATE/kafka-cluster.id")" -c "$KAFKA_CONF"
	for kafka_user in $KAFKA_USERS; do
		printf -- '--add-scram\nSCRAM-SHA-512=[name=flashsale-%s,password=%s]\n' \
			"$kafka_user" "$(cat "$SECRETS/kafka-$kafka_user.password")"
	done
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
	kafka_node_tls || die "cannot make $KAFKA_NAME's certificate in $KAFKA_DIR/tls"
	# The configuration holds the brokers' password: root's alone.
	(umask 077 && render "$here/kafka/server.properties.in" "$KAFKA_CONF" && kafka_jaas >>"$KAFKA_CONF") ||
		die "cannot write $KAFKA_CONF"
	cp "$here/kafka/log4j.properties" "$CONF/log4j.properties"
	# A log directory formatted before the brokers took SASL has none of
	# the principals: the brokers could not even reach each other.
	if [ -f "$KAFKA_DATA/meta.properties" ] && [ ! -f "$KAFKA_DIR/scram-users" ]; then
		die "$KAFKA_DATA was formatted without the SCRAM users that SASL_SSL needs: drain the consumer, stop the stack and remove $KAFKA_DIR (docs/OPERATING.md)"
	fi
	# Format the log directory once, with the stack's cluster id (every
	# node of a cluster shares it) and the principals' SCRAM credentials.
	if [ ! -f "$KAFKA_DATA/meta.properties" ]; then
		if [ ! -s "$STATE/kafka-cluster.id" ]; then
			kafka_java kafka.tools.StorageTool random-uuid >"$STATE/kafka-cluster.id" \
				2>>"$LOG/$KAFKA_NAME.log" ||
				die "kafka StorageTool random-uuid failed; see $LOG/$KAFKA_NAME.log"
		fi
		(umask 077 && kafka_format_args >"$KAFKA_DIR/format.args") ||
			die "cannot write $KAFKA_DIR/format.args"
		# Its complaints echo the arguments, passwords too: they stay in a
		# file of root's alone, out of the log.
		if ! (umask 077 && kafka_java "@$KAFKA_DIR/format.args" >"$KAFKA_DIR/format.out" 2>&1); then
			rm -f "$KAFKA_DIR/format.args"
			die "kafka StorageTool format failed; see $KAFKA_DIR/format.out (0600: it may show the passwords)"
		fi
		rm -f "$KAFKA_DIR/format.args"
		grep '^Formatting' "$KAFKA_DIR/format.out" >>"$LOG/$KAFKA_NAME.log" || true
		rm -f "$KAFKA_DIR/format.out"
		echo "$KAFKA_USERS" >"$KAFKA_DIR/scram-users"
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
		kafka_kcat -b "127.0.0.1:$KAFKA_PORT" -L -m 2 >/dev/null 2>&1
}

ready_kafka() {
	ready_kafka_node
}

# True when TOPIC exists with PARTITIONS partitions (and, given, every
# partition with REPLICAS in sync).
topic_exists() {
	kafka_kcat -b "$KAFKA_BROKERS" -L -m 5 -t "$1" 2>/dev/null >"$CONF/topic.meta" || return 1
	grep -q "topic \"$1\" with $2 partitions" "$CONF/topic.meta" || return 1
	[ -z "${3:-}" ] && return 0
	[ "$(grep -c "partition .*isrs: " "$CONF/topic.meta")" = "$2" ] &&
		! grep "partition .*isrs: " "$CONF/topic.meta" |
			awk -v n="$3" '{ sub(/.*isrs: /, ""); if (split($0, a, ",") != n) bad = 1 } END { exit !bad }'
}

# flashsale-admin kafka COMMAND as the operator.
kafka_admin() {
	FLASHSALE_KAFKA_BROKERS=$KAFKA_BROKERS FLASHSALE_KAFKA_TOPIC=$TOPIC \
		FLASHSALE_KAFKA_USER=flashsale-operator \
		FLASHSALE_KAFKA_PASSWORD_FILE=$SECRETS/kafka-operator.password \
		FLASHSALE_KAFKA_CA_FILE=$TLS_PUBLIC/ca.crt \
		"$BINDIR/flashsale-admin" kafka "$1" >>"$LOG/kafka-topics.log" 2>&1
}

create_topics_once() {
	kafka_admin topics
}

# kcat cannot create topics: flashsale-admin does, with librdkafka's admin
# API (an existing topic is kept), replicated over the brokers it is given;
# then it grants each job's principal its ACLs (kept when they exist).
create_topics() {
	[ -x "$BINDIR/flashsale-admin" ] || die "$BINDIR/flashsale-admin not built: it creates the topics"
	wait_for 30 kafka_admin grants ||
		die "granting the Kafka ACLs failed ($(tail -n 1 "$LOG/kafka-topics.log")); see $LOG/kafka-topics.log"
	if topic_exists "$TOPIC" 8 && topic_exists "$TOPIC.dlq" 1; then
		return 0
	fi
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

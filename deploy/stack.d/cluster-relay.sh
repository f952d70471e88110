# shellcheck shell=sh
# The cluster topology's peer relay: start, ready, stop, status (sourced
# by deploy/stack; stack.d/cluster.sh).

# deploy/relay/flashsale-relay: each Redis node's client and bus ports on
# its peer address, and the connections dialled from that address, labelled
# redis-m1 ... redis-r3 (`flashsale-relay -c $RUN/relay.sock cut redis-m1`);
# the Kafka nodes' controller and replication links, labelled kafka-1..3;
# a PostgreSQL node's port on its peer address and its keeper's link to
# the monitor, labelled pg-1, pg-2 (stack.d/cluster-pg.sh; the keeper gives
# up on a silent monitor after PG_KEEPER_GIVES_UP_MS, so the relay resets
# a cut keeper link then, as the keeper's kernel would).
relay_specs() {
	for n in $REDIS_NODES; do
		ip=$(redis_peer_ip "$n")
		p=$(redis_node_port "$n")
		b=$(redis_bus_port "$n")
		echo "redis-$n@$ip:$p=127.0.0.1:$p redis-$n@$ip:$b=127.0.0.1:$b redis-$n@$ip"
	done
	# Kafka: node i's controller links to node j, labelled with both; the
	# fetches from node j's replication listener, labelled kafka-j (who
	# fetches cannot be told: a broker cut off from the controllers is
	# fenced, and a fenced broker is out of every in-sync replica set).
	for i in $KAFKA_NODES; do
		r=$((BASE + 40 + i))
		echo "kafka-$i@$(kafka_peer_ip "$i" "$i"):$r=127.0.0.1:$r"
		for j in $KAFKA_NODES; do
			[ "$i" = "$j" ] && continue
			c=$((BASE + 33 + j))
			echo "kafka-$i,kafka-$j@$(kafka_peer_ip "$i" "$j"):$c=127.0.0.1:$c"
		done
	done
	for n in $PG_NODES; do
		p=$(pg_node_port "$n")
		echo "pg-$n@$(pg_peer_ip "$n"):$p=127.0.0.1:$p"
		echo "pg-$n@$(pg_monitor_ip "$n"):$PORT_PG_MONITOR=127.0.0.1:$PORT_PG_MONITOR/$PG_KEEPER_GIVES_UP_MS"
	done
}

start_relay() {
	prog=$BINDIR/deploy/relay/flashsale-relay
	if [ -n "$(part_pids relay)" ]; then
		say relay "already running (pid $(cat "$RUN/relay.pid"))"
		return 0
	fi
	[ -x "$prog" ] || die "$(not_built "${prog#"$BINDIR"/}")"
	# shellcheck disable=SC2046
	spawn "$RUN/relay.pid" "$LOG/relay.log" "$prog" "$RUN/relay.sock" $(relay_specs)
	wait_for 10 ready_relay || die "flashsale-relay does not answer; see $LOG/relay.log"
	say relay "up (pid $(cat "$RUN/relay.pid"), the peer links of Redis, Kafka and PostgreSQL)"
}

ready_relay() {
	[ -n "$(part_pids relay)" ] &&
		"$BINDIR/deploy/relay/flashsale-relay" -c "$RUN/relay.sock" show >/dev/null 2>&1
}

stop_relay() {
	stop_pidfile relay "$RUN/relay.pid" 5
}

# "up (pid ...), relayed N, cut LABEL..." : a cut shows until healed.
status_relay() {
	pids=$(part_pids relay)
	if [ -n "$pids" ] && sr_show=$("$BINDIR/deploy/relay/flashsale-relay" -c "$RUN/relay.sock" show 2>/dev/null); then
		say relay "up (pid $(echo $pids), ${sr_show#ok })"
		return 0
	fi
	say relay "down"
	return 1
}

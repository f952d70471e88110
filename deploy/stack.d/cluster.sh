# shellcheck shell=sh
# shellcheck disable=SC2034 # the variables of the single topology's parts, set for the cluster
# The cluster topology of deploy/stack, sourced by it (after its
# stack.d/cluster-*.sh parts) when the topology is
# "cluster" (`deploy/stack up --cluster`, or FLASHSALE_TOPOLOGY=cluster).
# The same programs and the same functions as the single topology, more of
# each, on loopback, under the one state directory:
#
#   redis-m1..m3   Redis Cluster masters on base+11..13, their replicas
#   redis-r1..r3   on base+14..16 (rN started as mN's replica; a failover
#                  swaps the roles), cluster bus on base+21..26; AOF with
#                  appendfsync everysec on every node; the stack's ACL users
#                  (flashsale-admin also replicates and forms the cluster)
#   relay          flashsale-relay: every link between Redis nodes (cluster
#                  bus and replication) goes through it, so that a fault
#                  test can cut one node off while its clients still reach
#                  it (a node announces 127.0.2.N, where the relay listens,
#                  and dials from there; clients get 127.0.0.1); so do the
#                  Kafka nodes' and the PostgreSQL nodes' peer links
#   pg-monitor     PostgreSQL under pg_auto_failover (cluster-pg.sh):
#   pg-1, pg-2     the monitor (base+50) and two nodes (base+51, +52), one
#                  primary and one synchronous standby
#   kafka-1..3     KRaft, each broker (base+31..33) and controller
#                  (base+34..36), replication listener (base+41..43, where
#                  the other brokers reach it through the relay); both topics replicated 3 times with
#                  min.insync.replicas=2, the group offsets likewise
#   origin-a, -b   two origin hosts, 127.0.0.2 and 127.0.0.3, port base+1
#                  (base+18 with TLS, the edge's link: its client
#                  certificate, stack.d/cluster-origin.sh):
#                  nginx and every handler each, with their own run, log,
#                  metrics and sold-out marker directories under
#                  $STATE/origin-X; each purchase handler listens to the
#                  restocks of the whole cluster, and every status push goes
#                  to both nchan publishers
#   consumer-1, -2 two members of the consumer group (their environment is
#                  that of origin-a and origin-b)
#   provider, varnish, prometheus   one each (base+8, base+0 with a
#                  round-robin director over the origins, base+9 scraping
#                  both origins)
#
# With the default test base 28080 the highest port is 28122: below the
# ephemeral range, and clear of the single topology's base+0..9 but for the
# parts that are the same in both (edge, origin port, PostgreSQL, provider,
# Prometheus).

ORIGINS="a b"
REDIS_NODES="m1 m2 m3 r1 r2 r3"
KAFKA_NODES="1 2 3"
CONSUMERS="1 2"

# What the programs are given: every node as a seed, every broker.
REDIS_ADDR=$(for n in $REDIS_NODES; do printf '127.0.0.1:%s,' "$(redis_node_port "$n")"; done)
REDIS_ADDR=${REDIS_ADDR%,}
KAFKA_BROKERS=127.0.0.1:$((BASE + 31)),127.0.0.1:$((BASE + 32)),127.0.0.1:$((BASE + 33))
KAFKA_VOTERS=1@127.0.0.1:$((BASE + 34)),2@127.0.0.1:$((BASE + 35)),3@127.0.0.1:$((BASE + 36))
KAFKA_REPLICAS=3
KAFKA_MIN_ISR=2
NCHAN_PUB="unix:$STATE/origin-a/run/nchan/pub.sock:/pub unix:$STATE/origin-b/run/nchan/pub.sock:/pub"
PROMETHEUS_TARGETS=${FLASHSALE_PROMETHEUS_TARGETS:-$ORIGIN_A:$PORT_ORIGIN $ORIGIN_B:$PORT_ORIGIN}

PARTS="logkeeper relay redis-m1 redis-m2 redis-m3 redis-r1 redis-r2 redis-r3 pg-monitor pg-1 pg-2 kafka-1 kafka-2 kafka-3 consumer-1 consumer-2 provider origin-a origin-b varnish"

# The stack's own directories; an origin host's replace them (use_origin).
STACK_RUN=$RUN
STACK_CONF=$CONF
STACK_LOG=$LOG
STACK_METRICS_DIR=$METRICS_DIR
STACK_SOLDOUT_DIR=$SOLDOUT_DIR
STACK_TLS_KEYS=$TLS_KEYS
# The logkeeper rotates the stack's logs and the origin hosts'.
LOG_DIRS="$LOG $STATE/origin-a/log $STATE/origin-b/log"

# Makes the single topology's functions act on the stack's shared parts.
use_stack() {
	RUN=$STACK_RUN
	CONF=$STACK_CONF
	LOG=$STACK_LOG
	METRICS_DIR=$STACK_METRICS_DIR
	SOLDOUT_DIR=$STACK_SOLDOUT_DIR
	PUB_SOCK=$RUN/nchan/pub.sock
	NGINX_PREFIX=$STATE/nginx
	ORIGIN_HOST=$ORIGIN_A
	TLS_KEYS=$STACK_TLS_KEYS
}

# Consumer N runs next to origin host a (1) or b (2): their environment.
use_consumer() {
	case $1 in
	1) use_origin a ;;
	2) use_origin b ;;
	*) die "no consumer '$1'" ;;
	esac
	CONSUMER=consumer-$1
}

# "deploy/stack env" speaks for origin host a.
select_env() {
	use_origin a
}

# Checks PART and points the functions at it.
check_part() {
	case " $PARTS $OPTIONAL_PARTS " in
	*" $1 "*) select_part "$1" ;;
	*) die "unknown part '$1' (parts: $PARTS $OPTIONAL_PARTS)" ;;
	esac
}

select_part() {
	use_stack
	case $1 in
	kafka-*) use_kafka "${1#kafka-}" ;;
	consumer-*) use_consumer "${1#consumer-}" ;;
	origin-*) use_origin "${1#origin-}" ;;
	esac
}

part_do() {
	select_part "$2"
	case $1:$2 in
	*:redis-*) "$1_redis_node" "${2#redis-}" ;;
	start:kafka-*) start_kafka_node ;;
	*:kafka-*) "$1_kafka" ;;
	*:consumer-*) "$1_consumer" ;;
	*:origin-*) "$1_origin" "${2#origin-}" ;;
	*:pg-monitor) "$1_pg_monitor" ;;
	*:pg-[1-9]) "$1_pg_node" "${2#pg-}" ;;
	*) "$1_$2" ;;
	esac
}

cmd_up() {
	started=$(now)
	use_stack
	ensure_dirs
	start_logkeeper
	start_relay
	REDIS_NOWAIT=1
	for n in $REDIS_NODES; do
		start_redis_node "$n"
	done
	REDIS_NOWAIT=
	create_redis_cluster
	start_pg_cluster
	start_kafka_cluster
	start_provider
	for o in $ORIGINS; do
		start_origin "$o"
	done
	for c in $CONSUMERS; do
		use_consumer "$c"
		start_consumer
	done
	use_stack
	start_varnish
	say stack "cluster up in $(($(now) - started))s (state $STATE, edge http://127.0.0.1:$PORT_EDGE/)"
}

# Brokers and Redis nodes stop together: one by one, the last broker would
# wait for a quorum that is gone.
cmd_down() {
	use_stack
	if [ -f "$RUN/prometheus.pid" ]; then
		stop_prometheus
	fi
	stop_varnish
	for o in $ORIGINS; do
		stop_origin "$o"
	done
	for c in $CONSUMERS; do
		use_consumer "$c"
		stop_consumer
	done
	use_stack
	stop_provider
	# shellcheck disable=SC2046 # one word per part
	stop_together 60 kafka $(for n in $KAFKA_NODES; do echo "kafka-$n"; done)
	# The monitor first: stopping a primary must start no failover.
	stop_pg_monitor
	stop_pg_node 2
	stop_pg_node 1
	# shellcheck disable=SC2046 # one word per part
	stop_together 10 redis $(for n in $REDIS_NODES; do echo "redis-$n"; done)
	stop_relay
	stop_logkeeper
}

# stop_together GRACE WHAT PART...: SIGTERM to every part at once.
stop_together() {
	st_grace=$1
	st_what=$2
	shift 2
	st_pids=$(for p in "$@"; do part_pids "$p"; done)
	# shellcheck disable=SC2086 # one word per PID
	kill_pids "$st_grace" $st_pids
	for p in "$@"; do
		rm -f "$RUN/$p.pid"
	done
	if [ -n "$st_pids" ]; then
		say "$st_what" "stopped $* (pid $(one_line "$st_pids"))"
	else
		say "$st_what" "not running"
	fi
}

cmd_status() {
	rc=0
	for part in $PARTS $OPTIONAL_PARTS; do
		part_do status "$part" || rc=1
	done
	use_stack
	return $rc
}

# shellcheck shell=sh
# The cluster topology of deploy/stack, sourced by it when the topology is
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
#   pg-monitor     PostgreSQL under pg_auto_failover (deploy/cluster_pg.sh):
#   pg-1, pg-2     the monitor (base+50) and two nodes (base+51, +52), one
#                  primary and one synchronous standby
#   kafka-1..3     KRaft, each broker (base+31..33) and controller
#                  (base+34..36), replication listener (base+41..43, where
#                  the other brokers reach it through the relay); both topics replicated 3 times with
#                  min.insync.replicas=2, the group offsets likewise
#   origin-a, -b   two origin hosts, 127.0.0.2 and 127.0.0.3, port base+1:
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

# Ports of a Redis node (m1 ... r3) and of its cluster bus.
redis_node_port() {
	case $1 in
	m[1-3]) echo $((BASE + 10 + ${1#m})) ;;
	r[1-3]) echo $((BASE + 13 + ${1#r})) ;;
	*) die "no Redis node '$1'" ;;
	esac
}
redis_bus_port() {
	echo $(($(redis_node_port "$1") + 10))
}

# The address a Redis node has for its peers: 127.0.2.1 (m1) ... 127.0.2.6
# (r3). The node announces it to the cluster and dials its peers from it;
# flashsale-relay listens there on the node's ports and passes the bytes
# on to 127.0.0.1, unless a test cut the node off. Clients are told
# 127.0.0.1 (the node's hostname), so purchases never take the relay.
redis_peer_ip() {
	case $1 in
	m[1-3]) echo "127.0.2.${1#m}" ;;
	r[1-3]) echo "127.0.2.$((3 + ${1#r}))" ;;
	*) die "no Redis node '$1'" ;;
	esac
}

# What the programs are given: every node as a seed, every broker.
REDIS_ADDR=$(for n in $REDIS_NODES; do printf '127.0.0.1:%s,' "$(redis_node_port "$n")"; done)
REDIS_ADDR=${REDIS_ADDR%,}
KAFKA_BROKERS=127.0.0.1:$((BASE + 31)),127.0.0.1:$((BASE + 32)),127.0.0.1:$((BASE + 33))
KAFKA_VOTERS=1@127.0.0.1:$((BASE + 34)),2@127.0.0.1:$((BASE + 35)),3@127.0.0.1:$((BASE + 36))
KAFKA_REPLICAS=3
KAFKA_MIN_ISR=2
NCHAN_PUB="unix:$STATE/origin-a/run/nchan/pub.sock:/pub unix:$STATE/origin-b/run/nchan/pub.sock:/pub"
PROMETHEUS_TARGETS=${FLASHSALE_PROMETHEUS_TARGETS:-$ORIGIN_A:$PORT_ORIGIN $ORIGIN_B:$PORT_ORIGIN}
# The operator's user also replicates (masteruser) and forms the cluster.
REDIS_ADMIN_EXTRA="+psync +replconf +sync +cluster|addslots +cluster|addslotsrange +cluster|meet +cluster|replicate +cluster|set-config-epoch +cluster|setslot +cluster|failover +cluster|replicas"

. "$here/cluster_pg.sh"

PARTS="relay redis-m1 redis-m2 redis-m3 redis-r1 redis-r2 redis-r3 pg-monitor pg-1 pg-2 kafka-1 kafka-2 kafka-3 consumer-1 consumer-2 provider origin-a origin-b varnish"

# The stack's own directories; an origin host's replace them (use_origin).
STACK_RUN=$RUN
STACK_CONF=$CONF
STACK_LOG=$LOG
STACK_METRICS_DIR=$METRICS_DIR
STACK_SOLDOUT_DIR=$SOLDOUT_DIR

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
}

# Makes them act on origin host X (a, b): its address, its nginx and
# handlers, its directories.
use_origin() {
	case $1 in
	a) ORIGIN_HOST=$ORIGIN_A ;;
	b) ORIGIN_HOST=$ORIGIN_B ;;
	*) die "no origin host '$1'" ;;
	esac
	odir=$STATE/origin-$1
	RUN=$odir/run
	CONF=$odir/conf
	LOG=$odir/log
	METRICS_DIR=$odir/metrics
	SOLDOUT_DIR=$odir/soldout
	PUB_SOCK=$RUN/nchan/pub.sock
	NGINX_PREFIX=$odir/nginx
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
}

# "deploy/stack env" speaks for origin host a.
select_env() {
	use_origin a
}

# --- Redis Cluster -----------------------------------------------------------

# redis-cli to one node as the operator (-c: follows redirects).
redis_node_cli() {
	rnc_node=$1
	shift
	REDISCLI_AUTH=$(cat "$SECRETS/redis-flashsale-admin.password") \
		redis-cli --no-auth-warning --user flashsale-admin -h 127.0.0.1 \
		-p "$(redis_node_port "$rnc_node")" "$@"
}

# The replicas log in to their master as the operator; the password lives
# in a file of $SECRETS that the node configuration includes.
write_redis_replication() {
	(umask 077 && printf 'masteruser flashsale-admin\nmasterauth %s\n' \
		"$(cat "$SECRETS/redis-flashsale-admin.password")" >"$SECRETS/redis-replication.conf.tmp" &&
		mv "$SECRETS/redis-replication.conf.tmp" "$SECRETS/redis-replication.conf")
}

start_redis_node() {
	name=redis-$1
	if [ -n "$(part_pids "$name")" ]; then
		say "$name" "already running (pid $(cat "$RUN/$name.pid"))"
		return 0
	fi
	mkdir -p "$STATE/$name"
	write_redis_acl
	write_redis_replication
	# Unlike the single topology's Redis, a node keeps an append-only log
	# (fsync every second): a node that restarts comes back with its data
	# and rejoins as a replica, and a replica has what its master had up to
	# about a second before it died.
	cat >"$CONF/$name.conf" <<EOF
bind 127.0.0.1
port $(redis_node_port "$1")
protected-mode yes
cluster-enabled yes
cluster-config-file nodes.conf
cluster-port $(redis_bus_port "$1")
cluster-announce-ip $(redis_peer_ip "$1")
bind-source-addr $(redis_peer_ip "$1")
cluster-announce-hostname 127.0.0.1
cluster-preferred-endpoint-type hostname
cluster-node-timeout 2000
cluster-replica-validity-factor 0
cluster-require-full-coverage no
cluster-allow-replica-migration no
aclfile $SECRETS/redis.acl
include $SECRETS/redis-replication.conf
daemonize no
pidfile $RUN/$name.pid
dir $STATE/$name
logfile ""
save ""
appendonly yes
appendfsync everysec
tcp-backlog 511
maxclients 10000
EOF
	spawn "$RUN/$name.pid" "$LOG/$name.log" redis-server "$CONF/$name.conf"
	wait_for 15 ready_redis_node "$1" || die "$name did not answer PING; see $LOG/$name.log"
	# A node of a formed cluster rejoins it before it counts as started
	# (unless all start together: then create_redis_cluster waits).
	if [ -s "$STATE/redis-cluster.formed" ] && [ -z "${REDIS_NOWAIT:-}" ]; then
		wait_for 30 redis_node_in_cluster "$1" ||
			die "$name did not rejoin the cluster; see $LOG/$name.log"
	fi
	say "$name" "up (pid $(cat "$RUN/$name.pid"), 127.0.0.1:$(redis_node_port "$1"))"
}

ready_redis_node() {
	[ "$(redis_node_cli "$1" PING 2>/dev/null)" = PONG ]
}

# The node sees the whole cluster serving, and a replica is linked to its
# master.
redis_node_in_cluster() {
	rnic_info=$(redis_node_cli "$1" CLUSTER INFO 2>/dev/null)
	case $rnic_info in
	*cluster_state:ok*) ;;
	*) return 1 ;;
	esac
	rnic_repl=$(redis_node_cli "$1" INFO replication 2>/dev/null)
	case $rnic_repl in
	*role:slave*) case $rnic_repl in *master_link_status:up*) ;; *) return 1 ;; esac ;;
	esac
	return 0
}

# Every node serving in one cluster of 6 with 3 linked replicas.
redis_cluster_ok() {
	rco_replicas=0
	for n in $REDIS_NODES; do
		redis_node_in_cluster "$n" || return 1
		case $(redis_node_cli "$n" CLUSTER INFO 2>/dev/null) in
		*cluster_known_nodes:6*) ;;
		*) return 1 ;;
		esac
		case $(redis_node_cli "$n" INFO replication 2>/dev/null) in
		*role:slave*) rco_replicas=$((rco_replicas + 1)) ;;
		esac
	done
	[ "$rco_replicas" = 3 ]
}

# Forms the cluster once: the three masters take the 16384 slots
# (redis-cli --cluster create), then rN becomes mN's replica. Later starts
# find it formed (nodes.conf of each node).
create_redis_cluster() {
	if [ -s "$STATE/redis-cluster.formed" ]; then
		wait_for 60 redis_cluster_ok || die "the Redis cluster does not come back; see $LOG/redis-*.log"
		say redis-cluster "ok (3 masters + 3 replicas)"
		return 0
	fi
	redis_node_cli m1 --cluster create "127.0.0.1:$(redis_node_port m1)" \
		"127.0.0.1:$(redis_node_port m2)" "127.0.0.1:$(redis_node_port m3)" \
		--cluster-replicas 0 --cluster-yes >>"$LOG/redis-cluster.log" 2>&1 ||
		die "redis-cli --cluster create failed; see $LOG/redis-cluster.log"
	for r in r1 r2 r3; do
		master_id=$(redis_node_cli "m${r#r}" CLUSTER MYID) ||
			die "no CLUSTER MYID from redis-m${r#r}"
		redis_node_cli m1 --cluster add-node "127.0.0.1:$(redis_node_port "$r")" \
			"127.0.0.1:$(redis_node_port m1)" --cluster-slave \
			--cluster-master-id "$master_id" >>"$LOG/redis-cluster.log" 2>&1 ||
			die "adding redis-$r as a replica failed; see $LOG/redis-cluster.log"
	done
	wait_for 60 redis_cluster_ok || die "the Redis cluster is not ok; see $LOG/redis-cluster.log"
	date -u +%FT%TZ >"$STATE/redis-cluster.formed"
	say redis-cluster "formed (3 masters + 3 replicas, cluster_state:ok)"
}

stop_redis_node() {
	stop_pidfile "redis-$1" "$RUN/redis-$1.pid" 10
}

# "up (pid, address, master of slots ... | replica of redis-X, link up)".
status_redis_node() {
	name=redis-$1
	pids=$(part_pids "$name")
	if [ -z "$pids" ] || ! ready_redis_node "$1"; then
		say "$name" "down"
		return 1
	fi
	repl=$(redis_node_cli "$1" INFO replication 2>/dev/null | tr -d '\r')
	state=$(redis_node_cli "$1" CLUSTER INFO 2>/dev/null | tr -d '\r' | sed -n 's/^cluster_state://p')
	case $repl in
	*role:slave*)
		mport=$(printf '%s\n' "$repl" | sed -n 's/^master_port://p')
		link=$(printf '%s\n' "$repl" | sed -n 's/^master_link_status://p')
		master=$mport
		for n in $REDIS_NODES; do
			[ "$(redis_node_port "$n")" = "$mport" ] && master=redis-$n
		done
		role="replica of $master (link $link)"
		;;
	*)
		slots=$(redis_node_cli "$1" CLUSTER NODES 2>/dev/null |
			awk '$3 ~ /myself/ { s = ""; for (i = 9; i <= NF; i++) s = s (s == "" ? "" : ",") $i; print s }')
		role="master (slots ${slots:-none})"
		;;
	esac
	say "$name" "up (pid $(echo $pids), 127.0.0.1:$(redis_node_port "$1"), $role, cluster $state)"
	[ "$state" = ok ]
}

# --- the peer relay ----------------------------------------------------------

# deploy/relay/flashsale-relay: each Redis node's client and bus ports on
# its peer address, and the connections dialled from that address, labelled
# redis-m1 ... redis-r3 (`flashsale-relay -c $RUN/relay.sock cut redis-m1`);
# the Kafka nodes' controller and replication links, labelled kafka-1..3;
# a PostgreSQL node's port on its peer address and its keeper's link to
# the monitor, labelled pg-1, pg-2 (deploy/cluster_pg.sh; the keeper gives
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

# --- Kafka -------------------------------------------------------------------

# All three brokers in the metadata.
kafka_cluster_ready() {
	kcat -b "$KAFKA_BROKERS" -L -m 3 2>/dev/null | grep -q '^ *3 brokers:'
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

# --- origin hosts ------------------------------------------------------------

# The live PIDs of origin host X: its nginx and push server (the workers
# too: a host that dies takes them along, and an orphaned worker would keep
# the port) and every handler process.
origin_pids() {
	(
		use_origin "$1"
		for master in $(part_pids nginx) $(part_pids nginx-push); do
			echo "$master"
			ps -o pid= --ppid "$master" | tr -d ' '
		done
		handler_list | while read -r prog procs; do
			part_pids "$prog"
		done
	)
}

ensure_origin_dirs() {
	mkdir -p "$CONF" "$LOG" "$RUN" "$SOLDOUT_DIR" "$METRICS_DIR"
	chmod 755 "$CONF" "$RUN" "$METRICS_DIR"
	chmod 750 "$LOG"
}

start_origin() {
	use_origin "$1"
	ensure_origin_dirs
	start_handlers
	start_nginx
	ready_handlers
	say "origin-$1" "up (http://$ORIGIN_HOST:$PORT_ORIGIN/, $STATE/origin-$1)"
}

stop_origin() {
	use_origin "$1"
	stop_nginx
	stop_handlers
}

status_origin() {
	use_origin "$1"
	say "origin-$1" "http://$ORIGIN_HOST:$PORT_ORIGIN/"
	so_rc=0
	status_nginx || so_rc=1
	status_handlers || so_rc=1
	return $so_rc
}

# --- commands ----------------------------------------------------------------

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
	stop_together 60 kafka $(for n in $KAFKA_NODES; do echo "kafka-$n"; done)
	# The monitor first: stopping a primary must start no failover.
	stop_pg_monitor
	stop_pg_node 2
	stop_pg_node 1
	stop_together 10 redis $(for n in $REDIS_NODES; do echo "redis-$n"; done)
	stop_relay
}

# stop_together GRACE WHAT PART...: SIGTERM to every part at once.
stop_together() {
	st_grace=$1
	st_what=$2
	shift 2
	st_pids=$(for p in "$@"; do part_pids "$p"; done)
	# shellcheck disable=SC2086
	kill_pids "$st_grace" $st_pids
	for p in "$@"; do
		rm -f "$RUN/$p.pid"
	done
	if [ -n "$st_pids" ]; then
		say "$st_what" "stopped $* (pid $(echo $st_pids))"
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

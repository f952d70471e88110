# shellcheck shell=sh
# The cluster topology's Redis Cluster: six nodes, start, ready, stop,
# status (sourced by deploy/stack; stack.d/cluster.sh).

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

# The operator's user also replicates (masteruser) and forms the cluster.
REDIS_ADMIN_EXTRA="+psync +replconf +sync +cluster|addslots +cluster|addslotsrange +cluster|meet +cluster|replicate +cluster|set-config-epoch +cluster|setslot +cluster|failover +cluster|replicas"

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

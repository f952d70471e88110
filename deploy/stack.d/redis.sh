# shellcheck shell=sh
# deploy/stack's part Redis: start, ready, stop, status
# (sourced by deploy/stack).

start_redis() {
	if [ -n "$(part_pids redis)" ]; then
		say redis "already running (pid $(cat "$RUN/redis.pid"))"
		return 0
	fi
	mkdir -p "$STATE/redis"
	write_redis_acl
	# A cache of PostgreSQL's truth: no snapshots or log while it runs, but
	# a stop (SIGTERM) saves one snapshot that the next start loads, so a
	# stop/start keeps the stock and holds. After a crash: sale warm.
	cat >"$CONF/redis.conf" <<EOF
bind 127.0.0.1
port $PORT_REDIS
protected-mode yes
aclfile $SECRETS/redis.acl
unixsocket $RUN/redis.sock
unixsocketperm 700
daemonize no
pidfile $RUN/redis.pid
dir $STATE/redis
logfile ""
save ""
appendonly no
shutdown-on-sigterm save
dbfilename dump.rdb
tcp-backlog 511
maxclients 10000
EOF
	spawn "$RUN/redis.pid" "$LOG/redis.log" redis-server "$CONF/redis.conf"
	wait_for 15 ready_redis || die "redis did not answer PING; see $LOG/redis.log"
	# The snapshot of a clean stop is loaded now; after a crash no older
	# one may come back (its holds and stock would be stale): a crashed
	# Redis starts empty, and flashsale-admin reconcile --repair rebuilds it.
	rm -f "$STATE/redis/dump.rdb"
	say redis "up (pid $(cat "$RUN/redis.pid"), $RUN/redis.sock, port $PORT_REDIS)"
}

# The ACL users (passwords as SHA-256, so the file holds no password):
# "flashsale" for the handlers runs its Lua scripts (and the commands they
# call), the reads and the confirmation the handlers make, and listens to
# fs:restock, plus what the cluster client needs (CLUSTER SLOTS, ASKING,
# WAIT), and sets and expires only a waiting room's keys fs:{S}:q:* (the
# pacer's lease, the queue's expiry after the sale: a Redis 7 selector, so
# that SET stays refused on the stock); "flashsale-admin" for the operator may do all but the
# dangerous commands (FLUSHALL, CONFIG, KEYS, SHUTDOWN, ACL ...), plus INFO
# and CLIENT PAUSE for fault tests. Keys fs:* only; the default user is off.
write_redis_acl() {
	handlers_hash=$(tr -d '\n' <"$SECRETS/redis-flashsale.password" | sha256sum | cut -d' ' -f1)
	admin_hash=$(tr -d '\n' <"$SECRETS/redis-flashsale-admin.password" | sha256sum | cut -d' ' -f1)
	(umask 077 && cat >"$SECRETS/redis.acl" <<EOF
user default off resetpass nocommands resetkeys resetchannels
user flashsale on #$handlers_hash resetkeys ~fs:* resetchannels &fs:restock -@all +ping +script|load +evalsha +time +get +mget +hget +hmget +hscan +zrangebyscore +zcount +zrem +zcard +zscore +zrank +zrange +rpush +lrange +llen +ltrim +unlink +subscribe +unsubscribe +decr +incr +hset +hdel +zadd +publish +cluster|slots +asking +wait (~fs:*:q:* +set +pexpire +pexpireat)
user flashsale-admin on #$admin_hash resetkeys ~fs:* resetchannels &fs:* +@all -@dangerous +info +client|pause +client|unpause${REDIS_ADMIN_EXTRA:+ $REDIS_ADMIN_EXTRA}
EOF
	)
}

# redis-cli as the operator; the password travels in the environment
# (REDISCLI_AUTH), not on the command line.
redis_admin() {
	REDISCLI_AUTH=$(cat "$SECRETS/redis-flashsale-admin.password") \
		redis-cli --no-auth-warning --user flashsale-admin -s "$RUN/redis.sock" "$@"
}

ready_redis() {
	[ "$(redis_admin PING 2>/dev/null)" = PONG ]
}

stop_redis() {
	stop_pidfile redis "$RUN/redis.pid" 10
}

status_redis() {
	status_pidfile redis ready_redis
}

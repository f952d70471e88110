# shellcheck shell=sh
# shellcheck disable=SC2034 # the settings are read by the other stack.d files
# shellcheck disable=SC2154 # repo is deploy/stack's
# deploy/stack's settings (sourced by it first): the state directory, the
# ports, the paths and the topology, from FLASHSALE_* (deploy/stack's top
# comment lists them), and their checks.

# True when the users that run parts of the stack (PostgreSQL as postgres,
# Varnish's compiler and worker as vcache) can enter DIR: a checkout under
# a 0700 home is not.
others_reach() {
	for reach_user in postgres vcache; do
		id -u "$reach_user" >/dev/null 2>&1 || continue
		runuser -u "$reach_user" -- test -x "$1" 2>/dev/null || return 1
	done
	return 0
}

# The state directory: FLASHSALE_STATE, else <repo>/.state, else (a
# checkout the other users cannot enter) a directory of this checkout's own
# in /var/tmp, which root must own and nobody else may write: /var/tmp is
# everybody's, and root writes pid files and logs in there.
STATE_MOVED=
if [ -n "${FLASHSALE_STATE:-}" ]; then
	STATE=$FLASHSALE_STATE
elif others_reach "$repo"; then
	STATE=$repo/.state
else
	STATE=/var/tmp/flashsale-$(printf '%s' "$repo" | cksum | cut -d' ' -f1)
	STATE_MOVED=1
fi
case $STATE in
/*) ;;
*) STATE=$(pwd)/$STATE ;;
esac
# Refuses a moved state directory that is not ours alone (someone else
# made it first in /var/tmp, or it is a link).
check_moved_state() {
	[ -n "$STATE_MOVED" ] && { [ -e "$STATE" ] || [ -L "$STATE" ]; } || return 0
	if [ -L "$STATE" ] || [ ! -d "$STATE" ] || [ "$(stat -c %u "$STATE")" != "$(id -u)" ] ||
		[ -n "$(find "$STATE" -maxdepth 0 -perm /022)" ]; then
		printf 'stack: %s is not a directory of ours that only we may write: remove it, or set FLASHSALE_STATE\n' \
			"$STATE" >&2
		exit 1
	fi
}
check_moved_state
BASE=${FLASHSALE_PORT_BASE:-18080}
# The programs: FLASHSALE_BINDIR, else where "up" found them last for this
# state directory, else an in-tree build (<repo>), else <repo>/build (where
# deploy/demo builds).
BINDIR=${FLASHSALE_BINDIR:-}
if [ -z "$BINDIR" ]; then
	for bin_candidate in "$(cat "$STATE/bindir" 2>/dev/null || true)" "$repo" "$repo/build"; do
		if [ -n "$bin_candidate" ] && [ -x "$bin_candidate/flashsale-admin" ]; then
			BINDIR=$bin_candidate
			break
		fi
	done
	BINDIR=${BINDIR:-$repo}
fi
DATADIR=${FLASHSALE_DATADIR:-$repo}
SOLDOUT_DIR=${FLASHSALE_SOLDOUT_DIR:-$STATE/soldout}
TOPIC=${FLASHSALE_KAFKA_TOPIC:-flash-sale-orders}
KAFKA_LIB=${FLASHSALE_KAFKA_LIB:-${XDG_CACHE_HOME:-$HOME/.cache}/flashsale/kafka-3.9.1/lib}
PGBIN=/usr/lib/postgresql/15/bin
NGINX_WORKERS=${FLASHSALE_NGINX_WORKERS:-auto}
# The broker JVM compiles with C1 only: on a small machine C2 spends a third
# of the broker's CPU compiling for minutes after every start, and C1's code
# serves this load with no more CPU than C2's once warm. It compiles a
# method after a fiftieth of the usual calls: at the usual thresholds the
# one C1 thread falls behind and a sixth of the broker's CPU stays in the
# interpreter, even after 80,000 reservations (docs/PERFORMANCE.md). Set
# empty for the JVM's defaults.
KAFKA_JAVA_OPTS=${FLASHSALE_KAFKA_JAVA_OPTS--XX:TieredStopAtLevel=1 -XX:CompileThresholdScaling=0.02}
RATE_PER_IP=${FLASHSALE_RATE_PER_IP:-20r/s}
RATE_PER_USER=${FLASHSALE_RATE_PER_USER:-5r/s}
RATE_WEBHOOK=${FLASHSALE_RATE_WEBHOOK:-50r/s}
BURST_WEBHOOK=${FLASHSALE_BURST_WEBHOOK:-}
BURST_PER_IP=${FLASHSALE_BURST_PER_IP:-}
BURST_PER_USER=${FLASHSALE_BURST_PER_USER:-}
# The push server's memory (nchan_max_reserved_memory) and how long it keeps
# an order's latest status (nchan_message_timeout): deploy/push.conf.in.
PUSH_MEMORY=${FLASHSALE_PUSH_MEMORY:-512M}
PUSH_KEEP=${FLASHSALE_PUSH_KEEP:-60s}
# How long a purchase at the edge waits for another purchase of the same
# item to bring the origin's answer (proxy_cache_lock_timeout of
# deploy/edge.conf.in), in milliseconds: above the edge's round trip to the
# origin, or the sold-out herd of each second reaches the origin (the
# edge's bound, docs/API.md).
EDGE_LOCK_MS=${FLASHSALE_EDGE_LOCK_MS:-100}
# The logs' rotation (stack.d/logkeeper.sh): the size of a log that is
# copied aside and truncated, and how often they are looked at.
LOG_MAX_MB=${FLASHSALE_LOG_MAX_MB:-64}
LOG_CHECK_S=${FLASHSALE_LOG_CHECK_S:-30}

PORT_EDGE=$BASE
PORT_ORIGIN=$((BASE + 1))
# The origin's address: 127.0.0.1 here; each origin host of the cluster
# topology has its own (stack.d/cluster.sh).
ORIGIN_HOST=127.0.0.1
PORT_REDIS=$((BASE + 2))
PORT_PG=$((BASE + 3))
PORT_KAFKA=$((BASE + 4))
PORT_CONTROLLER=$((BASE + 5))
PORT_BENCH=$((BASE + 7))
PORT_PROVIDER=$((BASE + 8))
PORT_PROMETHEUS=$((BASE + 9))
# The edge's TLS port (both topologies), and the origins' (the cluster's:
# the edge's link to an origin host is TLS with its client certificate).
PORT_EDGE_TLS=$((BASE + 17))
PORT_ORIGIN_TLS=$((BASE + 18))
BENCH=${FLASHSALE_BENCH:-0}

CONF=$STATE/conf
RUN=$STATE/run
LOG=$STATE/log
# What the logkeeper rotates (stack.d/cluster.sh adds the origin hosts').
LOG_DIRS=$LOG
METRICS_DIR=$STATE/metrics
PGDATA=$STATE/postgres
SECRETS=$STATE/secrets
# The stack's certificate authority (stack.d/tls.sh): its key in a
# directory of root's alone (0700, beside the secrets); its certificate,
# which every client trusts, where anybody may read it.
TLS_CA=$STATE/ca
TLS_PUBLIC=$STATE/tls
# The certificates and keys of the edge (root's alone, 0700); an origin
# host of the cluster has its own (stack.d/cluster-origin.sh).
TLS_KEYS=$STATE/tls-keys
JWKS_FILE=$STATE/keys/jwks.json
PG_ROLE=flashsale
PUB_SOCK=$RUN/nchan/pub.sock
KAFKA_DIR=$STATE/kafka
NGINX_PREFIX=$STATE/nginx
# PostgreSQL's socket directory: its own, in the stack's run directory (also
# when an origin host of the cluster topology has a run directory of its
# own). The run directory itself is root's: root writes pid files there.
PG_SOCKDIR=$RUN/postgres
# The ports the passfile names (stack.d/cluster-pg.sh: each node's).
PG_PORTS=$PORT_PG

# What the programs are given (stack.d/cluster.sh sets the cluster's).
REDIS_ADDR=$RUN/redis.sock
KAFKA_BROKERS=127.0.0.1:$PORT_KAFKA
NCHAN_PUB=unix:$PUB_SOCK:/pub
# One Kafka node: its id, the controller quorum and its replication.
KAFKA_NODE_ID=1
KAFKA_PORT=$PORT_KAFKA
KAFKA_CONTROLLER_PORT=$PORT_CONTROLLER
KAFKA_VOTERS=1@127.0.0.1:$PORT_CONTROLLER
KAFKA_REPLICAS=1
KAFKA_MIN_ISR=1
KAFKA_DATA=$KAFKA_DIR/data
# The addresses a Kafka node's certificate names (its clients and peers
# dial them; stack.d/cluster-kafka.sh: each node's).
KAFKA_SAN=IP:127.0.0.1

# The topology: "single" (one of each, the default) or "cluster"
# (stack.d/cluster.sh). "up" records it in the state directory, so that the
# later commands on that directory address the same parts.
if [ -n "$CLUSTER_FLAG" ]; then
	TOPOLOGY=cluster
elif [ -n "${FLASHSALE_TOPOLOGY:-}" ]; then
	TOPOLOGY=$FLASHSALE_TOPOLOGY
elif [ -s "$STATE/topology" ] && [ "${1:-}" != up ]; then
	TOPOLOGY=$(cat "$STATE/topology")
else
	TOPOLOGY=single
fi
case $TOPOLOGY in
single | cluster) ;;
*) printf 'stack: FLASHSALE_TOPOLOGY must be single or cluster\n' >&2 && exit 2 ;;
esac
# The origin hosts of the cluster topology (loopback addresses).
ORIGIN_A=127.0.0.2
ORIGIN_B=127.0.0.3

PARTS="redis postgres kafka consumer provider handlers nginx varnish logkeeper"
# Started only when asked for (deploy/stack start prometheus).
OPTIONAL_PARTS="prometheus"
PROMETHEUS_TARGETS=${FLASHSALE_PROMETHEUS_TARGETS:-127.0.0.1:$PORT_ORIGIN}

# Refuses a rate that nginx would not take (NAME VALUE).
check_rate() {
	case $2 in
	*r/s | *r/m) number=${2%r/?} ;;
	*) number= ;;
	esac
	case $number in
	'' | *[!0-9]*) die "$1: bad rate '$2' (want like 20r/s)" ;;
	esac
}

# Refuses malformed settings before anything is stopped or started, and
# fills in the bursts: by default twice the rate's count, 20r/s -> 40 (nginx
# counts in milliseconds, so a high rate with a small burst still refuses
# what arrives within one millisecond beyond the burst).
check_settings() {
	if [ "$RATE_PER_IP" = off ]; then
		BURST_PER_IP=${BURST_PER_IP:-1}
	else
		check_rate FLASHSALE_RATE_PER_IP "$RATE_PER_IP"
		BURST_PER_IP=${BURST_PER_IP:-$((2 * ${RATE_PER_IP%r/?}))}
	fi
	check_rate FLASHSALE_RATE_PER_USER "$RATE_PER_USER"
	BURST_PER_USER=${BURST_PER_USER:-$((2 * ${RATE_PER_USER%r/?}))}
	# The provider's retries after an outage come at once: a generous burst.
	if [ "$RATE_WEBHOOK" = off ]; then
		BURST_WEBHOOK=${BURST_WEBHOOK:-1}
	else
		check_rate FLASHSALE_RATE_WEBHOOK "$RATE_WEBHOOK"
		BURST_WEBHOOK=${BURST_WEBHOOK:-$((10 * ${RATE_WEBHOOK%r/?}))}
	fi
	for number in "$BASE" "$BURST_PER_IP" "$BURST_PER_USER" "$BURST_WEBHOOK" "$LOG_MAX_MB" \
		"$LOG_CHECK_S"; do
		case $number in
		'' | *[!0-9]*) die "bad number '$number' in the FLASHSALE_ settings" ;;
		esac
	done
	{ [ "$BASE" -ge 1024 ] && [ "$BASE" -le 65528 ]; } ||
		die "FLASHSALE_PORT_BASE must be within 1024..65528"
	case $EDGE_LOCK_MS in
	'' | *[!0-9]*) die "FLASHSALE_EDGE_LOCK_MS=$EDGE_LOCK_MS: want milliseconds, 10..5000" ;;
	esac
	{ [ "$EDGE_LOCK_MS" -ge 10 ] && [ "$EDGE_LOCK_MS" -le 5000 ]; } ||
		die "FLASHSALE_EDGE_LOCK_MS=$EDGE_LOCK_MS: want milliseconds, 10..5000"
	printf '%s\n' "$PUSH_MEMORY" | grep -Eqx '[1-9][0-9]{0,6}[KM]' ||
		die "FLASHSALE_PUSH_MEMORY=$PUSH_MEMORY: want a size like 512M (K or M)"
	printf '%s\n' "$PUSH_KEEP" | grep -Eqx '[1-9][0-9]{0,4}s' ||
		die "FLASHSALE_PUSH_KEEP=$PUSH_KEEP: want seconds like 60s"
	# The paths go unquoted into nginx, Redis and libpq configuration.
	case $STATE$SOLDOUT_DIR$DATADIR$BINDIR in
	*[!A-Za-z0-9/._+-]*) die "state, data and program paths must be made of [A-Za-z0-9/._+-]" ;;
	esac
}

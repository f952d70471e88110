# shellcheck shell=sh
# shellcheck disable=SC2154 # repo is deploy/stack's
# deploy/stack's helpers, shared by every part (sourced by it): messages,
# processes by PID, polling, rendering of the templates, stop and status
# by pid file, the programs that "up" runs.

# One line per part: "part      message".
say() {
	printf '%-19s %s\n' "$1" "$2"
}

warn() {
	printf 'stack: warning: %s\n' "$*" >&2
}

die() {
	printf 'stack: %s\n' "$*" >&2
	exit 1
}

now() {
	date +%s
}

# True when PID is a live process (a zombie waiting for init is not).
pid_alive() {
	kill -0 "$1" 2>/dev/null || return 1
	case $(ps -o stat= -p "$1" 2>/dev/null) in
	Z* | "") return 1 ;;
	esac
	return 0
}

# True when PID is alive and its command line contains PATTERN: a stale pid
# file must never make us signal someone else's process.
pid_is() {
	pid_alive "$1" || return 1
	case $(ps -o args= -p "$1" 2>/dev/null) in
	*"$2"*) return 0 ;;
	esac
	return 1
}

# The PIDs among PID... that are alive and whose command line contains
# PATTERN.
live_pids() {
	pattern=$1
	shift
	for pid in "$@"; do
		case $pid in
		'' | *[!0-9]*) continue ;;
		esac
		if pid_is "$pid" "$pattern"; then
			echo "$pid"
		fi
	done
}

# The words of FILE (pid files hold one PID a line), nothing without it.
pids_in() {
	if [ -f "$1" ]; then
		cat "$1"
	fi
}

# The live PIDs of a part that we started: those of its pid file whose
# command line names this state directory (or the handler program).
# shellcheck disable=SC2046 # the PIDs of a pid file, one word each
part_pids() {
	case $1 in
	redis) live_pids redis-server $(pids_in "$RUN/redis.pid") ;;
	redis-[mr][1-9]) live_pids redis-server $(pids_in "$RUN/$1.pid") ;;
	origin-[ab]) origin_pids "${1#origin-}" ;;
	postgres) live_pids "$PGDATA" $(pids_in "$PGDATA/postmaster.pid" | head -n 1) ;;
	pg-monitor | pg-[1-9]) pg_part_pids "$1" ;;
	kafka) live_pids "$CONF/server.properties" $(pids_in "$RUN/kafka.pid") ;;
	kafka-[1-9]) live_pids "$CONF/$1.properties" $(pids_in "$RUN/$1.pid") ;;
	consumer | consumer-[1-9]) live_pids /flashsale-consumer $(pids_in "$RUN/flashsale-$1.pid") ;;
	provider) live_pids /flashsale-provider $(pids_in "$RUN/flashsale-provider.pid") ;;
	nginx) live_pids "$CONF/nginx.conf" $(pids_in "$RUN/nginx.pid") ;;
	varnish) live_pids "$STATE/varnish" $(pids_in "$RUN/varnish.pid") ;;
	prometheus) live_pids "$CONF/prometheus.yml" $(pids_in "$RUN/prometheus.pid") ;;
	oidc) live_pids /oidc-provider.mjs $(pids_in "$RUN/oidc.pid") ;;
	jwks) live_pids refresh-jwks $(pids_in "$RUN/jwks.pid") ;;
	*) live_pids "/$1" $(pids_in "$RUN/$1.pid") ;;
	esac
}

# Polls CHECK (a command) every 0.2 s until it succeeds or SECONDS pass.
wait_for() {
	wait_secs=$1
	shift
	deadline=$(($(now) + wait_secs))
	while ! "$@" >/dev/null 2>&1; do
		if [ "$(now)" -ge "$deadline" ]; then
			return 1
		fi
		sleep 0.2
	done
	return 0
}

# True when none of the PIDs is alive.
all_dead() {
	for pid in "$@"; do
		if pid_alive "$pid"; then
			return 1
		fi
	done
	return 0
}

# Stops PIDs: SIGTERM, up to SECONDS for them to exit, then SIGKILL.
kill_pids() {
	grace=$1
	shift
	[ $# -gt 0 ] || return 0
	kill -TERM "$@" 2>/dev/null || true
	if ! wait_for "$grace" all_dead "$@"; then
		warn "still running after ${grace}s, killing: $*"
		kill -KILL "$@" 2>/dev/null || true
		wait_for 5 all_dead "$@" || warn "could not kill: $*"
	fi
}

# Starts a daemon that stays in the foreground, detached from our session,
# with its output appended to LOG and its PID in PIDFILE.
spawn() {
	spawn_pidfile=$1
	spawn_log=$2
	shift 2
	setsid "$@" </dev/null >>"$spawn_log" 2>&1 &
	echo $! >"$spawn_pidfile"
}

# Open files for each nginx worker: our hard limit, at most 65536.
nofile_limit() {
	# shellcheck disable=SC3045 # dash's ulimit takes -H
	hard=$(ulimit -H -n)
	if [ "$hard" = unlimited ] || [ "$hard" -gt 65536 ]; then
		hard=65536
	fi
	echo "$hard"
}

# Escapes a value for the right-hand side of a sed s||| command.
sed_escape() {
	printf '%s\n' "$1" | sed 's/[\\|&]/\\&/g'
}

# Renders TEMPLATE into OUT, replacing every @NAME@ of the stack.
# shellcheck disable=SC2016 # the nginx variables are literal
render() {
	if [ "$RATE_PER_IP" = off ]; then
		ip_key='$fs_unlimited'
		ip_rate=1r/s
	else
		ip_key='$fs_client_ip'
		ip_rate=$RATE_PER_IP
	fi
	if [ "$RATE_WEBHOOK" = off ]; then
		webhook_key='$fs_unlimited'
		webhook_rate=1r/s
	else
		webhook_key='$fs_client_ip'
		webhook_rate=$RATE_WEBHOOK
	fi
	{
		# The lines from @BENCH_BEGIN@ to @BENCH_END@ stay with FLASHSALE_BENCH=1 only;
		# those of @SINGLE_BEGIN@ and @CLUSTER_BEGIN@ in their topology only.
		if [ "$BENCH" = 1 ]; then
			echo '/@BENCH_BEGIN@/d; /@BENCH_END@/d'
		else
			echo '/@BENCH_BEGIN@/,/@BENCH_END@/d'
		fi
		if [ "$TOPOLOGY" = cluster ]; then
			echo '/@SINGLE_BEGIN@/,/@SINGLE_END@/d; /@CLUSTER_BEGIN@/d; /@CLUSTER_END@/d'
		else
			echo '/@CLUSTER_BEGIN@/,/@CLUSTER_END@/d; /@SINGLE_BEGIN@/d; /@SINGLE_END@/d'
		fi
		for pair in "STATE=$STATE" "RUN=$RUN" "LOG=$LOG" "DATADIR=$DATADIR" \
			"METRICS_DIR=$METRICS_DIR" \
			"SOLDOUT_DIR=$SOLDOUT_DIR" "PORT_ORIGIN=$PORT_ORIGIN" \
			"ORIGIN_HOST=$ORIGIN_HOST" "ORIGIN_A=$ORIGIN_A" "ORIGIN_B=$ORIGIN_B" \
			"NGINX_PREFIX=$NGINX_PREFIX" \
			"PORT_BENCH=$PORT_BENCH" "PORT_EDGE=$PORT_EDGE" "PORT_KAFKA=$KAFKA_PORT" \
			"PORT_EDGE_TLS=$PORT_EDGE_TLS" "PORT_ORIGIN_TLS=$PORT_ORIGIN_TLS" \
			"TLS_KEYS=$TLS_KEYS" "CA_FILE=$TLS_PUBLIC/ca.crt" \
			"PORT_CONTROLLER=$KAFKA_CONTROLLER_PORT" "KAFKA_NODE_ID=$KAFKA_NODE_ID" \
			"KAFKA_VOTERS=$KAFKA_VOTERS" "KAFKA_REPLICAS=$KAFKA_REPLICAS" \
			"PORT_REPLICATION=${KAFKA_REPLICATION_PORT:-}" "KAFKA_PEER_IP=${KAFKA_PEER_IP:-}" \
			"KAFKA_MIN_ISR=$KAFKA_MIN_ISR" "KAFKA_DATA=$KAFKA_DATA" \
			"KAFKA_NAME=$KAFKA_NAME" "KAFKA_TLS=$KAFKA_DIR/tls" \
			"NGINX_WORKERS=$NGINX_WORKERS" \
			"IP_LIMIT_KEY=$ip_key" "RATE_PER_IP=$ip_rate" \
			"BURST_PER_IP=$BURST_PER_IP" "RATE_PER_USER=$RATE_PER_USER" \
			"BURST_PER_USER=$BURST_PER_USER" "WEBHOOK_LIMIT_KEY=$webhook_key" \
			"RATE_WEBHOOK=$webhook_rate" "BURST_WEBHOOK=$BURST_WEBHOOK" \
			"PUSH_MEMORY=$PUSH_MEMORY" "PUSH_KEEP=$PUSH_KEEP" "EDGE_LOCK_MS=$EDGE_LOCK_MS" \
			"NOFILE=$(nofile_limit)"; do
			printf 's|@%s@|%s|g\n' "${pair%%=*}" "$(sed_escape "${pair#*=}")"
		done
	} >"$CONF/render.sed"
	sed -f "$CONF/render.sed" "$1" >"$2.tmp"
	if grep -n '@[A-Z][A-Z_]*@' "$2.tmp" >&2; then
		die "$1: placeholders left unrendered (above)"
	fi
	mv "$2.tmp" "$2"
}

# HTTP status of a request to the origin (000 when nothing answered), and
# whether nginx produced the answer itself (X-Flashsale-Answered-By).
http_probe() {
	curl -s -o /dev/null -D - -m 5 -X "$1" "http://$ORIGIN_HOST:$PORT_ORIGIN$2" 2>/dev/null |
		awk 'NR == 1 { code = $2 } tolower($0) ~ /^x-flashsale-answered-by:/ { by = "nginx" }
			END { print (code == "" ? "000" : code) (by == "" ? "" : " nginx") }'
}

# The words of LIST (PIDs, a line each) on one line, separated by spaces.
one_line() {
	# shellcheck disable=SC2086 # splitting into words is the point
	echo $1
}

# Stops the processes of PART, then removes its PIDFILE.
stop_pidfile() {
	pids=$(part_pids "$1")
	if [ -z "$pids" ]; then
		rm -f "$2"
		say "$1" "not running"
		return 0
	fi
	# shellcheck disable=SC2086 # one word per PID
	kill_pids "$3" $pids
	rm -f "$2"
	say "$1" "stopped (pid $(one_line "$pids"))"
}

# Reports PART up when it has live processes and READY (a command) succeeds.
status_pidfile() {
	pids=$(part_pids "$1")
	if [ -n "$pids" ] && "$2"; then
		say "$1" "up (pid $(one_line "$pids"))"
		return 0
	fi
	say "$1" "down"
	return 1
}

# What to say about PROGRAM... (paths in $BINDIR): missing, and the
# command that builds them.
not_built() {
	if [ -f "$BINDIR/Makefile" ]; then
		how="make -C $BINDIR"
	elif [ -f "$repo/build/Makefile" ]; then
		how="make -C $repo/build"
	else
		how="deploy/demo (it builds in $repo/build), or build elsewhere and set FLASHSALE_BINDIR"
	fi
	printf 'not built in %s:%s; run %s\n' "$BINDIR" "$(printf ' %s' "$@")" "$how"
}

# "up" runs every program of the stack: it refuses to start without one,
# rather than serve 503 in its place.
check_programs() {
	missing=
	for prog in flashsale-admin flashsale-consumer deploy/provider/flashsale-provider \
		$(handler_list | cut -d' ' -f1); do
		[ -x "$BINDIR/$prog" ] || missing="$missing $prog"
	done
	# shellcheck disable=SC2086 # one word per program
	[ -z "$missing" ] || die "$(not_built $missing)"
}

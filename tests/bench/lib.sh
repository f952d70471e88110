# Shared by tests/bench/purchase and tests/load/rehearse (sourced, POSIX sh;
# tests/bench/consumer takes its readings and Redis clients): a stack of
# their own on loopback with the benchmarks' server block, the ceiling
# endpoints (nginx alone, a trivial FastCGI responder), runs of the load
# generator, and the CPU time of every component read from /proc.
#
# The caller sets prog (its name), repo (the source tree) and these, each
# with a default: FLASHSALE_BINDIR (the build tree: the repo), BENCH_STATE
# (a new /tmp/fs-bench-$prog.XXXXXX, removed after a successful run),
# BENCH_PORT_BASE (14080), BENCH_PROCS (processes of the single-threaded
# responders: the trivial one and the PostgreSQL-only design, 4),
# BENCH_PURCHASE_PROCS (the purchase handler's, each with
# FLASHSALE_PURCHASE_THREADS workers: the stack's default),
# BENCH_KEEP (1: leave the stack running). It calls bench_init, then
# bench_stack_up; bench_cleanup (installed as the EXIT trap) stops what
# was started, by PID.

# --- messages --------------------------------------------------------------

say() {
	printf '%s: %s\n' "$prog" "$*" >&2
}

die() {
	printf '%s: %s\n' "$prog" "$*" >&2
	exit 1
}

# --- numbers (awk is mawk here: %d stops at 2^31, so %.0f) -------------------

# calc EXPR: evaluates an awk expression; division by zero gives 0.
calc() {
	awk "BEGIN { x = 0; x = $1; printf \"%.6g\\n\", x }" 2>/dev/null || echo 0
}

# fmt FORMAT VALUE...: printf through awk, for floats.
fmt() {
	f=$1
	shift
	awk -v f="$f" 'BEGIN { for (i = 1; i < ARGC; i++) a[i] = ARGV[i];
		printf f, a[1], a[2], a[3], a[4], a[5], a[6] }' "$@"
}

# ratio A B: A/B with two decimals, "n/a" when B is 0 or empty.
ratio() {
	awk -v a="${1:-0}" -v b="${2:-0}" 'BEGIN { if (b + 0 == 0) print "n/a"; else printf "%.2f\n", a / b }'
}

# fs_json ARGS: the JSON on standard input read with tests/tools/fs-json
# (the value at a path: fs_json .saleId).
fs_json() { "${BINDIR:-$FLASHSALE_BINDIR}/tests/tools/fs-json" "$@"; }

# --- setup and teardown ----------------------------------------------------

# Refuses a port base whose ports (up to base+52, the cluster topology's
# reach: its database pair, deploy/stack.d/cluster-pg.sh) meet the kernel's
# ephemeral range: any outgoing connection may
# hold one of them as its source port, and its TIME_WAIT refuses a bind
# (varnishd's) for up to a minute.
bench_ports_outside_ephemeral() {
	# (not read: dash reads a byte at a time, and a sysctl file serves no
	# read past its first)
	eph=$(cat /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null) || return 0
	eph_lo=${eph%%[!0-9]*}
	eph_hi=${eph##*[!0-9]}
	[ $(($1 + 52)) -lt "$eph_lo" ] || [ "$1" -gt "$eph_hi" ] ||
		die "ports $1..$(($1 + 52)) meet the kernel's ephemeral range $eph_lo..$eph_hi (net.ipv4.ip_local_port_range): set BENCH_PORT_BASE below $((eph_lo - 52))"
}

bench_init() {
	BINDIR=${FLASHSALE_BINDIR:-$repo}
	case $BINDIR in
	/*) ;;
	*) BINDIR=$(cd "$BINDIR" && pwd) ;;
	esac
	BASE=${BENCH_PORT_BASE:-14080}
	PROCS=${BENCH_PROCS:-4}
	LOADGEN=$BINDIR/tests/load/flashsale-load
	TRIVIAL=$BINDIR/tests/bench/trivial-fcgi
	for f in flashsale-admin flashsale-purchase flashsale-purchase-pg tests/tools/fs-json; do
		[ -x "$BINDIR/$f" ] || die "$BINDIR/$f not built: run make (FLASHSALE_BINDIR is the build tree)"
	done
	[ -x "$LOADGEN" ] || die "$LOADGEN not built: run make"
	[ -x "$TRIVIAL" ] || die "$TRIVIAL not built: run make"
	for tool in spawn-fcgi nginx redis-server psql kcat curl ss pgrep; do
		command -v "$tool" >/dev/null 2>&1 || die "$tool not found: run deploy/install-deps"
	done
	case $BASE in
	'' | *[!0-9]*) die "bad port base '$BASE'" ;;
	esac
	bench_ports_outside_ephemeral "$BASE"
	case $PROCS in
	'' | *[!0-9]* | 0) die "bad process count '$PROCS'" ;;
	esac
	STATE_MADE=0
	if [ -z "${BENCH_STATE:-}" ]; then
		BENCH_STATE=$(mktemp -d "/tmp/fs-bench-$prog.XXXXXX") || die "mktemp failed"
		STATE_MADE=1
	fi
	STATE=$BENCH_STATE
	mkdir -p "$STATE" || die "cannot create $STATE"
	chmod 755 "$STATE"
	RUN=$STATE/run
	LOG=$STATE/log
	TICK_US=$((1000000 / $(getconf CLK_TCK)))
	PORT_EDGE=$BASE
	PORT_ORIGIN=$((BASE + 1))
	PORT_BENCH=$((BASE + 7))
	STACK_UP=0
	LOADPID=
	SPAWNED=
}

# The stack's own command, with our settings.
stack() {
	FLASHSALE_STATE=$STATE FLASHSALE_PORT_BASE=$BASE FLASHSALE_BINDIR=$BINDIR \
		FLASHSALE_DATADIR=$repo FLASHSALE_BENCH=1 FLASHSALE_RATE_PER_IP=off \
		FLASHSALE_PURCHASE_PROCS=${BENCH_PURCHASE_PROCS:-${FLASHSALE_PURCHASE_PROCS:-}} \
		"$repo/deploy/stack" "$@"
}

bench_stack_up() {
	# Refuse to share ports with someone else's stack (the cluster
	# topology's reach base+52: its database pair).
	top=$PORT_BENCH
	[ "${FLASHSALE_TOPOLOGY:-single}" = cluster ] && top=$((BASE + 52))
	busy=$(ss -Hltn "( sport >= :$BASE and sport <= :$top )" 2>/dev/null)
	[ -z "$busy" ] || die "ports $BASE..$top are in use (set BENCH_PORT_BASE):
$busy"
	say "starting the stack in $STATE (ports $BASE..$PORT_BENCH; log $STATE/stack.log)"
	STACK_UP=1
	stack up >>"$STATE/stack.log" 2>&1 || die "deploy/stack up failed; see $STATE/stack.log"
	eval "$(stack env)"
	export FLASHSALE_DATADIR=$repo
	# The origin host: 127.0.0.1, or the cluster topology's first (origin-a).
	BENCH_HOST=127.0.0.1
	[ "${FLASHSALE_TOPOLOGY:-single}" = cluster ] && BENCH_HOST=127.0.0.2
	[ "$(curl -s -o /dev/null -w '%{http_code}' "http://$BENCH_HOST:$PORT_BENCH/bench/nginx")" = 410 ] ||
		die "no bench server block on $BENCH_HOST:$PORT_BENCH (deploy/nginx.conf.in, FLASHSALE_BENCH=1)"
}

# The EXIT trap: the load generator, the bench handlers, then the stack.
bench_cleanup() {
	rc=$?
	trap - EXIT HUP INT TERM
	if [ -n "$LOADPID" ] && kill -0 "$LOADPID" 2>/dev/null; then
		kill -TERM "$LOADPID" 2>/dev/null
		wait "$LOADPID" 2>/dev/null
	fi
	for name in $SPAWNED; do
		bench_unspawn "$name"
	done
	if [ "$STACK_UP" = 1 ]; then
		if [ "${BENCH_KEEP:-0}" = 1 ]; then
			say "stack left running: FLASHSALE_STATE=$STATE FLASHSALE_PORT_BASE=$BASE $repo/deploy/stack down"
		elif ! stack down >>"$STATE/stack.log" 2>&1; then
			say "deploy/stack down failed; see $STATE/stack.log"
		elif [ "$rc" = 0 ] && [ "$STATE_MADE" = 1 ]; then
			# Our own temporary directory, after a run that went well.
			rm -rf "$STATE"
		else
			say "state, logs and raw runs kept in $STATE"
		fi
	elif [ "$STATE_MADE" = 1 ]; then
		rm -rf "$STATE"
	fi
	exit "$rc"
}

# kcat as the stack's Kafka operator (SASL_SSL; deploy/stack writes the
# configuration, password included, 0600): tests/integration/lib.sh's.
fs_kcat() {
	kcat -F "$FLASHSALE_STATE/secrets/kafka-operator.kcat" "$@"
}

# redis-cli as the stack's operator user (deploy/stack env): the password
# goes through the environment, not the command line.
# A cluster's address list names its first node (-c follows redirects).
redis_cli() {
	case $FLASHSALE_REDIS in
	/*) set -- -s "$FLASHSALE_REDIS" "$@" ;;
	*)
		rc_first=${FLASHSALE_REDIS%%,*}
		set -- -c -h "${rc_first%:*}" -p "${rc_first##*:}" "$@"
		;;
	esac
	REDISCLI_AUTH=$(cat "$FLASHSALE_REDIS_PASSWORD_FILE") redis-cli --no-auth-warning \
		--user "$FLASHSALE_REDIS_USER" "$@"
}

# redis_pipe KEY: the RESP commands on standard input through redis-cli
# --pipe, to the node that serves KEY's slot on a cluster (a pipe follows
# no redirect: every key of the input must share KEY's slot, {hash tag}).
redis_pipe() {
	case $FLASHSALE_REDIS in
	/*) redis_cli --pipe ;;
	*)
		rp_slot=$(redis_cli CLUSTER KEYSLOT "$1") || return 1
		# "id ip:port@bus[,hostname] flags master ... slot-ranges": the
		# master's address for clients (its hostname, else its ip).
		rp_node=$(redis_cli CLUSTER NODES | tr -d '\r' | awk -v s="$rp_slot" '$3 ~ /master/ && $3 !~ /fail/ {
			for (i = 9; i <= NF; i++) {
				k = split($i, r, "-")
				if (s + 0 >= r[1] + 0 && s + 0 <= r[k] + 0) {
					split($2, a, "[:@,]")
					print (a[4] != "" ? a[4] : a[1]), a[2]
				}
			}
		}')
		[ -n "$rp_node" ] || return 1
		REDISCLI_AUTH=$(cat "$FLASHSALE_REDIS_PASSWORD_FILE") redis-cli --no-auth-warning \
			--user "$FLASHSALE_REDIS_USER" -h "${rp_node% *}" -p "${rp_node#* }" --pipe
		;;
	esac
}

# --- FastCGI programs of our own under spawn-fcgi ---------------------------

# bench_spawn NAME PROCS PROGRAM: PROCS processes on $RUN/NAME.sock, their
# PIDs in $RUN/NAME.pid, their output in $LOG/NAME.log. The environment
# passes through (a caller may change FLASHSALE_PG in a subshell).
bench_spawn() {
	pidfile=$RUN/$1.pid
	rm -f "$pidfile" "$RUN/$1.sock"
	spawn-fcgi -s "$RUN/$1.sock" -M 0660 -F "$2" -P "$pidfile" -- \
		/bin/sh -c 'exec "$0" >>"$1" 2>&1' "$3" "$LOG/$1.log" \
		>>"$LOG/spawn-fcgi.log" 2>&1 || die "spawn-fcgi $1 failed; see $LOG/spawn-fcgi.log"
	# spawn-fcgi leaves the last PID without its newline.
	printf '%s\n' $(cat "$pidfile") >"$pidfile.tmp" && mv "$pidfile.tmp" "$pidfile"
}

# Records NAME for bench_cleanup; the caller's shell must run this one.
bench_track() {
	SPAWNED="$SPAWNED $1"
}

# Stops the processes of NAME that still run its program, by PID.
bench_unspawn() {
	pids=
	for pid in $(cat "$RUN/$1.pid" 2>/dev/null); do
		case $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) in
		*trivial-fcgi* | *flashsale-*) pids="$pids $pid" ;;
		esac
	done
	if [ -n "$pids" ]; then
		# shellcheck disable=SC2086
		kill -TERM $pids 2>/dev/null
		n=0
		while [ $n -lt 50 ]; do
			alive=
			for pid in $pids; do
				kill -0 "$pid" 2>/dev/null && alive="$alive $pid"
			done
			[ -n "$alive" ] || break
			sleep 0.2
			n=$((n + 1))
		done
		# shellcheck disable=SC2086
		[ -z "$alive" ] || kill -KILL $alive 2>/dev/null
	fi
	rm -f "$RUN/$1.pid" "$RUN/$1.sock"
}

# The trivial FastCGI responder, as many processes as the purchase handler.
bench_start_trivial() {
	bench_spawn bench-trivial-fcgi "$PROCS" "$TRIVIAL"
	bench_track bench-trivial-fcgi
	[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT_BENCH/bench/fcgi")" = 410 ] ||
		die "the trivial FastCGI responder does not answer; see $LOG/bench-trivial-fcgi.log"
}

# --- CPU time from /proc ---------------------------------------------------

# The PIDs whose CPU time is a component's: a main process and its children.
component_pids() {
	# The cluster topology has a run directory per origin host, and
	# numbered Redis, Kafka and consumer nodes: all of them count.
	for run in "$RUN" "$STATE"/origin-*/run; do
		[ -d "$run" ] || continue
		case $1 in
		nginx | varnish)
			# nginx: the origin's and the push server beside it.
			for master in $(cat "$run/$1.pid" 2>/dev/null) \
				$([ "$1" = nginx ] && cat "$run/nginx-push.pid" 2>/dev/null); do
				echo "$master" && pgrep -P "$master"
			done
			;;
		edge-nginx)
			# The edge's nginx, in front of Varnish.
			for master in $(cat "$run/nginx-edge.pid" 2>/dev/null); do
				echo "$master" && pgrep -P "$master"
			done
			;;
		redis | kafka) cat "$run/$1.pid" "$run/$1"-*.pid 2>/dev/null ;;
		consumer) cat "$run"/flashsale-consumer*.pid 2>/dev/null ;;
		postgres) ;;
		*) cat "$run/$1.pid" 2>/dev/null ;;
		esac
	done
	if [ "$1" = postgres ]; then
		# The cluster topology's two nodes (deploy/stack.d/cluster-pg.sh) both
		# count: the standby's work is the price of synchronous commits.
		for pgdata in "$STATE/postgres" "$STATE"/pgha/pg-[0-9]; do
			master=$(head -n 1 "$pgdata/postmaster.pid" 2>/dev/null)
			[ -n "$master" ] && echo "$master" && pgrep -P "$master"
		done
	fi
	return 0
}

# Clock ticks of user + system time of the PIDs and of their children that
# ended and were waited for (cutime, cstime): a PostgreSQL backend that
# exits between two readings still counts, in its postmaster's figures.
proc_ticks() {
	for pid in "$@"; do
		cat "/proc/$pid/stat" 2>/dev/null
	done | awk '{ sub(/^.*\) /, ""); if (NF >= 15) t += $12 + $13 + $14 + $15 }
		END { printf "%.0f\n", t }'
}

# jit_ticks PID...: the CPU ticks of the JVM's compiler threads (C1, C2)
# of those processes: the part of a broker's CPU that a broker up for days
# no longer spends.
jit_ticks() {
	for pid in "$@"; do
		for t in /proc/"$pid"/task/*; do
			case $(cat "$t/comm" 2>/dev/null) in
			"C1 CompilerThre"* | "C2 CompilerThre"*) cat "$t/stat" 2>/dev/null ;;
			esac
		done
	done | awk '{ sub(/^.*\) /, ""); if (NF >= 13) t += $12 + $13 } END { printf "%.0f\n", t }'
}

# cpu_snapshot FILE COMPONENT...: one "component ticks" line each;
# kafka-jit is the brokers' compiler threads (a part of kafka).
cpu_snapshot() {
	file=$1
	shift
	: >"$file"
	for comp in "$@"; do
		if [ "$comp" = kafka-jit ]; then
			# shellcheck disable=SC2046
			echo "$comp $(jit_ticks $(component_pids kafka))" >>"$file"
			continue
		fi
		# shellcheck disable=SC2046
		echo "$comp $(proc_ticks $(component_pids "$comp"))" >>"$file"
	done
}

# Voluntary context switches (a thread blocked and was woken) of the
# components' processes, all their threads: the hand-offs a design costs,
# which, unlike CPU time, the machine's other load hardly changes.
vcsw_count() {
	for comp in "$@"; do
		for pid in $(component_pids "$comp"); do
			cat /proc/"$pid"/task/*/status 2>/dev/null
		done
	done | awk '/^voluntary_ctxt_switches:/ { t += $2 } END { printf "%.0f\n", t }'
}

# cpu_delta BEFORE AFTER REQUESTS: "component cpu_s us_per_request" lines.
cpu_delta() {
	awk -v tick="$TICK_US" -v n="$3" '
		NR == FNR { before[$1] = $2; next }
		{
			us = ($2 - before[$1]) * tick
			printf "%s %.3f %.2f\n", $1, us / 1e6, (n > 0 ? us / n : 0)
		}' "$1" "$2"
}

# --- the load generator ----------------------------------------------------

# run_load OUT TOKENS PORT [OPTION...]: runs flashsale-load, its report in
# OUT.txt, progress on our standard error. Non-zero when it failed. TOKENS
# "-": none (the options name the shoppers: --queue FILE).
run_load() {
	out=$1
	tokens=$2
	port=$3
	shift 3
	[ "$tokens" = - ] || set -- --tokens "$tokens" "$@"
	"$LOADGEN" --port "$port" "$@" >"$out.txt" &
	LOADPID=$!
	wait "$LOADPID"
	load_rc=$?
	LOADPID=
	grep -q '^summary ' "$out.txt" || {
		say "flashsale-load gave no summary (exit $load_rc); see $out.txt"
		return 1
	}
	return 0
}

# sget FILE KEY: one value of the load generator's summary line.
sget() {
	sed -n 's/^summary //p' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"
}

# --- token files -----------------------------------------------------------

# tokens_file OUT PATHS_FILE TOKENS_FILE: one shopper a line of TOKENS_FILE
# ("user token"), each given the paths of PATHS_FILE in turn, as the
# load generator reads them: "<token> <path>".
tokens_file() {
	awk 'NR == FNR { path[n++] = $0; next } { print $2, path[(FNR - 1) % n] }' \
		"$2" "$3" >"$1"
}

# prefix_paths OUT IN PREFIX: the same token file, each path behind PREFIX.
prefix_paths() {
	awk -v p="$3" '{ print $1, p $2 }' "$2" >"$1"
}

# same_path OUT IN PATH: the same token file, every shopper asking PATH.
same_path() {
	awk -v p="$3" '{ print $1, p }' "$2" >"$1"
}

# shellcheck shell=sh
# deploy/stack's commands on the parts of the single topology: which part
# a name is, a verb on one part, up, down and status in order (sourced by
# deploy/stack; stack.d/cluster.sh replaces them for the cluster).

# Checks PART: one of $PARTS or a handler program of handlers.conf.
check_part() {
	case " $PARTS $OPTIONAL_PARTS " in
	*" $1 "*) return 0 ;;
	esac
	[ -n "$(handler_procs "$1")" ] ||
		die "unknown part '$1' (parts: $PARTS $OPTIONAL_PARTS, or a handler program)"
}

# Runs VERB (start, stop, status) on one part or one handler program.
part_do() {
	verb=$1
	part=$2
	case " $PARTS $OPTIONAL_PARTS " in
	*" $part "*)
		"${verb}_$part"
		;;
	*)
		"${verb}_handler" "$part" "$(handler_procs "$part")"
		;;
	esac
	# Handlers are probed through nginx, when it runs.
	case $verb:$part in
	start:handlers | start:flashsale-*)
		if [ -n "$(part_pids nginx)" ]; then
			ready_handlers
		fi
		;;
	start:nginx)
		# Varnish marked the origin sick while it was down: until its probe
		# sees it again, the edge answers 503. Started means reachable.
		if [ -n "$(part_pids varnish)" ]; then
			wait_for 10 ready_edge_origin ||
				die "the edge does not reach the origin again; see $LOG/varnish.log"
		fi
		;;
	esac
}

cmd_up() {
	started=$(now)
	ensure_dirs
	start_redis
	start_postgres
	start_kafka
	start_consumer
	start_provider
	start_handlers
	start_nginx
	ready_handlers
	start_varnish
	say stack "up in $(($(now) - started))s (state $STATE, edge http://127.0.0.1:$PORT_EDGE/)"
}

cmd_down() {
	if [ -f "$RUN/prometheus.pid" ]; then
		stop_prometheus
	fi
	stop_varnish
	stop_nginx
	stop_handlers
	stop_provider
	stop_consumer
	stop_kafka
	stop_postgres
	stop_redis
}

cmd_status() {
	rc=0
	for part in $PARTS $OPTIONAL_PARTS; do
		"status_$part" || rc=1
	done
	return $rc
}

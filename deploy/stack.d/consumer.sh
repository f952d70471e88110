# shellcheck shell=sh
# deploy/stack's part the consumer daemon: start, ready, stop, status
# (sourced by deploy/stack).

# The consumer's part name: "consumer", or consumer-N for one of the
# cluster topology's group members (stack.d/cluster.sh).
CONSUMER=consumer

start_consumer() {
	prog=$BINDIR/flashsale-consumer
	if [ -n "$(part_pids "$CONSUMER")" ]; then
		say "$CONSUMER" "already running (pid $(cat "$RUN/flashsale-$CONSUMER.pid"))"
		return 0
	fi
	[ -x "$prog" ] || die "$(not_built "${prog#"$BINDIR"/}")"
	export_env consumer
	spawn "$RUN/flashsale-$CONSUMER.pid" "$LOG/flashsale-$CONSUMER.log" "$prog"
	wait_for 5 ready_consumer || die "flashsale-consumer exited; see $LOG/flashsale-$CONSUMER.log"
	say "$CONSUMER" "up (pid $(cat "$RUN/flashsale-$CONSUMER.pid"))"
}

ready_consumer() {
	[ -n "$(part_pids "$CONSUMER")" ]
}

stop_consumer() {
	stop_pidfile "$CONSUMER" "$RUN/flashsale-$CONSUMER.pid" 30
}

status_consumer() {
	if [ ! -x "$BINDIR/flashsale-consumer" ] && [ ! -f "$RUN/flashsale-$CONSUMER.pid" ]; then
		say "$CONSUMER" "absent (not built)"
		return 0
	fi
	status_pidfile "$CONSUMER" ready_consumer
}

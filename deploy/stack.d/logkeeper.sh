# shellcheck shell=sh
# shellcheck disable=SC2154 # here (deploy/) is deploy/stack's
# deploy/stack's part logkeeper, the logs' rotation by size: start, stop,
# status (sourced by deploy/stack).

# deploy/logkeeper over the stack's log directory: a log over
# FLASHSALE_LOG_MAX_MB (64) is copied aside (two copies kept) and
# truncated, looked at every FLASHSALE_LOG_CHECK_S (30) seconds.
start_logkeeper() {
	if [ -n "$(part_pids logkeeper)" ]; then
		say logkeeper "already running (pid $(cat "$RUN/logkeeper.pid"))"
		return 0
	fi
	# shellcheck disable=SC2086 # one word per directory
	spawn "$RUN/logkeeper.pid" "$LOG/logkeeper.log" "$here/logkeeper" "$LOG_MAX_MB" 2 \
		"$LOG_CHECK_S" $LOG_DIRS
	say logkeeper "up (pid $(cat "$RUN/logkeeper.pid"), logs over $LOG_MAX_MB MB rotated)"
}

stop_logkeeper() {
	stop_pidfile logkeeper "$RUN/logkeeper.pid" 5
}

ready_logkeeper() {
	[ -n "$(part_pids logkeeper)" ]
}

status_logkeeper() {
	status_pidfile logkeeper ready_logkeeper
}

# shellcheck shell=sh
# deploy/stack's part the payment provider simulator: start, ready, stop, status
# (sourced by deploy/stack).

# deploy/provider/flashsale-provider: hosted checkout pages on base+8 and
# signed webhooks to the shop through the edge (retried while it is down).
start_provider() {
	prog=$BINDIR/deploy/provider/flashsale-provider
	if [ -n "$(part_pids provider)" ]; then
		say provider "already running (pid $(cat "$RUN/flashsale-provider.pid"))"
		return 0
	fi
	[ -x "$prog" ] || die "$(not_built "${prog#"$BINDIR"/}")"
	export_env handlers
	FLASHSALE_PROVIDER_LISTEN=127.0.0.1:$PORT_PROVIDER \
		FLASHSALE_PROVIDER_PUBLIC_URL=http://127.0.0.1:$PORT_PROVIDER \
		FLASHSALE_PROVIDER_WEBHOOK_URL=http://127.0.0.1:$PORT_EDGE/api/flash-sales/payments/webhook \
		spawn "$RUN/flashsale-provider.pid" "$LOG/flashsale-provider.log" "$prog" serve
	wait_for 10 ready_provider || die "flashsale-provider does not answer; see $LOG/flashsale-provider.log"
	say provider "up (pid $(cat "$RUN/flashsale-provider.pid"), http://127.0.0.1:$PORT_PROVIDER/)"
}

ready_provider() {
	[ -n "$(part_pids provider)" ] &&
		[ "$(curl -s -o /dev/null -w '%{http_code}' -m 2 "http://127.0.0.1:$PORT_PROVIDER/healthz")" = 200 ]
}

stop_provider() {
	stop_pidfile provider "$RUN/flashsale-provider.pid" 5
}

status_provider() {
	if [ ! -x "$BINDIR/deploy/provider/flashsale-provider" ] && [ ! -f "$RUN/flashsale-provider.pid" ]; then
		say provider "absent (not built)"
		return 0
	fi
	status_pidfile provider ready_provider
}
